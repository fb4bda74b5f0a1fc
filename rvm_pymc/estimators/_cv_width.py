"""The kernel width by k-fold cross-validation of the reference fit: ``gamma="cv"``.

The evidence for the width, with a flat prior on the noise, prefers interpolation on
small noisy data: one precision per basis fits the targets ever more closely as the
kernel narrows, the noise estimate collapses, and the predictive bands are far too
narrow (on a real-data panel of ``benchmarks/bench_real_panel.py`` it kept most
training rows as relevance vectors on most sets).  Cross-validation of the held-out
log predictive density scores exactly what interpolation ruins, the predictive bands
as well as the mean, and costs little: every fit is a closed-form reference fit.

The search (:func:`cv_width`): the widths of the grid (``gamma_grid``, default 9 widths
over 4 decades around ``"scale"``), from its middle outward; a side stops at the first
width whose score falls below its inner neighbour's (so the narrow, interpolating
widths, which cost most, are seldom fitted; a noisy score can stop a side early, a
cost traded for speed); then the two widths half a
grid step on either side of the best (a factor ``sqrt`` of the grid's step) are
scored, and the best of all is chosen.  Every (width, fold) fit is a clone of the
estimator with ``method="reference"`` at that fixed width and under the fit's prior,
an independent joblib task; the score of a width is the mean over all training points
of the held-out log density from the fold that left the point out
(:func:`held_out_log_density`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.base import clone
from sklearn.model_selection import KFold, StratifiedKFold

from rvm_pymc._core.counts import mixture_logpmf
from rvm_pymc._core.parallel import run_recorded
from rvm_pymc.exceptions import InterpolationWarning

__all__ = ["CV_FOLDS", "CV_PATH_KEYS", "cv_folds", "cv_width", "held_out_log_density"]

CV_FOLDS = 5
"""Folds of ``gamma="cv"`` (fewer when a class has fewer rows, or at fewer than 10 rows)."""
CV_PATH_KEYS = ("gamma", "cv_lpd", "cv_lpd_se", "relevance_fraction")
"""The arrays of ``cv_path_``: one value per width scored, sorted by width (the mean
log density per training point, its standard error, and the mean fraction of a fold's
training rows kept as relevance vectors)."""
_LOG_2PI = float(np.log(2.0 * np.pi))


def held_out_log_density(fit, X: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``log p(y_i | x_i, training data)`` of a fitted type-II estimator at every row.

    Regression: the Gaussian of ``predict(X, return_std=True)`` (noise included);
    classification: the log of ``predict_proba`` at the observed class; counts: the
    Poisson mixture of ``predictive_mixture``.
    """
    if hasattr(fit, "predict_proba"):
        proba = np.asarray(fit.predict_proba(X))
        idx = np.searchsorted(fit.classes_, y)
        with np.errstate(divide="ignore"):
            return np.log(proba[np.arange(idx.size), idx])
    if getattr(fit, "_kind", "") == "counts":
        rates, weights = fit.predictive_mixture(X)
        return mixture_logpmf(np.asarray(y, dtype=float), rates, weights)
    mean, sd = fit.predict(X, return_std=True)
    z = (np.asarray(y, dtype=float) - mean) / sd
    return -0.5 * (z * z + _LOG_2PI) - np.log(sd)


def cv_folds(est, X: np.ndarray, y: np.ndarray, seed: int) -> list[tuple[np.ndarray, ...]]:
    """The folds of ``gamma="cv"``: shuffled, stratified for a classifier.

    :data:`CV_FOLDS` folds, or as many as the smallest class has rows (a
    classifier) or ``N // 2`` (at fewer than 10 rows), at least 2.

    Raises
    ------
    ValueError
        For a classifier with a class of a single row, or fewer than 4 rows: no
        fold could be scored.
    """
    n = X.shape[0]
    if est._kind == "classification":
        smallest = int(np.min(np.unique(y, return_counts=True)[1]))
        if smallest < 2:
            raise ValueError(
                "gamma='cv' needs at least 2 rows of every class (one to fit, one to "
                f"score); a class here has {smallest}: give gamma a number, or "
                "gamma='evidence' or 'scale'"
            )
        k = min(CV_FOLDS, smallest)
        return list(StratifiedKFold(k, shuffle=True, random_state=seed).split(X, y))
    if n < 4:
        raise ValueError(
            f"gamma='cv' needs at least 4 training rows; got {n}: give gamma a number, "
            "or gamma='evidence' or 'scale'"
        )
    k = min(CV_FOLDS, n // 2)
    return list(KFold(k, shuffle=True, random_state=seed).split(X))


def _fold_score(spec, X, y, train, test) -> tuple[np.ndarray, float]:
    """One task: the held-out log densities of ``test`` from a fit on ``train``, its RVs.

    A fold whose training part cannot be fitted (constant targets, counts all zero, a
    solver failure) scores ``-inf`` at this width, with NaN relevance vectors, as a
    failed fit of the evidence search does.
    """
    try:
        fit = clone(spec).fit(X[train], y[train])
    except (np.linalg.LinAlgError, ValueError, FloatingPointError):
        return np.full(len(test), -np.inf), np.nan
    return held_out_log_density(fit, X[test], y[test]), float(fit.n_relevance_)


def cv_width(est, X, y, prior, solver: str, grid: list[float], seed: int) -> dict[str, Any]:
    """Score the widths of ``grid`` by k-fold cross-validation; return the best and the path.

    Parameters
    ----------
    est : RVR, RVC or RVP
        Its parameters (kernel, bias, tolerances, ``n_jobs``) are those of every fold fit.
    X : ndarray
        Training inputs.
    y : ndarray
        Training targets in the units the estimator is given (class labels for a
        classifier).
    prior : HyperPrior
        The prior of the fit; every fold fit is a reference fit under it.
    solver : str
        Of the reference solver.
    grid : list of float
        The widths bracketing the search (at least one).
    seed : int
        Of the folds' shuffle.

    Returns
    -------
    dict
        ``"gamma"``: the width of highest score; ``"path"``: :data:`CV_PATH_KEYS` of
        every width scored, sorted by width; ``"warnings"``: those of the chosen
        width's fold fits.
    """
    folds = cv_folds(est, X, y, seed)
    params = {"method": "reference", "prior": prior, "solver": solver, "n_jobs": 1}
    spec = clone(est).set_params(**params)
    n = X.shape[0]
    scored: dict[float, dict[str, Any]] = {}

    def score(widths: list[float]) -> None:
        widths = [g for g in widths if g not in scored]
        tasks = [
            (clone(spec).set_params(gamma=float(g)), X, y, tr, te)
            for g in widths
            for tr, te in folds
        ]
        out = run_recorded(_fold_score, tasks, est.n_jobs)
        k = len(folds)
        for i, g in enumerate(widths):
            lpd = np.empty(n)
            caught, rvs = [], []
            for (tr, te), ((lpd_te, rv), w) in zip(folds, out[i * k : (i + 1) * k], strict=True):
                lpd[te] = lpd_te
                # a fold's interpolation is the path's relevance_fraction; the final fit
                # checks its own (InterpolationWarning), so the folds' are not raised
                caught += [(m, c) for m, c in w if not issubclass(c, InterpolationWarning)]
                rvs.append(rv / len(tr))
            lpd = np.where(np.isnan(lpd), -np.inf, lpd)
            mean = float(np.mean(lpd))
            se = float(np.std(lpd) / np.sqrt(n)) if np.isfinite(mean) else np.nan
            rv = float(np.nanmean(rvs)) if np.isfinite(rvs).any() else np.nan
            scored[g] = {"cv_lpd": mean, "cv_lpd_se": se, "rv": rv, "w": caught}

    # a grid around "scale" of inputs near the float range's edge can hold an inf width
    widths = sorted(float(g) for g in grid if np.isfinite(g))
    mid = len(widths) // 2
    score([widths[mid]])
    lo, hi = mid, mid
    open_lo, open_hi = lo > 0, hi < len(widths) - 1
    while open_lo or open_hi:
        todo = ([widths[lo - 1]] if open_lo else []) + ([widths[hi + 1]] if open_hi else [])
        score(todo)
        best = max(s["cv_lpd"] for s in scored.values())
        if open_lo:
            lo -= 1
            s, inner = scored[widths[lo]]["cv_lpd"], scored[widths[lo + 1]]["cv_lpd"]
            open_lo = lo > 0 and not _falls(s, inner, best)
        if open_hi:
            hi += 1
            s, inner = scored[widths[hi]]["cv_lpd"], scored[widths[hi - 1]]["cv_lpd"]
            open_hi = hi < len(widths) - 1 and not _falls(s, inner, best)
    g_best = _best(scored)
    if not np.isfinite(scored[g_best]["cv_lpd"]):
        raise ValueError(
            "gamma='cv': no width of gamma_grid could be scored: every width has a fold "
            "whose fit failed (constant targets or counts all zero in its training part) or "
            "gave a held-out density of 0; give gamma a number, or 'scale'"
        )
    if len(widths) > 1:  # half a step on either side of the best width of the grid
        i = widths.index(g_best)
        halves = []
        if i > 0:
            halves.append(float(np.exp(0.5 * (np.log(widths[i - 1]) + np.log(g_best)))))
        if i < len(widths) - 1:
            halves.append(float(np.exp(0.5 * (np.log(widths[i + 1]) + np.log(g_best)))))
        score(halves)
        g_best = _best(scored)
    order = sorted(scored)
    path = {
        "gamma": np.array(order),
        "cv_lpd": np.array([scored[g]["cv_lpd"] for g in order]),
        "cv_lpd_se": np.array([scored[g]["cv_lpd_se"] for g in order]),
        "relevance_fraction": np.array([scored[g]["rv"] for g in order]),
    }
    return {"gamma": g_best, "path": path, "warnings": scored[g_best]["w"]}


def _falls(score: float, inner: float, best: float) -> bool:
    """A side of the search stops at a width scoring below its inner neighbour (and so
    below the best), or at one that could not be scored (``-inf``)."""
    return not np.isfinite(score) or (score < inner and score < best)


def _best(scored: dict[float, dict[str, Any]]) -> float:
    """The width of highest score; among equal scores the widest kernel (smallest gamma)."""
    return max(sorted(scored), key=lambda g: scored[g]["cv_lpd"])
