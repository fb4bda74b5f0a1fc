"""Argument checks and column normalisation shared by the reference solvers."""

from __future__ import annotations

import numpy as np

from rvm_pymc.priors import HyperPrior

METHODS = ("fast", "mackay", "em")

#: Upper bound on the noise precision: ``beta <= BETA_MAX_FACTOR / var(t)`` (noise sd at
#: least 1e-4 of the target sd), where an exact fit would drive the evidence to infinity.
BETA_MAX_FACTOR = 1e8


def check_method_and_prior(method: str, prior: HyperPrior) -> None:
    """Reject an unknown method, and ``"fast"`` with a Gamma prior on alpha or a slab."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}; got {method!r}")
    if method == "fast" and prior.slab is not None:
        raise ValueError(
            f"method='fast' has no slab (prior has slab={prior.slab}): its sequential "
            "updates take a weight's prior precision to be alpha alone. Use "
            "method='mackay' or 'em' (the estimators' solver='mackay' or 'em') for a "
            "prior with a slab"
        )
    if method == "fast" and (prior.a != 0 or prior.b != 0):
        raise ValueError(
            "method='fast' maximises the evidence with a = b = 0 (it relies on "
            f"alpha = inf being the optimum of an irrelevant basis); got a={prior.a}, "
            f"b={prior.b}. Use method='mackay' or 'em' for a Gamma prior on alpha"
        )


def check_alpha_init(alpha_init, n_basis: int, zero_ok: bool = False) -> np.ndarray | None:
    """Validate a warm start: shape (M,), > 0 (>= 0 if ``zero_ok``), inf allowed, one finite."""
    if alpha_init is None:
        return None
    alpha_init = np.asarray(alpha_init, dtype=float)
    if alpha_init.shape != (n_basis,):
        raise ValueError(
            f"alpha_init must have shape ({n_basis},) (one per column of Phi); "
            f"got {alpha_init.shape}"
        )
    if (
        np.any(np.isnan(alpha_init))
        or np.any(alpha_init < 0 if zero_ok else alpha_init <= 0)
        or not np.any(np.isfinite(alpha_init))
    ):
        bound = ">= 0" if zero_ok else "> 0"
        raise ValueError(
            f"alpha_init must be {bound} (inf allowed) with at least one finite value"
        )
    return alpha_init


def normalise_columns(Phi: np.ndarray, task: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Scale the columns of ``Phi`` to unit norm in place; ``(Phi, scale, usable)``."""
    with np.errstate(over="ignore", under="ignore"):
        norms = np.sqrt(np.einsum("ij,ij->j", Phi, Phi))
    # squares over- or underflow beyond ~1e+-154: redo those columns scaled first
    redo = ~np.isfinite(norms) | (norms < 1e-140)
    if np.any(redo):
        big = np.max(np.abs(Phi[:, redo]), axis=0)
        safe = np.where(big > 0, big, 1.0)
        norms[redo] = big * np.linalg.norm(Phi[:, redo] / safe, axis=0)
    usable = norms > 0
    if not np.any(usable):
        raise ValueError(f"Phi has no nonzero column; no basis can {task}")
    scale = np.where(usable, norms, 1.0)
    Phi /= scale
    return Phi, scale, usable


def check_fixed_alpha(alpha, n_basis: int, zero_ok: bool = False) -> np.ndarray:
    """Precisions of a posterior at fixed ``alpha``: shape (M,), finite and > 0 (>= 0 if
    ``zero_ok``)."""
    alpha = np.asarray(alpha, dtype=float).reshape(-1)
    if alpha.shape != (n_basis,):
        raise ValueError(f"alpha has shape {alpha.shape}; expected ({n_basis},)")
    if not (np.all(np.isfinite(alpha)) and np.all(alpha >= 0 if zero_ok else alpha > 0)):
        bound = ">= 0" if zero_ok else "> 0"
        raise ValueError(f"alpha must be finite and {bound} (drop pruned bases from Phi)")
    return alpha


def check_representable(alpha, alpha_n, values, s) -> None:
    """Raise unless ``alpha`` (0 only where ``alpha_n`` is) and ``values`` are finite."""
    representable = np.all(np.isfinite(alpha)) and np.all((alpha > 0) | (alpha_n == 0))
    if not (representable and np.all(np.isfinite(values))):
        raise ValueError(
            "the posterior on the scale of Phi is not representable in float64 (column "
            f"norms span {s.min():.3g} to {s.max():.3g}); rescale the columns of Phi (for a "
            "kernel estimator: rescale X, e.g. with sklearn's StandardScaler)"
        )
