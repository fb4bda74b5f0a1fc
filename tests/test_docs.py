"""The documentation site builds in strict mode, and its pages are there.

The build is Sphinx's ``-W --keep-going -n``: any warning, broken reference or
missing reference fails it. It takes about 40 s on a 2-core machine; the site
is built once for the whole module.
"""

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
DOCS_EXTRA = ("sphinx", "myst_nb", "pydata_sphinx_theme", "numpydoc", "sphinx_copybutton")

# text that would point a reader outside the repository
OUTSIDE = re.compile(r"DESIGN\.md|\.\./shared|/work/|/tmp/|\b[Ii]ssue \d+\b")
# machine paths (of this checkout, of a kernel, of an installation): no rendered page shows one
MACHINE_PATH = re.compile(r"/work/|/tmp/|/root/|site-packages")
# internal ticket numbers, which a reader of the site cannot look up
TICKET = re.compile(r"\bissues? #?\d", re.IGNORECASE)


def _docs_sources() -> list[Path]:
    """The docs pages the project writes (not the build output, not the linked notebooks)."""
    return sorted(
        p
        for p in DOCS.rglob("*")
        if p.suffix in {".md", ".py"}
        and "_build" not in p.parts
        and DOCS / "notebooks" not in p.parents
    )


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    missing = [m for m in DOCS_EXTRA if importlib.util.find_spec(m) is None]
    if missing:
        if os.environ.get("CI"):
            pytest.fail(f"the docs extra is not installed in CI (missing: {missing})")
        pytest.skip(
            f"the docs extra is not installed (missing: {missing}); "
            'python -m pip install -e ".[docs]"'
        )
    out = tmp_path_factory.mktemp("html")
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1", OMP_NUM_THREADS="1")
    cmd = [
        sys.executable,
        "-m",
        "sphinx",
        "-W",
        "--keep-going",
        "-n",
        "-q",
        "-b",
        "html",
        "-d",
        str(out / ".doctrees"),
        str(DOCS),
        str(out),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=env, timeout=900)
    assert proc.returncode == 0, (
        "strict docs build failed:\n" + proc.stderr[-6000:] + proc.stdout[-2000:]
    )
    return out


def test_docs_build_strict(site):
    assert (site / "index.html").is_file()
    assert (site / "objects.inv").is_file()


@pytest.mark.parametrize(
    "page",
    [
        "getting_started",
        "csv_in_five_minutes",
        "model",
        "fits",
        "jacobian",
        "comparison",
        "cli",
        "design",
        "estimators",
        "pymc",
        "reference_solver",
        "notebooks",
        "api/index",
        "benchmarks/README",
    ],
)
def test_page_is_built(site, page):
    html = (site / f"{page}.html").read_text(encoding="utf-8")
    assert "<h1" in html


def test_api_reference_documents_the_estimators(site):
    html = (site / "api" / "estimators.html").read_text(encoding="utf-8")
    for name in (
        "rvm_pymc.estimators.RVR",
        "rvm_pymc.estimators.RVC",
        "rvm_pymc.estimators.RVR.fit",
        "rvm_pymc.estimators.RVR.predict",
        "rvm_pymc.estimators.RVR.sample_predictions",
    ):
        assert f'id="{name}"' in html, name
    reference = (site / "api" / "reference.html").read_text(encoding="utf-8")
    assert 'id="rvm_pymc.reference.fit_regression"' in reference


def test_every_notebook_is_rendered_with_its_outputs(site):
    assert NOTEBOOKS
    for nb in NOTEBOOKS:
        page = site / "notebooks" / f"{nb.stem}.html"
        assert page.is_file(), f"{nb.name} is not rendered"
        html = page.read_text(encoding="utf-8")
        # myst-nb wraps every stored output in a "cell_output" block
        assert "cell_output" in html, (
            f"{nb.name} has no stored outputs on its page: the site shows the outputs "
            f"committed with it (jupyter execute --inplace notebooks/{nb.name})"
        )


def test_docs_point_inside_the_repository():
    sources = _docs_sources()
    assert any(p.name == "index.md" for p in sources)
    bad = [
        f"{p.relative_to(ROOT)}:{i}: {line.strip()}"
        for p in sources
        for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if OUTSIDE.search(line)
    ]
    assert not bad, "docs text points outside the repository:\n" + "\n".join(bad)


def _output_texts(output: dict) -> list[str]:
    """The text an output shows: stream text, a traceback, text representations (not images)."""
    texts = [output.get("text", ""), *output.get("traceback", [])]
    for mime, value in output.get("data", {}).items():
        if mime.startswith("text/") or mime.endswith("json"):
            texts.append(value if isinstance(value, str) else "".join(map(str, value)))
    return [t if isinstance(t, str) else "".join(t) for t in texts]


def test_rendered_notebooks_show_no_machine_paths():
    """Stored outputs are rendered as they are: warnings must not print a file path."""
    nbformat = pytest.importorskip("nbformat")
    assert NOTEBOOKS
    bad = []
    for path in NOTEBOOKS:
        nb = nbformat.read(path, as_version=4)
        for cell in nb.cells:
            outputs = cell.get("outputs", [])
            texts = [cell.source] + [t for o in outputs for t in _output_texts(o)]
            for text in texts:
                for line in text.splitlines():
                    if MACHINE_PATH.search(line) or TICKET.search(line):
                        bad.append(f"{path.name} cell {cell.get('id')}: {line.strip()[:160]}")
    assert not bad, "notebooks show machine paths or ticket numbers:\n" + "\n".join(bad)


def test_benchmark_pages_show_no_machine_paths_or_ticket_numbers():
    """``benchmarks/**/*.md`` are rendered as pages of the site (docs/conf.py)."""
    pages = sorted((ROOT / "benchmarks").rglob("*.md"))
    assert any(p.name == "README.md" for p in pages)
    bad = [
        f"{p.relative_to(ROOT)}:{i}: {line.strip()}"
        for p in pages
        for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if MACHINE_PATH.search(line) or TICKET.search(line)
    ]
    assert not bad, "benchmark pages show machine paths or ticket numbers:\n" + "\n".join(bad)


def test_parameter_table_defaults_are_the_code_defaults():
    """Every default of the estimators' parameter table is the constructor's, or refers to it."""
    from rvm_pymc.estimators import RVR

    text = (DOCS / "estimators.md").read_text(encoding="utf-8")
    table = text.split("## Parameters (both estimators)", 1)[1].split("\n## ", 1)[0]
    defaults = RVR().get_params(deep=False)
    checked = set()
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 3 or not cells[0].startswith("`"):
            continue
        names = re.findall(r"`(\w+)`", cells[0])
        if "{class}" in cells[1]:  # the default is the API reference's, not restated
            assert "RVR" in cells[1], line
            checked.update(names)
            continue
        values = [v.strip().strip("`") for v in cells[1].split(",")]
        assert len(values) == len(names), line
        for name, value in zip(names, values, strict=True):
            code = defaults[name]
            if isinstance(code, float):
                assert float(value) == code, f"{name}: the table says {value}, the code {code!r}"
            else:
                assert value == (f'"{code}"' if isinstance(code, str) else str(code)), (
                    f"{name}: the table says {value}, the code {code!r}"
                )
            checked.add(name)
    assert {"gamma", "kernel", "bias", "method", "solver", "init"} <= checked


def test_readme_says_how_to_get_the_pinned_python():
    """A fresh machine without the version of ``.python-version`` learns how to get it."""
    pinned = (ROOT / ".python-version").read_text(encoding="utf-8").strip()
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    fresh = readme.split("## Fresh machine", 1)[1].split("\n## ", 1)[0]
    for command in (f"uv python install {pinned}", f"pyenv install {pinned}"):
        assert command in fresh, f"README's 'Fresh machine' does not say {command!r}"
    assert f"python{pinned} -m venv" in fresh  # a distribution's package
