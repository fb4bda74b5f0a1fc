"""Oracles in extended precision (``np.longdouble``) for ill-conditioned RVM systems.

With a smooth kernel the float64 dense formulas (an N x N covariance, or
``beta - beta^2 G^T Sigma G``) lose up to all their digits; these evaluate the
same quantities on the float64 inputs with a longer mantissa (64 bits on x86)
and in forms without cancellation.  Only small active sets are expected (the
factorisation is a Python loop).
"""

from __future__ import annotations

import numpy as np
import pytest

LD = np.longdouble

#: Skip marker for platforms whose long double is just float64.
needs_longdouble = pytest.mark.skipif(
    np.finfo(LD).eps >= np.finfo(float).eps, reason="long double is float64 here"
)


def _cholesky(H):
    n = H.shape[0]
    L = np.zeros_like(H)
    for j in range(n):
        L[j, j] = np.sqrt(H[j, j] - L[j, :j] @ L[j, :j])
        for i in range(j + 1, n):
            L[i, j] = (H[i, j] - L[i, :j] @ L[j, :j]) / L[j, j]
    return L


def _solve(L, B):
    """``(L L^T)^-1 B`` for a vector or a matrix ``B``."""
    n = L.shape[0]
    Y = np.zeros_like(B)
    for i in range(n):
        Y[i] = (B[i] - L[i, :i] @ Y[:i]) / L[i, i]
    X = np.zeros_like(B)
    for i in reversed(range(n)):
        X[i] = (Y[i] - L[i + 1 :, i] @ X[i + 1 :]) / L[i, i]
    return X


def _system(Pa, t, alpha, beta):
    P, T = np.asarray(Pa, LD), np.asarray(t, LD)
    a, b = np.asarray(alpha, LD), LD(beta)
    H = b * (P.T @ P) + np.diag(a)
    L = _cholesky(H)
    return P, T, a, b, L, _solve(L, b * (P.T @ T))


def _householder_r(Z, y):
    """``R`` of ``Z = Q R`` and ``Q^T y`` (first ``M`` entries), by Householder reflections."""
    Z, y = Z.copy(), y.copy()
    m = Z.shape[1]
    for k in range(m):
        x = Z[k:, k]
        v = x.copy()
        v[0] += np.copysign(np.sqrt(x @ x), x[0])
        v /= np.sqrt(v @ v)
        Z[k:, k:] -= 2 * np.outer(v, v @ Z[k:, k:])
        y[k:] -= 2 * v * (v @ y[k:])
    return Z[:m], y[:m]


def lml(Pa, t, alpha, beta) -> float:
    """``log N(t | 0, I/beta + Pa A^-1 Pa^T)`` in long double.

    By Householder QR of ``[sqrt(beta) Pa; A^1/2]`` (``R^T R = A + beta Pa^T Pa``),
    backward stable in ``Pa``: the log-determinant to about ``eps sqrt(cond)``
    even where the normal equations would lose ``eps cond``.
    """
    P, T = np.asarray(Pa, LD), np.asarray(t, LD)
    a, b = np.asarray(alpha, LD), LD(beta)
    n, m = P.shape
    Z = np.vstack([np.sqrt(b) * P, np.diag(np.sqrt(a))])
    R, z = _householder_r(Z, np.concatenate([np.sqrt(b) * T, np.zeros(m, LD)]))
    mu = np.zeros(m, LD)
    for i in reversed(range(m)):
        mu[i] = (z[i] - R[i, i + 1 :] @ mu[i + 1 :]) / R[i, i]
    r = T - P @ mu
    quad = b * (r @ r) + np.sum(a * mu * mu)
    logdet = 2 * np.sum(np.log(np.abs(np.diag(R)))) - np.sum(np.log(a)) - n * np.log(b)
    return float(-(n * np.log(2 * LD(np.pi)) + logdet + quad) / 2)


def sq(Phi, t, active, alpha, beta) -> tuple[np.ndarray, np.ndarray]:
    """``S_m = phi_m^T C^-1 phi_m``, ``Q_m = phi_m^T C^-1 t`` of every column, in long double.

    ``S_m = beta ||phi_m - Pa u_m||^2 + u_m^T A u_m`` with ``u_m = beta H^-1 Pa^T phi_m``
    and ``Q_m = beta phi_m^T (t - Pa mu)``: sums of non-negative terms and a
    product with the residual, no difference of large numbers.
    """
    P, T, a, b, L, mu = _system(Phi[:, active], t, alpha, beta)
    F = np.asarray(Phi, LD)
    U = _solve(L, b * (P.T @ F))
    R = F - P @ U
    S = b * np.sum(R * R, axis=0) + np.sum(a[:, None] * U * U, axis=0)
    Q = b * (F.T @ (T - P @ mu))
    return S.astype(float), Q.astype(float)
