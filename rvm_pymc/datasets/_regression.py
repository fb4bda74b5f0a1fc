"""Regression problems: noisy sinc and Friedman #1-#3 (Tipping 2001, Friedman 1991)."""

from __future__ import annotations

import functools

import numpy as np

from rvm_pymc._core.validation import check_int
from rvm_pymc.datasets._base import (
    Dataset,
    _check_nonnegative,
    _check_range,
    check_random_state,
)

__all__ = [
    "FRIEDMAN_AUTO_NOISE_SEED",
    "FRIEDMAN_AUTO_NOISE_SIZE",
    "make_friedman1",
    "make_friedman2",
    "make_friedman3",
    "make_sinc",
    "sinc",
]

#: Seed and size of the noise-free sample from which the ``noise_sd="auto"``
#: rule of Friedman #2 and #3 computes the signal standard deviation.
FRIEDMAN_AUTO_NOISE_SEED = 1991
FRIEDMAN_AUTO_NOISE_SIZE = 100_000

_SINC_NOISE_KINDS = ("gaussian", "uniform", "none")


def sinc(x) -> np.ndarray:
    """Unnormalised sinc, ``sin(x) / x`` with ``sinc(0) = 1``.

    Parameters
    ----------
    x : array_like
        Points at which to evaluate.

    Returns
    -------
    ndarray
        ``sin(x) / x``, with 1 where ``x == 0``.

    Examples
    --------
    >>> sinc([0.0, np.pi]).round(12).tolist()
    [1.0, 0.0]
    """
    x = np.asarray(x, dtype=np.float64)
    return np.divide(np.sin(x), x, out=np.ones_like(x), where=x != 0)


def make_sinc(
    n_train: int = 100,
    n_test: int = 1000,
    noise: str | None = "gaussian",
    noise_sd: float = 0.1,
    noise_width: float = 0.1,
    x_range: tuple[float, float] = (-10, 10),
    random_state=None,
) -> Dataset:
    """The one-dimensional ``sin(x)/x`` regression problem of Tipping (2001).

    Training inputs are uniform on ``x_range`` with noisy targets; test inputs
    are ``n_test`` evenly spaced points of ``x_range`` with noise-free targets.

    Parameters
    ----------
    n_train, n_test : int, default 100 and 1000
        Numbers of training points and of test grid points.
    noise : {"gaussian", "uniform", "none"} or None, default="gaussian"
        Kind of additive training noise: Gaussian with standard deviation
        ``noise_sd``, uniform on ``[-noise_width, noise_width]`` (Tipping 2001
        also used ``noise_width=0.2``), or none.
    noise_sd : float, default=0.1
        Standard deviation of the Gaussian noise.
    noise_width : float, default=0.1
        Half-width of the uniform noise.
    x_range : tuple of float, default=(-10, 10)
        Interval ``(low, high)`` of the inputs.
    random_state : None, int or numpy.random.Generator, default=None
        Source of randomness; see :func:`check_random_state`.

    Returns
    -------
    Dataset
        ``X_train`` (n_train, 1), ``t_train`` (n_train,), ``X_test`` (n_test, 1),
        noise-free ``t_test`` (n_test,), and ``noise_sd`` the standard
        deviation of the noise actually added: ``noise_sd`` for Gaussian noise,
        ``noise_width / sqrt(3)`` for uniform noise, 0.0 for none.

    Examples
    --------
    >>> X, t, Xt, tt = make_sinc(random_state=0)
    >>> X.shape, t.shape, Xt.shape, tt.shape
    ((100, 1), (100,), (1000, 1), (1000,))
    >>> make_sinc(noise="uniform", noise_width=0.2, random_state=0).name
    'sinc-uniform'
    """
    n_train = check_int(n_train, "n_train", 1)
    n_test = check_int(n_test, "n_test", 1)
    kind = "none" if noise is None else noise
    if not isinstance(kind, str) or kind.lower() not in _SINC_NOISE_KINDS:
        raise ValueError(f"noise must be one of {_SINC_NOISE_KINDS} or None; got {noise!r}")
    kind = kind.lower()
    sd = _check_nonnegative(noise_sd, "noise_sd")
    width = _check_nonnegative(noise_width, "noise_width")
    low, high = _check_range(x_range, "x_range")
    rng = check_random_state(random_state)

    x = rng.uniform(low, high, size=n_train)
    if kind == "gaussian":
        eps, actual_sd = sd * rng.standard_normal(n_train), sd
    elif kind == "uniform":
        eps, actual_sd = rng.uniform(-width, width, size=n_train), width / np.sqrt(3.0)
    else:
        eps, actual_sd = np.zeros(n_train), 0.0
    x_test = np.linspace(low, high, n_test)
    return Dataset(
        X_train=x[:, None],
        t_train=sinc(x) + eps,
        X_test=x_test[:, None],
        t_test=sinc(x_test),
        noise_sd=float(actual_sd),
        name=f"sinc-{kind}",
    )


def _friedman1(X: np.ndarray) -> np.ndarray:
    """Noise-free Friedman #1, #2, #3: the formulas of ``sklearn.datasets``."""
    return (
        10 * np.sin(np.pi * X[:, 0] * X[:, 1])
        + 20 * (X[:, 2] - 0.5) ** 2
        + 10 * X[:, 3]
        + 5 * X[:, 4]
    )


def _friedman2(X: np.ndarray) -> np.ndarray:
    return (X[:, 0] ** 2 + (X[:, 1] * X[:, 2] - 1 / (X[:, 1] * X[:, 3])) ** 2) ** 0.5


def _friedman3(X: np.ndarray) -> np.ndarray:
    return np.arctan((X[:, 1] * X[:, 2] - 1 / (X[:, 1] * X[:, 3])) / X[:, 0])


def _friedman23_inputs(rng: np.random.Generator, n: int) -> np.ndarray:
    """Inputs of Friedman #2/#3, drawn as scikit-learn's generators draw them."""
    return rng.uniform(size=(n, 4)) * [100, 520 * np.pi, 1, 10] + [0, 40 * np.pi, 0, 1]


_FRIEDMAN_FUNCTIONS = {"friedman2": _friedman2, "friedman3": _friedman3}


@functools.cache
def _friedman_auto_noise_sd(name: str) -> float:
    """One third of the signal sd on a fixed noise-free sample."""
    rng = np.random.default_rng(FRIEDMAN_AUTO_NOISE_SEED)
    X = _friedman23_inputs(rng, FRIEDMAN_AUTO_NOISE_SIZE)
    return float(np.std(_FRIEDMAN_FUNCTIONS[name](X)) / 3.0)


def _friedman(name, f, inputs, n_train, n_test, sd, random_state) -> Dataset:
    """Draw ``inputs(rng, n)`` for training (with noise of sd ``sd``) and testing."""
    rng = check_random_state(random_state)
    X = inputs(rng, n_train)
    t = f(X) + sd * rng.standard_normal(n_train)
    X_test = inputs(rng, n_test)
    return Dataset(X, t, X_test, f(X_test), noise_sd=sd, name=name)


def _make_friedman23(name, n_train, n_test, noise_sd, random_state) -> Dataset:
    n_train = check_int(n_train, "n_train", 1)
    n_test = check_int(n_test, "n_test", 1)
    if isinstance(noise_sd, str):
        if noise_sd != "auto":
            raise ValueError(f'noise_sd must be "auto" or a number >= 0; got {noise_sd!r}')
        sd = _friedman_auto_noise_sd(name)
    else:
        sd = _check_nonnegative(noise_sd, "noise_sd")
    f = _FRIEDMAN_FUNCTIONS[name]
    return _friedman(name, f, _friedman23_inputs, n_train, n_test, sd, random_state)


def make_friedman1(
    n_train: int = 240,
    n_test: int = 1000,
    noise_sd: float = 1.0,
    n_features: int = 10,
    random_state=None,
) -> Dataset:
    """Friedman #1 regression problem, as used by Tipping (2001).

    Inputs are uniform on ``[0, 1]^n_features``; only the first five matter::

        y = 10 sin(pi x1 x2) + 20 (x3 - 0.5)^2 + 10 x4 + 5 x5

    (the same distribution and formula as :func:`sklearn.datasets.make_friedman1`).
    Training targets carry Gaussian noise of sd ``noise_sd``; test targets are
    noise-free.

    Parameters
    ----------
    n_train, n_test : int, default 240 and 1000
        Numbers of training and test points.
    noise_sd : float, default=1.0
        Standard deviation of the Gaussian training noise.
    n_features : int, default=10
        Number of input dimensions, at least 5 (the rest are irrelevant).
    random_state : None, int or numpy.random.Generator, default=None
        Source of randomness; see :func:`check_random_state`.

    Returns
    -------
    Dataset

    Examples
    --------
    >>> X, t, Xt, tt = make_friedman1(random_state=0)
    >>> X.shape, Xt.shape
    ((240, 10), (1000, 10))
    """
    n_train = check_int(n_train, "n_train", 1)
    n_test = check_int(n_test, "n_test", 1)
    n_features = check_int(n_features, "n_features", 5)
    sd = _check_nonnegative(noise_sd, "noise_sd")

    def inputs(rng, n):
        return rng.uniform(size=(n, n_features))

    return _friedman("friedman1", _friedman1, inputs, n_train, n_test, sd, random_state)


def make_friedman2(
    n_train: int = 240, n_test: int = 1000, noise_sd: float | str = "auto", random_state=None
) -> Dataset:
    """Friedman #2 regression problem, as used by Tipping (2001).

    Four inputs, ``x1 ~ U(0, 100)``, ``x2 ~ U(40 pi, 560 pi)``, ``x3 ~ U(0, 1)``,
    ``x4 ~ U(1, 11)``, and::

        y = sqrt(x1^2 + (x2 x3 - 1 / (x2 x4))^2)

    (the same distribution and formula as :func:`sklearn.datasets.make_friedman2`).
    Test targets are noise-free.

    Parameters
    ----------
    n_train, n_test, random_state
        As for :func:`make_friedman1`.
    noise_sd : float or "auto", default="auto"
        Standard deviation of the Gaussian training noise. ``"auto"`` gives
        Friedman's 3:1 signal-to-noise ratio: a third of the sd of the function
        on ``FRIEDMAN_AUTO_NOISE_SIZE`` points drawn with seed
        ``FRIEDMAN_AUTO_NOISE_SEED`` (the same constant on every call, about 126.1).

    Returns
    -------
    Dataset

    Examples
    --------
    >>> data = make_friedman2(random_state=0)
    >>> data.X_train.shape, data.X_test.shape
    ((240, 4), (1000, 4))
    >>> round(data.noise_sd)
    126
    """
    return _make_friedman23("friedman2", n_train, n_test, noise_sd, random_state)


def make_friedman3(
    n_train: int = 240, n_test: int = 1000, noise_sd: float | str = "auto", random_state=None
) -> Dataset:
    """Friedman #3 regression problem, as used by Tipping (2001).

    The inputs of :func:`make_friedman2` and::

        y = arctan((x2 x3 - 1 / (x2 x4)) / x1)

    (the same distribution and formula as :func:`sklearn.datasets.make_friedman3`).
    Test targets are noise-free.

    Parameters
    ----------
    n_train, n_test, noise_sd, random_state
        As for :func:`make_friedman2` (``noise_sd="auto"`` is about 0.106 here).

    Returns
    -------
    Dataset

    Examples
    --------
    >>> data = make_friedman3(random_state=0)
    >>> data.X_train.shape, data.X_test.shape
    ((240, 4), (1000, 4))
    >>> round(data.noise_sd, 2)
    0.11
    """
    return _make_friedman23("friedman3", n_train, n_test, noise_sd, random_state)
