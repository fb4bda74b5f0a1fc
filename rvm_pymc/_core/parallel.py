"""Independent fits through joblib, with the warnings of every task kept; processes for chains.

joblib runs tasks in other processes (loky) or on other machines (the
``"dask"`` or ``"ray"`` backends of :func:`joblib.parallel_config`); a warning
raised there never reaches the caller.  :func:`run_tasks` records each task's
warnings where it runs and raises them again in the calling process, prefixed
by the task's label, so that a fit that did not converge is reported whatever
the backend.  :func:`default_cores` is how many processes PyMC's NUTS runs
its chains in when the user does not say.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
import warnings
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["default_cores", "raise_again", "record_warnings", "run_recorded", "run_tasks"]


def record_warnings(fn: Callable, args: tuple) -> tuple[Any, list[tuple[str, type[Warning]]]]:
    """``fn(*args)`` and the warnings it raised, as (message, category) pairs."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = fn(*args)
    return out, [(str(w.message), w.category) for w in caught]


def run_tasks(
    fn: Callable,
    tasks: Sequence[tuple],
    labels: Sequence[str],
    n_jobs: int | None,
    *,
    stacklevel: int = 3,
) -> list:
    """``[fn(*task) for task in tasks]`` through :class:`joblib.Parallel`.

    Parameters
    ----------
    fn : callable
        A module-level function (it is pickled by reference for other processes).
    tasks : sequence of tuple
        The arguments of each call.
    labels : sequence of str
        One per task; prefixed to the task's warnings when they are raised again.
    n_jobs : int or None
        As for :class:`joblib.Parallel`: None defers to any
        :func:`joblib.parallel_config` in effect (one job without one).
    stacklevel : int, default 3
        Of the warnings raised again, counted from the caller of ``run_tasks``.

    Returns
    -------
    list
        The results, in the order of ``tasks``.
    """
    out = run_recorded(fn, tasks, n_jobs)
    for label, (_, caught) in zip(labels, out, strict=True):
        raise_again(label, caught, stacklevel=stacklevel + 1)
    return [result for result, _ in out]


def run_recorded(
    fn: Callable, tasks: Sequence[tuple], n_jobs: int | None
) -> list[tuple[Any, list[tuple[str, type[Warning]]]]]:
    """``[(fn(*task), its warnings) for task in tasks]`` through :class:`joblib.Parallel`.

    As :func:`run_tasks`, but the warnings are returned, not raised: the caller
    raises those of the tasks whose results it keeps (:func:`raise_again`).
    """
    from joblib import Parallel, delayed

    return Parallel(n_jobs=n_jobs)(delayed(record_warnings)(fn, tuple(args)) for args in tasks)


def raise_again(
    label: str, caught: Sequence[tuple[str, type[Warning]]], *, stacklevel: int = 2
) -> None:
    """Raise recorded warnings again in this process, each prefixed by ``label``."""
    for message, category in caught:
        warnings.warn(f"{label}: {message}", category, stacklevel=stacklevel + 1)


def default_cores(chains: int) -> int:
    """Processes for ``chains`` chains of PyMC's NUTS when ``cores`` is None.

    One per chain, up to the CPUs this process may use; 1 inside a daemonic
    process (a joblib or dask worker, which may not start children) or off
    the main thread (a threaded grid search, whose other fits hold the
    CPUs).  PyMC's own default, ``min(4, cpu_count() // 2)``, counts every
    second CPU as a hardware thread and so runs two chains one after the
    other on two CPUs.  Each chain holds its BLAS libraries at one thread
    (the sampler enters :func:`~rvm_pymc._core.threads.single_blas_thread`
    before PyMC forks), so a chain per CPU does not oversubscribe them.
    Measured on a quiet 2-CPU machine: ``benchmarks/README.md``, "Chains in
    parallel by default".

    Parameters
    ----------
    chains : int

    Returns
    -------
    int
        At least 1.

    Examples
    --------
    >>> default_cores(1)
    1
    """
    if multiprocessing.current_process().daemon:
        return 1
    if threading.current_thread() is not threading.main_thread():
        return 1
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cpus = os.cpu_count() or 1
    return max(1, min(int(chains), cpus))
