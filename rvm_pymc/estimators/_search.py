"""The width search of ``gamma="evidence"``: cheap fits on a few centres, exact fits last.

A fit over all N bases costs 8-180 iterations of the reference solver; most of
a search's time went into fitting every width that way.  The search here
fits the widths on fixed centres (:func:`search_centres`: at N = 1000 in one
dimension, 100 of them evenly spread, plus the bias), and only its result
over all bases:

1. *Grid.*  The widths of the grid (``gamma_grid``, or 9 widths over 4
   decades around ``"scale"``) on those centres, from the solver's own start
   (through joblib, as independent tasks), from the grid's middle width
   outward (:func:`search_grid`): a side stops at a width whose evidence is
   :data:`DROP` nats below the best and falling, or where the fit
   interpolates toward narrower kernels, and its outer widths are not fitted
   (they cost most of the grid: on Friedman #2 the three narrowest widths took
   793 of its 1148 iterations).  The grid brackets the width of largest
   evidence: the evidence can jump between distant widths in ways no local
   search sees (on 300 points of scikit-learn's diabetes data it is flat
   within 9 nats from 0.01 to 1 times ``"scale"`` and 92 nats higher at 10
   times, where the fit interpolates).
2. *Refinement* on a continuous ``log gamma`` between the neighbours of the
   best grid width: Brent's parabolic step through the best width and its two
   nearest fitted neighbours, a golden-section step into the wider side when
   the parabola's vertex is unusable; every fit warm-started from the nearest
   width fitted (at most :data:`REFINE_CAP` iterations); until both
   neighbours of the best width are within a factor ``exp(STEP)`` (10 %), or
   after :data:`MAX_FITS` fits.
3. *Exact fits* (:func:`exact_fit`, in the caller
   :func:`rvm_pymc.estimators._widths.select_width`): the best width of the
   search, then the best width of the grid and, when the centres are not
   every point, the grid's widths within :data:`MARGIN` nats of it on the
   centres (which cannot rank them: on 300 sinc points the grid's best there
   was 1.8 nats below another width's exact fit), over all bases from the
   solver's own start; a width is skipped when an exact fit is already
   :data:`MARGIN` nats above its evidence on the centres.  The best is
   returned, the fit of ``gamma=<that width>`` number for number.  If all
   interpolate (:func:`choice_key`), the next best widths of the search are
   fitted the same way (at most :data:`FALLBACK` more).

``evidence_path_`` records every fit in the order made, ``"all_bases"``
telling the exact fits (step 3) from those on the centres (steps 1-2, whose
evidence is that of the smaller model).  The cost and what was measured and
not kept: ``benchmarks/README.md`` (``bench_width_search.py``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.base import clone

from rvm_pymc._core.parallel import record_warnings, run_recorded
from rvm_pymc.estimators._scaling import column_rms

__all__ = [
    "DROP",
    "FALLBACK",
    "MARGIN",
    "MAX_FITS",
    "REFINE_CAP",
    "SEARCH_CENTRES",
    "SEARCH_TOL",
    "STEP",
    "choice_key",
    "exact_fit",
    "grid_fit",
    "refine_width",
    "search_centres",
    "search_fit",
    "search_grid",
]

STEP = float(np.log(1.1))
"""The refinement stops when the best width's fitted neighbours are this close (10 %)."""
SEARCH_CENTRES = 100
"""The search fits every width on at most this many centres per input feature (and bias)."""
SEARCH_TOL = 1e-3
"""Tolerance (on ``log alpha``, ``log beta``) of the search's fits (the exact ones: ``tol``)."""
MAX_FITS = 8
"""At most this many fits in the refinement."""
REFINE_CAP = 100
"""At most this many iterations per fit of the refinement (typically 5-60 from the
neighbouring width); one stopped there is not chosen (on scikit-learn's regression
check data a warm start 4 % away from a fit of 33 iterations took 920)."""
FALLBACK = 2
"""At most this many more exact fits when the first two interpolate."""
MARGIN = 3.0
"""Nats by which the evidence on the centres may misjudge a width's exact fit: the grid's
widths within this of its best on the centres are all fitted exactly, unless an exact fit
is this far above them (the two differ by up to 1.8 nats at a width on sinc, N = 1000,
100 centres; not at all where the centres are every point)."""
DROP = 10.0
"""The grid is not fitted past a width this many nats below the best and falling (step 1)."""
_GOLDEN = 0.5 * (3.0 - np.sqrt(5.0))


def search_centres(X: np.ndarray) -> np.ndarray:
    """The indices of the training points the search uses as centres, evenly spread.

    :data:`SEARCH_CENTRES` per input feature, or all N points when that is more
    than half of them: the more features, the more centres a kernel fit needs
    to cover its inputs (on 300 points of breast cancer, 30 features, 100
    centres end 10 nats below all the points at the best width), and on few
    points a subset saves little.
    """
    n = X.shape[0]
    k = SEARCH_CENTRES * X.shape[1]
    return np.unique(np.linspace(0, n - 1, k if 2 * k <= n else n).round().astype(np.intp))


def search_fit(
    est, X, t, prior, solver: str, gamma: float, start=None, cap: int | None = None
) -> dict[str, Any]:
    """The fit of the search at ``gamma`` on :func:`search_centres` (see the module).

    Warm-started from ``start`` (a fit at another width on the same centres),
    at most ``cap`` iterations (a fit stopped there is never chosen:
    :func:`choice_key`); a failed fit has evidence ``-inf``.  Its warnings
    are recorded, not raised.
    """
    idx = search_centres(X)
    bias = bool(est.bias)
    names = ["bias"] * bias + [f"x{i}" for i in idx]
    Phi = est._make_basis(gamma).kernel(X, X[idx])
    if bias:
        Phi = np.hstack([np.ones((X.shape[0], 1)), Phi])
    Phi /= column_rms(Phi)
    try:
        ref, caught = record_warnings(
            est._reference_fit, (Phi, t, prior, solver, names, start, cap, SEARCH_TOL)
        )
    except (np.linalg.LinAlgError, ValueError, FloatingPointError):
        return _failed(gamma)
    fit = grid_fit(gamma, ref, caught)
    stopped = cap is not None and not fit["converged"] and ref[1].n_iter >= cap
    return {**fit, "all_bases": False, "stopped": stopped}


def search_grid(est, X, t, prior, solver: str, grid: list[float], n_jobs) -> list[dict]:
    """Step 1: the fits of the grid, from its middle width outward, in the order made.

    Each round fits the next width on each side still open (through joblib,
    as independent tasks, each on a clone of ``est``).  A side closes at a
    width whose evidence is more than :data:`DROP` nats below the best so far
    and lower than its inner neighbour's, or, toward narrower kernels (larger
    ``gamma``), at a width whose fit interpolates (:func:`choice_key`: a
    narrower kernel fits every point at least as closely).  The widths past
    a closed side are not fitted.
    """
    widths = sorted(grid)
    mid = len(widths) // 2
    spec = clone(est)
    fits: list[dict] = []
    fitted: dict[int, dict] = {}  # position in ``widths`` -> its fit
    last = {-1: mid, +1: mid}  # the outermost position fitted on each side
    todo = [mid]
    while todo:
        tasks = [(spec, X, t, prior, solver, widths[i]) for i in todo]
        for i, (fit, _caught) in zip(todo, run_recorded(search_fit, tasks, n_jobs), strict=True):
            fitted[i] = fit
            fits.append(fit)
        best = max(choice_key(f) for f in fits)
        todo = []
        for step in (-1, +1):
            i = last[step]
            inner = fitted.get(i - step) if i is not None and i != mid else None
            if i is None or _closes(fitted[i], inner, best, step):
                last[step] = None
            elif 0 <= i + step < len(widths):
                todo.append(i + step)
                last[step] = i + step
            else:
                last[step] = None
    return fits


def _closes(fit: dict, inner: dict | None, best: float, step: int) -> bool:
    """Whether the grid's side in direction ``step`` ends at ``fit`` (:func:`search_grid`)."""
    if step > 0 and fit["noise_at_bound"]:
        return True
    if inner is None:
        return False
    key = choice_key(fit)
    return key < choice_key(inner) and key < best - DROP


def exact_fit(est, X, t, prior, solver: str, seed, gamma: float) -> dict[str, Any]:
    """The fit of ``gamma=<gamma>`` over all bases, from the solver's own start.

    With its ``basis``, design matrix ``Phi`` and column ``scale``
    (:meth:`_BaseRVM._design`): what :func:`select_width` returns.
    """
    basis, Phi, scale = est._design(gamma, X, seed, t)
    ref, caught = record_warnings(est._reference_fit, (Phi, t, prior, solver, basis.basis_names_))
    fit = grid_fit(gamma, ref, caught)
    return {**fit, "all_bases": True, "basis": basis, "Phi": Phi, "scale": scale}


def refine_width(est, X, t, prior, solver: str, fits: list[dict], k: int) -> list[dict]:
    """Step 2: the fits of the refinement around the best grid width ``fits[k]``, in order.

    Parameters
    ----------
    est : RVR or RVC
    X : ndarray
        Training inputs.
    t : ndarray
        Targets on the fitted scale (class codes for a classifier).
    prior : HyperPrior
    solver : str
        Of the reference solver (``"mackay"`` and ``"em"`` cannot add a basis
        to a warm start: theirs start from every centre).
    fits : list of dict
        The fits of the grid (:func:`search_fit`), in increasing width.
    k : int
        The best of them by :func:`choice_key`.

    Returns
    -------
    list of dict
    """
    done = list(fits)
    best = fits[k]
    made: list[dict] = []
    for _ in range(MAX_FITS):
        x = _next_width(done, best)
        if x is None:
            break
        near = min(done, key=lambda f: abs(f["x"] - x))
        start = near["reference"][0] if solver == "fast" and near["reference"] else None
        made.append(search_fit(est, X, t, prior, solver, float(np.exp(x)), start, REFINE_CAP))
        done.append(made[-1])
        if choice_key(made[-1]) > choice_key(best):
            best = made[-1]
    return made


def _next_width(done: list[dict], best: dict) -> float | None:
    """The next ``log gamma`` to fit (Brent: parabola, else golden section), None when done."""
    xs = np.array(sorted({f["x"] for f in done}))
    i = int(np.flatnonzero(xs == best["x"])[0])
    left = xs[i - 1] if i > 0 else None
    right = xs[i + 1] if i + 1 < xs.size else None
    gaps = [best["x"] - left if left is not None else 0.0]
    gaps.append(right - best["x"] if right is not None else 0.0)
    if max(gaps) <= STEP:
        return None  # a local maximum on the scale of STEP (or an edge of the grid)
    if left is not None and right is not None:
        value = {f["x"]: choice_key(f) for f in done}
        f3 = np.array([value[left], value[best["x"]], value[right]])
        if np.all(np.isfinite(f3)):
            v = _vertex(np.array([left, best["x"], right]), f3)
            if min(abs(v - xs)) > STEP / 2:
                return v
    far = left if gaps[0] > gaps[1] else right
    return float(best["x"] + _GOLDEN * (far - best["x"]))


def _vertex(x: np.ndarray, f: np.ndarray) -> float:
    """The abscissa of the vertex of the parabola through three points, the middle highest."""
    a, b = x[1] - x[0], x[1] - x[2]
    fa, fb = f[1] - f[0], f[1] - f[2]
    den = a * fb - b * fa
    if den == 0:
        return float(x[1])
    return float(np.clip(x[1] - 0.5 * (a * a * fb - b * b * fa) / den, x[0], x[2]))


def grid_fit(gamma: float, reference: tuple, caught: list) -> dict[str, Any]:
    """One fit of the search as it is recorded (no design matrix kept)."""
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


def _failed(gamma: float) -> dict[str, Any]:
    """A search fit that raised: never chosen."""
    return {
        "x": float(np.log(gamma)),
        "gamma": float(gamma),
        "reference": None,
        "warnings": [],
        "log_evidence": -np.inf,
        "converged": False,
        "noise_at_bound": False,
        "all_bases": False,
        "stopped": False,
    }


def choice_key(fit: dict) -> float:
    """What the width search maximises: the log evidence, ``-inf`` for a degenerate fit.

    A fit whose noise precision ended at its upper bound interpolates the
    targets; there the evidence grows without bound as the noise vanishes
    (with a basis per point as narrow as a point, each target gets its own
    variance), so its value is not a maximum and is never chosen over a fit
    that estimates the noise (on scikit-learn's diabetes data the narrowest
    widths "win" by 100 nats this way, with 439 relevance vectors and noise sd
    0.008).  A fit of the refinement stopped at :data:`REFINE_CAP` iterations
    is not chosen either.
    """
    if fit["noise_at_bound"] or fit.get("stopped", False):
        return -np.inf
    return fit["log_evidence"]
