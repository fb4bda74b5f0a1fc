"""Choosing the kernel width: maximum evidence next to cross-validation.

An RVM offers two ways to pick a kernel width ``gamma``: the Bayesian one,
maximising the log evidence ``log p(t | gamma)`` of the fitted model (one fit
per width, on all the data; ``RVR(gamma="evidence")`` does it), and the usual
one, cross-validation (``GridSearchCV``; K fits per width).
:func:`evidence_vs_cv` computes both over one grid so that they can be compared.
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
        Every fit (one per width on all the data, and one per width and fold)
        is an independent joblib task; None defers to any
        :func:`joblib.parallel_config` in effect, e.g. ``backend="dask"``.
        Warnings of the fits are raised in the calling process, naming the
        width and fold.

    Returns
    -------
    dict of ndarray, each of shape (len(gammas),)
        ``"gamma"``; ``"log_evidence"`` of the fit on all the data;
        ``"n_relevance"`` of that fit; ``"cv_score_mean"`` and
        ``"cv_score_std"`` over the folds.  ``pandas.DataFrame(result)``
        makes a table of it.

    Notes
    -----
    The evidence needs one fit per width and uses all the data; it is the
    quantity the reference and MAP fits maximise, so it is comparable across
    widths only for the same data and prior.  Cross-validation needs ``cv``
    fits per width and measures predictive performance directly.  The two
    need not pick the same width (in the example below the evidence prefers
    ``gamma=1`` with 12 relevance vectors, cross-validation ``gamma=0.1`` with 5).
    Use a shuffled ``KFold`` for data sorted by ``X``: unshuffled folds make
    cross-validation extrapolate.

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
    ['cv_score_mean', 'cv_score_std', 'gamma', 'log_evidence', 'n_relevance']
    >>> res["n_relevance"].tolist(), int(np.argmax(res["log_evidence"]))
    ([5, 5, 12], 2)
    >>> int(np.argmax(res["cv_score_mean"]))
    1
    """
    grid = np.asarray(gammas, dtype=float).reshape(-1)
    if grid.size == 0 or not np.all(np.isfinite(grid) & (grid > 0)):
        raise ValueError("gammas must be a non-empty sequence of floats > 0")
    cv = check_cv(cv, y, classifier=is_classifier(estimator))
    folds = list(cv.split(X, y))
    # one flat list of independent fits: the full-data fit of every width, then its folds
    tasks, labels = [], []
    for g in grid:
        est = clone(estimator).set_params(gamma=float(g))
        tasks.append((est, X, y, None, scoring))
        labels.append(f"gamma={g:.4g}")
        for k, fold in enumerate(folds):
            tasks.append((est, X, y, fold, scoring))
            labels.append(f"gamma={g:.4g}, fold {k}")
    res = run_tasks(_fit_or_score, tasks, labels, n_jobs)
    per = len(folds) + 1
    log_ev = np.array([res[i * per][0] for i in range(grid.size)])
    n_rel = np.array([res[i * per][1] for i in range(grid.size)], dtype=int)
    scores = np.array([res[i * per + 1 : (i + 1) * per] for i in range(grid.size)], dtype=float)
    mean, std = scores.mean(axis=1), scores.std(axis=1)
    return {
        "gamma": grid,
        "log_evidence": log_ev,
        "n_relevance": n_rel,
        "cv_score_mean": mean,
        "cv_score_std": std,
    }


def _fit_or_score(est, X, y, fold, scoring) -> tuple[float, int] | float:
    """One task of :func:`evidence_vs_cv`: the full-data fit, or the score of one fold."""
    X, y = np.asarray(X), np.asarray(y)
    if fold is None:
        fitted = clone(est).fit(X, y)
        return float(fitted.log_evidence_), int(fitted.n_relevance_)
    train, test = fold
    fitted = clone(est).fit(X[train], y[train])
    return float(check_scoring(fitted, scoring=scoring)(fitted, X[test], y[test]))
