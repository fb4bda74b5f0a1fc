"""Does NUTS over the RBF width (``gamma="integrate"``) converge at the estimators' defaults?

Every fit is ``RVR(method="nuts", gamma="integrate", random_state=seed)`` or
``RVC(...)`` through the public estimators with every other parameter at its
default (``draws=None``: NUTS stops at the first checkpoint whose draws pass
the convergence check), on the real-data panel sets of
``benchmarks/_panel_data.py`` with at most ``--max-n`` rows (features
standardised, as the command line does).  One row per set, columns as in
``bench_nuts_defaults.py``: wall time of ``fit`` (the first fit of a model
includes its compilation), draws a chain kept, the worst rank-normalised
R-hat and the smallest bulk/tail ESS over every sampled variable (the log
precisions, ``log_beta`` for RVR, the weights (RVR: drawn exactly per draw), and
``log_length_scale``, the width), the divergences, the estimator's
``converged_`` and ``ok`` (R-hat <= 1.01, both ESS >= 400, no divergence);
also the posterior median ``gamma_`` and its 5-95 % range in units of the
``"scale"`` width.  Then a timing row: one regression set subsampled to
N = 150, fitted once to compile and timed on the second fit ("warm").

Results are appended to ``benchmarks/results/nuts_width.jsonl`` and the table
written to ``benchmarks/results/nuts_width.md`` (``--out`` names another file).
``--seeds`` fits every set once a seed (a default judged by one seed can pass or
fail by the luck of that seed); ``--target-accept`` overrides the estimators'
default step-size target and ``--tune`` their tuning steps, for a study of that default;
every row records the ones it ran.

Usage::

    python benchmarks/bench_nuts_width.py                      # every set with N <= 300
    python benchmarks/bench_nuts_width.py --kind regression --only mcycle,cars
    python benchmarks/bench_nuts_width.py --quick    # 3 regression sets + 1 classification set
    python benchmarks/bench_nuts_width.py --kind regression --seeds 0,1 --target-accept 0.95 \
        --no-timing --out nuts_width_ta095.md
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy as np
from _common import header, load_average, source_state, worst_diagnostics

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
QUICK = {"regression": ("mcycle", "cars", "hills"), "classification": ("crabs",)}
TIMING_SET = "boston"
COLUMNS = (
    "set kind sampler N d wall draws rhat ess_bulk ess_tail divergent converged_ ok gamma_rel "
    "gamma_5_95"
)


def _standardise(X):
    X = np.asarray(X, dtype=float)
    sd = X.std(0)
    return (X - X.mean(0)) / np.where(sd > 0, sd, 1.0)


def diagnose(est) -> dict:
    """Worst R-hat and smallest bulk/tail ESS over the sampled variables (width included)."""
    # the weights too: sampled (RVC) or drawn exactly per draw (RVR), as converged_ checks
    return worst_diagnostics(est, ["log_alpha", "log_beta", "log_length_scale", "w", "W"])


def _effective(kind: str, target_accept: float | None) -> float:
    """The ``target_accept`` a fit ran at: the one given, else the estimators' default."""
    from rvm_pymc.inference.defaults import estimator_target_accept

    if target_accept is not None:
        return float(target_accept)
    return estimator_target_accept(joint=kind != "regression", width=True)


def fit_one(
    kind: str, X, y, seed: int = 0, target_accept: float | None = None, tune=None, sampler=None
):
    from rvm_pymc import RVC, RVR

    cls = RVR if kind == "regression" else RVC
    sk = {} if target_accept is None else {"target_accept": target_accept}
    sk.update({} if sampler is None else {"nuts_sampler": sampler})
    est = cls(method="nuts", gamma="integrate", random_state=seed, tune=tune, sampler_kwargs=sk)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        est.fit(X, y)
        wall = time.perf_counter() - t0
    return est, wall


def _effective_tune(kind: str, tune: int | None) -> int:
    """The tuning steps a fit ran: the ones given, else the estimators' default."""
    from rvm_pymc.inference.defaults import estimator_tune

    return int(tune) if tune is not None else estimator_tune(collapsed=kind == "regression")


def run(name: str, kind: str, max_n: int, seed: int, target_accept=None, tune=None) -> dict:
    import _panel_data as panel

    from rvm_pymc.estimators._width_selection import scale_gamma

    data = panel.load(name, max_n=max_n)
    X, y = _standardise(data.X), data.y
    est, wall = fit_one(kind, X, y, seed, target_accept, tune)
    d = diagnose(est)
    d["ok"] = d["rhat"] <= 1.01 and min(d["ess_bulk"], d["ess_tail"]) >= 400 and not d["divergent"]
    g = est.gamma_draws_.ravel() / scale_gamma(X)
    lo, hi = np.quantile(g, [0.05, 0.95])
    return {
        "set": name,
        "kind": kind,
        "N": len(y),
        "d": X.shape[1],
        "wall": wall,
        "draws": int(est.idata_["posterior"].sizes["draw"]),
        "converged_": bool(est.converged_),
        "gamma_rel": float(np.median(g)),
        "gamma_5_95": f"{lo:.3g}-{hi:.3g}",
        "seed": seed,
        "target_accept": _effective(kind, target_accept),
        "tune": _effective_tune(kind, tune),
        "sampler": est.idata_.attrs["sampler"],
        "source": source_state(),
        "load": load_average(),
        **d,
    }


def timing(max_n: int = 150, seed: int = 0, target_accept=None, tune=None) -> dict:
    """Warm wall time of one RVR fit at N = ``max_n`` (the second of two fits)."""
    import _panel_data as panel

    data = panel.load(TIMING_SET, max_n=max_n)
    X, y = _standardise(data.X), data.y
    _, cold = fit_one("regression", X, y, seed, target_accept, tune)
    est, warm = fit_one("regression", X, y, seed + 1, target_accept, tune)
    return {
        "set": f"{TIMING_SET} (timing)",
        "kind": "regression",
        "N": len(y),
        "d": X.shape[1],
        "first_fit": cold,
        "wall": warm,
        "draws": int(est.idata_["posterior"].sizes["draw"]),
        "converged_": bool(est.converged_),
        "target_accept": _effective("regression", target_accept),
        "tune": _effective_tune("regression", tune),
        "sampler": est.idata_.attrs["sampler"],
        "source": source_state(),
        "load": load_average(),
        **diagnose(est),
    }


def _cell(v) -> str:
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def main(argv=None) -> None:
    import _panel_data as panel

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kind", choices=("regression", "classification", "both"), default="both")
    parser.add_argument("--only", help="comma-separated set names")
    parser.add_argument("--max-n", type=int, default=300, help="sets with at most this many rows")
    parser.add_argument("--quick", action="store_true", help=f"only {QUICK}")
    parser.add_argument("--no-timing", action="store_true", help="skip the N = 150 timing row")
    parser.add_argument("--seeds", default="0", help="comma-separated seeds, one fit each")
    parser.add_argument("--target-accept", type=float, help="override the default")
    parser.add_argument("--tune", type=int, help="tuning steps a chain (default: the estimators')")
    parser.add_argument("--out", default="nuts_width.md", help="table file in results/")
    args = parser.parse_args(argv)
    seeds = [int(s) for s in args.seeds.split(",")]
    kinds = ("regression", "classification") if args.kind == "both" else (args.kind,)
    sets = []
    for kind in kinds:
        names = list(
            panel.regression_sets() if kind == "regression" else panel.classification_sets()
        )
        if args.only:
            names = [n for n in names if n in args.only.split(",")]
        elif args.quick:
            names = [n for n in names if n in QUICK[kind]]
        sets += [(n, kind) for n in names]
    os.makedirs(RESULTS, exist_ok=True)
    about = f"sets with N <= {args.max_n} rows, features standardised; seeds {args.seeds}"
    found = [n for n in ("nutpie", "numpyro") if importlib.util.find_spec(n)]
    about += f"; samplers installed: {', '.join(found) or 'none beside PyMC'}"
    if args.target_accept is not None:
        about += f"; target_accept {args.target_accept} (not the default)"
    if args.tune is not None:
        about += f"; tune {args.tune} (not the default)"
    lines = [header("NUTS over the RBF width (gamma='integrate') at the defaults", [about])]
    cols = COLUMNS.split()
    lines += ["| " + " | ".join(cols) + " | seed | load |", "|" + "---|" * (len(cols) + 2)]
    print("\n".join(lines), flush=True)
    jsonl = os.path.join(RESULTS, "nuts_width.jsonl")
    for name, kind in sets:
        try:
            full = panel.load(name, max_n=10**9)
        except ImportError as exc:
            print(f"| {name} | skipped: {exc} |", flush=True)
            continue
        if len(full.y) > args.max_n:
            continue
        for seed in seeds:
            row = run(name, kind, args.max_n, seed, args.target_accept, args.tune)
            line = "| " + " | ".join(_cell(row[c]) for c in cols)
            line += f" | {seed} | {row['load']} |"
            print(line, flush=True)
            lines.append(line)
            with open(jsonl, "a") as fh:
                fh.write(json.dumps(row) + "\n")
    if not args.no_timing and "regression" in kinds:
        row = timing(150, seeds[0], args.target_accept, args.tune)
        line = (
            f"\nTiming, {row['set']}, N = {row['N']}: first fit (compiles) "
            f"{row['first_fit']:.1f} s, warm fit {row['wall']:.1f} s, {row['draws']} draws a "
            f"chain, R-hat {row['rhat']:.4f}, "
            f"ESS bulk {row['ess_bulk']:.0f} tail {row['ess_tail']:.0f}, "
            f"{row['divergent']} divergent, converged_ {row['converged_']}; load {row['load']}"
        )
        print(line, flush=True)
        lines.append(line)
        with open(jsonl, "a") as fh:
            fh.write(json.dumps(row) + "\n")
    with open(os.path.join(RESULTS, args.out), "w") as fh:
        fh.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
