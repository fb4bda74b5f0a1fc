"""``rvm-pymc`` under bad input: one line on stderr, the right exit status, no traceback.

Run in-process (``main([...])`` with capsys).  Bad usage is refused before any
fitting: the table's exit-2 cases replace the fit by a function that fails the
test if it is called.
"""

from __future__ import annotations

import errno
import os
import re
import subprocess
import sys
import warnings

import numpy as np
import pytest

import rvm_pymc
import rvm_pymc.reference
from rvm_pymc.cli import _demo as demo
from rvm_pymc.cli import _main as cli

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


# --------------------------------------------------------------- failed runs


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


# ------------------------------------------------------- help, version, bare


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


# ------------------------------------------------------- fit / predict / compare on bad data


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
