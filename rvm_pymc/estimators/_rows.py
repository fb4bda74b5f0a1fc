"""The scaling of the design matrix and targets and, at large N, the row compression.

Every fit sees the basis columns divided by their root mean square and, for regression,
the targets centred and divided by their sd.  Above :data:`ROW_BLOCKED_ENTRIES`, RVR's
fast reference fit sees the design only through the triangular factor of ``[Phi | t]``,
built in blocks of rows (:func:`compressed_design`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rvm_pymc._core.rowqr import BLOCK_ROWS, RowQR, row_qr
from rvm_pymc.basis import Basis, KernelBasis

__all__ = [
    "ROW_BLOCKED_ENTRIES",
    "ROW_BLOCKED_RATIO",
    "column_rms",
    "compressed_design",
    "row_blocked",
    "scale_columns",
    "target_scale",
]

ROW_BLOCKED_ENTRIES = 2**22  # N x M above which RVR's fast fit uses the row compression
ROW_BLOCKED_RATIO = 4  # ... with at least this many rows per column


def row_blocked(est: Any, basis: Basis, n: int) -> bool:
    """Whether ``est`` fits ``basis`` on ``n`` points through the row compression."""
    return (
        est._kind == "regression"
        and est.method == "reference"
        and est.solver == "fast"
        and isinstance(basis, KernelBasis)
        and n * basis.n_basis_ > ROW_BLOCKED_ENTRIES
        and n >= ROW_BLOCKED_RATIO * basis.n_basis_
    )


def compressed_design(
    basis: Basis, X: np.ndarray, t: np.ndarray, block_rows: int = BLOCK_ROWS
) -> tuple[RowQR, np.ndarray]:
    """``(RowQR of [Phi / scale | t], scale)``, ``Phi`` made ``block_rows`` rows at a time."""
    n = X.shape[0]

    def block(a: int, b: int, out: np.ndarray) -> np.ndarray:
        basis.transform(X[a:b], out=out)
        return t[a:b]

    rows = row_qr(block, n, basis.n_basis_, block_rows=block_rows, into=True)
    scale = column_rms(rows.R, n=n)
    return rows.scaled(scale), scale


def target_scale(t: np.ndarray, centre: bool = True) -> tuple[float, float]:
    """``(mean, sd)`` of the targets, or ``(0, root mean square)`` without ``centre``.

    Computed on ``t / max|t|``: no overflow, and constant targets are caught.
    """
    top = float(np.max(np.abs(t)))
    if np.ptp(t) <= 8 * np.finfo(float).eps * top:
        raise ValueError(f"y is constant (all values {t[0].item()!r}): there is nothing to fit")
    u = t / top
    if not centre:
        return 0.0, float(np.sqrt(np.mean(u * u))) * top
    return float(np.mean(t)), float(np.std(u)) * top


def column_rms(Phi: np.ndarray, n: int | None = None) -> np.ndarray:
    """Root-mean-square of every column (1 for an all-zero column) over ``n`` rows.

    ``n``: the number of data points when ``Phi`` is the ``R`` of a row compression.
    """
    with np.errstate(over="ignore"):
        rms = np.sqrt(np.einsum("ij,ij->j", Phi, Phi) / (n or Phi.shape[0]))  # no N x M copy
    if not np.all(np.isfinite(rms)):
        big = float(np.max(np.abs(Phi[:, ~np.isfinite(rms)])))
        raise ValueError(
            f"the design matrix built from X has entries up to {big:.3g} in magnitude, whose "
            "squares overflow float64: rescale X (e.g. sklearn's StandardScaler) or the kernel"
        )
    rms[~(rms > 0)] = 1.0
    return rms


def scale_columns(Phi: np.ndarray, scale: np.ndarray, *, own: bool) -> np.ndarray:
    """``Phi / scale``: in place when ``own`` (``Phi`` is the caller's to overwrite)."""
    if own and isinstance(Phi, np.ndarray) and Phi.dtype == np.float64 and Phi.flags.writeable:
        Phi /= scale
        return Phi
    return Phi / scale
