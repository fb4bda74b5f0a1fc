"""The ArviZ DataTree of a Gaussian (Laplace) weight posterior, for the estimators.

The reference solver (and any fit that ends in a Gaussian approximation of the
weights) is turned into the same kind of object that ``pm.sample`` returns
(DESIGN.md section 3): an :class:`xarray.DataTree` with the groups
``posterior``, ``log_likelihood``, ``sample_stats`` and ``observed_data``, built
from draws of ``w ~ N(mean, cov)``.  The precisions ``alpha`` and ``beta`` are
point estimates (type-II maximum likelihood / MAP) and appear in the
``posterior`` group as constants over the draws, so that the variable names
match those of the PyMC models (``w`` or ``W``, ``alpha``, ``beta``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy.special import log_expit, logsumexp

__all__ = ["gaussian_draws", "gaussian_idata"]

_LOG_2PI = float(np.log(2.0 * np.pi))


def gaussian_draws(
    mean: np.ndarray, cov: np.ndarray, n_draws: int, rng: np.random.Generator
) -> np.ndarray:
    """Draws of weights from ``N(mean, cov)``.

    Parameters
    ----------
    mean : ndarray of shape (M,) or (M, K)
        Posterior mean; for (M, K) the covariance is class-major (block ``k``
        holds the M weights of class ``k``), as in
        :class:`rvm_pymc.reference.ClassificationResult`.
    cov : ndarray of shape (M K, M K)
    n_draws : int
    rng : numpy.random.Generator

    Returns
    -------
    ndarray of shape (n_draws, M) or (n_draws, M, K)

    Notes
    -----
    The square root of ``cov`` is taken by a symmetric eigendecomposition with
    eigenvalues clipped at zero, which is exact for a positive semi-definite
    matrix and needs no jitter.
    """
    mean = np.asarray(mean, dtype=float)
    m = mean.shape[0]
    k = 1 if mean.ndim == 1 else mean.shape[1]
    flat = mean.reshape(m, k).T.reshape(-1)  # class-major
    cov = np.asarray(cov, dtype=float)
    cov = 0.5 * (cov + cov.T)
    evals, evecs = np.linalg.eigh(cov) if cov.size else (np.zeros(0), np.zeros((0, 0)))
    root = evecs * np.sqrt(np.clip(evals, 0.0, None))
    z = rng.standard_normal((n_draws, flat.size))
    draws = flat + z @ root.T
    if mean.ndim == 1:
        return draws
    return draws.reshape(n_draws, k, m).transpose(0, 2, 1)


def _log_likelihood(kind: str, F: np.ndarray, target: np.ndarray, beta: float | None):
    """Pointwise log likelihood of every draw, shape (n_draws, N)."""
    if kind == "regression":
        return 0.5 * (np.log(beta) - _LOG_2PI) - 0.5 * beta * (target - F) ** 2
    if kind == "binary":
        return np.where(target == 1, log_expit(F), log_expit(-F))
    n = target.size
    return F[:, np.arange(n), target] - logsumexp(F, axis=2)


def gaussian_idata(
    *,
    kind: str,
    mean: np.ndarray,
    cov: np.ndarray,
    alpha: np.ndarray,
    Phi: np.ndarray,
    target: np.ndarray,
    basis_names: Sequence,
    n_draws: int,
    random_state: np.random.Generator,
    beta: float | None = None,
    classes: Sequence | None = None,
    attrs: dict[str, Any] | None = None,
):
    """Build the DataTree of a Gaussian weight posterior with draws.

    Parameters
    ----------
    kind : {"regression", "binary", "softmax"}
    mean, cov : ndarray
        Posterior mean (M,) or (M, K) and covariance (class-major for softmax)
        of the active weights.
    alpha : ndarray of shape (M,)
        Precisions of the active weights.
    Phi : ndarray of shape (N, M)
        Training design matrix restricted to the active bases.
    target : ndarray of shape (N,)
        Regression targets, or class codes ``0..K-1``.
    basis_names : sequence of str
        Coordinates of the ``basis`` dimension.
    n_draws : int
        Number of draws (one chain).
    random_state : numpy.random.Generator
    beta : float, optional
        Noise precision (regression).
    classes : sequence, optional
        Class labels, the coordinates of ``class`` (classification).
    attrs : dict, optional
        Attributes of the root node.

    Returns
    -------
    xarray.DataTree
        Groups ``posterior`` (``w`` or ``W``, ``alpha``, ``beta``),
        ``log_likelihood`` (``t_obs`` or ``y_obs``), ``sample_stats`` (``lp``:
        log likelihood plus the log prior of the weights given ``alpha``) and
        ``observed_data`` (for classification ``y_obs`` holds the class codes
        and the group has a ``class`` coordinate with their labels).
    """
    from arviz_base import from_dict

    draws = gaussian_draws(mean, cov, n_draws, random_state)
    alpha = np.asarray(alpha, dtype=float)
    names = [str(b) for b in basis_names]
    coords: dict[str, Any] = {"basis": names, "obs": np.arange(target.size)}
    if kind == "softmax":
        F = np.einsum("nm,dmk->dnk", Phi, draws)
        wname, wdims = "W", ["basis", "class"]
        sq = np.sum(draws**2, axis=2)
        n_w = draws.shape[2]
    else:
        F = draws @ Phi.T
        wname, wdims = "w", ["basis"]
        sq = draws**2
        n_w = 1
    if classes is not None:
        coords["class"] = [str(c) for c in classes]
    ll = _log_likelihood(kind, F, target, beta)
    log_prior = np.sum(0.5 * n_w * (np.log(alpha) - _LOG_2PI) - 0.5 * alpha * sq, axis=1)
    obs_name = "t_obs" if kind == "regression" else "y_obs"
    posterior = {wname: draws[None], "alpha": np.broadcast_to(alpha, (1, n_draws, alpha.size))}
    dims = {wname: wdims, "alpha": ["basis"], obs_name: ["obs"]}
    if beta is not None:
        posterior["beta"] = np.full((1, n_draws), float(beta))
    data = {
        "posterior": posterior,
        "log_likelihood": {obs_name: ll[None]},
        "sample_stats": {"lp": (ll.sum(axis=1) + log_prior)[None]},
        "observed_data": {obs_name: np.asarray(target)},
    }
    tree = from_dict(data, coords=coords, dims=dims, attrs={"/": dict(attrs or {})})
    if classes is not None:  # y_obs holds codes 0..K-1: keep their labels next to them
        obs = tree["observed_data"].to_dataset()
        tree["observed_data"] = obs.assign_coords({"class": coords["class"]})
    return tree
