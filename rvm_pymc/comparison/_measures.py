"""What a fit says about its bases: relevance, effective parameters, weight moments, diagnostics.

Read through the estimators' public attributes, the same for every method.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from rvm_pymc._core.convergence import sampling_diagnostics
from rvm_pymc._core.laplace import laplace_log_evidence
from rvm_pymc._core.rbf_width import rbf_columns, sq_distances

__all__ = [
    "RELEVANCE_PROB",
    "basis_label",
    "check_fits",
    "diagnostics",
    "effective_parameters",
    "log_evidence",
    "log_hyperprior",
    "n_relevant",
    "rank_bases",
    "relevant_bases",
    "same_basis",
    "weight_moments",
]

RELEVANCE_PROB = 0.95


def relevant_bases(fit, *, prob: float = RELEVANCE_PROB) -> list[str]:
    """Names of the bases a fit counts as relevant.

    A type-II fit (reference, map): the bases it did not prune.  A sampled fit
    (nuts): the bases whose weight's sign is known with probability ``prob``,
    ``max(P(w_m > 0), P(w_m < 0)) >= prob`` (for softmax, in some class).

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
    sure = np.maximum(np.mean(d > 0, axis=0), np.mean(d < 0, axis=0)) >= prob
    return [n for n, k in zip(names, sure.any(axis=1), strict=True) if k]


def n_relevant(fit, *, prob: float = RELEVANCE_PROB) -> int:
    """The number of relevant bases (:func:`relevant_bases`), the bias not counted."""
    return sum(1 for n in relevant_bases(fit, prob=prob) if n != "bias")


def rank_bases(fit) -> list[str]:
    """The bases of a fit, most relevant first: by ``|E[w_m]| / sd(w_m)`` (largest over classes).

    A pruned basis is not listed; ties keep the fit's order.
    """
    post = fit.posterior_
    names = [str(n) for n in post.basis_names]
    if not names:
        return []
    mean = np.asarray(post.weight_mean(), dtype=float).reshape(len(names), -1)
    sd = np.sqrt(_weight_var(fit))
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(sd > 0, np.abs(mean) / sd, np.where(mean != 0, np.inf, 0.0))
    order = np.argsort(-z.max(axis=1), kind="stable")
    return [names[i] for i in order]


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


EFFECTIVE_PARAMETER_DRAWS = 200  # evenly spaced draws of a sampled fit


def _slab_precision(fit) -> np.ndarray | float:
    """The slab's precision of each basis, in data units; 0.0 without one."""
    slab = fit.prior_.slab
    if slab is None:
        return 0.0
    r = np.asarray(fit.basis_scale_, dtype=float)[np.asarray(fit.active_, dtype=np.intp)]
    return (r / float(fit.y_scale_)) ** 2 / float(slab) ** 2


def _gamma_sum(G: np.ndarray, alpha: np.ndarray) -> float:
    """``sum_m gamma_m = trace((G + A)^-1 G)`` for the curvature ``G = Phi^T B Phi``."""
    if G.shape[0] == 0:
        return 0.0
    S = G + np.diag(alpha)
    gam = 1.0 - alpha * np.diag(np.linalg.solve(S, np.eye(S.shape[0])))
    return float(np.sum(np.clip(gam, 0.0, 1.0)))


def effective_parameters(fit) -> float:
    """The number of well-determined parameters (Tipping 2001, MacKay 1992), in ``[0, min(N, M)]``.

    ``sum_m gamma_m = sum_m (1 - alpha_m Sigma_mm) = trace(B Phi Sigma Phi^T)``
    (with a slab, ``alpha_m + 1/s^2`` for ``alpha_m``), ``Sigma = (Phi^T B Phi +
    A)^-1``, ``B`` the likelihood's curvature (``beta I`` for regression; softmax
    sums over the classes).  A type-II fit: at its hyperparameters; a sampled fit:
    the mean over at most 200 evenly spaced draws.
    """
    post = fit.posterior_
    if post.is_type_ii:
        alpha = np.exp(np.asarray(post.log_alpha, dtype=float)) + _slab_precision(fit)
        alpha = alpha[:, None]
        return float(np.sum(np.clip(1.0 - alpha * _weight_var(fit), 0.0, 1.0)))
    from scipy.special import expit, softmax

    const = fit.idata_["constant_data"]
    c, d = post.draws.shape[:2]
    fixed = np.asarray(const["Phi"].values, dtype=float) if "Phi" in const else None
    if fixed is None:  # gamma="integrate": each draw's design at its own width
        D = sq_distances(const["X"].values, const["centres"].values)
        lls = np.asarray(fit.idata_["posterior"]["log_length_scale"].values).reshape(-1)

    def design(s: int) -> np.ndarray:
        if fixed is not None:
            return fixed
        return rbf_columns(D, lls[s], bias=fit.bias_active_, unit_rms=False)

    def alpha_at(s: int, Phi: np.ndarray) -> np.ndarray:
        # gamma="integrate": the slab acts on the columns at RMS 1 at each width
        if fixed is None:
            return np.exp(la[s]) + slab * np.mean(Phi**2, axis=0)
        return np.exp(la[s]) + slab

    w = post.draws.reshape(c * d, *post.draws.shape[2:])
    la = np.asarray(post.log_alpha, dtype=float).reshape(c * d, -1)
    slab = _slab_precision(fit)
    pick = np.unique(np.linspace(0, c * d - 1, min(EFFECTIVE_PARAMETER_DRAWS, c * d)).astype(int))
    if post.kind == "negative_binomial":
        counts = np.asarray(fit.idata_["observed_data"]["counts_obs"].values, dtype=float)
    if post.kind == "regression":
        lb = np.asarray(post.log_beta, dtype=float).reshape(-1)
    vals = []
    for s in pick:
        Phi = design(s)
        if post.kind == "regression":  # B = beta I
            vals.append(_gamma_sum(np.exp(lb[s]) * (Phi.T @ Phi), alpha_at(s, Phi)))
            continue
        f = Phi @ w[s]
        if post.kind == "poisson":  # B = diag(lambda)
            b = np.exp(f)[:, None]
        elif post.kind == "negative_binomial":  # B: NB2's curvature (t + r) p (1 - p)
            r = float(np.exp(np.asarray(post.log_dispersion, dtype=float).reshape(-1)[s]))
            p = expit(f - np.log(r))  # mu / (r + mu)
            b = ((counts + r) * p * (1.0 - p))[:, None]
        else:
            p = softmax(f, axis=-1) if post.kind == "softmax" else expit(f)[:, None]
            b = p * (1.0 - p)
        alpha = alpha_at(s, Phi)
        vals.append(sum(_gamma_sum((Phi * b[:, [k]]).T @ Phi, alpha) for k in range(b.shape[1])))
    return float(np.mean(vals))


def log_evidence(fit) -> float:
    """``log p(targets | alpha, beta)`` of a type-II fit at its hyperparameters; NaN for nuts.

    In the units of the data: for regression the exact Gaussian marginal likelihood,
    for classification and counts its Laplace approximation at the posterior mode.
    With a slab ``s`` the weights' prior precisions are ``alpha_m + 1/s^2`` on the
    scaled problem, ``alpha_m + (basis_scale_m / y_scale)^2 / s^2`` in data units.  No
    hyperprior term (:func:`log_hyperprior`).
    """
    from rvm_pymc._core.evidence import log_marginal_likelihood
    from rvm_pymc._core.likelihoods import log_likelihood
    from rvm_pymc.results import OBS_NAMES

    post = fit.posterior_
    if not post.is_type_ii:
        return float("nan")
    tree = fit.idata_
    Phi = np.asarray(tree["constant_data"]["Phi"].values, dtype=float)
    alpha = np.exp(np.asarray(post.log_alpha, dtype=float)) + _slab_precision(fit)
    if post.kind == "regression":
        t = np.asarray(tree["observed_data"]["t_obs"].values, dtype=float) - post.y_offset
        beta = float(np.exp(post.log_beta))
        if alpha.size == 0:  # every basis pruned: t ~ N(0, I / beta)
            return -0.5 * (t.size * np.log(2 * np.pi / beta) + beta * float(t @ t))
        return log_marginal_likelihood(Phi, t, alpha, beta)
    w = np.asarray(post.mean, dtype=float).reshape(Phi.shape[1], -1)  # (M, K or 1)
    f = (Phi @ w) if post.kind == "softmax" else (Phi @ w)[:, 0]
    y = np.asarray(tree["observed_data"][OBS_NAMES[post.kind]].values)
    y = y.astype(int) if post.kind in ("binary", "softmax") else y
    loglik = float(np.sum(log_likelihood(post.kind, f[None, None], y, post.likelihood_parameter)))
    log_joint = loglik - 0.5 * float(np.sum(alpha[:, None] * w**2))
    _, logdet = np.linalg.slogdet(np.asarray(post.cov, dtype=float)) if w.size else (1.0, 0.0)
    return laplace_log_evidence(log_joint, alpha, w.shape[1], -logdet)


def log_hyperprior(fit) -> float:
    """The Gamma hyperprior terms of a type-II fit's prior at its hyperparameters; NaN for nuts.

    ``sum_m [a log alpha_m - b alpha_m] + c log beta - d beta`` over the
    active bases, without normalising constants; ``log_evidence +
    log_hyperprior`` is the objective a type-II MAP maximises.
    """
    from rvm_pymc._core.evidence import log_alpha_prior, log_hyperprior

    post = fit.posterior_
    if not post.is_type_ii:
        return float("nan")
    alpha = np.exp(np.asarray(post.log_alpha, dtype=float))
    if post.log_beta is None:
        val = log_alpha_prior(alpha, fit.prior_)
    else:
        val = log_hyperprior(alpha, float(np.exp(post.log_beta)), fit.prior_)
    return float(val) + 0.0  # no -0.0 under the evidence prior


def diagnostics(fit) -> dict[str, float]:
    """Divergences, max R-hat, min bulk ESS (NaN for type-II fits), and ``converged_``."""
    out = dict.fromkeys(("divergences", "max_rhat", "min_ess_bulk"), np.nan)
    out["converged"] = bool(fit.converged_)
    if fit.posterior_.is_type_ii:
        return out
    tree = fit.idata_
    names = [v for v in ("w", "W", "log_alpha", "log_beta") if v in tree["posterior"]]
    stats = tree["sample_stats"] if "sample_stats" in tree.children else None
    if stats is not None and "diverging" in stats:
        out["divergences"] = int(np.asarray(stats["diverging"].values).sum())
    diag = sampling_diagnostics(tree["posterior"].to_dataset()[names])
    out["max_rhat"], out["min_ess_bulk"] = diag["max_rhat"], diag["min_ess_bulk"]
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


def same_basis(first, other, X=None) -> bool:
    """Whether two fits are fits of the same basis, so that ``"x3"`` means the same function.

    Same features, bias, classes and ``gamma_``; for kernel fits the same
    kernel values at the relevance vectors of both; any other basis must
    agree at ``X`` (when given).
    """
    f = other
    if f.n_features_in_ != first.n_features_in_ or bool(f.bias) != bool(first.bias):
        return False
    if hasattr(first, "classes_") and not np.array_equal(f.classes_, first.classes_):
        return False
    if (f.kernel_ is None) != (first.kernel_ is None):
        return False
    g1, g2 = getattr(first, "gamma_", None), getattr(f, "gamma_", None)
    if (g1 is None) != (g2 is None) or (g1 is not None and not np.isclose(g1, g2, rtol=1e-12)):
        return False
    if f.kernel_ is None:
        if list(f.basis_.basis_names_) != list(first.basis_.basis_names_):
            return False
        return X is None or np.allclose(
            f.basis_.transform(X), first.basis_.transform(X), rtol=1e-10, atol=1e-12
        )
    _, ia, ib = np.intersect1d(first.relevance_indices_, f.relevance_indices_, return_indices=True)
    if not np.array_equal(first.relevance_vectors_[ia], f.relevance_vectors_[ib]):
        return False
    P = np.vstack([first.relevance_vectors_, f.relevance_vectors_])
    return P.shape[0] == 0 or np.allclose(
        f.kernel_(P, P), first.kernel_(P, P), rtol=1e-10, atol=1e-12
    )


def basis_label(fit) -> str:
    """A short name of a fit's basis, e.g. ``"rbf(gamma=0.5)"``."""
    k = fit.kernel
    name = k if isinstance(k, str) else type(k).__name__
    basis = getattr(fit, "basis_", None)
    if basis is not None and getattr(fit, "kernel_", None) is None:
        name = f"{name}[{len(basis.basis_names_)} columns]"
    g = getattr(fit, "gamma_", None)
    if getattr(fit, "gamma_draws_", None) is not None:  # gamma="integrate"
        return f"{name}(gamma integrated, median {g:.4g})"
    return f"{name}(gamma={g:.4g})" if g is not None else str(name)


def check_fits(fits: Mapping) -> None:
    """Check that ``fits`` maps names to fitted estimators of one class (RVR, RVC or RVP)."""
    from sklearn.utils.validation import check_is_fitted

    if not isinstance(fits, Mapping) or not fits:
        raise ValueError("fits must be a non-empty mapping of name -> fitted RVR/RVC/RVP")
    from rvm_pymc.estimators import RVC, RVP, RVR

    kinds = set()
    for name, f in fits.items():
        if not isinstance(f, RVR | RVC | RVP):
            raise TypeError(f"fits[{name!r}] is not an RVR/RVC/RVP; got {type(f).__name__}")
        check_is_fitted(f, "coef_")
        kinds.add(type(f).__name__)
    if len(kinds) > 1:
        raise ValueError(
            "fits must be all regressors (RVR), all classifiers (RVC) or all count models (RVP)"
        )
