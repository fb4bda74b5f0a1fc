"""The marginal regression likelihood through a low-rank factor of ``Phi^T Phi``.

For a smooth kernel on low-dimensional inputs (an RBF on 1-D inputs: sinc,
N = 100, gamma 0.5, has rank 45 of 101 bases) the eigenvalues of
``G = Phi^T Phi`` decay exponentially and its numerical rank ``r`` is below the
number of bases ``M``, the further the more bases share the input range.  With ``G ~ W W^T``,
``W = V S^(1/2)`` (M x r, the eigenvalues above ``GRAM_RTOL`` times the
largest), the posterior precision ``H = A + beta W W^T`` is a diagonal plus a
rank-``r`` term, and the matrix determinant lemma and the Woodbury identity
give the marginal likelihood from the r x r matrix
``K = I_r + beta W^T A^-1 W`` (all eigenvalues >= 1):

.. math::

    \\log|C| = \\log|K| - N\\log\\beta, \\qquad
    \\Sigma = A^{-1} - \\beta A^{-1} W K^{-1} W^T A^{-1}, \\qquad
    \\mu = A^{-1} W y, \\quad y = \\beta K^{-1} z,

``z = S^-1 W^T Phi^T t`` (the coordinates of ``Phi^T t`` in the range of
``W``), so that a value and gradient cost one r x r Cholesky factorisation and
O(M r^2 + N M) products instead of the M x M factorisation and triangular
inverse of :func:`~rvm_pymc.models.marginal_logp_fast`.  The quadratic form is
evaluated in residual form with the design matrix itself,
``t^T C^-1 t = beta ||t - Phi mu||^2 + mu^T A mu``: the part of ``t`` outside
the range of ``Phi`` is counted exactly (no difference of large numbers at a
large target offset), and as ``mu`` minimises that form an error in ``mu``
changes the value only to second order.

The factor is data (a function of ``Phi`` alone), computed once by
:func:`gram_factor` when the model is built.

References
----------
Tipping, M. E. (2001). Sparse Bayesian learning and the relevance vector
machine. *Journal of Machine Learning Research* 1, 211-244.
"""

from __future__ import annotations

import functools

import numpy as np
import pytensor.tensor as pt
from pytensor.compile.builders import OpFromGraph
from pytensor.gradient import grad_undefined
from pytensor.tensor.linalg import cholesky, solve_triangular

from rvm_pymc.models._likelihoods import (
    LOG_2PI,
    apply_marginal,
    marginal_likelihood,
    marginal_op,
)

__all__ = [
    "GRAM_FACTOR_DATA",
    "GRAM_RTOL",
    "LOW_RANK_FRACTION",
    "gram_factor",
    "marginal_likelihood_low_rank",
    "marginal_logp_low_rank",
]

GRAM_RTOL = 1e-18
"""Eigenvalues of ``Phi^T Phi`` at or below this times the largest are dropped.

That is, singular values of ``Phi`` below ``1e-9`` times the largest.  The
value changes by far less than the rounding of the dense path; the gradient in
``log alpha`` changes to first order in the dropped singular values (through
the residual ``t - Phi mu``).  Against central differences of a long-double
oracle on a sinc design (N = 60, M = 61, ``log alpha`` of sd 1-6) the largest
error of the gradient in ``log alpha`` was 6-7e-9 for the dense form and for
the low-rank form at this threshold (rank 43), 2e-8 to 2e-7 at ``eps`` (rank
40) and 4e-7 to 1.4e-6 at ``1e-13`` (rank 37)."""

GRAM_FACTOR_DATA = "PhiTPhi_factor"
"""Name of the data container of the factor in a model of the low-rank form."""

LOW_RANK_FRACTION = 0.6
""":func:`~rvm_pymc.models.regression_marginal` uses the factor when its rank is at most
this fraction of the number of bases.

A value and gradient cost about ``M^3`` flops in the dense form and ``3 M r^2`` in
the low-rank one (equal at ``r = 0.58 M``), but the dense form does more in all at
equal flops (a triangular inverse beside its factorisation).  Measured on Numba,
value and gradient of sinc designs (1-D RBF of varied width, best of three passes
over 100 points, quiet machine, 2026-11-27), dense / low-rank time:
M = 81: 1.45 at ``r = 0.56 M``, 1.09 at 0.68, 0.91 at 0.83; M = 151: 1.81 at 0.54,
1.22 at 0.71; M = 301: 1.56 at 0.52, 1.08 at 0.68, 0.81 at 0.83.  The threshold
keeps a margin below the crossover (about 0.75 M); at 0.5 the folds of a
cross-validation on sinc N = 100 (ranks 43-45 of 81) took the dense form and the
fit on all rows (45 of 101) the low-rank one, two compiled models."""


def gram_factor(Phi, rtol: float = GRAM_RTOL) -> np.ndarray:
    """``W`` (M x r) with orthogonal columns and ``W W^T = Phi^T Phi`` to within ``rtol``.

    From the singular value decomposition ``Phi = U s V^T``: ``W = V_r s_r``
    over the singular values with ``s_k^2 > rtol * s_1^2``, so that
    ``||Phi^T Phi - W W^T||_2 <= rtol ||Phi||_2^2`` (and the rounding of the
    decomposition, a few ``eps ||Phi||_2^2``).

    Parameters
    ----------
    Phi : ndarray of shape (N, M)
        Design matrix.
    rtol : float
        Relative threshold on the eigenvalues of ``Phi^T Phi``; default
        ``rvm_pymc.models.GRAM_RTOL``.

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
    # d/d log alpha_m = (gamma_m - alpha_m mu_m^2) / 2,  gamma_m = 1 - alpha_m Sigma_mm
    # d/d log beta    = (N - sum_m gamma_m - beta ||t - Phi mu||^2) / 2
    # with gamma_m = beta |L^-1 Q W^T e_m|^2 / alpha_m (Woodbury), no M x M matrix.
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
        grad_undefined(op, 2, W, why),
        grad_undefined(op, 3, Phi, why),
        grad_undefined(op, 4, t, why),
    ]


@functools.cache
def _low_rank_op() -> OpFromGraph:
    return marginal_op(_low_rank_parts, _low_rank_pullback, "W", "rvm_marginal_logp_low_rank")


def marginal_logp_low_rank(t, log_alpha, log_beta, Phi, W) -> pt.TensorVariable:
    """:func:`~rvm_pymc.models.marginal_logp_fast` with ``Phi^T Phi`` replaced by ``W W^T``.

    ``log N(t | 0, I/beta + Phi A^-1 Phi^T)`` with the posterior precision
    ``A + beta W W^T``; one value and gradient in ``(log alpha, log beta)``
    cost one r x r Cholesky factorisation and O(M r^2 + N M) products.  The
    gradient in ``Phi``, ``W`` and ``t`` is undefined (they are data).

    Parameters
    ----------
    t : TensorVariable of shape (N,)
    log_alpha : TensorVariable of shape (M,)
    log_beta : TensorVariable, scalar
    Phi : TensorVariable of shape (N, M)
    W : TensorVariable of shape (M, r)
        :func:`gram_factor` of ``Phi`` (orthogonal columns).

    Returns
    -------
    TensorVariable
        Scalar log density.
    """
    return apply_marginal(_low_rank_op(), log_alpha, log_beta, W, Phi, t)


def marginal_likelihood_low_rank(log_alpha, log_beta, Phi, W) -> None:
    """Observed ``t_obs`` of the marginal model by :func:`marginal_logp_low_rank` (data ``t``).

    The twin of :func:`~rvm_pymc.models._likelihoods.marginal_likelihood`: the
    same draws (through ``Phi``, which may take new rows for predictions), the
    log density through the factor ``W`` of ``Phi^T Phi``.
    """
    marginal_likelihood(log_alpha, log_beta, Phi, W, marginal_logp_low_rank, "(m,r)")
