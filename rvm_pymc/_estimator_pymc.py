"""The ``"map"`` and ``"nuts"`` fits of the estimators, on :mod:`rvm_pymc.inference`.

Imported only when an estimator is fitted with one of these methods, so that
``import rvm_pymc`` and ``method="reference"`` never import PyMC.

``"map"``
    :func:`rvm_pymc.inference.fit_map` on the full design matrix (marginal
    regression model; centred classification model), from the inference
    module's own data-scaled start.  Under the flat prior irrelevant
    precisions run towards infinity, where the objective is flat; ``fit_map``
    prunes them to ``alpha = e^50``, and a basis is dropped here when the
    prior variance of its
    contribution, ``||phi_m||^2 / alpha_m``, is below ``1e-6`` of the target
    variance (of one on the latent scale for classification).  On the sinc
    problem the kept bases have ratios above 1 and the pruned ones below
    ``1e-7``.  The weight posterior is then recomputed exactly on the active
    bases (Gaussian for regression, Laplace for classification).
``"nuts"``
    Full Bayes over all bases (nothing is pruned).  The basis columns are
    scaled to unit root-mean-square and, for regression, the targets
    standardised, which is the scale on which the ``"weakly_informative"``
    prior is stated (:mod:`rvm_pymc.priors`); every posterior quantity in
    ``idata_`` and every fitted attribute is transformed back to the units of
    the data.  Regression uses the collapsed sampler by default
    (``sampler_kwargs={"model": "joint"}`` for weight-space NUTS).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.special import expit, softmax

__all__ = ["draws_proba", "fit_pymc"]

_MAP_KEYS = ("initvals", "max_iter", "gtol", "laplace", "compile_kwargs")
_NUTS_KEYS = (
    "model",
    "parametrization",
    "nuts_sampler",
    "target_accept",
    "compile_kwargs",
    "cores",
    "progressbar",
    "rhat_threshold",
)
_REQUIRED = {
    "rvm_pymc.inference": ("fit_map", "sample_nuts", "sample_collapsed"),
    "rvm_pymc.models": (
        "regression_marginal",
        "regression_joint",
        "classification_binary",
        "classification_softmax",
    ),
}


def _pymc_api():
    """The inference and models modules, or NotImplementedError naming what is missing."""
    import importlib

    mods = []
    for name, funcs in _REQUIRED.items():
        try:
            mod = importlib.import_module(name)
        except ImportError as exc:
            raise NotImplementedError(
                f"method='map'/'nuts' needs {name} ({exc}); use method='reference'"
            ) from exc
        missing = [f for f in funcs if not hasattr(mod, f)]
        if missing:
            raise NotImplementedError(
                f"method='map'/'nuts' needs {name}.{', '.join(missing)}, which this "
                "installation does not provide; use method='reference'"
            )
        mods.append(mod)
    return mods


def _options(est, allowed: tuple[str, ...]) -> dict[str, Any]:
    kw = dict(est.sampler_kwargs or {})
    unknown = sorted(set(kw) - set(allowed))
    if unknown:
        raise ValueError(
            f"sampler_kwargs {unknown} do not apply to method={est.method!r}; allowed: "
            f"{', '.join(allowed)}"
        )
    return kw


def _relevant(Phi: np.ndarray, alpha: np.ndarray, scale: float) -> np.ndarray:
    """Columns whose prior contribution ``||phi_m||^2 / alpha_m`` exceeds ``1e-6 * scale``."""
    norms = np.einsum("ij,ij->j", Phi, Phi)
    keep = norms / alpha > 1e-6 * scale
    if not np.any(keep):
        keep[np.argmin(alpha)] = True
    return np.flatnonzero(keep)


def _model(est, models, Phi, target, prior, *, joint: bool, parametrization: str = "centred"):
    names = [str(n) for n in est.basis_.basis_names_]
    if est._kind == "regression":
        if joint:
            return models.regression_joint(
                Phi, target, prior=prior, parametrization=parametrization, basis_names=names
            )
        return models.regression_marginal(Phi, target, prior=prior, basis_names=names)
    if est.classes_.size == 2:
        return models.classification_binary(
            Phi, target, prior=prior, parametrization=parametrization, basis_names=names
        )
    return models.classification_softmax(
        Phi,
        target,
        n_classes=est.classes_.size,
        prior=prior,
        parametrization=parametrization,
        basis_names=names,
        class_names=[str(c) for c in est.classes_],
    )


def fit_pymc(est, Phi: np.ndarray, target: np.ndarray, X: np.ndarray, prior, seed: int):
    """Fit ``est`` (an RVR or RVC whose ``basis_`` is fitted) by type-II MAP or NUTS."""
    inference, models = _pymc_api()
    if est.method == "map":
        _fit_map(est, inference, models, Phi, target, X, prior, seed)
    else:
        _fit_nuts(est, inference, models, Phi, target, X, prior, seed)


def _fit_map(est, inference, models, Phi, target, X, prior, seed) -> None:
    kw = _options(est, _MAP_KEYS)
    if est.max_iter is not None:
        kw.setdefault("max_iter", est.max_iter)
    model = _model(est, models, Phi, target, prior, joint=False)
    tree = inference.fit_map(model, draws=est.draws, random_seed=seed, **kw)
    post = tree["posterior"]
    alpha = np.asarray(post["alpha"].values[0, 0], dtype=float)
    regression = est._kind == "regression"
    active = _relevant(Phi, alpha, float(np.var(target)) if regression else 1.0)
    est._set_active(active, X)
    Pa = Phi[:, active]
    if regression:
        from rvm_pymc.reference import regression_posterior

        beta = float(post["beta"].values[0, 0])
        g = regression_posterior(Pa, target, alpha[active], beta)
        est._set_posterior(g.mean, g.cov, alpha[active])
        est.beta_ = beta
        est.noise_var_ = 1.0 / beta
        est.y_offset_ = 0.0
    else:
        from rvm_pymc.reference.classification import laplace_posterior

        lp = laplace_posterior(Pa, target, alpha[active])
        mean = lp.mean[:, 0] if est.classes_.size == 2 else lp.mean
        est._set_posterior(mean, lp.cov, alpha[active])
    est.n_iter_ = max(int(tree.attrs.get("n_iter", 1)), 1)
    est.converged_ = bool(tree.attrs.get("converged", False))
    est.log_evidence_ = float(tree.attrs.get("log_evidence", np.nan))
    tree.attrs.update(_attrs(est))
    est.idata_ = tree


def _attrs(est) -> dict[str, Any]:
    from rvm_pymc._estimator_base import _fit_attrs

    return _fit_attrs(est, "rvm_pymc.inference")


def _fit_nuts(est, inference, models, Phi, target, X, prior, seed) -> None:
    kw = _options(est, _NUTS_KEYS)
    which = kw.pop("model", "collapsed")
    if which not in ("collapsed", "joint"):
        raise ValueError(f"sampler_kwargs['model'] must be 'collapsed' or 'joint'; got {which!r}")
    parametrization = kw.pop("parametrization", "centred")
    regression = est._kind == "regression"
    rms = np.sqrt(np.mean(Phi**2, axis=0))
    rms[rms == 0] = 1.0
    Phi_s = Phi / rms
    if regression:
        t_mean, t_sd = float(np.mean(target)), float(np.std(target))
        t_s = (target - t_mean) / t_sd
    else:
        t_mean, t_sd, t_s = 0.0, 1.0, target
    joint = not regression or which == "joint"
    model = _model(est, models, Phi_s, t_s, prior, joint=joint, parametrization=parametrization)
    chains = est.chains or 2
    sample = inference.sample_nuts if joint else inference.sample_collapsed
    tree = sample(model, draws=est.draws, tune=est.tune, chains=chains, random_seed=seed, **kw)
    _unscale(tree, rms, t_mean, t_sd, target if regression else None)
    post = tree["posterior"]
    wname = "W" if "W" in post and est._kind == "classification" else "w"
    W = np.asarray(post[wname].values, dtype=float)  # (chain, draw, M[, K])
    flat = W.reshape(-1, *W.shape[2:])
    m = Phi.shape[1]
    est._set_active(np.arange(m), X)
    mean = flat.mean(axis=0)
    if flat.ndim == 3:  # class-major covariance, as the Laplace fits
        cov = np.cov(flat.transpose(0, 2, 1).reshape(flat.shape[0], -1), rowvar=False)
    else:
        cov = np.atleast_2d(np.cov(flat, rowvar=False))
    alpha = np.median(np.asarray(post["alpha"].values).reshape(-1, m), axis=0)
    est._set_posterior(mean, cov, alpha)
    if regression:
        beta = np.asarray(post["beta"].values, dtype=float).ravel()
        est.beta_ = float(np.median(beta))
        est.noise_var_ = float(np.mean(1.0 / beta))
        est.y_offset_ = t_mean
    est.n_iter_ = est.tune + est.draws
    est.converged_ = bool(
        int(tree.attrs.get("n_divergent", 0)) == 0
        and float(tree.attrs.get("max_rhat", np.inf)) <= kw.get("rhat_threshold", 1.01)
    )
    est.log_evidence_ = float("nan")
    tree.attrs.update(_attrs(est))
    est.idata_ = tree


def _unscale(tree, rms: np.ndarray, t_mean: float, t_sd: float, t) -> None:
    """Put the posterior of the scaled fit back into the units of the data, in place.

    ``w = w_s t_sd / rms``, ``alpha = alpha_s rms^2 / t_sd^2``, ``beta = beta_s / t_sd^2``;
    the pointwise log likelihood of ``t`` gains ``-log t_sd``.
    """
    import xarray as xr

    post = tree["posterior"].to_dataset()
    r = xr.DataArray(rms, dims=("basis",))
    for name in ("w", "W"):
        if name in post:
            post[name] = post[name] * t_sd / r
    if "alpha" in post:
        post["alpha"] = post["alpha"] * r**2 / t_sd**2
    if "log_alpha" in post:
        post["log_alpha"] = post["log_alpha"] + np.log(r**2 / t_sd**2)
    if "beta" in post:
        post["beta"] = post["beta"] / t_sd**2
    if "log_beta" in post:
        post["log_beta"] = post["log_beta"] - 2.0 * np.log(t_sd)
    tree["posterior"] = post
    if t is not None:
        obs = tree["observed_data"].to_dataset()
        obs["t_obs"] = (obs["t_obs"].dims, np.asarray(t, dtype=float))
        tree["observed_data"] = obs
        ll = tree["log_likelihood"].to_dataset()
        ll["t_obs"] = ll["t_obs"] - np.log(t_sd)
        tree["log_likelihood"] = ll
    tree.attrs.update(
        rvm_basis_rms=np.asarray(rms).tolist(), rvm_target_mean=t_mean, rvm_target_sd=t_sd
    )


def draws_proba(est, Phi: np.ndarray) -> np.ndarray:
    """Class probabilities averaged over the posterior draws of the weights."""
    post = est.idata_["posterior"]
    if est.classes_.size == 2:
        w = np.asarray(post["w"].values).reshape(-1, Phi.shape[1])
        p1 = expit(Phi @ w.T).mean(axis=1)
        return np.column_stack([1.0 - p1, p1])
    W = np.asarray(post["W"].values)
    W = W.reshape(-1, *W.shape[2:])
    out = np.zeros((Phi.shape[0], W.shape[2]))
    for Wd in W:
        out += softmax(Phi @ Wd, axis=1)
    return out / W.shape[0]
