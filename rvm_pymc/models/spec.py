"""What a fitter needs to know about an RVM model, read from its named variables and data."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rvm_pymc.priors import DISPERSION_PRIOR_SCALE, HyperPrior, resolve_prior

__all__ = [
    "PRIOR_DATA",
    "RBF_DISTANCES",
    "RBF_UNIT_RMS",
    "SLAB_DATA",
    "WIDTH_PRIOR_DATA",
    "ModelSpec",
    "data_unit_constants",
    "model_constants",
    "model_spec",
]

_NAMES = (
    "regression_joint: free log_alpha (basis), log_beta, w or w_raw (basis), observed t_obs, "
    "data Phi and t; regression_marginal: free log_alpha, log_beta, observed t_obs, data Phi, "
    "t and PhiTPhi (or X and centres with a free log_length_scale); binary: free log_alpha, "
    "w or w_raw, observed y_obs, data Phi and y; softmax: as binary with W or W_raw "
    "(basis, class); poisson: as binary with observed counts_obs; negative_binomial: as poisson "
    "with a free log_dispersion"
)


@dataclass(frozen=True)
class ModelSpec:
    """What kind of RVM model a :class:`pymc.Model` is; see :func:`model_spec`.

    Attributes
    ----------
    kind : str
        ``"regression_joint"``, ``"regression_marginal"``, ``"binary"``,
        ``"softmax"``, ``"poisson"`` or ``"negative_binomial"``.
    prior : HyperPrior or None
        The Gamma hyperprior of the precisions, or None for a prior of one's own.
    parametrization : str or None
        ``"centred"`` or ``"non_centred"`` weights (joint models), else None.
    n_classes : int or None
        Number of classes (classification), else None.
    rbf_width : bool
        True when the RBF length scale ``log_length_scale`` is a free variable.
    rbf_bias : bool
        Whether that RBF design matrix has a bias column first.
    rbf_unit_rms : bool
        Whether its kernel columns are scaled to root mean square 1 at every width
        (named data ``rbf_unit_rms``).
    """

    kind: str
    prior: HyperPrior | None
    parametrization: str | None = None
    n_classes: int | None = None
    rbf_width: bool = False
    rbf_bias: bool = False
    rbf_unit_rms: bool = False


RBF_DISTANCES = "sqdist"
"""The named data of an RBF-width model's squared distances of the inputs to the centres."""

WIDTH_PRIOR_DATA = ("length_scale_mu", "length_scale_sd")
"""The named data of the Normal prior of an RBF-width model's ``log_length_scale``."""

RBF_UNIT_RMS = "rbf_unit_rms"
"""Named data present when an RBF-width model scales its kernel columns to RMS 1."""


PRIOR_DATA = {"log_alpha": ("alpha_shape", "alpha_rate"), "log_beta": ("beta_shape", "beta_rate")}
"""The named data that hold the Gamma(shape, rate) prior of each log precision."""


DISPERSION_SCALE_DATA = "dispersion_prior_scale"
"""The named data of the scale of the prior on a negative binomial's dispersion."""

SLAB_DATA = "slab_scale"
"""The named data of a model's slab scale (absent: no slab)."""


def _gamma_prior(model, name: str) -> tuple[float, float] | None:
    """``(shape, rate)`` of the Gamma prior of ``exp(name)`` (``(0, 0)`` for ``pm.Flat``), or
    None for a prior of one's own."""
    import pymc as pm

    shape_name, rate_name = PRIOR_DATA[name]
    if shape_name in model.named_vars and rate_name in model.named_vars:
        shape = float(np.asarray(model[shape_name].get_value()))
        rate = float(np.asarray(model[rate_name].get_value()))
        return shape, rate
    rv = model[name]
    if rv.owner is not None and isinstance(rv.owner.op, type(pm.Flat.dist().owner.op)):
        return 0.0, 0.0
    return None


def model_spec(model) -> ModelSpec:
    """Read what kind of RVM model ``model`` is from its variables and data.

    The kind follows from the observed variable (``t_obs``, ``y_obs``, ``counts_obs``)
    and the weights (none: the marginal regression model); the Gamma hyperprior from the
    named data of :data:`~rvm_pymc.models.spec.PRIOR_DATA` (a ``pm.Flat`` log precision
    is ``a = b = 0``), else ``ModelSpec.prior`` is None.

    Parameters
    ----------
    model : pymc.Model

    Returns
    -------
    ModelSpec

    Raises
    ------
    ValueError
        If the model lacks the variables or data containers of an RVM model
        (the message lists them).
    """
    named = model.named_vars
    rbf_width = "log_length_scale" in {rv.name for rv in model.free_RVs}
    design = () if rbf_width else ("Phi",)
    observed = {rv.name for rv in model.observed_RVs}
    free = {rv.name for rv in model.free_RVs}

    def need(*names: str) -> None:
        missing = [n for n in names if n not in named]
        if missing:
            raise ValueError(
                f"model was not built by rvm_pymc.models and lacks {missing}; an RVM model "
                f"needs these names: {_NAMES}"
            )

    if "t_obs" in observed:
        need("log_alpha", "log_beta", "t")
        weights = "w" if ("w" in free or "w_raw" in free) else None
        kind = "regression_joint" if weights else "regression_marginal"
    elif "counts_obs" in observed:
        need("log_alpha", *design, "y")
        weights = "w"
        kind = "negative_binomial" if "log_dispersion" in free else "poisson"
        if "w" not in free and "w_raw" not in free:
            raise ValueError("a model of counts needs a free w or w_raw")
    elif "y_obs" in observed:
        need("log_alpha", *design, "y")
        weights = "W" if ("W" in free or "W_raw" in free) else "w"
        kind = "softmax" if weights == "W" else "binary"
        if weights not in free and f"{weights}_raw" not in free:
            raise ValueError(f"a classification model needs a free {weights} or {weights}_raw")
    else:
        need("t_obs")  # raises with the list of names
        raise AssertionError("unreachable")  # pragma: no cover
    if "log_alpha" not in free:
        raise ValueError("log_alpha must be a free variable of the model")
    rbf_bias = False
    if rbf_width:
        need("X", "centres")
        n_centres = int(np.shape(model["centres"].get_value())[0])
        rbf_bias = len(model.coords.get("basis", ())) == n_centres + 1
    elif kind == "regression_marginal":
        need("Phi", "PhiTPhi")
    else:
        need("Phi")
    parametrization = None
    if weights is not None:
        parametrization = "non_centred" if f"{weights}_raw" in free else "centred"
    n_classes = {"binary": 2, "softmax": len(model.coords.get("class", ())) or None}.get(kind)
    ab = _gamma_prior(model, "log_alpha")
    cd = _gamma_prior(model, "log_beta") if kind.startswith("regression") else (0.0, 0.0)
    prior = None
    if ab is not None and cd is not None:
        slab = float(np.asarray(model[SLAB_DATA].get_value())) if SLAB_DATA in named else None
        prior = HyperPrior(a=ab[0], b=ab[1], c=cd[0], d=cd[1], slab=slab)
    rbf_unit_rms = bool(rbf_width and RBF_UNIT_RMS in named)
    return ModelSpec(kind, prior, parametrization, n_classes, rbf_width, rbf_bias, rbf_unit_rms)


def model_constants(model, *, observed: bool = True) -> dict:
    """Every named data value of ``model``, as ``{name: (dims, value)}``.

    What a result tree's ``constant_data`` must hold for PyMC to see the model's data as
    unchanged; a container without dims gets ``<name>_dim_<i>``.

    Parameters
    ----------
    model : pymc.Model
    observed : bool
        Include the observed values (the targets).

    Returns
    -------
    dict
    """
    skip = set() if observed else {model.rvs_to_values.get(rv) for rv in model.observed_RVs}
    out = {}
    for var in model.data_vars:
        if not hasattr(var, "get_value") or var in skip:
            continue
        value = np.asarray(var.get_value())
        dims = model.named_vars_to_dims.get(var.name) or [
            f"{var.name}_dim_{i}" for i in range(value.ndim)
        ]
        out[var.name] = (tuple(dims), value)
    return out


def data_unit_constants(kind: str, basis_scale, *, y_scale: float = 1.0, prior=None) -> dict:
    """The scaling and prior data of :func:`~rvm_pymc.models.data_unit_model`, by name.

    ``basis_scale``, the prior's named data (regression also ``y_scale``; negative
    binomial ``dispersion_prior_scale``; a slab ``slab_scale``): what an estimator's tree
    holds in ``constant_data``.  Needs no PyMC.

    Parameters
    ----------
    kind : {"regression", "binary", "softmax", "poisson", "negative_binomial"}
    basis_scale : array_like of shape (M,)
    y_scale : float, default 1.0
    prior : HyperPrior, str or mapping, optional

    Returns
    -------
    dict
        ``{name: (dims, value)}``.
    """
    hp = resolve_prior(prior, default="weakly_informative")
    out = {"basis_scale": (("basis",), np.asarray(basis_scale, dtype=float))}
    shape, rate = PRIOR_DATA["log_alpha"]
    out[shape], out[rate] = ((), np.asarray(float(hp.a))), ((), np.asarray(float(hp.b)))
    if kind == "regression":
        out["y_scale"] = ((), np.asarray(float(y_scale)))
        shape, rate = PRIOR_DATA["log_beta"]
        out[shape], out[rate] = ((), np.asarray(float(hp.c))), ((), np.asarray(float(hp.d)))
    if hp.slab is not None:
        out[SLAB_DATA] = ((), np.asarray(float(hp.slab)))
    if kind == "negative_binomial":
        out[DISPERSION_SCALE_DATA] = ((), np.asarray(float(DISPERSION_PRIOR_SCALE)))
    return out
