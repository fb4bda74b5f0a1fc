"""The ARD re-estimation updates (Tipping 2001; MacKay; EM).

With prior precision ``pi_m = alpha_m + c_m`` (``c_m = 1/s^2`` with a slab, else 0) the
log-coordinate objective (docs/design.md section 1) is stationary where

.. math::

    \\frac{g_m}{\\alpha_m + c_m} + \\frac{2a}{\\alpha_m} = D_m,

MacKay: ``g = K - pi Sigma_m``, ``D = w^2 + 2b``; EM: ``g = K``, ``D = w^2 + Sigma_m + 2b``
(``K`` weights share ``alpha_m``; ``Sigma_m``, ``w_m^2`` sum their variances, squared means).
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "PARALLEL_TOL",
    "em_beta",
    "mackay_beta",
    "merge_parallel",
    "reestimate_alpha",
    "slab_precision",
    "solve_alpha",
]

PARALLEL_TOL = 1e-12
"""Unit-norm columns with ``1 - |cos| <= PARALLEL_TOL`` are parallel to rounding."""


def slab_precision(prior, scale: np.ndarray) -> np.ndarray:
    """The slab's precision ``1 / (s^2 scale_m^2)`` per normalised column (zeros without one)."""
    scale = np.asarray(scale, dtype=float)
    if prior.slab is None:
        return np.zeros(scale.shape)
    return 1.0 / (prior.slab * scale) ** 2


def solve_alpha(g: np.ndarray, D: np.ndarray, a: float, c: np.ndarray) -> np.ndarray:
    """The root ``alpha >= 0`` of ``g / (alpha + c) + 2a / alpha = D`` (``inf``: none finite)."""
    g, D, c = np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in (g, D, c)))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        plain = (g + 2 * a) / D
        plain = np.where(np.isfinite(plain) & (plain > 0), plain, np.inf)
        if not np.any(c > 0):
            return plain
        B = g + 2 * a - D * c
        root = np.hypot(B, np.sqrt(8 * a * c * np.maximum(D, 0.0)))
        # the two forms of the positive root, each without cancellation
        big = (B + root) / (2 * D)
        small = 4 * a * c / (root - B)
        slab = np.where(B >= 0, big, np.where(a > 0, small, 0.0))
        slab = np.where((D > 0) & np.isfinite(slab), np.maximum(slab, 0.0), np.inf)
    return np.where(c > 0, slab, plain)


def reestimate_alpha(
    method: str,
    alpha: np.ndarray,
    c: np.ndarray,
    sigma: np.ndarray,
    w2: np.ndarray,
    k: int,
    a: float,
    b: np.ndarray,
) -> np.ndarray:
    """MacKay's or EM's new precisions of the active bases (``inf``: prune; ``c``: slab's)."""
    if method == "mackay":
        return solve_alpha(k - (alpha + c) * sigma, w2 + 2 * b, a, c)
    return solve_alpha(k, w2 + sigma + 2 * b, a, c)


def mackay_beta(n: int, sum_gamma: float, rss: float, prior, beta_max: float) -> float:
    """MacKay's noise precision ``(N - sum(gamma) + 2c) / (rss + 2d)``, in ``(0, beta_max]``."""
    num = max(n - sum_gamma + 2 * prior.c, 0.0)
    den = rss + 2 * prior.d
    if den <= 0 or num >= beta_max * den:
        return float(beta_max)
    return max(num / den, np.finfo(float).tiny)


def em_beta(n: int, sum_gamma: float, rss: float, beta: float, prior, beta_max: float) -> float:
    """EM's noise precision ``(N + 2c) / (rss + sum(gamma) / beta + 2d)``, at most ``beta_max``."""
    return min((n + 2 * prior.c) / (rss + sum_gamma / beta + 2 * prior.d), beta_max)


def merge_parallel(gram: np.ndarray, alpha: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(keep, alpha)``: the first of each set of parallel unit-norm columns, with
    ``1/alpha = sum_k 1/alpha_k`` (the evidence depends on them only through that)."""
    parallel = np.abs(gram) >= 1.0 - PARALLEL_TOL
    m = alpha.size
    keep = np.ones(m, dtype=bool)
    variance = 1.0 / np.asarray(alpha, dtype=float)
    merged = variance.copy()
    for i in np.flatnonzero(parallel.sum(axis=1) > 1):  # the columns with a twin
        if keep[i]:
            group = np.flatnonzero(parallel[i] & keep)  # i first: every earlier one is merged
            merged[i] = variance[group].sum()
            keep[group[1:]] = False
    return keep, 1.0 / merged[keep]
