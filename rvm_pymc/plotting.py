"""Matplotlib plots (matplotlib is imported only when a plot is drawn)."""

from __future__ import annotations

import numpy as np

__all__ = ["plot_regression_1d"]


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
    ax=None,
):
    """Predictive mean, a +/-2 sd band and the relevance vectors of a 1-D fit.

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
    ax : matplotlib Axes, optional
        Axes to draw on; a new figure is made otherwise.

    Returns
    -------
    matplotlib.axes.Axes
    """
    import matplotlib.pyplot as plt

    x_train = np.ravel(x_train)
    x_grid = np.ravel(x_grid)
    order = np.argsort(x_grid)
    x_grid, mean, std = x_grid[order], np.asarray(mean)[order], np.asarray(std)[order]
    if ax is None:
        _, ax = plt.subplots(figsize=(8, 4.5))
    ax.fill_between(x_grid, mean - 2 * std, mean + 2 * std, color="C0", alpha=0.2,
                    label="predictive mean ± 2 sd")
    ax.plot(x_grid, mean, color="C0", lw=2, label="predictive mean")
    if truth is not None:
        ax.plot(x_grid, np.asarray(truth)[order], "k--", lw=1, label="truth")
    ax.plot(x_train, t_train, ".", color="0.5", ms=4, label="training data")
    rv = np.asarray(relevance_idx, dtype=int)
    if rv.size:
        ax.plot(x_train[rv], np.asarray(t_train)[rv], "o", mfc="none", mec="C3", ms=10,
                mew=1.5, label=f"relevance vectors ({rv.size})")
    ax.set_xlabel("x")
    ax.set_ylabel("t")
    if title:
        ax.set_title(title)
    ax.legend(loc="upper right", fontsize="small")
    return ax
