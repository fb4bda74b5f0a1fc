"""compare_weights and summary: what the fits say, basis by basis."""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from rvm_pymc._core.convergence import MIN_ESS, RHAT_MAX
from rvm_pymc.comparison._measures import (
    RELEVANCE_PROB,
    check_fits,
    diagnostics,
    effective_parameters,
    log_evidence,
    n_relevant,
    relevant_bases,
    same_basis,
    weight_moments,
)
from rvm_pymc.exceptions import ConvergenceWarning, SamplingWarning, warn_user

__all__ = ["compare_weights", "summary"]


def compare_weights(
    fits: Mapping[str, Any], *, prob: float = RELEVANCE_PROB
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The weights of several fits of one model, basis by basis.

    Parameters
    ----------
    fits : mapping of str to fitted RVR or RVC
        Fits of the same basis, e.g. a :class:`FitSet`.
    prob : float, default 0.95
        The relevance rule of :func:`relevant_bases` for sampled fits.

    Returns
    -------
    table : pandas.DataFrame
        One row per basis (``"name[k]"`` per class for softmax); columns
        ``(fit, quantity)``: ``w_mean``, ``w_sd``, ``log_alpha_mean``,
        ``log_alpha_sd`` (a pruned basis: ``w`` 0 with sd 0, ``log alpha =
        inf``), ``relevant``; and ``("z", "a|b")`` for every pair of fits,
        ``(mean_a - mean_b) / sqrt(sd_a^2 + sd_b^2)`` (NaN where both sds are 0).
    agreement : pandas.DataFrame
        Fit by fit, the Jaccard index of the sets of relevant bases.
    """
    check_fits(fits)
    names = list(fits)
    for name in names[1:]:
        if not same_basis(fits[names[0]], fits[name], getattr(fits, "X", None)):
            raise ValueError(
                f"fits {names[0]!r} and {name!r} are not fits of the same basis (kernel, "
                "width, training inputs, bias or classes differ), so their weights cannot "
                "be matched by name; compare_weights needs fits of one model, e.g. fit_all"
            )
    moments = {name: weight_moments(f) for name, f in fits.items()}
    relevant = {name: set(relevant_bases(f, prob=prob)) for name, f in fits.items()}
    index: list[str] = []
    for m in moments.values():
        index += [r for r in m.index if r not in index]
    cols = {}
    for name, m in moments.items():
        m = m.reindex(index)
        missing = m["w_mean"].isna()
        m.loc[missing, ["w_mean", "w_sd", "log_alpha_sd"]] = 0.0  # pruned: a point mass at 0
        m.loc[missing, "log_alpha_mean"] = np.inf
        m["relevant"] = [r.split("[")[0] in relevant[name] for r in index]
        for q in m.columns:
            cols[(name, q)] = m[q].to_numpy()
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            sd = np.hypot(cols[(a, "w_sd")], cols[(b, "w_sd")])
            diff = cols[(a, "w_mean")] - cols[(b, "w_mean")]
            with np.errstate(divide="ignore", invalid="ignore"):
                cols[("z", f"{a}|{b}")] = np.where(sd > 0, diff / sd, np.nan)
    table = pd.DataFrame(cols, index=index)
    table.columns = pd.MultiIndex.from_tuples(table.columns, names=["fit", "quantity"])
    jac = np.ones((len(names), len(names)))
    for i, a in enumerate(names):
        for j, b in enumerate(names):
            union = relevant[a] | relevant[b]
            jac[i, j] = len(relevant[a] & relevant[b]) / len(union) if union else 1.0
    return table, pd.DataFrame(jac, index=names, columns=names)


def summary(
    fit, *, rhat_max: float = RHAT_MAX, ess_min: float = MIN_ESS, **kwargs
) -> pd.DataFrame:
    """``arviz.summary`` of a fit with the RVM's lines; warnings where it is not to be trusted.

    Parameters
    ----------
    fit : RVR or RVC, fitted
    rhat_max : float, default 1.01
        Warn (``SamplingWarning``) when a sampled fit's R-hat exceeds it.
    ess_min : float, default 400
        Warn when a sampled fit's bulk ESS is below it.
    **kwargs
        Passed to :func:`arviz.summary` (e.g. ``ci_prob``).

    Returns
    -------
    pandas.DataFrame
        The rows of ``arviz.summary`` for the weights (and, for nuts, the log
        precisions) of the relevant bases (of every basis when none is), then
        the RVM's own rows in the ``mean`` column: ``rvm:n_relevant``,
        ``rvm:effective_parameters``, ``rvm:log_evidence``, ``rvm:converged``
        and, for nuts, ``rvm:divergences``, ``rvm:max_rhat``,
        ``rvm:min_ess_bulk``.  A type-II fit shows only ``kind="stats"`` columns.

    Warns
    -----
    ConvergenceWarning
        A type-II fit that did not converge.
    SamplingWarning
        Divergences, R-hat above ``rhat_max`` or bulk ESS below ``ess_min``.
    """
    import arviz as az

    post = fit.posterior_
    tree = fit.idata_
    keep = relevant_bases(fit)
    # a type-II fit's log_alpha is a constant, not a posterior variable
    var_names = [v for v in ("w", "W", "log_alpha", "log_beta") if v in tree["posterior"]]
    kwargs.setdefault("kind", "stats" if post.is_type_ii else "all")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        table = az.summary(
            tree, var_names=var_names, coords={"basis": keep} if keep else None, **kwargs
        )
    diag = diagnostics(fit)
    lines = {
        "rvm:n_relevant": n_relevant(fit),
        "rvm:effective_parameters": effective_parameters(fit),
        "rvm:log_evidence": log_evidence(fit),
        "rvm:converged": float(bool(fit.converged_)),
    }
    if not post.is_type_ii:
        lines.update({f"rvm:{k}": v for k, v in diag.items() if k != "converged"})
    extra = pd.DataFrame({"mean": list(lines.values())}, index=list(lines))
    out = pd.concat([table, extra.reindex(columns=table.columns)])
    out.loc[extra.index, "mean"] = extra["mean"].to_numpy()
    if post.is_type_ii and not fit.converged_:
        warn_user(
            f"the {fit.method} fit did not converge in {fit.n_iter_} iterations: its "
            "hyperparameters are not at an optimum of the evidence",
            ConvergenceWarning,
        )
    if not post.is_type_ii:
        problems = []
        if diag["divergences"] > 0:
            problems.append(f"{int(diag['divergences'])} divergent transitions")
        if diag["max_rhat"] > rhat_max:
            problems.append(f"max R-hat {diag['max_rhat']:.3f} > {rhat_max}")
        if diag["min_ess_bulk"] < ess_min:
            problems.append(f"min bulk ESS {diag['min_ess_bulk']:.0f} < {ess_min:.0f}")
        if problems:
            warn_user(
                "the NUTS fit is not to be trusted: " + "; ".join(problems),
                SamplingWarning,
            )
    return out
