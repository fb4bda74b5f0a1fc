"""The reference solver for counts: Poisson likelihood, log link, Laplace evidence."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import logsumexp

from rvm_pymc._core.counts import (
    check_counts,
    gaussian_rates,
    mixture_cdf,
    mixture_logpmf,
    mixture_mean,
    mixture_quantiles,
    poisson_logpmf,
)
from rvm_pymc.reference import fit_counts, fit_posterior, poisson_laplace_posterior


def _brute_force_log_evidence(Phi, y, alpha, centre, sd, half=10.0, n=801):
    """``log int p(y | w) N(w | 0, A^-1) dw`` on a dense grid of +-10 sd (trapezoid)."""
    grids = [np.linspace(c - half * s, c + half * s, n) for c, s in zip(centre, sd, strict=True)]
    W = np.stack(np.meshgrid(*grids, indexing="ij"), -1).reshape(-1, len(grids))
    log_prior = 0.5 * (np.log(alpha) - np.log(2 * np.pi)) - 0.5 * alpha * W**2
    log_joint = poisson_logpmf(y[None, :], W @ Phi.T).sum(1) + log_prior.sum(1)
    cell = np.prod([g[1] - g[0] for g in grids])
    return float(logsumexp(log_joint) + np.log(cell))


def _tiny(m, scale, seed=1):
    rng = np.random.default_rng(seed)
    x = np.linspace(-1, 1, 12)
    Phi = np.column_stack([np.ones_like(x), x])[:, :m]
    y = rng.poisson(scale * np.exp(0.5 + 0.8 * x)).astype(float)
    return Phi, y, np.array([0.5, 2.0])[:m]


@pytest.mark.parametrize("m", [1, 2])
def test_laplace_evidence_matches_brute_force_integral(m):
    """Laplace evidence against the integral over the weights on a grid; the error (of
    the approximation, not of the code) shrinks as the counts grow."""
    errors = []
    for scale in (1.0, 10.0):
        Phi, y, alpha = _tiny(m, scale)
        post = poisson_laplace_posterior(Phi, y, alpha)
        assert post.converged
        exact = _brute_force_log_evidence(
            Phi, y, alpha, post.mean[:, 0], np.sqrt(np.diag(post.cov))
        )
        errors.append(abs(post.log_evidence - exact))
    assert errors[0] < 0.02  # seen: 0.003 (one basis), 0.006 (two)
    assert errors[1] < errors[0] / 3  # seen: 7x and 6x smaller at ten times the counts


def test_laplace_mode_is_stationary_and_covariance_is_inverse_hessian():
    Phi, y, alpha = _tiny(2, 3.0)
    post = poisson_laplace_posterior(Phi, y, alpha)
    w = post.mean[:, 0]
    lam = np.exp(Phi @ w)
    np.testing.assert_allclose(Phi.T @ (y - lam) - alpha * w, 0.0, atol=1e-8)
    H = Phi.T @ (lam[:, None] * Phi) + np.diag(alpha)
    np.testing.assert_allclose(post.cov @ H, np.eye(2), atol=1e-10)
    np.testing.assert_allclose(post.curvature, lam)


def _sine_counts(n=60, seed=0):
    rng = np.random.default_rng(seed)
    x = np.linspace(-2, 2, n)
    rate = np.exp(1 + np.sin(2 * x))
    Phi = np.column_stack([np.ones_like(x), np.exp(-((x[:, None] - x) ** 2))])
    return Phi, rng.poisson(rate), rate


def test_fast_and_mackay_reach_the_same_optimum():
    Phi, y, rate = _sine_counts()
    fast = fit_counts(Phi, y, method="fast")
    mackay = fit_counts(Phi, y, method="mackay")
    assert fast.converged and mackay.converged
    assert fast.n_relevance < 10
    assert abs(fast.log_evidence - mackay.log_evidence) < 1e-2
    np.testing.assert_allclose(fast.predict(Phi), mackay.predict(Phi), rtol=2e-2)
    # the fit recovers the rate: mean absolute error well below the Poisson noise
    assert np.mean(np.abs(fast.predict(Phi) - rate)) < 0.5 * np.mean(np.sqrt(rate))


def test_predictive_mixture_mean_quantiles_and_density():
    Phi, y, _ = _sine_counts()
    res = fit_counts(Phi, y)
    rates, weights, _ = res.predictive(Phi)
    np.testing.assert_allclose(mixture_mean(rates, weights), res.predict(Phi), rtol=1e-10)
    lo, hi = res.predict_interval(Phi, 0.9)
    assert np.all(lo <= hi)
    assert np.all(mixture_cdf(hi, rates, weights) >= 0.95)
    assert np.all(mixture_cdf(hi - 1, rates, weights) < 0.95)
    # the predictive pmf sums to one over the counts
    ks = np.arange(0, 200.0)
    total = sum(np.exp(res.log_predictive_density(Phi[:5], np.full(5, k))) for k in ks)
    np.testing.assert_allclose(total, 1.0, atol=1e-10)
    # with no posterior variance the mixture is the Poisson at the mode
    r0, w0 = gaussian_rates(np.log([2.0, 7.0]), np.zeros(2))
    np.testing.assert_allclose(
        mixture_logpmf(np.array([3.0, 4.0]), r0, w0),
        poisson_logpmf(np.array([3.0, 4.0]), np.log([2.0, 7.0])),
    )
    assert mixture_quantiles(0.5, r0, w0).tolist() == [2.0, 7.0]


def test_fresh_counts_fall_in_the_predictive_intervals():
    Phi, y, rate = _sine_counts(n=80, seed=3)
    res = fit_counts(Phi, y)
    lo, hi = res.predict_interval(Phi, 0.9)
    fresh = np.random.default_rng(4).poisson(rate, size=(50, rate.size))
    cover = np.mean((fresh >= lo) & (fresh <= hi))
    assert 0.85 < cover < 0.99  # discrete: at least the level, up to the step of the cdf


@pytest.mark.parametrize(
    ("y", "match"),
    [
        ([1, -1, 2], "negative"),
        ([1, np.nan, 2], "non-finite"),
        ([0, 0, 0], "all zero"),
        (["a", "b", "c"], "numbers"),
    ],
)
def test_counts_are_checked_naming_y(y, match):
    with pytest.raises(ValueError, match=f"^y .*{match}|{match}"):
        check_counts(y)
    with pytest.raises(ValueError, match="y"):
        fit_counts(np.ones((3, 1)), y)


def test_fit_posterior_gives_a_poisson_weight_posterior():
    Phi, y, _ = _sine_counts()
    names = [f"b{i}" for i in range(Phi.shape[1])]
    post, info = fit_posterior(Phi, y, "counts", names, solver="fast", prior="evidence")
    assert post.kind == "poisson"
    assert info.converged
    res = fit_counts(Phi, y)
    assert [names[i] for i in res.active] == list(post.basis_names)
    np.testing.assert_allclose(post.mean, res.mean)
    np.testing.assert_allclose(info.log_evidence, res.log_evidence)
