"""Simulation-based calibration of the samplers (the calibrations are slow: ~10-30 minutes each).

The ranks of prior draws among posterior draws are uniform when the sampler draws
from the posterior (Talts et al. 2018); a fit whose likelihood is wrong (data with
1.5 times the noise sd it assumes) or whose prior is wrong (the classifier's weights
drawn at half the prior sd it assumes) must fail the same test.  The procedure is
``benchmarks/bench_sbc.py`` (which also draws the rank histograms).  The fast tests
check its rank machinery on a conjugate normal model, without PyMC.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import SimpleNamespace
from typing import ClassVar

import numpy as np
import pytest


def _sbc():
    path = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_sbc.py"
    spec = importlib.util.spec_from_file_location("bench_sbc", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _normal_sbc(sbc, reps: int, shrink: float):
    """SBC of ``w ~ N(0, 1)``, ``y ~ N(w, 1)``, whose posterior is ``N(shrink * y, 1/2)``
    when ``shrink = 1/2``; 2 chains x 100 exact draws per replication."""

    def draw(rng):
        w = rng.standard_normal(2)
        return {"w": w}, w + rng.standard_normal(2)

    class Tree(dict):  # what run_sbc reads of a DataTree, without building one
        attrs: ClassVar[dict] = {}

    class Posterior(dict):
        sizes: ClassVar[dict] = {"chain": 2, "draw": 100}

    def fit(y, seed):
        rng = np.random.default_rng(seed)
        w = shrink * y + np.sqrt(0.5) * rng.standard_normal((2, 100, 2))
        return Tree(posterior=Posterior(w=SimpleNamespace(values=w)))

    return sbc.run_sbc(reps, np.random.default_rng(0), draw, fit, progress=False)


def test_sbc_ranks_pass_an_exact_posterior_and_fail_a_wrong_one():
    sbc = _sbc()
    result, diag = _normal_sbc(sbc, 300, 0.5)
    assert set(result) == {"w_0", "w_1"} and len(diag) == 300
    assert all(((r >= 0) & (r <= sbc.RANK_DRAWS)).all() for r in result.values())
    assert sbc.report(result)[1] > 0.01 / 2
    wrong, _ = _normal_sbc(sbc, 300, 1.0)  # the posterior mean at y: too far out
    assert sbc.report(wrong)[1] < 0.01 / 2


def test_classification_prior_draws_have_both_classes_and_scale_the_weights():
    from rvm_pymc.priors import resolve_prior

    sbc = _sbc()
    prior = resolve_prior({"slab": 5.0}, default="weakly_informative")
    Phi = sbc.design(sbc.N_CLS)
    for factor in (1.0, 0.5):
        rng = np.random.default_rng(3)
        truth, y, _ = sbc.simulate_classification(rng, Phi, prior, weight_factor=factor)
        assert set(truth) == {"log_alpha", "w"} and truth["w"].shape == (Phi.shape[1],)
        assert 0 < y.sum() < y.size
        if factor == 1.0:
            w1 = truth["w"]
    np.testing.assert_allclose(truth["w"], 0.5 * w1)  # same stream, half the weights


@pytest.mark.slow
@pytest.mark.pymc
def test_collapsed_sampler_is_calibrated():
    sbc = _sbc()
    result, _ = sbc.ranks(200, seed=1, progress=False)
    _, p_min = sbc.report(result)
    assert len(result) == 7 and all(len(r) == 200 for r in result.values())
    assert p_min > 0.01 / len(result), result


@pytest.mark.slow
@pytest.mark.pymc
def test_a_wrong_likelihood_fails_calibration():
    sbc = _sbc()
    result, _ = sbc.ranks(100, seed=2, noise_factor=1.5, progress=False)
    _, p_min = sbc.report(result)
    assert p_min < 0.01 / len(result)


@pytest.mark.slow
@pytest.mark.pymc
def test_classification_nuts_is_calibrated_with_the_slab():
    sbc = _sbc()
    result, diag, _ = sbc.classification_ranks(200, seed=1, slab=5.0, progress=False)
    _, p_min = sbc.report(result)
    assert len(result) == 6 and all(len(r) == 200 for r in result.values())
    assert len(diag) == 200
    assert p_min > 0.01 / len(result), result


@pytest.mark.slow
@pytest.mark.pymc
def test_a_wrong_weight_prior_fails_classification_calibration():
    sbc = _sbc()
    result, _, _ = sbc.classification_ranks(
        100, seed=2, slab=5.0, weight_factor=0.5, progress=False
    )
    _, p_min = sbc.report(result)
    assert p_min < 0.01 / len(result)
