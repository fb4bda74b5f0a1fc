"""How the command line shows a sampler's progress: a live bar on a terminal, plain
lines in a log, and standard output kept for the results.

PyMC draws its live bar (rich) on standard output; redirected, that output
becomes a table with cut-off headers in the results.  So the command line
asks for the bar only when standard error is a terminal, draws it there
(:func:`bars_on_stderr`), and otherwise asks for plain lines on standard
error (``progressbar="lines"``: every 10 s and every 10% of each chain's
iterations, and one line at the end with the time, max R-hat and divergences).
"""

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
"""A terminal at least this wide shows PyMC's bar with its statistics (divergences, step
size, ...); a narrower one the bar alone, whose headers are then not cut off."""


def nuts_progress(jobs: int = 1) -> bool | str:
    """``progressbar`` of a NUTS fit: a live bar on a terminal, else plain lines.

    With ``jobs`` > 1 fits run in other processes at once, whose bars would
    overwrite each other: plain lines then too.
    """
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
