"""The solver's one-class and scalar shortcuts against the general forms they replace.

The fast solvers call these functions at every step; their shortcuts (one class,
one move's scalars, a likelihood built once per fit) must give the numbers of
the general code, bit for bit where the arithmetic is the same.
"""

from __future__ import annotations

import numpy as np
import pytest

from rvm_pymc._core.gaussian import spd_inverse
from rvm_pymc._core.sparsity import gain_rounding, leaving_active
from rvm_pymc.reference._laplace import OneColumn, find_mode, find_mode_one_column


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
