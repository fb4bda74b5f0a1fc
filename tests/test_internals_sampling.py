"""Internal mechanisms of the PyMC fits with no public face of their own.

With ``test_internals_numerics.py`` and ``test_internals_cli.py`` the only test files
that import private modules.  Sections, each headed by the file it came from:

- ``test_diagnostics.py``: the vectorised R-hat and ESS of
  :mod:`rvm_pymc._core.convergence` against ArviZ's (one variable at a time): chains that
  mix and that do not, heavy tails, ties, constants, odd and even draw counts, one to
  four chains, too few draws (NaN);
- ``test_until_converged.py``: the stopping rule of ``until_converged``
  (:mod:`rvm_pymc.inference._stop`) on stand-in traces, and end to end;
- ``test_nuts_width_prior.py``: the width, prior and start the estimators hand to the
  NUTS backend (recorded by replacing the width selection and the backend);
- ``test_basis_swap.py``: the Metropolis basis-swap move beside NUTS;
- tests of ``test_progress.py``, ``test_inference.py``, ``test_one_result.py``,
  ``test_interrupt.py`` and ``test_slab.py`` that call or replace a private function
  (plain progress lines, the Laplace functions, L-BFGS-B's stall rule, the fast solver's
  state, the sampled model a backend receives).
"""

from __future__ import annotations

import itertools
import json
import logging
import sys
import warnings
from collections import namedtuple
from types import SimpleNamespace

import numpy as np
import pymc as pm
import pytest
import scipy.optimize
import xarray as xr
from arviz_stats import ess, rhat
from shared_helpers import (
    assert_unchanged,
    interrupt_after,
    numpy_laplace_evidence,
    two_moons,
    type_ii_value,
)
from sklearn.exceptions import NotFittedError

import rvm_pymc.estimators._base as base
import rvm_pymc.inference
from rvm_pymc import inference, models
from rvm_pymc._core.convergence import (
    check_sampling,
    ess_bulk,
    ess_tail,
    passes_checks,
    rank_rhat,
    sampling_diagnostics,
    separated_chains,
)
from rvm_pymc._core.progress import DrawLines
from rvm_pymc.datasets import make_ripley, make_sinc
from rvm_pymc.estimators import RVC, RVR
from rvm_pymc.exceptions import ConvergenceWarning, SamplingWarning
from rvm_pymc.inference import _map, _swap, defaults
from rvm_pymc.inference._backend import _start
from rvm_pymc.inference._laplace import compile_laplace, newton_mode
from rvm_pymc.inference._nuts import _resolve_sampler
from rvm_pymc.inference._options import NutsRun
from rvm_pymc.inference._stop import (
    CHECK_EVERY,
    FIRST_CHECK,
    Converged,
    StopWhenConverged,
    stop_rule,
)
from rvm_pymc.inference._weights import (
    ChainDraws,
    chain_seeds,
    exact_weight_rows,
    reported_draws,
)
from rvm_pymc.models.spec import model_spec
from rvm_pymc.priors import PRESETS, HyperPrior, resolve_prior
from rvm_pymc.reference import (
    fit_classification,
    fit_regression,
)
from rvm_pymc.results import WeightPosterior

# ---- from tests/test_diagnostics.py


def _cases():
    rng = np.random.default_rng(0)
    out = {}
    for chains, draws in ((2, 500), (4, 301), (2, 1001), (1, 200), (3, 7)):
        x = rng.standard_normal((chains, draws, 6))
        for i in range(1, draws):  # AR(1), coefficients 0 .. 0.95
            x[:, i] = np.linspace(0, 0.95, 6) * x[:, i - 1] + x[:, i]
        out[f"ar-{chains}x{draws}"] = x
    y = rng.standard_t(1.5, size=(2, 400, 4))  # heavy tails
    y[1] += np.array([0.0, 0.3, 3.0, 10.0])  # the second chain shifted: not mixed
    out["shifted"] = y
    z = rng.integers(0, 3, size=(2, 300, 3)).astype(float)  # ties
    z[..., 2] = 1.5  # a constant
    out["ties"] = z
    out["short"] = rng.standard_normal((2, 3, 2))  # under ArviZ's 4 draws: NaN
    return out


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")  # a constant
@pytest.mark.parametrize(("name", "x"), list(_cases().items()))
def test_rhat_and_ess_are_arviz_s(name, x):
    ds = xr.Dataset({"v": (("chain", "draw", "v_dim"), x)})
    want = {
        "rhat": rhat(ds)["v"].values,
        "bulk": ess(ds, method="bulk")["v"].values,
        "tail": ess(ds, method="tail")["v"].values,
    }
    got = {"rhat": rank_rhat(x), "bulk": ess_bulk(x), "tail": ess_tail(x)}
    for key in want:
        np.testing.assert_allclose(got[key], want[key], rtol=1e-9, atol=0, equal_nan=True)
        assert got[key].shape == x.shape[2:]


def test_extra_axes_keep_their_shape_and_a_nan_draw_gives_nan():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 100, 3, 2))
    x[0, 5, 1, 0] = np.nan
    for f in (rank_rhat, ess_bulk, ess_tail):
        out = f(x)
        assert out.shape == (3, 2)
        assert np.isnan(out[1, 0]) and np.isfinite(np.delete(out.ravel(), 2)).all()


def test_the_tail_follows_the_probability_given():
    x = np.random.default_rng(2).standard_normal((2, 400, 2))
    ds = xr.Dataset({"v": (("chain", "draw", "v_dim"), x)})
    want = ess(ds, method="tail", prob=0.95)["v"].values
    np.testing.assert_allclose(ess_tail(x, prob=0.95), want, rtol=1e-9)


# ---- from tests/test_until_converged.py

TUNE, DRAWS = 20, 2000


class _Chain:
    """A stand-in for PyMC's NDArray trace: preallocated arrays, ``draw_idx`` recorded
    (what lies past it is not a draw: NaN here, as garbage in PyMC's ``np.empty``)."""

    def __init__(self, values: np.ndarray, diverging: np.ndarray) -> None:
        self.samples = {"x": values}
        self.diverging = diverging
        self.draw_idx = 0
        self.stat_names = {"diverging", "tree_size"}

    def __len__(self) -> int:
        return self.draw_idx

    def get_values(self, name: str, burn: int = 0) -> np.ndarray:
        v = self.samples[name].copy()
        v[self.draw_idx :] = np.nan
        return v[burn:]

    def get_sampler_stats(self, name: str, burn: int = 0) -> np.ndarray:
        assert name == "diverging"
        return self.diverging[burn:]


def _chains(offset=0.0, rho=0.0, diverge_at: int | None = None, seed=0, n=2):
    """``n`` chains of AR(1) draws (coefficient ``rho``) of 3 variables; the second's
    mean shifted by ``offset``; in the second, a divergence at iteration
    ``TUNE + diverge_at`` (negative: during tuning)."""
    rng = np.random.default_rng(seed)
    out = []
    for c in range(n):
        z = rng.standard_normal((TUNE + DRAWS, 3))
        for i in range(1, z.shape[0]):
            z[i] = rho * z[i - 1] + np.sqrt(1 - rho**2) * z[i]
        div = np.zeros(TUNE + DRAWS, dtype=bool)
        if diverge_at is not None and c == 1:
            div[TUNE + diverge_at] = True
        out.append(_Chain(z + (c == 1) * offset, div))
    return out


def _record(chain, c: int, rule, tuning: bool) -> None:
    chain.draw_idx += 1
    rule(chain, SimpleNamespace(chain=c, tuning=tuning))


def _drive(chains, rule, schedule: str) -> None:
    """Record every iteration and call ``rule`` after each, as ``pm.sample`` does:
    the chains in turn (``"parallel"``), one after the other (``"sequential"``),
    or two at a time (``"batched"``: more chains than processes)."""
    total, n = TUNE + DRAWS, len(chains)
    if schedule == "parallel":
        order = [(c, i) for i in range(total) for c in range(n)]
    elif schedule == "sequential":
        order = [(c, i) for c in range(n) for i in range(total)]
    else:
        order = [(c, i) for b in range(0, n, 2) for i in range(total) for c in range(b, b + 2)]
    try:
        for c, i in order:
            _record(chains[c], c, rule, i < TUNE)
    except Converged:
        pass


def _rule(chains=2, draws=DRAWS, **kw) -> StopWhenConverged:
    return StopWhenConverged(
        ["x"], draws=draws, tune=TUNE, chains=chains, rhat_threshold=1.01, min_ess=400.0, **kw
    )


@pytest.mark.filterwarnings(  # PyMC forks a process per chain
    "ignore:This process .* is multi-threaded, use of fork:DeprecationWarning"
)
def test_independent_chains_stop_at_the_first_checkpoint_and_are_cut_there():
    chains, rule = _chains(), _rule()
    _drive(chains, rule, "parallel")
    assert rule.stopped_at == FIRST_CHECK
    assert [len(c) for c in chains] == [TUNE + FIRST_CHECK] * 2
    # the check is the package's, on exactly the draws kept
    kept = np.stack([c.samples["x"][TUNE : len(c)] for c in chains])
    direct = sampling_diagnostics(xr.Dataset({"x": (("chain", "draw", "x_dim0"), kept)}))
    assert rule.checks == [(FIRST_CHECK, direct)]
    assert passes_checks(direct, 1.01, 400.0)


@pytest.mark.filterwarnings(  # PyMC forks a process per chain
    "ignore:This process .* is multi-threaded, use of fork:DeprecationWarning"
)
@pytest.mark.parametrize("n", [2, 4])
def test_the_draws_kept_do_not_depend_on_how_the_chains_are_scheduled(n):
    stops = {}
    for schedule in ("parallel", "sequential", "batched"):
        chains, rule = _chains(rho=0.6, n=n), _rule(chains=n)  # ESS about 0.25 a draw
        _drive(chains, rule, schedule)
        assert rule.stopped_at is not None
        assert [len(c) for c in chains] == [TUNE + rule.stopped_at] * n
        stops[schedule] = rule.stopped_at, rule.checks
    k, checks = stops["parallel"]
    assert stops["sequential"] == stops["batched"] == (k, checks)
    if n == 2:
        assert k > FIRST_CHECK
    # every earlier checkpoint failed the check, on the draws of that checkpoint
    assert [c for c, _ in checks] == list(range(FIRST_CHECK, k + 1, CHECK_EVERY))
    assert not any(passes_checks(d, 1.01, 400.0) for _, d in checks[:-1])


@pytest.mark.filterwarnings(  # PyMC forks a process per chain
    "ignore:This process .* is multi-threaded, use of fork:DeprecationWarning"
)
@pytest.mark.parametrize(
    "chains",
    [_chains(offset=0.5), _chains(diverge_at=3)],
    ids=["chains-disagree", "a-divergence"],
)
def test_chains_that_never_pass_run_to_the_end(chains):
    rule = _rule()
    _drive(chains, rule, "parallel")
    assert rule.stopped_at is None
    assert [len(c) for c in chains] == [TUNE + DRAWS] * 2
    assert len(rule.checks) == (DRAWS - 1 - FIRST_CHECK) // CHECK_EVERY + 1  # none at the end


@pytest.mark.filterwarnings(  # PyMC forks a process per chain
    "ignore:This process .* is multi-threaded, use of fork:DeprecationWarning"
)
def test_divergences_count_after_tuning_and_up_to_the_checkpoint_only():
    rule = _rule()
    _drive(_chains(diverge_at=-3), rule, "parallel")  # during tuning
    assert rule.stopped_at == FIRST_CHECK
    rule = _rule()  # just after the checkpoint, the first chain run to its end before
    _drive(_chains(diverge_at=FIRST_CHECK + 1), rule, "sequential")
    assert rule.stopped_at == FIRST_CHECK
    chains, rule = _chains(diverge_at=FIRST_CHECK + 1), _rule()
    for i in range(TUNE + FIRST_CHECK + 50):  # the second chain far ahead of the first
        _record(chains[1], 1, rule, i < TUNE)
    with pytest.raises(Converged):
        for i in range(TUNE + FIRST_CHECK):
            _record(chains[0], 0, rule, i < TUNE)
    assert rule.stopped_at == FIRST_CHECK
    assert rule.checks[0][1]["n_divergent"] == 0
    assert [len(c) for c in chains] == [TUNE + FIRST_CHECK] * 2


@pytest.mark.filterwarnings(  # PyMC forks a process per chain
    "ignore:This process .* is multi-threaded, use of fork:DeprecationWarning"
)
def test_no_check_before_every_chain_has_finished_tuning():
    chains, rule = _chains(), _rule(first=1)
    for i in range(TUNE + 5):  # the first chain is past tuning
        _record(chains[0], 0, rule, i < TUNE)
    for _ in range(TUNE - 1):  # the second still tunes
        _record(chains[1], 1, rule, True)
    _record(chains[0], 0, rule, False)
    assert rule.checks == []
    _record(chains[1], 1, rule, True)  # its last tuning step, then its first draw
    _record(chains[1], 1, rule, False)
    assert [k for k, _ in rule.checks] == [1]


@pytest.mark.filterwarnings(  # PyMC forks a process per chain
    "ignore:This process .* is multi-threaded, use of fork:DeprecationWarning"
)
def test_a_run_no_longer_than_the_first_checkpoint_is_never_checked():
    chains, rule = _chains(), _rule(draws=FIRST_CHECK)
    _drive(chains, rule, "parallel")
    assert rule.checks == [] and rule.stopped_at is None


@pytest.mark.filterwarnings(  # PyMC forks a process per chain
    "ignore:This process .* is multi-threaded, use of fork:DeprecationWarning"
)
def test_derived_draws_are_checked_with_the_recorded_ones():
    """Chains that agree, whose derived draws (a collapsed sampler's weights) do not."""

    def rows(d, rng, chain, start):
        return d["x"] + 0.5 * chain + 0.1 * rng.standard_normal(d["x"].shape)

    derived = ChainDraws(rows, lambda c: np.random.default_rng([3, c]))
    chains, rule = _chains(), _rule(report=lambda d: {**d, "w": derived.upto(d)})
    _drive(chains, rule, "parallel")
    assert rule.stopped_at is None
    assert all(d["max_rhat"] > 1.01 for _, d in rule.checks)


@pytest.mark.parametrize("which", ["binary", "softmax", "softmax_no_bias", "collapsed"])
def test_reported_draws_are_those_of_the_unscaled_columns(which):
    """The estimators' width model scales its kernel columns to RMS 1 at every width;
    ``unscaled`` reports the weights of the unscaled columns, with the same latent mean
    at every draw and the weight prior's precision of those columns; without it (the
    public samplers' trees) the model's own draws are kept."""
    from rvm_pymc._core.rbf_width import rbf_columns, sq_distances

    rng = np.random.default_rng(0)
    X = rng.normal(size=(15, 2))
    bias = which != "softmax_no_bias"
    if which == "collapsed":
        t = X[:, 0] + 0.1 * rng.normal(size=15)
        model = models.regression_marginal_rbf(X, t, unit_rms=True)
    else:
        y = (X[:, 0] > 0).astype(int) if which == "binary" else np.arange(15) % 3
        model = models.classification_rbf(X, y, unit_rms=True, bias=bias)
    spec = model_spec(model)
    m = len(model.coords["basis"])
    lls = 0.3 * rng.normal(size=(2, 4))
    draws = {"log_alpha": rng.normal(size=(2, 4, m)), "log_length_scale": lls}
    weights = None
    if which == "collapsed":
        draws["log_beta"] = rng.normal(size=(2, 4))
        weights = ChainDraws(exact_weight_rows(model, spec), chain_seeds(0))
    else:
        name = "w" if which == "binary" else "W"
        draws[name] = rng.normal(size=(2, 4, m) + (() if which == "binary" else (3,)))
    kept = reported_draws(model, spec, weights)(draws)
    out = reported_draws(model, spec, weights, unscaled=True)(draws)
    name = "W" if "W" in out else "w"
    np.testing.assert_array_equal(kept["log_alpha"], draws["log_alpha"])
    assert set(out) == set(draws) | {name}
    D = sq_distances(X, X)
    for c, s in itertools.product(range(2), range(4)):
        scaled = rbf_columns(D, lls[c, s], bias=bias, unit_rms=True)
        plain = rbf_columns(D, lls[c, s], bias=bias, unit_rms=False)
        np.testing.assert_allclose(plain @ out[name][c, s], scaled @ kept[name][c, s], atol=1e-12)
        rms = np.sqrt(np.mean(plain**2, axis=0))
        want = draws["log_alpha"][c, s] + 2.0 * np.log(rms)
        np.testing.assert_allclose(out["log_alpha"][c, s], want, rtol=1e-12, atol=1e-12)


@pytest.mark.filterwarnings(  # PyMC forks a process per chain
    "ignore:This process .* is multi-threaded, use of fork:DeprecationWarning"
)
def test_chain_draws_are_the_same_in_one_call_or_several():
    """The collapsed samplers' weights: each chain continues its own generator."""
    x = np.random.default_rng(0).standard_normal((2, 700, 3))
    calls = []

    def rows(d, rng, chain, start):
        calls.append((chain, start, len(d["x"])))
        return d["x"] + rng.standard_normal(d["x"].shape)

    def make():
        return ChainDraws(rows, lambda c: np.random.default_rng([5, c]))

    once = make().upto({"x": x})
    split = make()
    np.testing.assert_array_equal(split.upto({"x": x[:, :300]}), once[:, :300])
    calls.clear()
    np.testing.assert_array_equal(split.upto({"x": x}), once)
    assert calls == [(0, 300, 400), (1, 300, 400)]  # only the new rows of each chain
    np.testing.assert_array_equal(split.upto({"x": x[:, :500]}), once[:, :500])
    assert len(calls) == 2
    assert not np.array_equal(once[0] - x[0], once[1] - x[1])  # the chains draw apart


@pytest.mark.filterwarnings(  # PyMC forks a process per chain
    "ignore:This process .* is multi-threaded, use of fork:DeprecationWarning"
)
def test_each_chain_has_its_own_weight_generator():
    rngs = chain_seeds(7)
    a, b = rngs(0).standard_normal(5), rngs(1).standard_normal(5)
    assert not np.array_equal(a, b)
    np.testing.assert_array_equal(a, rngs(0).standard_normal(5))


@pytest.mark.filterwarnings(  # PyMC forks a process per chain
    "ignore:This process .* is multi-threaded, use of fork:DeprecationWarning"
)
def test_a_rule_needs_a_variable():
    with pytest.raises(ValueError, match="at least one variable"):
        StopWhenConverged([], draws=10, tune=0, chains=2, rhat_threshold=1.01, min_ess=1)


@pytest.mark.filterwarnings(  # PyMC forks a process per chain
    "ignore:This process .* is multi-threaded, use of fork:DeprecationWarning"
)
def test_until_converged_must_be_a_bool_or_none():
    with pytest.raises(ValueError, match="until_converged must be True, False or None"):
        NutsRun(until_converged="yes")


def _models():
    from rvm_pymc import models

    rng = np.random.default_rng(0)
    X = rng.normal(size=(12, 1))
    Phi = np.column_stack([np.ones(12), X[:, 0]])
    t, y, k = X[:, 0] + 0.1 * rng.normal(size=12), (X[:, 0] > 0).astype(int), np.arange(12) % 3
    return {
        "marginal": (models.regression_marginal(Phi, t), True, {"log_alpha", "log_beta", "w"}),
        "marginal_rbf": (
            models.regression_marginal_rbf(X, t),
            True,
            {"log_alpha", "log_beta", "log_length_scale", "w"},
        ),
        "joint": (models.regression_joint(Phi, t), False, {"log_alpha", "log_beta", "w"}),
        "binary": (models.classification_binary(Phi, y), False, {"log_alpha", "w"}),
        "softmax": (models.classification_softmax(Phi, k), False, {"log_alpha", "W"}),
    }


@pytest.mark.filterwarnings(  # PyMC forks a process per chain
    "ignore:This process .* is multi-threaded, use of fork:DeprecationWarning"
)
@pytest.mark.parametrize("which", ["marginal", "marginal_rbf", "joint", "binary", "softmax"])
def test_the_rule_checks_what_the_fit_reports(which):
    """The variables of ``nuts_result``'s check: the weights, log_alpha, log_beta, the width."""
    model, collapsed, expected = _models()[which]
    spec = model_spec(model)
    weights = None
    if collapsed:
        weights = ChainDraws(lambda d, rng, c, s: d["log_alpha"], chain_seeds(0))
    on = NutsRun(until_converged=True, chains=2)
    report = reported_draws(model, spec, weights)
    rule = stop_rule(model, spec, on, "pymc", collapsed, report)
    assert rule.report_draws is report
    assert set(rule.names) | ({"w"} if collapsed else set()) == expected
    for off in (NutsRun(until_converged=False), NutsRun(until_converged=True, chains=1)):
        assert stop_rule(model, spec, off, "pymc", collapsed, report) is None
    auto = NutsRun(until_converged=None, chains=2)
    assert stop_rule(model, spec, auto, "pymc", collapsed, report) is not None


@pytest.mark.filterwarnings(  # PyMC forks a process per chain
    "ignore:This process .* is multi-threaded, use of fork:DeprecationWarning"
)
def test_numpyro_refuses_to_stop_and_runs_the_whole_length_otherwise():
    """numpyro's draws cannot be read while it runs: until_converged=True is refused, naming
    what to pass instead; None runs its whole length without a rule.  nutpie stops."""
    model, _, _ = _models()["binary"]
    spec = model_spec(model)
    with pytest.raises(ValueError, match=r"until_converged=True .*'numpyro'.* until_conv"):
        _resolve_sampler("numpyro", {}, stops=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert stop_rule(model, spec, NutsRun(until_converged=None), "numpyro", False) is None
    assert stop_rule(model, spec, NutsRun(until_converged=None), "nutpie", False) is not None


@pytest.mark.filterwarnings(  # PyMC forks a process per chain
    "ignore:This process .* is multi-threaded, use of fork:DeprecationWarning"
)
def test_the_default_sampler_of_a_run_that_stops_is_one_that_can(monkeypatch):
    """With numpyro and nutpie "installed", nuts_sampler=None picks one of them; a run that
    stops once converged takes nutpie (numpyro cannot stop), or PyMC's without nutpie."""
    from rvm_pymc.inference import _nuts

    found = object()
    monkeypatch.setattr(_nuts.importlib.util, "find_spec", lambda name: found)
    assert _resolve_sampler(None, {}) == "numpyro"
    assert _resolve_sampler(None, {}, n_bases=300) == "nutpie"
    assert _resolve_sampler(None, {}, stops=True) == "nutpie"
    assert _resolve_sampler(None, {}, n_bases=300, stops=True) == "nutpie"
    assert _resolve_sampler(None, {}, stops=True, swaps=True) == "pymc"
    monkeypatch.setattr(
        _nuts.importlib.util, "find_spec", lambda name: None if name == "nutpie" else found
    )
    assert _resolve_sampler(None, {}, stops=True) == "pymc"


@pytest.mark.filterwarnings(  # PyMC forks a process per chain
    "ignore:This process .* is multi-threaded, use of fork:DeprecationWarning"
)
def test_the_estimators_refuse_draws_none_with_a_sampler_that_cannot_stop():
    """Refused by the parameter checks, before any fitting, whether or not it is installed."""
    sampler = "numpyro"
    X, t = np.linspace(0, 1, 8)[:, None], np.arange(8.0)
    est = RVR(method="nuts", gamma=1.0, sampler_kwargs={"nuts_sampler": sampler})
    with pytest.raises(ValueError, match=f"draws=None stops NUTS.*{sampler!r}.*number of draws"):
        est.fit(X, t)
    asked = RVR(
        method="nuts", draws=50, sampler_kwargs={"nuts_sampler": sampler, "until_converged": True}
    )
    with pytest.raises(ValueError, match="until_converged=True stops NUTS"):
        asked.fit(X, t)


@pytest.mark.filterwarnings(  # PyMC forks a process per chain
    "ignore:This process .* is multi-threaded, use of fork:DeprecationWarning"
)
def test_the_estimators_ask_to_stop_for_draws_none(monkeypatch):
    """draws=None passes until_converged=True to the run (None ran numpyro's whole length)."""
    from rvm_pymc.inference import _backend

    seen = []

    def fake(model, **kw):
        seen.append(kw)
        raise RuntimeError("stop here")

    monkeypatch.setattr(_backend, "nuts_posterior", fake)
    X, t = np.linspace(0, 1, 8)[:, None], np.sin(np.arange(8.0))
    for draws, stops in ((None, True), (300, False)):
        with pytest.raises(RuntimeError, match="stop here"):
            RVR(method="nuts", gamma=1.0, draws=draws).fit(X, t)
        assert seen[-1]["until_converged"] is stops
        assert seen[-1]["draws"] == (2000 if draws is None else draws)


@pytest.fixture(scope="module")
def sinc():
    d = make_sinc(n_train=30, noise_sd=0.1, random_state=0)
    return d.X_train, d.t_train


def _fit(sinc, **kw):
    opts = {"progressbar": False, "nuts_sampler": "pymc", **kw.pop("sampler_kwargs", {})}
    return RVR(method="nuts", gamma=0.5, random_state=1, sampler_kwargs=opts, **kw).fit(*sinc)


@pytest.fixture(scope="module")
def stopped(sinc):
    """The default fit, its chains in parallel and in sequence, with plain progress lines."""
    seen = []

    class Lines(logging.Handler):
        def emit(self, record):
            seen.append(record.getMessage())

    handler, logger = Lines(), logging.getLogger("rvm_pymc")
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        fits = {c: _fit(sinc, sampler_kwargs={"cores": c, "progressbar": "lines"}) for c in (2, 1)}
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
    return fits, seen


@pytest.mark.filterwarnings(  # PyMC forks a process per chain
    "ignore:This process .* is multi-threaded, use of fork:DeprecationWarning"
)
def test_estimator_nuts_stops_when_converged_with_the_same_draws_on_any_cores(stopped):
    fits, lines = stopped
    for est in fits.values():
        post, attrs = est.idata_["posterior"], est.idata_.attrs
        kept = post.sizes["draw"]
        assert kept < 2000 and (kept - FIRST_CHECK) % CHECK_EVERY == 0
        assert attrs["max_draws"] == 2000
        assert attrs["convergence_checks"] == (kept - FIRST_CHECK) // CHECK_EVERY + 1
        assert est.converged_
        assert est.n_iter_ == 500 + kept  # tune=None: 500 for the collapsed sampler
        assert est.idata_["sample_stats"].sizes["draw"] == kept
    for name in ("w", "log_alpha", "log_beta"):
        np.testing.assert_array_equal(
            fits[1].idata_["posterior"][name].values, fits[2].idata_["posterior"][name].values
        )
    kept = fits[1].idata_["posterior"].sizes["draw"]
    assert sum(f"NUTS stopped at {kept} of at most 2000 draws a chain" in s for s in lines) == 2
    assert sum(f"NUTS done: 2 chains of 500 tuning + {kept} draws" in s for s in lines) == 2


@pytest.mark.filterwarnings(  # PyMC forks a process per chain
    "ignore:This process .* is multi-threaded, use of fork:DeprecationWarning"
)
@pytest.mark.filterwarnings("ignore::rvm_pymc.SamplingWarning")
def test_a_stopped_run_is_the_start_of_the_whole_run(sinc, stopped):
    early = stopped[0][2].idata_["posterior"]
    whole = _fit(sinc, sampler_kwargs={"until_converged": False})
    post = whole.idata_["posterior"]
    assert post.sizes["draw"] == 2000
    assert "max_draws" not in whole.idata_.attrs
    cut = post.isel(draw=slice(0, early.sizes["draw"]))
    for name in ("w", "log_alpha", "log_beta"):
        np.testing.assert_array_equal(cut[name].values, early[name].values)


class _Nutpie:
    """A stand-in for nutpie's background sampler.  Time passes between two asks whether it
    has finished: each ask moves on to the next of ``reads`` (the draws each chain has
    done; a shorter chain's float draws are NaN, as nutpie pads), finished at the last."""

    def __init__(self, x: np.ndarray, reads, diverging=None, fail_at=None, error_at=None):
        self.x, self.reads, self.at = x, list(reads), -1
        self.fail_at, self.error_at = fail_at, error_at
        self.diverging = np.zeros(x.shape[:2], bool) if diverging is None else diverging
        self.calls: list[str] = []

    def _tree(self, done) -> xr.DataTree:
        x = self.x[:, : max(done)].copy()
        for c, n in enumerate(done):
            x[c, n:] = np.nan
        post = xr.Dataset({"x": (("chain", "draw", "x_dim_0"), x)})
        stats = xr.Dataset({"diverging": (("chain", "draw"), self.diverging[:, : max(done)])})
        settings = json.dumps({"settings": {"num_tune": TUNE}})
        stats.attrs["inference_library_settings"] = settings
        return xr.DataTree.from_dict({"posterior": post, "sample_stats": stats})

    @property
    def is_finished(self) -> bool:
        self.at = min(self.at + 1, len(self.reads) - 1)
        if self.at == self.error_at:
            raise RuntimeError("All initialization points failed")  # as nutpie reports it
        if self.at < len(self.reads) - 1:
            raise TimeoutError("Timeout while waiting for sampler to finish")  # as nutpie 0.16
        return True

    def inspect(self) -> xr.DataTree:
        self.calls.append("inspect")
        if self.at == self.fail_at:
            raise KeyboardInterrupt
        return self._tree(self.reads[self.at])

    def abort(self) -> xr.DataTree:
        self.calls.append("abort")
        return self._tree(self.reads[self.at])

    def wait(self) -> xr.DataTree:
        self.calls.append("wait")
        return self._tree(self.reads[-1])

    def cancel(self) -> None:
        self.calls.append("cancel")


def _read_nutpie(sampler: _Nutpie, rule, monkeypatch, reported=False) -> xr.DataTree:
    """``sampler`` read by ``rule``; ``reported``: with its progress (the slower chain's
    draws at the current read), else without."""
    from rvm_pymc.inference import _nutpie

    naps = []
    monkeypatch.setattr(_nutpie.time, "sleep", naps.append)
    progress = (lambda: min(sampler.reads[sampler.at])) if reported else (lambda: None)
    try:
        return _nutpie.read_until_converged(lambda: sampler, rule, 0.25, progress)
    finally:
        assert set(naps) <= {0.25}


def _iid(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((2, DRAWS, 3))


def test_nutpie_is_read_until_a_checkpoint_every_chain_has_reached_passes(monkeypatch):
    """nutpie's run is cut at the first passing checkpoint, on exactly the draws kept,
    checked only once both chains had them (not at 530 draws of the faster one)."""
    x = _iid(0)
    sampler = _Nutpie(x, [(0, 0), (120, 100), (480, 530), (700, 650), (900, 880), (DRAWS,) * 2])
    rule = _rule()
    tree = _read_nutpie(sampler, rule, monkeypatch)
    assert sampler.calls == ["inspect"] * 4 + ["abort"]
    assert rule.stopped_at == FIRST_CHECK
    np.testing.assert_array_equal(tree["posterior"]["x"].values, x[:, :FIRST_CHECK])
    assert tree["sample_stats"].sizes["draw"] == FIRST_CHECK
    direct = sampling_diagnostics(xr.Dataset({"x": (("chain", "draw", "d"), x[:, :FIRST_CHECK])}))
    assert rule.checks == [(FIRST_CHECK, direct)]


def test_nutpie_is_read_only_once_its_progress_reports_a_checkpoint(monkeypatch):
    """With nutpie's progress reports, the draws are read only when a checkpoint (or the end)
    has been reached: the same cut as reading every poll, with one read in place of four."""
    x = _iid(0)
    reads = [(0, 0), (120, 100), (480, 530), (700, 650), (900, 880), (DRAWS,) * 2]
    sampler, rule = _Nutpie(x, reads), _rule()
    tree = _read_nutpie(sampler, rule, monkeypatch, reported=True)
    assert sampler.calls == ["inspect", "abort"]
    assert rule.stopped_at == FIRST_CHECK
    np.testing.assert_array_equal(tree["posterior"]["x"].values, x[:, :FIRST_CHECK])
    x[1] += 0.5  # never passes: a read at each checkpoint reached, then the finished run
    sampler, rule = _Nutpie(x, [(300, 200), (1100, 1000), (1200, 1100), (DRAWS,) * 2]), _rule()
    _read_nutpie(sampler, rule, monkeypatch, reported=True)
    assert sampler.calls == ["inspect", "wait"]
    assert [k for k, _ in rule.checks] == list(range(FIRST_CHECK, DRAWS, CHECK_EVERY))


def test_nutpie_never_passing_runs_to_the_end_and_counts_divergences_to_the_checkpoint(
    monkeypatch,
):
    """Chains that disagree are checked at every checkpoint (one read may reach several)
    and run their whole length; a divergence after a checkpoint does not count there."""
    x = _iid(1)
    x[1] += 0.5
    div = np.zeros((2, DRAWS), bool)
    div[0, FIRST_CHECK] = True  # the 501st draw
    reads = [(300, 200), (1100, 1000), (DRAWS, 1500), (DRAWS, DRAWS)]
    sampler = _Nutpie(x, reads, diverging=div)
    rule = _rule()
    tree = _read_nutpie(sampler, rule, monkeypatch)
    assert sampler.calls == ["inspect"] * 3 + ["wait"]
    assert rule.stopped_at is None and tree["posterior"].sizes["draw"] == DRAWS
    assert [k for k, _ in rule.checks] == list(range(FIRST_CHECK, DRAWS, CHECK_EVERY))
    assert [d["n_divergent"] for _, d in rule.checks] == [0] + [1] * (len(rule.checks) - 1)


def test_a_run_that_finished_before_its_checkpoint_was_read_is_cut_there(monkeypatch):
    """The finished run's draws (not a read of them) are checked and cut; no abort."""
    x = _iid(2)
    sampler, rule = _Nutpie(x, [(100, 100), (DRAWS, DRAWS)]), _rule()
    tree = _read_nutpie(sampler, rule, monkeypatch)
    assert sampler.calls == ["inspect", "wait"]
    assert rule.stopped_at == FIRST_CHECK
    np.testing.assert_array_equal(tree["posterior"]["x"].values, x[:, :FIRST_CHECK])


def test_a_ctrl_c_or_an_error_while_nutpie_is_read_ends_its_threads(monkeypatch):
    """Either propagates, after cancel() has ended the sampler's threads."""
    reads = [(0, 0), (100, 100), (300, 300), (DRAWS, DRAWS)]
    sampler = _Nutpie(_iid(3), reads, fail_at=1)
    with pytest.raises(KeyboardInterrupt):
        _read_nutpie(sampler, _rule(), monkeypatch)
    assert sampler.calls == ["inspect", "inspect", "cancel"]
    sampler = _Nutpie(_iid(3), reads, error_at=1)
    with pytest.raises(RuntimeError, match="initialization points failed"):
        _read_nutpie(sampler, _rule(), monkeypatch)
    assert sampler.calls == ["inspect", "cancel"]
    sampler = _Nutpie(_iid(3), reads)
    assert _read_nutpie(sampler, None, monkeypatch)["posterior"].sizes["draw"] == DRAWS
    assert sampler.calls == ["wait"]  # no rule: the whole run, Ctrl-C still propagating


def test_nutpie_runs_as_pm_sample_runs_it(monkeypatch):
    """nutpie_sample passes nutpie what pm.sample(nuts_sampler="nutpie") passes (seed,
    tune, start, no warmup kept, PyMC's progress bars) and patches the tree as PyMC does;
    the stopping rule reads a background run."""
    import types

    from pymc.util import get_random_generator

    from rvm_pymc.inference import _nutpie

    seen = {}
    fake = types.ModuleType("nutpie")
    fake.__version__ = "0.16.11"

    def compile_pymc_model(model, **kw):
        seen["compile"] = kw
        return "compiled"

    def sample(compiled, **kw):
        seen["sample"] = kw
        return _Nutpie(_iid(4), [(0, 0), (DRAWS, DRAWS)])

    fake.compile_pymc_model, fake.sample = compile_pymc_model, sample
    monkeypatch.setitem(sys.modules, "nutpie", fake)
    monkeypatch.setattr(_nutpie.time, "sleep", lambda s: None)
    with pm.Model() as model:
        pm.Normal("x", 0.0, 1.0, shape=3)
    run = NutsRun(draws=DRAWS, tune=0, chains=2, random_seed=5, target_accept=0.9,
                  initvals={"x": np.zeros(3)}, progressbar=False)  # fmt: skip
    rule = StopWhenConverged(["x"], draws=DRAWS, tune=1, chains=2, rhat_threshold=1.01,
                             min_ess=400.0)  # fmt: skip
    tree = _nutpie.nutpie_sample(model, run, rule, cores=4)
    assert seen["compile"]["backend"] == "numba"
    np.testing.assert_array_equal(seen["compile"]["initial_points"]["x"], np.zeros(3))
    kw = seen["sample"]
    assert kw["seed"] == int(get_random_generator(5).spawn(2)[0].integers(2**30))
    assert (kw["draws"], kw["tune"], kw["chains"], kw["cores"]) == (DRAWS, 1, 2, 2)
    assert not kw["blocking"] and not kw["save_warmup"] and not kw["progress_bar"]
    assert kw["target_accept"] == 0.9 and callable(kw["progress_callback"])
    assert rule.stopped_at == FIRST_CHECK and tree["posterior"].sizes["draw"] == FIRST_CHECK
    assert np.isfinite(tree["posterior"].attrs["sampling_time"])
    assert {"constant_data", "observed_data"} <= set(tree.children)


@pytest.fixture(scope="module")
def nutpie_stopped(sinc):
    pytest.importorskip("nutpie")
    return _fit(sinc, sampler_kwargs={"nuts_sampler": "nutpie"})


@pytest.mark.filterwarnings("ignore::rvm_pymc.SamplingWarning")
def test_nutpie_stops_when_converged_at_the_start_of_its_whole_run(sinc, nutpie_stopped):
    """The estimators' nutpie fit stops as PyMC's does, keeping the first draws of its
    whole run at the same seed."""
    attrs, post = nutpie_stopped.idata_.attrs, nutpie_stopped.idata_["posterior"]
    kept = post.sizes["draw"]
    assert attrs["sampler"] == "nutpie" and nutpie_stopped.converged_
    assert kept < 2000 and (kept - FIRST_CHECK) % CHECK_EVERY == 0
    assert attrs["max_draws"] == 2000
    assert attrs["convergence_checks"] == (kept - FIRST_CHECK) // CHECK_EVERY + 1
    assert nutpie_stopped.idata_["sample_stats"].sizes["draw"] == kept
    assert np.isfinite(attrs["sampling_time"])
    whole = _fit(sinc, sampler_kwargs={"nuts_sampler": "nutpie", "until_converged": False})
    assert "max_draws" not in whole.idata_.attrs
    cut = whole.idata_["posterior"].isel(draw=slice(0, kept))
    for name in ("w", "log_alpha", "log_beta"):
        np.testing.assert_array_equal(post[name].values, cut[name].values)


@pytest.mark.filterwarnings("ignore::rvm_pymc.SamplingWarning")
def test_a_stopped_nutpie_run_is_the_start_of_pm_sample_s():
    """The package's nutpie run, stopped by the rule, against pm.sample's own nutpie run."""
    pytest.importorskip("nutpie")
    x = np.linspace(-3, 3, 25)
    Phi = _rbf(x[:, None], x[::5, None], 1.0)
    t = np.sin(x) + 0.1 * np.random.default_rng(0).standard_normal(25)
    model = models.regression_marginal(Phi, t)
    opts = {"draws": 2000, "tune": 300, "chains": 2, "random_seed": 4, "target_accept": 0.9}
    ours = inference.sample_collapsed(model, nuts_sampler="nutpie", until_converged=True,
                                      progressbar=False, **opts)  # fmt: skip
    kept = ours["posterior"].sizes["draw"]
    assert ours.attrs["max_draws"] == 2000 and kept < 2000
    with model:
        theirs = pm.sample(nuts_sampler="nutpie", progressbar=False, **opts)
    for name in ("log_alpha", "log_beta"):
        np.testing.assert_array_equal(
            ours["posterior"][name].values, theirs["posterior"][name].values[:, :kept]
        )


def test_the_estimators_take_draws_none_with_nutpie_named():
    """nutpie can stop: draws=None (until_converged) passes the parameter checks with it."""
    from rvm_pymc.inference import check_sampler_kwargs

    assert check_sampler_kwargs("nuts", {"nuts_sampler": "nutpie"}, stops=True) == {
        "nuts_sampler": "nutpie"
    }


@pytest.mark.filterwarnings(  # PyMC forks a process per chain
    "ignore:This process .* is multi-threaded, use of fork:DeprecationWarning"
)
@pytest.mark.filterwarnings("ignore::rvm_pymc.SamplingWarning")
def test_given_draws_keep_the_whole_length(sinc):
    given = _fit(sinc, draws=600)
    assert given.idata_["posterior"].sizes["draw"] == 600
    assert "max_draws" not in given.idata_.attrs


# ---- from tests/test_progress.py

Draw = namedtuple("Draw", ["chain", "is_last", "draw_idx", "tuning", "stats", "point"])


def _draws(chain, n, tune, diverging=()):
    return [Draw(chain, i == n - 1, i, i < tune, [{"diverging": i in diverging}], None)
            for i in range(n)]  # fmt: skip


def test_draw_lines_every_share_and_divergences_after_tuning(monkeypatch):
    lines: list[str] = []
    report = DrawLines(draws=60, tune=40, chains=2, every_seconds=1e9, write=lines.append)
    for d in _draws(0, 100, 40, diverging={5, 45, 46}):  # one in tuning, two after it
        report(trace=None, draw=d)
    assert len(lines) == 10  # every 10 of the 100 iterations
    assert lines[3].startswith("NUTS chain 1/2: 40/100 (tuning), 0 divergences, ")
    assert lines[4].startswith("NUTS chain 1/2: 50/100 (sampling), 2 divergences, ")
    assert lines[-1].startswith("NUTS chain 1/2: 100/100 (sampling), 2 divergences, ")
    report(trace=None, draw=_draws(1, 1, 40)[0])  # another chain: its own count
    assert len(lines) == 10

    clock = iter([0.0, 0.5, 11.0, 11.5, 30.0])  # seconds: a line once 10 s have passed
    monkeypatch.setattr("rvm_pymc._core.progress.time.monotonic", lambda: next(clock))
    timed: list[str] = []
    report = DrawLines(draws=1000, tune=1000, chains=1, write=timed.append)
    for d in _draws(0, 5, 1000):
        report(trace=None, draw=d)
    assert [ln.split(": ")[1].split(",")[0] for ln in timed] == [
        "3/2000 (tuning)",
        "5/2000 (tuning)",
    ]
    assert timed[0].endswith("11 s elapsed") and timed[1].endswith("30 s elapsed")
    report.summary(12.34, 1.0042, 3)
    assert timed[-1] == ("NUTS done: 1 chain of 1000 tuning + 1000 draws in 12.3 s; "
                         "max R-hat 1.004, 3 divergences")  # fmt: skip


def test_plain_lines_need_pymc_s_own_sampler():
    from rvm_pymc.inference._nuts import _resolve_sampler

    assert _resolve_sampler(None, {}, 0, lines=True) == "pymc"  # chosen for the lines
    for other in ("nutpie", "numpyro"):
        with pytest.raises(ValueError, match="progressbar='lines' needs PyMC's own sampler"):
            _resolve_sampler(other, {}, 0, lines=True)


# ---- from tests/test_inference.py

FAST = {"mode": "FAST_COMPILE"}


def _rbf(x, centres, width):
    d2 = ((x[:, None, :] - centres[None, :, :]) ** 2).sum(-1)
    return np.column_stack([np.ones(len(x)), np.exp(-d2 / (2 * width**2))])


@pytest.mark.pymc
@pytest.mark.filterwarnings("ignore:`find_MAP` will:FutureWarning")
def test_regression_map_prunes_under_the_flat_prior():
    """Flat prior: irrelevant precisions are pruned to the bound, not left creeping."""
    import warnings

    from rvm_pymc.datasets import make_sinc

    d = make_sinc(n_train=100, noise_sd=0.1, random_state=0)
    Phi = np.column_stack([np.ones(100), np.exp(-((d.X_train - d.X_train.T) ** 2) / (2 * 2.0**2))])
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        fit = inference.fit_map(
            models.regression_marginal(Phi, d.t_train, prior="evidence"), draws=5
        )
    la = type_ii_value(fit, "log_alpha")
    kept = la < _map.LOG_PRECISION_BOUND
    assert fit.attrs["converged"] and 3 <= kept.sum() <= 12  # seen: 6 of 101
    ref = fit_regression(Phi, d.t_train, method="fast")
    # a (possibly different) local optimum of the same evidence, as sparse as the reference's
    assert abs(fit.attrs["log_evidence"] - ref.log_evidence) < 1.0
    assert kept.sum() <= ref.active.size + 2


@pytest.mark.pymc
@pytest.mark.parametrize("kind", ["binary", "softmax"])
def test_laplace_evidence_gradient_is_exact(kind):
    X, y, centres = two_moons(0, n=40)
    Phi = _rbf(X, centres, 1.5)
    prior = resolve_prior("weakly_informative")
    if kind == "binary":
        model, name = models.classification_binary(Phi, y, prior=prior), "w"
    else:
        y3 = np.digitize(X[:, 0] + 0.5 * X[:, 1], [-0.5, 0.5])
        model, name = models.classification_softmax(Phi, y3, prior=prior), "W"
    fns = compile_laplace(model, name, "FAST_COMPILE")
    la = np.random.default_rng(1).uniform(-1.0, 3.0, 5)
    w0 = np.zeros(int(np.prod(fns.shape)))

    def J(la_):
        w, _, ok = newton_mode(fns, w0, la_)
        assert ok
        return fns.outer(w, la_)

    value, grad = J(la)
    eps = 1e-5
    for i in range(5):
        e = np.zeros(5)
        e[i] = eps
        fd = (J(la + e)[0] - J(la - e)[0]) / (2 * eps)
        assert grad[i] == pytest.approx(fd, rel=1e-6, abs=1e-8)
    if kind == "binary":
        const = 5 * (prior.a * np.log(prior.b))  # Gamma(1, b) normaliser
        want = numpy_laplace_evidence(Phi, y, la, prior)
        assert value - const == pytest.approx(want, rel=1e-10)


def _three_class_problem(seed=4):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((120, 2))
    y = np.digitize(X[:, 0] + 0.5 * X[:, 1] + 0.3 * rng.standard_normal(120), [-0.6, 0.6])
    centres = 1.5 * rng.standard_normal((12, 2))
    return _rbf(X, centres, np.sqrt(2.0)), y


@pytest.mark.pymc
def test_softmax_map_prunes_like_the_reference_under_the_flat_prior():
    """Flat prior: irrelevant precisions creep to infinity; both MAP paths prune them."""
    Phi, y = _three_class_problem()
    ref = fit_classification(Phi, y, method="mackay", prior="evidence", tol=1e-10, max_iter=20_000)
    assert ref.converged and 0 < ref.active.size < 12
    model = models.classification_softmax(Phi, y, prior="evidence")
    tipping = inference.fit_map(
        model, laplace="tipping", gtol=1e-10, draws=10, compile_kwargs=FAST
    )
    assert tipping.attrs["converged"] and tipping.attrs["n_iter"] < 500
    alpha = type_ii_value(tipping, "alpha")
    pruned = np.setdiff1d(np.arange(12), ref.active)
    np.testing.assert_array_equal(np.log(alpha[pruned]), _map.LOG_PRECISION_BOUND)
    np.testing.assert_allclose(alpha[ref.active], ref.alpha, rtol=1e-6)
    exact = inference.fit_map(model, draws=10, compile_kwargs=FAST)
    assert exact.attrs["converged"]
    la_ex = np.log(type_ii_value(exact, "alpha"))
    # the same bases are pruned (held at the bound); the others are O(1/N) from Tipping's
    np.testing.assert_array_equal(la_ex[pruned], _map.LOG_PRECISION_BOUND)
    np.testing.assert_allclose(la_ex[ref.active], np.log(ref.alpha), atol=0.6)
    # the exact path maximises J, so it is no lower than at Tipping's fixed point
    assert exact.attrs["log_evidence"] >= tipping.attrs["log_evidence"] - 1e-9


@pytest.mark.pymc
def test_laplace_functions_restricted_to_columns_are_the_smaller_model():
    """One compile serves every active set: restrict(cols) is the model built on Phi[:, cols]."""
    Phi, y = _three_class_problem()
    name, build = "W", models.classification_softmax
    cols = np.array([0, 4, 9])
    full = compile_laplace(build(Phi, y, prior="evidence"), name, "FAST_COMPILE")
    small = compile_laplace(build(Phi[:, cols], y, prior="evidence"), name, "FAST_COMPILE")
    sub = full.restrict(cols)
    assert sub.shape == small.shape
    la = np.array([0.3, -1.0, 2.0])
    w, H, ok = newton_mode(small, np.zeros(int(np.prod(small.shape))), la)
    assert ok and np.max(np.abs(w)) > 0.1
    np.testing.assert_allclose(sub.newton(w, la)[2], H, rtol=1e-12)
    J, grad = small.outer(w, la)
    J_sub, grad_sub = sub.outer(w, la)
    assert J_sub == pytest.approx(float(J), rel=1e-12)
    np.testing.assert_allclose(grad_sub, grad, rtol=1e-10, atol=1e-12)


@pytest.mark.pymc
def test_active_set_map_lets_pruned_bases_re_enter():
    """Flat prior, started with every basis but one pruned: the re-entry test brings the
    relevant ones back (L-BFGS-B alone cannot: the gradient of J at the bound is ~e^-50),
    reaching at least the evidence of the start at the reference solution."""
    Phi, y = _three_class_problem()
    y = (y > 0).astype(int)
    model = models.classification_binary(Phi, y, prior="evidence")
    ref = fit_classification(Phi, y, method="mackay", prior="evidence", tol=1e-10, max_iter=20_000)
    la_ref = np.full(13, _map.LOG_PRECISION_BOUND)
    la_ref[ref.active] = np.log(ref.alpha)
    one = np.full(13, _map.LOG_PRECISION_BOUND)
    one[0] = 0.0
    from_ref = inference.optimise_map(model, initvals={"log_alpha": la_ref}, compile_kwargs=FAST)
    from_one = inference.optimise_map(model, initvals={"log_alpha": one}, compile_kwargs=FAST)
    assert from_ref.converged and from_one.converged
    assert np.sum(from_one.log_alpha < _map.LOG_PRECISION_BOUND) >= ref.active.size
    assert from_one.log_evidence >= from_ref.log_evidence - 1e-7


# ---- from tests/test_one_result.py


@pytest.mark.pymc
@pytest.mark.filterwarnings("ignore::rvm_pymc.exceptions.SamplingWarning")
def test_map_bounds_other_than_a_pruned_precision_are_not_converged():
    from rvm_pymc.inference import _map as _map

    bounds = [(-5.0, 50.0), (-5.0, 50.0), (-50.0, 50.0)]
    x = np.array([50.0, 1.0, 50.0])  # log alpha_0 pruned, log beta at its upper bound
    g = np.array([-1.0, 0.0, -1.0])
    pg, stuck = _map._projected(x, g, bounds, prunable=[0, 1])
    assert np.max(np.abs(pg)) == 1.0 and stuck.tolist() == [2]
    # under a proper prior nothing is prunable: the precision at the bound is stuck too
    assert _map._projected(x, g, bounds)[1].tolist() == [0, 2]


@pytest.mark.pymc
@pytest.mark.filterwarnings("ignore::rvm_pymc.exceptions.SamplingWarning")
@pytest.mark.parametrize(
    ("offset", "curvature", "converged"),
    [(3e-6, 1.0, True), (3e-6, 100.0, True), (1e-4, 1.0, False), (3e-6, 1e-4, False)],
)
def test_map_stall_counts_as_converged_only_without_a_gain_left(offset, curvature, converged):
    """A stall (no decrease of J found) at a gradient above STALL_GTOL is an optimum only
    when a Newton step would gain less than STALL_GAIN * (1 + |J|): |g|^2 / (2 curvature)
    is 4.5e-12, 4.5e-14, 5e-9 and 4.5e-8 here, against 1.01e-10."""
    from rvm_pymc.inference import _map as _map

    def fun(x):  # minimum at x = 1; the gradient is off by ``offset`` (its rounding)
        dx = x[0] - 1.0
        return 100.0 + 0.5 * curvature * dx * dx, np.array([curvature * dx + offset])

    res, ok, pgrad = _map._lbfgs(fun, np.array([1.0]), [(-5.0, 5.0)], 100, 1e-8, "", False)
    message = str(res.message).upper()
    assert "ABNORMAL" in message or "REDUCTION OF F" in message  # a stall, not gtol
    assert _map.STALL_GTOL < pgrad <= 1.05 * offset  # the gradient's own error remains
    assert ok is converged


# ---- from tests/test_interrupt.py

FAST_interrupt = {"compile_kwargs": {"mode": "FAST_COMPILE"}}


@pytest.fixture(scope="module")
def data(noisy_sinc):
    X, t = noisy_sinc(25, low=-5.0, high=5.0, seed=1)
    return X, t, (t > 0.2).astype(int), np.linspace(-6.0, 6.0, 11)[:, None]


def test_interrupt_inside_the_fast_solver(data, monkeypatch):
    """Stopped inside the sequential algorithm itself (not at the solver's entry)."""
    from rvm_pymc.reference._sequential_state import SequentialState

    X, t, _, X_new = data
    est = RVR(gamma=0.5).fit(X, t)
    saved = dict(est.__dict__)
    before = est.predict(X_new, return_std=True)
    real = SequentialState.resolve
    stop = interrupt_after(real, 3)
    monkeypatch.setattr(SequentialState, "resolve", lambda self, *a, **k: stop(self, *a, **k))
    with pytest.raises(KeyboardInterrupt):
        est.set_params(gamma=2.0).fit(X, t)
    assert len(stop.calls) == 4
    saved["gamma"] = 2.0
    assert_unchanged(est, saved)
    np.testing.assert_array_equal(est.predict(X_new, return_std=True), before)


class _InterruptedOptimiser:
    """Stands in for ``scipy.optimize`` in rvm_pymc.inference._map: L-BFGS-B whose objective
    raises KeyboardInterrupt at its ``n_evals + 1``-th evaluation."""

    def __init__(self, n_evals: int) -> None:
        self.n_evals = n_evals
        self.evals = 0

    def minimize(self, fun, x0, **kwargs):
        def objective(x):
            self.evals += 1
            if self.evals > self.n_evals:
                raise KeyboardInterrupt
            return fun(x)

        return scipy.optimize.minimize(objective, x0, **kwargs)


@pytest.mark.pymc
@pytest.mark.parametrize("previous", [None, "reference"])
def test_interrupted_map_fit_leaves_the_estimator_as_it_was(data, previous, monkeypatch):
    import pymc  # noqa: F401

    from rvm_pymc.inference import _map as _map

    X, t, _, X_new = data
    est = RVR(gamma=0.5, random_state=0)
    if previous:
        est.fit(X, t)
        before = est.predict(X_new, return_std=True)
    saved = dict(est.__dict__)
    est.set_params(method="map", init="default", sampler_kwargs=FAST_interrupt)
    saved.update(method="map", init="default", sampler_kwargs=est.sampler_kwargs)
    optimiser = _InterruptedOptimiser(5)
    monkeypatch.setattr(_map, "optimize", optimiser)
    with pytest.raises(KeyboardInterrupt):
        est.fit(X, t)
    assert optimiser.evals == 6  # stopped inside L-BFGS-B, after the model was compiled
    assert_unchanged(est, saved)
    if previous:
        assert est.model_ is None
        np.testing.assert_array_equal(est.predict(X_new, return_std=True), before)
    else:
        with pytest.raises(NotFittedError):
            est.predict(X_new)


# ---- from tests/test_nuts_width_prior.py

_SELECT = base.select_width  # the width selection itself (each fit below wraps it anew)


class _Stop(Exception):
    """Raised by the recording backend: the fit goes no further."""


def _recorded(est, X, y, monkeypatch):
    """The width, prior and reference start ``est.fit`` chose, and the backend's prior."""
    seen = {}

    def width_of(*args, **kwargs):
        width = _SELECT(*args, **kwargs)
        _, prior, solver = kwargs["fit"].args  # the reference fit's targets, prior, solver
        seen.update(gamma=width.gamma, prior=prior, solver=solver, start=width.reference)
        return width

    def backend(opts, Phi, target, names, prior, seed, start):
        seen.update(backend_prior=prior, backend_start=start)
        raise _Stop

    monkeypatch.setattr(base, "select_width", width_of)
    monkeypatch.setattr(rvm_pymc.inference, "fit_backend", backend)
    if est.method == "nuts":
        with pytest.raises(_Stop):
            est.fit(X, y)
    else:
        est.fit(X, y)
    return seen


def test_nuts_width_and_start_are_the_slab_priors_reference_fit(monkeypatch):
    X, y, _, _ = make_ripley(n_train=80, n_test=2, random_state=2)
    slab = PRESETS["weakly_informative_slab"]
    for gamma in ("auto", "evidence"):  # cross-validated (the default) and by the evidence
        nuts = _recorded(RVC(method="nuts", gamma=gamma, random_state=0), X, y, monkeypatch)
        assert nuts["prior"] == slab == nuts["backend_prior"]
        assert nuts["solver"] == "mackay"
        ref = _recorded(
            RVC(method="reference", gamma=gamma, solver="mackay", prior=slab, random_state=0),
            X,
            y,
            monkeypatch,
        )
        assert nuts["gamma"] == ref["gamma"]
        post = nuts["backend_start"]
        assert post.basis_names == ref["start"][0].basis_names
        np.testing.assert_array_equal(post.log_alpha, ref["start"][0].log_alpha)
        np.testing.assert_array_equal(post.mean, ref["start"][0].mean)
    # the slab changes this problem's evidence width: the old start (the prior without it)
    # differs
    plain = _recorded(
        RVC(
            method="reference",
            gamma="evidence",
            solver="mackay",
            prior=slab.without_slab(),
            random_state=0,
        ),
        X,
        y,
        monkeypatch,
    )
    assert plain["gamma"] != nuts["gamma"]


def test_non_centred_start_uses_the_slabs_precision_and_stays_finite():
    names = ("b0", "b1", "b2")
    start = WeightPosterior(
        kind="binary",
        basis_names=("b0", "b1"),
        log_alpha=np.array([np.log(0.5), -np.inf]),  # a slab's reference may reach alpha = 0
        mean=np.array([2.0, -3.0]),
        cov=np.eye(2),
    )
    out = _start(
        start, names, "binary", cap=10.0, weights=True, parametrization="non_centred", slab=5.0
    )
    np.testing.assert_array_equal(out["log_alpha"], [np.log(0.5), -10.0, 10.0])
    precision = np.exp(out["log_alpha"]) + 1 / 25  # the model's alpha + 1/slab^2
    np.testing.assert_allclose(out["w_raw"], np.array([2.0, -3.0, 0.0]) * np.sqrt(precision))


def test_non_centred_softmax_start_scales_every_class_column_by_its_basis():
    start = WeightPosterior(
        kind="softmax",
        basis_names=("b1",),
        log_alpha=np.array([np.log(2.0)]),
        mean=np.array([[1.0, -2.0, 0.5]]),
        cov=np.eye(3),
    )
    out = _start(
        start, ("b0", "b1"), "softmax", cap=10.0, weights=True,
        parametrization="non_centred", slab=5.0,
    )  # fmt: skip
    precision = np.exp(out["log_alpha"]) + 1 / 25
    assert out["W_raw"].shape == (2, 3)
    expected = [[0.0, 0.0, 0.0], [1.0, -2.0, 0.5]]
    np.testing.assert_allclose(out["W_raw"] / np.sqrt(precision)[:, None], expected)


def test_a_slab_sends_a_flat_gamma_prior_to_mackay(monkeypatch):
    """``solver="fast"`` takes no slab: with a = b = 0 and a slab the start is MacKay's."""
    X, y, _, _ = make_ripley(n_train=40, n_test=2, random_state=0)
    prior = {"a": 0.0, "b": 0.0, "slab": 5.0}
    seen = _recorded(RVC(method="nuts", prior=prior, random_state=0), X, y, monkeypatch)
    assert seen["solver"] == "mackay" and seen["prior"].slab == 5.0
    assert np.all(np.isfinite(seen["backend_start"].mean))


# ---- from tests/test_slab.py


class _Built(Exception):
    """Raised in place of sampling, carrying what NUTS was given."""


@pytest.mark.pymc
@pytest.mark.parametrize("prior", [{"slab": 5.0}, None])
def test_rvc_nuts_hands_the_slab_to_the_sampled_model(monkeypatch, prior):
    """No sampling: the model NUTS would sample has the slab (given, or by default),
    started at the reference fit."""
    from rvm_pymc.datasets import make_ripley
    from rvm_pymc.estimators import RVC
    from rvm_pymc.inference import _backend
    from rvm_pymc.models import model_spec

    def capture(model, **kwargs):
        raise _Built(model, kwargs)

    monkeypatch.setattr(_backend, "nuts_posterior", capture)
    X, y, _, _ = make_ripley(n_train=30, n_test=10, random_state=0)
    est = RVC(gamma=2.0, method="nuts", prior=prior, random_state=0)
    with pytest.raises(_Built) as built:
        est.fit(X, y)
    model, kwargs = built.value.args
    spec = model_spec(model)
    assert spec.prior == HyperPrior(1.0, 0.01, 0.0, 0.0, slab=5.0)
    assert spec.parametrization == "non_centred"
    # the start: the reference fit of the same Gamma prior without the slab
    assert set(kwargs["initvals"]) == {"log_alpha", "w_raw"}
    assert np.all(np.isfinite(kwargs["initvals"]["log_alpha"]))


# ---- from tests/test_basis_swap.py


def test_neighbour_pairs_are_each_column_and_its_nearest():
    rng = np.random.default_rng(0)
    base = rng.normal(size=(50, 3))
    Phi = np.column_stack([base[:, 0], base[:, 1], base[:, 0] + 0.01 * base[:, 2], base[:, 1]])
    pairs = _swap.neighbour_pairs(Phi, k=1)
    assert {tuple(p) for p in pairs} == {(0, 2), (1, 3)}
    assert pairs.dtype == np.intp
    assert np.all(pairs[:, 0] < pairs[:, 1])
    assert len(_swap.neighbour_pairs(Phi, k=3)) == 6  # every pair of 4 once
    assert _swap.neighbour_pairs(Phi[:, :1]).shape == (0, 2)


def _three_bases():
    X = np.linspace(-1, 1, 20)[:, None]
    Phi = np.hstack([np.exp(-((X - c) ** 2)) for c in (-0.5, 0.0, 0.5)])
    y = (X[:, 0] > 0).astype(float)
    with pm.Model(coords={"basis": ["a", "b", "c"], "obs": range(20)}) as model:
        Phi_d = pm.Data("Phi", Phi, dims=("obs", "basis"))
        # unequal priors: the three permutations' densities differ
        log_alpha = pm.Normal("log_alpha", mu=[-1.0, 0.0, 1.0], sigma=2.0, dims="basis")
        w = pm.Normal("w", 0.0, pm.math.exp(-0.5 * log_alpha), dims="basis")
        pm.Bernoulli("y", logit_p=pm.math.dot(Phi_d, w), observed=y)
    return model


def test_swaps_alone_visit_the_permutations_in_proportion_to_the_posterior():
    model = _three_bases()
    start = {"log_alpha": np.array([-3.0, 0.0, 3.0]), "w": np.array([1.2, -0.4, 0.1])}
    axes = _swap.swap_axes(model)
    assert axes == {"log_alpha": 0, "w": 0}
    step = _swap.BasisSwap(
        model.value_vars,
        axes=axes,
        # a path, not all pairs: the selection weights' total then depends on
        # which precision sits in the middle, and the move must correct for it
        pairs=np.array([[0, 1], [1, 2]]),
        n_proposals=1,
        model=model,
        rng=np.random.default_rng(3),
    )
    logp = model.compile_logp()
    perms = list(itertools.permutations(range(3)))
    dens = np.array([np.exp(logp({k: v[list(p)] for k, v in start.items()})) for p in perms])
    expected = dens / dens.sum()
    assert expected.max() / expected.min() > 5  # the check can tell the states apart
    visits = np.zeros(len(perms))
    point = dict(start)
    order = {float(v): i for i, v in enumerate(start["log_alpha"])}
    n = 30_000
    for _ in range(n):
        point, stats = step.step(point)
        perm = tuple(order[float(v)] for v in point["log_alpha"])
        visits[perms.index(perm)] += 1
        # the weights travel with their precisions
        assert point["w"][list(perm).index(0)] == start["w"][0]
    freq = visits / n
    # a 6-state Metropolis chain: its autocorrelation widens the binomial error
    np.testing.assert_allclose(freq, expected, atol=0.02)
    assert 0.0 <= stats[0]["swap_rate"] <= 1.0


class _Stop_basis_swap(Exception):
    """Raised by the recording ``pm.sample``."""


@pytest.mark.parametrize(
    ("cls", "given", "swaps"),
    [(RVC, None, True), (RVC, 0, False), (RVR, None, False), (RVR, 8, True)],
)
def test_the_classifiers_sample_with_swaps_by_default_others_when_asked(
    cls, given, swaps, pm_sample_kwargs
):
    seen = pm_sample_kwargs
    X, y, _, _ = make_ripley(n_train=30, n_test=2, random_state=0)
    target = y if cls is RVC else X[:, 0] + 0.1 * X[:, 1]
    kw = {"nuts_sampler": "pymc", **({} if given is None else {"basis_swaps": given})}
    with pytest.raises(seen.stop):
        cls(method="nuts", gamma=2.0, random_state=0, sampler_kwargs=kw).fit(X, target)
    steps = seen.get("step") or []
    assert any(isinstance(s, _swap.BasisSwap) for s in steps) is swaps
    if swaps:
        swap, nuts = steps  # NUTS last: its lp is the recorded point's
        assert isinstance(nuts, pm.NUTS)
        assert nuts.target_accept == (0.95 if cls is RVC else 0.8)  # the model's own
        assert swap.n_proposals == (given or defaults.SWAP_PROPOSALS)
        assert swap.relevance == "log_alpha"
        assert set(swap.axes) == ({"log_alpha", "w_raw"} if cls is RVC else {"log_alpha"})
        # the classifier's proposals: the O(N) likelihood; the collapsed model: its whole density
        density = _swap.LinearLikelihood if cls is RVC else _swap.FullDensity
        assert type(swap._density) is density
        assert len(seen["initvals"]) == seen["chains"] == 2
        assert isinstance(seen["random_seed"], int)  # PyMC splits it as it would alone
        assert "target_accept" not in seen
    else:
        assert seen["target_accept"] in (0.8, 0.95)


def test_basis_swaps_below_zero_is_refused_by_name():
    X, y, _, _ = make_ripley(n_train=30, n_test=2, random_state=0)
    with pytest.raises(ValueError, match="basis_swaps"):
        RVC(method="nuts", gamma=2.0, sampler_kwargs={"basis_swaps": -1}).fit(X, y)


def test_swaps_seed_the_chains_starts_as_pm_sample_seeds_nuts_alone(monkeypatch):
    """``pm.init_nuts`` gets the per-chain seeds that ``pm.sample`` itself derives."""
    import pymc.sampling.mcmc as mcmc

    seen = []

    def spy(**kwargs):
        seen.append([int(s) for s in kwargs["random_seed"]])
        raise _Stop_basis_swap

    model = _three_bases()
    monkeypatch.setattr(mcmc, "init_nuts", spy)
    with model, pytest.raises(_Stop_basis_swap):
        # PyMC's own NUTS: with nutpie installed, pm.sample's default is nutpie
        pm.sample(chains=2, random_seed=5, progressbar=False, nuts_sampler="pymc")
    monkeypatch.setattr(pm, "init_nuts", spy)
    with pytest.raises(_Stop_basis_swap):
        _swap.nuts_with_swaps(
            model,
            n_proposals=4,
            chains=2,
            tune=10,
            random_seed=5,
            target_accept=0.9,
            initvals=None,
            compile_kwargs=None,
        )
    assert len(seen) == 2 and len(seen[0]) == 2
    assert seen[0] == seen[1]


def test_exchange_swaps_along_each_variables_basis_axis():
    model = _three_bases()
    step = _swap.BasisSwap(
        model.value_vars,
        axes={"log_alpha": 0, "w": 0},
        pairs=np.array([[0, 2]]),
        n_proposals=1,
        model=model,
    )
    step.axes = {"a": 0, "b": 1}  # a (basis,) and a (class, basis) array
    arrays = {"a": np.array([1.0, 2.0, 3.0]), "b": np.arange(6.0).reshape(2, 3)}
    step._exchange(arrays, np.array([0, 2]))
    np.testing.assert_array_equal(arrays["a"], [3.0, 2.0, 1.0])
    np.testing.assert_array_equal(arrays["b"], [[2.0, 1.0, 0.0], [5.0, 4.0, 3.0]])


def test_softmax_swaps_every_class_weight_of_a_basis(pm_sample_kwargs):
    from sklearn.datasets import load_iris

    seen = pm_sample_kwargs
    X, y = load_iris(return_X_y=True)
    with pytest.raises(seen.stop):
        RVC(method="nuts", gamma=0.5, sampler_kwargs={"nuts_sampler": "pymc"}).fit(X[::5], y[::5])
    swap = seen["step"][0]
    assert swap.axes == {"log_alpha": 0, "W_raw": 0}  # W_raw is (basis, class)


@pytest.mark.parametrize(
    ("given", "sampler", "warns"), [(None, None, False), (8, "numpyro", True)]
)
def test_swaps_choose_pymcs_nuts_and_other_samplers_warn(
    given, sampler, warns, monkeypatch, pm_sample_kwargs
):
    """With numpyro installed, None still means PyMC's NUTS for a classifier (its swaps);
    numpyro named with swaps asked for drops them, with a warning."""
    import importlib.util

    from rvm_pymc.exceptions import SamplingWarning
    from rvm_pymc.inference import _nuts

    real = importlib.util.find_spec
    monkeypatch.setattr(
        _nuts.importlib.util,
        "find_spec",
        lambda name, *a: object() if name == "numpyro" else real(name, *a),
    )
    seen = pm_sample_kwargs
    X, y, _, _ = make_ripley(n_train=30, n_test=2, random_state=0)
    kw = {"nuts_sampler": sampler, **({} if given is None else {"basis_swaps": given})}
    draws = None if sampler is None else 100  # numpyro cannot stop once converged
    est = RVC(method="nuts", gamma=2.0, random_state=0, draws=draws, sampler_kwargs=kw)
    if warns:
        with pytest.warns(SamplingWarning, match="basis_swaps=8 is ignored"):
            with pytest.raises(seen.stop):
                est.fit(X, y)
        assert seen["nuts_sampler"] == "numpyro" and "step" not in seen
    else:
        with pytest.raises(seen.stop):
            est.fit(X, y)
        assert seen["nuts_sampler"] == "pymc"
        assert isinstance(seen["step"][0], _swap.BasisSwap)


def _builder_model(kind: str, parametrization: str, slab: float | None):
    from rvm_pymc.models import classification_binary, classification_softmax

    rng = np.random.default_rng(1)
    X = rng.normal(size=(40, 2))
    Phi = np.hstack(
        [np.ones((40, 1)), np.exp(-np.square(X[:, None, :] - X[None, :12, :]).sum(-1))]
    )
    prior = {"a": 1e-4, "b": 1e-4, "slab": slab}
    if kind == "binary":
        return classification_binary(
            Phi, (X[:, 0] > 0).astype(int), parametrization=parametrization, prior=prior
        )
    y = np.digitize(X[:, 0], [-0.5, 0.5])
    return classification_softmax(Phi, y, parametrization=parametrization, prior=prior)


def _random_start(model, seed: int) -> dict:
    """The model's initial point moved at random, the precisions toward relevance."""
    rng = np.random.default_rng(seed)
    return {
        k: v + rng.normal(size=np.shape(v)) - (2.0 if k == "log_alpha" else 0.0)
        for k, v in model.initial_point().items()
    }


def _sixteen_swaps(model, axes, pairs, seed: int, density=None) -> _swap.BasisSwap:
    return _swap.BasisSwap(
        [v for v in model.value_vars if v.name in axes],
        axes=axes,
        pairs=pairs,
        n_proposals=16,
        model=model,
        rng=np.random.default_rng(seed),
        density=density,
    )


@pytest.mark.parametrize(
    ("kind", "parametrization", "slab"),
    [("binary", "centred", None), ("binary", "non_centred", 5.0), ("softmax", "non_centred", 5.0)],
)
def test_the_classifiers_swaps_give_the_same_chain_through_the_linear_likelihood(
    kind, parametrization, slab
):
    """The O(N) likelihood update takes every decision the whole log density takes."""
    model = _builder_model(kind, parametrization, slab)
    axes = _swap.swap_axes(model)
    split = _swap.linear_likelihood(model, kind, axes)
    assert isinstance(split, _swap.LinearLikelihood)
    pairs = _swap.neighbour_pairs(np.asarray(model["Phi"].get_value()))
    start = _random_start(model, seed=2)
    runs = []
    for density in (None, split):
        step = _sixteen_swaps(model, axes, pairs, seed=4, density=density)
        point, rates = dict(start), []
        for _ in range(20):
            point, stats = step.step(point)
            rates.append(stats[0]["swap_rate"])
        runs.append((point, rates))
    (p_full, r_full), (p_split, r_split) = runs
    assert r_full == r_split
    assert 0.0 < np.mean(r_full) < 1.0  # some swaps accepted, some refused
    for name in axes:
        np.testing.assert_array_equal(p_full[name], p_split[name])
    assert not np.array_equal(p_full["log_alpha"], start["log_alpha"])


def test_linear_likelihood_refuses_a_model_whose_likelihood_is_not_phi_w_alone():
    model = _builder_model("binary", "centred", None)
    axes = _swap.swap_axes(model)
    Phi = np.asarray(model["Phi"].get_value())
    y = np.asarray(model["y"].get_value())
    from rvm_pymc.models._likelihoods import bernoulli_logit

    with pm.Model(coords=model.coords) as other:
        Phi_d = pm.Data("Phi", Phi, dims=("obs", "basis"))
        y_d = pm.Data("y", y, dims="obs")
        log_alpha = pm.Normal("log_alpha", 0.0, 2.0, dims="basis")
        w = pm.Normal("w", 0.0, pm.math.exp(-0.5 * log_alpha), dims="basis")
        bernoulli_logit("y_obs", Phi_d @ w + 0.3 * Phi_d[:, 0] * w[1], y_d)
    assert _swap.linear_likelihood(other, "binary", axes) is None
    assert _swap.linear_likelihood(model, "regression_joint", axes) is None


def _reference_step(step, density, point, rng):
    """``BasisSwap.step`` with every selection weight and total recomputed at each proposal."""
    arrays = {k: np.array(v, dtype=float, copy=True) for k, v in point.items()}
    args = [arrays[v.name] for v in step._inputs]

    def weights():
        r = 1.0 / (1.0 + np.exp(np.clip(arrays["log_alpha"], -50.0, 50.0)))
        return _swap.EPS + np.maximum(r[step.pairs[:, 0]], r[step.pairs[:, 1]])

    logp = density.start(args)
    for u_pick, u_accept in rng.random((step.n_proposals, 2)):
        w = weights()
        k = int(np.searchsorted(np.cumsum(w), u_pick * w.sum(), side="right"))
        _swap.exchange(arrays, step.axes, step.pairs[k])
        new = density.propose(args, step.pairs[k])
        if np.log(u_accept) < new - logp + np.log(w.sum()) - np.log(weights().sum()):
            logp = new
        else:
            _swap.exchange(arrays, step.axes, step.pairs[k])
    return arrays


def test_the_incremental_selection_weights_give_the_chain_of_a_full_recomputation():
    """Updating only the pairs a swap touches (and the total) changes no decision."""
    model = _builder_model("binary", "non_centred", 5.0)
    axes = _swap.swap_axes(model)
    pairs = _swap.neighbour_pairs(np.asarray(model["Phi"].get_value()))
    step = _sixteen_swaps(model, axes, pairs, seed=5)
    density = _swap.FullDensity(model)
    rng_ref = np.random.default_rng(5)
    point = _random_start(model, seed=6)
    moved = 0
    for _ in range(25):
        want = _reference_step(step, density, point, rng_ref)
        got, _ = step.step(point)
        for name in axes:
            np.testing.assert_array_equal(got[name], want[name])
        moved += not np.array_equal(got["log_alpha"], point["log_alpha"])
        point = got
    assert moved >= 10  # the chain moves: the test compares decisions, not a standstill


def test_linear_likelihood_gives_none_for_a_layout_it_cannot_read():
    """A softmax model of one's own with float labels: the whole log density, no error."""
    model = _builder_model("softmax", "centred", None)
    Phi = np.asarray(model["Phi"].get_value())
    y = np.asarray(model["y"].get_value()).astype(float)
    from rvm_pymc.models._likelihoods import categorical_logit

    with pm.Model(coords=model.coords) as other:
        Phi_d = pm.Data("Phi", Phi, dims=("obs", "basis"))
        y_d = pm.Data("y", y, dims="obs")
        log_alpha = pm.Normal("log_alpha", 0.0, 2.0, dims="basis")
        W = pm.Normal("W", 0.0, pm.math.exp(-0.5 * log_alpha)[:, None], dims=("basis", "class"))
        categorical_logit("y_obs", Phi_d @ W, y_d)
    assert _swap.linear_likelihood(other, "softmax", _swap.swap_axes(other)) is None


def test_the_rule_checks_a_user_models_own_free_variables():
    """A Student-t model's free ``nu`` is checked with the weights and the log precisions
    (tests/test_user_likelihoods.py checks the fit's own diagnostics through the API)."""
    import pytensor.tensor as pt

    with pm.Model(coords={"basis": ["1", "x"], "obs": range(5)}) as model:
        Phi = pm.Data("Phi", np.column_stack([np.ones(5), np.arange(5.0)]), dims=("obs", "basis"))
        t = pm.Data("t", np.arange(5.0), dims="obs")
        la = pm.Normal("log_alpha", 0.0, 1.0, dims="basis")
        w = pm.Normal("w", 0.0, pt.exp(-0.5 * la), dims="basis")
        lb = pm.Normal("log_beta", 0.0, 1.0)
        nu = pm.Gamma("nu", 2.0, 0.1)
        pm.StudentT("t_obs", nu=nu, mu=Phi @ w, sigma=pt.exp(-0.5 * lb), observed=t, dims="obs")
    run = NutsRun(draws=1000, chains=2, until_converged=True)
    rule = stop_rule(model, model_spec(model), run, "pymc", collapsed=False)
    assert set(rule.names) == {"w", "log_alpha", "log_beta", "nu"}


def test_separated_chains_named_with_their_hint():
    """Chains in two modes are named, with the caller's advice; slow chains of one mode
    (an AR(1) at phi = 0.99, whose R-hat misses) and stuck chains are not."""
    rng = np.random.default_rng(0)
    mixed = rng.normal(size=(2, 500))
    apart = mixed + np.array([[0.0], [5.0]])  # chain 1 five sds away
    slow = np.empty((2, 500))
    slow[:, 0] = rng.normal(size=2)
    for t in range(1, 500):
        slow[:, t] = 0.99 * slow[:, t - 1] + np.sqrt(1 - 0.99**2) * rng.normal(size=2)
    stuck = np.array([[1.0] * 500, [2.0] * 500])
    assert separated_chains({"a": mixed, "b": apart, "v": rng.normal(size=(2, 500, 3))}) == ["b"]
    assert separated_chains({"s": slow, "stuck": stuck}) == []
    hints = {"b": "choose one mode"}
    match = r"chains of \['b'\] appear to sit in separate.*one mode"
    with pytest.warns(SamplingWarning, match=match) as record:
        check_sampling({"a": mixed, "b": apart}, 0, hints=hints)
    ess_messages = [str(r.message) for r in record if "effective sample size" in str(r.message)]
    assert ess_messages and not any("draw more" in m for m in ess_messages)  # draws won't help
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        diag = check_sampling({"a": mixed}, 0, min_ess=100)
    assert diag["max_rhat"] < 1.01
    with pytest.warns(SamplingWarning) as record:  # R-hat misses, but no mode is named
        check_sampling({"s": slow}, 0)
    messages = [str(r.message) for r in record]
    assert any("R-hat" in m for m in messages)
    assert not any("separate modes" in m for m in messages)
