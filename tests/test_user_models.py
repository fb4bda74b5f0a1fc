"""Users' own models (issue 24, item 5): their own likelihood end to end, or a refusal first.

A model with the package's names but a likelihood of its own has its
``log_likelihood`` and ``posterior_predictive`` computed from the model itself
(before, a Student-t model's were Normal); what a fit cannot hold is refused
before sampling or optimising (before, a heteroscedastic model failed after
sampling, and MAP of a model whose ``log_beta`` is a Deterministic raised a bare
``KeyError``).  Few draws, 20 observations, FAST_COMPILE.
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
from scipy import stats

from rvm_pymc import inference, models
from rvm_pymc.results import predictions

pytestmark = pytest.mark.pymc

FAST = {"compile_kwargs": {"mode": "FAST_COMPILE"}}
RUN = {**FAST, "nuts_sampler": "pymc", "cores": 1, "progressbar": False, "random_seed": 0}
N = 20
NU = 3.0


@pytest.fixture(scope="module")
def problem():
    rng = np.random.default_rng(0)
    x = np.linspace(-1.0, 1.0, N)
    Phi = np.column_stack([np.ones(N), x])
    t = 0.5 + 2.0 * x + 0.3 * rng.standard_t(NU, N)
    return Phi, t


def _weights(Phi, t):
    """Coordinates, data and ARD weights with the package's names."""
    Phi_d = pm.Data("Phi", Phi, dims=("obs", "basis"))
    t_d = pm.Data("t", t, dims="obs")
    log_alpha = pm.Normal("log_alpha", 0.0, 3.0, dims="basis")
    w = pm.Normal("w", 0.0, pt.exp(-0.5 * log_alpha), dims="basis")
    return Phi_d, t_d, w


def _coords():
    return {"basis": ["bias", "x"], "obs": np.arange(N)}


@pytest.mark.filterwarnings("ignore::rvm_pymc.exceptions.SamplingWarning")
def test_student_t_model_is_scored_by_its_own_likelihood(problem):
    Phi, t = problem
    with pm.Model(coords=_coords()) as model:
        Phi_d, t_d, w = _weights(Phi, t)
        log_beta = pm.Normal("log_beta", 0.0, 3.0)
        pm.StudentT("t_obs", nu=NU, mu=Phi_d @ w, sigma=pt.exp(-0.5 * log_beta),
                    observed=t_d, dims="obs")  # fmt: skip
    tree = inference.sample_nuts(model, draws=30, tune=30, chains=2, **RUN)
    w = tree["posterior"]["w"].values
    sigma = np.exp(-0.5 * tree["posterior"]["log_beta"].values)[..., None]
    mu = w @ Phi.T
    want = stats.t.logpdf(t, df=NU, loc=mu, scale=sigma)
    # PyTensor's normalising constant of the t differs from SciPy's by 3.6e-9 (seen); the
    # Normal that was used before is 0.1 to 3 nats off per point
    np.testing.assert_allclose(tree["log_likelihood"]["t_obs"].values, want, rtol=0, atol=1e-7)
    assert tree.attrs["likelihood"] == "model"
    # the replicates are Student-t about the latent mean of their draw: of 1200 standardised
    # residuals a t(3) puts 33.6 beyond 4 in expectation (fewer than 10: p = 4e-7), a Normal
    # 0.08 (10 or more: p = 2e-18); and a Kolmogorov-Smirnov test does not reject the t(3)
    z = ((tree["posterior_predictive"]["t_obs"].values - mu) / sigma).ravel()
    assert np.sum(np.abs(z) > 4.0) >= 10
    assert stats.kstest(z, stats.t(NU).cdf).pvalue > 1e-3
    # predictions from the tree alone would use the RVM's Normal: refused, naming the way
    with pytest.raises(ValueError, match=r"pm\.sample_posterior_predictive"):
        predictions(tree, Phi)


def test_heteroscedastic_model_is_refused_before_sampling(problem, monkeypatch):
    Phi, t = problem
    with pm.Model(coords=_coords()) as model:
        Phi_d, t_d, w = _weights(Phi, t)
        log_beta = pm.Normal("log_beta", 0.0, 3.0, dims="obs")  # one precision per point
        pm.Normal("t_obs", mu=Phi_d @ w, sigma=pt.exp(-0.5 * log_beta), observed=t_d, dims="obs")

    def not_sampled(*args, **kwargs):
        raise AssertionError("pm.sample was called")

    monkeypatch.setattr(pm, "sample", not_sampled)
    with pytest.raises(ValueError, match=r"log_beta has 1 dimension\(s\).*heteroscedastic"):
        inference.sample_nuts(model, draws=10, tune=10, chains=2, **RUN)


def _halfnormal_marginal(Phi, t):
    with pm.Model(coords=_coords()) as model:
        Phi_d = pm.Data("Phi", Phi, dims=("obs", "basis"))
        t_d = pm.Data("t", t, dims="obs")
        PtP = pm.Data("PhiTPhi", Phi.T @ Phi)
        log_alpha = pm.Normal("log_alpha", 0.0, 3.0, dims="basis")
        sigma = pm.HalfNormal("sigma", 1.0)
        log_beta = pm.Deterministic("log_beta", -2.0 * pt.log(sigma))
        pm.CustomDist("t_obs", log_alpha, log_beta, Phi_d, PtP, logp=models.marginal_logp_fast,
                      signature="(m),(),(n,m),(m,m)->(n)", observed=t_d, dims="obs")  # fmt: skip
    return model


def test_map_of_a_deterministic_log_beta_names_it(problem):
    Phi, t = problem
    model = _halfnormal_marginal(Phi, t)
    with pytest.raises(ValueError, match=r"log_beta is a Deterministic of \['sigma'\]"):
        inference.fit_map(model, draws=10, **FAST)


def test_marginal_model_of_another_likelihood_is_refused_before_sampling(problem, monkeypatch):
    """The collapsed sampler and MAP draw the weights from the RVM's Gaussian posterior."""
    Phi, t = problem

    def twice_the_noise(value, la, lb, P, PtP):  # a marginal, but not the RVM's
        return models.marginal_logp_fast(value, la, lb - np.log(2.0), P, PtP)

    with pm.Model(coords=_coords()) as model:
        Phi_d = pm.Data("Phi", Phi, dims=("obs", "basis"))
        t_d = pm.Data("t", t, dims="obs")
        PtP = pm.Data("PhiTPhi", Phi.T @ Phi)
        log_alpha = pm.Flat("log_alpha", dims="basis")
        log_beta = pm.Flat("log_beta")
        pm.CustomDist("t_obs", log_alpha, log_beta, Phi_d, PtP, logp=twice_the_noise,
                      signature="(m),(),(n,m),(m,m)->(n)", observed=t_d, dims="obs")  # fmt: skip

    def not_sampled(*args, **kwargs):
        raise AssertionError("pm.sample was called")

    monkeypatch.setattr(pm, "sample", not_sampled)
    with pytest.raises(ValueError, match="not the Gaussian marginal likelihood"):
        inference.sample_collapsed(model, draws=10, tune=10, chains=2, **RUN)
    with pytest.raises(ValueError, match="not the Gaussian marginal likelihood"):
        inference.fit_map(model, draws=10, **FAST)


def test_probit_classifier_map_is_scored_by_its_own_likelihood():
    """Type-II MAP of a probit classifier (the Laplace evidence of the model's own log density):
    its log_likelihood is the probit's at the weight draws, not the logit's."""
    rng = np.random.default_rng(0)
    Phi = np.column_stack([np.ones(30), rng.normal(size=30)])
    y = (Phi[:, 1] + rng.normal(size=30) > 0).astype(int)
    with pm.Model(coords={"basis": [0, 1], "obs": np.arange(30)}) as probit:
        Phi_d = pm.Data("Phi", Phi, dims=("obs", "basis"))
        y_d = pm.Data("y", y, dims="obs")
        la = pm.Normal("log_alpha", 0.0, 2.0, dims="basis")
        w = pm.Normal("w", 0.0, pt.exp(-0.5 * la), dims="basis")
        p = 0.5 * (1 + pt.erf((Phi_d @ w) / np.sqrt(2.0)))
        pm.Bernoulli("y_obs", p=p, observed=y_d, dims="obs")
    tree = inference.fit_map(probit, draws=50, random_seed=0, **FAST)
    F = tree["posterior"]["w"].values @ Phi.T
    want = np.where(y == 1, stats.norm.logcdf(F), stats.norm.logcdf(-F))
    np.testing.assert_allclose(tree["log_likelihood"]["y_obs"].values, want, rtol=1e-8, atol=1e-10)
    assert tree.attrs["likelihood"] == "model"
    # the replicates are Bernoulli(Phi(F)): their mean over 100 draws x 30 points is that of
    # the probabilities within 4.5 standard errors (sd of a Bernoulli at most 0.5)
    rep = tree["posterior_predictive"]["y_obs"].values
    assert abs(rep.mean() - stats.norm.cdf(F).mean()) < 4.5 * 0.5 / np.sqrt(rep.size)


@pytest.mark.filterwarnings("ignore::rvm_pymc.exceptions.SamplingWarning")
def test_a_model_in_data_units_is_scored_with_its_offset(problem):
    """``data_unit_model`` (an estimator's ``model_``) is not a builder's model as built.

    Its mean holds ``y_offset``, which the package's regression formulas leave out;
    sampled by ``sample_nuts``, its log likelihood must come from the model itself.
    """
    Phi, t = problem
    m = models.data_unit_model(
        "regression", Phi, t + 10.0, basis_scale=np.ones(2), y_offset=10.0, y_scale=1.0,
        prior="weakly_informative",
    )  # fmt: skip
    assert not models.builder_made(m)
    assert models.builder_made(models.regression_joint(Phi, t))
    tree = inference.sample_nuts(m, draws=30, tune=30, chains=1, **RUN)
    post = tree["posterior"]
    w, lb = post["w"].values, post["log_beta"].values
    mu = 10.0 + w @ Phi.T
    want = stats.norm.logpdf(t + 10.0, mu, np.exp(-0.5 * lb)[..., None])
    np.testing.assert_allclose(tree["log_likelihood"]["t_obs"].values, want, atol=1e-7)


def test_map_of_a_model_with_another_free_variable_is_refused_before_compiling(monkeypatch):
    """A classifier with a free scale ``s`` beside log_alpha and w: MAP has no place for it.

    Before, MAP compiled for seconds and then failed with PyTensor's MissingInputError.
    """
    rng = np.random.default_rng(0)
    x = np.linspace(-1.0, 1.0, N)
    y = (x + 0.3 * rng.standard_normal(N) > 0).astype(int)
    with pm.Model(coords=_coords()) as m:
        Phi_d = pm.Data("Phi", np.column_stack([np.ones(N), x]), dims=("obs", "basis"))
        y_d = pm.Data("y", y, dims="obs")
        log_alpha = pm.Normal("log_alpha", 0.0, 3.0, dims="basis")
        w = pm.Normal("w", 0.0, pt.exp(-0.5 * log_alpha), dims="basis")
        s = pm.HalfNormal("s", 1.0)
        pm.Bernoulli("y_obs", logit_p=s * (Phi_d @ w), observed=y_d, dims="obs")
    monkeypatch.setattr(pm.Model, "compile_fn", lambda *a, **k: pytest.fail("compiled"))
    with pytest.raises(ValueError, match=r"other free variables \['s'\]"):
        inference.fit_map(m, random_seed=0, **FAST)
