"""The entry point of the command line (see :mod:`rvm_pymc.cli`): exit statuses and messages."""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import stat
import sys
import traceback
import warnings
from collections.abc import Callable, Iterator, Sequence

from rvm_pymc.cli._errors import DataError, RunError, UsageError
from rvm_pymc.cli._parser import PROG, build_parser

__all__ = ["cli_words", "main"]


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


_FLAGS = (
    (re.compile(r"\bgamma_grid\b"), "--gamma-grid"),
    (re.compile(r"\bgamma='(\w+)'"), r"--gamma \1"),
    (re.compile(r"\bgamma=(\d[\w.+-]*)"), r"--gamma \1"),
    (re.compile(r"\bdraws=(\d+)"), r"--draws \1"),
    (re.compile(r"\btune=(\d+)"), r"--tune \1"),
    (re.compile(r"\bn_jobs\b"), "--jobs"),
    (re.compile(r"\brandom_state\b"), "--seed"),
)
"""The estimator's arguments that the command line sets by a flag, and the flag's words."""


def cli_words(text: str) -> str:
    """A message of the estimators in the command line's words (``gamma=0.5``: ``--gamma 0.5``)."""
    for pattern, flag in _FLAGS:
        text = pattern.sub(flag, text)
    return text


def _error(message: str) -> None:
    print(f"{PROG}: error: {_one_line(message)}", file=sys.stderr)


@contextlib.contextmanager
def _one_line_warnings(debug: bool) -> Iterator[None]:
    """Warnings as ``rvm-pymc: warning: ...`` lines (as Python raised them under --debug)."""
    if debug:
        yield
        return

    def show(message, category, filename, lineno, file=None, line=None) -> None:
        print(f"{PROG}: warning: {cli_words(_one_line(message))}", file=sys.stderr)

    with warnings.catch_warnings():
        warnings.showwarning = show
        yield


def _output_is_a_pipe() -> bool:
    try:
        return stat.S_ISFIFO(os.fstat(sys.stdout.fileno()).st_mode)
    except (AttributeError, OSError, ValueError):  # no file descriptor (captured output)
        return False


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``rvm-pymc`` command.

    Parameters
    ----------
    argv : sequence of str, optional
        The arguments after the program name; default ``sys.argv[1:]``.

    Returns
    -------
    int
        The exit status: 0 success, 1 failed run, 2 bad usage, 130 interrupted.
        Errors are printed as one line to standard error; nothing is raised.
    """
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except UsageError as exc:
        _error(str(exc))
        return 2
    except SystemExit as exc:  # --help and --version print and exit 0
        return exc.code if isinstance(exc.code, int) else 0
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    debug = bool(args.debug)
    check: Callable[[argparse.Namespace], None] = args.check
    try:
        check(args)
    except UsageError as exc:
        _error(str(exc))
        return 2
    try:
        with _one_line_warnings(debug):
            return args.func(args)
    except UsageError as exc:  # bad input data, found while reading, before any fit
        if debug and isinstance(exc, DataError):
            traceback.print_exc()
        _error(str(exc))
        return 2
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        if isinstance(exc, BrokenPipeError) and _output_is_a_pipe():
            # the reader of the output left (`predict ... | head`): the later writes and
            # the flush at exit go nowhere instead of raising again; 128 + SIGPIPE
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 141
        if debug:
            traceback.print_exc()
        message = str(exc) if isinstance(exc, RunError) else f"{type(exc).__name__}: {exc}"
        hint = "" if debug else " (rerun with --debug for the traceback)"
        _error(message + hint)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
