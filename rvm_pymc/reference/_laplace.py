r"""The reference solver's likelihoods for the Laplace fits: Bernoulli-logit, softmax,
Poisson, negative binomial (NumPy only).

Targets ``T`` (N, C): a 0/1 column, one-hot rows (softmax, ``C = K``), or counts (log
link, ``-log t!`` kept).  Basis ``m`` has one precision shared by its ``C`` weights;
vectors and covariances are class-major (``theta[k M + m] = W[m, k]``), the Hessian a
C x C grid of blocks ``H_kl = Phi^T D_kl Phi + delta_kl A``,
``D_kl = diag(y_k (delta_kl - y_l))``.  The fast classifier's reads of a tall design
run on worker threads (:func:`transposed_products`), never splitting rows, so a fit ends
at the same numbers on any number of threads.
"""

from __future__ import annotations

import itertools
import math
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace

import numpy as np
from scipy.special import expit, gammaln, log_expit

from rvm_pymc._core.counts import negbin_logpmf
from rvm_pymc._core.gaussian import spd_factor
from rvm_pymc._core.laplace import LaplacePosterior, laplace_posterior, newton_mode
from rvm_pymc._core.threads import default_workers, on_pieces, single_blas_thread, thread_map

__all__ = [
    "BLOCK_COLUMNS",
    "LIKELIHOODS",
    "SCALE_MIN_ENTRIES",
    "THREAD_MIN_ENTRIES",
    "OneColumn",
    "find_mode",
    "find_mode_one_column",
    "hessian",
    "in_background",
    "log_likelihood",
    "scaled_rows",
    "scaled_rows_buffer",
    "squared",
    "transposed_products",
]

#: Fewest entries of the ``A`` together for which the products go to worker
#: threads; below it they are formed in the calling thread.
THREAD_MIN_ENTRIES = 1 << 24

_ALIGN = 8  # column blocks start at multiples of this


def _column_blocks(m: int, parts: int) -> list[slice]:
    """``parts`` contiguous slices of ``range(m)``, inner bounds at multiples of ``_ALIGN``."""
    cuts = [0]
    for k in range(1, parts):
        cut = (k * m // parts) // _ALIGN * _ALIGN
        if cut > cuts[-1]:
            cuts.append(cut)
    cuts.append(m)
    return [slice(a, b) for a, b in itertools.pairwise(cuts)]


def _threads(size: int, workers: int | None, least: int | None = None) -> int:
    """Worker threads for ``size`` entries: ``workers``, else by size (at least ``least``)."""
    if workers is None:
        least = THREAD_MIN_ENTRIES if least is None else least
        return 1 if size < least else default_workers()
    return workers


def squared(A: np.ndarray, workers: int | None = None) -> np.ndarray:
    """``A**2`` (the same memory order), squared in pieces on worker threads.

    Examples
    --------
    >>> import numpy as np
    >>> A = np.arange(12.0).reshape(3, 4)
    >>> bool(np.array_equal(squared(A, workers=2), A**2))
    True
    """
    workers = _threads(A.size, workers)
    if workers <= 1 or not (A.flags.c_contiguous or A.flags.f_contiguous):
        return A**2
    out = np.empty_like(A)
    src, dst = A.ravel(order="K"), out.ravel(order="K")  # views of the contiguous memory
    on_pieces(lambda a, b: np.square(src[a:b], out=dst[a:b]), src.size, workers)
    return out


#: Fewest entries for which :func:`scaled_rows` uses worker threads.
SCALE_MIN_ENTRIES = 1 << 20


def scaled_rows_buffer(A: np.ndarray) -> np.ndarray:
    """An empty array for :func:`scaled_rows` of ``A``: NumPy's order for ``d[:, None] * A``."""
    return np.empty_like(A, order="F" if A.flags.f_contiguous else "C")


def scaled_rows(d: np.ndarray, A: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """``d[:, None] * A``, in ``out`` if given, row ranges on worker threads when large.

    Examples
    --------
    >>> import numpy as np
    >>> A = np.arange(6.0).reshape(3, 2)
    >>> scaled_rows(np.array([1.0, 2.0, 3.0]), A).tolist()
    [[0.0, 1.0], [4.0, 6.0], [12.0, 15.0]]
    """
    if out is None:
        out = scaled_rows_buffer(A)
    workers = _threads(A.size, None, SCALE_MIN_ENTRIES)
    if workers <= 1:
        return np.multiply(d[:, None], A, out=out)
    on_pieces(lambda a, b: np.multiply(d[a:b, None], A[a:b], out=out[a:b]), A.shape[0], workers)
    return out


def in_background(fn, size: int, workers: int | None = None):
    """``fn()`` on a thread of its own (one BLAS thread) if worth it, else now: a handle.

    Examples
    --------
    >>> in_background(lambda: 6 * 7, 10, workers=2).result()
    42
    """
    if _threads(size, workers) <= 1:
        done = Future()  # formed already
        done.set_result(fn())
        return done

    def run():
        with single_blas_thread():
            return fn()

    pool = ThreadPoolExecutor(max_workers=1)
    future = pool.submit(run)
    pool.shutdown(wait=False)  # the thread ends with its one task
    return future


def transposed_products(pairs, workers: int | None = None) -> list[np.ndarray]:
    """``[A.T @ B for A, B in pairs]`` on worker threads, the same bits on any number.

    ``B`` of shape (N, k) or (N,); ``workers`` default: the usable CPUs, or none
    below :data:`THREAD_MIN_ENTRIES`.  Results in C order.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> A, B = rng.standard_normal((1000, 700)), rng.standard_normal((1000, 3))
    >>> P, p = transposed_products([(A, B), (A, B[:, 0])], workers=2)
    >>> bool(np.allclose(P, A.T @ B)), bool(np.allclose(p, A.T @ B[:, 0]))
    (True, True)
    >>> bool(np.array_equal(P, transposed_products([(A, B)], workers=1)[0]))
    True
    """
    tasks = [  # (owner, A, B, columns): blocks of the matrix products first, the longest
        (i, A, B, cols)
        for i, (A, B) in enumerate(pairs)
        if B.ndim == 2
        for cols in _column_blocks(A.shape[1], -(-A.shape[1] // BLOCK_COLUMNS))
    ]
    tasks += [(i, A, B, slice(None)) for i, (A, B) in enumerate(pairs) if B.ndim != 2]
    with single_blas_thread():  # BLAS's own threads would change the bits
        if _threads(sum(A.size for A, _ in pairs), workers) <= 1:
            parts = [_product(*task[1:]) for task in tasks]
        else:
            parts = thread_map(lambda task: _product(*task[1:]), tasks)
    out = []
    for i, (_, B) in enumerate(pairs):
        mine = [p for p, task in zip(parts, tasks, strict=True) if task[0] == i]
        if B.ndim != 2:
            out.append(mine[0])
        else:  # (k, M) in blocks: one copy into (M, k), C order
            out.append(np.ascontiguousarray((mine[0] if len(mine) == 1 else np.hstack(mine)).T))
    return out


#: Columns of the design in one block of :func:`transposed_products`, about: ``ceil(M / 256)``
#: blocks, cut at multiples of 8.
BLOCK_COLUMNS = 256


def _product(A: np.ndarray, B: np.ndarray, cols: slice) -> np.ndarray:
    """``B^T A[:, cols]`` (k, cols) for a matrix ``B``; ``A[:, cols]^T B`` for a vector."""
    return B.T @ A[:, cols] if B.ndim == 2 else A[:, cols].T @ B


LIKELIHOODS = ("bernoulli", "poisson", "negative_binomial")
"""The likelihoods of :func:`find_mode` (``"bernoulli"``: softmax for K > 2 columns)."""

COUNT_LIKELIHOODS = ("poisson", "negative_binomial")


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
    """Class pairs ``k <= l`` in order: ``(k, l, delta_kl, index)``, ``index`` (C, C) the pair."""
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
    """Diagonals of the distinct ``D_kl = diag(y_k (delta_kl - y_l))`` as columns, (N, pairs)."""
    k, l, delta, _ = class_pairs(Y.shape[1])
    return Y.take(k, axis=1) * (delta - Y.take(l, axis=1))  # C order, as the products need


def pair_grams(A: np.ndarray, Wt: np.ndarray, B: np.ndarray) -> np.ndarray:
    """``A^T D_p B`` for every class pair ``p`` in one product, (M_A, pairs, M_B)."""
    n, npair = Wt.shape
    prod = A.T @ (Wt[:, :, None] * B[:, None, :]).reshape(n, -1)
    return prod.reshape(A.shape[1], npair, B.shape[1])


_BLOCK_INDEX: dict[tuple[int, int], np.ndarray] = {}
_GATHER_MAX = 64  # largest M C assembled by one cached gather (else block by block)


def assemble_blocks(blocks: np.ndarray, c: int) -> np.ndarray:
    """The class-major (M C, M C) matrix from its distinct blocks (M, pairs, M)."""
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


def log_likelihood(F: np.ndarray, T: np.ndarray) -> tuple[float, np.ndarray]:
    """Log likelihood and probabilities (sigmoid for C = 1, else softmax) at ``F`` (N, C)."""
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
    """``Phi^T diag(d) Phi + diag(alpha)`` (``work``: a buffer for ``diag(d) Phi``)."""
    H = Phi.T @ scaled_rows(d, Phi, work)
    H.flat[:: H.shape[0] + 1] += alpha  # the product is C-contiguous: its diagonal
    return H


class OneColumn:
    """Log likelihood, mean, score and curvature of a one-column model in its latent ``f``.

    NB2 (``dispersion`` r): with ``p = mu / (r + mu)`` the score is ``t - (t + r) p``, the
    curvature ``(t + r) p (1 - p)``; for the others the score is ``t - mean``.
    """

    def __init__(self, likelihood: str, t: np.ndarray, dispersion: float | None = None):
        if likelihood not in LIKELIHOODS:
            raise ValueError(f"likelihood must be one of {LIKELIHOODS}; got {likelihood!r}")
        nb = likelihood == "negative_binomial"
        if nb and not (dispersion is not None and math.isfinite(dispersion) and dispersion > 0):
            raise ValueError(f"a negative binomial needs a dispersion > 0; got {dispersion!r}")
        if not nb and dispersion is not None:
            raise ValueError(f"dispersion applies to the negative binomial, not {likelihood!r}")
        self.likelihood, self.t, self.dispersion = likelihood, t, dispersion
        if likelihood == "bernoulli":
            self._sign = 2.0 * t - 1.0
        elif likelihood == "poisson":
            self._const = -float(np.sum(gammaln(t + 1.0)))
        else:
            self._log_r = math.log(dispersion)

    def log_lik(self, f: np.ndarray) -> float:
        """``log p(t | f)`` (``-inf`` where a rate overflows)."""
        if self.likelihood == "bernoulli":
            return float(log_expit(f * self._sign).sum())
        if self.likelihood == "negative_binomial":
            val = float(np.sum(negbin_logpmf(self.t, f, self.dispersion)))
            return val if np.isfinite(val) else -np.inf
        with np.errstate(over="ignore"):
            lam = np.exp(f)
        val = float(self.t @ f - np.sum(lam)) + self._const
        return val if np.isfinite(val) else -np.inf

    def derivatives(self, f: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The mean (``sigmoid(f)`` or ``exp(f)``), the score ``d log p / df`` and the
        curvature ``-d^2 log p / df^2`` (``y (1 - y)``, ``lambda``, NB2's) at ``f``, each (N,)."""
        if self.likelihood == "bernoulli":
            mean = expit(f)
            return mean, self.t - mean, mean * (1.0 - mean)
        mean = np.exp(f)
        if self.likelihood == "poisson":
            return mean, self.t - mean, mean
        p = expit(f - self._log_r)  # mu / (r + mu)
        tr = self.t + self.dispersion
        return mean, self.t - tr * p, tr * p * (1.0 - p)


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
    dispersion: float | None = None,
) -> LaplacePosterior:
    """The posterior mode (:func:`rvm_pymc._core.laplace.newton_mode`) and its Laplace posterior.

    ``W0`` the start (zeros); stops at a Newton step below ``tol * (1 + max |W|)`` or after
    ``max_newton``.  LinAlgError if the Hessian is not positive definite.
    """
    m, c = Phi.shape[1], T.shape[1]
    W = np.zeros((m, c)) if W0 is None else np.array(W0, dtype=float)
    counts = likelihood in COUNT_LIKELIHOODS
    if counts and c != 1:
        raise ValueError(f"a model of counts has one column of counts; T has {c} columns")
    if counts or (c == 1 and np.all((T == 0.0) | (T == 1.0))):
        lik = OneColumn(likelihood, T[:, 0], dispersion)
        return find_mode_one_column(Phi, lik, alpha, W, tol, max_newton)

    def derivatives(W, state):
        Y = state[2]
        grad = Phi.T @ (T - Y) - alpha[:, None] * W
        return grad.T.ravel(), hessian(Phi, Y, alpha)

    r = newton_mode(
        W, lambda W: _objective(Phi, T, alpha, W), derivatives, tol=tol, max_iter=max_newton
    )
    L, p = r.factor or spd_factor(r.H, "Laplace Hessian")
    obj, ll, Y = r.state
    return laplace_posterior(r.w, Y, obj, ll, alpha, c, L, p, r.n_iter, r.converged)


def find_mode_one_column(
    Phi: np.ndarray,
    lik: OneColumn,
    alpha: np.ndarray,
    W0: np.ndarray | None,
    tol: float,
    max_newton: int = 100,
) -> LaplacePosterior:
    """:func:`find_mode` of a one-column model with ``lik`` built already (zeros if overflow)."""
    w = np.zeros(Phi.shape[1]) if W0 is None else np.array(W0[:, 0], dtype=float)
    PhiT = Phi.T
    work = scaled_rows_buffer(Phi)  # diag(d) Phi at every iteration: one allocation
    last = {}

    def evaluate(w):
        f = Phi @ w
        ll = lik.log_lik(f)
        return ll - 0.5 * float((alpha * w**2).sum()), ll, f

    def derivatives(w, state):
        y, score, d = lik.derivatives(state[2])
        last.update(y=y, d=d, score=score)
        return PhiT @ score - alpha * w, weighted_hessian(Phi, d, alpha, work)

    if not math.isfinite(evaluate(w)[0]):
        w = np.zeros_like(w)
    r = newton_mode(w, evaluate, derivatives, tol=tol, max_iter=max_newton)
    L, p = r.factor or spd_factor(r.H, "Laplace Hessian")
    obj, ll, _ = r.state
    y, d = last["y"], last["d"]
    post = laplace_posterior(
        r.w[:, None], y[:, None], obj, ll, alpha, 1, L, p, r.n_iter, r.converged, d
    )
    return replace(post, score=last["score"])
