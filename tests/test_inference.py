"""Type-II MAP in PyMC against the reference solver and dense oracles.

Every graph is compiled with ``mode="FAST_COMPILE"`` (about a second, no C or
Numba compilation on a cold cache).  The sampling tests are in
``tests/test_sampling.py``.
"""

import numpy as np
import pymc as pm
import pytest
from scipy.special import expit
from shared_helpers import numpy_laplace_evidence, two_moons, type_ii_value

from rvm_pymc import inference, models
from rvm_pymc.exceptions import ConvergenceWarning
from rvm_pymc.priors import resolve_prior
from rvm_pymc.reference import (
    fit_classification,
    fit_regression,
    log_evidence,
    regression_posterior,
)
from rvm_pymc.reference.classification import laplace_posterior

pytestmark = pytest.mark.pymc
FAST = {"mode": "FAST_COMPILE"}


def _rbf(x, centres, width):
    d2 = ((x[:, None, :] - centres[None, :, :]) ** 2).sum(-1)
    return np.column_stack([np.ones(len(x)), np.exp(-d2 / (2 * width**2))])


def _sinc(seed, n=50):
    """Noisy sinc with 5 Gaussian bumps of width sqrt(2) and a bias: a unimodal evidence."""
    centres, width = np.linspace(-4, 4, 5), np.sqrt(2.0)
    rng = np.random.default_rng(seed)
    x = np.sort(rng.uniform(-5, 5, n))
    t = np.sinc(x / np.pi) + 0.1 * rng.standard_normal(n)
    t = (t - t.mean()) / t.std()
    return x, _rbf(x[:, None], centres[:, None], width), t


# ------------------------------------------------------------------ regression


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("prior", ["weakly_informative", {"a": 0.5, "b": 1e-3, "c": 2, "d": 1e-3}])
def test_regression_map_matches_reference_mackay(seed, prior):
    _, Phi, t = _sinc(seed)
    fit = inference.fit_map(
        models.regression_marginal(Phi, t, prior=prior), draws=50, compile_kwargs=FAST
    )
    ref = fit_regression(Phi, t, method="mackay", prior=prior, tol=1e-12, max_iter=100_000)
    assert ref.converged and fit.attrs["converged"]
    alpha_ref = ref.alpha_full()
    small = alpha_ref < 1e3
    assert small.sum() >= 3
    np.testing.assert_allclose(type_ii_value(fit, "alpha")[small], alpha_ref[small], rtol=1e-3)
    assert type_ii_value(fit, "beta") == pytest.approx(ref.beta, rel=1e-4)
    assert fit.attrs["log_evidence"] == pytest.approx(ref.log_evidence, rel=1e-6)


def test_regression_map_holds_reference_optimum_of_kernel_problem():
    """One basis per training point: the objective is multimodal, so start where MacKay ended."""
    rng = np.random.default_rng(3)
    x = np.sort(rng.uniform(-5, 5, 40))
    t = np.sinc(x / np.pi) + 0.1 * rng.standard_normal(40)
    t = (t - t.mean()) / t.std()
    Phi = _rbf(x[:, None], x[::3, None], 1.0)
    prior = "weakly_informative"
    ref = fit_regression(Phi, t, method="mackay", prior=prior, tol=1e-12, max_iter=100_000)
    alpha_ref = ref.alpha_full()
    assert np.all(np.isfinite(alpha_ref))  # a proper prior bounds every alpha
    fit = inference.fit_map(
        models.regression_marginal(Phi, t, prior=prior),
        initvals={"log_alpha": np.log(alpha_ref), "log_beta": np.log(ref.beta)},
        draws=20,
        compile_kwargs=FAST,
    )
    small = alpha_ref < 1e3
    np.testing.assert_allclose(type_ii_value(fit, "alpha")[small], alpha_ref[small], rtol=1e-3)
    assert type_ii_value(fit, "beta") == pytest.approx(ref.beta, rel=1e-4)
    assert fit.attrs["log_evidence"] == pytest.approx(ref.log_evidence, rel=1e-6)


def test_regression_map_survives_a_first_step_into_nan():
    """Regression test: on iris (duplicate rows) the first full-gradient L-BFGS-B step
    (log beta + 34) made the posterior precision numerically singular, the objective NaN,
    and the fit stopped at its start with 'ABNORMAL' after 0 iterations."""
    import warnings

    from sklearn.datasets import load_iris

    from rvm_pymc.exceptions import ConvergenceWarning

    X, y = load_iris(return_X_y=True)
    Phi = np.column_stack([np.ones(len(X)), np.exp(-((X[:, None] - X[None]) ** 2).sum(-1))])
    model = models.regression_marginal(Phi, y.astype(float), prior="evidence")
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        fit = inference.fit_map(model, draws=5, compile_kwargs=FAST)
    assert fit.attrs["converged"] and fit.attrs["n_iter"] > 10
    ref = fit_regression(Phi, y.astype(float), method="fast")
    assert fit.attrs["log_evidence"] > ref.log_evidence - 2.0  # the same region, not the start


def test_map_objective_is_not_the_find_map_objective():
    """Regression test for the Jacobian convention of docs/design.md section 1.

    On the same model written in the precisions (``alpha ~ Gamma``),
    ``logp(jacobian=True)`` is our objective and ``pm.find_MAP`` maximises
    ``logp(jacobian=False)``, whose optimum is ``alpha = (gamma + 2(a - 1))/(mu^2 + 2b)``
    instead of Tipping's ``(gamma + 2a)/(mu^2 + 2b)``.
    """
    _, Phi, t = _sinc(4)
    prior = resolve_prior({"a": 2.0, "b": 0.1, "c": 2.0, "d": 0.1})
    ours = models.regression_marginal(Phi, t, prior=prior)
    with pm.Model(coords=ours.coords) as precisions:
        alpha = pm.Gamma("alpha", alpha=prior.a, beta=prior.b, dims="basis")
        beta = pm.Gamma("beta", alpha=prior.c, beta=prior.d)
        pm.CustomDist(
            "t_obs",
            pm.math.log(alpha),
            pm.math.log(beta),
            pm.math.constant(Phi),
            logp=models.marginal_logp,
            signature="(m),(),(n,m)->(n)",
            observed=t,
        )
    point = {"log_alpha": np.linspace(-1, 3, 6), "log_beta": 1.5}
    tpoint = {"alpha_log__": point["log_alpha"], "beta_log__": point["log_beta"]}
    ours_lp = float(ours.compile_logp(mode="FAST_COMPILE")(point))
    jac = float(precisions.compile_logp(jacobian=True, mode="FAST_COMPILE")(tpoint))
    nojac = float(precisions.compile_logp(jacobian=False, mode="FAST_COMPILE")(tpoint))
    assert jac == pytest.approx(ours_lp, rel=1e-10)
    assert jac - nojac == pytest.approx(point["log_alpha"].sum() + point["log_beta"], rel=1e-10)

    fit = inference.fit_map(ours, draws=10, compile_kwargs=FAST)
    with precisions:
        fm = pm.find_MAP(
            progressbar=False,
            compile_kwargs=FAST,
            jitter=False,
            return_inferencedata=True,
            maxiter=5000,
            gtol=1e-10,
        )

    def fixed_point_residual(alpha, beta, shift):
        post = regression_posterior(Phi, t, alpha, beta)
        gamma = 1.0 - alpha * np.diag(post.cov)
        new = (gamma + 2 * (prior.a + shift)) / (post.mean**2 + 2 * prior.b)
        return np.max(np.abs(np.log(new / alpha)))

    a_ours, b_ours = type_ii_value(fit, "alpha"), float(type_ii_value(fit, "beta"))
    a_fm = fm.posterior["alpha"].values.reshape(-1)  # one chain, one draw: the optimum
    b_fm = float(fm.posterior["beta"].values.squeeze())
    assert fixed_point_residual(a_ours, b_ours, 0.0) < 1e-6
    assert fixed_point_residual(a_fm, b_fm, -1.0) < 1e-4
    assert fixed_point_residual(a_fm, b_fm, 0.0) > 1e-2
    assert np.max(np.abs(np.log(a_fm / a_ours))) > 0.05


def test_map_datatree_is_the_gaussian_posterior():
    _, Phi, t = _sinc(5)
    fit = inference.fit_map(
        models.regression_marginal(Phi, t, basis_names=[f"b{i}" for i in range(6)]),
        draws=4000,
        random_seed=1,
        compile_kwargs=FAST,
    )
    assert {"posterior", "sample_stats", "log_likelihood", "observed_data"} <= set(fit.children)
    post = fit["posterior"]
    assert post["w"].dims == ("chain", "draw", "basis")
    assert list(post["basis"].values) == [f"b{i}" for i in range(6)]
    assert fit["log_likelihood"]["t_obs"].shape == (2, 4000, 50)
    assert "alpha" not in post and "log_alpha" not in post  # point values, not draws
    np.testing.assert_array_equal(fit["observed_data"]["t_obs"].values, t)
    g = regression_posterior(
        Phi, t, type_ii_value(fit, "alpha"), float(type_ii_value(fit, "beta"))
    )
    w = post["w"].values[0]
    se = np.sqrt(np.diag(g.cov) / 4000)
    assert np.all(np.abs(w.mean(0) - g.mean) < 4 * se)
    np.testing.assert_allclose(np.cov(w, rowvar=False), g.cov, atol=0.1 * np.max(np.diag(g.cov)))
    # pointwise log-likelihood of each draw
    beta = float(type_ii_value(fit, "beta"))
    r = t - Phi @ w[7]
    want = 0.5 * np.log(beta / (2 * np.pi)) - 0.5 * beta * r**2
    np.testing.assert_allclose(fit["log_likelihood"]["t_obs"].values[0, 7], want, rtol=1e-12)
    assert fit.attrs["rvm_inference"] == "map"
    want_j = log_evidence(Phi, t, type_ii_value(fit, "alpha"), beta, "weakly_informative")
    assert fit.attrs["log_evidence"] == pytest.approx(want_j, rel=1e-12)


def test_rbf_width_map_maximises_the_profile_evidence():
    """The evidence chooses the kernel width: the MAP width is a maximum of the profile.

    The profile ``max_{alpha, beta} J(alpha, beta, l) + log p(log l)`` is computed
    with reference fits; it is bimodal here, so the check is local (+-0.15 in log l).
    """
    from scipy.optimize import minimize_scalar
    from scipy.stats import norm

    rng = np.random.default_rng(6)
    x = np.sort(rng.uniform(-5, 5, 40))
    t = np.sinc(x / np.pi) + 0.1 * rng.standard_normal(40)
    t = (t - t.mean()) / t.std()
    centres = np.linspace(-4, 4, 6)
    prior = "weakly_informative"

    def profile(lls):
        Phi = models.rbf_design(x[:, None], centres[:, None], lls)
        ref = fit_regression(Phi, t, method="mackay", prior=prior, tol=1e-12, max_iter=100_000)
        return ref.log_evidence + norm.logpdf(lls, 0.0, 1.0), ref

    model = models.regression_marginal_rbf(
        x, t, centres=centres, prior=prior, length_scale_prior=(0.0, 1.0)
    )
    fit = inference.fit_map(model, draws=10, compile_kwargs=FAST)
    lls = float(type_ii_value(fit, "log_length_scale"))
    best = minimize_scalar(
        lambda v: -profile(v)[0],
        bounds=(lls - 0.15, lls + 0.15),
        method="bounded",
        options={"xatol": 1e-7},
    )
    assert lls == pytest.approx(best.x, abs=1e-3)
    value, ref = profile(lls)
    np.testing.assert_allclose(type_ii_value(fit, "alpha"), ref.alpha_full(), rtol=1e-4)
    Phi = models.rbf_design(x[:, None], centres[:, None], lls)
    want = log_evidence(
        Phi, t, type_ii_value(fit, "alpha"), float(type_ii_value(fit, "beta")), prior
    )
    assert fit.attrs["log_evidence"] == pytest.approx(want, rel=1e-10)
    assert value == pytest.approx(want + norm.logpdf(lls, 0.0, 1.0), rel=1e-8)
    assert fit["posterior"]["w"].shape == (2, 10, 7)


def test_fit_map_argument_errors():
    _, Phi, t = _sinc(7, n=10)
    with pytest.raises(ValueError, match="regression_marginal"):
        inference.fit_map(models.regression_joint(Phi, t))
    marginal = models.regression_marginal(Phi, t)
    with pytest.raises(ValueError, match="draws"):
        inference.fit_map(marginal, draws=0)
    with pytest.raises(ValueError, match="laplace"):
        inference.fit_map(marginal, laplace="tipping")
    with pytest.raises(ValueError, match="gtol"):
        inference.fit_map(marginal, gtol=-1.0)
    with pytest.raises(ValueError, match="gtol"):
        inference.fit_map(marginal, gtol=True)
    # a NumPy scalar is a number (np.float32 is no subclass of float)
    assert inference.optimise_map(marginal, gtol=np.float32(1e-6), compile_kwargs=FAST).converged
    y = (t > 0).astype(int)
    with pytest.raises(ValueError, match="centred"):
        inference.fit_map(models.classification_binary(Phi, y, parametrization="non_centred"))
    with pytest.raises(ValueError, match="compile_kwargs"):
        inference.fit_map(marginal, compile_kwargs="FAST_COMPILE")
    with pytest.raises(ValueError, match="initvals"):
        inference.fit_map(marginal, initvals={"log_alpha": np.zeros(3)})
    with pytest.raises(ValueError, match="initvals"):
        inference.fit_map(marginal, initvals={"alpha": np.ones(6)})
    with marginal:
        pm.set_data({"Phi": 2.0 * Phi})
    with pytest.raises(ValueError, match="PhiTPhi"):
        inference.fit_map(marginal)


# -------------------------------------------------------------- classification


@pytest.mark.parametrize("prior", ["evidence", "weakly_informative"])
def test_binary_map_matches_reference_fixed_point(prior):
    X, y, centres = two_moons(0)
    Phi = _rbf(X, centres, np.sqrt(2.0))
    ref = fit_classification(Phi, y, method="mackay", prior=prior, tol=1e-10, max_iter=20_000)
    fit = inference.fit_map(
        models.classification_binary(Phi, y, prior=prior),
        laplace="tipping",
        gtol=1e-10,
        draws=10,
        compile_kwargs=FAST,
    )
    alpha = type_ii_value(fit, "alpha")
    if prior == "evidence":
        np.testing.assert_array_equal(np.flatnonzero(alpha < 1e8), ref.active)
    else:
        # With a proper prior every alpha stays finite (below (1 + 2a)/(2b) = 150) and
        # the reference keeps every basis: both are the same fixed point
        assert ref.active.size == 5 and np.all(alpha < 150)
    active = ref.active
    np.testing.assert_allclose(alpha[active], ref.alpha, rtol=1e-4)
    Pt = _rbf(np.random.default_rng(9).standard_normal((300, 2)), centres, np.sqrt(2.0))
    lp = laplace_posterior(Phi[:, active], y, alpha[active])
    mu = Pt[:, active] @ lp.mean[:, 0]
    var = np.einsum("ij,jk,ik->i", Pt[:, active], lp.cov, Pt[:, active])
    p_pymc = expit(mu / np.sqrt(1 + np.pi * var / 8))
    np.testing.assert_allclose(p_pymc, ref.predict_proba(Pt)[:, 1], atol=1e-3)


def test_softmax_map_matches_reference_fixed_point():
    rng = np.random.default_rng(2)
    X = rng.standard_normal((120, 2))
    y = np.digitize(X[:, 0] + 0.5 * X[:, 1] + 0.3 * rng.standard_normal(120), [-0.6, 0.6])
    centres = np.array([[-1.0, -1.0], [1.0, 1.0], [1.0, -1.0], [-1.0, 1.0]])
    Phi = _rbf(X, centres, np.sqrt(2.0))
    prior = "weakly_informative"  # few iterations; the binary test covers pruning
    ref = fit_classification(Phi, y, method="mackay", prior=prior, tol=1e-10, max_iter=20_000)
    fit = inference.fit_map(
        models.classification_softmax(Phi, y, prior=prior),
        laplace="tipping",
        gtol=1e-10,
        draws=10,
        compile_kwargs=FAST,
    )
    assert fit["posterior"]["W"].dims == ("chain", "draw", "basis", "class")
    alpha = type_ii_value(fit, "alpha")
    active = ref.active
    others = np.setdiff1d(np.arange(5), active)
    assert np.all((alpha[others] > 90) & (alpha[others] < 150))  # see the binary test
    np.testing.assert_allclose(alpha[active], ref.alpha, rtol=1e-4)
    Pt = _rbf(rng.standard_normal((200, 2)), centres, np.sqrt(2.0))
    lp = laplace_posterior(Phi[:, active], y, alpha[active])
    logits = Pt[:, active] @ lp.mean
    p = np.exp(logits - logits.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    np.testing.assert_allclose(p, ref.predict_proba(Pt, moderated=False), atol=1e-3)


def test_exact_laplace_map_improves_on_tipping_by_order_one_over_n():
    """The exact maximiser of the Laplace evidence is not Tipping's fixed point (O(1/N) apart)."""
    X, y, centres = two_moons(0)
    Phi = _rbf(X, centres, np.sqrt(2.0))
    prior = resolve_prior("weakly_informative")
    model = models.classification_binary(Phi, y, prior=prior)
    tipping = inference.fit_map(model, laplace="tipping", draws=10, compile_kwargs=FAST)
    la_tip = np.log(type_ii_value(tipping, "alpha"))
    exact = inference.fit_map(
        model, initvals={"log_alpha": la_tip}, draws=10, gtol=1e-9, compile_kwargs=FAST
    )
    la_ex = np.log(type_ii_value(exact, "alpha"))
    j_tip = numpy_laplace_evidence(Phi, y, la_tip, prior)
    j_ex = numpy_laplace_evidence(Phi, y, la_ex, prior)
    assert exact.attrs["log_evidence"] == pytest.approx(j_ex, rel=1e-10)
    assert j_ex > j_tip + 1e-5
    eps = 1e-5
    for i in range(5):
        e = np.zeros(5)
        e[i] = eps
        fd = (
            numpy_laplace_evidence(Phi, y, la_ex + e, prior)
            - numpy_laplace_evidence(Phi, y, la_ex - e, prior)
        ) / (2 * eps)
        assert abs(fd) < 1e-5
    assert 1e-3 < np.max(np.abs(la_ex - la_tip)) < 0.5


def test_softmax_map_on_separable_blobs_stays_finite():
    """Regression test: tiny precisions once made the Hessian singular (class-shift direction)."""
    from sklearn.datasets import make_blobs

    # 20 points: the same regime as 30 (the exact Laplace optimum refused, Tipping's fixed
    # point kept, the smallest log alpha 19 above the floor) in 350 iterations, not 3000
    X, y = make_blobs(n_samples=20, random_state=0, cluster_std=0.3)
    X = (X - X.mean(0)) / X.std(0)
    Phi = _rbf(X, X, 1.0)
    model = models.classification_softmax(Phi, y, prior="evidence")
    # separable classes: the exact Laplace evidence saturates, Tipping's fixed point is kept
    with pytest.warns(ConvergenceWarning, match="not a valid Laplace approximation"):
        fit = inference.fit_map(model, draws=10, compile_kwargs=FAST)
    assert fit.attrs["converged"] and fit.attrs["laplace"] == "tipping"
    floor = np.log(np.mean(Phi**2, axis=0)) - 20.0
    log_alpha = np.log(type_ii_value(fit, "alpha"))
    assert np.all(log_alpha >= floor - 1e-9)
    assert np.all(np.isfinite(fit["posterior"]["W"].values))
