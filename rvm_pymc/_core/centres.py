r"""Candidate kernel centres for large training sets (the basis of :class:`KernelBasis`).

A kernel RVM has one candidate column per training point: ``N`` columns, an
``N x N`` design matrix (80 GB at N = 100,000).  Above :data:`AUTO_FULL_MAX`
training points, :class:`~rvm_pymc.basis.KernelBasis` (``centres="auto"``, the
default) keeps instead at most :data:`AUTO_FILL_CENTRES` training points as
centres, chosen here in two stages from a random pool of at most
:data:`CENTRE_POOL`:

1. **Greedy pivoted Cholesky** on the kernel matrix of the pool: repeatedly
   take the point whose kernel column is worst explained by the columns
   already taken (the largest residual variance
   ``k(x, x) - k_S(x)^T K_SS^{-1} k_S(x)``) while that residual is above
   :data:`CENTRE_TOL` times the largest ``k(x, x)``, at most
   :data:`AUTO_MAX_CENTRES`.  These centres span the kernel columns of every
   training point (their number is the numerical rank: about a dozen for a
   wide RBF on 1-D sinc, hundreds in 3-D).
2. **Farthest-point fill** (:func:`spread_fill`), only when stage 1 stopped
   below its cap, up to :data:`AUTO_FILL_CENTRES`: each new centre is the
   pool point farthest, in kernel distance, from the centres taken so far.
   Spanning the columns is not enough for the sparse prior: an RVM picks a
   few columns, so *where* the candidates lie matters (with only the dozen
   spanning centres, 1-D sinc at N = 10,000 was 39% worse than the exact
   fit; filled to 1000, 5% over 10 data sets).  The fill keeps the
   candidates spread like a grid; a random sample of the same size has
   clumps of near-duplicate columns.

Memory: ``max_centres x pool`` numbers (``L`` below); work
``O(pool * max_centres^2)`` for stage 1 and ``O(pool * max_centres)`` kernel
evaluations for stage 2.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = [
    "AUTO_FILL_CENTRES",
    "AUTO_FULL_MAX",
    "AUTO_MAX_CENTRES",
    "CENTRE_POOL",
    "CENTRE_TOL",
    "choose_centres",
    "describe_rule",
    "resolve_centres",
    "spread_fill",
]

#: ``centres="auto"`` keeps every training point up to this many (the exact
#: kernel RVM).  Chosen by cost: see ``docs/reference_solver.md``, "Large N".
AUTO_FULL_MAX = 2000
#: ``centres="auto"`` above ``AUTO_FULL_MAX``: at most this many centres by
#: pivoted Cholesky (a kernel of higher numerical rank keeps these: its fits
#: have hundreds of relevance vectors and cost ~ centres x relevance vectors).
AUTO_MAX_CENTRES = 500
#: ``centres="auto"``: when fewer centres span the kernel columns, fill up to
#: this many (an N x 1001 design with the bias column: 0.8 GB at N = 100,000).
AUTO_FILL_CENTRES = 1000
#: Stop when the largest residual kernel variance is below this fraction of the
#: largest ``k(x, x)`` (a kernel column explained to ~0.1% of its norm).
CENTRE_TOL = 1e-6
#: The greedy search looks at a random subset of at most this many training points.
CENTRE_POOL = 20000
#: Centres per block when distances to many of them are taken at once (memory pool x block).
_FILL_BLOCK = 256


def resolve_centres(centres: Any, n: int) -> tuple[int, int] | None:
    """How many centres to choose for ``n`` points, or None for all of them.

    Parameters
    ----------
    centres : "auto", "all" or int
        The ``centres`` parameter of :class:`~rvm_pymc.basis.KernelBasis`.
    n : int
        Number of training points.

    Returns
    -------
    (max_centres, fill_to) or None
        The arguments of :func:`choose_centres`; None means every training
        point is a centre.  An integer ``m`` gives ``(m, m)``: ``m`` centres.
    """
    if isinstance(centres, str):
        if centres == "all" or (centres == "auto" and n <= AUTO_FULL_MAX):
            return None
        if centres == "auto":
            return AUTO_MAX_CENTRES, AUTO_FILL_CENTRES
    elif isinstance(centres, (int, np.integer)) and not isinstance(centres, bool):
        if centres >= 1:
            return None if centres >= n else (int(centres), int(centres))
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
    fill_to: int = 0,
    random_state: Any = None,
) -> np.ndarray:
    """Indices of training points to use as kernel centres (pivoted Cholesky, then a fill).

    Parameters
    ----------
    X : ndarray of shape (N, d)
        Training inputs (validated, float64).
    kernel : Kernel
        The kernel; its ``diag`` gives ``k(x, x)``.
    max_centres : int
        At most this many centres by pivoted Cholesky.
    tol : float, optional
        Stop when every residual kernel variance is at most ``tol`` times the
        largest ``k(x, x)`` of the pool; default :data:`CENTRE_TOL`.
    pool : int, optional
        Search a random subset of at most this many points (all when N is
        smaller); default :data:`CENTRE_POOL`.
    fill_to : int
        When fewer than ``max_centres`` centres span the kernel columns (the
        Cholesky stopped at ``tol``), add more up to ``fill_to``, each the pool
        point farthest in kernel distance from the centres taken so far
        (:func:`spread_fill`).  0: no fill.
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
    diag = np.asarray(kernel.diag(Xp), dtype=np.float64)
    d = diag.copy()
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
        # Written into our own buffer: a kernel may return a view of its cache.
        L[j] = kernel(Xp[p : p + 1], Xp)[0]
        row = L[j]
        if j:
            row -= L[:j, p] @ L[:j]
        row /= np.sqrt(d[p])
        d -= row * row
        d[p] = 0.0
        chosen.append(p)
    del L
    fill_to = min(int(fill_to), idx.size)
    if len(chosen) < min(max_centres, fill_to):
        chosen = spread_fill(Xp, kernel, diag, chosen, fill_to)
    return np.sort(idx[np.asarray(chosen, dtype=np.intp)])


def spread_fill(
    X: np.ndarray, kernel: Any, diag: np.ndarray, chosen: list[int], n_total: int
) -> list[int]:
    """Add points of ``X`` to ``chosen`` until there are ``n_total``: each the farthest from them.

    The distance is the kernel (feature-space) distance
    ``k(x, x) + k(c, c) - 2 k(x, c)``, so for a stationary kernel the new
    centres fill the gaps of the input space left by the chosen ones (they are
    spread like a grid, not clumped like a random sample).  Points at distance
    0 from a centre (duplicates) are never added.

    Parameters
    ----------
    X : ndarray of shape (n, d)
        Candidate points.
    kernel : Kernel
    diag : ndarray of shape (n,)
        ``kernel.diag(X)``.
    chosen : list of int
        Rows of ``X`` already taken (not modified).
    n_total : int
        Stop at this many, or when every remaining point duplicates a centre.

    Returns
    -------
    list of int
        ``chosen`` followed by the added rows.
    """
    out = list(chosen)
    near = np.full(X.shape[0], np.inf)  # squared distance to the nearest chosen centre
    for s in range(0, len(out), _FILL_BLOCK):
        c = np.asarray(out[s : s + _FILL_BLOCK], dtype=np.intp)
        dist = diag[:, None] + diag[c][None, :] - 2.0 * kernel(X, X[c])
        np.minimum(near, dist.min(axis=1), out=near)
    near[np.asarray(out, dtype=np.intp)] = -np.inf
    while len(out) < n_total:
        p = int(np.argmax(near))
        if not near[p] > 0.0:
            break
        out.append(p)
        np.minimum(near, diag + diag[p] - 2.0 * kernel(X[p : p + 1], X)[0], out=near)
        near[p] = -np.inf
    return out


def describe_rule() -> str:
    """One line saying what ``centres="auto"`` does with the current settings."""
    return (
        f"every training point up to N = {AUTO_FULL_MAX}; above, at most {AUTO_MAX_CENTRES} "
        f"centres by greedy pivoted Cholesky (tol {CENTRE_TOL:g}), filled by farthest point "
        f"to {AUTO_FILL_CENTRES} when fewer span the kernel; pool {CENTRE_POOL}"
    )
