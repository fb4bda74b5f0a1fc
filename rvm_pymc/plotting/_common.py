"""Helpers shared by the plots: the fits to draw, their colours, relevance, inputs."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

CI_PROB = 0.9  # default central probability of the intervals of sampled fits


def pyplot():
    """matplotlib.pyplot, imported on first use."""
    import matplotlib.pyplot as plt

    return plt


def new_axes(ax, figsize=(8.0, 4.5)):
    """``ax`` itself, or the Axes of a new figure."""
    if ax is not None:
        return ax
    _, ax = pyplot().subplots(figsize=figsize)
    return ax


def as_fits(fits: Any, *, kind: str | None = None, what: str = "fits") -> dict[str, Any]:
    """``{label: fitted estimator}`` from one estimator (labelled by its ``method``) or a
    mapping; ValueError if empty, unfitted, or not of ``kind``."""
    out = dict(fits) if isinstance(fits, Mapping) else {str(getattr(fits, "method", "fit")): fits}
    if not out:
        raise ValueError(f"{what} is empty: give a fitted RVR/RVC or a mapping of them")
    for name, est in out.items():
        post = getattr(est, "__dict__", {}).get("posterior_")
        if post is None or not hasattr(post, "kind"):
            raise ValueError(
                f"{what}[{name!r}] is not a fitted RVR/RVC (no posterior_); got "
                f"{type(est).__name__}"
            )
        is_reg = post.kind == "regression"
        if kind is not None and is_reg != (kind == "regression"):
            got = "a regression fit" if is_reg else "a classifier"
            need = "regression fits (RVR)" if kind == "regression" else "classifiers (RVC)"
            raise ValueError(
                f"{what}[{name!r}] is {got} ({type(est).__name__}); this plot needs {need}"
            )
    return {str(k): v for k, v in out.items()}


def fit_colors(names: Sequence[str], colors: Any = None) -> dict[str, Any]:
    """One colour per name: ``C0, C1, ...``, or ``colors`` (mapping, sequence or one colour)."""
    names = list(names)
    if colors is None:
        return {n: f"C{i % 10}" for i, n in enumerate(names)}
    if isinstance(colors, Mapping):
        missing = [n for n in names if n not in colors]
        if missing:
            raise ValueError(f"colors has no colour for {missing}")
        return {n: colors[n] for n in names}
    if isinstance(colors, str) or (
        isinstance(colors, tuple) and len(colors) in (3, 4) and np.isscalar(colors[0])
    ):
        colors = [colors]
    colors = list(colors)
    if len(colors) < len(names):
        raise ValueError(f"colors has {len(colors)} colours for {len(names)} fits")
    return dict(zip(names, colors[: len(names)], strict=True))


def relevant_names(est) -> list[str]:
    """The bases a fit counts as relevant, as the comparison table does."""
    from rvm_pymc.comparison import relevant_bases

    return [str(n) for n in relevant_bases(est)]


def n_relevant(est) -> int:
    """The relevance count of the legends: ``rvm_pymc.comparison.n_relevant`` (no bias)."""
    from rvm_pymc.comparison import n_relevant as count

    return int(count(est))


def relevant_points(est) -> np.ndarray:
    """Indices of the training points whose kernel column is relevant (none: a user basis)."""
    rv = np.asarray(est.relevance_indices_, dtype=np.intp)
    kernel_names = [str(n) for n in est.active_names_ if n != "bias"]
    if len(kernel_names) != rv.size:
        return np.zeros(0, dtype=np.intp)
    index = dict(zip(kernel_names, rv, strict=True))
    keep = [index[n] for n in relevant_names(est) if n in index]
    return np.asarray(keep, dtype=np.intp)


def full_basis_names(est) -> list[str]:
    """Names of every column of a fit's full basis (pruned ones included)."""
    basis = getattr(est, "basis_", None)
    if basis is not None:
        return [str(n) for n in basis.basis_names_]
    m = len(est.basis_scale_)
    n = int(est.idata_["constant_data"].sizes["obs"])
    return ["bias"] * (m - n) + [f"x{i}" for i in range(n)]


def _natural_key(name: str):
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name)]


def ordered_union(lists: Sequence[Sequence[str]]) -> list[str]:
    """The union of basis names: ``"bias"`` first, then in natural order (x2 before x10)."""
    names = {str(n) for names in lists for n in names}
    return sorted(names, key=lambda n: (n != "bias", _natural_key(n)))


def check_inputs(X, n_features: int, what: str = "X") -> np.ndarray:
    """``X`` as a float (n, n_features) array, a 1-D array taken as one feature."""
    X = np.asarray(X, dtype=float)
    if X.ndim == 1 and n_features == 1:
        X = X[:, None]
    if X.ndim != 2 or X.shape[1] != n_features:
        raise ValueError(
            f"{what} must have {n_features} feature{'s' if n_features > 1 else ''} "
            f"(shape (n, {n_features})); got shape {X.shape}"
        )
    if not np.all(np.isfinite(X)):
        raise ValueError(f"{what} has non-finite values")
    return X


def padded_grid(X: np.ndarray, n: int) -> np.ndarray:
    """``n`` points over the range of each column of ``X`` widened by 5% on each side."""
    lo, hi = X.min(axis=0), X.max(axis=0)
    pad = 0.05 * np.where(hi > lo, hi - lo, 1.0)
    return np.linspace(lo - pad, hi + pad, int(n))


def check_fits_features(fits: Mapping[str, Any], n_features: int, what: str = "fits") -> None:
    """Refuse fits trained on another number of features."""
    for name, est in fits.items():
        got = getattr(est, "n_features_in_", n_features)
        if got != n_features:
            raise ValueError(
                f"{what}[{name!r}] was fitted on {got} features; this plot needs {n_features}"
            )


def check_prob(value: float, what: str) -> float:
    value = float(value)
    if not 0.0 < value < 1.0:
        raise ValueError(f"{what} must be in (0, 1); got {value!r}")
    return value
