"""A sampler's progress on standard error: a live bar on a terminal, plain lines otherwise
(standard output keeps the results)."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator

from rvm_pymc._core.progress import PLAIN_PROGRESS

__all__ = ["STATS_COLUMNS", "bars_on_stderr", "nuts_progress", "progress"]


def progress(message: str) -> None:
    """One progress line on standard error (standard output keeps the results)."""
    print(f"rvm-pymc: {message}", file=sys.stderr, flush=True)


STATS_COLUMNS = 120
"""A terminal at least this wide shows PyMC's bar with its statistics; a narrower one the bar."""


def nuts_progress(jobs: int = 1) -> bool | str:
    """``progressbar`` of a NUTS fit: a live bar on a terminal with one job, else plain lines."""
    if not (sys.stderr.isatty() and jobs == 1):
        return PLAIN_PROGRESS
    try:
        columns = os.get_terminal_size(sys.stderr.fileno()).columns
    except (OSError, ValueError):
        columns = 80
    return True if columns >= STATS_COLUMNS else "split"


@contextlib.contextmanager
def bars_on_stderr() -> Iterator[None]:
    """While fitting, what is written to standard output (PyMC's bar) goes to standard error."""
    with contextlib.redirect_stdout(sys.stderr):
        yield
