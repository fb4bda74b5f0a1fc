r"""The fast sequential marginal-likelihood algorithm of Tipping & Faul (2003).

Regression (:func:`fast_sequential`, unit-norm columns): each step makes the best single
move of any basis (add, delete, re-estimate; deletions first) with rank-one updates
(:class:`~rvm_pymc.reference._sequential_state.SequentialState`), kept only if its exact
gain exceeds its rounding and the evidence of a fresh factorisation rises; the noise is
updated on a schedule.  Classification (:func:`fast_classification`): the same loop on the
linearised (IRLS) problem at the current mode (:class:`_LinearisedState`), with
``S_m = phi_m^T B phi_m - phi_m^T B Phi_a Sigma Phi_a^T B phi_m``, ``Q_m = phi_m^T (t - y)``,
re-finding the mode after every move.
"""

from __future__ import annotations

import copy
import math
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from rvm_pymc._core.evidence import log_beta_prior
from rvm_pymc._core.gaussian import spd_solve
from rvm_pymc._core.sparsity import active_sq, ell, ell_shared, maximise_shared, rotate
from rvm_pymc.reference._laplace import (
    COUNT_LIKELIHOODS,
    OneColumn,
    class_pairs,
    diagonal_view,
    find_mode,
    find_mode_one_column,
    in_background,
    pair_grams,
    pair_weights,
    scaled_rows,
    squared,
    transposed_products,
)
from rvm_pymc.reference._sequential_state import (
    _LOG_ALPHA_CAP,
    SequentialState,
    maximise_linearised,
)

if TYPE_CHECKING:
    from rvm_pymc.priors import HyperPrior

__all__ = [
    "ADD",
    "DELETE",
    "NOISE",
    "REESTIMATE",
    "FastOptions",
    "FastResult",
    "Selection",
    "fast_classification",
    "fast_sequential",
    "initial_basis",
    "select_move",
    "stationarity_residual",
]

REESTIMATE, ADD, DELETE, NOISE = 0, 1, 2, 3
_MODE_TOL_LOOSE, _MODE_TOL_TIGHT = 1e-4, 1e-9  # the classifier's Newton tolerances of the mode


class FastOptions(NamedTuple):
    """Settings of :func:`fast_sequential` (see ``fit_regression`` for their meaning)."""

    prior: HyperPrior
    fixed_noise: bool
    max_iter: int
    tol: float
    noise_update_every: int
    align_tol: float
    beta_max: float = np.inf
    noise_update_start: int = 0


class FastResult(NamedTuple):
    """What :func:`fast_sequential` returns (precisions of the unit-norm columns)."""

    active: np.ndarray
    alpha: np.ndarray
    beta: float
    trace: dict[str, list]
    n_iter: int
    converged: bool


class Selection(NamedTuple):
    """The candidates of every basis and the move chosen among them (:func:`select_move`)."""

    delta: np.ndarray  # gain in log evidence of each basis's best move
    new_alpha: np.ndarray  # its precision after that move
    in_model: np.ndarray
    relevant: np.ndarray  # q^2 > s
    deletions: np.ndarray  # active bases whose best move is to leave
    j: int  # the chosen basis


def select_move(st: Any, align_tol: float) -> Selection:
    """Every basis's candidates and the move to make: deletions first, else the best gain."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        delta, new_alpha, in_model, relevant = st.candidates(align_tol)
    delta[np.isnan(delta)] = -np.inf
    deletions = in_model & ~relevant & np.isfinite(delta)
    j = int(np.argmax(np.where(deletions, delta, -np.inf) if deletions.any() else delta))
    return Selection(delta, new_alpha, in_model, relevant, deletions, j)


def fast_sequential(
    Phin, t, usable, beta, options: FastOptions, scale=None, alpha_start=None, rows=None
) -> FastResult:
    """Run the sequential algorithm from the column best aligned with ``t`` (or a warm start).

    The start column has a free weight (precision ``1e-6 s``); when it explains
    little alone (``q^2 < 2 s``) the fit is also run from its own optimum and the
    better fit returned (``n_iter`` counts both).  ``Phin / scale`` are the
    unit-norm columns; ``alpha_start`` a warm start (``inf`` for a column out;
    a warm start whose precision is not positive definite falls back to the cold
    start); ``rows = (n, rss_offset)`` when ``Phin``, ``t`` are a row compression.
    Returns a :class:`FastResult`.
    """
    n, rss_offset = (None, 0.0) if rows is None else rows

    def state() -> SequentialState:
        return SequentialState(Phin, t, usable, beta, scale, options.beta_max, n, rss_offset)

    st = state()
    warm = np.flatnonzero(np.isfinite(alpha_start) & usable) if alpha_start is not None else []
    if len(warm):
        try:
            st.start(warm, alpha_start[warm])
        except np.linalg.LinAlgError:
            st = state()  # cold
        else:
            return _FastSolver(st, _aligned(st, usable, options)).run()
    j0 = int(np.argmax(np.where(usable, np.abs(st.PhiT_t), -np.inf)))
    s0, q0 = beta, beta * st.PhiT_t[j0]  # S, Q of a column with nothing in the model
    st.start(j0, 1e-6 * s0)
    options = _aligned(st, usable, options)
    fit = _FastSolver(st, options).run()
    if q0**2 >= 2 * s0:
        return fit
    shrunk = state()
    shrunk.start(j0, s0**2 / max(q0**2 - s0, 1e-3 * s0))
    other = _FastSolver(shrunk, options).run()
    n_iter = fit.n_iter + other.n_iter
    best = other if _objective(other) > _objective(fit) else fit
    return best._replace(n_iter=n_iter)


def _aligned(st: SequentialState, usable, options: FastOptions) -> FastOptions:
    """``align_tol`` on the scale of the design's own angles (median ``1 - |cos|``)."""
    others = usable.copy()
    others[st.active[0]] = False
    if options.align_tol > 0 and others.any():
        spread = float(np.median(1.0 - np.abs(st.G[others, 0])))
        options = options._replace(align_tol=options.align_tol * spread)
    return options


def _objective(fit: FastResult) -> float:
    """The last recorded objective of a fit (``-inf`` for an empty trace)."""
    trace = fit.trace["log_evidence"]
    return trace[-1] if trace else -np.inf


class _FastSolver:
    """The loop of :func:`fast_sequential` as named steps (select, settle, move, refute)."""

    def __init__(self, st: SequentialState, options: FastOptions) -> None:
        self.st, self.opt = st, options
        self.trace = {k: [] for k in ("log_evidence", "n_active", "beta", "action")}
        self.since_noise = 0
        self.converged = False

    def run(self) -> FastResult:
        """Iterate to convergence or ``max_iter``; the final state is re-solved exactly."""
        st, it = self.st, 0
        for it in range(1, self.opt.max_iter + 1):
            sel, only_reestimates, settled = self._select()
            if settled:
                if self._settle():
                    break
                continue  # candidates are stale after a change of beta
            joint = only_reestimates or (sel.in_model[sel.j] and sel.relevant[sel.j])
            moved = joint and self._joint_move(sel, only_reestimates)
            if not moved and not self._single_move(sel) and self._refuted():
                break
            self._scheduled_noise(it)
        st.resolve()
        return FastResult(
            np.asarray(st.active), st.alpha.copy(), st.beta, self.trace, it, self.converged
        )

    def _select(self) -> tuple[Selection, bool, bool]:
        """The move to try, whether only re-estimations remain, and whether the fit settled."""
        st = self.st
        sel = select_move(st, self.opt.align_tol)
        idx = np.asarray(st.active)
        kept_last = idx.size == 1 and not sel.relevant[idx[0]]
        only_reestimates = (
            not sel.deletions.any()
            and not (~sel.in_model & (sel.delta > 0)).any()
            and bool(kept_last or sel.relevant[idx].all())
        )
        if not only_reestimates:
            return sel, False, False
        with np.errstate(divide="ignore"):  # a rounded s = 0 gives new alpha 0
            dlog = np.abs(np.log(sel.new_alpha[idx]) - np.log(st.alpha))
        dlog[~sel.relevant[idx]] = 0.0 if kept_last else np.inf
        return sel, True, dlog.max() < self.opt.tol

    def _settle(self) -> bool:
        """Nothing gains: confirm on recomputed statistics, update the noise; True: converged."""
        st = self.st
        if st.freshness < 2:
            st.resolve(confirm=True)
            if not self._select()[2]:
                return False
        dbeta = 0.0 if self.opt.fixed_noise else st.update_noise(self.opt.prior)
        self.since_noise = 0
        self._record(NOISE)
        self.converged = dbeta < self.opt.tol
        return self.converged

    def _single_move(self, sel: Selection) -> bool:
        """Make the chosen move if its exact gain and realised evidence agree; else False.

        A deletion to the exact optimum (``q^2 <= s``) qualifies whatever its size.
        """
        st, j = self.st, sel.j
        cand = st.exact_candidate(j)
        leaves = sel.in_model[j] and not cand.relevant and cand.gain >= 0
        if not (cand.gain > max(cand.rounding, st.lml_rounding) or leaves):
            return False
        g = None if sel.in_model[j] else st.gram_column(j)
        f = st.factorise_move(j, cand.alpha if cand.relevant else np.inf, g)
        if f is None or f.lml - st.lml < -(f.rounding + st.lml_rounding):
            return False
        if not sel.in_model[j]:
            st.add(j, cand.alpha, cand.S, cand.Q, g)
            action = ADD
        elif cand.relevant:
            # re-solved from the new factor: the rank-one form divides by
            # Sigma_jj + 1 / (alpha_new - alpha_j), which cancels at a flat optimum
            alpha = st.alpha.copy()
            alpha[st.active.index(j)] = cand.alpha
            st.commit(alpha=alpha, fresh=f)
            self._record(REESTIMATE)
            return True
        else:
            st.delete(st.active.index(j))
            action = DELETE
        st.fresh, st.lml, st.lml_rounding = f, f.lml, f.rounding
        self._record(action)
        return True

    def _refuted(self) -> bool:
        """A proposed move did not gain: recompute the statistics (True: the fit has converged)."""
        st = self.st
        if st.freshness == 2:
            return self._settle()
        st.resolve(confirm=st.freshness == 1)
        return False

    def _joint_move(self, sel: Selection, only_reestimates: bool) -> bool:
        """Re-estimate all active precisions (joint maximum, else each at its own optimum)."""
        st = self.st
        idx = np.asarray(st.active)
        if idx.size < 2:
            return False
        b, tiny = st.beta, np.finfo(float).tiny
        trials = []  # (precisions, whether reaching them is enough without a measurable gain)
        try:
            a = maximise_linearised(
                b * st.G[idx, :], b * st.PhiT_t[idx], st.alpha, 1, self.opt.tol
            )
            trials.append((a, only_reestimates))
        except (np.linalg.LinAlgError, ValueError):
            pass  # Newton failed: the one-at-a-time optima only
        trials.append((sel.new_alpha[idx], False))
        min_gain = 0.0 if only_reestimates else float(sel.delta[sel.j])
        for alpha_new, stationary in trials:
            if not np.all(np.isfinite(alpha_new) & (alpha_new > tiny)):
                continue  # a rounded s = 0 gives alpha 0; a leaving basis alpha = inf
            f = st.factorise(alpha=alpha_new)
            if f is None:
                continue
            rise, rounding = f.lml - st.lml, f.rounding + st.lml_rounding
            # Only re-estimations left: the joint optimum is kept within rounding of no
            # gain, else a flat evidence leaves the precisions short of their fixed point.
            moves = np.max(np.abs(np.log(alpha_new / st.alpha))) >= self.opt.tol
            if rise > min_gain + rounding or (stationary and moves and rise >= -rounding):
                st.commit(alpha=alpha_new, fresh=f)
                self._record(REESTIMATE)
                return True
        return False

    def _scheduled_noise(self, it: int) -> None:
        """Update the noise every ``noise_update_every`` steps from ``noise_update_start`` on."""
        opt = self.opt
        self.since_noise += 1
        if self.since_noise >= opt.noise_update_every and not opt.fixed_noise:
            if it >= opt.noise_update_start:
                self.st.update_noise(opt.prior)
                self.since_noise = 0
                self._record(NOISE)

    def _record(self, action: int) -> None:
        """Append the objective (log evidence plus the noise hyperprior term) to the trace."""
        st, prior = self.st, self.opt.prior
        self.trace["log_evidence"].append(st.lml + log_beta_prior(st.beta, prior))
        self.trace["n_active"].append(len(st.active))
        self.trace["beta"].append(st.beta)
        self.trace["action"].append(action)


# -- classification ---------------------------------------------------------------


class _LinearisedState(SequentialState):
    """Sequential state of the Laplace fits (the contract of :class:`SequentialState`)."""

    def __init__(
        self,
        Phin: np.ndarray,
        T: np.ndarray,
        usable: np.ndarray,
        likelihood: str = "bernoulli",
        dispersion: float | None = None,
    ):
        self.Phin, self.T, self.scale = Phin, T, None  # unit-norm columns (gram_column)
        # "bernoulli" (softmax for K > 2), "poisson" or "negative_binomial" (of dispersion)
        self.likelihood = likelihood
        self.n, self.m = Phin.shape
        self.c = T.shape[1]
        self.usable, self.all_usable = usable, bool(usable.all())
        # the one-column likelihood where find_mode would choose it, built once
        one = likelihood in COUNT_LIKELIHOODS or (self.c == 1 and np.all((T == 0.0) | (T == 1.0)))
        self.one_column = OneColumn(likelihood, T[:, 0], dispersion) if one else None
        self.Phin2 = squared(Phin)
        self.active: list[int] = []
        self.alpha = np.empty(0)
        self.G = np.empty((self.m, 0))
        self.W = np.empty((0, self.c))
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
            # B = diag(d): y (1 - y), the rates or NB2's curvature; score t - y (NB2: its own)
            d, score = self.post.curvature, self.post.score
            if score is None:
                score = self.T[:, 0] - Y[:, 0]
            # Phi^T B Phi_a (M, ma), (Phi^2)^T d and Phi^T score: three reads of the design
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
        self.S, self.Q = 0.5 * (S + np.transpose(S, (0, 2, 1))), Q

    def add(self, j: int, alpha_j: float) -> None:
        c = self.c
        if self.active:
            # warm start: one Newton step of the linearised problem from w_j = 0
            if c == 1:  # the 1 x 1 system: one division
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
        # the cosines of basis j with every column, formed during the mode search
        cosines = in_background(lambda: self.gram_column(j), self.Phin.size)
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
        self.W, self.alpha = self.predicted_mode(new), new
        self.resolve()

    def delete(self, i: int) -> None:
        keep = np.arange(len(self.active)) != i
        self.G, self.alpha, self.W = self.G[:, keep], self.alpha[keep], self.W[keep]
        del self.active[i]
        self.resolve()

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
        s, q = self.S.copy(), self.Q.copy()
        s[idx], q[idx] = self._active_sq_shared()
        lam, q2 = rotate(s, q, self.S_scale)
        new_alpha, best = maximise_shared(lam, q2)
        relevant = np.isfinite(new_alpha)
        in_model, addable = self._addable(align_tol)
        delta = np.where(relevant & addable, best, -np.inf)
        old = ell_shared(self.alpha[:, None], lam[idx], q2[idx])
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
    mu = Phin[:, j0] @ (np.log(9.0) * np.sign(centred))  # logits of 0.9 / 0.1
    return j0, c / max(float(mu @ mu), 1e-6)


def stationarity_residual(st: _LinearisedState) -> float:
    """``||g||``, ``g_m = 1/2 [c - alpha_m (tr Sigma_mm + ||w_m||^2)]``: 0 at the fixed points."""
    ma, c = st.W.shape
    if c == 1:  # the same numbers without the 4-index einsum
        w = st.W[:, 0]
        g = 0.5 * (c - st.alpha * (st.Sigma.diagonal() + w * w))
    else:
        tr = np.einsum("kmkm->m", st.Sigma.reshape(c, ma, c, ma))
        g = 0.5 * (c - st.alpha * (tr + np.sum(st.W**2, axis=1)))
    return math.sqrt(float(g @ g))


_ANDERSON_MEMORY = 3
_NEAR_CONVERGED = 1e-3  # largest |d log alpha| at which the tight tolerance is switched on

# what resolve() computes from (active, alpha, W): saved to undo a rejected move
_RESOLVED = ("post", "W", "Sigma", "lml", "S", "Q", "H_lik", "Q_active", "X", "S_scale")


def _try_newton(st: _LinearisedState, tol) -> bool:
    """The joint quasi-Newton move of :func:`_reestimate` (Anderson first); False if rejected."""
    res0 = stationarity_residual(st)
    b = st.H_lik @ st.W.T.ravel() + st.Q_active.T.ravel()
    u0 = np.log(st.alpha)
    try:
        d = np.log(maximise_linearised(st.H_lik, b, st.alpha, st.c, tol)) - u0
    except np.linalg.LinAlgError:
        return False
    key = tuple(st.active)
    history = [(uk, dk) for k, uk, dk in st.joint_history if k == key][-_ANDERSON_MEMORY:]
    proposals = [u0 + d, u0 + 0.5 * d]
    if history:  # first the Anderson-accelerated point from the recent steps on this set
        dU = np.column_stack([u0 - uk for uk, _ in history])
        dD = np.column_stack([d - dk for _, dk in history])
        gamma, *_ = np.linalg.lstsq(dD, d, rcond=1e-10)
        if np.all(np.isfinite(gamma)):
            accelerated = u0 + d - (dU + dD) @ gamma
            if np.all(accelerated <= _LOG_ALPHA_CAP):
                proposals.insert(0, accelerated)
    for u in proposals:
        if _trial(st, np.exp(u), lambda: stationarity_residual(st) < res0):
            st.joint_history = [*((key, uk, dk) for uk, dk in history), (key, u0, d)]
            return True
    st.joint_history = []
    return False


def _trial(st: _LinearisedState, alpha, accept) -> bool:
    """Move to precisions ``alpha``; kept (S, Q found) if ``accept()``, else fully undone."""
    old_alpha, saved = st.alpha, {k: getattr(st, k) for k in _RESOLVED}
    st.W, st.alpha = st.predicted_mode(alpha), alpha
    try:
        st.resolve(statistics=False)  # S, Q only if accepted
        if accept():
            st.statistics()
            return True
    except np.linalg.LinAlgError:
        pass
    st.alpha = old_alpha
    for k, v in saved.items():
        setattr(st, k, v)
    return False


def _reestimate(st: _LinearisedState, i: int, new_alpha: np.ndarray, relevant: np.ndarray, tol):
    """Re-estimate all active precisions jointly, else only the ``i``-th.

    Tried in turn: the joint Newton move (kept when :func:`stationarity_residual` falls;
    after a failure skipped for a doubling number of calls), every relevant precision at
    its own optimum (kept unless the Laplace evidence falls), and basis ``i`` alone.
    """
    # The joint move holds a basis at the cap; for one whose precision is to come
    # back from it the joint move is skipped (else it keeps the basis there for ever).
    if relevant.size > 1 and np.all(relevant) and np.log(st.alpha[i]) < _LOG_ALPHA_CAP:
        if st.newton_skip > 0:
            st.newton_skip -= 1
        elif _try_newton(st, tol):
            st.newton_backoff = 1
            return
        else:
            st.newton_skip = st.newton_backoff
            st.newton_backoff = min(2 * st.newton_backoff, 32)
    # every relevant precision to its one-at-a-time optimum at once, if the evidence rises
    lml = st.lml
    if np.count_nonzero(relevant) > 1 and _trial(
        st, np.where(relevant, new_alpha, st.alpha), lambda: st.lml >= lml - 1e-12 * (1 + abs(lml))
    ):
        return
    st.reestimate(i, new_alpha[i])


def _sequential(
    st: _LinearisedState, trace, max_iter, tol, align_tol, barred: int = -1
) -> tuple[int, bool]:
    """The add / delete / re-estimate loop from the current state; (iterations, converged).

    Basis ``barred`` (if >= 0) is never added; round trips are barred (:class:`_RoundTrips`).
    """
    converged = False
    it = 0
    trips = _RoundTrips()
    for it in range(1, max_iter + 1):  # noqa: B007
        delta, new_alpha, in_model, relevant, deletions, j = select_move(st, align_tol)
        no_add = trips.barred(st.active) | ({barred} if barred >= 0 else set())
        for b in no_add:
            if not in_model[b]:
                delta[b] = -np.inf
        if j in no_add and not in_model[j]:
            j = int(np.argmax(delta))
        idx = np.asarray(st.active)
        best = delta[j]
        dlog = np.abs(np.log(new_alpha[idx]) - np.log(st.alpha))
        dlog = np.where(relevant[idx], dlog, np.inf)
        if (
            st.mode_tol > _MODE_TOL_TIGHT
            and not deletions.any()
            and (not np.isfinite(best) or best <= 0 or dlog.max() < _NEAR_CONVERGED)
        ):
            # Near the end: statistics from a precise mode from now on, so that the
            # convergence test is not decided by the Newton tolerance.
            st.mode_tol = _MODE_TOL_TIGHT
            st.resolve()
            continue
        if not deletions.any() and (
            not np.isfinite(best)
            or best <= 0
            or (in_model[j] and relevant[j] and dlog.max() < tol)
        ):
            converged = True
            break
        if not in_model[j]:
            trips.adding(j, st.active, st.lml)
            st.add(j, new_alpha[j])
            action = ADD
        elif relevant[j]:
            _reestimate(st, st.active.index(j), new_alpha[idx], relevant[idx], tol)
            action = REESTIMATE
        else:
            st.delete(st.active.index(j))
            action = DELETE
            trips.deleted(j, st.active, st.lml)
        trace["log_evidence"].append(st.lml)
        trace["n_active"].append(len(st.active))
        trace["action"].append(action)
    return it, converged


class _RoundTrips:
    """Bases barred from an active set: an addition undone by a deletion back to that set
    without a Laplace gain (or repeatedly, gaining < 1e-3 nats), so the loop cannot cycle."""

    def __init__(self) -> None:
        self._before: dict[int, tuple[tuple[int, ...], float]] = {}  # basis -> set, lml
        self._best: dict[tuple[tuple[int, ...], int], float] = {}  # (set, basis) -> lml after
        self._barred: dict[tuple[int, ...], set[int]] = {}  # set -> bases not to add

    def barred(self, active: list[int]) -> set[int]:
        """The bases not to add to ``active``."""
        return self._barred.get(tuple(sorted(active)), set())

    def adding(self, j: int, active: list[int], lml: float) -> None:
        """Basis ``j`` is about to be added to ``active``, whose Laplace evidence is ``lml``."""
        self._before[j] = (tuple(sorted(active)), lml)

    def deleted(self, j: int, active: list[int], lml: float) -> None:
        """Basis ``j`` was deleted, leaving ``active`` with Laplace evidence ``lml``."""
        before, key = self._before.pop(j, None), tuple(sorted(active))
        if before is None or before[0] != key:
            return
        no_gain = lml <= before[1] + 1e-9 * (1.0 + abs(before[1]))
        repeat = lml <= self._best.get((key, j), -np.inf) + 1e-3
        if no_gain or repeat:
            self._barred.setdefault(key, set()).add(j)
        self._best[key, j] = max(self._best.get((key, j), -np.inf), lml)


def _copy_state(st: _LinearisedState) -> _LinearisedState:
    """A copy whose moves leave ``st`` untouched (the data arrays are shared)."""
    new = copy.copy(st)
    new.active = list(st.active)
    new.alpha = st.alpha.copy()
    new.joint_history = list(st.joint_history)
    return new


def fast_classification(
    Phin,
    T,
    usable,
    max_iter,
    tol,
    align_tol,
    deletion_tries=0,
    alpha_start=None,
    likelihood="bernoulli",
    dispersion=None,
):
    """Run the sequential algorithm on normalised columns (``dispersion``: of NB2 counts)."""

    def state() -> _LinearisedState:
        return _LinearisedState(Phin, T, usable, likelihood, dispersion)

    st = state()
    warm = [] if alpha_start is None else np.flatnonzero(np.isfinite(alpha_start) & usable)
    if len(warm):  # the bases of alpha_start at its precisions, unless the mode is not found
        st.W = np.zeros((len(warm), T.shape[1]))
        try:
            st.start(warm, alpha_start[warm])
        except np.linalg.LinAlgError:
            st, warm = state(), []
    if not len(warm):  # cold: from the basis best aligned with the pseudo-targets
        st.add(*initial_basis(Phin, T, usable, likelihood))
    trace = {"log_evidence": [st.lml], "n_active": [len(st.active)], "action": [ADD]}
    n_iter, converged = _sequential(st, trace, max_iter, tol, align_tol)
    n_greedy = n_iter
    improved = converged and deletion_tries > 0
    while improved and len(st.active) > 1 and n_iter < max_iter:
        improved = False
        for i in np.argsort(-st.deletion_cost(), kind="stable")[:deletion_tries]:
            trial = _copy_state(st)
            gone = trial.active[int(i)]
            trial.delete(int(i))
            trial.mode_tol = _MODE_TOL_LOOSE
            sub = dict(log_evidence=[trial.lml], n_active=[len(trial.active)], action=[DELETE])
            budget = min(max_iter - n_iter, max(2 * n_greedy, 50))
            it, conv = _sequential(trial, sub, budget, tol, align_tol, barred=gone)
            n_iter += it
            if conv and trial.lml > st.lml + 1e-6 * (1.0 + abs(st.lml)):
                # lift the bar: the barred basis may come back.  The barred optimum is
                # kept if the rerun ends lower in the Laplace evidence, or (reported as
                # not converged) if it runs out of iterations.
                barred, barred_sub = _copy_state(trial), {k: list(v) for k, v in sub.items()}
                it, conv = _sequential(trial, sub, max_iter - n_iter, tol, align_tol)
                n_iter += it
                if not conv or trial.lml < barred.lml:
                    trial, sub = barred, barred_sub
                st, converged = trial, conv
                for k in trace:
                    trace[k] += sub[k]
                improved = True
                break
            if n_iter >= max_iter:
                break
    return np.asarray(st.active), st.alpha.copy(), st.W.copy(), trace, n_iter, converged
