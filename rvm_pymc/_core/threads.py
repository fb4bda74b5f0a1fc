"""Threads: BLAS thread control around the solver loops, and worker threads for large arrays.

The iterative solvers run thousands of small matrix operations (active sets of
tens to hundreds of columns).  NumPy and SciPy each load their own OpenBLAS, and
each starts a thread per core: on a small shared machine the threads contend
for every small product, and a loop of them ran 20-40 times slower than on one
thread (``RVR(solver="em")`` on 100 points: see docs/reference_solver.md for the
measurements).  The solvers therefore run their loops with one BLAS thread,
and the estimators run a whole ``method="reference"`` fit so: OpenBLAS
threads woken by one product spin on the other core for a while after it
(with default threads the CPU time of ``RVR().fit`` on Friedman #1 was twice
its wall time while the solver itself ran on one thread), and nothing in such
a fit gains from them (the width kernels' designs are built by ``cdist``).

The limit is process-wide while a fit runs (the BLAS libraries have no
per-thread setting) and the previous limits are restored afterwards, also on
an exception.  It is a no-op when no BLAS library can be controlled.

Work on large arrays that NumPy or SciPy do without the GIL (the reference
classifier's reads of its design, a kernel design's blocks) runs on worker
threads instead, one per CPU (:func:`default_workers`): :func:`thread_map`,
:func:`on_pieces`, and :func:`worker_threads` to keep one pool for a whole
fit.  Callers whose work uses BLAS hold :func:`single_blas_thread` around it.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import numpy as np

__all__ = [
    "default_workers",
    "on_pieces",
    "single_blas_thread",
    "thread_map",
    "worker_threads",
]

_controller = None
_lock = threading.Lock()
_holders = 0
_limiter = None
"""How many blocks (in any thread) are inside :func:`single_blas_thread`, and the
threadpoolctl limiter that the first of them made (it restores the limits it found)."""


@contextlib.contextmanager
def single_blas_thread() -> Iterator[None]:
    """Context manager running its block with one BLAS thread.

    The limit is process-wide (the BLAS libraries have no per-thread setting).
    Blocks that overlap, in one thread or in several (fits in a threaded grid
    search), share it: the first to enter sets it, the last to leave restores
    the limits the first one found, so overlapping fits never leave the process
    at one thread, and none of them loses the limit while another ends.

    Yields
    ------
    None

    Examples
    --------
    >>> import numpy as np
    >>> with single_blas_thread():
    ...     x = np.ones((3, 3)) @ np.ones(3)
    >>> x.tolist()
    [3.0, 3.0, 3.0]
    """
    global _controller, _holders, _limiter
    with _lock:
        if _controller is None:  # inspecting the loaded libraries costs milliseconds: once
            from threadpoolctl import ThreadpoolController

            _controller = ThreadpoolController()
        if _holders == 0:
            _limiter = _controller.limit(limits=1, user_api="blas")
        _holders += 1
    try:
        yield
    finally:
        with _lock:
            _holders -= 1
            if _holders == 0:
                _limiter.restore_original_limits()
                _limiter = None


def default_workers() -> int:
    """Worker threads for the large products and the row QR: the CPUs this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not on Linux
        return max(1, os.cpu_count() or 1)


_pool: ThreadPoolExecutor | None = None
_pool_users = 0
_pool_lock = threading.Lock()


@contextlib.contextmanager
def worker_threads() -> Iterator[None]:
    """Context manager keeping one pool of worker threads (one per CPU) for its block.

    :func:`thread_map` and :func:`on_pieces` (the design products of the
    reference solver) use it while it is open (making threads for
    every call cost as much as the threads saved on the products of the mode
    search: 0.3 ms a call); outside such a block each call makes its own.
    Blocks may overlap (fits in several threads): the first makes the pool,
    the last to leave ends its threads, so that none outlive the fits (a
    process that forks later, e.g. for a sampler's chains, has no idle
    threads).  Tasks of the pool never wait for other tasks of it.

    Yields
    ------
    None
    """
    global _pool, _pool_users
    with _pool_lock:
        if _pool_users == 0:
            _pool = ThreadPoolExecutor(max_workers=default_workers())
        _pool_users += 1
    try:
        yield
    finally:
        with _pool_lock:
            _pool_users -= 1
            done, _pool = (_pool, None) if _pool_users == 0 else (None, _pool)
        if done is not None:
            done.shutdown(wait=True)


def thread_map(fn, *iterables) -> list:
    """``list(map(fn, *iterables))`` on the open pool (:func:`worker_threads`) or a new one."""
    with _pool_lock:
        pool = _pool
    if pool is not None:
        return list(pool.map(fn, *iterables))
    with ThreadPoolExecutor(max_workers=default_workers()) as own:
        return list(own.map(fn, *iterables))


def on_pieces(job, n: int, workers: int) -> None:
    """``job(a, b)`` for ``workers`` contiguous ranges ``[a, b)`` of ``range(n)``, on threads."""
    bounds = np.linspace(0, n, workers + 1).astype(int)
    thread_map(job, bounds[:-1], bounds[1:])
