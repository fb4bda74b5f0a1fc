"""The columns of a CSV table (``docs/cli.md``): which are features, row indices left out
(:func:`index_columns`), names checked (:func:`select_features`), every feature a number
(:func:`numeric_features`) or, with ``--one-hot``, text of at most :data:`MAX_LEVELS`
values as 0/1 columns (:func:`one_hot`); and the target, with the task it implies (text or
a few integers: classes; many non-negative integers with a zero: counts; other numbers:
regression).
"""

from __future__ import annotations

import argparse
import difflib
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rvm_pymc.cli._data import bad_rows, listed, progress, read_table, shown_value, where
from rvm_pymc.cli._main import DataError

__all__ = [
    "CLASS_SHARE",
    "INDEX_NAMES",
    "MAX_GUESSED_CLASSES",
    "MAX_LEVELS",
    "NUMERIC_SHARE",
    "ColumnProblem",
    "Data",
    "IndexColumns",
    "Selection",
    "column_problems",
    "encoded_features",
    "index_columns",
    "load_data",
    "numeric_features",
    "one_hot",
    "one_hot_levels",
    "row_numbers",
    "select_features",
    "split_features",
    "unknown_column",
]

UNNAMED = re.compile(r"Unnamed: \d+")
ROWNAMES = "rownames"


def _lines(table, rows: np.ndarray, shown: int = 5) -> str:
    """``'line 7'``, ``'3 lines: 7, 9, 12'``, ``'93 lines: 2, 3, 4, 5, 6, ...'``."""
    if rows.size == 1:
        return where(table, int(rows[0]))
    return f"{rows.size} {listed(table, rows, shown)}"


def _names(names: Sequence[str]) -> str:
    return ", ".join(str(n) for n in names)


def _close(name: str, columns: Sequence[str]) -> list[str]:
    """The columns a mistyped ``name`` most likely meant (case ignored first)."""
    same_case = [c for c in columns if c.lower() == name.lower()]
    lowered = {c.lower(): c for c in columns}
    near = difflib.get_close_matches(name.lower(), list(lowered), n=3, cutoff=0.6)
    return list(dict.fromkeys(same_case + [lowered[c] for c in near]))


def _did_you_mean(names: Sequence[str], columns: Sequence[str]) -> str:
    guesses = [g for n in names for g in _close(n, columns)]
    if not guesses:
        return ""
    return f"; did you mean {' or '.join(repr(g) for g in dict.fromkeys(guesses))}?"


def unknown_column(path: str, name: str, columns: Sequence[str]) -> DataError:
    """The error for a target that is no column: the closest names and every column."""
    return DataError(
        f"{path}: no column {name!r}{_did_you_mean([name], columns)} (columns: {_names(columns)})"
    )


# ------------------------------------------------------------------ row indices


MIN_ROWS_FOR_NUMBERS = 10
"""Fewest rows in which a column of the row numbers is taken for one."""


def row_numbers(col) -> str | None:
    """``'0..N-1'`` or ``'1..N'`` if ``col`` holds exactly the row numbers (else None)."""
    import pandas as pd

    values = pd.to_numeric(col, errors="coerce").to_numpy(dtype=float)
    n = values.size
    if n < MIN_ROWS_FOR_NUMBERS or not np.all(np.isfinite(values)):
        return None
    steps = np.arange(n, dtype=float)
    if np.array_equal(values, steps):
        return f"0..{n - 1}"
    if np.array_equal(values, steps + 1):
        return f"1..{n}"
    return None


INDEX_NAMES = frozenset(
    ("id", "index", "idx", "row", "rowid", "row_id", "row.id", "rowname", "row.names")
) | frozenset(("row_names", "rownum", "row_number", "obs", "..1"))
"""Names (case aside) of a column that is a row index when it holds the row numbers; also
``X``, R's ``read.csv`` name of an empty header."""


def _index_name(name: str) -> bool:
    return name == "X" or name.lower() in INDEX_NAMES


@dataclass
class IndexColumns:
    """Row-index columns: ``dropped`` (column -> why) and ``kept`` (column of another name
    holding the row numbers -> ``'1..N'``, kept as a feature)."""

    dropped: dict[str, str] = field(default_factory=dict)
    kept: dict[str, str] = field(default_factory=dict)


def index_columns(table, skip: Sequence[str] = ()) -> IndexColumns:
    """The columns of ``table`` (but ``skip``) that are row indices, not features."""
    out = IndexColumns()
    for name in table.columns:
        if name in skip:
            continue
        if name == ROWNAMES:
            out.dropped[name] = "R's row names"
        elif UNNAMED.fullmatch(name):
            out.dropped[name] = "an empty header, as pandas writes its index"
        elif (numbers := row_numbers(table[name])) is not None:
            if _index_name(name):
                out.dropped[name] = f"named so and holding the row numbers {numbers}"
            else:
                out.kept[name] = numbers
    return out


# ------------------------------------------------------------------ the features


@dataclass
class Selection:
    """The feature columns; row indices left out (-> why); features holding the row numbers."""

    features: list[str]
    index: dict[str, str] = field(default_factory=dict)
    kept_numbers: dict[str, str] = field(default_factory=dict)


def _unknown(path: str, option: str, names: Sequence[str], columns: list[str]) -> None:
    missing = [c for c in names if c not in columns]
    if missing:
        raise DataError(
            f"{path}: {option} names {_names(missing)}, not a column of the file"
            f"{_did_you_mean(missing, columns)} (columns: {_names(columns)})"
        )


def select_features(
    table,
    target: str,
    path: str,
    features: Sequence[str] | None = None,
    drop: Sequence[str] = (),
) -> Selection:
    """The ``features`` given, or every column but the target, ``drop`` and row indices;
    DataError for unknown, repeated or no columns, or the target among them."""
    columns = list(table.columns)
    if target not in columns:
        raise unknown_column(path, target, columns)
    for option, names in (("--features", features or ()), ("--drop", drop)):
        _unknown(path, option, names, columns)
        if target in names:
            raise DataError(f"{path}: {option} names the target {target!r}; it is never a feature")
    if features is not None:
        repeated = sorted({c for c in features if list(features).count(c) > 1})
        if repeated:
            raise DataError(f"{path}: --features names {_names(repeated)} more than once")
        return Selection(list(features))
    found = index_columns(table, skip=[target, *drop])
    chosen = [c for c in columns if c != target and c not in drop and c not in found.dropped]
    if not chosen:
        left = [*drop, *found.dropped]
        raise DataError(
            f"{path}: no feature columns besides the target {target!r}"
            + (f" (left out: {_names(left)})" if left else "")
        )
    return Selection(chosen, found.dropped, found.kept)


# ------------------------------------------------------------------ numbers


@dataclass
class ColumnProblem:
    """Why a feature column is not a number in every row: its rows of text and of empty
    cells (0-based), and its first text value as shown."""

    name: str
    text: np.ndarray
    missing: np.ndarray
    first_text: str = ""

    def describe(self, table) -> str:
        """``'Cylinders' (text 'rotary' on line 59)``, ``'Luggage.room' (missing on 11 ...)``."""
        parts = []
        if self.text.size:
            parts.append(f"text {self.first_text} on {_lines(table, self.text, 3)}")
        if self.missing.size:
            parts.append(f"missing on {_lines(table, self.missing, 3)}")
        return f"{self.name!r} ({'; '.join(parts)})"


def column_problems(table, columns: Sequence[str]) -> list[ColumnProblem]:
    """The columns of ``columns`` that do not hold a finite number in every row, in order."""
    import pandas as pd

    out = []
    for name in columns:
        col = table[name]
        values = pd.to_numeric(col, errors="coerce").to_numpy(dtype=float)
        missing = col.isna().to_numpy()
        bad = ~np.isfinite(values)
        if not bad.any():
            continue
        text = np.flatnonzero(bad & ~missing)
        first = shown_value(col.iloc[int(text[0])]) if text.size else ""
        out.append(ColumnProblem(str(name), text, np.flatnonzero(missing), first))
    return out


def _one_column_message(path: str, problem: ColumnProblem, table) -> str:
    """One bad column, in the words of a single value: its first bad row and how many."""
    if problem.text.size:
        what, rows = f"the non-numeric value {problem.first_text}", problem.text
    else:
        what, rows = "a missing value", problem.missing
    more = ""
    if problem.text.size and problem.missing.size:
        more = f" and missing values on {_lines(table, problem.missing, 3)}"
    return f"{path}: column {problem.name!r} has {what} on {bad_rows(table, rows)}{more}"


def numeric_features(
    table,
    columns: Sequence[str],
    path: str,
    *,
    numeric_only: bool = False,
    predicting: bool = False,
    suggest_one_hot: bool = True,
) -> tuple[np.ndarray, list[str], list[ColumnProblem]]:
    """``X`` (float), its columns and the :class:`ColumnProblem` left out (``numeric_only``).

    Otherwise DataError naming every column that is not a number in every row and
    where (advice for ``predicting`` a saved model; ``--one-hot`` named if
    ``suggest_one_hot``).
    """
    import pandas as pd

    problems = column_problems(table, columns)
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
    if len(problems) == 1:
        return f"{_one_column_message(path, problems[0], table)}; {advice}"
    described = ", ".join(p.describe(table) for p in problems)
    return (
        f"{path}: {len(problems)} feature columns are not a number in every row: "
        f"{described}; {advice}"
    )


# ------------------------------------------------------------------ text as 0/1 columns


MAX_LEVELS = 20
"""Most distinct values of a text column that ``--one-hot`` encodes (more identify rows)."""
MISSING_LEVEL = "NA"


def _is_text(col) -> bool:
    import pandas as pd

    present = col.dropna()
    return bool(present.size) and bool(pd.to_numeric(present, errors="coerce").isna().any())


def _level_text(value) -> str:
    """A cell's level name, whatever type pandas read: ``'2'`` and 2.0 are both ``2``."""
    if isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            return value
    else:
        number = float(value)
    if np.isfinite(number) and number == int(number):
        return str(int(number))
    return str(number)


def _level_texts(col):
    """The level of every cell of the column ``col`` (an empty cell: :data:`MISSING_LEVEL`)."""
    import pandas as pd

    cells = zip(col.astype(object), col.isna(), strict=True)
    texts = [MISSING_LEVEL if missing else _level_text(v) for v, missing in cells]
    return pd.Series(texts, index=col.index, dtype=object)


def _levels_of(col) -> list[str]:
    return sorted(set(_level_texts(col)))


def one_hot_levels(table, columns: Sequence[str]) -> dict[str, list[str]]:
    """Text columns of ``columns`` of at most :data:`MAX_LEVELS` levels (``NA`` one) -> levels."""
    out = {}
    for name in columns:
        col = table[name]
        if _is_text(col):
            levels = _levels_of(col)
            if len(levels) <= MAX_LEVELS:
                out[str(name)] = levels
    return out


def _indicator(name: str, level: str) -> str:
    return f"{name}={level}"


def one_hot(table, levels: dict[str, list[str]], path: str, *, fitted: bool = False):
    """A copy of ``table`` with a 0/1 column ``COL=level`` per level; DataError if one exists
    already or (``fitted``: a saved model's levels) a value has no level."""
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
            column = _indicator(name, level)
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
            out.extend(_indicator(name, level) for level in levels[name])
        else:
            out.append(name)
    return out


def split_features(table, target: str | None, path: str, features: list[str]):
    """A saved model's ``features`` (float array) and the raw ``target`` column (None when
    predicting); DataError for missing columns or values that are not numbers."""
    columns = list(table.columns)
    missing = [c for c in features if c not in columns]
    if missing:
        raise DataError(
            f"{path}: the model needs the feature column{'s' if len(missing) > 1 else ''} "
            f"{_names(missing)}, not in the file{_did_you_mean(missing, columns)} "
            f"(columns: {_names(columns)})"
        )
    X, _, _ = numeric_features(table, features, path, predicting=True)
    return X, None if target is None else table[target]


# ------------------------------------------------------------------ the target


MAX_GUESSED_CLASSES = 10
"""Most distinct integers of a numeric target taken for class codes."""
NUMERIC_SHARE = 0.8
"""Share of numbers from which a target's few text values are taken for mistakes, not labels."""
CLASS_SHARE = 0.2
"""A classification target with more classes than this share of the rows is refused unless
``--force-classes`` is given."""


def _non_numeric(y) -> np.ndarray:
    """Rows of ``y`` with a value that is present but not a finite number."""
    import pandas as pd

    values = pd.to_numeric(y, errors="coerce").to_numpy(dtype=float)
    return np.flatnonzero(~np.isfinite(values) & ~y.isna().to_numpy())


def _task(table, target: str, requested: str | None, path: str) -> str:
    """The task asked for, or the one the target implies; numbers with a few text values are
    refused unless the task is given."""
    import pandas as pd

    if requested is not None:
        return requested
    y = table[target]
    present = y.dropna()
    text = _non_numeric(y)
    if present.size and text.size:
        if text.size > (1.0 - NUMERIC_SHARE) * present.size:
            return "classification"  # labels given as text
        raise DataError(
            f"{path}: the target column {target!r} holds numbers but also the non-numeric "
            f"value {shown_value(y.iloc[int(text[0])])} on {bad_rows(table, text)}; fix or "
            "remove those rows, or give --task classification if the column holds class labels"
        )
    values = pd.to_numeric(present, errors="coerce").to_numpy(dtype=float)
    # few distinct integers are classes; many non-negative ones with a zero are counts
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
    missing = np.flatnonzero(y.isna().to_numpy())
    if task in ("regression", "counts"):
        text = _non_numeric(y)
        if text.size:
            raise DataError(
                f"{path}: the target column {target!r} has the non-numeric value "
                f"{shown_value(y.iloc[int(text[0])])} on {bad_rows(table, text)}; {task} "
                "needs a number in every row (give --task classification for class labels)"
            )
        if missing.size:
            raise DataError(
                f"{path}: the target column {target!r} has a missing value on "
                f"{bad_rows(table, missing)}; remove or fill those rows"
            )
        values = pd.to_numeric(y).to_numpy(dtype=float)
        negative = np.flatnonzero(values < 0)
        if task == "counts" and negative.size:
            raise DataError(
                f"{path}: the target column {target!r} has the negative value "
                f"{shown_value(y.iloc[int(negative[0])])} on {bad_rows(table, negative)}; "
                "counts must be >= 0 (give --task regression for a signed quantity)"
            )
        if task == "counts" and not np.any(values > 0):
            raise DataError(f"{path}: the target column {target!r} is all zero; no counts to fit")
        return values
    if missing.size:
        raise DataError(
            f"{path}: the target column {target!r} has a missing label on "
            f"{bad_rows(table, missing)}; remove or label those rows"
        )
    values = y.to_numpy()
    if np.unique(values.astype(str)).size < 2:
        raise DataError(f"{path}: column {target!r} has one class only; classification needs two")
    return values


def check_classes(y: np.ndarray, target: str, path: str, force: bool) -> None:
    """DataError for more classes than ``CLASS_SHARE`` of the rows (unless ``force``); a
    warning naming the classes of a single row."""
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
    """A table read for ``fit`` or ``compare``: the rows as read, features ``X`` and their
    names, target ``y``, task, columns left out besides ``--drop``, ``--one-hot`` levels."""

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
    # the notes once the table is accepted: a refused one gets its one error line alone
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
