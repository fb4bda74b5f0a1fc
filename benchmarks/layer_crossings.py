"""Count the calls that cross a layer of the package during one estimator fit.

A layer is the first component of a module's name under ``rvm_pymc``
(``estimators``, ``reference``, ``inference``, ``models``, ``results``,
``_core``, ``basis``, ``kernels``, ...; docs/design.md, "Package layout").
Every Python call into a function of the package is attributed to the nearest
package frame below it on the stack (calls into NumPy, scikit-learn, PyMC, ...
are skipped, and so are the package calls they make back); it is a crossing
when the two frames are in different layers.  Module bodies (imports) are not
counted: the fit is run once untraced first, then traced.

Usage::

    python benchmarks/layer_crossings.py [--method map] [--estimator RVR] [--top 30]
"""

from __future__ import annotations

import argparse
import collections
import sys
from pathlib import Path

import _common  # noqa: F401  (one BLAS thread, before NumPy)
import numpy as np

import rvm_pymc

ROOT = Path(rvm_pymc.__file__).resolve().parent


def _layer(filename: str) -> str | None:
    """The layer of a source file of the package, or None for any other file."""
    try:
        rel = Path(filename).resolve().relative_to(ROOT)
    except ValueError:
        return None
    first = rel.parts[0]
    return "" if first == "__init__.py" else first.removesuffix(".py")


def count_crossings(run) -> tuple[int, collections.Counter]:
    """Run ``run()`` under :func:`sys.setprofile`; return the crossings and their edges.

    Returns
    -------
    (int, collections.Counter)
        The number of crossing calls, and ``(caller, callee)`` -> count, each
        side ``"layer:function"``.
    """
    layers: dict[str, str | None] = {}
    edges: collections.Counter = collections.Counter()

    def layer_of(code) -> str | None:
        name = code.co_filename
        if name not in layers:
            layers[name] = _layer(name)
        return layers[name]

    def profile(frame, event, arg):
        if event != "call" or frame.f_code.co_name == "<module>":
            return
        callee = layer_of(frame.f_code)
        if callee is None:
            return
        caller = frame.f_back
        while caller is not None and layer_of(caller.f_code) is None:
            caller = caller.f_back
        if caller is None:
            return
        source = layer_of(caller.f_code)
        if source != callee:
            edges[
                (f"{source}:{caller.f_code.co_qualname}", f"{callee}:{frame.f_code.co_qualname}")
            ] += 1

    sys.setprofile(profile)
    try:
        run()
    finally:
        sys.setprofile(None)
    return sum(edges.values()), edges


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--method", default="map", choices=("reference", "map", "nuts"))
    parser.add_argument("--estimator", default="RVR", choices=("RVR", "RVC"))
    parser.add_argument("--top", type=int, default=40, help="edges to list")
    args = parser.parse_args()

    rng = np.random.default_rng(0)
    X = np.linspace(-5.0, 5.0, 40)[:, None]
    y = np.sinc(X[:, 0]) + 0.1 * rng.standard_normal(40)
    if args.estimator == "RVC":
        y = (y > 0.2).astype(int)
    cls = getattr(rvm_pymc, args.estimator)
    kw = {"draws": 50, "tune": 50} if args.method == "nuts" else {}

    def fit():
        cls(method=args.method, gamma=0.5, random_state=0, **kw).fit(X, y)

    fit()  # imports and compilation caches, untraced
    total, edges = count_crossings(fit)
    by_layer: collections.Counter = collections.Counter()
    for (a, b), n in edges.items():
        by_layer[(a.split(":")[0], b.split(":")[0])] += n
    print(f"{args.estimator}(method={args.method!r}).fit: {total} layer crossings")
    print("\nby layer pair:")
    for (a, b), n in by_layer.most_common():
        print(f"  {n:6d}  {a or 'rvm_pymc'} -> {b or 'rvm_pymc'}")
    out_of_estimators = sum(n for (a, _), n in edges.items() if a.startswith("estimators:"))
    print(f"\ncalls out of the estimators layer: {out_of_estimators}")
    print(f"\nedges (top {args.top}):")
    for (a, b), n in edges.most_common(args.top):
        print(f"  {n:6d}  {a} -> {b}")


if __name__ == "__main__":
    main()
