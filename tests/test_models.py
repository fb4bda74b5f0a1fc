"""The PyMC model builders against the closed-form reference and dense oracles.

All log densities are compiled with ``mode="FAST_COMPILE"`` (about a second
per graph, no C or Numba compilation), so this file is cheap on a cold cache.
"""

import numpy as np
import pymc as pm
import pytest
from scipy.special import gammaln, log_expit, log_softmax
from scipy.stats import norm

from rvm_pymc import models
from rvm_pymc.priors import resolve_prior
from rvm_pymc.reference import (
    dense_log_marginal_likelihood,
    log_evidence,
    log_marginal_likelihood,
    regression_posterior,
)

pytestmark = pytest.mark.pymc
FAST = "FAST_COMPILE"


def _logp(model, point):
    return float(model.compile_logp(mode=FAST)(point))


def _problem(seed, n, m):
    rng = np.random.default_rng(seed)
    Phi = np.column_stack([np.ones(n), rng.standard_normal((n, m - 1))])
    t = Phi @ (rng.standard_normal(m) * (rng.random(m) < 0.5)) + 0.3 * rng.standard_normal(n)
    log_alpha = rng.uniform(-3.0, 6.0, m)
    log_beta = rng.uniform(-1.0, 3.0)
    return Phi, t, log_alpha, log_beta


def _gamma_constants(prior, m):
    """Gamma normalising constants of the log-coordinate priors (absent from the reference J)."""
    return m * (prior.a * np.log(prior.b) - gammaln(prior.a)) + (
        prior.c * np.log(prior.d) - gammaln(prior.c)
    )


@pytest.mark.parametrize(("seed", "n", "m"), [(0, 30, 8), (1, 12, 25), (2, 50, 51)])
def test_marginal_logp_equals_reference_evidence(seed, n, m):
    Phi, t, la, lb = _problem(seed, n, m)
    point = {"log_alpha": la, "log_beta": lb}
    alpha, beta = np.exp(la), np.exp(lb)
    # "evidence" preset: flat prior on the log precisions, so logp is the marginal likelihood
    got = _logp(models.regression_marginal(Phi, t, prior="evidence"), point)
    want = log_marginal_likelihood(Phi, t, alpha, beta)
    assert got == pytest.approx(want, rel=1e-8)
    assert got == pytest.approx(dense_log_marginal_likelihood(Phi, t, alpha, beta), rel=1e-8)
    # proper prior: logp = J + Gamma normalising constants
    prior = resolve_prior("weakly_informative")
    got = _logp(models.regression_marginal(Phi, t, prior=prior), point)
    want = log_evidence(Phi, t, alpha, beta, prior) + _gamma_constants(prior, m)
    assert got == pytest.approx(want, rel=1e-8)


def test_joint_model_integrates_to_marginal():
    """Candidate's formula: log p(t|a,b) = log p(t, w|a,b) - log p(w|t,a,b) for every w."""
    Phi, t, la, lb = _problem(3, 25, 6)
    prior = resolve_prior("weakly_informative")
    hyper = float(
        np.sum(prior.a * la - prior.b * np.exp(la))
        + prior.c * lb
        - prior.d * np.exp(lb)
        + _gamma_constants(prior, 6)
    )
    post = regression_posterior(Phi, t, np.exp(la), np.exp(lb))
    marginal = log_marginal_likelihood(Phi, t, np.exp(la), np.exp(lb))
    joint = models.regression_joint(Phi, t, prior=prior)
    non_centred = models.regression_joint(Phi, t, prior=prior, parametrization="non_centred")
    f_joint = joint.compile_logp(mode=FAST)
    f_nc = non_centred.compile_logp(mode=FAST)
    rng = np.random.default_rng(0)
    for _ in range(3):
        w = post.mean + rng.standard_normal(6) * 0.3
        log_post_w = -0.5 * (
            6 * np.log(2 * np.pi)
            - post.logdet_precision
            + (w - post.mean) @ np.linalg.solve(post.cov, w - post.mean)
        )
        lp = float(f_joint({"log_alpha": la, "log_beta": lb, "w": w}))
        assert lp - hyper - log_post_w == pytest.approx(marginal, rel=1e-9)
        # non-centred: density of w_raw = w sqrt(alpha), Jacobian sum(log alpha)/2
        lp_nc = float(f_nc({"log_alpha": la, "log_beta": lb, "w_raw": w * np.exp(0.5 * la)}))
        assert lp_nc == pytest.approx(lp - 0.5 * np.sum(la), rel=1e-10)


def test_rbf_width_model_matches_fixed_design():
    rng = np.random.default_rng(4)
    X = rng.uniform(-3, 3, (20, 2))
    t = np.sin(X[:, 0]) + 0.1 * rng.standard_normal(20)
    lls = np.log(1.3)
    model = models.regression_marginal_rbf(X, t, prior="evidence", length_scale_prior=(0.0, 2.0))
    la = rng.uniform(-2, 4, 21)
    got = _logp(model, {"log_alpha": la, "log_beta": 2.0, "log_length_scale": lls})
    d2 = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)
    Phi = np.column_stack([np.ones(20), np.exp(-d2 / (2 * 1.3**2))])
    np.testing.assert_allclose(models.rbf_design(X, X, lls), Phi, rtol=1e-12)
    want = log_marginal_likelihood(Phi, t, np.exp(la), np.exp(2.0)) + norm.logpdf(lls, 0.0, 2.0)
    assert got == pytest.approx(want, rel=1e-8)
    assert models.model_spec(model).rbf_width


def test_classification_logps_match_numpy():
    rng = np.random.default_rng(5)
    n, m, k = 30, 5, 3
    Phi = np.column_stack([np.ones(n), rng.standard_normal((n, m - 1))])
    la = rng.uniform(-1, 3, m)
    prior = resolve_prior({"a": 2.0, "b": 0.5})
    hyper = np.sum(prior.a * la - prior.b * np.exp(la)) + m * (
        prior.a * np.log(prior.b) - gammaln(prior.a)
    )
    y = (rng.random(n) < 0.4).astype(int)
    w = rng.standard_normal(m)
    f = Phi @ w
    want = (
        np.sum(np.where(y == 1, log_expit(f), log_expit(-f)))
        + np.sum(norm.logpdf(w, 0, np.exp(-0.5 * la)))
        + hyper
    )
    got = _logp(models.classification_binary(Phi, y, prior=prior), {"log_alpha": la, "w": w})
    assert got == pytest.approx(want, rel=1e-10)

    yk = rng.integers(0, k, n)
    W = rng.standard_normal((m, k))
    lp = log_softmax(Phi @ W, axis=1)[np.arange(n), yk]
    want = lp.sum() + np.sum(norm.logpdf(W, 0, np.exp(-0.5 * la)[:, None])) + hyper
    model = models.classification_softmax(Phi, yk, prior=prior, class_names=["a", "b", "c"])
    assert _logp(model, {"log_alpha": la, "W": W}) == pytest.approx(want, rel=1e-10)
    assert list(model.coords["class"]) == ["a", "b", "c"]
    assert models.model_spec(model).n_classes == 3


def test_builders_put_data_in_containers_and_coords():
    Phi, t, _, _ = _problem(6, 10, 3)
    model = models.regression_joint(Phi, t, basis_names=["bias", "x0", "x1"])
    assert set(model.coords) >= {"basis", "obs"}
    assert list(model.coords["basis"]) == ["bias", "x0", "x1"]
    np.testing.assert_array_equal(model["Phi"].get_value(), Phi)
    assert model.named_vars_to_dims["w"] == ("basis",)
    assert model.named_vars_to_dims["t_obs"] == ("obs",)
    spec = models.model_spec(model)
    assert (spec.kind, spec.parametrization) == ("regression_joint", "centred")
    assert spec.prior == resolve_prior("weakly_informative")


def test_model_string_names_the_priors_and_likelihoods():
    """print(model) / str(model) show LogGamma / Flat priors: not the object's address
    (PyMC 6's Model has no __str__) and not CustomDist_<name>."""
    rng = np.random.default_rng(0)
    Phi = rng.standard_normal((12, 3))
    t = rng.standard_normal(12)
    built = {
        "marginal": models.regression_marginal(Phi, t),
        "binary": models.classification_binary(Phi, np.arange(12) % 2, prior="evidence"),
        "softmax": models.classification_softmax(Phi, np.arange(12) % 3),
        "joint": models.regression_joint(Phi, t, parametrization="non_centred"),
        "rbf": models.regression_marginal_rbf(Phi[:, :1], t),
    }
    texts = {k: str(m) for k, m in built.items()}
    for k, text in texts.items():
        assert isinstance(built[k], pm.Model)
        assert text == built[k].str_repr()
        assert "CustomDist" not in text and "object at" not in text
        assert "log_alpha ~ " in text
    assert "log_alpha ~ LogGamma(1, 0.01)" in texts["marginal"]
    assert "log_beta ~ LogGamma(1, 0.01)" in texts["marginal"]
    assert "t_obs ~ MarginalNormal(" in texts["marginal"]
    assert "log_alpha ~ Flat(0, 0)" in texts["binary"]
    assert "y_obs ~ BernoulliLogit(" in texts["binary"]
    assert "y_obs ~ CategoricalLogit(" in texts["softmax"]
    assert "w_raw ~ Normal(0, 1)" in texts["joint"]
    assert "log_beta ~ LogGamma(1, 0.01)" in texts["joint"]


def test_prior_predictive_of_marginal_model():
    Phi, t, _, _ = _problem(7, 15, 4)
    model = models.regression_marginal(Phi, t, prior={"a": 2.0, "b": 2.0, "c": 2.0, "d": 2.0})
    with model:
        prior = pm.sample_prior_predictive(draws=400, random_seed=1, compile_kwargs={"mode": FAST})
    la = prior["prior"]["log_alpha"].values
    # log of a Gamma(2, 2) draw has mean digamma(2) - log(2)
    assert la.mean() == pytest.approx(0.42278 - np.log(2.0), abs=0.05)
    assert prior["prior_predictive"]["t_obs"].shape == (1, 400, 15)


def test_prior_predictive_of_the_width_model():
    """The marginal model of a design of free variables (no Gram parameter) draws ``t`` with
    the spread of its prior: ``var t_n = 1/beta + sum_m Phi_nm^2 / alpha_m`` at each draw."""
    rng = np.random.default_rng(5)
    X = rng.uniform(-2.0, 2.0, (12, 1))
    hp = {"a": 6.0, "b": 6.0, "c": 6.0, "d": 6.0}
    model = models.regression_marginal_rbf(X, np.sin(X[:, 0]), prior=hp)
    with model:
        prior = pm.sample_prior_predictive(4000, random_seed=2, compile_kwargs={"mode": FAST})
    draws = prior["prior"]
    t = prior["prior_predictive"]["t_obs"].values[0]
    assert t.shape == (4000, 12)
    D = (X - X.T) ** 2  # the kernel columns at each draw's width, the bias column first
    K = np.exp(-0.5 * D[None] * np.exp(-2.0 * draws["log_length_scale"].values[0])[:, None, None])
    inv_alpha = np.exp(-draws["log_alpha"].values[0])
    var = np.exp(-draws["log_beta"].values[0])[:, None] + inv_alpha[:, :1]
    var = var + np.einsum("snm,sm->sn", K**2, inv_alpha[:, 1:])
    z = t / np.sqrt(var)  # standard normal if t was drawn from the model at each draw
    assert abs(z.mean()) < 0.05 and abs(z.std() - 1.0) < 0.03


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"Phi": np.ones((5, 2)), "t": np.arange(4.0)}, "inconsistent"),
        ({"Phi": [[np.nan, 1.0], [1.0, 2.0]], "t": [1.0, 2.0]}, "Phi"),
        ({"Phi": np.ones((3, 2)), "t": np.arange(3.0), "parametrization": "centered"}, "param"),
        ({"Phi": np.ones((3, 2)), "t": np.arange(3.0), "basis_names": ["a"]}, "basis_names"),
        ({"Phi": np.c_[np.ones(3), np.zeros(3)], "t": np.arange(3.0)}, "all-zero"),
        ({"Phi": np.ones((3, 2)), "t": np.arange(3.0), "prior": "vague"}, "preset"),
    ],
)
def test_regression_builder_validation(kwargs, match):
    with pytest.raises(ValueError, match=match):
        models.regression_joint(**kwargs)


def test_classification_builder_validation():
    Phi = np.ones((4, 2))
    with pytest.raises(ValueError, match="class codes"):
        models.classification_binary(Phi, [0, 1, 2, 1])
    with pytest.raises(ValueError, match="integer"):
        models.classification_softmax(Phi, [0.5, 1, 0, 1])
    with pytest.raises(ValueError, match="class_names"):
        models.classification_softmax(Phi, [0, 1, 2, 1], class_names=["a"])
    with pytest.raises(ValueError, match="length_scale_prior"):
        models.regression_marginal_rbf(np.arange(4.0), np.arange(4.0), length_scale_prior=(0, -1))


def test_model_spec_rejects_foreign_models():
    with pm.Model() as foreign:
        pm.Normal("x")
    with pytest.raises(ValueError, match="not built by rvm_pymc"):
        models.model_spec(foreign)


def _exact_marginal_logp(Phi, t, alpha, beta):
    """``log N(t | 0, C)`` with ``t^T C^-1 t`` and ``|C|`` in exact rational arithmetic."""
    import math
    from fractions import Fraction

    n, m = Phi.shape
    P = [[Fraction(float(v)) for v in row] for row in Phi]
    ainv = [1 / Fraction(float(a)) for a in alpha]
    C = [
        [
            sum(P[i][k] * ainv[k] * P[j][k] for k in range(m)) + (i == j) / Fraction(float(beta))
            for j in range(n)
        ]
        for i in range(n)
    ]
    A = [C[i] + [Fraction(float(t[i]))] for i in range(n)]
    det = Fraction(1)
    for k in range(n):  # Gaussian elimination, exact (C is positive definite: no pivoting)
        det *= A[k][k]
        for i in range(k + 1, n):
            f = A[i][k] / A[k][k]
            A[i] = [a - f * b for a, b in zip(A[i], A[k], strict=True)]
    x = [Fraction(0)] * n
    for i in reversed(range(n)):
        x[i] = (A[i][n] - sum(A[i][j] * x[j] for j in range(i + 1, n))) / A[i][i]
    quad = sum(Fraction(float(t[i])) * x[i] for i in range(n))
    logdet = math.log(det.numerator) - math.log(det.denominator)
    return -0.5 * (n * np.log(2 * np.pi) + logdet + float(quad))


@pytest.mark.parametrize("offset", [0.0, 1e5, 1e7])
def test_marginal_logp_exact_at_large_target_offsets(offset):
    """Residual form: no difference of two large quadratic forms (was 162 nats off at 1e7)."""
    rng = np.random.default_rng(5)
    n = 10
    Phi = np.column_stack([np.ones(n), rng.standard_normal((n, 2))])
    t = offset + Phi[:, 1] + 0.1 * rng.standard_normal(n)
    la = np.array([np.log(1.0 / (offset**2 + 1.0)), 0.0, 2.0])  # the bias can carry the offset
    lb = np.log(100.0)
    want = _exact_marginal_logp(Phi, t, np.exp(la), np.exp(lb))
    point = {"log_alpha": la, "log_beta": lb}
    got = _logp(models.regression_marginal(Phi, t, prior="evidence"), point)
    assert got == pytest.approx(want, abs=1e-7 * (1 + abs(want)))
    assert log_marginal_likelihood(Phi, t, np.exp(la), np.exp(lb)) == pytest.approx(
        want, abs=1e-7 * (1 + abs(want))
    )


def test_the_prior_travels_with_the_model_as_named_data():
    """The Gamma parameters are data of the model (kept by model.copy()), read, not solved for."""
    Phi, t, _, _ = _problem(8, 12, 3)
    prior = resolve_prior({"a": 2.0, "b": 0.5, "c": 3.0, "d": 0.25})
    model = models.regression_marginal(Phi, t, prior=prior)
    values = {n: float(model[n].get_value()) for n in models.spec.PRIOR_DATA["log_alpha"]}
    values |= {n: float(model[n].get_value()) for n in models.spec.PRIOR_DATA["log_beta"]}
    assert values == {"alpha_shape": 2.0, "alpha_rate": 0.5, "beta_shape": 3.0, "beta_rate": 0.25}
    assert models.model_spec(model.copy()).prior == prior
    binary = models.classification_binary(Phi, np.arange(12) % 2, prior="evidence")
    assert models.model_spec(binary).prior == resolve_prior("evidence")
    # the log density is that of the log of a Gamma(2, 0.5) draw, normaliser included
    from scipy import stats

    y = np.array([-1.0, 0.3, 2.0])
    fn = pm.compile(
        [model.rvs_to_values[model["log_alpha"]]],
        pm.logp(model["log_alpha"], model.rvs_to_values[model["log_alpha"]]),
    )
    want = stats.gamma(a=2.0, scale=2.0).logpdf(np.exp(y)) + y
    np.testing.assert_allclose(fn(y), want, rtol=1e-10)


def test_a_prior_of_ones_own_is_not_guessed():
    """A log precision whose prior is not Gamma (nor Flat) gives spec.prior None."""
    Phi, t, _, _ = _problem(9, 10, 3)
    with pm.Model(coords={"basis": range(3), "obs": range(10)}) as user:
        pm.Data("Phi", Phi, dims=("obs", "basis"))
        pm.Data("t", t, dims="obs")
        pm.Data("PhiTPhi", Phi.T @ Phi)
        pm.Normal("log_alpha", 0.0, 3.0, dims="basis")
        pm.Normal("log_beta", 0.0, 3.0)
        pm.Normal("t_obs", 0.0, 1.0, observed=t, dims="obs")
    assert models.model_spec(user).prior is None
