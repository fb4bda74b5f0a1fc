"""The ARD precision updates of full re-estimation (MacKay, EM), with a slab.

One implementation for the regression and the Laplace (classification,
counts) solvers.  A weight's prior precision is ``pi_m = alpha_m + c_m``:
``c_m = 0`` without a slab, ``c_m = 1/s^2`` with ``HyperPrior(slab=s)`` (on
the solver's normalised columns ``c_m = 1 / (s^2 ||phi_m||^2)``).  The
objective of docs/design.md section 1 (the Gamma prior on the *log*
precision) is stationary in ``alpha_m`` where

.. math::

    \\frac{1}{2}\\Big[\\frac{K}{\\pi_m} - \\Sigma_m - w_m^2\\Big]
        + \\frac{a}{\\alpha_m} - b = 0,

``K`` the number of weights sharing ``alpha_m`` (one, or the classes of a
softmax model), ``Sigma_m`` and ``w_m^2`` the sums of their posterior
variances and squared means.  Both updates hold some posterior quantities at
their current values and solve

.. math::

    \\frac{g_m}{\\alpha_m + c_m} + \\frac{2a}{\\alpha_m} = D_m

for ``alpha_m >= 0``: MacKay ``g = K - pi Sigma_m`` (the ``gamma`` of the
weights, with ``pi`` in place of ``alpha``), ``D = w^2 + 2b``; EM (the
M-step in ``alpha`` of the expected complete-data log posterior) ``g = K``,
``D = w^2 + Sigma_m + 2b``.  Without a slab that is ``alpha = (g + 2a) / D``,
the updates of Tipping (2001); with one it is the non-negative root of
``D alpha^2 + (D c - g - 2a) alpha - 2 a c = 0``.  A fixed point of either
update is a stationary point of the objective, or ``alpha = 0`` where its
slope there is negative (possible only for ``a = 0``: the weight's prior is
then the slab alone).
"""

from __future__ import annotations

import numpy as np

from rvm_pymc.priors import HyperPrior

__all__ = ["PARALLEL_TOL", "merge_parallel", "reestimate_alpha", "slab_precision", "solve_alpha"]

PARALLEL_TOL = 1e-12
"""Unit-norm columns with ``1 - |cos| <= PARALLEL_TOL`` (an angle below 1.4e-6) are parallel
to rounding: :func:`merge_parallel` makes them one basis."""


def slab_precision(prior: HyperPrior, scale: np.ndarray) -> np.ndarray:
    """The slab's precision ``1 / (s^2 scale_m^2)`` of each normalised column (zeros without one).

    ``scale``: the norms of the columns as given (the weight of a normalised
    column is ``scale_m`` times that of the column as given).
    """
    scale = np.asarray(scale, dtype=float)
    if prior.slab is None:
        return np.zeros(scale.shape)
    return 1.0 / (prior.slab * scale) ** 2


def solve_alpha(g: np.ndarray, D: np.ndarray, a: float, c: np.ndarray) -> np.ndarray:
    """The root ``alpha >= 0`` of ``g / (alpha + c) + 2a / alpha = D`` (``inf``: none finite).

    Where ``c = 0`` this is ``(g + 2a) / D``, and a value that is not finite
    and positive is ``inf`` (the basis leaves the model, as without a slab).
    Where ``c > 0`` it is the non-negative root of the quadratic (0 when the
    slope of the objective at ``alpha = 0`` is not positive, ``a = 0`` only),
    and ``inf`` where ``D <= 0`` (the objective increases without bound).
    """
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


def merge_parallel(gram: np.ndarray, alpha: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One basis for every set of parallel columns, with the set's whole prior variance.

    For unit-norm columns ``phi_i = +-phi_j`` the marginal covariance of the
    regression targets, ``I / beta + sum_m phi_m phi_m^T / alpha_m`` (and the
    prior covariance of the latent function, ``Phi A^-1 Phi^T``, of the
    Laplace evidence) depends on ``alpha_i`` and ``alpha_j`` only through
    ``1/alpha_i + 1/alpha_j``: the evidence is flat along that sum, and the
    gradient of each precision vanishes on the same condition.  MacKay and
    EM started from all bases move such columns together and prune none (100
    copies of the 1-D linear kernel's column all stay relevant).  Keeping the
    first of each set with ``1/alpha = sum_k 1/alpha_k`` changes neither the
    evidence nor the predictive at the training inputs, and every stationary
    point of the merged problem is one of the full problem.  Only under a flat
    hyperprior without a slab: a Gamma prior on each precision, or a slab on
    each weight, makes the objective depend on how the sum is shared.

    Parameters
    ----------
    gram : ndarray of shape (M, M)
        Inner products of the unit-norm columns.
    alpha : ndarray of shape (M,)
        Their precisions, finite and positive.

    Returns
    -------
    keep : ndarray of bool, shape (M,)
        The first column of every set (a column parallel to none is kept).
    alpha : ndarray of shape (keep.sum(),)
        Their precisions: ``1 / sum(1 / alpha_k)`` over each set.
    """
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
    """MacKay's or EM's new precisions of the active bases (see the module docstring).

    Parameters
    ----------
    method : {"mackay", "em"}
    alpha, c : ndarray of shape (M,)
        Current precisions and the slab's precisions (normalised columns).
    sigma, w2 : ndarray of shape (M,)
        Per basis, the sums over its ``k`` weights of the posterior variances
        and of the squared posterior means (modes).
    k : int
        Weights per precision.
    a : float
        Shape of the Gamma prior on alpha.
    b : ndarray of shape (M,)
        Its rate on the normalised columns.

    Returns
    -------
    ndarray of shape (M,)
        In ``[0, inf]``; ``inf`` for a basis to prune.
    """
    if method == "mackay":
        return solve_alpha(k - (alpha + c) * sigma, w2 + 2 * b, a, c)
    return solve_alpha(k, w2 + sigma + 2 * b, a, c)
