"""fit_all and compare: several fits of one model, k-fold refits and paired differences."""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from rvm_pymc._core.predictive import predictive, shuffled_folds
from rvm_pymc._core.progress import quiet_pymc
from rvm_pymc.comparison._measures import (
    basis_label,
    check_fits,
    diagnostics,
    effective_parameters,
    log_evidence,
    log_hyperprior,
    n_relevant,
    same_basis,
)
from rvm_pymc.exceptions import ConvergenceWarning, InterpolationWarning, warn_user

__all__ = ["FitSet", "compare", "fit_all", "paired_difference"]

METHODS = ("reference", "map", "nuts")
WIDTH_METHOD = "nuts_width"  # method="nuts", gamma="integrate"; not a default
ALL_METHODS = (*METHODS, WIDTH_METHOD)
COVERAGE = (0.5, 0.9, 0.95)


class FitSet(dict):
    """Fitted estimators by name, with the data they were fitted on.

    A :class:`dict` (name -> fitted estimator) that also keeps ``X``, ``y``,
    the wall-clock ``fit_times`` (seconds) and ``width_from`` (the fit whose
    width the others were fitted at, or None), for :func:`compare`'s refits.
    """

    def __init__(self, fits, X=None, y=None, fit_times=None, width_from=None):
        super().__init__(fits)
        self.X, self.y = X, y
        self.fit_times = dict(fit_times or {})
        self.width_from = width_from


def fit_all(
    X,
    y,
    methods: Sequence[str] = METHODS,
    *,
    task: str | None = None,
    method_params: Mapping[str, Mapping[str, Any]] | None = None,
    same_width: bool = True,
    on_fit: Callable[[str, float | None], None] | None = None,
    **params,
) -> FitSet:
    """Fit one RVM by several methods on the same data.

    Parameters
    ----------
    X : array_like of shape (n_samples, n_features)
    y : array_like of shape (n_samples,)
    methods : sequence of {"reference", "map", "nuts", "nuts_width"}
        One fit per method, named by it.  ``"nuts_width"`` is
        ``method="nuts", gamma="integrate"`` (``"rbf"`` kernel only; ``gamma`` and
        ``gamma_grid`` of ``params`` are not passed to it).
    task : {"regression", "classification", "counts"}, optional
        Default: regression for a ``y`` of floating-point dtype, else
        classification; ``"counts"`` fits :class:`~rvm_pymc.estimators.RVP`.
    **params
        Parameters of :class:`~rvm_pymc.RVR` / :class:`~rvm_pymc.RVC`, the
        same for every fit; without a ``prior`` each method keeps its own default.
    method_params : mapping of str to mapping, optional
        Parameters of one method's fit only, over ``params``, e.g.
        ``{"nuts": {"sampler_kwargs": {"target_accept": 0.95}}}``.
    same_width : bool, default True
        The first method chooses the kernel width and the others are fitted at
        its ``gamma_`` (in :func:`compare`'s refits too); False: each its own.
    on_fit : callable, optional
        Called as ``on_fit(method, gamma)`` before each fit (``gamma``: the
        shared width, None for the method's own rule).

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
    from rvm_pymc.estimators import RVC, RVP, RVR, WIDTH_SEARCHES

    methods = tuple(methods)
    if not methods:
        raise ValueError(
            "methods must name at least one of 'reference', 'map', 'nuts', 'nuts_width'"
        )
    if any(m not in ALL_METHODS for m in methods) or len(set(methods)) != len(methods):
        raise ValueError(f"methods must be distinct names from {ALL_METHODS}; got {methods}")
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
    classes = {"regression": RVR, "classification": RVC, "counts": RVP}
    if task not in classes:
        raise ValueError(f"task must be one of {tuple(classes)}; got {task!r}")
    cls = classes[task]
    if WIDTH_METHOD in methods:
        given = {k: v for k, v in params.items() if k not in ("gamma", "gamma_grid")}
        width_est = cls(
            method="nuts", **{**given, **own.get(WIDTH_METHOD, {}), "gamma": "integrate"}
        )
        try:  # before any fit
            width_est._check_params(X)
        except ValueError as exc:
            raise ValueError(
                f"methods includes {WIDTH_METHOD!r} (method='nuts', gamma='integrate'), "
                f"which cannot be fitted here: {exc}"
            ) from None
    fits, times = {}, {}
    shared: dict[str, float] = {}
    for m in methods:
        if m == WIDTH_METHOD:
            est = width_est
        else:
            est = cls(method=m, **{**params, **shared, **own.get(m, {})})
        if on_fit is not None:
            on_fit(m, None if m == WIDTH_METHOD else shared.get("gamma"))
        t0 = time.perf_counter()
        fits[m] = est.fit(X, y)
        times[m] = time.perf_counter() - t0
        gamma = getattr(fits[m], "gamma_", None)
        if same_width and m == methods[0] and est.gamma in WIDTH_SEARCHES and gamma is not None:
            shared = {"gamma": float(gamma)}
    return FitSet(fits, X=X, y=y, fit_times=times, width_from=methods[0] if shared else None)


def _prior_name(fit) -> str:
    from rvm_pymc.priors import PRESETS

    return next((n for n, preset in PRESETS.items() if fit.prior_ == preset), repr(fit.prior_))


def _held_out(fit, X_test, y_test, seed) -> tuple[dict[str, float], np.ndarray]:
    pred = predictive(fit, X_test, random_state=seed)
    lpd_i = pred.log_density(y_test, "y_test")
    out: dict[str, float] = {"lpd": float(np.mean(lpd_i))}
    if pred.is_regression or pred.is_counts:
        y = np.asarray(y_test, float)
        out["rmse"] = float(np.sqrt(np.mean((pred.mean() - y) ** 2)))
        if pred.is_counts:  # the share of Poisson deviance explained
            from sklearn.metrics import d2_tweedie_score

            out["d2"] = float(d2_tweedie_score(y, pred.mean(), power=1))
        for p in COVERAGE:
            out[f"coverage_{round(p * 100)}"] = pred.coverage(y, p)
        return out, lpd_i
    proba = pred.proba
    idx = pred.class_index(y_test, "y_test")
    onehot = np.zeros_like(proba)
    onehot[np.arange(idx.size), idx] = 1.0
    out["error_rate"] = float(np.mean(np.argmax(proba, axis=1) != idx))
    out["log_loss"] = -out["lpd"]
    out["brier"] = float(np.mean(np.sum((proba - onehot) ** 2, axis=1)))
    return out, lpd_i


def _loo(fit) -> tuple[dict[str, Any], np.ndarray, np.ndarray]:
    """PSIS-LOO columns (NaN, with the reason, when unreliable or failed)."""
    import arviz as az

    unknown = (np.nan, np.nan, np.nan)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the table says it
        try:
            res = az.loo(fit.idata_, pointwise=True)
        except ValueError as exc:  # e.g. "All tail values are the same"
            n = int(np.asarray(fit.idata_["log_likelihood"].to_dataset().to_array()).shape[-1])
            note = f"PSIS-LOO failed ({exc}); use elpd_kfold"
            return _loo_row(fit, unknown, n, note), np.full(n, np.nan), np.full(n, np.nan)
    k = np.asarray(res.pareto_k.values, dtype=float).reshape(-1)
    elpd_i = np.asarray(res.elpd_i.values, dtype=float).reshape(-1)
    bad = int(np.sum(~(k <= res.good_k)))  # a NaN k (PSIS failed) is bad too
    if not bad:
        return _loo_row(fit, (float(res.elpd), float(res.se), float(res.p)), 0, ""), elpd_i, k
    note = (
        f"unreliable: {bad} of {k.size} Pareto k > {res.good_k:.2f} or NaN "
        f"(max {np.nanmax(k) if np.isfinite(k).any() else np.nan:.2f}); use elpd_kfold"
    )
    return _loo_row(fit, unknown, bad, note), elpd_i, k


def _loo_row(fit, values: tuple, bad: int, note: str) -> dict[str, Any]:
    """The LOO columns: ``values`` of elpd_loo, its se and p_loo, then the flags."""
    return {
        **dict(zip(("elpd_loo", "elpd_loo_se", "p_loo"), values, strict=True)),
        "loo_optimistic": bool(fit.posterior_.is_type_ii),
        "pareto_k_bad": bad,
        "loo_note": note,
    }


def compare(
    fits: Mapping[str, Any],
    X_test=None,
    y_test=None,
    *,
    X=None,
    y=None,
    cv: Any = 5,
    loo: bool = True,
    baseline: str | None = None,
    n_jobs: int | None = None,
    random_state=None,
) -> pd.DataFrame:
    """One row per fit: sparsity, held-out scores, k-fold and LOO elpd, diagnostics, and
    paired differences to a baseline.

    Parameters
    ----------
    fits : mapping of str to fitted RVR, RVC or RVP
        All of one kind (a :class:`FitSet` carries its training data).
    X_test, y_test : array_like, optional
        Held-out data for ``rmse`` / ``error_rate``, ``lpd``, coverage,
        ``brier`` and ``log_loss``.
    X, y : array_like, optional
        Training data for k-fold cross-validation; default those of a
        :class:`FitSet`, else no k-fold columns.
    cv : int, cross-validation splitter or None, default 5
        Folds for ``elpd_kfold`` (an int: shuffled ``KFold``, stratified for
        classifiers); every fit is refitted on the same folds, whose test
        parts must partition the training points.  None skips it.
    loo : bool, default True
        Add ``elpd_loo`` (ArviZ PSIS-LOO of ``idata_``).
    baseline : str, optional
        The fit of the ``*_diff`` columns; default ``"reference"`` when
        present, else the first fit.
    n_jobs : int, optional
        Parallel fold fits through joblib.
    random_state : int or None
        Seeds the folds.

    Returns
    -------
    pandas.DataFrame
        Indexed by fit name; the columns are described in ``docs/comparison.md``:

        - what was fitted: ``method``, ``prior``, ``basis``, ``gamma``,
          ``interpolates``, ``same_basis`` (:func:`same_basis`), ``fit_time``,
          ``predictive`` (RVR);
        - sparsity: ``n_relevant`` (:func:`n_relevant`), ``effective_parameters``;
        - type-II fits only (NaN for nuts): ``log_evidence``, ``log_hyperprior``;
        - held out: ``lpd`` (mean per point), ``rmse``, ``coverage_50/90/95``
          (regression; counts add ``d2``) or ``error_rate``, ``brier``, ``log_loss``;
        - k-fold with refitting: ``elpd_kfold``, ``elpd_kfold_se``,
          ``kfold_fit_time``, ``kfold_folds``, ``kfold_converged``,
          ``kfold_max_rhat``, ``kfold_divergences``, ``kfold_interpolating``;
        - PSIS-LOO: ``elpd_loo``, ``elpd_loo_se``, ``p_loo`` (NaN when a Pareto k
          is too high), ``loo_optimistic``, ``pareto_k_bad``, ``loo_note``;
        - diagnostics: ``converged``, ``divergences``, ``max_rhat``, ``min_ess_bulk``;
        - paired differences to the baseline (:func:`paired_difference`):
          ``elpd_kfold_diff``, ``elpd_loo_diff``, ``lpd_diff`` and their ``*_se``.

        ``elpd_*`` are sums over the points (nats), ``lpd`` and ``lpd_diff`` means
        per point; the differences are 0 on the baseline's row.

        ``table.attrs`` holds ``"baseline"``, ``"pointwise"`` (DataFrames of
        ``"lpd"``, ``"elpd_kfold"``, ``"elpd_loo"`` and ``"pareto_k"``) and
        ``"folds"`` (one row per fit and fold).

    Warns
    -----
    UserWarning
        When a fit's basis differs from the baseline's.
    rvm_pymc.exceptions.ConvergenceWarning
        Naming the folds whose refit did not converge.
    rvm_pymc.exceptions.InterpolationWarning
        Naming, per fit, the folds whose refit interpolates.
    Warning
        Every other warning of the k-fold refits, once per fit and message.
    """
    check_fits(fits)
    if (X_test is None) != (y_test is None):
        raise ValueError("give both X_test and y_test, or neither")
    if (X is None) != (y is None):
        raise ValueError("give both X and y (the training data for k-fold), or neither")
    if X is None and isinstance(fits, FitSet):
        X, y = fits.X, fits.y
    base = choose_baseline(fits, baseline)
    times = fits.fit_times if isinstance(fits, FitSet) else {}
    X = None if X is None else np.asarray(X)
    rows: dict[str, dict[str, Any]] = {}
    pointwise: dict[str, dict[str, np.ndarray]] = {}
    for name, f in fits.items():
        row: dict[str, Any] = {
            "method": f.method,
            "prior": _prior_name(f),
            "basis": basis_label(f),
            "gamma": float(f.gamma_) if getattr(f, "gamma_", None) is not None else np.nan,
            "same_basis": bool(same_basis(fits[base], f, X)),
            "n_relevant": n_relevant(f),
            "interpolates": bool(getattr(f, "interpolates_", False)),
            "effective_parameters": effective_parameters(f),
            "log_evidence": log_evidence(f),
            "log_hyperprior": log_hyperprior(f),
            "fit_time": float(times.get(name, np.nan)),
        }
        if hasattr(f, "predictive"):  # RVR: its own predictive or RVM*
            row["predictive"] = f.predictive
        if X_test is not None:
            held, lpd_i = _held_out(f, X_test, y_test, random_state)
            row.update(held)
            pointwise.setdefault("lpd", {})[name] = lpd_i
        if loo:
            loo_row, elpd_i, k = _loo(f)
            row.update(loo_row)
            pointwise.setdefault("elpd_loo", {})[name] = elpd_i
            pointwise.setdefault("pareto_k", {})[name] = k
        row.update(diagnostics(f))
        rows[name] = row
    frames = {what: pd.DataFrame(cols) for what, cols in pointwise.items()}
    folds, caught = None, {}
    if cv is not None and X is not None:
        extra, frames["elpd_kfold"], folds, caught = kfold(
            fits, X, np.asarray(y), cv, random_state, n_jobs
        )
        for name, cols in extra.items():
            rows[name].update(cols)
    table = pd.DataFrame.from_dict(rows, orient="index")
    add_paired_columns(table, frames, base)
    if "elpd_loo_diff" in table:  # an unreliable LOO has no difference either
        unreliable = table["elpd_loo"].isna() | bool(np.isnan(table.loc[base, "elpd_loo"]))
        table.loc[unreliable, ["elpd_loo_diff", "elpd_loo_diff_se"]] = np.nan
    table.attrs = {"baseline": base, "pointwise": frames, "folds": folds}
    integrated = [n for n, f in fits.items() if getattr(f, "gamma_draws_", None) is not None]
    _warn(table, base, folds, integrated, caught)
    return table


def _warn(table: pd.DataFrame, base: str, folds, integrated, caught) -> None:
    """The warnings of :func:`compare`."""
    # a fit that integrates over the width has no one basis
    other = [str(n) for n in table.index[~table["same_basis"].astype(bool)] if n not in integrated]
    if other:
        widths = ", ".join(f"{n} {table.loc[n, 'basis']}" for n in [base, *other])
        warn_user(
            f"compare: {other} are not fits of the basis of the baseline {base!r} ({widths}): "
            "their differences compare different models, not approximations of one posterior "
            "(give gamma= a number to fit every method on one basis)",
            UserWarning,
        )
    if folds is not None:
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
        if parts:
            warn_user(
                "compare: k-fold refits that did not converge feed elpd_kfold: "
                + "; ".join(parts)
                + ". Their held-out densities rest on unconverged fits (see the kfold_* columns "
                "and table.attrs['folds']); refit with more draws or tuning before ranking by "
                "elpd_kfold",
                ConvergenceWarning,
            )
        for name, mine in folds[folds["interpolates"]].groupby("fit", sort=False):
            which = ", ".join(
                f"{int(r.fold)} ({int(r.n_relevant)} of {int(r.n_train)} rows at gamma="
                f"{r.gamma:.4g})"
                for r in mine.itertuples()
            )
            warn_user(
                f"compare: the k-fold refits of {name!r} interpolate their training rows in "
                f"folds {which}: their held-out densities, and elpd_kfold, rest on predictive "
                "bands far too narrow (see table.attrs['folds']); choose the width by "
                "cross-validation (gamma='cv') or give a wider kernel",
                InterpolationWarning,
            )
    for (name, message, category), which_folds in caught.items():
        if issubclass(category, InterpolationWarning):
            continue  # said above, per fit
        folds_text = ", ".join(str(i) for i in which_folds)
        warn_user(
            f"compare: k-fold refit of {name!r} (fold{'s' * (len(which_folds) > 1)} "
            f"{folds_text}): {message}",
            category,
        )


def _fold_fit(est, X, y, train, test, gamma=None) -> dict[str, Any]:
    """Refit a clone of ``est`` on one training fold (at ``gamma`` if given) and score it."""
    from sklearn.base import clone

    shared = gamma is not None and est.gamma != "integrate"
    model = clone(est).set_params(gamma=gamma) if shared else clone(est)
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught, quiet_pymc():
        warnings.simplefilter("always")
        model.fit(X[train], y[train])
    elapsed = time.perf_counter() - t0
    seed = getattr(est, "random_state", None)
    return {
        "lpd": predictive(model, X[test], random_state=seed).log_density(y[test]),
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
    """Every fit's refit on one fold, at the width of ``width_from``'s refit if given."""
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
    # elpd_kfold sums one held-out density per point: the test folds must partition the data
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
    """k-fold elpd with refitting, the same folds for every fit.

    Returns ``(columns, pointwise, folds, caught)``: per fit the k-fold columns, the
    held-out log density of every point, one row per fit and fold, and
    ``(fit, message, category) -> folds`` of the refits' warnings.
    """
    from joblib import Parallel, delayed

    folds = _folds(fits, X, y, cv, random_state)
    width_from = getattr(fits, "width_from", None)
    if width_from is None:
        flat = Parallel(n_jobs=n_jobs)(
            delayed(_fold_fit)(est, X, y, tr, te) for tr, te in folds for est in fits.values()
        )
        k = len(fits)
        res = [dict(zip(fits, flat[i * k : (i + 1) * k], strict=True)) for i in range(len(folds))]
    else:
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


PAIRED = {
    "lpd": ("lpd_diff", "lpd_diff_se", True),
    "elpd_kfold": ("elpd_kfold_diff", "elpd_kfold_diff_se", False),
    "elpd_loo": ("elpd_loo_diff", "elpd_loo_diff_se", False),
}
"""Pointwise quantity -> (difference column, its standard error column, whether a mean)."""


def paired_difference(a, b, *, mean: bool = False) -> tuple[float, float]:
    """The paired difference of two pointwise vectors and its standard error.

    With ``d_i = a_i - b_i``: ``sum_i d_i`` and its standard error
    ``sqrt(n var(d))`` (population variance), the convention of ``arviz.compare``;
    with ``mean=True`` both divided by ``n``.

    Parameters
    ----------
    a, b : array_like of shape (n,)
        Pointwise values of two fits at the same points.
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
    """The given baseline, else ``"reference"`` if present, else the first fit."""
    if baseline is None:
        return "reference" if "reference" in fits else next(iter(fits))
    if baseline not in fits:
        raise ValueError(f"baseline {baseline!r} is not among the fits {list(fits)}")
    return baseline


def add_paired_columns(
    table: pd.DataFrame, pointwise: Mapping[str, pd.DataFrame], baseline: str
) -> pd.DataFrame:
    """Add the :data:`PAIRED` columns (fit minus baseline) of the quantities in ``pointwise``."""
    for what, (col, col_se, mean) in PAIRED.items():
        if what not in pointwise:
            continue
        pw = pointwise[what]
        pairs = [paired_difference(pw[name], pw[baseline], mean=mean) for name in table.index]
        table[col] = [d for d, _ in pairs]
        table[col_se] = [s for _, s in pairs]
    return table
