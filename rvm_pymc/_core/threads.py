"""Threads: one BLAS thread around the solver loops, and worker threads for large arrays."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import numpy as np

__all__ = ["default_workers", "on_pieces", "single_blas_thread", "thread_map", "worker_threads"]

_controller = None
_lock = threading.Lock()
_holders = 0
_limiter = None  # made by the first block inside single_blas_thread; restores the limits


@contextlib.contextmanager
def single_blas_thread() -> Iterator[None]:
    """Context manager running its block with one BLAS thread (overlapping blocks share it).

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
    """Context manager keeping one pool of worker threads for its block (blocks share it)."""
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
