"""Paired differences between fits: the pointwise convention of ``arviz.compare``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["PAIRED", "add_paired_columns", "choose_baseline", "paired_difference"]

PAIRED = {
    "lpd": ("lpd_diff", "lpd_diff_se", True),
    "elpd_kfold": ("elpd_kfold_diff", "elpd_kfold_diff_se", False),
    "elpd_loo": ("elpd_loo_diff", "elpd_loo_diff_se", False),
}
"""Pointwise quantity -> (difference column, its standard error column, whether a mean)."""


def paired_difference(a, b, *, mean: bool = False) -> tuple[float, float]:
    """The paired difference of two pointwise vectors and its standard error.

    ``d_i = a_i - b_i`` over the same points; the difference is ``sum_i d_i``
    and its standard error ``sqrt(n var(d))`` (population variance), the
    convention of ``arviz.compare`` (``elpd_diff``, ``dse``).  With
    ``mean=True`` both are divided by ``n`` (a mean per point, as the
    ``lpd`` column).

    Parameters
    ----------
    a, b : array_like of shape (n,)
        Pointwise values of two fits at the same points (log densities).
    mean : bool, default False

    Returns
    -------
    (float, float)
        The difference and its standard error; NaN if any value is not finite.
    """
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"a and b must be vectors of one length; got {a.shape} and {b.shape}")
    d = a - b
    if d.size == 0 or not np.all(np.isfinite(d)):
        return float("nan"), float("nan")
    diff, se = float(np.sum(d)), float(np.sqrt(d.size * np.var(d)))
    return (diff / d.size, se / d.size) if mean else (diff, se)


def choose_baseline(fits: Mapping[str, Any], baseline: str | None) -> str:
    """The given baseline (a key of ``fits``), else ``"reference"`` if present, else the first."""
    if baseline is None:
        return "reference" if "reference" in fits else next(iter(fits))
    if baseline not in fits:
        raise ValueError(f"baseline {baseline!r} is not among the fits {list(fits)}")
    return baseline


def add_paired_columns(
    table: pd.DataFrame, pointwise: Mapping[str, pd.DataFrame], baseline: str
) -> pd.DataFrame:
    """Add ``<quantity>_diff`` and ``<quantity>_diff_se`` (fit minus baseline) for every quantity
    of :data:`PAIRED` present in ``pointwise``; the baseline's row holds 0 and 0."""
    for what, (col, col_se, mean) in PAIRED.items():
        if what not in pointwise:
            continue
        pw = pointwise[what]
        pairs = [paired_difference(pw[name], pw[baseline], mean=mean) for name in table.index]
        table[col] = [d for d, _ in pairs]
        table[col_se] = [s for _, s in pairs]
    return table
