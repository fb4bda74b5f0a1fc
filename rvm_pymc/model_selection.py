"""Choosing the kernel width: maximum evidence next to cross-validation.

:func:`evidence_vs_cv` computes, over one grid of widths, the log evidence of the fit on
all the data and the cross-validated score, plus the width the evidence search chooses.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.base import clone, is_classifier
from sklearn.metrics import check_scoring
from sklearn.model_selection import check_cv

from rvm_pymc._core.parallel import run_tasks

__all__ = ["evidence_vs_cv"]


def evidence_vs_cv(
    estimator,
    X,
    y,
    gammas,
    *,
    cv: Any = 5,
    scoring: Any = None,
    n_jobs: int | None = None,
    search: bool = True,
) -> dict[str, np.ndarray]:
    """Log evidence and cross-validated score of an RVM for every kernel width.

    Parameters
    ----------
    estimator : RVR or RVC
        Unfitted template; ``gamma`` is set to each value of ``gammas`` in a clone.
    X, y : array_like
        Training data.
    gammas : array_like of float
        Kernel widths (the ``gamma`` parameter), each > 0.
    cv : int, cross-validation generator or iterable, default 5
        As for :func:`sklearn.model_selection.cross_validate`.
    scoring : str or callable, optional
        Default the estimator's ``score`` (R^2 for RVR, accuracy for RVC).
    n_jobs : int, optional
        Every fit is an independent joblib task; None defers to any
        :func:`joblib.parallel_config` in effect.  Warnings of the fits are
        raised in the calling process, naming the width and fold.
    search : bool, default True
        Also fit ``gamma="evidence"`` with ``gamma_grid=gammas`` (at least two
        widths) and add the width it chose as one more row.

    Returns
    -------
    dict of ndarray, each of shape (len(gammas) + search,)
        ``"gamma"``; ``"log_evidence"`` of the fit on all the data;
        ``"n_relevance"`` of that fit; ``"cv_score_mean"`` and
        ``"cv_score_std"`` over the folds; ``"searched"``: True on the row
        of the evidence search (the last).

    Notes
    -----
    The evidence is comparable across widths only for the same data and prior;
    the two criteria need not pick the same width (they do not below).  Use a
    shuffled ``KFold`` for data sorted by ``X``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.model_selection import KFold
    >>> from rvm_pymc.estimators import RVR
    >>> rng = np.random.default_rng(0)
    >>> X = np.linspace(-10, 10, 60)[:, None]
    >>> y = np.sinc(X[:, 0] / np.pi) + 0.1 * rng.standard_normal(60)
    >>> cv = KFold(3, shuffle=True, random_state=0)
    >>> res = evidence_vs_cv(RVR(), X, y, [0.01, 0.1, 1.0], cv=cv)
    >>> sorted(res)
    ['cv_score_mean', 'cv_score_std', 'gamma', 'log_evidence', 'n_relevance', 'searched']
    >>> res["n_relevance"][:3].tolist(), int(np.argmax(res["log_evidence"][:3]))
    ([5, 5, 12], 2)
    >>> int(np.argmax(res["cv_score_mean"][:3]))
    1
    >>> bool(res["searched"][3] and res["log_evidence"][3] >= res["log_evidence"][2])
    True
    """
    grid = np.asarray(gammas, dtype=float).reshape(-1)
    if grid.size == 0 or not np.all(np.isfinite(grid) & (grid > 0)):
        raise ValueError("gammas must be a non-empty sequence of floats > 0")
    if search and grid.size < 2:
        raise ValueError("search=True needs at least two gammas (the grid of the search)")
    cv = check_cv(cv, y, classifier=is_classifier(estimator))
    folds = list(cv.split(X, y))
    if search:
        spec = clone(estimator).set_params(gamma="evidence", gamma_grid=grid)
        ((g_s, *searched),) = run_tasks(
            _fit_or_score, [(spec, X, y, None, scoring)], ["the evidence search"], n_jobs
        )
    widths = np.append(grid, g_s) if search else grid
    tasks, labels = [], []
    for i, g in enumerate(widths):
        est = clone(estimator).set_params(gamma=float(g))
        if i < grid.size:  # the search's own fit gave its evidence
            tasks.append((est, X, y, None, scoring))
            labels.append(f"gamma={g:.4g}")
        for k, fold in enumerate(folds):
            tasks.append((est, X, y, fold, scoring))
            labels.append(f"gamma={g:.4g}, fold {k}")
    res = run_tasks(_fit_or_score, tasks, labels, n_jobs)
    per = len(folds) + 1
    full = [res[i * per][1:] for i in range(grid.size)] + ([searched] if search else [])
    scores = [res[i * per + 1 : (i + 1) * per] for i in range(grid.size)]
    if search:
        scores.append(res[grid.size * per :])
    scores = np.array(scores, dtype=float)
    return {
        "gamma": widths,
        "log_evidence": np.array([f[0] for f in full]),
        "n_relevance": np.array([f[1] for f in full], dtype=int),
        "cv_score_mean": scores.mean(axis=1),
        "cv_score_std": scores.std(axis=1),
        "searched": np.arange(widths.size) >= grid.size,
    }


def _fit_or_score(est, X, y, fold, scoring) -> tuple[float, float, int] | float:
    """The full-data fit's ``(gamma_, log_evidence_, n_relevance_)``, or one fold's score."""
    X, y = np.asarray(X), np.asarray(y)
    if fold is None:
        fitted = clone(est).fit(X, y)
        return float(fitted.gamma_), float(fitted.log_evidence_), int(fitted.n_relevance_)
    train, test = fold
    fitted = clone(est).fit(X[train], y[train])
    return float(check_scoring(fitted, scoring=scoring)(fitted, X[test], y[test]))
