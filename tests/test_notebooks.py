"""Every notebook in notebooks/ runs top to bottom without error, and is stored with its outputs.

All of them run in the default suite (the NUTS notebooks 01, 03 and 06 with small
draws: about two minutes together on a warm PyTensor cache on 2 cores).
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


@pytest.mark.parametrize("path", list(_params()))
def test_notebook_runs(path, tmp_path):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(
        nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    )
    client.execute()
    assert not _errors(nb)


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
