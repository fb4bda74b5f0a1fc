"""Likelihood terms of the RVM models, as PyTensor graphs (used by :mod:`rvm_pymc.models`).

The marginal regression likelihood is evaluated in O(N M^2) through the M x M
posterior precision; the classification likelihoods are written with
softplus / log_softmax so that they are stable for any logit in every
PyTensor compile mode.

References
----------
Tipping, M. E. (2001). Sparse Bayesian learning and the relevance vector
machine. *Journal of Machine Learning Research* 1, 211-244.
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor.tensor as pt
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


def marginal_likelihood(log_alpha, log_beta, Phi, PhiTPhi) -> None:
    """Observed ``t_obs`` of the marginal model: :func:`marginal_logp` on the data ``t``."""
    pm.CustomDist(
        "t_obs",
        log_alpha,
        log_beta,
        Phi,
        PhiTPhi,
        logp=marginal_logp,
        random=_marginal_random,
        signature="(m),(),(n,m),(m,m)->(n)",
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
        dims="obs",
    )
