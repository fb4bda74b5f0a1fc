"""The RBF design matrix as a function of its log length scale ``l``, for fits sampling it:

.. math::

    \\Phi(l) = [1 \\mid \\exp(-D / (2 e^{2l}))], \\qquad
    \\gamma = \\tfrac{1}{2} e^{-2l},

with ``D`` the fixed squared distances to the centres.  ``unit_rms`` divides each kernel
column by its RMS, so the precisions' prior means the same at every width.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
from scipy.spatial.distance import cdist

__all__ = [
    "WIDTH_CHUNK_BYTES",
    "column_rms_at",
    "draw_chunks",
    "gamma_of",
    "log_length_scale_of",
    "rbf_columns",
    "sq_distances",
    "width_latent",
]

WIDTH_CHUNK_BYTES = 2**26
"""Bytes of design matrices (draws x rows x centres) :func:`width_latent` holds at once."""


def sq_distances(X, centres) -> np.ndarray:
    """Squared Euclidean distances ``(N, K)``: 0 for identical points, never negative."""
    X = np.asarray(X, dtype=float)
    C = np.asarray(centres, dtype=float)
    return np.maximum(cdist(X, C, "sqeuclidean"), 0.0)


def gamma_of(log_length_scale):
    """The kernel's ``gamma = exp(-2 l) / 2`` of a log length scale ``l``."""
    return 0.5 * np.exp(-2.0 * np.asarray(log_length_scale, dtype=float))


def log_length_scale_of(gamma):
    """The log length scale ``l = -log(2 gamma) / 2`` of a kernel width ``gamma``."""
    return -0.5 * np.log(2.0 * np.asarray(gamma, dtype=float))


def rbf_columns(D, log_length_scale, *, bias: bool, unit_rms: bool, xp=np):
    """``[1 | exp(-D exp(-2 l) / 2)]`` (kernel columns divided by their RMS if ``unit_rms``)."""
    K = xp.exp(-0.5 * D * xp.exp(-2.0 * log_length_scale))
    if unit_rms:
        K = K / xp.sqrt(xp.mean(K**2, axis=0))[None, :]
    if bias:
        K = xp.concatenate([xp.ones((D.shape[0], 1)), K], axis=1)
    return K


def column_rms_at(D, log_length_scale, max_bytes: int = 2**20) -> np.ndarray:
    """The RMS over the rows of ``D`` of every kernel column at each ``l``: ``(*l.shape, K)``."""
    D = np.asarray(D, dtype=float)
    lls = np.asarray(log_length_scale, dtype=float)
    flat = lls.reshape(-1)
    half = -0.5 * D
    out = np.empty((flat.size, D.shape[1]))
    for sl in draw_chunks(flat.size, int(max(1, max_bytes // (8 * max(D.size, 1))))):
        K = half[None] * np.exp(-2.0 * flat[sl])[:, None, None]
        np.exp(K, out=K)
        out[sl] = np.sqrt(np.mean(K**2, axis=1))
    return out.reshape(*lls.shape, D.shape[1])


def draw_chunks(n: int, size: int) -> Iterator[slice]:
    """Consecutive slices of at most ``size`` of ``range(n)``."""
    for start in range(0, n, size):
        yield slice(start, min(start + size, n))


def width_latent(
    D_new, gamma, w, *, bias: bool, y_offset: float = 0.0, max_bytes: int = WIDTH_CHUNK_BYTES
) -> np.ndarray:
    """``[1 | exp(-gamma_s D)] w_s + y_offset`` for every draw ``s``."""
    D_new = np.asarray(D_new, dtype=float)
    gamma = np.asarray(gamma, dtype=float).reshape(-1)
    w = np.asarray(w, dtype=float)
    n, k = D_new.shape
    out = np.empty((gamma.size, n, *w.shape[2:]))
    rows = int(max(1, min(n, max_bytes // (8 * max(k, 1)))))
    draws = int(max(1, max_bytes // (8 * rows * max(k, 1))))
    for r in draw_chunks(n, rows):
        for sl in draw_chunks(gamma.size, draws):
            K = np.multiply(-gamma[sl, None, None], D_new[None, r])  # (s, rows, K)
            np.exp(K, out=K)
            wk = w[sl, int(bias) :]
            F = np.einsum("snk,sk->sn", K, wk) if w.ndim == 2 else np.einsum("snk,skc->snc", K, wk)
            if bias:
                F += w[sl, 0][:, None]
            out[sl, r] = F + y_offset
    return out
