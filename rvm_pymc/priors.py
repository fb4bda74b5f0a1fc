"""Hyperprior presets for the ARD precisions and the noise precision.

The model (docs/design.md section 1) puts

.. math::

    \\alpha_m \\sim \\mathrm{Gamma}(a, b), \\qquad \\beta \\sim \\mathrm{Gamma}(c, d)

(shape, rate) on every ARD precision and on the noise precision.  A preset is a
named :class:`HyperPrior`; user overrides are merged on top of it, never
written as literals inside a model builder.

Presets
-------
``"evidence"``
    ``a = b = c = d = 0``: Tipping's pure type-II maximum likelihood (flat prior
    on the log precisions).  Right for the reference solver and type-II MAP;
    the irrelevant precisions run to infinity and their bases are pruned.
``"near_improper"``
    ``a = b = c = d = 1e-6``: the vague Gamma prior of Tipping (2001).  Almost
    the same fit as ``"evidence"``; its posterior is nearly improper, so full
    NUTS with it warns.
``"weakly_informative"``
    A proper prior for full NUTS, stated for *standardised* targets and basis
    columns scaled to unit root-mean-square (the estimators do this and undo it
    at prediction time): ``a = 1, b = 1e-2`` puts the prior mean of each
    precision at 100 (weights of order 0.1) with an exponential tail that still
    admits weights of order one; ``c = 1, d = 1e-2`` does the same for the
    noise precision (noise sd of order 0.1 of the target sd).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace

import numpy as np

__all__ = ["PRESETS", "HyperPrior", "resolve_prior"]


@dataclass(frozen=True)
class HyperPrior:
    """Gamma hyperprior parameters (shape, rate) for ``alpha`` and ``beta``.

    Parameters
    ----------
    a, b : float
        Shape and rate of the Gamma prior on every ARD precision ``alpha_m``.
    c, d : float
        Shape and rate of the Gamma prior on the noise precision ``beta``.

    Notes
    -----
    Zero values are allowed and mean an improper flat prior on the log
    precision.  A *proper* prior needs all four strictly positive.
    """

    a: float = 0.0
    b: float = 0.0
    c: float = 0.0
    d: float = 0.0

    def __post_init__(self) -> None:
        for name in ("a", "b", "c", "d"):
            v = getattr(self, name)
            try:
                fv = float(v)
            except (TypeError, ValueError) as exc:
                raise ValueError(
                    f"hyperprior parameter {name} must be a number; got {v!r}"
                ) from exc
            if not np.isfinite(fv) or fv < 0:
                raise ValueError(f"hyperprior parameter {name} must be finite and >= 0; got {v!r}")
            object.__setattr__(self, name, fv)

    @property
    def is_proper(self) -> bool:
        """True when all four parameters are strictly positive."""
        return min(self.a, self.b, self.c, self.d) > 0

    @property
    def is_flat(self) -> bool:
        """True for Tipping's type-II maximum likelihood (all parameters zero)."""
        return max(self.a, self.b, self.c, self.d) == 0

    def as_dict(self) -> dict[str, float]:
        """The parameters as a plain dict."""
        return asdict(self)


#: The hyperprior presets by name (see :class:`HyperPrior`).
PRESETS: dict[str, HyperPrior] = {
    "evidence": HyperPrior(0.0, 0.0, 0.0, 0.0),
    "near_improper": HyperPrior(1e-6, 1e-6, 1e-6, 1e-6),
    "weakly_informative": HyperPrior(1.0, 1e-2, 1.0, 1e-2),
}


def resolve_prior(prior=None, *, default: str = "evidence", **overrides) -> HyperPrior:
    """Turn a preset name, mapping or :class:`HyperPrior` into a :class:`HyperPrior`.

    Parameters
    ----------
    prior : str, mapping, HyperPrior or None
        A preset name (see :data:`PRESETS`), a mapping with any of the keys
        ``a, b, c, d`` merged over the ``default`` preset, a ``HyperPrior``, or
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
        unknown = set(prior) - {"a", "b", "c", "d"}
        if unknown:
            raise ValueError(f"prior has unknown keys {sorted(unknown)}; allowed: a, b, c, d")
        base = replace(PRESETS[default], **prior)
    else:
        raise ValueError(
            f"prior must be a preset name, a mapping or a HyperPrior; got {type(prior).__name__}"
        )
    overrides = {k: v for k, v in overrides.items() if v is not None}
    unknown = set(overrides) - {"a", "b", "c", "d"}
    if unknown:
        raise ValueError(f"unknown hyperprior parameters {sorted(unknown)}; allowed: a, b, c, d")
    return replace(base, **overrides) if overrides else base
