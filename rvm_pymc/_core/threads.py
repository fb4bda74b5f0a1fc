"""BLAS thread control around the solver loops and the estimators' reference fits.

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
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

__all__ = ["single_blas_thread"]

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
