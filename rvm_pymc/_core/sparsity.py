r"""The shared-precision maths of the fast classifier: per-basis optimum and leaving test.

A basis with ``C`` weights sharing one precision has a ``C x C`` sparsity
matrix ``s_m`` and qualities ``q_m``; with ``s_m = V diag(lambda) V^T`` and
``q~ = V^T q_m`` its share of the linearised log evidence is

.. math::

    \\ell_m(\\alpha) = \\tfrac12 \\sum_k \\left[-\\log(1 + \\lambda_k/\\alpha)
        + \\tilde q_k^2 / (\\alpha + \\lambda_k)\\right],

maximised among the real roots of a polynomial (:func:`maximise_shared`).
``C = 1`` is closed form (:func:`ell`, :func:`active_sq`).  Tipping & Faul (2003).
"""

from __future__ import annotations

import math

import numpy as np

__all__ = [
    "LEAVING_SETTLED",
    "active_sq",
    "ell",
    "ell_shared",
    "ell_shared_derivatives",
    "gain_rounding",
    "leaving_active",
    "maximise_shared",
    "rotate",
]

_POLISH_STEPS = 3
_EPS = float(np.finfo(float).eps)


def ell(alpha, s, q2):
    """Per-basis log-evidence contribution ``ell_m(alpha)``; zero at alpha = inf."""
    return 0.5 * (-np.log1p(s / alpha) + q2 / (alpha + s))


def active_sq(alpha, S, Q, sigma_diag, mu):
    """Sparsity and quality factors ``s_m, q_m`` of bases in the model (the posterior form
    ``1/Sigma_mm - alpha``, ``mu_m / Sigma_mm`` where ``alpha S / (alpha - S)`` would cancel)."""
    use_post = alpha * sigma_diag <= 0.9
    if use_post.all():  # the usual case near convergence: the same numbers, fewer operations
        s = 1.0 / sigma_diag - alpha
        q = mu / sigma_diag
    else:
        denom = np.where(use_post, 1.0, alpha - S)
        s = np.where(use_post, 1.0 / sigma_diag - alpha, alpha * S / denom)
        q = np.where(use_post, mu / sigma_diag, alpha * Q / denom)
    # s >= 0 exactly (Sigma_mm <= 1/alpha): a negative value is rounding
    return np.maximum(s, 0.0), q


def gain_rounding(alpha_old, alpha_new, s, q2):
    """The rounding scale of the gain ``ell(alpha_new) - ell(alpha_old)``: eps x its terms."""
    if all(isinstance(x, float) for x in (alpha_old, alpha_new, s, q2)):
        try:  # one move's gain (the fast solver's every step): the same sums, without arrays
            # (NumPy's log1p, not math's: they can differ in the last bit)
            size = sum(
                abs(float(np.log1p(s / a))) + q2 / (a + s) if math.isfinite(a) else 0.0
                for a in (alpha_old, alpha_new)
            )
            return _EPS * size
        except (ZeroDivisionError, ValueError):
            pass  # a zero precision: the array form gives inf or nan, Python floats raise
    alpha_old, alpha_new, s, q2 = (
        np.asarray(x, dtype=float) for x in (alpha_old, alpha_new, s, q2)
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        size = sum(
            np.where(np.isfinite(a), np.abs(np.log1p(s / a)) + q2 / (a + s), 0.0)
            for a in (alpha_old, alpha_new)
        )
    return _EPS * size


def ell_shared(alpha, lam, q2):
    """Sum over eigen-directions of the per-basis contribution; ``alpha`` broadcasts."""
    return ell(alpha, lam, q2).sum(axis=-1)


def _ell_shared_slopes(alpha, lam, q2):
    """The two derivatives of :func:`ell_shared_derivatives` only; ``alpha`` of shape (M, 1)."""
    d = alpha + lam
    d2 = d**2
    aq = alpha * q2 / d2
    g = 0.5 * (lam / d - aq).sum(axis=-1)
    h = -0.5 * (alpha * lam / d2 + aq * (lam - alpha) / d).sum(axis=-1)
    return g, h


def ell_shared_derivatives(u, lam, q2):
    """``ell`` and its first two derivatives in ``u = log alpha`` (``u`` of shape (M,))."""
    alpha = np.exp(u)[:, None]
    g, h = _ell_shared_slopes(alpha, lam, q2)
    return ell_shared(alpha, lam, q2), g, h


def _poly_mul(a, b):
    """Row-wise product of polynomials (coefficients highest power first)."""
    out = np.zeros((a.shape[0], a.shape[1] + b.shape[1] - 1))
    for i in range(b.shape[1]):
        out[:, i : i + a.shape[1]] += a * b[:, i : i + 1]
    return out


def _stationary_points(lam, q2):
    """Positive real roots of ``d ell / d alpha`` (R, 2p - 1), NaN elsewhere, for ``lam`` and
    ``q2`` (R, p >= 2) scaled to a largest ``lam`` of one."""
    r, p = lam.shape
    P = np.zeros((r, 2 * p))
    if p == 2:  # the product written out
        l1, l2 = lam[:, 0], lam[:, 1]
        e1, e2 = l1 - q2[:, 0], l2 - q2[:, 1]
        s1, s2 = l1**2, l2**2
        P[:, 0] = e1 + e2
        P[:, 1] = 2.0 * (l2 * e1 + l1 * e2) + s1 + s2
        P[:, 2] = s2 * e1 + s1 * e2 + 2.0 * l1 * l2 * (l1 + l2)
        P[:, 3] = 2.0 * s1 * s2
    for k in range(p if p != 2 else 0):
        term = np.column_stack([lam[:, k] - q2[:, k], lam[:, k] ** 2])
        for j in range(p):
            if j != k:
                d2 = np.column_stack([np.ones(r), 2 * lam[:, j], lam[:, j] ** 2])
                term = _poly_mul(term, d2)  # (alpha + lambda_j)^2
        P += term
    lead = P[:, 0]
    size = np.abs(P).max(axis=1)
    # sum(lambda - q2) = 0 puts a root at alpha = inf; a tiny leading coefficient moves it
    # to a huge finite alpha, where ell is (numerically) zero as at alpha = inf.
    tiny = 1e-14 * size
    lead = np.where(np.abs(lead) < tiny, np.where(lead < 0, -tiny, tiny), lead)
    if p == 2:  # three classes: a cubic, solved in closed form
        roots = _real_cubic_roots(P[:, 1:] / lead[:, None])
        return np.where(roots > 0, roots, np.nan)
    deg = 2 * p - 1
    comp = np.zeros((r, deg, deg))
    comp[:, 0, :] = -P[:, 1:] / lead[:, None]
    comp[:, np.arange(1, deg), np.arange(deg - 1)] = 1.0
    roots = np.linalg.eigvals(comp)
    real = (np.abs(roots.imag) <= 1e-7 * np.abs(roots)) & (roots.real > 0)
    return np.where(real, roots.real, np.nan)


def _real_cubic_roots(abc: np.ndarray) -> np.ndarray:
    """Real roots of ``x^3 + a x^2 + b x + c`` row by row, (R, 3), NaN where fewer (Cardano)."""
    a, b, c = abc[:, 0], abc[:, 1], abc[:, 2]
    p = b - a**2 / 3.0
    q = 2.0 * a**3 / 27.0 - a * b / 3.0 + c
    hq, p3 = q / 2.0, p / 3.0
    disc = hq**2 + p3**3
    one = disc > 0
    sq = np.sqrt(np.where(one, disc, 0.0))
    t1 = np.cbrt(-hq + sq) + np.cbrt(-hq - sq)
    three = ~one & (p < 0)
    m = 2.0 * np.sqrt(np.where(three, -p3, 1.0))
    arg = np.where(three, 3.0 * q / (p * m), 0.0)
    theta = np.arccos(np.minimum(np.maximum(arg, -1.0), 1.0)) / 3.0
    out = np.where(three[:, None], m[:, None] * np.cos(theta[:, None] - _THIRDS), np.nan)
    # one real root: Cardano's; neither one nor three: p = q = 0, a triple root
    out[:, 0] = np.where(one, t1, np.where(three, out[:, 0], 0.0))
    return out - a[:, None] / 3.0


_THIRDS = np.array([2.0 * np.pi * k / 3.0 for k in range(3)])


def maximise_shared(lam: np.ndarray, q2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Maximise ``ell(alpha)`` per row of :func:`rotate`'s ``lam``, ``q2``: ``(alpha*, ell*)``,
    ``alpha* = inf`` if none > 0."""
    m, c = lam.shape
    alpha_best = np.full(m, np.inf)
    ell_best = np.zeros(m)
    p_row = (lam > 0).sum(axis=1)
    some = (q2 > lam * (1.0 + 1e-12)).any(axis=1)  # else ell increases up to alpha = inf
    p_row = np.where(some, p_row, 0)
    for p in np.flatnonzero(np.bincount(p_row, minlength=c + 1)[1:]) + 1:
        rows = np.flatnonzero(p_row == p)
        # eigh sorts ascending and rotate zeroes the null directions: the p nonzero ones
        # are the last p columns
        L, Q2 = lam[rows, c - p :], q2[rows, c - p :]
        if p == 1:
            cand = L[:, :1] ** 2 / np.maximum(Q2[:, :1] - L[:, :1], 1e-300)
        else:
            scale = L.max(axis=1, keepdims=True)
            cand = _stationary_points(L / scale, Q2 / scale) * scale
        real = ~np.isnan(cand)
        vals = ell_shared(np.where(real, cand, 1.0)[:, :, None], L[:, None], Q2[:, None])
        vals = np.where(real, vals, -np.inf)
        i = vals.argmax(axis=1)
        u = np.log(cand[np.arange(rows.size), i])
        ok = np.isfinite(u)
        u = np.where(ok, u, 0.0)
        for _ in range(_POLISH_STEPS):
            g, h = _ell_shared_slopes(np.exp(u)[:, None], L, Q2)
            concave = h < 0
            step = np.where(concave, -g / np.where(concave, h, -1.0), 0.0)
            u = u + np.minimum(np.maximum(step, -0.5), 0.5)
        alpha = np.exp(u)
        f = ell_shared(alpha[:, None], L, Q2)
        good = ok & (f > 0)
        alpha_best[rows[good]] = alpha[good]
        ell_best[rows[good]] = f[good]
    return alpha_best, ell_best


_PSD_TOL = 1e-10
"""Relative size of a negative eigenvalue of ``s_m`` read as rounding (:func:`rotate`)."""


def rotate(
    s: np.ndarray, q: np.ndarray, scale: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Eigenvalues of the (M, C, C) matrices ``s`` and squared rotated ``q`` (M, C), ascending;
    those within ``1e-10`` of the largest eigenvalue are zeroed with their ``q~^2``.  Raises
    LinAlgError for an eigenvalue below ``-_PSD_TOL * max(largest eigenvalue, scale)``."""
    if s.shape[1] == 3:
        lam, q2 = _rotate3(s, q)
    else:
        lam, V = np.linalg.eigh(s)
        q2 = np.einsum("mkj,mk->mj", V, q) ** 2
    top = lam.max(axis=1, keepdims=True)
    size = top if scale is None else np.maximum(top, scale[:, None])
    bad = lam < -_PSD_TOL * size
    if bad.any():
        m = int(np.flatnonzero(bad.any(axis=1))[0])
        raise np.linalg.LinAlgError(
            f"the sparsity matrix s_m of a basis is not positive semi-definite beyond "
            f"rounding (eigenvalues {lam[m].tolist()} on a scale of {float(size[m, 0]):.3g}); "
            "the Laplace covariance, mode and candidate statistics are inconsistent"
        )
    null = lam <= 1e-10 * top
    return np.where(null, 0.0, lam), np.where(null, 0.0, q2)


# orthonormal basis of the plane orthogonal to (1, 1, 1)
_U3 = np.array([[1.0, -1.0, 0.0], [1.0, 1.0, -2.0]]).T / np.sqrt([2.0, 6.0])


def _rotate3(s: np.ndarray, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`rotate` for three classes: the 2 x 2 problem orthogonal to ``(1, 1, 1)``."""
    m = s.shape[0]
    sp = ((_U3.T @ s).reshape(2 * m, 3) @ _U3).reshape(m, 2, 2)  # one product for the right
    qp = q @ _U3
    a, b, c = sp[:, 0, 0], 0.5 * (sp[:, 0, 1] + sp[:, 1, 0]), sp[:, 1, 1]
    a_c = a - c
    mid, d = 0.5 * (a + c), np.hypot(0.5 * a_c, b)
    theta = 0.5 * np.arctan2(2.0 * b, a_c)
    cos, sin = np.cos(theta), np.sin(theta)
    q_big = cos * qp[:, 0] + sin * qp[:, 1]
    q_small = -sin * qp[:, 0] + cos * qp[:, 1]
    lam, q2 = np.zeros((a.size, 3)), np.zeros((a.size, 3))
    lam[:, 1], lam[:, 2] = mid - d, mid + d
    q2[:, 1], q2[:, 2] = q_small**2, q_big**2
    return lam, q2


LEAVING_SETTLED = 1e-3
"""Under the flat prior, full re-estimation drops the bases whose linearised optimum is
``alpha = inf`` once no other ``log alpha`` moves by more than this (then iterates on to
``tol``)."""


def leaving_active(alpha: np.ndarray, W: np.ndarray, cov: np.ndarray) -> np.ndarray:
    """Whether each active basis has its linearised optimum at ``alpha = inf``.

    From ``Sigma_mm = (alpha_m I + s_m)^-1`` and ``W_m = Sigma_mm q_m`` at the mode.
    """
    ma, c = W.shape
    if c == 1:  # 1 x 1 blocks: the same numbers without the batched inverse
        prec = 1.0 / cov.diagonal()
        return (prec * W[:, 0]) ** 2 <= prec - alpha
    blocks = cov.reshape(c, ma, c, ma)[:, np.arange(ma), :, np.arange(ma)]  # (ma, c, c)
    prec = np.linalg.inv(blocks)
    s = prec - alpha[:, None, None] * np.eye(c)
    q = np.einsum("mkl,ml->mk", prec, W)
    scale = alpha + np.abs(prec).max(axis=(1, 2))  # s is a difference of terms this large
    lam, q2 = rotate(0.5 * (s + np.transpose(s, (0, 2, 1))), q, scale)
    # Cheap answers first: no direction with q^2 > lambda means ell increases to
    # alpha = inf; sum(q^2 - lambda) > 0 means ell > 0 for large finite alpha.
    out = np.full(ma, np.inf)
    some = (q2 > lam * (1.0 + 1e-12)).any(axis=1)
    surely = (q2 - lam).sum(axis=1) > 0
    out[surely] = 1.0
    unsure = some & ~surely
    if unsure.any():
        out[unsure] = maximise_shared(lam[unsure], q2[unsure])[0]
    return ~np.isfinite(out)
