"""What the target column of a CSV table is: the task it implies and its values.

``rvm-pymc fit`` and ``compare`` read the table, take the task asked for or
infer it from the target column (text or a few integers: classes; non-negative
integers with a zero among many values: counts, with a note; other numbers:
regression), and check the target for that task.  Errors in the data raise
:class:`rvm_pymc.cli._data.DataError`.
"""

from __future__ import annotations

import argparse

import numpy as np

from rvm_pymc.cli._data import (
    DataError,
    bad_rows,
    read_table,
    select_features,
    shown_value,
    split_features,
)
from rvm_pymc.cli._progress import progress

__all__ = ["MAX_GUESSED_CLASSES", "NUMERIC_SHARE", "load_data"]


MAX_GUESSED_CLASSES = 10
"""A numeric target is taken for class codes only with at most this many distinct integers."""
NUMERIC_SHARE = 0.8
"""A target whose values are numbers but for less than this share is text labels; from
this share on, its few non-numeric values ('?', 'n/a?') are taken for mistakes."""


def _non_numeric(y) -> np.ndarray:
    """Rows of ``y`` with a value that is present but not a finite number."""
    import pandas as pd

    values = pd.to_numeric(y, errors="coerce").to_numpy(dtype=float)
    return np.flatnonzero(~np.isfinite(values) & ~y.isna().to_numpy())


def _task(table, target: str, requested: str | None, path: str) -> str:
    """The task asked for, or the one the target column implies (see the module docstring).

    Missing values say nothing about the task.  A column of numbers with a few
    text values (less than ``1 - NUMERIC_SHARE`` of them) is refused unless
    the task is given: they are more likely mistakes than class labels.
    """
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
    # integer codes with few distinct values are classes; many non-negative integers with a
    # zero among them are counts (a Poisson model); scores without a zero (scikit-learn's
    # diabetes target: 214 distinct integers from 25) are a quantity to regress
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
    if len(np.unique(values.astype(str))) < 2:
        raise DataError(f"{path}: column {target!r} has one class only; classification needs two")
    return values


def load_data(args: argparse.Namespace):
    """Read DATA; its features (array), their names, the target, the task and the index columns.

    A first column of row names (:data:`rvm_pymc.cli._data.INDEX_COLUMNS`) is
    left out of the features with a note, unless ``--features`` names it.
    """
    table = read_table(args.data)
    chosen = select_features(table, args.target, args.data, args.features, args.drop)
    for name in chosen.index:
        progress(
            f"note: column {name!r} is a row index (an unnamed first column or 'rownames'); "
            "left out of the features (name it in --features to use it)"
        )
    task = _task(table, args.target, args.task, args.data)
    y = _target(table, args.target, task, args.data)
    X, _ = split_features(table, None, args.data, chosen.features)
    return table, X, chosen.features, y, task, chosen.index
