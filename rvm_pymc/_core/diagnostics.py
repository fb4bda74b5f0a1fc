"""Rank-normalised R-hat and bulk / tail ESS of many variables at once.

The statistics of ArviZ (``arviz_stats.rhat(method="rank")``,
``arviz_stats.ess(method="bulk" | "tail")``), computed for every element of
an array of draws ``(chain, draw, n)`` in a few vectorised passes instead of
one Python call per element: the same definitions (Vehtari et al. 2021, as
ArviZ implements them: split chains, Blom's rank offset 3/8, the folded
draws for the tail R-hat, Geyer's initial monotone sequence on FFT
autocovariances, the tail ESS of the indicators below the quantiles ``1 - p``
and ``p`` for ArviZ's ``stats.ci_prob`` ``p``, read at the call) and the same
values to rounding
(``tests/test_diagnostics.py`` checks them against ArviZ).  ArviZ loops in
Python over the elements; on 2 x 750 draws of 203 variables that took 0.6 s
against a few milliseconds here, which matters when NUTS is checked while it
samples (:mod:`rvm_pymc.inference._stop`).

References
----------
Vehtari, A., Gelman, A., Simpson, D., Carpenter, B. and Bürkner, P.-C. (2021).
Rank-normalization, folding, and localization: an improved R-hat for assessing
convergence of MCMC. *Bayesian Analysis* 16, 667-718.
"""

from __future__ import annotations

import numpy as np
from scipy import fft, special

__all__ = ["ess_bulk", "ess_tail", "rank_rhat", "summary"]


def _split(x: np.ndarray) -> np.ndarray:
    """``(chain, draw, n)`` -> ``(2 chain, draw // 2, n)``: each chain's halves (an odd
    draw count drops the middle draw, as ArviZ does)."""
    half = x.shape[1] // 2
    return np.concatenate([x[:, :half], x[:, x.shape[1] - half :]], axis=0)


def _ranks(flat: np.ndarray) -> np.ndarray:
    """Ranks (1-based) down each column of ``flat``, ties given their average rank
    (``scipy.stats.rankdata(method="average", axis=0)``, in a few passes over all
    columns at once)."""
    rows = np.ascontiguousarray(flat.T)  # one variable a row: sorts along memory
    n = rows.shape[1]
    order = np.argsort(rows, axis=1)
    ordered = np.take_along_axis(rows, order, axis=1)
    pos = np.arange(n, dtype=float)
    first = np.ones(ordered.shape, dtype=bool)
    first[:, 1:] = ordered[:, 1:] != ordered[:, :-1]
    last = np.ones(ordered.shape, dtype=bool)
    last[:, :-1] = first[:, 1:]
    start = np.maximum.accumulate(np.where(first, pos, 0.0), axis=1)
    end = np.minimum.accumulate(np.where(last, pos, n - 1.0)[:, ::-1], axis=1)[:, ::-1]
    ranks = np.empty(ordered.shape)
    np.put_along_axis(ranks, order, (start + end) / 2.0 + 1.0, axis=1)
    return ranks.T


def _z_scale(x: np.ndarray) -> np.ndarray:
    """Normal scores of the ranks over all chains and draws, per variable (average ranks
    for ties, Blom's offset)."""
    flat = x.reshape(-1, x.shape[-1])
    return special.ndtri((_ranks(flat) - 0.375) / (flat.shape[0] + 0.25)).reshape(x.shape)


def _rhat(x: np.ndarray) -> np.ndarray:
    """Gelman-Rubin R-hat of ``(chain, draw, n)``."""
    n = x.shape[1]
    between = n * np.var(x.mean(axis=1), axis=0, ddof=1)
    within = np.mean(np.var(x, axis=1, ddof=1), axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):  # a constant: NaN, as ArviZ's
        return np.sqrt((between / within + n - 1) / n)


def _usable(x: np.ndarray, min_chains: int) -> np.ndarray:
    """Elements ArviZ computes (no NaN, enough chains and at least 4 draws); else NaN."""
    ok = ~np.isnan(x).any(axis=(0, 1))
    return ok & (x.shape[0] >= min_chains) & (x.shape[1] >= 4)


def _flat(draws: np.ndarray) -> tuple[tuple, np.ndarray]:
    """``draws`` ``(chain, draw, ...)`` as floats ``(chain, draw, n)``, and its trailing shape."""
    x = np.asarray(draws, dtype=float)
    return x.shape[2:], x.reshape(*x.shape[:2], -1)


def _bulk(x: np.ndarray, ok: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rank-normalised R-hat (NaN for one chain) and bulk ESS of the elements ``ok`` of
    ``x`` ``(chain, draw, n)`` (NaN elsewhere); the two share one ranking."""
    rhat, bulk = np.full(x.shape[-1], np.nan), np.full(x.shape[-1], np.nan)
    if ok.any():
        s = _split(x[..., ok])
        z = _z_scale(s)
        bulk[ok] = _ess(z)
        if x.shape[0] > 1:
            folded = np.abs(s - np.median(s.reshape(-1, s.shape[-1]), axis=0))
            rhat[ok] = np.maximum(_rhat(z), _rhat(_z_scale(folded)))
    return rhat, bulk


def rank_rhat(draws: np.ndarray) -> np.ndarray:
    """Rank-normalised split R-hat, the larger of the bulk and tail (folded) values.

    Parameters
    ----------
    draws : ndarray of shape (chain, draw, ...)

    Returns
    -------
    ndarray of shape draws.shape[2:]
        NaN where ArviZ gives NaN (fewer than 2 chains or 4 draws, a NaN draw).
    """
    shape, x = _flat(draws)
    return _bulk(x, _usable(x, 2))[0].reshape(shape)


def _ess(x: np.ndarray) -> np.ndarray:
    """ESS of ``(chain, draw, n)`` by Geyer's initial monotone sequence (ArviZ's ``_ess``)."""
    m, n, k = x.shape
    size = m * n
    out = np.full(k, float(size))
    varies = (x.max(axis=(0, 1)) - x.min(axis=(0, 1))) >= np.finfo(float).resolution
    if not varies.any():
        return out
    x = x[..., varies]
    centred = x - x.mean(axis=1, keepdims=True)
    nfft = fft.next_fast_len(2 * n)
    spectrum = np.fft.rfft(centred, n=nfft, axis=1)
    spectrum *= np.conjugate(spectrum)
    acov = np.fft.irfft(spectrum, n=nfft, axis=1)[:, :n] / n
    mean_var = np.mean(acov[:, 0], axis=0) * n / (n - 1.0)
    var_plus = mean_var * (n - 1.0) / n
    if m > 1:
        var_plus = var_plus + np.var(x.mean(axis=1), axis=0, ddof=1)
    rho = 1.0 - (mean_var - np.mean(acov, axis=0)) / var_plus  # (lag, variable)
    rho[0] = 1.0
    # pairs (rho[2j], rho[2j + 1]): Geyer's initial positive sequence takes pairs
    # j = 1, 2, ... while the previous pair's sum is positive and 2j - 1 < n - 3
    n_pairs = max((n - 1) // 2, 1)
    pair = rho[: 2 * n_pairs : 2] + rho[1 : 2 * n_pairs : 2]  # (n_pairs, variable)
    j_limit = sum(1 for j in range(1, n_pairs) if 2 * j - 1 < n - 3)
    positive = pair[:j_limit] > 0  # pair j - 1 positive: pair j is taken
    taken = np.cumprod(positive, axis=0).sum(axis=0)  # J: pairs taken after the first
    # the initial monotone sequence: the running minimum of the pair sums before J
    mono = np.minimum.accumulate(pair, axis=0)
    before = np.arange(pair.shape[0])[:, None] < taken[None, :]
    total = np.where(before, mono, 0.0).sum(axis=0)
    cols = np.arange(rho.shape[1])
    last_even = rho[2 * taken, cols]
    last_sum = pair[np.minimum(taken, pair.shape[0] - 1), cols]
    keep = (taken == 0) | (last_sum >= 0) | (last_even > 0)
    tau = -1.0 + 2.0 * total + np.where(keep, last_even, 0.0)
    ess = size / np.maximum(tau, 1.0 / np.log10(size))
    out[varies] = np.where(np.isnan(rho).any(axis=0), np.nan, ess)
    return out


def summary(draws: np.ndarray, prob: float | None = None) -> dict[str, np.ndarray]:
    """:func:`rank_rhat` (NaN for one chain), :func:`ess_bulk` and :func:`ess_tail` of
    ``draws`` ``(chain, draw, ...)``, as ``"rhat"``, ``"ess_bulk"``, ``"ess_tail"``: the
    bulk R-hat and ESS share one ranking."""
    shape, x = _flat(draws)
    rhat, bulk = _bulk(x, _usable(x, 1))
    return {
        "rhat": rhat.reshape(shape),
        "ess_bulk": bulk.reshape(shape),
        "ess_tail": ess_tail(draws, prob),
    }


def ess_bulk(draws: np.ndarray) -> np.ndarray:
    """Bulk ESS: of the normal scores of the split chains' ranks.

    Parameters
    ----------
    draws : ndarray of shape (chain, draw, ...)

    Returns
    -------
    ndarray of shape draws.shape[2:]
    """
    shape, x = _flat(draws)
    return _bulk(x, _usable(x, 1))[1].reshape(shape)


def ess_tail(draws: np.ndarray, prob: float | None = None) -> np.ndarray:
    """Tail ESS: the smaller ESS of the indicators below the ``1 - prob`` and ``prob``
    quantiles (``prob``: ArviZ's ``stats.ci_prob`` for None, 0.89 by default).

    Parameters
    ----------
    draws : ndarray of shape (chain, draw, ...)
    prob : float, optional

    Returns
    -------
    ndarray of shape draws.shape[2:]
    """
    if prob is None:
        from arviz_base import rcParams

        prob = float(rcParams["stats.ci_prob"])
    shape, x = _flat(draws)
    out = np.full(x.shape[-1], np.nan)
    ok = _usable(x, 1)
    if ok.any():
        y = x[..., ok]
        flat = y.reshape(-1, y.shape[-1])
        low, high = sorted((prob, 1.0 - prob))
        each = [
            _ess(_split((y <= np.quantile(flat, p, axis=0)).astype(float))) for p in (low, high)
        ]
        out[ok] = np.minimum(*each)
    return out.reshape(shape)
