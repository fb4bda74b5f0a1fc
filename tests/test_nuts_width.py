"""NUTS over the RBF width (``gamma="integrate"``) through the public estimators.

Every fit is short (fixed ``draws``) and compiled by PyTensor's C backend (``FAST_RUN``:
seconds to compile, cached; FAST_COMPILE samples these graphs ten times slower);
the oracle of the predictions is a direct computation from the draws of ``idata_``:
each draw's design matrix ``[1 | exp(-gamma_s |x - c|^2)]`` at its own width
times that draw's weights.
"""

from __future__ import annotations

import copy
import warnings

import numpy as np
import pytest
from scipy.special import expit

from rvm_pymc import RVC, RVP, RVR, compare, fit_all
from rvm_pymc.comparison import effective_parameters
from rvm_pymc.estimators import load
from rvm_pymc.exceptions import SamplingWarning

NUTS = {"compile_kwargs": {"mode": "FAST_RUN"}, "nuts_sampler": "pymc", "cores": 1}
SHORT = {"draws": 40, "tune": 40, "chains": 2, "random_state": 1, "sampler_kwargs": NUTS}


def _sinc(n=30, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-3, 3, (n, 1))
    return X, np.sinc(X[:, 0]) + 0.1 * rng.standard_normal(n)


def _fit(est, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SamplingWarning)  # short chains do not converge
        return est.fit(X, y)


@pytest.fixture(scope="module")
def rvr():
    X, y = _sinc()
    return _fit(RVR(method="nuts", gamma="integrate", **SHORT), X, y), X, y


def _design(gamma, X_new, centres):
    d2 = ((X_new[:, None, :] - centres[None, :, :]) ** 2).sum(-1)
    return np.column_stack([np.ones(len(X_new)), np.exp(-gamma * d2)])


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"gamma": "integrate"}, "needs method='nuts'"),
        ({"gamma": "integrate", "method": "map"}, "needs method='nuts'"),
        ({"gamma": "integrate", "method": "nuts", "kernel": "laplacian"}, "kernel='rbf'"),
        ({"gamma": "integrate", "method": "nuts", "kernel": "linear"}, "kernel='rbf'"),
        (
            {"gamma": "integrate", "method": "nuts", "sampler_kwargs": {"model": "joint"}},
            "model",
        ),
        ({"gamma": "integrate", "method": "nuts", "gamma_grid": [0.1, 1.0]}, "gamma_grid"),
        ({"gamma": "integral", "method": "nuts"}, "gamma must be"),
        (
            {"gamma": "integrate", "method": "nuts", "sampler_kwargs": {"basis_swaps": 3}},
            "basis_swaps",
        ),
        (  # the collapsed sampler has no slab: said so, not "use model='joint'"
            {"gamma": "integrate", "method": "nuts", "prior": {"a": 1e-6, "b": 1e-6, "slab": 2.0}},
            "gamma='integrate' samples the collapsed model",
        ),
    ],
)
def test_integrate_is_validated(params, match):
    X, y = _sinc(10)
    with pytest.raises(ValueError, match=match):
        RVR(**params).fit(X, y)


def test_integrate_is_not_for_counts():
    X = np.arange(12.0)[:, None]
    with pytest.raises(ValueError, match="gamma='integrate' is for RVR and RVC"):
        RVP(method="nuts", gamma="integrate").fit(X, np.arange(12) % 4)
    with pytest.raises(ValueError, match="gamma='integrate' is for RVR and RVC"):
        RVP(gamma="integrate").fit(X, np.arange(12) % 4)  # said before "method='nuts'"


def test_width_draws_are_in_the_posterior(rvr):
    est, X, _ = rvr
    post = est.idata_["posterior"]
    gamma = post["gamma"].values
    assert gamma.shape == (2, 40)
    assert np.std(gamma) > 0.01 * np.mean(gamma)  # the width is sampled, not fixed
    np.testing.assert_allclose(gamma, 0.5 * np.exp(-2.0 * post["log_length_scale"].values))
    np.testing.assert_array_equal(est.gamma_draws_, gamma)
    assert est.gamma_ == pytest.approx(np.median(gamma))
    assert post["w"].shape == (2, 40, len(X) + 1)  # every basis stays in
    assert est.n_relevance_ == len(X)
    assert np.isfinite(est.idata_.attrs["max_rhat"])
    assert np.all(np.isfinite(est.idata_["log_likelihood"]["t_obs"].values))
    with pytest.raises(ValueError, match="gamma='integrate'"):
        est.design_matrix(X)


def test_predictions_integrate_over_the_width_draws(rvr):
    est, X, _ = rvr
    X_new = np.linspace(-3.5, 3.5, 9)[:, None]
    post, const = est.idata_["posterior"], est.idata_["constant_data"]
    gamma = post["gamma"].values.reshape(-1)
    w = post["w"].values.reshape(gamma.size, -1)
    centres = const["centres"].values
    F = np.stack([_design(g, X_new, centres) @ ws for g, ws in zip(gamma, w, strict=True)])
    F += float(const["y_offset"].values)
    noise = np.mean(np.exp(-post["log_beta"].values))
    mean, sd = est.predict(X_new, return_std=True)
    np.testing.assert_allclose(mean, F.mean(0), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(sd, np.sqrt(F.var(0, ddof=1) + noise), rtol=1e-10)
    # the training latent of the tree is the same computation at the training inputs
    F_train = np.stack([_design(g, X, centres) @ ws for g, ws in zip(gamma, w, strict=True)])
    mu = est.sample_predictions(X, random_state=0)["predictions"]["mu"].values
    np.testing.assert_allclose(mu.reshape(gamma.size, -1) - float(const["y_offset"].values),
                               F_train, rtol=1e-10, atol=1e-12)  # fmt: skip


def test_save_load_round_trip(rvr, tmp_path):
    est = rvr[0]
    path = tmp_path / "width.nc"
    est.save(path)
    again = load(path)
    X_new = np.linspace(-3.5, 3.5, 7)[:, None]
    for a, b in zip(est.predict(X_new, return_std=True), again.predict(X_new, return_std=True),
                    strict=True):  # fmt: skip
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(again.gamma_draws_, est.gamma_draws_)
    assert again.gamma_ == est.gamma_ and again.gamma == "integrate"


def test_compare_has_its_own_row():
    X, y = _sinc(24, seed=3)
    params = {k: v for k, v in SHORT.items() if k != "sampler_kwargs"}
    fits = fit_all(X, y, methods=["reference", "nuts_width"], gamma=0.5,
                   method_params={"nuts_width": {"sampler_kwargs": NUTS}}, **params)  # fmt: skip
    assert fits["nuts_width"].gamma == "integrate" and fits["nuts_width"].method == "nuts"
    assert fits["reference"].gamma == 0.5
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = compare(fits, cv=2, loo=False, n_jobs=1)
    assert list(table.index) == ["reference", "nuts_width"]
    row = table.loc["nuts_width"]
    assert np.isfinite(row["elpd_kfold"]) and row["gamma"] == fits["nuts_width"].gamma_
    folds = table.attrs["folds"]
    mine = folds[folds["fit"] == "nuts_width"]
    assert len(mine) == 2 and mine["gamma"].nunique() == 2  # each fold samples its own width


@pytest.mark.parametrize(
    ("task", "params", "match"),
    [
        ("regression", {"kernel": "linear"}, "kernel='rbf'"),
        (
            "regression",
            {"method_params": {"nuts_width": {"prior": {"a": 1e-6, "b": 1e-6, "slab": 2.0}}}},
            "collapsed",
        ),
        ("counts", {}, "is for RVR and RVC"),
    ],
)
def test_fit_all_checks_nuts_width_before_any_fit(task, params, match):
    """fit_all refuses a "nuts_width" that cannot be fitted before fitting the others."""
    X, y = _sinc(12)
    y = np.arange(12) % 4 if task == "counts" else y
    fitted = []
    with pytest.raises(ValueError, match=f"methods includes 'nuts_width'.*{match}"):
        fit_all(X, y, methods=["reference", "nuts_width"], task=task, gamma=0.5,
                on_fit=lambda m, g: fitted.append(m), **params)  # fmt: skip
    assert fitted == []


@pytest.fixture(scope="module")
def rvc():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(30, 2))
    y = np.where(X[:, 0] + 0.5 * rng.normal(size=30) > 0, "b", "a")
    return _fit(RVC(method="nuts", gamma="integrate", **SHORT), X, y), X, rng


def test_classifier_integrates_over_the_width(rvc):
    est, _, rng = rvc
    post = est.idata_["posterior"]
    gamma = post["gamma"].values.reshape(-1)
    assert np.std(gamma) > 0
    w = post["w"].values.reshape(gamma.size, -1)
    X_new = rng.normal(size=(5, 2))
    centres = est.idata_["constant_data"]["centres"].values
    p1 = np.mean([expit(_design(g, X_new, centres) @ ws) for g, ws in zip(gamma, w, strict=True)],
                 axis=0)  # fmt: skip
    proba = est.predict_proba(X_new)
    np.testing.assert_allclose(proba[:, 1], p1, rtol=1e-10)
    np.testing.assert_allclose(proba.sum(1), 1.0)
    assert set(est.predict(X_new)) <= {"a", "b"}


def test_classifier_effective_parameters_use_the_slab_at_each_width(rvc):
    """RVC's default slab bounds the weights of the columns scaled to RMS 1 at each draw's
    width (the tree says so: ``rbf_unit_rms``): in data units its precision is
    ``rms_s^2 / slab^2``, which the effective number of parameters uses draw by draw."""
    est, X, _ = rvc
    tree = est.idata_
    assert float(tree["constant_data"]["rbf_unit_rms"]) == 1.0
    centres = tree["constant_data"]["centres"].values
    post = tree["posterior"]
    gamma = post["gamma"].values.reshape(-1)
    w = post["w"].values.reshape(gamma.size, -1)
    log_alpha = post["log_alpha"].values.reshape(gamma.size, -1)
    slab = est.prior_.slab
    assert slab is not None  # RVC's default prior for nuts
    terms = []
    for g, ws, la in zip(gamma, w, log_alpha, strict=True):
        Phi = _design(g, X, centres)
        p = expit(Phi @ ws)
        alpha = np.exp(la) + np.mean(Phi**2, axis=0) / slab**2
        S = (Phi * (p * (1 - p))[:, None]).T @ Phi + np.diag(alpha)
        terms.append(np.sum(np.clip(1.0 - alpha * np.diag(np.linalg.inv(S)), 0.0, 1.0)))
    assert effective_parameters(est) == pytest.approx(np.mean(terms), rel=1e-8)


def test_effective_parameters_of_a_fit_saved_without_the_unit_rms_flag(rvc):
    """A width-integrating fit saved before ``rbf_unit_rms`` was recorded (its tree has no
    such constant) gets the same effective number of parameters: every such fit scaled
    its columns to RMS 1."""
    est, _, _ = rvc
    before = effective_parameters(est)
    old = copy.deepcopy(est)
    old.idata_["constant_data"] = (
        old.idata_["constant_data"].to_dataset().drop_vars("rbf_unit_rms")
    )
    assert "rbf_unit_rms" not in old.idata_["constant_data"]
    assert effective_parameters(old) == before


@pytest.mark.parametrize("fixture", ["rvr", "rvc"])
def test_diagnostics_are_those_of_the_posterior_one_reads(fixture, request):
    """The sampler's columns have RMS 1 at each width; the posterior holds the weights and
    precisions of the unscaled columns, a different function of each draw.  The recorded
    R-hat and ESS (what ``converged_`` and the stopping rule read) are those of the
    posterior's own draws, as ArviZ computes them."""
    from arviz_stats import ess, rhat

    est = request.getfixturevalue(fixture)[0]
    post = est.idata_["posterior"].to_dataset()[["w", "log_alpha", "log_length_scale"]]

    def worst(ds, pick):
        return pick(float(pick(np.ravel(v.values))) for v in ds.data_vars.values())

    attrs = est.idata_.attrs
    assert attrs["max_rhat"] == pytest.approx(worst(rhat(post, method="rank"), max), rel=1e-9)
    assert attrs["min_ess_bulk"] == pytest.approx(worst(ess(post, method="bulk"), min), rel=1e-9)
    assert attrs["min_ess_tail"] == pytest.approx(worst(ess(post, method="tail"), min), rel=1e-9)
