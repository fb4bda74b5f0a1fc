"""Joint maximisation of the linearised (IRLS) evidence over all active precisions."""

from __future__ import annotations

import numpy as np

from rvm_pymc._core.gaussian import spd_inverse, spd_solve
from rvm_pymc._core.sparsity import leaving_active
from rvm_pymc.reference._laplace import diagonal_view

__all__ = [
    "linearised_evidence",
    "linearised_gradient_hessian",
    "maximise_linearised",
]

_LOG_ALPHA_CAP = np.log(1e12)  # on unit-norm columns; the basis is then all but pruned


def linearised_evidence(H_lik, b, u, c):
    """Alpha-dependent part of the linearised log evidence, with Sigma and mu.

    ``L(u) = 1/2 [c sum(u) - log|H_lik + A| + b^T (H_lik + A)^-1 b]``, ``A = diag(exp(u))``.
    """
    H = H_lik.copy()
    if c == 1:
        H.flat[:: H.shape[0] + 1] += np.exp(u)
    else:
        diagonal_view(H).reshape(c, -1)[...] += np.exp(u)
    Sigma, logdet = spd_inverse(H, "linearised posterior precision")
    mu = Sigma @ b
    return 0.5 * (c * float(u.sum()) - logdet + float(b @ mu)), Sigma, mu


def linearised_gradient_hessian(Sigma, mu, u, c):
    """Gradient and Hessian of :func:`linearised_evidence` in ``u = log alpha``.

    With ``t_m = tr(Sigma_mm)``, ``r_m = ||mu_m||^2`` (the ``c`` weights of basis ``m``):

    .. math::

        g_m = \\tfrac12 [c - \\alpha_m (t_m + r_m)], \\qquad
        H_{mn} = -\\tfrac12 \\delta_{mn} \\alpha_m (t_m + r_m)
            + \\tfrac12 \\alpha_m \\alpha_n \\big(\\|\\Sigma_{mn}\\|_F^2
            + 2 \\mu_m^\\top \\Sigma_{mn} \\mu_n\\big).
    """
    ma = u.size
    alpha = np.exp(u)
    if c == 1:  # the same sums with one class, without the 4-index einsums
        d = alpha * (Sigma.diagonal() + mu * mu)
        H = Sigma * (Sigma + 2.0 * (mu[:, None] * mu))
        H *= 0.5 * alpha[:, None] * alpha
        H.flat[:: ma + 1] -= 0.5 * d
        return 0.5 * (c - d), H
    S4 = Sigma.reshape(c, ma, c, ma)
    M = mu.reshape(c, ma)
    tr = np.einsum("kmkm->m", S4)
    r = np.sum(M**2, axis=0)
    F = np.einsum("kmln,kmln->mn", S4, S4) + 2.0 * np.einsum("km,kmln,ln->mn", M, S4, M)
    g = 0.5 * (c - alpha * (tr + r))
    H = 0.5 * alpha[:, None] * alpha[None, :] * F
    diagonal_view(H)[...] -= 0.5 * alpha * (tr + r)
    return g, H


def _cap_leaving(H_lik, b, u, c, out, L, Sigma, mu):
    """Move the ``out`` bases to ``_LOG_ALPHA_CAP`` together, else the largest alone, unless
    that lowers the objective.
    """
    floor = L - 1e-12 * (1.0 + abs(L))
    trials = [out]
    if np.count_nonzero(out) > 1:
        trials.append(np.arange(u.size) == np.argmax(np.where(out, u, -np.inf)))
    for trial in trials:
        u_try = np.where(trial, _LOG_ALPHA_CAP, u)
        L_try, Sigma_try, mu_try = linearised_evidence(H_lik, b, u_try, c)
        if L_try >= floor:
            return trial, u_try, L_try, Sigma_try, mu_try
    return np.zeros_like(out), u, L, Sigma, mu


def maximise_linearised(H_lik, b, alpha, c, tol, max_iter=50):
    """Maximise :func:`linearised_evidence` over all active ``log alpha`` by Newton's method.

    Leaving bases go to ``_LOG_ALPHA_CAP`` (:func:`_cap_leaving`); the Hessian is
    made negative definite, steps are limited to 2 and halved until the objective
    does not decrease; stops when every step is below ``tol``.
    """
    u0 = u = np.log(alpha)
    ma = u.size
    L, Sigma, mu = linearised_evidence(H_lik, b, u, c)
    rising = np.ones(ma, dtype=bool)
    for _ in range(max_iter):
        free = u < _LOG_ALPHA_CAP
        if (free & rising).any():  # only a basis whose alpha grows can be on its way out
            out = free & leaving_active(np.exp(u), mu.reshape(c, ma).T, Sigma)
            if out.any() and np.count_nonzero(free & ~out) >= 1:
                out, u, L, Sigma, mu = _cap_leaving(H_lik, b, u, c, out, L, Sigma, mu)
                free &= ~out
        g, H = linearised_gradient_hessian(Sigma, mu, u, c)
        f = slice(None) if free.all() else np.flatnonzero(free)
        neg_H = -H if isinstance(f, slice) else -H[np.ix_(f, f)]
        step = np.zeros(ma)
        try:  # -H is positive definite near a maximum
            step[f] = spd_solve(neg_H, g[f])
        except np.linalg.LinAlgError:
            # -H is indefinite away from the maximum (the objective is not concave
            # there): modified Newton (Nocedal & Wright 3.4), |eigenvalues| bounded
            # away from zero, gives an ascent direction for the line search below.
            lam, V = np.linalg.eigh(neg_H)
            lam = np.maximum(np.abs(lam), 1e-8 * max(1.0, float(np.max(np.abs(lam)))))
            step[f] = V @ ((V.T @ g[f]) / lam)
        big = np.abs(step).max(initial=0.0)
        if big > 2.0:
            step *= 2.0 / big
        eta = 1.0
        while True:
            u_new = np.minimum(u + eta * step, _LOG_ALPHA_CAP)
            try:
                L_new, Sigma_new, mu_new = linearised_evidence(H_lik, b, u_new, c)
            except np.linalg.LinAlgError:
                L_new = -np.inf
            if L_new >= L - 1e-12 * (1.0 + abs(L)) or eta < 1e-6:
                break
            eta *= 0.5
        if L_new < L - 1e-12 * (1.0 + abs(L)):
            break
        # inexact: the linearisation itself is only accurate to about the size of the move
        moved = np.abs(u_new - u0).max(initial=0.0)
        done = np.abs(u_new - u).max(initial=0.0) < max(tol, 1e-3 * moved)
        rising = u_new - u > 0.5
        u, L, Sigma, mu = u_new, L_new, Sigma_new, mu_new
        if done:
            break
    return np.exp(u)
