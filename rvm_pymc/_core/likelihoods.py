"""NumPy likelihoods on the draws of a fit, for every posterior kind (the result tree's).

The likelihood's own parameter is passed as its log (``log_beta``: the noise precision, or
the negative binomial's dispersion), a float or ``(chain, draw)`` draws.
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit, log_expit, log_softmax

from rvm_pymc._core.counts import negbin_logpmf, negbin_replicate, poisson_logpmf
from rvm_pymc._core.gaussian import LOG_2PI

__all__ = ["latent", "log_likelihood", "log_weight_prior", "replicate"]


def latent(kind: str, Phi: np.ndarray, w: np.ndarray, y_offset: float) -> np.ndarray:
    """``Phi w`` for draws ``(C, D, M[, K])``: ``(C, D, N[, K])`` (the log mean for counts)."""
    if kind == "softmax":
        return np.einsum("nm,cdmk->cdnk", Phi, w)
    return w @ Phi.T + y_offset


def _per_draw(log_param, F: np.ndarray) -> np.ndarray:
    """A float or ``(chain, draw)`` log parameter, broadcast against ``F`` (C, D, N)."""
    return np.broadcast_to(np.asarray(log_param, dtype=float), F.shape[:2])[..., None]


def log_likelihood(kind, F, target, log_beta) -> np.ndarray:
    """Pointwise log likelihood of ``target`` at latent values ``F`` (``C, D, N``)."""
    if kind == "regression":
        lb = _per_draw(log_beta, F)
        return 0.5 * (lb - LOG_2PI) - 0.5 * np.exp(lb) * (target - F) ** 2
    if kind == "binary":
        return log_expit(np.where(target == 1, F, -F))
    if kind == "poisson":
        return poisson_logpmf(np.asarray(target, dtype=float), F)
    if kind == "negative_binomial":
        return negbin_logpmf(np.asarray(target, dtype=float), F, np.exp(_per_draw(log_beta, F)))
    lp = log_softmax(F, axis=-1)
    idx = np.broadcast_to(target[:, None], (*lp.shape[:-1], 1))
    return np.take_along_axis(lp, idx, -1)[..., 0]


def replicate(kind, F, log_beta, rng: np.random.Generator) -> np.ndarray:
    """One draw of the targets per latent draw (``log_beta`` as for :func:`log_likelihood`)."""
    if kind == "regression":
        return F + np.exp(-0.5 * _per_draw(log_beta, F)) * rng.standard_normal(F.shape)
    if kind == "binary":
        return (rng.random(F.shape) < expit(F)).astype(np.int64)
    if kind == "poisson":
        return rng.poisson(np.exp(F)).astype(np.int64)
    if kind == "negative_binomial":
        return negbin_replicate(F, np.exp(_per_draw(log_beta, F)), rng)
    return np.argmax(F + rng.gumbel(size=F.shape), axis=-1).astype(np.int64)


def log_weight_prior(w: np.ndarray, log_alpha: np.ndarray) -> np.ndarray:
    """``sum log N(w | 0, 1/alpha)`` over the basis (and class) axes of draws ``w``."""
    la = np.asarray(log_alpha)
    if w.ndim == 4:
        la = la[..., None]
    val = 0.5 * (la - LOG_2PI) - 0.5 * np.exp(la) * w**2
    return val.reshape(*w.shape[:2], -1).sum(-1)
