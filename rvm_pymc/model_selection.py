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
from sklearn.base import clone
from sklearn.model_selection import cross_validate

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
        Parallel cross-validation fits through joblib.

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
    ``gamma=1`` with 11 relevance vectors, cross-validation ``gamma=0.1`` with 5).
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
    ([3, 5, 11], 2)
    >>> int(np.argmax(res["cv_score_mean"]))
    1
    """
    grid = np.asarray(gammas, dtype=float).reshape(-1)
    if grid.size == 0 or not np.all(np.isfinite(grid) & (grid > 0)):
        raise ValueError("gammas must be a non-empty sequence of floats > 0")
    log_ev = np.empty(grid.size)
    n_rel = np.empty(grid.size, dtype=int)
    mean = np.empty(grid.size)
    std = np.empty(grid.size)
    for i, g in enumerate(grid):
        est = clone(estimator).set_params(gamma=float(g))
        fitted = clone(est).fit(X, y)
        log_ev[i] = fitted.log_evidence_
        n_rel[i] = fitted.n_relevance_
        scores = cross_validate(est, X, y, cv=cv, scoring=scoring, n_jobs=n_jobs)["test_score"]
        mean[i], std[i] = float(np.mean(scores)), float(np.std(scores))
    return {
        "gamma": grid,
        "log_evidence": log_ev,
        "n_relevance": n_rel,
        "cv_score_mean": mean,
        "cv_score_std": std,
    }
