"""The NUTS defaults: every default of a NUTS fit, in one place.

Lengths, chains, step-size targets, the weights' parametrization, the sampler
chosen, the basis swaps and the checkpoints of ``until_converged``, for the
inference functions (:func:`~rvm_pymc.inference.sample_nuts` and its kin) and
for the estimators (``RVR``, ``RVC``, ``RVP`` with ``method="nuts"``).  How
each was chosen: ``docs/pymc.md`` and ``benchmarks/README.md``.  The
convergence standard itself is :mod:`rvm_pymc._core.convergence`'s.  Imports
nothing, so that the estimators' parameter checks read it before PyMC.
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
"""Draws a chain of ``draws=None`` by the estimator's kind; for NUTS the most a chain
takes, stopping at the first checkpoint that passes the convergence standard.  RVC's
6000: at 2 x 4000 breast cancer at the estimator's width ended at smallest ESS 356-379
(``docs/pymc.md``, "Default length")."""
WIDTH_DRAWS = 6000
"""Draws a chain of ``draws=None`` for NUTS over the kernel width (``gamma="integrate"``),
of every kind: at 2000 (RVR's) uscrime at ``target_accept`` 0.95 stopped at the cap with
a tail ESS of 391 and 356 (seeds 0, 1), and passed at 2250 draws with this cap; RVC's
wine needed 2250 (``benchmarks/results/nuts_width.md``)."""
COLLAPSED_TUNE = 500
"""Tuning steps of ``tune=None`` for RVR's collapsed sampler."""
JOINT_TUNE = 1000
"""Tuning steps of ``tune=None`` for the models with weights (classifiers, counts,
``sampler_kwargs={"model": "joint"}``)."""
JOINT_TARGET_ACCEPT = 0.95
"""The estimators' step-size target of the models with weights (the inference functions'
own is :data:`TARGET_ACCEPT`)."""
COLLAPSED_TARGET_ACCEPT = 0.8
"""The same for the collapsed regression sampler (no weights, so no funnel)."""
KIND_TARGET_ACCEPT = {"negative_binomial": 0.99}
"""Kinds whose estimators' ``target_accept`` is higher than :data:`JOINT_TARGET_ACCEPT`:
the negative binomial's dispersion and weights left divergent draws at 0.95 on an
overdispersed real data set (``benchmarks/README.md``, "Overdispersed counts")."""
WIDTH_JOINT_TARGET_ACCEPT = 0.99
"""The estimators' ``target_accept`` of joint NUTS over the kernel width (the
classifiers' ``gamma="integrate"``): at :data:`JOINT_TARGET_ACCEPT` wine left 3
divergent draws of 12,000 (``benchmarks/results/nuts_width.md``)."""
WIDTH_COLLAPSED_TARGET_ACCEPT = 0.95
"""The same for RVR's collapsed NUTS over the width: at :data:`COLLAPSED_TARGET_ACCEPT`
3 of 26 fits of the 15 smaller regression panel sets failed (uscrime: 4 divergent draws;
mtcars: R-hat 1.012; ccard: a chain in another mode), at 0.9 and at 0.95 all 30 passed
(seeds 0 and 1); on the 60 fits of 105-row subsamples of the evidence-against-MCMC table
0.9 converged on 51 and 0.95 on 55 (each of the 51 among them), at about 1.5 times the
time (boston, N = 150: 75 s warm against 50 s; ``benchmarks/results/nuts_width.md``)."""
DEFAULT_PARAMETRIZATION = {
    "regression": "centred",
    "binary": "non_centred",
    "softmax": "non_centred",
    "poisson": "non_centred",
    "negative_binomial": "non_centred",
}
"""Weights of NUTS by default (``sampler_kwargs["parametrization"]``): the centred
classifiers mixed badly; counts follow the classifiers."""

# ---------------------------------------------------------- samplers and moves
DEFAULT_SAMPLERS = ("numpyro", "nutpie")
"""Backends of ``nuts_sampler=None`` when installed, in this order (else PyMC's NUTS;
PyMC's whenever the run needs it: compile options, plain progress lines, basis swaps,
``until_converged=True``)."""
JAX_COLLAPSED_MAX_BASES = 200
"""Above this many bases the collapsed sampler prefers nutpie to numpyro."""
SWAP_PROPOSALS = 64
"""Basis-swap proposals per draw of ``basis_swaps=None`` for :data:`SWAP_KINDS`."""
SWAP_KINDS = ("binary", "softmax")
"""The models that swap by default: the classifiers."""
FIRST_CHECK = 500
"""Draws a chain (after tuning) at the first checkpoint of ``until_converged``."""
CHECK_EVERY = 250
"""Draws a chain between two checkpoints."""


def estimator_draws(kind: str, width: bool = False) -> int:
    """Draws a chain of ``draws=None`` for an estimator of ``kind`` (its ``_kind``), or
    :data:`WIDTH_DRAWS` over the kernel width (``width``)."""
    if width:
        return WIDTH_DRAWS
    return ESTIMATOR_DRAWS.get(kind, ESTIMATOR_DRAWS["regression"])


def estimator_tune(collapsed: bool) -> int:
    """Tuning steps of ``tune=None``: :data:`COLLAPSED_TUNE` or :data:`JOINT_TUNE`."""
    return COLLAPSED_TUNE if collapsed else JOINT_TUNE


def estimator_target_accept(joint: bool, kind: str | None = None, width: bool = False) -> float:
    """The estimators' ``target_accept``: :data:`KIND_TARGET_ACCEPT` of ``kind``, else
    over the width (``width``) :data:`WIDTH_JOINT_TARGET_ACCEPT` or
    :data:`WIDTH_COLLAPSED_TARGET_ACCEPT`, else :data:`JOINT_TARGET_ACCEPT` or the
    collapsed one."""
    if kind in KIND_TARGET_ACCEPT:
        return KIND_TARGET_ACCEPT[kind]
    if width:
        return WIDTH_JOINT_TARGET_ACCEPT if joint else WIDTH_COLLAPSED_TARGET_ACCEPT
    return JOINT_TARGET_ACCEPT if joint else COLLAPSED_TARGET_ACCEPT
