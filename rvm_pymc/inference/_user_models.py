"""Users' own models: what the fits accept (refused before any work), and their own
likelihood, from which the result tree then takes ``log_likelihood`` and
``posterior_predictive`` (``docs/pymc.md``)."""

from __future__ import annotations

import numpy as np
import pymc as pm
import xarray as xr

from rvm_pymc._core.evidence import log_marginal_likelihood
from rvm_pymc.models import builder_made
from rvm_pymc.models.data import design_matrix, model_data
from rvm_pymc.models.spec import ModelSpec, model_constants

__all__ = [
    "MARGINAL_RTOL",
    "check_user_model",
    "extra_free",
    "keep_extra_free",
    "model_pointwise",
    "observed_name",
    "uses_model_likelihood",
    "with_model_likelihood",
]

MARGINAL_RTOL = 1e-8
"""Tolerance of the check that a marginal model's ``t_obs`` is the RVM's marginal."""


def observed_name(spec: ModelSpec) -> str:
    """``t_obs`` (regression), ``counts_obs`` (counts) or ``y_obs`` (classification)."""
    if spec.kind in ("poisson", "negative_binomial"):
        return "counts_obs"
    return "t_obs" if spec.kind.startswith("regression") else "y_obs"


MAP_FREE = frozenset({"log_alpha", "log_beta", "log_length_scale", "w", "W", "w_raw", "W_raw"})
"""The free variables type-II MAP knows (optimised or integrated out)."""

PACKAGE_FREE = MAP_FREE | {"log_dispersion"}
"""The free variables of the package's own models."""


def extra_free(model) -> tuple[str, ...]:
    """The free variables of ``model`` outside :data:`PACKAGE_FREE` (a Student-t's ``nu``)."""
    return tuple(v.name for v in model.free_RVs if v.name not in PACKAGE_FREE)


def keep_extra_free(tree: xr.DataTree, model, pymc_posterior: xr.Dataset) -> xr.DataTree:
    """``tree`` with the draws of :func:`extra_free` from ``pymc_posterior`` (``pm.sample``'s)
    added to its ``posterior`` group."""
    names = [n for n in extra_free(model) if n in pymc_posterior]
    if not names:
        return tree
    post = tree["posterior"].to_dataset()
    kept = pymc_posterior[names].assign_coords(chain=post["chain"], draw=post["draw"])
    tree["posterior"] = xr.DataTree(post.assign(kept.data_vars))
    return tree


def check_user_model(model, spec: ModelSpec, fit: str, compile_kwargs=None) -> None:
    """ValueError, before any work, for what ``fit`` (``"nuts"``, ``"collapsed"``, ``"map"``)
    cannot do with ``model``."""
    obs = observed_name(spec)
    free = {v.name for v in model.free_RVs}
    slab = None if spec.prior is None else spec.prior.slab
    if slab is not None and fit != "nuts":
        raise ValueError(
            f"the model has a slab (data slab_scale = {slab}), which only NUTS over the "
            f"weights (sample_nuts) takes into account; the {fit.replace('_', '-')} fit "
            "integrates out weights of prior precision alpha alone. Build the model "
            "without the slab for it"
        )
    if spec.kind.startswith("regression"):
        ndim = model["log_beta"].type.ndim
        if ndim != 0:
            dims = model.named_vars_to_dims.get("log_beta")
            raise ValueError(
                f"log_beta has {ndim} dimension(s){f' {dims}' if dims else ''}: a noise "
                "precision per observation (heteroscedastic noise) is not supported: the "
                "result holds one noise precision per draw. Write the noise as one scalar "
                "log_beta, or sample the model with pm.sample directly"
            )
        if fit == "map" and "log_beta" not in free:
            raise ValueError(
                "type-II MAP optimises the free variables log_alpha and log_beta, but the "
                f"model's log_beta is a Deterministic of {sorted(free - {'log_alpha'})}: make "
                "log_beta a free variable (e.g. with a Gamma prior on exp(log_beta)), or "
                "sample the model (sample_collapsed or sample_nuts)"
            )
    extra = free - MAP_FREE
    if fit == "map" and extra and spec.kind != "regression_marginal":
        raise ValueError(
            f"type-II MAP optimises log_alpha (and log_beta) with the weights integrated out, "
            f"but the model has other free variables {sorted(extra)}: fix them as data, or "
            "sample the model (sample_nuts)"
        )
    if spec.kind != "regression_marginal" and model[obs].type.ndim != 1:
        raise ValueError(
            f"the observed {obs} must hold one value per observation (1-D); got "
            f"{model[obs].type.ndim} dimensions"
        )
    if spec.kind == "regression_marginal" and not builder_made(model):
        _check_marginal(model, spec, compile_kwargs)


def _check_marginal(model, spec: ModelSpec, compile_kwargs) -> None:
    """ValueError unless ``t_obs``'s log density is the RVM's marginal at a test point."""
    rng = np.random.default_rng(0)
    point = {
        k: np.asarray(v) + 0.1 * rng.standard_normal(np.shape(v))
        for k, v in model.initial_point(random_seed=0).items()
    }
    names = ["log_alpha", "log_beta"] + (["log_length_scale"] if spec.rbf_width else [])
    outs = [model.logp(vars=[model["t_obs"]])]
    outs += model.replace_rvs_by_values([model[n] for n in names])
    ck = {"mode": "FAST_COMPILE", **dict(compile_kwargs or {})}
    fn = model.compile_fn(outs, inputs=model.value_vars, on_unused_input="ignore", **ck)
    got, la, lb, *lls = fn(point)
    Phi = design_matrix(model, spec, float(lls[0]) if lls else None)
    want = log_marginal_likelihood(Phi, model_data(model, "t"), np.exp(la), float(np.exp(lb)))
    if not np.isclose(float(got), want, rtol=MARGINAL_RTOL, atol=MARGINAL_RTOL):
        raise ValueError(
            "the model's t_obs is not the Gaussian marginal likelihood of the RVM (log density "
            f"{float(got):.6g} at a test point where the marginal is {want:.6g}), so its "
            "weights cannot be drawn from the Gaussian posterior that type-II MAP and the "
            "collapsed sampler use: write the likelihood over explicit weights w and sample "
            "it with sample_nuts"
        )


def uses_model_likelihood(model, spec: ModelSpec) -> bool:
    """Whether the result takes its likelihood from the model (a model of one's own)."""
    return spec.kind != "regression_marginal" and not builder_made(model)


def model_pointwise(
    model,
    spec: ModelSpec,
    posterior: xr.Dataset,
    weights: np.ndarray,
    *,
    random_seed: int,
    compile_kwargs=None,
) -> tuple[np.ndarray, np.ndarray]:
    """The model's own pointwise log likelihood and replicates (chain, draw, N) at the draws
    of ``posterior`` with the result's ``weights``."""
    obs = observed_name(spec)
    wname = "W" if spec.kind == "softmax" else "w"
    dims = model.named_vars_to_dims.get(wname) or [
        f"{wname}_dim_{i}" for i in range(weights.ndim - 2)
    ]
    post = posterior.drop_vars(wname, errors="ignore").assign(
        {wname: (("chain", "draw", *dims), weights)}
    )
    own = [d for d in post.dims if len(model.coords.get(d) or ()) == post.sizes[d]]
    post = post.assign_coords({d: list(model.coords[d]) for d in own})
    drawn = [v for v in post.data_vars if v in model.named_vars]
    constant = xr.Dataset(model_constants(model))  # PyMC's constant_data group
    source = xr.DataTree.from_dict({"posterior": post, "constant_data": constant})
    kw = {
        "model": model,
        "var_names": [obs],
        "progressbar": False,
        "compile_kwargs": dict(compile_kwargs or {}) or None,
    }
    ll = pm.compute_log_likelihood(source, extend_inferencedata=False, **kw)
    pp = pm.sample_posterior_predictive(source, freeze_vars=drawn, random_seed=random_seed, **kw)
    shape = (*weights.shape[:2], -1)
    out = np.asarray(ll[obs].values, dtype=float).reshape(shape)
    rep = np.asarray(pp["posterior_predictive"][obs].values).reshape(shape)
    return out, rep


def with_model_likelihood(tree: xr.DataTree, model, spec: ModelSpec, posterior, weights, **kw):
    """``tree`` with :func:`model_pointwise` as ``log_likelihood`` and ``posterior_predictive``."""
    ll, rep = model_pointwise(model, spec, posterior, weights, **kw)
    obs = observed_name(spec)
    old = tree["log_likelihood"][obs].values
    stats = tree["sample_stats"].to_dataset()
    if "lp" in stats and "diverging" not in stats:  # a type-II tree's lp
        lp = stats["lp"].values - old.sum(-1) + ll.sum(-1)
        tree["sample_stats"] = xr.DataTree(stats.assign(lp=(stats["lp"].dims, lp)))
    for group, values in (("log_likelihood", ll), ("posterior_predictive", rep)):
        ds = tree[group].to_dataset()
        tree[group] = xr.DataTree(ds.assign({obs: (ds[obs].dims, values)}))
    tree.attrs["likelihood"] = "model"
    return tree
