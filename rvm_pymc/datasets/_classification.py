"""Classification problems: Ripley's (1996) synthetic data and K-class Gaussian mixtures."""

from __future__ import annotations

import numpy as np

from rvm_pymc._core.validation import check_int
from rvm_pymc.datasets._base import Dataset, _check_positive, check_random_state

__all__ = ["RIPLEY_COVARIANCE", "RIPLEY_MEANS", "make_gaussian_mixture_classes", "make_ripley"]

#: Component means of the Ripley (1996) synthetic problem: ``RIPLEY_MEANS[k]``
#: holds the two means of class ``k``.
RIPLEY_MEANS = np.array([[[-0.7, 0.3], [0.3, 0.3]], [[-0.3, 0.7], [0.4, 0.7]]])
RIPLEY_MEANS.setflags(write=False)
#: Isotropic variance of every Ripley component (covariance ``0.03 * I``).
RIPLEY_COVARIANCE = 0.03


def _split_evenly(n: int, k: int) -> np.ndarray:
    """Split ``n`` into ``k`` counts differing by at most one (larger ones first)."""
    counts = np.full(k, n // k)
    counts[: n % k] += 1
    return counts


def _sample_mixture(n: int, centres: np.ndarray, sd: float, rng: np.random.Generator):
    """Draw ``n`` shuffled points of the blobs ``centres[class, component]``, classes and
    components split evenly; return ``X``, labels and component indices."""
    X_parts, y_parts, c_parts = [], [], []
    for label, n_class in enumerate(_split_evenly(n, centres.shape[0])):
        for comp, n_comp in enumerate(_split_evenly(int(n_class), centres.shape[1])):
            X_parts.append(centres[label, comp] + sd * rng.standard_normal((int(n_comp), 2)))
            y_parts.append(np.full(n_comp, label, dtype=np.int64))
            c_parts.append(np.full(n_comp, comp, dtype=np.int64))
    order = rng.permutation(n)
    return tuple(np.concatenate(parts)[order] for parts in (X_parts, y_parts, c_parts))


def _sample_ripley(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return _sample_mixture(n, RIPLEY_MEANS, np.sqrt(RIPLEY_COVARIANCE), rng)


def make_ripley(n_train: int = 250, n_test: int = 1000, random_state=None) -> Dataset:
    """Ripley's (1996) two-class synthetic problem, as used by Tipping (2001).

    Each class is an equal mixture of two Gaussians with covariance ``0.03 I``:
    means (-0.7, 0.3) and (0.3, 0.3) for class 0, (-0.3, 0.7) and (0.4, 0.7)
    for class 1 (``RIPLEY_MEANS``). Classes and components are split evenly (an
    odd point goes to the first); rows are shuffled. Test labels are class draws
    (the Bayes error is about 8%).

    Parameters
    ----------
    n_train, n_test : int, default 250 and 1000
        Numbers of training and test points (each at least 2).
    random_state : None, int or numpy.random.Generator, default=None
        Source of randomness; see :func:`check_random_state`.

    Returns
    -------
    Dataset
        Integer labels 0/1 in ``t_train`` and ``t_test``; ``noise_sd`` is None.

    Examples
    --------
    >>> X, t, Xt, tt = make_ripley(random_state=0)
    >>> X.shape, Xt.shape
    ((250, 2), (1000, 2))
    >>> np.bincount(t).tolist()
    [125, 125]
    """
    n_train = check_int(n_train, "n_train", 2)
    n_test = check_int(n_test, "n_test", 2)
    rng = check_random_state(random_state)
    X, t, _ = _sample_ripley(n_train, rng)
    X_test, t_test, _ = _sample_ripley(n_test, rng)
    return Dataset(X, t, X_test, t_test, noise_sd=None, name="ripley")


def _mixture_centres(n_classes: int, n_components: int, radius: float) -> np.ndarray:
    """Centres (n_classes, n_components, 2) evenly spaced on a circle, classes interleaved."""
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
    of the given ``radius``; blob ``j`` belongs to class ``j % n_classes`` (with
    ``n_components=2`` a class is not linearly separable from the others).
    Classes and blobs are split evenly; rows are shuffled; test labels are draws.

    Parameters
    ----------
    n_samples, n_test : int, default 300 and 1000
        Numbers of training and test points (each at least ``n_classes``).
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

    Examples
    --------
    >>> X, t, Xt, tt = make_gaussian_mixture_classes(n_samples=90, random_state=0)
    >>> X.shape, np.bincount(t).tolist()
    ((90, 2), [30, 30, 30])
    """
    n_classes = check_int(n_classes, "n_classes", 2)
    n_samples = check_int(n_samples, "n_samples", n_classes)
    n_test = check_int(n_test, "n_test", n_classes)
    n_components = check_int(n_components, "n_components", 1)
    if n_components > 2:
        raise ValueError(f"n_components must be 1 or 2; got {n_components}")
    sd = _check_positive(cluster_sd, "cluster_sd")
    radius = _check_positive(radius, "radius")
    rng = check_random_state(random_state)
    centres = _mixture_centres(n_classes, n_components, radius)

    X, t, _ = _sample_mixture(n_samples, centres, sd, rng)
    X_test, t_test, _ = _sample_mixture(n_test, centres, sd, rng)
    name = f"gaussian-mixture-{n_classes}x{n_components}"
    return Dataset(X, t, X_test, t_test, noise_sd=None, name=name)
