"""NUTS until converged: sampling stops at the first checkpoint whose draws pass the check.

:class:`rvm_pymc.inference._stop.StopWhenConverged` is first driven by hand, on
chains of known draws recorded as PyMC records them (one iteration at a time,
in parallel, one chain after the other, or two at a time), then through
``pm.sample`` and the estimators: ``draws=None`` makes NUTS stop early, an
integer keeps its length, the draws kept are the start of the whole run and
do not depend on ``cores``.
"""

from __future__ import annotations

import logging
import warnings
from types import SimpleNamespace

import numpy as np
import pytest
import xarray as xr

from rvm_pymc._core.convergence import passes_checks, sampling_diagnostics
from rvm_pymc.datasets import make_sinc
from rvm_pymc.estimators import RVR
from rvm_pymc.inference._nuts import _resolve_sampler
from rvm_pymc.inference._options import NutsRun
from rvm_pymc.inference._stop import (
    CHECK_EVERY,
    FIRST_CHECK,
    Converged,
    StopWhenConverged,
    stop_rule,
)
from rvm_pymc.inference._weights import ChainDraws, chain_seeds
from rvm_pymc.models.spec import model_spec

pytestmark = pytest.mark.filterwarnings(  # PyMC forks a process per chain
    "ignore:This process .* is multi-threaded, use of fork:DeprecationWarning"
)
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


def test_a_run_no_longer_than_the_first_checkpoint_is_never_checked():
    chains, rule = _chains(), _rule(draws=FIRST_CHECK)
    _drive(chains, rule, "parallel")
    assert rule.checks == [] and rule.stopped_at is None


def test_derived_draws_are_checked_with_the_recorded_ones():
    """Chains that agree, whose derived draws (a collapsed sampler's weights) do not."""

    def rows(d, rng, chain, start):
        return d["x"] + 0.5 * chain + 0.1 * rng.standard_normal(d["x"].shape)

    derived = ChainDraws(rows, lambda c: np.random.default_rng([3, c]))
    chains, rule = _chains(), _rule(derived=("w", derived))
    _drive(chains, rule, "parallel")
    assert rule.stopped_at is None
    assert all(d["max_rhat"] > 1.01 for _, d in rule.checks)


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


def test_each_chain_has_its_own_weight_generator():
    rngs = chain_seeds(7)
    a, b = rngs(0).standard_normal(5), rngs(1).standard_normal(5)
    assert not np.array_equal(a, b)
    np.testing.assert_array_equal(a, rngs(0).standard_normal(5))


def test_a_rule_needs_a_variable():
    with pytest.raises(ValueError, match="at least one variable"):
        StopWhenConverged([], draws=10, tune=0, chains=2, rhat_threshold=1.01, min_ess=1)


def test_until_converged_must_be_a_bool_or_none():
    with pytest.raises(ValueError, match="until_converged must be True, False or None"):
        NutsRun(until_converged="yes")


# ------------------------------------------------------- what the rule checks, when


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


@pytest.mark.parametrize("which", ["marginal", "marginal_rbf", "joint", "binary", "softmax"])
def test_the_rule_checks_what_the_fit_reports(which):
    """The variables of ``nuts_result``'s check: the weights, log_alpha, log_beta, the width."""
    model, collapsed, expected = _models()[which]
    spec = model_spec(model)
    weights = None
    if collapsed:
        weights = ChainDraws(lambda d, rng, c, s: d["log_alpha"], chain_seeds(0))
    on = NutsRun(until_converged=True, chains=2)
    rule = stop_rule(model, spec, on, "pymc", collapsed, weights)
    assert set(rule.names) | ({rule.derived[0]} if rule.derived else set()) == expected
    for off in (NutsRun(until_converged=False), NutsRun(until_converged=True, chains=1)):
        assert stop_rule(model, spec, off, "pymc", collapsed, weights) is None
    auto = NutsRun(until_converged=None, chains=2)
    assert stop_rule(model, spec, auto, "pymc", collapsed, weights) is not None


def test_another_sampler_refuses_to_stop_and_runs_the_whole_length_otherwise():
    """nutpie and numpyro take no callback: until_converged=True is refused, naming what
    to pass instead; None runs their whole length without a rule."""
    model, _, _ = _models()["binary"]
    spec = model_spec(model)
    for sampler in ("nutpie", "numpyro"):
        with pytest.raises(ValueError, match=f"until_converged=True .*{sampler!r}.* until_conv"):
            _resolve_sampler(sampler, {}, stops=True)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert stop_rule(model, spec, NutsRun(until_converged=None), sampler, False) is None


def test_the_default_sampler_is_pymc_when_the_run_stops(monkeypatch):
    """With numpyro and nutpie "installed", nuts_sampler=None picks one of them unless the
    run stops once converged, which only PyMC's sampler can."""
    from rvm_pymc.inference import _nuts

    found = object()
    monkeypatch.setattr(_nuts.importlib.util, "find_spec", lambda name: found)
    assert _resolve_sampler(None, {}) == "numpyro"
    assert _resolve_sampler(None, {}, n_bases=300) == "nutpie"
    assert _resolve_sampler(None, {}, stops=True) == "pymc"
    assert _resolve_sampler(None, {}, n_bases=300, stops=True) == "pymc"


@pytest.mark.parametrize("sampler", ["numpyro", "nutpie"])
def test_the_estimators_refuse_draws_none_with_a_sampler_that_cannot_stop(sampler):
    """Refused by the parameter checks, before any fitting, whether or not it is installed."""
    X, t = np.linspace(0, 1, 8)[:, None], np.arange(8.0)
    est = RVR(method="nuts", gamma=1.0, sampler_kwargs={"nuts_sampler": sampler})
    with pytest.raises(ValueError, match=f"draws=None stops NUTS.*{sampler!r}.*number of draws"):
        est.fit(X, t)
    asked = RVR(
        method="nuts", draws=50, sampler_kwargs={"nuts_sampler": sampler, "until_converged": True}
    )
    with pytest.raises(ValueError, match="until_converged=True stops NUTS"):
        asked.fit(X, t)


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


# ------------------------------------------------------- through PyMC and the estimators


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


@pytest.mark.filterwarnings("ignore::rvm_pymc.SamplingWarning")
def test_given_draws_keep_the_whole_length(sinc):
    given = _fit(sinc, draws=600)
    assert given.idata_["posterior"].sizes["draw"] == 600
    assert "max_draws" not in given.idata_.attrs
