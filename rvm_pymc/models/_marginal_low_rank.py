"""The marginal regression likelihood through a low-rank factor ``W`` (M x r) of
``Phi^T Phi`` (``docs/pymc.md``, "Low-rank form"): with ``K = I_r + beta W^T A^-1 W``,

.. math::

    \\log|C| = \\log|K| - N\\log\\beta, \\qquad
    \\mu = A^{-1} W y, \\quad y = \\beta K^{-1} z,

``z`` the coordinates of ``Phi^T t`` in the range of ``W``: one r x r Cholesky
factorisation instead of the M x M one of :func:`~rvm_pymc.models.marginal_logp_fast`.
The quadratic form stays in residual form, ``beta ||t - Phi mu||^2 + mu^T A mu``.
"""

from __future__ import annotations

import functools

import numpy as np
import pytensor.tensor as pt
from pytensor.compile.builders import OpFromGraph
from pytensor.gradient import grad_undefined
from pytensor.tensor.linalg import cholesky, solve_triangular

from rvm_pymc._core.gaussian import LOG_2PI
from rvm_pymc.models._likelihoods import apply_marginal, marginal_likelihood, marginal_op

__all__ = [
    "GRAM_FACTOR_DATA",
    "GRAM_RTOL",
    "LOW_RANK_FRACTION",
    "gram_factor",
    "marginal_likelihood_low_rank",
    "marginal_logp_low_rank",
]

GRAM_RTOL = 1e-18
"""Eigenvalues of ``Phi^T Phi`` at or below this times the largest are dropped."""

GRAM_FACTOR_DATA = "PhiTPhi_factor"

LOW_RANK_FRACTION = 0.6
"""``regression_marginal`` uses the factor when its rank is at most this fraction of ``M``."""


def gram_factor(Phi, rtol: float = GRAM_RTOL) -> np.ndarray:
    """``W`` (M x r) with orthogonal columns and ``W W^T = Phi^T Phi`` to within ``rtol``.

    Parameters
    ----------
    Phi : ndarray of shape (N, M)
        Design matrix.
    rtol : float
        Relative threshold on the eigenvalues of ``Phi^T Phi``.

    Returns
    -------
    ndarray of shape (M, r)
        The factor, columns by decreasing norm (``r >= 1``).
    """
    Phi = np.asarray(Phi, dtype=float)
    if Phi.ndim != 2 or not np.all(np.isfinite(Phi)):
        raise ValueError("Phi must be a finite 2-D array")
    if not (np.isfinite(rtol) and 0.0 <= rtol < 1.0):
        raise ValueError(f"rtol must be in [0, 1); got {rtol!r}")
    _, s, Vt = np.linalg.svd(Phi, full_matrices=False)
    keep = s**2 > rtol * s[0] ** 2 if s[0] > 0 else np.arange(s.size) < 1
    return Vt[keep].T * s[keep]


def _low_rank_parts(log_alpha, log_beta, W, Phi, t):
    alpha, beta = pt.exp(log_alpha), pt.exp(log_beta)
    n = pt.cast(t.shape[0], "float64")
    D = W / alpha[:, None]  # A^-1 W
    K = pt.eye(W.shape[1]) + beta * (W.T @ D)
    q = 1.0 / pt.sqrt(pt.diag(K))  # Jacobi scaling of K
    L = cholesky(K * q[:, None] * q[None, :], lower=True)
    z = (W.T @ (Phi.T @ t)) / pt.sum(W**2, axis=0)
    y = beta * q * solve_triangular(L.T, solve_triangular(L, q * z, lower=True), lower=False)
    mu = D @ y
    resid = t - Phi @ mu
    beta_rss = beta * pt.sum(resid**2)
    logdet_c = 2.0 * pt.sum(pt.log(pt.diag(L))) - 2.0 * pt.sum(pt.log(q)) - n * log_beta
    logp = -0.5 * (n * LOG_2PI + logdet_c + beta_rss + pt.sum(alpha * mu**2))
    return logp, L, q, mu, beta_rss


def _low_rank_pullback(inputs, outputs, cotangents):
    # d/d log alpha_m = (gamma_m - alpha_m mu_m^2) / 2, d/d log beta = (N - sum gamma -
    # beta ||t - Phi mu||^2) / 2, gamma_m = beta |L^-1 Q W^T e_m|^2 / alpha_m (Woodbury)
    log_alpha, log_beta, W, Phi, t = inputs
    _, L, q, mu, beta_rss = outputs
    alpha, beta = pt.exp(log_alpha), pt.exp(log_beta)
    n = pt.cast(t.shape[0], "float64")
    R = solve_triangular(L, q[:, None] * W.T, lower=True)
    gamma = beta * pt.sum(R**2, axis=0) / alpha
    g = cotangents[0]
    op = _low_rank_op()
    why = "the low-rank marginal is for a design matrix that is data; use marginal_logp_fast"
    return [
        g * 0.5 * (gamma - alpha * mu**2),
        g * 0.5 * (n - pt.sum(gamma) - beta_rss),
        *(grad_undefined(op, i, v, why) for i, v in ((2, W), (3, Phi), (4, t))),
    ]


@functools.cache
def _low_rank_op() -> OpFromGraph:
    return marginal_op(_low_rank_parts, _low_rank_pullback, "W", "rvm_marginal_logp_low_rank")


def marginal_logp_low_rank(t, log_alpha, log_beta, Phi, W) -> pt.TensorVariable:
    """:func:`~rvm_pymc.models.marginal_logp_fast` with ``Phi^T Phi`` replaced by ``W W^T``.

    The gradient in ``Phi``, ``W`` and ``t`` is undefined (they are data).

    Parameters
    ----------
    t, log_alpha, log_beta, Phi : TensorVariable
        As for :func:`~rvm_pymc.models.marginal_logp`.
    W : TensorVariable of shape (M, r)
        :func:`gram_factor` of ``Phi`` (orthogonal columns).

    Returns
    -------
    TensorVariable
        Scalar log density.
    """
    return apply_marginal(_low_rank_op(), log_alpha, log_beta, W, Phi, t)


def marginal_likelihood_low_rank(log_alpha, log_beta, Phi, W) -> None:
    """Observed ``t_obs`` of the marginal model by :func:`marginal_logp_low_rank` (data ``t``)."""
    marginal_likelihood(log_alpha, log_beta, Phi, W, marginal_logp_low_rank, "(m,r)")
