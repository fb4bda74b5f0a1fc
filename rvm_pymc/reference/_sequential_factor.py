"""The exact log evidence of an active set of the fast regression solver, from a fresh factor.

:func:`factorise_active` factors the posterior precision of the active
columns, solves for the mean, and evaluates the log marginal likelihood with
its rounding error; :class:`Factor` is what it returns.  The rows may be a
row compression of the design (:class:`rvm_pymc._core.rowqr.RowQR`: ``R``
and ``z`` in place of ``Phi`` and ``t``), with the number of data points
``n`` and the residual ``rss_offset`` that no column removes passed in.
"""

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
    """A fresh factorisation of ``H = A + beta Phi_A^T Phi_A`` and what follows from it.

    ``L, p``: the Jacobi-scaled Cholesky factor (:func:`spd_factor`); ``mu``
    the posterior mean; ``resid = t - Phi_A mu`` (of the rows given);
    ``lml`` the log marginal likelihood; ``cond`` the 1-norm condition number
    of the Jacobi-scaled precision (LAPACK's estimate); ``rounding`` the
    rounding error of ``lml`` (:func:`factorise_active`); ``rss`` the
    residual sum of squares of all the data (``resid`` and the offset).
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

    ``Gaa = Pa^T Pa`` and ``PhiT_t_a = Pa^T t`` of the active (unit-norm)
    columns ``Pa`` of the rows given, ``n`` the number of data points,
    ``rss_offset`` added to the residual sum of squares of those rows, ``tt``
    the squared norm of all the targets, ``triangle`` (optional) a callable
    returning :func:`rvm_pymc._core.rowqr.column_triangle` of ``(Pa, t)``.
    None when the posterior precision is not numerically positive definite.

    The rounding of the log evidence is machine epsilon times the sizes of
    its terms, of the residual ``t - Phi_A mu`` (each element rounded
    relative to ``|t_n| + |(Phi_A mu)_n|``; large when the target has a
    large mean) and of the log-determinant (a relative perturbation ``eps``
    of ``H`` moves ``log|H|`` by up to ``M_active eps cond(H)``, and
    ``M_active eps sqrt(cond(H))`` through the QR factorisation that
    :func:`regression_factor` uses for an ill-conditioned ``H``).
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
    """Rows standing in for ``[Phi_A | t]`` of the active sets of one design, for the QR route.

    The rows of a set are :func:`rvm_pymc._core.rowqr.column_triangle` of its
    unit-norm columns and the targets, ``(k + 1) x (k + 1)`` for ``k``
    columns of more than ``k + 1`` rows (``2 N k^2`` flops; fewer rows are
    kept as they are).  They do not depend on the precisions or
    the noise, so they are kept for the current active set and the last set
    asked (a re-estimation or noise update keeps the set; the set after an
    accepted move is the one just asked for), and a deletion's come from the
    larger set's (:func:`rvm_pymc._core.rowqr.triangle_without`, ``O(k^3)``).
    """

    def __init__(self, t: np.ndarray) -> None:
        self.t = t
        self.kept: dict[tuple, np.ndarray] = {}  # active set -> its rows

    def getter(
        self, key: tuple, columns: np.ndarray, current: tuple, drop: int | None = None
    ) -> Callable[[], np.ndarray]:
        """A callable returning the rows of set ``key`` (made on the first call).

        ``columns``: the set's unit-norm columns (N x k).  ``current``: the
        active set, whose rows stay kept.  ``drop``: ``key`` is ``current``
        without its column ``drop`` (a deletion); its rows then come from the
        current set's, when those are kept (else that set went by Cholesky).
        """

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
