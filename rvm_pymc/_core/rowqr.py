r"""A tall design and its targets compressed to their triangular factor, in row blocks:

.. math::

    [\Phi \mid t] = Q \begin{bmatrix} R & z \\ 0 & \rho \end{bmatrix},
    \qquad ||t - \Phi w||^2 = ||z - R w||^2 + \rho^2.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace

import numpy as np
from scipy.linalg import lapack

from rvm_pymc._core.threads import default_workers, single_blas_thread

__all__ = ["BLOCK_ROWS", "RowQR", "column_triangle", "row_qr", "triangle_without"]

#: Rows per block of :func:`row_qr` (64 MB of float64 at 1000 columns).
BLOCK_ROWS = 8192


@dataclass(frozen=True)
class RowQR:
    """The triangular factor of ``[Phi | t]``: a design of N rows as M rows.

    Parameters
    ----------
    R : ndarray of shape (M, M)
        Upper triangular, ``R^T R = Phi^T Phi``.
    z : ndarray of shape (M,)
        ``R^T z = Phi^T t``.
    n : int
        The number N of rows of ``Phi`` (data points).
    remainder : float
        ``rho^2``: the residual sum of squares of ``t`` on all M columns.

    See Also
    --------
    row_qr : builds it; ``fit_regression(rows, t)`` fits on it.
    """

    R: np.ndarray
    z: np.ndarray
    n: int
    remainder: float

    @property
    def shape(self) -> tuple[int, int]:
        """``(N, M)``: the shape of the design it stands for."""
        return (self.n, self.R.shape[1])

    def scaled(self, scale: np.ndarray) -> RowQR:
        """The factor of ``[Phi / scale | t]`` (columns divided by ``scale``; a new ``R``)."""
        return replace(self, R=self.R / scale)


def row_qr(
    block: Callable[[int, int], tuple[np.ndarray, np.ndarray]],
    n: int,
    m: int,
    *,
    block_rows: int = BLOCK_ROWS,
    workers: int | None = None,
    into: bool = False,
) -> RowQR:
    """The :class:`RowQR` of ``[Phi | t]`` from its row blocks, made on demand.

    Parameters
    ----------
    block : callable
        ``block(start, stop)`` returns ``(Phi[start:stop], t[start:stop])``;
        called from ``workers`` threads at once.  With ``into=True``:
        ``block(start, stop, out)`` writes ``Phi[start:stop]`` into ``out`` (a
        column-major float64 view) and returns ``t[start:stop]``.
    n : int
        Number of rows.
    m : int
        Number of columns of ``Phi``.
    block_rows : int
        Rows per block.
    workers : int, optional
        Threads, each factoring a contiguous range of rows on one BLAS thread
        (default: one per usable CPU, at most one per block).
    into : bool
        Call ``block`` with the array to fill (above).

    Returns
    -------
    RowQR

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> Phi, t = rng.standard_normal((500, 4)), rng.standard_normal(500)
    >>> f = row_qr(lambda a, b: (Phi[a:b], t[a:b]), 500, 4, block_rows=64, workers=2)
    >>> bool(np.allclose(f.R.T @ f.R, Phi.T @ Phi) and np.allclose(f.R.T @ f.z, Phi.T @ t))
    True
    >>> w = np.linalg.lstsq(Phi, t, rcond=None)[0]
    >>> bool(np.isclose(f.remainder, np.sum((t - Phi @ w) ** 2)))
    True
    """
    if n < 1 or m < 1:
        raise ValueError(f"row_qr needs at least one row and one column; got n={n}, m={m}")
    block_rows = max(1, int(block_rows))
    n_blocks = -(-n // block_rows)
    workers = min(default_workers() if workers is None else max(1, int(workers)), n_blocks)
    # contiguous ranges of whole blocks, one per worker
    cuts = [block_rows * (n_blocks * k // workers) for k in range(workers + 1)]
    ranges = [(cuts[k], min(cuts[k + 1], n)) for k in range(workers)]

    def factor(rows: tuple[int, int]) -> np.ndarray:
        # one workspace per worker, reused for every block: [R so far; next block] as a
        # contiguous column-major array, which dgeqrf factors in place
        k1, height = m + 1, min(block_rows, rows[1] - rows[0])
        work = np.empty((k1 + height) * k1)
        lwork = _lwork(k1 + height, k1)
        R = np.zeros((k1, k1), order="F")
        lower = np.tri(k1, k=-1, dtype=bool)  # below R's diagonal: dgeqrf's reflectors
        top = 0  # rows of R stacked above the block (none before the first)
        for start in range(rows[0], rows[1], height):
            stop = min(start + height, rows[1])
            k = stop - start
            S = work[: (top + k) * k1].reshape((top + k, k1), order="F")
            S[:top] = R[:top]
            B = S[top:]
            if into:
                y = block(start, stop, B[:, :m])
            else:
                P, y = block(start, stop)
                if np.shape(P) != (k, m):
                    raise ValueError(
                        f"block({start}, {stop}) returned shapes {np.shape(P)} and "
                        f"{np.shape(y)}; expected ({k}, {m}) and ({k},)"
                    )
                B[:, :m] = P
            if np.shape(y) != (k,):
                raise ValueError(
                    f"block({start}, {stop}) returned targets of shape {np.shape(y)}; "
                    f"expected ({k},)"
                )
            B[:, m] = y
            _factor_in_place(S, lwork)
            top = min(k1, S.shape[0])  # fewer rows than columns: a trapezoid
            R[:top] = S[:top]
            np.copyto(R, 0.0, where=lower)
            top = k1
        return R

    if workers == 1:
        parts = [factor(ranges[0])]
    else:  # the workers are the parallelism: BLAS threads too would oversubscribe the CPUs
        with single_blas_thread(), ThreadPoolExecutor(max_workers=workers) as pool:
            parts = list(pool.map(factor, ranges))
    R = parts[0]
    if len(parts) > 1:
        S = np.vstack(parts)
        _factor_in_place(S, _lwork(S.shape[0], m + 1))
        R = np.triu(S[: m + 1])
    return RowQR(np.triu(R[:m, :m]), R[:m, m].copy(), int(n), float(R[m, m] ** 2))


def column_triangle(Phi: np.ndarray, t: np.ndarray) -> np.ndarray:
    """The triangle ``T`` of ``[Phi | t] = Q T`` (Householder, ``Q`` never formed)."""
    top = np.column_stack([Phi, t])
    return np.linalg.qr(top, mode="r") if top.shape[0] > top.shape[1] else top


def triangle_without(T: np.ndarray, i: int) -> np.ndarray:
    """:func:`column_triangle` without column ``i`` of ``Phi``, from ``T`` in O(M^3)."""
    return column_triangle(np.delete(T[:, :-1], i, axis=1), T[:, -1])


def _lwork(rows: int, cols: int) -> int:
    """LAPACK's optimal workspace of ``dgeqrf`` on a ``rows x cols`` matrix."""
    work, info = lapack.dgeqrf_lwork(rows, cols)
    return max(int(work), cols) if info == 0 else 64 * cols


def _factor_in_place(S: np.ndarray, lwork: int) -> None:
    """``S`` (column-major) overwritten by LAPACK ``dgeqrf``: ``R`` on and above its diagonal."""
    qr, _, _, info = lapack.dgeqrf(S, lwork=lwork, overwrite_a=1)
    if info != 0:  # pragma: no cover - only for invalid arguments
        raise RuntimeError(f"LAPACK dgeqrf failed (info={info})")
    if not np.shares_memory(qr, S):  # not column-major (the stacked parts): LAPACK had a copy
        S[...] = qr
