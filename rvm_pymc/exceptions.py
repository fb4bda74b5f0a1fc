"""Warnings raised by rvm_pymc, and :func:`warn_user`, which raises one at the user's line."""

import contextlib
import os
import sys
import threading
import warnings
from collections.abc import Iterator

_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep
_captured = threading.local()  # .into: the list of a recorded_in_thread block


@contextlib.contextmanager
def recorded_in_thread() -> Iterator[list[tuple[str, type[Warning]]]]:
    """Record this thread's :func:`warn_user` warnings as (message, category) pairs.

    Worker threads cannot use ``warnings.catch_warnings``: it swaps the whole process's state.
    """
    outer = getattr(_captured, "into", None)
    _captured.into = []
    try:
        yield _captured.into
    finally:
        _captured.into = outer


def warn_user(message: str, category: type[Warning]) -> None:
    """``warnings.warn`` at the user's line: the caller of the package's outermost frame."""
    into = getattr(_captured, "into", None)
    if into is not None:  # a worker thread's recorded task
        into.append((message, category))
        return
    frame, outermost = sys._getframe(1), None
    while frame is not None:
        if frame.f_code.co_filename.startswith(_PACKAGE):
            outermost = frame
        frame = frame.f_back
    user = sys._getframe(1) if outermost is None else (outermost.f_back or outermost)
    scope = user.f_globals
    # no module_globals, as warnings.warn passes none: a notebook cell's globals have no
    # __spec__.loader, and warn_explicit raises ValueError for that
    warnings.warn_explicit(
        message,
        category,
        user.f_code.co_filename,
        user.f_lineno,
        scope.get("__name__", "<string>"),
        scope.setdefault("__warningregistry__", {}),
    )


class ConvergenceWarning(UserWarning):
    """A fit stopped before its convergence criterion was met."""


class SamplingWarning(UserWarning):
    """MCMC diagnostics (divergences, R-hat, ESS) indicate an unreliable posterior."""


class PriorWarning(UserWarning):
    """The chosen hyperprior is unsuitable for the requested fit (e.g. near-improper for NUTS)."""


class InterpolationWarning(UserWarning):
    """A type-II fit interpolates its training data (most rows relevant, or the noise at its
    bound): its predictive bands are too narrow (``rvm_pymc._core.interpolation``)."""
