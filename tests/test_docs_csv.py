"""The page "A CSV in five minutes" shows what its commands print.

The page's Python block writes the CSV files; each ``rvm-pymc`` command (and
the ``head`` of the predictions) runs again through ``python -m rvm_pymc``, and
its output must be the text block that follows it on the page, but for the
seconds a run took (the ``fit seconds`` line, the ``fitted in`` note and
compare's ``fit_time`` column) and the state of PyTensor's compile cache.
The excerpt of the default fit's summary must be lines of what that fit
prints.
"""

from __future__ import annotations

import itertools
import math
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "csv_in_five_minutes.md"
BLOCK = re.compile(r"^```(\w+)\n(.*?)^```$", re.S | re.M)
TIMED = ("fit seconds", "fitted in")


def _blocks() -> list[tuple[str, str]]:
    """``(language, text)`` of the page's code blocks; a block that directly follows the one
    before it (nothing but blank lines between) is joined to it as ``"+text"``/``"+output"``."""
    page = PAGE.read_text()
    out, end = [], None
    for m in BLOCK.finditer(page):
        joined = end is not None and not page[end : m.start()].strip()
        out.append(("+" * joined + m.group(1), m.group(2).rstrip("\n")))
        end = m.end()
    return out


def _run(command: str, cwd: Path) -> str:
    argv = shlex.split(command)
    if argv[0] == "head":  # head -3 FILE
        lines = (cwd / argv[2]).read_text().splitlines()
        return "\n".join(lines[: int(argv[1].lstrip("-"))])
    assert argv[0] == "rvm-pymc", command
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OPENBLAS_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, "-m", "rvm_pymc", *argv[1:]], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return (proc.stderr + proc.stdout).rstrip("\n")  # as a terminal shows them: notes first


COMPILING = "building and compiling the PyMC model ("
"""The compile line says whether PyTensor's cache is empty: it depends on the machine's
past, so only the words before the parenthesis are compared."""


def _untimed(text: str) -> list[str]:
    """The lines without the seconds of a run (compare's fit_time column dropped) and
    without the state of the compile cache."""
    lines = [ln for ln in text.splitlines() if not any(t in ln for t in TIMED)]
    lines = [ln.split(COMPILING)[0] + COMPILING if COMPILING in ln else ln for ln in lines]
    header = next((ln.split() for ln in lines if ln.split()[:2] == ["method", "prior"]), None)
    if header is None:
        return lines
    at = header.index("fit_time")
    table = [ln for ln in lines if ln.split()[:1] == ["method"] or " evidence " in ln]
    return [" ".join(w for i, w in enumerate(ln.split()) if i != at) if ln in table else ln
            for ln in lines]  # fmt: skip


def _same(got: list[str], shown: list[str]) -> bool:
    """The same lines, numbers equal to 1e-9 relative (CPUs round the last digits apart:
    a prediction printed as 223.36746796780713 on one machine is 223.367467967807 on another)."""

    def close(a: str, b: str) -> bool:
        if a == b:
            return True
        try:
            return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-12)
        except ValueError:
            return a == b

    def tokens(line: str) -> list[str]:
        return re.split(r"[\s,]+", line.strip())

    return len(got) == len(shown) and all(
        len(tokens(g)) == len(tokens(s)) and all(map(close, tokens(g), tokens(s)))
        for g, s in zip(got, shown, strict=True)
    )


@pytest.mark.pymc
def test_the_page_shows_what_its_commands_print(tmp_path):
    blocks = _blocks()
    code = [body for lang, body in blocks if lang.lstrip("+") == "python"]
    assert len(code) == 1
    subprocess.run([sys.executable, "-c", code[0]], cwd=tmp_path, check=True, timeout=300)
    assert (tmp_path / "diabetes.csv").read_text().startswith(",age,sex,bmi")  # an index
    checked = []
    for k, (lang, body) in enumerate(blocks):
        if lang != "bash":
            continue
        # what it prints: the text (wrapped) and output (tables) blocks right after it
        after = itertools.takewhile(lambda b: b[0] in ("+text", "+output"), blocks[k + 1 :])
        shown = "\n".join(text for _, text in after)
        got = _run(body, tmp_path)
        assert _same(_untimed(got), _untimed(shown)), f"{body}\n--- printed now:\n{got}"
        checked.append(body.split()[1])
    assert checked == ["fit", "-3", "predict", "compare"]


def test_the_page_quotes_the_default_fit(tmp_path):
    """The excerpt of the default fit (gamma 'auto': cross-validated): lines of its summary."""
    blocks = _blocks()
    code = next(body for lang, body in blocks if lang.lstrip("+") == "python")
    subprocess.run([sys.executable, "-c", code], cwd=tmp_path, check=True, timeout=300)
    # the three-line excerpt of the default fit's summary (the block that starts at gamma)
    excerpt = next(b for lang, b in blocks if lang.endswith("text") and b.startswith("  gamma "))
    got = _run("rvm-pymc fit diabetes.csv --target target --out default --no-plot", tmp_path)
    for line in excerpt.splitlines():
        assert line in got.splitlines(), line
