"""NUTS until converged: sampling stops at the first checkpoint whose draws pass the check.

:class:`rvm_pymc.inference._stop.StopWhenConverged` is first driven by hand, on
chains of known draws recorded as PyMC records them (one iteration at a time,
in parallel or one chain after the other), then through ``pm.sample`` and the
estimators: ``draws=None`` makes NUTS stop early, an integer keeps its length,
and the draws kept do not depend on ``cores``.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import xarray as xr

from rvm_pymc.datasets import make_sinc
from rvm_pymc.estimators import RVR
from rvm_pymc.inference._stop import CHECK_EVERY, FIRST_CHECK, Converged, StopWhenConverged
from rvm_pymc.inference._weights import ChainDraws
from rvm_pymc.models.data import passes_checks, sampling_diagnostics

pytestmark = pytest.mark.filterwarnings(  # PyMC forks a process per chain
    "ignore:This process .* is multi-threaded, use of fork:DeprecationWarning"
)
TUNE, DRAWS = 20, 2000


class _Chain:
    """A stand-in for PyMC's NDArray trace: preallocated arrays, ``draw_idx`` recorded."""

    def __init__(self, values: np.ndarray, diverging: np.ndarray) -> None:
        self.samples = {"x": values}
        self.diverging = diverging
        self.draw_idx = 0
        self.stat_names = {"diverging", "tree_size"}

    def __len__(self) -> int:
        return self.draw_idx

    def get_values(self, name: str, burn: int = 0) -> np.ndarray:
        return self.samples[name][burn:]

    def get_sampler_stats(self, name: str, burn: int = 0) -> np.ndarray:
        assert name == "diverging"
        return self.diverging[burn:]


def _chains(offset: float = 0.0, rho: float = 0.0, diverge_at: int | None = None, seed=0):
    """Two chains of AR(1) draws (coefficient ``rho``) of 3 variables; the second's
    mean shifted by ``offset``; a divergence at draw ``diverge_at`` (after tuning)."""
    rng = np.random.default_rng(seed)
    out = []
    for c in range(2):
        z = rng.standard_normal((TUNE + DRAWS, 3))
        for i in range(1, z.shape[0]):
            z[i] = rho * z[i - 1] + np.sqrt(1 - rho**2) * z[i]
        div = np.zeros(TUNE + DRAWS, dtype=bool)
        if diverge_at is not None and c == 1:
            div[TUNE + diverge_at] = True
        out.append(_Chain(z + c * offset, div))
    return out


def _drive(chains, rule, schedule: str) -> None:
    """Record every iteration and call ``rule`` after each, as ``pm.sample`` does:
    the chains in turn (``"parallel"``) or one after the other (``"sequential"``)."""
    total = TUNE + DRAWS
    order = (
        [(c, i) for i in range(total) for c in range(len(chains))]
        if schedule == "parallel"
        else [(c, i) for c in range(len(chains)) for i in range(total)]
    )
    try:
        for c, i in order:
            chains[c].draw_idx += 1
            rule(chains[c], SimpleNamespace(chain=c, tuning=i < TUNE))
    except Converged:
        pass


def _rule(**kw) -> StopWhenConverged:
    return StopWhenConverged(
        ["x"], draws=DRAWS, tune=TUNE, chains=2, rhat_threshold=1.01, min_ess=400.0, **kw
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


@pytest.mark.parametrize("schedule", ["parallel", "sequential"])
def test_the_draws_kept_do_not_depend_on_how_the_chains_are_scheduled(schedule):
    chains, rule = _chains(rho=0.6), _rule()  # about 0.25 ESS a draw: not at the first check
    _drive(chains, rule, schedule)
    assert rule.stopped_at is not None and rule.stopped_at > FIRST_CHECK
    assert (rule.stopped_at - FIRST_CHECK) % CHECK_EVERY == 0
    assert [len(c) for c in chains] == [TUNE + rule.stopped_at] * 2
    # every earlier checkpoint failed the check, on the draws of that checkpoint
    assert [k for k, _ in rule.checks] == list(
        range(FIRST_CHECK, rule.stopped_at + 1, CHECK_EVERY)
    )
    assert not any(passes_checks(d, 1.01, 400.0) for _, d in rule.checks[:-1])
    other, again = _chains(rho=0.6), _rule()
    _drive(other, again, "sequential" if schedule == "parallel" else "parallel")
    assert again.stopped_at == rule.stopped_at


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


def test_no_check_before_every_chain_has_finished_tuning():
    chains, rule = _chains(), _rule(first=1)
    for _i in range(TUNE):
        chains[0].draw_idx += 1
        rule(chains[0], SimpleNamespace(chain=0, tuning=True))
    for _i in range(TUNE + 5):  # the first chain is ahead; the second still tunes
        chains[0].draw_idx += 1
        rule(chains[0], SimpleNamespace(chain=0, tuning=False))
    assert rule.checks == []


def test_chain_draws_are_the_same_in_one_call_or_several():
    """The collapsed samplers' weights: each chain continues its own generator."""
    x = np.random.default_rng(0).standard_normal((2, 700, 3))
    calls = []

    def rows(d, rng):
        calls.append(len(d["x"]))
        return d["x"] + rng.standard_normal(d["x"].shape)

    def make():
        return ChainDraws(rows, lambda c: np.random.default_rng([5, c]))

    once = make().upto({"x": x})
    split = make()
    part = split.upto({"x": x[:, :300]})
    np.testing.assert_array_equal(part, once[:, :300])
    calls.clear()
    np.testing.assert_array_equal(split.upto({"x": x}), once)
    assert calls == [400, 400]  # only the new rows of each chain
    np.testing.assert_array_equal(split.upto({"x": x[:, :500]}), once[:, :500])
    assert calls == [400, 400]
    assert not np.array_equal(once[0], once[1] - x[1] + x[0])  # chains draw apart


def test_a_rule_needs_a_variable():
    with pytest.raises(ValueError, match="at least one variable"):
        StopWhenConverged([], draws=10, tune=0, chains=2, rhat_threshold=1.01, min_ess=1)


# ------------------------------------------------------- through PyMC and the estimators


@pytest.fixture(scope="module")
def sinc():
    d = make_sinc(n_train=30, noise_sd=0.1, random_state=0)
    return d.X_train, d.t_train


def _fit(sinc, **kw):
    opts = {"progressbar": False, **kw.pop("sampler_kwargs", {})}
    return RVR(method="nuts", gamma=0.5, random_state=1, sampler_kwargs=opts, **kw).fit(*sinc)


def test_estimator_nuts_stops_when_converged_with_the_same_draws_on_any_cores(sinc):
    fits = {c: _fit(sinc, sampler_kwargs={"cores": c}) for c in (2, 1)}
    for est in fits.values():
        post, attrs = est.idata_["posterior"], est.idata_.attrs
        kept = post.sizes["draw"]
        assert kept < 2000 and (kept - FIRST_CHECK) % CHECK_EVERY == 0
        assert attrs["max_draws"] == 2000
        assert est.converged_
        assert est.n_iter_ == 1000 + kept
        assert est.idata_["sample_stats"].sizes["draw"] == kept
    np.testing.assert_array_equal(
        fits[1].idata_["posterior"]["w"].values, fits[2].idata_["posterior"]["w"].values
    )
    np.testing.assert_array_equal(
        fits[1].idata_["posterior"]["log_alpha"].values,
        fits[2].idata_["posterior"]["log_alpha"].values,
    )


@pytest.mark.filterwarnings("ignore::rvm_pymc.SamplingWarning")
def test_given_draws_or_until_converged_false_keep_the_whole_length(sinc):
    given = _fit(sinc, draws=600)
    assert given.idata_["posterior"].sizes["draw"] == 600
    assert "max_draws" not in given.idata_.attrs
    whole = _fit(sinc, draws=None, tune=300, sampler_kwargs={"until_converged": False})
    assert whole.idata_["posterior"].sizes["draw"] == 2000


def test_until_converged_must_be_a_bool():
    from rvm_pymc.inference._options import NutsRun

    with pytest.raises(ValueError, match="until_converged must be True or False"):
        NutsRun(until_converged="yes")
