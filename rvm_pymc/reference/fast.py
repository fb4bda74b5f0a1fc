"""The fast sequential marginal-likelihood algorithm of Tipping & Faul (2003).

On unit-norm columns, from one basis: each step finds every basis's best
single move (add, delete, re-estimate; deletions first), makes the best with
rank-one updates of ``Sigma``, ``mu``, ``S``, ``Q``
(:class:`~rvm_pymc.reference._sequential_state.SequentialState`), and updates
the noise on a schedule.  The statistics only *select* a move: it is made
only if its gain from the exact statistics exceeds its rounding and the
realised evidence of a fresh factorisation rises; a refused move makes the
statistics be recomputed (then exactly where undetermined), and a move
refused on those means the fit has settled at this noise level.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from rvm_pymc._core.evidence import log_beta_prior
from rvm_pymc._core.sparsity import active_sq
from rvm_pymc.reference._sequential_state import SequentialState, maximise_linearised

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
    "active_sq",
    "fast_sequential",
    "select_move",
]

REESTIMATE, ADD, DELETE, NOISE = 0, 1, 2, 3


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
    """Candidates of every basis and the move to make: deletions first, else the best gain.

    A NaN gain never wins.  ``st`` is a :class:`SequentialState` or the classifier's state.
    """
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        delta, new_alpha, in_model, relevant = st.candidates(align_tol)
    delta[np.isnan(delta)] = -np.inf
    deletions = in_model & ~relevant & np.isfinite(delta)
    if deletions.any():
        j = int(np.argmax(np.where(deletions, delta, -np.inf)))
    else:
        j = int(np.argmax(delta))
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
        self.trace: dict[str, list] = {
            "log_evidence": [],
            "n_active": [],
            "beta": [],
            "action": [],
        }
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
            if only_reestimates or (sel.in_model[sel.j] and sel.relevant[sel.j]):
                moved = self._joint_move(sel, only_reestimates)
            else:
                moved = False
            if not moved and not self._single_move(sel) and self._refuted():
                break
            self._scheduled_noise(it)
        st.resolve()
        return FastResult(
            np.asarray(st.active), st.alpha.copy(), st.beta, self.trace, it, self.converged
        )

    # -- steps ----------------------------------------------------------------
    def _select(self) -> tuple[Selection, bool, bool]:
        """The move to try, whether only re-estimations remain, and whether the fit settled.

        The last basis is never deleted: at an optimum ``alpha = inf`` that counts as settled.
        """
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
        """Make the chosen move if its exact gain and its realised evidence agree it gains.

        A deletion to the exact optimum (``q^2 <= s``) qualifies whatever its size.
        False (state unchanged) if either test fails.
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
        """Re-estimate every active precision at once; kept if the realised evidence rises.

        Tried in turn: the joint maximum over the active precisions
        (:func:`maximise_linearised`) and every precision at its own optimum.
        """
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
            # The joint optimum, when only re-estimations remain, is also kept when its
            # gain is within rounding (not a loss): a flat evidence leaves the precisions
            # short of their fixed point by more than tol otherwise.
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
