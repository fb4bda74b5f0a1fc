"""Input checks of the model builders; each raises ValueError naming the argument."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from rvm_pymc._core.validation import as_2d_float, as_target_float, check_consistent_length

PARAMETRIZATIONS = ("centred", "non_centred")
LIKELIHOODS = ("normal", "student_t")


def check_one_of(argument: str, value, allowed: tuple[str, ...]):
    """``value`` if it is one of ``allowed``."""
    if value not in allowed:
        raise ValueError(f"{argument} must be one of {allowed}; got {value!r}")
    return value


def check_parametrization(parametrization: str) -> str:
    """``parametrization`` if it is one of :data:`PARAMETRIZATIONS`."""
    return check_one_of("parametrization", parametrization, PARAMETRIZATIONS)


def basis_coords(basis_names: Sequence | None, n_basis: int) -> list:
    """Coordinate values of the ``basis`` dimension: the unique names or ``0..M-1``."""
    if basis_names is None:
        return list(range(n_basis))
    names = list(basis_names)
    if len(names) != n_basis:
        raise ValueError(f"basis_names has {len(names)} entries but Phi has {n_basis} columns")
    if len(set(names)) != len(names):
        raise ValueError("basis_names must be unique")
    return names


def check_design(Phi, target, target_name: str) -> tuple[np.ndarray, np.ndarray]:
    """Finite float copies of a design matrix without all-zero columns and its target."""
    Phi = as_2d_float(Phi, "Phi", min_samples=2)
    target = as_target_float(target, target_name)
    check_consistent_length(Phi=Phi, **{target_name: target})
    bad = np.flatnonzero(~np.any(Phi != 0.0, axis=0))
    if bad.size:
        raise ValueError(f"Phi has all-zero column(s) {bad.tolist()}; drop them")
    return Phi, target


def check_labels(y, n_classes: int | None, binary: bool) -> tuple[np.ndarray, int]:
    """Integer class codes ``0..K-1`` (``K = 2`` when ``binary``) and ``K``."""
    arr = np.asarray(y)
    if arr.ndim != 1:
        raise ValueError(f"y must be 1-D; got shape {arr.shape}")
    if not (np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.bool_)):
        if not (np.issubdtype(arr.dtype, np.floating) and np.all(arr == np.round(arr))):
            raise ValueError("y must hold integer class codes 0..K-1")
    arr = arr.astype(np.int64)
    k = 2 if binary else (int(arr.max()) + 1 if n_classes is None else int(n_classes))
    if k < 2:
        raise ValueError(f"n_classes must be >= 2; got {k}")
    if arr.min() < 0 or arr.max() >= k:
        raise ValueError(
            f"y must hold class codes in 0..{k - 1}; got range [{arr.min()}, {arr.max()}]"
        )
    return arr, k
