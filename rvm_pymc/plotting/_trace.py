"""ArviZ's trace plots of a fit with a default selection: the noise precision and the most
relevant bases, not one subplot per basis; the same selection as a DataTree for any ArviZ
call (:func:`diagnostic_tree`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["TRACE_TOP", "diagnostic_tree", "plot_trace", "trace_selection"]

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


def _max_panels() -> int | None:
    """ArviZ's ``rcParams["plot.max_subplots"]`` (40 by default; None: no limit)."""
    try:
        from arviz_base import rcParams
    except ImportError:  # without ArviZ 1.x: its documented default
        return 40
    return rcParams["plot.max_subplots"]


def diagnostic_tree(fit, top: int | None = TRACE_TOP):
    """The fit's ``idata_`` cut to what ArviZ's per-panel plots can draw.

    ``arviz.plot_trace`` and ``arviz.plot_rank`` draw one panel per variable
    and coordinate and refuse more than ``rcParams["plot.max_subplots"]``
    (40): every NUTS fit (``w`` and ``log_alpha`` of every basis) and a
    type-II fit of more than 40 relevant bases.  This tree holds the
    ``posterior`` of :func:`trace_selection` (``log_beta``, ``log_length_scale``,
    and ``w`` / ``W`` and ``log_alpha`` of the ``top`` most relevant bases,
    fewer when the classes of a softmax fit would pass the panel limit) and
    the ``sample_stats`` (divergences), nothing else: a view for diagnostics
    (``plot_trace``, ``plot_rank``, ``plot_ess``, ``summary``), not a result
    tree to predict from.

    Parameters
    ----------
    fit : RVR, RVC or RVP, fitted (any method)
    top : int or None, default 8
        Bases kept (the most relevant by ``|E[w]| / sd(w)``); None keeps every
        basis (then ArviZ may refuse, or needs ``plot.max_subplots`` raised).

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
    limit = _max_panels()
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
