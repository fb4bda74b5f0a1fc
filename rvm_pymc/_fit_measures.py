"""What a fit says about its bases: relevance, effective parameters, weight moments, diagnostics.

Read through the estimators' public attributes (``posterior_``, ``idata_``,
``active_``, ``basis_scale_``, ``y_scale_``), the same for every method; used
by :mod:`rvm_pymc.comparison` and the plots.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = [
    "RELEVANCE_ALPHA",
    "diagnostics",
    "effective_parameters",
    "relevant_bases",
    "weight_moments",
]

RELEVANCE_ALPHA = 1e3
"""Default threshold of :func:`relevant_bases` on the standardised precision."""


def _standardised_log_alpha(fit) -> np.ndarray:
    """``log alpha`` of the active bases on the fitted scale (unit-RMS columns, unit-sd target).

    ``(M,)`` for a type-II fit, ``(S, M)`` draws for a sampled one.
    """
    post = fit.posterior_
    y_scale = float(getattr(fit, "y_scale_", 1.0))
    shift = 2.0 * np.log(np.asarray(fit.basis_scale_)[fit.active_] / y_scale)
    la = np.asarray(post.log_alpha, dtype=float)
    if not post.is_type_ii:
        la = la.reshape(-1, la.shape[-1])
    return la - shift


def relevant_bases(fit, *, alpha_max: float = RELEVANCE_ALPHA, prob: float = 0.5) -> list[str]:
    """Names of the bases a fit counts as relevant.

    A type-II fit (reference, map): the bases it did not prune.  A sampled fit
    (nuts), which prunes nothing: the bases whose posterior probability of a
    standardised precision ``alpha_m`` below ``alpha_max`` is at least
    ``prob``.  "Standardised" is the scale every fit works on: basis columns
    of unit root-mean-square and (regression) targets of unit sd; there
    ``alpha_m > 1e3`` gives the weight a prior sd below 0.03, i.e. a
    contribution of a few per cent of the target's sd at most.

    Parameters
    ----------
    fit : RVR or RVC, fitted
    alpha_max : float, default 1e3
    prob : float in (0, 1), default 0.5

    Returns
    -------
    list of str
        Basis names (``"bias"``, ``"x<i>"``) in the fit's order.
    """
    if not (np.isfinite(alpha_max) and alpha_max > 0):
        raise ValueError(f"alpha_max must be a finite float > 0; got {alpha_max!r}")
    if not 0.0 < prob < 1.0:
        raise ValueError(f"prob must lie in (0, 1); got {prob!r}")
    names = list(fit.active_names_)
    if fit.posterior_.is_type_ii:
        return names
    la = _standardised_log_alpha(fit)
    keep = np.mean(la < np.log(alpha_max), axis=0) >= prob
    return [n for n, k in zip(names, keep, strict=True) if k]


def _weight_var_and_prior_var(fit) -> tuple[np.ndarray, np.ndarray]:
    """Posterior variance of every weight ``(M, K)`` and its prior variance ``1/alpha``."""
    post = fit.posterior_
    m = post.n_basis
    if post.is_type_ii:
        var = np.diag(post.cov).reshape(-1, m).T  # class-major -> (M, K)
        prior_var = np.exp(-np.asarray(post.log_alpha, dtype=float))[:, None]
    else:
        d = post.draws.reshape(-1, *post.draws.shape[2:])
        var = d.var(axis=0).reshape(m, -1)
        la = np.asarray(post.log_alpha, dtype=float).reshape(-1, m)
        prior_var = np.exp(-la).mean(axis=0)[:, None]
    return var, prior_var


def effective_parameters(fit) -> float:
    """The number of well-determined weights, ``sum_m gamma_m`` (Tipping 2001, MacKay 1992).

    ``gamma_m = 1 - Var(w_m | data) / E[1 / alpha_m]``: the fraction of the
    prior variance of a weight that the data remove.  For a type-II fit it
    is exactly ``1 - alpha_m Sigma_mm`` of the evidence framework; for a
    sampled fit both moments are taken over the posterior draws (the variance
    of the weight and the mean of its prior variance ``1 / alpha_m``), each
    ``gamma_m`` clipped to [0, 1].  Softmax sums over classes.
    """
    var, prior_var = _weight_var_and_prior_var(fit)
    return float(np.sum(np.clip(1.0 - var / prior_var, 0.0, 1.0)))


def diagnostics(fit) -> dict[str, float]:
    """Divergences, max R-hat and min bulk ESS of a sampled fit (NaN for type-II)."""
    out = {"divergences": np.nan, "max_rhat": np.nan, "min_ess_bulk": np.nan}
    if fit.posterior_.is_type_ii:
        return out
    import arviz as az

    tree = fit.idata_
    names = [v for v in ("w", "W", "log_alpha", "log_beta") if v in tree["posterior"]]
    stats = tree["sample_stats"] if "sample_stats" in tree.children else None
    if stats is not None and "diverging" in stats:
        out["divergences"] = int(np.asarray(stats["diverging"].values).sum())
    if tree["posterior"].sizes["chain"] > 1:
        rhat = az.rhat(tree, var_names=names)
        out["max_rhat"] = float(max(float(np.nanmax(rhat[v].values)) for v in names))
    ess = az.ess(tree, var_names=names, method="bulk")
    out["min_ess_bulk"] = float(min(float(np.nanmin(ess[v].values)) for v in names))
    return out


def weight_moments(fit) -> pd.DataFrame:
    """Per basis (and class): posterior mean and sd of ``w`` and of ``log alpha`` (data units)."""
    post = fit.posterior_
    names = list(post.basis_names)
    mean = np.asarray(post.weight_mean(), dtype=float).reshape(len(names), -1)
    var, _ = _weight_var_and_prior_var(fit)
    la = np.asarray(post.log_alpha, dtype=float)
    if post.is_type_ii:
        la_mean, la_sd = la, np.zeros_like(la)
    else:
        flat = la.reshape(-1, la.shape[-1])
        la_mean, la_sd = flat.mean(axis=0), flat.std(axis=0)
    k = mean.shape[1]
    rows = [n if k == 1 else f"{n}[{c}]" for n in names for c in range(k)]
    return pd.DataFrame(
        {
            "w_mean": mean.reshape(-1),
            "w_sd": np.sqrt(var).reshape(-1),
            "log_alpha_mean": np.repeat(la_mean, k),
            "log_alpha_sd": np.repeat(la_sd, k),
        },
        index=rows,
    )
