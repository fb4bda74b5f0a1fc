"""Posterior mode and Laplace approximation for Bernoulli-logit, softmax and Poisson RVMs.

Targets are a matrix ``T`` of shape (N, C): one column of 0/1 labels for the
binary model (``C = 1``, ``y = sigmoid(f)``), or one-hot rows for the softmax
model with ``C = K`` classes.  The weights of the active bases form a matrix
``W`` of shape (M, C); basis ``m`` has one precision ``alpha_m`` shared by its
``C`` weights.  Flattened parameter vectors and the covariance use the
*class-major* order ``theta[k * M + m] = W[m, k]``, so the Hessian of the
negative log posterior is a C x C grid of M x M blocks

.. math::

    H_{kl} = \\Phi^\\top D_{kl} \\Phi + \\delta_{kl} A, \\qquad
    D_{kl} = \\mathrm{diag}\\big(y_{nk} (\\delta_{kl} - y_{nl})\\big),

built from ``C (C + 1) / 2`` weighted Gram products (never an NC x NC matrix).
The Laplace approximation to the log evidence at the mode ``W*`` is

.. math::

    \\log p(T \\mid \\alpha) \\approx \\log p(T \\mid W^*)
        - \\tfrac12 \\sum_{m,k} \\alpha_m W^{*2}_{mk}
        + \\tfrac{C}{2} \\sum_m \\log \\alpha_m - \\tfrac12 \\log |H|.

The Poisson model with the log link (``likelihood="poisson"``, counts ``t``
in one column, ``lambda = exp(f)``) goes through the same one-column Newton
iteration as the binary model, with ``B = diag(lambda)`` in place of
``diag(y (1 - y))``; its log likelihood keeps the ``-log t!`` terms, so that
its Laplace evidence approximates ``log p(t | alpha)`` itself.

References
----------
Tipping, M. E. (2001). Sparse Bayesian learning and the relevance vector
machine. *Journal of Machine Learning Research* 1, 211-244.

MacKay, D. J. C. (1992). The evidence framework applied to classification
networks. *Neural Computation* 4(5), 720-736.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import expit, gammaln, log_expit

from rvm_pymc._core.gaussian import factor_inverse, factor_logdet, factor_solve, spd_factor
from rvm_pymc.reference._design_products import scaled_rows, scaled_rows_buffer

__all__ = [
    "LIKELIHOODS",
    "LaplacePosterior",
    "OneColumn",
    "find_mode",
    "find_mode_one_column",
    "hessian",
    "log_likelihood",
]

LIKELIHOODS = ("bernoulli", "poisson")
"""The likelihoods of :func:`find_mode`: ``"bernoulli"`` (with softmax for K > 2
columns) and ``"poisson"`` (log link, one column of counts)."""


def diagonal_view(A: np.ndarray) -> np.ndarray:
    """Writable view of the diagonal of a square contiguous (C or Fortran order) matrix."""
    if A.ndim != 2 or A.shape[0] != A.shape[1]:
        raise ValueError(f"the diagonal view needs a square matrix, got shape {A.shape}")
    if A.flags.c_contiguous:
        return A.reshape(-1)[:: A.shape[0] + 1]
    if A.flags.f_contiguous:
        return A.T.reshape(-1)[:: A.shape[0] + 1]
    raise ValueError("the diagonal view needs a contiguous matrix")


_CLASS_PAIRS: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = {}


def class_pairs(c: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Class pairs ``k <= l`` in the order ``(0, 0), (0, 1), ..., (c-1, c-1)``.

    Returns ``(k, l, delta_kl, index)`` with ``index`` of shape (C, C) the
    position of the pair ``(min(k, l), max(k, l))`` in that order.
    """
    if c not in _CLASS_PAIRS:
        k, l = np.triu_indices(c)
        index = np.empty((c, c), dtype=np.intp)
        index[k, l] = index[l, k] = np.arange(k.size)
        cached = (k, l, (k == l).astype(float), index)
        for a in cached:  # shared by every caller: never to be written to
            a.flags.writeable = False
        _CLASS_PAIRS[c] = cached
    return _CLASS_PAIRS[c]


def pair_weights(Y: np.ndarray) -> np.ndarray:
    """Diagonals of the ``C (C + 1) / 2`` distinct ``D_kl`` (``k <= l``) as columns, (N, pairs).

    ``D_kl = diag(y_k (delta_kl - y_l))``; column order as :func:`class_pairs`.
    """
    k, l, delta, _ = class_pairs(Y.shape[1])
    return Y.take(k, axis=1) * (delta - Y.take(l, axis=1))  # C order, as the products need


def pair_grams(A: np.ndarray, Wt: np.ndarray, B: np.ndarray) -> np.ndarray:
    """``A^T D_p B`` for every class pair ``p`` in one product, of shape (M_A, pairs, M_B).

    ``Wt`` holds the diagonals of the ``D_p`` as columns (:func:`pair_weights`).
    """
    n, npair = Wt.shape
    prod = A.T @ (Wt[:, :, None] * B[:, None, :]).reshape(n, -1)
    return prod.reshape(A.shape[1], npair, B.shape[1])


_BLOCK_INDEX: dict[tuple[int, int], np.ndarray] = {}
_GATHER_MAX = 64  # largest M C assembled by one cached gather (else block by block)


def assemble_blocks(blocks: np.ndarray, c: int) -> np.ndarray:
    """The class-major (M C, M C) matrix from its distinct blocks (M, pairs, M).

    Block ``(k, l)`` with ``k <= l`` is ``blocks[:, p]`` (``p`` the pair index of
    :func:`class_pairs`), block ``(l, k)`` its transpose.  Small matrices (the
    many Hessians of the sequential solver) are gathered with a cached flat
    index, larger ones copied block by block.
    """
    m = blocks.shape[0]
    k, l, _, pair = class_pairs(c)
    if m * c > _GATHER_MAX:
        H = np.empty((m * c, m * c))
        for p, (kp, lp) in enumerate(zip(k, l, strict=True)):
            H[kp * m : (kp + 1) * m, lp * m : (lp + 1) * m] = blocks[:, p]
            if lp != kp:
                H[lp * m : (lp + 1) * m, kp * m : (kp + 1) * m] = blocks[:, p].T
        return H
    if (m, c) not in _BLOCK_INDEX:
        r = np.arange(m)
        # flat index of element (row k*m+i, column l*m+j) in blocks.ravel()
        kk, ii, ll, jj = np.ix_(np.arange(c), r, np.arange(c), r)
        upper = kk <= ll
        first = np.where(upper, ii, jj)
        second = np.where(upper, jj, ii)
        idx = (first * k.size + pair[kk, ll]) * m + second
        idx = idx.reshape(m * c, m * c)
        idx.flags.writeable = False  # shared by every caller
        _BLOCK_INDEX[m, c] = idx
    return blocks.reshape(-1)[_BLOCK_INDEX[m, c]]


@dataclass(frozen=True)
class LaplacePosterior:
    """Gaussian (Laplace) approximation of the weight posterior at fixed ``alpha``.

    Attributes
    ----------
    mean : ndarray of shape (M, C)
        Posterior mode ``W*``.
    cov : ndarray of shape (M C, M C)
        Inverse Hessian of the negative log posterior at the mode (class-major).
    logdet_hessian : float
        ``log |H|``.
    log_likelihood : float
        ``log p(T | W*)``.
    log_evidence : float
        Laplace approximation to ``log p(T | alpha)`` (no hyperprior terms).
    probs : ndarray of shape (N, C)
        Fitted means at the mode: probabilities (``sigmoid`` or ``softmax`` of
        ``Phi W*``), or Poisson rates ``exp(Phi w*)``.
    n_newton : int
        Newton iterations used.
    converged : bool
        Whether the Newton step fell below the tolerance.
    curvature : ndarray of shape (N,) or None
        One-column models: the diagonal of ``B`` (minus the second derivative
        of the log likelihood in ``f``) at the mode, ``y (1 - y)`` or
        ``lambda``; None for softmax.
    """

    mean: np.ndarray
    cov: np.ndarray
    logdet_hessian: float
    log_likelihood: float
    log_evidence: float
    probs: np.ndarray
    n_newton: int
    converged: bool
    curvature: np.ndarray | None = None


def log_likelihood(F: np.ndarray, T: np.ndarray) -> tuple[float, np.ndarray]:
    """Log likelihood and fitted probabilities for latent values ``F`` (N, C).

    ``C = 1``: Bernoulli with ``y = sigmoid(f)``; ``C > 1``: categorical with
    ``y = softmax(f)``.  Both evaluated without overflow.
    """
    if F.shape[1] == 1:
        f, t = F[:, 0], T[:, 0]
        ll = float(np.sum(t * log_expit(f) + (1.0 - t) * log_expit(-f)))
        return ll, expit(F)
    fmax = F.max(axis=1, keepdims=True)  # scipy's logsumexp is slow on small arrays
    logz = fmax + np.log(np.exp(F - fmax).sum(axis=1, keepdims=True))
    ll = float((T * F).sum() - logz.sum())
    return ll, np.exp(F - logz)


def hessian(Phi: np.ndarray, Y: np.ndarray, alpha: np.ndarray) -> np.ndarray:
    """Hessian of the negative log posterior, class-major, of shape (M C, M C)."""
    m, c = Phi.shape[1], Y.shape[1]
    if c == 1:
        return weighted_hessian(Phi, Y[:, 0] * (1.0 - Y[:, 0]), alpha)
    # the c (c + 1) / 2 distinct blocks in one product
    H = assemble_blocks(pair_grams(Phi, pair_weights(Y), Phi), c)
    diagonal_view(H).reshape(c, m)[...] += alpha
    return H


def weighted_hessian(
    Phi: np.ndarray, d: np.ndarray, alpha: np.ndarray, work: np.ndarray | None = None
) -> np.ndarray:
    """``Phi^T diag(d) Phi + diag(alpha)``: the Hessian of a one-column model.

    ``work``: a buffer for ``diag(d) Phi`` (:func:`scaled_rows_buffer`), or None.
    """
    H = Phi.T @ scaled_rows(d, Phi, work)
    H.flat[:: H.shape[0] + 1] += alpha  # the product is C-contiguous: its diagonal
    return H


class OneColumn:
    """Log likelihood, mean and curvature of a one-column model in its latent ``f``.

    ``"bernoulli"``: 0/1 targets, ``y = sigmoid(f)``, curvature ``y (1 - y)``;
    ``"poisson"``: counts, ``lambda = exp(f)``, curvature ``lambda``, log
    likelihood ``sum(t f - lambda - log t!)``.
    """

    def __init__(self, likelihood: str, t: np.ndarray):
        if likelihood not in LIKELIHOODS:
            raise ValueError(f"likelihood must be one of {LIKELIHOODS}; got {likelihood!r}")
        self.likelihood, self.t = likelihood, t
        if likelihood == "bernoulli":
            self._sign = 2.0 * t - 1.0
        else:
            self._const = -float(np.sum(gammaln(t + 1.0)))

    def log_lik(self, f: np.ndarray) -> float:
        """``log p(t | f)`` (``-inf`` where a Poisson rate overflows)."""
        if self.likelihood == "bernoulli":
            return float(log_expit(f * self._sign).sum())  # the method: np.sum costs 1.5 us more
        with np.errstate(over="ignore"):
            lam = np.exp(f)
        val = float(self.t @ f - np.sum(lam)) + self._const
        return val if np.isfinite(val) else -np.inf

    def mean(self, f: np.ndarray) -> np.ndarray:
        """``sigmoid(f)`` or ``exp(f)``."""
        return expit(f) if self.likelihood == "bernoulli" else np.exp(f)

    def curvature(self, mean: np.ndarray) -> np.ndarray:
        """``-d^2 log p / df^2`` from the mean: ``y (1 - y)`` or ``lambda``."""
        return mean * (1.0 - mean) if self.likelihood == "bernoulli" else mean


def _objective(
    Phi: np.ndarray, T: np.ndarray, alpha: np.ndarray, W: np.ndarray
) -> tuple[float, float, np.ndarray]:
    """Log posterior (up to a constant), log likelihood and probabilities at ``W``."""
    ll, Y = log_likelihood(Phi @ W, T)
    return ll - 0.5 * float((alpha[:, None] * W**2).sum()), ll, Y


def find_mode(
    Phi: np.ndarray,
    T: np.ndarray,
    alpha: np.ndarray,
    W0: np.ndarray | None = None,
    *,
    tol: float = 1e-10,
    max_newton: int = 100,
    likelihood: str = "bernoulli",
) -> LaplacePosterior:
    """Newton's method with step halving for the posterior mode, then Laplace.

    Parameters
    ----------
    Phi : ndarray of shape (N, M)
        Active columns of the design matrix.
    T : ndarray of shape (N, C)
        Targets (0/1 column or one-hot rows).
    alpha : ndarray of shape (M,)
        Precisions, finite and > 0.
    W0 : ndarray of shape (M, C), optional
        Starting point (default zeros).
    tol : float
        Stop when every component of the Newton step is below
        ``tol * (1 + max |W|)``; the Hessian (hence the covariance) is the one
        at the returned mode.
    max_newton : int
        Iteration cap; ``converged`` is False when reached.
    likelihood : {"bernoulli", "poisson"}
        ``"poisson"``: ``T`` is one column of non-negative counts, log link.

    Returns
    -------
    LaplacePosterior

    Raises
    ------
    numpy.linalg.LinAlgError
        From the Cholesky factorisation when the Hessian is not positive
        definite to working precision (no pseudo-inverse fallback).
    """
    m, c = Phi.shape[1], T.shape[1]
    W = np.zeros((m, c)) if W0 is None else np.array(W0, dtype=float)
    if likelihood == "poisson" and c != 1:
        raise ValueError(f"a Poisson model has one column of counts; T has {c} columns")
    if likelihood == "poisson" or (c == 1 and np.all((T == 0.0) | (T == 1.0))):
        return find_mode_one_column(Phi, OneColumn(likelihood, T[:, 0]), alpha, W, tol, max_newton)
    obj, ll, Y = _objective(Phi, T, alpha, W)
    converged = False
    it = 0
    for it in range(1, max_newton + 1):  # noqa: B007
        grad = Phi.T @ (T - Y) - alpha[:, None] * W
        # the step from the factor; the covariance only once, at the mode
        L, p = spd_factor(hessian(Phi, Y, alpha), "Laplace Hessian")
        step = factor_solve(L, p, grad.T.ravel()).reshape(c, m).T
        if np.abs(step).max() <= tol * (1.0 + np.abs(W).max(initial=0.0)):
            converged = True
            break

        def trial(eta: float, W=W, step=step) -> tuple:
            W_new = W + eta * step
            return (*_objective(Phi, T, alpha, W_new), W_new)

        ok, (obj_new, ll_new, Y_new, W_new) = _step_halving(obj, trial)
        if not ok:  # no ascent along the Newton direction
            break
        W, obj, ll, Y = W_new, obj_new, ll_new, Y_new
    else:
        L, p = spd_factor(hessian(Phi, Y, alpha), "Laplace Hessian")
    return _laplace(W, Y, obj, ll, alpha, c, L, p, it, converged)


def find_mode_one_column(
    Phi: np.ndarray,
    lik: OneColumn,
    alpha: np.ndarray,
    W0: np.ndarray | None,
    tol: float,
    max_newton: int = 100,
) -> LaplacePosterior:
    """:func:`find_mode` of a one-column model whose likelihood ``lik`` is built already.

    The fast classifier's state keeps ``lik`` for the whole fit (its targets
    do not change); ``W0`` of shape (M, 1) or None (zeros).
    """
    w0 = np.zeros(Phi.shape[1]) if W0 is None else np.array(W0[:, 0], dtype=float)
    w, obj, ll, y, d, L, p, it, converged = _newton_one_column(
        Phi, lik, alpha, w0, tol, max_newton
    )
    return _laplace(w[:, None], y[:, None], obj, ll, alpha, 1, L, p, it, converged, d)


def _newton_one_column(
    Phi: np.ndarray,
    lik: OneColumn,
    alpha: np.ndarray,
    w: np.ndarray,
    tol: float,
    max_newton: int,
) -> tuple:
    """:func:`find_mode` for a one-column model (two classes, or Poisson), on vectors.

    The same iteration (step from the Jacobi-scaled Cholesky factor, step
    halving, the same stopping rule) without the (M, C) bookkeeping, and the
    means formed only at accepted points.  Returns ``(w, objective,
    log likelihood, means, curvature, L, p, iterations, converged)`` with
    ``(L, p)`` the factor of the Hessian at ``w``.
    """
    t, PhiT = lik.t, Phi.T
    work = scaled_rows_buffer(Phi)  # diag(d) Phi at every iteration: one allocation
    f = Phi @ w
    ll = lik.log_lik(f)
    y = lik.mean(f)
    obj = ll - 0.5 * float((alpha * w**2).sum())
    if not math.isfinite(obj):  # a warm start whose rates overflow: start from zero
        w = np.zeros_like(w)
        f = Phi @ w
        ll, y = lik.log_lik(f), lik.mean(f)
        obj = ll
    converged = False
    it = 0
    for it in range(1, max_newton + 1):  # noqa: B007
        grad = PhiT @ (t - y) - alpha * w
        d = lik.curvature(y)
        L, p = spd_factor(weighted_hessian(Phi, d, alpha, work), "Laplace Hessian")
        step = factor_solve(L, p, grad)
        if np.abs(step).max() <= tol * (1.0 + (np.abs(w).max() if w.size else 0.0)):
            converged = True
            break
        # step halving (as _step_halving, inline: this loop runs for every move of the
        # fast classifier); a decrease within the rounding of the objective is no decrease
        slack, eta = 1e-12 * (1.0 + abs(obj)), 1.0
        while True:
            w_new = w + step if eta == 1.0 else w + eta * step
            f = Phi @ w_new
            ll_new = lik.log_lik(f)
            obj_new = ll_new - 0.5 * float((alpha * w_new**2).sum())
            ascent = obj_new >= obj - slack  # False for a NaN
            if ascent or eta < 1e-10:
                break
            eta *= 0.5
        if not ascent:  # no ascent along the Newton direction
            break
        w, obj, ll, y = w_new, obj_new, ll_new, lik.mean(f)
    else:
        d = lik.curvature(y)
        L, p = spd_factor(weighted_hessian(Phi, d, alpha, work), "Laplace Hessian")
    return w, obj, ll, y, d, L, p, it, converged


def _step_halving(obj: float, trial) -> tuple[bool, tuple]:
    """Halve a Newton step until the objective does not decrease; ``(ascent, trial(eta))``.

    ``trial(eta)`` returns a tuple whose first entry is the objective at step
    ``eta`` (1, 1/2, ... down to 1e-10).  A decrease within the rounding error
    of the objective counts as no decrease (close to the mode the change is
    below that resolution); ``ascent`` is False when even the shortest step
    decreases it.
    """
    slack = 1e-12 * (1.0 + abs(obj))
    eta = 1.0
    while True:
        out = trial(eta)
        if out[0] >= obj - slack:
            return True, out
        if eta < 1e-10:
            return False, out
        eta *= 0.5


def _laplace(W, Y, obj, ll, alpha, c, L, p, it, converged, curvature=None) -> LaplacePosterior:
    """The Laplace posterior at the mode ``W`` from the factor ``(L, p)`` of its Hessian."""
    cov, logdet = factor_inverse(L, p), factor_logdet(L, p)
    log_ev = obj + 0.5 * c * float(np.log(alpha).sum()) - 0.5 * logdet
    return LaplacePosterior(
        mean=W,
        cov=cov,
        logdet_hessian=logdet,
        log_likelihood=ll,
        log_evidence=log_ev,
        probs=Y,
        n_newton=it,
        converged=converged,
        curvature=curvature,
    )
