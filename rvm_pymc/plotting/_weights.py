"""Per-basis plots: log alpha of every basis, a forest of the relevant weights."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from rvm_pymc.plotting._common import (
    CI_PROB,
    as_fits,
    check_prob,
    fit_colors,
    full_basis_names,
    new_axes,
    ordered_union,
    relevant_names,
)

__all__ = ["plot_log_alpha", "plot_weights_forest"]


def _dodge(k: int, n: int, width: float = 0.6) -> float:
    """Offset of fit ``k`` of ``n`` around a category's position."""
    return 0.0 if n == 1 else width * (k / (n - 1) - 0.5)


LOG_ALPHA_TOP = 20
"""Default number of bases :func:`plot_log_alpha` shows."""


def _top_bases(fits: dict[str, Any], full: dict[str, list[str]], top: int | None) -> list[str]:
    """The ``top`` most relevant bases over the fits (None: all), in natural order."""
    every = ordered_union(list(full.values()))
    if top is None or top >= len(every):
        return every
    from rvm_pymc.comparison import rank_bases

    best: dict[str, int] = {}
    for est in fits.values():
        for r, n in enumerate(rank_bases(est)):
            best[n] = min(best.get(n, r), r)
    picked = sorted(best, key=lambda n: (best[n], every.index(n)))[:top]
    return ordered_union([picked])


def _check_known(bases: list[str], names: Iterable[Sequence[str]]) -> None:
    """Refuse the ``bases`` among none of the fits' basis ``names``."""
    unknown = sorted(set(bases) - set().union(*map(set, names)))
    if unknown:
        raise ValueError(f"bases {unknown} are in none of the fits")


def plot_log_alpha(
    fits: Any,
    *,
    bases: Sequence[str] | None = None,
    top: int | None = LOG_ALPHA_TOP,
    ci_prob: float = CI_PROB,
    colors: Any = None,
    labels: dict[str, str] | None = None,
    ax=None,
):
    """Log precision of every basis: NUTS posterior intervals against type-II point estimates.

    A pruned basis (``alpha = inf``) is a triangle at the top; ``log alpha`` is in data units.

    Parameters
    ----------
    fits : RVR, RVC or mapping of str to them
        Fitted estimators of any ``method``.
    bases : sequence of str, optional
        Basis names to show (``"bias"``, ``"x<i>"``), over ``top``.
    top : int or None, default 20
        The ``top`` most relevant bases (``rvm_pymc.comparison.rank_bases``); None: all.
    ci_prob : float, default 0.9
        Central interval of the NUTS draws.
    colors, labels, ax : optional
        As for :func:`plot_predictive_1d`.

    Returns
    -------
    matplotlib.axes.Axes

    Examples
    --------
    ``plot_log_alpha({"reference": ref, "nuts": nuts})``.
    """
    fits = as_fits(fits)
    ci_prob = check_prob(ci_prob, "ci_prob")
    if top is not None and not (isinstance(top, int | np.integer) and top >= 1):
        raise ValueError(f"top must be an integer >= 1 or None (every basis); got {top!r}")
    full = {name: full_basis_names(est) for name, est in fits.items()}
    n_every = len(ordered_union(list(full.values())))
    if bases is None:
        bases = _top_bases(fits, full, top)
    else:
        bases = [str(b) for b in bases]
        _check_known(bases, full.values())
    if not bases:
        raise ValueError("no basis to show")
    pos = {b: i for i, b in enumerate(bases)}
    ax = new_axes(ax, figsize=(max(6.0, 0.3 * len(bases) + 2.0), 4.5))
    cols = fit_colors(list(fits), colors)
    labels = dict(labels or {})
    top = ax.get_xaxis_transform()  # x in data, y in axes coordinates
    lo_q, hi_q = (1.0 - ci_prob) / 2.0, (1.0 + ci_prob) / 2.0
    for k, (name, est) in enumerate(fits.items()):
        post = est.posterior_
        c = cols[name]
        names = [str(n) for n in post.basis_names]
        shown = [(pos[n], j) for j, n in enumerate(names) if n in pos]
        x = np.array([p for p, _ in shown], dtype=float) + _dodge(k, len(fits))
        cols_j = [j for _, j in shown]
        la = np.asarray(post.log_alpha, dtype=float)
        if not post.is_type_ii:  # NUTS draws
            flat = la.reshape(-1, la.shape[-1])[:, cols_j]
            med = np.median(flat, axis=0)
            q = np.quantile(flat, [lo_q, hi_q], axis=0)
            default = f"{name} (median, {ci_prob:.0%} interval)"
            ax.errorbar(x, med, yerr=[med - q[0], q[1] - med], fmt="o", ms=4, color=c, lw=1.2,
                        capsize=0, label=labels.get(name, default))  # fmt: skip
        else:
            pruned = [pos[b] for b in full[name] if b in pos and b not in set(names)]
            default = f"{name} (point; {len(names)} kept, {len(pruned)} pruned)"
            ax.plot(x, la[cols_j], "D", ms=5, color=c, ls="none",
                    label=labels.get(name, default))  # fmt: skip
            if pruned:
                xp = np.asarray(pruned, dtype=float) + _dodge(k, len(fits))
                ax.plot(xp, np.full(xp.size, 0.97), "^", ms=6, color=c, ls="none",
                        transform=top, clip_on=False, label="_nolegend_")  # fmt: skip
    ax.set_xticks(range(len(bases)))
    ax.set_xticklabels(bases, rotation=90 if len(bases) > 12 else 0, fontsize="small")
    ax.set_xlim(-0.7, len(bases) - 0.3)
    ax.set_xlabel("basis")
    ax.set_ylabel("log alpha (data units)")
    shown = f"{len(bases)} most relevant of {n_every} bases" if len(bases) < n_every else "basis"
    ax.set_title(f"log alpha per {shown} (▲ at the top: pruned, alpha = inf)", fontsize="medium")
    ax.legend(loc="best", fontsize="small")
    return ax


def _intervals(est, bases: list[str], ci_prob: float):
    """Per basis (and class): mean, 50% and ``ci_prob`` equal-tailed intervals, by ArviZ."""
    import arviz as az

    tree = est.idata_
    var = "W" if "W" in tree["posterior"] else "w"
    coords = {"basis": bases}
    mean = tree["posterior"][var].sel(coords).mean(("chain", "draw")).values
    inner = az.eti(tree, prob=0.5, var_names=[var], coords=coords)[var]
    outer = az.eti(tree, prob=ci_prob, var_names=[var], coords=coords)[var]
    return mean.reshape(-1), np.reshape(inner.values, (-1, 2)), np.reshape(outer.values, (-1, 2))


def plot_weights_forest(
    fits: Any,
    *,
    bases: Sequence[str] | None = None,
    ci_prob: float = CI_PROB,
    colors: Any = None,
    labels: dict[str, str] | None = None,
    ax=None,
):
    """A forest plot of the relevant weights of one or several fits.

    Per basis (and class) and fit: the mean, 50% and ``ci_prob`` intervals
    (``arviz.eti``); a pruned basis is a cross at ``w = 0``.

    Parameters
    ----------
    fits : RVR, RVC or mapping of str to them
        Fitted estimators of any ``method``.
    bases : sequence of str, optional
        Basis names to show; default those relevant to any fit
        (``rvm_pymc.comparison.relevant_bases``).
    ci_prob : float, default 0.9
    colors, labels, ax : optional
        As for :func:`plot_predictive_1d`.

    Returns
    -------
    matplotlib.axes.Axes

    Examples
    --------
    ``plot_weights_forest({"reference": ref, "nuts": nuts})``.
    """
    fits = as_fits(fits)
    ci_prob = check_prob(ci_prob, "ci_prob")
    if bases is None:
        bases = ordered_union([relevant_names(est) for est in fits.values()])
    bases = [str(b) for b in bases]
    if not bases:
        raise ValueError("no relevant basis in any fit: give bases=")
    _check_known(bases, (full_basis_names(e) for e in fits.values()))
    n_classes = {1 if e.posterior_.kind != "softmax" else e.classes_.size for e in fits.values()}
    if len(n_classes) > 1:
        raise ValueError(
            "fits mix softmax and single-output models: their weights differ in shape"
        )
    n_class = n_classes.pop()

    def rows_of(names):
        return np.array([bases.index(b) * n_class + j for b in names for j in range(n_class)])

    cols = fit_colors(list(fits), colors)
    labels = dict(labels or {})
    n_fit = len(fits)
    first = next(iter(fits.values()))
    rows = list(bases) if n_class == 1 else [f"{b}[{c}]" for b in bases for c in first.classes_]
    ax = new_axes(ax, figsize=(7.0, max(3.0, 0.35 * len(rows) * n_fit + 1.0)))
    for k, (name, est) in enumerate(fits.items()):
        have = [b for b in bases if b in set(map(str, est.posterior_.basis_names))]
        c = cols[name]
        dy = _dodge(k, n_fit, width=0.5)
        if have:
            m, i50, i90 = _intervals(est, have, ci_prob)
            y = rows_of(have).astype(float) + dy
            ax.hlines(y, i90[:, 0], i90[:, 1], color=c, lw=1.2, label="_nolegend_")
            ax.hlines(y, i50[:, 0], i50[:, 1], color=c, lw=3.5, label="_nolegend_")
            ax.plot(m, y, "o", color=c, mfc="white", ms=5, ls="none", label=labels.get(name, name))
        pruned = [b for b in bases if b not in set(have)]
        if pruned:
            yp = rows_of(pruned)
            ax.plot(np.zeros(yp.size), yp + dy, "x", color=c, ms=6, ls="none",
                    label="_nolegend_" if have else labels.get(name, name))  # fmt: skip
    ax.axvline(0.0, color="0.6", lw=0.8, zorder=0)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels(rows, fontsize="small")
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.set_xlabel(f"w (mean, 50% and {ci_prob:.0%} intervals; x: pruned)")
    ax.legend(loc="best", fontsize="small")
    return ax
