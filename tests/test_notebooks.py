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


def test_notebook_01_ppc_sorts_by_x_and_its_titles_do_not_overlap():
    """The PPC cell of notebook 01, run on made-up replicates: its statistics are of the
    targets sorted by x, and no two panels' titles overlap (three long titles in a row did)."""
    import importlib.util
    import itertools
    from types import SimpleNamespace

    import matplotlib.pyplot as plt
    import numpy as np

    spec = importlib.util.spec_from_file_location("nb_build", ROOT / "notebooks" / "_build.py")
    build = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build)
    cells = build.parse((ROOT / "notebooks" / "_src" / "01_regression_workflow.py").read_text())
    (cell,) = [src for kind, src in cells if kind == "code" and "replicate >= observed" in src]
    rng = np.random.default_rng(0)
    x = np.linspace(-10, 10, 100)
    t = np.sinc(x / np.pi) + 0.1 * rng.standard_normal(100)
    replicates = SimpleNamespace(values=t + rng.normal(0, 0.1, (2, 50, 100)))
    tree = SimpleNamespace(posterior_predictive={"t_obs": replicates})  # what the cell reads
    shown = []
    namespace = {
        "np": np,
        "plt": SimpleNamespace(subplots=plt.subplots, show=lambda: shown.append(plt.gcf())),
        "x": x,
        "t": t,
        "order": np.arange(13),  # the notebook's earlier `order`: the evidence path's widths
        "nuts": SimpleNamespace(idata_=tree),
    }
    exec(cell, namespace)  # the notebook's own code
    # the autocorrelation is of all the targets sorted by x (it read the 13 the earlier
    # `order` picked)
    d = t - t.mean()  # x is sorted already
    lag1 = np.mean(d[1:] * d[:-1]) / d.var()
    assert namespace["obs"]["lag-1 autocorrelation"] == pytest.approx(lag1, rel=1e-12)
    (fig,) = shown
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    boxes = [ax.title.get_window_extent(renderer) for ax in fig.axes]
    assert len(boxes) == 3
    for a, b in itertools.pairwise(boxes):
        assert a.x1 <= b.x0, f"titles overlap: {a} and {b}"
    plt.close(fig)
