"""The reference solver runs its loops with one BLAS thread and restores the limits after."""

from __future__ import annotations

import numpy as np
import pytest
from threadpoolctl import threadpool_info

import rvm_pymc.reference.classification as classification
import rvm_pymc.reference.regression as regression
from rvm_pymc.reference import fit_classification, fit_regression
from rvm_pymc.reference._threads import single_blas_thread


def _blas_threads():
    return [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"]


def test_single_blas_thread_limits_and_restores():
    before = _blas_threads()
    if not before:
        pytest.skip("no controllable BLAS library loaded")
    with single_blas_thread():
        assert _blas_threads() == [1] * len(before)
    assert _blas_threads() == before
    with pytest.raises(RuntimeError), single_blas_thread():
        raise RuntimeError("boom")
    assert _blas_threads() == before  # restored on an exception too


@pytest.mark.parametrize("method", ["fast", "mackay", "em"])
def test_solver_loops_run_with_one_blas_thread(monkeypatch, method):
    if not _blas_threads():
        pytest.skip("no controllable BLAS library loaded")
    seen = []
    for module in (regression, classification):
        inner = module.fast_sequential if module is regression else module.fast_classification
        name = "fast_sequential" if module is regression else "fast_classification"

        def spy(*args, _inner=inner, **kwargs):
            seen.append(_blas_threads())
            return _inner(*args, **kwargs)

        monkeypatch.setattr(module, name, spy)
    full = [regression._full_reestimation, classification._full_reestimation]

    def spy_full(*args, _inner, **kwargs):
        seen.append(_blas_threads())
        return _inner(*args, **kwargs)

    monkeypatch.setattr(
        regression, "_full_reestimation", lambda *a, **k: spy_full(*a, _inner=full[0], **k)
    )
    monkeypatch.setattr(
        classification, "_full_reestimation", lambda *a, **k: spy_full(*a, _inner=full[1], **k)
    )
    rng = np.random.default_rng(0)
    Phi = rng.standard_normal((40, 5))
    fit_regression(Phi, Phi[:, 0] + 0.1 * rng.standard_normal(40), method=method)
    fit_classification(Phi, (Phi[:, 1] > 0).astype(int), method=method)
    assert len(seen) == 2
    assert all(set(threads) == {1} for threads in seen)
