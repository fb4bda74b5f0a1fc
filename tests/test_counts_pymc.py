"""Counts in PyMC: the Poisson model, its type-II MAP (Laplace) and NUTS, through RVP."""

from __future__ import annotations

import numpy as np
import pymc  # noqa: F401
import pytest

from rvm_pymc import RVP, models

FAST = {"compile_kwargs": {"mode": "FAST_COMPILE"}}


def _counts(n=30, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, size=(n, 1))
    return X, rng.poisson(np.exp(1 + np.sin(2 * X[:, 0])))


def test_poisson_model_is_recognised_and_checks_its_counts():
    X, y = _counts()
    Phi = np.column_stack([np.ones(len(y)), X[:, 0]])
    model = models.counts_poisson(Phi, y, prior="evidence")
    spec = models.model_spec(model)
    assert (spec.kind, spec.parametrization) == ("poisson", "centred")
    assert (spec.prior.a, spec.prior.b) == (0.0, 0.0)
    # the model's log density at w is the Poisson log likelihood at exp(Phi w)
    w = np.array([0.3, -0.2])
    point = {"log_alpha": np.zeros(2), "w": w}
    logp = model.compile_logp(vars=[model["counts_obs"]], jacobian=False)(point)
    from scipy.stats import poisson

    assert logp == pytest.approx(poisson.logpmf(y, np.exp(Phi @ w)).sum(), rel=1e-12)
    with pytest.raises(ValueError, match="y has 1 negative"):
        models.counts_poisson(Phi, np.r_[y[:-1], -1])


def test_map_from_the_reference_start_returns_it(tmp_path):
    """Tipping's fixed point (laplace='tipping') started at the reference solution stays
    there: the same relevance vectors, precisions, weights and Laplace evidence."""
    X, y = _counts()
    kw = {"gamma": 1.0, "tol": 1e-10, "random_state": 0}
    ref = RVP(**kw).fit(X, y)
    mp = RVP(method="map", sampler_kwargs={**FAST, "laplace": "tipping"}, **kw).fit(X, y)
    assert mp.idata_.attrs["started_from"] == "reference"
    assert mp.converged_
    assert mp.active_names_ == ref.active_names_
    np.testing.assert_allclose(mp.alpha_, ref.alpha_, rtol=1e-6)
    np.testing.assert_allclose(mp.coef_, ref.coef_, rtol=1e-6)
    np.testing.assert_allclose(mp.sigma_, ref.sigma_, rtol=1e-6)
    assert mp.log_evidence_ == pytest.approx(ref.log_evidence_, abs=1e-8)
    assert "counts_obs" in mp.model_.named_vars  # the fit's model in data units
    mp.save(tmp_path / "map.nc")
    np.testing.assert_array_equal(RVP.load(tmp_path / "map.nc").predict(X), mp.predict(X))


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::rvm_pymc.exceptions.SamplingWarning")
def test_nuts_agrees_with_a_long_run():
    """A default-length NUTS fit against one five times longer, on a basis of a bias and two
    features (a Poisson regression with ARD): the same predictive means, intervals and
    log predictive density within Monte Carlo error."""
    from rvm_pymc.basis import PrecomputedBasis

    rng = np.random.default_rng(3)
    X = rng.standard_normal((40, 2))
    y = rng.poisson(np.exp(1.0 + 0.6 * X[:, 0]))  # the second feature is irrelevant
    Xt = np.column_stack([np.linspace(-2, 2, 9), np.zeros(9)])
    # PyTensor's default backend: FAST_COMPILE (the Python VM) samples far slower
    nuts = {"nuts_sampler": "pymc", "cores": 1, "progressbar": False}
    kw = {"kernel": PrecomputedBasis(bias=True), "method": "nuts", "sampler_kwargs": nuts}
    short = RVP(draws=1000, tune=1000, chains=2, random_state=1, **kw).fit(X, y)
    long = RVP(draws=5000, tune=1000, chains=4, random_state=2, **kw).fit(X, y)
    assert long.idata_.attrs["n_divergent"] < 0.01 * 4 * 5000
    np.testing.assert_allclose(short.predict(Xt), long.predict(Xt), rtol=0.05)
    lo_s, hi_s = short.predict_interval(Xt, 0.9)
    lo_l, hi_l = long.predict_interval(Xt, 0.9)
    assert np.all(np.abs(lo_s - lo_l) <= 1) and np.all(np.abs(hi_s - hi_l) <= 1)
    assert short.log_predictive_density(X, y).sum() == pytest.approx(
        long.log_predictive_density(X, y).sum(), abs=0.5
    )
    # both find the irrelevant feature: its weight's posterior sits on zero
    for f in (short, long):
        mean, sd = f.coef_[2], np.sqrt(f.sigma_[2, 2])
        assert abs(mean) < 2 * sd
