"""The convergence standard of every sampled fit (:func:`passes_checks`): no divergence,
rank-normalised R-hat at most :data:`RHAT_MAX`, bulk and tail ESS at least :data:`MIN_ESS`.

The statistics are ArviZ's (rank R-hat, bulk and tail ESS; Vehtari et al. 2021,
*Bayesian Analysis* 16, 667-718), vectorised over the elements of ``(chain, draw, n)``.
"""

from __future__ import annotations

import numpy as np
from scipy import fft, special

from rvm_pymc.exceptions import SamplingWarning, warn_user

__all__ = [
    "MIN_ESS",
    "RHAT_MAX",
    "check_sampling",
    "passes_checks",
    "sampling_diagnostics",
    "separated_chains",
    "summary",
]

RHAT_MAX = 1.01
"""Largest worst rank-normalised R-hat of a converged fit."""
MIN_ESS = 400.0
"""Smallest bulk and tail ESS of a converged fit (the diagnostics' own reliability)."""


def _split(x: np.ndarray) -> np.ndarray:
    """``(chain, draw, n)`` -> ``(2 chain, draw // 2, n)`` (an odd count drops the middle)."""
    half = x.shape[1] // 2
    return np.concatenate([x[:, :half], x[:, x.shape[1] - half :]], axis=0)


def _ranks(flat: np.ndarray) -> np.ndarray:
    """``scipy.stats.rankdata(flat, method="average", axis=0)``, vectorised."""
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
    """Normal scores of the ranks over all chains and draws, per variable (Blom's offset)."""
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
    """Rank-normalised R-hat (NaN for one chain) and bulk ESS of the elements ``ok``."""
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
    """Rank-normalised split R-hat (the larger of bulk and folded) of ``(chain, draw, ...)``."""
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
    """R-hat, bulk and tail ESS of every element of ``draws`` at once."""
    shape, x = _flat(draws)
    rhat, bulk = _bulk(x, _usable(x, 1))
    return {
        "rhat": rhat.reshape(shape),
        "ess_bulk": bulk.reshape(shape),
        "ess_tail": ess_tail(draws, prob),
    }


def ess_bulk(draws: np.ndarray) -> np.ndarray:
    """Bulk ESS of ``(chain, draw, ...)`` draws: of the split chains' rank normal scores."""
    shape, x = _flat(draws)
    return _bulk(x, _usable(x, 1))[1].reshape(shape)


def ess_tail(draws: np.ndarray, prob: float | None = None) -> np.ndarray:
    """Tail ESS at ``prob`` (None: ArviZ's ``stats.ci_prob``)."""
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


def sampling_diagnostics(draws, n_divergent: int = 0) -> dict[str, float]:
    """The worst R-hat and the smallest bulk and tail ESS over every element of ``draws``."""
    stats = [
        summary(v.transpose("chain", "draw", ...).values if hasattr(v, "dims") else v)
        for v in draws.values()
    ]

    def worst(key: str, pick) -> float:
        values = np.concatenate([np.ravel(s[key]) for s in stats])
        values = values[~np.isnan(values)]
        return float(pick(values)) if values.size else float("nan")

    return {
        "n_divergent": int(n_divergent),
        "max_rhat": worst("rhat", np.max),
        "min_ess_bulk": worst("ess_bulk", np.min),
        "min_ess_tail": worst("ess_tail", np.min),
    }


def passes_checks(
    diag: dict[str, float], rhat_threshold: float = RHAT_MAX, min_ess: float = MIN_ESS
) -> bool:
    """Whether :func:`sampling_diagnostics` ``diag`` meets the standard (module docstring)."""
    return (
        diag["n_divergent"] == 0
        and bool(diag["max_rhat"] <= rhat_threshold)
        and min(diag["min_ess_bulk"], diag["min_ess_tail"]) >= min_ess
    )


def separated_chains(draws, prob: float = 0.9, min_chain_ess: float = 5.0) -> list[str]:
    """Scalar variables whose chains sit in different modes: two chains' central ``prob``
    intervals apart by more than the largest within-chain sd, each chain's own bulk ESS at
    least ``min_chain_ess`` (else it is stuck, not in a mode)."""
    names = []
    for name, x in draws.items():
        x = np.asarray(x, dtype=float)
        if x.ndim != 2 or x.shape[0] < 2 or not np.isfinite(x).all():
            continue
        lo, hi = np.quantile(x, [(1.0 - prob) / 2.0, (1.0 + prob) / 2.0], axis=1)
        sd = x.std(axis=1)
        if not (sd.min() > 0 and lo.max() - hi.min() > sd.max()):  # 0: a stuck chain
            continue
        own = ess_bulk(x.T[None])  # each chain on its own: one chain, an element a chain
        if np.all(own >= min_chain_ess):
            names.append(name)
    return names


def check_sampling(
    draws,
    n_divergent: int,
    *,
    rhat_threshold: float = RHAT_MAX,
    min_ess: float = MIN_ESS,
    hints: dict[str, str] | None = None,
) -> dict[str, float]:
    """:func:`sampling_diagnostics`, with a SamplingWarning for each miss of the standard
    (naming the :func:`separated_chains`, with ``hints[name]``)."""
    diag = sampling_diagnostics(draws, n_divergent)
    max_rhat, bulk, tail = diag["max_rhat"], diag["min_ess_bulk"], diag["min_ess_tail"]
    n_draws = int(np.prod(np.shape(next(iter(draws.values())))[:2]))
    problems = []
    if n_divergent:
        problems.append(
            f"{n_divergent} of {n_draws} draws diverged; the posterior may be biased. Raise "
            "target_accept, use a more informative prior or the other parametrization"
        )
    apart = []
    if np.isfinite(max_rhat) and max_rhat > rhat_threshold:
        message = (
            f"max R-hat is {max_rhat:.3f} > {rhat_threshold} (variables {list(draws)}); "
            "the chains have not mixed"
        )
        apart = separated_chains(draws)
        if apart:
            message += (
                f". The chains of {apart} appear to sit in separate modes (their central "
                "90% intervals lie far apart): NUTS does not move between them, and more "
                "draws of the same chains are unlikely to join them"
            )
            message += "".join(f"; {hints[n]}" for n in apart if n in (hints or {}))
        problems.append(message)
    if min(bulk, tail) < min_ess:
        problems.append(
            f"the smallest effective sample size is {min(bulk, tail):.0f} (bulk {bulk:.0f}, "
            f"tail {tail:.0f}) < {min_ess:g}: too few for stable estimates of the posterior "
            "and its tails" + ("" if apart else "; draw more")
        )
    for message in problems:
        warn_user(message, SamplingWarning)
    return diag
