"""Large N without the design matrix: RVR's fast reference fit on its row compression.

``RVR(method="reference", solver="fast")`` with a kernel basis depends on the
design ``Phi`` (N x M) and the targets only through the triangular factor of
``[Phi | t]`` (:mod:`rvm_pymc._core.rowqr`).  When the design would hold more
than :data:`ROW_BLOCKED_ENTRIES` numbers, the estimator builds it in blocks of
rows instead, each block folded into that factor and dropped
(:func:`compressed_design`): memory O(M^2 + block x M) instead of N x M
(8 GB at N = 1e6 with 1000 centres), and the solver's work per step no
longer grows with N.  The fit is the one of the full design to rounding (on a
smooth kernel, where moves of nearly equal gain compete, rounding can send
the fast solver down another path to a nearby optimum, as any change of
rounding can).  Everything else (MacKay, EM, classification, PyMC) keeps the
full design.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rvm_pymc._core.rowqr import BLOCK_ROWS, RowQR, row_qr
from rvm_pymc.basis import Basis, KernelBasis
from rvm_pymc.estimators._scaling import column_rms

__all__ = ["ROW_BLOCKED_ENTRIES", "ROW_BLOCKED_RATIO", "compressed_design", "row_blocked"]

#: Above this many entries (N x M: 32 MB of float64, N above 4,190 at 1001
#: columns) RVR's fast reference fit never holds its kernel design: it fits the
#: row compression.  Held, every addition reads the design (``Phi^T phi_j``) and an
#: ill-conditioned active set is factored from its N rows; measured at N = 3000 to
#: 30,000 (benchmarks/README.md): a smooth 1-D fit as fast or up to 0.3 s slower
#: compressed (up to 0.7 s where it took another path), a 3-D radial sinc as fast to
#: 3.4x faster, a 3-D ``sinc(x0)`` 1.5-14x faster; at N = 3000 held was as fast or
#: faster on all three.
ROW_BLOCKED_ENTRIES = 2**22
#: ... when it has at least this many rows per column: the triangle (M x M) then
#: holds at most a quarter of the design, and its 2 N M^2 flops stay a multiple
#: of the fill's N M (an N x N design, ``centres="all"``, is never compressed).
ROW_BLOCKED_RATIO = 4


def row_blocked(est: Any, basis: Basis, n: int) -> bool:
    """Whether ``est`` fits the fitted ``basis`` on ``n`` points through the row compression.

    Regression by the reference solver's fast method on a kernel basis whose
    N x M design would exceed :data:`ROW_BLOCKED_ENTRIES`, with N at least
    :data:`ROW_BLOCKED_RATIO` times M.
    """
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
    """The row compression of ``[Phi / scale | t]`` and the column scales, block by block.

    ``Phi = basis.transform(X)`` is made ``block_rows`` rows at a time, each
    written into the factor's workspace (and checked finite by
    ``transform``); ``scale`` is the root-mean-square of every column (the
    norms of the columns of ``R`` over ``sqrt(N)``), as
    :meth:`_BaseRVM._design` scales the full design.

    Parameters
    ----------
    basis : Basis
        Fitted.
    X : ndarray of shape (N, d)
    t : ndarray of shape (N,)
        The targets as fitted (centred and scaled).
    block_rows : int

    Returns
    -------
    (RowQR, ndarray of shape (M,))
    """
    n = X.shape[0]

    def block(a: int, b: int, out: np.ndarray) -> np.ndarray:
        basis.transform(X[a:b], out=out)  # into row_qr's workspace: no block allocated
        return t[a:b]

    rows = row_qr(block, n, basis.n_basis_, block_rows=block_rows, into=True)
    scale = column_rms(rows.R, n=n)
    return rows.scaled(scale), scale
