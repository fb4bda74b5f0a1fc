"""Likelihood terms of the RVM models as PyTensor graphs, stable in every compile mode."""

from __future__ import annotations

import functools

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from pytensor.compile.builders import OpFromGraph
from pytensor.tensor.linalg import cholesky, solve_triangular

from rvm_pymc._core.gaussian import LOG_2PI


def marginal_logp(t, log_alpha, log_beta, Phi, PhiTPhi=None) -> pt.TensorVariable:
    """``log N(t | 0, I/beta + Phi A^-1 Phi^T)`` in O(N M^2) as a PyTensor graph.

    With the M x M posterior precision ``H = A + beta Phi^T Phi``,

    .. math::

        \\log|C| = \\log|H| - \\sum_m \\log\\alpha_m - N\\log\\beta, \\qquad
        t^T C^{-1} t = \\beta\\lVert t - \\Phi\\mu\\rVert^2 + \\mu^T A \\mu,

    with ``mu = beta H^-1 Phi^T t``.

    Parameters
    ----------
    t : TensorVariable of shape (N,)
    log_alpha : TensorVariable of shape (M,)
    log_beta : TensorVariable, scalar
    Phi : TensorVariable of shape (N, M)
    PhiTPhi : TensorVariable of shape (M, M), optional
        ``Phi^T Phi`` when precomputed; computed in the graph otherwise.

    Returns
    -------
    TensorVariable
        Scalar log density.

    References
    ----------
    Tipping (2001), JMLR 1:211-244, equations (7) and (33)-(35).
    """
    if PhiTPhi is None:
        PhiTPhi = Phi.T @ Phi
    return _marginal_parts(log_alpha, log_beta, PhiTPhi, Phi, t)[0]


def _marginal_random(log_alpha, log_beta, Phi, *gram, rng=None, size=None):
    """Draw ``t`` from the marginal model by drawing ``w`` first."""
    n, m = Phi.shape
    batch = () if size is None else tuple(size)
    w = rng.normal(size=(*batch, m)) * np.exp(-0.5 * np.asarray(log_alpha))
    noise = rng.normal(size=(*batch, n)) * np.exp(-0.5 * np.asarray(log_beta))[..., None]
    return np.einsum("nm,...m->...n", Phi, w) + noise


def _marginal_parts(log_alpha, log_beta, PtP, Phi, t):
    """The marginal log density and what its gradient reuses."""
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
    """``L^-1 = [[B1, 0], [X, B2]]`` of a lower-triangular ``L``: ``X = -B2 L21 B1``."""
    m = L.shape[0]
    k = m // 2
    B1 = solve_triangular(L[:k, :k], pt.eye(k), lower=True)
    B2 = solve_triangular(L[k:, k:], pt.eye(m - k), lower=True)
    X = -(B2 @ (L[k:, :k] @ B1))
    return B1, X, B2


def _precision_gradients(log_alpha, t, outputs):
    """``d logp / d log alpha``, ``d logp / d log beta`` and the blocks of ``L^-1`` used."""
    # d/d log alpha_m = (1 - alpha_m (Sigma_mm + mu_m^2)) / 2
    # d/d log beta    = (N - M + sum_m alpha_m Sigma_mm - beta ||t - Phi mu||^2) / 2
    _, L, p, mu, _, beta_rss = outputs
    alpha = pt.exp(log_alpha)
    n = pt.cast(t.shape[0], "float64")
    m = pt.cast(log_alpha.shape[0], "float64")
    B1, X, B2 = _lower_inverse_blocks(L)
    col_sq = pt.concatenate([pt.sum(B1**2, axis=0) + pt.sum(X**2, axis=0), pt.sum(B2**2, axis=0)])
    sigma_diag = p**2 * col_sq
    g_log_alpha = 0.5 - 0.5 * alpha * (sigma_diag + mu**2)
    g_log_beta = 0.5 * (n - m + pt.sum(alpha * sigma_diag) - beta_rss)
    return g_log_alpha, g_log_beta, (B1, X, B2)


def _posterior_covariance(p, blocks):
    """``Sigma = P L^-T L^-1 P`` from the blocks of ``L^-1`` (one M x M product)."""
    B1, X, B2 = blocks
    zeros = pt.zeros((B1.shape[0], B2.shape[0]))
    L_inv = pt.concatenate([pt.concatenate([B1, zeros], 1), pt.concatenate([X, B2], 1)], 0)
    return p[:, None] * (L_inv.T @ L_inv) * p[None, :]


def _marginal_pullback(inputs, outputs, cotangents):
    # as a function of (PtP, Phi^T t, t^T t)
    log_alpha, log_beta, _, _, t = inputs
    _, _, p, mu, resid, _ = outputs
    beta = pt.exp(log_beta)
    g_log_alpha, g_log_beta, blocks = _precision_gradients(log_alpha, t, outputs)
    g_PtP = -0.5 * beta * (_posterior_covariance(p, blocks) + pt.outer(mu, mu))
    g = cotangents[0]
    # the last two: through Phi^T t, and through Phi^T t and t^T t
    return [
        g * g_log_alpha,
        g * g_log_beta,
        g * g_PtP,
        g * beta * pt.outer(t, mu),
        g * (-beta) * resid,
    ]


def _design_parts(log_alpha, log_beta, Phi, t):
    """:func:`_marginal_parts` forming ``Phi^T Phi`` (a design of free variables)."""
    return _marginal_parts(log_alpha, log_beta, Phi.T @ Phi, Phi, t)


def _design_pullback(inputs, outputs, cotangents):
    # d/d Phi = beta (t - Phi mu) mu^T - beta Phi Sigma
    log_alpha, log_beta, Phi, t = inputs
    _, _, p, mu, resid, _ = outputs
    beta = pt.exp(log_beta)
    g_log_alpha, g_log_beta, blocks = _precision_gradients(log_alpha, t, outputs)
    g_Phi = beta * (pt.outer(resid, mu) - Phi @ _posterior_covariance(p, blocks))
    g = cotangents[0]
    return [g * g_log_alpha, g * g_log_beta, g * g_Phi, g * (-beta) * resid]


def marginal_op(parts, pullback, gram: str | None, name: str) -> OpFromGraph:
    """The Op of ``parts(log_alpha, log_beta, G, Phi, t)`` (log density first); ``G`` is the
    form of ``Phi^T Phi`` named ``gram``, absent for None."""
    la, t = pt.dvector("log_alpha"), pt.dvector("t")
    lb = pt.dscalar("log_beta")
    grams = [] if gram is None else [pt.dmatrix(gram)]
    inputs = [la, lb, *grams, pt.dmatrix("Phi"), t]
    return OpFromGraph(inputs, list(parts(*inputs)), pullback=pullback, inline=True, name=name)


def apply_marginal(op: OpFromGraph, *args) -> pt.TensorVariable:
    """The log density of a :func:`marginal_op` on float64 tensors of its inputs."""
    return op(*(pt.as_tensor(a, dtype="float64") for a in args))[0]


@functools.cache
def _marginal_op() -> OpFromGraph:
    return marginal_op(_marginal_parts, _marginal_pullback, "PhiTPhi", "rvm_marginal_logp")


@functools.cache
def _design_op() -> OpFromGraph:
    return marginal_op(_design_parts, _design_pullback, None, "rvm_marginal_logp_design")


def marginal_logp_fast(t, log_alpha, log_beta, Phi, PhiTPhi=None) -> pt.TensorVariable:
    """:func:`marginal_logp` with an analytic gradient (the regression builders use it).

    Same value and arguments as :func:`marginal_logp`.  Without ``PhiTPhi`` the Op forms
    ``Phi^T Phi`` itself and gives the gradient in ``Phi`` (a design of free variables).
    """
    if PhiTPhi is None:
        return apply_marginal(_design_op(), log_alpha, log_beta, Phi, t)
    return apply_marginal(_marginal_op(), log_alpha, log_beta, PhiTPhi, Phi, t)


def marginal_likelihood(
    log_alpha, log_beta, Phi, PhiTPhi=None, logp=None, gram_shape: str = "(m,m)"
) -> None:
    """Observed ``t_obs`` of the marginal model (:func:`marginal_logp_fast`, or ``logp`` of a
    form of ``Phi^T Phi`` of shape ``gram_shape``) on the data ``t``."""
    grams = [] if PhiTPhi is None else [PhiTPhi]
    gram_sig = "" if PhiTPhi is None else f",{gram_shape}"
    pm.CustomDist(
        "t_obs",
        log_alpha,
        log_beta,
        Phi,
        *grams,
        logp=marginal_logp_fast if logp is None else logp,
        random=_marginal_random,
        signature=f"(m),(),(n,m){gram_sig}->(n)",
        class_name="MarginalNormal",
        observed=pm.modelcontext(None)["t"],
        dims="obs",
    )


# softplus / log_softmax, not pm.Bernoulli / pm.Categorical(logit_p=...): those are stable
# only after the "stabilize" rewrites, which FAST_COMPILE (type-II MAP) does not run


def _bernoulli_logit_logp(value, logit):
    return pt.switch(pt.eq(value, 1), -pt.softplus(-logit), -pt.softplus(logit))


def _shape(param, size):
    param = np.asarray(param)
    return param, param.shape if size is None else tuple(size)


def _bernoulli_logit_random(logit, rng=None, size=None):
    logit, shape = _shape(logit, size)
    return (rng.random(shape) < 1.0 / (1.0 + np.exp(-logit))).astype(np.int64)


def _observed(name, param, logp, random, class_name, observed, dtype="int64", **kwargs):
    return pm.CustomDist(name, param, logp=logp, random=random, dtype=dtype, observed=observed,
                         class_name=class_name, dims="obs", **kwargs)  # fmt: skip


def bernoulli_logit(name: str, logit, observed) -> pt.TensorVariable:
    """``y ~ Bernoulli(sigmoid(logit))`` with a log density stable for any logit."""
    return _observed(name, logit, _bernoulli_logit_logp, _bernoulli_logit_random,
                     "BernoulliLogit", observed)  # fmt: skip


def _categorical_logit_logp(value, logits):
    lp = pt.special.log_softmax(logits, axis=-1)
    return pt.take_along_axis(lp, pt.cast(value, "int64")[..., None], axis=-1)[..., 0]


def _categorical_logit_random(logits, rng=None, size=None):
    logits = np.asarray(logits)
    shape = logits.shape if size is None else (*tuple(size), logits.shape[-1])
    return np.argmax(logits + rng.gumbel(size=shape), axis=-1).astype(np.int64)


def categorical_logit(name: str, logits, observed) -> pt.TensorVariable:
    """``y ~ Categorical(softmax(logits))`` (classes on the last axis), stable log density."""
    return _observed(name, logits, _categorical_logit_logp, _categorical_logit_random,
                     "CategoricalLogit", observed, signature="(k)->()")  # fmt: skip


def _poisson_log_logp(value, log_rate):
    return value * log_rate - pt.exp(log_rate) - pt.gammaln(value + 1.0)


def _poisson_log_random(log_rate, rng=None, size=None):
    log_rate, shape = _shape(log_rate, size)
    return rng.poisson(np.broadcast_to(np.exp(log_rate), shape)).astype(np.int64)


def poisson_log(name: str, log_rate, observed) -> pt.TensorVariable:
    """``y ~ Poisson(exp(log_rate))``: ``y log_rate - exp(log_rate) - log y!``."""
    return _observed(name, log_rate, _poisson_log_logp, _poisson_log_random, "PoissonLog",
                     observed, dtype="float64")  # fmt: skip


def _negbin_log_logp(value, log_mean, log_r):
    r = pt.exp(log_r)
    return (
        pt.gammaln(value + r) - pt.gammaln(r) - pt.gammaln(value + 1.0)
        + value * (log_mean - log_r) - (r + value) * pt.softplus(log_mean - log_r)
    )  # fmt: skip


def _negbin_log_random(log_mean, log_r, rng=None, size=None):
    log_mean, shape = _shape(log_mean, size)
    r = np.broadcast_to(np.exp(np.asarray(log_r, dtype=float)), shape)
    p = 1.0 / (1.0 + np.exp(np.broadcast_to(log_mean, shape) - np.log(r)))  # r / (r + mu)
    return rng.negative_binomial(r, np.clip(p, 1e-300, 1.0)).astype(np.int64)


def negative_binomial_log(name: str, log_mean, log_dispersion, observed) -> pt.TensorVariable:
    """``y ~ NB2(mean exp(log_mean), dispersion exp(log_dispersion))`` (the log link).

    The log density of :func:`rvm_pymc._core.counts.negbin_logpmf`, in ``log_mean``, ``log r``.
    """
    return pm.CustomDist(name, log_mean, log_dispersion, logp=_negbin_log_logp,
                         random=_negbin_log_random, dtype="float64", observed=observed,
                         class_name="NegativeBinomialLog", dims="obs")  # fmt: skip
