"""Helpers that put every fit into the DataTree layout of ``pm.sample``.

A fit of any kind returns an :class:`xarray.DataTree` with the groups
``posterior``, ``sample_stats``, ``log_likelihood``, ``observed_data`` (and
``constant_data``); point estimates are represented by draws from their
Gaussian (Laplace) posterior, so that ArviZ summaries and plots work alike on
all of them (DESIGN.md section 3).  This module also holds the NumPy
log-likelihoods used to fill ``log_likelihood`` and the MCMC diagnostics that
raise :class:`~rvm_pymc.exceptions.SamplingWarning`.

References
----------
Vehtari, A., Gelman, A., Simpson, D., Carpenter, B. and Bürkner, P.-C. (2021).
Rank-normalization, folding, and localization: an improved R-hat for assessing
convergence of MCMC. *Bayesian Analysis* 16, 667-718.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence

import numpy as np
import xarray as xr
from arviz_base import from_dict
from scipy.special import gammaln, log_expit, log_softmax

from rvm_pymc.exceptions import SamplingWarning
from rvm_pymc.models import ModelSpec, rbf_design
from rvm_pymc.priors import HyperPrior

LOG_2PI = float(np.log(2.0 * np.pi))


# ------------------------------------------------------------- model data


def model_data(model, name: str) -> np.ndarray:
    """The value of the model's ``pm.Data`` container ``name`` as a float array."""
    return np.asarray(model[name].get_value(), dtype=float)


def model_coords(model, dim: str) -> list:
    """The coordinate values of ``dim`` in ``model``."""
    return list(model.coords[dim])


def design_matrix(model, spec: ModelSpec, log_length_scale=None) -> np.ndarray:
    """The design matrix; for the RBF-width model at the given log length scale."""
    if not spec.rbf_width:
        return model_data(model, "Phi")
    return rbf_design(
        model_data(model, "X"), model_data(model, "centres"), log_length_scale, bias=spec.rbf_bias
    )


def check_gram(model, spec: ModelSpec) -> None:
    """Raise ValueError if a marginal model's ``PhiTPhi`` is not ``Phi^T Phi``."""
    if spec.kind != "regression_marginal" or spec.rbf_width:
        return
    Phi, PtP = model_data(model, "Phi"), model_data(model, "PhiTPhi")
    want = Phi.T @ Phi
    if PtP.shape != want.shape or not np.allclose(PtP, want, rtol=1e-10, atol=0.0):
        raise ValueError(
            "the data containers Phi and PhiTPhi disagree: after pm.set_data({'Phi': ...}) "
            "also set 'PhiTPhi' to Phi.T @ Phi"
        )


def constant_data(model, spec: ModelSpec) -> dict:
    """The data arrays that define the design matrix, for the ``constant_data`` group."""
    if spec.rbf_width:
        return {"X": model_data(model, "X"), "centres": model_data(model, "centres")}
    return {"Phi": model_data(model, "Phi")}


DIMS = {
    "w": ["basis"],
    "W": ["basis", "class"],
    "log_alpha": ["basis"],
    "alpha": ["basis"],
    "t_obs": ["obs"],
    "y_obs": ["obs"],
    "Phi": ["obs", "basis"],
    "X": ["obs", "feature"],
    "centres": ["centre", "feature"],
}


# ------------------------------------------------------------- log densities


def log_gamma_density(log_x: np.ndarray, shape: float, rate: float) -> np.ndarray:
    """Log density of ``log x`` when ``x ~ Gamma(shape, rate)`` (flat if improper)."""
    val = shape * log_x - rate * np.exp(log_x)
    if shape > 0 and rate > 0:
        val = val + shape * np.log(rate) - gammaln(shape)
    return val


def normal_loglik(t: np.ndarray, mean: np.ndarray, beta: np.ndarray) -> np.ndarray:
    """Pointwise ``log N(t | mean, 1/beta)``; ``beta`` broadcasts against the last axis."""
    beta = np.asarray(beta)[..., None]
    return 0.5 * (np.log(beta) - LOG_2PI) - 0.5 * beta * (t - mean) ** 2


def bernoulli_loglik(y: np.ndarray, logit: np.ndarray) -> np.ndarray:
    """Pointwise ``log Bernoulli(y | sigmoid(logit))``."""
    return np.where(y == 1, log_expit(logit), log_expit(-logit))


def categorical_loglik(y: np.ndarray, logits: np.ndarray) -> np.ndarray:
    """Pointwise ``log Categorical(y | softmax(logits))``; classes on the last axis."""
    lp = log_softmax(logits, axis=-1)
    return np.take_along_axis(lp, np.broadcast_to(y[:, None], (*lp.shape[:-1], 1)), -1)[..., 0]


def log_weight_prior(w: np.ndarray, log_alpha: np.ndarray) -> np.ndarray:
    """``sum log N(w | 0, 1/alpha)`` over the trailing basis (and class) axes.

    ``w`` has shape (..., M) or (..., M, K) and ``log_alpha`` (..., M).
    """
    n_lead = log_alpha.ndim - 1
    if w.ndim == log_alpha.ndim + 1:
        log_alpha = log_alpha[..., None]
    val = 0.5 * (log_alpha - LOG_2PI) - 0.5 * np.exp(log_alpha) * w**2
    return val.reshape(*val.shape[:n_lead], -1).sum(-1)


def log_hyper_density(
    log_alpha: np.ndarray, log_beta: np.ndarray | None, prior: HyperPrior
) -> np.ndarray:
    """Log-coordinate hyperprior density (as in the PyMC models), summed over bases."""
    val = log_gamma_density(log_alpha, prior.a, prior.b).sum(-1)
    if log_beta is not None:
        val = val + log_gamma_density(log_beta, prior.c, prior.d)
    return val


# ---------------------------------------------------------------- DataTree


def gaussian_datatree(
    *,
    posterior: Mapping[str, np.ndarray],
    sample_stats: Mapping[str, np.ndarray],
    log_likelihood: Mapping[str, np.ndarray],
    observed_data: Mapping[str, np.ndarray],
    constant_data: Mapping[str, np.ndarray],
    dims: Mapping[str, Sequence[str]],
    coords: Mapping[str, Sequence],
    attrs: Mapping[str, object],
) -> xr.DataTree:
    """Assemble a DataTree from arrays whose leading axes are (chain, draw).

    Root attributes ``attrs`` describe the fit (``rvm_inference``, optimiser
    results, ...).
    """
    group_attrs = {"inference_library": "rvm_pymc"}
    data = {
        "posterior": dict(posterior),
        "sample_stats": dict(sample_stats),
        "log_likelihood": dict(log_likelihood),
        "observed_data": dict(observed_data),
        "constant_data": dict(constant_data),
    }
    tree = from_dict(
        data,
        dims={k: list(v) for k, v in dims.items()},
        coords={k: list(v) for k, v in coords.items()},
        attrs={g: group_attrs for g in data},
    )
    tree.attrs.update(attrs)
    return tree


def add_posterior_variable(idata: xr.DataTree, name: str, values: np.ndarray, dims) -> None:
    """Add a (chain, draw, *dims) array to the posterior group in place."""
    post = idata["posterior"].to_dataset()
    coords = {d: post.coords[d] for d in dims if d in post.coords}
    post[name] = xr.DataArray(values, dims=("chain", "draw", *dims), coords=coords)
    idata["posterior"] = xr.DataTree(post)


def set_group(idata: xr.DataTree, group: str, variables: Mapping[str, xr.DataArray]) -> None:
    """Create or replace a group from DataArrays (in place)."""
    ds = xr.Dataset(dict(variables))
    ds.attrs.update({"inference_library": "rvm_pymc"})
    idata[group] = xr.DataTree(ds)


# ------------------------------------------------------------- diagnostics


def check_sampling(
    idata: xr.DataTree,
    var_names: Sequence[str],
    *,
    rhat_threshold: float = 1.01,
) -> dict[str, float]:
    """Count divergences and compute the worst rank-normalised R-hat.

    Issues a :class:`SamplingWarning` for any divergence and for
    ``max R-hat > rhat_threshold``; returns the numbers so that callers can
    record them.
    """
    from arviz_stats import ess, rhat

    stats = idata["sample_stats"]
    n_div = int(stats["diverging"].sum()) if "diverging" in stats else 0
    n_draws = int(stats.sizes["chain"] * stats.sizes["draw"])
    post = idata["posterior"].to_dataset()[list(var_names)]
    n_chains = int(post.sizes["chain"])
    max_rhat = float("nan")
    if n_chains > 1:
        max_rhat = float(max(float(v.max()) for v in rhat(post).data_vars.values()))
    min_ess = float(min(float(v.min()) for v in ess(post, method="bulk").data_vars.values()))
    if n_div:
        warnings.warn(
            f"{n_div} of {n_draws} draws diverged; the posterior may be biased. Raise "
            "target_accept, use a more informative prior or the other parametrization",
            SamplingWarning,
            stacklevel=3,
        )
    if np.isfinite(max_rhat) and max_rhat > rhat_threshold:
        warnings.warn(
            f"max R-hat is {max_rhat:.3f} > {rhat_threshold} (variables {list(var_names)}); "
            "the chains have not mixed",
            SamplingWarning,
            stacklevel=3,
        )
    return {"n_divergent": n_div, "max_rhat": max_rhat, "min_ess_bulk": min_ess}
