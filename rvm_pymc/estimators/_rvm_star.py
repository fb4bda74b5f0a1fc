"""``RVR(predictive="rvm*")``: the RVM* predictive of a fitted regressor, in blocks of test inputs.

The mathematics (the rank-one update and the prior of the new weight) is
:mod:`rvm_pymc._core.augment`; this module feeds it the fitted posterior in
the units of the data, the training inputs kept by ``fit`` (``X_train_``,
``y_train_``: RVM* evaluates the new basis ``k(x, x*)`` at every training
input, so the prediction is no longer sparse) and the kernel, block by block
of test inputs so that memory stays ``O(n_test)`` (a block of ``B`` test
inputs holds an ``N x B`` kernel matrix, ``N B <=`` :data:`BLOCK_ENTRIES`).
"""

from __future__ import annotations

import numpy as np
from sklearn.utils.validation import check_is_fitted, validate_data

from rvm_pymc._core.augment import augmented_predictive, rvm_star_prior_var, signal_variance
from rvm_pymc._core.validation import check_numeric

__all__ = ["BLOCK_ENTRIES", "keep_training_data", "rvm_star_predict"]

BLOCK_ENTRIES = 1 << 20
"""Entries of the training-by-test kernel matrix of one block (8 MB of float64)."""


def keep_training_data(est, X: np.ndarray, y: np.ndarray) -> None:
    """After ``fit``: keep ``X_train_`` and ``y_train_`` for RVM*, or drop stale ones."""
    if est.predictive == "rvm*":
        est.X_train_ = np.array(X, dtype=np.float64)
        est.y_train_ = np.array(y, dtype=np.float64)
    else:
        est.__dict__.pop("X_train_", None)
        est.__dict__.pop("y_train_", None)


def rvm_star_predict(est, X, return_std: bool):
    """Predictive mean (and sd, noise included) of RVM* at ``X`` for a fitted RVR.

    Parameters
    ----------
    est : RVR
        Fitted with ``predictive="rvm*"`` by method ``"reference"`` or ``"map"``.
    X : array_like of shape (n_samples, n_features)
    return_std : bool

    Returns
    -------
    y_mean : ndarray of shape (n_samples,)
    y_std : ndarray of shape (n_samples,), only when ``return_std``

    Raises
    ------
    ValueError
        If ``predictive="rvm*"`` was set after the fit (the training inputs
        were not kept): refit.
    """
    check_numeric(X, "X")
    check_is_fitted(est, "coef_")
    if not hasattr(est, "X_train_"):
        raise ValueError(
            "predictive='rvm*' was set after the fit, which did not keep the training "
            "inputs RVM* needs; refit the estimator"
        )
    X = validate_data(est, X, reset=False, dtype=np.float64)
    post = est.posterior_
    beta = float(np.exp(post.log_beta))
    kernel = est.kernel_
    Phi = est._design_of(est.X_train_)
    resid = est.y_train_ - est.y_offset_ - Phi @ post.mean
    sig = signal_variance(est.y_scale_**2, 1.0 / beta)
    n_train = est.X_train_.shape[0]
    block = max(1, BLOCK_ENTRIES // max(n_train, 1))
    mean = np.empty(X.shape[0])
    var = np.empty(X.shape[0])
    for s in range(0, X.shape[0], block):
        xb = X[s : s + block]
        k_self = kernel.diag(xb)
        m, v = augmented_predictive(
            est._design_of(xb),
            kernel(est.X_train_, xb),
            k_self,
            Phi,
            resid,
            post.mean,
            post.cov,
            beta,
            rvm_star_prior_var(sig, k_self),
        )
        mean[s : s + xb.shape[0]] = m
        var[s : s + xb.shape[0]] = v
    mean += est.y_offset_
    if not return_std:
        return mean
    return mean, np.sqrt(var + 1.0 / beta)
