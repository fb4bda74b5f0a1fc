"""rvm_pymc._core.gaussian against dense NumPy formulas (inv, slogdet, solve as oracles)."""

from __future__ import annotations

import extended_precision
import numpy as np
import pytest

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
