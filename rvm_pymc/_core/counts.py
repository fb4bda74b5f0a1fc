r"""Counts: target checks, the Poisson and NB2 likelihoods (log link, ``mu = exp(f)``),

.. math::

    p(y \mid \mu, r) = \frac{\Gamma(y + r)}{\Gamma(r)\, y!}
        \Big(\frac{r}{r + \mu}\Big)^{r} \Big(\frac{\mu}{r + \mu}\Big)^{y},
    \qquad \mathrm{var}(y) = \mu + \mu^2 / r,

and the predictive: a mixture over the posterior of ``f`` (:class:`CountsMixture`).
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
    """``y`` as a float vector of non-negative finite counts (non-integers accepted, as
    scikit-learn's ``PoissonRegressor``), not all zero when ``fitting``."""
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
    """``log NB(y | mean exp(f), dispersion r)`` (NB2), elementwise; accurate at large ``r``."""
    y, r, f = (np.asarray(v, dtype=float) for v in (y, r, f))
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
    """The predictive of counts at ``n`` points: component means ``rates`` ``(n, S)``,
    ``weights`` ``(S,)`` or ``(n, S)`` summing to one, NB2 ``dispersion`` (None: Poisson;
    a float or ``(S,)``)."""

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


def mixture_mean(rates: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Mean count of the mixture at every point, ``(n,)`` (the same for either likelihood)."""
    return np.sum(np.broadcast_to(weights, rates.shape) * rates, axis=1)


def mixture_logpmf(y, rates: np.ndarray, weights: np.ndarray, dispersion=None) -> np.ndarray:
    """Log probability of the counts ``y`` (n,) under the mixture at each point, ``(n,)``."""
    y = np.asarray(y, dtype=float)[:, None]
    with np.errstate(divide="ignore"):
        logr, logw = np.log(rates), np.log(np.broadcast_to(weights, rates.shape))
    if dispersion is None:
        terms = np.where(rates > 0, y * logr, np.where(y == 0, 0.0, -np.inf))
        lp = terms - rates - gammaln(y + 1.0)
    else:
        lp = negbin_logpmf(y, logr, dispersion)
        lp = np.where(rates > 0, lp, np.where(y == 0, 0.0, -np.inf))
    return logsumexp(lp + logw, axis=1)


def mixture_cdf(k: np.ndarray, rates: np.ndarray, weights: np.ndarray, dispersion=None):
    """``P(y <= k)`` under the mixture at each point (NB2: ``I_p(r, k + 1)``, ``p = r/(r+mu)``)."""
    if dispersion is None:
        comp = pdtr(k[:, None], rates)
    else:
        r = np.broadcast_to(np.asarray(dispersion, dtype=float), rates.shape)
        comp = betainc(r, k[:, None] + 1.0, r / (r + rates))
    return np.sum(np.broadcast_to(weights, rates.shape) * comp, axis=1)


def mixture_quantiles(q: float, rates: np.ndarray, weights: np.ndarray, dispersion=None):
    """The smallest count ``k`` with ``P(y <= k) >= q`` at each point, by integer bisection."""
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
