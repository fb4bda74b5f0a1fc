"""ArviZ's trace plots of a fit with a default selection: the noise precision and the most
relevant bases, not one subplot per basis."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["TRACE_TOP", "plot_trace", "trace_selection"]

TRACE_TOP = 8
"""Default number of bases :func:`trace_selection` keeps (with ``log_beta``: 17 rows of plots)."""


def trace_selection(fit, top: int | None = TRACE_TOP) -> tuple[list[str], dict[str, list[str]]]:
    """``var_names`` and ``coords`` for ArviZ plots of a fit's ``idata_``: a readable default.

    ``az.plot_trace`` (``arviz_plots.plot_trace``) of a whole NUTS fit draws
    one subplot per basis for ``w`` and again for ``log_alpha`` (201 for 100
    bases) and refuses.  This keeps the scalars of the posterior (``log_beta``,
    ``log_length_scale``) and the weights ``w`` / ``W`` and ``log_alpha`` of
    the ``top`` most relevant bases (``rvm_pymc.comparison.rank_bases``:
    ``|E[w]| / sd(w)``, largest first), which is ``2 top + 1`` rows for a
    regression fit.

    Parameters
    ----------
    fit : RVR or RVC, fitted (any method)
    top : int or None, default 8
        Bases kept; None keeps every basis.

    Returns
    -------
    var_names : list of str
    coords : dict
        ``{"basis": [...]}`` in the order of the fit's bases.
    """
    from rvm_pymc.comparison import rank_bases

    if top is not None and not (isinstance(top, int) and top >= 1):
        raise ValueError(f"top must be an integer >= 1 or None (every basis); got {top!r}")
    post = fit.idata_["posterior"]
    order = [str(b) for b in post["basis"].values]
    keep = set(rank_bases(fit)[:top] if top is not None else order)
    var_names = [v for v in ("log_beta", "log_length_scale", "w", "W", "log_alpha") if v in post]
    return var_names, {"basis": [b for b in order if b in keep]}


def plot_trace(
    fit,
    *,
    top: int | None = TRACE_TOP,
    dist: bool = False,
    var_names: Sequence[str] | None = None,
    coords: Mapping[str, Any] | None = None,
    **kwargs,
):
    """ArviZ's trace plot of a fit, by default of :func:`trace_selection`.

    ``arviz_plots.plot_trace`` (``az.plot_trace``: one panel per variable
    and basis, ``2 top + 1`` panels for a regression fit), or with
    ``dist=True`` ``arviz_plots.plot_trace_dist`` (a marginal density beside
    every trace).

    Parameters
    ----------
    fit : RVR or RVC, fitted (any method)
        A type-II fit has only its weight draws (exact draws of a Gaussian)
        in ``posterior``; its hyperparameters are point values.
    top : int or None, default 8
        Bases shown (the most relevant); None for every basis.
    dist : bool, default False
        Draw ``plot_trace_dist`` instead of ``plot_trace``.
    var_names, coords : optional
        Override the selection of :func:`trace_selection`.
    **kwargs
        Passed to the ArviZ function (``backend``, ``compact`` for
        ``plot_trace_dist``, ...).

    Returns
    -------
    arviz_plots.PlotCollection
    """
    import arviz_plots

    draw = arviz_plots.plot_trace_dist if dist else arviz_plots.plot_trace
    default_vars, default_coords = trace_selection(fit, top)
    return draw(
        fit.idata_,
        var_names=list(var_names) if var_names is not None else default_vars,
        coords=dict(coords) if coords is not None else default_coords,
        **kwargs,
    )
