"""The Laplace approximation in NumPy: Newton's mode (:func:`newton_mode`), and the
Gaussian ``N(w*, H^-1)`` with the log evidence at it (:func:`laplace_posterior`),

.. math::

    \\log p(T \\mid \\alpha) \\approx \\Psi(w^*) + \\tfrac{K}{2} \\sum_m \\log \\alpha_m
        - \\tfrac12 \\log |H|,

``Psi = log p(T | w) - w^T A w / 2`` (Tipping 2001, section 4; MacKay 1992).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from rvm_pymc._core.gaussian import factor_inverse, factor_logdet, factor_solve, spd_factor

__all__ = [
    "LaplacePosterior",
    "NewtonMode",
    "laplace_log_evidence",
    "laplace_posterior",
    "newton_mode",
]

HALVING_MIN = 1e-10
"""Step halving gives up after the first step length below this."""


class NewtonMode(NamedTuple):
    """Outcome of :func:`newton_mode`: ``state = evaluate(w)``, ``H`` the negative Hessian,
    ``factor`` its :func:`spd_factor` (or None); ``stalled``: step halving found no ascent."""

    w: np.ndarray
    state: tuple
    H: np.ndarray
    factor: tuple | None
    n_iter: int
    converged: bool
    stalled: bool


def newton_mode(
    w: np.ndarray,
    evaluate: Callable[[np.ndarray], tuple],
    derivatives: Callable[[np.ndarray, tuple], tuple],
    *,
    tol: float,
    max_iter: int,
    polish: bool = False,
    what: str = "Laplace Hessian",
) -> NewtonMode:
    """Maximise a log density by Newton's method with step halving; a :class:`NewtonMode`."""
    state = evaluate(w)
    g, H = derivatives(w, state)
    for it in range(1, max_iter + 1):
        L, p = spd_factor(H, what)
        step = factor_solve(L, p, g)
        step = step.reshape(w.shape[::-1]).T if w.ndim == 2 else step  # class-major
        small = bool(np.abs(step).max(initial=0.0) <= tol * (1.0 + np.abs(w).max(initial=0.0)))
        if small and not polish:
            return NewtonMode(w, state, H, (L, p), it, True, False)
        # a decrease within the rounding of the objective is no decrease
        slack, eta = 1e-12 * (1.0 + abs(state[0])), 1.0
        while True:
            w_new = w + step if eta == 1.0 else w + eta * step
            new = evaluate(w_new)
            if np.isfinite(new[0]) and new[0] >= state[0] - slack:
                break
            if eta < HALVING_MIN:
                return NewtonMode(w, state, H, (L, p), it, small, True)
            eta *= 0.5
        w, state = w_new, new
        g, H = derivatives(w, state)
        if small:
            return NewtonMode(w, state, H, None, it, True, False)
    return NewtonMode(w, state, H, None, max_iter, False, False)


@dataclass(frozen=True)
class LaplacePosterior:
    """Laplace approximation of the weight posterior at fixed ``alpha``."""

    mean: np.ndarray
    cov: np.ndarray
    logdet_hessian: float
    log_likelihood: float
    log_evidence: float
    probs: np.ndarray
    n_newton: int
    converged: bool
    curvature: np.ndarray | None = None
    score: np.ndarray | None = None


def laplace_log_evidence(log_joint: float, alpha, c: int, logdet_precision: float) -> float:
    """The module's Laplace log evidence from ``Psi(w*)`` (``log_joint``), the precisions
    (``c`` weights each) and ``log |H|``."""
    return log_joint + 0.5 * c * float(np.log(alpha).sum()) - 0.5 * logdet_precision


def laplace_posterior(
    W, probs, log_joint, ll, alpha, c, L, p, n_newton, converged, curvature=None
) -> LaplacePosterior:
    """The posterior at the mode ``W`` from its Hessian's factor ``(L, p)`` (``c``: weights
    per precision; ``log_joint = log p(T | W) - sum(alpha W^2) / 2``)."""
    cov, logdet = factor_inverse(L, p), factor_logdet(L, p)
    log_ev = laplace_log_evidence(log_joint, alpha, c, logdet)
    return LaplacePosterior(W, cov, logdet, ll, log_ev, probs, n_newton, converged, curvature)
