"""Every notebook in notebooks/ runs top to bottom without error, and is stored with its outputs.

Every notebook runs in the default suite, the estimators' NUTS fits at a short
length: an injected first cell sets the default ``draws`` and ``tune`` of the
estimators to ``QUICK_DRAWS`` (notebook 03 alone fits NUTS six times: 5-7
minutes at the default 2000 draws on a loaded 2-core machine).  Under ``-m slow``
they run again as published, at the estimators' defaults.  The stored outputs
(checked below and by tests/test_notebook_prose.py) are of the full run.
"""

from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def _params():
    for path in NOTEBOOKS:
        yield pytest.param(path, id=path.name)


def _errors(nb):
    return [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
            if o.get("output_type") == "error"]  # fmt: skip


QUICK_DRAWS = 200
"""Default ``draws`` and ``tune`` of the estimators in the default suite's runs."""

_QUICK_CELL = f"""\
import rvm_pymc.estimators as _est

for _name in ("RVR", "RVC", "RVP"):
    _init = getattr(getattr(_est, _name, None), "__init__", None)
    _defaults = getattr(_init, "__kwdefaults__", None) or {{}}
    if "draws" in _defaults:  # the signature's defaults, so that clones keep them
        _defaults.update(draws={QUICK_DRAWS}, tune={QUICK_DRAWS})
print("quick", _est.RVR().draws, _est.RVC().tune)
"""


def _run(path, tmp_path, *, quick: bool):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    nb = nbformat.read(path, as_version=4)
    if quick:
        nb.cells.insert(0, nbformat.v4.new_code_cell(_QUICK_CELL))
    client = nbclient.NotebookClient(
        nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    )
    client.execute()
    assert not _errors(nb)
    if quick:  # the short defaults reached the estimators
        want = ["quick", str(QUICK_DRAWS), str(QUICK_DRAWS)]
        assert nb.cells[0].outputs[0]["text"].split() == want


@pytest.mark.parametrize("path", list(_params()))
def test_notebook_runs(path, tmp_path):
    _run(path, tmp_path, quick=True)


@pytest.mark.slow
@pytest.mark.parametrize("path", list(_params()))
def test_notebook_runs_as_published(path, tmp_path):
    _run(path, tmp_path, quick=False)


def test_notebooks_are_stored_with_outputs_and_built_from_their_sources():
    nbformat = pytest.importorskip("nbformat")
    import importlib.util

    spec = importlib.util.spec_from_file_location("nb_build", ROOT / "notebooks" / "_build.py")
    build = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build)
    sources = sorted(p.stem for p in (ROOT / "notebooks" / "_src").glob("[0-9]*.py"))
    assert sources == [p.stem for p in NOTEBOOKS]
    for path in NOTEBOOKS:
        nb = nbformat.read(path, as_version=4)
        code = [c for c in nb.cells if c.cell_type == "code"]
        assert code and all(c.get("execution_count") for c in code), f"{path.name} not executed"
        assert not _errors(nb), f"{path.name} was stored with an error"
        fresh = build.build(ROOT / "notebooks" / "_src" / f"{path.stem}.py")
        assert [c.source for c in fresh.cells] == [c.source for c in nb.cells], (
            f"{path.name} differs from notebooks/_src/{path.stem}.py: "
            f"run python notebooks/_build.py {path.stem[:2]}"
        )


def test_there_are_notebooks():
    assert NOTEBOOKS, "notebooks/ holds no notebook"
