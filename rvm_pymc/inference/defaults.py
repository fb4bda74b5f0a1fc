"""The NUTS defaults of the inference functions and the estimators, in one place.

How each was chosen: ``docs/pymc.md`` ("NUTS") and the benchmark results it cites.
Imports nothing, so that the estimators' parameter checks read it before PyMC.
"""

from __future__ import annotations

__all__ = [
    "CHAINS",
    "CHECK_EVERY",
    "COLLAPSED_TARGET_ACCEPT",
    "COLLAPSED_TUNE",
    "DEFAULT_PARAMETRIZATION",
    "DEFAULT_SAMPLERS",
    "DRAWS",
    "ESTIMATOR_CHAINS",
    "ESTIMATOR_DRAWS",
    "FIRST_CHECK",
    "JAX_COLLAPSED_MAX_BASES",
    "JOINT_TARGET_ACCEPT",
    "JOINT_TUNE",
    "KIND_TARGET_ACCEPT",
    "SWAP_KINDS",
    "SWAP_PROPOSALS",
    "TARGET_ACCEPT",
    "TUNE",
    "UNTIL_CONVERGED",
    "WIDTH_COLLAPSED_TARGET_ACCEPT",
    "WIDTH_DRAWS",
    "WIDTH_JOINT_TARGET_ACCEPT",
    "estimator_draws",
    "estimator_target_accept",
    "estimator_tune",
]

# ---------------------------------------------------------- the inference functions
DRAWS = 1000
"""Draws a chain of the inference functions."""
TUNE = 1000
"""Tuning steps a chain of the inference functions."""
CHAINS = 4
"""Chains of the inference functions."""
TARGET_ACCEPT = 0.9
"""Step-size target of the inference functions."""
UNTIL_CONVERGED = False
"""The inference functions run the whole ``draws``; the estimators' ``draws=None`` stops."""

# ---------------------------------------------------------- the estimators
ESTIMATOR_CHAINS = 2
"""Chains of ``chains=None``, for every method."""
ESTIMATOR_DRAWS = {"regression": 2000, "counts": 2000, "classification": 6000}
"""Most draws a chain of ``draws=None`` by kind (``docs/pymc.md``, "Default length")."""
WIDTH_DRAWS = 6000
"""The same over the kernel width, every kind (``benchmarks/results/nuts_width.md``)."""
COLLAPSED_TUNE = 500
"""Tuning steps of ``tune=None`` for RVR's collapsed sampler."""
JOINT_TUNE = 1000
"""Tuning steps of ``tune=None`` for the models with weights."""
JOINT_TARGET_ACCEPT = 0.95
"""The estimators' step-size target of the models with weights (``docs/pymc.md``)."""
COLLAPSED_TARGET_ACCEPT = 0.8
"""The same for the collapsed regression sampler (no weights, so no funnel)."""
KIND_TARGET_ACCEPT = {"negative_binomial": 0.99}
"""Kinds above :data:`JOINT_TARGET_ACCEPT` (``benchmarks/README.md``, "Overdispersed counts")."""
WIDTH_JOINT_TARGET_ACCEPT = 0.99
"""Joint NUTS over the kernel width (``benchmarks/results/nuts_width.md``)."""
WIDTH_COLLAPSED_TARGET_ACCEPT = 0.95
"""RVR's collapsed NUTS over the kernel width (``benchmarks/results/nuts_width.md``)."""
DEFAULT_PARAMETRIZATION = {
    "regression": "centred",
    "binary": "non_centred",
    "softmax": "non_centred",
    "poisson": "non_centred",
    "negative_binomial": "non_centred",
}
"""The weights' parametrization of NUTS by kind (``docs/pymc.md``)."""

# ---------------------------------------------------------- samplers and moves
DEFAULT_SAMPLERS = ("numpyro", "nutpie")
"""Backends of ``nuts_sampler=None`` when installed, in order (else PyMC's; see ``NutsRun``)."""
JAX_COLLAPSED_MAX_BASES = 200
"""Above this many bases the collapsed sampler prefers nutpie to numpyro."""
SWAP_PROPOSALS = 64
"""Basis-swap proposals per draw of ``basis_swaps=None`` for :data:`SWAP_KINDS`."""
SWAP_KINDS = ("binary", "softmax")
"""The models that swap by default (``benchmarks/README.md``, "Basis swaps")."""
FIRST_CHECK = 500
"""Draws a chain (after tuning) at the first checkpoint of ``until_converged``."""
CHECK_EVERY = 250
"""Draws a chain between two checkpoints."""


def estimator_draws(kind: str, width: bool = False) -> int:
    """Draws a chain of ``draws=None`` for ``kind``, or :data:`WIDTH_DRAWS` over the width."""
    if width:
        return WIDTH_DRAWS
    return ESTIMATOR_DRAWS.get(kind, ESTIMATOR_DRAWS["regression"])


def estimator_tune(collapsed: bool) -> int:
    """Tuning steps of ``tune=None``: :data:`COLLAPSED_TUNE` or :data:`JOINT_TUNE`."""
    return COLLAPSED_TUNE if collapsed else JOINT_TUNE


def estimator_target_accept(joint: bool, kind: str | None = None, width: bool = False) -> float:
    """The estimators' ``target_accept``: by ``kind``, else over the width, else joint or not."""
    if kind in KIND_TARGET_ACCEPT:
        return KIND_TARGET_ACCEPT[kind]
    if width:
        return WIDTH_JOINT_TARGET_ACCEPT if joint else WIDTH_COLLAPSED_TARGET_ACCEPT
    return JOINT_TARGET_ACCEPT if joint else COLLAPSED_TARGET_ACCEPT
