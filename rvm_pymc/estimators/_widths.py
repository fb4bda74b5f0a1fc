"""The kernel width of a fit: one given width, ``gamma="cv"`` (the default) or ``"evidence"``.

For ``gamma="cv"`` (and ``"auto"`` up to :data:`AUTO_CV_MAX` training points) the widths
are scored by k-fold cross-validation of the reference fit (:mod:`._cv_width`), and the
best is fitted on all the data.

For ``gamma="evidence"`` the reference solver searches the widths
(:mod:`._search`): the widths of the grid (``gamma_grid``, default 9 widths
over 4 decades around ``"scale"``; from its middle outward, each side until the
evidence has fallen well below the best; through joblib:
:func:`rvm_pymc._core.parallel.run_recorded`) and a refinement on a
continuous ``log gamma`` around the best, all fitted on a few fixed centres;
then the best width found, and the best width of the grid (and its near ties),
are fitted over all bases from the solver's own start and the best is kept: the
fit of that width, number for number.  Map/nuts are then fitted at the chosen
width.  Every fit here is on the scaled problem of the one scaling boundary
(:meth:`_BaseRVM._design`).
"""

from __future__ import annotations

import warnings
from typing import Any, NamedTuple

import numpy as np

from rvm_pymc._core.centres import AUTO_FULL_MAX
from rvm_pymc._core.parallel import raise_again
from rvm_pymc._core.rowqr import RowQR
from rvm_pymc.basis import Basis
from rvm_pymc.estimators._cv_width import cv_width
from rvm_pymc.estimators._params import GAMMA_KERNELS
from rvm_pymc.estimators._scaling import scale_gamma
from rvm_pymc.estimators._search import (
    FALLBACK,
    MARGIN,
    STEP,
    choice_key,
    exact_fit,
    refine_width,
    search_centres,
    search_grid,
)
from rvm_pymc.exceptions import ConvergenceWarning

__all__ = [
    "AUTO_CV_MAX",
    "DEFAULT_GRID",
    "PATH_KEYS",
    "Width",
    "auto_gamma",
    "gamma_candidates",
    "select_width",
]

PATH_KEYS = ("gamma", "log_evidence", "converged", "noise_at_bound", "all_bases")
"""The arrays of ``evidence_path_``, one value per fit of the search (in the order made)."""

DEFAULT_GRID = np.logspace(-2.0, 2.0, 9)
"""The default grid of ``gamma="cv"`` and ``gamma="evidence"`` (the bracket of the
refinement), in units of the ``"scale"`` width."""
AUTO_CV_MAX = AUTO_FULL_MAX
"""``gamma="auto"`` (the default) is ``"cv"`` up to this many training points, where every
fold's fit is an exact fit of milliseconds to a second, and ``"scale"`` above it (and
below 4 rows, or with a class of one row, where no fold can be scored)."""


class Width(NamedTuple):
    """The width a fit uses, its basis and scaled design matrix, and its reference fit."""

    gamma: float | None
    basis: Basis
    Phi: np.ndarray | RowQR
    """The design matrix, every column divided by its root-mean-square ``scale`` (or its
    row compression, :mod:`._rows`)."""
    scale: np.ndarray
    reference: tuple | None
    """``(WeightPosterior, FitInfo)`` of the reference solver at this width, if it ran."""
    evidence_path: dict[str, np.ndarray] | None
    """:data:`PATH_KEYS` of every fit of the search: the grid's and the refinement's in
    the order made (both on the search's centres), then the exact fits."""
    cv_path: dict[str, np.ndarray] | None = None
    """``gamma="cv"``: :data:`~._cv_width.CV_PATH_KEYS` of every width scored."""


def auto_gamma(est: Any, X: np.ndarray, y: np.ndarray | None) -> str:
    """What ``gamma="auto"`` means for these data: ``"cv"`` or ``"scale"`` (see
    :data:`AUTO_CV_MAX`); ``y`` the targets (class labels of a classifier)."""
    n = X.shape[0]
    if n > AUTO_CV_MAX or n < 4:
        return "scale"
    if est._kind == "classification" and y is not None:
        if np.min(np.unique(y, return_counts=True)[1]) < 2:
            return "scale"
    return "cv"


def gamma_candidates(est: Any, X: np.ndarray, rule: float | str) -> list[float | None]:
    """Widths to fit for the width ``rule`` (``est.gamma`` with "auto" resolved): one for a
    fixed width, the grid for ``"cv"``/``"evidence"``."""
    k = est.kernel
    if not (isinstance(k, str) and k.lower() in GAMMA_KERNELS):
        return [None]
    if rule == "scale":
        return [scale_gamma(X)]
    if rule in ("evidence", "cv"):
        if est.gamma_grid is None:
            return list(scale_gamma(X) * DEFAULT_GRID)
        return [float(g) for g in np.asarray(est.gamma_grid, dtype=float).reshape(-1)]
    return [float(rule)]


def select_width(
    est, X, t, prior, solver: str, seed, *, need_reference: bool, y=None, fold_seed: int = 0
) -> Width:
    """The width of the fit, with its reference fit when ``need_reference`` or on a grid.

    Parameters
    ----------
    est : RVR or RVC
        Its parameters say which widths; its ``_design`` and ``_reference_fit``
        build and fit one.
    X : ndarray
        Training inputs.
    t : ndarray
        Targets on the fitted scale (class codes for a classifier).
    prior : HyperPrior
    solver : str
        Of the reference solver.
    seed : int or None
        Of the basis's choice of centres at large N (the same for every width).
    need_reference : bool
        Fit the reference solver at a single width too.
    y : ndarray, optional
        The targets as given to ``fit`` (``gamma="cv"`` refits clones on them).
    fold_seed : int, default 0
        Of the shuffle of ``gamma="cv"``'s folds.

    Returns
    -------
    Width
    """
    y = t if y is None else y
    rule = auto_gamma(est, X, y) if est.gamma == "auto" else est.gamma
    candidates = gamma_candidates(est, X, rule)
    cv_path = None
    if rule == "cv" and candidates[0] is not None:
        try:
            chosen = cv_width(est, X, y, prior, solver, candidates, fold_seed)
        except ValueError as exc:
            if est.gamma != "auto":
                raise
            warnings.warn(
                f"gamma='auto': {exc}; fitted at gamma='scale' instead",
                ConvergenceWarning,
                stacklevel=5,
            )
            candidates = [scale_gamma(X)]
        else:
            g = chosen["gamma"]
            raise_again(f"gamma='cv' (folds at gamma={g:.4g})", chosen["warnings"], stacklevel=4)
            _warn_at_an_edge("cv", "best cross-validated score", g, candidates)
            candidates, cv_path = [g], chosen["path"]
    if len(candidates) == 1:
        g = candidates[0]
        basis, Phi, scale = est._design(g, X, seed, t if need_reference else None)
        ref = (
            est._reference_fit(Phi, t, prior, solver, basis.basis_names_)
            if need_reference
            else None
        )
        return Width(g, basis, Phi, scale, ref, None, cv_path)
    # each task gets a clone of the estimator (parameters only) and builds its own (small)
    # design matrix; n_jobs and any joblib.parallel_config in effect (e.g. backend="dask")
    # decide where each round's fits run; the warnings of the chosen width's exact fit are
    # raised here, naming the width; those of the search stay quiet
    # (evidence_path_["converged"] records every fit's)
    grid = search_grid(est, X, t, prior, solver, candidates, est.n_jobs)
    ordered = sorted(grid, key=lambda f: f["x"])
    made = refine_width(est, X, t, prior, solver, ordered, _best(ordered))
    searched = grid + made
    # exactly: the best width of the search and that of the grid (then no lower than the
    # grid's exact fit there), and, when the centres are not every point, the grid's widths
    # within MARGIN of its best on them (which the centres cannot rank); each unless an
    # exact fit is MARGIN above it; if all interpolate, the next best of the search
    exact: list[dict] = []
    first = [searched[_best(searched)], ordered[_best(ordered)]]
    if search_centres(X).size < X.shape[0] and np.isfinite(choice_key(first[1])):
        near = [f for f in ordered if choice_key(f) >= choice_key(first[1]) - MARGIN]
        first += sorted(near, key=choice_key, reverse=True)
    rest = sorted(searched, key=choice_key, reverse=True)
    for f in first + rest:
        if any(f["x"] == e["x"] for e in exact):
            continue  # the search's best is the grid's
        if exact and f is not first[0] and _key(exact) > choice_key(f) + MARGIN:
            continue  # an exact fit is well above this width's evidence on the centres
        later = all(f is not g for g in first)
        if later and (np.isfinite(_key(exact)) or len(exact) >= 2 + FALLBACK):
            break
        exact.append(exact_fit(est, X, t, prior, solver, seed, f["gamma"]))
    best = exact[_best(exact)]
    g = best["gamma"]
    raise_again(f"gamma={g:.4g}", best["warnings"], stacklevel=4)
    _warn_at_an_edge("evidence", "largest evidence", g, candidates)
    _warn_if_rising_into_interpolation(searched, best)
    fits = searched + exact
    path = {k: np.array([f[k] for f in fits]) for k in PATH_KEYS}
    return Width(g, best["basis"], best["Phi"], best["scale"], best["reference"], path, None)


def _warn_at_an_edge(rule: str, what: str, g: float, grid: list[float]) -> None:
    """Warn when the width chosen from ``grid`` (of 3 or more) is within half a refinement
    step of its smallest or largest width: the best may lie outside the grid."""
    ends = (float(np.log(min(grid))), float(np.log(max(grid))))
    x = float(np.log(g))
    if len(grid) <= 2 or min(abs(x - e) for e in ends) >= STEP / 2:
        return
    edge = "smallest" if abs(x - ends[0]) < STEP / 2 else "largest"
    warnings.warn(
        f"gamma={rule!r}: the {what} is at the {edge} gamma of gamma_grid "
        f"(gamma={g:.4g}, its {'widest' if edge == 'smallest' else 'narrowest'} kernel); "
        "the best width may lie outside the grid: extend gamma_grid past that edge",
        ConvergenceWarning,
        stacklevel=5,
    )


def _warn_if_rising_into_interpolation(searched: list[dict], best: dict) -> None:
    """Warn when the chosen width's next width tried interpolates, at more evidence.

    A fit whose noise precision ends at its bound interpolates the targets and
    is never chosen (:func:`~._search.choice_key`).  When the nearest width
    the search fitted beside the chosen one is such a fit, and has more
    evidence, the evidence is still rising where the search stopped: it has
    no maximum short of interpolation, and the width returned is only the
    last one that still estimates the noise (on scikit-learn's Friedman #3,
    150 points: 15.0 times ``"scale"``, with the evidence 32 nats higher at
    15.8 times, where the noise precision is at its bound).
    """
    xs = sorted({f["x"] for f in searched} - {best["x"]})
    below = [x for x in xs if x < best["x"]]
    above = [x for x in xs if x > best["x"]]
    beside = ([below[-1]] if below else []) + ([above[0]] if above else [])
    for f in searched:
        if f["x"] in beside and f["noise_at_bound"] and f["log_evidence"] > best["log_evidence"]:
            warnings.warn(
                f"gamma='evidence': the evidence still rises past the chosen "
                f"gamma={best['gamma']:.4g}, toward gamma={f['gamma']:.4g}, where the fit "
                "interpolates the targets (its noise precision at the bound): the evidence "
                "has no maximum short of interpolation here, and the width returned is the "
                "last that estimates the noise; compare widths by cross-validation "
                "(rvm_pymc.model_selection.evidence_vs_cv) before trusting it",
                ConvergenceWarning,
                stacklevel=5,
            )
            return


def _key(fits: list[dict]) -> float:
    """The highest :func:`choice_key` of ``fits``."""
    return max(choice_key(f) for f in fits)


def _best(fits: list[dict]) -> int:
    """The index of the fit of highest :func:`choice_key` (evidence, if every one interpolates)."""
    key = np.array([choice_key(f) for f in fits])
    if not np.any(np.isfinite(key)):  # every width interpolates: the evidence decides alone
        key = np.array([f["log_evidence"] for f in fits])
    return int(np.argmax(key))
