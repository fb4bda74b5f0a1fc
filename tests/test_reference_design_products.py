"""The fast classifier's design products on worker threads: the same numbers as without.

``rvm_pymc.reference._design_products`` splits the reads of a large design
between threads without splitting any sum over the rows; the fits it serves
must be those of the one-thread products: the products bit for bit, the
fits' active sets the same and their precisions to 1e-8 relative.
"""

from __future__ import annotations

import numpy as np
import pytest

import rvm_pymc.reference._design_products as dp
from rvm_pymc.datasets import make_gaussian_mixture_classes, make_ripley
from rvm_pymc.reference import fit_classification


def _rbf(A, B, width):
    d2 = ((A[:, None, :] - B[None, :, :]) ** 2).sum(-1)
    return np.column_stack([np.ones(len(A)), np.exp(-d2 / width**2)])


@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("workers", [1, 2, 3])
def test_transposed_products_are_the_products(order, workers):
    rng = np.random.default_rng(0)
    A = np.asarray(rng.standard_normal((500, 77)), order=order)
    B, v = rng.standard_normal((500, 5)), rng.standard_normal(500)
    P, p, Q = dp.transposed_products([(A, B), (A, v), (A**2, B[:, :1])], workers=workers)
    assert P.shape == (77, 5) and p.shape == (77,) and Q.shape == (77, 1)
    np.testing.assert_allclose(P, A.T @ B, rtol=1e-13, atol=1e-12)
    np.testing.assert_allclose(p, A.T @ v, rtol=1e-13, atol=1e-12)
    np.testing.assert_allclose(Q, (A**2).T @ B[:, :1], rtol=1e-13, atol=1e-12)


@pytest.mark.parametrize("shape", [(500, 77, 5), (2000, 301, 22), (2000, 301, 4), (300, 40, 1)])
def test_threaded_products_have_the_bits_of_one_thread(shape):
    # the fast classifier's moves follow the rounding of its statistics: its
    # products must have the same bits whatever the threads (the blocks follow M
    # alone; at M = 301 and k = 22 blocks by thread count did not give the bits)
    n, m, k = shape
    rng = np.random.default_rng(1)
    A, B, v = rng.standard_normal((n, m)), rng.standard_normal((n, k)), rng.standard_normal(n)
    whole = dp.transposed_products([(A, B), (A, v)], workers=1)
    for workers in (2, 3, 4, 5):
        parts = dp.transposed_products([(A, B), (A, v)], workers=workers)
        assert all(np.array_equal(a, b) for a, b in zip(parts, whole, strict=True))
        assert parts[0].flags.c_contiguous  # the memory order later products' rounding follows
    assert whole[0].flags.c_contiguous


def test_column_blocks_cover_the_columns():
    for m in (1, 7, 8, 77, 1001):
        for parts in (1, 2, 3, 4):
            blocks = dp._column_blocks(m, parts)
            assert np.array_equal(np.concatenate([np.arange(m)[b] for b in blocks]), np.arange(m))
            assert all(b.start % 8 == 0 for b in blocks)


def test_elementwise_helpers_on_threads(monkeypatch):
    monkeypatch.setattr(dp, "SCALE_MIN_ENTRIES", 0)
    rng = np.random.default_rng(1)
    for order in ("C", "F"):
        A = np.asarray(rng.standard_normal((101, 6)), order=order)
        d = rng.random(101)
        assert np.array_equal(dp.squared(A, workers=2), A**2)
        ref = d[:, None] * A
        out = dp.scaled_rows(d, A)
        assert np.array_equal(out, ref) and out.flags.f_contiguous == ref.flags.f_contiguous
        buf = dp.scaled_rows_buffer(A)
        assert dp.scaled_rows(d, A, buf) is buf and np.array_equal(buf, ref)
    assert dp.in_background(lambda: A.sum(), A.size, workers=2).result() == A.sum()
    assert dp.in_background(lambda: 3, A.size, workers=1).result() == 3


def _fit_both_ways(monkeypatch, Phi, t):
    """``fit_classification`` with every product on one thread, then on threads."""
    monkeypatch.setattr(dp, "THREAD_MIN_ENTRIES", 1 << 62)
    monkeypatch.setattr(dp, "SCALE_MIN_ENTRIES", 1 << 62)
    serial = fit_classification(Phi, t)
    monkeypatch.setattr(dp, "THREAD_MIN_ENTRIES", 0)
    monkeypatch.setattr(dp, "SCALE_MIN_ENTRIES", 0)
    monkeypatch.setattr(dp, "default_workers", lambda: 2)
    threaded = fit_classification(Phi, t)
    return serial, threaded


def test_fast_classification_same_fit_on_threads(monkeypatch):
    X, t, _, _ = make_ripley(n_train=400, n_test=10, random_state=3)
    serial, threaded = _fit_both_ways(monkeypatch, _rbf(X, X[::2], 0.5), t)
    assert np.array_equal(serial.active, threaded.active)
    assert serial.n_iter == threaded.n_iter
    assert threaded.log_evidence == pytest.approx(serial.log_evidence, rel=1e-10)
    np.testing.assert_allclose(threaded.alpha, serial.alpha, rtol=1e-8)


def test_multiclass_fast_classification_same_fit_on_threads(monkeypatch):
    X, t, _, _ = make_gaussian_mixture_classes(
        n_samples=150, n_test=10, n_classes=3, n_components=2, random_state=2
    )
    serial, threaded = _fit_both_ways(monkeypatch, _rbf(X, X, 1.0), t)
    assert np.array_equal(serial.active, threaded.active)
    assert threaded.log_evidence == pytest.approx(serial.log_evidence, rel=1e-10)


def test_worker_threads_end_with_the_last_block():
    import threading

    from rvm_pymc._core import threads

    before = threading.active_count()
    with threads.worker_threads():
        with threads.worker_threads():
            pool = threads._pool
            assert pool is not None
            P, p = dp.transposed_products(
                [(np.ones((20, 9)), np.ones((20, 2))), (np.ones((20, 9)), np.ones(20))], workers=2
            )
        assert threads._pool is pool  # still open for the outer block
    assert threads._pool is None
    assert threading.active_count() == before
    assert np.array_equal(P, np.full((9, 2), 20.0)) and np.array_equal(p, np.full(9, 20.0))
