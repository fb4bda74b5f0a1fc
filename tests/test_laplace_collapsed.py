"""The Laplace-collapsed sampler of the classifiers (``inference.sample_laplace_collapsed``).

Checks the Op against the compiled Laplace functions and a finite difference,
the sampler's ``log alpha`` posterior against a quadrature of ``exp(J)`` on a
grid (two bases), and the weight draws against the Laplace Gaussian.
"""

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest

from rvm_pymc import inference, models
from rvm_pymc._core.gaussian import spd_inverse
from rvm_pymc.inference._laplace import compile_laplace, newton_mode
from rvm_pymc.inference._laplace_collapsed import (
    LaplaceEvidenceOp,
    laplace_weight_draws,
)
from rvm_pymc.inference._laplace_evidence import (
    BinaryEvidence,
    CompiledEvidence,
    LaplaceModeError,
    evidence_of,
)
from rvm_pymc.models.spec import model_spec

pytestmark = [
    pytest.mark.pymc,
    pytest.mark.filterwarnings("ignore:Numba will use object mode to run LaplaceEvidenceOp"),
]
MODE = "NUMBA"
# a proper prior narrow enough that a 2-D grid holds the posterior of log alpha
PRIOR = {"a": 2.0, "b": 0.5, "c": 1.0, "d": 1.0}


def _binary(n=40, seed=3):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n)
    y = (x + 0.8 * rng.normal(size=n) > 0.2).astype(int)
    Phi = np.column_stack([np.ones(n), x])
    return models.classification_binary(Phi, y, prior=PRIOR)


def _softmax(n=45, seed=4):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 2))
    y = np.argmax(x @ np.array([[1.0, -1.0, 0.0], [0.0, 1.0, -1.0]]) + rng.normal(size=(n, 3)), 1)
    Phi = np.column_stack([np.ones(n), x])
    return models.classification_softmax(Phi, y, prior=PRIOR)


@pytest.fixture(scope="module")
def binary():
    model = _binary()
    return model, compile_laplace(model, "w", MODE)


@pytest.fixture(scope="module")
def softmax():
    model = _softmax()
    return model, compile_laplace(model, "W", MODE)


def _evaluators(which, model, fns):
    if which == "binary_closed_form":
        ev = evidence_of(model, model_spec(model), fns, MODE)
        assert isinstance(ev, BinaryEvidence)
        return ev
    return CompiledEvidence(fns)


@pytest.mark.parametrize(
    "which, problem",
    [("compiled", "binary"), ("binary_closed_form", "binary"), ("compiled", "softmax")],
)
def test_op_value_and_gradient_equal_the_laplace_functions_and_a_finite_difference(
    which, problem, request
):
    model, fns = request.getfixturevalue(problem)
    m = fns.shape[0]
    la = pt.dvector("la")
    ev = _evaluators(which, model, fns)
    J = LaplaceEvidenceOp(ev)(la)[0]
    f = pytensor.function([la], [J, pytensor.grad(J, la)], mode=MODE)
    x = np.linspace(-0.5, 1.0, m)
    J_op, g_op = f(x)
    w, _, ok = newton_mode(fns, np.zeros(int(np.prod(fns.shape))), x)
    assert ok
    J_ref, g_ref = fns.outer(w, x)
    np.testing.assert_allclose(J_op, J_ref, rtol=1e-12, atol=1e-10)
    np.testing.assert_allclose(g_op, g_ref, rtol=1e-10, atol=1e-10)
    h = 1e-5
    fd = np.array([(f(x + h * e)[0] - f(x - h * e)[0]) / (2 * h) for e in np.eye(m)])
    np.testing.assert_allclose(g_op, fd, rtol=1e-6, atol=1e-7)
    # warm-started from a far mode, the same values (the solve is to 1e-11)
    ev(x + 3.0)
    J2, g2, ok2 = ev(x)
    assert ok2
    np.testing.assert_allclose([J2, *g2], [J_op, *g_op], rtol=1e-9, atol=1e-10)


def test_closed_form_is_refused_for_another_likelihood():
    """A model with the package's names but a probit likelihood gets the compiled evaluator."""
    rng = np.random.default_rng(0)
    Phi = np.column_stack([np.ones(30), rng.normal(size=30)])
    y = (Phi[:, 1] + rng.normal(size=30) > 0).astype(int)
    base = _binary()
    with pm.Model(coords={"basis": [0, 1], "obs": np.arange(30)}) as probit:
        pm.Data("Phi", Phi, dims=("obs", "basis"))
        pm.Data("y", y, dims="obs")
        la = pm.Normal("log_alpha", 0.0, 2.0, dims="basis")
        w = pm.Normal("w", 0.0, pt.exp(-0.5 * la), dims="basis")
        p = 0.5 * (1 + pt.erf((probit["Phi"] @ w) / np.sqrt(2.0)))
        pm.Bernoulli("y_obs", p=p, observed=probit["y"], dims="obs")
    assert model_spec(probit).kind == model_spec(base).kind == "binary"
    fns = compile_laplace(probit, "w", MODE)
    assert isinstance(evidence_of(probit, model_spec(probit), fns, MODE), CompiledEvidence)


def test_op_reports_a_failed_solve_as_minus_infinity(binary):
    _, fns = binary
    J, g, ok = CompiledEvidence(fns)(np.array([np.nan, 0.0]))
    assert not ok and J == -np.inf and np.all(g == 0)
    with pytest.raises(LaplaceModeError, match="posterior draw 0"):
        laplace_weight_draws(fns, np.full((1, 1, 2), np.nan), np.random.default_rng(0))


@pytest.mark.parametrize("which", ["binary", "softmax"])
def test_weight_draws_at_fixed_log_alpha_have_the_laplace_mean_and_covariance(which, request):
    _, fns = request.getfixturevalue(which)
    m, d, s = fns.shape[0], int(np.prod(fns.shape)), 20000
    la = np.linspace(0.2, 1.5, m)
    w_star, H, ok = newton_mode(fns, np.zeros(d), la)
    assert ok
    cov = spd_inverse(H, "H")[0]
    draws = laplace_weight_draws(fns, np.tile(la, (2, s // 2, 1)), np.random.default_rng(5))
    assert draws.shape == (2, s // 2, *fns.shape)
    flat = draws.reshape(s, d)
    sd = np.sqrt(np.diag(cov))
    assert np.all(np.abs(flat.mean(0) - w_star) < 4.5 * sd / np.sqrt(s))
    # each covariance entry within 4.5 of its Monte Carlo standard errors
    se = np.sqrt((np.outer(np.diag(cov), np.diag(cov)) + cov**2) / s)
    assert np.all(np.abs(np.cov(flat, rowvar=False) - cov) < 4.5 * se)


def _quadrature(ev, lo=-6.0, hi=8.0, n=61):
    """Mean and sd of ``log alpha`` under ``exp(J)`` on an ``n x n`` grid (two bases).

    ``ev`` is the closed-form evaluator, equal to the compiled Laplace
    functions to 1e-10 (tested above) and a hundred times cheaper here.  The
    61-point grid (spacing 0.23, a quarter of the smaller sd) gives the means
    and sds of the 121-point one to 3e-6, the test's tolerance being 0.1 sd;
    it costs a quarter as much.
    """
    g = np.linspace(lo, hi, n)
    J = np.empty((n, n))
    for i, a in enumerate(g):
        for j, b in enumerate(g if i % 2 == 0 else g[::-1]):  # snake: warm starts stay close
            J[i, j if i % 2 == 0 else n - 1 - j] = ev(np.array([a, b]))[0]
    p = np.exp(J - J.max())
    p /= p.sum()
    assert max(p[[0, -1]].sum(), p[:, [0, -1]].sum()) < 1e-6  # the grid holds it
    A, B = np.meshgrid(g, g, indexing="ij")
    mean = np.array([np.sum(p * A), np.sum(p * B)])
    sd = np.sqrt([np.sum(p * (A - mean[0]) ** 2), np.sum(p * (B - mean[1]) ** 2)])
    return mean, sd


# 15 s on an idle machine, about a minute at load 6 (3000 NUTS iterations, Python Op)
def test_sampler_matches_a_quadrature_of_the_laplace_evidence(binary):
    model, fns = binary
    mean_q, sd_q = _quadrature(evidence_of(model, model_spec(model), fns, MODE))
    tree = inference.sample_laplace_collapsed(
        model, draws=1000, tune=500, chains=2, random_seed=2, progressbar=False
    )
    assert tree.attrs["rvm_inference"] == "laplace_collapsed_nuts"
    assert tree.attrs["sampler"] == "pymc"
    assert tree.attrs["laplace_evaluator"] == "binary_closed_form"
    assert tree.attrs["n_divergent"] == 0
    assert tree.attrs["max_rhat"] <= 1.01
    la = tree["posterior"]["log_alpha"].values.reshape(-1, 2)
    ess = tree.attrs["min_ess_bulk"]
    assert ess > 300
    # mean within 4 Monte Carlo standard errors, sd within 4 of its standard error
    assert np.all(np.abs(la.mean(0) - mean_q) < 4 * sd_q / np.sqrt(ess))
    assert np.all(np.abs(la.std(0) / sd_q - 1) < 4 / np.sqrt(2 * ess))
    # the one result schema, as sample_nuts
    for group in ("posterior", "log_likelihood", "posterior_predictive", "sample_stats"):
        assert group in tree.children
    assert tree["posterior"]["w"].dims == ("chain", "draw", "basis")
    assert tree["log_likelihood"]["y_obs"].shape == (2, 1000, 40)


@pytest.mark.filterwarnings("ignore::rvm_pymc.exceptions.SamplingWarning")  # 60 draws
def test_softmax_sampler_returns_the_result_schema(softmax):
    model, _ = softmax
    tree = inference.sample_laplace_collapsed(
        model, draws=60, tune=60, chains=2, random_seed=1, progressbar=False, cores=1
    )
    assert tree["posterior"]["W"].dims == ("chain", "draw", "basis", "class")
    assert tree["posterior"]["log_alpha"].shape == (2, 60, 3)
    assert tree["posterior_predictive"]["y_obs"].shape == (2, 60, 45)
    assert np.all(np.isfinite(tree["log_likelihood"]["y_obs"].values))


def test_sampler_refuses_what_it_cannot_sample():
    Phi = np.column_stack([np.ones(10), np.arange(10.0)])
    y = np.arange(10) % 2
    with pytest.raises(ValueError, match="needs a classifier"):
        inference.sample_laplace_collapsed(models.regression_marginal(Phi, np.arange(10.0)))
    nc = models.classification_binary(Phi, y, parametrization="non_centred")
    with pytest.raises(ValueError, match="centred"):
        inference.sample_laplace_collapsed(nc)
    with pytest.raises(ValueError, match="only PyMC's own"):
        inference.sample_laplace_collapsed(
            models.classification_binary(Phi, y), nuts_sampler="numpyro"
        )
    with pytest.raises(TypeError):
        inference.sample_laplace_collapsed(models.classification_binary(Phi, y), steps=3)
