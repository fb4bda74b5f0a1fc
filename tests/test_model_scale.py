"""``est.model_`` and ``est.idata_`` on one scale, the units of the data (issue 24, item 4).

The estimators fit on a scaled problem; ``model_`` is the fit's RVM written in
the units of the data (:func:`rvm_pymc.models.data_unit_model`), so that
``pm.sample_posterior_predictive(est.idata_, model=est.model_)`` replicates the
data and ``pm.set_data({"Phi": est.design_matrix(X)})`` predicts at new inputs.
Before, the replicates of a 40-point kernel fit had sd 225 (collapsed) and 161
(joint) for data of sd 48.6, and a MAP fit raised NotImplementedError.

The checks are exact Monte Carlo tests.  A replicate of draw ``d`` is
``F_d + e_d`` with ``F_d`` the latent mean of that draw (from ``idata_``) and
``e_d ~ N(0, s2_d)``, fresh noise of the draw's variance ``s2_d = 1/beta_d``.
So at every point the mean of ``rep - F`` over D draws has standard error
``sqrt(mean(s2) / D)``, and the variance of the replicates about their mean
exceeds that of ``F`` by ``mean(s2)`` within a standard error computed from
the draws; 4.5 standard errors over at most 30 points is a false alarm with
probability below 1e-3.
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytest

from rvm_pymc.basis import polynomial_basis
from rvm_pymc.datasets import make_ripley, make_sinc
from rvm_pymc.estimators import RVC, RVR

pytestmark = pytest.mark.pymc

FAST = {"compile_kwargs": {"mode": "FAST_COMPILE"}}
NUTS = {**FAST, "nuts_sampler": "pymc", "cores": 1, "progressbar": False}
Z = 4.5


@pytest.fixture(scope="module")
def data():
    d = make_sinc(n_train=30, noise_sd=0.1, random_state=0)
    t = 48.6 * d.t_train / d.t_train.std() + 100.0  # data of sd 48.6 and mean about 100
    return d.X_train, t, np.linspace(-10, 10, 9)[:, None]


def _check_replicates(rep: np.ndarray, F: np.ndarray, s2: np.ndarray) -> None:
    """``rep`` (D, n) are ``F`` (D, n) plus Normal noise of variance ``s2`` (D,)."""
    D = rep.shape[0]
    e = rep - F
    z_mean = e.mean(0) / np.sqrt(s2.mean() / D)
    dF = F - F.mean(0)
    excess = rep.var(0) - F.var(0) - s2.mean()
    se = np.sqrt(4.0 * (dF**2 * s2[:, None]).sum(0) + 2.0 * (s2**2).sum()) / D
    assert np.max(np.abs(z_mean)) < Z, z_mean
    assert np.max(np.abs(excess / se)) < Z, excess / se


def _noise_var(tree) -> np.ndarray:
    post, const = tree["posterior"], tree["constant_data"]
    lb = (post if "log_beta" in post else const)["log_beta"].values
    shape = (post.sizes["chain"], post.sizes["draw"])
    return np.broadcast_to(np.exp(-np.asarray(lb, dtype=float)), shape).reshape(-1)


def _latent(tree, Phi) -> np.ndarray:
    w = tree["posterior"]["w"].values
    w = w.reshape(-1, w.shape[-1])
    return w @ Phi.T + float(tree["constant_data"]["y_offset"].values)


# The checks are exact for any draws, well mixed or not: the NUTS fits run at a low
# target_accept (0.6) rather than the estimators' 0.95, whose long trajectories in the joint
# model's funnel made the joint fit the costliest test of the file (50 s -> 23 s at load 6)
SHORT = {**NUTS, "target_accept": 0.6}
FITS = {
    "map": {"method": "map", "gamma": 0.5, "draws": 1000, "sampler_kwargs": FAST},
    "collapsed": {
        "method": "nuts",
        "kernel": polynomial_basis(3),
        "draws": 100,
        "tune": 100,
        "sampler_kwargs": SHORT,
    },
    "joint": {
        "method": "nuts",
        "kernel": polynomial_basis(3),
        "draws": 100,
        "tune": 100,
        "sampler_kwargs": {**SHORT, "model": "joint"},
    },
}


@pytest.mark.filterwarnings("ignore::rvm_pymc.exceptions.SamplingWarning")
@pytest.mark.filterwarnings("error::pymc.exceptions.ImplicitFreezeWarning")
@pytest.mark.parametrize("fit", list(FITS))
def test_model_replicates_the_data_in_its_units(data, fit):
    """model_ replicates idata_'s draws in data units, and PyMC sees model_'s data as
    idata_'s (no ImplicitFreezeWarning: constant_data holds every data container of model_)."""
    X, t, X_new = data
    est = RVR(random_state=0, **FITS[fit]).fit(X, t)
    tree = est.idata_
    s2 = _noise_var(tree)
    # the training inputs: the replicates of model_ are those of idata_'s own draws
    pp = pm.sample_posterior_predictive(tree, model=est.model_, random_seed=1, progressbar=False)
    rep = pp["posterior_predictive"]["t_obs"].values.reshape(s2.size, -1)
    Phi = tree["constant_data"]["Phi"].values
    np.testing.assert_allclose(est.model_["Phi"].get_value(), Phi)
    _check_replicates(rep, _latent(tree, Phi), s2)
    own = tree["posterior_predictive"]["t_obs"].values
    assert rep.std() == pytest.approx(own.std(), rel=0.1)  # both about 48.6, the data's sd
    assert rep.std() == pytest.approx(t.std(), rel=0.25)
    # the pointwise log likelihood of model_ at idata_'s draws is idata_'s own
    ll = pm.compute_log_likelihood(tree, model=est.model_, extend_inferencedata=False,
                                   progressbar=False)  # fmt: skip
    np.testing.assert_allclose(ll["t_obs"].values, tree["log_likelihood"]["t_obs"].values,
                               rtol=1e-10, atol=1e-10)  # fmt: skip
    # new inputs through pm.set_data and the public design matrix
    Phi_new = est.design_matrix(X_new)
    with est.model_:
        pm.set_data({"Phi": Phi_new}, coords={"obs": np.arange(len(X_new))})
        pred = pm.sample_posterior_predictive(
            tree, predictions=True, random_seed=2, progressbar=False
        )
    rep = pred["predictions"]["t_obs"].values.reshape(s2.size, -1)
    F = _latent(tree, Phi_new)
    _check_replicates(rep, F, s2)
    mean, std = est.predict(X_new, return_std=True)
    np.testing.assert_allclose(F.mean(0), mean, rtol=1e-8, atol=1e-8 * np.abs(mean).max())
    if fit != "map":  # predict of a sampled fit: the covariance of its draws, mean 1/beta
        np.testing.assert_allclose(F.var(0, ddof=1) + s2.mean(), std**2, rtol=1e-8)
    # so the replicates' mean is predict's within the noise: standard error sqrt(mean(s2) / D)
    assert np.max(np.abs(rep.mean(0) - mean) / np.sqrt(s2.mean() / s2.size)) < Z


def test_type_ii_model_holds_the_hyperparameters_as_data(data):
    """A MAP fit's hyperparameters are point values: data of model_, as in constant_data."""
    X, t, _ = data
    est = RVR(method="map", gamma=0.5, random_state=0, draws=20, sampler_kwargs=FAST).fit(X, t)
    assert [v.name for v in est.model_.free_RVs] == ["w"]
    const = est.idata_["constant_data"]
    np.testing.assert_array_equal(est.model_["log_alpha"].get_value(), const["log_alpha"].values)
    assert float(est.model_["log_beta"].get_value()) == float(const["log_beta"].values)
    assert float(est.model_["y_offset"].get_value()) == est.y_offset_
    assert float(est.model_["y_scale"].get_value()) == est.y_scale_


@pytest.mark.filterwarnings("ignore::rvm_pymc.exceptions.SamplingWarning")
def test_sampled_model_prior_is_the_fit_prior_in_data_units(data):
    """The log density of model_'s log_alpha at a data-unit value is the fit's prior at the
    scaled value (a shift, no Jacobian)."""
    from scipy import stats

    X, t, _ = data
    est = RVR(method="nuts", kernel=polynomial_basis(2), draws=10, tune=10, random_state=0,
              sampler_kwargs=NUTS).fit(X, t)  # fmt: skip
    model = est.model_
    la_s = np.array([-1.0, 0.5, 2.0])[: len(est.active_)]
    scale = model["basis_scale"].get_value()
    la = la_s + 2.0 * np.log(scale / est.y_scale_)
    value = model.rvs_to_values[model["log_alpha"]]
    fn = pm.compile([value], pm.logp(model["log_alpha"], value))
    prior = est.prior_
    want = stats.gamma(a=prior.a, scale=1.0 / prior.b).logpdf(np.exp(la_s)) + la_s
    np.testing.assert_allclose(fn(la), want, rtol=1e-10)


def test_classifier_model_replicates_its_labels():
    X, y, X_new, _ = make_ripley(n_train=40, n_test=6, random_state=1)
    est = RVC(method="map", gamma=2.0, random_state=0, draws=1000, sampler_kwargs=FAST).fit(X, y)
    with est.model_:
        pm.set_data({"Phi": est.design_matrix(X_new)}, coords={"obs": np.arange(len(X_new))})
        pred = pm.sample_posterior_predictive(
            est.idata_, predictions=True, random_seed=3, progressbar=False
        )
    rep = pred["predictions"]["y_obs"].values.reshape(-1, len(X_new))
    p = est.sample_predictions(X_new)["predictions"]["p"].values.reshape(rep.shape)
    # Bernoulli replicates of the same draws: mean of rep - p has sd <= 0.5 / sqrt(D)
    assert np.max(np.abs(rep.mean(0) - p.mean(0)) / (0.5 / np.sqrt(rep.shape[0]))) < Z
