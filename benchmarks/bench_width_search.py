"""Kernel width by the evidence: the grid refined on a continuous scale, against the grid.

For each problem: the former ``gamma="evidence"`` (every width of the grid
``logspace(-2, 2, 9) x scale`` fitted from scratch, the largest evidence kept;
reproduced here as the 9 fits ``gamma=<width>``), and the present one (the same
grid, then the refinement of ``rvm_pymc.estimators._search`` around its best
width).  Columns: the width chosen, its log evidence, the CPU seconds of the
whole search and the number of fits over all bases; ``gain`` is the evidence
of the refined width minus the grid's; the last column is the CPU time of the
refined search divided by that of one fit, ``gamma=<chosen width>``, at the
width it chose.

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

from rvm_pymc.datasets import make_friedman2, make_ripley, make_sinc
from rvm_pymc.estimators import RVC, RVR
from rvm_pymc.estimators._scaling import scale_gamma
from rvm_pymc.estimators._widths import DEFAULT_GRID


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="runs per fit (median)")
    args = parser.parse_args()
    print(_common.header("Kernel width: grid refined vs grid (bench_width_search.py)"))
    warm = make_sinc(n_train=50, random_state=0)
    fit(RVR, warm.X_train, warm.t_train, 1)  # imports and first calls outside the timings
    rows = []
    for name, cls, X, y in problems():
        grid = scale_gamma(X) * DEFAULT_GRID
        g_cpu, old_ev = 0.0, []
        for g in grid:  # the former gamma="evidence": every width from scratch
            cpu, est = fit(cls, X, y, args.repeats, gamma=float(g))
            g_cpu += cpu
            old_ev.append(est.log_evidence_)
        k = int(np.argmax(old_ev))
        s_cpu, new = fit(cls, X, y, args.repeats, gamma="evidence")
        np.testing.assert_allclose(new.evidence_path_["log_evidence"][: grid.size], old_ev)
        one_cpu, _ = fit(cls, X, y, args.repeats, gamma=float(new.gamma_))
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
                str(new.evidence_path_["gamma"].size),
                f"{new.log_evidence_ - old_ev[k]:+.2f}",
                f"{s_cpu / one_cpu:.1f}",
            ]
        )
        print(" | ".join(rows[-1]), flush=True)
    head = [
        "problem",
        "grid gamma",
        "grid log ev.",
        "grid CPU s",
        "grid fits",
        "refined gamma",
        "refined log ev.",
        "refined CPU s",
        "refined fits",
        "gain",
        "refined / one fit",
    ]
    print()
    print(_common.format_table(head, rows))


if __name__ == "__main__":
    main()
