"""Sphinx configuration of the rvm_pymc documentation site.

Build (strict: any warning, broken or missing reference fails)::

    python -m pip install -e ".[docs]"
    sphinx-build -W --keep-going -n -b html docs docs/_build/html

The notebooks are rendered with their stored outputs (``nb_execution_mode =
"off"``); the test suite executes them separately (``tests/test_notebooks.py``).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from pathlib import Path

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.util.docutils import SphinxDirective

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
# importing the package's PyMC layer compiles nothing, but keep BLAS quiet on small machines
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import rvm_pymc  # noqa: E402

DOCS = Path(__file__).resolve().parent


def _write_benchmark_pages() -> None:
    """Mirror every Markdown file of ``benchmarks/`` as a page of ``docs/benchmarks/``.

    Each page only includes its file, at the same relative place, so the links
    between the benchmark pages work on the site as in the repository. The
    pages are generated here (``docs/benchmarks/`` is not committed), so a
    table added to ``benchmarks/`` appears without a change to the docs.
    """
    src, dst = ROOT / "benchmarks", DOCS / "benchmarks"
    pages = sorted(p.relative_to(src) for p in src.rglob("*.md"))
    wanted = {}
    for rel in pages:
        up = "../" * (len(rel.parts) + 1)
        wanted[rel] = f"```{{include}} {up}benchmarks/{rel.as_posix()}\n```\n"
    others = [rel.with_suffix("").as_posix() for rel in pages if rel != Path("README.md")]
    if Path("README.md") in wanted and others:
        wanted[Path("README.md")] += "\n```{toctree}\n:hidden:\n\n" + "\n".join(others) + "\n```\n"
    for old in dst.rglob("*.md") if dst.is_dir() else []:
        if old.relative_to(dst) not in wanted:
            old.unlink()
    for rel, text in wanted.items():
        target = dst / rel
        if not target.is_file() or target.read_text(encoding="utf-8") != text:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")


_write_benchmark_pages()

project = "rvm_pymc"
author = "the rvm_pymc developers"
copyright = "2026, the rvm_pymc developers"
release = rvm_pymc.__version__
version = release

extensions = [
    "myst_nb",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
    "numpydoc",
    "sphinx_copybutton",
]
# MathJax shipped with the site, so formulas render without network access
# (otherwise Sphinx loads MathJax from a CDN)
if importlib.util.find_spec("sphinx-mathjax-offline") is not None:
    extensions.append("sphinx-mathjax-offline")

source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}
root_doc = "index"
exclude_patterns = [
    "_build",
    "**.ipynb_checkpoints",
    "notebooks/_build.py",
]

# -- MyST / myst-nb ----------------------------------------------------------
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "deflist"]
myst_heading_anchors = 3
# the notebooks are committed with their outputs; the tests execute them
nb_execution_mode = "off"
nb_merge_streams = True

# -- autodoc / numpydoc ------------------------------------------------------
autodoc_default_options = {"members": True, "member-order": "bysource"}
autodoc_typehints = "none"  # the numpydoc "Parameters" sections state the types
autodoc_mock_imports: list[str] = []
autosummary_generate = False
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False
numpydoc_validation_checks: set[str] = set()

# -- strict mode ---------------------------------------------------------------
nitpicky = True
# No intersphinx (the build must work without network access): references to
# third-party and builtin objects cannot be resolved and are not errors.
_EXTERNAL = (
    r"(numpy|np|scipy|sklearn|xarray|xr|arviz|az|pymc|pm|pytensor|pt|matplotlib|plt|"
    r"pandas|pd|collections|typing|typing_extensions|builtins|dataclasses|pathlib|os|"
    r"numbers|abc|enum|warnings|joblib)(\..*)?"
)
nitpick_ignore_regex = [
    (r"py:.*", _EXTERNAL),
    # private modules and helpers are not part of the documented API (a private part
    # anywhere in the path: rvm_pymc._core.gaussian, rvm_pymc.inference._map.MapResult)
    (r"py:.*", r"(rvm_pymc\.)?_.*"),
    (r"py:.*", r"rvm_pymc(\.\w+)*\._\w+(\.\w+)*"),
    # modules one layer offers the layers above it, not users
    (r"py:.*", r"rvm_pymc\.(models\.(data|spec)|comparison\.predictive)(\..*)?"),
    (r"py:.*", r"NEAR_IMPROPER"),
    # scikit-learn fitted attributes that are properties of a base class
    (r"py:obj", r"[a-z][a-z_]*_"),
    (
        r"py:.*",
        r"(int|float|str|bool|bytes|dict|list|tuple|set|object|type|callable|None|"
        r"Exception|ValueError|TypeError|UserWarning|RuntimeWarning|Warning|"
        r"DeprecationWarning|ArithmeticError|LinAlgError|Path|Any|Callable|Mapping|"
        r"Sequence|Iterable|Iterator|ArrayLike|NDArray|Self|Literal|Optional|Union)",
    ),
]

# -- HTML ------------------------------------------------------------------------
# numpydoc renames the citations of a "References" section; those the text
# does not cite (a plain bibliography) are not an error
suppress_warnings = ["ref.citation"]

html_theme = "pydata_sphinx_theme"
html_title = f"rvm_pymc {release}"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "secondary_sidebar_items": ["page-toc"],
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version", "theme-version"],
}
html_static_path = ["_static"]
html_css_files = ["custom.css"]  # a wider article column; text blocks wrap
html_show_sourcelink = False
# The left sidebar lists the pages of the current section.  A page of the top level
# (index, getting_started, cli, ...) has none: the sidebar would show an empty "Section
# Navigation", so those pages have none ('*' does not match a '/'); the sections
# (api/, notebooks/, benchmarks/) keep theirs.
html_sidebars = {"*": []}


class OptionalAutomodule(SphinxDirective):
    """``.. optional-automodule:: name``: ``automodule`` with ``:members:`` if ``name`` imports.

    The comparison page documents a module that is written in parallel with the
    site; when it is missing (or fails to import) the page says so instead of
    failing the strict build.
    """

    required_arguments = 1
    has_content = False

    def run(self) -> list[nodes.Node]:
        name = self.arguments[0]
        try:
            importlib.import_module(name)
        except Exception as exc:  # any import failure is reported on the page
            text = f"{name} could not be imported when these pages were built ({exc})."
            return [nodes.note("", nodes.paragraph(text=text))]
        content = StringList(
            [f".. automodule:: {name}", "   :members:"], source=self.get_source_info()[0]
        )
        container = nodes.container()
        self.state.nested_parse(content, self.content_offset, container)
        return container.children


class CliHelp(SphinxDirective):
    """``.. cli-help::``: the ``--help`` of ``rvm-pymc`` and of each of its commands.

    Read from ``rvm_pymc.cli.build_parser()`` when the pages are built, so the
    page cannot drift from the command line; if the parser cannot be built the
    page says so instead of failing the strict build.
    """

    has_content = False

    def run(self) -> list[nodes.Node]:
        import argparse

        try:
            parser = importlib.import_module("rvm_pymc.cli").build_parser()
        except Exception as exc:  # any failure is reported on the page
            text = f"The command line could not be read when these pages were built ({exc})."
            return [nodes.note("", nodes.paragraph(text=text))]
        parsers = [(parser.prog, parser)]
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                parsers += [(sub.prog, sub) for sub in action.choices.values()]
        old_columns = os.environ.get("COLUMNS")
        os.environ["COLUMNS"] = "88"
        try:
            out: list[nodes.Node] = []
            for prog, p in parsers:
                section = nodes.section(ids=[nodes.make_id(f"cli-{prog}")])
                section += nodes.title(text=prog)
                block = nodes.literal_block(text=p.format_help().rstrip())
                block["language"] = "text"
                section += block
                out.append(section)
        finally:
            if old_columns is None:
                os.environ.pop("COLUMNS", None)
            else:
                os.environ["COLUMNS"] = old_columns
        return out


def _module_sections_as_rubrics(app, what, name, obj, options, lines) -> None:
    """Turn numpydoc-style section headers of a module docstring into rubrics.

    Module docstrings are not parsed by numpydoc, so their "References" header
    would become a document section, and its label clashes between pages.
    """
    if what != "module":
        return
    for i in range(len(lines) - 1):
        header, underline = lines[i], lines[i + 1]
        if header.strip() and set(underline.strip()) == {"-"} and len(underline.strip()) >= 3:
            lines[i] = f".. rubric:: {header.strip()}"
            lines[i + 1] = ""


def _skip_inherited_foreign(app, what, name, obj, skip, options):
    """Skip members that scikit-learn generates on every estimator (``set_*_request``)."""
    module = getattr(obj, "__module__", None) or ""
    if module.startswith("sklearn."):
        return True
    return None


def _resolve_reexport(app, env, node, contnode):
    """Resolve ``rvm_pymc.X`` (a re-export) to where ``X`` is documented."""
    if node.get("refdomain") != "py":
        return None
    target = node.get("reftarget", "")
    module_name, _, attr = target.rpartition(".")
    if not module_name.startswith("rvm_pymc"):
        return None
    try:
        obj = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError):
        return None
    home = getattr(obj, "__module__", None)
    qualname = getattr(obj, "__qualname__", None)
    if not home or not qualname or f"{home}.{qualname}" == target:
        return None
    domain = env.get_domain("py")
    for candidate in (f"{home}.{qualname}", f"{home.rsplit('._', 1)[0]}.{qualname}"):
        node["reftarget"] = candidate
        found = domain.resolve_xref(
            env, node["refdoc"], app.builder, node["reftype"], candidate, node, contnode
        )
        if found is not None:
            return found
    node["reftarget"] = target
    return None


def setup(app):
    app.add_directive("optional-automodule", OptionalAutomodule)
    app.add_directive("cli-help", CliHelp)
    app.connect("autodoc-process-docstring", _module_sections_as_rubrics, priority=400)
    app.connect("autodoc-skip-member", _skip_inherited_foreign)
    app.connect("missing-reference", _resolve_reexport)
    return {"parallel_read_safe": True}
