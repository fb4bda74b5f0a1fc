"""RVM*: the predictive of a linear-Gaussian RVM augmented at each test point.

Rasmussen & Quinonero-Candela (2005) observed that the predictive variance of
an RVM shrinks away from the data: every basis is centred on a training input,
so far from all of them ``phi(x*) -> 0`` and the variance falls to the noise
alone.  RVM* adds, for each test input ``x*`` and for it only, one more basis
``phi*(x) = k(x, x*)`` centred on ``x*``, with a weight ``w* ~ N(0, v*)``
(``v* = 1/alpha*``) integrated out analytically together with the fitted
weights.  The augmented model's posterior differs from the fitted one by one
row and column of the precision, so its predictive at ``x*`` is a rank-one
(Schur complement) update of the fitted posterior ``N(mu, Sigma)``; nothing of
size ``n_test x n_test`` is formed.

The update
----------
With ``Phi`` (N x M) the active training design, ``r = t - Phi mu`` the
training residuals (targets centred as the fit saw them), ``beta`` the noise
precision, ``p = phi(x*)`` (M) the active bases at ``x*``, ``kappa = phi*(x*) =
k(x*, x*)`` and ``u = Phi^T phi*`` (``phi*`` evaluated at the N training
inputs), the quantities of Tipping & Faul (2003) for the new basis are

.. math::

    S_* = \\beta\\,\\phi_*^\\top\\phi_* - \\beta^2 u^\\top \\Sigma u, \\qquad
    Q_* = \\beta\\,\\phi_*^\\top r, \\qquad
    g = \\kappa - \\beta\\, p^\\top \\Sigma u,

and the augmented posterior predictive of the latent function at ``x*`` is

.. math::

    m_* = p^\\top \\mu + g \\frac{v_* Q_*}{1 + v_* S_*}, \\qquad
    s^2_* = p^\\top \\Sigma p + \\frac{v_* g^2}{1 + v_* S_*}

(``v_* Q_* / (1 + v_* S_*)`` is the posterior mean of ``w*``).  With
``v* = 0`` both reduce to the plain RVM; the mean changes too in general,
towards the training residuals near ``x*``.  Far from the data ``phi* -> 0``,
so ``S_*, Q_* -> 0``, ``g -> kappa`` and ``s^2_* -> p^T Sigma p + v* kappa^2``.

The prior of the new weight
---------------------------
The new weight cannot take the evidence prior of the other weights: that
prior is improper (``alpha -> 0``), and setting ``alpha*`` by the evidence of
the augmented model gives ``alpha* = inf`` wherever ``Q_*^2 <= S_*``, which
is everywhere far from the data, exactly where the healing is needed.  RVM*
instead gives it the prior of a non-degenerate Gaussian process: its
contribution to the prior variance of the latent function at ``x*`` is set to
``sigma_f^2``, the signal variance of the GP with covariance
``sigma_f^2 k(x, x') / k(x*, x*)`` at ``x*``, i.e.

.. math::

    v_* = 1/\\alpha_* = \\sigma_f^2 / \\kappa^2, \\qquad
    \\sigma_f^2 = \\max(\\operatorname{var}(t) - \\beta^{-1},\\ 0),

with ``var(t)`` the variance of the training targets: the part of the targets'
variance the fit does not attribute to noise (the usual GP moment estimate of
the signal variance).  Far from the data the predictive variance, noise
included, then tends to ``p^T Sigma p + sigma_f^2 + 1/beta``, about
``var(t)``: the prior variance plus the noise, not the noise alone.  For the
unit-amplitude kernels of the package (``rbf``, ``laplacian``, ...) ``kappa =
1`` and ``v* = sigma_f^2``.  A fit that attributes all the targets' variance
to noise (``sigma_f^2 = 0``), or a point with ``kappa = 0``, gets ``v* = 0``:
the plain RVM predictive.  This choice is the package's; the paper's own
setting of ``alpha*`` could not be consulted when this was written.

References
----------
C. E. Rasmussen and J. Quinonero-Candela, "Healing the relevance vector
machine through augmentation", ICML 2005.
"""

from __future__ import annotations

import numpy as np

__all__ = ["augmented_predictive", "rvm_star_prior_var", "signal_variance"]


def signal_variance(target_var: float, noise_var: float) -> float:
    """``sigma_f^2 = max(var(t) - 1/beta, 0)``: the signal variance RVM* gives the new basis.

    Parameters
    ----------
    target_var : float
        Variance of the training targets.
    noise_var : float
        The fit's noise variance ``1/beta``.

    Returns
    -------
    float

    Examples
    --------
    >>> signal_variance(1.0, 0.25), signal_variance(0.1, 0.2)
    (0.75, 0.0)
    """
    return max(float(target_var) - float(noise_var), 0.0)


def rvm_star_prior_var(signal_var: float, k_self: np.ndarray) -> np.ndarray:
    """Prior variance ``v* = 1/alpha* = sigma_f^2 / k(x*, x*)^2`` of each new weight.

    Parameters
    ----------
    signal_var : float
        ``sigma_f^2`` (:func:`signal_variance`), >= 0.
    k_self : ndarray of shape (B,)
        ``k(x*, x*)`` at the test inputs.

    Returns
    -------
    ndarray of shape (B,)
        0 where ``k(x*, x*) == 0`` (the new basis vanishes at ``x*``).

    Examples
    --------
    >>> rvm_star_prior_var(0.5, np.array([1.0, 2.0, 0.0])).tolist()
    [0.5, 0.125, 0.0]
    """
    k = np.asarray(k_self, dtype=float)
    out = np.zeros_like(k)
    nz = k != 0
    out[nz] = float(signal_var) / k[nz] ** 2
    return out


def augmented_predictive(
    Phi_test: np.ndarray,
    K_cross: np.ndarray,
    k_self: np.ndarray,
    Phi: np.ndarray,
    resid: np.ndarray,
    mean: np.ndarray,
    cov: np.ndarray,
    beta: float,
    prior_var: np.ndarray | float,
) -> tuple[np.ndarray, np.ndarray]:
    """Latent predictive mean and variance of RVM* at a block of test inputs.

    Each test input is augmented on its own (the module docstring); the block
    is vectorised, with memory ``O((N + M) B)`` for ``B`` test inputs.

    Parameters
    ----------
    Phi_test : ndarray of shape (B, M)
        Active bases at the test inputs.
    K_cross : ndarray of shape (N, B)
        ``k(x_n, x*_b)``: the new basis of each test input at the training inputs.
    k_self : ndarray of shape (B,)
        ``k(x*_b, x*_b)``.
    Phi : ndarray of shape (N, M)
        Active training design (the units of ``mean`` and ``cov``).
    resid : ndarray of shape (N,)
        Training residuals ``t - Phi mean`` (targets as the fit saw them).
    mean, cov : ndarray of shape (M,), (M, M)
        The fitted Gaussian weight posterior.
    beta : float
        Noise precision.
    prior_var : float or ndarray of shape (B,)
        ``v* = 1/alpha*`` of each new weight (:func:`rvm_star_prior_var`), >= 0.

    Returns
    -------
    mean : ndarray of shape (B,)
        ``m_*``, without any target offset.
    var : ndarray of shape (B,)
        ``s^2_*``, the latent variance (add ``1/beta`` for the targets).

    Examples
    --------
    Far from the data (``K_cross = 0``) the variance gains ``v* k(x*, x*)^2``:

    >>> Phi = np.array([[1.0], [0.5]])
    >>> m, v = augmented_predictive(np.zeros((1, 1)), np.zeros((2, 1)), np.ones(1), Phi,
    ...                             np.zeros(2), np.zeros(1), np.eye(1), 1.0, 0.3)
    >>> m.tolist(), v.tolist()
    ([0.0], [0.3])
    """
    Phi_test = np.asarray(Phi_test, dtype=float)
    K_cross = np.asarray(K_cross, dtype=float)
    n, b = K_cross.shape
    m = Phi_test.shape[1]
    if Phi.shape != (n, m) or cov.shape != (m, m) or Phi_test.shape[0] != b:
        raise ValueError(
            f"shapes do not match: Phi_test {Phi_test.shape}, K_cross {K_cross.shape}, "
            f"Phi {Phi.shape}, cov {cov.shape}"
        )
    v = np.broadcast_to(np.asarray(prior_var, dtype=float), (b,))
    if np.any(~np.isfinite(v) | (v < 0)):
        raise ValueError("prior_var must be finite and >= 0")
    U = Phi.T @ K_cross  # (M, B)
    SU = cov @ U
    SP = cov @ Phi_test.T  # (M, B)
    base_mean = Phi_test @ mean
    base_var = np.maximum(np.einsum("mb,bm->b", SP, Phi_test), 0.0)
    # S_* >= 0 in exact arithmetic; clip the cancellation when phi* is in span(Phi)
    S = np.maximum(
        beta * np.einsum("nb,nb->b", K_cross, K_cross) - beta**2 * np.einsum("mb,mb->b", U, SU),
        0.0,
    )
    Q = beta * (resid @ K_cross)
    g = np.asarray(k_self, dtype=float) - beta * np.einsum("mb,mb->b", SP, U)
    denom = 1.0 + v * S
    return base_mean + g * v * Q / denom, base_var + v * g * g / denom
