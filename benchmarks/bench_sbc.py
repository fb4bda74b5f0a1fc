"""Simulation-based calibration (Talts et al. 2018) of the collapsed regression sampler
and of the classifiers' NUTS.

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

``--task classification`` calibrates the sampler of ``RVC(method="nuts")``
the same way: the joint model :func:`rvm_pymc.models.classification_binary`
(non-centred weights, ``"weakly_informative"`` prior, with ``--slab S`` the
slab ``S``), NUTS by :func:`rvm_pymc.inference.sample_nuts` as the estimator
runs it (``target_accept`` 0.95, 1000 tuning steps, each chain started at the
reference fit of the labels), on ``N_CLS`` points of the same three columns;
the prior draws ``(log_alpha, w)`` include the slab, the labels are
Bernoulli-logit.  A draw whose labels hold one class only is drawn again (the
estimator refuses such data; conditioning on the labels leaves the ranks
uniform).  ``--wrong`` fits data whose true weights are half the ones drawn
(the fit's prior sd of the weights is then twice theirs), or with
``--wrong-kind logit`` labels drawn with the logit scaled by 2.

Usage::

    python benchmarks/bench_sbc.py --reps 200 [--wrong] [--png benchmarks/results/sbc.png]
    python benchmarks/bench_sbc.py --task classification --slab 5 --reps 200 \
        [--wrong] [--until-converged] [--png ...] [--csv ...]

References
----------
Talts, S., Betancourt, M., Simpson, D., Vehtari, A. and Gelman, A. (2018).
Validating Bayesian inference algorithms with simulation-based calibration.
arXiv:1804.06788.
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
import time
import warnings
from collections.abc import Callable

import numpy as np
from scipy import stats
from scipy.special import expit

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import header

N_OBS, DRAWS, TUNE, CHAINS, RANK_DRAWS, BINS = 15, 300, 300, 2, 99, 10
N_CLS, CLS_DRAWS, CLS_TUNE = 40, 500, 1000
CLS_MAX_DRAWS = 6000  # RVC's draws=None: the most a chain takes before the rule stops it
"""Classification: points, draws and tuning steps per chain (tuning as ``RVC``'s default)."""
WRONG = {"prior": (1.0, 0.5), "logit": (2.0, 1.0)}
"""Classification's wrong variants: (logit factor, weight factor) of the simulated data."""


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


def simulate_classification(
    rng: np.random.Generator,
    Phi: np.ndarray,
    prior,
    logit_factor: float = 1.0,
    weight_factor: float = 1.0,
):
    """One draw of (log_alpha, w) from the prior (its slab included) and of y from the likelihood.

    ``y ~ Bernoulli(sigmoid(logit_factor * Phi w))``; a draw whose labels hold one
    class only is drawn again.  ``weight_factor`` scales the drawn weights (the
    true ones: a fit under the model then assumes a prior sd ``1/weight_factor``
    times theirs).  Returns ``(truth, y, redrawn)``.
    """
    from rvm_pymc.priors import slab_variance

    for redrawn in range(1000):
        alpha = rng.gamma(prior.a, 1.0 / prior.b, size=Phi.shape[1])
        w = weight_factor * rng.normal(0.0, np.sqrt(slab_variance(alpha, prior.slab)))
        y = (rng.random(Phi.shape[0]) < expit(logit_factor * (Phi @ w))).astype(np.int64)
        if 0 < y.sum() < y.size:
            return {"log_alpha": np.log(alpha), "w": w}, y, redrawn
    raise RuntimeError("1000 prior draws in a row gave labels of one class")


def run_sbc(
    reps: int,
    rng: np.random.Generator,
    draw: Callable,
    fit: Callable,
    progress: bool = True,
) -> tuple[dict, list[dict]]:
    """The SBC loop: ``draw(rng) -> (truth, data)``, ``fit(data, seed) -> DataTree``.

    The rank of each true value is taken among ``RANK_DRAWS`` draws thinned evenly
    from the (chains x draws) of the tree's posterior, however many the fit kept
    (a run stopped once converged keeps fewer).  Returns
    ``({"log_alpha_0": array(reps), ...}, [per-replication attrs of the fit])``.
    """
    out: dict[str, list[int]] = {}
    diag: list[dict] = []
    started = time.perf_counter()
    for r in range(reps):
        truth, data = draw(rng)
        fit_started = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = fit(data, int(rng.integers(2**31)))
        wall = time.perf_counter() - fit_started
        post = tree["posterior"]
        n_draws = int(post.sizes["chain"] * post.sizes["draw"])
        keep = np.linspace(0, n_draws - 1, RANK_DRAWS).round().astype(int)
        for name, value in truth.items():
            draws = np.asarray(post[name].values, dtype=float).reshape(n_draws, -1)[keep]
            for j, v in enumerate(np.ravel(value)):
                key = name if name == "log_beta" else f"{name}_{j}"
                out.setdefault(key, []).append(int(np.sum(draws[:, j] < v)))
        attrs = ("n_divergent", "max_rhat", "min_ess_bulk", "sampling_time")
        diag.append(
            {
                **{k: tree.attrs.get(k) for k in attrs},
                "wall": round(wall, 2),
                "draws": int(post.sizes["draw"]),
            }
        )
        if progress and (r + 1) % 10 == 0:
            n_div = sum(int(d["n_divergent"] or 0) > 0 for d in diag)
            print(
                f"# {r + 1}/{reps} replications, {time.perf_counter() - started:.0f} s, "
                f"{n_div} with divergences",
                file=sys.stderr,
            )
    return {k: np.asarray(v) for k, v in out.items()}, diag


def ranks(
    reps: int,
    seed: int = 0,
    noise_factor: float = 1.0,
    progress: bool = True,
    mode: str | None = None,
    until_converged: bool = False,
    min_ess: float | None = None,
) -> tuple[dict, list[dict]]:
    """Rank of every true value among ``RANK_DRAWS`` posterior draws, per replication.

    ``mode``: a PyTensor mode for the sampler (default PyTensor's, Numba: compiled
    once, then each replication reuses it from the cache).  ``until_converged``:
    sample as ``RVR(method="nuts")`` does by default (500 tuning steps, at most
    2000 draws a chain, stopped at the first checkpoint that passes the
    convergence check) instead of ``DRAWS`` after ``TUNE``; ``min_ess``: the
    check's smallest ESS (default the package's, 400), raised so that the rule
    stops at later checkpoints and the selection of a late look is tested.
    Returns ``({"log_alpha_0": array(reps), ..., "log_beta": ..., "w_0": ...},
    per-replication fit attributes)``.
    """
    import pymc as pm

    from rvm_pymc import inference, models
    from rvm_pymc.priors import resolve_prior

    prior = resolve_prior("weakly_informative")
    Phi = design()
    rng = np.random.default_rng(seed)
    _, t0 = simulate(rng, Phi, prior)
    model = models.regression_marginal(Phi, t0, prior=prior)
    compile_kwargs = {} if mode is None else {"compile_kwargs": {"mode": mode}}

    def fit(t, random_seed):
        with model:
            pm.set_data({"t": t})
        return inference.sample_collapsed(
            model,
            draws=2000 if until_converged else DRAWS,
            tune=500 if until_converged else TUNE,
            chains=CHAINS,
            random_seed=random_seed,
            progressbar=False,
            nuts_sampler="pymc",
            cores=1,
            until_converged=until_converged,
            **({} if min_ess is None else {"min_ess": min_ess}),
            **compile_kwargs,
        )

    def draw(rng):
        return simulate(rng, Phi, prior, noise_factor)

    return run_sbc(reps, rng, draw, fit, progress)


def classification_ranks(
    reps: int,
    seed: int = 0,
    slab: float | None = None,
    logit_factor: float = 1.0,
    weight_factor: float = 1.0,
    progress: bool = True,
    draws: int = CLS_DRAWS,
    tune: int = CLS_TUNE,
    n_obs: int = N_CLS,
    mode: str | None = None,
    until_converged: bool = False,
) -> tuple[dict, list[dict], int]:
    """Ranks of ``log_alpha_m`` and ``w_m`` under the classifiers' NUTS, per replication.

    The model :func:`~rvm_pymc.models.classification_binary` (weights
    parametrised as ``RVC`` does, ``"weakly_informative"`` prior with ``slab``)
    is built once; each replication swaps its labels with ``pm.set_data`` and
    samples it by :func:`~rvm_pymc.inference.sample_nuts` with the estimator's
    ``target_accept`` and the start the estimator used when these runs were made
    (the chains at the reference fit of the labels under the prior without its
    slab, a pruned basis at the start's cap; since 3d1cb75 the estimator starts
    under the prior with it).  ``until_converged``: as ``RVC(method="nuts")``
    samples by default, at most ``CLS_MAX_DRAWS`` a chain after ``tune``,
    stopped at the first checkpoint that passes the convergence check
    (``draws`` is then unused).
    Returns ``(ranks, per-replication fit attrs, label draws redrawn)``.
    """
    import pymc as pm

    from rvm_pymc import inference, models, reference
    from rvm_pymc.inference._backend import _SAMPLER_START_CAP, _start
    from rvm_pymc.inference.defaults import DEFAULT_PARAMETRIZATION, JOINT_TARGET_ACCEPT
    from rvm_pymc.priors import resolve_prior

    prior = resolve_prior({"slab": slab}, default="weakly_informative")
    param = DEFAULT_PARAMETRIZATION["binary"]
    Phi = design(n_obs)
    names = tuple(f"b{j}" for j in range(Phi.shape[1]))
    rng = np.random.default_rng(seed)
    _, y0, _ = simulate_classification(rng, Phi, prior)
    model = models.classification_binary(
        Phi, y0, prior=prior, parametrization=param, basis_names=names
    )
    compile_kwargs = {} if mode is None else {"compile_kwargs": {"mode": mode}}
    redrawn = 0

    def fit(y, random_seed):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ref, _ = reference.fit_posterior(
                Phi, y, "classification", names, solver="mackay", prior=prior.without_slab()
            )
        start = _start(
            ref, names, "binary", cap=_SAMPLER_START_CAP, weights=True, parametrization=param
        )
        with model:
            pm.set_data({"y": y})
        return inference.sample_nuts(
            model,
            draws=CLS_MAX_DRAWS if until_converged else draws,
            tune=tune,
            chains=CHAINS,
            target_accept=JOINT_TARGET_ACCEPT,
            initvals=start,
            random_seed=random_seed,
            progressbar=False,
            nuts_sampler="pymc",
            cores=1,
            until_converged=until_converged,
            **compile_kwargs,
        )

    def draw(rng):
        nonlocal redrawn
        truth, y, n = simulate_classification(rng, Phi, prior, logit_factor, weight_factor)
        redrawn += n
        return truth, y

    result, diag = run_sbc(reps, rng, draw, fit, progress)
    return result, diag, redrawn


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


def divergence_report(diag: list[dict]) -> str:
    """How many replications had divergences, and the R-hat and ESS over them."""
    n_div = np.array([int(d["n_divergent"] or 0) for d in diag])
    rhat = np.array([float(d["max_rhat"]) for d in diag])
    ess = np.array([float(d["min_ess_bulk"]) for d in diag])
    wall = np.array([d["wall"] for d in diag])
    return (
        f"seconds per replication: first {wall[0]:.0f} (compile), then median "
        f"{np.median(wall[1:]):.1f}, max {np.max(wall[1:]):.1f}; "
        f"divergences: {np.sum(n_div > 0)} of {len(diag)} replications had any "
        f"({n_div.sum()} in all, at most {n_div.max()} in one); worst R-hat: median "
        f"{np.median(rhat):.3f}, > 1.01 in {np.sum(rhat > 1.01)}; smallest bulk ESS: median "
        f"{np.median(ess):.0f}, < 400 in {np.sum(ess < 400)}"
    )


def write_csv(result: dict, diag: list[dict], path: str) -> None:
    """One row per replication: the rank of every parameter and the fit's diagnostics."""
    keys = list(diag[0])
    with open(path, "w", newline="") as f:
        out = csv.writer(f)
        out.writerow([*result, *keys])
        for r, d in enumerate(diag):
            out.writerow([*(int(v[r]) for v in result.values()), *(d[k] for k in keys)])


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


def _report_kept(fits: list[dict], most: int) -> None:
    """How many draws a chain the stopping rule kept, over the replications."""
    kept = np.array([d["draws"] for d in fits])
    looks = {int(k): int(np.sum(kept == k)) for k in np.unique(kept)}
    print(
        f"# until converged: draws a chain kept: median {np.median(kept):.0f}, "
        f"{np.min(kept)}-{np.max(kept)}; {np.mean(kept < most):.0%} stopped early; "
        f"replications per length: {looks}"
    )


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", choices=("regression", "classification"), default="regression")
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--wrong",
        action="store_true",
        help="regression: noise sd of the data x 1.5; classification: see --wrong-kind",
    )
    parser.add_argument(
        "--wrong-kind",
        choices=tuple(WRONG),
        default="prior",
        help="classification with --wrong: true weights x 0.5 (the fit's prior sd twice "
        "theirs; 'prior') or the logit of the labels x 2 ('logit')",
    )
    parser.add_argument("--slab", type=float, help="classification: the prior's slab scale")
    parser.add_argument("--draws", type=int, default=CLS_DRAWS, help="classification, per chain")
    parser.add_argument(
        "--until-converged",
        action="store_true",
        help="the estimator's default run, stopped once converged (regression: 500 tuning "
        "steps, at most 2000 draws a chain, instead of 300 + 300; classification: 1000 "
        "tuning steps, at most 6000 draws, instead of --draws)",
    )
    parser.add_argument(
        "--min-ess",
        type=float,
        help="regression with --until-converged: the stopping check's smallest ESS "
        "(default 400); higher makes the rule stop at later checkpoints",
    )
    parser.add_argument("--png", help="write the rank histograms here")
    parser.add_argument("--csv", help="classification: write the ranks and diagnostics here")
    args = parser.parse_args(argv)
    t0 = time.perf_counter()
    if args.task == "regression":
        factor = 1.5 if args.wrong else 1.0
        what = f"noise x {factor}"
        print(header("SBC of the collapsed regression sampler", [f"noise factor {factor}"]))
        result, fits = ranks(
            args.reps,
            args.seed,
            factor,
            until_converged=args.until_converged,
            min_ess=args.min_ess,
        )
        diag = None
        if args.until_converged:
            _report_kept(fits, 2000)
    else:
        logit, weight = WRONG[args.wrong_kind] if args.wrong else (1.0, 1.0)
        slab = "no slab" if args.slab is None else f"slab {args.slab:g}"
        what = f"{slab}, logit x {logit:g}, true weights x {weight:g}"
        print(
            header(
                "SBC of the classifiers' NUTS (joint binary model)",
                [f"{what}; N = {N_CLS}, {CLS_TUNE} + {args.draws} draws per chain"],
            )
        )
        result, diag, redrawn = classification_ranks(
            args.reps,
            args.seed,
            args.slab,
            logit,
            weight,
            draws=args.draws,
            until_converged=args.until_converged,
        )
        if args.until_converged:
            _report_kept(diag, CLS_MAX_DRAWS)
    table, p_min = report(result)
    level = 0.01 / len(result)
    print(table)
    print(
        f"\n{args.reps} replications in {time.perf_counter() - t0:.0f} s; smallest p {p_min:.3g} "
        f"against the Bonferroni level {level:.2g}: "
        f"{'uniform (passes)' if p_min > level else 'NOT uniform (fails)'}"
    )
    if diag is not None:
        print(f"{divergence_report(diag)}; one-class label draws redrawn: {redrawn}")
        if args.csv:
            write_csv(result, diag, args.csv)
    if args.png:
        figure(result, args.png, f"SBC ranks, {args.reps} replications, {what}")


if __name__ == "__main__":
    main()
