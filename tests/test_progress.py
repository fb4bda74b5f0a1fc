"""Progress of a NUTS fit in a terminal and in a log, as a user of ``rvm-pymc`` sees it.

``rvm-pymc fit --method nuts`` with standard error redirected to a file must
write plain progress lines there (every 10% of each chain's iterations) and
one line at the end with the time, max R-hat and divergences; standard
output keeps the results alone.  On a terminal (``script`` gives the command
one) PyMC's live bar is drawn on standard error, never into a redirected
standard output.  :class:`rvm_pymc._core.progress.DrawLines` is checked on
made-up draws.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections import namedtuple
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
Draw = namedtuple("Draw", ["chain", "is_last", "draw_idx", "tuning", "stats", "point"])
RICH = ("Progress", "Divergences", "Elapsed", "━", "…")  # PyMC's rich table and bar


def _csv(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    x = rng.uniform(-3, 3, 20)
    pd.DataFrame({"x": x, "y": np.sin(x) + 0.1 * rng.normal(size=20)}).to_csv(tmp_path / "t.csv")


FIT = ["-m", "rvm_pymc", "fit", "t.csv", "--target", "y", "--method", "nuts", "--draws",
       "50", "--tune", "50", "--gamma", "0.5", "--no-plot", "--out", "run"]  # fmt: skip
# COLUMNS / LINES (pytest-xdist sets 80 x 24) would override the width stty gives the terminal
ENV = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
ENV |= {"PYTHONPATH": str(ROOT), "OPENBLAS_NUM_THREADS": "1"}


@pytest.mark.pymc
def test_nuts_progress_in_a_log_is_plain_lines_on_stderr(tmp_path):
    _csv(tmp_path)
    with open(tmp_path / "out.txt", "w") as out, open(tmp_path / "err.txt", "w") as err:
        proc = subprocess.run([sys.executable, *FIT], stdout=out, stderr=err, cwd=tmp_path,
                              env=ENV, timeout=600)  # fmt: skip
    stdout, stderr = (tmp_path / "out.txt").read_text(), (tmp_path / "err.txt").read_text()
    assert proc.returncode == 0, stderr
    for chain in (1, 2):
        got = re.findall(rf"^NUTS chain {chain}/2: (\d+)/100 \((tuning|sampling)\), "
                         r"(\d+) divergences, \d+ s elapsed$", stderr, re.M)  # fmt: skip
        assert [int(n) for n, _, _ in got] == list(range(10, 101, 10)), stderr
        assert [phase for n, phase, _ in got] == ["tuning"] * 5 + ["sampling"] * 5
    done = re.findall(r"^NUTS done: 2 chains of 50 tuning \+ 50 draws in [\d.]+ s; "
                      r"max R-hat ([\d.]+), (\d+) divergences$", stderr, re.M)  # fmt: skip
    assert len(done) == 1, stderr
    summary = pd.read_json(tmp_path / "run" / "summary.json", typ="series")
    assert float(done[0][0]) == pytest.approx(summary["max_rhat"], abs=5e-4)
    assert int(done[0][1]) == summary["n_divergent"]
    assert (
        f"(max R-hat {summary['max_rhat']:.3f}, {int(summary['n_divergent'])} divergences)"
        in stderr
    )  # the CLI's own last line
    assert stdout.startswith("rvm-pymc fit: regression of 'y' on t.csv\n")
    assert not any(mark in stdout + stderr for mark in RICH)


@pytest.mark.pymc
@pytest.mark.skipif(shutil.which("script") is None, reason="needs util-linux's script")
def test_nuts_progress_on_a_terminal_is_a_bar_on_stderr_not_stdout(tmp_path):
    _csv(tmp_path)
    cmd = " ".join([sys.executable, *FIT]) + " > out.txt"  # stderr: the pseudo-terminal
    proc = subprocess.run(["script", "-qec", f"stty cols 150; {cmd}", "terminal.txt"],
                          cwd=tmp_path, env=ENV, timeout=600, stdin=subprocess.DEVNULL,
                          capture_output=True)  # fmt: skip
    terminal = (tmp_path / "terminal.txt").read_text(errors="replace")
    assert proc.returncode == 0, terminal
    stdout = (tmp_path / "out.txt").read_text()
    assert stdout.startswith("rvm-pymc fit: regression of 'y' on t.csv\n")
    assert not any(mark in stdout for mark in RICH)
    assert "Progress" in terminal and "Divergences" in terminal  # 150 columns: with stats
    assert "NUTS chain 1/2" not in terminal  # a live bar, not the lines of a log
    assert re.search(r"fitted in [\d.]+ s \(max R-hat [\d.]+, \d+ divergences\)", terminal)
