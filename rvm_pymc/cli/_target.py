"""The target column of a CSV table: the task it implies (text or a few integers: classes;
many non-negative integers with a zero: counts; other numbers: regression) and its values."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any

import numpy as np

from rvm_pymc.cli._columns import (
    encoded_features,
    numeric_features,
    one_hot,
    one_hot_levels,
    select_features,
)
from rvm_pymc.cli._data import DataError, bad_rows, read_table, shown_value
from rvm_pymc.cli._progress import progress

__all__ = ["CLASS_SHARE", "MAX_GUESSED_CLASSES", "NUMERIC_SHARE", "Data", "load_data"]


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
