"""The reference solver never forms an N x N matrix: traced memory stays O(N M).

``tracemalloc`` sees NumPy's array buffers, so the peak of traced memory during a
call bounds the largest array it creates.  With N = 3000 observations and
M = 21 columns an N x N float64 array is 72 MB (float32 36 MB, bool 9 MB); the
bound of 8 MB is far below any of them and about 3 times the largest peak
measured (2.4 MB, the fast classifier; the inputs are 0.5 MB).
"""

from __future__ import annotations

import tracemalloc
import warnings

import numpy as np
import pytest

from rvm_pymc.reference import (
    dense_log_marginal_likelihood,
    fit_classification,
    fit_regression,
    log_evidence,
    log_marginal_likelihood,
)

N = 3000
BOUND = 8_000_000  # bytes; N * N * 8 = 72e6


@pytest.fixture(scope="module")
def problem():
    rng = np.random.default_rng(1)
    x = rng.uniform(-3.0, 3.0, (N, 2))
    centres = rng.uniform(-3.0, 3.0, (20, 2))
    Phi = np.column_stack([np.ones(N), np.exp(-((x[:, None] - centres[None]) ** 2).sum(-1))])
    t = np.sin(x[:, 0]) + 0.1 * rng.standard_normal(N)
    y = (x[:, 0] + 0.3 * rng.standard_normal(N) > 0).astype(int)
    return Phi, t, y


def traced_peak(func) -> int:
    """Peak traced memory (bytes) while ``func()`` runs, above what was allocated before."""
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        func()
        return tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()


def test_the_probe_sees_an_n_by_n_array(problem):
    """The oracle that does form C = I/beta + Phi A^-1 Phi^T exceeds the bound."""
    Phi, t, _ = problem
    alpha = np.ones(Phi.shape[1])
    assert traced_peak(lambda: dense_log_marginal_likelihood(Phi, t, alpha, 2.0)) > N * N * 8
    assert traced_peak(lambda: np.zeros((N, N), dtype=bool)) > BOUND


def test_log_evidence_is_o_n_m(problem):
    Phi, t, _ = problem
    alpha = np.ones(Phi.shape[1])
    assert traced_peak(lambda: log_marginal_likelihood(Phi, t, alpha, 2.0)) < BOUND
    assert traced_peak(lambda: log_evidence(Phi, t, alpha, 2.0, "weakly_informative")) < BOUND


@pytest.mark.parametrize("method", ["fast", "mackay", "em"])
def test_fit_regression_and_predict_are_o_n_m(problem, method):
    Phi, t, _ = problem
    out = {}

    def fit():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # convergence is not the point here
            out["res"] = fit_regression(Phi, t, method=method, max_iter=300)

    assert traced_peak(fit) < BOUND
    assert traced_peak(lambda: out["res"].predict(Phi, return_std=True)) < BOUND


@pytest.mark.parametrize("method", ["fast", "mackay"])
def test_fit_classification_and_predict_are_o_n_m(problem, method):
    Phi, _, y = problem
    out = {}

    def fit():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out["res"] = fit_classification(Phi, y, method=method, max_iter=300)

    assert traced_peak(fit) < BOUND
    assert traced_peak(lambda: out["res"].predict_proba(Phi)) < BOUND
