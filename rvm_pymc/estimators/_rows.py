"""Large N without the design matrix: RVR's fast reference fit on its row compression.

The fast solver sees ``Phi`` (N x M) and the targets only through the triangular
factor of ``[Phi | t]`` (:mod:`rvm_pymc._core.rowqr`): above
:data:`ROW_BLOCKED_ENTRIES` the design is built in blocks of rows folded into that
factor (:func:`compressed_design`), memory O(M^2 + block x M).  Everything else
(MacKay, EM, classification, PyMC) keeps the full design.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rvm_pymc._core.rowqr import BLOCK_ROWS, RowQR, row_qr
from rvm_pymc.basis import Basis, KernelBasis
from rvm_pymc.estimators._scaling import column_rms

__all__ = ["ROW_BLOCKED_ENTRIES", "ROW_BLOCKED_RATIO", "compressed_design", "row_blocked"]

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
