"""``rvm-pymc fit``, ``predict`` and ``compare`` on a CSV table, and ``demo`` on noisy sinc."""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from rvm_pymc._core.files import atomic_write
from rvm_pymc._core.validation import MEMORY_FRACTION, available_memory
from rvm_pymc.cli._data import (
    MODEL_FILE,
    PREPROCESS_FILE,
    DataError,
    Preprocess,
    bars_on_stderr,
    check_output_dir,
    check_output_file,
    load_data,
    model_paths,
    nuts_progress,
    one_hot,
    progress,
    read_table,
    split_features,
)
from rvm_pymc.cli._main import RunError, UsageError
from rvm_pymc.comparison import n_relevant

__all__ = [
    "NO_PRUNING",
    "announce_compilation",
    "check_data_arguments",
    "check_demo_arguments",
    "compare_command",
    "demo_command",
    "fit_command",
    "fit_demo",
    "predict_command",
    "progress",
]

PNG = "fit.png"
PREDICTIONS = "predictions.csv"
SUMMARY_TXT = "summary.txt"
SUMMARY_JSON = "summary.json"


def compile_cache_is_empty() -> bool | None:
    """Whether the compile cache of PyTensor's default linker is empty (None: unknown)."""
    try:
        from pytensor import config
        from pytensor.compile.mode import get_default_mode

        numba = "numba" in type(get_default_mode().linker).__name__.lower()
        cache = Path(config.base_compiledir) / "numba" if numba else Path(config.compiledir)
        return cache_is_empty(cache, numba=numba)
    except Exception:  # an unknown PyTensor layout: say nothing certain
        return None


def cache_is_empty(cache: Path, *, numba: bool) -> bool:
    """Whether ``cache`` holds no ``*.nbi`` index (numba) or ``tmp*`` module directory (C)."""
    if not cache.is_dir():
        return True
    if numba:
        return not any(cache.glob("*.nbi"))
    return not any(p.is_dir() for p in cache.glob("tmp*"))


COMPILE_CACHE = {  # the compile line's words for an empty cache, a full one, one unknown
    True: "PyTensor's compile cache is empty, so this first compile may take a few minutes; "
    "later runs reuse the cache",
    False: "reusing PyTensor's compile cache",
    None: "it may take a few minutes when PyTensor's compile cache is empty",
}


def announce_compilation(method: str) -> None:
    """A progress line before a fit that compiles a PyMC model (map, nuts)."""
    if method in ("map", "nuts"):
        when = COMPILE_CACHE[compile_cache_is_empty()]
        progress(f"{method}: building and compiling the PyMC model ({when})")


def make_estimator(args: argparse.Namespace, task: str, method: str | None = None):
    """RVR, RVC or RVP with the command line's kernel, width, seed and draws."""
    from rvm_pymc.estimators import RVC, RVP, RVR

    classes = {"regression": RVR, "classification": RVC, "counts": RVP}
    method = method or args.method
    nuts = _nuts_params([method], args.jobs).get(method, {})
    return classes[task](method=method, **_estimator_params(args, task, [method]), **nuts)


def _estimator_params(args: argparse.Namespace, task: str, methods) -> dict[str, Any]:
    """The estimators' parameters from the options but ``method`` (RVP's ``likelihood`` from
    ``--likelihood``, counts only)."""
    likelihood = getattr(args, "likelihood", "poisson")
    if task != "counts" and likelihood != "poisson":
        raise UsageError(
            f"argument --likelihood: {likelihood} applies to counts (--task counts); "
            f"the task is {task}"
        )
    if likelihood == "negative_binomial" and "map" in methods:
        raise UsageError(
            "argument --likelihood: negative_binomial is fitted by the methods reference and "
            "nuts, not map (give --method reference or nuts; compare: --methods reference nuts)"
        )
    params: dict[str, Any] = {
        "kernel": args.kernel,
        "gamma": args.gamma,
        "gamma_grid": args.gamma_grid,
        "random_state": args.seed,
        "draws": args.draws,
        "tune": args.tune,
        "n_jobs": args.jobs,
    }
    return params | ({"likelihood": likelihood} if task == "counts" else {})


def _nuts_params(methods, jobs: int = 1) -> dict[str, Any]:
    """``method_params`` of a NUTS fit among ``methods``: PyMC's own NUTS, which plain
    progress lines need."""
    if "nuts" not in methods:
        return {}
    return {
        "nuts": {"sampler_kwargs": {"progressbar": nuts_progress(jobs), "nuts_sampler": "pymc"}}
    }


def check_data_arguments(args: argparse.Namespace) -> None:
    """``--gamma-grid`` only with a width search; ``--out`` writable (``fit``: a directory)."""
    from rvm_pymc.estimators import WIDTH_SEARCHES

    if getattr(args, "gamma_grid", None) is not None and args.gamma not in WIDTH_SEARCHES:
        raise UsageError(
            f"argument --gamma-grid: only --gamma cv, auto or evidence tries a grid of widths; "
            f"got --gamma {args.gamma}"
        )
    if args.command == "fit":
        check_output_dir("--out", args.out)
    elif args.out is not None and not (args.command == "predict" and args.out == "-"):
        check_output_file("--out", args.out)


def _with_predictions(table, est, task: str, X: np.ndarray):
    """The rows of ``table`` as read (every column) with the prediction columns appended."""
    import pandas as pd

    cols: dict[str, Any] = {}
    if task == "counts":
        cols["prediction"] = est.predict(X)  # the mean count
        cols["lower_90"], cols["upper_90"] = est.predict_interval(X, 0.9)
    elif task == "regression":
        cols["prediction"], cols["predictive_sd"] = est.predict(X, return_std=True)
    else:
        proba = est.predict_proba(X)
        cols["prediction"] = est.classes_[np.argmax(proba, axis=1)]
        for k, label in enumerate(est.classes_):
            cols[f"p_{label}"] = proba[:, k]
    preds = pd.DataFrame(cols)
    preds.columns = [f"{c}_rvm" if c in table.columns else c for c in preds.columns]
    out = pd.concat([table.reset_index(drop=True), preds], axis=1)
    # pandas' index under an empty header (read as 'Unnamed: 0'): written back so
    return out.rename(columns={"Unnamed: 0": ""}) if out.columns[0] == "Unnamed: 0" else out


def _summary(args, est, pre: Preprocess, X, y, task, elapsed, left_out) -> dict[str, Any]:
    s: dict[str, Any] = {
        "data": args.data,
        "rows": int(X.shape[0]),
        "features": pre.features,
        "left_out": left_out,
        "target": pre.target,
        "task": task,
        "standardised": pre.standardise,
        "method": est.method,
        "kernel": args.kernel,
        "gamma": None if est.gamma_ is None else float(est.gamma_),
        "gamma_chosen_by": _chosen_by(args.gamma, est),
        "relevance_vectors": n_relevant(est),
        "bias_active": bool(est.bias_active_),
        "interpolates": bool(getattr(est, "interpolates_", False)),
        "log_evidence": None if not np.isfinite(est.log_evidence_) else float(est.log_evidence_),
        "converged": bool(est.converged_),
        "fit_seconds": round(elapsed, 3),
    }
    if task == "regression":
        s["noise_sd"] = float(np.sqrt(est.noise_var_))
    if task != "classification":
        s["training_rmse"] = float(np.sqrt(np.mean((est.predict(X) - y) ** 2)))
    if task == "counts":
        s["training_d2"] = float(est.score(X, y))  # Poisson deviance explained
        s["likelihood"] = est.likelihood
        if est.dispersion_ is not None:
            s["dispersion"] = float(est.dispersion_)
    elif task == "classification":
        s["classes"] = [str(c) for c in est.classes_]
        s["training_error_rate"] = float(np.mean(est.predict(X) != y))
    if est.method == "nuts":
        for key in ("n_divergent", "max_rhat", "min_ess_bulk"):
            value = est.idata_.attrs.get(key)
            s[key] = None if value is None else float(value)
    return s


def _chosen_by(gamma, est) -> str:
    """How the width was chosen, as the summary says it."""
    if est.gamma_ is None:
        return "no width (this kernel has none)"
    if not isinstance(gamma, str):
        return "given"
    if gamma == "auto":
        return "auto: cross-validation" if hasattr(est, "cv_path_") else "auto: scale"
    return {"cv": "cross-validation"}.get(gamma, gamma)


_YES = {
    "standardised": "yes (each feature to mean 0, sd 1 over the rows)",
    "interpolates": "YES: most rows are relevance vectors or the noise is at its bound; the "
    "predictive bands are too narrow (try --gamma cv or a smaller --gamma)",
}  # what the summary says for a true value of these keys ("no" for false)


def _summary_text(s: dict[str, Any]) -> str:
    lines = [f"rvm-pymc fit: {s['task']} of {s['target']!r} on {s['data']}"]
    for key, value in s.items():
        if key in ("data", "target", "task") or (key in ("features", "left_out") and not value):
            continue
        if key in ("features", "left_out"):
            value = ", ".join(value)
        elif key in _YES:
            value = _YES[key] if value else "no"
        elif key == "gamma" and value is None:
            value = "none (the kernel has no width)"
        elif value is None:  # NUTS samples the hyperparameters: no log evidence
            nuts = key == "log_evidence" and s["method"] == "nuts"
            value = "not computed (nuts)" if nuts else "not computed"
        if isinstance(value, float):
            value = f"{value:.6g}"
        lines.append(f"  {key.replace('_', ' '):<22} {value}")
    return "\n".join(lines) + "\n"


def _pyplot():
    """matplotlib.pyplot on the Agg backend (no display needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save_figure(fig, path: str) -> None:
    """Write ``fig`` atomically in the format of ``path``'s suffix, and close it."""
    fig.tight_layout()
    fmt = os.path.splitext(path)[1].lower().lstrip(".")
    try:
        atomic_write(path, lambda tmp: fig.savefig(tmp, dpi=110, format=fmt))
    finally:
        _pyplot().close(fig)


def _fit_figure(path, est, pre: Preprocess, X_raw, Xs, y, task) -> None:
    plt = _pyplot()
    if task == "regression" and X_raw.shape[1] == 1:
        from rvm_pymc.plotting import plot_regression_1d

        grid = np.linspace(X_raw.min(), X_raw.max(), 400)[:, None]
        mean, sd = est.predict(pre.transform(grid), return_std=True)
        ax = plot_regression_1d(X_raw[:, 0], y, grid[:, 0], mean, sd, est.relevance_indices_,
                                title=f"RVM ({est.method}) fit of {pre.target}")  # fmt: skip
        ax.set(xlabel=pre.features[0], ylabel=pre.target)
    elif task in ("regression", "counts"):
        if task == "counts":
            mean = est.predict(Xs)
            lo, hi = est.predict_interval(Xs, 0.9)
            yerr, label = np.vstack([mean - lo, hi - mean]).clip(0), "mean, 90% interval"
        else:
            mean, sd = est.predict(Xs, return_std=True)
            yerr, label = 2 * sd, "prediction ± 2 sd"
        _, ax = plt.subplots(figsize=(5.5, 5))
        ax.errorbar(y, mean, yerr=yerr, fmt=".", ms=4, alpha=0.6, label=label)
        lo, hi = float(min(y.min(), mean.min())), float(max(y.max(), mean.max()))
        ax.plot([lo, hi], [lo, hi], "k--", lw=1, label="y = x")
        ax.set(xlabel=f"observed {pre.target}", ylabel=f"predicted {pre.target}")
        ax.set_title(f"RVM ({est.method}): {n_relevant(est)} relevance vectors")
        ax.legend(fontsize="small")
    elif Xs.shape[1] == 2:
        from rvm_pymc.plotting import plot_class_probability_2d

        ax = plot_class_probability_2d(est, Xs, y)
        ax.set_xlabel(f"{pre.features[0]}{' (standardised)' if pre.standardise else ''}")
        ax.set_ylabel(f"{pre.features[1]}{' (standardised)' if pre.standardise else ''}")
    else:
        from rvm_pymc.plotting import plot_reliability

        ax = plot_reliability(est, Xs, y)
        ax.set_title(f"RVM ({est.method}) on the training rows: reliability")
    _save_figure(ax.figure, path)


def fit_command(args: argparse.Namespace) -> int:
    """``rvm-pymc fit``: fit, then write model, preprocessing, predictions, summary and plot."""
    data = load_data(args)
    table, X_raw, names, y, task = data.table, data.X, data.features, data.y, data.task
    left_out = [*data.left_out, *args.drop]
    pre = Preprocess.fit(X_raw, names, args.target, task, args.standardise)
    pre.one_hot = data.one_hot
    Xs = pre.transform(X_raw)
    est = make_estimator(args, task)
    progress(
        f"fitting {type(est).__name__} (method={args.method}, kernel={args.kernel}, "
        f"gamma={args.gamma}) to {X_raw.shape[0]} rows, {X_raw.shape[1]} feature(s)"
        f"{', standardised' if args.standardise else ''}"
    )
    announce_compilation(args.method)
    t0 = time.perf_counter()
    with bars_on_stderr():
        est.fit(Xs, y)
    elapsed = time.perf_counter() - t0
    diag = ""
    if est.method == "nuts":
        attrs = est.idata_.attrs
        diag = f" (max R-hat {attrs['max_rhat']:.3f}, {attrs['n_divergent']} divergences)"
    progress(f"fitted in {elapsed:.1f} s{diag}; writing {args.out}{os.sep}")
    summary = _summary(args, est, pre, Xs, y, task, elapsed, left_out)
    pre.details = {k: summary[k] for k in ("method", "kernel", "gamma", "relevance_vectors")}
    text = _summary_text(summary)
    with _writing("--out", args.out):
        _write_fit(args, est, pre, summary, text, (table, X_raw, Xs, y, task))
    print(text, end="")
    written = [MODEL_FILE, PREPROCESS_FILE, PREDICTIONS, SUMMARY_TXT, SUMMARY_JSON]
    print(f"  wrote {', '.join(written + ([] if args.no_plot else [PNG]))} in {args.out}")
    return 0


def _write_fit(args, est, pre: Preprocess, summary: dict, text: str, data: tuple) -> None:
    """The files of a fit in ``--out``."""
    table, X_raw, Xs, y, task = data
    os.makedirs(args.out, exist_ok=True)
    est.save(os.path.join(args.out, MODEL_FILE))
    _write_text(os.path.join(args.out, PREPROCESS_FILE), pre.to_json() + "\n")
    preds = _with_predictions(table, est, task, Xs)  # the rows as read, then the predictions
    atomic_write(os.path.join(args.out, PREDICTIONS), lambda tmp: preds.to_csv(tmp, index=False))
    _write_text(os.path.join(args.out, SUMMARY_TXT), text)
    _write_text(os.path.join(args.out, SUMMARY_JSON), json.dumps(summary, indent=2) + "\n")
    png = os.path.join(args.out, PNG)
    if not args.no_plot:
        _fit_figure(png, est, pre, X_raw, Xs, y, task)
    elif os.path.exists(png):  # the directory holds this fit's files only
        os.remove(png)
        progress(f"removed {png} of an earlier fit (--no-plot)")


@contextlib.contextmanager
def _writing(option: str, where: str) -> Iterator[None]:
    """A failed write (a full disk, ...) as one :class:`RunError` line (exit status 1)."""
    try:
        yield
    except OSError as exc:
        said = exc.strerror or str(exc)
        if "cannot save to" not in said:  # not from an atomic write: name the file here
            said = f"cannot write {exc.filename or where}: {said}"
        raise RunError(
            f"{option} {where}: {said}; a file it would have replaced is as it was"
        ) from exc


def _write_csv(path: str, frame) -> None:
    """``frame`` (without its index) to the CSV file ``path`` of ``--out``."""
    with _writing("--out", path):
        atomic_write(path, lambda tmp: frame.to_csv(tmp, index=False))


def _write_text(path: str, text: str) -> None:
    atomic_write(path, lambda tmp: Path(tmp).write_text(text, encoding="utf-8"))


def predict_command(args: argparse.Namespace) -> int:
    """``rvm-pymc predict``: apply a saved fit (and its standardisation) to new rows."""
    nc, pre_path = model_paths(args.model)
    pre = Preprocess.from_json(Path(pre_path).read_text(encoding="utf-8"), pre_path)
    table = read_table(args.data)
    encoded = one_hot(table, pre.one_hot, args.data, fitted=True) if pre.one_hot else table
    X_raw = split_features(encoded, args.data, pre.features)
    from rvm_pymc.estimators import load

    try:
        est = load(nc)
    except (ValueError, OSError) as exc:
        raise DataError(f"{nc}: cannot load the model: {exc}") from None
    out = _with_predictions(table, est, pre.task, pre.transform(X_raw))
    if args.out in (None, "-"):
        out.to_csv(sys.stdout, index=False)
    else:
        _write_csv(args.out, out)
        progress(f"wrote {len(out)} predictions to {args.out}")
    return 0


COMPARE_COLUMNS = {
    task: ["method", "prior", "n_relevant", "log_evidence", *held_out, "elpd_kfold",
           "elpd_kfold_se", "elpd_loo", "fit_time", "divergences", "max_rhat"]
    for task, held_out in (("regression", ["rmse", "lpd", "coverage_95"]),
                           ("classification", ["error_rate", "brier", "log_loss"]),
                           ("counts", ["rmse", "d2", "lpd", "coverage_90"]))
}  # fmt: skip


def compare_table(table, task: str) -> str:
    """The comparison columns that matter most, formatted for a terminal."""
    cols = [c for c in COMPARE_COLUMNS[task] if c in table.columns]
    return table[cols].to_string(index=False, float_format=lambda v: f"{v:.4g}")


def _is_nan(value: Any) -> bool:
    try:
        return bool(np.isnan(float(value)))
    except (TypeError, ValueError):
        return False


def compare_notes(table) -> list[str]:
    """Why a NaN of the printed table is NaN."""
    lines = []
    for _, row in table.iterrows():
        if "elpd_loo" in table.columns and _is_nan(row["elpd_loo"]):
            note = str(row.get("loo_note") or "").strip() or "not computed"
            lines.append(f"  elpd_loo of {row['method']} is NaN: {note}")
    sampler = [c for c in ("divergences", "max_rhat") if c in table.columns]
    others = [str(m) for m in table["method"] if m != "nuts"]
    nan = any(_is_nan(v) for c in sampler for v in table.loc[table["method"] != "nuts", c])
    if sampler and others and nan:
        lines.append(f"  {' and '.join(sampler)}: NUTS's sampler diagnostics (NaN for "
                     f"{', '.join(others)})")  # fmt: skip
    return lines


def compare_command(args: argparse.Namespace) -> int:
    """``rvm-pymc compare``: held-out split and k-fold CV of the chosen methods."""
    from sklearn.model_selection import train_test_split

    from rvm_pymc.comparison import compare, fit_all

    data = load_data(args)
    X_raw, names, y, task = data.X, data.features, data.y, data.task
    n = X_raw.shape[0]
    n_test = round(args.test_size * n)
    if n_test < 2 or n - n_test < 5:
        raise DataError(
            f"{args.data}: {n} rows are too few for a held-out split of {args.test_size:g} "
            "(at least 2 test and 5 training rows)"
        )
    stratify = y if task == "classification" else None
    try:
        X_tr, X_te, y_tr, y_te = train_test_split(
            X_raw, y, test_size=n_test, random_state=args.seed, stratify=stratify
        )
    except ValueError as exc:  # a class too small to stratify
        raise DataError(f"{args.data}: cannot split the rows: {exc}") from None
    pre = Preprocess.fit(X_tr, names, args.target, task, args.standardise)
    X_tr, X_te = pre.transform(X_tr), pre.transform(X_te)
    first = args.methods[0]

    def announce(method: str, gamma: float | None) -> None:
        at = f" at {first}'s width, gamma {gamma:.4g}" if gamma is not None else ""
        progress(f"fitting {method} to {len(y_tr)} training rows{at}")
        announce_compilation(method)

    common = _estimator_params(args, task, args.methods)
    own = _nuts_params(args.methods, args.jobs)
    with bars_on_stderr():
        fit_set = fit_all(
            X_tr, y_tr, args.methods, task=task, method_params=own, on_fit=announce, **common
        )
    cv = args.cv if args.cv > 1 else None
    if cv:
        progress(f"{cv}-fold cross-validation: every method refitted {cv} times")
    with bars_on_stderr():  # the refits of the folds
        result = compare(fit_set, X_te, y_te, cv=cv, random_state=args.seed, n_jobs=args.jobs)
    print(
        f"rvm-pymc compare: {task} of {args.target!r} on {args.data}: {len(y_tr)} training, "
        f"{len(y_te)} held-out rows{', features standardised' if args.standardise else ''}"
    )
    print(compare_table(result, task))
    for line in compare_notes(result):
        print(line)
    if args.out:
        _write_csv(args.out, result)
        print(f"  wrote the full table to {args.out}")
    return 0


NO_PRUNING = "n/a (no pruning)"  # the relevance of a sampled (NUTS) fit in the demo


def _gib(n_bytes: float) -> str:
    return f"{n_bytes / 2**30:.1f} GiB"


def check_demo_arguments(args: argparse.Namespace) -> None:
    """Checks of ``rvm-pymc demo`` that need more than one value at a time.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed arguments, each already range-checked.

    Raises
    ------
    UsageError
        If the kernel matrix would not fit in memory or the output cannot be written.
    """
    n, available = args.n_train, available_memory()
    allowed = math.inf if available is None else MEMORY_FRACTION * available
    if 8 * n * n > allowed:
        raise UsageError(
            f"argument --n-train: {n} points need a {n} x {n} kernel matrix of "
            f"{_gib(8 * n * n)}, more than {MEMORY_FRACTION:.0%} of the available memory "
            f"({_gib(available)}); use --n-train {math.isqrt(int(allowed // 8))} or fewer"
        )
    if args.output != "none":
        check_output_file("--output", args.output, image=True)


def fit_demo(args: argparse.Namespace):
    """The sinc ``Dataset`` and ``FitSet`` of ``--methods``; RunError if a fit is not finite."""
    from rvm_pymc.comparison import fit_all
    from rvm_pymc.datasets import make_sinc

    data = make_sinc(n_train=args.n_train, noise_sd=args.noise_sd, random_state=args.seed)
    pymc = [m for m in args.methods if m != "reference"]
    about = [f"{' and '.join(pymc)} compile PyMC models, up to a few minutes on a machine's "
             "first run"] if pymc else []  # fmt: skip
    if "nuts" in args.methods:
        about.append(f"nuts: 2 chains of {min(args.draws, 1000)} tuning + {args.draws} draws")
    if about:
        progress(f"fitting {', '.join(args.methods)} ({'; '.join(about)})")
    with bars_on_stderr():
        fits = fit_all(
            data.X_train, data.t_train, methods=args.methods, task="regression",
            kernel="rbf", gamma="evidence", gamma_grid=args.gammas, solver=args.method,
            random_state=args.seed, draws=args.draws, tune=min(args.draws, 1000),
            method_params=_nuts_params(args.methods),
        )  # fmt: skip
    for name, fit in fits.items():
        mean, std = fit.predict(data.X_test, return_std=True)
        finite = np.isfinite(mean).all() and np.isfinite(std).all()
        if fit.posterior_.is_type_ii:  # a sampled fit has no evidence (NaN)
            finite = finite and np.isfinite(fit.log_evidence_)
        if not finite:
            raise RunError(f"the fit failed: the {name} fit returned non-finite numbers")
        if name != "reference":
            progress(f"{name}: {fits.fit_times[name]:.1f} s")
    return data, fits


def _demo_table(args, data, fits):
    """compare() on fresh noisy test targets, plus the RMSE against the noise-free sinc."""
    from rvm_pymc.comparison import compare

    rng = np.random.default_rng([args.seed, 1])
    t_new = data.t_test + args.noise_sd * rng.standard_normal(data.t_test.size)
    table = compare(fits, data.X_test, t_new, cv=None, loo=False, random_state=args.seed)
    table.insert(3, "rmse_sinc", [
        float(np.sqrt(np.mean((f.predict(data.X_test) - data.t_test) ** 2))) for f in fits.values()
    ])  # fmt: skip
    table["noise_sd"] = [float(np.sqrt(f.noise_var_)) for f in fits.values()]
    if "n_relevant" in table.columns:
        sampled = [not f.posterior_.is_type_ii for f in fits.values()]
        table["n_relevant"] = [
            NO_PRUNING if s else int(n) for s, n in zip(sampled, table["n_relevant"], strict=True)
        ]
    cols = ["n_relevant", "rmse_sinc", "rmse", "lpd", "coverage_95", "noise_sd", "gamma",
            "log_evidence", "fit_time", "divergences", "max_rhat"]  # fmt: skip
    return table[[c for c in cols if c in table.columns]]


def _write_figure(args, data, fits) -> None:
    _pyplot()
    from rvm_pymc.datasets import sinc
    from rvm_pymc.plotting import plot_predictive_1d

    labels = {name: f"{name} ({NO_PRUNING})" for name, f in fits.items()
              if not f.posterior_.is_type_ii}  # fmt: skip
    ax = plot_predictive_1d(dict(fits), data.X_train, data.t_train, data.X_test,
                            bands=(0.95,), truth=sinc, labels=labels)  # fmt: skip
    ax.set_title(f"RVM on noisy sinc ({args.n_train} points): 95% predictive bands")
    try:
        _save_figure(ax.figure, args.output)
    except OSError as exc:  # atomic_write names the path itself: give the bare reason
        reason = os.strerror(exc.errno) if exc.errno else (exc.strerror or str(exc))
        raise RunError(f"cannot write --output {args.output}: {reason}") from exc


def _widths(args, fits) -> str:
    """The width each fit chose, and the grid that bracketed it."""
    grid = ", ".join(f"{g:g}" for g in args.gammas)
    how = "refined from" if len(args.gammas) > 1 else "of"
    chosen = {name: float(f.gamma_) for name, f in fits.items()}
    if len(set(chosen.values())) == 1:
        return f"{next(iter(chosen.values())):.4g} {how} {grid}"
    each = ", ".join(f"{name} {g:.4g}" for name, g in chosen.items())
    return f"{each} {how} {grid} (each by the evidence under its own prior)"


def demo_command(args: argparse.Namespace) -> int:
    """``rvm-pymc demo``: fit, print the comparison table, write the figure."""
    try:
        data, fits = fit_demo(args)
        table = _demo_table(args, data, fits)
    except (RunError, KeyboardInterrupt):
        raise
    except MemoryError as exc:
        raise RunError(f"the fit failed: out of memory ({exc})") from exc
    except Exception as exc:
        raise RunError(f"the fit failed: {type(exc).__name__}: {exc}") from exc
    rows = [
        ("data", f"sinc, {args.n_train} points, Gaussian noise sd {args.noise_sd:g}"),
        ("RBF gamma (max evidence)", _widths(args, fits)),
    ]
    if "reference" in fits:
        ref = fits["reference"]
        rows.append(("reference fit", f"solver {args.method!r}, "
                     f"{fits.fit_times['reference'] * 1e3:.1f} ms for all widths; at the chosen "
                     f"one {ref.n_iter_} iterations, converged {ref.converged_}"))  # fmt: skip
    tune = fits["nuts"].tune if "nuts" in fits else 0
    nuts = f" (NUTS: 2 chains, {tune} tuning + {args.draws} draws each)"
    rows.append(("methods", ", ".join(args.methods) + (nuts if "nuts" in args.methods else "")))
    width = max(len(k) for k, _ in rows)
    print("rvm-pymc demo: relevance vector regression on noisy sinc")
    for k, v in rows:
        print(f"  {k:<{width}}  {v}")
    print(
        "\nThe fits side by side (rvm_pymc.comparison.compare on 1000 fresh noisy test points;"
        "\nrmse_sinc against the noise-free function, lpd in nats per point; n_relevant counts"
        "\nthe relevance vectors of the type-II fits, the bias not counted, as the plot's"
        "\nlegend; NUTS prunes no basis, so it has no such count; log_evidence is"
        "\nlog p(t | alpha, beta) of the type-II fits):"
    )
    print(table.to_string(float_format=lambda v: f"{v:.4g}"))
    if args.output != "none":
        _write_figure(args, data, fits)
        print(f"  wrote {args.output}")
    return 0
