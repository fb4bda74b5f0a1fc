"""The design matrix's scaling boundary and, at large N, its row compression.

Every fit of an estimator sees the basis columns divided by their root mean square
(:func:`column_rms`, :func:`scale_columns`) and, for regression, the targets centred
and divided by their sd (:func:`target_scale`; with ``bias=False``, a model without a
constant term, only divided by their root mean square): docs/design.md section 3.

Large N without the design matrix: RVR's fast reference fit sees ``Phi`` (N x M) and
the targets only through the triangular factor of ``[Phi | t]``
(:mod:`rvm_pymc._core.rowqr`): above :data:`ROW_BLOCKED_ENTRIES` the design is built in
blocks of rows folded into that factor (:func:`compressed_design`), memory
O(M^2 + block x M).  Everything else (MacKay, EM, classification, PyMC) keeps the full
design.
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

#: Above this many entries (N x M) RVR's fast reference fit fits the row compression
#: (benchmarks/README.md).
ROW_BLOCKED_ENTRIES = 2**22
#: ... when it has at least this many rows per column (never an N x N design).
ROW_BLOCKED_RATIO = 4


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
    """``(RowQR of [Phi / scale | t], scale)``, ``Phi = basis.transform(X)`` made
    ``block_rows`` rows at a time; ``scale`` the root-mean-square of every column."""
    n = X.shape[0]

    def block(a: int, b: int, out: np.ndarray) -> np.ndarray:
        basis.transform(X[a:b], out=out)  # into row_qr's workspace: no block allocated
        return t[a:b]

    rows = row_qr(block, n, basis.n_basis_, block_rows=block_rows, into=True)
    scale = column_rms(rows.R, n=n)
    return rows.scaled(scale), scale


def target_scale(t: np.ndarray, centre: bool = True) -> tuple[float, float]:
    """Offset and scale of the targets: ``(mean, sd)``, or ``(0, root mean square)``.

    ``centre=True`` (a model with a constant term): the mean and the sd.
    ``centre=False`` (a model without one, ``bias=False``): the targets are
    only scaled, by their root mean square about 0, so that the model's
    prediction at a design row of zeros stays 0.  ValueError if the targets
    are constant to rounding (the noise is then not identifiable).  Both are
    computed on ``t / max|t|`` so that they neither overflow (|t| near
    1e160) nor mistake the rounding of the mean for a spread (``std`` of a
    constant array is not always 0).
    """
    top = float(np.max(np.abs(t)))
    if np.ptp(t) <= 8 * np.finfo(float).eps * top:
        raise ValueError(f"y is constant (all values {t[0].item()!r}): there is nothing to fit")
    u = t / top
    if not centre:
        return 0.0, float(np.sqrt(np.mean(u * u))) * top
    return float(np.mean(t)), float(np.std(u)) * top


def column_rms(Phi: np.ndarray, n: int | None = None) -> np.ndarray:
    """Root-mean-square of every column (1 for an all-zero column).

    ``n``: the number of data points when ``Phi`` is the triangle ``R`` of a
    row compression (:class:`rvm_pymc._core.rowqr.RowQR`; its columns have
    the norms of the design's); default the number of rows.

    ``ValueError`` when a column's squares overflow (finite entries beyond
    about 1e154, e.g. a linear kernel on inputs near 1e100): its scale would
    be inf and the scaled column all zeros, a silent constant model; the
    posterior in the units of such a column (precisions ~ scale**2) is not
    representable in float64 either.
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
    """``Phi / scale``: in place (no N x M copy) when ``own``, else a new array.

    ``own`` says that ``Phi`` is a private array of the caller (a design matrix
    it has just built), so that overwriting it is safe.
    """
    if own and isinstance(Phi, np.ndarray) and Phi.dtype == np.float64 and Phi.flags.writeable:
        Phi /= scale
        return Phi
    return Phi / scale
