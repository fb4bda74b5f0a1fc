"""The exact log evidence of an active set of the fast regression solver, from a fresh factor."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from rvm_pymc._core.evidence import LOG_2PI
from rvm_pymc._core.gaussian import factor_logdet, regression_factor
from rvm_pymc._core.rowqr import column_triangle, triangle_without

__all__ = ["ActiveRows", "Factor", "factorise_active"]


class Factor(NamedTuple):
    """A fresh factorisation of ``A + beta Phi_A^T Phi_A``: factor, mean, residual, ``lml``, its
    ``rounding``, ``cond`` and ``rss`` of all the data.
    """

    L: np.ndarray
    p: np.ndarray
    mu: np.ndarray
    resid: np.ndarray
    lml: float
    cond: float
    rounding: float
    rss: float


def factorise_active(
    Gaa, PhiT_t_a, Pa, t, alpha, beta, n: int, rss_offset: float, tt: float, triangle=None
) -> Factor | None:
    """Factor, mean, residual and log evidence of the active system ``(Gaa, Pa, alpha, beta)``.

    ``n``, ``rss_offset``, ``tt``: data count, residual offset and ``||t||^2`` of a
    row compression; ``triangle`` the QR route's rows.  The rounding of the
    evidence is eps times its terms (residual, ``M eps cond(H)`` of the log
    determinant).  None when not positive definite.
    """
    try:
        f = regression_factor(
            Pa,
            t,
            alpha,
            beta,
            gram=Gaa,
            PhiT_t=PhiT_t_a,
            triangle=triangle,
            what="posterior precision (fast RVM)",
        )
    except np.linalg.LinAlgError:
        return None
    L, p, mu, cond = f.L, f.p, f.mean, f.cond
    fit = Pa @ mu
    resid = t - fit
    rss = float(resid @ resid) + rss_offset
    terms = np.array(
        [
            n * LOG_2PI,
            factor_logdet(L, p),
            -float(np.sum(np.log(alpha))),
            -n * np.log(beta),
            beta * rss,
            float(np.sum(alpha * mu**2)),
        ]
    )
    lml = -0.5 * float(terms.sum())
    resid_err = 2.0 * beta * np.sqrt(rss) * (np.sqrt(tt) + math.sqrt(float(fit @ fit)))
    logdet_err = L.shape[0] * (np.sqrt(cond) if f.qr else cond)
    rounding = np.finfo(float).eps * (float(np.abs(terms).sum()) + resid_err + logdet_err)
    return Factor(L, p, mu, resid, lml, cond, rounding, rss)


class ActiveRows:
    """The QR route's rows (:func:`~rvm_pymc._core.rowqr.column_triangle`) of the active sets,
    kept for the current set and the last asked; a deletion's from the larger set's.
    """

    def __init__(self, t: np.ndarray) -> None:
        self.t = t
        self.kept: dict[tuple, np.ndarray] = {}  # active set -> its rows

    def getter(
        self, key: tuple, columns: np.ndarray, current: tuple, drop: int | None = None
    ) -> Callable[[], np.ndarray]:
        """A callable returning the rows of set ``key`` (``drop``: ``current`` without it)."""

        def rows() -> np.ndarray:
            T = self.kept.get(key)
            if T is None:
                parent = None if drop is None else self.kept.get(current)
                if parent is not None:
                    T = triangle_without(parent, drop)
                else:
                    T = column_triangle(columns, self.t)
                self.kept = {k: v for k, v in self.kept.items() if k == current}
                self.kept[key] = T
            return T

        return rows
