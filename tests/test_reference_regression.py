"""Tests of the closed-form reference regression solver (no PyMC import)."""

from __future__ import annotations

import sys
import warnings

import extended_precision
import numpy as np
import pytest
from shared_helpers import one_warning_at_most

from rvm_pymc.basis import KernelBasis
from rvm_pymc.datasets import make_sinc
from rvm_pymc.exceptions import ConvergenceWarning
from rvm_pymc.kernels import RBF
from rvm_pymc.priors import HyperPrior
from rvm_pymc.reference import (
    dense_log_marginal_likelihood,
    fit_regression,
    log_evidence,
    log_marginal_likelihood,
)


def sinc_problem(n=100, gamma=0.1, seed=0):
    X, t, Xt, tt = make_sinc(n_train=n, noise_sd=0.1, random_state=seed)
    basis = KernelBasis(RBF(gamma=gamma), bias=True)
    return basis.fit_transform(X), t, basis.transform(Xt), tt


def dense_sq(Phi, t, res):
    """S_m, Q_m of every column by dense algebra at a fitted result."""
    Pa = Phi[:, res.active]
    b = res.beta
    PS = Pa @ res.cov
    S = b * np.einsum("ij,ij->j", Phi, Phi) - b**2 * np.einsum("ij,ij->j", Phi, PS @ (Pa.T @ Phi))
    Q = b * Phi.T @ t - b**2 * Phi.T @ (PS @ (Pa.T @ t))
    return S, Q


@pytest.mark.parametrize("seed", range(5))
def test_log_evidence_matches_dense_formula(seed):
    rng = np.random.default_rng(seed)
    n, m = rng.integers(5, 40), rng.integers(1, 30)
    Phi = rng.standard_normal((n, m))
    t = rng.standard_normal(n)
    alpha = np.exp(rng.uniform(-3, 3, m))
    beta = float(np.exp(rng.uniform(-2, 2)))
    fast = log_marginal_likelihood(Phi, t, alpha, beta)
    dense = dense_log_marginal_likelihood(Phi, t, alpha, beta)
    assert fast == pytest.approx(dense, rel=1e-8)
    prior = HyperPrior(0.3, 0.2, 0.5, 0.1)
    extra = 0.3 * np.sum(np.log(alpha)) - 0.2 * np.sum(alpha) + 0.5 * np.log(beta) - 0.1 * beta
    assert log_evidence(Phi, t, alpha, beta, prior) == pytest.approx(dense + extra, rel=1e-8)


@pytest.mark.parametrize("method", ["fast", "mackay"])
def test_stationary_conditions_flat_prior(method):
    Phi, t, _, _ = sinc_problem(seed=1)
    res = fit_regression(Phi, t, method=method)
    assert res.converged
    # MacKay fixed point alpha = gamma / mu^2 for every active basis
    np.testing.assert_allclose(res.alpha, res.gamma / res.mean**2, rtol=1e-4)
    # and the noise fixed point
    resid = t - Phi[:, res.active] @ res.mean
    beta_fp = (len(t) - res.gamma.sum()) / (resid @ resid)
    assert res.beta == pytest.approx(beta_fp, rel=1e-4)
    if method == "fast":
        S, Q = dense_sq(Phi, t, res)
        out = np.setdiff1d(np.arange(Phi.shape[1]), res.active)
        # candidates nearly parallel to an active column (|cos| > 1 - align_tol,
        # default 1e-3) are skipped by design; every other one must not improve
        Pn = Phi / np.linalg.norm(Phi, axis=0)
        aligned = np.abs(Pn[:, out].T @ Pn[:, res.active]).max(axis=1) > 1 - 1e-3
        considered = out[~aligned]
        assert considered.size > 0.8 * out.size
        assert np.all(Q[considered] ** 2 <= S[considered] * (1 + 1e-6)), "a basis would improve"


def test_stationary_conditions_gamma_prior():
    Phi, t, _, _ = sinc_problem(n=60, seed=2)
    prior = HyperPrior(a=0.5, b=1e-3, c=2.0, d=1e-3)
    for method in ("mackay", "em"):
        res = fit_regression(Phi, t, method=method, prior=prior, max_iter=20000, tol=1e-8)
        assert res.converged, method
        np.testing.assert_allclose(
            res.alpha, (res.gamma + 2 * prior.a) / (res.mean**2 + 2 * prior.b), rtol=1e-4
        )
        resid = t - Phi[:, res.active] @ res.mean
        beta_fp = (len(t) - res.gamma.sum() + 2 * prior.c) / (resid @ resid + 2 * prior.d)
        assert res.beta == pytest.approx(beta_fp, rel=1e-4)


def test_methods_agree_on_a_unimodal_problem():
    """With a small polynomial basis the evidence has one maximum: all three agree."""
    rng = np.random.default_rng(3)
    x = rng.uniform(-1, 1, 80)
    Phi = np.vander(x, 6, increasing=True)
    t = 0.5 - x + 2 * x**3 + 0.1 * rng.standard_normal(80)
    fits = {m: fit_regression(Phi, t, method=m, max_iter=20000) for m in ("fast", "mackay")}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # EM creeps to alpha = inf
        fits["em"] = fit_regression(Phi, t, method="em", max_iter=20000)
    ref = fits["fast"].log_evidence
    for m, res in fits.items():
        assert res.log_evidence == pytest.approx(ref, rel=1e-6), m
    assert set(fits["fast"].active) <= set(fits["mackay"].active)


def test_methods_share_fixed_points_on_sinc():
    """On sinc the evidence is multimodal and the default starts of the three
    methods can end in different local maxima (see docs); what must hold is
    that the fast solution is a fixed point of the MacKay and EM updates."""
    Phi, t, _, _ = sinc_problem(seed=0)
    fast = fit_regression(Phi, t, method="fast")
    for method in ("mackay", "em"):
        warm = fit_regression(
            Phi,
            t,
            method=method,
            alpha_init=fast.alpha_full(),
            beta_init=fast.beta,
            max_iter=50,
            tol=1e-5,
        )
        assert warm.log_evidence == pytest.approx(fast.log_evidence, rel=1e-6), method
        np.testing.assert_array_equal(warm.active, fast.active)


@pytest.mark.parametrize("method", ["fast", "em"])
def test_evidence_never_decreases(method):
    Phi, t, _, _ = sinc_problem(n=60, seed=4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        res = fit_regression(Phi, t, method=method, max_iter=400)
    trace = res.trace["log_evidence"]
    assert len(trace) > 10
    steps = np.diff(trace)
    assert steps.min() >= -1e-9 * np.abs(trace).max(), steps.min()
    assert trace[-1] > trace[0] + 1.0


def test_predictive_variance_matches_dense():
    Phi, t, Phit, _ = sinc_problem(seed=6)
    res = fit_regression(Phi, t)
    mean, std = res.predict(Phit, return_std=True)
    Pa = Phit[:, res.active]
    dense_var = 1 / res.beta + np.diag(Pa @ res.cov @ Pa.T)
    np.testing.assert_allclose(std**2, dense_var, rtol=1e-10)
    np.testing.assert_allclose(mean, Pa @ res.mean, rtol=1e-12)
    _, f_std = res.predict(Phit, return_std=True, include_noise=False)
    np.testing.assert_allclose(f_std**2, dense_var - 1 / res.beta, rtol=1e-8, atol=1e-14)


def test_sinc_fit_quality_and_sparsity():
    Phi, t, Phit, tt = sinc_problem(seed=7)
    res = fit_regression(Phi, t)
    rmse = np.sqrt(np.mean((res.predict(Phit) - tt) ** 2))
    assert rmse < 0.06
    assert 3 <= res.n_relevance <= 15
    assert 0.07 < res.beta**-0.5 < 0.13  # true noise sd 0.1


def test_agrees_with_sklearn_ard_regression():
    """A linear basis (the raw features) with matching Gamma hyperpriors: our MacKay
    fit and scikit-learn's ARDRegression (same MacKay updates) predict alike."""
    from sklearn.linear_model import ARDRegression

    rng = np.random.default_rng(8)
    X = rng.standard_normal((120, 6))
    t = X @ np.array([1.5, 0, -2.0, 0, 0, 0.7]) + 0.3 * rng.standard_normal(120)
    prior = HyperPrior(a=1e-3, b=1e-3, c=1e-3, d=1e-3)
    ours = fit_regression(X, t, method="mackay", prior=prior, tol=1e-10, max_iter=20000)
    ard = ARDRegression(
        fit_intercept=False,
        max_iter=20000,
        tol=1e-12,
        threshold_lambda=1e12,
        lambda_1=prior.a,
        lambda_2=prior.b,
        alpha_1=prior.c,
        alpha_2=prior.d,
    ).fit(X, t)
    Xt = rng.standard_normal((50, 6))
    np.testing.assert_allclose(ours.predict(Xt), ard.predict(Xt), rtol=1e-4, atol=1e-6)
    assert ours.beta == pytest.approx(ard.alpha_, rel=1e-3)


def test_column_scaling_is_undone():
    Phi, t, Phit, _ = sinc_problem(n=60, seed=9)
    scale = np.exp(np.random.default_rng(0).uniform(-4, 4, Phi.shape[1]))
    a = fit_regression(Phi, t)
    b = fit_regression(Phi * scale, t)
    np.testing.assert_array_equal(a.active, b.active)
    assert a.log_evidence == pytest.approx(b.log_evidence, rel=1e-8)
    np.testing.assert_allclose(a.predict(Phit), b.predict(Phit * scale), rtol=1e-6, atol=1e-9)


def test_fixed_noise_and_duplicate_points():
    Phi, t, _, _ = sinc_problem(n=50, seed=10)
    Phi2 = np.column_stack([Phi, Phi[:, 5]])  # a duplicated basis
    res = fit_regression(Phi2, t, fixed_noise=True, beta_init=80.0)
    assert res.beta == 80.0
    assert not {5, Phi.shape[1]} <= set(res.active), "both copies of a duplicate kept"


def _collinear(n=100, seed=0):
    """100 multiples of one column (the 1-D linear kernel's design) beside a bias column."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1.0, 1.0, n)
    Phi = np.column_stack([np.ones(n), np.outer(x, x)])  # column i + 1 is x * x_i
    return Phi, 2.0 * x + 0.5 + 0.1 * rng.standard_normal(n)


@pytest.mark.parametrize("method", ["mackay", "em"])
def test_parallel_columns_are_one_basis(method):
    """The evidence is flat along parallel columns: full re-estimation keeps one of them,
    at the fast method's evidence and predictions (as EM peers and the fast method do)."""
    Phi, t = _collinear()
    fast = fit_regression(Phi, t)
    res = fit_regression(Phi, t, method=method)
    assert res.converged and res.n_relevance == fast.n_relevance == 2  # the bias and one column
    assert res.log_evidence == pytest.approx(fast.log_evidence, abs=1e-6)
    mean, sd = res.predict(Phi, return_std=True)
    fast_mean, fast_sd = fast.predict(Phi, return_std=True)
    np.testing.assert_allclose(mean, fast_mean, rtol=1e-6)
    np.testing.assert_allclose(sd, fast_sd, rtol=1e-5)
    # a Gamma hyperprior makes the objective depend on how the variance is shared: no merge
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # EM's slow creep under a prior
        prior = HyperPrior(1e-3, 1e-3, 0, 0)
        gamma_prior = fit_regression(Phi, t, method=method, prior=prior, max_iter=200)
    assert gamma_prior.n_relevance == Phi.shape[1]


def test_convergence_warning():
    Phi, t, _, _ = sinc_problem(n=50, seed=11)
    with pytest.warns(ConvergenceWarning, match="did not converge"):
        res = fit_regression(Phi, t, method="mackay", max_iter=3)
    assert not res.converged and res.n_iter == 3


def test_trace_and_result_shapes():
    Phi, t, _, _ = sinc_problem(n=50, seed=12)
    res = fit_regression(Phi, t)
    assert res.trace["log_evidence"].shape == res.trace["n_active"].shape
    assert res.trace["log_evidence"][-1] == pytest.approx(res.log_evidence, rel=1e-9)
    assert np.isinf(res.alpha_full()).sum() == Phi.shape[1] - res.n_relevance
    assert np.count_nonzero(res.coef_full()) == res.n_relevance


def test_reference_does_not_import_pymc():
    import subprocess

    code = "import rvm_pymc.reference, sys; assert 'pymc' not in sys.modules, 'pymc imported'"
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize(
    ("Phi", "t", "kw", "match"),
    [
        (np.ones((5, 2)), [1, 2, np.nan, 4, 5], {}, "t contains non-finite"),
        ([[1.0, np.inf]] * 3, [1, 2, 3], {}, "Phi contains non-finite"),
        (np.ones((5, 2)), [1, 2, 3], {}, "inconsistent numbers of samples"),
        (np.ones((1, 2)), [1.0], {}, "t has 1 sample"),
        (np.ones((0, 2)), [], {}, "Phi has 0 sample"),
        ([["a", "b"], ["c", "d"]], [1, 2], {}, "Phi must be numeric"),
        (np.eye(3), ["x", "y", "z"], {}, "t must be numeric"),
        (np.eye(3), [2.0, 2.0, 2.0], {}, "t is constant"),
        (np.eye(3), [1, 2, 3], {"method": "svd"}, "method must be one of"),
        (np.eye(3), [1, 2, 3], {"prior": {"a": 1.0}}, "a = b = 0"),
        (np.eye(3), [1, 2, 3], {"fixed_noise": True}, "requires beta_init"),
        (np.eye(3), [1, 2, 3], {"beta_init": -1.0}, "beta_init must be finite"),
        (np.eye(3), [1, 2, 3], {"method": "em", "alpha_init": [1.0]}, "alpha_init must have"),
        (np.eye(3), [1, 2, 3], {"align_tol": 1.0}, "align_tol must be in"),
        (np.eye(3), [1e-170, 2e-170, 3e-170], {}, "rescale t"),
        (np.zeros((3, 2)), [1, 2, 3], {}, "no nonzero column"),
    ],
)
def test_bad_input(Phi, t, kw, match):
    with pytest.raises(ValueError, match=match):
        fit_regression(Phi, t, **kw)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_fast_rejects_a_non_finite_float64_design(bad):
    """The fast method reads a float64 array as given (no copy, no separate
    finiteness pass): its column norms must still catch a NaN or inf."""
    Phi = np.asfortranarray(np.random.default_rng(0).standard_normal((30, 4)))
    Phi[3, 2] = bad
    with pytest.raises(ValueError, match="Phi contains non-finite"):
        fit_regression(Phi, np.linspace(0.0, 1.0, 30))


def test_zero_width_kernel_is_rejected():
    with pytest.raises(ValueError, match="gamma"):
        KernelBasis(RBF(gamma=0.0))


@pytest.mark.parametrize("method", ["fast", "mackay"])
def test_input_is_not_modified(method):
    Phi, t, _, _ = sinc_problem(n=30, seed=13)
    P0, t0 = Phi.copy(), t.copy()
    fit_regression(Phi, t, method=method)
    np.testing.assert_array_equal(Phi, P0)
    np.testing.assert_array_equal(t, t0)


@pytest.mark.parametrize(("seed", "gamma_idx", "method"), [(0, 2, "fast"), (2, 1, "mackay")])
def test_no_cancellation_in_sparsity_factors(seed, gamma_idx, method):
    """Well-determined weights (alpha << s) on large-scale targets once made
    ``alpha - S`` cancel, giving s < 0 and NaN in log1p; the factors now come
    from the posterior there.  Friedman #2 targets have sd ~ 300 (beta ~ 1e-4)."""
    from sklearn.model_selection import KFold

    from rvm_pymc.datasets import make_friedman2

    X, t, _, _ = make_friedman2(random_state=seed)
    tr, _ = next(KFold(5, shuffle=True, random_state=seed).split(X))
    Xs = (X[tr] - X[tr].mean(0)) / X[tr].std(0)
    Phi = KernelBasis(RBF(gamma=np.geomspace(0.005, 0.5, 9)[gamma_idx])).fit_transform(Xs)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        res = fit_regression(Phi, t[tr], method=method)
    assert res.converged
    np.testing.assert_allclose(res.alpha, res.gamma / res.mean**2, rtol=1e-4)


@pytest.mark.parametrize(("method", "offset"), [("fast", 1e5), ("fast", 1e8), ("mackay", 1e5)])
def test_target_with_a_large_mean(method, offset):
    """A large mean makes S a difference of large numbers (once: NaN moves, no
    convergence, or a failed Cholesky from the initial precisions)."""
    Phi, t, _, _ = sinc_problem(n=60, gamma=0.1, seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = fit_regression(Phi, t + offset, method=method)
    assert res.converged
    assert 0 in res.active  # the bias carries the offset
    assert res.mean[0] * Phi[0, 0] == pytest.approx(offset, rel=1e-3)
    assert 0.05 < res.beta**-0.5 < 0.2  # noise sd 0.1


@pytest.mark.parametrize("scale", [1e-100, 1e100])
def test_extreme_column_scales_are_equivariant(scale):
    Phi, t, Phit, _ = sinc_problem(n=60, seed=0)
    a = fit_regression(Phi, t)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        b = fit_regression(Phi * scale, t)
    np.testing.assert_array_equal(a.active, b.active)
    assert b.log_marginal_likelihood == pytest.approx(a.log_marginal_likelihood, rel=1e-10)
    np.testing.assert_allclose(b.predict(Phit * scale), a.predict(Phit), rtol=1e-8, atol=1e-12)


def test_unrepresentable_scale_is_refused():
    Phi, t, _, _ = sinc_problem(n=40, seed=0)
    with pytest.raises(ValueError, match="rescale the columns of Phi"):
        fit_regression(Phi * 1e-170, t)


def test_fast_settles_when_the_last_basis_would_leave():
    """Centred targets that a wide kernel cannot explain (pure noise): the evidence rises
    towards the empty model, the last basis (never deleted) wants alpha = inf.  The fast
    method used to cycle on noise updates to max_iter (1820 iterations, ConvergenceWarning).
    (The sinc targets this test used before are explained by a pair of nearly parallel
    columns since the fast method starts with a free first weight: 3 bases, 0.3 nats above
    MacKay's one-basis fit, so they no longer reach this state.)"""
    rng = np.random.default_rng(0)
    X = np.linspace(-10, 10, 40)[:, None]
    t = rng.standard_normal(40)
    t = (t - t.mean()) / t.std()
    Phi = KernelBasis(RBF(gamma=0.01)).fit_transform(X)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = fit_regression(Phi, t, noise_update_start=0)
        default = fit_regression(Phi, t)
    for fit in (res, default):
        assert fit.converged and fit.n_iter < 200 and fit.active.size == 1
        # the noise explains (almost) all of the centred target
        assert fit.beta == pytest.approx(1.0, rel=0.05)


# -- degenerate fits (issue 13): quick, one clear warning, no numpy RuntimeWarning --------


@pytest.mark.parametrize("method", ["fast", "mackay", "em"])
@pytest.mark.parametrize("n", [2, 3, 4, 5])
def test_few_points_through_the_estimator(method, n):
    from rvm_pymc import RVR

    rng = np.random.default_rng(n)
    X = rng.standard_normal((n, 2))
    y = rng.standard_normal(n)
    est, _ = one_warning_at_most(lambda: RVR(gamma="scale", solver=method, max_iter=300).fit(X, y))
    mean, std = est.predict(X, return_std=True)
    assert np.all(np.isfinite(mean)) and np.all(np.isfinite(std)) and np.all(std > 0)


@pytest.mark.parametrize("gamma", [0.05, 0.5])
def test_em_prunes_to_near_mackay_sparsity(gamma):
    """EM precisions only creep towards infinity; the data-scaled rule prunes them."""
    Phi, t, _, _ = sinc_problem(n=100, gamma=gamma, seed=0)
    mackay = fit_regression(Phi, t, method="mackay")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # EM converges slowly
        em = fit_regression(Phi, t, method="em")  # default max_iter (5000)
    assert em.n_relevance <= 2 * mackay.n_relevance + 5, (em.n_relevance, mackay.n_relevance)
    assert em.log_evidence > mackay.log_evidence - 1.0
    # every pruned basis is one whose optimum is far beyond the data scale at EM's result
    S, Q = dense_sq(Phi, t, em)
    out = np.setdiff1d(np.arange(Phi.shape[1]), em.active)
    gain = np.where(
        Q[out] ** 2 > S[out], 0.5 * (Q[out] ** 2 / S[out] - 1 - np.log(Q[out] ** 2 / S[out])), 0.0
    )
    assert gain.max() < 0.05


@extended_precision.needs_longdouble
@pytest.mark.parametrize("gamma", [1e-3, 1e-2, 0.1])
def test_fast_trace_is_realised_on_ill_conditioned_kernels(gamma):
    """Smooth kernels make S, Q differences of large numbers: every recorded gain must be
    real (checked against a fresh factorisation), the trace monotone and never above the
    evidence of the returned state, which the dense N x N formula confirms."""
    rng = np.random.default_rng(7)
    X = rng.standard_normal((300, 3))
    t = np.sinc(X[:, 0]) + 0.1 * rng.standard_normal(300)
    Phi = KernelBasis(RBF(gamma=gamma), bias=True).fit_transform(X)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        res = fit_regression(Phi, t - t.mean())
    trace = res.trace["log_evidence"]
    scale = 1.0 + abs(res.log_evidence)
    assert np.all(np.diff(trace) >= -1e-9 * scale)
    assert trace.max() <= res.log_evidence + 1e-7 * scale
    # the oracle in long double: at gamma 1e-3 the condition number of the posterior
    # precision reaches ~1e12 and the float64 N x N formula is off by ~1e-5 here
    exact = extended_precision.lml(Phi[:, res.active], t - t.mean(), res.alpha, res.beta)
    assert res.log_evidence == pytest.approx(exact, rel=1e-8, abs=1e-6)


def test_fast_noise_updates_start_late_for_a_better_optimum():
    """Noise updates from the first moves let a large early noise estimate explain the
    signal away: on sinc with a wide kernel (gamma 0.03) the default start (20 iterations
    at beta_init) reached 3.9-47 nats more evidence than updates from the start, before
    the first weight started free; now more on average, and never 1 nat below MacKay's."""
    gains = []
    for seed in range(4):
        d = make_sinc(n_train=100, n_test=10, random_state=seed)
        Phi = KernelBasis(RBF(gamma=0.03), bias=True).fit_transform(d.X_train)
        t = (d.t_train - d.t_train.mean()) / d.t_train.std()
        late = fit_regression(Phi, t, method="fast")
        early = fit_regression(Phi, t, method="fast", noise_update_start=0)
        assert late.converged and early.converged
        mackay = fit_regression(Phi, t, method="mackay")
        gains.append(late.log_evidence - early.log_evidence)
        assert late.log_evidence > mackay.log_evidence - 1.0
    # Since the first weight starts free (2026-11-26) the early updates no longer fall
    # 40-45 nats short on seeds 0 and 1; the late start still gains on average
    # (measured: +0.72, -0.68, +2.75, +5.08 nats).
    assert sum(gains) > 0, gains
    with pytest.raises(ValueError, match="noise_update_start must be an integer >= 0"):
        fit_regression(Phi, t, method="fast", noise_update_start=-1)


@pytest.mark.parametrize("seed", range(5))
def test_fast_warm_start_from_a_neighbouring_width(seed):
    """``alpha_init`` (with ``beta_init``) starts the fast solver from another fit's bases.

    From its own solution it stays there or climbs (the solver only makes moves
    that raise the evidence); from a fit at a width 10 % away it ends within a
    nat of the cold start there (another local optimum) in fewer iterations.
    """
    P0, t, _, _ = sinc_problem(n=300, gamma=0.1, seed=seed)
    P1 = sinc_problem(n=300, gamma=0.11, seed=seed)[0]
    fit0 = fit_regression(P0, t)
    warm = {"beta_init": fit0.beta, "noise_update_start": 0, "alpha_init": fit0.alpha_full()}
    again = fit_regression(P0, t, **warm)
    assert again.log_evidence >= fit0.log_evidence - 1e-9
    assert again.n_iter <= 10
    cold, near = fit_regression(P1, t), fit_regression(P1, t, **warm)
    assert near.converged
    assert near.log_evidence > cold.log_evidence - 1.0
    assert near.n_iter < cold.n_iter
