"""Predictive plots: bands on 1-D inputs, class probabilities on 2-D, reliability."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from scipy.stats import norm

from rvm_pymc._core.predictive import Predictive
from rvm_pymc.plotting._common import (
    as_fits,
    check_fits_features,
    check_inputs,
    check_prob,
    fit_colors,
    n_relevant,
    new_axes,
    padded_grid,
    relevant_points,
)

__all__ = [
    "plot_class_probability_2d",
    "plot_predictive_1d",
    "plot_regression_1d",
    "plot_reliability",
]

_DATA_LABEL = "training data"
_TRUTH_LABEL = "truth"


# the k-th fit's line style and hatch (cycled), and the widest band's opacity: overlaid
# fits stay distinguishable
LINESTYLES = ("-", "--", "-.", ":")
HATCHES = ("", "//", "\\\\", "..")
BAND_ALPHA = 0.15


def _draw_band_and_mean(ax, x, mean, edges, color, label, k=0):
    """Bands ``{prob: (lo, hi)}`` widest first, then the mean line of fit ``k`` (returned)."""
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
    have = {h.get_label() for h in ax.get_lines() + list(ax.collections)}
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

    Each fit has its colour, line style and legend entry; its relevance vectors are ringed.

    Parameters
    ----------
    fits : RVR or mapping of str to RVR
        Fitted regression estimators on one input feature.
    X_train : array_like of shape (N,) or (N, 1)
        The fits' training inputs.
    y_train : array_like of shape (N,)
        Training targets.
    X_grid : array_like of shape (n,) or (n, 1), optional
        Where to draw; default ``n_grid`` points over the range of ``X_train``, widened 5%.
    bands : sequence of float in (0, 1), default (0.5, 0.95)
        Central predictive intervals, noise included (NUTS: of the mixture over draws).
    truth : callable or array_like of shape (n,), optional
        The noise-free function, or its values on ``X_grid``.
    show_relevance : bool, default True
        Ring the relevance vectors (NUTS: ``rvm_pymc.comparison.relevant_bases``).
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
        For a classifier, inputs that are not 1-D, or a band outside (0, 1).

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
    X_grid = check_inputs(padded_grid(X_train, n_grid) if X_grid is None else X_grid, 1, "X_grid")
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

    The array-level :func:`plot_predictive_1d`; calling it again on an Axes overlays a fit.

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
        Default the next colour of the cycle.
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
    color = f"C{n_prev % 10}" if color is None else color
    rv = np.asarray(relevance_idx, dtype=int).reshape(-1)
    label = f"predictive mean ± 2 sd ({rv.size} RVs)" if label is None else label
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


def _codes(est, y, what: str) -> np.ndarray:
    """Labels as codes ``0..K-1`` of ``est.classes_``; ValueError for an unknown label."""
    return Predictive(classes=est.classes_).class_index(np.asarray(y).reshape(-1), what)


def _same_classes(fits) -> np.ndarray:
    first = next(iter(fits.values())).classes_
    for name, est in fits.items():
        if not np.array_equal(est.classes_, first):
            raise ValueError(f"fits[{name!r}] has classes {est.classes_.tolist()}, not "
                             f"{first.tolist()}: overlay fits of the same labels")  # fmt: skip
    return first


def plot_class_probability_2d(
    fits: Any,
    X,
    y,
    *,
    grid_size: int = 120,
    show_relevance: bool = True,
    cmap: str = "RdBu_r",
    colors: Any = None,
    labels: dict[str, str] | None = None,
    ax=None,
):
    """Class-probability contours of classifiers on 2-D inputs, with their relevance vectors.

    The ``p = 0.5`` contours (K > 2: decision boundaries); for one fit also the probability
    of ``classes_[1]`` filled (K > 2: the top class, its probability as opacity).

    Parameters
    ----------
    fits : RVC or mapping of str to RVC
        Fitted classifiers of any ``method`` on two input features.
    X : array_like of shape (N, 2)
        The training inputs (the relevance vectors are rows of it).
    y : array_like of shape (N,)
        Their labels.
    grid_size : int, default 120
        Points per axis of the probability grid.
    show_relevance : bool, default True
    cmap : str, default "RdBu_r"
        Colour map of the filled probability.
    colors, labels, ax : optional
        As for :func:`plot_predictive_1d` (one fit is black by default).

    Returns
    -------
    matplotlib.axes.Axes

    Raises
    ------
    ValueError
        For a regression fit, inputs that are not 2-D, or fits of other classes.

    Examples
    --------
    On Ripley's data, ``plot_class_probability_2d({"reference": ref, "nuts": nuts}, X, y)``
    overlays the two decision boundaries.
    """
    fits = as_fits(fits, kind="classification")
    check_fits_features(fits, 2)
    X = check_inputs(X, 2, "X")
    classes = _same_classes(fits)
    codes = _codes(next(iter(fits.values())), y, "y")
    if codes.size != X.shape[0]:
        raise ValueError(f"y has {codes.size} labels for {X.shape[0]} points of X")
    g0, g1 = padded_grid(X, grid_size).T
    G0, G1 = np.meshgrid(g0, g1)
    grid = np.column_stack([G0.ravel(), G1.ravel()])
    ax = new_axes(ax, figsize=(6.5, 5.5))
    single = len(fits) == 1
    cols = fit_colors(list(fits), "k" if single and colors is None else colors)
    labels = dict(labels or {})
    binary = classes.size == 2
    import matplotlib.lines as mlines

    handles = []
    for k, (name, est) in enumerate(fits.items()):
        P = est.predict_proba(grid)
        c = cols[name]
        if binary:
            p1 = P[:, 1].reshape(G0.shape)
            if single:
                cf = ax.contourf(G0, G1, p1, levels=np.linspace(0, 1, 11), cmap=cmap, alpha=0.6)
                ax.figure.colorbar(cf, ax=ax, label=f"P(y = {classes[1]})")
            ax.contour(G0, G1, p1, levels=[0.5], colors=[c], linewidths=2)
        else:
            top = P.argmax(axis=1).reshape(G0.shape)
            if single:
                conf = P.max(axis=1).reshape(G0.shape)
                ax.imshow(np.dstack([_class_rgb(top, classes.size), conf]), origin="lower",
                          extent=(g0[0], g0[-1], g1[0], g1[-1]), aspect="auto",
                          interpolation="nearest")  # fmt: skip
            ax.contour(G0, G1, top, levels=np.arange(classes.size - 1) + 0.5, colors=[c],
                       linewidths=2)  # fmt: skip
        rv = relevant_points(est) if show_relevance else np.zeros(0, dtype=np.intp)
        _rv_rings(ax, X[rv, 0], X[rv, 1], c, 10 + 4 * k)
        boundary = "p = 0.5" if binary else "boundaries"
        default = f"{name}: {boundary}" + (f", {n_relevant(est)} RVs" if show_relevance else "")
        handles.append(mlines.Line2D([], [], color=c, lw=2, marker="o" if show_relevance else None,
                                     mfc="none", label=labels.get(name, default)))  # fmt: skip
    for j, cl in enumerate(classes):
        sel = codes == j
        h = ax.scatter(X[sel, 0], X[sel, 1], s=14, color=_class_rgb(np.array(j), classes.size),
                       edgecolors="k", linewidths=0.3, label=f"class {cl}")  # fmt: skip
        handles.append(h)
    ax.set_xlim(g0[0], g0[-1])
    ax.set_ylim(g1[0], g1[-1])
    ax.set_xlabel("x1")
    ax.set_ylabel("x2")
    ax.legend(handles=handles, loc="best", fontsize="small")
    return ax


def _class_rgb(codes: np.ndarray, n_classes: int) -> np.ndarray:
    """RGB of class codes: blue and red for two classes, tab10 otherwise."""
    from matplotlib import colormaps

    if n_classes == 2:
        table = np.array([[0.13, 0.40, 0.67], [0.70, 0.09, 0.17]])
    else:
        table = np.asarray(colormaps["tab10"](np.arange(n_classes) % 10))[:, :3]
    return table[np.asarray(codes)]


def reliability_curve(proba: np.ndarray, codes: np.ndarray, n_bins: int):
    """Per non-empty bin: mean confidence, observed frequency and count; and the ECE."""
    if proba.shape[1] == 2:
        conf, hit, lo = proba[:, 1], (codes == 1).astype(float), 0.0
    else:
        conf = proba.max(axis=1)
        hit = (proba.argmax(axis=1) == codes).astype(float)
        lo = 1.0 / proba.shape[1]
    edges = np.linspace(lo, 1.0, n_bins + 1)
    which = np.clip(np.searchsorted(edges, conf, side="right") - 1, 0, n_bins - 1)
    count = np.bincount(which, minlength=n_bins)
    s_conf = np.bincount(which, weights=conf, minlength=n_bins)
    s_hit = np.bincount(which, weights=hit, minlength=n_bins)
    keep = count > 0
    mean_conf = s_conf[keep] / count[keep]
    freq = s_hit[keep] / count[keep]
    ece = float(np.sum(count[keep] * np.abs(freq - mean_conf)) / conf.size)
    return mean_conf, freq, count[keep], ece


def plot_reliability(
    fits: Any,
    X_test,
    y_test,
    n_bins: int = 10,
    *,
    band: float | None = 0.9,
    show_counts: bool = True,
    colors: Any = None,
    labels: dict[str, str] | None = None,
    ax=None,
):
    """Reliability diagram of one or several classifiers on held-out data.

    Per bin, the mean predicted probability of ``classes_[1]`` (K > 2: of the top class)
    against its observed frequency (accuracy), sized by count; the legend gives the ECE.
    The bar is the central ``band`` interval of ``Binomial(n, p) / n``: the calibrated range.

    Parameters
    ----------
    fits : RVC or mapping of str to RVC
        Fitted classifiers of any ``method``, of the same classes.
    X_test : array_like of shape (n, n_features)
    y_test : array_like of shape (n,)
        Labels, among ``classes_``.
    n_bins : int, default 10
        Equal-width bins of the probability.
    band : float in (0, 1) or None, default 0.9
        Probability of the binomial bands; None draws none.
    show_counts : bool, default True
        Write the number of points of each bin beside its marker.
    colors, labels, ax : optional
        As for :func:`plot_predictive_1d`.

    Returns
    -------
    matplotlib.axes.Axes

    Examples
    --------
    ``plot_reliability({"reference": ref, "nuts": nuts}, X_test, y_test)``.
    """
    fits = as_fits(fits, kind="classification")
    _same_classes(fits)
    if not (isinstance(n_bins, int | np.integer) and n_bins >= 1):
        raise ValueError(f"n_bins must be an integer >= 1; got {n_bins!r}")
    if band is not None:
        band = check_prob(band, "band")
    first = next(iter(fits.values()))
    X_test = check_inputs(X_test, int(first.n_features_in_), "X_test")
    codes = _codes(first, y_test, "y_test")
    if codes.size != X_test.shape[0]:
        raise ValueError(f"y_test has {codes.size} labels for {X_test.shape[0]} points")
    ax = new_axes(ax, figsize=(5.5, 5.5))
    cols = fit_colors(list(fits), colors)
    labels = dict(labels or {})
    binary = first.classes_.size == 2
    lo = 0.0 if binary else 1.0 / first.classes_.size
    ax.plot([lo, 1.0], [lo, 1.0], ls="--", color="0.5", lw=1, label="_nolegend_")
    for name, est in fits.items():
        conf, freq, count, ece = reliability_curve(est.predict_proba(X_test), codes, n_bins)
        c = cols[name]
        ax.plot(
            conf, freq, "-", color=c, lw=1.5, label=labels.get(name, f"{name} (ECE {ece:.3f})")
        )
        ax.scatter(conf, freq, s=12 + 120 * count / codes.size, color=c, zorder=3,
                   label="_nolegend_")  # fmt: skip
        if band is not None:
            lo_f, hi_f = binomial_band(conf, count, band)
            ax.vlines(conf, lo_f, hi_f, color=c, lw=5, alpha=0.3, label="_nolegend_",
                      gid=f"binomial band: {name}")  # fmt: skip
        if show_counts:
            for x_, y_, n_ in zip(conf, freq, count, strict=True):
                ax.annotate(str(int(n_)), (x_, y_), xytext=(4, -9), textcoords="offset points",
                            fontsize="x-small", color=c, gid=f"bin count: {name}")  # fmt: skip
    what = f"class {first.classes_[1]}" if binary else "top class"
    ax.set_xlabel(f"predicted probability of {what}")
    ax.set_ylabel(f"observed frequency of {what}" if binary else "accuracy")
    ax.set_xlim(lo - 0.02, 1.02)
    ax.set_ylim(-0.02, 1.02)
    ax.set_aspect("equal", adjustable="box")
    about = [f"bars: {band:.0%} binomial range if calibrated"] if band is not None else []
    about += ["numbers: points per bin"] if show_counts else []
    if about:
        ax.set_title("; ".join(about), fontsize="small")
    ax.legend(loc="upper left", fontsize="small")
    return ax


def binomial_band(conf: np.ndarray, count: np.ndarray, prob: float):
    """Central ``prob`` interval of ``Binomial(n, p) / n`` per bin (p = conf, n = count)."""
    from scipy.stats import binom

    n = np.asarray(count, dtype=float)
    p = np.clip(np.asarray(conf, dtype=float), 0.0, 1.0)
    lo = binom.ppf((1.0 - prob) / 2.0, n, p) / n
    hi = binom.ppf((1.0 + prob) / 2.0, n, p) / n
    return lo, hi
