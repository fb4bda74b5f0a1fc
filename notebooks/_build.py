"""Build the notebooks from their sources in ``notebooks/_src/`` and execute them.

Each notebook is written as a Python file in the "percent" format, so that
its source stays reviewable (and linted) as plain Python: ``# %%`` starts a
code cell, ``# %% [markdown]`` a Markdown cell whose lines are comments.

    python notebooks/_build.py                 # build and execute every notebook
    python notebooks/_build.py 04 06           # only those whose name starts so
    python notebooks/_build.py --no-execute    # build without outputs
    python notebooks/_build.py 03 --markdown   # only the Markdown changed: rebuild,
                                               # keeping the stored outputs of the code

Executed notebooks are written with their outputs (the documentation site
shows them as stored).  ``tests/test_notebooks.py`` executes every notebook
again.  Cell ids are stable, so rebuilding an unchanged source changes only
the outputs.

The stored outputs are published as they are, so they must not show machine
paths: a notebook whose cells raise warnings sets ``warnings.formatwarning``
in its first code cell to print ``Category: message`` without the file and
line (the warnings stay visible).  ``tests/test_docs.py`` checks every stored
output for paths.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import nbformat

HERE = Path(__file__).parent
SOURCES = HERE / "_src"


def parse(text: str) -> list[tuple[str, str]]:
    """Cells ``(kind, source)`` of a percent-format Python file."""
    cells: list[tuple[str, list[str]]] = []
    for line in text.splitlines():
        if line.startswith("# %%"):
            cells.append(("md" if "[markdown]" in line else "code", []))
        elif cells:
            cells[-1][1].append(line)
    out = []
    for kind, lines in cells:
        if kind == "md":
            lines = [ln[2:] if ln.startswith("# ") else ln.lstrip("#") for ln in lines]
        src = "\n".join(lines).strip("\n")
        if src:
            out.append((kind, src))
    return out


def build(source: Path) -> nbformat.NotebookNode:
    """A notebook (without outputs) from a percent-format source file."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}  # fmt: skip
    for i, (kind, src) in enumerate(parse(source.read_text(encoding="utf-8"))):
        make = nbformat.v4.new_markdown_cell if kind == "md" else nbformat.v4.new_code_cell
        cell = make(src)
        cell["id"] = f"{source.stem[:2]}-{i:02d}"  # stable ids: rebuilding changes nothing
        nb.cells.append(cell)
    return nb


def execute(nb: nbformat.NotebookNode, timeout: int = 900) -> float:
    """Run every cell in place (working directory: this folder); seconds taken."""
    import nbclient

    t0 = time.perf_counter()
    client = nbclient.NotebookClient(nb, timeout=timeout, kernel_name="python3",
                                     record_timing=False,  # no per-cell timestamps stored
                                     resources={"metadata": {"path": str(HERE)}})  # fmt: skip
    client.execute()
    return time.perf_counter() - t0


def keep_outputs(nb: nbformat.NotebookNode, stored: nbformat.NotebookNode) -> None:
    """Copy the outputs of ``stored`` into ``nb``; its code cells must be the same, in order.

    Raises
    ------
    ValueError
        If the code cells differ (then the notebook must be executed again).
    """
    new = [c for c in nb.cells if c.cell_type == "code"]
    old = [c for c in stored.cells if c.cell_type == "code"]
    if [c.source for c in new] != [c.source for c in old]:
        raise ValueError("the code cells changed: execute the notebook again")
    for c, o in zip(new, old, strict=True):
        c.outputs, c.execution_count = o.outputs, o.execution_count
    for key in ("execution_seconds",):
        if key in stored.metadata:
            nb.metadata[key] = stored.metadata[key]


def main(argv: list[str]) -> None:
    markdown_only = "--markdown" in argv
    run = "--no-execute" not in argv and not markdown_only
    prefixes = [a for a in argv if not a.startswith("--")]
    for source in sorted(SOURCES.glob("[0-9]*.py")):
        if prefixes and not any(source.stem.startswith(p) for p in prefixes):
            continue
        nb = build(source)
        if markdown_only:
            keep_outputs(nb, nbformat.read(HERE / f"{source.stem}.ipynb", as_version=4))
        elif run:
            seconds = execute(nb)
            nb.metadata["execution_seconds"] = round(seconds, 1)
            print(f"{source.stem}: executed in {seconds:.0f} s", flush=True)
        nbformat.write(nb, HERE / f"{source.stem}.ipynb")


if __name__ == "__main__":
    main(sys.argv[1:])
