r"""RVM*: the predictive of a linear-Gaussian RVM augmented at each test point.

Rasmussen & Quinonero-Candela (2005): for each test input ``x*`` one more
basis ``phi*(x) = k(x, x*)`` with weight ``w* ~ N(0, v*)`` is integrated out
with the fitted weights, a rank-one update of ``N(mu, Sigma)``.  With
``r = t - Phi mu``, ``p = phi(x*)``, ``kappa = k(x*, x*)``, ``u = Phi^T phi*``:

.. math::

    S_* = \\beta\\,\\phi_*^\\top\\phi_* - \\beta^2 u^\\top \\Sigma u, \\quad
    Q_* = \\beta\\,\\phi_*^\\top r, \\quad g = \\kappa - \\beta\\, p^\\top \\Sigma u,

    m_* = p^\\top \\mu + g \\frac{v_* Q_*}{1 + v_* S_*}, \\qquad
    s^2_* = p^\\top \\Sigma p + \\frac{v_* g^2}{1 + v_* S_*}.

The prior ``v* = sigma_f^2 / kappa^2``, ``sigma_f^2 = max(var(t) - 1/beta, 0)``, makes the
predictive variance far from the data tend to about ``var(t)``.
"""

from __future__ import annotations

import numpy as np

__all__ = ["augmented_predictive", "rvm_star_prior_var", "signal_variance"]


def signal_variance(target_var: float, noise_var: float) -> float:
    """``sigma_f^2 = max(var(t) - 1/beta, 0)``.

    Examples
    --------
    >>> signal_variance(1.0, 0.25), signal_variance(0.1, 0.2)
    (0.75, 0.0)
    """
    return max(float(target_var) - float(noise_var), 0.0)


def rvm_star_prior_var(signal_var: float, k_self: np.ndarray) -> np.ndarray:
    """Prior variance ``v* = sigma_f^2 / k(x*, x*)^2`` of each new weight (0 where ``k = 0``).

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

    Examples
    --------
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
