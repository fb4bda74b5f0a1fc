"""Internal numerics with no public face of their own, each against an oracle.

The one place (with ``test_internals_sampling.py`` and ``test_internals_cli.py``) where
the tests import private modules; every other test file goes through the public API.
Sections, each headed by the file it came from:

- ``test_gaussian.py``: rvm_pymc._core.gaussian against dense NumPy formulas (inv,
  slogdet, solve as oracles);
- ``test_reference_fast_paths.py``: the fast paths of the reference solver against
  their general forms;
- ``test_reference_design_products.py``: the threaded design products have the bits of
  one thread;
- ``test_reference_threads.py``: the solver loops run on one BLAS thread;
- ``test_rowqr.py``: the row-blocked QR compression of a tall design;
- ``test_reference_fast_exact.py``: the fast solver's candidate statistics are exact;
- tests of ``test_slab_reference.py``, ``test_kernels.py``, ``test_distributed.py``,
  ``test_reference_regression.py`` and ``test_scale.py`` that set or call a private
  constant or function (the alpha equation, design blocks and threads, the choice of
  centres, the fast solver's state).
"""

from __future__ import annotations

import warnings

import extended_precision
import numpy as np
import pytest
from shared_helpers import one_warning_at_most
from threadpoolctl import threadpool_info

import rvm_pymc.reference._laplace as dp
import rvm_pymc.reference._sequential_state as sequential_factor
import rvm_pymc.reference.classification as _laplace_fit
import rvm_pymc.reference.regression as regression
from rvm_pymc import RVC, RVR
from rvm_pymc._core import centres as _centres
from rvm_pymc._core.ard import solve_alpha
from rvm_pymc._core.gaussian import (
    GaussianPosterior,
    covariance_draws,
    factor_draw,
    factor_inverse,
    factor_logdet,
    factor_solve,
    regression_factor,
    regression_posterior,
    spd_factor,
    spd_inverse,
    spd_solve,
)
from rvm_pymc._core.rowqr import RowQR, column_triangle, row_qr, triangle_without
from rvm_pymc._core.sparsity import active_sq, gain_rounding, leaving_active
from rvm_pymc._core.threads import single_blas_thread
from rvm_pymc.basis import (
    KernelBasis,
)
from rvm_pymc.datasets import make_gaussian_mixture_classes, make_ripley, make_sinc
from rvm_pymc.estimators import _rows
from rvm_pymc.exceptions import ConvergenceWarning
from rvm_pymc.kernels import (
    RBF,
    CallableKernel,
    Cauchy,
    Laplacian,
    Linear,
)
from rvm_pymc.reference import (
    dense_log_marginal_likelihood,
    fit_classification,
    fit_regression,
    log_marginal_likelihood,
)
from rvm_pymc.reference._laplace import OneColumn, find_mode, find_mode_one_column
from rvm_pymc.reference._sequential_state import SequentialState
from rvm_pymc.reference.fast import select_move

# ---- from tests/test_gaussian.py


def _spd(dim: int, seed: int, spread: float = 1.0) -> np.ndarray:
    """A random SPD matrix whose diagonal spans ``10**±spread`` (so Jacobi scaling matters)."""
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((dim, 2 * dim))
    d = 10.0 ** rng.uniform(-spread, spread, dim)
    return d[:, None] * (A @ A.T / dim + 0.1 * np.eye(dim)) * d[None, :]


@pytest.mark.parametrize("dim", [1, 2, 7, 40])
def test_factor_functions_match_dense_formulas(dim):
    H = _spd(dim, dim, spread=3.0)
    L, p = spd_factor(H, "test matrix")
    assert np.array_equal(L, np.tril(L))
    np.testing.assert_allclose((L @ L.T) / np.outer(p, p), H, rtol=1e-12, atol=0)
    inv = np.linalg.inv(H)
    scale = np.sqrt(np.outer(np.diag(inv), np.diag(inv)))  # compare on the scale of each entry
    np.testing.assert_allclose(factor_inverse(L, p) / scale, inv / scale, rtol=0, atol=1e-10)
    assert np.array_equal(factor_inverse(L, p), factor_inverse(L, p).T)
    sign, logdet = np.linalg.slogdet(H)
    assert sign == 1.0
    np.testing.assert_allclose(factor_logdet(L, p), logdet, rtol=1e-12, atol=1e-10)
    rng = np.random.default_rng(1)
    b = rng.standard_normal(dim)
    B = rng.standard_normal((dim, 3))
    np.testing.assert_allclose(factor_solve(L, p, b), np.linalg.solve(H, b), rtol=1e-9)
    np.testing.assert_allclose(factor_solve(L, p, B), np.linalg.solve(H, B), rtol=1e-9)
    inv2, logdet2 = spd_inverse(H)
    assert np.array_equal(inv2, factor_inverse(L, p)) and logdet2 == factor_logdet(L, p)
    np.testing.assert_allclose(spd_solve(H, B), np.linalg.solve(H, B), rtol=1e-8)


def test_factor_draw_is_mean_plus_a_square_root_of_the_inverse():
    H = _spd(5, 3)
    L, p = spd_factor(H)
    mean = np.arange(5.0)
    # with z the identity, the rows minus the mean are R^T for a root R of H^-1 (R R^T = H^-1)
    R = (factor_draw(L, p, mean, np.eye(5)) - mean).T
    np.testing.assert_allclose(R @ R.T, np.linalg.inv(H), rtol=1e-10, atol=1e-12)
    # and draws with z standard normal have that covariance (statistical check below)
    z = np.random.default_rng(0).standard_normal((200_000, 5))
    w = factor_draw(L, p, mean, z)
    _check_sample(w, mean, np.linalg.inv(H))


def _check_sample(w: np.ndarray, mean: np.ndarray, cov: np.ndarray) -> None:
    """Sample mean and covariance of ``n`` draws against the truth.

    Tolerance: 6 standard errors per entry.  The standard error of the sample
    mean of entry i is ``sqrt(cov_ii / n)``; of the sample covariance entry
    (i, j) ``sqrt((cov_ii cov_jj + cov_ij^2) / n)`` (Gaussian data).
    """
    n = w.shape[0]
    sd = np.sqrt(np.diag(cov))
    assert np.all(np.abs(w.mean(axis=0) - mean) <= 6.0 * sd / np.sqrt(n))
    se = np.sqrt((np.outer(sd**2, sd**2) + cov**2) / n)
    assert np.all(np.abs(np.cov(w.T) - cov) <= 6.0 * se)


def test_covariance_draws_vector_mean():
    cov = np.linalg.inv(_spd(4, 7))
    mean = np.array([1.0, -2.0, 1e3, 0.0])
    w = covariance_draws(mean, cov, 200_000, np.random.default_rng(5))
    assert w.shape == (200_000, 4)
    _check_sample(w, mean, cov)


def test_covariance_draws_class_major_matrix_mean():
    m, k = 3, 2
    cov = np.linalg.inv(_spd(m * k, 11))
    mean = np.arange(m * k, dtype=float).reshape(m, k)
    w = covariance_draws(mean, cov, 200_000, 3)
    assert w.shape == (200_000, m, k)
    flat = w.transpose(0, 2, 1).reshape(w.shape[0], -1)  # class-major: block k = class k
    _check_sample(flat, mean.T.reshape(-1), cov)


def test_covariance_draws_seeded_and_antithetic():
    cov = np.linalg.inv(_spd(3, 2))
    mean = np.array([1e4, -3.0, 0.5])
    a = covariance_draws(mean, cov, 10, 42)
    assert np.array_equal(a, covariance_draws(mean, cov, 10, np.random.default_rng(42)))
    w = covariance_draws(mean, cov, 10, 42, antithetic=True)
    np.testing.assert_array_equal(w[5:], 2.0 * mean - w[:5])
    # the sample mean is the mean to rounding (relative to the largest entry)
    np.testing.assert_allclose(w.mean(axis=0), mean, rtol=0, atol=1e-14 * 1e4)
    assert not np.allclose(w[:5], mean)  # the first half is a real sample
    W = covariance_draws(mean.reshape(3, 1), cov, 4, 0, antithetic=True)
    np.testing.assert_allclose(W.mean(axis=0), mean.reshape(3, 1), rtol=0, atol=1e-14 * 1e4)
    with pytest.raises(ValueError, match="even"):
        covariance_draws(mean, cov, 3, 0, antithetic=True)


def test_indefinite_or_bad_matrices_raise_and_name_the_matrix():
    indefinite = np.array([[1.0, 2.0], [2.0, 1.0]])
    for call in (
        lambda: spd_factor(indefinite, "toy Hessian"),
        lambda: spd_inverse(indefinite, "toy Hessian"),
    ):
        with pytest.raises(np.linalg.LinAlgError, match=r"toy Hessian.*not positive definite"):
            call()
    with pytest.raises(np.linalg.LinAlgError, match="weight covariance"):
        covariance_draws(np.zeros(2), indefinite, 5, 0)
    # a positive semi-definite (singular) covariance is an error too, not clipped
    with pytest.raises(np.linalg.LinAlgError, match="weight covariance"):
        covariance_draws(np.zeros(2), np.ones((2, 2)), 5, 0)
    with pytest.raises(np.linalg.LinAlgError, match="non-finite or non-positive"):
        spd_factor(np.array([[1.0, 0.0], [0.0, -1.0]]), "H")
    with pytest.raises(np.linalg.LinAlgError, match="non-finite or non-positive"):
        spd_factor(np.array([[1.0, np.nan], [np.nan, 1.0]]), "H")
    with pytest.raises(np.linalg.LinAlgError, match="empty"):
        spd_factor(np.empty((0, 0)), "H")
    with pytest.raises(ValueError, match="square"):
        spd_factor(np.ones((2, 3)), "H")
    with pytest.raises(np.linalg.LinAlgError):
        spd_solve(indefinite, np.ones(2))


def test_covariance_draws_bad_input():
    cov = np.eye(2)
    with pytest.raises(ValueError, match="not symmetric"):
        covariance_draws(np.zeros(2), np.array([[1.0, 0.5], [0.0, 1.0]]), 5, 0)
    with pytest.raises(ValueError, match="expected"):
        covariance_draws(np.zeros(3), cov, 5, 0)
    with pytest.raises(ValueError, match="n_draws"):
        covariance_draws(np.zeros(2), cov, 0, 0)


def test_regression_posterior_against_dense_formulas():
    rng = np.random.default_rng(0)
    Phi = rng.standard_normal((30, 6))
    t = rng.standard_normal(30) + 5.0
    alpha = 10.0 ** rng.uniform(-3, 3, 6)
    beta = 4.0
    post = regression_posterior(Phi, t, alpha, beta)
    assert isinstance(post, GaussianPosterior)
    H = np.diag(alpha) + beta * Phi.T @ Phi
    Sigma = np.linalg.inv(H)
    np.testing.assert_allclose(post.cov, Sigma, rtol=1e-9, atol=1e-14)
    np.testing.assert_allclose(post.mean, beta * Sigma @ Phi.T @ t, rtol=1e-9)
    np.testing.assert_allclose(post.logdet_precision, np.linalg.slogdet(H)[1], rtol=1e-12)
    pre = regression_posterior(Phi, t, alpha, beta, gram=Phi.T @ Phi, PhiT_t=Phi.T @ t)
    np.testing.assert_allclose(pre.mean, post.mean, rtol=1e-12)


@extended_precision.needs_longdouble
@pytest.mark.parametrize("n", [5, 300, 3000])
def test_regression_factor_on_an_ill_conditioned_system_matches_extended_precision(n):
    # a wide RBF basis with tiny precisions: cond(A + beta Phi^T Phi) far above 1e8, so the
    # factor comes from the QR route (n = 5: fewer rows than columns, no row compression)
    rng = np.random.default_rng(n)
    x = np.sort(rng.uniform(-1.0, 1.0, n))
    Phi = np.exp(-0.5 * (x[:, None] - np.linspace(-1.0, 1.0, 8)) ** 2)
    Phi /= np.linalg.norm(Phi, axis=0)
    t = np.sin(3.0 * x) + 0.1 * rng.standard_normal(n)
    alpha, beta = np.exp(rng.uniform(-20.0, -10.0, 8)), 100.0
    f = regression_factor(Phi, t, alpha, beta)
    assert f.qr and f.cond > 1e8
    r = t - Phi @ f.mean
    logdet = factor_logdet(f.L, f.p) - np.log(alpha).sum() - n * np.log(beta)
    lml = -0.5 * (n * np.log(2 * np.pi) + logdet + beta * (r @ r) + alpha @ f.mean**2)
    exact = extended_precision.lml(Phi, t, alpha, beta)
    assert abs(lml - exact) <= 1e-12 * (abs(exact) + n)
    H = beta * (Phi.T @ Phi) + np.diag(alpha)
    np.testing.assert_allclose((f.L @ f.L.T) / np.outer(f.p, f.p), H, rtol=1e-9, atol=0)


# ---- from tests/test_reference_fast_paths.py


def _posterior(rng, ma, c):
    """A random precision's inverse and a mode: the inputs of the leaving test."""
    A = rng.normal(size=(3 * ma * c, ma * c))
    cov = spd_inverse(A.T @ A + np.eye(ma * c))[0]
    return cov, rng.normal(size=(ma, c))


def test_leaving_one_class_matches_the_block_form():
    rng = np.random.default_rng(0)
    seen = []
    for _ in range(20):
        cov, W = _posterior(rng, 6, 1)
        alpha = np.exp(2.0 * rng.normal(size=6))
        # the C x C form with C = 1: s = Sigma_mm^-1 - alpha, q = Sigma_mm^-1 w_m
        prec = np.linalg.inv(cov.diagonal()[:, None, None])[:, 0, 0]
        want = (prec * W[:, 0]) ** 2 <= prec - alpha
        np.testing.assert_array_equal(leaving_active(alpha, W, cov), want)
        seen.extend(want)
    assert any(seen) and not all(seen)  # both verdicts were checked


def test_gain_rounding_scalars_match_the_array_form():
    rng = np.random.default_rng(0)
    for _ in range(200):
        s, q2 = float(rng.exponential()), float(rng.exponential(3.0))
        old = float(np.exp(rng.normal())) if rng.random() < 0.7 else np.inf
        new = s * s / (q2 - s) if q2 > s else np.inf
        got = gain_rounding(old, new, s, q2)
        want = gain_rounding(np.array(old), np.array(new), np.array(s), np.array(q2))
        assert got == float(want)
    # a zero precision (a rounded s = 0) takes the array form: nan, as before
    assert np.isnan(gain_rounding(0.0, 0.0, 0.0, 1.0))


@pytest.mark.parametrize("likelihood", ["bernoulli", "poisson"])
def test_mode_with_a_prebuilt_likelihood_is_find_mode(likelihood):
    rng = np.random.default_rng(1)
    Phi = rng.normal(size=(80, 5)) / 3
    w = rng.normal(size=5)
    f = Phi @ w
    t = (rng.random(80) < 1 / (1 + np.exp(-f))).astype(float)
    if likelihood == "poisson":
        t = rng.poisson(np.exp(f)).astype(float)
    alpha = np.exp(rng.normal(size=5))
    W0 = 0.1 * rng.normal(size=(5, 1))
    want = find_mode(Phi, t[:, None], alpha, W0, tol=1e-9, likelihood=likelihood)
    got = find_mode_one_column(Phi, OneColumn(likelihood, t), alpha, W0, 1e-9)
    for field in ("mean", "cov", "probs", "curvature"):
        np.testing.assert_array_equal(getattr(got, field), getattr(want, field))
    assert got.log_evidence == want.log_evidence and got.n_newton == want.n_newton
    assert got.converged


# ---- from tests/test_reference_design_products.py


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


# ---- from tests/test_reference_threads.py


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


# ---- from tests/test_rowqr.py


def _problem(n=5000, gamma=10.0, centres=200, seed=0):
    """A sinc design on ``centres`` RBF centres (columns at unit rms) and standardised targets."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(-10, 10, n)
    t = np.sinc(x / np.pi) + 0.1 * rng.standard_normal(n)
    t = (t - t.mean()) / t.std()
    basis = KernelBasis(RBF(gamma=gamma / x.var()), centres=centres).fit(x[:, None])
    Phi = basis.transform(x[:, None])
    return Phi / np.sqrt(np.mean(Phi**2, axis=0)), t


def _compress(Phi, t, block_rows=97, workers=3) -> RowQR:
    return row_qr(
        lambda a, b: (Phi[a:b], t[a:b]),
        Phi.shape[0],
        Phi.shape[1],
        block_rows=block_rows,
        workers=workers,
    )


def test_blocked_statistics_equal_the_one_shot_ones():
    Phi, t = _problem()
    rows = _compress(Phi, t)  # 52 blocks of 97 rows (the last one short) on 3 threads
    assert rows.shape == Phi.shape and rows.R.shape == (Phi.shape[1],) * 2
    np.testing.assert_array_equal(rows.R, np.triu(rows.R))
    norms = np.linalg.norm(Phi, axis=0)
    scale = np.outer(norms, norms)
    assert np.max(np.abs(rows.R.T @ rows.R - Phi.T @ Phi) / scale) < 1e-13
    tn = np.linalg.norm(t)
    assert np.max(np.abs(rows.R.T @ rows.z - Phi.T @ t) / (norms * tn)) < 1e-13
    assert float(rows.z @ rows.z) + rows.remainder == pytest.approx(float(t @ t), rel=1e-13)
    # the remainder is the least-squares residual (of a design of full numerical rank)
    X = np.random.default_rng(1).standard_normal((Phi.shape[0], 30))
    full_rank = _compress(X, t)
    w = np.linalg.lstsq(X, t, rcond=None)[0]
    assert full_rank.remainder == pytest.approx(float(np.sum((t - X @ w) ** 2)), rel=1e-10)
    # one thread, one block: the same triangle up to the signs of its rows
    one = _compress(Phi, t, block_rows=Phi.shape[0], workers=1)
    sign = np.sign(np.diag(one.R)) * np.sign(np.diag(rows.R))
    top = np.abs(np.diag(rows.R)) > 1e-6 * norms  # rows of R determined to working precision
    np.testing.assert_allclose((sign[:, None] * rows.R)[top], one.R[top], atol=1e-9 * tn)


def test_row_qr_checks_its_blocks():
    with pytest.raises(ValueError, match="at least one row"):
        row_qr(lambda a, b: (np.ones((b - a, 2)), np.ones(b - a)), 0, 2)
    with pytest.raises(ValueError, match=r"block\(0, 4\) returned shapes \(4, 3\)"):
        row_qr(lambda a, b: (np.ones((b - a, 3)), np.ones(b - a)), 4, 2)


def test_row_qr_into_its_workspace_is_the_same_factor():
    """``into=True`` (the block written into the workspace) factors the same rows."""
    Phi, t = _problem(n=700, centres=60)
    calls = []

    def fill(a, b, out):
        calls.append(out.strides[0])
        out[...] = Phi[a:b]
        return t[a:b]

    given = _compress(Phi, t)
    into = row_qr(fill, *Phi.shape, block_rows=97, workers=3, into=True)
    assert set(calls) == {8} and len(calls) == 8  # column-major views, 8 blocks
    np.testing.assert_array_equal(into.R, given.R)
    np.testing.assert_array_equal(into.z, given.z)
    assert into.remainder == given.remainder
    with pytest.raises(ValueError, match=r"block\(0, 4\) returned targets of shape \(3,\)"):
        row_qr(lambda a, b, out: np.ones(3), 4, 2, into=True)


def test_row_qr_workers_run_on_one_blas_thread():
    """Two workers under two BLAS threads each oversubscribe two CPUs: one BLAS thread."""
    from concurrent.futures import ThreadPoolExecutor

    from threadpoolctl import threadpool_info, threadpool_limits

    def blas_threads():
        return {i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"}

    seen = []

    def block(a, b):
        seen.append(blas_threads())
        return np.ones((b - a, 2)), np.arange(a, b, dtype=float)

    with threadpool_limits(2, user_api="blas"):
        control = ThreadPoolExecutor(1).submit(blas_threads).result()
        row_qr(block, 40, 2, block_rows=10, workers=2)
        after = blas_threads()
    if control != {2}:  # e.g. OPENBLAS_NUM_THREADS=1 set: other threads keep one
        pytest.skip(f"a thread under threadpool_limits(2) saw {control} BLAS threads")
    assert len(seen) == 4 and all(s == {1} for s in seen)
    assert after == {2}  # restored


@pytest.mark.parametrize("kernel", [RBF(gamma=0.3), lambda A, B: (A @ B.T + 1.0) ** 2])
def test_transform_into_a_view_is_the_design(kernel):
    """``Basis.transform(X, out=...)`` writes the same numbers into a strided view (a
    symmetric kernel through a small buffer, a user kernel through its whole design)."""
    X = np.random.default_rng(3).uniform(-3, 3, size=(300, 2))
    basis = KernelBasis(kernel, centres=40).fit(X)
    Phi = basis.transform(X)
    work = np.full((310, basis.n_basis_ + 1), np.nan, order="F")
    out = work[5:305, : basis.n_basis_]  # columns contiguous, not the whole array
    assert basis.transform(X, out=out) is out
    np.testing.assert_array_equal(out, Phi)
    assert np.isnan(work[:5]).all() and np.isnan(work[305:]).all() and np.isnan(work[:, -1]).all()
    with pytest.raises(ValueError, match=r"out must be a writeable float64 array of shape"):
        basis.transform(X, out=np.empty((300, basis.n_basis_), dtype=np.float32))
    if isinstance(kernel, RBF):
        return  # an RBF design is finite for every finite input
    X[7, 1] = 1e200  # the user kernel overflows: reported as by transform(X)
    with np.errstate(over="ignore"), pytest.raises(ValueError, match="non-finite"):
        basis.transform(X, out=out)


def test_sequential_state_on_the_compression_is_the_same_state():
    """Same active set and precisions: the same evidence, S, Q and exact statistics."""
    Phi, t = _problem(gamma=1.0)  # a wide kernel: the statistics are ill-conditioned
    rows = _compress(Phi, t)
    norms = np.linalg.norm(Phi, axis=0)
    usable = np.ones(Phi.shape[1], dtype=bool)
    full = SequentialState(Phi, t, usable, 50.0, norms)
    comp = SequentialState(
        rows.R, rows.z, usable, 50.0, norms, n=rows.n, rss_offset=rows.remainder
    )
    for st in (full, comp):
        st.start([0, 40, 90, 150], np.array([1e-3, 2e-3, 5e-3, 1e-2]))
        st.resolve(confirm=True)
    assert comp.lml == pytest.approx(full.lml, abs=10 * (full.lml_rounding + comp.lml_rounding))
    assert comp.rss == pytest.approx(full.rss, rel=1e-9)
    np.testing.assert_allclose(comp.Q, full.Q, rtol=1e-7, atol=1e-9 * full.beta)
    cols = np.arange(0, Phi.shape[1], 7)
    S_full, Q_full = full.exact_statistics(cols)
    S_comp, Q_comp = comp.exact_statistics(cols)
    np.testing.assert_allclose(S_comp, S_full, rtol=1e-7)
    np.testing.assert_allclose(Q_comp, Q_full, rtol=1e-7, atol=1e-9 * full.beta)
    # the evidence of the final posterior, on the compression, is that of the data
    idx = np.asarray(full.active)
    Pa = Phi[:, idx] / norms[idx]
    lml = log_marginal_likelihood(Pa, t, full.alpha, full.beta)
    lml_c = log_marginal_likelihood(
        rows.R[:, idx] / norms[idx], rows.z, full.alpha, full.beta, n=rows.n,
        rss_offset=rows.remainder,
    )  # fmt: skip
    assert lml_c == pytest.approx(lml, rel=1e-12)


def test_fit_regression_on_the_compression_is_the_same_fit():
    Phi, t = _problem(n=3000)
    full = fit_regression(Phi, t)
    comp = fit_regression(_compress(Phi, t), t)
    np.testing.assert_array_equal(comp.active, full.active)
    assert comp.n_iter == full.n_iter and comp.converged and full.converged
    np.testing.assert_allclose(comp.mean, full.mean, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(comp.alpha, full.alpha, rtol=1e-7)
    assert comp.beta == pytest.approx(full.beta, rel=1e-10)
    assert comp.log_evidence == pytest.approx(full.log_evidence, abs=1e-8)


def test_fit_regression_checks_the_compression():
    Phi, t = _problem(n=600, centres=40)
    rows = _compress(Phi, t)
    with pytest.raises(ValueError, match="needs method='fast'"):
        fit_regression(rows, t, method="mackay")
    with pytest.raises(ValueError, match="compresses 600 rows"):
        fit_regression(rows, t[:-1])
    with pytest.raises(ValueError, match="not the target compressed"):
        fit_regression(rows, t[::-1] * 2.0)


@pytest.fixture
def small_centres(monkeypatch):
    """``centres="auto"``: 150 centres above 300 training points."""
    monkeypatch.setattr(_centres, "AUTO_FULL_MAX", 300)
    monkeypatch.setattr(_centres, "AUTO_MAX_CENTRES", 150)
    monkeypatch.setattr(_centres, "AUTO_FILL_CENTRES", 150)


@pytest.mark.parametrize("gamma", ["scale", 3.0])
def test_rvr_through_the_compression_is_the_same_fit(small_centres, monkeypatch, gamma):
    """The same fit to rounding: no further from the full design's fit than a fit of the
    inputs perturbed by one unit in the last place (the wide ``"scale"`` kernel makes
    weights of opposite signs ~150 times the targets: differences of 1e-8)."""
    d = make_sinc(n_train=4000, n_test=300, noise_sd=0.1, random_state=2)
    full = RVR(gamma=gamma).fit(d.X_train, d.t_train)
    ulp = np.random.default_rng(0).choice([-1.0, 1.0], size=d.X_train.shape)
    nudged = RVR(gamma=gamma).fit(d.X_train * (1 + np.finfo(float).eps * ulp), d.t_train)
    seen = []
    real = _rows.compressed_design

    def spy(basis, X, t, block_rows=_rows.BLOCK_ROWS):
        seen.append(X.shape[0])
        return real(basis, X, t, block_rows=333)  # 13 blocks

    monkeypatch.setattr(_rows, "ROW_BLOCKED_ENTRIES", 0)
    monkeypatch.setattr("rvm_pymc.estimators._base.compressed_design", spy)
    comp = RVR(gamma=gamma).fit(d.X_train, d.t_train)
    assert seen == [4000]  # the design was never built whole
    np.testing.assert_array_equal(comp.relevance_indices_, full.relevance_indices_)
    np.testing.assert_array_equal(nudged.relevance_indices_, full.relevance_indices_)
    np.testing.assert_allclose(comp.basis_scale_, full.basis_scale_, rtol=1e-12)
    mean_f, sd_f = full.predict(d.X_test, return_std=True)
    rounding = 10 * np.max(np.abs(nudged.predict(d.X_test) - mean_f)) + 1e-12
    mean, sd = comp.predict(d.X_test, return_std=True)
    assert np.max(np.abs(mean - mean_f)) <= rounding
    np.testing.assert_allclose(sd, sd_f, rtol=1e-8)
    assert comp.log_evidence_ == pytest.approx(full.log_evidence_, abs=1e-7)
    # the training design of idata_: the active columns, built anew when it is first read
    assert comp._tree_inputs["Phi_of_X"] and not full._tree_inputs.get("Phi_of_X")
    assert comp._tree_inputs["Phi"].shape == d.X_train.shape
    np.testing.assert_allclose(
        comp.idata_["constant_data"]["Phi"].values,
        full.idata_["constant_data"]["Phi"].values,
        rtol=0,
        atol=1e-12,
    )


def test_the_compression_only_for_the_fast_reference_regression(small_centres, monkeypatch):
    monkeypatch.setattr(_rows, "ROW_BLOCKED_ENTRIES", 0)

    def fail(*args, **kwargs):
        raise AssertionError("the row compression was used")

    monkeypatch.setattr("rvm_pymc.estimators._base.compressed_design", fail)
    d = make_sinc(n_train=400, n_test=10, noise_sd=0.1, random_state=3)
    RVR(solver="mackay", gamma=3.0).fit(d.X_train, d.t_train)
    RVC(gamma=3.0).fit(d.X_train, d.t_train > 0)


def test_no_compression_of_a_square_design(monkeypatch):
    """At most N / ROW_BLOCKED_RATIO columns (bias included); never every point a centre."""
    monkeypatch.setattr(_rows, "ROW_BLOCKED_ENTRIES", 0)
    X = np.linspace(-1, 1, 400)[:, None]
    est = RVR()
    most = 400 // _rows.ROW_BLOCKED_RATIO - 1  # centres, with the bias N / ratio columns
    assert _rows.row_blocked(est, KernelBasis(RBF(), centres=most).fit(X), 400)
    assert not _rows.row_blocked(est, KernelBasis(RBF(), centres=most + 1).fit(X), 400)
    assert not _rows.row_blocked(est, KernelBasis(RBF(), centres="all").fit(X), 400)


@pytest.mark.parametrize("shape", [(400, 6), (5, 6)])
def test_triangle_without_a_column_is_the_triangle_of_the_rest(shape):
    rng = np.random.default_rng(shape[0])
    Phi, t = rng.standard_normal(shape), rng.standard_normal(shape[0])
    T = column_triangle(Phi, t)
    assert T.shape == (min(shape[0], shape[1] + 1), shape[1] + 1)
    A = np.column_stack([Phi, t])
    np.testing.assert_allclose(T.T @ T, A.T @ A, rtol=0, atol=1e-11 * shape[0])
    for i in (0, 3, shape[1] - 1):
        rest = np.column_stack([np.delete(Phi, i, axis=1), t])
        T2 = triangle_without(T, i)
        np.testing.assert_allclose(T2.T @ T2, rest.T @ rest, rtol=0, atol=1e-11 * shape[0])
        # a triangle again (upper), unless the rest has more columns than rows
        if T2.shape[0] >= T2.shape[1]:
            assert np.array_equal(T2, np.triu(T2))


# ---- from tests/test_reference_fast_exact.py


def one_feature_3d(n, seed, gamma_factor=1.0):
    """3-D normal inputs where only x_0 matters: y = sinc(x_0) + N(0, 0.1^2)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 3))
    t = np.sinc(X[:, 0]) + 0.1 * rng.standard_normal(n)
    gamma = gamma_factor / (3 * X.var())  # the estimators' gamma="scale"
    Phi = KernelBasis(RBF(gamma=gamma), bias=True).fit_transform(X)
    return Phi, t - t.mean()


def dense_sq(Phin, t, active, alpha, beta):
    """S_m, Q_m of every column from the N x N covariance (explicit inverse)."""
    Pa = Phin[:, active]
    C = np.eye(t.size) / beta + (Pa / alpha) @ Pa.T
    Ci = np.linalg.inv(C)
    return np.einsum("ij,ij->j", Phin, Ci @ Phin), Phin.T @ (Ci @ t)


@extended_precision.needs_longdouble
@pytest.mark.parametrize("gamma_factor", [1.0, 0.01])
def test_exact_candidate_matches_dense_formulas(gamma_factor):
    # gamma_factor = 0.01: a very smooth kernel, the columns nearly collinear
    # (condition number of the active Gram matrix ~1e10), where the rank-one
    # form beta - beta^2 G^T Sigma G cancels.
    Phi, t = one_feature_3d(120, 3, gamma_factor)
    Phin = Phi / np.linalg.norm(Phi, axis=0)
    res = fit_regression(Phi, t)
    active = list(np.asarray(res.active))
    alpha = res.alpha / np.linalg.norm(Phi[:, active], axis=0) ** 2
    st = SequentialState(Phin, t, np.ones(Phi.shape[1], bool), res.beta)
    st.active, st.alpha = list(active), alpha.copy()
    st.G = Phin.T @ Phin[:, active]
    st.resolve()
    S, Q = dense_sq(Phin, t, active, alpha, res.beta)
    for j in range(Phi.shape[1]):
        S_j, Q_j = st.exact_candidate(j)[3:5]
        assert S_j > 0
        assert S_j == pytest.approx(S[j], rel=1e-7, abs=1e-9 * res.beta)
        assert Q_j == pytest.approx(Q[j], rel=1e-7, abs=1e-9 * res.beta * np.linalg.norm(t))
    # the gain of re-estimating an active basis agrees with the realised change
    i = 0
    j = active[i]
    gain, new_alpha, relevant = st.exact_candidate(j)[:3]
    if relevant:
        alpha2 = alpha.copy()
        alpha2[i] = new_alpha
        # in long double: with gamma_factor 0.01 the float64 N x N formula is off by ~1e-6
        before = extended_precision.lml(Phin[:, active], t, alpha, res.beta)
        after = extended_precision.lml(Phin[:, active], t, alpha2, res.beta)
        assert after - before == pytest.approx(gain, rel=1e-5, abs=1e-7)
    s, q = active_sq(alpha, S[active], Q[active], np.diag(st.Sigma), st.mu)
    assert np.all(s >= 0) and np.all(np.isfinite(q))


@pytest.mark.parametrize("seed", [0, 2])
def test_fast_on_smooth_3d_kernel_is_exact_and_quiet(seed):
    """The issue's failing case: 3-D inputs, one feature matters, gamma='scale'.

    No NumPy warnings, every recorded evidence is realised (the trace never
    exceeds the evidence of the returned state), and the fit is close to
    MacKay's in test error.
    """
    Phi, t = one_feature_3d(600, seed)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any RuntimeWarning (NaN / inf / overflow) fails
        fast = fit_regression(Phi, t)
        mackay = fit_regression(Phi, t, method="mackay")
    assert fast.converged
    trace = np.asarray(fast.trace["log_evidence"])
    assert trace.max() <= fast.log_evidence + 1e-9 * abs(fast.log_evidence)
    # the evidence of the returned state, checked by the N x N oracle
    dense = dense_log_marginal_likelihood(Phi[:, fast.active], t, fast.alpha, fast.beta)
    assert fast.log_marginal_likelihood == pytest.approx(dense, rel=1e-9)
    # noise level of the two fits within 10% (both near the true 0.1 sd)
    assert abs(np.log(fast.beta / mackay.beta)) < 0.2


def test_tiny_precisions_on_a_smooth_kernel_converge():
    """A width 0.3 x 'scale' drives precisions to ~1e-8 (weights cancelling).

    The rank-one and even freshly computed ``S`` of many candidates is then
    rounding: before, refuted additions were offered again after every noise
    update and the fit cycled to max_iter (21020 iterations, 25 s, hundreds of
    'divide by zero' warnings); now it converges quietly.
    """
    from rvm_pymc import RVR

    rng = np.random.default_rng(0)
    X = rng.standard_normal((2000, 3))
    f = np.sinc(X[:, 0])
    y = f[:1000] + 0.1 * rng.standard_normal(1000)
    X = X[:1000]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        est = RVR(gamma=0.3 / (3 * X.var())).fit(X, y)
    assert est.converged_
    assert est.n_iter_ < 3000


def _state_with_an_uninformed_basis():
    """A regression state whose active basis 0 the data do not inform: ``s_0 = 0``.

    ``alpha_0 Sigma_00 = 1`` (posterior variance = prior variance), so ``s`` and
    ``q`` come from ``S``, ``Q``, here at rounding level: ``S_0`` a tiny negative
    number (``s_0`` clipped to 0), ``Q_0`` a tiny positive one (``q_0^2 > s_0``).
    """
    st = object.__new__(SequentialState)
    st.m, st.usable, st.all_usable = 4, np.ones(4, dtype=bool), True
    st.active, st.alpha = [0, 1], np.array([2.0, 3.0])
    st.Sigma, st.mu = np.diag([0.5, 0.1]), np.array([1e-9, 0.4])
    st.S, st.Q = np.array([-1e-17, 5.0, 1.0, 0.5]), np.array([1e-9, 2.0, 2.0, 0.1])
    st.G, st._addable_cache = np.zeros((4, 2)), (None, None)
    return st


def test_a_basis_the_data_do_not_inform_is_not_relevant():
    # s = 0 made it relevant at precision s^2 / (q^2 - s) = 0, a NaN gain and, in the
    # classifier's convergence test, log(0): a RuntimeWarning, a test that never passes
    st = _state_with_an_uninformed_basis()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        move = select_move(st, 0.0)
        np.log(move.new_alpha[np.asarray(st.active)])
    assert not move.relevant[0] and move.new_alpha[0] == np.inf
    assert move.deletions[0] and move.j == 0  # deleted first, as every leaving basis
    assert move.relevant[1] and np.isfinite(move.new_alpha[1])  # the others as before
    assert move.relevant[2] and not move.relevant[3]  # q^2 > s, q^2 < s out of the model


@pytest.mark.parametrize("compressed", [False, True])
def test_the_rows_of_an_active_set_are_kept_between_its_factorisations(monkeypatch, compressed):
    # A smooth 3-D kernel at N = 1000: the posterior precision is ill-conditioned and many
    # factorisations take the QR route, which needs the rows (column_triangle) of the
    # active columns.  Re-estimations and noise updates keep the active set and its rows;
    # a deletion derives them from the larger set's.  The fit is the one that makes the
    # rows of every set from its columns, none kept; so is the fit of the row compression
    # (its rows R and z stand in for the design and the targets).
    if compressed:
        monkeypatch.setattr(_rows, "ROW_BLOCKED_ENTRIES", 0)
        monkeypatch.setattr(_rows, "ROW_BLOCKED_RATIO", 0)
    rng = np.random.default_rng(1)
    X = rng.uniform(-5.0, 5.0, size=(1000, 3))
    t = np.sinc(np.linalg.norm(X, axis=1) / np.pi) + 0.1 * rng.standard_normal(1000)
    made = _count_rows(monkeypatch)
    kept = RVR(gamma="scale").fit(X, t)
    kept_made = dict(made)
    afresh_made = [0]

    def afresh(self, key, columns, current, drop=None):
        assert not self.kept

        def rows():
            afresh_made[0] += 1
            return column_triangle(columns, self.t)

        return rows

    monkeypatch.setattr(sequential_factor.ActiveRows, "getter", afresh)
    fresh = RVR(gamma="scale").fit(X, t)
    assert kept_made["without"] >= 1
    assert kept_made["rows"] + kept_made["without"] < afresh_made[0]
    assert list(kept.relevance_indices_) == list(fresh.relevance_indices_)
    assert abs(kept.log_evidence_ - fresh.log_evidence_) <= 1e-9 * abs(fresh.log_evidence_)


def _count_rows(monkeypatch) -> dict:
    """Count the rows of active sets made from columns and derived by a deletion."""
    made = {"rows": 0, "without": 0}
    for name, what in (("column_triangle", "rows"), ("triangle_without", "without")):
        f = getattr(sequential_factor, name)

        def counted(*args, _f=f, _what=what, **kw):
            made[_what] += 1
            return _f(*args, **kw)

        monkeypatch.setattr(sequential_factor, name, counted)
    return made


@extended_precision.needs_longdouble
def test_a_deletion_on_the_qr_route_from_a_set_factored_by_cholesky():
    # The condition estimate of a subset can exceed the full set's: here the 7 bases are
    # factored by Cholesky (cond just below eps^-1/2, no rows kept) and deleting basis 4
    # or 5 takes the QR route, whose rows then come from the remaining columns.
    rng = np.random.default_rng(3)
    for _ in range(3):
        k = rng.integers(5, 10)
        n = rng.integers(3, k)
        Phi = rng.standard_normal((n, k))
        Phi /= np.linalg.norm(Phi, axis=0)
        alpha = 10 ** rng.uniform(-1, 1, k)
    lo, hi = 1e-12, 1.0  # the largest scale of alpha at which the full set is ill-conditioned
    for _ in range(60):
        mid = np.sqrt(lo * hi)
        full = regression_factor(Phi, np.ones(n), alpha * mid, 1.0)
        lo, hi = (mid, hi) if full.qr else (lo, mid)
    st = SequentialState(Phi, np.ones(n), np.ones(k, bool), 1.0)
    st.start(np.arange(k), alpha * hi)
    limit = 1.0 / np.sqrt(np.finfo(float).eps)  # above it, the QR route
    assert st.factor().cond <= limit
    routes = []
    for j in range(k):
        f = st.factorise_move(j, np.inf)
        keep = np.arange(k) != j
        exact = extended_precision.lml(Phi[:, keep], np.ones(n), alpha[keep] * hi, 1.0)
        assert abs(f.lml - exact) <= 1e-9 * (1.0 + abs(exact))
        routes.append(f.cond > limit)
    assert any(routes)


# ---- from tests/test_slab_reference.py


def test_the_alpha_update_solves_its_equation():
    """``g / (alpha + c) + 2a / alpha = D`` at the returned root; the limits c = 0, a = 0."""
    rng = np.random.default_rng(0)
    g, D, c = rng.uniform(0.05, 1, 50), rng.uniform(0.05, 5, 50), rng.uniform(0, 3, 50)
    for a in (0.0, 1e-6, 1.0):
        alpha = solve_alpha(g, D, a, c)
        pos = alpha > 0
        lhs = g[pos] / (alpha[pos] + c[pos]) + (2 * a / alpha[pos] if a else 0.0)
        np.testing.assert_allclose(lhs, D[pos], rtol=1e-10)
        if a == 0:  # alpha = 0 exactly where the slope at 0, g/c - D, is not positive
            np.testing.assert_array_equal(alpha == 0, g / c <= D)
        else:
            assert np.all(pos)
    np.testing.assert_array_equal(solve_alpha(g, D, 1.0, 0.0), (g + 2.0) / D)
    assert solve_alpha(1.0, 0.0, 1.0, 0.5) == np.inf  # the objective rises without bound
    # Tipping's step with gamma + 2a <= 0 (alpha Sigma_mm rounded to 1 or above) prunes
    # the basis (inf), as the reference solver does, instead of making it most relevant
    np.testing.assert_array_equal(
        solve_alpha([0.0, -1e-17, 0.5], 0.3, 0.0, 0.0), [np.inf, np.inf, 0.5 / 0.3]
    )


# ---- from tests/test_kernels.py


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(20260101)


def test_design_in_several_row_blocks(rng, monkeypatch):
    import rvm_pymc.basis as basis_module

    monkeypatch.setattr(basis_module, "_BLOCK_ENTRIES", 20)  # 20 entries: 2 centres a block
    X = rng.normal(size=(9, 2))
    for kernel in (RBF(gamma=0.3), CallableKernel(lambda A, B: A @ B.T + 1.0)):
        Phi = KernelBasis(kernel, bias=True).fit_transform(X)
        np.testing.assert_allclose(Phi[:, 1:], kernel(X, X), rtol=1e-14, atol=1e-14)
        np.testing.assert_array_equal(Phi[:, 0], 1.0)


@pytest.mark.parametrize("kernel", [RBF(gamma=0.5), Laplacian(gamma=0.3), Cauchy(gamma=2.0)])
def test_a_large_design_filled_on_threads_is_the_one_of_one_thread(kernel, monkeypatch):
    import rvm_pymc.basis as basis_module

    rng = np.random.default_rng(0)
    X = rng.standard_normal((3000, 2))
    basis = KernelBasis(kernel, centres="all").fit(X[:300])
    calls = []
    real = basis_module.thread_map
    monkeypatch.setattr(basis_module, "thread_map", lambda *a: calls.append(1) or real(*a))
    monkeypatch.setattr(basis_module, "_THREAD_ENTRIES", 1)  # every design on threads
    threaded = basis.transform(X)
    monkeypatch.setattr(basis_module, "_THREAD_ENTRIES", 1 << 62)  # none
    serial = basis.transform(X)
    assert calls == [1]  # the first on threads, the second not
    assert np.array_equal(threaded, serial) and threaded.flags.f_contiguous


def test_a_symmetric_kernel_without_threaded_fill_is_filled_in_one_thread(monkeypatch):
    import rvm_pymc.basis as basis_module

    monkeypatch.setattr(basis_module, "_THREAD_ENTRIES", 1)
    monkeypatch.setattr(basis_module, "thread_map", lambda *a: pytest.fail("threaded"))
    assert Linear.symmetric and not getattr(Linear(), "threaded_fill", False)
    X = np.random.default_rng(1).standard_normal((50, 3))
    Phi = KernelBasis(Linear(), centres="all").fit(X).transform(X)
    np.testing.assert_allclose(Phi[:, 1:], X @ X.T)


# ---- from tests/test_distributed.py

GRID = [0.03, 0.1, 0.3, 1.0]


def _sinc(n=80, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-10, 10, (n, 1))
    return X, np.sinc(X[:, 0] / np.pi) + 0.1 * rng.standard_normal(n)


def test_every_width_task_and_the_rebuilt_design_have_the_same_centres(monkeypatch):
    """A Generator random_state must not give a width's task other centres than the rebuild.

    The large-N path (a subset of centres from a random pool) is forced at N = 400; the
    fitted log evidence must be the Gaussian marginal likelihood of the fitted
    hyperparameters on the estimator's own active design.
    """
    from scipy.stats import multivariate_normal

    import rvm_pymc._core.centres as centres

    monkeypatch.setattr(centres, "AUTO_FULL_MAX", 100)
    monkeypatch.setattr(centres, "AUTO_MAX_CENTRES", 60)
    monkeypatch.setattr(centres, "CENTRE_POOL", 150)
    X, y = _sinc(400, seed=3)
    est = RVR(gamma="evidence", gamma_grid=GRID, random_state=np.random.default_rng(0))
    est.fit(X, y)
    Phi = est.design_matrix(X)
    cov = est.noise_var_ * np.eye(len(y)) + (Phi / est.alpha_) @ Phi.T
    exact = multivariate_normal(np.full(len(y), est.y_offset_), cov).logpdf(y)
    assert est.log_evidence_ == pytest.approx(exact, abs=1e-6 * abs(exact))


# ---- from tests/test_reference_regression.py


def sinc_problem(n=100, gamma=0.1, seed=0):
    X, t, Xt, tt = make_sinc(n_train=n, noise_sd=0.1, random_state=seed)
    basis = KernelBasis(RBF(gamma=gamma), bias=True)
    return basis.fit_transform(X), t, basis.transform(Xt), tt


def test_fast_rank_one_updates_match_full_solve():
    Phi, t, _, _ = sinc_problem(n=40, seed=5)
    Phin = Phi / np.linalg.norm(Phi, axis=0)
    st = SequentialState(Phin, t, np.ones(Phi.shape[1], bool), 50.0)
    st.active, st.alpha = [3], np.array([2.0])
    st.G = (Phin.T @ Phin[:, 3])[:, None]
    st.resolve()

    def check():
        ref = SequentialState(Phin, t, np.ones(Phi.shape[1], bool), 50.0)
        ref.active, ref.alpha, ref.G = list(st.active), st.alpha.copy(), st.G.copy()
        ref.resolve()
        for name in ("Sigma", "mu", "S", "Q"):
            np.testing.assert_allclose(getattr(st, name), getattr(ref, name), atol=1e-9, rtol=1e-8)

    st.add(10, 0.7)
    check()
    st.add(25, 3.0)
    check()
    st.reestimate(1, 0.2)
    check()
    st.delete(0)
    check()


@pytest.mark.parametrize("method", ["fast", "mackay", "em"])
@pytest.mark.parametrize("n", [3, 5, 40])
def test_exactly_fitted_target_stops_at_the_noise_bound(method, n):
    from rvm_pymc.reference._options import BETA_MAX_FACTOR

    x = np.linspace(-1, 1, n)
    Phi = np.column_stack([np.ones(n), x, x**2])
    t = 1.0 + 2.0 * x  # in the span of the basis: the evidence grows as the noise vanishes
    res, caught = one_warning_at_most(lambda: fit_regression(Phi, t, method=method))
    assert len(caught) == 1
    assert "upper bound" in str(caught[0].message)
    assert res.beta == pytest.approx(BETA_MAX_FACTOR / np.var(t), rel=1e-9)
    assert res.n_iter < 1000  # stopped at the bound, not at max_iter
    assert np.all(np.isfinite(res.mean)) and np.isfinite(res.log_evidence)
    np.testing.assert_allclose(res.predict(Phi), t, atol=1e-3 * np.std(t))


# ---- from tests/test_scale.py


@pytest.fixture
def auto_subset(monkeypatch):
    """Make ``centres="auto"`` choose 100 centres above 100 training points."""
    monkeypatch.setattr(_centres, "AUTO_FULL_MAX", 100)
    monkeypatch.setattr(_centres, "AUTO_MAX_CENTRES", 100)
    monkeypatch.setattr(_centres, "AUTO_FILL_CENTRES", 100)


def _rmse(est, data) -> float:
    return float(np.sqrt(np.mean((est.predict(data.X_test) - data.t_test) ** 2)))


def test_chosen_centres_span_every_kernel_column():
    """Pivoted Cholesky: every residual kernel variance ends below tol (Nystrom check)."""
    X = np.random.default_rng(1).uniform(-10, 10, size=(1500, 2))
    k = RBF(gamma=0.05)
    idx = _centres.choose_centres(X, k, 400, tol=1e-6)
    assert np.all(np.diff(idx) > 0) and idx.size < 400  # sorted, distinct, stopped by tol
    K_nS = k(X, X[idx])
    L = np.linalg.cholesky(k(X[idx]))
    V = np.linalg.solve(L, K_nS.T)
    residual = 1.0 - np.sum(V * V, axis=0)  # k(x, x) = 1
    assert residual.max() <= 1e-6 * (1 + 1e-3)
    # one centre fewer leaves some column unexplained beyond tol: the rule is not wasteful
    fewer = _centres.choose_centres(X, k, idx.size - 1, tol=1e-6)
    K1 = k(X, X[fewer])
    V1 = np.linalg.solve(np.linalg.cholesky(k(X[fewer])), K1.T)
    assert (1.0 - np.sum(V1 * V1, axis=0)).max() > 1e-6


def test_centre_count_follows_the_width_and_the_cap():
    x = np.linspace(-10, 10, 3000)[:, None]
    wide = _centres.choose_centres(x, RBF(gamma=0.03), 500)
    narrow = _centres.choose_centres(x, RBF(gamma=300.0), 500)
    assert wide.size < 30 < narrow.size == 500


def _kernel_distance(k, A, B):
    return k.diag(A)[:, None] + k.diag(B)[None, :] - 2.0 * k(A, B)


def test_spread_fill_covers_as_far_as_it_packs():
    """Farthest-point fill: no point is farther from the centres than two centres are apart."""
    X = np.random.default_rng(8).uniform(-5, 5, size=(800, 2))
    k = RBF(gamma=0.2)
    out = _centres.spread_fill(X, k, k.diag(X), [3, 10], 60)
    assert out[:2] == [3, 10] and len(out) == len(set(out)) == 60
    cover = _kernel_distance(k, X, X[out]).min(axis=1).max()
    pair = _kernel_distance(k, X[out], X[out])
    pack = pair[~np.eye(60, dtype=bool)].min()
    assert pack >= cover * (1 - 1e-9)
    # a random choice of 60 points does not have this property on these data
    rand = np.random.default_rng(0).choice(800, 60, replace=False)
    pr = _kernel_distance(k, X[rand], X[rand])
    assert pr[~np.eye(60, dtype=bool)].min() < _kernel_distance(k, X, X[rand]).min(axis=1).max()


def test_spread_fill_never_adds_a_duplicate():
    X = np.repeat(np.arange(5.0), 4)[:, None]  # 5 distinct points, each 4 times
    k = RBF(gamma=1.0)
    out = _centres.spread_fill(X, k, k.diag(X), [0], 12)
    assert sorted(X[out, 0]) == [0.0, 1.0, 2.0, 3.0, 4.0]


def test_fill_past_the_numerical_rank():
    x = np.linspace(-10, 10, 3000)[:, None]
    k = RBF(gamma=0.03)
    rank = _centres.choose_centres(x, k, 500)
    filled = _centres.choose_centres(x, k, 500, fill_to=200)
    assert rank.size < 30 and filled.size == 200
    assert set(rank) <= set(filled)
    gaps = np.diff(x[filled, 0])  # spread over the inputs, no clumps
    assert gaps.max() < 2.5 * 20 / 200
    # a kernel of higher rank than the cap keeps the cap: no fill
    narrow = _centres.choose_centres(x, RBF(gamma=300.0), 100, fill_to=200)
    assert narrow.size == 100


def test_pool_drawn_by_random_state(monkeypatch):
    monkeypatch.setattr(_centres, "CENTRE_POOL", 400)
    X = np.random.default_rng(2).uniform(-3, 3, size=(2000, 1))
    k = RBF(gamma=20.0)
    a = _centres.choose_centres(X, k, 50, random_state=None)
    assert np.array_equal(a, _centres.choose_centres(X, k, 50, random_state=None))
    assert np.array_equal(
        _centres.choose_centres(X, k, 50, random_state=7),
        _centres.choose_centres(X, k, 50, random_state=np.random.default_rng(7)),
    )
    assert not np.array_equal(a, _centres.choose_centres(X, k, 50, random_state=7))


def test_design_built_in_blocks_equals_one_call(monkeypatch):
    import rvm_pymc.basis as basis_mod

    X = np.random.default_rng(4).normal(size=(1000, 3))
    whole = KernelBasis(Cauchy(gamma=0.7), centres="all").fit(X).transform(X[:333])
    monkeypatch.setattr(basis_mod, "_BLOCK_ENTRIES", 5000)  # 5 rows per block
    blocks = KernelBasis(Cauchy(gamma=0.7), centres="all").fit(X).transform(X[:333])
    np.testing.assert_array_equal(whole, blocks)


def test_auto_regression_matches_the_exact_fit(auto_subset, monkeypatch):
    """Forced subset vs every point a centre: mean test RMSE over seeds within 5%."""
    exact, auto = [], []
    for seed in range(4):
        d = make_sinc(n_train=400, n_test=500, noise_sd=0.1, random_state=seed)
        est = RVR(gamma=3.0).fit(d.X_train, d.t_train)
        assert est.basis_scale_.size == 101  # the subset was used
        auto.append(_rmse(est, d))
        np.testing.assert_array_equal(est.relevance_vectors_, d.X_train[est.relevance_indices_])
        names = [n for n in est.active_names_ if n != "bias"]
        assert names == [f"x{i}" for i in est.relevance_indices_]
        with monkeypatch.context() as m:
            m.setattr(_centres, "AUTO_FULL_MAX", 50_000)
            ref = RVR(gamma=3.0).fit(d.X_train, d.t_train)
        assert ref.basis_scale_.size == 401
        exact.append(_rmse(ref, d))
    assert np.mean(auto) <= 1.05 * np.mean(exact)


def test_auto_classification_matches_the_exact_fit(auto_subset, monkeypatch):
    d = make_ripley(n_train=400, n_test=2000, random_state=0)
    est = RVC().fit(d.X_train, d.t_train)
    assert est.basis_scale_.size < 401
    with monkeypatch.context() as m:
        m.setattr(_centres, "AUTO_FULL_MAX", 50_000)
        ref = RVC().fit(d.X_train, d.t_train)
    err, err_ref = (np.mean(e.predict(d.X_test) != d.t_test) for e in (est, ref))
    assert err <= 1.05 * err_ref


# ---- from tests/test_scale.py


def test_auto_path_saves_and_loads(auto_subset, tmp_path):
    d = make_sinc(n_train=300, n_test=50, noise_sd=0.1, random_state=5)
    est = RVR(random_state=3).fit(d.X_train, d.t_train)
    est.save(tmp_path / "m.nc")
    back = RVR.load(tmp_path / "m.nc")
    np.testing.assert_array_equal(back.relevance_indices_, est.relevance_indices_)
    np.testing.assert_array_equal(back.basis_scale_, est.basis_scale_)
    np.testing.assert_allclose(back.predict(d.X_test), est.predict(d.X_test), rtol=1e-12)


def test_auto_path_evidence_width(auto_subset):
    d = make_sinc(n_train=300, n_test=200, noise_sd=0.1, random_state=6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # a width at the grid's edge
        est = RVR(gamma="evidence").fit(d.X_train, d.t_train)
    assert est.evidence_path_["gamma"].size >= 9  # the grid, then refined
    assert est.gamma_ in est.evidence_path_["gamma"]
    assert _rmse(est, d) < 0.05


@pytest.mark.parametrize("max_bytes", [8, 8 * 23 * 5, 2**26])
def test_width_latent_in_chunks_of_rows_and_draws_equals_the_direct_product(max_bytes):
    """Every chunking of rows and draws (down to one row of one draw) gives each draw's
    ``[1 | exp(-gamma_s D)] w_s + offset``, for one output and for several."""
    from rvm_pymc._core.rbf_width import width_latent

    rng = np.random.default_rng(0)
    D, g = rng.random((37, 23)), rng.random(11)
    for w in (rng.standard_normal((11, 24)), rng.standard_normal((11, 24, 3))):
        direct = np.stack(
            [np.hstack([np.ones((37, 1)), np.exp(-g[s] * D)]) @ w[s] + 0.5 for s in range(11)]
        )
        got = width_latent(D, g, w, bias=True, y_offset=0.5, max_bytes=max_bytes)
        np.testing.assert_allclose(got, direct, rtol=1e-12, atol=1e-12)


def test_column_rms_at_equals_the_rms_of_each_draws_columns():
    """The RMS of every kernel column at each of a (chain, draw) array of log length scales,
    in chunks down to one draw, equals the columns of ``rbf_columns`` draw by draw; a
    scalar gives one row."""
    from rvm_pymc._core.rbf_width import column_rms_at, rbf_columns, sq_distances

    rng = np.random.default_rng(3)
    X = rng.normal(size=(25, 3))
    D = sq_distances(X, X[:7])
    lls = rng.normal(scale=0.7, size=(2, 5))
    direct = np.stack(
        [np.sqrt(np.mean(rbf_columns(D, v, bias=False, unit_rms=False) ** 2, axis=0))
         for v in lls.reshape(-1)]
    ).reshape(2, 5, 7)  # fmt: skip
    for max_bytes in (1, 8 * D.size * 3, 2**20):
        np.testing.assert_allclose(column_rms_at(D, lls, max_bytes), direct, rtol=1e-14)
    assert column_rms_at(D, 0.2).shape == (7,)
    at = np.sqrt(np.mean(rbf_columns(D, 0.2, bias=False, unit_rms=False) ** 2, axis=0))
    np.testing.assert_allclose(column_rms_at(D, 0.2), at, rtol=1e-14)
