"""When a type-II fit interpolates its training data (too many relevance vectors, or the
noise precision at its bound): the rule and its message."""

from __future__ import annotations

from rvm_pymc._core.centres import AUTO_FULL_MAX

__all__ = ["MAX_RELEVANT_FRACTION", "interpolates", "interpolation_message"]

MAX_RELEVANT_FRACTION = 0.5
"""A type-II fit keeping more than this fraction of its training rows interpolates."""


def interpolates(
    n_relevance: int, n_train: int, noise_at_bound: bool = False, prunes: bool = True
) -> bool:
    """Whether the fit interpolates (``prunes``: a prior with ``a = b = 0``)."""
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
