"""The priors of the builders' variables: log precisions, dispersion and ARD weights."""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from pymc.distributions.shape_utils import rv_size_is_none
from scipy.special import gammaln

from rvm_pymc._core.gaussian import LOG_2PI
from rvm_pymc.models.spec import DISPERSION_SCALE_DATA, SLAB_DATA
from rvm_pymc.priors import HyperPrior


def log_gamma_normaliser(shape: float, rate: float) -> float:
    """``shape log(rate) - lgamma(shape)``, or 0 for an improper prior.

    Parameters
    ----------
    shape, rate : float

    Returns
    -------
    float
    """
    if shape > 0 and rate > 0:
        return float(shape * np.log(rate) - gammaln(shape))
    return 0.0


def _log_precision(
    name: str, shape: float, rate: float, dims=None, shift=None
) -> pt.TensorVariable:
    """A free log precision ``y = log x + shift`` with ``x ~ Gamma(shape, rate)``: density
    ``shape y - rate e^y`` (+ normaliser if proper), ``shape`` and ``rate`` named data."""
    stem = name.removeprefix("log_")
    a = pm.Data(f"{stem}_shape", float(shape))
    b = pm.Data(f"{stem}_rate", float(rate))
    proper = shape > 0 and rate > 0

    def logp(value, a, b, *s):
        if s:
            value = value - s[0]
        norm = pt.switch(pt.and_(pt.gt(a, 0), pt.gt(b, 0)), a * pt.log(b) - pt.gammaln(a), 0.0)
        return a * value - b * pt.exp(value) + norm

    def random(a, b, *s, rng=None, size=None):
        out = np.log(rng.gamma(a, 1.0 / b, size=size))
        return out + s[0] if s else out

    start = float(np.log(shape / rate)) if proper else 0.0
    class_name = "LogGamma" if proper else "Flat"

    def support_point(rv, size, a, b, *s):
        # from ``size``, not ``rv`` (whose shape would evaluate the absent random)
        out = pt.as_tensor(start) if rv_size_is_none(size) else pt.full(size, start)
        return out + s[0] if s else out

    return pm.CustomDist(
        name,
        a,
        b,
        *(() if shift is None else (shift,)),
        logp=logp,
        random=random if proper else None,
        support_point=support_point,
        dims=dims,
        class_name=class_name if shift is None else f"Shifted{class_name}",
    )


def _ard_precisions(prior: HyperPrior) -> pt.TensorVariable:
    log_alpha = _log_precision("log_alpha", prior.a, prior.b, dims="basis")
    pm.Deterministic("alpha", pt.exp(log_alpha), dims="basis")
    return log_alpha


def _noise_precision(prior: HyperPrior) -> pt.TensorVariable:
    log_beta = _log_precision("log_beta", prior.c, prior.d)
    pm.Deterministic("beta", pt.exp(log_beta))
    return log_beta


def _log_dispersion(scale: float) -> pt.TensorVariable:
    """A free ``y = log r`` under ``1/sqrt(r) ~ HalfNormal(scale)``, Jacobian included:
    ``-log(scale) - 0.5 log(2 pi) - exp(-y) / (2 scale^2) - y / 2``."""
    s = pm.Data(DISPERSION_SCALE_DATA, float(scale))

    def logp(value, s):
        return -pt.log(s) - 0.5 * LOG_2PI - pt.exp(-value) / (2.0 * s**2) - value / 2

    def random(s, rng=None, size=None):
        return -2.0 * np.log(np.abs(rng.normal(0.0, s, size=size)))

    def support_point(rv, size, s):  # r = 1 / s^2: the variation at the prior's scale
        start = -2.0 * pt.log(s)
        return start if rv_size_is_none(size) else pt.full(size, start)

    log_r = pm.CustomDist(
        "log_dispersion",
        s,
        logp=logp,
        random=random,
        support_point=support_point,
        class_name="LogInvSqrtHalfNormal",
    )
    pm.Deterministic("dispersion", pt.exp(log_r))
    return log_r


def weight_log_precision(log_alpha, log_slab_precision=None):
    """A weight's log prior precision ``log(alpha + 1/s^2)``, or ``log_alpha`` without a slab."""
    if log_slab_precision is None:
        return log_alpha
    return pt.logaddexp(log_alpha, log_slab_precision)


def _weights(
    name: str, log_alpha, parametrization: str, dims, slab: float | None = None
) -> pt.TensorVariable:
    """ARD weights ``w ~ N(0, 1/alpha)`` (``alpha + 1/s^2`` with a slab), centred or not."""
    # a slab's -2 log s, from the named data slab_scale (written here)
    log_slab = None if slab is None else -2.0 * pt.log(pm.Data(SLAB_DATA, float(slab)))
    scale = pt.exp(-0.5 * weight_log_precision(log_alpha, log_slab))
    if len(dims) == 2:
        scale = scale[:, None]
    if parametrization == "centred":
        return pm.Normal(name, mu=0.0, sigma=scale, dims=dims)
    z = pm.Normal(f"{name}_raw", mu=0.0, sigma=1.0, dims=dims)
    return pm.Deterministic(name, z * scale, dims=dims)
