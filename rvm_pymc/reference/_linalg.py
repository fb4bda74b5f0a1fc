"""Gaussian posterior and log evidence of the linear-Gaussian RVM, in O(N M^2).

All functions work on the *active* columns only (pruned bases have
``alpha = inf`` and are simply left out of ``Phi``).  No N x N matrix is ever
formed: the covariance ``C = I/beta + Phi A^-1 Phi^T`` enters only through the
M x M posterior precision ``Sigma^-1 = A + beta Phi^T Phi`` (Woodbury identity
and the matrix determinant lemma).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import linalg

from rvm_pymc.priors import HyperPrior

LOG_2PI = float(np.log(2.0 * np.pi))


@dataclass(frozen=True)
class GaussianPosterior:
    """Posterior of the active weights given (alpha, beta).

    Attributes
    ----------
    mean : ndarray of shape (M,)
    cov : ndarray of shape (M, M)
    logdet_precision : float
        ``log |Sigma^-1|``.
    """

    mean: np.ndarray
    cov: np.ndarray
    logdet_precision: float


def chol_solve_spd(H: np.ndarray, what: str = "posterior precision"):
    """Cholesky-factorise a symmetric positive definite matrix with Jacobi scaling.

    Returns ``(inverse, logdet)``.  Raises :class:`numpy.linalg.LinAlgError`
    with an explanation when ``H`` is not numerically positive definite; there
    is deliberately no fallback to a pseudo-inverse.
    """
    diag = np.diag(H)
    if not np.all(np.isfinite(H)) or np.any(diag <= 0):
        raise np.linalg.LinAlgError(
            f"the {what} has non-finite or non-positive diagonal entries; "
            "check the basis for non-finite or all-zero columns"
        )
    p = 1.0 / np.sqrt(diag)
    Hs = H * p[:, None] * p[None, :]
    try:
        L = linalg.cholesky(Hs, lower=True, check_finite=False)
    except linalg.LinAlgError as exc:
        raise np.linalg.LinAlgError(
            f"Cholesky factorisation of the {what} failed (matrix not positive definite "
            "to working precision); the basis is probably numerically rank deficient "
            "with tiny precisions"
        ) from exc
    Linv = linalg.solve_triangular(L, np.eye(L.shape[0]), lower=True, check_finite=False)
    inv = (Linv.T @ Linv) * p[:, None] * p[None, :]
    logdet = 2.0 * np.sum(np.log(np.diag(L))) - 2.0 * np.sum(np.log(p))
    return inv, float(logdet)


def regression_posterior(
    Phi: np.ndarray,
    t: np.ndarray,
    alpha: np.ndarray,
    beta: float,
    *,
    gram: np.ndarray | None = None,
    PhiT_t: np.ndarray | None = None,
) -> GaussianPosterior:
    """Posterior ``N(mu, Sigma)`` of the weights of the active columns.

    ``Sigma = (A + beta Phi^T Phi)^-1`` and ``mu = beta Sigma Phi^T t``;
    ``gram = Phi^T Phi`` and ``PhiT_t = Phi^T t`` may be passed precomputed.
    """
    H = beta * (Phi.T @ Phi if gram is None else gram)
    H[np.diag_indices_from(H)] += alpha
    cov, logdet = chol_solve_spd(H)
    mean = beta * (cov @ (Phi.T @ t if PhiT_t is None else PhiT_t))
    return GaussianPosterior(mean=mean, cov=cov, logdet_precision=logdet)


def log_marginal_likelihood(
    Phi: np.ndarray,
    t: np.ndarray,
    alpha: np.ndarray,
    beta: float,
    post: GaussianPosterior | None = None,
) -> float:
    """``log N(t | 0, I/beta + Phi A^-1 Phi^T)`` evaluated in O(N M^2).

    Uses ``log|C| = log|Sigma^-1| - sum(log alpha) - N log beta`` and
    ``t^T C^-1 t = beta ||t - Phi mu||^2 + mu^T A mu``.
    """
    if post is None:
        post = regression_posterior(Phi, t, alpha, beta)
    n = t.shape[0]
    resid = t - Phi @ post.mean
    quad = beta * float(resid @ resid) + float(np.sum(alpha * post.mean**2))
    logdet_c = post.logdet_precision - float(np.sum(np.log(alpha))) - n * np.log(beta)
    return -0.5 * (n * LOG_2PI + logdet_c + quad)


def log_hyperprior(alpha: np.ndarray, beta: float, prior: HyperPrior) -> float:
    """Hyperprior term of the log-coordinate objective (DESIGN.md section 1).

    ``sum_m [a log alpha_m - b alpha_m] + c log beta - d beta``: the Gamma(a, b)
    and Gamma(c, d) log densities of the *log* precisions (Jacobian included),
    without their normalising constants.  Zero for the ``"evidence"`` preset.
    """
    val = prior.a * float(np.sum(np.log(alpha))) - prior.b * float(np.sum(alpha))
    return val + prior.c * float(np.log(beta)) - prior.d * float(beta)


def dense_log_marginal_likelihood(
    Phi: np.ndarray, t: np.ndarray, alpha: np.ndarray, beta: float
) -> float:
    """The same quantity by an explicit N x N Cholesky (an oracle for tests; O(N^3))."""
    n = t.shape[0]
    C = np.eye(n) / beta + (Phi / alpha) @ Phi.T
    L = np.linalg.cholesky(C)
    z = linalg.solve_triangular(L, t, lower=True)
    return float(-0.5 * (n * LOG_2PI + 2.0 * np.sum(np.log(np.diag(L))) + z @ z))
