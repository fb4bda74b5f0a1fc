"""Log evidence of the linear-Gaussian RVM on its active columns, in O(N M^2).

``C = I/beta + Phi A^-1 Phi^T`` enters only through ``Sigma^-1 = A + beta Phi^T Phi``
(Woodbury identity and the matrix determinant lemma): no N x N matrix is formed.
"""

from __future__ import annotations

import numpy as np
from scipy import linalg

from rvm_pymc._core.gaussian import LOG_2PI, GaussianPosterior, regression_posterior

__all__ = [
    "dense_log_marginal_likelihood",
    "log_alpha_prior",
    "log_hyperprior",
    "log_marginal_likelihood",
]


def log_marginal_likelihood(
    Phi: np.ndarray,
    t: np.ndarray,
    alpha: np.ndarray,
    beta: float,
    post: GaussianPosterior | None = None,
    *,
    n: int | None = None,
    rss_offset: float = 0.0,
) -> float:
    """``log N(t | 0, I/beta + Phi A^-1 Phi^T)`` in O(N M^2).

    From ``log|C| = log|Sigma^-1| - sum(log alpha) - N log beta`` and
    ``t^T C^-1 t = beta ||t - Phi mu||^2 + mu^T A mu``.  ``Phi`` and ``t`` may be a
    :class:`~rvm_pymc._core.rowqr.RowQR` compression (``R``, ``z``): then ``n`` is the
    number of data points and ``rss_offset`` its remainder.
    """
    if post is None:
        post = regression_posterior(Phi, t, alpha, beta)
    n = t.shape[0] if n is None else int(n)
    resid = t - Phi @ post.mean
    rss = float(resid @ resid) + rss_offset
    quad = beta * rss + float(np.sum(alpha * post.mean**2))
    logdet_c = post.logdet_precision - float(np.sum(np.log(alpha))) - n * np.log(beta)
    return -0.5 * (n * LOG_2PI + logdet_c + quad)


def log_alpha_prior(alpha: np.ndarray, prior) -> float:
    """``sum_m [a log alpha_m - b alpha_m]``, unnormalised; a zero ``a`` or ``b`` adds 0."""
    with np.errstate(divide="ignore"):
        val = prior.a * float(np.sum(np.log(alpha))) if prior.a else 0.0
    val -= prior.b * float(np.sum(alpha)) if prior.b else 0.0
    return val


def log_beta_prior(beta: float, prior) -> float:
    """``c log beta - d beta``: the Gamma(c, d) log density of ``log beta``, unnormalised."""
    return prior.c * float(np.log(beta)) - prior.d * float(beta)


def log_hyperprior(alpha: np.ndarray, beta: float, prior) -> float:
    """The hyperprior term of the log-coordinate objective (docs/design.md section 1):
    ``log_alpha_prior + log_beta_prior`` (``prior`` has ``a, b, c, d``)."""
    return log_alpha_prior(alpha, prior) + log_beta_prior(beta, prior)


def dense_log_marginal_likelihood(
    Phi: np.ndarray, t: np.ndarray, alpha: np.ndarray, beta: float
) -> float:
    """The same quantity by an explicit N x N Cholesky (an oracle for tests; O(N^3))."""
    n = t.shape[0]
    C = np.eye(n) / beta + (Phi / alpha) @ Phi.T
    L = np.linalg.cholesky(C)
    z = linalg.solve_triangular(L, t, lower=True)
    return float(-0.5 * (n * LOG_2PI + 2.0 * np.sum(np.log(np.diag(L))) + z @ z))
