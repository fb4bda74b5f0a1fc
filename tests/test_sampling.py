"""NUTS on the joint models and the collapsed sampler, against an exact quadrature.

Default tests compile with ``mode="FAST_COMPILE"`` (no C or Numba compilation)
on problems small enough for PyMC's NUTS to run in seconds.  The slow tests
(``-m slow``) compare the collapsed and joint posteriors of a kernel problem
and exercise nutpie / numpyro when installed.
"""

import importlib.util
import time
import warnings

import numpy as np
import pymc as pm
import pytest

from rvm_pymc import inference, models
from rvm_pymc.exceptions import PriorWarning, SamplingWarning
from rvm_pymc.priors import resolve_prior

pytestmark = pytest.mark.pymc
FAST = {"mode": "FAST_COMPILE"}
RUN = {"compile_kwargs": FAST, "nuts_sampler": "pymc", "cores": 1}


def _line_problem():
    rng = np.random.default_rng(11)
    x = np.linspace(-1.0, 1.0, 20)
    Phi = np.column_stack([np.ones(20), x])
    t = 1.0 + 0.8 * x + 0.3 * rng.standard_normal(20)
    return Phi, t


def _quadrature(Phi, t, prior):
    """Posterior expectations for M = 2 by brute force on a (log a0, log a1, log b) grid."""
    la = np.linspace(-8.0, 10.0, 181)
    lb = np.linspace(-1.0, 6.0, 141)
    A0, A1, B = np.meshgrid(la, la, lb, indexing="ij")
    a0, a1, b = np.exp(A0), np.exp(A1), np.exp(B)
    PtP, Ptt, tt, n = Phi.T @ Phi, Phi.T @ t, t @ t, len(t)
    h00, h01, h11 = b * PtP[0, 0] + a0, b * PtP[0, 1], b * PtP[1, 1] + a1
    det = h00 * h11 - h01**2
    mu0 = b * (h11 * Ptt[0] - h01 * Ptt[1]) / det
    mu1 = b * (h00 * Ptt[1] - h01 * Ptt[0]) / det
    quad = b * tt - b * (mu0 * Ptt[0] + mu1 * Ptt[1])
    logml = -0.5 * (n * np.log(2 * np.pi) + np.log(det) - A0 - A1 - n * B + quad)
    J = logml + prior.a * (A0 + A1) - prior.b * (a0 + a1) + prior.c * B - prior.d * b
    p = np.exp(J - J.max())
    p /= p.sum()
    # the grid must hold the posterior: negligible mass on its faces
    edge = max(p[[0, -1]].sum(), p[:, [0, -1]].sum(), p[:, :, [0, -1]].sum())
    assert edge < 1e-6
    return {
        "w": np.array([np.sum(p * mu0), np.sum(p * mu1)]),
        "log_alpha": np.array([np.sum(p * A0), np.sum(p * A1)]),
        "log_beta": np.sum(p * B),
    }


def _assert_matches(idata, truth, k=4.0):
    from arviz_stats import mcse

    post = idata["posterior"]
    se = mcse(post.to_dataset()[list(truth)], method="mean")
    for name, want in truth.items():
        got = post[name].mean(("chain", "draw")).values
        assert np.all(np.abs(got - want) <= k * se[name].values), (name, got, want)


@pytest.fixture(scope="module")
def line():
    Phi, t = _line_problem()
    prior = resolve_prior("weakly_informative")
    return Phi, t, prior, _quadrature(Phi, t, prior)


@pytest.mark.parametrize("rbf_width, gram", [(False, True), (True, True), (True, False)])
def test_marginal_logp_fast_gradient_equals_autodiff(rbf_width, gram):
    """The written-out gradient of the marginal model equals autodiff of marginal_logp, with
    ``Phi^T Phi`` given and (a design of free variables) formed by the Op."""
    import pytensor
    import pytensor.tensor as pt

    rng = np.random.default_rng(31)
    X = np.sort(rng.uniform(-3, 3, 25))[:, None]
    t = np.sin(X[:, 0]) + 0.1 * rng.standard_normal(25)
    C = np.linspace(-3, 3, 7)[:, None]
    la, lb, lls = pt.dvector("la"), pt.dscalar("lb"), pt.dscalar("lls")
    if rbf_width:
        Phi = models.rbf_design(pt.constant(X), pt.constant(C), lls)
        PtP, wrt = (Phi.T @ Phi if gram else None), [la, lb, lls]
    else:
        Phi_np = models.rbf_design(X, C, 0.3)
        Phi, PtP, wrt = pt.constant(Phi_np), pt.constant(Phi_np.T @ Phi_np), [la, lb]
    fns = []
    for logp in (models.marginal_logp, models.marginal_logp_fast):
        lp = logp(pt.constant(t), la, lb, Phi, PtP)
        if logp is models.marginal_logp_fast:  # the Op of a given or of a formed Gram
            assert lp.owner.op.name == "rvm_marginal_logp" + ("" if gram else "_design")
        fns.append(
            pytensor.function(
                [la, lb, lls],
                [lp, *pytensor.grad(lp, wrt)],
                on_unused_input="ignore",
                **FAST,
            )
        )
    for scale in (1.0, 4.0):  # log alpha spread over up to e^{+-12}
        x, y, z = scale * rng.standard_normal(8), rng.uniform(-1.0, 5.0), rng.uniform(-1.0, 1.0)
        want, got = fns[0](x, y, z), fns[1](x, y, z)
        for w, g in zip(want, got, strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-7, atol=1e-9 * (1 + np.max(np.abs(w))))


@pytest.mark.parametrize("sampler", ["collapsed", "joint"])
def test_nuts_posterior_matches_quadrature(line, sampler):
    Phi, t, prior, truth = line
    if sampler == "collapsed":
        model = models.regression_marginal(Phi, t, prior=prior)
        fit = inference.sample_collapsed
    else:
        model = models.regression_joint(Phi, t, prior=prior)
        fit = inference.sample_nuts
    draws = 600 if sampler == "collapsed" else 1000  # R-hat of the joint model needs more
    with warnings.catch_warnings():
        warnings.simplefilter("error", SamplingWarning)
        started = time.perf_counter()
        idata = fit(model, draws=draws, tune=600, chains=2, random_seed=3, **RUN)
        wall = time.perf_counter() - started
    assert idata.attrs["n_divergent"] == 0
    assert idata.attrs["max_rhat"] <= 1.01
    # the sampler's own clock, kept from pm.sample's tree: inside the call's wall time
    assert 0.0 < idata.attrs["sampling_time"] < wall
    _assert_matches(idata, truth)
    ll = idata["log_likelihood"]["t_obs"]
    assert ll.dims == ("chain", "draw", "obs") and ll.shape == (2, draws, 20)
    w = idata["posterior"]["w"].values[1, 5]
    beta = float(np.exp(idata["posterior"]["log_beta"].values[1, 5]))
    want = 0.5 * np.log(beta / (2 * np.pi)) - 0.5 * beta * (t - Phi @ w) ** 2
    np.testing.assert_allclose(ll.values[1, 5], want, rtol=1e-10)
    assert {"posterior", "sample_stats", "log_likelihood", "observed_data"} <= set(idata.children)


# five draws under a (nearly) improper prior: the sampler's own warnings are certain and
# beside the point (the test is about the PriorWarning)
@pytest.mark.filterwarnings("ignore::rvm_pymc.exceptions.SamplingWarning")
@pytest.mark.parametrize(
    ("preset", "joint", "says"),
    [
        ("near_improper", False, "collapsed sampler can explore it"),
        ("evidence", False, "collapsed sampler will not converge"),
        ("near_improper", True, "NUTS over the weights will not converge"),
    ],
)
def test_nuts_with_near_improper_prior_warns(preset, joint, says):
    """The warning says what happens to the sampler in use: the collapsed sampler has no
    funnel (a proper plateau in log alpha under b = 1e-6; unbounded only at b = 0)."""
    Phi, t = _line_problem()
    build = models.regression_joint if joint else models.regression_marginal
    sample = inference.sample_nuts if joint else inference.sample_collapsed
    with pytest.warns(PriorWarning, match="improper") as seen:
        sample(build(Phi, t, prior=preset), draws=5, tune=5, chains=2, random_seed=0, **RUN)
    texts = [str(w.message) for w in seen if issubclass(w.category, PriorWarning)]
    assert len(texts) == 1 and says in texts[0]


class _Stop(Exception):
    pass


@pytest.mark.filterwarnings("ignore:with one chain R-hat:rvm_pymc.exceptions.SamplingWarning")
@pytest.mark.parametrize("given", [None, False])
def test_nuts_shows_progress_by_default_and_notes_the_compile(given, monkeypatch, caplog):
    """Progress bars on unless progressbar=False; an INFO note precedes the first compile
    of a process, and only the first (a cross-validation's refits do not repeat it)."""
    from rvm_pymc._core import progress

    monkeypatch.setattr(progress, "_NOTED", set())  # as in a fresh process
    seen = {}

    def fake_sample(**kwargs):
        seen.update(kwargs)
        raise _Stop

    monkeypatch.setattr(pm, "sample", fake_sample)
    Phi, t = _line_problem()
    model = models.regression_marginal(Phi, t, prior="weakly_informative")
    kw = {} if given is None else {"progressbar": given}
    with caplog.at_level("INFO", logger="rvm_pymc"), pytest.raises(_Stop):
        inference.sample_collapsed(model, draws=5, tune=5, chains=1, **RUN, **kw)
    assert seen["progressbar"] is (given is None)
    notes = [r.getMessage() for r in caplog.records if r.name == "rvm_pymc"]
    assert len(notes) == 1 and "Compiling" in notes[0] and "FAST_COMPILE" in notes[0]
    caplog.clear()
    with caplog.at_level("INFO", logger="rvm_pymc"), pytest.raises(_Stop):
        inference.sample_collapsed(model, draws=5, tune=5, chains=1, **RUN, **kw)
    assert not [r for r in caplog.records if r.name == "rvm_pymc"]


def test_one_chain_warns_that_r_hat_is_undefined_and_one_draw_is_refused(monkeypatch):
    def fake_sample(**kwargs):
        raise _Stop

    monkeypatch.setattr(pm, "sample", fake_sample)
    Phi, t = _line_problem()
    model = models.regression_marginal(Phi, t, prior="weakly_informative")
    with pytest.warns(SamplingWarning, match="one chain"), pytest.raises(_Stop):
        inference.sample_collapsed(model, draws=5, tune=5, chains=1, **RUN)
    with pytest.raises(ValueError, match="draws \\* chains"):
        inference.sample_collapsed(model, draws=1, tune=5, chains=1, **RUN)


def test_default_sampler_prefers_numpyro_then_nutpie(monkeypatch):
    from rvm_pymc.inference import _nuts as _sampling

    def installed(*names):
        monkeypatch.setattr(
            _sampling.importlib.util, "find_spec", lambda n: object() if n in names else None
        )

    installed("numpyro", "nutpie")
    assert _sampling._resolve_sampler(None, {}) == "numpyro"
    assert _sampling._resolve_sampler(None, FAST) == "pymc"  # compile options are PyMC's
    # a large collapsed model: nutpie first (JAX's gradient costs 4-7x Numba's)
    assert _sampling._resolve_sampler(None, {}, n_bases=301) == "nutpie"
    assert _sampling._resolve_sampler(None, {}, n_bases=101) == "numpyro"
    assert _sampling._resolve_sampler("numpyro", {}, n_bases=301) == "numpyro"
    installed("numpyro")
    assert _sampling._resolve_sampler(None, {}, n_bases=301) == "numpyro"
    installed("nutpie")
    assert _sampling._resolve_sampler(None, {}) == "nutpie"
    installed()
    assert _sampling._resolve_sampler(None, {}) == "pymc"


def test_weakly_informative_nuts_does_not_warn_about_the_prior():
    Phi, t = _line_problem()
    model = models.regression_marginal(Phi, t, prior="weakly_informative")
    with warnings.catch_warnings():
        warnings.simplefilter("error", PriorWarning)
        warnings.simplefilter("ignore", SamplingWarning)
        inference.sample_collapsed(model, draws=5, tune=5, chains=1, random_seed=0, **RUN)


def test_binary_nuts_log_likelihood_and_warnings():
    rng = np.random.default_rng(12)
    X = rng.standard_normal(30)
    Phi = np.column_stack([np.ones(30), X])
    y = (X + 0.5 * rng.standard_normal(30) > 0).astype(int)
    model = models.classification_binary(Phi, y, parametrization="non_centred")
    # 50 draws are too few to mix: R-hat, and with it the effective sample size, say so
    with pytest.warns(SamplingWarning, match="R-hat|effective sample size") as seen:
        idata = inference.sample_nuts(model, draws=50, tune=50, chains=2, random_seed=1, **RUN)
    assert any("R-hat" in str(w.message) for w in seen)
    w = idata["posterior"]["w"].values
    assert w.shape == (2, 50, 2)
    f = Phi @ w[0, 3]
    want = np.where(y == 1, -np.log1p(np.exp(-f)), -np.log1p(np.exp(f)))
    np.testing.assert_allclose(idata["log_likelihood"]["y_obs"].values[0, 3], want, rtol=1e-10)
    assert idata.attrs["rvm_inference"] == "nuts" and idata.attrs["sampler"] == "pymc"


def test_collapsed_sampler_with_rbf_width():
    rng = np.random.default_rng(13)
    X = np.sort(rng.uniform(-3, 3, 15))
    t = np.sin(X) + 0.1 * rng.standard_normal(15)
    model = models.regression_marginal_rbf(X, t, centres=np.linspace(-3, 3, 4))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SamplingWarning)
        idata = inference.sample_collapsed(
            model, draws=20, tune=20, chains=1, random_seed=2, **RUN
        )
    post = idata["posterior"]
    assert post["w"].shape == (1, 20, 5)
    assert post["log_length_scale"].shape == (1, 20)
    assert np.all(np.isfinite(idata["log_likelihood"]["t_obs"].values))


def test_sampler_argument_errors():
    Phi, t = _line_problem()
    marginal = models.regression_marginal(Phi, t)
    joint = models.regression_joint(Phi, t)
    with pytest.raises(ValueError, match="sample_collapsed"):
        inference.sample_nuts(marginal)
    with pytest.raises(ValueError, match="regression_marginal"):
        inference.sample_collapsed(joint)
    with pytest.raises(ValueError, match="nuts_sampler"):
        inference.sample_nuts(joint, nuts_sampler="stan")
    with pytest.raises(ValueError, match="draws"):
        inference.sample_nuts(joint, draws=0)
    with pytest.raises(ValueError, match="target_accept"):
        inference.sample_nuts(joint, target_accept=1.5)
    for name in ("nutpie", "numpyro"):
        if importlib.util.find_spec(name) is None:
            with pytest.raises(ImportError, match=name):
                inference.sample_nuts(joint, nuts_sampler=name)
        else:
            with pytest.raises(ValueError, match="compile_kwargs"):
                inference.sample_nuts(joint, nuts_sampler=name, compile_kwargs=FAST)


# -------------------------------------------------------------------- slow


def _sinc_kernel_problem():
    rng = np.random.default_rng(21)
    x = np.sort(rng.uniform(-5, 5, 30))
    t = np.sinc(x / np.pi) + 0.1 * rng.standard_normal(30)
    t = (t - t.mean()) / t.std()
    centres = np.linspace(-4.5, 4.5, 10)
    Phi = models.rbf_design(x[:, None], centres[:, None], np.log(1.5))
    return Phi / np.sqrt(np.mean(Phi**2, axis=0)), t


@pytest.mark.slow
def test_collapsed_and_joint_nuts_agree_on_a_kernel_problem():
    """The issue's check: w means within 4 MCSE, zero divergences, R-hat <= 1.01."""
    from arviz_stats import mcse

    Phi, t = _sinc_kernel_problem()
    # PyTensor's default (Numba) backend: a slow cold compile, then fast sampling
    kw = {"draws": 1000, "tune": 1000, "chains": 4, "random_seed": 5, "nuts_sampler": "pymc"}
    collapsed = inference.sample_collapsed(
        models.regression_marginal(Phi, t, prior="weakly_informative"), **kw
    )
    joint = inference.sample_nuts(
        models.regression_joint(Phi, t, prior="weakly_informative"), target_accept=0.95, **kw
    )
    for idata in (collapsed, joint):
        assert idata.attrs["n_divergent"] == 0
        assert idata.attrs["max_rhat"] <= 1.01
    m_c = collapsed["posterior"]["w"].mean(("chain", "draw")).values
    m_j = joint["posterior"]["w"].mean(("chain", "draw")).values
    se_c = mcse(collapsed["posterior"].to_dataset()[["w"]], method="mean")["w"].values
    se_j = mcse(joint["posterior"].to_dataset()[["w"]], method="mean")["w"].values
    assert np.all(np.abs(m_c - m_j) <= 4 * np.hypot(se_c, se_j))


@pytest.mark.slow
@pytest.mark.parametrize("sampler", ["nutpie", "numpyro"])
def test_external_samplers_match_quadrature(line, sampler):
    pytest.importorskip(sampler)
    Phi, t, prior, truth = line
    idata = inference.sample_nuts(
        models.regression_joint(Phi, t, prior=prior),
        draws=1000,
        tune=1000,
        chains=2,
        random_seed=3,
        nuts_sampler=sampler,
    )
    assert idata.attrs["sampler"] == sampler
    assert idata.attrs["n_divergent"] == 0
    _assert_matches(idata, truth)


def test_nuts_run_options_are_one_closed_set():
    """sample_nuts, sample_collapsed and nuts_posterior take NutsRun's keywords, and only those."""
    import inspect
    from dataclasses import fields

    from rvm_pymc.inference import check_sampler_kwargs
    from rvm_pymc.inference._options import NUTS_KEYS, NutsRun

    names = [f.name for f in fields(NutsRun)]
    for func in (inference.sample_nuts, inference.sample_collapsed, inference.nuts_posterior):
        params = inspect.signature(func).parameters
        assert list(params) == ["model", *names]
        assert params["draws"].default == 1000 and params["chains"].default == 4
    Phi, t = _line_problem()
    with pytest.raises(TypeError, match="target_acept"):
        inference.sample_collapsed(models.regression_marginal(Phi, t), target_acept=0.9)
    # the estimators' sampler_kwargs: every run option but those the estimator sets itself
    own = {"draws", "tune", "chains", "random_seed"}
    assert set(NUTS_KEYS) == (set(names) - own) | {"model", "parametrization"}
    check_sampler_kwargs("nuts", dict.fromkeys(set(names) - own - {"compile_kwargs"}))
