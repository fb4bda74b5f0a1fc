"""``rvm-pymc`` on real-looking CSV files, run as a user runs it: ``python -m rvm_pymc``.

Each test starts the command line in a subprocess (the package found through
``PYTHONPATH``, as from a checkout) on files written the way pandas and R
write them: an unnamed index column, a ``rownames`` column, blank lines, a
numeric target with a stray ``?``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]


def _run(*argv: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OPENBLAS_NUM_THREADS": "1"}
    return subprocess.run(
        [sys.executable, "-m", "rvm_pymc", *argv],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=300,
    )


def _error(proc: subprocess.CompletedProcess) -> str:
    """The one error line of a refused run (status 2, nothing on standard output)."""
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == ""
    assert "Traceback" not in proc.stderr
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("rvm-pymc: error: ")]
    assert len(errors) == 1, proc.stderr
    return errors[0]


def _table(n=30, seed=0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    a = rng.uniform(-3, 3, n)
    b = rng.uniform(0, 1000, n)
    return pd.DataFrame({"a": a, "b": b, "y": np.sin(a) + 0.002 * b + 0.1 * rng.normal(size=n)})


@pytest.fixture(scope="module")
def indexed_fit(tmp_path_factory):
    """``rvm-pymc fit`` of ``_table()`` written with pandas' index (``train.csv``) into
    ``run``, with ``new.csv`` (the first 5 rows, no target): ``(directory, process)``.

    Shared read-only by the tests that read a fit of this table (one fit subprocess
    instead of three); a test that changes the fit copies ``run`` first.
    """
    cwd = tmp_path_factory.mktemp("indexed")
    table = _table()
    table.to_csv(cwd / "train.csv")  # pandas' index: a first column 'Unnamed: 0'
    table.drop(columns="y").head(5).to_csv(cwd / "new.csv")
    proc = _run("fit", "train.csv", "--target", "y", "--gamma", "0.3", "--out", "run",
                cwd=cwd)  # fmt: skip
    return cwd, proc


def test_index_column_is_left_out_and_predict_keeps_it(indexed_fit, tmp_path):
    cwd, proc = indexed_fit
    table = _table()
    assert proc.returncode == 0, proc.stderr
    notes = [ln for ln in proc.stderr.splitlines() if "note:" in ln]
    assert len(notes) == 1 and "column 'Unnamed: 0' is a row index" in notes[0]
    assert "  features               a, b\n" in proc.stdout
    assert "  left out               Unnamed: 0\n" in proc.stdout
    summary = json.loads((cwd / "run" / "summary.json").read_text())
    assert summary["features"] == ["a", "b"] and summary["left_out"] == ["Unnamed: 0"]
    assert (cwd / "run" / "fit.png").exists()

    proc = _run("predict", "run", "new.csv", cwd=cwd)
    assert proc.returncode == 0, proc.stderr
    got = pd.read_csv(pd.io.common.StringIO(proc.stdout))
    assert list(got.columns) == ["Unnamed: 0", "a", "b", "prediction", "predictive_sd"]
    train = pd.read_csv(cwd / "run" / "predictions.csv")
    np.testing.assert_allclose(got["prediction"], train["prediction"][:5], rtol=1e-10)

    # R's rownames column (Rdatasets) is recognised the same way
    table.rename_axis("rownames").to_csv(tmp_path / "r.csv")
    proc = _run("fit", "r.csv", "--target", "y", "--gamma", "0.3", "--no-plot", "--out", "r",
                cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "column 'rownames' is a row index" in proc.stderr
    assert json.loads((tmp_path / "r" / "summary.json").read_text())["features"] == ["a", "b"]


def test_features_and_drop_choose_the_columns(tmp_path):
    table = _table()
    table["id"] = [f"row{i}" for i in range(len(table))]  # text: not a feature
    table.to_csv(tmp_path / "t.csv", index=False)
    proc = _run("fit", "t.csv", "--target", "y", "--no-plot", cwd=tmp_path)
    assert "column 'id' has the non-numeric value 'row0' on line 2" in _error(proc)
    assert (
        "give --numeric-only to leave it out, --one-hot to encode text of a few values as 0/1 "
        "columns, or --drop id, or fix those rows"
    ) in proc.stderr

    proc = _run("fit", "t.csv", "--target", "y", "--drop", "id", "--gamma", "0.3",
                "--no-plot", "--out", "dropped", cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "  features               a, b\n" in proc.stdout
    assert "  left out               id\n" in proc.stdout

    proc = _run("fit", "t.csv", "--target", "y", "--gamma", "0.3", "--no-plot", "--out",
                "only_b", "--features", "b", cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    pre = json.loads((tmp_path / "only_b" / "model.json").read_text())
    assert pre["features"] == ["b"]

    for option, names, phrase in [
        ("--features", ["a", "c"], "--features names c, not a column of the file"),
        ("--drop", ["zz"], "--drop names zz, not a column of the file"),
        ("--features", ["a", "y"], "--features names the target 'y'"),
    ]:
        proc = _run("fit", "t.csv", "--target", "y", option, *names, cwd=tmp_path)
        assert phrase in _error(proc)
    assert not (tmp_path / "rvm_fit").exists()


def _with_stray_values(tmp_path) -> Path:
    """Integer class codes 0/1 with '?' and 'n/a?' in two rows, a blank line between them."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal(30)
    lines = ["x,c"] + [f"{v:.6f},{int(v > 0)}" for v in x]
    lines[6] = lines[6].split(",")[0] + ",?"  # file line 7, before the blank line
    lines[12] = lines[12].split(",")[0] + ",n/a?"
    lines.insert(9, "")  # a blank line between them: the second is on line 14 of the file
    path = tmp_path / "codes.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_numeric_target_with_stray_text_is_refused_naming_value_and_line(tmp_path):
    path = _with_stray_values(tmp_path)
    file_lines = path.read_text().splitlines()
    assert file_lines[7 - 1].endswith(",?") and file_lines[14 - 1].endswith(",n/a?")
    proc = _run("fit", path.name, "--target", "c", "--no-plot", cwd=tmp_path)
    line = _error(proc)
    assert "the target column 'c' holds numbers but also the non-numeric value '?'" in line
    assert "on line 7 (2 such lines: 7, 14)" in line  # pandas' data rows 6 and 12
    assert "--task classification" in line
    # the user says the column holds class labels: '?' is one of them
    proc = _run("fit", path.name, "--target", "c", "--task", "classification", "--gamma", "0.5",
                "--no-plot", "--out", "labels", cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((tmp_path / "labels" / "summary.json").read_text())
    assert summary["task"] == "classification" and "?" in summary["classes"]


def test_outputs_are_checked_before_the_fit_and_a_reused_directory_holds_the_new_fit(tmp_path):
    _table().to_csv(tmp_path / "t.csv", index=False)
    t0 = time.perf_counter()
    if Path("/proc").is_dir():  # Linux: a file system that takes no new files
        # /proc exists: its "No such file or directory" (ENOENT on creating a file) is no
        # reason to give; the message names the real one
        proc = _run("fit", "t.csv", "--target", "y", "--out", "/proc/rvm_out", cwd=tmp_path)
        line = _error(proc)
        assert line.endswith(
            "argument --out: cannot create /proc/rvm_out: /proc is on a proc file system, "
            "which takes no new files"
        ), line
        assert "No such file or directory" not in line
        assert "fitting" not in proc.stderr  # refused before the fit
        proc = _run("predict", "run", "t.csv", "--out", "/proc/rvm_out.csv", cwd=tmp_path)
        assert "argument --out: cannot create /proc/rvm_out.csv: /proc is on a proc" in _error(
            proc
        )
    proc = _run("fit", "t.csv", "--target", "y", "--out", "t.csv/run", cwd=tmp_path)
    assert "t.csv is a file, not a directory" in _error(proc)
    assert "fitting" not in proc.stderr
    proc = _run("compare", "t.csv", "--target", "y", "--out", "nowhere/t.csv", cwd=tmp_path)
    assert "the directory" in _error(proc) and "does not exist" in proc.stderr
    (tmp_path / "file").write_text("x")
    proc = _run("fit", "t.csv", "--target", "y", "--out", "file", cwd=tmp_path)
    assert "argument --out: file exists and is not a directory" in _error(proc)
    assert time.perf_counter() - t0 < 120  # no fit ran (each start imports the package)

    argv = ["fit", "t.csv", "--target", "y", "--gamma", "0.3", "--out", "run"]
    assert _run(*argv, cwd=tmp_path).returncode == 0
    assert (tmp_path / "run" / "fit.png").exists()
    proc = _run(*argv, "--no-plot", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "removed run/fit.png of an earlier fit" in proc.stderr
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == [
        "model.json", "model.nc", "predictions.csv", "summary.json", "summary.txt",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("text", "argv", "phrase", "not_said"),
    [
        pytest.param("x,y\n1,cat\n2,dog\n3,cat\n4,dog\n", ["--task", "regression"],
                     "the target column 'y' has the non-numeric value 'cat' on line 2 (4 such "
                     "lines: 2, 3, 4, 5)", "features must be numbers",
                     id="text-target-regression"),
        pytest.param("x,y\n1,0.5\n2,1.5\n\n3,\n4,2.7\n5,3.1\n", [],
                     "the target column 'y' has a missing value on line 5; remove or fill",
                     "label", id="missing-regression-target"),
        pytest.param("x,y\n1,a\n2,\n3,b\n", [], "the target column 'y' has a missing label on "
                     "line 3", "features must be numbers", id="missing-class-label"),
    ],
)  # fmt: skip
def test_messages_name_the_target(tmp_path, text, argv, phrase, not_said):
    (tmp_path / "d.csv").write_text(text)
    line = _error(_run("fit", "d.csv", "--target", "y", *argv, cwd=tmp_path))
    assert phrase in line
    assert not_said not in line


def _help(command: str, cwd: Path) -> str:
    proc = _run(command, "--help", cwd=cwd)
    assert proc.returncode == 0, proc.stderr
    return " ".join(proc.stdout.split())  # argparse wraps at the terminal's width


def test_output_files_are_complete_and_helps_state_the_defaults(indexed_fit, tmp_path):
    from rvm_pymc.estimators import RVR

    cwd, proc = indexed_fit  # the fit of the table written with pandas' index
    table = _table()
    assert proc.returncode == 0, proc.stderr
    preds = pd.read_csv(cwd / "run" / "predictions.csv")
    # the training rows as read (index, features, target) beside the predictions, the
    # index under its empty header as pandas wrote it
    header = (cwd / "run" / "predictions.csv").read_text().splitlines()[0]
    assert header == ",a,b,y,prediction,predictive_sd"
    assert list(preds.columns) == ["Unnamed: 0", "a", "b", "y", "prediction", "predictive_sd"]
    np.testing.assert_array_equal(preds["Unnamed: 0"], np.arange(len(table)))
    np.testing.assert_allclose(preds[["a", "b", "y"]], table[["a", "b", "y"]], rtol=1e-12)
    proc = _run("predict", "run", "new.csv", cwd=cwd)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(",a,b,prediction,predictive_sd\n")
    new = pd.read_csv(pd.io.common.StringIO(proc.stdout))
    np.testing.assert_allclose(new["prediction"], preds["prediction"][:5], rtol=1e-10)

    proc = _run("compare", "train.csv", "--target", "y", "--gamma", "0.3", "--methods",
                "reference", "--cv", "0", "--out", str(tmp_path / "cmp.csv"), cwd=cwd)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    header = (tmp_path / "cmp.csv").read_text().splitlines()[0]
    assert header.startswith("method,") and header.count("method") == 1  # no unnamed index
    assert pd.read_csv(tmp_path / "cmp.csv")["method"].tolist() == ["reference"]
    shown = proc.stdout.splitlines()
    head = next(i for i, line in enumerate(shown) if line.split()[:1] == ["method"])
    assert shown[head + 1].split()[0] == "reference"  # the table's rows start with the method

    fit_help, compare_help = _help("fit", cwd), _help("compare", cwd)
    for text in (fit_help, compare_help):  # the CLI's defaults beside the estimators'
        assert "'auto' (default, as RVR, RVC and RVP): 'cv' up to 2000 rows" in text
        assert "use the features as they are, as RVR and RVC do" in text
    assert "saved with the model" in fit_help and "saved with the model" not in compare_help
    assert "Saves no model (that is 'fit'); --out writes the table" in compare_help
    doc = " ".join(RVR.__doc__.split())
    assert "The command line (``rvm-pymc fit`` and ``compare``) standardises the features" in doc


def test_a_model_from_a_newer_format_is_refused_with_upgrade_advice(indexed_fit, tmp_path):
    import shutil

    import xarray as xr

    cwd, proc = indexed_fit
    assert proc.returncode == 0, proc.stderr
    shutil.copytree(cwd / "run", tmp_path / "run")  # the shared fit stays as it was
    _table().to_csv(tmp_path / "t.csv", index=False)
    nc = tmp_path / "run" / "model.nc"
    assert nc.read_bytes()[:8] == b"\x89HDF\r\n\x1a\n"  # netCDF-4: the default engine's
    with xr.open_datatree(nc) as opened:
        tree = opened.load()
    newer = int(tree.attrs["rvm_pymc_format_version"]) + 1  # the version this rvm_pymc writes
    tree.attrs["rvm_pymc_format_version"] = newer
    tree.to_netcdf(nc)
    line = _error(_run("predict", "run", "t.csv", cwd=tmp_path))
    assert f"has format version {newer}" in line
    assert "saved by a newer rvm_pymc; upgrade rvm_pymc to load it" in line
    assert "re-fit" not in line


def test_a_reader_that_leaves_early_ends_predict_quietly(indexed_fit):
    """``rvm-pymc predict ... | head -1``: status 141 (SIGPIPE), no error, no traceback."""
    cwd, proc = indexed_fit
    assert proc.returncode == 0, proc.stderr
    rng = np.random.default_rng(1)
    many = pd.DataFrame({"a": rng.uniform(-3, 3, 20_000), "b": rng.uniform(0, 1000, 20_000)})
    many.to_csv(cwd / "many.csv", index=False)  # far more than a pipe's buffer
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OPENBLAS_NUM_THREADS": "1"}
    predict = subprocess.Popen(
        [sys.executable, "-m", "rvm_pymc", "predict", "run", "many.csv"],
        cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    first = predict.stdout.readline()
    predict.stdout.close()  # what head does after its lines
    err = predict.stderr.read().decode()
    assert predict.wait(timeout=300) == 141, err
    assert first.decode() == "a,b,prediction,predictive_sd\n"
    assert err == ""
