"""The fast classifier's reads of a tall design, on worker threads, rounded alike on any number.

:func:`transposed_products` forms ``A^T B`` as ``(B^T A)^T`` in blocks of
the columns of ``A`` that depend on ``M`` alone (:data:`BLOCK_COLUMNS`), each
on one BLAS thread: the rows are never split, so a fit makes the same BLAS
calls, and ends at the same numbers, on any number of threads.
:func:`squared`, :func:`scaled_rows` and :func:`in_background` thread
element-wise work and a side product likewise.  NumPy only.
"""

from __future__ import annotations

import itertools
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from rvm_pymc._core.threads import (
    default_workers,
    on_pieces,
    single_blas_thread,
    thread_map,
)

__all__ = [
    "BLOCK_COLUMNS",
    "SCALE_MIN_ENTRIES",
    "THREAD_MIN_ENTRIES",
    "in_background",
    "scaled_rows",
    "scaled_rows_buffer",
    "squared",
    "transposed_products",
]

#: Fewest entries of the ``A`` together for which the products go to worker
#: threads; below it they are formed in the calling thread.
THREAD_MIN_ENTRIES = 1 << 24

_ALIGN = 8  # column blocks start at multiples of this


def _column_blocks(m: int, parts: int) -> list[slice]:
    """``parts`` contiguous slices of ``range(m)``, inner bounds at multiples of ``_ALIGN``."""
    cuts = [0]
    for k in range(1, parts):
        cut = (k * m // parts) // _ALIGN * _ALIGN
        if cut > cuts[-1]:
            cuts.append(cut)
    cuts.append(m)
    return [slice(a, b) for a, b in itertools.pairwise(cuts)]


def _threads(size: int, workers: int | None, least: int | None = None) -> int:
    """Worker threads for ``size`` entries: ``workers``, else by size (at least ``least``)."""
    if workers is None:
        least = THREAD_MIN_ENTRIES if least is None else least
        return 1 if size < least else default_workers()
    return workers


def squared(A: np.ndarray, workers: int | None = None) -> np.ndarray:
    """``A**2`` (the same memory order), pieces of its memory squared on worker threads.

    Examples
    --------
    >>> import numpy as np
    >>> A = np.arange(12.0).reshape(3, 4)
    >>> bool(np.array_equal(squared(A, workers=2), A**2))
    True
    """
    workers = _threads(A.size, workers)
    if workers <= 1 or not (A.flags.c_contiguous or A.flags.f_contiguous):
        return A**2
    out = np.empty_like(A)
    src, dst = A.ravel(order="K"), out.ravel(order="K")  # views of the contiguous memory
    on_pieces(lambda a, b: np.square(src[a:b], out=dst[a:b]), src.size, workers)
    return out


#: Fewest entries for which :func:`scaled_rows` uses worker threads.
SCALE_MIN_ENTRIES = 1 << 20


def scaled_rows_buffer(A: np.ndarray) -> np.ndarray:
    """An empty array for :func:`scaled_rows` of ``A``: NumPy's order for ``d[:, None] * A``."""
    return np.empty_like(A, order="F" if A.flags.f_contiguous else "C")


def scaled_rows(d: np.ndarray, A: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """``d[:, None] * A``, in ``out`` if given, row ranges on worker threads when large.

    Examples
    --------
    >>> import numpy as np
    >>> A = np.arange(6.0).reshape(3, 2)
    >>> scaled_rows(np.array([1.0, 2.0, 3.0]), A).tolist()
    [[0.0, 1.0], [4.0, 6.0], [12.0, 15.0]]
    """
    if out is None:
        out = scaled_rows_buffer(A)
    workers = _threads(A.size, None, SCALE_MIN_ENTRIES)
    if workers <= 1:
        return np.multiply(d[:, None], A, out=out)
    on_pieces(lambda a, b: np.multiply(d[a:b, None], A[a:b], out=out[a:b]), A.shape[0], workers)
    return out


class _Done:
    """A result formed already, with the ``result()`` of a future."""

    def __init__(self, value):
        self._value = value

    def result(self):
        """The value."""
        return self._value


def in_background(fn, size: int, workers: int | None = None):
    """``fn()`` on a thread of its own (one BLAS thread) if worth it, else now: a handle.

    Examples
    --------
    >>> in_background(lambda: 6 * 7, 10, workers=2).result()
    42
    """
    if _threads(size, workers) <= 1:
        return _Done(fn())

    def run():
        with single_blas_thread():
            return fn()

    pool = ThreadPoolExecutor(max_workers=1)
    future = pool.submit(run)
    pool.shutdown(wait=False)  # the thread ends with its one task
    return future


def transposed_products(pairs, workers: int | None = None) -> list[np.ndarray]:
    """``[A.T @ B for A, B in pairs]`` on worker threads, the same bits on any number.

    ``B`` of shape (N, k) or (N,); ``workers`` default: the usable CPUs, or none
    below :data:`THREAD_MIN_ENTRIES`.  Results in C order.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> A, B = rng.standard_normal((1000, 700)), rng.standard_normal((1000, 3))
    >>> P, p = transposed_products([(A, B), (A, B[:, 0])], workers=2)
    >>> bool(np.allclose(P, A.T @ B)), bool(np.allclose(p, A.T @ B[:, 0]))
    (True, True)
    >>> bool(np.array_equal(P, transposed_products([(A, B)], workers=1)[0]))
    True
    """
    tasks, owner = [], []  # blocks of the matrix products first: the longest tasks
    for i, (A, B) in enumerate(pairs):
        if B.ndim == 2:
            for cols in _column_blocks(A.shape[1], -(-A.shape[1] // BLOCK_COLUMNS)):
                tasks.append((A, B, cols))
                owner.append(i)
    for i, (A, B) in enumerate(pairs):
        if B.ndim != 2:
            tasks.append((A, B, slice(None)))
            owner.append(i)
    with single_blas_thread():  # BLAS's own threads would change the bits
        if _threads(sum(A.size for A, _ in pairs), workers) <= 1:
            parts = [_product(*task) for task in tasks]
        else:
            parts = thread_map(lambda task: _product(*task), tasks)
    out = []
    for i, (_, B) in enumerate(pairs):
        mine = [p for p, o in zip(parts, owner, strict=True) if o == i]
        if B.ndim != 2:
            out.append(mine[0])
        else:  # (k, M) in blocks: one copy into (M, k), C order
            out.append(np.ascontiguousarray((mine[0] if len(mine) == 1 else np.hstack(mine)).T))
    return out


#: Columns of the design in one block of :func:`transposed_products`, about: ``ceil(M / 256)``
#: blocks, cut at multiples of 8.
BLOCK_COLUMNS = 256


def _product(A: np.ndarray, B: np.ndarray, cols: slice) -> np.ndarray:
    """``B^T A[:, cols]`` (k, cols) for a matrix ``B``; ``A[:, cols]^T B`` for a vector."""
    return B.T @ A[:, cols] if B.ndim == 2 else A[:, cols].T @ B
