"""The estimators never write into an array the user owns.

The estimators scale the columns of a kernel design matrix in place (no
second N x M array); these tests check that no user array, and no array a
kernel or basis returns from its own storage, is ever changed: callable
kernels returning views, ``kernel="precomputed"``, precomputed and function
bases, ``gamma="evidence"``, refits in ``GridSearchCV``, and ``predict``.
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.model_selection import GridSearchCV, cross_val_score

from rvm_pymc.basis import Basis, FunctionBasis, KernelBasis, PrecomputedBasis
from rvm_pymc.estimators import RVC, RVR
from rvm_pymc.kernels import RBF

N = 60
_X = np.linspace(-5.0, 5.0, N)
GRAM = np.exp(-0.5 * (_X[:, None] - _X[None, :]) ** 2)
"""A module-level kernel matrix that the kernels below return slices (views) of."""

_GRAM_SAVED = GRAM.copy()


def _view_kernel(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """``GRAM[a, b]`` for the integer inputs ``A``, ``B``: a view when both are runs."""
    a, b = A[:, 0].astype(int), B[:, 0].astype(int)
    if np.all(np.diff(a) == 1) and np.all(np.diff(b) == 1):
        return GRAM[a[0] : a[-1] + 1, b[0] : b[-1] + 1]  # a view of the module array
    return GRAM[np.ix_(a, b)]


class _StoredBasis(Basis):
    """A user basis whose design matrix is rows of the module array (a view)."""

    def _fit(self, X: np.ndarray) -> list[str]:
        return [f"g{j}" for j in range(N)]

    def _design(self, X: np.ndarray) -> np.ndarray:
        a = X[:, 0].astype(int)
        return GRAM[a[0] : a[-1] + 1] if np.all(np.diff(a) == 1) else GRAM[a]


class _StoredKernelBasis(KernelBasis):
    """A KernelBasis subclass that serves its training design from the module array."""

    def _design(self, X: np.ndarray) -> np.ndarray:
        return GRAM if X.shape[0] == N and not self.bias else super()._design(X)


def _copy_kernel(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    return _view_kernel(A, B).copy()


@pytest.fixture
def data():
    rng = np.random.default_rng(3)
    idx = np.arange(N, dtype=float)[:, None]
    y = np.sinc(_X / np.pi) + 0.1 * rng.standard_normal(N)
    labels = (_X + 0.5 * rng.standard_normal(N) > 0).astype(int)
    return idx, y, labels


def _assert_gram_intact():
    assert np.array_equal(GRAM, _GRAM_SAVED), "the kernel's module-level array was modified"


def test_callable_kernel_returning_a_view_is_not_modified(data):
    idx, y, _ = data
    est = RVR(kernel=_view_kernel).fit(idx, y)
    _assert_gram_intact()
    ref = RVR(kernel=_copy_kernel).fit(idx, y)
    np.testing.assert_array_equal(est.active_, ref.active_)
    np.testing.assert_allclose(est.coef_, ref.coef_, rtol=1e-12, atol=0)
    pred = est.predict(idx)
    _assert_gram_intact()
    np.testing.assert_array_equal(pred, est.predict(idx))


def test_classifier_callable_kernel_returning_a_view_is_not_modified(data):
    idx, _, labels = data
    RVC(kernel=_view_kernel).fit(idx, labels).predict_proba(idx)
    _assert_gram_intact()


@pytest.mark.parametrize("estimator", ["rvr", "rvc"])
def test_precomputed_kernel_and_bases_are_not_modified(data, estimator):
    idx, y, labels = data
    target = y if estimator == "rvr" else labels
    make = RVR if estimator == "rvr" else RVC
    K = GRAM.copy()
    make(kernel="precomputed").fit(K, target).predict(K)
    np.testing.assert_array_equal(K, GRAM)
    make(kernel=PrecomputedBasis(bias=True)).fit(K, target).predict(K)
    np.testing.assert_array_equal(K, GRAM)
    cols = [lambda X, j=j: GRAM[X[:, 0].astype(int), j] for j in range(0, N, 6)]
    make(kernel=FunctionBasis(cols, bias=True)).fit(idx, target)
    _assert_gram_intact()
    make(kernel=_StoredBasis()).fit(idx, target).predict(idx)
    _assert_gram_intact()
    make(kernel=_StoredKernelBasis(_view_kernel, bias=False)).fit(idx, target)
    _assert_gram_intact()


def test_choice_of_centres_does_not_modify_a_kernel_view(data):
    idx, y, _ = data
    try:
        RVR(kernel=KernelBasis(_view_kernel, centres=20)).fit(idx, y)
        _assert_gram_intact()
    finally:
        GRAM[...] = _GRAM_SAVED  # should the check fail, the other tests still need it intact


def test_inputs_unchanged_by_evidence_grid_and_refits(data):
    idx, y, _ = data
    X = _X[:, None].copy()
    X_saved, y_saved = X.copy(), y.copy()
    RVR(gamma="evidence", gamma_grid=[0.1, 1.0]).fit(X, y)
    RVR(kernel="linear").fit(X, y)
    np.testing.assert_array_equal(X, X_saved)
    np.testing.assert_array_equal(y, y_saved)
    search = GridSearchCV(RVR(kernel=RBF(gamma=0.5)), {"bias": [True, False]}, cv=3)
    search.fit(X, y)
    cross_val_score(RVR(kernel=_view_kernel), idx, y, cv=3)
    np.testing.assert_array_equal(X, X_saved)
    np.testing.assert_array_equal(y, y_saved)
    _assert_gram_intact()
