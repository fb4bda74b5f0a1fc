"""k-fold cross-validation with refitting for :func:`rvm_pymc.comparison.compare`: the same folds
for every fit, the pointwise held-out densities and the diagnostics of every fold's refit."""

from __future__ import annotations

import time
import warnings
from typing import Any

import numpy as np
import pandas as pd

from rvm_pymc._core.predictive import predictive, shuffled_folds
from rvm_pymc._core.progress import quiet_pymc
from rvm_pymc.comparison._measures import diagnostics

__all__ = ["kfold"]


def _fold_fit(est, X, y, train, test, gamma=None) -> dict[str, Any]:
    """Refit a clone of ``est`` on one training fold (at ``gamma`` if given) and score it."""
    from sklearn.base import clone

    # a fit over the width (gamma="integrate") keeps its own rule in every fold
    shared = gamma is not None and est.gamma != "integrate"
    model = clone(est).set_params(gamma=gamma) if shared else clone(est)
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught, quiet_pymc():
        warnings.simplefilter("always")  # kept in the folds table; compare raises each once
        model.fit(X[train], y[train])
    elapsed = time.perf_counter() - t0
    seed = getattr(est, "random_state", None)
    lpd = predictive(model, X[test], random_state=seed).log_density(y[test])
    return {
        "lpd": lpd,
        "seconds": elapsed,
        "diagnostics": diagnostics(model),
        "gamma": float(model.gamma_) if getattr(model, "gamma_", None) is not None else np.nan,
        "n_relevant": int(model.n_relevance_),
        "interpolates": bool(getattr(model, "interpolates_", False)),
        "warnings": _distinct([(str(w.message), w.category) for w in caught]),
    }


def _distinct(caught: list[tuple[str, type[Warning]]]) -> list[tuple[str, type[Warning]]]:
    """The warnings in the order raised, each message once."""
    seen: dict[str, type[Warning]] = {}
    for message, category in caught:
        seen.setdefault(message, category)
    return list(seen.items())


def _fold_fits(fits, X, y, train, test, width_from) -> dict[str, dict[str, Any]]:
    """Every fit's refit on one fold; with ``width_from``, that fit's refit chooses the
    fold's width and the others are refitted at it (one width per comparison)."""
    out = {}
    gamma = None
    if width_from is not None:
        out[width_from] = _fold_fit(fits[width_from], X, y, train, test)
        g = out[width_from]["gamma"]
        gamma = None if np.isnan(g) else g
    for name, est in fits.items():
        if name not in out:
            out[name] = _fold_fit(est, X, y, train, test, gamma)
    return out


def _folds(fits, X, y, cv, random_state) -> list[tuple[np.ndarray, np.ndarray]]:
    from sklearn.model_selection import check_cv

    classification = any(hasattr(f, "predict_proba") for f in fits.values())
    if isinstance(cv, int | np.integer):
        folds = shuffled_folds(y, int(cv), classification, random_state)
    else:
        folds = list(check_cv(cv, y, classifier=classification).split(X, y))
    # elpd_kfold is a sum over the points of one held-out density each: the test folds must
    # partition the data (ShuffleSplit left points out, NaN; RepeatedKFold overwrote them)
    tested = np.zeros(len(y), dtype=int)
    for _, te in folds:
        np.add.at(tested, te, 1)
    if not np.all(tested == 1):
        raise ValueError(
            "cv must put every training point in exactly one test fold (KFold, "
            f"StratifiedKFold, ...); {int(np.sum(tested == 0))} points are in none and "
            f"{int(np.sum(tested > 1))} in several"
        )
    return folds


def kfold(fits, X, y, cv, random_state, n_jobs):
    """k-fold elpd with refitting, the same folds for every fit (columns of :func:`compare`).

    Returns ``(columns, pointwise, folds, caught)``: per fit the ``elpd_kfold*`` and
    ``kfold_*`` columns; the held-out log density of every training point (one column
    per fit); one row per fit and fold (the ``folds`` attribute of ``compare``'s
    table); ``(fit, message, category) -> folds`` of the refits' warnings.  With
    ``fits.width_from``, that fit's refit chooses each fold's width and the others
    are refitted at it.
    """
    from joblib import Parallel, delayed

    folds = _folds(fits, X, y, cv, random_state)
    width_from = getattr(fits, "width_from", None)
    if width_from is None:  # every (fit, fold) an independent task
        flat = Parallel(n_jobs=n_jobs)(
            delayed(_fold_fit)(est, X, y, tr, te) for tr, te in folds for est in fits.values()
        )
        k = len(fits)
        res = [dict(zip(fits, flat[i * k : (i + 1) * k], strict=True)) for i in range(len(folds))]
    else:  # a fold's width first: its fits one after another
        res = Parallel(n_jobs=n_jobs)(
            delayed(_fold_fits)(dict(fits), X, y, tr, te, width_from) for tr, te in folds
        )
    pointwise = pd.DataFrame(np.nan, index=pd.RangeIndex(len(y), name="obs"), columns=list(fits))
    rows = []
    caught: dict[tuple[str, str, type[Warning]], list[int]] = {}
    for name in fits:
        for i, ((_, te), fold) in enumerate(zip(folds, res, strict=True)):
            r = fold[name]
            pointwise.loc[te, name] = r["lpd"]
            diag = r["diagnostics"]
            rows.append(
                {
                    "fit": name,
                    "fold": i,
                    "n_test": len(te),
                    "seconds": r["seconds"],
                    "converged": bool(diag["converged"]),
                    "max_rhat": diag["max_rhat"],
                    "divergences": diag["divergences"],
                    "elpd": float(np.sum(r["lpd"])),
                    "gamma": r["gamma"],
                    "n_relevant": r["n_relevant"],
                    "n_train": len(y) - len(te),
                    "interpolates": r["interpolates"],
                    "warnings": " | ".join(f"{c.__name__}: {m}" for m, c in r["warnings"]),
                }
            )
            for message, category in r["warnings"]:
                caught.setdefault((name, message, category), []).append(i)
    table = pd.DataFrame(rows)
    out = {}
    for name in fits:
        lpd = pointwise[name].to_numpy()
        mine = table[table["fit"] == name]
        rhat = mine["max_rhat"].to_numpy(dtype=float)
        div = mine["divergences"].to_numpy(dtype=float)
        out[name] = {
            "elpd_kfold": float(np.sum(lpd)),
            "elpd_kfold_se": float(np.sqrt(lpd.size * np.var(lpd))),
            "kfold_fit_time": float(mine["seconds"].mean()),
            "kfold_folds": len(folds),
            "kfold_converged": int(mine["converged"].sum()),
            "kfold_max_rhat": float(np.max(rhat)) if np.isfinite(rhat).any() else np.nan,
            "kfold_divergences": float(np.sum(div)) if np.isfinite(div).any() else np.nan,
            "kfold_interpolating": int(mine["interpolates"].sum()),
        }
    return out, pointwise, table, caught


def unconverged_folds_message(folds: pd.DataFrame) -> str | None:
    """One sentence naming, per fit, the folds whose refit did not converge; None if all did."""
    parts = []
    for name, mine in folds.groupby("fit", sort=False):
        bad = mine[~mine["converged"]]
        if bad.empty:
            continue
        what = f"{name!r}: folds {', '.join(str(int(i)) for i in bad['fold'])} of {len(mine)}"
        rhat, div = bad["max_rhat"].to_numpy(float), bad["divergences"].to_numpy(float)
        if np.isfinite(rhat).any():
            what += f" (max R-hat {np.nanmax(rhat):.3g}, {int(np.nansum(div))} divergences)"
        parts.append(what)
    if not parts:
        return None
    return (
        "compare: k-fold refits that did not converge feed elpd_kfold: "
        + "; ".join(parts)
        + ". Their held-out densities rest on unconverged fits (see the kfold_* columns and "
        "table.attrs['folds']); refit with more draws or tuning before ranking by elpd_kfold"
    )
