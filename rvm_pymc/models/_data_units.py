"""The PyMC model of an estimator's fit in the units of the data (docs/design.md section 3),
the scaling inside it as named data, so ``est.model_`` and ``est.idata_`` share one scale."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pymc as pm
import pytensor.tensor as pt

from rvm_pymc.models._builders import RVMModel
from rvm_pymc.models._checks import basis_coords
from rvm_pymc.models._likelihoods import (
    bernoulli_logit,
    categorical_logit,
    negative_binomial_log,
    poisson_log,
)
from rvm_pymc.models._priors import _log_dispersion, _log_precision, weight_log_precision
from rvm_pymc.models.spec import SLAB_DATA
from rvm_pymc.priors import DISPERSION_PRIOR_SCALE, HyperPrior, resolve_prior

__all__ = ["data_unit_model"]

KINDS = ("regression", "binary", "softmax", "poisson", "negative_binomial")


def data_unit_model(
    kind: str,
    Phi,
    target,
    *,
    basis_scale,
    y_offset: float = 0.0,
    y_scale: float = 1.0,
    prior: HyperPrior | str | Mapping | None = None,
    fixed: Mapping[str, np.ndarray | float] | None = None,
    basis_names: Sequence | None = None,
    class_names: Sequence | None = None,
) -> pm.Model:
    """The RVM of a fit on the scaled problem, written in the units of the data.

    The fit saw ``Phi / basis_scale`` and (regression) ``(t - y_offset) / y_scale``; this
    model holds its variables in data units
    (:meth:`rvm_pymc.results.WeightPosterior.to_data_units`) under the result schema's
    names, the Gamma prior of the scaled precisions shifted accordingly: data ``Phi``,
    ``t`` or ``y``, ``basis_scale`` (and ``y_offset``, ``y_scale``); ``log_alpha`` and
    ``log_beta`` free or (``fixed``) data; centred weights ``w`` or ``W``.

    Parameters
    ----------
    kind : {"regression", "binary", "softmax", "poisson", "negative_binomial"}
    Phi : array_like of shape (N, M)
        Design matrix in data units.
    target : array_like of shape (N,)
        Targets in data units, or class codes ``0..K-1``.
    basis_scale : array_like of shape (M,)
        The column scales of the fit.
    y_offset, y_scale : float
        The centring and scale of the regression targets.
    prior : HyperPrior, str or mapping, optional
        The prior of the fit (stated on the scaled problem); default ``"weakly_informative"``.
    fixed : mapping, optional
        ``{"log_alpha": ..., "log_beta": ..., "log_dispersion": ...}`` in data units,
        held as data.
    basis_names, class_names : sequence, optional
        Coordinates ``basis`` and (softmax) ``class``.

    Returns
    -------
    pymc.Model
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}; got {kind!r}")
    Phi = np.asarray(Phi, dtype=float)
    target = np.asarray(target)
    scale = np.asarray(basis_scale, dtype=float)
    if Phi.ndim != 2 or Phi.shape != (target.shape[0], scale.shape[0]):
        raise ValueError(
            f"Phi has shape {Phi.shape}; expected ({target.shape[0]}, {scale.shape[0]})"
        )
    hp = resolve_prior(prior, default="weakly_informative")
    coords = {"basis": basis_coords(basis_names, Phi.shape[1]), "obs": np.arange(len(target))}
    if kind == "softmax":
        n_classes = int(np.max(target)) + 1 if class_names is None else len(class_names)
        coords["class"] = list(range(n_classes) if class_names is None else class_names)
    fixed = dict(fixed or {})
    regression = kind == "regression"
    with RVMModel(coords=coords) as model:
        Phi_d = pm.Data("Phi", Phi, dims=("obs", "basis"))
        obs_data = pm.Data("t" if regression else "y", target)
        scale_d = pm.Data("basis_scale", scale, dims="basis")
        log_y_scale = 0.0
        if regression:
            offset_d = pm.Data("y_offset", float(y_offset))
            log_y_scale = pt.log(pm.Data("y_scale", float(y_scale)))
        shift = 2.0 * (pt.log(scale_d) - log_y_scale)
        if "log_alpha" in fixed:
            log_alpha = pm.Data("log_alpha", np.asarray(fixed["log_alpha"], float), dims="basis")
        else:
            log_alpha = _log_precision("log_alpha", hp.a, hp.b, dims="basis", shift=shift)
        if regression and "log_beta" in fixed:
            log_beta = pm.Data("log_beta", float(fixed["log_beta"]))
        elif regression:
            log_beta = _log_precision("log_beta", hp.c, hp.d, shift=-2.0 * log_y_scale)
        log_slab = None  # the slab's 1/s^2 of the scaled weights, in data units
        if hp.slab is not None:
            log_slab = shift - 2.0 * pt.log(pm.Data(SLAB_DATA, hp.slab))
        sd = pt.exp(-0.5 * weight_log_precision(log_alpha, log_slab))
        if kind == "softmax":
            W = pm.Normal("W", 0.0, sd[:, None], dims=("basis", "class"))
            categorical_logit("y_obs", Phi_d @ W, obs_data)
        else:
            w = pm.Normal("w", 0.0, sd, dims="basis")
            if regression:
                mu = offset_d + Phi_d @ w
                pm.Normal("t_obs", mu, pt.exp(-0.5 * log_beta), observed=obs_data, dims="obs")
            elif kind == "poisson":
                poisson_log("counts_obs", Phi_d @ w, obs_data)
            elif kind == "negative_binomial":
                if "log_dispersion" in fixed:
                    log_r = pm.Data("log_dispersion", float(fixed["log_dispersion"]))
                else:
                    log_r = _log_dispersion(DISPERSION_PRIOR_SCALE)
                negative_binomial_log("counts_obs", Phi_d @ w, log_r, obs_data)
            else:
                bernoulli_logit("y_obs", Phi_d @ w, obs_data)
    return model
