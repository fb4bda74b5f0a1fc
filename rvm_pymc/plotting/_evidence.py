"""Evidence plots: solver traces per iteration, evidence and CV score over kernel widths."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from rvm_pymc.plotting._common import fit_colors, new_axes, pyplot

__all__ = ["plot_evidence_vs_cv", "plot_solver_trace"]

_TRACE_KEYS = {"log_evidence", "n_active"}


def _trace_of(name: str, value: Any) -> dict[str, np.ndarray]:
    trace = getattr(value, "trace", value)
    if not isinstance(trace, Mapping) or not _TRACE_KEYS <= set(trace):
        raise ValueError(
            f"traces[{name!r}] must be a reference result (with .trace) or a mapping with "
            f"'log_evidence' and 'n_active'; got {type(value).__name__}"
        )
    le = np.asarray(trace["log_evidence"], dtype=float).reshape(-1)
    na = np.asarray(trace["n_active"], dtype=float).reshape(-1)
    if le.size != na.size or le.size == 0:
        raise ValueError(
            f"traces[{name!r}]: 'log_evidence' and 'n_active' must be non-empty and of one "
            f"length; got {le.size} and {na.size}"
        )
    return {"log_evidence": le, "n_active": na}


def _runs(traces: Any) -> dict[str, dict[str, np.ndarray]]:
    """The traces to draw, by name: from a mapping of results, or from one result."""
    if isinstance(getattr(traces, "trace", None), Mapping):  # one result: named by its solver
        return {str(getattr(traces, "method", "fit")): _trace_of("fit", traces)}
    if isinstance(traces, Mapping) and _TRACE_KEYS <= set(traces):  # one .trace dict
        return {"fit": _trace_of("fit", traces)}
    if not isinstance(traces, Mapping):
        raise TypeError(
            "traces must be the result of a reference fit or a mapping name -> result "
            "(or its .trace dict); plot_solver_trace draws fits and does not fit: fit "
            "first, e.g. {m: rvm_pymc.reference.fit_regression(Phi, t, method=m) for m in "
            "('mackay', 'em', 'fast')} (fit_classification for class labels); "
            f"got {type(traces).__name__}"
        )
    if not traces:
        raise ValueError("traces is empty")
    return {str(k): _trace_of(str(k), v) for k, v in traces.items()}


def plot_solver_trace(
    traces: Any,
    *,
    logx: bool = True,
    colors: Any = None,
    labels: dict[str, str] | None = None,
    axes=None,
):
    """Log evidence (top) and number of relevance vectors (below) per iteration of reference fits.

    Parameters
    ----------
    traces : mapping or result
        ``name -> result`` of :func:`rvm_pymc.reference.fit_regression` or
        ``fit_classification`` (or their ``.trace`` dicts), or one of them.
    logx : bool, default True
        Iterations on a log scale.
    colors, labels : optional
        As for :func:`plot_predictive_1d`.
    axes : sequence of two matplotlib Axes, optional

    Returns
    -------
    tuple of matplotlib.axes.Axes
        ``(ax_evidence, ax_n_active)``.

    Raises
    ------
    TypeError
        For anything else than results or traces.

    Examples
    --------
    Three solvers on a kernel basis of sinc data::

        Phi = KernelBasis(RBF(gamma=0.5)).fit_transform(X)
        fits = {m: fit_regression(Phi, t, method=m) for m in ("mackay", "em", "fast")}
        ax_ev, ax_n = plot_solver_trace(fits)
    """
    runs = _runs(traces)
    if axes is None:
        _, axes = pyplot().subplots(2, 1, sharex=True, figsize=(8.0, 6.0))
    if len(axes) != 2:
        raise ValueError(f"axes must be two Axes; got {len(axes)}")
    ax_ev, ax_n = axes
    cols = fit_colors(list(runs), colors)
    labels = dict(labels or {})
    for name, run in runs.items():
        it = np.arange(1, run["log_evidence"].size + 1)
        default = f"{name} ({it.size} it., log ev. {run['log_evidence'][-1]:.2f})"
        ax_ev.plot(it, run["log_evidence"], color=cols[name], lw=1.5,
                   label=labels.get(name, default))  # fmt: skip
        ax_n.step(it, run["n_active"], where="post", color=cols[name], lw=1.5, label="_nolegend_")
    if logx:
        ax_ev.set_xscale("log")
        ax_n.set_xscale("log")
    ax_ev.set_ylabel("log evidence")
    ax_n.set_ylabel("relevance vectors")
    ax_n.set_xlabel("iteration")
    ax_ev.legend(loc="best", fontsize="small")
    return ax_ev, ax_n


def _path_of(result: Any) -> dict[str, np.ndarray]:
    path = getattr(result, "evidence_path_", result)
    if not isinstance(path, Mapping) or not {"gamma", "log_evidence"} <= set(path):
        raise ValueError(
            "result must be the dict of evidence_vs_cv (or an evidence_path_ / an estimator "
            "fitted with gamma='evidence') with 'gamma' and 'log_evidence'"
        )
    out = {k: np.asarray(v, dtype=float).reshape(-1) for k, v in path.items()}
    n = out["gamma"].size
    if n == 0 or any(v.size != n for v in out.values()):
        raise ValueError("every array of result must have one value per gamma")
    return out


def plot_evidence_vs_cv(
    result: Any,
    *,
    logx: bool = True,
    colors: Sequence[Any] = ("C0", "C1"),
    mark_best: bool = True,
    ax=None,
):
    """Log evidence and cross-validated score over kernel widths, on twin y axes.

    Parameters
    ----------
    result : dict
        The dict of :func:`rvm_pymc.model_selection.evidence_vs_cv`, or an
        ``evidence_path_`` (or an estimator with one), without a CV score.
    logx : bool, default True
        Widths on a log scale.
    colors : pair of colours, default ("C0", "C1")
        Evidence, CV score.
    mark_best : bool, default True
        Mark the best width of each curve.
    ax : matplotlib Axes, optional
        Axes of the evidence; the CV score goes on ``ax.twinx()``.

    Returns
    -------
    tuple
        ``(ax_evidence, ax_cv)``; ``ax_cv`` is None without a CV score.

    Examples
    --------
    ::

        res = evidence_vs_cv(RVR(), X, y, np.logspace(-2, 1, 7), cv=KFold(5, shuffle=True))
        ax_ev, ax_cv = plot_evidence_vs_cv(res)
    """
    path = _path_of(result)
    if len(colors) != 2:
        raise ValueError(f"colors must be two colours (evidence, CV); got {len(colors)}")
    order = np.argsort(path["gamma"])
    path = {k: v[order] for k, v in path.items()}
    g = path["gamma"]
    ax = new_axes(ax, figsize=(7.0, 4.5))
    c_ev, c_cv = colors
    best = int(np.nanargmax(path["log_evidence"]))
    handles = ax.plot(g, path["log_evidence"], "o-", color=c_ev,
                      label=f"log evidence (best gamma {g[best]:.3g})")  # fmt: skip
    if mark_best:
        ax.plot(g[best], path["log_evidence"][best], "*", ms=15, color=c_ev, label="_nolegend_")
        ax.axvline(g[best], color=c_ev, ls=":", lw=1)
    ax.set_ylabel("log evidence", color=c_ev)
    ax.set_xlabel("gamma (kernel width parameter)")
    if logx:
        ax.set_xscale("log")
    ax_cv = None
    if "cv_score_mean" in path:
        ax_cv = ax.twinx()
        m = path["cv_score_mean"]
        sd = path.get("cv_score_std", np.zeros_like(m))
        best_cv = int(np.nanargmax(m))
        h = ax_cv.errorbar(g, m, yerr=sd, fmt="s--", color=c_cv, capsize=3,
                           label=f"CV score ± sd (best gamma {g[best_cv]:.3g})")  # fmt: skip
        handles.append(h)
        if mark_best:
            ax_cv.plot(g[best_cv], m[best_cv], "*", ms=15, color=c_cv, label="_nolegend_")
            ax_cv.axvline(g[best_cv], color=c_cv, ls=":", lw=1)
        ax_cv.set_ylabel("cross-validated score", color=c_cv)
    ax.legend(handles=handles, loc="best", fontsize="small")
    return ax, ax_cv
