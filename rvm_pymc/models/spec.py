"""What a fitter needs to know about an RVM model, read from the model itself.

:func:`model_spec` inspects a :class:`pymc.Model` by its named variables and
data containers (the names the builders of :mod:`rvm_pymc.models` use), not
through a side registry: a copy of a model (``model.copy()``,
``pymc.model.fgraph.clone_model``) and a model a user wrote with the same
names are recognised alike.  The Gamma hyperprior is read off the log density
of the log precisions (see :func:`model_spec`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rvm_pymc.priors import HyperPrior

__all__ = ["ModelSpec", "model_spec"]

_NAMES = (
    "regression_joint: free log_alpha (basis), log_beta, w or w_raw (basis), observed t_obs, "
    "data Phi and t; regression_marginal: free log_alpha, log_beta, observed t_obs, data Phi, "
    "t and PhiTPhi (or X and centres with a free log_length_scale); binary: free log_alpha, "
    "w or w_raw, observed y_obs, data Phi and y; softmax: as binary with W or W_raw "
    "(basis, class)"
)


@dataclass(frozen=True)
class ModelSpec:
    """What kind of RVM model a :class:`pymc.Model` is; see :func:`model_spec`.

    Attributes
    ----------
    kind : str
        ``"regression_joint"``, ``"regression_marginal"``, ``"binary"`` or
        ``"softmax"``.
    prior : HyperPrior or None
        The Gamma hyperprior of the precisions, or None when the prior of
        ``log_alpha`` (or ``log_beta``) is not of the log-Gamma form
        ``a y - b e^y + const`` (a user's own prior).
    parametrization : str or None
        ``"centred"`` or ``"non_centred"`` weights (joint models), else None.
    n_classes : int or None
        Number of classes (classification), else None.
    rbf_width : bool
        True when the RBF length scale is a free variable (``log_length_scale``);
        the design matrix is then :func:`rvm_pymc.models.rbf_design` of the
        data ``X`` and ``centres``.
    rbf_bias : bool
        Whether that RBF design matrix has a bias column first.
    """

    kind: str
    prior: HyperPrior | None
    parametrization: str | None = None
    n_classes: int | None = None
    rbf_width: bool = False
    rbf_bias: bool = False


def _log_gamma_form(model, name: str) -> tuple[float, float] | None:
    """``(a, b)`` if the prior log density of ``name`` is ``a y - b e^y + const``, else None.

    The density is evaluated element-wise at ``y = 0, 1, 2`` (three equations
    for ``a``, ``b`` and the constant) and the fit is checked at ``y = -1.5``
    and ``y = 3``.
    """
    import pymc as pm
    import pytensor

    rv = model[name]
    value = rv.type()
    fn = pytensor.function(
        [value], pm.logp(rv, value, warn_rvs=False), mode="FAST_COMPILE", on_unused_input="ignore"
    )
    shape = tuple(int(s) for s in model.initial_point()[model.rvs_to_values[rv].name].shape)

    def f(y: float) -> np.ndarray:
        return np.asarray(fn(np.full(shape, y)), dtype=float).reshape(-1)

    f0, f1, f2 = f(0.0), f(1.0), f(2.0)
    e = np.e
    b = (2.0 * f1 - f0 - f2) / (e - 1.0) ** 2
    a = f1 - f0 + b * (e - 1.0)
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        return None
    if np.ptp(a) > 1e-8 * (1 + np.max(np.abs(a))) or np.ptp(b) > 1e-8 * (1 + np.max(np.abs(b))):
        return None  # not one Gamma prior shared by every basis
    a0, b0 = float(np.mean(a)), float(np.mean(b))
    for y in (-1.5, 3.0):
        want = a0 * y - b0 * np.exp(y) + (f0 + b0)
        if not np.allclose(f(y), want, rtol=1e-8, atol=1e-8):
            return None
    # the three-point solve leaves round-off: take the distribution's own constant
    # parameter where one matches (the builders' CustomDist(name, a, b)), 0 for a zero
    exact = [0.0, *_constant_inputs(rv)]
    a0, b0 = (min(exact, key=lambda c: abs(c - v)) for v in (a0, b0))
    a0, b0 = (
        c if abs(c - v) <= 1e-9 * (1.0 + abs(v)) else v
        for c, v in zip((a0, b0), (float(np.mean(a)), float(np.mean(b))), strict=True)
    )
    if a0 < 0 or b0 < 0:
        return None
    return a0, b0


def _constant_inputs(rv) -> list[float]:
    """Scalar constants among the inputs of the node that draws ``rv``."""
    from pytensor.tensor.basic import get_underlying_scalar_constant_value
    from pytensor.tensor.exceptions import NotScalarConstantError

    out = []
    for inp in rv.owner.inputs if rv.owner is not None else ():
        try:
            out.append(float(get_underlying_scalar_constant_value(inp)))
        except (NotScalarConstantError, TypeError, ValueError):
            continue
    return out


def model_spec(model) -> ModelSpec:
    """Read what kind of RVM model ``model`` is from its variables and data.

    The kind follows from the observed variable (``t_obs``: regression,
    ``y_obs``: classification) and the weights (``w``/``w_raw``: joint or
    binary, ``W``/``W_raw``: softmax, none: the marginal regression model);
    the weights are non-centred when ``w_raw`` (``W_raw``) is a free variable.
    The Gamma hyperprior ``(a, b, c, d)`` is read off the prior log density of
    ``log_alpha`` (and ``log_beta``) when it has the log-Gamma form
    ``a y - b e^y + const`` of :mod:`rvm_pymc.models`; otherwise
    ``ModelSpec.prior`` is None and only the fits that need no Gamma
    parameters accept the model.

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
    elif "y_obs" in observed:
        need("log_alpha", "Phi", "y")
        weights = "W" if ("W" in free or "W_raw" in free) else "w"
        kind = "softmax" if weights == "W" else "binary"
        if weights not in free and f"{weights}_raw" not in free:
            raise ValueError(f"a classification model needs a free {weights} or {weights}_raw")
    else:
        need("t_obs")  # raises with the list of names
        raise AssertionError("unreachable")  # pragma: no cover
    if "log_alpha" not in free:
        raise ValueError("log_alpha must be a free variable of the model")
    rbf_width = "log_length_scale" in free
    rbf_bias = False
    if rbf_width:
        need("X", "centres")
        n_basis = len(model.coords.get("basis", ()))
        n_centres = int(np.shape(model["centres"].get_value())[0])
        rbf_bias = n_basis == n_centres + 1
    elif kind == "regression_marginal":
        need("Phi", "PhiTPhi")
    else:
        need("Phi")
    parametrization = None
    if weights is not None:
        parametrization = "non_centred" if f"{weights}_raw" in free else "centred"
    n_classes = None
    if kind == "binary":
        n_classes = 2
    elif kind == "softmax":
        n_classes = len(model.coords.get("class", ())) or None
    ab = _log_gamma_form(model, "log_alpha")
    cd = (0.0, 0.0)
    if kind.startswith("regression"):
        cd = _log_gamma_form(model, "log_beta")
    prior = None
    if ab is not None and cd is not None:
        prior = HyperPrior(a=ab[0], b=ab[1], c=cd[0], d=cd[1])
    return ModelSpec(kind, prior, parametrization, n_classes, rbf_width, rbf_bias)
