"""The marginal regression likelihood through a low-rank factor of ``Phi^T Phi``.

Against the dense path (:func:`rvm_pymc.models.marginal_logp_fast`), finite
differences and exact rational arithmetic.  Graphs compile with
``mode="FAST_COMPILE"``; one test compiles a PyMC model (N = 40).
"""

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
from test_models import _exact_marginal_logp

from rvm_pymc import models
from rvm_pymc.models.data import check_gram

pytestmark = pytest.mark.pymc
FAST = "FAST_COMPILE"


def _sinc(n, seed=0, width=1.0):
    """A unit-RMS RBF design with bias on sorted 1-D inputs, and standardised sinc targets."""
    rng = np.random.default_rng(seed)
    x = np.sort(rng.uniform(-10.0, 10.0, n))
    Phi = np.column_stack([np.ones(n), np.exp(-0.5 * ((x[:, None] - x[None]) / width) ** 2)])
    Phi /= np.sqrt(np.mean(Phi**2, axis=0))
    t = np.sinc(x / np.pi) + 0.1 * rng.standard_normal(n)
    return Phi, (t - t.mean()) / t.std()


def _rank_r(n, m, r, seed=1):
    """An N x M design of rank r (well-conditioned on its range) and targets."""
    rng = np.random.default_rng(seed)
    Phi = rng.standard_normal((n, r)) @ rng.standard_normal((r, m))
    t = Phi @ rng.standard_normal(m) / np.sqrt(m) + 0.3 * rng.standard_normal(n)
    return Phi, t


def _functions(Phi, t):
    """Value and gradient in (log alpha, log beta) of the dense and the low-rank forms."""
    la, lb = pt.dvector("la"), pt.dscalar("lb")
    W = models.gram_factor(Phi)
    dense = models.marginal_logp_fast(t, la, lb, Phi, Phi.T @ Phi)
    low = models.marginal_logp_low_rank(t, la, lb, Phi, W)
    return [
        pytensor.function([la, lb], [lp, *pytensor.grad(lp, [la, lb])], mode=FAST)
        for lp in (dense, low)
    ]


def test_gram_factor_spans_the_gram_matrix():
    Phi, _ = _rank_r(30, 20, 4)
    W = models.gram_factor(Phi)
    assert W.shape == (20, 4)
    G = Phi.T @ Phi
    np.testing.assert_allclose(W @ W.T, G, rtol=0, atol=1e-12 * np.abs(G).max())
    WtW = W.T @ W  # orthogonal columns, by decreasing norm
    np.testing.assert_allclose(WtW, np.diag(np.diag(WtW)), rtol=0, atol=1e-12 * WtW[0, 0])
    assert np.all(np.diff(np.diag(WtW)) <= 0)
    # a smooth kernel: eigenvalues decay exponentially, the rank is well below M
    Phi, _ = _sinc(60, width=3.0)
    assert models.gram_factor(Phi).shape[1] == 19
    assert models.gram_factor(Phi, rtol=0.0).shape[1] == 60  # rank <= N
    with pytest.raises(ValueError, match="rtol"):
        models.gram_factor(Phi, rtol=1.0)


@pytest.mark.parametrize("spread", [1.0, 4.0])
def test_low_rank_equals_dense_on_a_rank_deficient_design(spread):
    """Where W W^T = Phi^T Phi to rounding, value and gradient are the dense path's."""
    Phi, t = _rank_r(30, 24, 5)
    dense, low = _functions(Phi, t)
    rng = np.random.default_rng(2)
    for _ in range(3):
        la, lb = spread * rng.standard_normal(24), rng.uniform(-1.0, 3.0)
        want, got = dense(la, lb), low(la, lb)
        assert got[0] == pytest.approx(want[0], rel=1e-11)
        np.testing.assert_allclose(got[1], want[1], rtol=1e-9, atol=1e-11)
        assert got[2] == pytest.approx(want[2], rel=1e-9)


def test_low_rank_on_a_smooth_kernel_design():
    """An RBF design (rank 43 of 61 at GRAM_RTOL): the dense value and gradient.

    Either form's gradient is known only to about 7e-9 here (against a long-double
    oracle: ``diag(Sigma)`` of this ill-conditioned design moves with the rounding of
    ``Phi^T Phi``); with ``rtol=eps`` (rank 40) the gap to the dense one is 2e-7.
    """
    Phi, t = _sinc(60)
    dense, low = _functions(Phi, t)
    rng = np.random.default_rng(3)
    la, lb = rng.standard_normal(61), 2.0
    want, got = dense(la, lb), low(la, lb)
    assert got[0] == pytest.approx(want[0], rel=1e-12)
    np.testing.assert_allclose(got[1], want[1], rtol=0, atol=3e-8)
    assert got[2] == pytest.approx(want[2], abs=3e-8)
    # central differences of the low-rank value itself (step h: error ~ h^2 + eps/h)
    h = 1e-5
    fd = [(low(la + h * e, lb)[0] - low(la - h * e, lb)[0]) / (2 * h) for e in np.eye(61)]
    np.testing.assert_allclose(got[1], fd, rtol=0, atol=1e-7)
    assert got[2] == pytest.approx((low(la, lb + h)[0] - low(la, lb - h)[0]) / (2 * h), abs=1e-7)


@pytest.mark.parametrize("offset", [0.0, 1e7])
def test_low_rank_exact_at_large_target_offsets(offset):
    """The part of t outside the range of Phi is counted exactly (residual form)."""
    rng = np.random.default_rng(5)
    n, x = 10, np.linspace(-1.0, 1.0, 10)
    Phi = np.column_stack([np.ones(n), x, x**2]) @ rng.standard_normal((3, 9))  # rank 3
    t = offset + x + 0.1 * rng.standard_normal(n)
    la = np.array([np.log(1.0 / (offset**2 + 1.0))] * 3 + [0.0, 2.0] * 3)
    lb = np.log(100.0)
    want = _exact_marginal_logp(Phi, t, np.exp(la), np.exp(lb))
    lp = models.marginal_logp_low_rank(t, la, lb, Phi, models.gram_factor(Phi))
    got = pytensor.function([], lp, mode=FAST)()
    assert float(got) == pytest.approx(want, abs=1e-7 * (1 + abs(want)))


def test_regression_marginal_chooses_the_form_and_the_fits_check_the_factor():
    Phi, t = _sinc(40, width=5.0)
    rank = models.gram_factor(Phi).shape[1]
    assert rank <= models.LOW_RANK_FRACTION * 41
    auto = models.regression_marginal(Phi, t)
    assert auto["PhiTPhi_factor"].get_value().shape == (41, rank)
    full = models.regression_marginal(*_rank_r(40, 12, 12))
    assert "PhiTPhi_factor" not in full.named_vars  # full rank: the dense path
    dense = models.regression_marginal(Phi, t, low_rank=False)
    assert "PhiTPhi_factor" not in dense.named_vars
    with pytest.raises(ValueError, match="low_rank"):
        models.regression_marginal(Phi, t, low_rank="yes")
    point = {"log_alpha": np.random.default_rng(4).standard_normal(41), "log_beta": 1.0}
    got = [m.compile_logp(mode=FAST)(point) for m in (auto, dense)]
    assert got[0] == pytest.approx(got[1], rel=1e-12)
    spec = models.model_spec(auto)
    check_gram(auto, spec)
    with auto:  # a new design whose PhiTPhi is set, but not the factor
        Phi2 = _sinc(40, seed=1, width=5.0)[0]
        pm.set_data({"Phi": Phi2, "PhiTPhi": Phi2.T @ Phi2})
    with pytest.raises(ValueError, match="PhiTPhi_factor"):
        check_gram(auto, spec)


def test_the_low_rank_gradient_in_the_data_is_undefined():
    Phi, t = _rank_r(12, 8, 2)
    P = pt.dmatrix("P")
    lp = models.marginal_logp_low_rank(t, np.zeros(8), 0.0, P, models.gram_factor(Phi))
    with pytest.raises(Exception, match="undefined"):
        pytensor.grad(lp, P)
