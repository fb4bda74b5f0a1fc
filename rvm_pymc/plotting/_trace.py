"""ArviZ's trace plots of a fit, by default of its scalars and most relevant bases."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["diagnostic_tree", "plot_trace", "trace_selection"]

TRACE_TOP = 8
"""Default number of bases :func:`trace_selection` keeps."""


def trace_selection(fit, top: int | None = TRACE_TOP) -> tuple[list[str], dict[str, list[str]]]:
    """``var_names`` and ``coords`` for ArviZ plots of a fit's ``idata_``: the scalars, and
    the weights and ``log_alpha`` of the ``top`` bases of ``rvm_pymc.comparison.rank_bases``.

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


def diagnostic_tree(fit, top: int | None = TRACE_TOP):
    """The fit's ``idata_`` cut to what ArviZ's per-panel plots can draw.

    The ``posterior`` of :func:`trace_selection` (fewer bases if ``plot.max_subplots``
    needs it) and the ``sample_stats``: a view for diagnostics, not to predict from.

    Parameters
    ----------
    fit : RVR, RVC or RVP, fitted (any method)
    top : int or None, default 8
        Bases kept (the most relevant); None keeps every basis.

    Returns
    -------
    xarray.DataTree

    Examples
    --------
    ::

        import arviz as az

        from rvm_pymc.plotting import diagnostic_tree

        az.plot_trace(diagnostic_tree(est))
        az.plot_rank(diagnostic_tree(est, top=4))
        az.summary(diagnostic_tree(est))
    """
    import xarray as xr

    tree = fit.idata_
    post = tree["posterior"]
    try:  # ArviZ's panel limit (None: no limit)
        from arviz_base import rcParams

        limit = rcParams["plot.max_subplots"]
    except ImportError:  # without ArviZ 1.x: its documented default
        limit = 40
    if top is not None and limit is not None:
        per_basis = (post["W"].sizes["class"] if "W" in post else 1) + ("log_alpha" in post)
        scalars = sum(v in post for v in ("log_beta", "log_length_scale"))
        top = min(top, max(1, (limit - scalars) // per_basis))
    var_names, coords = trace_selection(fit, top)
    groups = {"posterior": post.to_dataset()[var_names].sel(coords)}
    if "sample_stats" in tree.children:
        groups["sample_stats"] = tree["sample_stats"].to_dataset()
    out = xr.DataTree.from_dict(groups)
    out.attrs = dict(tree.attrs)
    return out


def plot_trace(
    fit,
    *,
    top: int | None = TRACE_TOP,
    dist: bool = False,
    var_names: Sequence[str] | None = None,
    coords: Mapping[str, Any] | None = None,
    **kwargs,
):
    """ArviZ's trace plot (``arviz_plots.plot_trace``) of :func:`trace_selection`.

    Parameters
    ----------
    fit : RVR or RVC, fitted (any method)
    top : int or None, default 8
        Bases shown (the most relevant); None for every basis.
    dist : bool, default False
        Draw ``plot_trace_dist`` instead of ``plot_trace``.
    var_names, coords : optional
        Override the selection of :func:`trace_selection`.
    **kwargs
        Passed to the ArviZ function.

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
