"""Tests of the synthetic data generators in :mod:`rvm_pymc.datasets`."""

import subprocess
import sys

import numpy as np
import pytest
from shared_helpers import sk_friedman1, sk_friedman2
from sklearn import datasets as skd

from rvm_pymc.datasets import (
    Dataset,
    check_random_state,
    make_friedman1,
    make_friedman2,
    make_friedman3,
    make_gaussian_mixture_classes,
    make_ripley,
    make_sinc,
    sinc,
)

GENERATORS = {
    "sinc": make_sinc,
    "friedman1": make_friedman1,
    "friedman2": make_friedman2,
    "friedman3": make_friedman3,
    "ripley": make_ripley,
    "mixture": make_gaussian_mixture_classes,
}


def _assert_same(a: Dataset, b: Dataset) -> None:
    for x, y in zip(a, b, strict=True):
        np.testing.assert_array_equal(x, y)


# --------------------------------------------------------------------------- container / shapes


@pytest.mark.parametrize(
    ("make", "n_features"),
    [
        (make_sinc, 1),
        (make_friedman1, 10),
        (make_friedman2, 4),
        (make_friedman3, 4),
        (make_ripley, 2),
    ],
)
def test_shapes_and_unpacking(make, n_features):
    data = make(n_train=37, n_test=53, random_state=0)
    assert isinstance(data, Dataset)
    X, t, Xt, tt = data
    assert X.shape == (37, n_features)
    assert t.shape == (37,)
    assert Xt.shape == (53, n_features)
    assert tt.shape == (53,)
    assert X is data.X_train and t is data.t_train and Xt is data.X_test and tt is data.t_test
    assert isinstance(data.name, str) and data.name
    assert repr(data).startswith("Dataset(")


def test_default_sizes_follow_tipping_2001():
    assert make_sinc(random_state=0).X_train.shape == (100, 1)
    assert make_sinc(random_state=0).X_test.shape == (1000, 1)
    for make in (make_friedman1, make_friedman2, make_friedman3):
        data = make(random_state=0)
        assert data.X_train.shape[0] == 240
        assert data.X_test.shape[0] == 1000
    ripley = make_ripley(random_state=0)
    assert ripley.X_train.shape == (250, 2) and ripley.X_test.shape == (1000, 2)


def test_mixture_shapes_and_labels():
    X, t, Xt, tt = make_gaussian_mixture_classes(
        n_samples=100, n_test=41, n_classes=4, n_components=2, random_state=1
    )
    assert X.shape == (100, 2) and Xt.shape == (41, 2)
    assert t.dtype.kind == "i" and tt.dtype.kind == "i"
    assert np.bincount(t).tolist() == [25, 25, 25, 25]
    assert set(tt.tolist()) == {0, 1, 2, 3}


def test_dataset_is_frozen():
    data = make_sinc(n_train=5, n_test=5, random_state=0)
    with pytest.raises(AttributeError):
        data.noise_sd = 1.0


# --------------------------------------------------------------------------- reproducibility


@pytest.mark.parametrize("name", list(GENERATORS))
def test_same_seed_same_data_other_seed_other_data(name):
    make = GENERATORS[name]
    _assert_same(make(random_state=7), make(random_state=7))
    _assert_same(
        make(random_state=np.random.default_rng(7)), make(random_state=np.random.default_rng(7))
    )
    a, b = make(random_state=7), make(random_state=8)
    assert not np.array_equal(a.X_train, b.X_train)
    assert not np.array_equal(a.t_train, b.t_train)
    if name == "sinc":  # the sinc test set is a fixed grid
        np.testing.assert_array_equal(a.X_test, b.X_test)
    else:
        assert not np.array_equal(a.X_test, b.X_test)


def test_generator_is_advanced_not_copied():
    rng = np.random.default_rng(3)
    a, b = make_sinc(random_state=rng), make_sinc(random_state=rng)
    assert not np.array_equal(a.X_train, b.X_train)


def test_check_random_state():
    rng = np.random.default_rng(0)
    assert check_random_state(rng) is rng
    assert isinstance(check_random_state(None), np.random.Generator)
    assert check_random_state(5).random() == np.random.default_rng(5).random()
    assert check_random_state(np.int64(5)).random() == np.random.default_rng(5).random()
    for bad in (1.5, "0", True, -1, np.random.RandomState(0)):
        with pytest.raises(ValueError, match="random_state"):
            check_random_state(bad)


def test_module_does_not_import_pymc():
    code = "import sys, rvm_pymc.datasets; print('pymc' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# --------------------------------------------------------------------------- sinc


def test_sinc_function_zero_and_exact():
    assert sinc(0.0) == 1.0
    x = np.array([-3.0, -1e-8, 0.0, 0.5, 7.25])
    expected = np.array([np.sin(-3.0) / -3.0, np.sin(-1e-8) / -1e-8, 1.0, np.sin(0.5) / 0.5])
    np.testing.assert_array_equal(sinc(x)[:4], expected)
    assert sinc(x)[4] == np.sin(7.25) / 7.25


def test_sinc_test_targets_are_noise_free_sin_x_over_x():
    data = make_sinc(n_test=1000, random_state=0)
    x = data.X_test[:, 0]
    np.testing.assert_array_equal(x, np.linspace(-10, 10, 1000))
    assert np.all(x != 0)
    np.testing.assert_array_equal(data.t_test, np.sin(x) / x)


def test_sinc_grid_through_zero_gives_one():
    data = make_sinc(n_test=3, x_range=(-1, 1), random_state=0)
    np.testing.assert_array_equal(data.X_test[:, 0], [-1.0, 0.0, 1.0])
    assert data.t_test[1] == 1.0
    assert data.t_test[0] == np.sin(-1.0) / -1.0


def test_sinc_training_inputs_in_range():
    data = make_sinc(n_train=2000, x_range=(-2.0, 5.0), random_state=0)
    assert data.X_train.min() >= -2.0 and data.X_train.max() < 5.0
    # uniform on the range: mean within 5 standard errors of the midpoint
    se = 7.0 / np.sqrt(12 * 2000)
    assert abs(data.X_train.mean() - 1.5) < 5 * se


def test_sinc_gaussian_noise_sd():
    data = make_sinc(n_train=20000, noise_sd=0.3, random_state=1)
    resid = data.t_train - sinc(data.X_train[:, 0])
    assert data.noise_sd == 0.3
    assert abs(resid.std() / 0.3 - 1) < 0.03
    assert abs(resid.mean()) < 4 * 0.3 / np.sqrt(20000)


def test_sinc_uniform_noise_within_bounds():
    data = make_sinc(n_train=20000, noise="uniform", noise_width=0.2, random_state=2)
    resid = data.t_train - sinc(data.X_train[:, 0])
    assert resid.min() >= -0.2 and resid.max() <= 0.2
    # fills the interval, not just a part of it
    assert resid.min() < -0.19 and resid.max() > 0.19
    assert data.noise_sd == pytest.approx(0.2 / np.sqrt(3))
    assert abs(resid.std() / data.noise_sd - 1) < 0.03
    assert data.name == "sinc-uniform"


def test_sinc_without_noise():
    for noise in ("none", None):
        data = make_sinc(n_train=50, noise=noise, random_state=0)
        np.testing.assert_array_equal(data.t_train, sinc(data.X_train[:, 0]))
        assert data.noise_sd == 0.0


# --------------------------------------------------------------------------- Friedman


def test_friedman_input_distributions_match_scikit_learn():
    X1 = make_friedman1(n_train=5000, n_features=7, random_state=0).X_train
    assert X1.shape[1] == 7 and X1.min() >= 0 and X1.max() < 1
    X2 = make_friedman2(n_train=5000, random_state=0).X_train
    X_sk, _ = skd.make_friedman2(n_samples=5000, random_state=0)
    lo, hi = [0, 40 * np.pi, 0, 1], [100, 560 * np.pi, 1, 11]
    for j in range(4):
        assert X2[:, j].min() >= lo[j] and X2[:, j].max() <= hi[j]
        assert X_sk[:, j].min() >= lo[j] and X_sk[:, j].max() <= hi[j]
        # both samples fill the same box (means agree within 5 standard errors)
        se = (hi[j] - lo[j]) / np.sqrt(12 * 5000)
        assert abs(X2[:, j].mean() - X_sk[:, j].mean()) < 5 * np.sqrt(2) * se


def test_friedman1_noise_sd():
    data = make_friedman1(n_train=20000, random_state=3)
    resid = data.t_train - sk_friedman1(data.X_train)
    assert data.noise_sd == 1.0
    assert abs(resid.std() - 1.0) < 0.03


def test_friedman_explicit_noise_sd():
    data = make_friedman2(n_train=50, noise_sd=0.0, random_state=0)
    assert data.noise_sd == 0.0
    np.testing.assert_allclose(data.t_train, sk_friedman2(data.X_train), rtol=1e-13)
    assert make_friedman3(n_train=5, noise_sd=2, random_state=0).noise_sd == 2.0


# --------------------------------------------------------------------------- Ripley


def test_ripley_class_balance_and_labels():
    _, t, _, tt = make_ripley(random_state=0)
    assert t.dtype.kind == "i" and set(np.unique(t)) == {0, 1}
    assert np.bincount(t).tolist() == [125, 125]
    assert np.bincount(tt).tolist() == [500, 500]
    # rows are shuffled, not sorted by class
    assert np.any(np.diff(t) < 0) and np.any(np.diff(t) > 0)
    # odd sizes: counts differ by at most one, the first class gets the extra point
    odd = make_ripley(n_train=7, n_test=3, random_state=0)
    assert np.bincount(odd.t_train).tolist() == [4, 3]
    assert np.bincount(odd.t_test).tolist() == [2, 1]


def test_ripley_public_class_means():
    X, t, _, _ = make_ripley(n_train=100_000, n_test=2, random_state=1)
    # equal mixtures: class 0 centred at (-0.2, 0.3), class 1 at (0.05, 0.7)
    np.testing.assert_allclose(X[t == 0].mean(axis=0), [-0.2, 0.3], atol=0.01, rtol=0)
    np.testing.assert_allclose(X[t == 1].mean(axis=0), [0.05, 0.7], atol=0.01, rtol=0)
    # class 0 components are well separated in x1: split at the midpoint -0.2
    left = X[(t == 0) & (X[:, 0] < -0.2)]
    right = X[(t == 0) & (X[:, 0] >= -0.2)]
    assert abs(len(left) - len(right)) < 0.02 * len(X)
    np.testing.assert_allclose(left.mean(axis=0), [-0.7, 0.3], atol=0.01, rtol=0)
    np.testing.assert_allclose(right.mean(axis=0), [0.3, 0.3], atol=0.01, rtol=0)


# --------------------------------------------------------------------------- Gaussian mixture


# --------------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    ("make", "kwargs", "argument"),
    [
        (make_sinc, {"n_train": 0}, "n_train"),
        (make_sinc, {"n_train": 2.5}, "n_train"),
        (make_sinc, {"n_test": 0}, "n_test"),
        (make_sinc, {"noise_sd": -0.1}, "noise_sd"),
        (make_sinc, {"noise_sd": np.nan}, "noise_sd"),
        (make_sinc, {"noise_width": -1.0}, "noise_width"),
        (make_sinc, {"noise": "laplace"}, "noise"),
        (make_sinc, {"x_range": (1, -1)}, "x_range"),
        (make_sinc, {"x_range": (0, 0)}, "x_range"),
        (make_sinc, {"x_range": (0, 1, 2)}, "x_range"),
        (make_sinc, {"x_range": (0, np.inf)}, "x_range"),
        (make_friedman1, {"n_train": 0}, "n_train"),
        (make_friedman1, {"noise_sd": -1.0}, "noise_sd"),
        (make_friedman1, {"n_features": 4}, "n_features"),
        (make_friedman2, {"n_train": -3}, "n_train"),
        (make_friedman2, {"noise_sd": -1.0}, "noise_sd"),
        (make_friedman2, {"noise_sd": "big"}, "noise_sd"),
        (make_friedman3, {"n_test": 0}, "n_test"),
        (make_friedman3, {"noise_sd": -0.5}, "noise_sd"),
        (make_ripley, {"n_train": 0}, "n_train"),
        (make_ripley, {"n_test": 1}, "n_test"),
        (make_gaussian_mixture_classes, {"n_samples": 0}, "n_samples"),
        (make_gaussian_mixture_classes, {"n_classes": 1}, "n_classes"),
        (make_gaussian_mixture_classes, {"n_components": 3}, "n_components"),
        (make_gaussian_mixture_classes, {"cluster_sd": 0.0}, "cluster_sd"),
        (make_gaussian_mixture_classes, {"radius": -1.0}, "radius"),
        (make_sinc, {"random_state": "seed"}, "random_state"),
    ],
)
def test_bad_arguments_raise_value_error_naming_them(make, kwargs, argument):
    with pytest.raises(ValueError, match=argument):
        make(**kwargs)
