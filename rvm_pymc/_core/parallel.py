"""Independent fits through joblib, each task's warnings raised again in the caller."""

from __future__ import annotations

import multiprocessing
import threading
import warnings
from collections.abc import Callable, Sequence
from typing import Any

from rvm_pymc._core.threads import default_workers
from rvm_pymc.exceptions import recorded_in_thread, warn_user

__all__ = ["default_cores", "raise_again", "record_warnings", "run_recorded", "run_tasks"]


def record_warnings(fn: Callable, args: tuple) -> tuple[Any, list[tuple[str, type[Warning]]]]:
    """``fn(*args)`` and the warnings it raised, as (message, category) pairs.

    Off the main thread only the package's own warnings are recorded:
    ``warnings.catch_warnings`` would swap the process's warning state under other threads.
    """
    if threading.current_thread() is not threading.main_thread():
        with recorded_in_thread() as caught:
            out = fn(*args)
        return out, caught
    with warnings.catch_warnings(record=True) as recorded:
        warnings.simplefilter("always")
        out = fn(*args)
    return out, [(str(w.message), w.category) for w in recorded]


def run_tasks(
    fn: Callable, tasks: Sequence[tuple], labels: Sequence[str], n_jobs: int | None
) -> list:
    """``[fn(*task) for task in tasks]`` through joblib; ``labels`` prefix each task's warnings."""
    out = run_recorded(fn, tasks, n_jobs)
    for label, (_, caught) in zip(labels, out, strict=True):
        raise_again(label, caught)
    return [result for result, _ in out]


def run_recorded(
    fn: Callable, tasks: Sequence[tuple], n_jobs: int | None
) -> list[tuple[Any, list[tuple[str, type[Warning]]]]]:
    """``[(fn(*task), its warnings) for task in tasks]``: the caller raises those it keeps."""
    from joblib import Parallel, delayed

    return Parallel(n_jobs=n_jobs)(delayed(record_warnings)(fn, tuple(args)) for args in tasks)


def raise_again(label: str, caught: Sequence[tuple[str, type[Warning]]]) -> None:
    """Raise recorded warnings again here, each prefixed by ``label``, at the user's line."""
    for message, category in caught:
        warn_user(f"{label}: {message}", category)


def default_cores(chains: int) -> int:
    """Processes for ``chains`` NUTS chains: one per chain up to the usable CPUs; 1 in a
    daemonic process (a joblib or dask worker) or off the main thread.

    >>> default_cores(1)
    1
    """
    if multiprocessing.current_process().daemon:
        return 1
    if threading.current_thread() is not threading.main_thread():
        return 1
    return max(1, min(int(chains), default_workers()))
