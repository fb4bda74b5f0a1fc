"""gamma="evidence": the grid brackets the width, refined on a continuous log gamma.

The refinement (rvm_pymc.estimators._search) starts from the best grid width,
warm-starts every fit from the nearest width fitted, and stops at a local
maximum of the evidence (no higher at gamma * 1.1 and gamma / 1.1).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from rvm_pymc.datasets import make_ripley, make_sinc
from rvm_pymc.estimators import RVC, RVR
from rvm_pymc.exceptions import ConvergenceWarning

GRID = 9  # the default grid: 9 widths, "scale" times logspace(-2, 2, 9)


@pytest.fixture(scope="module")
def sinc3():
    """The case of issue 27: the grid picked 0.097 while 0.316 had more evidence."""
    d = make_sinc(n_train=1000, noise_sd=0.1, random_state=3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning on this problem
        est = RVR(gamma="evidence").fit(d.X_train, d.t_train)
    return d, est


def test_search_beats_the_grid_on_sinc_seed_3(sinc3):
    _, est = sinc3
    path = est.evidence_path_
    grid_best = path["log_evidence"][:GRID].max()
    assert path["gamma"].size > GRID  # the refinement fitted more widths
    assert est.log_evidence_ > grid_best + 0.5
    assert est.log_evidence_ == pytest.approx(path["log_evidence"].max(), rel=1e-12)
    assert est.gamma_ not in path["gamma"][:GRID]
    assert est.converged_ and path["converged"].all()


def test_the_width_is_a_local_maximum(sinc3):
    """The evidence at gamma * 1.1 and gamma / 1.1, fitted from the chosen fit, is not higher."""
    _, est = sinc3
    path = est.evidence_path_
    for factor in (1.1, 1 / 1.1):
        near = np.flatnonzero(np.isclose(path["gamma"], est.gamma_ * factor, rtol=1e-9))
        assert near.size == 1, factor
        assert path["log_evidence"][near[0]] <= est.log_evidence_


def test_the_search_is_reproducible(sinc3):
    d, est = sinc3
    again = RVR(gamma="evidence").fit(d.X_train, d.t_train)
    for key in ("gamma", "log_evidence", "converged"):
        np.testing.assert_array_equal(again.evidence_path_[key], est.evidence_path_[key])
    assert again.gamma_ == est.gamma_
    np.testing.assert_array_equal(again.coef_, est.coef_)


def test_edge_of_the_grid_still_warns():
    d = make_sinc(n_train=100, noise_sd=0.1, random_state=0)
    grid = [1e-4, 3e-4, 1e-3]  # kernels far too wide: the narrowest is best
    with pytest.warns(ConvergenceWarning, match="largest gamma of gamma_grid"):
        est = RVR(gamma="evidence", gamma_grid=grid).fit(d.X_train, d.t_train)
    assert est.gamma_ == pytest.approx(1e-3)


def test_the_classifier_shares_the_search():
    d = make_ripley(n_train=150, n_test=10, random_state=0)
    grid = [0.3, 1.0, 3.0, 10.0, 30.0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # an edge of this small grid
        est = RVC(gamma="evidence", gamma_grid=grid).fit(d.X_train, d.t_train)
    path = est.evidence_path_
    np.testing.assert_array_equal(path["gamma"][: len(grid)], grid)
    assert path["gamma"].size > len(grid)
    assert est.log_evidence_ >= path["log_evidence"][: len(grid)].max()
    assert est.log_evidence_ == pytest.approx(path["log_evidence"].max(), rel=1e-12)
