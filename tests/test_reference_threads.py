"""Reference fits run with one BLAS thread (the estimators: the whole fit), restored after."""

from __future__ import annotations

import numpy as np
import pytest
from threadpoolctl import threadpool_info

import rvm_pymc.reference._laplace_fit as _laplace_fit
import rvm_pymc.reference.regression as regression
from rvm_pymc._core.threads import single_blas_thread
from rvm_pymc.reference import fit_classification, fit_regression


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
    for module in (regression, _laplace_fit):
        inner = module.fast_sequential if module is regression else module.fast_classification
        name = "fast_sequential" if module is regression else "fast_classification"

        def spy(*args, _inner=inner, **kwargs):
            seen.append(_blas_threads())
            return _inner(*args, **kwargs)

        monkeypatch.setattr(module, name, spy)
    full = [regression.full_reestimation, _laplace_fit.laplace_reestimation]

    def spy_full(*args, _inner, **kwargs):
        seen.append(_blas_threads())
        return _inner(*args, **kwargs)

    monkeypatch.setattr(
        regression, "full_reestimation", lambda *a, **k: spy_full(*a, _inner=full[0], **k)
    )
    monkeypatch.setattr(
        _laplace_fit, "laplace_reestimation", lambda *a, **k: spy_full(*a, _inner=full[1], **k)
    )
    rng = np.random.default_rng(0)
    Phi = rng.standard_normal((40, 5))
    fit_regression(Phi, Phi[:, 0] + 0.1 * rng.standard_normal(40), method=method)
    fit_classification(Phi, (Phi[:, 1] > 0).astype(int), method=method)
    assert len(seen) == 2
    assert all(set(threads) == {1} for threads in seen)


@pytest.mark.parametrize("estimator", ["RVR", "RVC"])
def test_estimator_reference_fit_runs_on_one_blas_thread(monkeypatch, estimator):
    """The whole reference fit (design, solver, posterior) runs on one BLAS thread: threads
    woken by a product outside the solver would spin on the other core while it runs."""
    from threadpoolctl import threadpool_limits

    import rvm_pymc
    from rvm_pymc.basis import KernelBasis

    if not _blas_threads():
        pytest.skip("no controllable BLAS library loaded")
    seen = []
    transform = KernelBasis.transform

    def spy(self, X):
        seen.append(_blas_threads())
        return transform(self, X)

    monkeypatch.setattr(KernelBasis, "transform", spy)
    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, 2))
    y = X[:, 0] + 0.1 * rng.standard_normal(40)
    if estimator == "RVC":
        y = (y > 0).astype(int)
    with threadpool_limits(2, user_api="blas"):  # what a machine's default could be
        before = _blas_threads()
        getattr(rvm_pymc, estimator)(gamma=0.5).fit(X, y)
        assert _blas_threads() == before  # restored
    assert before == [2] * len(before)
    assert seen and all(s == [1] * len(before) for s in seen)


def test_overlapping_blocks_leave_the_limits_as_found():
    """Two fits that overlap (threads of a grid search) share the limit; the last one out restores.

    Each block used to restore what it saw on entry: A (2 threads) -> 1, B sees 1;
    A leaves and restores 2 while B still runs; B leaves and restores 1 for good.
    The overlap is played out in one thread (enter A, enter B, leave A, leave B):
    OpenBLAS here ignores a limit set from a thread other than the main one, so
    threads would not show it.
    """
    from threadpoolctl import threadpool_limits

    if not _blas_threads():
        pytest.skip("no controllable BLAS library loaded")
    with threadpool_limits(limits=2, user_api="blas"):
        before = _blas_threads()
        a, b = single_blas_thread(), single_blas_thread()
        a.__enter__()
        b.__enter__()
        a.__exit__(None, None, None)
        assert _blas_threads() == [1] * len(before)  # B keeps its limit after A left
        b.__exit__(None, None, None)
        assert _blas_threads() == before  # and the process is back where it was
