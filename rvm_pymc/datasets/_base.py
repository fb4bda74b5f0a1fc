"""The container and argument checks shared by the data set generators."""

from __future__ import annotations

import numbers
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from rvm_pymc._core.validation import is_real

__all__ = ["Dataset", "check_random_state"]


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


def check_random_state(random_state=None) -> np.random.Generator:
    """Turn ``random_state`` into a :class:`numpy.random.Generator`.

    Parameters
    ----------
    random_state : None, int, numpy.random.SeedSequence or numpy.random.Generator
        ``None`` gives a freshly seeded generator, an int or ``SeedSequence``
        seeds a new one, and a ``Generator`` is returned unchanged.

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


def _check_nonnegative(value, name: str) -> float:
    if not (is_real(value) and np.isfinite(float(value)) and float(value) >= 0):
        raise ValueError(f"{name} must be a finite number >= 0; got {value!r}")
    return float(value)


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
