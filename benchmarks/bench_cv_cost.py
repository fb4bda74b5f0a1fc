"""What ``compare(..., cv=5)`` costs for a NUTS fit, against that fit's own sampling.

The goal: ``compare(..., cv=5)`` compiles NUTS once per model shape and
costs at most 5 times one fit's sampling.  In a fresh subprocess on an empty
compile cache (``PYTENSOR_FLAGS=base_compiledir=<new dir>``,
``NUMBA_CACHE_DIR`` in it) the script fits ``RVR(method="nuts")`` at the
estimator's defaults (``--problem``: sinc N = 100 at ``gamma=0.5``, or
``diabetes``: 300 standardised rows of scikit-learn's diabetes data at the
default width), then calls ``compare({"nuts": fit}, X=X, y=y, cv=K)``.

Columns: the fit's wall time and its sampling time (the sampler's own clock,
``idata_.attrs["sampling_time"]``: tuning and drawing, no compilation); each
fold refit's wall time (``compare``'s ``folds`` table) and its time to the
first draw (when PyMC's sampler reports its first iteration: compilation
and initialisation before it); the k-fold total; and the ratio of that total
to the first fit's sampling time (the goal: at most K).  The builders'
models cut NUTS's raveled input by their dimension lengths, so one compiled
log density serves every number of bases: a refit compiles only when its
model takes another form (the dense or the low-rank likelihood, by the
rank of its design) than the fits before it.

Usage::

    python benchmarks/bench_cv_cost.py [--problem sinc|diabetes] [--folds 5]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import warnings

import _common  # first non-stdlib import: pins BLAS threads before NumPy loads
import numpy as np


def _data(problem: str):
    from sklearn.datasets import load_diabetes
    from sklearn.preprocessing import StandardScaler

    from rvm_pymc.datasets import make_sinc

    if problem == "sinc":
        d = make_sinc(n_train=100, noise_sd=0.1, random_state=0)
        return d.X_train, d.t_train, {"gamma": 0.5}
    if problem == "diabetes":
        X, y = load_diabetes(return_X_y=True)
        return StandardScaler().fit_transform(X[:300]), y[:300], {}
    raise ValueError(f"unknown problem {problem!r}")


def child(problem: str, folds: int) -> dict:
    """The measurement, in this (fresh) process."""
    import pymc as pm

    from rvm_pymc import RVR, compare

    X, y, kw = _data(problem)
    starts: list[float] = []  # wall-clock time of every sampler's first iteration
    calls: list[float] = []  # and of every call of pm.sample
    original = pm.sample

    def sample(*args, **kwargs):
        calls.append(time.perf_counter())
        seen = len(calls)
        inner = kwargs.get("callback")  # the package's own (Ctrl-C, the stopping rule)

        def callback(trace, draw):
            if len(starts) < seen:
                starts.append(time.perf_counter())
            if inner is not None:
                inner(trace=trace, draw=draw)

        kwargs["callback"] = callback
        return original(*args, **kwargs)

    pm.sample = sample
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t0 = time.perf_counter()
            est = RVR(
                method="nuts", random_state=0, sampler_kwargs={"progressbar": False}, **kw
            ).fit(X, y)
            fit_wall = time.perf_counter() - t0
            t1 = time.perf_counter()
            table = compare({"nuts": est}, X=X, y=y, cv=folds, loo=False, random_state=0)
            cv_wall = time.perf_counter() - t1
    finally:
        pm.sample = original
    per_fold = table.attrs["folds"]
    return {
        "fit_wall": fit_wall,
        "first_draw": starts[0] - t0,
        "sampling": float(est.idata_.attrs["sampling_time"]),
        "fold_seconds": [float(s) for s in per_fold["seconds"]],
        "fold_first_draw": [s - c for s, c in zip(starts[1:], calls[1:], strict=True)],
        "fold_converged": [bool(c) for c in per_fold["converged"]],
        "cv_wall": cv_wall,
        "load": _common.load_average(),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--problem", default="sinc", choices=("sinc", "diabetes"))
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print("RESULT " + json.dumps(child(args.problem, args.folds)), flush=True)
        return
    print(_common.header("compare(cv) cost of a NUTS fit (bench_cv_cost.py)"))
    cache = tempfile.mkdtemp(prefix="rvm_bench_cache_")
    env = {**os.environ, "PYTENSOR_FLAGS": f"base_compiledir={cache}"}
    env["NUMBA_CACHE_DIR"] = os.path.join(cache, "numba")
    cmd = [sys.executable, __file__, "--child", "--problem", args.problem]
    cmd += ["--folds", str(args.folds)]
    try:
        out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("RESULT ")]
    if not lines:
        sys.exit(out.stderr.strip() or "the child printed no result")
    r = json.loads(lines[-1][len("RESULT ") :])
    rows = [["fit on all rows", f"{r['fit_wall']:.1f}", f"{r['first_draw']:.1f}", "", ""]]
    for i, (s, f, c) in enumerate(
        zip(r["fold_seconds"], r["fold_first_draw"], r["fold_converged"], strict=True)
    ):
        rows.append([f"fold {i + 1}", f"{s:.1f}", f"{f:.1f}", "yes" if c else "no", ""])
    total = float(np.sum(r["fold_seconds"]))
    rows.append(["k-fold total", f"{total:.1f}", "", "", f"{total / r['sampling']:.2f}"])
    heads = ["fit", "wall s", "first draw s", "converged", "x one fit's sampling"]
    print(_common.format_table(heads, rows))
    print(
        f"one fit's sampling (sampler clock): {r['sampling']:.1f} s; compare() wall "
        f"{r['cv_wall']:.1f} s; goal: k-fold total <= {args.folds} x sampling; "
        f"load at the end {r['load']}"
    )


if __name__ == "__main__":
    main()
