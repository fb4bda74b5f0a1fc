"""Poisson counts: checks of the targets and the predictive distribution (NumPy/SciPy).

The predictive distribution of a count at a new point is a mixture of
Poisson distributions over the posterior of its log rate ``f``: under a
Gaussian (Laplace) weight posterior ``f ~ N(mu, s^2)`` (the Poisson-lognormal,
integrated by Gauss-Hermite quadrature: :func:`gaussian_rates`), under NUTS
the draws of ``f`` with equal weights.  Either way it is given as rates
``(n, S)`` and weights ``(S,)`` or ``(n, S)`` summing to one, and
:func:`mixture_mean`, :func:`mixture_logpmf` and :func:`mixture_quantiles`
read it.  The reference solver, the estimator and ``compare`` use these.
"""

from __future__ import annotations

import numpy as np
from scipy.special import gammaln, logsumexp, pdtr

__all__ = [
    "check_counts",
    "gaussian_rates",
    "mixture_logpmf",
    "mixture_mean",
    "mixture_quantiles",
    "poisson_logpmf",
]

_HERMITE_NODES = 48


def check_counts(y, name: str = "y", *, fitting: bool = True) -> np.ndarray:
    """``y`` as a float vector of non-negative finite counts, not all zero when ``fitting``.

    Non-integer values are accepted (as scikit-learn's ``PoissonRegressor``
    does: the Poisson deviance is defined for them); negative, missing or
    infinite ones raise a ``ValueError`` naming ``name``.
    """
    arr = np.asarray(y)
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a 1-D array of counts; got shape {arr.shape}")
    if arr.dtype.kind not in "biuf":
        raise ValueError(f"{name} must hold numbers (counts); got dtype {arr.dtype}")
    arr = arr.astype(float)
    bad = ~np.isfinite(arr)
    if bad.any():
        raise ValueError(
            f"{name} has {int(bad.sum())} missing or non-finite value(s); "
            "counts must be finite and >= 0"
        )
    neg = arr < 0
    if neg.any():
        raise ValueError(
            f"{name} has {int(neg.sum())} negative value(s) (smallest {arr.min():g}); "
            "a Poisson model needs counts >= 0"
        )
    if fitting and not np.any(arr > 0):
        raise ValueError(f"{name} is all zero: a Poisson model needs some positive counts")
    return arr


def poisson_logpmf(y: np.ndarray, f: np.ndarray) -> np.ndarray:
    """``log Poisson(y | exp(f))``, elementwise (broadcast), for log rates ``f``."""
    with np.errstate(over="ignore"):
        return y * f - np.exp(f) - gammaln(np.asarray(y, dtype=float) + 1.0)


def gaussian_rates(mu, var, n_nodes: int = _HERMITE_NODES) -> tuple[np.ndarray, np.ndarray]:
    """Gauss-Hermite rates and weights of ``exp(f)``, ``f ~ N(mu, var)``: ``(n, S)``, ``(S,)``."""
    x, w = np.polynomial.hermite_e.hermegauss(n_nodes)  # weight exp(-x^2 / 2)
    w = w / w.sum()
    f = np.asarray(mu, dtype=float)[:, None] + np.sqrt(np.maximum(var, 0.0))[:, None] * x
    with np.errstate(over="ignore"):
        return np.exp(f), w


def _log_weights(rates: np.ndarray, weights: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore"):
        return np.log(np.broadcast_to(weights, rates.shape))


def mixture_mean(rates: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Mean count of the mixture at every point, ``(n,)``."""
    return np.sum(np.broadcast_to(weights, rates.shape) * rates, axis=1)


def mixture_logpmf(y, rates: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Log probability of the counts ``y`` (n,) under the mixture at each point, ``(n,)``."""
    y = np.asarray(y, dtype=float)[:, None]
    with np.errstate(divide="ignore"):
        logr = np.log(rates)
    terms = np.where(rates > 0, y * logr, np.where(y == 0, 0.0, -np.inf))
    lp = terms - rates - gammaln(y + 1.0)
    return logsumexp(lp + _log_weights(rates, weights), axis=1)


def mixture_cdf(k: np.ndarray, rates: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """``P(y <= k)`` under the mixture at each point, for integers ``k`` (n,)."""
    return np.sum(np.broadcast_to(weights, rates.shape) * pdtr(k[:, None], rates), axis=1)


def mixture_quantiles(q: float, rates: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """The smallest count ``k`` with ``P(y <= k) >= q`` at each point, ``(n,)``.

    Integer bisection on the mixture's CDF, between 0 and a bound above the
    largest component's quantile.
    """
    if not 0.0 < q < 1.0:
        raise ValueError(f"q must be in (0, 1); got {q!r}")
    top = np.max(np.where(np.broadcast_to(weights, rates.shape) > 0, rates, 0.0), axis=1)
    hi = np.ceil(top + 10.0 * np.sqrt(top) + 10.0)  # P(y > hi) is negligible for each component
    lo = np.full_like(hi, -1.0)  # invariant: cdf(lo) < q <= cdf(hi)
    while np.any(hi - lo > 1):
        mid = np.floor(0.5 * (lo + hi))
        ok = mixture_cdf(mid, rates, weights) >= q
        hi, lo = np.where(ok, mid, hi), np.where(ok, lo, mid)
    return hi
