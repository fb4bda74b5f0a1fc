"""The numbers the notebooks' prose quotes come from their stored outputs.

Every decimal number in a Markdown cell (``0.823``, ``74.1``, ``4.7%``) must
be, at the decimals it is written with, a number some output of the same
notebook prints (a percentage: that number or a hundredth of it), unless it is
listed in :data:`NOT_FROM_OUTPUTS` with where it comes from.  Re-executing a
notebook without updating its prose fails here.  Reads the stored notebooks
only: no kernel, no fit.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
PROSE_NUMBER = re.compile(r"(?<![\w.^])(\d+\.\d+)(?![\w.])(%?)")
OUTPUT_NUMBER = re.compile(r"\d+(?:\.\d+)?(?:e[-+]?\d+)?")
NOT_FROM_OUTPUTS = {
    "01_regression_workflow": {
        "1.019": "R-hat of the notebook's earlier, shorter chains",
        "1.01": "the package's R-hat threshold",
    },
    "02_classification": {"0.5": "Tipping's (2001) kernel width", "9.3%": "Tipping's error"},
    "03_mcmc_vs_evidence": {"0.95": "the nominal coverage of a 95% band"},
    "06_custom_basis": {"1.96": "the normal quantile of a 95% band"},
    "08_width_by_cv_or_evidence": {
        "0.049": "the coursework's CV R^2 at the evidence's RBF width on Friedman #3",
        "0.765": "the coursework's CV R^2 at CV's RBF width on Friedman #3",
        "0.095": "the coursework's test R^2 at the evidence's RBF width on Friedman #3",
        "0.478": "the coursework's CV R^2 at the evidence's RBF width on Boston",
        "0.862": "the coursework's CV R^2 at CV's RBF width on Boston",
    },
}


def _outputs(nb) -> list[float]:
    texts = []
    for cell in nb.cells:
        for out in cell.get("outputs", []) if cell.cell_type == "code" else []:
            texts.append(out.get("text", ""))
            texts.append(out.get("data", {}).get("text/plain", ""))
    return [float(m) for t in texts for m in OUTPUT_NUMBER.findall(t)]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_numbers_in_the_prose_are_in_the_outputs(path):
    nbformat = pytest.importorskip("nbformat")
    nb = nbformat.read(path, as_version=4)
    printed = _outputs(nb)
    allowed = NOT_FROM_OUTPUTS.get(path.stem, {})
    stale = []
    for cell in nb.cells:
        if cell.cell_type != "markdown":
            continue
        for text, percent in PROSE_NUMBER.findall(cell.source):
            if text + percent in allowed:
                continue
            x, decimals = float(text), len(text.split(".")[1])
            candidates = printed + ([100 * v for v in printed] if percent else [])
            if not any(round(v, decimals) == x for v in candidates):
                at = cell.source.index(text)
                stale.append(f"{text}{percent} in '...{cell.source[max(0, at - 50) : at + 10]}'")
    assert not stale, f"{path.name}: prose numbers no output prints: {stale}"


def test_the_exceptions_are_still_quoted():
    nbformat = pytest.importorskip("nbformat")
    for stem, numbers in NOT_FROM_OUTPUTS.items():
        prose = " ".join(
            c.source for c in nbformat.read(ROOT / "notebooks" / f"{stem}.ipynb", 4).cells
            if c.cell_type == "markdown"
        )  # fmt: skip
        for number in numbers:
            assert number in prose, f"{stem}: {number} is no longer quoted; drop it from the list"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_compile_notes_are_shown_once(path):
    """A cross-validation's refits do not repeat the compile and NUTS notes of the first fit."""
    nbformat = pytest.importorskip("nbformat")
    nb = nbformat.read(path, as_version=4)
    streams = "".join(
        out.get("text", "")
        for cell in nb.cells if cell.cell_type == "code"
        for out in cell.get("outputs", []) if out.get("name") == "stderr"
    )  # fmt: skip
    for note in ("Initializing NUTS", "Sampling 2 chains"):
        assert streams.count(note) <= 1, f"{path.name}: {note!r} {streams.count(note)} times"
    # a MAP fit and a NUTS fit compile two models: two compile notes, neither repeated
    compiles = [ln for ln in streams.splitlines() if ln.startswith("Compiling the ")]
    assert len(compiles) == len(set(compiles)), f"{path.name}: repeated {compiles}"


def _markdown(nb) -> str:
    return "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")


def _stdout(nb) -> str:
    return "".join(
        out.get("text", "")
        for cell in nb.cells if cell.cell_type == "code"
        for out in cell.get("outputs", []) if out.get("name") == "stdout"
    )  # fmt: skip


def test_a_width_credited_to_another_notebook_is_the_width_it_prints():
    """``gamma = v``, "the width of largest evidence in notebook NN": NN prints ``gamma v``."""
    nbformat = pytest.importorskip("nbformat")
    claim = re.compile(r"gamma = ([\d.]+)`?,\s+the width of largest\s+evidence in notebook (\d\d)")
    for path in NOTEBOOKS:
        for value, other in claim.findall(" ".join(_markdown(nbformat.read(path, 4)).split())):
            (cited,) = (ROOT / "notebooks").glob(f"{other}_*.ipynb")
            printed = re.findall(r"gamma ([\d.]+)", _stdout(nbformat.read(cited, 4)))
            assert value in printed, (
                f"{path.name} calls gamma = {value} the width of largest evidence in "
                f"{cited.name}, which prints gamma {printed}"
            )


# what a duration phrase of the prose allows, in seconds (low inclusive, high exclusive)
DURATIONS = {
    "a fraction of a second": (0.0, 1.0),
    "a few seconds": (1.0, 10.0),
    "several seconds": (1.0, 60.0),
}


def test_the_cost_of_each_fit_in_notebook_03_is_worded_as_printed():
    """The "Cost" bullet's phrase for the reference fit, MAP and NUTS fits the printed times."""
    nbformat = pytest.importorskip("nbformat")
    nb = nbformat.read(ROOT / "notebooks" / "03_mcmc_vs_evidence.ipynb", 4)
    printed = dict(re.findall(r"^(reference|map|nuts \(wi\))\s+([\d.]+) s$", _stdout(nb), re.M))
    prose = " ".join(_markdown(nb).split())
    cost = prose.split("**Cost**:", 1)[1].split("* **", 1)[0]
    phrases = "|".join(map(re.escape, DURATIONS))
    for name, key in (("reference fit", "reference"), ("MAP", "map"), ("NUTS", "nuts (wi)")):
        said = re.search(phrases, cost[cost.index(name) :]).group(0)
        low, high = DURATIONS[said]
        assert low <= float(printed[key]) < high, f"{name}: '{said}', printed {printed[key]} s"
