"""Files and messages of the command line: CSV tables in; the standardisation ``fit`` saves
beside the model as ``model.json`` (feature names, means, sds, target, task) for ``predict``;
output paths checked before any fitting by making (and removing) an empty file where the
output will go; progress on standard error (standard output keeps the results)."""

from __future__ import annotations

import contextlib
import csv
import errno
import json
import math
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rvm_pymc._core.progress import PLAIN_PROGRESS
from rvm_pymc.cli._main import DataError, UsageError

__all__ = [
    "DataError",
    "Preprocess",
    "bad_rows",
    "bars_on_stderr",
    "check_output_dir",
    "check_output_file",
    "nuts_progress",
    "progress",
    "read_table",
    "shown_value",
    "where",
]

MODEL_FILE = "model.nc"
PREPROCESS_FILE = "model.json"
FORMAT = "rvm-pymc-cli-model/1"
_LINES = "rvm_pymc_lines"
"""Key of ``DataFrame.attrs``: the line of the file on which each data row starts."""


def _line_numbers(path: str, n_rows: int) -> np.ndarray | None:
    """The 1-based line on which each data row starts (as pandas reads: blank lines are no
    rows, quoted fields may span lines); None if the count differs from pandas'."""
    starts = []
    try:
        with open(path, newline="", encoding="utf-8-sig") as fh:
            reader = csv.reader(fh, skipinitialspace=True)
            previous = 0
            for record in reader:
                if record not in ([], [""]):
                    starts.append(previous + 1)
                previous = reader.line_num
    except (OSError, UnicodeDecodeError, csv.Error):
        return None
    rows = starts[1:]  # the first record is the header
    return np.array(rows) if len(rows) == n_rows else None


def where(table, i: int) -> str:
    """Where data row ``i`` (0-based) of ``table`` is in its file: ``line 7``, as editors count."""
    lines = table.attrs.get(_LINES)
    return f"line {int(lines[i])}" if lines is not None else f"data row {i + 1}"


def listed(table, rows: np.ndarray, shown: int = 5) -> str:
    """``'lines: 7, 9, 12'`` (the first ``shown`` rows, then ``...``)."""
    unit = where(table, int(rows[0])).split()[0] + "s"
    numbers = ", ".join(where(table, int(i)).split()[-1] for i in rows[:shown])
    return f"{unit}: {numbers}{', ...' if rows.size > shown else ''}"


def bad_rows(table, rows: np.ndarray) -> str:
    """``'line 7'``, ``'line 7 (3 such lines: 7, 9, 12)'``: the first bad row and how many."""
    first = where(table, int(rows[0]))
    return first if rows.size == 1 else f"{first} ({rows.size} such {listed(table, rows)})"


def shown_value(raw: Any) -> str:
    """A cell's value for a message: its text, cut at 30 characters, quoted."""
    text = str(raw)
    return repr(text if len(text) <= 30 else text[:27] + "...")


def read_table(path: str):
    """A CSV file with a header row as a DataFrame (each row's line kept for :func:`where`);
    DataError if it is missing, unreadable, empty or not CSV."""
    import pandas as pd

    if not os.path.exists(path):
        raise DataError(f"{path}: no such file")
    if os.path.isdir(path):
        raise DataError(f"{path} is a directory, not a CSV file")
    try:
        if os.path.getsize(path) == 0:
            raise DataError(f"{path} is empty")
        table = pd.read_csv(path, skipinitialspace=True)
    except DataError:
        raise
    except pd.errors.EmptyDataError:
        raise DataError(f"{path} is empty (no header row)") from None
    except (pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise DataError(f"{path} is not a readable CSV table: {exc}") from None
    except OSError as exc:
        raise DataError(f"cannot read {path}: {exc.strerror or exc}") from None
    if table.shape[0] == 0:
        raise DataError(f"{path} has a header but no data rows")
    table.attrs[_LINES] = _line_numbers(path, table.shape[0])
    table.columns = [str(c).strip() for c in table.columns]
    dup = sorted({c for c in table.columns if list(table.columns).count(c) > 1})
    if dup:
        raise DataError(f"{path}: duplicate column names {', '.join(dup)}")
    return table


@dataclass
class Preprocess:
    """What ``predict`` must know besides the estimator: the columns and the standardisation.

    Attributes
    ----------
    features : list of str
        Feature column names, in the model's order.
    target : str
        Name of the target column at fit time.
    task : {"regression", "classification", "counts"}
    mean, scale : list of float
        Feature means and standard deviations of the training rows (0 and 1
        when not standardised; a constant column keeps scale 1).
    standardise : bool
    details : dict
        Free-form facts about the fit (method, kernel, width), for people.
    one_hot : dict
        Text column -> its levels, each a 0/1 feature ``COL=level``
        (``--one-hot``; :func:`rvm_pymc.cli._columns.one_hot`); empty without.
    """

    features: list[str]
    target: str
    task: str
    mean: list[float]
    scale: list[float]
    standardise: bool
    details: dict[str, Any] = field(default_factory=dict)
    one_hot: dict[str, list[str]] = field(default_factory=dict)

    @classmethod
    def fit(cls, X: np.ndarray, features, target, task, standardise: bool) -> Preprocess:
        """The standardisation of ``X`` (means and sds over its rows) or the identity."""
        if standardise:
            mean = X.mean(axis=0)
            scale = X.std(axis=0)
            scale = np.where(scale > 0, scale, 1.0)
        else:
            mean, scale = np.zeros(X.shape[1]), np.ones(X.shape[1])
        return cls(list(features), str(target), task, mean.tolist(), scale.tolist(), standardise)

    def transform(self, X: np.ndarray) -> np.ndarray:
        """Standardise ``X`` with the stored means and standard deviations."""
        return (np.asarray(X, dtype=float) - np.asarray(self.mean)) / np.asarray(self.scale)

    def to_json(self) -> str:
        return json.dumps({"format": FORMAT, **self.__dict__}, indent=2, allow_nan=False)

    @classmethod
    def from_json(cls, text: str, path: str) -> Preprocess:
        """Read what :meth:`to_json` wrote; a :class:`DataError` for anything else."""
        try:
            d = json.loads(text)
        except ValueError:
            raise DataError(f"{path} is not a JSON file written by 'rvm-pymc fit'") from None
        if not isinstance(d, dict) or d.get("format") != FORMAT:
            raise DataError(f"{path} was not written by 'rvm-pymc fit' (format {FORMAT})")
        try:
            pre = cls(
                features=[str(f) for f in d["features"]],
                target=str(d["target"]),
                task=str(d["task"]),
                mean=[float(v) for v in d["mean"]],
                scale=[float(v) for v in d["scale"]],
                standardise=bool(d["standardise"]),
                details=dict(d.get("details", {})),
                one_hot={
                    str(k): [str(v) for v in levels]
                    for k, levels in dict(d.get("one_hot", {})).items()
                },
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise DataError(f"{path} is damaged: {type(exc).__name__}: {exc}") from None
        n = len(pre.features)
        if not (
            len(pre.mean) == len(pre.scale) == n > 0
            and all(math.isfinite(v) for v in pre.mean + pre.scale)
            and all(v > 0 for v in pre.scale)
            and pre.task in ("regression", "classification", "counts")
        ):
            raise DataError(f"{path} is damaged: features, means and scales do not fit together")
        return pre


def model_paths(model: str) -> tuple[str, str]:
    """The estimator and preprocessing files of MODEL (a fit's directory or model file)."""
    is_dir = os.path.isdir(model)
    nc = os.path.join(model, MODEL_FILE) if is_dir else model
    pre = os.path.join(os.path.dirname(nc), PREPROCESS_FILE)
    if not os.path.exists(nc):
        where = f"{model} holds no {MODEL_FILE}" if is_dir else f"{model}: no such file"
        raise DataError(f"{where} (give the --out directory of 'rvm-pymc fit')")
    if not os.path.exists(pre):
        raise DataError(
            f"{pre}: no such file; 'rvm-pymc fit' writes it beside {MODEL_FILE} "
            "(the feature names and their standardisation)"
        )
    return nc, pre


# ------------------------------------------------------------------ output paths


def image_formats() -> dict[str, str]:
    """The image types matplotlib writes: suffix (without the dot) -> description."""
    from matplotlib.backend_bases import FigureCanvasBase

    return FigureCanvasBase.get_supported_filetypes()


def file_system_type(path: str) -> str | None:
    """The type of the file system holding ``path`` (``proc``, ``tmpfs``, ...; None unknown)."""
    target = os.path.realpath(path)
    best, kind = "", None
    try:
        with open("/proc/self/mounts", encoding="utf-8") as fh:
            for line in fh:
                fields = line.split()
                if len(fields) < 3:
                    continue
                point = fields[1].replace("\\040", " ")
                inside = target == point or target.startswith(point.rstrip("/") + "/")
                if inside and len(point) >= len(best):
                    best, kind = point, fields[2]
    except OSError:
        return None
    return kind


def _why_not(directory: str, exc: OSError) -> str:
    """Why no file can be created in the existing ``directory``, in words that name it."""
    reason = exc.strerror or str(exc)
    if exc.errno == errno.EROFS:
        return f"{directory} is on a read-only file system"
    if exc.errno in (errno.EACCES, errno.EPERM):
        return f"no permission to create files in {directory} ({reason})"
    if exc.errno == errno.ENOSPC:
        return f"the file system of {directory} is full ({reason})"
    if exc.errno == errno.ENOENT and os.path.isdir(directory):
        # a virtual file system (/proc, /sys) that takes no new files
        kind = file_system_type(directory)
        system = f"a {kind} file system" if kind else "a file system"
        return f"{directory} is on {system}, which takes no new files"
    return f"cannot create files in {directory} ({reason})"


def _probe(option: str, directory: str, base: str, creating: str) -> None:
    """UsageError (naming ``creating``) unless a file can be created in ``directory``."""
    from rvm_pymc._core import files

    try:
        probe = files.temporary_file(directory, base)
    except OSError as exc:
        raise UsageError(
            f"argument {option}: cannot create {creating}: {_why_not(directory, exc)}"
        ) from None
    os.unlink(probe)


def check_output_file(option: str, path: str, *, image: bool = False) -> None:
    """UsageError (naming ``option``) for a file ``path`` the command could not write, or
    with ``image`` whose suffix is no image type matplotlib writes."""
    if image:
        suffix = os.path.splitext(path)[1].lower().lstrip(".")
        formats = image_formats()
        if suffix not in formats:
            raise UsageError(
                f"argument {option}: {path!r} must end in an image type matplotlib writes "
                f"({', '.join('.' + f for f in sorted(formats))}), or be 'none'"
            )
    target = os.path.realpath(path)
    directory = os.path.dirname(target)
    if os.path.isdir(target):
        raise UsageError(f"argument {option}: {path} is a directory")
    if not os.path.isdir(directory):
        raise UsageError(f"argument {option}: the directory {directory} does not exist")
    _probe(option, directory, os.path.basename(target), path)
    if os.path.exists(target) and not os.access(target, os.W_OK):
        raise UsageError(f"argument {option}: {path} exists and is not writable")


def check_output_dir(option: str, path: str) -> None:
    """UsageError (naming ``option``) for a directory the command could not create or write."""
    target = os.path.realpath(path)
    if os.path.exists(target) and not os.path.isdir(target):
        raise UsageError(f"argument {option}: {path} exists and is not a directory")
    if os.path.isdir(target):
        _probe(option, target, "rvm-pymc", f"files in {path}")
        return
    parent = os.path.dirname(target)
    if os.path.exists(parent) and not os.path.isdir(parent):
        raise UsageError(f"argument {option}: {parent} is a file, not a directory")
    if not os.path.isdir(parent):
        raise UsageError(f"argument {option}: the directory {parent} does not exist")
    _probe(option, parent, os.path.basename(target), path)


# ------------------------------------------------------------------ progress


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
