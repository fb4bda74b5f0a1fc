"""Every failure a clear message: one table of bad inputs, each with its exception and phrase.

Each row is (id, callable, expected exception type, a phrase of its message).
The estimators run the reference method on tiny data; no PyMC model is
compiled (the two PyMC rows fail in the parameter checks, before any model).
"""

from __future__ import annotations

import numpy as np
import pytest

from rvm_pymc.estimators import RVR


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = np.linspace(-3.0, 3.0, 20)[:, None]
    t = np.sin(X[:, 0]) + 0.1 * rng.standard_normal(20)
    return X, t


# ------------------------------------------------------------ gamma="scale"


@pytest.mark.parametrize("scale", [1e-160, 1e-200, 1e160, 1e300])
@pytest.mark.parametrize("gamma", ["scale", "evidence"])
def test_scale_gamma_names_the_scale_of_X(data, scale, gamma):
    """The issue's case: it said "gamma must be finite and > 0; got inf"."""
    X, t = data
    word = "small" if scale < 1 else "large"
    with pytest.raises(ValueError, match=rf"X has variance .* too {word} .*rescale X"):
        RVR(gamma=gamma).fit(X * scale, t)


@pytest.mark.parametrize("scale", [1e-150, 1e-10, 1e10, 1e150])
def test_scale_gamma_is_equivariant_within_the_float_range(data, scale):
    """Inside the float range gamma="scale" follows the scale of X: the same fit."""
    X, t = data
    base = RVR().fit(X, t)
    moved = RVR().fit(X * scale, t)
    assert moved.gamma_ == pytest.approx(base.gamma_ / scale**2, rel=1e-12)
    np.testing.assert_array_equal(moved.relevance_indices_, base.relevance_indices_)
    np.testing.assert_allclose(moved.predict(X * scale), base.predict(X), rtol=1e-8, atol=1e-10)


def test_scale_gamma_of_constant_X_is_one():
    assert RVR()._scale_gamma(np.full((20, 2), 1e-300)) == 1.0
