"""RVM* (Rasmussen & Quinonero-Candela 2005): the rank-one update against the dense
augmented model, its limits, and ``RVR(predictive="rvm*")`` through fit, predict, save."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.utils.estimator_checks import parametrize_with_checks

from rvm_pymc._core.augment import augmented_predictive, rvm_star_prior_var, signal_variance
from rvm_pymc._core.gaussian import regression_posterior
from rvm_pymc.datasets import make_sinc
from rvm_pymc.estimators import RVR, load
from rvm_pymc.kernels import RBF

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


@pytest.fixture
def rng():
    return np.random.default_rng(26)


def _dense(p, kappa, phi_star, Phi, t, alpha, beta, v):
    """Predictive of the augmented model [Phi, phi*], alpha* = 1/v, by its own posterior."""
    Phi_aug = np.column_stack([Phi, phi_star])
    post = regression_posterior(Phi_aug, t, np.append(alpha, 1.0 / v), beta)
    a = np.append(p, kappa)
    return a @ post.mean, a @ post.cov @ a


def _tiny(rng, n=7, m=3, b=5):
    Phi = rng.normal(size=(n, m))
    t = rng.normal(size=n)
    alpha = rng.uniform(0.2, 3.0, size=m)
    beta = 2.5
    post = regression_posterior(Phi, t, alpha, beta)
    P = rng.normal(size=(b, m))
    K = rng.normal(size=(n, b))
    kappa = rng.uniform(0.5, 2.0, size=b)
    v = rng.uniform(0.1, 5.0, size=b)
    return Phi, t, alpha, beta, post, P, K, kappa, v


def test_rank_one_update_equals_the_dense_augmented_posterior(rng):
    Phi, t, alpha, beta, post, P, K, kappa, v = _tiny(rng)
    resid = t - Phi @ post.mean
    mean, var = augmented_predictive(P, K, kappa, Phi, resid, post.mean, post.cov, beta, v)
    for b in range(P.shape[0]):
        m_d, v_d = _dense(P[b], kappa[b], K[:, b], Phi, t, alpha, beta, v[b])
        assert mean[b] == pytest.approx(m_d, rel=1e-10, abs=1e-12)
        assert var[b] == pytest.approx(v_d, rel=1e-10, abs=1e-12)
    # the mean moves as well as the variance: RVM* is not the RVM mean with wider bands
    assert np.max(np.abs(mean - P @ post.mean)) > 1e-3


def test_zero_prior_variance_is_the_plain_rvm(rng):
    Phi, t, _, beta, post, P, K, kappa, _ = _tiny(rng)
    resid = t - Phi @ post.mean
    mean, var = augmented_predictive(P, K, kappa, Phi, resid, post.mean, post.cov, beta, 0.0)
    np.testing.assert_allclose(mean, P @ post.mean, rtol=1e-13)
    np.testing.assert_allclose(var, np.einsum("bm,mk,bk->b", P, post.cov, P), rtol=1e-12)


def test_a_test_point_on_a_training_column_and_empty_model(rng):
    Phi, t, alpha, beta, post, P, K, kappa, v = _tiny(rng)
    # phi* equal to an active column: S_* is a cancellation, clipped at 0; still the dense answer
    K[:, 0] = Phi[:, 1]
    resid = t - Phi @ post.mean
    mean, var = augmented_predictive(P, K, kappa, Phi, resid, post.mean, post.cov, beta, v)
    m_d, v_d = _dense(P[0], kappa[0], K[:, 0], Phi, t, alpha, beta, v[0])
    assert mean[0] == pytest.approx(m_d, rel=1e-8)
    assert var[0] == pytest.approx(v_d, rel=1e-8)
    # no active basis: the augmented model is the new basis alone
    e = np.zeros((Phi.shape[0], 0))
    mean, var = augmented_predictive(
        np.zeros((5, 0)), K, kappa, e, t, np.zeros(0), np.zeros((0, 0)), beta, v
    )
    m_d, v_d = _dense(np.zeros(0), kappa[2], K[:, 2], e, t, np.zeros(0), beta, v[2])
    assert (mean[2], var[2]) == pytest.approx((m_d, v_d), rel=1e-10)


def test_prior_variance_helpers_and_bad_input():
    assert signal_variance(2.0, 0.5) == 1.5
    assert signal_variance(0.5, 2.0) == 0.0
    np.testing.assert_array_equal(rvm_star_prior_var(2.0, np.array([2.0, 0.0])), [0.5, 0.0])
    with pytest.raises(ValueError, match="prior_var"):
        augmented_predictive(
            np.zeros((1, 1)), np.zeros((2, 1)), np.ones(1), np.ones((2, 1)), np.zeros(2),
            np.zeros(1), np.eye(1), 1.0, -1.0,
        )  # fmt: skip
    with pytest.raises(ValueError, match="shapes"):
        augmented_predictive(
            np.zeros((1, 2)), np.zeros((2, 1)), np.ones(1), np.ones((2, 1)), np.zeros(2),
            np.zeros(1), np.eye(1), 1.0, 1.0,
        )  # fmt: skip


@pytest.fixture(scope="module")
def sinc():
    d = make_sinc(n_train=60, random_state=3)
    return d.X_train, d.t_train


@pytest.fixture(scope="module")
def fits(sinc):
    X, t = sinc
    plain = RVR(gamma=0.3, random_state=0).fit(X, t)
    star = RVR(gamma=0.3, random_state=0, predictive="rvm*").fit(X, t)
    return plain, star


def test_estimator_matches_the_dense_augmented_model_in_data_units(fits, sinc):
    plain, star = fits
    X, t = sinc
    np.testing.assert_array_equal(star.coef_, plain.coef_)  # the fit is the same
    rbf = RBF(gamma=0.3)
    cols = [np.ones((X.shape[0], 1))] if star.bias_active_ else []
    Phi = np.hstack([*cols, rbf(X, star.relevance_vectors_)])
    tc = t - star.y_offset_
    base = regression_posterior(Phi, tc, star.alpha_, star.beta_)
    np.testing.assert_allclose(base.mean, star.coef_, rtol=1e-6, atol=1e-9)
    sig = star.y_scale_**2 - 1.0 / star.beta_
    assert sig > 0
    xs = np.array([[-14.0], [-10.5], [-3.2], [0.05], [7.7], [12.0], [40.0]])
    mean, sd = star.predict(xs, return_std=True)
    np.testing.assert_array_equal(star.predict(xs), mean)
    for i, x in enumerate(xs):
        p = np.hstack(
            [*([1.0] if star.bias_active_ else []), rbf(x[None], star.relevance_vectors_)[0]]
        )
        m_d, v_d = _dense(p, 1.0, rbf(X, x[None])[:, 0], Phi, tc, star.alpha_, star.beta_, sig)
        assert mean[i] == pytest.approx(m_d + star.y_offset_, rel=1e-6, abs=1e-9)
        assert sd[i] ** 2 == pytest.approx(v_d + 1.0 / star.beta_, rel=1e-6)


def test_far_from_the_data_the_variance_is_the_prior_plus_noise(fits):
    plain, star = fits
    far = np.array([[200.0], [-500.0]])
    _, sd_plain = plain.predict(far, return_std=True)
    mean, sd = star.predict(far, return_std=True)
    np.testing.assert_allclose(mean, plain.predict(far), rtol=1e-12)  # phi* = 0 on the data
    bias_var = star.sigma_[0, 0] if star.bias_active_ else 0.0
    # p^T Sigma p (the bias) + sigma_f^2 + noise = bias var + var(y): not the noise only
    np.testing.assert_allclose(sd**2, bias_var + star.y_scale_**2, rtol=1e-10)
    np.testing.assert_allclose(sd_plain**2, bias_var + star.noise_var_, rtol=1e-10)
    assert np.all(sd**2 > 5 * sd_plain**2)


def test_map_fit_gives_the_rvm_star_of_its_own_posterior(fits, sinc):
    """MAP from the reference start is the reference optimum: the same RVM* predictive."""
    _, star = fits
    est = RVR(gamma=0.3, random_state=0, predictive="rvm*", method="map").fit(*sinc)
    assert est.active_names_ == star.active_names_
    xs = np.linspace(-15, 15, 61)[:, None]
    mean, sd = est.predict(xs, return_std=True)
    ref_mean, ref_sd = star.predict(xs, return_std=True)
    np.testing.assert_allclose(mean, ref_mean, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(sd, ref_sd, rtol=1e-6)
    far_var = est.predict([[300.0]], return_std=True)[1] ** 2
    bias_var = est.sigma_[0, 0] if est.bias_active_ else 0.0
    np.testing.assert_allclose(far_var, bias_var + est.y_scale_**2, rtol=1e-10)


def test_blocks_give_the_same_predictions(fits, monkeypatch):
    from rvm_pymc.estimators import _classes as _rvm_star

    _, star = fits
    xs = np.linspace(-15, 15, 101)[:, None]
    m1, s1 = star.predict(xs, return_std=True)
    monkeypatch.setattr(_rvm_star, "BLOCK_ENTRIES", 7 * star.X_train_.shape[0])
    m2, s2 = star.predict(xs, return_std=True)
    np.testing.assert_allclose(m2, m1, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(s2, s1, rtol=1e-13)


def test_saved_and_loaded_estimator_keeps_the_option(fits, tmp_path):
    _, star = fits
    path = tmp_path / "star.nc"
    star.save(path)
    back = load(path)
    assert back.predictive == "rvm*"
    np.testing.assert_array_equal(back.X_train_, star.X_train_)
    xs = np.linspace(-15, 15, 31)[:, None]
    for a, b in zip(
        back.predict(xs, return_std=True), star.predict(xs, return_std=True), strict=True
    ):
        np.testing.assert_allclose(a, b, rtol=1e-12)
    assert clone(star).get_params()["predictive"] == "rvm*"


def test_plain_fit_keeps_no_training_data_and_refuses_a_late_switch(fits, sinc, tmp_path):
    plain, _ = fits
    assert not hasattr(plain, "X_train_")
    est = clone(plain).set_params(predictive="rvm*").fit(*sinc)
    est.set_params(predictive="rvm").fit(*sinc)  # a refit without RVM* drops the data
    assert not hasattr(est, "X_train_")
    est.set_params(predictive="rvm*")
    with pytest.raises(ValueError, match=r"set after the fit.*refit"):
        est.predict([[0.0]])
    with pytest.raises(ValueError, match=r"set after the fit: refit before saving"):
        est.save(tmp_path / "late.nc")
    assert not (tmp_path / "late.nc").exists()


def test_sample_predictions_refuses_rvm_star(fits):
    """Its draws are the plain RVM posterior's: with RVM* they would disagree with predict."""
    _, star = fits
    with pytest.raises(ValueError, match=r"predictive='rvm\*'.*predict\(X, return_std=True\)"):
        star.sample_predictions([[12.0]])


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"predictive": "gp"}, r"predictive must be one of \('rvm', 'rvm\*'\)"),
        ({"predictive": "rvm*", "method": "nuts"}, "method='reference' or 'map'"),
        ({"predictive": "rvm*", "kernel": "precomputed"}, "kernel='precomputed'"),
    ],
)
def test_invalid_uses_are_refused_before_any_work(sinc, params, match):
    X, t = sinc
    if params.get("kernel") == "precomputed":
        X = RBF(gamma=0.3)(X, X)
    with pytest.raises(ValueError, match=match):
        RVR(**params).fit(X, t)


@parametrize_with_checks([RVR(predictive="rvm*", gamma=0.5)])
def test_sklearn_compatible_with_rvm_star(estimator, check):
    """Every scikit-learn estimator check passes with RVM* on (the training data kept)."""
    check(estimator)


def test_compare_scores_the_rvm_star_predictive(fits):
    """compare reads RVM* through predict(return_std=True) and names it in `predictive`."""
    from scipy.stats import norm

    from rvm_pymc import compare

    plain, star = fits
    rng = np.random.default_rng(5)
    x = rng.uniform(-15, 15, 200)
    y = np.sinc(x / np.pi) + 0.1 * rng.standard_normal(x.size)
    table = compare({"reference": plain, "rvm*": star}, x[:, None], y, cv=None, loo=False)
    assert table["predictive"].tolist() == ["rvm", "rvm*"]
    mean, sd = star.predict(x[:, None], return_std=True)
    assert table.loc["rvm*", "lpd"] == pytest.approx(np.mean(norm.logpdf(y, mean, sd)))
    inside = np.abs((y - mean) / sd) <= norm.ppf(0.95)
    assert table.loc["rvm*", "coverage_90"] == pytest.approx(np.mean(inside))


def test_rvr_repeats_every_parameter_of_the_shared_signature():
    """RVR spells out the shared parameters (scikit-learn reads __init__'s signature) to add
    ``predictive``; a parameter added to the shared one but not to RVR would not clone."""
    import inspect

    from rvm_pymc.estimators import RVC, RVR

    rvr = dict(inspect.signature(RVR.__init__).parameters)
    assert rvr.pop("predictive").default == "rvm"
    shared = inspect.signature(RVC.__init__).parameters
    assert list(rvr) == list(shared)
    assert all(rvr[k].default == shared[k].default for k in shared)
