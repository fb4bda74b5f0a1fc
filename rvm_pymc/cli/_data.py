"""The command line's files: CSV tables in (features, target and task, as ``docs/cli.md``
says), the standardisation saved as ``model.json``, output paths checked before fitting."""

from __future__ import annotations

import argparse
import contextlib
import csv
import difflib
import errno
import json
import math
import os
import re
import shlex
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rvm_pymc._core.progress import PLAIN_PROGRESS
from rvm_pymc.cli._main import DataError, UsageError

__all__ = [
    "DataError",
    "Preprocess",
    "bars_on_stderr",
    "check_output_dir",
    "check_output_file",
    "load_data",
    "nuts_progress",
    "one_hot",
    "progress",
    "read_table",
    "split_features",
]

MODEL_FILE = "model.nc"
PREPROCESS_FILE = "model.json"
FORMAT = "rvm-pymc-cli-model/1"
_LINES = "rvm_pymc_lines"  # DataFrame.attrs key: the file line each data row starts on


def _line_numbers(path: str, n_rows: int) -> np.ndarray | None:
    """The 1-based line on which each data row starts; None if the count differs from pandas'."""
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


def listed(table, rows: np.ndarray, shown: int = 5, such: str = "") -> str:
    """``'line 7'``, ``'3 lines: 7, 9, 12'``, ``'93 lines: 2, 3, 4, 5, 6, ...'`` (the first
    ``shown`` rows; ``such`` between the count and the unit)."""
    first = where(table, int(rows[0]))
    if rows.size == 1:
        return first
    numbers = ", ".join(where(table, int(i)).split()[-1] for i in rows[:shown])
    more = ", ..." if rows.size > shown else ""
    return f"{rows.size} {such}{first.rsplit(' ', 1)[0]}s: {numbers}{more}"


def bad_rows(table, rows: np.ndarray) -> str:
    """``'line 7'``, ``'line 7 (3 such lines: 7, 9, 12)'``: the first bad row and how many."""
    first = where(table, int(rows[0]))
    return first if rows.size == 1 else f"{first} ({listed(table, rows, such='such ')})"


def shown_value(raw: Any) -> str:
    """A cell's value for a message: its text, cut at 30 characters, quoted."""
    text = str(raw)
    return repr(text if len(text) <= 30 else text[:27] + "...")


def read_table(path: str):
    """A CSV file with a header row as a DataFrame; DataError if it cannot be one."""
    import pandas as pd

    if not os.path.exists(path):
        raise DataError(f"{path}: no such file")
    if os.path.isdir(path):
        raise DataError(f"{path} is a directory, not a CSV file")
    try:
        if os.path.getsize(path) == 0:
            raise DataError(f"{path} is empty")
        table = pd.read_csv(path, skipinitialspace=True)
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
    """What ``predict`` must know besides the estimator: the feature columns, their means
    and sds (0 and 1 unless standardised), and the ``--one-hot`` levels."""

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
        """The standardisation of ``X`` over its rows, or the identity."""
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
        if not (
            len(pre.mean) == len(pre.scale) == len(pre.features) > 0
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


def file_system_type(path: str) -> str | None:
    """The type of the file system holding ``path`` (``proc``, ``tmpfs``, ...), or None."""
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
        kind = file_system_type(directory)
        system = f"a {kind} file system" if kind else "a file system"
        return f"{directory} is on {system}, which takes no new files"
    return f"cannot create files in {directory} ({reason})"


def _probe(option: str, directory: str, base: str, creating: str) -> None:
    """UsageError (naming ``creating``) unless a file can be created in ``directory``, which
    must exist."""
    from rvm_pymc._core import files

    if not os.path.isdir(directory):
        raise UsageError(f"argument {option}: the directory {directory} does not exist")
    try:
        probe = files.temporary_file(directory, base)
    except OSError as exc:
        raise UsageError(
            f"argument {option}: cannot create {creating}: {_why_not(directory, exc)}"
        ) from None
    os.unlink(probe)


def check_output_file(option: str, path: str, *, image: bool = False) -> None:
    """UsageError for a file ``path`` that cannot be written (or, ``image``, is no image type)."""
    if image:
        from matplotlib.backend_bases import FigureCanvasBase

        suffix = os.path.splitext(path)[1].lower().lstrip(".")
        formats = FigureCanvasBase.get_supported_filetypes()
        if suffix not in formats:
            raise UsageError(
                f"argument {option}: {path!r} must end in an image type matplotlib writes "
                f"({', '.join('.' + f for f in sorted(formats))}), or be 'none'"
            )
    target = os.path.realpath(path)
    directory = os.path.dirname(target)
    if os.path.isdir(target):
        raise UsageError(f"argument {option}: {path} is a directory")
    _probe(option, directory, os.path.basename(target), path)
    if os.path.exists(target) and not os.access(target, os.W_OK):
        raise UsageError(f"argument {option}: {path} exists and is not writable")


def check_output_dir(option: str, path: str) -> None:
    """UsageError for a directory that cannot be created or written."""
    target = os.path.realpath(path)
    if os.path.exists(target) and not os.path.isdir(target):
        raise UsageError(f"argument {option}: {path} exists and is not a directory")
    if os.path.isdir(target):
        _probe(option, target, "rvm-pymc", f"files in {path}")
        return
    parent = os.path.dirname(target)
    if os.path.exists(parent) and not os.path.isdir(parent):
        raise UsageError(f"argument {option}: {parent} is a file, not a directory")
    _probe(option, parent, os.path.basename(target), path)


def progress(message: str) -> None:
    """One progress line on standard error (standard output keeps the results)."""
    print(f"rvm-pymc: {message}", file=sys.stderr, flush=True)


STATS_COLUMNS = 120  # the narrowest terminal to show PyMC's bar with its statistics


def nuts_progress(jobs: int = 1) -> bool | str:
    """``progressbar`` of a NUTS fit: a live bar on a terminal with one job, else plain lines."""
    if not (sys.stderr.isatty() and jobs == 1):
        return PLAIN_PROGRESS
    try:
        columns = os.get_terminal_size(sys.stderr.fileno()).columns
    except (OSError, ValueError):
        columns = 80
    return True if columns >= STATS_COLUMNS else "split"


def bars_on_stderr() -> contextlib.redirect_stdout:
    """Standard output (PyMC's bar) redirected to standard error."""
    return contextlib.redirect_stdout(sys.stderr)


UNNAMED = re.compile(r"Unnamed: \d+")
ROWNAMES = "rownames"


def _names(names: Sequence[str]) -> str:
    return ", ".join(str(n) for n in names)


def _close(name: str, columns: Sequence[str]) -> list[str]:
    """The columns a mistyped ``name`` most likely meant (case ignored first)."""
    same_case = [c for c in columns if c.lower() == name.lower()]
    lowered = {c.lower(): c for c in columns}
    near = difflib.get_close_matches(name.lower(), list(lowered), n=3, cutoff=0.6)
    return list(dict.fromkeys(same_case + [lowered[c] for c in near]))


def _no_columns(path: str, said: str, names: Sequence[str], columns: Sequence[str]):
    """The DataError for ``names`` that are no columns: the closest names and every column."""
    guesses = dict.fromkeys(g for n in names for g in _close(n, columns))
    mean = f"; did you mean {' or '.join(repr(g) for g in guesses)}?" if guesses else ""
    return DataError(f"{path}: {said}{mean} (columns: {_names(columns)})")


MIN_ROWS_FOR_NUMBERS = 10  # fewest rows in which a column of the row numbers is taken for one


def row_numbers(col) -> str | None:
    """``'0..N-1'`` or ``'1..N'`` if ``col`` holds exactly the row numbers (else None)."""
    import pandas as pd

    values = pd.to_numeric(col, errors="coerce").to_numpy(dtype=float)
    n = values.size
    if n < MIN_ROWS_FOR_NUMBERS or not np.all(np.isfinite(values)):
        return None
    steps = np.arange(n, dtype=float)
    for first in (0, 1):
        if np.array_equal(values, steps + first):
            return f"{first}..{n - 1 + first}"
    return None


INDEX_NAMES = frozenset(
    ("id", "index", "idx", "row", "rowid", "row_id", "row.id", "rowname", "row.names")
) | frozenset(("row_names", "rownum", "row_number", "obs", "..1"))
# names (case aside) of a row index holding the row numbers; also X, R's for an empty header


@dataclass
class Selection:
    """The features; row indices left out (-> why); features holding the row numbers."""

    features: list[str]
    index: dict[str, str] = field(default_factory=dict)
    kept_numbers: dict[str, str] = field(default_factory=dict)


def select_features(
    table, target: str, path: str, features: Sequence[str] | None = None, drop: Sequence[str] = ()
) -> Selection:
    """The ``features`` given, or every column but the target, ``drop`` and row indices."""
    columns = list(table.columns)
    if target not in columns:
        raise _no_columns(path, f"no column {target!r}", [target], columns)
    for option, names in (("--features", features or ()), ("--drop", drop)):
        if missing := [c for c in names if c not in columns]:
            said = f"{option} names {_names(missing)}, not a column of the file"
            raise _no_columns(path, said, missing, columns)
        if target in names:
            raise DataError(f"{path}: {option} names the target {target!r}; it is never a feature")
    if features is not None:
        repeated = sorted({c for c in features if list(features).count(c) > 1})
        if repeated:
            raise DataError(f"{path}: --features names {_names(repeated)} more than once")
        return Selection(list(features))
    found = Selection([])  # the row index columns, and others holding the row numbers
    for name in columns:
        if name == target or name in drop:
            continue
        numbers = row_numbers(table[name])
        if name == ROWNAMES:
            found.index[name] = "R's row names"
        elif UNNAMED.fullmatch(name):
            found.index[name] = "an empty header, as pandas writes its index"
        elif numbers and (name == "X" or name.lower() in INDEX_NAMES):
            found.index[name] = f"named so and holding the row numbers {numbers}"
        else:
            found.features.append(name)
            if numbers:
                found.kept_numbers[name] = numbers
    if not found.features:
        left = [*drop, *found.index]
        raise DataError(
            f"{path}: no feature columns besides the target {target!r}"
            + (f" (left out: {_names(left)})" if left else "")
        )
    return found


@dataclass
class ColumnProblem:
    """A column's rows (0-based) of text and of empty cells, and its first text value."""

    name: str
    text: np.ndarray
    missing: np.ndarray
    first_text: str = ""

    def describe(self, table) -> str:
        """``'Cylinders' (text 'rotary' on line 59)``, ``'Luggage.room' (missing on 11 ...)``."""
        parts = []
        if self.text.size:
            parts.append(f"text {self.first_text} on {listed(table, self.text, 3)}")
        if self.missing.size:
            parts.append(f"missing on {listed(table, self.missing, 3)}")
        return f"{self.name!r} ({'; '.join(parts)})"


def column_problem(table, name: str) -> ColumnProblem:
    """The :class:`ColumnProblem` of the column ``name``."""
    import pandas as pd

    col = table[name]
    values = pd.to_numeric(col, errors="coerce").to_numpy(dtype=float)
    missing = col.isna().to_numpy()
    text = np.flatnonzero(~np.isfinite(values) & ~missing)
    first = shown_value(col.iloc[int(text[0])]) if text.size else ""
    return ColumnProblem(str(name), text, np.flatnonzero(missing), first)


def numeric_features(
    table,
    columns: Sequence[str],
    path: str,
    *,
    numeric_only: bool = False,
    predicting: bool = False,
    suggest_one_hot: bool = True,
) -> tuple[np.ndarray, list[str], list[ColumnProblem]]:
    """``X``, its columns and those left out (``numeric_only``; else a DataError naming them)."""
    import pandas as pd

    found = [column_problem(table, name) for name in columns]
    problems = [p for p in found if p.text.size or p.missing.size]
    if problems and not numeric_only:
        raise DataError(_refusal(path, problems, table, predicting, suggest_one_hot))
    bad = {p.name for p in problems}
    kept = [c for c in columns if c not in bad]
    if not kept:
        raise DataError(
            f"{path}: no feature column holds a number in every row (left out by "
            f"--numeric-only: {'; '.join(p.describe(table) for p in problems)})"
        )
    X = np.column_stack(
        [pd.to_numeric(table[c], errors="coerce").to_numpy(dtype=float) for c in kept]
    )
    return X, kept, problems


def _refusal(
    path: str, problems: list[ColumnProblem], table, predicting: bool, suggest_one_hot: bool
) -> str:
    if predicting:
        advice = "the model needs a number in every row of its features; fix those rows"
    else:
        names = " ".join(shlex.quote(p.name) for p in problems)
        text = suggest_one_hot and any(p.text.size for p in problems)
        advice = (
            "features must be numbers: give --numeric-only to leave "
            f"{'it' if len(problems) == 1 else 'them'} out"
            + (", --one-hot to encode text of a few values as 0/1 columns" if text else "")
            + f", or --drop {names}, or fix those rows"
        )
    if len(problems) > 1:
        described = ", ".join(p.describe(table) for p in problems)
        return (
            f"{path}: {len(problems)} feature columns are not a number in every row: "
            f"{described}; {advice}"
        )
    # one bad column, in the words of a single value: its first bad row and how many
    (p,) = problems
    if p.text.size:
        what, rows = f"the non-numeric value {p.first_text}", p.text
    else:
        what, rows = "a missing value", p.missing
    more = ""
    if p.text.size and p.missing.size:
        more = f" and missing values on {listed(table, p.missing, 3)}"
    return f"{path}: column {p.name!r} has {what} on {bad_rows(table, rows)}{more}; {advice}"


MAX_LEVELS = 20  # most distinct values of a text column that --one-hot encodes
MISSING_LEVEL = "NA"


def _level_text(value) -> str:
    """A cell's level name, whatever type pandas read: ``'2'`` and 2.0 are both ``2``."""
    try:
        number = float(value)
    except ValueError:  # text that is no number
        return str(value)
    if np.isfinite(number) and number == int(number):
        return str(int(number))
    return str(number)


def _level_texts(col):
    """The level of every cell of the column ``col`` (an empty cell: :data:`MISSING_LEVEL`)."""
    import pandas as pd

    cells = zip(col.astype(object), col.isna(), strict=True)
    texts = [MISSING_LEVEL if missing else _level_text(v) for v, missing in cells]
    return pd.Series(texts, index=col.index, dtype=object)


def one_hot_levels(table, columns: Sequence[str]) -> dict[str, list[str]]:
    """Text columns of ``columns`` of at most :data:`MAX_LEVELS` levels (``NA`` one) -> levels."""
    import pandas as pd

    out = {}
    for name in columns:
        present = table[name].dropna()  # a text column: a value that is no number
        if present.size and pd.to_numeric(present, errors="coerce").isna().any():
            levels = sorted(set(_level_texts(table[name])))
            if len(levels) <= MAX_LEVELS:
                out[str(name)] = levels
    return out


def one_hot(table, levels: dict[str, list[str]], path: str, *, fitted: bool = False):
    """A copy of ``table`` with a 0/1 column ``COL=level`` per level (``fitted``: a saved
    model's levels, which every value must have)."""
    import pandas as pd

    extra = {}
    for name, known in levels.items():
        if name not in table.columns:
            continue  # split_features names the missing column
        values = _level_texts(table[name])
        if fitted:
            new = np.flatnonzero(~values.isin(known).to_numpy())
            if new.size:
                raise DataError(
                    f"{path}: column {name!r} has the value {shown_value(values.iloc[new[0]])} "
                    f"on {bad_rows(table, new)}, which the model was not fitted with (its "
                    f"values: {', '.join(known)}); such rows cannot be predicted"
                )
        for level in known:
            column = f"{name}={level}"
            if column in table.columns:
                raise DataError(
                    f"{path}: --one-hot would make a column {column!r}, which the file has "
                    "already; rename that column"
                )
            extra[column] = (values == level).to_numpy(dtype=float)
    out = pd.concat([table, pd.DataFrame(extra, index=table.index)], axis=1)
    out.attrs = dict(table.attrs)
    return out


def encoded_features(features: Sequence[str], levels: dict[str, list[str]]) -> list[str]:
    """``features`` with each encoded column replaced, in place, by its indicator columns."""
    out = []
    for name in features:
        if name in levels:
            out.extend(f"{name}={level}" for level in levels[name])
        else:
            out.append(name)
    return out


def split_features(table, path: str, features: list[str]) -> np.ndarray:
    """A saved model's ``features`` of ``table`` as floats."""
    columns = list(table.columns)
    if missing := [c for c in features if c not in columns]:
        said = f"the model needs the feature column{'s' * (len(missing) > 1)} {_names(missing)}"
        raise _no_columns(path, f"{said}, not in the file", missing, columns)
    return numeric_features(table, features, path, predicting=True)[0]


MAX_GUESSED_CLASSES = 10  # most distinct integers of a target taken for class codes
NUMERIC_SHARE = 0.8  # from this share of numbers, a target's text values are mistakes
CLASS_SHARE = 0.2  # more classes than this share of the rows need --force-classes


def _task(table, target: str, requested: str | None, path: str) -> str:
    """The task asked for, or the one the target implies."""
    import pandas as pd

    if requested is not None:
        return requested
    present = table[target].dropna()
    problem = column_problem(table, target)
    text = problem.text
    if present.size and text.size:
        if text.size > (1.0 - NUMERIC_SHARE) * present.size:
            return "classification"  # labels given as text
        raise DataError(
            f"{path}: the target column {target!r} holds numbers but also the non-numeric "
            f"value {problem.first_text} on {bad_rows(table, text)}; fix or "
            "remove those rows, or give --task classification if the column holds class labels"
        )
    values = pd.to_numeric(present, errors="coerce").to_numpy(dtype=float)
    integers = bool(np.all(values == np.round(values)))
    if integers and np.unique(values).size <= MAX_GUESSED_CLASSES:
        return "classification"
    if integers and values.size and values.min() == 0:
        progress(
            f"note: the target column {target!r} holds non-negative integers with zeros: "
            "taken for counts (a Poisson RVM, log link); give --task regression for a "
            "Gaussian one"
        )
        return "counts"
    return "regression"


def _target(table, target: str, task: str, path: str) -> np.ndarray:
    """The target column: floats for regression and counts, labels for classification."""
    import pandas as pd

    y = table[target]
    problem = column_problem(table, target)
    said = f"{path}: the target column {target!r}"
    numeric = task in ("regression", "counts")
    if numeric and problem.text.size:
        raise DataError(
            f"{said} has the non-numeric value {problem.first_text} on "
            f"{bad_rows(table, problem.text)}; {task} needs a number in every row (give "
            "--task classification for class labels)"
        )
    if problem.missing.size:
        what, fix = ("value", "fill") if numeric else ("label", "label")
        rows = bad_rows(table, problem.missing)
        raise DataError(f"{said} has a missing {what} on {rows}; remove or {fix} those rows")
    if not numeric:
        values = y.to_numpy()
        if np.unique(values.astype(str)).size < 2:
            raise DataError(
                f"{path}: column {target!r} has one class only; classification needs two"
            )
        return values
    values = pd.to_numeric(y).to_numpy(dtype=float)
    negative = np.flatnonzero(values < 0)
    if task == "counts" and negative.size:
        raise DataError(
            f"{said} has the negative value {shown_value(y.iloc[int(negative[0])])} on "
            f"{bad_rows(table, negative)}; counts must be >= 0 (give --task regression for a "
            "signed quantity)"
        )
    if task == "counts" and not np.any(values > 0):
        raise DataError(f"{said} is all zero; no counts to fit")
    return values


def check_classes(y: np.ndarray, target: str, path: str, force: bool) -> None:
    """DataError for too many classes (unless ``force``); a warning for classes of one row."""
    labels, counts = np.unique(np.asarray(y).astype(str), return_counts=True)
    n, k = int(counts.sum()), int(labels.size)
    single = [str(c) for c in labels[counts < 2]]
    shown = ", ".join(repr(c) for c in single[:5]) + (", ..." if len(single) > 5 else "")
    singles = f"; {len(single)} of them with a single row ({shown})" if single else ""
    if k > CLASS_SHARE * n and not force:
        raise DataError(
            f"{path}: the classification target {target!r} has {k} classes in {n} rows "
            f"(more than {CLASS_SHARE:g} x {n} = {CLASS_SHARE * n:g}{singles}): too few rows "
            "per class to learn them, and a softmax RVM over many classes fits slowly into a "
            "large model; choose another target, or give --force-classes to fit it anyway"
        )
    if single:
        progress(
            f"warning: the classification target {target!r} has {len(single)} "
            f"class{'es' if len(single) > 1 else ''} with a single row ({shown}) among "
            f"{k} classes in {n} rows: the classifier cannot learn "
            f"{'them' if len(single) > 1 else 'it'}; check the labels"
        )


@dataclass
class Data:
    """A table read for ``fit`` or ``compare``."""

    table: Any
    X: np.ndarray
    features: list[str]
    y: np.ndarray
    task: str
    left_out: list[str]
    one_hot: dict[str, list[str]]


def load_data(args: argparse.Namespace) -> Data:
    """Read DATA as :class:`Data`, with a note for each column left out or encoded."""
    table = read_table(args.data)
    chosen = select_features(table, args.target, args.data, args.features, args.drop)
    task = _task(table, args.target, args.task, args.data)
    y = _target(table, args.target, task, args.data)
    levels = one_hot_levels(table, chosen.features) if args.one_hot else {}
    encoded = one_hot(table, levels, args.data) if levels else table
    X, names, skipped = numeric_features(
        encoded,
        encoded_features(chosen.features, levels),
        args.data,
        numeric_only=args.numeric_only,
        suggest_one_hot=not args.one_hot,
    )
    # notes only once the table is accepted: a refused one gets its error line alone
    for name, why in chosen.index.items():
        progress(
            f"note: column {name!r} is a row index ({why}); left out of the features "
            "(name it in --features to use it)"
        )
    for name, numbers in chosen.kept_numbers.items():
        if name in names:
            progress(
                f"note: column {name!r} holds the row numbers {numbers}; kept as a feature "
                f"(--drop {name} if it is a row index)"
            )
    if levels:
        progress(
            f"note: --one-hot encoded {len(levels)} text column{'s' if len(levels) > 1 else ''} "
            "as 0/1 columns: "
            + ", ".join(f"{name!r} ({', '.join(lv)})" for name, lv in levels.items())
        )
    if skipped:
        progress(
            f"note: --numeric-only left out {len(skipped)} column"
            f"{'s' if len(skipped) > 1 else ''} that are not a number in every row: "
            + ", ".join(p.describe(table) for p in skipped)
        )
    if task == "classification":  # refused, or a warning of classes of one row
        check_classes(y, args.target, args.data, args.force_classes)
    left_out = [*chosen.index, *(p.name for p in skipped)]
    return Data(table, X, names, y, task, left_out, levels)
