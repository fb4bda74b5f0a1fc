"""The errors of the command line and the exit status each one gives (see :mod:`rvm_pymc.cli`)."""

from __future__ import annotations

__all__ = ["DataError", "RunError", "UsageError"]


class UsageError(Exception):
    """A command line that cannot be run: exit status 2, before any fitting."""


class DataError(UsageError):
    """A data file that cannot be used (found while reading, before any fit): exit status 2."""


class RunError(Exception):
    """A run that failed after the arguments were accepted: exit status 1."""
