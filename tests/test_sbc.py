"""Simulation-based calibration of the collapsed regression sampler (slow: ~10-30 minutes).

The ranks of prior draws among posterior draws are uniform when the sampler draws
from the posterior (Talts et al. 2018); a fit whose likelihood is wrong (data with
1.5 times the noise sd it assumes) must fail the same test.  The procedure is
``benchmarks/bench_sbc.py`` (which also draws the rank histograms).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.pymc]


def _sbc():
    path = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_sbc.py"
    spec = importlib.util.spec_from_file_location("bench_sbc", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_collapsed_sampler_is_calibrated():
    sbc = _sbc()
    result = sbc.ranks(200, seed=1, progress=False)
    _, p_min = sbc.report(result)
    assert len(result) == 7 and all(len(r) == 200 for r in result.values())
    assert p_min > 0.01 / len(result), result


def test_a_wrong_likelihood_fails_calibration():
    sbc = _sbc()
    result = sbc.ranks(100, seed=2, noise_factor=1.5, progress=False)
    _, p_min = sbc.report(result)
    assert p_min < 0.01 / len(result)
