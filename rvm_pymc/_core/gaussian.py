"""The Gaussian weight posterior ``N(mean, H^-1)`` in NumPy: factorise, solve, invert, draw.

A Jacobi-scaled Cholesky, ``diag(p) H diag(p) = L L^T`` with ``p_i = H_ii^-1/2``; a matrix
not numerically positive definite raises LinAlgError (no pseudo-inverse, no jitter).

Examples
--------
>>> import numpy as np
>>> H = np.array([[4.0, 1.0], [1.0, 3.0]])
>>> L, p = spd_factor(H, "example precision")
>>> np.allclose(factor_inverse(L, p), np.linalg.inv(H))
True
>>> bool(np.isclose(factor_logdet(L, p), np.log(11.0)))
True
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from scipy.linalg import lapack, solve_triangular

from rvm_pymc._core.rowqr import column_triangle

__all__ = [
    "LOG_2PI",
    "GaussianPosterior",
    "RegressionFactor",
    "covariance_draws",
    "factor_draw",
    "factor_inverse",
    "factor_logdet",
    "factor_solve",
    "gaussian_weights",
    "posterior_precision",
    "regression_factor",
    "regression_posterior",
    "spd_factor",
    "spd_inverse",
    "spd_solve",
]

LOG_2PI = float(np.log(2.0 * np.pi))
"""``log(2 pi)``, of every Gaussian log density in the package."""


_SQRT_EPS_INV = float(np.finfo(float).eps ** -0.5)


def spd_factor(H: np.ndarray, what: str = "matrix") -> tuple[np.ndarray, np.ndarray]:
    """Jacobi-scaled lower Cholesky factor ``(L, p)`` of the lower triangle of ``H``.

    Examples
    --------
    >>> import numpy as np
    >>> H = np.array([[4.0, 2.0], [2.0, 9.0]])
    >>> L, p = spd_factor(H)
    >>> np.allclose((L @ L.T) / np.outer(p, p), H)
    True
    >>> spd_factor(np.array([[1.0, 2.0], [2.0, 1.0]]), "toy precision")
    Traceback (most recent call last):
    ...
    numpy.linalg.LinAlgError: Cholesky factorisation of the toy precision failed ...
    """
    if H.ndim != 2 or H.shape[0] != H.shape[1]:
        raise ValueError(f"the {what} must be a square matrix; got shape {H.shape}")
    if H.size == 0:
        raise np.linalg.LinAlgError(f"the {what} is empty (no active basis)")
    d = H.diagonal()
    if not (d.min() > 0 and np.isfinite(H).all()):  # a NaN fails both tests
        raise np.linalg.LinAlgError(
            f"the {what} has non-finite or non-positive diagonal entries; "
            "check the basis for non-finite or all-zero columns"
        )
    p = 1.0 / np.sqrt(d)
    pp = p[:, None] * p
    L, info = lapack.dpotrf(H * pp, lower=1, clean=1)  # strict upper triangle zeroed
    if info != 0:
        raise np.linalg.LinAlgError(
            f"Cholesky factorisation of the {what} failed (matrix not positive definite "
            "to working precision); the basis is probably numerically rank deficient "
            "with tiny precisions"
        )
    return L, p


def factor_solve(L: np.ndarray, p: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``H^-1 b`` (``b`` of shape (D,) or (D, K)) from the factor of :func:`spd_factor`."""
    b = np.asarray(b, dtype=float)
    ps = p if b.ndim == 1 else p[:, None]
    x, info = lapack.dpotrs(L, ps * b, lower=1)
    if info != 0:  # pragma: no cover - only on an illegal argument
        raise np.linalg.LinAlgError("Cholesky solve failed")
    return ps * x


def factor_inverse(L: np.ndarray, p: np.ndarray) -> np.ndarray:
    """``H^-1`` (exactly symmetric) from the factor ``(L, p)`` of :func:`spd_factor`."""
    inv, info = lapack.dpotri(L, lower=1)
    if info != 0:  # pragma: no cover - potrf succeeded, so the factor is nonsingular
        raise np.linalg.LinAlgError("inversion from the Cholesky factor failed")
    # potri fills the lower triangle and leaves the zeroed upper one: mirror it
    S = inv + inv.T
    S.flat[:: S.shape[0] + 1] *= 0.5  # exact: halving the doubled diagonal
    return S * (p[:, None] * p)


def factor_logdet(L: np.ndarray, p: np.ndarray) -> float:
    """``log |H|`` from the factor ``(L, p)`` of :func:`spd_factor`."""
    return 2.0 * float(np.log(L.diagonal()).sum()) - 2.0 * float(np.log(p).sum())


def factor_draw(L: np.ndarray, p: np.ndarray, mean: np.ndarray, z: np.ndarray) -> np.ndarray:
    """Draws ``mean + diag(p) L^-T z_i`` from ``N(mean, H^-1)``, one per row of ``z`` (n, D)."""
    z = np.asarray(z, dtype=float)
    dev = solve_triangular(L, z.T, lower=True, trans="T", check_finite=False)
    return mean + (p[:, None] * dev).T


def spd_inverse(H: np.ndarray, what: str = "Laplace Hessian") -> tuple[np.ndarray, float]:
    """Inverse (exactly symmetric) and log-determinant of an SPD matrix, one factorisation.

    Examples
    --------
    >>> import numpy as np
    >>> inv, logdet = spd_inverse(np.array([[2.0, 0.0], [0.0, 4.0]]))
    >>> np.allclose(inv, np.diag([0.5, 0.25])), bool(np.isclose(logdet, np.log(8.0)))
    (True, True)
    """
    L, p = spd_factor(H, what)
    return factor_inverse(L, p), factor_logdet(L, p)


def spd_solve(H: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``scipy.linalg.cho_solve(cho_factor(H), b)``'s numbers without its overhead."""
    if not (np.isfinite(H).all() and np.isfinite(b).all()):
        raise ValueError("array must not contain infs or NaNs")
    if H.size == 0:
        if b.shape[0] != 0:
            raise ValueError(f"b has {b.shape[0]} rows for an empty matrix H")
        return np.zeros(b.shape)
    factor, info = lapack.dpotrf(H.T, lower=1, clean=0)
    if info != 0:
        raise np.linalg.LinAlgError("matrix not positive definite to working precision")
    x, info = lapack.dpotrs(factor, b, lower=1)
    if info != 0:  # pragma: no cover - only on an illegal argument
        raise np.linalg.LinAlgError("Cholesky solve failed")
    return x


def covariance_draws(
    mean: np.ndarray,
    cov: np.ndarray,
    n_draws: int,
    rng: np.random.Generator | int | None,
    *,
    antithetic: bool = False,
) -> np.ndarray:
    """Draws ``(n_draws, M[, K])`` from ``N(mean, cov)``, ``cov`` class-major (``antithetic``:
    the second half mirrored about the mean).

    Examples
    --------
    >>> import numpy as np
    >>> w = covariance_draws(np.zeros(2), np.eye(2), 4, 0, antithetic=True)
    >>> w.shape, np.allclose(w.mean(axis=0), 0.0)
    ((4, 2), True)
    """
    mean = np.asarray(mean, dtype=float)
    cov = np.asarray(cov, dtype=float)
    if mean.ndim not in (1, 2):
        raise ValueError(f"mean must have shape (M,) or (M, K); got {mean.shape}")
    m = mean.shape[0]
    k = 1 if mean.ndim == 1 else mean.shape[1]
    if cov.shape != (m * k, m * k):
        raise ValueError(
            f"cov has shape {cov.shape}; expected {(m * k, m * k)} for mean of shape {mean.shape}"
        )
    if isinstance(n_draws, bool) or not isinstance(n_draws, int | np.integer) or n_draws < 1:
        raise ValueError(f"n_draws must be a positive integer; got {n_draws!r}")
    if antithetic and n_draws % 2:
        raise ValueError(f"antithetic draws need an even n_draws; got {n_draws}")
    if cov.size and np.abs(cov - cov.T).max() > 1e-8 * np.abs(cov).max():
        raise ValueError("cov is not symmetric (to 1e-8 relative)")
    rng = np.random.default_rng(rng)
    flat = mean.reshape(m, k).T.reshape(-1)  # class-major
    n_free = n_draws // 2 if antithetic else n_draws
    z = rng.standard_normal((n_free, flat.size))
    if flat.size:
        L, p = spd_factor(cov, "weight covariance")
        dev = (z @ L.T) / p  # cov = diag(1/p) L L^T diag(1/p)
    else:
        dev = z
    draws = flat + dev
    if antithetic:
        draws = np.concatenate([draws, 2.0 * flat - draws])
    if mean.ndim == 1:
        return draws
    return draws.reshape(n_draws, k, m).transpose(0, 2, 1)


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

    Parameters
    ----------
    Phi : ndarray of shape (N, M)
        Active columns of the design matrix.
    t : ndarray of shape (N,)
    alpha : ndarray of shape (M,)
        Precisions, finite and > 0.
    beta : float
        Noise precision.
    gram, PhiT_t : ndarray, optional
        ``Phi^T Phi`` and ``Phi^T t``, if already computed.

    Returns
    -------
    GaussianPosterior
        ``Sigma = (A + beta Phi^T Phi)^-1``, ``mu = beta Sigma Phi^T t`` and
        ``log |Sigma^-1|`` (``regression_factor``).

    Raises
    ------
    numpy.linalg.LinAlgError
        If the posterior precision is not positive definite to working precision.

    Examples
    --------
    >>> import numpy as np
    >>> post = regression_posterior(np.ones((4, 1)), np.full(4, 2.0), np.array([1.0]), 1.0)
    >>> np.round(post.mean, 12).tolist(), np.round(post.cov, 12).tolist()
    ([1.6], [[0.2]])
    """
    f = regression_factor(Phi, t, alpha, beta, gram=gram, PhiT_t=PhiT_t)
    return GaussianPosterior(
        mean=f.mean, cov=factor_inverse(f.L, f.p), logdet_precision=factor_logdet(f.L, f.p)
    )


class RegressionFactor(NamedTuple):
    """Factor ``(L, p)`` of ``A + beta Phi^T Phi``, the mean, cond(H) and whether QR made it."""

    L: np.ndarray
    p: np.ndarray
    mean: np.ndarray
    cond: float
    qr: bool


def _stacked_r(
    Phi: np.ndarray,
    t: np.ndarray,
    alpha: np.ndarray,
    beta: float,
    triangle: Callable[[], np.ndarray] | None,
) -> tuple[np.ndarray, np.ndarray]:
    """``R`` of ``[sqrt(beta) Phi; A^1/2] = Q R`` and the top of ``Q^T [sqrt(beta) t; 0]``,
    from the :func:`~rvm_pymc._core.rowqr.column_triangle` of ``[Phi | t]`` (or ``triangle()``)."""
    m = Phi.shape[1]
    top = column_triangle(Phi, t) if triangle is None else triangle()
    if top.shape[1] != m + 1:
        raise ValueError(f"the rows of [Phi | t] have {top.shape[1]} columns; expected {m + 1}")
    rows = top.shape[0]
    stack = np.zeros((rows + m, m + 1))
    stack[:rows] = np.sqrt(beta) * top
    stack[rows + np.arange(m), np.arange(m)] = np.sqrt(alpha)
    Rt = np.linalg.qr(stack, mode="r")
    return Rt[:m, :m], Rt[:m, m]


def posterior_precision(gram: np.ndarray, alpha: np.ndarray, beta: float) -> np.ndarray:
    """``H = A + beta Phi^T Phi`` from the Gram matrix ``Phi^T Phi`` (a new array)."""
    H = beta * gram
    H.flat[:: H.shape[0] + 1] += alpha  # the diagonal (flat indexes in C order)
    return H


def gaussian_weights(
    gram: np.ndarray, PhiT_t: np.ndarray, alpha: np.ndarray, beta: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Factor ``(L, p)`` of ``H = A + beta Phi^T Phi`` and the mean ``beta H^-1 Phi^T t``."""
    L, p = spd_factor(posterior_precision(gram, alpha, beta), "posterior precision of the weights")
    return L, p, beta * factor_solve(L, p, PhiT_t)


def regression_factor(
    Phi: np.ndarray,
    t: np.ndarray,
    alpha: np.ndarray,
    beta: float,
    *,
    gram: np.ndarray | None = None,
    PhiT_t: np.ndarray | None = None,
    triangle: Callable[[], np.ndarray] | None = None,
    what: str = "posterior precision",
) -> RegressionFactor:
    """Factor of ``H = A + beta Phi^T Phi`` and the posterior mean: Cholesky when
    ``cond(H) <= eps^-1/2``, else the backward-stable QR of :func:`_stacked_r`."""
    H = posterior_precision(Phi.T @ Phi if gram is None else gram, alpha, beta)
    L, p = spd_factor(H, what)
    anorm = float(np.abs(H * (p[:, None] * p)).sum(axis=0).max())
    rcond, info = lapack.dpocon(L, anorm, uplo="L")
    cond = 1.0 / rcond if info == 0 and rcond > 0 else np.inf
    if cond <= _SQRT_EPS_INV:
        mean = factor_solve(L, p, beta * (Phi.T @ t if PhiT_t is None else PhiT_t))
        return RegressionFactor(L, p, mean, cond, False)
    R, Qt_t = _stacked_r(Phi, t, alpha, beta, triangle)
    mean = solve_triangular(R, Qt_t)
    L = (R * p).T  # diag(p) R^T R diag(p) = L L^T
    L *= np.sign(L.diagonal())  # columns signed: a positive diagonal, L L^T unchanged
    return RegressionFactor(L, p, mean, cond, True)
