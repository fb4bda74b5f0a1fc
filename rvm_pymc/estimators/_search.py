"""The continuous refinement of ``gamma="evidence"`` between the widths of its grid.

The grid (``gamma_grid``, or 9 widths over 4 decades around ``"scale"``) brackets
the width of largest log evidence; it is refined on a continuous ``log gamma``
in two steps, every fit warm-started from the nearest width fitted
(:func:`rvm_pymc.reference.fit_posterior`, ``start``):

1. *Width, at nearly fixed bases.*  The relevance vectors of the best grid
   width, plus :data:`EXTRA` candidate centres spread over the training
   points, are re-fitted at :data:`SCAN` widths evenly spaced between the two
   neighbouring grid widths, from its precisions and noise (their kernel
   columns only: N x ~30, not N x N), then at the vertex of the parabola
   through the best of them and its neighbours (the interpolation step of
   Brent's method).  This evidence is a lower bound of the evidence at each
   width; the best width found is fitted over all bases.
2. *Local maximum.*  Full fits at ``gamma * 1.1`` and ``gamma / 1.1`` of the
   best fit so far, each warm-started from it, until neither is higher: the
   width returned is a local maximum of the evidence on that scale (at most
   :data:`MAX_ROUNDS` rounds).

Every full fit is recorded in ``evidence_path_`` (the grid first, then the
refinement in the order made); the fixed-basis fits of step 1 are not (their
evidence is a lower bound, not the evidence at their width).  The grid is
kept as the bracket because the evidence can jump between distant widths in
ways no local search sees (on 300 points of scikit-learn's diabetes data, in
``benchmarks/bench_width_search.py``, it is flat within 9 nats from 0.01 to 1
times ``"scale"`` and 92 nats higher at 10 times).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from rvm_pymc._core.parallel import record_warnings
from rvm_pymc.estimators._scaling import column_rms

__all__ = ["EXTRA", "MAX_ROUNDS", "SCAN", "STEP", "choice_key", "refine_width"]

STEP = float(np.log(1.1))
"""The local maximum is checked at ``gamma * 1.1`` and ``gamma / 1.1``."""
SCAN = 5
"""Step 1 fits the bases at this many widths between the neighbours of the best grid width."""
EXTRA = 20
"""Step 1 adds about this many candidate centres, evenly spread, to the relevance vectors."""
MAX_ROUNDS = 8
"""At most this many rounds of step 2 (each moves the width by a factor 1.1)."""
BASES_TOL = 1e-4
"""Tolerance (on ``log alpha``) of the fixed-basis fits of step 1."""


def refine_width(est, X, t, prior, solver: str, seed, fits: list[dict], k: int):
    """Refine the best grid width ``fits[k]``; return the best fit and the new fits made.

    Parameters
    ----------
    est : RVR or RVC
        Its ``_design``, ``_make_basis`` and ``_reference_fit`` build and fit.
    X : ndarray
        Training inputs.
    t : ndarray
        Targets on the fitted scale (class codes for a classifier).
    prior : HyperPrior
    solver : str
        Of the reference solver; the full fits of ``"mackay"`` and ``"em"``
        start from every basis (those solvers cannot add a basis to a warm start).
    seed : int or None
        Of the basis's choice of centres at large N.
    fits : list of dict
        The grid fits, in increasing width (:func:`grid_fit`).
    k : int
        The best of them.

    Returns
    -------
    (dict, list of dict)
        The best fit (with its ``basis``, ``Phi`` and ``scale``) and the fits
        made here, in order.
    """
    bounds = (fits[0]["x"], fits[-1]["x"])
    best = fits[k]
    best.update(_design(est, X, seed, best["x"]))
    made: list[dict] = []
    lo, hi = fits[max(k - 1, 0)]["x"], fits[min(k + 1, len(fits) - 1)]["x"]
    step = _best_width_of_bases(est, X, t, prior, solver, best, np.linspace(lo, hi, SCAN))
    if step is not None and abs(step[0] - best["x"]) > 1e-9:
        made.append(_full_fit(est, X, t, prior, solver, seed, step[0], _warm(solver, step[1])))
        best = _better(best, made[-1])
    for _ in range(MAX_ROUNDS):
        tried = fits + made
        around = [float(np.clip(best["x"] + d, *bounds)) for d in (-STEP, STEP)]
        before = best
        for x in around:
            if min(abs(x - f["x"]) for f in tried) > 1e-9:
                start = _warm(solver, before["reference"][0])
                made.append(_full_fit(est, X, t, prior, solver, seed, x, start))
                best = _better(best, made[-1])
        if best is before:
            break
    return best, made


def _better(best: dict, new: dict) -> dict:
    """The fit of higher evidence; the other's design matrix is dropped (one N x M at a time)."""
    keep, drop = (new, best) if choice_key(new) > choice_key(best) else (best, new)
    drop["Phi"] = None
    return keep


def grid_fit(gamma: float, reference: tuple, caught: list) -> dict[str, Any]:
    """A fit of the grid as the refinement records it (no design matrix kept)."""
    info = reference[1]
    return {
        "x": float(np.log(gamma)),
        "gamma": float(gamma),
        "reference": reference,
        "warnings": caught,
        "log_evidence": float(info.log_evidence),
        "converged": bool(info.converged),
        "noise_at_bound": bool(info.attrs.get("noise_at_bound", False)),
    }


def choice_key(fit: dict) -> float:
    """What the width search maximises: the log evidence, ``-inf`` for a degenerate fit.

    A fit whose noise precision ended at its upper bound interpolates the
    targets; there the evidence grows without bound as the noise vanishes
    (with a basis per point as narrow as a point, each target gets its own
    variance), so its value is not a maximum and is never chosen over a fit
    that estimates the noise (on scikit-learn's diabetes data the narrowest
    widths "win" by 100 nats this way, with 439 relevance vectors and noise sd
    0.008).
    """
    return -np.inf if fit["noise_at_bound"] else fit["log_evidence"]


def _warm(solver: str, post):
    """The warm start of a full fit: ``post`` for the fast solver (the others cannot add)."""
    return post if solver == "fast" else None


def _design(est, X, seed, x: float) -> dict[str, Any]:
    basis, Phi, scale = est._design(float(np.exp(x)), X, seed)
    return {"basis": basis, "Phi": Phi, "scale": scale}


def _full_fit(est, X, t, prior, solver, seed, x: float, start) -> dict[str, Any]:
    """The reference fit at width ``exp(x)`` over every basis, warm-started from ``start``.

    Its design matrix is kept only while it is the best (the caller drops it).
    """
    design = _design(est, X, seed, x)
    ref, caught = record_warnings(
        est._reference_fit,
        (design["Phi"], t, prior, solver, design["basis"].basis_names_, start),
    )
    return {**grid_fit(float(np.exp(x)), ref, caught), **design}


def _evidence_of_bases(est, X, t, prior, solver, fit, xs) -> list[tuple[float, Any]]:
    """``(log evidence, posterior)`` of ``fit``'s bases (and ``EXTRA``) at each ``exp(x)``.

    Every fit is warm-started from ``fit``; ``-inf`` where it fails.
    """
    post = fit["reference"][0]
    basis = fit["basis"]
    where = {str(n): i for i, n in enumerate(basis.basis_names_)}
    cols = np.array([where[n] for n in post.basis_names], dtype=np.intp)
    off = int(getattr(basis, "bias", False))
    n_c = basis.centres_.shape[0]
    cols = np.union1d(cols, np.arange(0, n_c, max(1, n_c // EXTRA)) + off)
    names = [str(basis.basis_names_[i]) for i in cols]
    bias = bool(off) and cols[0] == 0
    centres = basis.centres_[cols[int(bias) :] - off]
    out = []
    for x in xs:
        Phi = _columns(est, X, float(np.exp(x)), centres, bias)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                ref = est._reference_fit(Phi, t, prior, solver, names, post, tol=BASES_TOL)
        except (np.linalg.LinAlgError, ValueError, FloatingPointError):
            out.append((-np.inf, None))
            continue
        degenerate = ref[1].attrs.get("noise_at_bound", False)
        out.append((-np.inf if degenerate else float(ref[1].log_evidence), ref[0]))
    return out


def _best_width_of_bases(est, X, t, prior, solver, fit, xs) -> tuple[float, Any] | None:
    """Step 1: ``(log gamma, posterior there)`` of the best fixed-basis fit at ``xs``.

    Then at the vertex of the parabola through the best and its two
    neighbours, kept if higher.  None when no width could be fitted.
    """
    xs = np.asarray(xs, dtype=float)
    found = dict(
        zip(xs.tolist(), _evidence_of_bases(est, X, t, prior, solver, fit, xs), strict=True)
    )
    values = np.array([found[x][0] for x in xs])
    k = int(np.argmax(values))
    if not np.isfinite(values[k]):
        return None
    x = float(xs[k])
    if 0 < k < xs.size - 1 and np.all(np.isfinite(values[k - 1 : k + 2])):
        vertex = _vertex(xs[k - 1 : k + 2], values[k - 1 : k + 2])
        if abs(vertex - x) > STEP / 2:
            found[vertex] = _evidence_of_bases(est, X, t, prior, solver, fit, [vertex])[0]
            if found[vertex][0] > values[k]:
                x = vertex
    return x, found[x][1]


def _vertex(x: np.ndarray, f: np.ndarray) -> float:
    """The abscissa of the vertex of the parabola through three points, the middle highest."""
    a, b = x[1] - x[0], x[1] - x[2]
    fa, fb = f[1] - f[0], f[1] - f[2]
    den = a * fb - b * fa
    if den == 0:
        return float(x[1])
    return float(np.clip(x[1] - 0.5 * (a * a * fb - b * b * fa) / den, x[0], x[2]))


def _columns(est, X, gamma: float, centres: np.ndarray, bias: bool) -> np.ndarray:
    """The kernel columns of ``centres`` at ``gamma`` (bias first), each scaled to unit RMS."""
    kernel = est._make_basis(gamma).kernel
    Phi = kernel(X, centres)
    if bias:
        Phi = np.hstack([np.ones((X.shape[0], 1)), Phi])
    return Phi / column_rms(Phi)
