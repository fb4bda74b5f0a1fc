"""Hyperprior presets for the ARD precisions and the noise precision.

The model (docs/design.md section 1) puts

.. math::

    \\alpha_m \\sim \\mathrm{Gamma}(a, b), \\qquad \\beta \\sim \\mathrm{Gamma}(c, d)

(shape, rate).  A preset is a named :class:`HyperPrior`; user overrides are merged
on top of it.

Presets
-------
``"evidence"``
    ``a = b = c = d = 0``: Tipping's type-II maximum likelihood.
``"near_improper"``
    ``a = b = c = d = 1e-6``: the vague prior of Tipping (2001); NUTS with it warns.
``"weakly_informative"``
    ``a = c = 1, b = d = 1e-2``: a proper prior for NUTS on the scaled problem
    (prior mean of each precision 100).
``"weakly_informative_slab"``
    ``"weakly_informative"`` with a slab of scale 5: the NUTS default of ``RVC``
    and ``RVP``, whose chains diverge without it where the classes separate.

A slab
------
``HyperPrior(..., slab=s)`` adds a fixed precision ``1/s^2`` to every weight's ARD
precision, the regularised horseshoe's slab (Piironen & Vehtari 2017) in ARD form:

.. math::

    w_m \\mid \\alpha_m \\sim N\\!\\left(0, \\frac{1}{\\alpha_m + s^{-2}}\\right),
    \\qquad \\mathrm{var}(w_m \\mid \\alpha_m) = \\frac{s^2}{1 + \\alpha_m s^2} \\le s^2

(:func:`slab_variance`).  The PyMC models and the reference solver's MacKay and EM
updates take a slab; the fast solver and type-II MAP refuse it.

References
----------
Piironen, J. and Vehtari, A. (2017). Sparsity information and regularization
in the horseshoe and other shrinkage priors. *Electronic Journal of
Statistics* 11(2), 5018-5051.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace

import numpy as np

from rvm_pymc._core.validation import check_positive

__all__ = ["DISPERSION_PRIOR_SCALE", "PRESETS", "HyperPrior", "resolve_prior", "slab_variance"]

DISPERSION_PRIOR_SCALE = 1.0
"""The scale ``s`` of NUTS's prior ``1/sqrt(r) ~ HalfNormal(s)`` on a negative binomial's
dispersion ``r`` (mode at the Poisson, ``r = inf``)."""


@dataclass(frozen=True)
class HyperPrior:
    """Gamma hyperprior parameters (shape, rate) for ``alpha`` and ``beta``.

    Parameters
    ----------
    a, b : float
        Shape and rate of the Gamma prior on every ARD precision ``alpha_m``.
    c, d : float
        Shape and rate of the Gamma prior on the noise precision ``beta``.
    slab : float or None
        The slab scale ``s > 0``: every weight's prior precision is
        ``alpha_m + 1/s^2``.  None (the default): no slab.

    Notes
    -----
    Zero values mean an improper flat prior on the log precision.
    """

    a: float = 0.0
    b: float = 0.0
    c: float = 0.0
    d: float = 0.0
    slab: float | None = None

    def __repr__(self) -> str:
        slab = "" if self.slab is None else f", slab={self.slab!r}"
        return f"HyperPrior(a={self.a!r}, b={self.b!r}, c={self.c!r}, d={self.d!r}{slab})"

    def __post_init__(self) -> None:
        if self.slab is not None:  # its messages say that None (no slab) is allowed
            try:
                s = float(self.slab)
            except (TypeError, ValueError) as exc:
                raise ValueError(f"slab must be a number or None; got {self.slab!r}") from exc
            if not (np.isfinite(s) and s > 0):
                raise ValueError(f"slab must be finite and > 0 (or None); got {self.slab!r}")
            object.__setattr__(self, "slab", s)
        for name in ("a", "b", "c", "d"):
            value = check_positive(
                getattr(self, name), f"hyperprior parameter {name}", allow_zero=True
            )
            object.__setattr__(self, name, value)

    def as_dict(self) -> dict[str, float | None]:
        """The parameters as a plain dict (``slab`` None when there is no slab)."""
        return asdict(self)

    def without_slab(self) -> HyperPrior:
        """The same Gamma hyperprior without the slab."""
        return replace(self, slab=None)


def slab_variance(alpha, slab: float | None):
    """A weight's prior variance given its ARD precision: ``s^2 / (1 + alpha s^2)``.

    That is ``1 / (alpha + 1/s^2)``; ``1/alpha`` without a slab.

    Parameters
    ----------
    alpha : float or array_like
        ARD precisions (``inf`` gives 0: a pruned basis).
    slab : float or None
        The slab scale ``s`` of :class:`HyperPrior`.

    Returns
    -------
    float or ndarray

    Examples
    --------
    >>> float(slab_variance(0.0, 5.0))
    25.0
    >>> float(slab_variance(1.0, None))
    1.0
    """
    alpha = np.asarray(alpha, dtype=float)
    if slab is None:
        with np.errstate(divide="ignore"):
            return 1.0 / alpha
    s2 = float(slab) ** 2
    return s2 / (1.0 + alpha * s2)


#: The hyperprior presets by name (see :class:`HyperPrior`).
PRESETS: dict[str, HyperPrior] = {
    "evidence": HyperPrior(0.0, 0.0, 0.0, 0.0),
    "near_improper": HyperPrior(1e-6, 1e-6, 1e-6, 1e-6),
    "weakly_informative": HyperPrior(1.0, 1e-2, 1.0, 1e-2),
    "weakly_informative_slab": HyperPrior(1.0, 1e-2, 1.0, 1e-2, slab=5.0),
}

_KEYS = ("a", "b", "c", "d", "slab")


def _check_keys(keys, message: str) -> None:
    """ValueError of ``message`` (formatted with the sorted unknown keys) for keys not in _KEYS."""
    unknown = set(keys) - set(_KEYS)
    if unknown:
        raise ValueError(f"{message.format(sorted(unknown))}; allowed: {', '.join(_KEYS)}")


def resolve_prior(prior=None, *, default: str = "evidence", **overrides) -> HyperPrior:
    """Turn a preset name, mapping or :class:`HyperPrior` into a :class:`HyperPrior`.

    Parameters
    ----------
    prior : str, mapping, HyperPrior or None
        A preset name (see :data:`PRESETS`), a mapping with any of the keys
        ``a, b, c, d, slab`` merged over the ``default`` preset, a ``HyperPrior``, or
        None for the ``default`` preset.
    default : str
        Preset used when ``prior`` is None or a partial mapping.
    **overrides
        Individual parameters that take precedence over everything else.

    Returns
    -------
    HyperPrior

    Examples
    --------
    >>> resolve_prior("evidence", a=1e-3)
    HyperPrior(a=0.001, b=0.0, c=0.0, d=0.0)
    >>> resolve_prior({"c": 2.0}, default="near_improper").c
    2.0
    >>> resolve_prior({"slab": 5.0}, default="weakly_informative")
    HyperPrior(a=1.0, b=0.01, c=1.0, d=0.01, slab=5.0)
    """
    if default not in PRESETS:
        raise ValueError(f"unknown default preset {default!r}; choose from {sorted(PRESETS)}")
    if prior is None:
        base = PRESETS[default]
    elif isinstance(prior, HyperPrior):
        base = prior
    elif isinstance(prior, str):
        if prior not in PRESETS:
            raise ValueError(f"unknown prior preset {prior!r}; choose from {sorted(PRESETS)}")
        base = PRESETS[prior]
    elif isinstance(prior, Mapping):
        _check_keys(prior, "prior has unknown keys {}")
        base = replace(PRESETS[default], **prior)
    else:
        raise ValueError(
            f"prior must be a preset name, a mapping or a HyperPrior; got {type(prior).__name__}"
        )
    overrides = {k: v for k, v in overrides.items() if v is not None}
    _check_keys(overrides, "unknown hyperprior parameters {}")
    return replace(base, **overrides) if overrides else base
