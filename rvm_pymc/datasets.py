"""Synthetic benchmark data sets of the RVM literature (NumPy only, no downloads).

Every generator draws from a :class:`numpy.random.Generator` built by
:func:`check_random_state` and returns a :class:`Dataset`, which unpacks as
``X_train, t_train, X_test, t_test``::

    X, t, Xt, tt = make_sinc(random_state=0)

Regression test targets are noise-free, as in Tipping (2001); classification
test labels are class draws (they carry the Bayes error, as in Ripley 1996).

References
----------
.. [1] Tipping, M. E. (2001). Sparse Bayesian learning and the relevance vector
   machine. *Journal of Machine Learning Research*, 1, 211-244.
.. [2] Friedman, J. H. (1991). Multivariate adaptive regression splines.
   *The Annals of Statistics*, 19(1), 1-67.
.. [3] Ripley, B. D. (1996). *Pattern Recognition and Neural Networks*.
   Cambridge University Press.
"""

from __future__ import annotations

import functools
import numbers
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

__all__ = [
    "FRIEDMAN_AUTO_NOISE_SEED",
    "FRIEDMAN_AUTO_NOISE_SIZE",
    "RIPLEY_COVARIANCE",
    "RIPLEY_MEANS",
    "Dataset",
    "check_random_state",
    "make_friedman1",
    "make_friedman2",
    "make_friedman3",
    "make_gaussian_mixture_classes",
    "make_ripley",
    "make_sinc",
    "sinc",
]

#: Seed and size of the noise-free sample from which the ``noise_sd="auto"``
#: rule of Friedman #2 and #3 computes the signal standard deviation.
FRIEDMAN_AUTO_NOISE_SEED = 1991
FRIEDMAN_AUTO_NOISE_SIZE = 100_000

#: Component means of the Ripley (1996) synthetic problem: ``RIPLEY_MEANS[k]``
#: holds the two means of class ``k``.
RIPLEY_MEANS = np.array(
    [
        [[-0.7, 0.3], [0.3, 0.3]],
        [[-0.3, 0.7], [0.4, 0.7]],
    ]
)
RIPLEY_MEANS.setflags(write=False)
#: Isotropic variance of every Ripley component (covariance ``0.03 * I``).
RIPLEY_COVARIANCE = 0.03

_SINC_NOISE_KINDS = ("gaussian", "uniform", "none")


# --------------------------------------------------------------------------- container


@dataclass(frozen=True, eq=False)
class Dataset:
    """A train/test split of a synthetic problem.

    Unpacks as a 4-tuple: ``X_train, t_train, X_test, t_test = dataset``.

    Attributes
    ----------
    X_train : ndarray of shape (n_train, n_features)
        Training inputs.
    t_train : ndarray of shape (n_train,)
        Training targets: noisy real values (regression) or integer class labels.
    X_test : ndarray of shape (n_test, n_features)
        Test inputs.
    t_test : ndarray of shape (n_test,)
        Test targets: noise-free function values (regression) or integer class
        labels drawn like the training labels (classification).
    noise_sd : float or None
        Standard deviation of the additive noise on ``t_train`` (regression);
        ``None`` for classification.
    name : str
        Short name of the problem, e.g. ``"sinc"`` or ``"friedman2"``.
    """

    X_train: np.ndarray
    t_train: np.ndarray
    X_test: np.ndarray
    t_test: np.ndarray
    noise_sd: float | None
    name: str

    def __iter__(self) -> Iterator[np.ndarray]:
        return iter((self.X_train, self.t_train, self.X_test, self.t_test))

    def __repr__(self) -> str:
        noise = "None" if self.noise_sd is None else f"{self.noise_sd:.4g}"
        return (
            f"Dataset(name={self.name!r}, X_train={self.X_train.shape}, "
            f"X_test={self.X_test.shape}, noise_sd={noise})"
        )


# --------------------------------------------------------------------------- validation


def check_random_state(random_state=None) -> np.random.Generator:
    """Turn ``random_state`` into a :class:`numpy.random.Generator`.

    Parameters
    ----------
    random_state : None, int, numpy.random.SeedSequence or numpy.random.Generator
        ``None`` gives a freshly seeded generator, an int or ``SeedSequence``
        seeds a new generator, and a ``Generator`` is returned unchanged (so
        that successive calls draw successive, different numbers from it).

    Returns
    -------
    numpy.random.Generator

    Examples
    --------
    >>> rng = check_random_state(0)
    >>> check_random_state(rng) is rng
    True
    """
    if random_state is None:
        return np.random.default_rng()
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, np.random.SeedSequence):
        return np.random.default_rng(random_state)
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        if random_state < 0:
            raise ValueError(f"random_state must be a non-negative integer; got {random_state}")
        return np.random.default_rng(int(random_state))
    raise ValueError(
        "random_state must be None, a non-negative int, a numpy SeedSequence or a "
        f"numpy Generator; got {random_state!r}"
    )


def _check_count(value, name: str, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be an integer >= {minimum}; got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}; got {value}")
    return int(value)


def _check_nonnegative(value, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a finite number >= 0; got {value!r}")
    v = float(value)
    if not np.isfinite(v) or v < 0:
        raise ValueError(f"{name} must be a finite number >= 0; got {value!r}")
    return v


def _check_positive(value, name: str) -> float:
    v = _check_nonnegative(value, name)
    if v == 0:
        raise ValueError(f"{name} must be > 0; got {value!r}")
    return v


def _check_range(value, name: str) -> tuple[float, float]:
    try:
        low, high = (float(v) for v in value)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a pair (low, high) of numbers; got {value!r}") from exc
    if not (np.isfinite(low) and np.isfinite(high)) or not low < high:
        raise ValueError(
            f"{name} must be a finite pair (low, high) with low < high; got {value!r}"
        )
    return low, high


# --------------------------------------------------------------------------- sinc


def sinc(x) -> np.ndarray:
    """Unnormalised sinc, ``sin(x) / x`` with ``sinc(0) = 1``.

    Away from zero the value is exactly ``np.sin(x) / x`` in floating point.

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

    Training inputs are uniform on ``x_range``; training targets are
    ``sin(x)/x`` plus noise. Test inputs are an evenly spaced grid of
    ``n_test`` points over ``x_range`` (end points included) with noise-free
    targets.

    Parameters
    ----------
    n_train : int, default=100
        Number of training points.
    n_test : int, default=1000
        Number of test grid points.
    noise : {"gaussian", "uniform", "none"} or None, default="gaussian"
        Kind of additive training noise: Gaussian with standard deviation
        ``noise_sd``, uniform on ``[-noise_width, noise_width]``, or none.
        Tipping (2001) used both Gaussian noise of sd 0.1 and uniform noise on
        ``[-0.2, 0.2]`` (``noise="uniform", noise_width=0.2``).
    noise_sd : float, default=0.1
        Standard deviation of the Gaussian noise (ignored unless
        ``noise="gaussian"``).
    noise_width : float, default=0.1
        Half-width of the uniform noise (ignored unless ``noise="uniform"``).
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

    References
    ----------
    .. [1] Tipping, M. E. (2001). Sparse Bayesian learning and the relevance
       vector machine. *Journal of Machine Learning Research*, 1, 211-244.

    Examples
    --------
    >>> X, t, Xt, tt = make_sinc(random_state=0)
    >>> X.shape, t.shape, Xt.shape, tt.shape
    ((100, 1), (100,), (1000, 1), (1000,))
    >>> make_sinc(noise="uniform", noise_width=0.2, random_state=0).name
    'sinc-uniform'
    """
    n_train = _check_count(n_train, "n_train")
    n_test = _check_count(n_test, "n_test")
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
        eps = sd * rng.standard_normal(n_train)
        actual_sd = sd
    elif kind == "uniform":
        eps = rng.uniform(-width, width, size=n_train)
        actual_sd = width / np.sqrt(3.0)
    else:
        eps = np.zeros(n_train)
        actual_sd = 0.0
    x_test = np.linspace(low, high, n_test)
    return Dataset(
        X_train=x[:, None],
        t_train=sinc(x) + eps,
        X_test=x_test[:, None],
        t_test=sinc(x_test),
        noise_sd=float(actual_sd),
        name=f"sinc-{kind}",
    )


# --------------------------------------------------------------------------- Friedman


def _friedman1(X: np.ndarray) -> np.ndarray:
    """Noise-free Friedman #1 (the formula of ``sklearn.datasets.make_friedman1``)."""
    return (
        10 * np.sin(np.pi * X[:, 0] * X[:, 1])
        + 20 * (X[:, 2] - 0.5) ** 2
        + 10 * X[:, 3]
        + 5 * X[:, 4]
    )


def _friedman2(X: np.ndarray) -> np.ndarray:
    """Noise-free Friedman #2 (the formula of ``sklearn.datasets.make_friedman2``)."""
    return (X[:, 0] ** 2 + (X[:, 1] * X[:, 2] - 1 / (X[:, 1] * X[:, 3])) ** 2) ** 0.5


def _friedman3(X: np.ndarray) -> np.ndarray:
    """Noise-free Friedman #3 (the formula of ``sklearn.datasets.make_friedman3``)."""
    return np.arctan((X[:, 1] * X[:, 2] - 1 / (X[:, 1] * X[:, 3])) / X[:, 0])


def _friedman23_inputs(rng: np.random.Generator, n: int) -> np.ndarray:
    """Inputs of Friedman #2/#3: x1 ~ U(0, 100), x2 ~ U(40 pi, 560 pi), x3 ~ U(0, 1),
    x4 ~ U(1, 11), the distributions of scikit-learn's generators."""
    X = rng.uniform(size=(n, 4))
    X[:, 0] *= 100
    X[:, 1] *= 520 * np.pi
    X[:, 1] += 40 * np.pi
    X[:, 3] *= 10
    X[:, 3] += 1
    return X


_FRIEDMAN_FUNCTIONS = {"friedman2": _friedman2, "friedman3": _friedman3}


@functools.cache
def _friedman_auto_noise_sd(name: str) -> float:
    """One third of the signal sd, from a fixed noise-free sample (a stable constant)."""
    rng = np.random.default_rng(FRIEDMAN_AUTO_NOISE_SEED)
    X = _friedman23_inputs(rng, FRIEDMAN_AUTO_NOISE_SIZE)
    return float(np.std(_FRIEDMAN_FUNCTIONS[name](X)) / 3.0)


def _resolve_friedman_noise(noise_sd, name: str) -> float:
    if isinstance(noise_sd, str):
        if noise_sd != "auto":
            raise ValueError(f'noise_sd must be "auto" or a number >= 0; got {noise_sd!r}')
        return _friedman_auto_noise_sd(name)
    return _check_nonnegative(noise_sd, "noise_sd")


def _make_friedman23(name, n_train, n_test, noise_sd, random_state) -> Dataset:
    n_train = _check_count(n_train, "n_train")
    n_test = _check_count(n_test, "n_test")
    sd = _resolve_friedman_noise(noise_sd, name)
    rng = check_random_state(random_state)
    f = _FRIEDMAN_FUNCTIONS[name]
    X = _friedman23_inputs(rng, n_train)
    t = f(X) + sd * rng.standard_normal(n_train)
    X_test = _friedman23_inputs(rng, n_test)
    return Dataset(X, t, X_test, f(X_test), noise_sd=sd, name=name)


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
    n_train : int, default=240
        Number of training points.
    n_test : int, default=1000
        Number of test points.
    noise_sd : float, default=1.0
        Standard deviation of the Gaussian training noise.
    n_features : int, default=10
        Number of input dimensions, at least 5 (the rest are irrelevant).
    random_state : None, int or numpy.random.Generator, default=None
        Source of randomness; see :func:`check_random_state`.

    Returns
    -------
    Dataset

    References
    ----------
    .. [1] Friedman, J. H. (1991). Multivariate adaptive regression splines.
       *The Annals of Statistics*, 19(1), 1-67.
    .. [2] Tipping, M. E. (2001). Sparse Bayesian learning and the relevance
       vector machine. *Journal of Machine Learning Research*, 1, 211-244.

    Examples
    --------
    >>> X, t, Xt, tt = make_friedman1(random_state=0)
    >>> X.shape, Xt.shape
    ((240, 10), (1000, 10))
    """
    n_train = _check_count(n_train, "n_train")
    n_test = _check_count(n_test, "n_test")
    n_features = _check_count(n_features, "n_features", minimum=5)
    sd = _check_nonnegative(noise_sd, "noise_sd")
    rng = check_random_state(random_state)
    X = rng.uniform(size=(n_train, n_features))
    t = _friedman1(X) + sd * rng.standard_normal(n_train)
    X_test = rng.uniform(size=(n_test, n_features))
    return Dataset(X, t, X_test, _friedman1(X_test), noise_sd=sd, name="friedman1")


def make_friedman2(
    n_train: int = 240,
    n_test: int = 1000,
    noise_sd: float | str = "auto",
    random_state=None,
) -> Dataset:
    """Friedman #2 regression problem, as used by Tipping (2001).

    Four inputs, ``x1 ~ U(0, 100)``, ``x2 ~ U(40 pi, 560 pi)``, ``x3 ~ U(0, 1)``,
    ``x4 ~ U(1, 11)``, and::

        y = sqrt(x1^2 + (x2 x3 - 1 / (x2 x4))^2)

    (the same distribution and formula as :func:`sklearn.datasets.make_friedman2`).
    Test targets are noise-free.

    Parameters
    ----------
    n_train : int, default=240
        Number of training points.
    n_test : int, default=1000
        Number of test points.
    noise_sd : float or "auto", default="auto"
        Standard deviation of the Gaussian training noise. ``"auto"`` gives
        Friedman's 3:1 signal-to-noise ratio: one third of the standard
        deviation of the noise-free function, computed once from a fixed
        sample of ``FRIEDMAN_AUTO_NOISE_SIZE`` (100000) noise-free points drawn
        with seed ``FRIEDMAN_AUTO_NOISE_SEED`` (1991), independent of
        ``random_state``, so that it is the same constant on every call
        (about 126.1 for this function).
    random_state : None, int or numpy.random.Generator, default=None
        Source of randomness; see :func:`check_random_state`.

    Returns
    -------
    Dataset

    References
    ----------
    .. [1] Friedman, J. H. (1991). Multivariate adaptive regression splines.
       *The Annals of Statistics*, 19(1), 1-67.
    .. [2] Tipping, M. E. (2001). Sparse Bayesian learning and the relevance
       vector machine. *Journal of Machine Learning Research*, 1, 211-244.

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
    n_train: int = 240,
    n_test: int = 1000,
    noise_sd: float | str = "auto",
    random_state=None,
) -> Dataset:
    """Friedman #3 regression problem, as used by Tipping (2001).

    The inputs of :func:`make_friedman2` and::

        y = arctan((x2 x3 - 1 / (x2 x4)) / x1)

    (the same distribution and formula as :func:`sklearn.datasets.make_friedman3`).
    Test targets are noise-free.

    Parameters
    ----------
    n_train : int, default=240
        Number of training points.
    n_test : int, default=1000
        Number of test points.
    noise_sd : float or "auto", default="auto"
        Standard deviation of the Gaussian training noise. ``"auto"`` gives
        Friedman's 3:1 signal-to-noise ratio: one third of the standard
        deviation of the noise-free function, computed once from a fixed
        sample of ``FRIEDMAN_AUTO_NOISE_SIZE`` (100000) noise-free points drawn
        with seed ``FRIEDMAN_AUTO_NOISE_SEED`` (1991), independent of
        ``random_state``, so that it is the same constant on every call
        (about 0.106 for this function).
    random_state : None, int or numpy.random.Generator, default=None
        Source of randomness; see :func:`check_random_state`.

    Returns
    -------
    Dataset

    References
    ----------
    .. [1] Friedman, J. H. (1991). Multivariate adaptive regression splines.
       *The Annals of Statistics*, 19(1), 1-67.
    .. [2] Tipping, M. E. (2001). Sparse Bayesian learning and the relevance
       vector machine. *Journal of Machine Learning Research*, 1, 211-244.

    Examples
    --------
    >>> data = make_friedman3(random_state=0)
    >>> data.X_train.shape, data.X_test.shape
    ((240, 4), (1000, 4))
    >>> round(data.noise_sd, 2)
    0.11
    """
    return _make_friedman23("friedman3", n_train, n_test, noise_sd, random_state)


# --------------------------------------------------------------------------- classification


def _split_evenly(n: int, k: int) -> np.ndarray:
    """Split ``n`` into ``k`` counts differing by at most one (larger ones first)."""
    counts = np.full(k, n // k)
    counts[: n % k] += 1
    return counts


def _sample_ripley(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Draw ``n`` shuffled Ripley points; return ``X``, labels and component index (0/1)."""
    sd = np.sqrt(RIPLEY_COVARIANCE)
    X_parts, y_parts, c_parts = [], [], []
    for label, n_class in enumerate(_split_evenly(n, 2)):
        for comp, n_comp in enumerate(_split_evenly(int(n_class), 2)):
            mean = RIPLEY_MEANS[label, comp]
            X_parts.append(mean + sd * rng.standard_normal((int(n_comp), 2)))
            y_parts.append(np.full(n_comp, label, dtype=np.int64))
            c_parts.append(np.full(n_comp, comp, dtype=np.int64))
    order = rng.permutation(n)
    return (
        np.concatenate(X_parts)[order],
        np.concatenate(y_parts)[order],
        np.concatenate(c_parts)[order],
    )


def make_ripley(n_train: int = 250, n_test: int = 1000, random_state=None) -> Dataset:
    """Ripley's (1996) two-class synthetic problem, as used by Tipping (2001).

    Each class is an equal mixture of two Gaussians with covariance ``0.03 I``:
    means (-0.7, 0.3) and (0.3, 0.3) for class 0, (-0.3, 0.7) and (0.4, 0.7)
    for class 1 (see ``RIPLEY_MEANS``). The classes have equal sizes (half of
    the points each) and each class is split evenly over its two components;
    when a count is odd the first class (component) gets the extra point.
    Rows are shuffled. Test points are drawn the same way, so test labels
    are class draws (the Bayes error is about 8%).

    Parameters
    ----------
    n_train : int, default=250
        Number of training points (at least 2, one per class).
    n_test : int, default=1000
        Number of test points (at least 2).
    random_state : None, int or numpy.random.Generator, default=None
        Source of randomness; see :func:`check_random_state`.

    Returns
    -------
    Dataset
        Integer labels 0/1 in ``t_train`` and ``t_test``; ``noise_sd`` is None.

    References
    ----------
    .. [1] Ripley, B. D. (1996). *Pattern Recognition and Neural Networks*.
       Cambridge University Press.
    .. [2] Tipping, M. E. (2001). Sparse Bayesian learning and the relevance
       vector machine. *Journal of Machine Learning Research*, 1, 211-244.

    Examples
    --------
    >>> X, t, Xt, tt = make_ripley(random_state=0)
    >>> X.shape, Xt.shape
    ((250, 2), (1000, 2))
    >>> np.bincount(t).tolist()
    [125, 125]
    """
    n_train = _check_count(n_train, "n_train", minimum=2)
    n_test = _check_count(n_test, "n_test", minimum=2)
    rng = check_random_state(random_state)
    X, t, _ = _sample_ripley(n_train, rng)
    X_test, t_test, _ = _sample_ripley(n_test, rng)
    return Dataset(X, t, X_test, t_test, noise_sd=None, name="ripley")


def _mixture_centres(n_classes: int, n_components: int, radius: float) -> np.ndarray:
    """Centres of shape (n_classes, n_components, 2) evenly spaced on a circle; the
    components of one class are interleaved with those of the others."""
    n_blobs = n_classes * n_components
    j = np.arange(n_blobs)
    angle = 2 * np.pi * j / n_blobs
    points = radius * np.column_stack([np.cos(angle), np.sin(angle)])
    # blob j belongs to class j % n_classes, component j // n_classes
    return points.reshape(n_components, n_classes, 2).transpose(1, 0, 2)


def make_gaussian_mixture_classes(
    n_samples: int = 300,
    n_test: int = 1000,
    n_classes: int = 3,
    n_components: int = 1,
    cluster_sd: float = 0.5,
    radius: float = 2.0,
    random_state=None,
) -> Dataset:
    """A K-class problem in 2-D of isotropic Gaussian blobs, for softmax tests.

    The ``n_classes * n_components`` blob centres lie evenly spaced on a circle
    of the given ``radius``; blob ``j`` belongs to class ``j % n_classes``, so
    with ``n_components=2`` each class has two blobs on opposite sides of the
    circle and is not linearly separable from the others. Classes have equal
    sizes (up to one point) and each class is split evenly over its blobs.
    Rows are shuffled; test labels are class draws.

    Parameters
    ----------
    n_samples : int, default=300
        Number of training points (at least ``n_classes``).
    n_test : int, default=1000
        Number of test points (at least ``n_classes``).
    n_classes : int, default=3
        Number of classes K, at least 2.
    n_components : {1, 2}, default=1
        Number of Gaussian blobs per class.
    cluster_sd : float, default=0.5
        Standard deviation of each blob in each direction.
    radius : float, default=2.0
        Radius of the circle of blob centres.
    random_state : None, int or numpy.random.Generator, default=None
        Source of randomness; see :func:`check_random_state`.

    Returns
    -------
    Dataset
        Integer labels ``0 .. n_classes - 1``; ``noise_sd`` is None.

    References
    ----------
    .. [1] Tipping, M. E. (2001). Sparse Bayesian learning and the relevance
       vector machine. *Journal of Machine Learning Research*, 1, 211-244.

    Examples
    --------
    >>> X, t, Xt, tt = make_gaussian_mixture_classes(n_samples=90, random_state=0)
    >>> X.shape, np.bincount(t).tolist()
    ((90, 2), [30, 30, 30])
    """
    n_classes = _check_count(n_classes, "n_classes", minimum=2)
    n_samples = _check_count(n_samples, "n_samples", minimum=n_classes)
    n_test = _check_count(n_test, "n_test", minimum=n_classes)
    n_components = _check_count(n_components, "n_components")
    if n_components > 2:
        raise ValueError(f"n_components must be 1 or 2; got {n_components}")
    sd = _check_positive(cluster_sd, "cluster_sd")
    radius = _check_positive(radius, "radius")
    rng = check_random_state(random_state)
    centres = _mixture_centres(n_classes, n_components, radius)

    def draw(n: int) -> tuple[np.ndarray, np.ndarray]:
        X_parts, y_parts = [], []
        for label, n_class in enumerate(_split_evenly(n, n_classes)):
            for comp, n_comp in enumerate(_split_evenly(int(n_class), n_components)):
                X_parts.append(centres[label, comp] + sd * rng.standard_normal((int(n_comp), 2)))
                y_parts.append(np.full(n_comp, label, dtype=np.int64))
        order = rng.permutation(n)
        return np.concatenate(X_parts)[order], np.concatenate(y_parts)[order]

    X, t = draw(n_samples)
    X_test, t_test = draw(n_test)
    name = f"gaussian-mixture-{n_classes}x{n_components}"
    return Dataset(X, t, X_test, t_test, noise_sd=None, name=name)
