"""Likelihood terms of the RVM models, as PyTensor graphs (used by :mod:`rvm_pymc.models`).

The marginal regression likelihood is evaluated in O(N M^2) through the M x M
posterior precision; the classification likelihoods are written with
softplus / log_softmax so that they are stable for any logit in every
PyTensor compile mode, and the Poisson likelihood in the log rate.

References
----------
Tipping, M. E. (2001). Sparse Bayesian learning and the relevance vector
machine. *Journal of Machine Learning Research* 1, 211-244.
"""

from __future__ import annotations

import functools

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from pytensor.compile.builders import OpFromGraph
from pytensor.tensor.linalg import cholesky, solve_triangular

LOG_2PI = float(np.log(2.0 * np.pi))


# ------------------------------------------------------------ marginal likelihood


def marginal_logp(t, log_alpha, log_beta, Phi, PhiTPhi=None) -> pt.TensorVariable:
    """``log N(t | 0, I/beta + Phi A^-1 Phi^T)`` in O(N M^2) as a PyTensor graph.

    Never forms an N x N matrix: with the M x M posterior precision
    ``H = A + beta Phi^T Phi`` (Jacobi-scaled before its Cholesky factorisation),

    .. math::

        \\log|C| = \\log|H| - \\sum_m \\log\\alpha_m - N\\log\\beta, \\qquad
        t^T C^{-1} t = \\beta\\lVert t - \\Phi\\mu\\rVert^2 + \\mu^T A \\mu,

    with ``mu = beta H^-1 Phi^T t`` (Woodbury identity and the matrix
    determinant lemma).

    Parameters
    ----------
    t : TensorVariable of shape (N,)
    log_alpha : TensorVariable of shape (M,)
    log_beta : TensorVariable, scalar
    Phi : TensorVariable of shape (N, M)
    PhiTPhi : TensorVariable of shape (M, M), optional
        ``Phi^T Phi`` when precomputed (the builders keep it in a ``pm.Data``
        container, which halves the cost of a gradient evaluation); computed
        in the graph otherwise.

    Returns
    -------
    TensorVariable
        Scalar log density.

    References
    ----------
    Tipping (2001), JMLR 1:211-244, equations (7) and (33)-(35).
    """
    alpha = pt.exp(log_alpha)
    beta = pt.exp(log_beta)
    if PhiTPhi is None:
        PhiTPhi = Phi.T @ Phi
    H = beta * PhiTPhi + pt.diag(alpha)
    p = 1.0 / pt.sqrt(pt.diag(H))
    L = cholesky(H * p[:, None] * p[None, :], lower=True)
    v = solve_triangular(L, beta * p * (Phi.T @ t), lower=True)
    mu = p * solve_triangular(L.T, v, lower=False)
    resid = t - Phi @ mu
    quad = beta * pt.sum(resid**2) + pt.sum(alpha * mu**2)
    n = t.shape[0]
    logdet_c = (
        2.0 * pt.sum(pt.log(pt.diag(L)))
        - 2.0 * pt.sum(pt.log(p))
        - pt.sum(log_alpha)
        - n * log_beta
    )
    return -0.5 * (n * LOG_2PI + logdet_c + quad)


def _marginal_random(log_alpha, log_beta, Phi, PhiTPhi, rng=None, size=None):
    """Draw ``t`` from the marginal model by drawing ``w`` first."""
    n, m = Phi.shape
    batch = () if size is None else tuple(size)
    w = rng.normal(size=(*batch, m)) * np.exp(-0.5 * np.asarray(log_alpha))
    noise = rng.normal(size=(*batch, n)) * np.exp(-0.5 * np.asarray(log_beta))[..., None]
    return np.einsum("nm,...m->...n", Phi, w) + noise


# ------------------------------------------------------- marginal likelihood (NUTS, MAP)
#
# ``marginal_logp`` above is the plain graph; differentiated
# by PyTensor it back-propagates through the Cholesky factorisation, which costs
# two triangular solves with an M x M right-hand side and a matrix product on top
# of the factorisation.  The regression builders use the same density with its
# gradient written out (Tipping 2001, eqs. 33-35 in log coordinates):
#
#   d/d log alpha_m = (1 - alpha_m (Sigma_mm + mu_m^2)) / 2
#   d/d log beta    = (N - M + sum_m alpha_m Sigma_mm - beta ||t - Phi mu||^2) / 2
#
# with ``diag Sigma`` from one triangular inverse of the factor.  The quadratic
# form is evaluated in residual form, ``t^T C^-1 t = beta ||t - Phi mu||^2 +
# mu^T A mu``: the shorter ``beta t^T t - |L^-1 beta P Phi^T t|^2`` is a difference
# of two large numbers and lost 0.012 nats at a target offset of 1e5 and 162 nats
# at 1e7.  The residual costs one O(N M) product per evaluation.


def _marginal_parts(log_alpha, log_beta, PtP, Phi, t):
    alpha, beta = pt.exp(log_alpha), pt.exp(log_beta)
    n = pt.cast(t.shape[0], "float64")
    H = beta * PtP + pt.diag(alpha)
    p = 1.0 / pt.sqrt(beta * pt.diag(PtP) + alpha)  # Jacobi scaling of H
    L = cholesky(H * p[:, None] * p[None, :], lower=True)
    v = solve_triangular(L, beta * p * (Phi.T @ t), lower=True)
    mu = p * solve_triangular(L.T, v, lower=False)
    resid = t - Phi @ mu
    beta_rss = beta * pt.sum(resid**2)
    quad = beta_rss + pt.sum(alpha * mu**2)
    logdet_c = (
        2.0 * pt.sum(pt.log(pt.diag(L)))
        - 2.0 * pt.sum(pt.log(p))
        - pt.sum(log_alpha)
        - n * log_beta
    )
    logp = -0.5 * (n * LOG_2PI + logdet_c + quad)
    return logp, L, p, mu, resid, beta_rss


def _lower_inverse_blocks(L):
    """``L^-1`` of a lower-triangular ``L`` by one 2 x 2 block step, as its blocks.

    ``solve_triangular(L, I)`` treats the identity as a dense right-hand side,
    about ``M^3`` flops, three times a triangular inversion.  With
    ``L = [[L11, 0], [L21, L22]]``,
    ``L^-1 = [[B1, 0], [X, B2]]``, ``B1 = L11^-1``, ``B2 = L22^-1``,
    ``X = -B2 L21 B1``: two half-size solves and two half-size products,
    ``5 M^3 / 8`` flops, half of them in matrix products.  PyTensor has no
    triangular-inverse Op; these are ordinary Ops of every backend (C, Numba,
    JAX).  Value and gradient of the collapsed model at M = 301 took 1.22-1.26x
    less time on Numba (4.1 -> 3.2 ms) and 1.16-1.41x less on C (5.0 -> 3.5 ms)
    than with one solve, timed alternately in one process on a shared machine.
    """
    m = L.shape[0]
    k = m // 2
    B1 = solve_triangular(L[:k, :k], pt.eye(k), lower=True)
    B2 = solve_triangular(L[k:, k:], pt.eye(m - k), lower=True)
    X = -(B2 @ (L[k:, :k] @ B1))
    return B1, X, B2


def _marginal_pullback(inputs, outputs, cotangents):
    # the factor, mean and residual are outputs of the forward node (unused outside
    # this gradient, so pruned from a logp-only graph): recomputing them here would
    # leave two factorisations, which PyTensor's rewrites do not always merge.
    # The gradient is that of logp as a function of (PtP, Phi^T t, t^T t): Phi and t
    # enter through those, PtP is an input of its own.
    log_alpha, log_beta, _, _, t = inputs
    _, L, p, mu, resid, beta_rss = outputs
    alpha, beta = pt.exp(log_alpha), pt.exp(log_beta)
    n = pt.cast(t.shape[0], "float64")
    B1, X, B2 = _lower_inverse_blocks(L)
    col_sq = pt.concatenate([pt.sum(B1**2, axis=0) + pt.sum(X**2, axis=0), pt.sum(B2**2, axis=0)])
    sigma_diag = p**2 * col_sq
    m = pt.cast(log_alpha.shape[0], "float64")
    g_log_alpha = 0.5 - 0.5 * alpha * (sigma_diag + mu**2)
    g_log_beta = 0.5 * (n - m + pt.sum(alpha * sigma_diag) - beta_rss)
    # needed only when the design matrix depends on a free variable (RBF width)
    zeros = pt.zeros((B1.shape[0], B2.shape[0]))
    L_inv = pt.concatenate([pt.concatenate([B1, zeros], 1), pt.concatenate([X, B2], 1)], 0)
    sigma = p[:, None] * (L_inv.T @ L_inv) * p[None, :]
    g_PtP = -0.5 * beta * (sigma + pt.outer(mu, mu))
    g = cotangents[0]
    return [
        g * g_log_alpha,
        g * g_log_beta,
        g * g_PtP,
        g * beta * pt.outer(t, mu),  # through Phi^T t
        g * (-beta) * resid,  # through Phi^T t and t^T t
    ]


def marginal_op(parts, pullback, gram: str, name: str) -> OpFromGraph:
    """The Op of a marginal log density ``parts(log_alpha, log_beta, G, Phi, t)``.

    Its first output is the log density, the others what ``pullback`` reuses;
    ``G`` (named ``gram``) is the form of ``Phi^T Phi`` the density takes.
    """
    la, t = pt.dvector("log_alpha"), pt.dvector("t")
    lb = pt.dscalar("log_beta")
    G, Phi = pt.dmatrix(gram), pt.dmatrix("Phi")
    inputs = [la, lb, G, Phi, t]
    return OpFromGraph(inputs, list(parts(*inputs)), pullback=pullback, inline=True, name=name)


def apply_marginal(op: OpFromGraph, log_alpha, log_beta, G, Phi, t) -> pt.TensorVariable:
    """The log density of a :func:`marginal_op` on float64 tensors of its five inputs."""
    args = (log_alpha, log_beta, G, Phi, t)
    return op(*(pt.as_tensor(a, dtype="float64") for a in args))[0]


@functools.cache
def _marginal_op() -> OpFromGraph:
    return marginal_op(_marginal_parts, _marginal_pullback, "PhiTPhi", "rvm_marginal_logp")


def marginal_logp_fast(t, log_alpha, log_beta, Phi, PhiTPhi=None) -> pt.TensorVariable:
    """:func:`marginal_logp` with an analytic gradient (the regression builders use it).

    Same value as :func:`marginal_logp` (to rounding) and the same arguments;
    its gradient is written out instead of differentiated through the
    Cholesky factorisation, and one evaluation with its gradient costs one
    M x M Cholesky factorisation, one triangular inverse and O(N M) products.
    """
    if PhiTPhi is None:
        PhiTPhi = Phi.T @ Phi
    return apply_marginal(_marginal_op(), log_alpha, log_beta, PhiTPhi, Phi, t)


def marginal_likelihood(
    log_alpha, log_beta, Phi, PhiTPhi, logp=None, gram_shape: str = "(m,m)"
) -> None:
    """Observed ``t_obs`` of the marginal model (:func:`marginal_logp_fast` on the data ``t``).

    ``logp(t, log_alpha, log_beta, Phi, G)`` replaces :func:`marginal_logp_fast`
    for another form ``G`` of ``Phi^T Phi`` (of shape ``gram_shape``); the
    draws are the same, through ``Phi`` (which may take new rows for predictions).
    """
    pm.CustomDist(
        "t_obs",
        log_alpha,
        log_beta,
        Phi,
        PhiTPhi,
        logp=marginal_logp_fast if logp is None else logp,
        random=_marginal_random,
        signature=f"(m),(),(n,m),{gram_shape}->(n)",
        class_name="MarginalNormal",
        observed=pm.modelcontext(None)["t"],
        dims="obs",
    )


# ------------------------------------------------------ classification likelihoods
#
# Written with softplus / log_softmax rather than pm.Bernoulli(logit_p=...) and
# pm.Categorical(logit_p=...), whose log(sigmoid) and log(softmax) become
# stable only through PyTensor's "stabilize" rewrites, which FAST_COMPILE mode
# (the default of type-II MAP) does not run: with large logits they gave -inf.


def _bernoulli_logit_logp(value, logit):
    return pt.switch(pt.eq(value, 1), -pt.softplus(-logit), -pt.softplus(logit))


def _bernoulli_logit_random(logit, rng=None, size=None):
    logit = np.asarray(logit)
    shape = logit.shape if size is None else tuple(size)
    return (rng.random(shape) < 1.0 / (1.0 + np.exp(-logit))).astype(np.int64)


def bernoulli_logit(name: str, logit, observed) -> pt.TensorVariable:
    """``y ~ Bernoulli(sigmoid(logit))`` with a log density stable for any logit."""
    return pm.CustomDist(
        name,
        logit,
        logp=_bernoulli_logit_logp,
        random=_bernoulli_logit_random,
        dtype="int64",
        observed=observed,
        class_name="BernoulliLogit",
        dims="obs",
    )


def _categorical_logit_logp(value, logits):
    lp = pt.special.log_softmax(logits, axis=-1)
    return pt.take_along_axis(lp, pt.cast(value, "int64")[..., None], axis=-1)[..., 0]


def _categorical_logit_random(logits, rng=None, size=None):
    logits = np.asarray(logits)
    shape = logits.shape if size is None else (*tuple(size), logits.shape[-1])
    return np.argmax(logits + rng.gumbel(size=shape), axis=-1).astype(np.int64)


def categorical_logit(name: str, logits, observed) -> pt.TensorVariable:
    """``y ~ Categorical(softmax(logits))`` (classes on the last axis), stable log density."""
    return pm.CustomDist(
        name,
        logits,
        logp=_categorical_logit_logp,
        random=_categorical_logit_random,
        signature="(k)->()",
        dtype="int64",
        observed=observed,
        class_name="CategoricalLogit",
        dims="obs",
    )


def _poisson_log_logp(value, log_rate):
    return value * log_rate - pt.exp(log_rate) - pt.gammaln(value + 1.0)


def _poisson_log_random(log_rate, rng=None, size=None):
    log_rate = np.asarray(log_rate)
    shape = log_rate.shape if size is None else tuple(size)
    return rng.poisson(np.broadcast_to(np.exp(log_rate), shape)).astype(np.int64)


def poisson_log(name: str, log_rate, observed) -> pt.TensorVariable:
    """``y ~ Poisson(exp(log_rate))`` (the log link) with the log density written in ``log_rate``.

    ``y log_rate - exp(log_rate) - log y!``: no ``log(exp(.))`` round trip, and
    non-integer counts have a density as in scikit-learn's Poisson deviance.
    """
    return pm.CustomDist(
        name,
        log_rate,
        logp=_poisson_log_logp,
        random=_poisson_log_random,
        dtype="float64",
        observed=observed,
        class_name="PoissonLog",
        dims="obs",
    )
