"""Simulation-based calibration (Talts et al. 2018) of the collapsed regression sampler.

For each replication: draw the hyperparameters and weights from the prior of
the marginal regression model (the ``"weakly_informative"`` preset, Gamma(1,
0.01) on every precision), the targets from the likelihood, fit the model by
:func:`rvm_pymc.inference.sample_collapsed`, and record the rank of every true
value (``log_alpha_m``, ``log_beta``, ``w_m``) among ``L`` posterior draws
(thinned evenly from the chains).  If the sampler draws from the posterior,
each rank is uniform on ``0..L``; a chi-square test over ``B`` equal bins tests
it for every parameter (the smallest p-value is reported against a Bonferroni
level).  ``--wrong`` fits data whose noise sd is 1.5 times the one drawn (the
likelihood the fit assumes is then wrong), which the test must reject.

The design is fixed: ``N`` points on [-1, 1] and ``M`` unit-RMS columns (bias,
two Gaussian bumps).  One model is built once and its data ``t`` swapped per
replication with ``pm.set_data``, so the compiled sampler is reused.

Usage::

    python benchmarks/bench_sbc.py --reps 200 [--wrong] [--png benchmarks/results/sbc.png]

References
----------
Talts, S., Betancourt, M., Simpson, D., Vehtari, A. and Gelman, A. (2018).
Validating Bayesian inference algorithms with simulation-based calibration.
arXiv:1804.06788.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

import numpy as np
from scipy import stats

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import header

N_OBS, DRAWS, TUNE, CHAINS, RANK_DRAWS, BINS = 15, 300, 300, 2, 99, 10


def design(n: int = N_OBS) -> np.ndarray:
    """Bias and two Gaussian bumps on ``n`` points of [-1, 1], columns of unit RMS."""
    x = np.linspace(-1.0, 1.0, n)
    Phi = np.column_stack(
        [np.ones(n), np.exp(-((x + 0.5) ** 2) / 0.3), np.exp(-((x - 0.5) ** 2) / 0.3)]
    )
    return Phi / np.sqrt(np.mean(Phi**2, axis=0))


def simulate(rng: np.random.Generator, Phi: np.ndarray, prior, noise_factor: float = 1.0):
    """One draw of (log_alpha, log_beta, w) from the prior and of t from the likelihood."""
    m = Phi.shape[1]
    log_alpha = np.log(rng.gamma(prior.a, 1.0 / prior.b, size=m))
    log_beta = float(np.log(rng.gamma(prior.c, 1.0 / prior.d)))
    w = rng.normal(0.0, np.exp(-0.5 * log_alpha))
    t = Phi @ w + noise_factor * np.exp(-0.5 * log_beta) * rng.standard_normal(Phi.shape[0])
    return {"log_alpha": log_alpha, "log_beta": np.array([log_beta]), "w": w}, t


def ranks(
    reps: int,
    seed: int = 0,
    noise_factor: float = 1.0,
    progress: bool = True,
    mode: str | None = None,
) -> dict:
    """Rank of every true value among ``RANK_DRAWS`` posterior draws, per replication.

    ``mode``: a PyTensor mode for the sampler (default PyTensor's, Numba: compiled
    once, then each replication reuses it from the cache).
    Returns ``{"log_alpha_0": array(reps), ..., "log_beta": ..., "w_0": ...}``.
    """
    import pymc as pm

    from rvm_pymc import inference, models
    from rvm_pymc.priors import resolve_prior

    prior = resolve_prior("weakly_informative")
    Phi = design()
    rng = np.random.default_rng(seed)
    _, t0 = simulate(rng, Phi, prior)
    model = models.regression_marginal(Phi, t0, prior=prior)
    out: dict[str, list[int]] = {}
    keep = np.linspace(0, CHAINS * DRAWS - 1, RANK_DRAWS).round().astype(int)
    compile_kwargs = {} if mode is None else {"compile_kwargs": {"mode": mode}}
    started = time.perf_counter()
    for r in range(reps):
        truth, t = simulate(rng, Phi, prior, noise_factor)
        with model:
            pm.set_data({"t": t})
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = inference.sample_collapsed(
                model,
                draws=DRAWS,
                tune=TUNE,
                chains=CHAINS,
                random_seed=int(rng.integers(2**31)),
                progressbar=False,
                nuts_sampler="pymc",
                cores=1,
                **compile_kwargs,
            )
        post = tree["posterior"]
        for name, value in truth.items():
            draws = np.asarray(post[name].values, dtype=float).reshape(CHAINS * DRAWS, -1)[keep]
            for j, v in enumerate(np.ravel(value)):
                key = name if name == "log_beta" else f"{name}_{j}"
                out.setdefault(key, []).append(int(np.sum(draws[:, j] < v)))
        if progress and (r + 1) % 10 == 0:
            print(
                f"# {r + 1}/{reps} replications, {time.perf_counter() - started:.0f} s",
                file=sys.stderr,
            )
    return {k: np.asarray(v) for k, v in out.items()}


def uniformity(rank: np.ndarray, bins: int = BINS) -> float:
    """Chi-square p-value of ranks on 0..RANK_DRAWS in ``bins`` equal bins being uniform."""
    counts = np.bincount(rank * bins // (RANK_DRAWS + 1), minlength=bins)
    return float(stats.chisquare(counts).pvalue)


def report(result: dict) -> tuple[str, float]:
    """A table of p-values per parameter, and the smallest."""
    lines = ["| parameter | chi-square p | ranks: mean (uniform: 49.5) |", "|---|---|---|"]
    ps = {}
    for name, rank in result.items():
        ps[name] = uniformity(rank)
        lines.append(f"| {name} | {ps[name]:.3g} | {rank.mean():.1f} |")
    return "\n".join(lines), min(ps.values())


def figure(result: dict, path: str, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(result)
    fig, axes = plt.subplots(1, len(names), figsize=(2.2 * len(names), 2.4), sharey=True)
    reps = len(next(iter(result.values())))
    lo, hi = stats.binom.ppf([0.005, 0.995], reps, 1.0 / BINS)
    for ax, name in zip(np.atleast_1d(axes), names, strict=True):
        ax.axhspan(lo, hi, color="0.85")
        ax.hist(result[name], bins=np.linspace(0, RANK_DRAWS + 1, BINS + 1), color="C0")
        ax.set_title(name, fontsize=9)
        ax.set_xticks([0, RANK_DRAWS + 1])
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--wrong", action="store_true", help="noise sd of the data x 1.5")
    parser.add_argument("--png", help="write the rank histograms here")
    args = parser.parse_args(argv)
    factor = 1.5 if args.wrong else 1.0
    print(header("SBC of the collapsed regression sampler", [f"noise factor {factor}"]))
    t0 = time.perf_counter()
    result = ranks(args.reps, args.seed, factor)
    table, p_min = report(result)
    level = 0.01 / len(result)
    print(table)
    print(
        f"\n{args.reps} replications in {time.perf_counter() - t0:.0f} s; smallest p {p_min:.3g} "
        f"against the Bonferroni level {level:.2g}: "
        f"{'uniform (passes)' if p_min > level else 'NOT uniform (fails)'}"
    )
    if args.png:
        figure(result, args.png, f"SBC ranks, {args.reps} replications, noise x {factor}")


if __name__ == "__main__":
    main()
