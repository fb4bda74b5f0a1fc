r"""Candidate kernel centres for large training sets (the basis of :class:`KernelBasis`).

A kernel RVM has one candidate column per training point: ``N`` columns, an
``N x N`` design matrix (80 GB at N = 100,000).  Above :data:`AUTO_FULL_MAX`
training points, :class:`~rvm_pymc.basis.KernelBasis` (``centres="auto"``, the
default) keeps instead the centres chosen here: a subset of the training
points whose kernel columns span, to a relative tolerance, the columns of all
of them.

The rule is greedy pivoted Cholesky on the kernel matrix of a random pool of
training points: start from nothing; repeatedly take the point whose kernel
column is worst explained by the columns already taken (the largest residual
variance ``k(x, x) - k_S(x)^T K_SS^{-1} k_S(x)``); stop when that residual is
below :data:`CENTRE_TOL` times the largest ``k(x, x)``, or after ``max_centres``.
The number of centres therefore follows the kernel width: a wide RBF on
sinc-like data needs about a dozen (its kernel matrix has numerical rank
about that), a narrow one hundreds.  The centres are spread over the inputs
and their columns are not near duplicates of each other, which a random subset
of the same size is not.  Only ``max_centres x pool`` numbers are ever held
(``L`` below), and the work is ``O(pool * max_centres^2)``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = [
    "AUTO_FULL_MAX",
    "AUTO_MAX_CENTRES",
    "CENTRE_POOL",
    "CENTRE_TOL",
    "choose_centres",
    "resolve_centres",
]

#: ``centres="auto"`` keeps every training point up to this many (the exact
#: kernel RVM; its design matrix is then at most 200 MB).
AUTO_FULL_MAX = 5000
#: ``centres="auto"`` above ``AUTO_FULL_MAX``: at most this many centres.
AUTO_MAX_CENTRES = 500
#: Stop when the largest residual kernel variance is below this fraction of the
#: largest ``k(x, x)`` (a kernel column explained to ~0.1% of its norm).
CENTRE_TOL = 1e-6
#: The greedy search looks at a random subset of at most this many training points.
CENTRE_POOL = 20000


def resolve_centres(centres: Any, n: int) -> int | None:
    """The largest number of centres to choose for ``n`` points, or None for all of them.

    Parameters
    ----------
    centres : "auto", "all" or int
        The ``centres`` parameter of :class:`~rvm_pymc.basis.KernelBasis`.
    n : int
        Number of training points.

    Returns
    -------
    int or None
        None means every training point is a centre.
    """
    if isinstance(centres, str):
        if centres == "all" or (centres == "auto" and n <= AUTO_FULL_MAX):
            return None
        if centres == "auto":
            return AUTO_MAX_CENTRES
    elif isinstance(centres, (int, np.integer)) and not isinstance(centres, bool):
        if centres >= 1:
            return None if centres >= n else int(centres)
    raise ValueError(f'centres must be "auto", "all" or a positive integer; got {centres!r}')


def _generator(random_state: Any) -> np.random.Generator:
    """A Generator from None (a fixed seed: the same data give the same centres), int or RNG."""
    if random_state is None:
        return np.random.default_rng(0)
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(2**31 - 1))
    return np.random.default_rng(random_state)


def choose_centres(
    X: np.ndarray,
    kernel,
    max_centres: int,
    *,
    tol: float | None = None,
    pool: int | None = None,
    random_state: Any = None,
) -> np.ndarray:
    """Indices of training points to use as kernel centres (greedy pivoted Cholesky).

    Parameters
    ----------
    X : ndarray of shape (N, d)
        Training inputs (validated, float64).
    kernel : Kernel
        The kernel; its ``diag`` gives ``k(x, x)``.
    max_centres : int
        Upper bound on the number of centres returned.
    tol : float, optional
        Stop when every residual kernel variance is at most ``tol`` times the
        largest ``k(x, x)`` of the pool; default :data:`CENTRE_TOL`.
    pool : int, optional
        Search a random subset of at most this many points (all when N is
        smaller); default :data:`CENTRE_POOL`.
    random_state : None, int, Generator or RandomState
        Draws the pool; None is a fixed seed, so that the same data give the
        same centres (the fit is deterministic like the rest of the reference path).

    Returns
    -------
    ndarray of int
        Sorted, distinct row indices into ``X``; at least one.
    """
    tol = CENTRE_TOL if tol is None else float(tol)
    pool = CENTRE_POOL if pool is None else int(pool)
    n = X.shape[0]
    if n > pool:
        idx = np.sort(_generator(random_state).choice(n, size=pool, replace=False))
    else:
        idx = np.arange(n)
    Xp = X[idx]
    d = np.asarray(kernel.diag(Xp), dtype=np.float64).copy()
    top = float(d.max()) if d.size else 0.0
    max_centres = min(int(max_centres), idx.size)
    if not top > 0:  # a kernel with k(x, x) <= 0 everywhere: nothing to rank by
        return idx[:max_centres]
    L = np.empty((max_centres, idx.size))
    chosen: list[int] = []
    for j in range(max_centres):
        p = int(np.argmax(d))
        if d[p] <= tol * top:
            break
        row = kernel(Xp[p : p + 1], Xp)[0]
        if j:
            row -= L[:j, p] @ L[:j]
        row /= np.sqrt(d[p])
        L[j] = row
        d -= row * row
        d[p] = 0.0
        chosen.append(p)
    return np.sort(idx[np.asarray(chosen, dtype=np.intp)])
