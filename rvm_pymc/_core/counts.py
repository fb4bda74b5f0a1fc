r"""Counts: checks of the targets, the Poisson and negative binomial likelihoods and the
predictive distribution (NumPy/SciPy).

Two likelihoods of a count ``y`` with the log link, mean ``mu = exp(f)``:
the Poisson (:func:`poisson_logpmf`) and the negative binomial NB2
(:func:`negbin_logpmf`) of dispersion ``r > 0``,

.. math::

    p(y \mid \mu, r) = \frac{\Gamma(y + r)}{\Gamma(r)\, y!}
        \Big(\frac{r}{r + \mu}\Big)^{r} \Big(\frac{\mu}{r + \mu}\Big)^{y},
    \qquad \mathrm{var}(y) = \mu + \mu^2 / r,

the Poisson's limit as ``r -> inf``.

The predictive distribution of a count at a new point is a mixture of
these over the posterior of its log mean ``f``: under a Gaussian (Laplace)
weight posterior ``f ~ N(mu, s^2)`` (integrated by Gauss-Hermite quadrature:
:func:`gaussian_rates`), under NUTS the draws of ``f`` with equal weights.
Either way it is given as rates ``(n, S)`` and weights ``(S,)`` or ``(n, S)``
summing to one, with a ``dispersion`` (None for the Poisson; a float, or one
value per component ``(S,)`` for NUTS draws), and :func:`mixture_mean`,
:func:`mixture_logpmf` and :func:`mixture_quantiles` read it.  The reference
solver, the estimator and ``compare`` use these.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy.special import betainc, betaln, gammaln, logsumexp, pdtr

__all__ = [
    "CountsMixture",
    "check_counts",
    "gaussian_rates",
    "mixture_logpmf",
    "mixture_mean",
    "mixture_quantiles",
    "negbin_logpmf",
    "negbin_replicate",
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


def negbin_logpmf(y: np.ndarray, f: np.ndarray, r) -> np.ndarray:
    """``log NB(y | mean exp(f), dispersion r)`` (NB2), elementwise (broadcast).

    Written in the log mean ``f`` and ``log(1 + mu / r)`` so that it is accurate
    for large ``r`` (where it tends to :func:`poisson_logpmf`) and large ``f``.
    """
    y = np.asarray(y, dtype=float)
    r = np.asarray(r, dtype=float)
    f = np.asarray(f, dtype=float)
    log_r = np.log(r)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        log1p_ratio = np.logaddexp(0.0, f - log_r)  # log(1 + mu / r)
        # lgamma(y + r) - lgamma(r) - y log r (-> 0 as r -> inf) through betaln, which
        # keeps it accurate at large r where the difference of lgammas cancels
        ratio = np.where(y > 0, gammaln(y) - betaln(np.maximum(y, 1e-300), r) - y * log_r, 0.0)
        return ratio - gammaln(y + 1.0) + y * f - (r + y) * log1p_ratio


def negbin_replicate(f: np.ndarray, r, rng: np.random.Generator) -> np.ndarray:
    """One NB2 draw per element of the log means ``f`` (broadcast with ``r``), int64."""
    f, r = np.broadcast_arrays(np.asarray(f, dtype=float), np.asarray(r, dtype=float))
    with np.errstate(over="ignore"):
        p = 1.0 / (1.0 + np.exp(f - np.log(r)))  # r / (r + mu)
    return rng.negative_binomial(r, np.clip(p, 1e-300, 1.0)).astype(np.int64)


class CountsMixture(NamedTuple):
    """The predictive distribution of counts at ``n`` points as a mixture.

    ``rates`` ``(n, S)``: the component means; ``weights`` ``(S,)`` or ``(n, S)``
    summing to one; ``dispersion``: None for Poisson components, else the NB2
    dispersion ``r``, a float or ``(S,)`` (one per component).
    """

    rates: np.ndarray
    weights: np.ndarray
    dispersion: float | np.ndarray | None = None


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
    """Mean count of the mixture at every point, ``(n,)`` (the same for either likelihood)."""
    return np.sum(np.broadcast_to(weights, rates.shape) * rates, axis=1)


def mixture_logpmf(y, rates: np.ndarray, weights: np.ndarray, dispersion=None) -> np.ndarray:
    """Log probability of the counts ``y`` (n,) under the mixture at each point, ``(n,)``.

    Poisson components for ``dispersion`` None, else NB2 of that dispersion.
    """
    y = np.asarray(y, dtype=float)[:, None]
    with np.errstate(divide="ignore"):
        logr = np.log(rates)
    if dispersion is None:
        terms = np.where(rates > 0, y * logr, np.where(y == 0, 0.0, -np.inf))
        lp = terms - rates - gammaln(y + 1.0)
    else:
        lp = negbin_logpmf(y, logr, dispersion)
        lp = np.where(rates > 0, lp, np.where(y == 0, 0.0, -np.inf))
    return logsumexp(lp + _log_weights(rates, weights), axis=1)


def mixture_cdf(k: np.ndarray, rates: np.ndarray, weights: np.ndarray, dispersion=None):
    """``P(y <= k)`` under the mixture at each point, for integers ``k`` (n,).

    NB2: ``P(y <= k) = I_p(r, k + 1)``, the regularised incomplete beta at
    ``p = r / (r + mu)``.
    """
    if dispersion is None:
        comp = pdtr(k[:, None], rates)
    else:
        r = np.broadcast_to(np.asarray(dispersion, dtype=float), rates.shape)
        comp = betainc(r, k[:, None] + 1.0, r / (r + rates))
    return np.sum(np.broadcast_to(weights, rates.shape) * comp, axis=1)


def mixture_quantiles(q: float, rates: np.ndarray, weights: np.ndarray, dispersion=None):
    """The smallest count ``k`` with ``P(y <= k) >= q`` at each point, ``(n,)``.

    Integer bisection on the mixture's CDF, between 0 and a bound above the
    largest component's quantile (doubled until the CDF there reaches ``q``).
    """
    if not 0.0 < q < 1.0:
        raise ValueError(f"q must be in (0, 1); got {q!r}")
    top = np.max(np.where(np.broadcast_to(weights, rates.shape) > 0, rates, 0.0), axis=1)
    var = top
    if dispersion is not None:
        var = top + top**2 / np.min(np.asarray(dispersion, dtype=float))
    hi = np.ceil(top + 10.0 * np.sqrt(var) + 10.0)
    for _ in range(64):  # a heavy NB tail may reach beyond ten sd
        low = mixture_cdf(hi, rates, weights, dispersion) < q
        if not np.any(low):
            break
        hi = np.where(low, 2.0 * hi, hi)
    lo = np.full_like(hi, -1.0)  # invariant: cdf(lo) < q <= cdf(hi)
    while np.any(hi - lo > 1):
        mid = np.floor(0.5 * (lo + hi))
        ok = mixture_cdf(mid, rates, weights, dispersion) >= q
        hi, lo = np.where(ok, mid, hi), np.where(ok, lo, mid)
    return hi
