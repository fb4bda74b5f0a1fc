r"""State of the fast classifier: the linearised (IRLS) problem at the current mode.

A Gaussian problem with precisions ``B_n`` (``y_n (1 - y_n)`` for two
classes) and targets ``t_hat = Phi W* + B^-1 (t - y)``, whose statistics are

.. math::

    S_m = \\phi_m^\\top B \\phi_m - \\phi_m^\\top B \\Phi_a \\Sigma \\Phi_a^\\top B \\phi_m,
    \\qquad Q_m = \\phi_m^\\top (t - y).

After every move the true mode is found again (:meth:`_LinearisedState.resolve`).
"""

from __future__ import annotations

import math

import numpy as np

from rvm_pymc._core.gaussian import spd_solve
from rvm_pymc._core.sparsity import active_sq, ell, ell_shared, maximise_shared, rotate
from rvm_pymc.reference._design_products import (
    in_background,
    scaled_rows,
    squared,
    transposed_products,
)
from rvm_pymc.reference._laplace import (
    COUNT_LIKELIHOODS,
    OneColumn,
    class_pairs,
    diagonal_view,
    find_mode,
    find_mode_one_column,
    pair_grams,
    pair_weights,
)
from rvm_pymc.reference._sequential_state import SequentialState

__all__ = ["initial_basis", "stationarity_residual"]

_MODE_TOL_LOOSE, _MODE_TOL_TIGHT = 1e-4, 1e-9


class _LinearisedState(SequentialState):
    """Sequential-algorithm state for classification (the contract of :class:`SequentialState`)."""

    def __init__(
        self,
        Phin: np.ndarray,
        T: np.ndarray,
        usable: np.ndarray,
        likelihood: str = "bernoulli",
        dispersion: float | None = None,
    ):
        self.Phin, self.T = Phin, T
        # "bernoulli" (softmax for K > 2), "poisson" or "negative_binomial" (of dispersion)
        self.likelihood = likelihood
        self.n, self.m = Phin.shape
        self.c = T.shape[1]
        self.usable = usable
        self.all_usable = bool(usable.all())
        # the likelihood of a one-column model (as find_mode chooses it), built once
        one = likelihood in COUNT_LIKELIHOODS or (self.c == 1 and np.all((T == 0.0) | (T == 1.0)))
        self.one_column = OneColumn(likelihood, T[:, 0], dispersion) if one else None
        self.Phin2 = squared(Phin)
        self.active: list[int] = []
        self.alpha = np.empty(0)
        self.G = np.empty((self.m, 0))
        self.W = np.empty((0, self.c))
        self.n_newton_failures = 0
        self.newton_skip, self.newton_backoff = 0, 1  # see _reestimate
        self.joint_history: list = []  # (active, log alpha, step) of joint moves
        self.mode_tol = _MODE_TOL_LOOSE  # Newton tolerance of the mode; see fast_classification
        self._addable_cache: tuple = (None, None)  # see SequentialState._addable
        self._columns_cache: tuple = ((), Phin[:, :0])  # see _active_columns
        # the memory order of a gather of columns (NumPy's: F for a C- or F-order design)
        self._columns_order = "F" if Phin[:2, [0, 0]].flags.f_contiguous else "C"

    @property
    def _w_active(self) -> np.ndarray:
        """Mode of the active weights (binary case: one column)."""
        return self.W[:, 0]

    def _cosines(self, j: int):
        """Handle on the cosines of basis ``j`` with every column (formed on a thread if large)."""

        def cosines() -> np.ndarray:
            g = self.Phin.T @ self.Phin[:, j]
            g[~self.usable] = 0.0
            return g

        return in_background(cosines, self.Phin.size)

    def _active_columns(self) -> np.ndarray:
        """``Phin[:, active]``, kept; updated by one column when possible (a gather is slow)."""
        key = tuple(self.active)
        last, Pa = self._columns_cache
        if key == last:
            return Pa
        if key[:-1] == last:
            Pa = np.concatenate([Pa, self.Phin[:, key[-1:]]], axis=1)
        elif len(key) == len(last) - 1 and key == tuple(b for b in last if b in key):
            Pa = Pa[:, [last.index(b) for b in key]]
        else:
            Pa = self.Phin[:, np.asarray(key, dtype=np.intp)]
        self._columns_cache = (key, np.asarray(Pa, order=self._columns_order))
        return self._columns_cache[1]

    def resolve(self, statistics: bool = True) -> None:
        """Re-find the mode; recompute Sigma and (``statistics``) the candidate S, Q."""
        Pa = self._active_columns()
        if self.one_column is not None:
            post = find_mode_one_column(Pa, self.one_column, self.alpha, self.W, self.mode_tol)
        else:
            post = find_mode(
                Pa, self.T, self.alpha, self.W, tol=self.mode_tol, likelihood=self.likelihood
            )
        self.n_newton_failures += not post.converged
        self.post = post
        self.W, self.Sigma, self.lml = post.mean, post.cov, post.log_evidence
        if statistics:
            self.statistics(Pa)

    def statistics(self, Pa: np.ndarray | None = None) -> None:
        """The candidate statistics S, Q (and the weighted Gram products) at the mode."""
        idx = np.asarray(self.active)
        if Pa is None:
            Pa = self._active_columns()
        Y, ma, c = self.post.probs, idx.size, self.c
        if c == 1:  # two classes or counts: one weighting, plain matrix products
            # B = diag(d): y (1 - y), the rates, or NB2's curvature; the score t - y
            # (NB2: its own)
            d, score = self.post.curvature, self.post.score
            if score is None:
                score = self.T[:, 0] - Y[:, 0]
            # Phi^T B Phi_a (M, ma), (Phi^2)^T d and Phi^T score: three reads of the
            # design, on worker threads when it is large
            Xm, Dg, self.Q = transposed_products(
                [(self.Phin, scaled_rows(d, Pa)), (self.Phin2, d), (self.Phin, score)]
            )
            self.S = Dg - np.einsum("ij,ij->i", Xm @ self.Sigma, Xm)
            self.H_lik = Xm[idx]
            self.Q_active = self.Q[idx][:, None]
            self.X = Xm[:, None, :]
            self.S_scale = Dg
            return
        # X[m, k, l * ma + j] = sum_n phi_nm B_n,kl phi_nj ; Dg[m, k, l] = phi_m^T B_kl phi_m
        # (the c (c + 1) / 2 distinct weightings in one product each)
        Wt = pair_weights(Y)  # (N, pairs)
        XP = pair_grams(self.Phin, Wt, Pa)
        DP, Q = transposed_products([(self.Phin2, Wt), (self.Phin, self.T - Y)])
        pair = class_pairs(c)[3]  # pair index of (k, l) and of (l, k)
        X = XP.take(pair, axis=1).reshape(self.m, c, c * ma)  # C order, as the products need
        Dg = DP.take(pair, axis=1)
        Z = (X.reshape(self.m * c, c * ma) @ self.Sigma).reshape(self.m, c, c * ma)
        S = Dg - Z @ np.transpose(X, (0, 2, 1))
        # Phi_a^T B Phi_a, class-major (c ma, c ma): the likelihood part of the Hessian
        self.H_lik = np.transpose(X[idx], (1, 0, 2)).reshape(c * ma, c * ma)
        self.Q_active = Q[idx]
        self.X = X
        self.S_scale = np.einsum("mkk->m", Dg)  # S = Dg - Z X^T: the size of its terms
        if c == 1:
            self.S, self.Q = S[:, 0, 0], Q[:, 0]
        else:
            self.S, self.Q = 0.5 * (S + np.transpose(S, (0, 2, 1))), Q

    # -- moves: change the model, then re-find the mode ----------------------
    def add(self, j: int, alpha_j: float) -> None:
        c = self.c
        if self.active:
            # warm start: the mode of the linearised problem with basis j added
            # (one Newton step from the current mode with w_j = 0)
            if c == 1:  # the 1 x 1 system: LAPACK's solve is this one division (4 us saved)
                w_j = np.array([self.Q[j] / (alpha_j + self.S[j])])
            else:
                w_j = np.linalg.solve(alpha_j * np.eye(c) + self.S[j], self.Q[j])
            shift = -(self.Sigma @ (self.X[j].T @ w_j)).reshape(c, -1).T
            W0 = np.vstack([self.W + shift, w_j])
        else:
            W0 = np.zeros((1, c))
        self.active.append(j)
        self.alpha = np.append(self.alpha, alpha_j)
        self.W = W0
        cosines = self._cosines(j)  # formed during the mode search
        self.resolve()
        self.G = np.column_stack([self.G, cosines.result()])

    def predicted_mode(self, alpha_new: np.ndarray) -> np.ndarray:
        """The mode of the linearised problem at new active precisions: a warm start."""
        ma, c = self.W.shape
        H = self.H_lik.copy()
        diagonal_view(H).reshape(c, ma)[...] += alpha_new
        b = self.H_lik @ self.W.T.ravel() + self.Q_active.T.ravel()
        try:
            return spd_solve(H, b).reshape(c, ma).T
        except np.linalg.LinAlgError:
            return self.W

    def reestimate(self, i: int, alpha_new: float) -> None:
        new = self.alpha.copy()
        new[i] = alpha_new
        self.W = self.predicted_mode(new)
        self.alpha[i] = alpha_new
        self.resolve()

    def delete(self, i: int) -> None:
        keep = np.arange(len(self.active)) != i
        self.G, self.alpha, self.W = self.G[:, keep], self.alpha[keep], self.W[keep]
        del self.active[i]
        self.resolve()

    # -- candidate moves ----------------------------------------------------
    def _active_sq_shared(self):
        """``s_m`` (C x C) and ``q_m`` (C) of the active bases, without basis m (K > 2)."""
        idx = np.asarray(self.active)
        a = self.alpha
        R = a[:, None, None] * np.eye(self.c) - self.S[idx]  # alpha I - S_m, positive definite
        Rinv = np.linalg.inv(R)
        s = a[:, None, None] * (self.S[idx] @ Rinv)
        s = 0.5 * (s + np.transpose(s, (0, 2, 1)))
        return s, a[:, None] * np.einsum("mkl,ml->mk", Rinv, self.Q[idx])

    def deletion_cost(self) -> np.ndarray:
        """Linearised log evidence lost by deleting each active basis: ``ell_m(alpha_m)``."""
        idx = np.asarray(self.active)
        a = self.alpha
        if self.c == 1:
            s, q = active_sq(a, self.S[idx], self.Q[idx], np.diag(self.Sigma), self._w_active)
            return ell(a, s, q**2)
        lam, q2 = rotate(*self._active_sq_shared(), self.S_scale[idx])
        return ell_shared(a[:, None], lam, q2)

    def candidates(self, align_tol: float):
        """Best move of every basis: (delta, new alpha, in_model, relevant), length M."""
        if self.c == 1:
            return super().candidates(align_tol)
        idx = np.asarray(self.active)
        a = self.alpha
        s, q = self.S.copy(), self.Q.copy()
        s[idx], q[idx] = self._active_sq_shared()
        lam, q2 = rotate(s, q, self.S_scale)
        new_alpha, best = maximise_shared(lam, q2)
        relevant = np.isfinite(new_alpha)
        in_model = np.zeros(self.m, dtype=bool)
        in_model[idx] = True
        delta = np.full(self.m, -np.inf)
        cand = relevant & ~in_model & self.usable
        if align_tol > 0 and idx.size:
            cand &= ~(np.max(np.abs(self.G), axis=1) > 1.0 - align_tol)
        delta[cand] = best[cand]
        old = ell_shared(a[:, None], lam[idx], q2[idx])
        d_act = np.where(relevant[idx], best[idx] - old, -old)
        if idx.size == 1:  # never delete the last basis
            d_act = np.where(relevant[idx], d_act, -np.inf)
        delta[idx] = d_act
        return delta, new_alpha, in_model, relevant


def initial_basis(
    Phin: np.ndarray, T: np.ndarray, usable: np.ndarray, likelihood: str = "bernoulli"
) -> tuple[int, float]:
    """The basis best aligned with pseudo-targets and a starting precision (as SparseBayes).

    Logits of 0.9 / 0.1 for classes, ``log(t + 1/2)`` for counts.
    """
    c = T.shape[1]
    if likelihood in COUNT_LIKELIHOODS:
        pseudo = np.log(T[:, 0] + 0.5)
        proj = Phin.T @ pseudo
        j0 = int(np.argmax(np.where(usable, np.abs(proj), -np.inf)))
        return j0, 1.0 / max(float(proj[j0]) ** 2, 1e-6)
    centred = T - (0.5 if c == 1 else 1.0 / c)
    score = np.sum((Phin.T @ centred) ** 2, axis=1)
    j0 = int(np.argmax(np.where(usable, score, -np.inf)))
    logits = np.log(9.0) * np.sign(centred)
    mu = Phin[:, j0] @ logits
    alpha0 = c / max(float(mu @ mu), 1e-6)
    return j0, alpha0


def stationarity_residual(st: _LinearisedState) -> float:
    """``||g||`` of the linearised evidence, zero at the fast/MacKay/EM fixed points.

    ``g_m = 1/2 [c - alpha_m (tr Sigma_mm + ||w_m||^2)]``.
    """
    ma, c = st.W.shape
    if c == 1:  # the same numbers without the 4-index einsum
        w = st.W[:, 0]
        g = 0.5 * (c - st.alpha * (st.Sigma.diagonal() + w * w))
    else:
        tr = np.einsum("kmkm->m", st.Sigma.reshape(c, ma, c, ma))
        g = 0.5 * (c - st.alpha * (tr + np.sum(st.W**2, axis=1)))
    return math.sqrt(float(g @ g))
