"""Ours vs fastrvm (a C++ port of SparseBayes) through the estimators, side by side.

Run ``python benchmarks/bench_peers.py [--big] [--reps 3] [--only sinc Ripley]``
(``pip install fastrvm``).  For every problem both packages first fit once
untimed (imports, first-call set-up), then fit the same data in alternation
(median of ``--reps`` runs), once with the BLAS default threads and once inside
``threadpool_limits(1)``; printed: CPU and wall seconds, test error (RMSE or
error rate), relevance vectors, and our log evidence (fastrvm does not report
one).  Problems: sinc (N = 1000, 2000; with ``--big`` also 4000, 8000), Friedman
#1-#3, a Ripley-style 2-D mixture, a 7-feature binary problem
(``make_classification``) and breast cancer.  Above 2000 training points our
estimators keep a subset of the points as centres (``KernelBasis(centres="auto")``);
``--all-centres`` makes every point a centre, the exact fit that fastrvm does.
The machine may be shared:
compare the ratios, not the absolute times.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import time
import warnings

import numpy as np
from sklearn.datasets import (
    load_breast_cancer,
    make_classification,
    make_friedman1,
    make_friedman2,
    make_friedman3,
)
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_limits

from rvm_pymc import RVC, RVR
from rvm_pymc.basis import KernelBasis
from rvm_pymc.datasets import make_ripley, make_sinc
from rvm_pymc.kernels import RBF


def problems(big: bool):
    """(name, kind, gamma, X, y, X_test, y_test) of every benchmark problem."""
    sizes = (1000, 2000, 4000, 8000) if big else (1000, 2000)
    for n in sizes:
        d = make_sinc(n_train=n, noise_sd=0.1, random_state=0)
        yield f"sinc N={n}", "reg", 0.1, d.X_train, d.t_train, d.X_test, d.t_test
    for k, make in enumerate((make_friedman1, make_friedman2, make_friedman3), start=1):
        # Tipping (2001): noise sd 1 for #1, a third of the signal sd for #2 and #3
        X, f = make(n_samples=240 + 1000, noise=0.0, random_state=k)
        sd = 1.0 if k == 1 else float(np.std(f)) / 3
        y = f + sd * np.random.default_rng(k).standard_normal(f.size)
        y[240:] = f[240:]  # noise-free test targets
        sc = StandardScaler().fit(X[:240])
        Xs = sc.transform(X)
        yield f"Friedman #{k} N=240", "reg", 1.0 / X.shape[1], Xs[:240], y[:240], Xs[240:], y[240:]
    d = make_ripley(random_state=0)
    yield "Ripley 2-D mixture N=250", "clf", 4.0, d.X_train, d.t_train, d.X_test, d.t_test
    # a 7-feature binary problem: 5 informative features, 1 redundant, 1 noise; 200 training
    # and 1000 test points, standardised on the training points, gamma = 1 / 7
    X, y = make_classification(
        n_samples=1200, n_features=7, n_informative=5, n_redundant=1, random_state=0
    )
    sc = StandardScaler().fit(X[:200])
    Xs = sc.transform(X)
    yield "7-feature binary N=200", "clf", 1.0 / 7, Xs[:200], y[:200], Xs[200:], y[200:]
    X, y = load_breast_cancer(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.5, random_state=0, stratify=y)
    sc = StandardScaler().fit(Xtr)
    Xtr, Xte = sc.transform(Xtr), sc.transform(Xte)
    yield "breast cancer N=284", "clf", 1.0 / X.shape[1], Xtr, ytr, Xte, yte


ALL_CENTRES = False  # --all-centres: every training point a centre, at any N


def fit_ours(kind, gamma, X, y):
    if ALL_CENTRES:  # the exact N x (N + 1) design, as fastrvm's
        kernel = KernelBasis(RBF(gamma=gamma), bias=True, centres="all")
        est = (RVR if kind == "reg" else RVC)(kernel=kernel)
    else:
        est = (RVR if kind == "reg" else RVC)(gamma=gamma)
    return est.fit(X, y), len(est.relevance_indices_), float(est.log_evidence_)


def fit_fastrvm(kind, gamma, X, y):
    import fastrvm

    est = (fastrvm.RVR if kind == "reg" else fastrvm.RVC)(gamma=gamma, fit_intercept=True)
    est.fit(X, y)
    return est, int(np.sum(est.n_relevance_)), float("nan")


def error(kind, est, X, y):
    pred = est.predict(X)
    if kind == "reg":
        return float(np.sqrt(np.mean((pred - y) ** 2)))
    return float(np.mean(pred != y))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--big", action="store_true", help="sinc up to N = 8000")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--only", nargs="*", default=None, help="problems whose name contains one")
    ap.add_argument(
        "--all-centres",
        action="store_true",
        help="ours with every training point a centre (above 2000 points RVR/RVC keep a subset)",
    )
    args = ap.parse_args(argv)
    global ALL_CENTRES
    ALL_CENTRES = args.all_centres
    warnings.simplefilter("ignore")
    print(f"load average at start {os.getloadavg()[0]:.2f}")
    head = (
        f"{'problem':26s} {'threads':8s} {'package':8s} {'cpu s':>7s} {'wall s':>7s} "
        f"{'error':>7s} {'RVs':>4s} {'log ev':>9s} {'fastrvm/ours cpu':>16s}"
    )
    print(head)
    print("-" * len(head))
    for name, kind, gamma, X, y, Xt, yt in problems(args.big):
        if args.only and not any(o in name for o in args.only):
            continue
        fit_ours(kind, gamma, X, y)  # one untimed fit each: imports and first-call set-up
        fit_fastrvm(kind, gamma, X, y)
        for threads in ("default", "one"):
            limit = (lambda: threadpool_limits(1)) if threads == "one" else contextlib.nullcontext
            rows = {"ours": [], "fastrvm": []}
            info = {}
            for _ in range(args.reps):
                for pkg, fit in (("ours", fit_ours), ("fastrvm", fit_fastrvm)):
                    with limit():
                        t0, c0 = time.perf_counter(), time.process_time()
                        est, n_rv, lev = fit(kind, gamma, X, y)
                        rows[pkg].append((time.process_time() - c0, time.perf_counter() - t0))
                    info[pkg] = (error(kind, est, Xt, yt), n_rv, lev)
            med = {k: np.median(np.array(v), axis=0) for k, v in rows.items()}
            for pkg in ("ours", "fastrvm"):
                err, n_rv, lev = info[pkg]
                ratio = med["fastrvm"][0] / med["ours"][0] if pkg == "fastrvm" else float("nan")
                print(
                    f"{name:26s} {threads:8s} {pkg:8s} {med[pkg][0]:7.3f} {med[pkg][1]:7.3f} "
                    f"{err:7.4f} {n_rv:4d} {lev:9.2f} {ratio:16.2f}",
                    flush=True,
                )
    print(f"load average at end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
