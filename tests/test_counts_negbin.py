"""Overdispersed counts: the negative binomial (NB2) likelihood of RVP, reference and NUTS."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats
from scipy.special import logsumexp

from rvm_pymc import RVP, compare
from rvm_pymc._core.counts import (
    mixture_cdf,
    mixture_logpmf,
    mixture_quantiles,
    negbin_logpmf,
    poisson_logpmf,
)
from rvm_pymc.basis import PrecomputedBasis
from rvm_pymc.reference import (
    fit_counts,
    negative_binomial_laplace_posterior,
    poisson_laplace_posterior,
)

R_TRUE = 2.0


def _overdispersed(n, seed, r=R_TRUE):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, size=(n, 1))
    mu = np.exp(1.5 + np.sin(2 * X[:, 0]))
    return X, rng.negative_binomial(r, r / (r + mu)).astype(float)


@pytest.mark.parametrize("r", [0.3, 2.0, 50.0])
@pytest.mark.parametrize("mu", [0.2, 4.0, 60.0])
def test_negbin_logpmf_cdf_and_quantiles_match_scipy(r, mu):
    y = np.arange(0.0, 300.0)
    p = r / (r + mu)  # scipy's nbinom(n=r, p): mean r (1 - p) / p = mu
    np.testing.assert_allclose(
        negbin_logpmf(y, np.log(mu), r), stats.nbinom.logpmf(y, r, p), rtol=1e-10, atol=1e-11
    )
    one = (np.array([[mu]]), np.array([1.0]), r)
    k = np.array([3.0])
    assert mixture_cdf(k, *one)[0] == pytest.approx(stats.nbinom.cdf(3, r, p), rel=1e-10)
    for q in (0.05, 0.5, 0.99):
        assert mixture_quantiles(q, *one)[0] == stats.nbinom.ppf(q, r, p)
    assert mixture_logpmf(k, *one)[0] == pytest.approx(stats.nbinom.logpmf(3, r, p), rel=1e-10)


def test_negbin_tends_to_poisson_and_mixture_pmf_sums_to_one():
    y = np.arange(0.0, 40.0)
    f = np.log(5.0)
    # NB2 - Poisson is O(1/r): at r = 1e9 below 1e-6 for these counts
    np.testing.assert_allclose(negbin_logpmf(y, f, 1e9), poisson_logpmf(y, f), atol=1e-6)
    assert np.max(np.abs(negbin_logpmf(y, f, 10.0) - poisson_logpmf(y, f))) > 0.1
    rates, weights = np.array([[2.0, 9.0], [0.5, 30.0]]), np.array([0.3, 0.7])
    k = np.arange(0.0, 3000.0)
    total = [np.exp(mixture_logpmf(np.full(2, kk), rates, weights, 0.7)) for kk in k]
    np.testing.assert_allclose(np.sum(total, axis=0), 1.0, atol=1e-8)


def test_laplace_evidence_matches_brute_force_integral():
    """The Laplace log evidence of NB2 at fixed (alpha, r) against the integral over one
    weight on a dense grid (the error is the approximation's, small for these counts)."""
    rng = np.random.default_rng(1)
    Phi = np.ones((25, 1))
    y = rng.negative_binomial(3.0, 3.0 / (3.0 + 6.0), size=25).astype(float)
    alpha, r = np.array([0.5]), 3.0
    post = negative_binomial_laplace_posterior(Phi, y, alpha, r)
    assert post.converged
    w = post.mean[0, 0] + np.sqrt(post.cov[0, 0]) * np.linspace(-12, 12, 4001)
    log_joint = negbin_logpmf(y[None, :], w[:, None], r).sum(1) + stats.norm.logpdf(
        w, 0, 1 / np.sqrt(alpha[0])
    )
    exact = float(logsumexp(log_joint) + np.log(w[1] - w[0]))
    assert abs(post.log_evidence - exact) < 0.01
    # a Poisson at a huge dispersion: the same mode and evidence to O(1/r)
    far = negative_binomial_laplace_posterior(Phi, y, alpha, 1e9)
    pois = poisson_laplace_posterior(Phi, y, alpha)
    np.testing.assert_allclose(far.mean, pois.mean, rtol=1e-6)
    assert far.log_evidence == pytest.approx(pois.log_evidence, abs=1e-5)


def test_reference_recovers_the_dispersion_and_beats_poisson_held_out():
    X, y = _overdispersed(300, seed=0)
    Xt, yt = _overdispersed(1000, seed=1)
    pois = RVP(gamma=1.0, random_state=0).fit(X, y)
    nb = RVP(likelihood="negative_binomial", gamma=1.0, random_state=0).fit(X, y)
    assert nb.converged_ and pois.dispersion_ is None
    assert 0.7 * R_TRUE < nb.dispersion_ < 1.4 * R_TRUE  # seen: 1.73
    assert nb.log_evidence_ > pois.log_evidence_ + 50  # seen: -791 against -1065
    lpd_nb = nb.log_predictive_density(Xt, yt).mean()
    lpd_pois = pois.log_predictive_density(Xt, yt).mean()
    assert lpd_nb > lpd_pois + 0.2  # seen: -2.58 against -3.32 nats per point
    # the 90% interval of the NB covers about 90% of held-out counts (at least 90% of
    # the predictive mass: the counts are discrete), the Poisson's too few
    lo, hi = nb.predict_interval(Xt, 0.9)
    assert 0.87 < np.mean((yt >= lo) & (yt <= hi)) < 0.98  # seen: 0.948
    lo, hi = pois.predict_interval(Xt, 0.9)
    assert np.mean((yt >= lo) & (yt <= hi)) < 0.8  # seen: 0.723
    # the result tree: the NB kind, its dispersion held fixed in constant_data
    tree = nb.idata_
    assert float(tree["constant_data"]["log_dispersion"]) == pytest.approx(np.log(nb.dispersion_))
    ll = tree["log_likelihood"]["counts_obs"].values
    w = tree["posterior"]["w"].values
    f = w @ tree["constant_data"]["Phi"].values.T
    np.testing.assert_allclose(ll, negbin_logpmf(y, f, nb.dispersion_), rtol=1e-12)
    # compare's lpd column is the estimator's own
    table = compare({"poisson": pois, "nb": nb}, Xt, yt, cv=None, loo=False)
    assert table.loc["nb", "lpd"] == pytest.approx(lpd_nb, rel=1e-10)
    assert table.loc["nb", "log_evidence"] == pytest.approx(nb.log_evidence_, rel=1e-8)


def test_equidispersed_counts_give_a_large_dispersion_and_the_poisson_fit():
    rng = np.random.default_rng(4)
    x = np.linspace(-2, 2, 200)
    y = rng.poisson(np.exp(1 + np.sin(2 * x))).astype(float)
    Phi = np.column_stack([np.ones_like(x), np.exp(-((x[:, None] - x[::10]) ** 2))])
    pois = fit_counts(Phi, y)
    nb = fit_counts(Phi, y, likelihood="negative_binomial")
    assert nb.dispersion > 30  # overdispersion of at most 1/30 of mu^2
    mu_p, mu_n = pois.predict(Phi), nb.predict(Phi)
    np.testing.assert_allclose(mu_n, mu_p, rtol=0.05)
    assert nb.log_evidence == pytest.approx(pois.log_evidence, abs=2.0)
    # and the dispersion's trace: one value per alternation with the precisions
    assert nb.trace["dispersion"].size >= 1 and nb.likelihood == "negative_binomial"


def test_a_fit_stopped_before_the_dispersion_settles_reports_the_r_of_its_posterior(
    monkeypatch,
):
    """Stopped after one alternation: the r returned is the one the precisions and the
    weights were fitted at (the last of the trace), with its Laplace evidence."""
    import rvm_pymc.reference.counts as counts
    from rvm_pymc.exceptions import ConvergenceWarning

    X, y = _overdispersed(80, seed=11)
    Phi = np.column_stack([np.ones(80), np.exp(-((X - X[::8, 0]) ** 2))])
    monkeypatch.setattr(counts, "MAX_DISPERSION_STEPS", 1)
    with pytest.warns(ConvergenceWarning, match="negative binomial"):
        nb = fit_counts(Phi, y, likelihood="negative_binomial", method="mackay")
    assert nb.dispersion == nb.trace["dispersion"][-1]
    post = negative_binomial_laplace_posterior(Phi[:, nb.active], y, nb.alpha, nb.dispersion)
    assert post.log_evidence == pytest.approx(nb.log_evidence, rel=1e-6)


def test_likelihood_is_validated():
    X, y = _overdispersed(30, seed=2)
    with pytest.raises(ValueError, match="likelihood must be one of"):
        RVP(likelihood="negbin").fit(X, y)
    with pytest.raises(ValueError, match="method='map' is not implemented"):
        RVP(likelihood="negative_binomial", method="map").fit(X, y)
    with pytest.raises(ValueError, match="likelihood must be one of"):
        fit_counts(np.ones((30, 1)), y, likelihood="gamma")
    with pytest.raises(ValueError, match="dispersion must be finite and > 0"):
        negative_binomial_laplace_posterior(np.ones((30, 1)), y, [1.0], -1.0)


def test_save_and_load_round_trip(tmp_path):
    X, y = _overdispersed(60, seed=3)
    est = RVP(likelihood="negative_binomial", gamma=1.0, random_state=0).fit(X, y)
    est.save(tmp_path / "nb.nc")
    back = RVP.load(tmp_path / "nb.nc")
    assert back.likelihood == "negative_binomial"
    assert back.dispersion_ == est.dispersion_
    assert back.posterior_.kind == "negative_binomial"
    np.testing.assert_array_equal(back.predict(X), est.predict(X))
    np.testing.assert_array_equal(
        back.log_predictive_density(X, y), est.log_predictive_density(X, y)
    )
    np.testing.assert_array_equal(
        back.idata_["posterior_predictive"]["counts_obs"].values,
        est.idata_["posterior_predictive"]["counts_obs"].values,
    )


@pytest.mark.filterwarnings("ignore::rvm_pymc.exceptions.SamplingWarning")
def test_short_nuts_fit_samples_the_dispersion():
    """A short joint NUTS run (fixed draws): log_dispersion in the posterior and in the
    predictive; its draws centre near the reference estimate."""
    rng = np.random.default_rng(5)
    X = rng.standard_normal((60, 1))
    mu = np.exp(1.5 + 0.5 * X[:, 0])
    y = rng.negative_binomial(R_TRUE, R_TRUE / (R_TRUE + mu))
    nuts = {"nuts_sampler": "pymc", "cores": 1, "progressbar": False}
    kw = {"kernel": PrecomputedBasis(bias=True), "likelihood": "negative_binomial"}
    ref = RVP(**kw).fit(X, y)
    est = RVP(method="nuts", draws=150, tune=150, chains=2, sampler_kwargs=nuts,
              random_state=0, **kw).fit(X, y)  # fmt: skip
    post = est.idata_["posterior"]
    assert post["log_dispersion"].shape == (2, 150)
    assert est.posterior_.kind == "negative_binomial"
    # the prior shrinks r towards the Poisson (larger r); the two agree within a factor 2
    assert 0.5 * ref.dispersion_ < est.dispersion_ < 2.0 * ref.dispersion_
    assert est.dispersion_ == pytest.approx(float(np.exp(np.median(post["log_dispersion"]))))
    rates, _, r = est.predictive_mixture(X[:4])
    assert rates.shape == (4, 300) and r.shape == (300,)
    assert np.all(np.isfinite(est.log_predictive_density(X, y)))
    assert "log_dispersion" in est.model_.named_vars  # the fit's model in data units
    # the dispersion's prior is NUTS's: in its tree, not in the reference fit's
    assert float(est.idata_["constant_data"]["dispersion_prior_scale"]) == 1.0
    assert "dispersion_prior_scale" not in ref.idata_["constant_data"]


def test_the_reference_fit_records_no_dispersion_prior():
    """The reference solver fits r by its evidence, under no prior: its tree says none."""
    X, y = _overdispersed(40, seed=3)
    nb = RVP(likelihood="negative_binomial", gamma=1.0, random_state=0).fit(X, y)
    const = nb.idata_["constant_data"]
    assert "log_dispersion" in const and "dispersion_prior_scale" not in const


def test_command_line_fits_the_negative_binomial(tmp_path, capsys):
    import json

    import pandas as pd

    from rvm_pymc.cli import main
    from rvm_pymc.estimators import load

    X, y = _overdispersed(60, seed=6)
    path = tmp_path / "c.csv"
    pd.DataFrame({"x": X[:, 0], "n": y}).to_csv(path, index=False)
    argv = ["fit", str(path), "--target", "n", "--task", "counts", "--gamma", "1.0", "--no-plot"]
    out = tmp_path / "m"
    assert main([*argv, "--likelihood", "negative_binomial", "--out", str(out)]) == 0
    est = load(out / "model.nc")
    assert est.likelihood == "negative_binomial" and est.dispersion_ > 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["task"] == "counts" and summary["likelihood"] == "negative_binomial"
    assert summary["dispersion"] == pytest.approx(est.dispersion_, rel=1e-12)
    # refused where it does not apply, naming the option
    bad = [*argv, "--likelihood", "negative_binomial", "--out", str(tmp_path / "b")]
    assert main([*bad, "--method", "map"]) == 2
    assert "--likelihood" in capsys.readouterr().err
    bad[bad.index("counts")] = "regression"
    assert main(bad) == 2
    assert "--likelihood" in capsys.readouterr().err


def test_a_poisson_pickle_from_before_the_likelihood_parameter_loads_as_poisson():
    """State without ``likelihood`` and ``dispersion_`` (pickles written before them)."""
    import pickle

    X, y = _overdispersed(40, seed=12)
    est = RVP(gamma=1.0).fit(X, y)
    state = est.__getstate__()
    del state["likelihood"], state["dispersion_"]
    old = pickle.loads(pickle.dumps(est))
    old.__dict__.clear()
    old.__setstate__(state)
    assert old.likelihood == "poisson" and old.dispersion_ is None
    assert repr(old) == "RVP(gamma=1.0)"
    np.testing.assert_array_equal(old.predict(X), est.predict(X))
