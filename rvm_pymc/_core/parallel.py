"""Independent fits through joblib, with the warnings of every task kept.

joblib runs tasks in other processes (loky) or on other machines (the
``"dask"`` or ``"ray"`` backends of :func:`joblib.parallel_config`); a warning
raised there never reaches the caller.  :func:`run_tasks` records each task's
warnings where it runs and raises them again in the calling process, prefixed
by the task's label, so that a fit that did not converge is reported whatever
the backend.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["raise_again", "record_warnings", "run_recorded", "run_tasks"]


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
