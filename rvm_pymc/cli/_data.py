"""Data files of the ``rvm-pymc`` command line: CSV tables in, standardised features, outputs.

The command line reads a CSV table with a header row (pandas), takes one
column as the target and every other column as a numeric feature, and by
default standardises the features (each to mean 0 and standard deviation 1
over the training rows).  The standardisation is part of the model: ``fit``
writes it beside the saved estimator as ``model.json`` (feature names,
means, standard deviations, target name, task, class labels) and
``predict`` applies it to new data.  (The estimator's own ``save`` stores
RVR/RVC only, not a scikit-learn ``Pipeline``; the JSON file keeps the two
parts separate and readable.)
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["DataError", "Preprocess", "read_table", "split_features"]

MODEL_FILE = "model.nc"
PREPROCESS_FILE = "model.json"
FORMAT = "rvm-pymc-cli-model/1"


class DataError(Exception):
    """A data file that cannot be used: the command line reports it as bad usage (status 2)."""


def read_table(path: str):
    """Read a CSV file with a header row into a :class:`pandas.DataFrame`.

    Raises
    ------
    DataError
        If the file does not exist, is a directory, cannot be read, is empty,
        has a header but no rows, or is not parseable as CSV.
    """
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
    table.columns = [str(c).strip() for c in table.columns]
    dup = sorted({c for c in table.columns if list(table.columns).count(c) > 1})
    if dup:
        raise DataError(f"{path}: duplicate column names {', '.join(dup)}")
    return table


def _shown(names, limit: int = 8) -> str:
    names = [str(n) for n in names]
    more = f", ... ({len(names)} in all)" if len(names) > limit else ""
    return ", ".join(names[:limit]) + more


def numeric_columns(table, columns: list[str], path: str) -> np.ndarray:
    """The given columns as a float array; a clear error for text or missing values.

    Raises
    ------
    DataError
        Naming the first column with a non-numeric or missing value, its row
        (1-based, header not counted) and the value.
    """
    import pandas as pd

    out = np.empty((table.shape[0], len(columns)))
    for j, name in enumerate(columns):
        col = table[name]
        values = pd.to_numeric(col, errors="coerce").to_numpy(dtype=float)
        bad = np.flatnonzero(~np.isfinite(values))
        if bad.size:
            i = int(bad[0])
            raw = col.iloc[i]
            if pd.isna(raw):
                what = "a missing value"
            else:
                text = str(raw)
                text = text if len(text) <= 30 else text[:27] + "..."
                what = f"the non-numeric value {text!r}"
            raise DataError(
                f"{path}: column {name!r} has {what} in data row {i + 1} "
                f"({bad.size} such row{'s' if bad.size > 1 else ''}); features must be numbers"
            )
        out[:, j] = values
    return out


def split_features(table, target: str | None, path: str, features: list[str] | None = None):
    """Features (float array), their names and the raw target column of a table.

    Parameters
    ----------
    table : pandas.DataFrame
    target : str or None
        Name of the target column; None when predicting (the column is
        ignored if it is present).
    path : str
        The file name, for messages.
    features : list of str, optional
        The feature columns expected (those of a fitted model); default every
        column but the target.

    Raises
    ------
    DataError
        For a missing target or feature column, no feature at all, or a
        non-numeric or missing feature value.
    """
    columns = list(table.columns)
    if target is not None and target not in columns:
        raise DataError(f"{path}: no column {target!r} (columns: {_shown(columns)})")
    if features is None:
        features = [c for c in columns if c != target]
        if not features:
            raise DataError(f"{path}: no feature columns besides the target {target!r}")
    else:
        missing = [c for c in features if c not in columns]
        if missing:
            raise DataError(
                f"{path}: the model needs the feature column{'s' if len(missing) > 1 else ''} "
                f"{_shown(missing)}, not in the file (columns: {_shown(columns)})"
            )
    X = numeric_columns(table, features, path)
    y = None if target is None else table[target]
    return X, list(features), y


@dataclass
class Preprocess:
    """What ``predict`` must know besides the estimator: the columns and the standardisation.

    Attributes
    ----------
    features : list of str
        Feature column names, in the model's order.
    target : str
        Name of the target column at fit time.
    task : {"regression", "classification"}
    mean, scale : list of float
        Feature means and standard deviations of the training rows (0 and 1
        when not standardised; a constant column keeps scale 1).
    standardise : bool
    details : dict
        Free-form facts about the fit (method, kernel, width), for people.
    """

    features: list[str]
    target: str
    task: str
    mean: list[float]
    scale: list[float]
    standardise: bool
    details: dict[str, Any] = field(default_factory=dict)

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
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise DataError(f"{path} is damaged: {type(exc).__name__}: {exc}") from None
        n = len(pre.features)
        ok = len(pre.mean) == n and len(pre.scale) == n and n > 0
        ok = ok and all(math.isfinite(v) for v in pre.mean + pre.scale)
        ok = ok and all(v > 0 for v in pre.scale) and pre.task in ("regression", "classification")
        if not ok:
            raise DataError(f"{path} is damaged: features, means and scales do not fit together")
        return pre


def model_paths(model: str) -> tuple[str, str]:
    """The estimator file and the preprocessing file of MODEL (a fit's output directory or file).

    Raises
    ------
    DataError
        If either file is missing.
    """
    if os.path.isdir(model):
        nc = os.path.join(model, MODEL_FILE)
    else:
        nc = model
    pre = os.path.join(os.path.dirname(nc), PREPROCESS_FILE)
    if not os.path.exists(nc):
        if os.path.isdir(model):
            where = f"{model} holds no {MODEL_FILE}"
        else:
            where = f"{model}: no such file"
        raise DataError(f"{where} (give the --out directory of 'rvm-pymc fit')")
    if not os.path.exists(pre):
        raise DataError(
            f"{pre}: no such file; 'rvm-pymc fit' writes it beside {MODEL_FILE} "
            "(the feature names and their standardisation)"
        )
    return nc, pre
