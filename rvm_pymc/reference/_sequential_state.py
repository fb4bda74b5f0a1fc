r"""State of the sequential (Tipping & Faul) algorithm: active set, posterior, statistics.

``S_m = phi_m^T C^-1 phi_m`` and ``Q_m = phi_m^T C^-1 t`` of every unit-norm column, by
rank-one updates (cheap, but cancelling for smooth kernels) or exactly
(:meth:`SequentialState.exact_statistics`).  Basis ``m`` contributes
``ell_m(alpha) = 1/2 [-log(1 + s_m/alpha) + q_m^2/(alpha + s_m)]``, maximal at
``alpha = s^2/(q^2 - s)`` when ``q^2 > s``, else at ``alpha = inf``.  Also the joint
move of both fast solvers (:func:`maximise_linearised`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from rvm_pymc._core.ard import mackay_beta
from rvm_pymc._core.evidence import log_beta_prior
from rvm_pymc._core.gaussian import (
    LOG_2PI,
    factor_inverse,
    factor_logdet,
    factor_solve,
    regression_factor,
    spd_inverse,
    spd_solve,
)
from rvm_pymc._core.rowqr import column_triangle, triangle_without
from rvm_pymc._core.sparsity import active_sq, ell, gain_rounding, leaving_active
from rvm_pymc.reference._laplace import diagonal_view

__all__ = [
    "ActiveRows",
    "Candidate",
    "Factor",
    "SequentialState",
    "factorise_active",
    "linearised_evidence",
    "linearised_gradient_hessian",
    "maximise_linearised",
]


class Factor(NamedTuple):
    """A fresh factorisation of ``A + beta Phi_A^T Phi_A`` and what follows from it."""

    L: np.ndarray
    p: np.ndarray
    mu: np.ndarray
    resid: np.ndarray
    lml: float
    cond: float
    rounding: float
    rss: float


def factorise_active(
    Gaa, PhiT_t_a, Pa, t, alpha, beta, n: int, rss_offset: float, tt: float, triangle=None
) -> Factor | None:
    """Factor, mean, residual and log evidence of the active system ``(Gaa, Pa, alpha, beta)``.

    ``n``, ``rss_offset``, ``tt``: data count, residual offset and ``||t||^2`` of a
    row compression; ``triangle`` the QR route's rows.  The rounding of the
    evidence is eps times its terms (residual, ``M eps cond(H)`` of the log
    determinant).  None when not positive definite.
    """
    try:
        f = regression_factor(
            Pa,
            t,
            alpha,
            beta,
            gram=Gaa,
            PhiT_t=PhiT_t_a,
            triangle=triangle,
            what="posterior precision (fast RVM)",
        )
    except np.linalg.LinAlgError:
        return None
    L, p, mu, cond = f.L, f.p, f.mean, f.cond
    fit = Pa @ mu
    resid = t - fit
    rss = float(resid @ resid) + rss_offset
    terms = np.array(
        [
            n * LOG_2PI,
            factor_logdet(L, p),
            -float(np.sum(np.log(alpha))),
            -n * np.log(beta),
            beta * rss,
            float(np.sum(alpha * mu**2)),
        ]
    )
    lml = -0.5 * float(terms.sum())
    resid_err = 2.0 * beta * np.sqrt(rss) * (np.sqrt(tt) + math.sqrt(float(fit @ fit)))
    logdet_err = L.shape[0] * (np.sqrt(cond) if f.qr else cond)
    rounding = np.finfo(float).eps * (float(np.abs(terms).sum()) + resid_err + logdet_err)
    return Factor(L, p, mu, resid, lml, cond, rounding, rss)


class ActiveRows:
    """The QR route's rows of the active sets, kept for the current set and the last asked."""

    def __init__(self, t: np.ndarray) -> None:
        self.t = t
        self.kept: dict[tuple, np.ndarray] = {}  # active set -> its rows

    def getter(
        self, key: tuple, columns: np.ndarray, current: tuple, drop: int | None = None
    ) -> Callable[[], np.ndarray]:
        """A callable returning the rows of set ``key`` (``drop``: ``current`` without it)."""

        def rows() -> np.ndarray:
            T = self.kept.get(key)
            if T is None:
                parent = None if drop is None else self.kept.get(current)
                if parent is not None:
                    T = triangle_without(parent, drop)
                else:
                    T = column_triangle(columns, self.t)
                self.kept = {k: v for k, v in self.kept.items() if k == current}
                self.kept[key] = T
            return T

        return rows


#: Entries per N x block temporary of the exact statistics (8 MB of float64).
_BLOCK_ENTRIES = 2**20


class Candidate(NamedTuple):
    """The best move of one basis from its exact statistics."""

    gain: float  # change in log evidence (-inf: not allowed)
    alpha: float  # its new precision (inf: leave or stay out)
    relevant: bool  # q^2 > s
    S: float
    Q: float
    rounding: float  # of the gain (gain_rounding)


class SequentialState:
    """Active set, posterior and candidate statistics of the sequential algorithm.

    ``Phin / scale`` are the unit-norm columns (read as needed); ``usable`` the
    columns that may enter; ``beta`` the initial noise precision, bounded by
    ``beta_max``; ``n``, ``rss_offset`` the number of data points and remainder
    when ``Phin``, ``t`` are a row compression (:class:`~rvm_pymc._core.rowqr.RowQR`).
    """

    def __init__(
        self, Phin, t, usable, beta, scale=None, beta_max: float = np.inf, n=None, rss_offset=0.0
    ):
        self.Phin, self.t = Phin, t
        self.rows, self.m = Phin.shape
        self.n = self.rows if n is None else int(n)
        self.rss_offset = float(rss_offset)
        self.scale = None if scale is None else np.asarray(scale, dtype=float)
        self.usable, self.all_usable = usable, bool(usable.all())
        self.PhiT_t = self._unscale(Phin.T @ t)
        self.diag = usable.astype(float)  # ||phi_m||^2 after normalisation
        self.tt = float(t @ t) + self.rss_offset
        self.beta, self.beta_max = beta, beta_max
        self.active: list[int] = []
        self.alpha = np.empty(0)
        self.G = np.empty((self.m, 0))  # Phi^T Phi_active, (M, M_active)
        self.Sigma, self.mu = np.empty((0, 0)), np.empty(0)
        self.S, self.Q = np.zeros(self.m), np.zeros(self.m)
        self.rss, self.lml, self.lml_rounding = np.nan, -np.inf, 0.0
        self.fresh: Factor | None = None  # the factor of the current state, if computed
        # S, Q of the current state: 0 rank-one updated, 1 re-solved, 2 confirmed (resolve)
        self.freshness = 0
        self._pa_cache: tuple = ((), None)
        self._rows = ActiveRows(t)  # rows of active sets, for the QR route
        self._addable_cache: tuple = (None, None)

    def _unscale(self, v):
        """``v`` (M,) or (M, k) with row ``m`` divided by ``scale[m]``."""
        if self.scale is None:
            return v
        return v / (self.scale if v.ndim == 1 else self.scale[:, None])

    def columns(self, idx):
        """Unit-norm column(s) ``idx`` (an int or an index array): (N,) or (N, len(idx))."""
        c = self.Phin[:, idx]
        return c if self.scale is None else c / self.scale[idx]

    def active_columns(self):
        """Unit-norm active columns ``Phi_A`` (N, M_active), kept while the set is unchanged."""
        key = tuple(self.active)
        if self._pa_cache[1] is None or self._pa_cache[0] != key:
            self._pa_cache = (key, self.columns(np.asarray(self.active)))
        return self._pa_cache[1]

    def gram_column(self, j):
        """``Phin^T phin_j`` of unit-norm column(s) ``j``, zero at unusable columns (O(N M))."""
        g = self._unscale(self.Phin.T @ self.columns(j))
        if not self.all_usable:
            g[~self.usable] = 0.0
        return g

    @property
    def _w_active(self) -> np.ndarray:
        """Posterior mean (mode) of the active weights."""
        return self.mu

    def start(self, j, alpha) -> None:
        """Make basis ``j`` (or bases ``j``) at ``alpha`` the model; LinAlgError if singular."""
        idx = np.atleast_1d(np.asarray(j, dtype=np.intp))
        self.active = [int(i) for i in idx]
        self.alpha = np.atleast_1d(np.asarray(alpha, dtype=float)).copy()
        self.G = self.gram_column(idx)  # (M, k)
        self.fresh, self.freshness = None, 0
        self.resolve()

    def factorise(self, alpha=None, beta=None) -> Factor | None:
        """Factor of the active system at ``alpha``, ``beta`` (default the state's) or None."""
        alpha = self.alpha if alpha is None else alpha
        beta = self.beta if beta is None else beta
        idx = np.asarray(self.active)
        return self._factorise(idx, self.G[idx, :], self.active_columns(), alpha, beta)

    def factorise_move(self, j: int, alpha_j: float, g: np.ndarray | None = None):
        """Factor after moving basis ``j`` to ``alpha_j`` (inf: delete); None if singular."""
        drop = None
        if j not in self.active:  # addition
            idx = np.append(np.asarray(self.active, dtype=int), j)
            Gaa = np.column_stack([self.G[idx], g[idx]])
            Pa = np.column_stack([self.active_columns(), self.columns(j)])
            alpha = np.append(self.alpha, alpha_j)
        elif np.isfinite(alpha_j):  # re-estimation
            alpha = self.alpha.copy()
            alpha[self.active.index(j)] = alpha_j
            return self.factorise(alpha=alpha)
        else:  # deletion
            drop = self.active.index(j)
            keep = np.arange(len(self.active)) != drop
            idx = np.asarray(self.active)[keep]
            Gaa, Pa = self.G[np.ix_(idx, keep)], self.active_columns()[:, keep]
            alpha = self.alpha[keep]
        return self._factorise(idx, Gaa, Pa, alpha, self.beta, drop=drop)

    def _factorise(self, idx, Gaa, Pa, alpha, beta, drop=None) -> Factor | None:
        """:func:`factorise_active` of ``(Gaa, Pa, alpha, beta)`` on the active set ``idx``."""
        rows = self._rows.getter(tuple(idx.tolist()), Pa, tuple(self.active), drop)
        return factorise_active(
            Gaa, self.PhiT_t[idx], Pa, self.t, alpha, beta, self.n, self.rss_offset, self.tt, rows
        )

    def factor(self) -> Factor:
        """The fresh factor of the current state, computed if need be; raises if singular."""
        if self.fresh is None:
            self.fresh = self.factorise()
            if self.fresh is None:
                raise np.linalg.LinAlgError(
                    "Cholesky factorisation of the posterior precision (fast RVM) failed "
                    "(matrix not positive definite to working precision)"
                )
        return self.fresh

    def commit(self, alpha=None, beta=None, fresh: Factor | None = None) -> None:
        """Set new precisions (and the factor computed for them), then :meth:`resolve`."""
        if alpha is not None:
            self.alpha = np.asarray(alpha, dtype=float).copy()
        if beta is not None:
            self.beta = float(beta)
        self.fresh = fresh
        self.resolve()

    def update_noise(self, prior) -> float:
        """MacKay's update of beta, halved in ``log beta`` until the objective does not fall.

        Returns ``|d log beta|`` accepted (``inf``: none).
        """

        def objective(lml: float, beta: float) -> float:
            return lml + log_beta_prior(beta, prior)

        f = self.factor()  # rss and gamma from the fresh factor of this state
        self.lml, self.rss = f.lml, f.rss
        old_obj = objective(f.lml, self.beta)
        gamma = 1.0 - self.alpha * factor_inverse(f.L, f.p).diagonal()
        beta_new = mackay_beta(self.n, float(np.sum(gamma)), self.rss, prior, self.beta_max)
        step = np.log(beta_new) - np.log(self.beta)
        if step == 0.0:
            return 0.0
        log_beta0 = np.log(self.beta)
        for _ in range(40):
            beta = float(np.exp(log_beta0 + step))
            trial = self.factorise(beta=beta)  # the evidence alone; S, Q for the accepted step
            if trial is not None and objective(trial.lml, beta) >= old_obj - f.rounding:
                self.commit(beta=beta, fresh=trial)
                return abs(step)
            step *= 0.5
        return np.inf  # no acceptable step: never read as 'beta has settled'

    def resolve(self, confirm: bool = False) -> None:
        """Recompute Sigma, mu, S, Q and the log evidence from the fresh factor.

        With ``confirm`` also exactly (:meth:`exact_statistics`) wherever the
        rank-one form is within its own rounding (``eps cond(H)`` relative).
        """
        f = self.factor()
        self.Sigma = factor_inverse(f.L, f.p)
        self.mu = f.mu
        self.rss = f.rss
        self.lml, self.lml_rounding = f.lml, f.rounding
        b, G = self.beta, self.G
        # S = beta diag - beta^2 rowsum((G Sigma) * G), Q = beta (Phi^T t - G mu)
        self.S = b * self.diag - (b * b) * np.einsum("ij,ij->i", G @ self.Sigma, G)
        self.Q = b * (self.PhiT_t - G @ f.mu)
        self.freshness = 1
        if confirm:
            eps_k = np.finfo(float).eps * (1.0 + f.cond)
            err_S = eps_k * b * self.diag
            err_Q = eps_k * b * (np.abs(self.PhiT_t) + np.abs(G) @ np.abs(f.mu))
            bad = np.flatnonzero(self.usable & ((self.S <= err_S) | (np.abs(self.Q) <= err_Q)))
            if bad.size:
                self.S[bad], self.Q[bad] = self.exact_statistics(bad)
            self.freshness = 2

    def exact_statistics(self, cols) -> tuple[np.ndarray, np.ndarray]:
        """``S_m, Q_m`` of columns ``cols`` without cancellation (zero at unusable columns).

        ``S_m = beta ||phi_m - Phi_A u_m||^2 + u_m^T A u_m``, ``u_m = beta H^-1 Phi_A^T phi_m``.
        """
        f = self.factor()
        cols = np.atleast_1d(np.asarray(cols))
        Pa, b = self.active_columns(), self.beta
        U = factor_solve(f.L, f.p, b * self.G[cols, :].T)  # (M_active, len(cols))
        S, Q = np.empty(cols.size), np.empty(cols.size)
        block = max(1, _BLOCK_ENTRIES // self.rows)
        for k in range(0, cols.size, block):
            sl = slice(k, k + block)
            C, Us = self.columns(cols[sl]), U[:, sl]
            R = C - Pa @ Us
            S[sl] = b * np.einsum("ij,ij->j", R, R) + np.einsum(
                "ij,ij->j", self.alpha[:, None] * Us, Us
            )
            Q[sl] = b * (C.T @ f.resid)
        if not self.all_usable:
            bad = ~self.usable[cols]
            S[bad], Q[bad] = 0.0, 0.0
        return S, Q

    def exact_candidate(self, j: int) -> Candidate:
        """Best move of basis ``j`` from its exact statistics."""
        f = self.factor()
        S, Q = (float(v[0]) for v in self.exact_statistics([j]))
        if j in self.active:
            i = self.active.index(j)
            sig = factor_solve(f.L, f.p, np.eye(len(self.active))[i])[i]
            a = self.alpha[i]
            s, q = (float(v) for v in active_sq(a, S, Q, sig, f.mu[i]))
        else:
            a, s, q = np.inf, S, Q
        q2 = q * q
        relevant = q2 > s
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            new = s * s / (q2 - s) if relevant else np.inf
            old = 0.0 if not np.isfinite(a) else float(ell(a, s, q2))
            gain = (float(ell(new, s, q2)) if relevant else 0.0) - old
        if j in self.active and len(self.active) == 1 and not relevant:
            gain = -np.inf  # never delete the last basis
        rounding = float(gain_rounding(a, new, s, q2))
        return Candidate(
            gain if np.isfinite(gain) else -np.inf, new, bool(relevant), S, Q, rounding
        )

    def add(self, j: int, alpha_j: float, S_j=None, Q_j=None, g=None) -> None:
        """Add basis ``j`` at ``alpha_j`` with its exact ``S_j``, ``Q_j`` (Gram column ``g``)."""
        if S_j is not None:
            self.S, self.Q = self.S.copy(), self.Q.copy()
            self.S[j], self.Q[j] = S_j, Q_j
        self.fresh, self.freshness = None, 0
        g = self.gram_column(j) if g is None else g
        BG = self.beta * self.G
        sig_jj = 1.0 / (alpha_j + self.S[j])
        mu_j = sig_jj * self.Q[j]
        # Sigma Phi_a^T phi_j beta, and Phi^T e_j with e_j = phi_j - beta Phi_a Sigma Phi_a^T phi_j
        u = self.beta * (self.Sigma @ self.G[j, :])
        e = self.beta * g - BG @ u
        k = u.size
        self.Sigma, Sigma = np.empty((k + 1, k + 1)), self.Sigma
        self.Sigma[:k, :k] = Sigma + sig_jj * np.outer(u, u)
        self.Sigma[:k, k] = self.Sigma[k, :k] = -sig_jj * u
        self.Sigma[k, k] = sig_jj
        self.mu = np.append(self.mu - mu_j * u, mu_j)
        self.S = self.S - sig_jj * e**2
        self.Q = self.Q - mu_j * e
        self.G = np.column_stack([self.G, g])
        self.active.append(j)
        self.alpha = np.append(self.alpha, alpha_j)

    def reestimate(self, i: int, alpha_new: float) -> None:
        """Move the precision of active basis ``i`` (position in ``active``) to ``alpha_new``."""
        self.fresh, self.freshness = None, 0
        s_i = self.Sigma[:, i].copy()
        kappa = 1.0 / (self.Sigma[i, i] + 1.0 / (alpha_new - self.alpha[i]))
        mu_i = self.mu[i]
        x = self.beta * (self.G @ s_i)
        self.Sigma = self.Sigma - kappa * np.outer(s_i, s_i)
        self.mu = self.mu - kappa * mu_i * s_i
        self.S = self.S + kappa * x**2
        self.Q = self.Q + kappa * mu_i * x
        self.alpha = self.alpha.copy()
        self.alpha[i] = alpha_new

    def delete(self, i: int) -> None:
        """Remove active basis ``i`` (position in ``active``)."""
        self.fresh, self.freshness = None, 0
        s_i = self.Sigma[:, i].copy()
        sii = s_i[i]
        mu_i = self.mu[i]
        x = self.beta * (self.G @ s_i)
        Sigma = self.Sigma - np.outer(s_i, s_i) / sii
        mu = self.mu - (mu_i / sii) * s_i
        self.S = self.S + x**2 / sii
        self.Q = self.Q + (mu_i / sii) * x
        keep = np.arange(len(self.active)) != i
        self.Sigma = Sigma[np.ix_(keep, keep)]
        self.mu = mu[keep]
        self.G = self.G[:, keep]
        self.alpha = self.alpha[keep]
        self.active = [a for k, a in enumerate(self.active) if k != i]

    def _addable(self, align_tol):
        """``(in_model, addable)`` masks: addable is usable, out and not parallel to one in."""
        key = (tuple(self.active), align_tol)
        if self._addable_cache[0] == key:
            return self._addable_cache[1]
        in_model = np.zeros(self.m, dtype=bool)
        in_model[np.asarray(self.active, dtype=int)] = True
        addable = self.usable & ~in_model
        if align_tol > 0 and self.active:
            addable &= np.abs(self.G).max(axis=1) <= 1.0 - align_tol
        self._addable_cache = (key, (in_model, addable))
        return in_model, addable

    def candidates(self, align_tol):
        """Best move of every basis: (delta log evidence, new alpha) arrays of length M."""
        idx = np.asarray(self.active)
        a = self.alpha
        s_a, q_a = active_sq(a, self.S[idx], self.Q[idx], self.Sigma.diagonal(), self._w_active)
        s = self.S.copy()
        s[idx] = s_a
        q2 = self.Q * self.Q
        q2_a = q_a * q_a
        q2[idx] = q2_a
        theta = q2 - s
        # relevant: q^2 > s and s > 0: at s = 0 (clipped rounding, uninformed weight) the
        # best precision would be 0 with a NaN gain; such a basis leaves
        relevant = (theta > 0) & (s > 0)
        new_alpha = np.where(relevant, s * s / theta, np.inf)
        in_model, addable = self._addable(align_tol)
        best = ell(new_alpha, s, q2)  # at its best precision; 0 out of the model (alpha = inf)
        # additions (skip unusable and nearly parallel candidates)
        delta = np.where(relevant & addable, best, -np.inf)
        # re-estimation and deletion of active bases
        d_act = best[idx] - ell(a, s_a, q2_a)
        if idx.size == 1 and not relevant[idx[0]]:  # never delete the last basis
            d_act[0] = -np.inf
        delta[idx] = d_act
        return delta, new_alpha, in_model, relevant


_LOG_ALPHA_CAP = np.log(1e12)  # on unit-norm columns; the basis is then all but pruned


def linearised_evidence(H_lik, b, u, c):
    """Alpha-dependent part of the linearised log evidence, with Sigma and mu.

    ``L(u) = 1/2 [c sum(u) - log|H_lik + A| + b^T (H_lik + A)^-1 b]``, ``A = diag(exp(u))``.
    """
    H = H_lik.copy()
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
    """Move the ``out`` bases to the cap together, else the largest alone, if L does not fall."""
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
            # -H indefinite away from the maximum: modified Newton (Nocedal & Wright 3.4),
            # |eigenvalues| bounded away from zero, gives an ascent direction.
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
