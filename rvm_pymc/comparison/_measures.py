"""What a fit says about its bases: relevance, effective parameters, weight moments, diagnostics.

Read through the estimators' public attributes (``posterior_``, ``idata_``,
``active_``, ``basis_scale_``, ``y_scale_``), the same for every method; used
by :mod:`rvm_pymc.comparison` and the plots.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

__all__ = [
    "RELEVANCE_PROB",
    "check_fits",
    "diagnostics",
    "effective_parameters",
    "relevant_bases",
    "weight_moments",
]

RELEVANCE_PROB = 0.95
"""Default of :func:`relevant_bases`: the sign of a sampled weight known with this probability."""


def relevant_bases(fit, *, prob: float = RELEVANCE_PROB) -> list[str]:
    """Names of the bases a fit counts as relevant.

    A type-II fit (reference, map): the bases it did not prune.  A sampled fit
    (nuts), which prunes nothing: the bases whose weight has a sign the
    posterior is sure of, ``max(P(w_m > 0), P(w_m < 0)) >= prob`` (for
    softmax, in at least one class), i.e. whose central ``2 prob - 1``
    posterior interval excludes 0.  The rule does not depend on the scale of
    the data or on the hyperprior; a rule on the precisions would: under a
    proper Gamma prior on ``alpha_m`` the posterior of an irrelevant
    precision is about its prior, which puts it anywhere in a wide range.

    Parameters
    ----------
    fit : RVR or RVC, fitted
    prob : float in (0.5, 1), default 0.95

    Returns
    -------
    list of str
        Basis names (``"bias"``, ``"x<i>"``) in the fit's order.
    """
    if not 0.5 < prob < 1.0:
        raise ValueError(f"prob must lie in (0.5, 1); got {prob!r}")
    names = list(fit.active_names_)
    post = fit.posterior_
    if post.is_type_ii:
        return names
    c, s_ = post.draws.shape[:2]
    d = post.draws.reshape(c * s_, len(names), -1)  # (draws, M, K or 1)
    pos = np.mean(d > 0, axis=0)
    sure = np.maximum(pos, np.mean(d < 0, axis=0)) >= prob
    return [n for n, k in zip(names, sure.any(axis=1), strict=True) if k]


def _weight_var(fit) -> np.ndarray:
    """Posterior variance of every weight, ``(M, K)`` (``K = 1`` but for softmax)."""
    post = fit.posterior_
    m = post.n_basis
    if m == 0:  # every basis pruned
        return np.zeros((0, 1))
    if post.is_type_ii:
        return np.diag(post.cov).reshape(-1, m).T  # class-major -> (M, K)
    d = post.draws.reshape(-1, *post.draws.shape[2:])
    return d.var(axis=0).reshape(m, -1)


def effective_parameters(fit) -> float:
    """The number of well-determined parameters (Tipping 2001, MacKay 1992), from the posterior.

    A type-II fit: ``sum_m gamma_m = sum_m (1 - alpha_m Sigma_mm)`` of the
    evidence framework, which equals ``trace(B Phi Sigma Phi^T)``, the
    posterior variance of the latent function at the training points in
    units of the noise: ``B = beta I`` (regression), ``diag(p_i (1 - p_i))``
    at the mode (binary).  A sampled fit: the same trace from the draws,
    ``sum_i Var(f_i) E[b_i]``, with ``f_i`` the latent value at training
    point ``i`` and ``b_i`` its noise precision ``beta`` (regression) or
    ``p_i (1 - p_i)`` (binary); softmax sums ``Var(f_ik) E[p_ik (1 - p_ik)]``
    over the classes (the diagonal of the multinomial curvature).  The
    quantity lives in data space, so it does not depend on how the prior
    spreads the weights over correlated bases (a rule on the weights,
    ``1 - Var(w_m) / E[1 / alpha_m]``, moved with the hyperprior's rate).
    """
    post = fit.posterior_
    if post.is_type_ii:
        alpha = np.exp(np.asarray(post.log_alpha, dtype=float))[:, None]
        return float(np.sum(np.clip(1.0 - alpha * _weight_var(fit), 0.0, 1.0)))
    from scipy.special import expit, softmax

    Phi = np.asarray(fit.idata_["constant_data"]["Phi"].values, dtype=float)
    c, d = post.draws.shape[:2]
    w = post.draws.reshape(c * d, *post.draws.shape[2:])
    if post.kind == "softmax":
        f = np.einsum("nm,smk->snk", Phi, w)
        p = softmax(f, axis=-1)
        return float(np.sum(f.var(axis=0) * (p * (1 - p)).mean(axis=0)))
    f = w @ Phi.T  # (draws, N)
    if post.kind == "binary":
        p = expit(f)
        b = (p * (1 - p)).mean(axis=0)
    else:
        b = np.exp(np.asarray(post.log_beta, dtype=float)).mean()
    return float(np.sum(f.var(axis=0) * b))


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
    columns = ["w_mean", "w_sd", "log_alpha_mean", "log_alpha_sd"]
    if not names:  # every basis pruned
        return pd.DataFrame({c: np.zeros(0) for c in columns}, index=pd.Index([], dtype=object))
    mean = np.asarray(post.weight_mean(), dtype=float).reshape(len(names), -1)
    var = _weight_var(fit)
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


def check_fits(fits: Mapping) -> None:
    """A non-empty mapping of fitted estimators, all RVR or all RVC.

    Raises
    ------
    ValueError
        For an empty mapping or a mixture of regressors and classifiers.
    TypeError
        For a value that is not an RVR/RVC.
    sklearn.exceptions.NotFittedError
        For an estimator not fitted yet.
    """
    from sklearn.utils.validation import check_is_fitted

    if not isinstance(fits, Mapping) or not fits:
        raise ValueError("fits must be a non-empty mapping of name -> fitted RVR/RVC")
    from rvm_pymc.estimators import RVC, RVR

    kinds = set()
    for name, f in fits.items():
        if not isinstance(f, RVR | RVC):
            raise TypeError(f"fits[{name!r}] is not an RVR/RVC; got {type(f).__name__}")
        check_is_fitted(f, "coef_")  # NotFittedError naming the estimator
        kinds.add(isinstance(f, RVC))
    if len(kinds) > 1:
        raise ValueError("fits must be all regressors (RVR) or all classifiers (RVC)")
