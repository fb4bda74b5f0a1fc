"""``rvm-pymc`` on the demo and on CSV files: it prints and writes what the package computes."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from rvm_pymc.cli import main
from rvm_pymc.estimators import RVC, RVR, load

PNG = b"\x89PNG\r\n\x1a\n"


def test_demo_prints_the_comparison_table_and_writes_png(tmp_path, capsys):
    out = tmp_path / "fit.png"
    argv = ["demo", "--n-train", "60", "--gammas", "0.2", "0.5", "--methods", "reference"]
    assert main([*argv, "--output", str(out)]) == 0
    text = capsys.readouterr().out
    assert "rvm_pymc.comparison.compare" in text
    lines = text.splitlines()
    i = next(k for k, line in enumerate(lines) if line.startswith("reference "))
    header, row = lines[i - 1].split(), lines[i].split()
    assert row[0] == "reference"
    values = dict(zip(["name", *header], row, strict=True))
    assert 0 < float(values["rmse_sinc"]) < 0.1  # against the noise-free sinc
    assert 0.8 < float(values["coverage_95"]) <= 1.0  # fresh noise, sd 0.1
    assert 2 <= int(values["n_relevant"]) < 30
    assert out.read_bytes()[:8] == PNG
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fit.png"]  # no temporary file
    # the demo's fit is the estimator's own gamma="evidence" over --gammas
    from rvm_pymc.comparison import n_relevant
    from rvm_pymc.datasets import make_sinc

    data = make_sinc(n_train=60, noise_sd=0.1, random_state=0)
    direct = RVR(gamma="evidence", gamma_grid=[0.2, 0.5], random_state=0)
    direct.fit(data.X_train, data.t_train)
    assert float(values["gamma"]) == pytest.approx(direct.gamma_, rel=5e-4)  # 4 digits printed
    # the relevance vectors, the bias not counted
    assert int(values["n_relevant"]) == n_relevant(direct) == direct.n_relevance_


def test_demo_rejects_bad_arguments(capsys):
    """Bad values are one error line and status 2 (no SystemExit, no traceback)."""
    assert main(["demo", "--n-train", "1", "--output", "none"]) == 2
    assert "--n-train" in capsys.readouterr().err
    assert main(["demo", "--noise-sd", "-1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("rvm-pymc: error: argument --noise-sd:") and err.count("\n") == 1
    assert main(["demo", "--methods", "gibbs"]) == 2
    assert "invalid choice: 'gibbs'" in capsys.readouterr().err


# ------------------------------------------------------------------ fit / predict


def _regression_csv(path, n=40, seed=0):
    """Two features on scales 1 and 1000 (standardisation matters), a target column in between."""
    rng = np.random.default_rng(seed)
    a = rng.uniform(-3, 3, n)
    b = rng.uniform(0, 1000, n)
    y = np.sin(a) + 0.002 * b + 0.1 * rng.standard_normal(n)
    table = pd.DataFrame({"a": a, "y": y, "b": b})
    table.to_csv(path, index=False)
    return table


def test_fit_then_predict_applies_the_saved_standardisation(tmp_path, capsys):
    train, new = tmp_path / "train.csv", tmp_path / "new.csv"
    table = _regression_csv(train)
    out = tmp_path / "run"
    assert main(["fit", str(train), "--target", "y", "--gamma", "0.3", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "standardised           yes" in text
    names = {"model.nc", "model.json", "predictions.csv", "summary.txt", "summary.json", "fit.png"}
    assert {p.name for p in out.iterdir()} == names
    assert (out / "fit.png").read_bytes()[:8] == PNG

    # The same model fitted in-process on the standardised features.
    X = table[["a", "b"]].to_numpy()
    mean, sd = X.mean(0), X.std(0)
    direct = RVR(gamma=0.3, random_state=0).fit((X - mean) / sd, table["y"].to_numpy())
    pre = json.loads((out / "model.json").read_text())
    assert pre["features"] == ["a", "b"] and pre["target"] == "y" and pre["standardise"]
    np.testing.assert_allclose(pre["mean"], mean, rtol=1e-12)
    np.testing.assert_allclose(pre["scale"], sd, rtol=1e-12)

    # New rows: columns reordered, no target, an extra column.
    rng = np.random.default_rng(1)
    fresh = pd.DataFrame({"b": rng.uniform(0, 1000, 7), "note": list("abcdefg"),
                          "a": rng.uniform(-3, 3, 7)})  # fmt: skip
    fresh.to_csv(new, index=False)
    assert main(["predict", str(out), str(new), "--out", str(tmp_path / "p.csv")]) == 0
    got = pd.read_csv(tmp_path / "p.csv")
    assert list(got.columns) == ["b", "note", "a", "prediction", "predictive_sd"]
    m, s = direct.predict((fresh[["a", "b"]].to_numpy() - mean) / sd, return_std=True)
    np.testing.assert_allclose(got["prediction"], m, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(got["predictive_sd"], s, rtol=1e-9)

    # Training predictions and summary agree with the saved model.
    saved = load(out / "model.nc")
    train_pred = pd.read_csv(out / "predictions.csv")
    np.testing.assert_allclose(train_pred["prediction"], saved.predict((X - mean) / sd))
    np.testing.assert_allclose(train_pred["y"], table["y"])
    summary = json.loads((out / "summary.json").read_text())
    assert summary["relevance_vectors"] == direct.n_relevance_ == saved.n_relevance_
    rmse = np.sqrt(np.mean((train_pred["prediction"] - table["y"]) ** 2))
    assert summary["training_rmse"] == pytest.approx(rmse, rel=1e-9)
    assert summary["task"] == "regression"  # inferred from a float target

    # predict to standard output, given the model file itself
    capsys.readouterr()
    assert main(["predict", str(out / "model.nc"), str(new)]) == 0
    assert capsys.readouterr().out.splitlines()[0] == "b,note,a,prediction,predictive_sd"


def test_no_standardise_fits_the_raw_features(tmp_path, capsys):
    train = tmp_path / "train.csv"
    table = _regression_csv(train)
    out = tmp_path / "raw"
    argv = ["fit", str(train), "--target", "y", "--gamma", "1e-5", "--no-standardise"]
    assert main([*argv, "--out", str(out), "--no-plot"]) == 0
    assert "standardised           no" in capsys.readouterr().out
    pre = json.loads((out / "model.json").read_text())
    assert pre["mean"] == [0.0, 0.0] and pre["scale"] == [1.0, 1.0]
    direct = RVR(gamma=1e-5, random_state=0).fit(table[["a", "b"]].to_numpy(), table["y"])
    got = pd.read_csv(out / "predictions.csv")["prediction"]
    np.testing.assert_allclose(got, direct.predict(table[["a", "b"]].to_numpy()), rtol=1e-9)
    assert not (out / "fit.png").exists()


def test_classification_with_text_labels(tmp_path, capsys):
    from rvm_pymc.datasets import make_ripley

    X, y, _, _ = make_ripley(n_train=60, random_state=0)
    labels = np.where(y == 1, "spam", "ham")
    path = tmp_path / "cls.csv"
    pd.DataFrame({"x1": X[:, 0], "x2": X[:, 1], "kind": labels}).to_csv(path, index=False)
    out = tmp_path / "c"
    assert main(["fit", str(path), "--target", "kind", "--gamma", "0.5", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "classification of 'kind'" in text
    pred = pd.read_csv(out / "predictions.csv")
    assert list(pred.columns) == ["x1", "x2", "kind", "prediction", "p_ham", "p_spam"]
    np.testing.assert_allclose(pred["p_ham"] + pred["p_spam"], 1.0, rtol=1e-12)
    argmax = np.where(pred["p_spam"] > pred["p_ham"], "spam", "ham")
    assert (pred["prediction"] == argmax).all()
    Xs = (X - X.mean(0)) / X.std(0)
    direct = RVC(gamma=0.5, random_state=0).fit(Xs, labels)
    np.testing.assert_allclose(pred["p_spam"], direct.predict_proba(Xs)[:, 1], rtol=1e-9)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["training_error_rate"] == pytest.approx(np.mean(pred["prediction"] != labels))
    assert (out / "fit.png").read_bytes()[:8] == PNG  # 2-D: probability contours


def test_integer_labels_are_classification_unless_told(tmp_path, capsys):
    path = tmp_path / "d.csv"
    rng = np.random.default_rng(0)
    x = rng.standard_normal(30)
    pd.DataFrame({"x": x, "c": (x > 0).astype(int)}).to_csv(path, index=False)
    argv = ["fit", str(path), "--target", "c", "--no-plot"]
    assert main([*argv, "--out", str(tmp_path / "a")]) == 0
    assert json.loads((tmp_path / "a" / "summary.json").read_text())["task"] == "classification"
    assert main([*argv, "--task", "regression", "--out", str(tmp_path / "b")]) == 0
    assert json.loads((tmp_path / "b" / "summary.json").read_text())["task"] == "regression"
    # integer scores with many distinct values (scikit-learn's diabetes target) are regressed
    scores = pd.DataFrame({"x": x, "s": np.round(50 * x + 150).astype(int)})
    scores.to_csv(path, index=False)
    argv = ["fit", str(path), "--target", "s", "--no-plot"]
    assert main([*argv, "--out", str(tmp_path / "c")]) == 0
    assert json.loads((tmp_path / "c" / "summary.json").read_text())["task"] == "regression"
    capsys.readouterr()


@pytest.mark.pymc
def test_fit_by_map_saves_and_predicts(tmp_path, capsys):
    """The one PyMC fit of the CLI tests: 20 rows, MAP from the reference solution."""
    path = tmp_path / "t.csv"
    table = _regression_csv(path, n=20)
    out = tmp_path / "m"
    argv = ["fit", str(path), "--target", "y", "--method", "map", "--gamma", "0.3", "--no-plot"]
    assert main([*argv, "--out", str(out)]) == 0
    captured = capsys.readouterr()
    assert "compiling the PyMC model" in captured.err  # compilation is announced
    assert "method                 map" in captured.out
    assert main(["predict", str(out), str(path), "--out", str(tmp_path / "p.csv")]) == 0
    got = pd.read_csv(tmp_path / "p.csv")
    np.testing.assert_allclose(
        got["prediction"], pd.read_csv(out / "predictions.csv")["prediction"]
    )
    X = table[["a", "b"]].to_numpy()
    ref = RVR(gamma=0.3).fit((X - X.mean(0)) / X.std(0), table["y"])
    # MAP started from the reference solution under the same prior returns it
    np.testing.assert_allclose(got["prediction"], ref.predict((X - X.mean(0)) / X.std(0)),
                               rtol=1e-4, atol=1e-4 * table["y"].std())  # fmt: skip


# ------------------------------------------------------------------ compare


def test_compare_reference_with_kfold(tmp_path, capsys):
    path = tmp_path / "t.csv"
    _regression_csv(path, n=48)
    full = tmp_path / "table.csv"
    argv = ["compare", str(path), "--target", "y", "--methods", "reference", "--cv", "3"]
    assert main([*argv, "--gamma", "0.3", "--out", str(full)]) == 0
    text = capsys.readouterr().out
    assert "36 training, 12 held-out rows, features standardised" in text
    table = pd.read_csv(full, index_col="method")
    assert list(table.index) == ["reference"]
    row = table.loc["reference"]
    assert np.isfinite(row["elpd_kfold"]) and np.isfinite(row["rmse"])
    assert row["rmse"] < 0.5  # signal sd about 1, noise 0.1
    assert f"{row['rmse']:.4g}" in text


def test_jobs_fit_the_width_grid_in_processes_with_the_same_result(tmp_path, capsys):
    path = tmp_path / "t.csv"
    _regression_csv(path, n=40)
    preds = []
    for jobs in ("1", "2"):
        out = tmp_path / f"run{jobs}"
        argv = ["fit", str(path), "--target", "y", "--no-plot", "--out", str(out)]
        assert main([*argv, "--gamma", "evidence", "--jobs", jobs]) == 0
        preds.append(pd.read_csv(out / "predictions.csv"))
    capsys.readouterr()
    pd.testing.assert_frame_equal(preds[0], preds[1], check_exact=True)
    assert main(["fit", str(path), "--target", "y", "--jobs", "0"]) == 2
    assert "--jobs: must be in [1, 256]; got 0" in capsys.readouterr().err
