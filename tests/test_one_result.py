"""One honest result from every fit: scaling boundary, one schema, MAP from the reference.

The reference, MAP and NUTS fits of RVR / RVC are checked at the user's
boundary: predictions are equivariant to shifting and scaling the targets
(earlier every test used targets of mean 0 while MAP failed at mean 1e4), every
method's ``idata_`` has the same layout and reproduces ``predict()``, and MAP
started from the reference solution returns it.  PyMC graphs are compiled in
FAST_COMPILE mode, NUTS runs few draws.
"""

from __future__ import annotations

import warnings

import arviz as az
import numpy as np
import pymc as pm
import pytest

from rvm_pymc.datasets import make_ripley, make_sinc
from rvm_pymc.estimators import RVC, RVR

# the fits here run NUTS for a few draws, on FAST_COMPILE, to check layouts and equivariance,
# not mixing: their R-hat and ESS warnings are expected
pytestmark = [
    pytest.mark.pymc,
    pytest.mark.filterwarnings("ignore::rvm_pymc.exceptions.SamplingWarning"),
]

FAST = {"compile_kwargs": {"mode": "FAST_COMPILE"}}
# a low target_accept (the estimators' is 0.95): shorter trajectories, and nothing here
# depends on how well the chains mix
NUTS = {**FAST, "nuts_sampler": "pymc", "cores": 1, "target_accept": 0.6}


@pytest.fixture(scope="module")
def sinc():
    d = make_sinc(n_train=40, noise_sd=0.1, random_state=0)
    return d.X_train, d.t_train, np.linspace(-10, 10, 25)[:, None]


def _fit(method, X, t, **kw):
    extra = {"reference": {}, "map": {"sampler_kwargs": FAST}}[method]
    return RVR(gamma=0.5, method=method, random_state=0, **extra, **kw).fit(X, t)


# ------------------------------------------------------------ equivariance


@pytest.mark.parametrize("method", ["reference", "map"])
@pytest.mark.parametrize(("shift", "scale"), [(1e4, 1.0), (1e7, 1.0), (0.0, 1e-6), (0.0, 1e6)])
def test_type_ii_predictions_equivariant_to_target_shift_and_scale(sinc, method, shift, scale):
    X, t, X_new = sinc
    base = _fit(method, X, t)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # converged, no warning, at any mean and unit
        moved = _fit(method, X, t * scale + shift)
    assert moved.converged_ and base.converged_
    np.testing.assert_array_equal(moved.active_, base.active_)
    mean0, sd0 = base.predict(X_new, return_std=True)
    mean1, sd1 = moved.predict(X_new, return_std=True)
    np.testing.assert_allclose((mean1 - shift) / scale, mean0, rtol=1e-6, atol=1e-6 * sd0.max())
    np.testing.assert_allclose(sd1 / scale, sd0, rtol=1e-6)
    # log evidence of the data in their own units: log p(a t + b) = log p(t) - N log a
    want = base.log_evidence_ - t.size * np.log(scale)
    assert moved.log_evidence_ == pytest.approx(want, rel=1e-6)


def test_map_at_target_mean_1e4_is_the_reference_optimum(sinc):
    """The issue's case: MAP at sinc + 1e4 ended at J = -34.8 (reference 40.7), sd 0.35."""
    X, t, _ = sinc
    ref = _fit("reference", X, t + 1e4)
    mp = _fit("map", X, t + 1e4)
    assert mp.converged_
    assert mp.log_evidence_ == pytest.approx(ref.log_evidence_, rel=1e-6)
    assert mp.beta_**-0.5 == pytest.approx(ref.beta_**-0.5, rel=1e-4)
    assert mp.beta_**-0.5 < 0.2  # truth 0.1


def test_nuts_predictions_equivariant_within_mcse(sinc):
    X, t, X_new = sinc
    kw = dict(gamma=0.5, method="nuts", draws=60, tune=60, chains=2, random_state=3)
    base = RVR(**kw, sampler_kwargs=NUTS).fit(X, t)
    moved = RVR(**kw, sampler_kwargs=NUTS).fit(X, t * 1e3 + 1e4)
    m0 = base.predict(X_new)
    m1 = (moved.predict(X_new) - 1e4) / 1e3
    # Monte Carlo standard error of each predictive mean, from its draws (ArviZ's mcse)
    mcse = [
        _mean_mcse(est.sample_predictions(X_new, random_state=0)["predictions"]["mu"]) / scale
        for est, scale in ((base, 1.0), (moved, 1e3))
    ]
    assert np.all(np.abs(m1 - m0) <= 4 * np.hypot(*mcse))


def _mean_mcse(draws) -> np.ndarray:
    from arviz_stats import mcse

    return np.asarray(mcse(draws.to_dataset(name="mu"), method="mean")["mu"].values)


# ------------------------------------------------------------ one schema


def _three(est_cls, X, y, **kw):
    fits = {}
    for method, extra in (
        ("reference", {}),
        ("map", {"sampler_kwargs": FAST}),
        ("nuts", {"sampler_kwargs": NUTS, "tune": 40}),
    ):
        fits[method] = est_cls(method=method, random_state=1, draws=40, **kw, **extra).fit(X, y)
    return fits


def _layout(tree):
    """Groups, and per group the variables with their dims; log_alpha/log_beta wherever."""
    out = {}
    for g in sorted(tree.children):
        ds = tree[g]
        out[g] = {v: ds[v].dims for v in ds.data_vars if v not in ("log_alpha", "log_beta")}
    return out


@pytest.fixture(scope="module")
def regression_fits(sinc):
    X, t, _ = sinc
    return _three(RVR, X, t, gamma=0.5)


@pytest.fixture(scope="module")
def classification_fits():
    X, y, _, _ = make_ripley(n_train=50, n_test=10, random_state=0)
    return _three(RVC, X, np.array(["a", "b"])[y], gamma=2.0)


@pytest.mark.parametrize("which", ["regression_fits", "classification_fits"])
def test_every_method_has_one_layout(which, request):
    fits = request.getfixturevalue(which)
    layouts = {m: _layout(f.idata_) for m, f in fits.items()}
    groups = {m: set(lay) for m, lay in layouts.items()}
    want = {
        "posterior",
        "posterior_predictive",
        "log_likelihood",
        "observed_data",
        "constant_data",
        "sample_stats",
    }
    assert all(g == want for g in groups.values()), groups
    for group in want - {"sample_stats"}:
        ref_vars = layouts["reference"][group]
        for m in ("map", "nuts"):
            got = dict(layouts[m][group])
            if group == "constant_data":
                # the slab's scale is data of the model exactly when the fit's prior has a
                # slab (the default of a classifier's NUTS), like every prior constant
                has_slab = fits[m].prior_.slab is not None
                assert ("slab_scale" in got) == has_slab, m
                got.pop("slab_scale", None)
            assert got == ref_vars, (m, group)
    for m, f in fits.items():
        tree = f.idata_
        assert tree["posterior"].sizes["chain"] == 2, m
        # hyperparameters: draws for NUTS, point values (constant_data) for type-II fits
        where = "posterior" if m == "nuts" else "constant_data"
        other = "constant_data" if m == "nuts" else "posterior"
        assert "log_alpha" in tree[where] and "log_alpha" not in tree[other], m
        assert tree[where]["log_alpha"].dims[-1] == "basis"
        if which == "regression_fits":
            assert "log_beta" in tree[where] and "log_beta" not in tree[other]
        else:
            assert list(tree["observed_data"]["class"].values) == ["a", "b"]


@pytest.mark.parametrize("which", ["regression_fits", "classification_fits"])
def test_predictions_rebuilt_from_the_tree(which, request, sinc):
    """``constant_data.Phi @ w (+ y_offset)`` over the draws is the estimator's fit."""
    fits = request.getfixturevalue(which)
    regression = which == "regression_fits"
    X_train = sinc[0] if regression else make_ripley(n_train=50, n_test=10, random_state=0).X_train
    X_new = (
        np.linspace(-10, 10, 14)[:, None] if regression else np.linspace(-1, 1, 14).reshape(-1, 2)
    )
    for m, est in fits.items():
        tree = est.idata_
        const = tree["constant_data"]
        Phi = const["Phi"].values
        np.testing.assert_allclose(Phi, est.design_matrix(X_train), rtol=1e-12, atol=1e-15)
        w = tree["posterior"]["w"].values.reshape(-1, Phi.shape[1])
        latent = (Phi @ w.T).mean(axis=1)  # from the tree alone
        tol = 1e-12 if m == "nuts" else 1e-8  # type-II: antithetic draws average to the mean
        if regression:
            latent = latent + float(const["y_offset"].values)
            np.testing.assert_allclose(latent, est.predict(X_train), rtol=tol, atol=tol)
        else:
            np.testing.assert_allclose(latent, Phi @ est.coef_, rtol=tol, atol=tol)
        # new inputs: the predictions groups, built from the tree's draws
        pred = est.sample_predictions(X_new, random_state=0)["predictions"]
        assert pred[("t_obs" if regression else "y_obs")].shape == (2, 40, X_new.shape[0])
        if regression:
            mu = pred["mu"].values.reshape(-1, X_new.shape[0]).mean(0)
            np.testing.assert_allclose(mu, est.predict(X_new), rtol=tol, atol=tol)
        elif m == "nuts":  # the average over the draws is predict_proba
            p = pred["p"].values.reshape(-1, X_new.shape[0]).mean(0)
            np.testing.assert_allclose(p, est.predict_proba(X_new)[:, 1], rtol=1e-12)


@pytest.mark.parametrize("which", ["regression_fits", "classification_fits"])
def test_arviz_runs_on_every_fit_without_warning(which, request):
    import matplotlib.pyplot as plt

    fits = request.getfixturevalue(which)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for est in fits.values():
            tree = est.idata_
            summary = az.summary(tree, var_names=["w"])
            assert np.all(np.isfinite(summary["r_hat"].astype(float)))
            with warnings.catch_warnings():
                # a Pareto k above 0.67 is a verdict on influential points, not on the layout
                warnings.filterwarnings("ignore", message="Estimated shape parameter of Pareto")
                loo = az.loo(tree, pointwise=True)
            assert (
                np.isfinite(loo.elpd) and loo.pareto_k.size == tree["observed_data"].sizes["obs"]
            )
            if which == "regression_fits":
                az.plot_ppc_dist(tree)
            else:  # ArviZ's own advice for binary outcomes
                az.plot_ppc_pava(tree)
            plt.close("all")
        # the bases every fit keeps (a type-II fit holds only its relevant ones)
        common = sorted(set.intersection(*(set(f.active_names_) for f in fits.values())))
        assert common
        pc = az.plot_forest(
            {m: f.idata_ for m, f in fits.items()}, var_names=["w"], coords={"basis": common}
        )
    # one colour per method: the forest shows all three (it showed NUTS alone before)
    assert list(pc.aes["color"]["model"].values) == ["reference", "map", "nuts"]
    plt.close("all")


# ------------------------------------------------- MAP started from the reference


@pytest.mark.parametrize(
    ("prior", "solver"), [("evidence", "fast"), ({"a": 1, "b": 1, "c": 1, "d": 1}, "mackay")]
)
def test_map_started_from_the_reference_returns_it(sinc, prior, solver):
    X, t, _ = sinc
    ref = RVR(gamma=0.5, prior=prior, solver=solver, tol=1e-10, max_iter=20_000).fit(X, t + 3.0)
    mp = RVR(gamma=0.5, prior=prior, method="map", sampler_kwargs=FAST).fit(X, t + 3.0)
    assert mp.idata_.attrs["started_from"] == "reference"
    assert mp.converged_
    np.testing.assert_array_equal(mp.active_, ref.active_)
    assert mp.log_evidence_ == pytest.approx(ref.log_evidence_, rel=1e-6)
    np.testing.assert_allclose(np.log(mp.alpha_), np.log(ref.alpha_), atol=1e-4)


# ------------------------------------------------ models without a side registry


@pytest.mark.filterwarnings("ignore::rvm_pymc.exceptions.PriorWarning")  # flat priors, on purpose
def test_copied_and_user_built_models_fit(sinc):
    from rvm_pymc import inference, models

    X, t, _ = sinc
    Phi = np.column_stack([np.ones(len(t)), np.sin(X[:, 0]), np.cos(X[:, 0]), X[:, 0]])
    model = models.regression_marginal(Phi, t, prior="evidence")
    fit = inference.fit_map(model, draws=10, compile_kwargs=FAST["compile_kwargs"])
    copied = inference.fit_map(model.copy(), draws=10, compile_kwargs=FAST["compile_kwargs"])
    la = fit["constant_data"]["log_alpha"].values
    np.testing.assert_allclose(copied["constant_data"]["log_alpha"].values, la, rtol=1e-6)
    # a user's own model with the package's names: flat priors on the log precisions
    coords = {"basis": list(range(4)), "obs": np.arange(len(t))}
    with pm.Model(coords=coords) as user:
        Phi_d = pm.Data("Phi", Phi, dims=("obs", "basis"))
        t_d = pm.Data("t", t, dims="obs")
        PtP = pm.Data("PhiTPhi", Phi.T @ Phi)
        log_alpha = pm.Flat("log_alpha", dims="basis")
        log_beta = pm.Flat("log_beta")
        pm.CustomDist(
            "t_obs",
            log_alpha,
            log_beta,
            Phi_d,
            PtP,
            logp=models.marginal_logp_fast,
            signature="(m),(),(n,m),(m,m)->(n)",
            observed=t_d,
            dims="obs",
        )
    assert models.model_spec(user).prior == models.model_spec(model).prior
    mine = inference.fit_map(user, draws=10, compile_kwargs=FAST["compile_kwargs"])
    kept = la < 50
    np.testing.assert_allclose(
        mine["constant_data"]["log_alpha"].values[kept], la[kept], atol=1e-5
    )
    assert mine.attrs["log_evidence"] == pytest.approx(fit.attrs["log_evidence"], rel=1e-8)
    # the copy samples with the collapsed sampler as well
    tree = inference.sample_collapsed(
        model.copy(), draws=15, tune=15, chains=1, random_seed=0, **NUTS
    )
    assert tree["posterior"]["w"].shape == (1, 15, 4)


def test_estimator_exposes_its_model(sinc):
    X, t, _ = sinc
    est = _fit("map", X, t)
    assert isinstance(est.model_, pm.Model)
    # in data units, over the bases of idata_; the type-II hyperparameters are data
    assert [v.name for v in est.model_.free_RVs] == ["w"]
    assert est.model_["Phi"].get_value().shape == est.idata_["constant_data"]["Phi"].shape
    assert _fit("reference", X, t).model_ is None


@pytest.mark.parametrize("est_cls", [RVR, RVC])
def test_nuts_can_start_from_the_reference_solution(sinc, est_cls):
    """init="reference": the chains start at the reference solution under the same prior."""
    if est_cls is RVR:
        X, y, _ = sinc
        kw = {"gamma": 0.5}
    else:
        X, y, _, _ = make_ripley(n_train=40, n_test=5, random_state=1)
        kw = {"gamma": 2.0, "prior": "weakly_informative"}
    est = est_cls(
        method="nuts", init="reference", draws=20, tune=20, random_state=0,
        sampler_kwargs=NUTS, **kw,
    ).fit(X, y)  # fmt: skip
    assert est.idata_.attrs["started_from"] == "reference"
    assert est.idata_["posterior"]["w"].shape == (2, 20, est.coef_.shape[0])
    assert np.all(np.isfinite(est.idata_["posterior"]["log_alpha"].values))


def test_reloaded_estimator_rebuilds_predictions_from_its_tree(sinc, tmp_path):
    """Saved and loaded: the same posterior, predictions rebuilt from the loaded tree."""
    X, t, X_new = sinc
    est = _fit("map", X, t + 1e4)
    est.save(tmp_path / "map.nc")
    back = RVR.load(tmp_path / "map.nc")
    assert back.model_ is None  # a PyMC model is not saved
    np.testing.assert_array_equal(back.predict(X_new), est.predict(X_new))
    mu = back.sample_predictions(X_new, random_state=0)["predictions"]["mu"].values
    np.testing.assert_allclose(
        mu.reshape(-1, X_new.shape[0]).mean(0), est.predict(X_new), rtol=1e-8
    )


# ------------------------------------------------------ failures and stale state


def test_failed_refit_leaves_the_previous_fit(sinc):
    """A refit that fails midway restores every attribute (no new kernel with old weights)."""
    X, t, X_new = sinc
    est = RVR(gamma=0.5).fit(X, t)
    before = est.predict(X_new)
    est.set_params(gamma=20.0, method="map", sampler_kwargs={"bogus": 1})
    with pytest.raises(ValueError, match="bogus"):
        est.fit(X, t)
    np.testing.assert_array_equal(est.predict(X_new), before)
    assert est.gamma_ == 0.5

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    est.set_params(gamma=20.0, method="reference", sampler_kwargs=None)
    est._reference_fit = interrupted
    with pytest.raises(KeyboardInterrupt):
        est.fit(X, t)
    del est._reference_fit
    np.testing.assert_array_equal(est.predict(X_new), before)


@pytest.mark.parametrize("value", [0.1, 1e-300, 7.0])
def test_constant_target_is_refused_whatever_its_value(sinc, value):
    X, _, _ = sinc
    with pytest.raises(ValueError, match="y is constant"):
        RVR(method="map", init="default").fit(X, np.full(X.shape[0], value))


# the weight covariance and noise variance in data units scale by t_sd ** 2 = 1e320, past
# the largest float: they overflow to inf (numpy says so), while the predictions scale
@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")
def test_targets_near_the_float_limit(sinc):
    """|y| ~ 1e160: the scale is computed without overflow; predictions scale with y."""
    X, t, X_new = sinc
    base = RVR(gamma=0.5).fit(X, t)
    big = RVR(gamma=0.5).fit(X, t * 1e160)
    np.testing.assert_allclose(big.predict(X_new) / 1e160, base.predict(X_new), rtol=1e-6)


def test_stale_state_after_a_refit(sinc):
    X, t, _ = sinc
    est = RVR(gamma="evidence", gamma_grid=[0.1, 0.5], draws=20).fit(X, t)
    assert hasattr(est, "evidence_path_")
    est.set_params(gamma=0.5).fit(X, t)
    assert not hasattr(est, "evidence_path_")
    est.set_params(draws=3, chains=1)  # not refitted: the tree keeps the fit's draws
    assert est.idata_["posterior"]["w"].shape[:2] == (2, 20)


def test_a_subclass_saves_and_loads(sinc, tmp_path):
    class MyRVR(RVR):
        pass

    X, t, X_new = sinc
    est = MyRVR(gamma=0.5).fit(X, t)
    est.save(tmp_path / "mine.nc")
    back = MyRVR.load(tmp_path / "mine.nc")
    np.testing.assert_array_equal(back.predict(X_new), est.predict(X_new))
    with pytest.raises(ValueError, match=r"unknown estimator class .MyRVR."):
        RVR.load(tmp_path / "mine.nc")
