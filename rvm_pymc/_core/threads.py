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

from contextlib import AbstractContextManager

__all__ = ["single_blas_thread"]

_controller = None


def single_blas_thread() -> AbstractContextManager:
    """Context manager running its block with one BLAS thread.

    Returns
    -------
    contextlib.AbstractContextManager
        Restores the previous thread counts on exit.

    Examples
    --------
    >>> import numpy as np
    >>> with single_blas_thread():
    ...     x = np.ones((3, 3)) @ np.ones(3)
    >>> x.tolist()
    [3.0, 3.0, 3.0]
    """
    global _controller
    if _controller is None:  # inspecting the loaded libraries costs milliseconds: once
        from threadpoolctl import ThreadpoolController

        _controller = ThreadpoolController()
    return _controller.limit(limits=1, user_api="blas")
