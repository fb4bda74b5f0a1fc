"""The command line on counts: --task counts, or inferred (with a note) from the target."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from rvm_pymc.cli import main
from rvm_pymc.estimators import RVP, load


def _counts_csv(path, n=40, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-2, 2, n)
    y = rng.poisson(np.exp(1 + np.sin(2 * x)))
    y[0] = 0  # a zero among the counts (what the inference looks for)
    pd.DataFrame({"x": x, "n": y}).to_csv(path, index=False)
    return x, y


def test_counts_are_inferred_with_a_note_fitted_and_predicted(tmp_path, capsys):
    path = tmp_path / "c.csv"
    x, y = _counts_csv(path)
    out = tmp_path / "m"
    argv = ["fit", str(path), "--target", "n", "--gamma", "1.0", "--out", str(out)]
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert "taken for counts" in err and "--task regression" in err
    summary = json.loads((out / "summary.json").read_text())
    assert summary["task"] == "counts" and 0.3 < summary["training_d2"] <= 1.0
    preds = pd.read_csv(out / "predictions.csv")
    est = load(out / "model.nc")
    assert isinstance(est, RVP)
    assert np.all(preds["lower_90"] <= preds["prediction"])
    assert np.all(preds["prediction"] <= preds["upper_90"] + 1)
    assert (out / "fit.png").exists()
    assert main(["predict", str(out), str(path), "--out", str(tmp_path / "p.csv")]) == 0
    again = pd.read_csv(tmp_path / "p.csv")
    np.testing.assert_allclose(again["prediction"], preds["prediction"])
    # asked for explicitly, regression stays regression; negative counts are refused
    argv = ["fit", str(path), "--target", "n", "--gamma", "1.0", "--no-plot"]
    assert main([*argv, "--task", "regression", "--out", str(tmp_path / "r")]) == 0
    assert json.loads((tmp_path / "r" / "summary.json").read_text())["task"] == "regression"
    pd.DataFrame({"x": x, "n": np.r_[-1, y[1:]]}).to_csv(path, index=False)
    assert main([*argv, "--task", "counts", "--out", str(tmp_path / "bad")]) == 2
    assert "counts must be >= 0" in capsys.readouterr().err


def test_compare_counts_prints_the_poisson_columns(tmp_path, capsys):
    path = tmp_path / "c.csv"
    _counts_csv(path, n=40)
    argv = ["compare", str(path), "--target", "n", "--task", "counts", "--gamma", "1.0",
            "--methods", "reference", "--cv", "3"]  # fmt: skip
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "counts of 'n'" in out
    for col in ("d2", "lpd", "coverage_90", "elpd_kfold"):
        assert col in out
