"""Internals of the command line, the data sets and the saved files.

With ``test_internals_numerics.py`` and ``test_internals_sampling.py`` the only test
files that import private modules.  Sections, each headed by the file it came from:

- ``test_cli_errors.py``: every error of the command line is one line on standard
  error with the documented exit status, refused before the fit starts (checked by
  replacing the demo's fit and its memory probe);
- ``test_demo_relevance.py``: the demo's table and figure for a NUTS fit;
- ``test_io_robustness.py``: saved files that are damaged, truncated, foreign or
  written onto a full disk are refused with a clear error, and a failed save keeps the
  previous file (files rewritten through the private writer and checksum);
- tests of ``test_cli_r_csv.py`` and ``test_datasets.py`` that call a private function
  (the summary text, the compile notes; the noise-free Friedman and Ripley formulas).
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import warnings
from collections.abc import Callable
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pytest
import xarray as xr
from shared_helpers import r_style_csv, sk_friedman1, sk_friedman2
from sklearn import datasets as skd

import rvm_pymc
import rvm_pymc.reference
from rvm_pymc import __version__
from rvm_pymc import datasets as ds
from rvm_pymc._core import files as _files
from rvm_pymc.cli import _commands as commands
from rvm_pymc.cli import _commands as demo
from rvm_pymc.cli import _main as cli
from rvm_pymc.cli import main
from rvm_pymc.datasets import _classification as ds_cls
from rvm_pymc.datasets import _regression as ds_reg
from rvm_pymc.datasets import (
    make_friedman1,
    make_friedman2,
    make_friedman3,
    make_gaussian_mixture_classes,
)
from rvm_pymc.estimators import RVC, RVR, load
from rvm_pymc.estimators import _io as io

# ---- from tests/test_cli_errors.py

PRIVATE_NAME = re.compile(r"(?<![\w\-./])_[A-Za-z]\w*")  # _positive_float, _demo, ...


def _one_error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("rvm-pymc: error: "), err
    assert "Traceback" not in err
    assert not PRIVATE_NAME.search(lines[0]), lines[0]
    return lines[0]


@pytest.fixture
def no_fit(monkeypatch):
    """Fail the test if the fit starts: bad usage must be refused before it."""

    def refuse(args):
        raise AssertionError("the fit started although the arguments are bad")

    monkeypatch.setattr(demo, "fit_demo", refuse)


def _memory(n_bytes):
    def patch(monkeypatch, tmp_path):
        monkeypatch.setattr(demo, "available_memory", lambda: n_bytes)

    return patch


def _mkdir(name):
    def patch(monkeypatch, tmp_path):
        (tmp_path / name).mkdir()

    return patch


def _read_only_directory(monkeypatch, tmp_path):
    """No new file can be created in ``tmp_path`` (as root, chmod would not stop it)."""
    real_open = os.open

    def denied(path, flags, *args, **kwargs):
        if flags & os.O_CREAT and os.path.dirname(os.path.realpath(path)) == os.path.realpath(
            tmp_path
        ):
            raise PermissionError(errno.EACCES, "Permission denied")
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", denied)


USAGE_ERRORS = [
    # (argv, with {tmp} for tmp_path), setup(monkeypatch, tmp_path) or None, phrase
    pytest.param(["frob"], None, "invalid choice: 'frob'", id="unknown-command"),
    pytest.param(["demo", "--bogus"], None, "unrecognized arguments: --bogus",
                 id="unknown-option"),
    pytest.param(["demo", "--n-train", "3"], None, "--n-train: must be >= 10", id="n-train-3"),
    pytest.param(["demo", "--n-train", "1"], None, "--n-train: must be >= 10", id="n-train-1"),
    pytest.param(["demo", "--n-train", "-5"], None, "--n-train: must be >= 10", id="n-train-neg"),
    pytest.param(["demo", "--n-train", "1e3"], None, "--n-train: expected a whole number",
                 id="n-train-float"),
    pytest.param(["demo", "--n-train", "9" * 5000], None, "--n-train: expected a whole number",
                 id="n-train-5000-digits"),
    pytest.param(["demo", "--n-train", "100000"], None, "kernel matrix of 74.5 GiB",
                 id="n-train-100000"),
    pytest.param(["demo", "--n-train", "2001"], _memory(4 * 8 * 2000**2),
                 "use --n-train 2000 or fewer", id="n-train-over-memory"),
    pytest.param(["demo", "--noise-sd", "1e300"], None, "--noise-sd: must be in (0, 1000000]",
                 id="noise-sd-1e300"),
    pytest.param(["demo", "--noise-sd", "1e400"], None, "--noise-sd: must be a finite number",
                 id="noise-sd-overflow-inf"),
    pytest.param(["demo", "--noise-sd", "nan"], None, "--noise-sd: must be a finite number",
                 id="noise-sd-nan"),
    pytest.param(["demo", "--noise-sd", "-1"], None, "--noise-sd: must be in (0,",
                 id="noise-sd-negative"),
    pytest.param(["demo", "--noise-sd", "0"], None, "--noise-sd: must be in (0,",
                 id="noise-sd-zero"),
    pytest.param(["demo", "--noise-sd", "abc"], None, "--noise-sd: expected a number, got 'abc'",
                 id="noise-sd-text"),
    pytest.param(["demo", "--seed", "-1"], None, "--seed: must be in [0, 4294967295]",
                 id="seed-negative"),
    pytest.param(["demo", "--seed", "1.5"], None, "--seed: expected a whole number",
                 id="seed-float"),
    pytest.param(["demo", "--gammas", "0.5", "0"], None, "--gammas: must be in [1e-06,",
                 id="gamma-zero"),
    pytest.param(["demo", "--gammas", "1e300"], None, "--gammas: must be in [1e-06, 1000000]",
                 id="gamma-1e300"),
    pytest.param(["demo", "--gammas", "inf"], None, "--gammas: must be a finite number",
                 id="gamma-inf"),
    pytest.param(["demo", "--gammas"], None, "--gammas: expected at least one argument",
                 id="gamma-none"),
    pytest.param(["demo", "--method", "newton"], None, "invalid choice: 'newton'",
                 id="unknown-method"),
    pytest.param(["demo", "--draws", "49"], None, "--draws: must be in [50, 100000]",
                 id="draws-49"),
    pytest.param(["demo", "--output", "{tmp}/missing/fig.png"], None, "does not exist",
                 id="output-missing-directory"),
    pytest.param(["demo", "--output", "{tmp}/d.png"], _mkdir("d.png"), "is a directory",
                 id="output-is-directory"),
    pytest.param(["demo", "--output", "{tmp}/fig.xyz"], None, "must end in an image type",
                 id="output-unknown-type"),
    pytest.param(["demo", "--output", "{tmp}/fig"], None, "must end in an image type",
                 id="output-no-suffix"),
    pytest.param(["demo", "--output", "{tmp}/fig.png"], _read_only_directory,
                 "cannot create {tmp}/fig.png: no permission to create files in {tmp} "
                 "(Permission denied)", id="output-unwritable-directory"),
]  # fmt: skip


@pytest.mark.parametrize(("argv", "setup", "phrase"), USAGE_ERRORS)
def test_usage_errors(capsys, monkeypatch, tmp_path, no_fit, argv, setup, phrase):
    if setup is not None:
        setup(monkeypatch, tmp_path)
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    assert cli.main(argv) == 2
    captured = capsys.readouterr()
    line = _one_error_line(captured.err)
    assert phrase.replace("{tmp}", str(tmp_path)) in line
    assert captured.out == ""
    assert [p.name for p in tmp_path.iterdir() if p.is_file()] == []  # no probe left behind


def _raising(exc):
    def fit(*args, **kwargs):
        raise exc

    return fit


def _non_finite(real):
    def fit(*args, **kwargs):
        res = real(*args, **kwargs)
        res.log_evidence = float("nan")
        return res

    return fit


RUN_ERRORS = [
    # (replacement of rvm_pymc.reference.fit_regression, exit status, phrase)
    pytest.param(_raising(np.linalg.LinAlgError("Matrix is not positive definite")), 1,
                 "the fit failed: LinAlgError: Matrix is not positive definite", id="linalg"),
    pytest.param(_raising(MemoryError("Unable to allocate 74.5 GiB")), 1,
                 "the fit failed: out of memory", id="memory"),
    pytest.param(_raising(ValueError("t spans 4e300,\nrescale t")), 1,
                 "the fit failed: ValueError: t spans 4e300, rescale t", id="multiline-message"),
    pytest.param(_non_finite(rvm_pymc.reference.fit_regression), 1,
                 "the fit failed: the reference fit returned non-finite numbers", id="non-finite"),
]  # fmt: skip


@pytest.mark.parametrize(("fit", "status", "phrase"), RUN_ERRORS)
def test_failed_fit(capsys, monkeypatch, fit, status, phrase):
    monkeypatch.setattr(rvm_pymc.reference, "fit_regression", fit)
    argv = ["demo", "--n-train", "20", "--gammas", "0.5", "--methods", "reference",
            "--output", "none"]  # fmt: skip
    assert cli.main(argv) == status
    line = _one_error_line(capsys.readouterr().err)
    assert phrase in line
    assert line.endswith("(rerun with --debug for the traceback)")


@pytest.mark.parametrize("where", ["before", "after"])
def test_debug_shows_the_traceback(capsys, monkeypatch, where):
    monkeypatch.setattr(
        rvm_pymc.reference, "fit_regression", _raising(np.linalg.LinAlgError("singular"))
    )
    argv = ["demo", "--n-train", "20", "--gammas", "0.5", "--methods", "reference",
            "--output", "none"]  # fmt: skip
    argv = ["--debug", *argv] if where == "before" else [*argv, "--debug"]
    assert cli.main(argv) == 1
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err
    assert "numpy.linalg.LinAlgError: singular" in err
    assert err.strip().splitlines()[-1] == (
        "rvm-pymc: error: the fit failed: LinAlgError: singular"
    )


def test_interrupted_fit(capsys, monkeypatch):
    monkeypatch.setattr(rvm_pymc.reference, "fit_regression", _raising(KeyboardInterrupt()))
    assert cli.main(["demo", "--n-train", "20", "--output", "none"]) == 130
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines[0].startswith("rvm-pymc: fitting reference, map, nuts (")  # what will run
    assert lines[1:] == ["rvm-pymc: interrupted"]


def test_failed_figure_write_keeps_old_file(capsys, monkeypatch, tmp_path):
    out = tmp_path / "fig.png"
    out.write_bytes(b"previous figure")

    def no_space(src, dst):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "replace", no_space)
    argv = ["demo", "--n-train", "20", "--gammas", "0.5", "--methods", "reference"]
    assert cli.main([*argv, "--output", str(out)]) == 1
    monkeypatch.undo()
    captured = capsys.readouterr()
    line = _one_error_line(captured.err)
    assert f"cannot write --output {out}: No space left on device" in line
    assert "rmse_sinc" in captured.out  # the fit ran and was reported
    assert out.read_bytes() == b"previous figure"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fig.png"]


def test_warnings_are_one_line(capsys, monkeypatch):
    real = rvm_pymc.reference.fit_regression

    def fit(*args, **kwargs):
        warnings.warn("did not converge;\n  increase max_iter", RuntimeWarning, stacklevel=2)
        return real(*args, **kwargs)

    monkeypatch.setattr(rvm_pymc.reference, "fit_regression", fit)
    argv = ["demo", "--n-train", "20", "--gammas", "0.5", "--methods", "reference"]
    assert cli.main([*argv, "--output", "none"]) == 0
    lines = capsys.readouterr().err.splitlines()
    # one RVR fit (gamma="evidence" over one width) calls the solver once
    assert lines == ["rvm-pymc: warning: did not converge; increase max_iter"]


def test_bare_command_prints_help_and_exits_2(capsys):
    assert cli.main([]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("usage: rvm-pymc")
    assert "demo" in captured.err


def test_version(capsys):
    assert cli.main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"rvm-pymc {rvm_pymc.__version__}"


@pytest.mark.parametrize("argv", [["--help"], ["demo", "--help"]])
def test_help_exits_0(capsys, argv):
    assert cli.main(argv) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: rvm-pymc")
    assert "--debug" in out if argv == ["--help"] else "--n-train" in out


def test_module_entry_point_exit_status(tmp_path):
    """``python -m rvm_pymc``: the status and the one line reach the shell."""
    proc = subprocess.run(
        [sys.executable, "-m", "rvm_pymc", "demo", "--noise-sd", "1e300"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert proc.returncode == 2
    assert proc.stdout == ""
    line = _one_error_line(proc.stderr)
    assert "--noise-sd: must be in (0, 1000000]" in line


def _csv(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


GOOD = "a,b,y\n" + "".join(f"{i},{(i * 7) % 5},{3 * np.sin(i) + 0.3 * i:.4f}\n" for i in range(12))


DATA_ERRORS = [
    # (argv with {csv} for the file written from text, text, phrase)
    pytest.param(["fit", "{csv}", "--target", "z"], GOOD,
                 "{csv}: no column 'z' (columns: a, b, y)", id="missing-target-column"),
    pytest.param(["fit", "{csv}", "--target", "y"], GOOD.replace("\n3,", "\nthree,", 1),
                 "{csv}: column 'a' has the non-numeric value 'three' on line 5",
                 id="non-numeric-feature"),
    pytest.param(["fit", "{csv}", "--target", "y"], GOOD.replace("\n3,1,", "\n3,,", 1),
                 "{csv}: column 'b' has a missing value on line 5", id="missing-feature"),
    pytest.param(["fit", "{csv}", "--target", "y", "--task", "regression"],
                 GOOD.replace(",-1.0704\n", ",big\n", 1),
                 "the target column 'y' has the non-numeric value 'big' on line 6; regression "
                 "needs a number in every row",
                 id="non-numeric-target"),
    pytest.param(["fit", "{csv}", "--target", "y"], "", "{csv} is empty", id="empty-file"),
    pytest.param(["fit", "{csv}", "--target", "y"], "a,b,y\n", "{csv} has a header but no data",
                 id="header-only"),
    pytest.param(["fit", "{csv}", "--target", "y"], "y\n1\n2\n3\n",
                 "no feature columns besides the target 'y'", id="no-features"),
    pytest.param(["fit", "{csv}", "--target", "y", "--task", "classification"],
                 "a,y\n1,u\n2,u\n3,u\n", "column 'y' has one class only", id="one-class"),
    pytest.param(["fit", "{tmp}/nothing.csv", "--target", "y"], GOOD,
                 "{tmp}/nothing.csv: no such file", id="missing-file"),
    pytest.param(["fit", "{csv}"], GOOD, "the following arguments are required: --target",
                 id="no-target-option"),
    pytest.param(["fit", "{csv}", "--target", "y", "--gamma", "-1"], GOOD,
                 "--gamma: must be > 0; got -1; or give 'auto', 'cv', 'scale' or 'evidence'",
                 id="bad-gamma"),
    pytest.param(["fit", "{csv}", "--target", "y", "--method", "gibbs"], GOOD,
                 "invalid choice: 'gibbs'", id="bad-method"),
    pytest.param(["compare", "{csv}", "--target", "w"], GOOD, "no column 'w'",
                 id="compare-missing-column"),
    pytest.param(["compare", "{csv}", "--target", "y", "--test-size", "0.9"], GOOD,
                 "--test-size: must be in [0.05, 0.5]", id="compare-bad-test-size"),
    pytest.param(["predict", "{tmp}", "{csv}"], GOOD, "holds no model.nc", id="predict-no-model"),
    # one range per option, whatever the command (the demo's --draws has the same)
    pytest.param(["fit", "{csv}", "--target", "y", "--draws", "49"], GOOD,
                 "--draws: must be in [50, 100000]", id="fit-draws-49"),
    pytest.param(["compare", "{csv}", "--target", "y", "--tune", "10"], GOOD,
                 "--tune: must be in [50, 100000]", id="compare-tune-10"),
    pytest.param(["fit", "{csv}", "--target", "y", "--seed", "-1"], GOOD,
                 "--seed: must be in [0, 4294967295]", id="fit-seed-negative"),
    pytest.param(["fit", "{csv}", "--target", "y", "--features", "a", "--drop", "b"], GOOD,
                 "argument --drop: not allowed with argument --features", id="features-and-drop"),
]  # fmt: skip


@pytest.mark.parametrize(("argv", "text", "phrase"), DATA_ERRORS)
def test_bad_data_is_one_line_and_status_2(capsys, monkeypatch, tmp_path, argv, text, phrase):
    monkeypatch.chdir(tmp_path)
    csv = _csv(tmp_path, "data.csv", text)
    fill = {"csv": csv, "tmp": str(tmp_path)}
    argv = [a.format(**fill) for a in argv]
    assert cli.main(argv) == 2
    line = _one_error_line(capsys.readouterr().err)
    assert phrase.format(**fill) in line
    assert not (tmp_path / "rvm_fit").exists()  # nothing written


def test_predict_refuses_data_without_the_model_features(capsys, tmp_path):
    out = tmp_path / "fit"
    csv = _csv(tmp_path, "train.csv", GOOD)
    assert cli.main(["fit", csv, "--target", "y", "--out", str(out), "--no-plot"]) == 0
    capsys.readouterr()
    new = _csv(tmp_path, "new.csv", "a,c\n1,2\n")
    assert cli.main(["predict", str(out), new]) == 2
    line = _one_error_line(capsys.readouterr().err)
    assert "the model needs the feature column b, not in the file (columns: a, c)" in line
    (out / "model.json").unlink()
    assert cli.main(["predict", str(out), csv]) == 2
    assert "model.json: no such file" in _one_error_line(capsys.readouterr().err)


def test_predict_refuses_a_damaged_preprocessing_file(capsys, tmp_path):
    out = tmp_path / "fit"
    csv = _csv(tmp_path, "train.csv", GOOD)
    assert cli.main(["fit", csv, "--target", "y", "--out", str(out), "--no-plot"]) == 0
    capsys.readouterr()
    pre = out / "model.json"
    pre.write_text(pre.read_text().replace('"scale": [', '"scale": [0.0, '))
    assert cli.main(["predict", str(out), csv]) == 2
    assert "is damaged" in _one_error_line(capsys.readouterr().err)


@pytest.mark.parametrize("command", ["demo", "fit", "predict", "compare"])
def test_debug_after_any_command_shows_the_traceback(capsys, monkeypatch, tmp_path, command):
    """One --debug for every command: given after the command, a refused file shows its trace."""
    missing = str(tmp_path / "missing.csv")
    argv = {
        "demo": ["demo", "--n-train", "20", "--gammas", "0.5", "--methods", "reference",
                 "--output", "none"],
        "fit": ["fit", missing, "--target", "y"],
        "predict": ["predict", str(tmp_path), missing],
        "compare": ["compare", missing, "--target", "y"],
    }[command]  # fmt: skip
    if command == "demo":
        singular = _raising(np.linalg.LinAlgError("singular"))
        monkeypatch.setattr(rvm_pymc.reference, "fit_regression", singular)
    assert cli.main([*argv, "--debug"]) == (1 if command == "demo" else 2)
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err
    assert err.strip().splitlines()[-1].startswith("rvm-pymc: error: ")


@pytest.mark.parametrize("command", ["fit", "predict", "compare"])
def test_data_commands_have_help(capsys, command):
    assert cli.main([command, "--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: rvm-pymc {command}")
    assert "DATA.csv" in out
    if command != "predict":
        assert "--no-standardise" in out and "standardised" in out


def test_a_full_disk_while_saving_is_one_line_and_keeps_the_old_model(
    capsys, tmp_path, monkeypatch
):
    """The model is written with plain os.write: a full disk is exit status 1 and one line
    naming the file; the model of an earlier fit stays, byte for byte, no temporary file."""
    out = tmp_path / "fit"
    csv = _csv(tmp_path, "train.csv", GOOD)
    argv = ["fit", csv, "--target", "y", "--gamma", "0.3", "--out", str(out), "--no-plot"]
    assert cli.main(argv) == 0
    before = (out / "model.nc").read_bytes()
    capsys.readouterr()

    def no_space(fd, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "write", no_space)
    assert cli.main([*argv[:4], "--gamma", "0.5", *argv[6:]]) == 1
    monkeypatch.undo()
    err = capsys.readouterr().err.splitlines()  # the progress of the fit, then the error
    assert [ln for ln in err if "Traceback" in ln or "error" in ln] == err[-1:]
    line = err[-1]
    assert line.startswith("rvm-pymc: error: ") and not PRIVATE_NAME.search(line)
    assert f"--out {out}: cannot save to {out}/model.nc: No space left on device" in line
    assert (out / "model.nc").read_bytes() == before
    assert sorted(p.name for p in out.iterdir()) == [
        "model.json", "model.nc", "predictions.csv", "summary.json", "summary.txt",
    ]  # fmt: skip


# ---- from tests/test_demo_relevance.py

NO_PRUNING = "n/a (no pruning)"  # what the demo's table and legend show for a sampled fit


@pytest.mark.pymc
def test_demo_reports_no_relevance_count_for_nuts(tmp_path, monkeypatch):
    from argparse import Namespace

    from rvm_pymc.cli import _commands as _demo

    out = tmp_path / "demo.png"
    args = Namespace(n_train=30, noise_sd=0.1, seed=0, method="fast", gammas=[0.2, 0.5],
                     methods=["reference", "nuts"], draws=60, output=str(out))  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # 60 draws: NUTS's short-run warnings
        data, fits = _demo.fit_demo(args)
    table = _demo._demo_table(args, data, fits)
    assert table.loc["nuts", "n_relevant"] == NO_PRUNING
    assert table.loc["reference", "n_relevant"] == fits["reference"].n_relevance_
    closed = []  # the demo closes its figure once written: keep it to read its legend
    monkeypatch.setattr(plt, "close", closed.append)
    _demo._write_figure(args, data, fits)
    (fig,) = closed
    assert out.stat().st_size > 0
    legend = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert f"nuts ({NO_PRUNING})" in legend
    assert f"reference ({fits['reference'].n_relevance_} RVs)" in legend
    assert not any("nuts (0 RVs)" in text for text in legend)


# ---- from tests/test_cli_r_csv.py


def test_warnings_name_the_flags_not_the_python_arguments(tmp_path, capsys, monkeypatch):
    """Item 7: the estimators' warnings, as the command line prints them, name its flags."""
    # each warning the fit raises, and the line the command line prints for it
    translated = {
        "gamma=1e-05: extend gamma_grid; or raise draws=2000":
            "--gamma 1e-05: extend --gamma-grid; or raise --draws 2000",
        "gamma='evidence': the largest evidence is at the smallest gamma of gamma_grid "
        "(gamma=0.01234, its widest kernel); extend gamma_grid past that edge":
            "--gamma evidence: the largest evidence is at the smallest gamma of --gamma-grid "
            "(--gamma 0.01234, its widest kernel); extend --gamma-grid past that edge",
        "increase max_iter (method='fast')": "increase max_iter (method='fast')",
    }  # fmt: skip

    real = commands.make_estimator

    def warning_estimator(args, task, method=None):
        est = real(args, task, method)
        fit = est.fit

        def fit_and_warn(X, y):
            for message in translated:
                warnings.warn(message, UserWarning, stacklevel=2)
            return fit(X, y)

        est.fit = fit_and_warn
        return est

    monkeypatch.setattr(commands, "make_estimator", warning_estimator)
    r_style_csv(tmp_path / "t.csv")
    argv = ["fit", str(tmp_path / "t.csv"), "--target", "Price", "--numeric-only", "--gamma",
            "0.5", "--no-plot", "--out", str(tmp_path / "run")]  # fmt: skip
    assert main(argv) == 0
    warned = [ln for ln in capsys.readouterr().err.splitlines() if "warning:" in ln]
    assert warned == [f"rvm-pymc: warning: {line}" for line in translated.values()]


def test_summary_says_log_evidence_not_computed_for_nuts():
    """Item 8: 'log evidence None' for NUTS read as a bug."""
    summary = {"data": "d.csv", "target": "y", "task": "regression", "method": "nuts",
               "log_evidence": None, "max_rhat": None}  # fmt: skip
    text = commands._summary_text(summary)
    assert "  log evidence           not computed (nuts)\n" in text
    assert "None" not in text


@pytest.mark.parametrize(
    ("empty", "said"),
    [
        (True, "PyTensor's compile cache is empty, so this first compile may take a few "
               "minutes; later runs reuse the cache"),
        (False, "reusing PyTensor's compile cache"),
        (None, "it may take a few minutes when PyTensor's compile cache is empty"),
    ],
)  # fmt: skip
def test_compile_line_says_minutes_only_on_an_empty_cache(capsys, monkeypatch, empty, said):
    """Item 8: 'compiles for up to a few minutes' was printed on a warm cache too."""
    monkeypatch.setattr(commands, "compile_cache_is_empty", lambda: empty)
    commands.announce_compilation("map")
    assert capsys.readouterr().err == (
        f"rvm-pymc: map: building and compiling the PyMC model ({said})\n"
    )
    commands.announce_compilation("reference")
    assert capsys.readouterr().err == ""


def test_compile_cache_is_told_empty_or_filled(tmp_path):
    assert commands.cache_is_empty(tmp_path / "missing", numba=True)
    (tmp_path / "numba").mkdir()
    assert commands.cache_is_empty(tmp_path / "numba", numba=True)
    (tmp_path / "numba" / "add-1234.py312.nbi").write_bytes(b"")
    assert not commands.cache_is_empty(tmp_path / "numba", numba=True)
    assert commands.cache_is_empty(tmp_path / "numba", numba=False)  # no tmp* modules
    (tmp_path / "numba" / "tmpabc").mkdir()
    assert not commands.cache_is_empty(tmp_path / "numba", numba=False)
    assert commands.compile_cache_is_empty() in (True, False)  # this machine's PyTensor


# ---- from tests/test_datasets.py


def _sk_friedman3(X):
    return np.arctan((X[:, 1] * X[:, 2] - 1 / (X[:, 1] * X[:, 3])) / X[:, 0])


@pytest.mark.parametrize(
    ("make", "formula", "sk_make", "private"),
    [
        (make_friedman1, sk_friedman1, skd.make_friedman1, ds_reg._friedman1),
        (make_friedman2, sk_friedman2, skd.make_friedman2, ds_reg._friedman2),
        (make_friedman3, _sk_friedman3, skd.make_friedman3, ds_reg._friedman3),
    ],
)
def test_friedman_test_targets_match_scikit_learn(make, formula, sk_make, private):
    data = make(random_state=0)
    # noise-free test targets are the formula applied to X_test
    np.testing.assert_allclose(data.t_test, formula(data.X_test), rtol=1e-13, atol=0)
    # and the package's formula reproduces scikit-learn's own noise-free generator
    X_sk, y_sk = sk_make(n_samples=500, noise=0.0, random_state=0)
    np.testing.assert_allclose(private(X_sk), y_sk, rtol=1e-13, atol=0)


@pytest.mark.parametrize(
    ("make", "formula"), [(make_friedman2, sk_friedman2), (make_friedman3, _sk_friedman3)]
)
def test_friedman_auto_noise_is_one_third_of_signal_sd(make, formula):
    sd = make(n_train=10, n_test=10, random_state=0).noise_sd
    # the documented rule exactly: 100000 noise-free points drawn with the fixed seed
    rng = np.random.default_rng(ds.FRIEDMAN_AUTO_NOISE_SEED)
    X_ref = ds_reg._friedman23_inputs(rng, ds.FRIEDMAN_AUTO_NOISE_SIZE)
    assert sd == pytest.approx(np.std(formula(X_ref)) / 3, rel=1e-12)
    # a stable constant, independent of random_state
    assert make(n_train=10, n_test=10, random_state=99).noise_sd == sd
    # and one third of the signal sd of an independent large sample from
    # scikit-learn's generator; the sampling error of both sd estimates is
    # about 0.3%, so the tolerance is 1% relative
    _, y_sk = {"friedman2": skd.make_friedman2, "friedman3": skd.make_friedman3}[
        make.__name__.removeprefix("make_")
    ](n_samples=200_000, noise=0.0, random_state=1)
    assert sd == pytest.approx(y_sk.std() / 3, rel=0.01)
    # the training noise really has that sd
    big = make(n_train=20000, random_state=4)
    resid = big.t_train - formula(big.X_train)
    assert abs(resid.std() / sd - 1) < 0.03


def test_ripley_component_means_and_covariance():
    X, y, comp = ds_cls._sample_ripley(100_000, np.random.default_rng(0))
    for label in (0, 1):
        for c in (0, 1):
            mask = (y == label) & (comp == c)
            assert mask.sum() == 25_000
            np.testing.assert_allclose(
                X[mask].mean(axis=0), ds.RIPLEY_MEANS[label, c], atol=0.01, rtol=0
            )
            np.testing.assert_allclose(np.cov(X[mask].T), 0.03 * np.eye(2), atol=0.002, rtol=0)
    np.testing.assert_allclose(
        ds.RIPLEY_MEANS,
        [[[-0.7, 0.3], [0.3, 0.3]], [[-0.3, 0.7], [0.4, 0.7]]],
    )


def test_mixture_two_components_per_class():
    X, t, _, _ = make_gaussian_mixture_classes(
        n_samples=30_000, n_test=3, n_classes=3, n_components=2, cluster_sd=0.2, random_state=0
    )
    centres = ds_cls._mixture_centres(3, 2, 2.0)
    for k in range(3):
        Xk = X[t == k]
        # the two blobs of a class lie on opposite sides of the circle
        np.testing.assert_allclose(centres[k, 0], -centres[k, 1], atol=1e-12)
        side = Xk @ centres[k, 0] > 0
        assert abs(side.mean() - 0.5) < 0.02
        np.testing.assert_allclose(Xk[side].mean(axis=0), centres[k, 0], atol=0.02)
        np.testing.assert_allclose(Xk[~side].mean(axis=0), centres[k, 1], atol=0.02)


# ---- from tests/test_io_robustness.py


@pytest.fixture(scope="module")
def fitted(noisy_sinc) -> RVR:
    return RVR(gamma=0.3, random_state=0).fit(*noisy_sinc(40))


def _listing(d: Path) -> list[str]:
    return sorted(p.name for p in d.iterdir())


def test_default_engine_round_trip_without_skip(fitted, tmp_path):
    """The test extra installs h5netcdf *and* h5py: the default engine writes netCDF-4."""
    assert io.engine_available("h5netcdf"), "pip install -e '.[test]' must install h5py"
    assert io.netcdf_engine() == "h5netcdf"
    path = tmp_path / "default.nc"
    fitted.save(path)  # no engine: the default
    assert path.read_bytes()[:8] == b"\x89HDF\r\n\x1a\n"
    back = RVR.load(path)
    X = np.linspace(-12, 12, 31)[:, None]
    np.testing.assert_array_equal(back.predict(X), fitted.predict(X))
    assert back.log_evidence_ == fitted.log_evidence_
    assert back.idata_.attrs["log_evidence"] == fitted.idata_.attrs["log_evidence"]
    assert _listing(tmp_path) == ["default.nc"]


def test_engine_check_needs_h5py_not_just_h5netcdf(fitted, tmp_path, monkeypatch):
    """h5netcdf >= 1.8 imports without h5py; the default must then fall back to SciPy."""
    monkeypatch.setitem(sys.modules, "h5py", None)  # import h5py -> ImportError
    monkeypatch.setitem(sys.modules, "netCDF4", None)
    assert not io.engine_available("h5netcdf")
    assert io.engine_available("scipy")
    assert io.netcdf_engine() == "scipy"
    path = tmp_path / "fallback.nc"
    fitted.save(path)
    assert path.read_bytes()[:3] == b"CDF"
    np.testing.assert_array_equal(RVR.load(path).coef_, fitted.coef_)
    with pytest.raises(ImportError, match=r"engine='h5netcdf' needs .*h5py.*rvm-pymc\[io\]"):
        fitted.save(tmp_path / "forced.nc", engine="h5netcdf")
    assert not (tmp_path / "forced.nc").exists()


# ---- from tests/test_io_robustness.py

NEWER = io.FORMAT_VERSION + 1


ENGINES = ("scipy", "h5netcdf")


@pytest.fixture(scope="module")
def files(fitted, tmp_path_factory) -> dict[str, Path]:
    """One good file per engine, never modified by the tests."""
    d = tmp_path_factory.mktemp("good")
    out = {}
    for engine in ENGINES:
        out[engine] = d / f"{engine}.nc"
        fitted.save(out[engine], engine=engine)
    return out


def _raw(files, engine) -> bytes:
    return files[engine].read_bytes()


def _bytes(make: Callable[[dict[str, Path]], bytes]):
    def maker(files, d: Path) -> Path:
        path = d / "model.nc"
        path.write_bytes(make(files))
        return path

    return maker


def _truncated(engine: str, keep: float | int):
    def make(files):
        raw = _raw(files, engine)
        n = keep if isinstance(keep, int) else int(len(raw) * keep)
        return raw[:n]

    return _bytes(make)


def _flipped(engine: str, position: int | Callable[[bytes], int]):
    def make(files):
        raw = bytearray(_raw(files, engine))
        raw[position if isinstance(position, int) else position(bytes(raw))] ^= 0xFF
        return bytes(raw)

    return _bytes(make)


def _first_weight_byte(fitted_coef: np.ndarray) -> Callable[[bytes], int]:
    needle = np.asarray(fitted_coef, dtype=">f8").tobytes()

    def find(raw: bytes) -> int:
        assert raw.count(needle) == 1
        return raw.index(needle)  # the sign/exponent byte of the first weight

    return find


def _edited(engine: str, edit: Callable[[xr.DataTree], None], *, rehash: bool = False):
    """Rewrite the good file with ``edit`` applied; keep the old checksum unless ``rehash``."""

    def maker(files, d: Path) -> Path:
        tree = _files.read_tree(files[engine])
        edit(tree)
        if rehash:
            a = tree.attrs
            a["rvm_checksum"] = io._digest(
                tree, a["rvm_estimator_class"], a["rvm_params"], a["rvm_fitted"]
            )
        path = d / "model.nc"
        io.write_tree(tree, str(path), engine)
        return path

    return maker


def _set_attr(key, value, group: str = "/"):
    def edit(tree):
        (tree if group == "/" else tree[group]).attrs[key] = value

    return edit


def _del_attr(key):
    def edit(tree):
        del tree.attrs[key]

    return edit


def _var_attr(tree):
    const = tree["constant_data"].to_dataset()
    const["Phi"].attrs["units"] = "volts"
    tree["constant_data"] = const


def _params(edit: Callable[[dict], None]):
    def apply(tree):
        params = json.loads(tree.attrs["rvm_params"])
        edit(params)
        tree.attrs["rvm_params"] = json.dumps(params, sort_keys=True)

    return apply


def _drop_state(tree):
    del tree[io.STATE]


def _foreign_nc3(files, d):
    path = d / "foreign.nc"
    xr.Dataset({"a": ("x", [1.0, 2.0])}).to_netcdf(path, engine="scipy")
    return path


def _foreign_nc4(files, d):
    path = d / "foreign.nc"
    xr.Dataset({"a": ("x", [1.0, 2.0])}, attrs={"title": "x"}).to_netcdf(path, engine="h5netcdf")
    return path


def _missing(files, d):
    return d / "no-such-file.nc"


def _directory(files, d):
    (d / "adir.nc").mkdir()
    return d / "adir.nc"


LOAD_FAILURES = [
    # (maker, loader, exception, phrase)
    pytest.param(_missing, load, FileNotFoundError, "No such file", id="missing"),
    pytest.param(_directory, load, ValueError, "cannot be read", id="directory"),
    pytest.param(_bytes(lambda f: b""), load, ValueError, "is empty", id="empty"),
    pytest.param(_bytes(lambda f: b"hello world"), load, ValueError, "bad magic", id="text"),
    pytest.param(_truncated("scipy", 0.5), load, ValueError, "damaged or truncated",
                 id="nc3-truncated-half"),
    pytest.param(_truncated("scipy", 100), load, ValueError, "damaged or truncated",
                 id="nc3-truncated-100B"),
    pytest.param(_truncated("scipy", 2), load, ValueError, "truncated: only 2 bytes",
                 id="nc3-truncated-2B"),
    pytest.param(_truncated("h5netcdf", 0.5), load, ValueError, "damaged or truncated",
                 id="nc4-truncated-half"),
    pytest.param(_truncated("h5netcdf", 104), load, ValueError, "damaged or truncated",
                 id="nc4-truncated-104B"),
    pytest.param(_truncated("h5netcdf", 5), load, ValueError, "truncated: only 5 bytes",
                 id="nc4-truncated-5B"),
    pytest.param(_flipped("scipy", 3), load, ValueError, "damaged or truncated",
                 id="nc3-flipped-version-byte"),
    pytest.param(_flipped("h5netcdf", 10), load, ValueError, "damaged or truncated",
                 id="nc4-flipped-superblock-byte"),
    pytest.param(_flipped("scipy", 1), load, ValueError, "bad magic", id="flipped-magic"),
    pytest.param(_edited("scipy", _set_attr("log_evidence", 999.0)), load, ValueError,
                 "checksum mismatch", id="nc3-edited-root-attr"),
    pytest.param(_edited("h5netcdf", _set_attr("log_evidence", 999.0)), load, ValueError,
                 "checksum mismatch", id="nc4-edited-root-attr"),
    pytest.param(_edited("h5netcdf", _set_attr("creation_library", "x", "posterior")), load,
                 ValueError, "checksum mismatch", id="nc4-edited-group-attr"),
    pytest.param(_edited("scipy", _set_attr("creation_library", "x", "posterior")), load,
                 ValueError, "checksum mismatch", id="nc3-edited-group-attr"),
    pytest.param(_edited("scipy", _var_attr), load, ValueError, "checksum mismatch",
                 id="nc3-added-variable-attr"),
    pytest.param(_edited("h5netcdf", _var_attr), load, ValueError, "checksum mismatch",
                 id="nc4-added-variable-attr"),
    pytest.param(_edited("h5netcdf", _set_attr("rvm_fitted", "{}")), load, ValueError,
                 "checksum mismatch", id="edited-fitted-json"),
    pytest.param(_edited("h5netcdf", _del_attr("rvm_checksum")), load, ValueError,
                 "header lacks rvm_checksum", id="no-checksum"),
    pytest.param(_edited("scipy", _del_attr("rvm_params")), load, ValueError,
                 "header lacks rvm_params", id="no-params"),
    pytest.param(_edited("h5netcdf", _set_attr("rvm_pymc_format_version", 1)), load,
                 ValueError, f"format version 1; rvm_pymc {__version__} reads versions 2, 3 and "
                 "4 only: the file was saved by an older rvm_pymc; re-fit and save the model",
                 id="old-format-version"),
    pytest.param(_edited("h5netcdf", _set_attr("rvm_pymc_format_version", NEWER)), load,
                 ValueError, f"format version {NEWER}; rvm_pymc {__version__} reads versions 2, "
                 "3 and 4 only: the file was saved by a newer rvm_pymc; upgrade rvm_pymc to load "
                 "it",
                 id="newer-format-version"),
    pytest.param(_edited("scipy", _set_attr("rvm_pymc_format_version", "2")), load,
                 ValueError, f"format version '2'; rvm_pymc {__version__} reads versions 2, 3 and "
                 "4 only, as an integer: the header is damaged", id="format-version-text"),
    pytest.param(_edited("h5netcdf", _set_attr("rvm_pymc_format", "other")), load,
                 ValueError, "not written by RVR/RVC.save", id="other-format"),
    pytest.param(_foreign_nc3, load, ValueError, "not written by RVR/RVC.save",
                 id="foreign-netcdf3"),
    pytest.param(_foreign_nc4, load, ValueError, "not written by RVR/RVC.save",
                 id="foreign-netcdf4"),
    pytest.param(_edited("scipy", _set_attr("rvm_params", "{not json"), rehash=True), load,
                 ValueError, "cannot be restored (JSONDecodeError", id="params-not-json"),
    pytest.param(_edited("scipy", _params(lambda p: p.update(bogus=1)), rehash=True), load,
                 ValueError, "cannot be restored (TypeError", id="params-unknown-key"),
    pytest.param(_edited("h5netcdf", _set_attr("rvm_fitted", "{}"), rehash=True), load,
                 ValueError, "does not match", id="fitted-empty-rehashed"),
    pytest.param(_edited("h5netcdf", _drop_state, rehash=True), load, ValueError,
                 "does not match", id="state-group-removed-rehashed"),
    pytest.param(_edited("scipy", _set_attr("rvm_estimator_class", "SVR"), rehash=True), load,
                 ValueError, "unknown estimator class 'SVR'", id="unknown-class-rehashed"),
    pytest.param(lambda files, d: files["scipy"], RVC.load, ValueError,
                 "holds an RVR, not an RVC", id="wrong-class"),
]  # fmt: skip


@pytest.mark.parametrize(("maker", "loader", "exc", "phrase"), LOAD_FAILURES)
def test_load_failures(files, tmp_path, maker, loader, exc, phrase):
    path = maker(files, tmp_path)
    with pytest.raises(Exception) as info:
        loader(path)
    assert type(info.value) is exc, f"{type(info.value).__name__}: {info.value}"
    assert phrase in str(info.value)
    assert str(path) in str(info.value)


def test_netcdf4_file_without_h5py_names_what_to_install(files, monkeypatch):
    monkeypatch.setitem(sys.modules, "h5py", None)
    monkeypatch.setitem(sys.modules, "netCDF4", None)
    with pytest.raises(ValueError, match=r"needs h5netcdf and h5py.*rvm-pymc\[io\]") as info:
        RVR.load(files["h5netcdf"])
    assert str(files["h5netcdf"]) in str(info.value)


def test_flipped_weight_byte_fails_checksum(files, fitted, tmp_path):
    maker = _flipped("scipy", _first_weight_byte(fitted.coef_))
    path = maker(files, tmp_path)
    with pytest.raises(ValueError, match="checksum mismatch") as info:
        RVR.load(path)
    assert str(path) in str(info.value)


@pytest.mark.filterwarnings("error")  # also: no unraisable-exception noise from the readers
@pytest.mark.parametrize("engine", ENGINES)
def test_every_flipped_byte_is_refused_or_harmless(files, fitted, tmp_path, engine):
    """Flip single bytes all over the file: a ValueError naming it, or the same model."""
    raw = _raw(files, engine)
    rng = np.random.default_rng(12345)
    positions = sorted({*range(0, 400, 9), *rng.integers(0, len(raw), 40).tolist()})
    path = tmp_path / "flipped.nc"
    refused = 0
    for i in positions:
        damaged = bytearray(raw)
        damaged[i] ^= 0xFF
        path.write_bytes(bytes(damaged))
        try:
            back = RVR.load(path)
        except ValueError as exc:
            assert str(path) in str(exc), (i, str(exc))
            refused += 1
        else:  # a byte nobody reads (padding, an unused slot): the model is unchanged
            np.testing.assert_array_equal(back.coef_, fitted.coef_, err_msg=f"byte {i}")
            assert back.idata_.attrs == fitted.idata_.attrs, f"byte {i}"
    assert refused > len(positions) // 2


def _fail_midway(exc: BaseException, directory: Path, seen: list[list[str]]):
    """An ``os.write`` that puts the first 100 bytes on disk, then raises ``exc`` (disk full,
    Ctrl-C); ``seen`` gets the listing of ``directory`` at that moment."""
    real = os.write

    def write(fd, data):
        if not seen:
            seen.append(_listing(directory))
            return real(fd, bytes(data[:100]))
        raise exc

    return write


def _no_space(*args, **kwargs):
    raise OSError(errno.ENOSPC, "No space left on device")


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("stage", ["write", "fsync", "replace", "interrupt"])
def test_failed_save_keeps_previous_file(fitted, tmp_path, monkeypatch, engine, stage):
    """The file is serialised in memory and written with plain ``os.write``: a disk that fills
    (or a Ctrl-C) midway is an OSError naming the path, no temporary file, the old file intact."""
    path = tmp_path / "model.nc"
    fitted.save(path, engine=engine)
    before = path.read_bytes()
    other = RVR(gamma=1.0).fit(np.linspace(0, 1, 12)[:, None], np.linspace(0, 1, 12))
    written: list[list[str]] = []
    if stage in ("write", "interrupt"):
        exc = KeyboardInterrupt() if stage == "interrupt" else _no_space_error()
        monkeypatch.setattr(os, "write", _fail_midway(exc, tmp_path, written))
    else:
        monkeypatch.setattr(os, stage, _no_space)
    expected = KeyboardInterrupt if stage == "interrupt" else OSError
    with pytest.raises(expected) as info:
        other.save(path, engine=engine)
    monkeypatch.undo()
    if stage in ("write", "interrupt"):  # the bytes went to a temporary file beside it
        assert len(written) == 1 and len(written[0]) == 2, written
        tmp = next(name for name in written[0] if name != "model.nc")
        assert tmp.startswith(".model.nc.") and tmp.endswith(".tmp")
    if stage != "interrupt":
        assert info.value.errno == errno.ENOSPC
        assert f"cannot save to {path}" in str(info.value)
    assert path.read_bytes() == before
    assert _listing(tmp_path) == ["model.nc"]  # no temporary file left behind
    np.testing.assert_array_equal(RVR.load(path).coef_, fitted.coef_)


def _no_space_error() -> OSError:
    return OSError(errno.ENOSPC, "No space left on device")


@pytest.fixture
def full_disk(tmp_path):
    """A 200 KB tmpfs mounted at ``tmp_path / "disk"`` (Linux, as root); skipped where the
    mount is not permitted (no root, a container without the capability), never failed."""
    disk = tmp_path / "disk"
    disk.mkdir()
    mount, umount = shutil.which("mount"), shutil.which("umount")
    if not sys.platform.startswith("linux") or mount is None or umount is None:
        pytest.skip("needs Linux and mount(8)")
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    argv = [mount, "-t", "tmpfs", "-o", "size=200k", "tmpfs", str(disk)]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {proc.stderr.strip() or proc.returncode}")
    try:
        yield disk
    finally:
        subprocess.run([umount, str(disk)], capture_output=True, timeout=30)


_SAVE_ON_FULL_DISK = """
import errno, hashlib, json, os, sys
import numpy as np
from rvm_pymc.estimators import RVR

disk = sys.argv[1]
path = os.path.join(disk, "model.nc")
X = np.linspace(-5, 5, 30)[:, None]
RVR(gamma=0.5, draws=50).fit(X, np.sinc(X[:, 0])).save(path)
with open(path, "rb") as fh:
    saved = hashlib.sha256(fh.read()).hexdigest()
with open(os.path.join(disk, "filler"), "wb", buffering=0) as fh:  # fill the file system
    try:
        while True:
            fh.write(b"x" * 1024)
    except OSError as exc:
        assert exc.errno == errno.ENOSPC, exc
other = RVR(gamma=1.0).fit(X, np.cos(X[:, 0]))  # 2 x 2000 draws: far more than is free
try:
    other.save(path)
except OSError as exc:
    print(json.dumps({"errno": exc.errno, "message": str(exc), "sha256": saved}))
else:
    print(json.dumps({"errno": None, "message": "saved", "sha256": saved}))
"""


def test_save_on_a_full_file_system_is_an_oserror(full_disk):
    """A real full disk: the save raises OSError naming the path (HDF5 used to crash the
    process writing its temporary file), leaves no temporary file, keeps the old file."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    run = [sys.executable, "-c", _SAVE_ON_FULL_DISK, str(full_disk)]
    proc = subprocess.run(run, capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, f"status {proc.returncode}\n{proc.stderr[-3000:]}"
    said = json.loads(proc.stdout.strip().splitlines()[-1])
    path = full_disk / "model.nc"
    assert said["errno"] == errno.ENOSPC, said
    assert said["message"] == f"[Errno 28] cannot save to {path}: No space left on device"
    assert _listing(full_disk) == ["filler", "model.nc"]  # no temporary file left
    assert hashlib.sha256(path.read_bytes()).hexdigest() == said["sha256"]  # byte for byte
    old = RVR.load(path)  # the first model
    assert old.gamma_ == 0.5 and old.idata_["posterior"].sizes["draw"] == 50


def test_save_replaces_atomically_and_keeps_mode(fitted, tmp_path):
    path = tmp_path / "model.nc"
    path.write_bytes(b"old contents")
    os.chmod(path, 0o640)
    fitted.save(path, engine="scipy")
    assert path.stat().st_mode & 0o777 == 0o640
    assert _listing(tmp_path) == ["model.nc"]
    np.testing.assert_array_equal(RVR.load(path).coef_, fitted.coef_)


def test_save_through_symlink_replaces_the_target(fitted, tmp_path):
    (tmp_path / "real").mkdir()
    target = tmp_path / "real" / "model.nc"
    target.write_bytes(b"old")
    link = tmp_path / "link.nc"
    link.symlink_to(target)
    fitted.save(link, engine="scipy")
    assert link.is_symlink()
    assert target.read_bytes()[:3] == b"CDF"
    np.testing.assert_array_equal(RVR.load(link).coef_, fitted.coef_)


def _blocked_h5py(monkeypatch):
    monkeypatch.setitem(sys.modules, "h5py", None)


def _read_only_directory_io_robustness(monkeypatch):
    """No new file can be created anywhere (as root, chmod would not stop it)."""
    real_open = os.open

    def denied(path, flags, *args, **kwargs):
        if flags & os.O_CREAT:
            raise PermissionError(errno.EACCES, "Permission denied")
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", denied)


SAVE_FAILURES = [
    # (path relative to tmp_path, engine, setup, exception, phrase)
    pytest.param("missing/model.nc", None, None, FileNotFoundError, "does not exist",
                 id="missing-directory"),
    pytest.param("adir", None, "mkdir", IsADirectoryError, "is a directory",
                 id="path-is-directory"),
    pytest.param("model.nc", "zarr", None, ValueError, "engine must be one of",
                 id="unknown-engine"),
    pytest.param("model.nc", "h5netcdf", _blocked_h5py, ImportError, "needs the modules",
                 id="engine-without-h5py"),
    pytest.param("model.nc", "scipy", _read_only_directory_io_robustness, PermissionError,
                 "Permission denied", id="unwritable-directory"),
]  # fmt: skip


@pytest.mark.parametrize(("name", "engine", "setup", "exc", "phrase"), SAVE_FAILURES)
def test_save_failures(fitted, tmp_path, monkeypatch, name, engine, setup, exc, phrase):
    path = tmp_path / name
    if setup == "mkdir":
        path.mkdir()
    elif setup is not None:
        setup(monkeypatch)
    with pytest.raises(Exception) as info:
        fitted.save(path, engine=engine)
    assert type(info.value) is exc, f"{type(info.value).__name__}: {info.value}"
    assert phrase in str(info.value)
    if exc is not ValueError and exc is not ImportError:
        assert str(path) in str(info.value)
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []


def test_rows_not_placed_on_file_lines_are_listed_as_data_rows():
    import pandas as pd

    from rvm_pymc.cli._data import _LINES, bad_rows, listed

    table = pd.DataFrame({"a": [1.0, 2.0, 3.0]})  # no file lines known
    assert listed(table, np.array([0, 2])) == "2 data rows: 1, 3"
    assert bad_rows(table, np.array([0, 2])) == "data row 1 (2 such data rows: 1, 3)"
    table.attrs[_LINES] = np.array([2, 3, 5])
    assert bad_rows(table, np.array([0, 2])) == "line 2 (2 such lines: 2, 5)"
