"""The fits as ArviZ DataTrees side by side, and a PSIS-LOO ranking that marks type-II fits."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rvm_pymc.exceptions import warn_user

__all__ = ["arviz_trees", "is_type_ii_tree", "loo_compare"]

TYPE_II_ATTR = "rvm_type_ii"  # root attribute set by arviz_trees


def is_type_ii_tree(tree) -> bool:
    """Whether a DataTree is a type-II fit (hyperparameters at point values, not sampled).

    Read from the root attribute ``rvm_type_ii`` of :func:`arviz_trees`, else
    the ``method`` attribute, else ``log_alpha`` in ``constant_data``.
    """
    attrs = dict(tree.attrs)
    if TYPE_II_ATTR in attrs:
        return bool(int(attrs[TYPE_II_ATTR]))
    if attrs.get("method") in ("reference", "map", "nuts"):
        return attrs["method"] != "nuts"
    groups = tree.children
    in_post = "posterior" in groups and "log_alpha" in tree["posterior"]
    in_const = "constant_data" in groups and "log_alpha" in tree["constant_data"]
    return in_const and not in_post


def _tree(fit_or_tree):
    return fit_or_tree.idata_ if hasattr(fit_or_tree, "idata_") else fit_or_tree


def arviz_trees(fits: Mapping[str, Any], *, chains: int | None = None, draws: int | None = None):
    """The fits' DataTrees with one number of chains and draws, for multi-model ArviZ plots.

    ArviZ's multi-model plots drop the models with fewer draws than the
    largest.  Every tree keeps its first ``chains`` chains and ``draws``
    draws and gets the root attribute ``rvm_type_ii`` (1: type-II, 0: sampled).

    Parameters
    ----------
    fits : mapping of str to fitted RVR/RVC or DataTree
    chains, draws : int, optional
        At most the smallest numbers among the fits.

    Returns
    -------
    dict of str to xarray.DataTree
        Copies; the fits' own ``idata_`` are not changed.
    """
    trees = {str(name): _tree(f) for name, f in fits.items()}
    if not trees:
        raise ValueError("fits must name at least one fit")
    sizes = {n: t["posterior"].sizes for n, t in trees.items()}
    first: dict[str, slice] = {}
    for dim, asked in (("chain", chains), ("draw", draws)):
        most = min(s[dim] for s in sizes.values())
        if asked is not None and not 1 <= int(asked) <= most:
            raise ValueError(f"{dim}s must lie in [1, {most}] (the smallest among the fits)")
        first[dim] = slice(0, most if asked is None else int(asked))
    out = {}
    for name, tree in trees.items():
        kept = tree.isel(first, missing_dims="ignore")
        kept.attrs = {**tree.attrs, TYPE_II_ATTR: int(is_type_ii_tree(tree))}
        out[name] = kept
    return out


def loo_compare(fits: Mapping[str, Any], *, allow_type_ii: bool = False, **kwargs):
    """``arviz.compare`` (PSIS-LOO) of several fits, refusing to rank type-II fits against sampled.

    PSIS-LOO of a type-II fit (reference, map) is optimistic (the point stays
    in the hyperparameters); rank such fits by ``elpd_kfold`` of :func:`compare`.

    Parameters
    ----------
    fits : mapping of str to fitted RVR/RVC or DataTree
        Trees are recognised as type-II by :func:`is_type_ii_tree`.
    allow_type_ii : bool, default False
        Rank a mixture of type-II and sampled fits anyway, with a warning.
    **kwargs
        Passed to ``arviz.compare`` (``method``, ``var_name``, ...).

    Returns
    -------
    pandas.DataFrame
        ``arviz.compare``'s table with a column ``type_ii``.

    Raises
    ------
    ValueError
        For a mixture of type-II and sampled fits without ``allow_type_ii``.
    """
    import arviz as az

    trees = {str(name): _tree(f) for name, f in fits.items()}
    kind = {name: is_type_ii_tree(t) for name, t in trees.items()}
    if len(set(kind.values())) > 1:
        type_ii = [n for n, k in kind.items() if k]
        sampled = [n for n, k in kind.items() if not k]
        msg = (
            f"PSIS-LOO ranks type-II fits {type_ii} against sampled fits {sampled}: the LOO of "
            "a type-II fit keeps the hyperparameters fitted on every point and is optimistic, "
            "so the ranking favours it by construction; rank by elpd_kfold of "
            "rvm_pymc.comparison.compare"
        )
        if not allow_type_ii:
            raise ValueError(msg + " (or pass allow_type_ii=True to rank them anyway)")
        warn_user(msg, UserWarning)
    table = az.compare(trees, **kwargs)
    table["type_ii"] = [kind[str(n)] for n in table.index]
    return table
