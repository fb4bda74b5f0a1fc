"""The fast method's statistics are exact where the rank-one updates are not (issue 12, item 1)."""

from __future__ import annotations

import warnings

import extended_precision
import numpy as np
import pytest

import rvm_pymc.reference._sequential_factor as sequential_factor
from rvm_pymc import RVR
from rvm_pymc._core.gaussian import regression_factor
from rvm_pymc._core.rowqr import column_triangle
from rvm_pymc._core.sparsity import active_sq
from rvm_pymc.basis import KernelBasis
from rvm_pymc.estimators import _rows
from rvm_pymc.kernels import RBF
from rvm_pymc.reference import dense_log_marginal_likelihood, fit_regression
from rvm_pymc.reference._sequential_state import SequentialState
from rvm_pymc.reference.fast import select_move


def one_feature_3d(n, seed, gamma_factor=1.0):
    """3-D normal inputs where only x_0 matters: y = sinc(x_0) + N(0, 0.1^2)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 3))
    t = np.sinc(X[:, 0]) + 0.1 * rng.standard_normal(n)
    gamma = gamma_factor / (3 * X.var())  # the estimators' gamma="scale"
    Phi = KernelBasis(RBF(gamma=gamma), bias=True).fit_transform(X)
    return Phi, t - t.mean()


def dense_sq(Phin, t, active, alpha, beta):
    """S_m, Q_m of every column from the N x N covariance (explicit inverse)."""
    Pa = Phin[:, active]
    C = np.eye(t.size) / beta + (Pa / alpha) @ Pa.T
    Ci = np.linalg.inv(C)
    return np.einsum("ij,ij->j", Phin, Ci @ Phin), Phin.T @ (Ci @ t)


@extended_precision.needs_longdouble
@pytest.mark.parametrize("gamma_factor", [1.0, 0.01])
def test_exact_candidate_matches_dense_formulas(gamma_factor):
    # gamma_factor = 0.01: a very smooth kernel, the columns nearly collinear
    # (condition number of the active Gram matrix ~1e10), where the rank-one
    # form beta - beta^2 G^T Sigma G cancels.
    Phi, t = one_feature_3d(120, 3, gamma_factor)
    Phin = Phi / np.linalg.norm(Phi, axis=0)
    res = fit_regression(Phi, t)
    active = list(np.asarray(res.active))
    alpha = res.alpha / np.linalg.norm(Phi[:, active], axis=0) ** 2
    st = SequentialState(Phin, t, np.ones(Phi.shape[1], bool), res.beta)
    st.active, st.alpha = list(active), alpha.copy()
    st.G = Phin.T @ Phin[:, active]
    st.resolve()
    S, Q = dense_sq(Phin, t, active, alpha, res.beta)
    for j in range(Phi.shape[1]):
        S_j, Q_j = st.exact_candidate(j)[3:5]
        assert S_j > 0
        assert S_j == pytest.approx(S[j], rel=1e-7, abs=1e-9 * res.beta)
        assert Q_j == pytest.approx(Q[j], rel=1e-7, abs=1e-9 * res.beta * np.linalg.norm(t))
    # the gain of re-estimating an active basis agrees with the realised change
    i = 0
    j = active[i]
    gain, new_alpha, relevant = st.exact_candidate(j)[:3]
    if relevant:
        alpha2 = alpha.copy()
        alpha2[i] = new_alpha
        # in long double: with gamma_factor 0.01 the float64 N x N formula is off by ~1e-6
        before = extended_precision.lml(Phin[:, active], t, alpha, res.beta)
        after = extended_precision.lml(Phin[:, active], t, alpha2, res.beta)
        assert after - before == pytest.approx(gain, rel=1e-5, abs=1e-7)
    s, q = active_sq(alpha, S[active], Q[active], np.diag(st.Sigma), st.mu)
    assert np.all(s >= 0) and np.all(np.isfinite(q))


@pytest.mark.parametrize("seed", [0, 2])
def test_fast_on_smooth_3d_kernel_is_exact_and_quiet(seed):
    """The issue's failing case: 3-D inputs, one feature matters, gamma='scale'.

    No NumPy warnings, every recorded evidence is realised (the trace never
    exceeds the evidence of the returned state), and the fit is close to
    MacKay's in test error.
    """
    Phi, t = one_feature_3d(600, seed)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any RuntimeWarning (NaN / inf / overflow) fails
        fast = fit_regression(Phi, t)
        mackay = fit_regression(Phi, t, method="mackay")
    assert fast.converged
    trace = np.asarray(fast.trace["log_evidence"])
    assert trace.max() <= fast.log_evidence + 1e-9 * abs(fast.log_evidence)
    # the evidence of the returned state, checked by the N x N oracle
    dense = dense_log_marginal_likelihood(Phi[:, fast.active], t, fast.alpha, fast.beta)
    assert fast.log_marginal_likelihood == pytest.approx(dense, rel=1e-9)
    # noise level of the two fits within 10% (both near the true 0.1 sd)
    assert abs(np.log(fast.beta / mackay.beta)) < 0.2


def test_tiny_precisions_on_a_smooth_kernel_converge():
    """A width 0.3 x 'scale' drives precisions to ~1e-8 (weights cancelling).

    The rank-one and even freshly computed ``S`` of many candidates is then
    rounding: before, refuted additions were offered again after every noise
    update and the fit cycled to max_iter (21020 iterations, 25 s, hundreds of
    'divide by zero' warnings); now it converges quietly.
    """
    from rvm_pymc import RVR

    rng = np.random.default_rng(0)
    X = rng.standard_normal((2000, 3))
    f = np.sinc(X[:, 0])
    y = f[:1000] + 0.1 * rng.standard_normal(1000)
    X = X[:1000]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        est = RVR(gamma=0.3 / (3 * X.var())).fit(X, y)
    assert est.converged_
    assert est.n_iter_ < 3000


def _state_with_an_uninformed_basis():
    """A regression state whose active basis 0 the data do not inform: ``s_0 = 0``.

    ``alpha_0 Sigma_00 = 1`` (posterior variance = prior variance), so ``s`` and
    ``q`` come from ``S``, ``Q``, here at rounding level: ``S_0`` a tiny negative
    number (``s_0`` clipped to 0), ``Q_0`` a tiny positive one (``q_0^2 > s_0``).
    """
    st = object.__new__(SequentialState)
    st.m, st.usable, st.all_usable = 4, np.ones(4, dtype=bool), True
    st.active, st.alpha = [0, 1], np.array([2.0, 3.0])
    st.Sigma, st.mu = np.diag([0.5, 0.1]), np.array([1e-9, 0.4])
    st.S, st.Q = np.array([-1e-17, 5.0, 1.0, 0.5]), np.array([1e-9, 2.0, 2.0, 0.1])
    st.G, st._addable_cache = np.zeros((4, 2)), (None, None)
    return st


def test_a_basis_the_data_do_not_inform_is_not_relevant():
    # s = 0 made it relevant at precision s^2 / (q^2 - s) = 0, a NaN gain and, in the
    # classifier's convergence test, log(0): a RuntimeWarning, a test that never passes
    st = _state_with_an_uninformed_basis()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        move = select_move(st, 0.0)
        np.log(move.new_alpha[np.asarray(st.active)])
    assert not move.relevant[0] and move.new_alpha[0] == np.inf
    assert move.deletions[0] and move.j == 0  # deleted first, as every leaving basis
    assert move.relevant[1] and np.isfinite(move.new_alpha[1])  # the others as before
    assert move.relevant[2] and not move.relevant[3]  # q^2 > s, q^2 < s out of the model


@pytest.mark.parametrize("compressed", [False, True])
def test_the_rows_of_an_active_set_are_kept_between_its_factorisations(monkeypatch, compressed):
    # A smooth 3-D kernel at N = 1000: the posterior precision is ill-conditioned and many
    # factorisations take the QR route, which needs the rows (column_triangle) of the
    # active columns.  Re-estimations and noise updates keep the active set and its rows;
    # a deletion derives them from the larger set's.  The fit is the one that makes the
    # rows of every set from its columns, none kept; so is the fit of the row compression
    # (its rows R and z stand in for the design and the targets).
    if compressed:
        monkeypatch.setattr(_rows, "ROW_BLOCKED_ENTRIES", 0)
        monkeypatch.setattr(_rows, "ROW_BLOCKED_RATIO", 0)
    rng = np.random.default_rng(1)
    X = rng.uniform(-5.0, 5.0, size=(1000, 3))
    t = np.sinc(np.linalg.norm(X, axis=1) / np.pi) + 0.1 * rng.standard_normal(1000)
    made = _count_rows(monkeypatch)
    kept = RVR(gamma="scale").fit(X, t)
    kept_made = dict(made)
    afresh_made = [0]

    def afresh(self, key, columns, current, drop=None):
        assert not self.kept

        def rows():
            afresh_made[0] += 1
            return column_triangle(columns, self.t)

        return rows

    monkeypatch.setattr(sequential_factor.ActiveRows, "getter", afresh)
    fresh = RVR(gamma="scale").fit(X, t)
    assert kept_made["without"] >= 1
    assert kept_made["rows"] + kept_made["without"] < afresh_made[0]
    assert list(kept.relevance_indices_) == list(fresh.relevance_indices_)
    assert abs(kept.log_evidence_ - fresh.log_evidence_) <= 1e-9 * abs(fresh.log_evidence_)


def _count_rows(monkeypatch) -> dict:
    """Count the rows of active sets made from columns and derived by a deletion."""
    made = {"rows": 0, "without": 0}
    for name, what in (("column_triangle", "rows"), ("triangle_without", "without")):
        f = getattr(sequential_factor, name)

        def counted(*args, _f=f, _what=what, **kw):
            made[_what] += 1
            return _f(*args, **kw)

        monkeypatch.setattr(sequential_factor, name, counted)
    return made


@extended_precision.needs_longdouble
def test_a_deletion_on_the_qr_route_from_a_set_factored_by_cholesky():
    # The condition estimate of a subset can exceed the full set's: here the 7 bases are
    # factored by Cholesky (cond just below eps^-1/2, no rows kept) and deleting basis 4
    # or 5 takes the QR route, whose rows then come from the remaining columns.
    rng = np.random.default_rng(3)
    for _ in range(3):
        k = rng.integers(5, 10)
        n = rng.integers(3, k)
        Phi = rng.standard_normal((n, k))
        Phi /= np.linalg.norm(Phi, axis=0)
        alpha = 10 ** rng.uniform(-1, 1, k)
    lo, hi = 1e-12, 1.0  # the largest scale of alpha at which the full set is ill-conditioned
    for _ in range(60):
        mid = np.sqrt(lo * hi)
        full = regression_factor(Phi, np.ones(n), alpha * mid, 1.0)
        lo, hi = (mid, hi) if full.qr else (lo, mid)
    st = SequentialState(Phi, np.ones(n), np.ones(k, bool), 1.0)
    st.start(np.arange(k), alpha * hi)
    limit = 1.0 / np.sqrt(np.finfo(float).eps)  # above it, the QR route
    assert st.factor().cond <= limit
    routes = []
    for j in range(k):
        f = st.factorise_move(j, np.inf)
        keep = np.arange(k) != j
        exact = extended_precision.lml(Phi[:, keep], np.ones(n), alpha[keep] * hi, 1.0)
        assert abs(f.lml - exact) <= 1e-9 * (1.0 + abs(exact))
        routes.append(f.cond > limit)
    assert any(routes)
