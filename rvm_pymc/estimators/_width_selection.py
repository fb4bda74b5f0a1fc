"""The kernel width: a given width, ``"scale"``, ``"cv"``, ``"evidence"`` or ``"integrate"``.

:func:`select_width` never sees the estimator: it takes a *design factory*
(``design(gamma, centres=None, compress=True) -> (basis, Phi, scale)``), a *fit*
(``fit(Phi, names, start=None, cap=None, tol=None) -> (WeightPosterior, FitInfo)``, the
reference solver on the scaled targets), for ``"cv"`` a *refit* (``refit(gamma, X, y)``,
one fold's fit) and a *runner* of independent fits (``run(fn, tasks) -> [(result,
warnings)]``).  ``"integrate"`` (:func:`fit_integrated`) samples the RBF log length scale
with NUTS; each draw's design matrix is then computed at its own width (:func:`latent_at`).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from rvm_pymc._core.centres import AUTO_FULL_MAX
from rvm_pymc._core.parallel import raise_again, record_warnings, run_recorded
from rvm_pymc._core.predictive import predictive, shuffled_folds
from rvm_pymc._core.rbf_width import gamma_of, log_length_scale_of, sq_distances, width_latent
from rvm_pymc.exceptions import ConvergenceWarning, InterpolationWarning, warn_user
from rvm_pymc.models.spec import RBF_UNIT_RMS

__all__ = [
    "AUTO_CV_MAX",
    "DEFAULT_GRID",
    "DROP",
    "MARGIN",
    "SEARCHED",
    "Fitted",
    "fit_integrated",
    "integrates_width",
    "latent_at",
    "sample_predictions_at",
    "scale_gamma",
    "select_width",
    "width_prior",
]

SEARCHED = ("auto", "cv", "evidence")  # the values of gamma that search gamma_grid
PATH_KEYS = ("gamma", "log_evidence", "converged", "noise_at_bound", "all_bases")
CV_PATH_KEYS = ("gamma", "cv_lpd", "cv_lpd_se", "relevance_fraction")
# the default gamma_grid, in units of the "scale" width; "cv" does not warn when its best is
# this grid's smallest gamma (the widest kernel): scoring past that edge made the panel's
# fits there worse on average (benchmarks/results/real_panel.md)
DEFAULT_GRID = np.logspace(-2.0, 2.0, 9)
# the sd of gamma="integrate"'s prior of log l: the default grid's ends lie 2 sd out
WIDTH_PRIOR_SD = float(np.log(DEFAULT_GRID[-1] / DEFAULT_GRID[0]) / 8.0)


def width_prior(X: np.ndarray) -> tuple[float, float]:
    """Mean and sd of ``gamma="integrate"``'s Normal prior of the log length scale."""
    centre = scale_gamma(X)
    return float(log_length_scale_of(centre)), WIDTH_PRIOR_SD


AUTO_CV_MAX = AUTO_FULL_MAX  # gamma="auto" is "cv" up to this many rows
CV_FOLDS = 5
STEP = float(np.log(1.1))  # the refinement stops when the best's neighbours are this close
SEARCH_CENTRES = 100  # centres of the evidence search per input feature
SEARCH_TOL = 1e-3
MAX_FITS = 8  # fits of the refinement
REFINE_CAP = 100  # iterations per fit of the refinement; one stopped there is not chosen
FALLBACK = 2  # more exact fits when the first two interpolate
MARGIN = 3.0  # nats by which the evidence on the centres may misjudge an exact fit
DROP = 10.0  # a side of the grid stops past a width this far below the best and falling
_GOLDEN = 0.5 * (3.0 - np.sqrt(5.0))


class Width(NamedTuple):
    """The width a fit uses, its basis and scaled design matrix, and its reference fit."""

    gamma: float | None
    basis: Any
    Phi: Any  # columns divided by scale (or its row compression)
    scale: np.ndarray
    reference: tuple | None  # (WeightPosterior, FitInfo), if it ran
    evidence_path: dict[str, np.ndarray] | None
    cv_path: dict[str, np.ndarray] | None = None


class Fitted(NamedTuple):
    """A backend's fit on the scaled problem, from which the estimator sets its attributes."""

    post: Any
    info: Any
    scale: np.ndarray
    gamma_draws: np.ndarray | None = None
    tree: dict[str, Any] | None = None


def scale_gamma(X: np.ndarray) -> float:
    """``1 / (n_features * X.var())`` as scikit-learn's SVR (1.0 for constant X)."""
    top = float(np.max(np.abs(X)))
    if np.ptp(X) == 0:
        return 1.0
    with np.errstate(over="ignore", under="ignore", divide="ignore"):
        var = np.var(X / top) * top * top
        gamma = float(1.0 / (X.shape[1] * var))
    if not (np.isfinite(gamma) and gamma > 0):
        v = f"{var:.3g}" if var > 0 else "below 5e-324"
        raise ValueError(
            f"gamma='scale' is 1 / (n_features * X.var()), but X has variance {v} "
            f"(values up to {top:.3g} in magnitude), too {'small' if gamma > 1 else 'large'} "
            "for a kernel width in float64: rescale X (e.g. sklearn's StandardScaler) "
            "or pass a numeric gamma"
        )
    return gamma


def width_rule(gamma: float | str, X: np.ndarray, y, classifier: bool) -> float | str:
    """``gamma`` with ``"auto"`` resolved to ``"cv"`` or ``"scale"``."""
    if gamma != "auto":
        return gamma
    n = X.shape[0]
    if n > AUTO_CV_MAX or n < 4:
        return "scale"
    if classifier and np.min(np.unique(y, return_counts=True)[1]) < 2:
        return "scale"
    return "cv"


def _candidates(rule, X: np.ndarray, grid, has_width: bool) -> list[float | None]:
    """The widths to fit for ``rule``."""
    if not has_width:
        return [None]
    if rule == "scale":
        return [scale_gamma(X)]
    if rule in SEARCHED:
        if grid is None:
            return list(scale_gamma(X) * DEFAULT_GRID)
        return [float(g) for g in np.asarray(grid, dtype=float).reshape(-1)]
    return [float(rule)]


def select_width(
    X: np.ndarray,
    y,
    *,
    gamma: float | str,
    grid,
    has_width: bool,
    classifier: bool,
    design,
    fit,
    refit=None,
    run=run_recorded,
    need_reference: bool = False,
    fold_seed: int = 0,
) -> Width:
    """The :class:`Width` of a fit, with its reference fit when ``need_reference`` or searched.

    ``y``: the targets as given to ``fit`` (``"cv"``'s folds refit on them).
    """
    rule = width_rule(gamma, X, y, classifier)
    candidates = _candidates(rule, X, grid, has_width)
    cv_path = None
    if rule == "cv" and candidates[0] is not None:
        try:
            chosen = _cv_width(X, y, classifier, refit, candidates, fold_seed, run)
        except ValueError as exc:
            if gamma != "auto":
                raise
            warn_user(f"gamma='auto': {exc}; fitted at gamma='scale' instead", ConvergenceWarning)
            candidates = [scale_gamma(X)]
        else:
            g = chosen["gamma"]
            _warn_at_an_edge(
                "cv", "best cross-validated score", g, candidates, widest=grid is not None
            )
            candidates, cv_path = [g], chosen["path"]
            raise_again(f"gamma='cv' (folds at gamma={g:.4g})", chosen["warnings"])
    if len(candidates) > 1:
        return _evidence_width(X, design, fit, candidates, run)
    g = candidates[0]
    basis, Phi, scale = design(g, compress=need_reference)
    ref = fit(Phi, basis.basis_names_) if need_reference else None
    return Width(g, basis, Phi, scale, ref, None, cv_path)


def cv_folds(y, classifier: bool, seed, k: int = CV_FOLDS) -> list[tuple]:
    """Shuffled ``k`` folds of the rows of ``y``, stratified for a classifier."""
    if classifier:
        smallest = int(np.min(np.unique(y, return_counts=True)[1]))
        if smallest < 2:
            raise ValueError(
                "gamma='cv' needs at least 2 rows of every class (one to fit, one to "
                f"score); a class here has {smallest}: give gamma a number, or "
                "gamma='evidence' or 'scale'"
            )
        return shuffled_folds(y, min(k, smallest), True, seed)
    n = len(y)
    if n < 4:
        raise ValueError(
            f"gamma='cv' needs at least 4 training rows; got {n}: give gamma a number, "
            "or gamma='evidence' or 'scale'"
        )
    return shuffled_folds(y, min(k, n // 2), False, seed)


def _fold_score(refit, gamma, X, y, train, test) -> tuple[np.ndarray, float]:
    """The held-out log densities of ``test`` from a fit on ``train``, and its RVs."""
    try:
        model = refit(gamma, X[train], y[train])
    except (np.linalg.LinAlgError, ValueError, FloatingPointError):
        return np.full(len(test), -np.inf), np.nan
    return predictive(model, X[test]).log_density(y[test]), float(model.n_relevance_)


def _cv_width(X, y, classifier, refit, grid, seed, run) -> dict[str, Any]:
    """The width of ``grid`` of best k-fold score, with its path and warnings."""
    folds = cv_folds(y, classifier, seed)
    n = X.shape[0]
    scored: dict[float, dict[str, Any]] = {}

    def score(widths: list[float]) -> None:
        widths = [g for g in widths if g not in scored]
        tasks = [(refit, float(g), X, y, tr, te) for g in widths for tr, te in folds]
        out = run(_fold_score, tasks)
        k = len(folds)
        for i, g in enumerate(widths):
            lpd = np.empty(n)
            caught, rvs = [], []
            for (tr, te), ((lpd_te, rv), w) in zip(folds, out[i * k : (i + 1) * k], strict=True):
                lpd[te] = lpd_te
                # the final fit warns of its own interpolation; the folds' are the path's
                caught += [(m, c) for m, c in w if not issubclass(c, InterpolationWarning)]
                rvs.append(rv / len(tr))
            lpd = np.where(np.isnan(lpd), -np.inf, lpd)
            mean = float(np.mean(lpd))
            se = float(np.std(lpd) / np.sqrt(n)) if np.isfinite(mean) else np.nan
            rv = float(np.nanmean(rvs)) if np.isfinite(rvs).any() else np.nan
            scored[g] = {"cv_lpd": mean, "cv_lpd_se": se, "rv": rv, "w": caught}

    widths = sorted(float(g) for g in grid if np.isfinite(g))

    def falls(i: int, step: int) -> bool:  # below its inner neighbour and the best
        if i == len(widths) // 2:
            return False
        s, inner = scored[widths[i]]["cv_lpd"], scored[widths[i - step]]["cv_lpd"]
        return not np.isfinite(s) or (s < inner and s < max(f["cv_lpd"] for f in scored.values()))

    _middle_out(len(widths), lambda todo: score([widths[i] for i in todo]), falls)
    g_best = _best_cv(scored)
    if not np.isfinite(scored[g_best]["cv_lpd"]):
        raise ValueError(
            "gamma='cv': no width of gamma_grid could be scored: every width has a fold "
            "whose fit failed (constant targets or counts all zero in its training part) or "
            "gave a held-out density of 0; give gamma a number, or 'scale'"
        )
    if len(widths) > 1:  # half a step on either side of the best
        i = widths.index(g_best)
        near = [widths[j] for j in (i - 1, i + 1) if 0 <= j < len(widths)]
        score([float(np.exp(0.5 * (np.log(w) + np.log(g_best)))) for w in near])
        g_best = _best_cv(scored)
    order = sorted(scored)
    path = {"gamma": np.array(order)}
    for key, src in zip(CV_PATH_KEYS[1:], ("cv_lpd", "cv_lpd_se", "rv"), strict=True):
        path[key] = np.array([scored[g][src] for g in order])
    return {"gamma": g_best, "path": path, "warnings": scored[g_best]["w"]}


def _best_cv(scored: dict[float, dict[str, Any]]) -> float:
    """The width of highest score (the smallest among ties)."""
    return max(sorted(scored), key=lambda g: scored[g]["cv_lpd"])


def search_centres(X: np.ndarray) -> np.ndarray:
    """Rows of ``X`` the search fits on, evenly spread (all when that is over half)."""
    n = X.shape[0]
    k = SEARCH_CENTRES * X.shape[1]
    return np.unique(np.linspace(0, n - 1, k if 2 * k <= n else n).round().astype(np.intp))


def _evidence_width(X, design, fit, candidates, run) -> Width:
    """``"evidence"``: grid and refinement on the centres, then the best exactly."""
    idx = search_centres(X)
    grid = _search_grid(design, fit, idx, candidates, run)
    ordered = sorted(grid, key=lambda f: f["x"])
    made = _refine(design, fit, idx, ordered, _best(ordered))
    searched = grid + made
    # exactly: the search's best, the grid's best and those within MARGIN of it; each unless
    # an exact fit is MARGIN above it; if all interpolate, the next best of the search
    exact: list[dict] = []
    first = [searched[_best(searched)], ordered[_best(ordered)]]
    if idx.size < X.shape[0] and np.isfinite(choice_key(first[1])):
        near = [f for f in ordered if choice_key(f) >= choice_key(first[1]) - MARGIN]
        first += sorted(near, key=choice_key, reverse=True)
    rest = sorted(searched, key=choice_key, reverse=True)
    for f in first + rest:
        if any(f["x"] == e["x"] for e in exact):
            continue
        if exact and f is not first[0] and _key(exact) > choice_key(f) + MARGIN:
            continue
        later = all(f is not g for g in first)
        if later and (np.isfinite(_key(exact)) or len(exact) >= 2 + FALLBACK):
            break
        exact.append(_exact_fit(design, fit, f["gamma"]))
    best = exact[_best(exact)]
    g = best["gamma"]
    raise_again(f"gamma={g:.4g}", best["warnings"])
    _warn_at_an_edge("evidence", "largest evidence", g, candidates)
    _warn_if_rising_into_interpolation(searched, best)
    fits = searched + exact
    path = {k: np.array([f[k] for f in fits]) for k in PATH_KEYS}
    return Width(g, best["basis"], best["Phi"], best["scale"], best["reference"], path, None)


def _search_fit(design, fit, idx, gamma: float, start=None, cap=None) -> dict[str, Any]:
    """A fit of the search at ``gamma`` on the centres ``idx``."""
    basis, Phi, _ = design(gamma, centres=idx)
    try:
        ref, caught = record_warnings(fit, (Phi, basis.basis_names_, start, cap, SEARCH_TOL))
    except (np.linalg.LinAlgError, ValueError, FloatingPointError):
        return {**_record(gamma, None, []), "all_bases": False, "stopped": False}
    out = _record(gamma, ref, caught)
    stopped = cap is not None and not out["converged"] and ref[1].n_iter >= cap
    return {**out, "all_bases": False, "stopped": stopped}


def _search_grid(design, fit, idx, grid, run) -> list[dict]:
    """The grid's fits from its middle width outward."""
    widths = sorted(grid)
    fitted: dict[int, dict] = {}  # in the order fitted

    def fit_round(todo: list[int]) -> None:
        tasks = [(design, fit, idx, widths[i]) for i in todo]
        for i, (f, _) in zip(todo, run(_search_fit, tasks), strict=True):
            fitted[i] = f

    def closes(i: int, step: int) -> bool:
        if step > 0 and fitted[i]["noise_at_bound"]:
            return True
        if i == len(widths) // 2:
            return False
        key, best = choice_key(fitted[i]), max(choice_key(f) for f in fitted.values())
        return key < choice_key(fitted[i - step]) and key < best - DROP

    _middle_out(len(widths), fit_round, closes)
    return list(fitted.values())


def _middle_out(n: int, fit_round, closes) -> None:
    """Fit positions ``0..n-1`` from the middle outward, one step a side per round,
    until ``closes(i, step)`` or the end."""
    last: dict[int, int | None] = {-1: n // 2, +1: n // 2}
    todo = [n // 2]
    while todo:
        fit_round(todo)
        todo = []
        for step in (-1, +1):
            i = last[step]
            if i is None or closes(i, step) or not 0 <= i + step < n:
                last[step] = None
            else:
                todo.append(i + step)
                last[step] = i + step


def _exact_fit(design, fit, gamma: float) -> dict[str, Any]:
    """The fit at ``gamma`` over all bases."""
    basis, Phi, scale = design(gamma)
    ref, caught = record_warnings(fit, (Phi, basis.basis_names_))
    return {**_record(gamma, ref, caught), "all_bases": True, "basis": basis, "Phi": Phi,
            "scale": scale}  # fmt: skip


def _refine(design, fit, idx, fits: list[dict], k: int) -> list[dict]:
    """The refinement around the best grid width ``fits[k]``."""
    done = list(fits)
    best = fits[k]
    for _ in range(MAX_FITS):
        x = _next_width(done, best)
        if x is None:
            break
        near = min(done, key=lambda f: abs(f["x"] - x))
        start = near["reference"][0] if near["reference"] else None
        done.append(_search_fit(design, fit, idx, float(np.exp(x)), start, REFINE_CAP))
        if choice_key(done[-1]) > choice_key(best):
            best = done[-1]
    return done[len(fits) :]


def _next_width(done: list[dict], best: dict) -> float | None:
    """The next ``log gamma`` (Brent: parabola, else golden section); None when done."""
    xs = np.array(sorted({f["x"] for f in done}))
    i = int(np.flatnonzero(xs == best["x"])[0])
    left = xs[i - 1] if i > 0 else None
    right = xs[i + 1] if i + 1 < xs.size else None
    gaps = [best["x"] - left if left is not None else 0.0]
    gaps.append(right - best["x"] if right is not None else 0.0)
    if max(gaps) <= STEP:
        return None
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
    """The abscissa of the vertex of the parabola through three points."""
    a, b = x[1] - x[0], x[1] - x[2]
    fa, fb = f[1] - f[0], f[1] - f[2]
    den = a * fb - b * fa
    if den == 0:
        return float(x[1])
    return float(np.clip(x[1] - 0.5 * (a * a * fb - b * b * fa) / den, x[0], x[2]))


def _record(gamma: float, reference: tuple | None, caught: list) -> dict[str, Any]:
    """One fit of the search as recorded (``reference`` None: failed)."""
    info = None if reference is None else reference[1]
    return {
        "x": float(np.log(gamma)),
        "gamma": float(gamma),
        "reference": reference,
        "warnings": caught,
        "log_evidence": -np.inf if info is None else float(info.log_evidence),
        "converged": info is not None and bool(info.converged),
        "noise_at_bound": info is not None and bool(info.attrs.get("noise_at_bound", False)),
    }


def choice_key(fit: dict) -> float:
    """The log evidence, ``-inf`` for a fit that interpolates or was stopped."""
    if fit["noise_at_bound"] or fit.get("stopped", False):
        return -np.inf
    return fit["log_evidence"]


def _key(fits: list[dict]) -> float:
    return max(choice_key(f) for f in fits)


def _best(fits: list[dict]) -> int:
    """Index of the highest :func:`choice_key` (else of the evidence)."""
    key = np.array([choice_key(f) for f in fits])
    if not np.any(np.isfinite(key)):
        key = np.array([f["log_evidence"] for f in fits])
    return int(np.argmax(key))


def _warn_at_an_edge(rule: str, what: str, g: float, grid: list, *, widest: bool = True) -> None:
    """Warn when the width chosen from ``grid`` (3 or more) is at its edge (at its smallest
    gamma only when ``widest``)."""
    ends = (float(np.log(min(grid))), float(np.log(max(grid))))
    x = float(np.log(g))
    if len(grid) <= 2 or min(abs(x - e) for e in ends) >= STEP / 2:
        return
    edge = "smallest" if abs(x - ends[0]) < STEP / 2 else "largest"
    if edge == "smallest" and not widest:
        return
    warn_user(
        f"gamma={rule!r}: the {what} is at the {edge} gamma of gamma_grid "
        f"(gamma={g:.4g}, its {'widest' if edge == 'smallest' else 'narrowest'} kernel); "
        "the best width may lie outside the grid: extend gamma_grid past that edge",
        ConvergenceWarning,
    )


def _warn_if_rising_into_interpolation(searched: list[dict], best: dict) -> None:
    """Warn when a neighbour of the chosen width interpolates at more evidence."""
    xs = sorted({f["x"] for f in searched} - {best["x"]})
    below = [x for x in xs if x < best["x"]]
    above = [x for x in xs if x > best["x"]]
    beside = ([below[-1]] if below else []) + ([above[0]] if above else [])
    for f in searched:
        if f["x"] in beside and f["noise_at_bound"] and f["log_evidence"] > best["log_evidence"]:
            warn_user(
                f"gamma='evidence': the evidence still rises past the chosen "
                f"gamma={best['gamma']:.4g}, toward gamma={f['gamma']:.4g}, where the fit "
                "interpolates the targets (its noise precision at the bound): the evidence "
                "has no maximum short of interpolation here, and the width returned is the "
                "last that estimates the noise; compare widths by cross-validation "
                "(rvm_pymc.model_selection.evidence_vs_cv) before trusting it",
                ConvergenceWarning,
            )
            return


def integrates_width(est: Any) -> bool:
    """Whether ``est`` was fitted with ``gamma="integrate"``."""
    return getattr(est, "gamma_draws_", None) is not None


def fit_integrated(options, X, t_s, width, prior, seed: int, start) -> Fitted:
    """NUTS over the width on the scaled targets (centres of the ``"scale"`` ``width``)."""
    from rvm_pymc.inference import fit_width_backend

    basis = width.basis
    names = tuple(map(str, basis.basis_names_))
    post, info, lls = fit_width_backend(
        options, X, basis.centres_, t_s, names, prior, seed, start,
        width_prior=width_prior(X), bias=bool(basis.bias),
    )  # fmt: skip
    gammas = gamma_of(lls)
    tree = {
        "extra_posterior": {
            "log_length_scale": (("chain", "draw"), lls),
            "gamma": (("chain", "draw"), gammas),
        },
        # kernel columns at RMS 1 at each draw's width; basis_scale (ones): the unscaled ones
        "constants": {
            "X": (("obs", "feature"), X),
            "centres": (("centre", "feature"), basis.centres_),
            RBF_UNIT_RMS: ((), np.asarray(1.0)),
        },
        "attrs": {"width": "integrated"},
    }
    return Fitted(post, info, np.ones(len(names)), gammas, tree)


def latent_at(est, X: np.ndarray) -> np.ndarray:
    """The latent mean ``(chain, draw, n[, K])`` of every draw at validated ``X``."""
    w = est.posterior_.draws
    chains, draws = w.shape[:2]
    F = width_latent(
        sq_distances(X, est.relevance_vectors_),
        est.gamma_draws_,
        w.reshape(-1, *w.shape[2:]),
        bias=est.bias_active_,
        y_offset=est.posterior_.y_offset,
    )
    return F.reshape(chains, draws, *F.shape[1:])


def sample_predictions_at(est, X: np.ndarray, random_state=None):
    """``sample_predictions`` of a width-integrating fit."""
    from rvm_pymc.results import latent_predictions

    return latent_predictions(
        est.idata_,
        latent_at(est, X),
        {"X": (("obs", "feature"), X)},
        random_state=random_state,
    )
