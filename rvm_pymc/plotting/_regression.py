"""Regression plots on 1-D inputs: predictive mean, bands and relevance vectors."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from scipy.stats import norm

from rvm_pymc.plotting._common import (
    as_fits,
    check_fits_features,
    check_inputs,
    check_prob,
    fit_colors,
    n_relevant,
    new_axes,
    relevant_points,
)

__all__ = ["plot_predictive_1d", "plot_regression_1d"]

_DATA_LABEL = "training data"
_TRUTH_LABEL = "truth"


def _legend_labels(ax) -> set[str]:
    return {h.get_label() for h in ax.get_lines() + list(ax.collections)}


LINESTYLES = ("-", "--", "-.", ":")
"""Line style of the k-th fit (cycled): overlapping means stay distinguishable."""
HATCHES = ("", "//", "\\\\", "..")
"""Hatch of the k-th fit's bands (cycled): overlapping bands stay distinguishable."""
BAND_ALPHA = 0.15
"""Opacity of the widest band's fill (narrower bands add to it): overlapping fills stay light."""


def _draw_band_and_mean(ax, x, mean, edges, color, label, k=0):
    """Bands ``{prob: (lo, hi)}`` widest first, then the mean line (returned); fit ``k`` of
    an overlay gets its own line style and hatch, earlier means drawn wider on top."""
    style, hatch = LINESTYLES[k % len(LINESTYLES)], HATCHES[k % len(HATCHES)]
    for i, p in enumerate(sorted(edges, reverse=True)):
        lo, hi = edges[p]
        a = BAND_ALPHA * (i + 1) / len(edges)
        ax.fill_between(x, lo, hi, facecolor=color, alpha=a, lw=0, label="_nolegend_")
        if hatch:
            ax.fill_between(x, lo, hi, facecolor="none", edgecolor=color, hatch=hatch, lw=0,
                            alpha=0.4, label="_nolegend_")  # fmt: skip
        for edge in (lo, hi):
            ax.plot(x, edge, color=color, ls=style, lw=0.8, alpha=0.8, label="_nolegend_")
    (line,) = ax.plot(x, mean, color=color, ls=style, lw=max(3.0 - 0.6 * k, 1.2), label=label,
                      zorder=3.0 - 0.01 * k)  # fmt: skip
    return line


def _gaussian_edges(mean, std, bands) -> dict[float, tuple[np.ndarray, np.ndarray]]:
    z = {p: float(norm.ppf(0.5 + p / 2.0)) for p in bands}
    return {p: (mean - z[p] * std, mean + z[p] * std) for p in bands}


def _predictive_edges(est, X_grid, mean, std, bands):
    """Band edges: Gaussian for a type-II fit; the exact mixture over the NUTS draws."""
    if est.posterior_.is_type_ii:
        return _gaussian_edges(mean, std, bands)
    from rvm_pymc.comparison.predictive import predictive

    pred = predictive(est, X_grid)
    return {p: (pred.quantile(0.5 - p / 2.0), pred.quantile(0.5 + p / 2.0)) for p in bands}


def _draw_data(ax, x_train, y_train, truth_x=None, truth_y=None) -> None:
    """Training data and truth, once per Axes (an overlay does not draw them again)."""
    have = _legend_labels(ax)
    if truth_y is not None and _TRUTH_LABEL not in have:
        ax.plot(truth_x, truth_y, "k--", lw=1, label=_TRUTH_LABEL)
    if _DATA_LABEL not in have:
        ax.plot(x_train, y_train, ".", color="0.45", ms=5, label=_DATA_LABEL)


def _rv_rings(ax, x, y, color, size) -> None:
    if np.size(x):
        ax.plot(x, y, "o", mfc="none", mec=color, ms=size, mew=1.5, label="_nolegend_")


def plot_predictive_1d(
    fits: Any,
    X_train,
    y_train,
    X_grid=None,
    *,
    bands: Sequence[float] = (0.5, 0.95),
    truth: Callable | Any = None,
    show_relevance: bool = True,
    n_grid: int = 300,
    colors: Any = None,
    labels: dict[str, str] | None = None,
    ax=None,
):
    """Predictive mean and central bands of one or several regression fits on 1-D inputs.

    Every fit gets one colour, line style and legend entry (its name and
    relevance count); its bands are a light fill, hatched from the second fit on;
    its relevance vectors are ringed in its colour.

    Parameters
    ----------
    fits : RVR or mapping of str to RVR
        Fitted regression estimators of any ``method`` on one input feature;
        one estimator is labelled by its method.
    X_train : array_like of shape (N,) or (N, 1)
        Training inputs (the ones the fits saw, for the relevance vectors).
    y_train : array_like of shape (N,)
        Training targets.
    X_grid : array_like of shape (n,) or (n, 1), optional
        Where to draw the predictive; default ``n_grid`` points over the range
        of ``X_train`` widened by 5% on each side.
    bands : sequence of float in (0, 1), default (0.5, 0.95)
        Central predictive intervals (noise included): Gaussian for a type-II
        fit, quantiles of the mixture over the draws for NUTS.  Empty for none.
    truth : callable or array_like of shape (n,), optional
        The noise-free function: ``truth(x)`` for ``x`` of shape (n,), or its
        values on ``X_grid``.
    show_relevance : bool, default True
        Ring the relevance vectors (for NUTS, by
        ``rvm_pymc.comparison.relevant_bases``).
    n_grid : int, default 300
    colors : mapping, sequence or colour, optional
        Colour per fit; default ``C0, C1, ...``.
    labels : mapping of str to str, optional
        Legend label per fit name; default ``"<name> (<k> RVs)"``.
    ax : matplotlib Axes, optional
        Draw on it; a new figure otherwise.

    Returns
    -------
    matplotlib.axes.Axes

    Raises
    ------
    ValueError
        For a classifier, fits on more than one feature, inputs that are not
        1-D, or a band outside (0, 1).

    Examples
    --------
    Fit the three methods on sinc and overlay them::

        fits = {m: RVR(gamma=0.5, method=m).fit(X, t) for m in ("reference", "map", "nuts")}
        ax = plot_predictive_1d(fits, X, t, truth=np.sinc)
    """
    fits = as_fits(fits, kind="regression")
    check_fits_features(fits, 1)
    X_train = check_inputs(X_train, 1, "X_train")
    y_train = np.asarray(y_train, dtype=float).reshape(-1)
    if y_train.shape[0] != X_train.shape[0]:
        raise ValueError(
            f"y_train has {y_train.shape[0]} values for {X_train.shape[0]} points of X_train"
        )
    bands = [check_prob(p, "bands") for p in bands]
    if X_grid is None:
        lo, hi = float(X_train.min()), float(X_train.max())
        pad = 0.05 * (hi - lo if hi > lo else 1.0)
        X_grid = np.linspace(lo - pad, hi + pad, int(n_grid))[:, None]
    X_grid = check_inputs(X_grid, 1, "X_grid")
    X_grid = X_grid[np.argsort(X_grid[:, 0])]
    x = X_grid[:, 0]
    truth_y = None
    if truth is not None:
        truth_y = np.asarray(truth(x) if callable(truth) else truth, dtype=float).reshape(-1)
        if truth_y.shape != x.shape:
            raise ValueError(f"truth has {truth_y.size} values for {x.size} grid points")
    ax = new_axes(ax)
    cols = fit_colors(list(fits), colors)
    labels = dict(labels or {})
    for k, (name, est) in enumerate(fits.items()):
        mean, std = est.predict(X_grid, return_std=True)
        rv = relevant_points(est) if show_relevance else np.zeros(0, dtype=np.intp)
        label = labels.get(name, f"{name} ({n_relevant(est)} RVs)" if show_relevance else name)
        edges = _predictive_edges(est, X_grid, mean, std, bands)
        _draw_band_and_mean(ax, x, mean, edges, cols[name], label, k)
        _rv_rings(ax, X_train[rv, 0], y_train[rv], cols[name], 9 + 4 * k)
    _draw_data(ax, X_train[:, 0], y_train, x, truth_y)
    ax.set_xlabel("x")
    ax.set_ylabel("y")
    ax.legend(loc="best", fontsize="small")
    return ax


def plot_regression_1d(
    x_train,
    t_train,
    x_grid,
    mean,
    std,
    relevance_idx,
    *,
    truth=None,
    title: str | None = None,
    color: Any = None,
    label: str | None = None,
    ax=None,
):
    """Predictive mean, a +/-2 sd band and the relevance vectors of one 1-D fit, from arrays.

    The array-level form of :func:`plot_predictive_1d`; calling it again on the
    same Axes overlays another fit.

    Parameters
    ----------
    x_train, t_train : array_like of shape (N,)
        Training inputs and targets.
    x_grid : array_like of shape (n,)
        Inputs at which ``mean`` and ``std`` were predicted.
    mean, std : array_like of shape (n,)
        Predictive mean and standard deviation.
    relevance_idx : array_like of int
        Indices into the training points of the relevance vectors.
    truth : array_like of shape (n,), optional
        Noise-free function on ``x_grid``.
    title : str, optional
    color : matplotlib colour, optional
        Default the next colour of the cycle not yet used by a fit.
    label : str, optional
        Legend label of the fit; default ``"predictive mean ± 2 sd (<k> RVs)"``.
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib.axes.Axes

    Examples
    --------
    From the reference solver on a design matrix::

        mean, sd = res.predict(Phi_test, return_std=True)
        ax = plot_regression_1d(x, t, x_test, mean, sd, res.active[res.active > 0] - 1)
    """
    x_train = np.ravel(np.asarray(x_train, dtype=float))
    t_train = np.ravel(np.asarray(t_train, dtype=float))
    x_grid = np.ravel(np.asarray(x_grid, dtype=float))
    mean, std = np.ravel(mean), np.ravel(std)
    if not (x_grid.shape == mean.shape == std.shape):
        raise ValueError(
            f"x_grid, mean and std must have one value per grid point; got shapes "
            f"{x_grid.shape}, {mean.shape}, {std.shape}"
        )
    if x_train.shape != t_train.shape:
        raise ValueError(f"x_train and t_train differ in shape: {x_train.shape}, {t_train.shape}")
    order = np.argsort(x_grid)
    x_grid, mean, std = x_grid[order], mean[order], std[order]
    ax = new_axes(ax)
    n_prev = sum(1 for ln in ax.get_lines() if getattr(ln, "_rvm_fit", False))
    if color is None:
        color = f"C{n_prev % 10}"
    rv = np.asarray(relevance_idx, dtype=int).reshape(-1)
    if label is None:
        label = f"predictive mean ± 2 sd ({rv.size} RVs)"
    p2 = float(2.0 * norm.cdf(2.0) - 1.0)  # the +/- 2 sd band
    edges = _gaussian_edges(mean, std, [p2])
    line = _draw_band_and_mean(ax, x_grid, mean, edges, color, label, n_prev)
    line._rvm_fit = True
    _rv_rings(ax, x_train[rv], t_train[rv], color, 10 + 4 * n_prev)
    truth_y = None if truth is None else np.asarray(truth, dtype=float).reshape(-1)[order]
    _draw_data(ax, x_train, t_train, x_grid, truth_y)
    ax.set_xlabel("x")
    ax.set_ylabel("t")
    if title:
        ax.set_title(title)
    handles, texts = ax.get_legend_handles_labels()
    first = sorted(range(len(handles)), key=lambda i: not getattr(handles[i], "_rvm_fit", False))
    ax.legend([handles[i] for i in first], [texts[i] for i in first], loc="upper right",
              fontsize="small")  # fmt: skip
    return ax
