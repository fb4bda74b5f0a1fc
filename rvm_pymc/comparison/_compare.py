"""fit_all and compare of :mod:`rvm_pymc.comparison`: several fits of one model, one table."""

from __future__ import annotations

import time
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from rvm_pymc.comparison._measures import (
    check_fits,
    diagnostics,
    effective_parameters,
    relevant_bases,
)
from rvm_pymc.comparison.predictive import predictive

__all__ = ["FitSet", "compare", "fit_all"]

METHODS = ("reference", "map", "nuts")
COVERAGE = (0.5, 0.9, 0.95)


class FitSet(dict):
    """Fitted estimators by name, with the data they were fitted on.

    A :class:`dict` (name -> fitted RVR/RVC) that also keeps ``X``, ``y``
    and the wall-clock ``fit_times`` (seconds), so that :func:`compare` can
    refit it in cross-validation.
    """

    def __init__(self, fits, X=None, y=None, fit_times=None):
        super().__init__(fits)
        self.X, self.y = X, y
        self.fit_times = dict(fit_times or {})


def fit_all(
    X,
    y,
    methods: Sequence[str] = METHODS,
    *,
    task: str | None = None,
    method_params: Mapping[str, Mapping[str, Any]] | None = None,
    **params,
) -> FitSet:
    """Fit one RVM by several methods on the same data.

    Parameters
    ----------
    X : array_like of shape (n_samples, n_features)
    y : array_like of shape (n_samples,)
    methods : sequence of {"reference", "map", "nuts"}
        One fit per method, named by it.
    task : {"regression", "classification"}, optional
        Default: regression for a ``y`` of floating-point dtype,
        classification for integers, booleans and labels (strings,
        objects).  Integer-valued floats (counts, scores: scikit-learn's
        diabetes target) are regression; give ``task="classification"`` for
        float class codes.
    **params
        Parameters of :class:`~rvm_pymc.RVR` / :class:`~rvm_pymc.RVC`, the
        same for every fit (kernel, gamma, prior, draws, random_state, ...).
        MAP starts from the reference solution (``init="auto"``).  Without a
        ``prior``, each method keeps its own default: the evidence prior
        (``a = b = c = d = 0``, type-II maximum likelihood, which prunes) for
        reference and map, ``"weakly_informative"`` for nuts, whose posterior
        would otherwise be improper; the ``prior`` column of :func:`compare`
        says which.  Give ``prior=`` to put every fit under one prior (then
        ``solver="mackay"`` for the reference fit unless ``a = b = 0``).
    method_params : mapping of str to mapping, optional
        Parameters of one method's fit only, over ``params``: options that
        another method does not take, e.g.
        ``{"nuts": {"sampler_kwargs": {"target_accept": 0.95}}}``.

    Returns
    -------
    FitSet
        name -> fitted estimator, with ``X``, ``y`` and ``fit_times``.

    Examples
    --------
    >>> from rvm_pymc import fit_all
    >>> from rvm_pymc.datasets import make_sinc
    >>> X, t, _, _ = make_sinc(n_train=40, noise_sd=0.1, random_state=0)
    >>> fits = fit_all(X, t, methods=("reference",), gamma=0.5)
    >>> list(fits), fits["reference"].n_relevance_ < 15
    (['reference'], True)
    """
    from rvm_pymc.estimators import RVC, RVR

    methods = tuple(methods)
    if not methods:
        raise ValueError("methods must name at least one of 'reference', 'map', 'nuts'")
    bad = [m for m in methods if m not in METHODS]
    if bad or len(set(methods)) != len(methods):
        raise ValueError(f"methods must be distinct names from {METHODS}; got {methods}")
    if "method" in params:
        raise ValueError("give the methods as `methods`, not `method`")
    own = {str(m): dict(p) for m, p in (method_params or {}).items()}
    stray = sorted(set(own) - set(methods))
    if stray:
        raise ValueError(f"method_params names {stray}, not among the methods {methods}")
    if any("method" in p for p in own.values()):
        raise ValueError("method_params must not set `method`: its key names the method")
    if task is None:
        task = "regression" if np.asarray(y).dtype.kind == "f" else "classification"
    if task not in ("regression", "classification"):
        raise ValueError(f"task must be 'regression' or 'classification'; got {task!r}")
    cls = RVR if task == "regression" else RVC
    fits, times = {}, {}
    for m in methods:
        est = cls(method=m, **{**params, **own.get(m, {})})
        t0 = time.perf_counter()
        fits[m] = est.fit(X, y)
        times[m] = time.perf_counter() - t0
    return FitSet(fits, X=X, y=y, fit_times=times)


def _prior_name(fit) -> str:
    from rvm_pymc.priors import PRESETS

    for name, preset in PRESETS.items():
        if fit.prior_ == preset:
            return name
    return repr(fit.prior_)


def _held_out(fit, X_test, y_test, seed) -> dict[str, float]:
    pred = predictive(fit, X_test, random_state=seed)
    lpd_i = pred.log_density(y_test)
    out: dict[str, float] = {"lpd": float(np.mean(lpd_i))}
    if pred.is_regression:
        out["rmse"] = float(np.sqrt(np.mean((pred.mean() - np.asarray(y_test, float)) ** 2)))
        for p in COVERAGE:
            out[f"coverage_{round(p * 100)}"] = pred.coverage(y_test, p)
        return out
    proba = pred.proba
    idx = pred.class_index(y_test)
    onehot = np.zeros_like(proba)
    onehot[np.arange(idx.size), idx] = 1.0
    out["error_rate"] = float(np.mean(np.argmax(proba, axis=1) != idx))
    out["log_loss"] = -out["lpd"]
    out["brier"] = float(np.mean(np.sum((proba - onehot) ** 2, axis=1)))
    return out


def _loo(fit) -> dict[str, Any]:
    import arviz as az

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ArviZ's Pareto-k warning: counted in the table
        res = az.loo(fit.idata_, pointwise=True)
    k = np.asarray(res.pareto_k.values)
    return {
        "elpd_loo": float(res.elpd),
        "elpd_loo_se": float(res.se),
        "p_loo": float(res.p),
        "loo_optimistic": bool(fit.posterior_.is_type_ii),
        "pareto_k_bad": int(np.sum(k > res.good_k)),
    }


# ------------------------------------------------------------------ cross-validation


def _fold_lpd(est, X, y, train, test):
    from sklearn.base import clone

    model = clone(est)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a fold's warnings are not the table's
        model.fit(X[train], y[train])
    elapsed = time.perf_counter() - t0
    seed = getattr(est, "random_state", None)
    return predictive(model, X[test], random_state=seed).log_density(y[test]), elapsed


def _kfold(fits, X, y, cv, random_state, n_jobs) -> dict[str, dict[str, float]]:
    """k-fold elpd with refitting, the same folds for every fit."""
    from joblib import Parallel, delayed
    from sklearn.model_selection import KFold, StratifiedKFold, check_cv

    classification = any(hasattr(f, "predict_proba") for f in fits.values())
    if isinstance(cv, int | np.integer):
        splitter = StratifiedKFold if classification else KFold
        cv = splitter(int(cv), shuffle=True, random_state=random_state)
    cv = check_cv(cv, y, classifier=classification)
    folds = list(cv.split(X, y))
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
    jobs = [(name, tr, te) for name in fits for tr, te in folds]
    res = Parallel(n_jobs=n_jobs)(
        delayed(_fold_lpd)(fits[name], X, y, tr, te) for name, tr, te in jobs
    )
    out = {}
    for name in fits:
        lpd = np.full(len(y), np.nan)
        times = []
        for (nm, _, te), (lpd_te, elapsed) in zip(jobs, res, strict=True):
            if nm == name:
                lpd[te] = lpd_te
                times.append(elapsed)
        n = np.sum(np.isfinite(lpd))
        out[name] = {
            "elpd_kfold": float(np.sum(lpd)),
            "elpd_kfold_se": float(np.sqrt(n * np.var(lpd))),
            "kfold_fit_time": float(np.mean(times)),
        }
    return out


def compare(
    fits: Mapping[str, Any],
    X_test=None,
    y_test=None,
    *,
    X=None,
    y=None,
    cv: Any = 5,
    loo: bool = True,
    n_jobs: int | None = None,
    random_state=None,
) -> pd.DataFrame:
    """One row per fit: sparsity, held-out scores, k-fold and LOO elpd, diagnostics.

    Parameters
    ----------
    fits : mapping of str to fitted RVR or RVC
        Any methods, all regressors or all classifiers (a :class:`FitSet`
        from :func:`fit_all` carries its training data).
    X_test, y_test : array_like, optional
        Held-out data for ``rmse`` / ``error_rate``, ``lpd``, coverage,
        ``brier`` and ``log_loss``.
    X, y : array_like, optional
        Training data for k-fold cross-validation (both or neither); default
        those of a :class:`FitSet`.  Without them the k-fold columns are left
        out.
    cv : int, cross-validation splitter or None, default 5
        Folds for ``elpd_kfold`` (an int: shuffled ``KFold``, stratified for
        classifiers, seeded by ``random_state``); every fit is refitted on
        the same folds, whose test parts must partition the training points
        (not ``ShuffleSplit`` or ``RepeatedKFold``).  None skips
        cross-validation.
    loo : bool, default True
        Add ``elpd_loo`` (ArviZ PSIS-LOO of ``idata_``).
    n_jobs : int, optional
        Parallel fold fits through joblib.
    random_state : int or None
        Seeds the folds.

    Returns
    -------
    pandas.DataFrame
        Indexed by fit name.  Columns: ``method``, ``prior``,
        ``n_relevant`` (:func:`relevant_bases`), ``effective_parameters``
        (:func:`effective_parameters`), ``log_evidence`` (type-II fits),
        ``fit_time`` (seconds, fits of :func:`fit_all`); held-out ``lpd``
        (mean log predictive density, nats per point), ``rmse`` and
        ``coverage_50/90/95`` (regression) or ``error_rate``, ``brier`` and
        ``log_loss`` (classification); ``elpd_kfold``, ``elpd_kfold_se``,
        ``kfold_fit_time`` (mean seconds per fold fit); ``elpd_loo``,
        ``elpd_loo_se``, ``p_loo``, ``loo_optimistic``, ``pareto_k_bad``
        (points with Pareto k above ArviZ's threshold); ``divergences``,
        ``max_rhat``, ``min_ess_bulk`` (nuts).  ``elpd_*`` are sums over the
        points (the ArviZ convention), ``lpd`` a mean.

    Notes
    -----
    Held-out densities are exact given the fit: the Gaussian predictive of a
    type-II fit, the mixture over the draws for nuts (see
    ``rvm_pymc.comparison.predictive``).
    """
    check_fits(fits)
    if (X_test is None) != (y_test is None):
        raise ValueError("give both X_test and y_test, or neither")
    if (X is None) != (y is None):
        raise ValueError("give both X and y (the training data for k-fold), or neither")
    if X is None and isinstance(fits, FitSet):
        X, y = fits.X, fits.y
    times = fits.fit_times if isinstance(fits, FitSet) else {}
    rows = {}
    for name, f in fits.items():
        row: dict[str, Any] = {
            "method": f.method,
            "prior": _prior_name(f),
            "n_relevant": len(relevant_bases(f)),
            "effective_parameters": effective_parameters(f),
            "log_evidence": float(f.log_evidence_),
            "fit_time": float(times.get(name, np.nan)),
        }
        if X_test is not None:
            row.update(_held_out(f, X_test, y_test, random_state))
        if loo:
            row.update(_loo(f))
        row.update(diagnostics(f))
        rows[name] = row
    if cv is not None and X is not None:
        X_arr, y_arr = np.asarray(X), np.asarray(y)
        for name, extra in _kfold(fits, X_arr, y_arr, cv, random_state, n_jobs).items():
            rows[name].update(extra)
    return pd.DataFrame.from_dict(rows, orient="index")
