"""When a type-II fit interpolates its training data: the rule and its message, once.

A type-II (reference or MAP) RVM interpolates when it keeps more than
:data:`MAX_RELEVANT_FRACTION` of its training rows as relevance vectors (under a
hyperprior that prunes: ``a = b = 0``), or when its noise precision ended at the
solver's bound (regression).  Either way its noise
estimate has collapsed toward the targets, and its predictive bands are far too
narrow: on small real data sets the held-out log density of such fits was tens to
thousands of nats per point below a Gaussian process's (``benchmarks/README.md``,
the real-data panel).  The estimators warn with :class:`InterpolationWarning` and set
``interpolates_``; ``compare`` reports it per fit and per k-fold fold; the command
line prints it in its summary.
"""

from __future__ import annotations

from rvm_pymc._core.centres import AUTO_FULL_MAX

__all__ = ["MAX_RELEVANT_FRACTION", "interpolates", "interpolation_message"]

MAX_RELEVANT_FRACTION = 0.5
"""A type-II fit keeping more than this fraction of its training rows interpolates."""


def interpolates(
    n_relevance: int, n_train: int, noise_at_bound: bool = False, prunes: bool = True
) -> bool:
    """Whether a type-II fit with ``n_relevance`` of ``n_train`` rows interpolates.

    ``prunes``: the fit's hyperprior lets a precision go to infinity (``a = b = 0``,
    type-II maximum likelihood), so that a basis the data do not need is pruned.
    Under a proper Gamma prior on the precisions nothing is pruned and every basis
    counts as relevant by design; then only the noise at its bound says so.
    """
    many = prunes and n_relevance > MAX_RELEVANT_FRACTION * n_train
    return bool(noise_at_bound) or many


def interpolation_message(
    who: str,
    n_relevance: int,
    n_train: int,
    gamma: float | None,
    noise_at_bound: bool = False,
    noise_sd: float | None = None,
    target_sd: float | None = None,
) -> str:
    """The one sentence that says a fit interpolates, what follows, and what to do."""
    width = "" if gamma is None else f" at gamma={gamma:.4g}"
    why = [f"keeps {n_relevance} of {n_train} training rows as relevance vectors"]
    if noise_at_bound:
        why.append("its noise precision ended at its bound")
    if noise_sd is not None and target_sd is not None:
        why.append(f"noise sd {noise_sd:.3g} against a target sd of {target_sd:.3g}")
    return (
        f"{who}: the fit{width} interpolates its training data ({'; '.join(why)}): its "
        "predictive bands are too narrow to trust. Choose the width by cross-validation "
        f"(gamma='cv', the default up to {AUTO_FULL_MAX} rows) or give a wider kernel (a "
        "smaller gamma)"
    )
