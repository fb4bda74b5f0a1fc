"""The fast sequential algorithm (Tipping & Faul 2003) for RVM classification.

The add / delete / re-estimate loop on the linearised problem at the current
mode (:class:`~rvm_pymc.reference._linearised_state._LinearisedState`).  A
best re-estimation moves all active precisions together (:func:`_reestimate`);
round trips of a basis are barred (:class:`_RoundTrips`).
"""

from __future__ import annotations

import copy

import numpy as np

from rvm_pymc.reference._linearised import _LOG_ALPHA_CAP, maximise_linearised
from rvm_pymc.reference._linearised_state import (
    _MODE_TOL_LOOSE,
    _MODE_TOL_TIGHT,
    _LinearisedState,
    initial_basis,
    stationarity_residual,
)
from rvm_pymc.reference.fast import ADD, DELETE, REESTIMATE, select_move

__all__ = ["fast_classification"]

_ANDERSON_MEMORY = 3
_NEAR_CONVERGED = 1e-3  # largest |d log alpha| at which the tight tolerance is switched on

# what resolve() computes from (active, alpha, W): saved to undo a rejected move
_RESOLVED = ("post", "W", "Sigma", "lml", "S", "Q", "H_lik", "Q_active", "X", "S_scale")


def _anderson(history: list, u0: np.ndarray, d: np.ndarray) -> np.ndarray | None:
    """Anderson-accelerated point from the recent joint steps ``(u_k, d_k)`` on one active set."""
    if not history:
        return None
    dU = np.column_stack([u0 - uk for uk, _ in history])
    dD = np.column_stack([d - dk for _, dk in history])
    gamma, *_ = np.linalg.lstsq(dD, d, rcond=1e-10)
    if not np.all(np.isfinite(gamma)):
        return None
    return u0 + d - (dU + dD) @ gamma


def _try_newton(st: _LinearisedState, tol) -> bool:
    """The joint quasi-Newton move of :func:`_reestimate` (Anderson first); False if rejected."""
    old_alpha = st.alpha.copy()
    res0 = stationarity_residual(st)
    b = st.H_lik @ st.W.T.ravel() + st.Q_active.T.ravel()
    u0 = np.log(old_alpha)
    try:
        d = np.log(maximise_linearised(st.H_lik, b, old_alpha, st.c, tol)) - u0
    except np.linalg.LinAlgError:
        return False
    key = tuple(st.active)
    history = [(uk, dk) for k, uk, dk in st.joint_history if k == key][-_ANDERSON_MEMORY:]
    proposals = [u0 + d, u0 + 0.5 * d]
    accelerated = _anderson(history, u0, d)
    if accelerated is not None and np.all(accelerated <= _LOG_ALPHA_CAP):
        proposals.insert(0, accelerated)
    saved = {k: getattr(st, k) for k in _RESOLVED}
    for u in proposals:
        st.alpha = np.exp(u)
        st.W = st.predicted_mode(st.alpha)
        try:
            st.resolve(statistics=False)  # S, Q only for the accepted proposal
            if stationarity_residual(st) < res0:
                st.statistics()
                st.joint_history = [*((key, uk, dk) for uk, dk in history), (key, u0, d)]
                return True
        except np.linalg.LinAlgError:
            pass
        for k, v in saved.items():
            setattr(st, k, v)
    st.alpha = old_alpha
    st.joint_history = []
    return False


def _try_jacobi(st: _LinearisedState, new_alpha) -> bool:
    """Every active precision to its one-at-a-time optimum at once, if the evidence rises."""
    old_alpha, old_lml = st.alpha.copy(), st.lml
    saved = {k: getattr(st, k) for k in _RESOLVED}
    st.W = st.predicted_mode(new_alpha)
    st.alpha = new_alpha.copy()
    try:
        st.resolve(statistics=False)  # S, Q only if accepted
        if st.lml >= old_lml - 1e-12 * (1.0 + abs(old_lml)):
            st.statistics()
            return True
    except np.linalg.LinAlgError:
        pass
    st.alpha = old_alpha  # a rejected move leaves the whole resolved state as it was
    for k, v in saved.items():
        setattr(st, k, v)
    return False


def _reestimate(st: _LinearisedState, i: int, new_alpha: np.ndarray, relevant: np.ndarray, tol):
    """Re-estimate all active precisions jointly, else only the ``i``-th.

    Tried in turn: the joint maximum of the linearised evidence
    (:func:`maximise_linearised`, kept when :func:`stationarity_residual`
    decreases; after a failure not retried for a doubling number of calls; skipped
    when basis ``i`` is held at the cap), every relevant precision at its own
    optimum (kept when the Laplace evidence does not fall), and basis ``i`` alone.
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
    if np.count_nonzero(relevant) > 1 and _try_jacobi(st, np.where(relevant, new_alpha, st.alpha)):
        return
    st.reestimate(i, new_alpha[i])


def _sequential(
    st: _LinearisedState, trace, max_iter, tol, align_tol, barred: int = -1
) -> tuple[int, bool]:
    """The add / delete / re-estimate loop from the current state; (iterations, converged).

    Basis ``barred`` (if >= 0) is never added.  An addition undone by a deletion
    back to the same active set without a gain in the Laplace evidence (or
    repeatedly, gaining < 1e-3 nats) bars that basis from that set
    (:class:`_RoundTrips`), so the loop cannot cycle.
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
        else:
            i = st.active.index(j)
            if relevant[j]:
                _reestimate(st, i, new_alpha[idx], relevant[idx], tol)
                action = REESTIMATE
            else:
                st.delete(i)
                action = DELETE
                trips.deleted(j, st.active, st.lml)
        trace["log_evidence"].append(st.lml)
        trace["n_active"].append(len(st.active))
        trace["action"].append(action)
    return it, converged


class _RoundTrips:
    """Additions undone by a deletion, and the bases barred from an active set for it."""

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
    st = _warm_state(Phin, T, usable, alpha_start, likelihood, dispersion)
    if st is None:
        st = _LinearisedState(Phin, T, usable, likelihood, dispersion)
        j0, alpha0 = initial_basis(Phin, T, usable, likelihood)
        st.add(j0, alpha0)
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
            sub = {k: [] for k in trace}
            sub["log_evidence"].append(trial.lml)
            sub["n_active"].append(len(trial.active))
            sub["action"].append(DELETE)
            budget = min(max_iter - n_iter, max(2 * n_greedy, 50))
            it, conv = _sequential(trial, sub, budget, tol, align_tol, barred=gone)
            n_iter += it
            if conv and trial.lml > st.lml + 1e-6 * (1.0 + abs(st.lml)):
                # lift the bar: the barred basis may come back (its linearised gain is
                # positive).  If the rerun converges lower in the Laplace evidence, the
                # barred optimum is kept (converged, but with that basis barred: its
                # linearised gain is positive, its Laplace gain is not); if the rerun
                # runs out of iterations, the barred state is kept and reported as not
                # converged.  Every accepted step raises the evidence.
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


def _warm_state(
    Phin, T, usable, alpha_start, likelihood, dispersion=None
) -> _LinearisedState | None:
    """The state with the bases of ``alpha_start`` at its precisions; None if none or singular."""
    if alpha_start is None:
        return None
    warm = np.flatnonzero(np.isfinite(alpha_start) & usable)
    if warm.size == 0:
        return None
    st = _LinearisedState(Phin, T, usable, likelihood, dispersion)
    st.active, st.alpha = [int(j) for j in warm], alpha_start[warm].astype(float)
    G = Phin.T @ Phin[:, warm]
    G[~usable] = 0.0
    st.G, st.W = G, np.zeros((warm.size, T.shape[1]))
    try:
        st.resolve()
    except np.linalg.LinAlgError:
        return None
    return st
