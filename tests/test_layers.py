"""The package's layers: imports run downward only (docs/design.md, "Package layout").

Read from the source with :mod:`ast`: module-level and function-level
``import``/``from ... import`` statements, and the module names given as strings
to ``importlib.import_module``, ``__import__`` and the lazy-attribute helper
``rvm_pymc._core.lazy.attach``.  Nothing is imported or run.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "rvm_pymc"

RANK = {
    "exceptions": 0,
    "_core": 1,
    "priors": 2,
    "kernels": 2,
    "datasets": 2,
    "basis": 3,
    "results": 4,
    "reference": 5,
    "models": 5,
    "inference": 6,
    "estimators": 7,
    "model_selection": 8,
    "comparison": 8,
    "plotting": 9,
    "cli": 10,
    "__main__": 11,
    "": 11,  # the package root, rvm_pymc/__init__.py
}
"""Each layer (a top-level module or subpackage of ``rvm_pymc``) and its height: a layer
imports only from itself and from layers of a lower height."""

FORBIDDEN = {("inference", "reference")}
"""Pairs that heights alone would allow: the PyMC fits and the NumPy solver share what
both need through ``_core``, never through each other."""

MAX_TOP_LEVEL_FILES = 12


def _layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _module_name(path: Path) -> tuple[str, bool]:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    is_package = parts[-1] == "__init__"
    if is_package:
        parts = parts[:-1]
    return ".".join(parts), is_package


def _resolve(module: str, is_package: bool, level: int, target: str | None) -> str:
    if not level:
        return target or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join(base + ([target] if target else []))


def _string_imports(tree: ast.AST, module: str, is_package: bool) -> list[tuple[str, list]]:
    """Module names passed as literal strings to import_module, __import__ or attach."""
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if name in ("import_module", "__import__") and node.args:
            arg = node.args[0]
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                target = arg.value
                if target.startswith("."):
                    level = len(target) - len(target.lstrip("."))
                    target = _resolve(module, is_package, level, target.lstrip(".") or None)
                out.append((target, []))
        elif name == "attach":
            for arg in node.args[1:]:
                for value in ast.walk(arg):
                    if isinstance(value, ast.Constant) and isinstance(value.value, str):
                        target = value.value
                        if target.startswith("."):
                            level = len(target) - len(target.lstrip("."))
                            target = _resolve(module, True, level, target.lstrip(".") or None)
                        if target.startswith("rvm_pymc"):
                            out.append((target, []))
    return out


def _imports() -> list[tuple[str, int, str, list[str]]]:
    """(importing module, line, imported module, imported names) for every internal import."""
    rows = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module, is_package = _module_name(path)
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                rows += [(module, node.lineno, a.name, []) for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                target = _resolve(module, is_package, node.level, node.module)
                names = [a.name for a in node.names]
                if target == "rvm_pymc":  # `from rvm_pymc import kernels`: the module kernels
                    rows += [(module, node.lineno, f"rvm_pymc.{n}", []) for n in names]
                else:
                    rows.append((module, node.lineno, target, names))
        rows += [(module, 0, t, n) for t, n in _string_imports(tree, module, is_package)]
    return [r for r in rows if r[2] == "rvm_pymc" or r[2].startswith("rvm_pymc.")]


IMPORTS = _imports()


def test_the_checker_sees_every_kind_of_import():
    modules = {(src, dst) for src, _, dst, _ in IMPORTS}
    # a function-level import, a string given to the lazy helper, a relative import
    assert ("rvm_pymc.estimators._io", "rvm_pymc.kernels") in modules
    assert ("rvm_pymc", "rvm_pymc.estimators") in modules
    assert ("rvm_pymc.inference", "rvm_pymc.inference._fits") in modules
    assert all(_layer(src) in RANK for src, *_ in IMPORTS), "a module outside every layer"


def _violations() -> list[str]:
    bad = []
    for src, line, dst, _names in IMPORTS:
        a, b = _layer(src), _layer(dst)
        if a == b:
            continue
        if b not in RANK:
            bad.append(f"{src}:{line} imports {dst}, which is in no layer")
        elif RANK[b] >= RANK[a] or (a, b) in FORBIDDEN:
            bad.append(f"{src}:{line} imports {dst}: layer {a!r} must not import {b!r}")
    return bad


def test_imports_run_downward_only():
    assert _violations() == []


def test_no_private_helper_crosses_a_layer():
    """Across layers only public names of public modules (every module of ``_core`` is one)."""
    bad = []
    for src, line, dst, names in IMPORTS:
        a, b = _layer(src), _layer(dst)
        if a == b:
            continue
        inner = dst.split(".")[2:]
        private_module = [p for p in inner if p.startswith("_")]
        private_names = [n for n in names if n.startswith("_") and not n.startswith("__")]
        if private_module or private_names:
            bad.append(f"{src}:{line} takes {private_names or ''} from {dst}")
    assert bad == []


def test_no_circle():
    graph: dict[str, set[str]] = {}
    for src, _, dst, _names in IMPORTS:
        graph.setdefault(src, set()).add(dst)

    def reachable(start: str) -> set[str]:
        seen, todo = set(), [start]
        while todo:
            for nxt in graph.get(todo.pop(), ()):
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return seen

    # a package's __init__ re-exports its own modules; a circle between two layers is the defect
    layer_graph: dict[str, set[str]] = {}
    for src, dsts in graph.items():
        for dst in dsts:
            if _layer(src) != _layer(dst):
                layer_graph.setdefault(_layer(src), set()).add(_layer(dst))
    graph = layer_graph
    circles = [layer for layer in layer_graph if layer in reachable(layer)]
    assert circles == []


def test_the_top_of_the_package_is_small():
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(top) <= MAX_TOP_LEVEL_FILES, top
