"""Kernel width by the evidence: the search of ``gamma="evidence"`` against the grid.

For each problem: the former ``gamma="evidence"`` (every width of the grid
``logspace(-2, 2, 9) x scale`` fitted from scratch over all bases, the largest
evidence kept; reproduced here as the 9 fits ``gamma=<width>``), and the
present one (``rvm_pymc.estimators._width_selection``: the same grid and a refinement
on a few centres, then the best width found and the grid's best fitted over
all bases).  Columns: the width chosen, its log evidence, the CPU seconds of
the whole search and the number of its fits (those over all bases in
brackets); ``gain`` is the evidence of the search minus the grid's (a grid
width whose fit interpolates, noise precision at its bound, is not the
grid's best); the last column is the CPU time of the search divided by that
of one fit, ``gamma=<chosen width>``, at the width it chose (the script
checks that this fit is the search's, number for number), and ``iterations``
the reference solver's iterations in the whole search against those of that
one fit (counted, not timed: they do not depend on the load).

CPU time (one BLAS thread) is the work of the fit; every time is the median
of ``--repeats`` runs, after one warm-up fit.  The load average at the start
is in the header.

Usage::

    python benchmarks/bench_width_search.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import warnings

import _common
import numpy as np
from sklearn.datasets import load_breast_cancer, load_diabetes
from sklearn.preprocessing import StandardScaler

import rvm_pymc.reference
from rvm_pymc.datasets import make_friedman2, make_ripley, make_sinc
from rvm_pymc.estimators import RVC, RVR
from rvm_pymc.estimators._width_selection import DEFAULT_GRID, scale_gamma


def problems() -> list[tuple[str, type, np.ndarray, np.ndarray]]:
    """(name, estimator class, X, y) of every benchmark problem."""
    out = []
    for seed in range(4):
        d = make_sinc(n_train=1000, noise_sd=0.1, random_state=seed)
        out.append((f"sinc N=1000 seed {seed}", RVR, d.X_train, d.t_train))
    d = make_friedman2(n_train=240, random_state=0)
    out.append(("Friedman #2 N=240", RVR, StandardScaler().fit_transform(d.X_train), d.t_train))
    X, y = load_diabetes(return_X_y=True)
    rng = np.random.default_rng(0)
    idx = rng.choice(len(y), 300, replace=False)
    out.append(("diabetes N=300", RVR, StandardScaler().fit_transform(X[idx]), y[idx]))
    d = make_ripley(n_train=250, random_state=0)
    out.append(("Ripley N=250 (RVC)", RVC, d.X_train, d.t_train))
    X, y = load_breast_cancer(return_X_y=True)
    idx = rng.choice(len(y), 300, replace=False)
    out.append(("breast cancer N=300 (RVC)", RVC, StandardScaler().fit_transform(X[idx]), y[idx]))
    return out


def fit(cls, X, y, repeats: int, **params):
    """(median CPU seconds, fitted estimator) of ``cls(**params).fit(X, y)``, quietly."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, cpu, est = _common.timed(lambda: cls(**params).fit(X, y), repeats)
    return cpu, est


def iterations(cls, X, y, **params) -> int:
    """The reference solver's iterations in ``cls(**params).fit(X, y)`` (all its fits)."""
    real, count = rvm_pymc.reference.fit_posterior, []

    def counted(*args, **kwargs):
        out = real(*args, **kwargs)
        count.append(out[1].n_iter)
        return out

    rvm_pymc.reference.fit_posterior = counted
    try:
        fit(cls, X, y, 1, **params)
    finally:
        rvm_pymc.reference.fit_posterior = real
    return sum(count)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="runs per fit (median)")
    args = parser.parse_args()
    print(_common.header("Kernel width: the evidence search vs the grid (bench_width_search.py)"))
    warm = make_sinc(n_train=50, random_state=0)
    fit(RVR, warm.X_train, warm.t_train, 1)  # imports and first calls outside the timings
    rows = []
    for name, cls, X, y in problems():
        grid = scale_gamma(X) * DEFAULT_GRID
        g_cpu, old_ev = 0.0, []
        for g in grid:  # the former gamma="evidence": every width from scratch
            cpu, est = fit(cls, X, y, args.repeats, gamma=float(g))
            g_cpu += cpu
            interpolates = est._tree_inputs["attrs"].get("noise_at_bound", False)
            old_ev.append(-np.inf if interpolates else est.log_evidence_)
        k = int(np.argmax(old_ev))
        s_cpu, new = fit(cls, X, y, args.repeats, gamma="evidence")
        one_cpu, one = fit(cls, X, y, args.repeats, gamma=float(new.gamma_))
        assert one.log_evidence_ == new.log_evidence_  # the search's fit is that width's
        np.testing.assert_array_equal(one.coef_, new.coef_)
        path = new.evidence_path_
        its = iterations(cls, X, y, gamma="evidence"), iterations(cls, X, y, gamma=new.gamma_)
        rows.append(
            [
                name,
                f"{grid[k]:.4g}",
                f"{old_ev[k]:.2f}",
                f"{g_cpu:.3f}",
                str(grid.size),
                f"{new.gamma_:.4g}",
                f"{new.log_evidence_:.2f}",
                f"{s_cpu:.3f}",
                f"{path['gamma'].size} ({int(path['all_bases'].sum())})",
                f"{new.log_evidence_ - old_ev[k]:+.2f}",
                f"{s_cpu / one_cpu:.1f}",
                f"{its[0]} / {its[1]}",
            ]
        )
        print(" | ".join(rows[-1]), flush=True)
    head = [
        "problem",
        "grid gamma",
        "grid log ev.",
        "grid CPU s",
        "grid fits",
        "search gamma",
        "search log ev.",
        "search CPU s",
        "search fits (exact)",
        "gain",
        "search / one fit",
        "iterations",
    ]
    print()
    print(_common.format_table(head, rows))


if __name__ == "__main__":
    main()
