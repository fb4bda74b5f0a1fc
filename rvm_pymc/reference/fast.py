"""The fast sequential marginal-likelihood algorithm of Tipping & Faul (2003).

Works on normalised columns (unit Euclidean norm).  The model starts from one
basis; each step evaluates, for every basis ``m``, the change in log evidence
of its best single move (add, delete or re-estimate ``alpha_m``, the others
fixed), applies the best one with rank-one updates of ``Sigma``, ``mu`` and the
statistics ``S_m``, ``Q_m`` of all ``M`` candidates
(:class:`~rvm_pymc.reference._sequential_state.SequentialState`), and updates
the noise precision on a schedule.  Deletions take priority.

One rule keeps the fit honest on ill-conditioned (smooth) kernels, where the
rank-one statistics are differences of nearly equal numbers: the statistics
only *select* a move.  The move is made only if its gain, from ``S_j``, ``Q_j``
of the chosen basis computed without cancellation, exceeds that gain's
rounding, and the log evidence realised by the new state (a fresh
factorisation, evaluated before the state changes) rises by more than the
rounding of the two evaluations.  A move the statistics proposed that fails
this means they have drifted: they are recomputed from a fresh factor, then,
if that is refused too, exactly wherever the rank-one form is within its
rounding (:meth:`SequentialState.resolve`); if the best move of those
confirmed statistics fails too, no move is resolvable in float64 and the fit
has settled at this noise level.  Nothing gains by the statistics: confirmed
the same way before the fit settles.
Joint re-estimations of all active precisions and noise updates are judged
on the realised evidence in the same way.

References
----------
Tipping, M. E. and Faul, A. C. (2003). Fast marginal likelihood maximisation
for sparse Bayesian models. *AISTATS 2003*.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from rvm_pymc._core.sparsity import active_sq
from rvm_pymc.reference._linearised import maximise_linearised
from rvm_pymc.reference._noise import update_noise
from rvm_pymc.reference._sequential_state import SequentialState

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

    A NaN gain is set to ``-inf`` so that it can never be selected.  ``st`` is
    a :class:`SequentialState` or the classifier's linearised state.
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

    The start is that column with a free weight (precision ``1e-6 s``, a prior
    sd a thousand times the data's): with a wide kernel the columns explain
    the target only in pairs of nearly parallel columns with opposite
    weights, which can then be added one column at a time (from the column
    at its own optimum such a fit can stay at one basis, 40-200 nats below
    MacKay's).  When that column explains little alone (``q^2 < 2 s``: at its
    optimum ``s^2 / (q^2 - s)`` its weight would shrink by more than half)
    the fit is also run from it at that optimum, which then stays near the
    empty model, and the fit with the higher objective is returned
    (``n_iter`` counts both).

    Parameters
    ----------
    Phin : ndarray of shape (N, M)
        The design; with ``scale`` (the column norms) its unit-norm columns are
        ``Phin / scale``, formed column by column as needed.
    t : ndarray of shape (N,)
    usable : ndarray of bool, shape (M,)
    beta : float
        Initial noise precision.
    options : FastOptions
    scale : ndarray of shape (M,), optional
    alpha_start : ndarray of shape (M,), optional
        A warm start: the precisions of the unit-norm columns, ``inf`` for a
        column out of the model (e.g. a fit at a neighbouring kernel width).
        The fit runs once, from those bases; if their posterior precision is
        not numerically positive definite, from the cold start above.
    rows : (int, float), optional
        When ``Phin`` and ``t`` are a row compression
        (:class:`rvm_pymc._core.rowqr.RowQR`: ``R`` and ``z``): the number of
        data points and the remainder (``n`` and ``rss_offset`` of
        :class:`SequentialState`).

    Returns
    -------
    FastResult
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
    """``align_tol`` on the scale of the design's own angles (see ``fit_regression``).

    The spread is the median of ``1 - |cos|`` between the first active column
    and the other usable columns.
    """
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
    """The loop of :func:`fast_sequential` as named steps.

    Each iteration: :meth:`_select` a move from the statistics; if nothing
    gains, :meth:`_settle` (confirm on recomputed statistics, then update the
    noise); else try the joint re-estimation (:meth:`_joint_move`) or make the
    single move on its exact gain (:meth:`_single_move`); a refused move makes
    the statistics be recomputed (:meth:`_refuted`).  The noise is updated on
    a schedule (:meth:`_scheduled_noise`).
    """

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

        Settled: no basis can be added or deleted with a gain and every
        re-estimation would change its ``log alpha`` by less than ``tol``.  The
        last basis is never deleted: when its optimum is ``alpha = inf`` it
        stays, and that counts as settled.
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
        """Nothing gains at this noise level: confirm it, then update the noise.

        The verdict of rank-one-updated statistics is confirmed on recomputed
        ones (:meth:`SequentialState.resolve`).  Returns True when the fit has
        converged (the noise update changes ``log beta`` by less than ``tol``).
        """
        st = self.st
        if st.freshness < 2:
            st.resolve(confirm=True)
            if not self._select()[2]:
                return False
        dbeta = 0.0 if self.opt.fixed_noise else update_noise(st, self.opt.prior, st.n)
        self.since_noise = 0
        self._record(NOISE)
        self.converged = dbeta < self.opt.tol
        return self.converged

    def _single_move(self, sel: Selection) -> bool:
        """Make the chosen move if its exact gain and its realised evidence agree it gains.

        The gain is computed from the exact statistics of the basis
        (:meth:`SequentialState.exact_candidate`) and must exceed its own
        rounding; a deletion to the exact optimum (``q^2 <= s``) qualifies
        whatever its size (a precision of 1e12 has an evidence share below any
        rounding).  The realised log evidence of the new state, from a fresh
        factorisation, must then not be lower beyond the rounding of the two
        evaluations.  False if either test fails (the state is unchanged).
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
        """The statistics proposed a move that does not gain: recompute them.

        First from a fresh factor (the rank-one updates drift), then confirmed
        (exactly where undetermined, :meth:`SequentialState.resolve`).  A move
        refused on confirmed statistics means that no move is resolvable in
        float64 at this noise level: the fit settles there.  Returns True when
        the fit has converged.
        """
        st = self.st
        if st.freshness == 2:
            return self._settle()
        st.resolve(confirm=st.freshness == 1)
        return False

    def _joint_move(self, sel: Selection, only_reestimates: bool) -> bool:
        """Re-estimate every active precision at once; kept if the realised evidence rises.

        One-at-a-time re-estimation converges slowly on correlated bases (on
        flat directions of the evidence, thousands of steps of 1e-5 nats).
        Tried in turn: the joint maximum of the evidence over the active
        precisions at this noise level (Newton in ``log alpha``,
        :func:`maximise_linearised`: for regression the linearised evidence is
        the evidence itself), and every precision at its one-at-a-time optimum.
        The first whose realised gain exceeds the rounding, plus the gain of
        the best single move unless ``only_reestimates``, is kept.
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
                update_noise(self.st, opt.prior, self.st.n)
                self.since_noise = 0
                self._record(NOISE)

    def _record(self, action: int) -> None:
        """Append the objective (log evidence plus the noise hyperprior term) to the trace."""
        st, prior = self.st, self.opt.prior
        self.trace["log_evidence"].append(st.lml + prior.c * np.log(st.beta) - prior.d * st.beta)
        self.trace["n_active"].append(len(st.active))
        self.trace["beta"].append(st.beta)
        self.trace["action"].append(action)
