"""Kernel centres for large training sets: greedy pivoted Cholesky of a random pool's kernel
matrix, then a farthest-point fill (:func:`spread_fill`)."""

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

#: ``centres="auto"`` keeps every training point up to this many.
AUTO_FULL_MAX = 2000
#: ``centres="auto"`` above ``AUTO_FULL_MAX``: at most this many by pivoted Cholesky,
AUTO_MAX_CENTRES = 500
#: filled up to this many when fewer span the kernel columns.
AUTO_FILL_CENTRES = 1000
#: Stop when the largest residual kernel variance is below this fraction of max ``k(x, x)``.
CENTRE_TOL = 1e-6
#: The greedy search looks at a random subset of at most this many training points.
CENTRE_POOL = 20000
_FILL_BLOCK = 256  # centres per block of distances


def resolve_centres(centres: Any, n: int) -> tuple[int, int] | None:
    """``(max_centres, fill_to)`` for ``centres`` ("auto", "all", int) and ``n``; None: all."""
    if isinstance(centres, str):
        if centres == "all" or (centres == "auto" and n <= AUTO_FULL_MAX):
            return None
        if centres == "auto":
            return AUTO_MAX_CENTRES, AUTO_FILL_CENTRES
    elif isinstance(centres, int | np.integer) and not isinstance(centres, bool) and centres >= 1:
        return None if centres >= n else (int(centres), int(centres))
    raise ValueError(f'centres must be "auto", "all" or a positive integer; got {centres!r}')


def _generator(random_state: Any) -> np.random.Generator:
    """A Generator from None (a fixed seed), int or RNG."""
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
    """Indices of training points to use as kernel centres (pivoted Cholesky, then a fill)."""
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
        # copied: a kernel may return a view of its cache
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
    """``chosen`` plus rows of ``X`` up to ``n_total``, each the farthest in kernel distance
    (``diag = kernel.diag(X)``; duplicates never added)."""
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
