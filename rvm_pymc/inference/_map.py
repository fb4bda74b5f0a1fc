"""Type-II MAP of the marginal regression model by L-BFGS-B, and the optimiser helpers
that the classifiers' MAP (:mod:`~rvm_pymc.inference._map_classification`) shares."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pytensor.tensor as pt
from scipy import optimize

from rvm_pymc._core.evidence import log_hyperprior, log_marginal_likelihood
from rvm_pymc._core.gaussian import factor_inverse, gaussian_weights
from rvm_pymc.exceptions import ConvergenceWarning, warn_user
from rvm_pymc.models.data import design_matrix, model_data
from rvm_pymc.models.spec import ModelSpec
from rvm_pymc.priors import HyperPrior
from rvm_pymc.results import WeightPosterior

LOG_PRECISION_BOUND = 50.0
"""Upper bound of the free log precisions in type-II MAP (a pruned basis sits there)."""
LOG_ALPHA_FLOOR = -20.0
"""Lower bound of ``log alpha_m`` relative to ``log(mean(phi_m^2) / var(t))`` (var 1 for
classifiers): below it the posterior precision is numerically singular."""
STALL_GTOL = 1e-6
"""Largest gradient component accepted when L-BFGS-B stalls with ``J`` unchanged."""
STALL_GAIN = 1e-12
"""A stall with a larger gradient converges if a Newton step gains ``<= STALL_GAIN (1 + |J|)``."""
HYPERPARAMETERS = ("log_alpha", "log_beta", "log_length_scale")
"""The free variables of the package's marginal models (a user's others: root attributes)."""
STALL_STEP = 1e-2
"""Step (in log precision) of the secant curvature of :func:`_newton_gain`."""


@dataclass
class MapResult:
    """A type-II MAP optimum and the Gaussian weight posterior there (``cov`` class-major;
    ``log_evidence``: ``J`` without the Gamma normalising constants)."""

    log_alpha: np.ndarray
    log_beta: float | None
    mean: np.ndarray
    cov: np.ndarray
    log_evidence: float
    converged: bool
    n_iter: int
    max_abs_gradient: float
    message: str
    Phi: np.ndarray
    extra: dict = field(default_factory=dict)
    attrs: dict = field(default_factory=dict)

    def posterior(self, kind: str, names) -> WeightPosterior:
        """The Gaussian weight posterior over the bases ``names``."""
        return WeightPosterior(
            kind=kind,
            basis_names=tuple(names),
            log_alpha=self.log_alpha,
            log_beta=self.log_beta,
            mean=self.mean,
            cov=self.cov,
        )


# ----------------------------------------------------------- regression MAP


def _regression_start(model, spec: ModelSpec, t: np.ndarray, point: dict) -> dict:
    """Data-scaled start: noise sd 30% of sd(t), prior variance of ``Phi w`` about var(t)."""
    var_t = float(np.var(t)) or 1.0
    Phi = design_matrix(model, spec, point.get("log_length_scale"))
    col_ms = np.mean(Phi**2, axis=0)
    m = Phi.shape[1]
    log_alpha = np.log(m * np.mean(col_ms) / var_t) * np.ones(m)
    return {**point, "log_alpha": log_alpha, "log_beta": np.asarray(np.log(10.0 / var_t))}


def _flat_objective(model, mode_kw: dict):
    """Compile ``x -> (-logp, -grad)`` over the concatenated free values."""
    value_vars = model.value_vars
    cost = model.logp(jacobian=True)
    grads = pt.grad(cost, value_vars)
    fn = model.compile_fn([cost, *grads], inputs=value_vars, point_fn=False, **mode_kw)
    start = model.initial_point()
    names = [v.name for v in value_vars]
    shapes = [np.shape(start[n]) for n in names]
    sizes = [int(np.prod(s)) for s in shapes]
    splits = np.cumsum(sizes)[:-1]

    def unflatten(x):
        return {
            n: p.reshape(s) for n, p, s in zip(names, np.split(x, splits), shapes, strict=True)
        }

    def fun(x):
        out = fn(*unflatten(x).values())
        return -float(out[0]), -np.concatenate([np.ravel(g) for g in out[1:]])

    return fun, names, sizes, unflatten


def _alpha_bounds(Phi: np.ndarray, var: float) -> list:
    """Per-basis (lower, upper) bounds of ``log alpha``."""
    lower = np.log(np.mean(Phi**2, axis=0) / var) + LOG_ALPHA_FLOOR
    return [(float(lo), LOG_PRECISION_BOUND) for lo in lower]


def _bounds(names, sizes, alpha_bounds: list) -> list:
    fixed = {"log_beta": (-LOG_PRECISION_BOUND, LOG_PRECISION_BOUND)}  # others unbounded
    out = []
    for n, s in zip(names, sizes, strict=True):
        out.extend(alpha_bounds if n == "log_alpha" else [fixed.get(n, (None, None))] * s)
    return out


def _bound_arrays(bounds) -> tuple[np.ndarray, np.ndarray]:
    """Lower and upper bounds of L-BFGS-B's ``bounds`` as arrays (``None`` as -inf / inf)."""
    lo = np.array([-np.inf if b[0] is None else b[0] for b in bounds], dtype=float)
    hi = np.array([np.inf if b[1] is None else b[1] for b in bounds], dtype=float)
    return lo, hi


def _projected(x, g, bounds, prunable=()) -> tuple[np.ndarray, np.ndarray]:
    """The gradient without the pruned ``prunable``, and the others held at a bound by it."""
    pg = np.array(g, dtype=float)
    stuck = np.zeros(pg.size, dtype=bool)
    pruned_ok = np.zeros(pg.size, dtype=bool)
    pruned_ok[np.asarray(prunable, dtype=np.intp)] = True
    for i, (lo, hi) in enumerate(bounds):
        at_hi = hi is not None and x[i] >= hi
        if pruned_ok[i] and at_hi and (g[i] < 0 or lo == hi):
            pg[i] = 0.0
        elif (at_hi and g[i] < 0) or (lo is not None and x[i] <= lo and g[i] > 0):
            stuck[i] = True
    return pg, np.flatnonzero(stuck)


def _newton_gain(fun, x: np.ndarray, pg: np.ndarray, bounds) -> float:
    """Decrease a Newton step along ``-pg`` would give (secant curvature); ``inf`` if none."""
    gn = float(np.linalg.norm(pg))
    d = x - np.clip(x - STALL_STEP * pg / gn, *_bound_arrays(bounds))
    dd = float(d @ d)
    if not dd > 0:
        return np.inf
    try:
        g1 = np.asarray(fun(x - d)[1], dtype=float)
    except np.linalg.LinAlgError:
        return np.inf
    curv = float((pg - g1) @ d) / dd
    return 0.5 * gn * gn / curv if np.isfinite(curv) and curv > 0 else np.inf


def _lbfgs(fun, x0, bounds, max_iter: int, gtol: float, what: str, warn: bool = True, prunable=()):
    """L-BFGS-B (again with the objective scaled by max|gradient| if its first step fails).

    Converged: max|gradient| <= ``gtol`` or an accepted stall (:data:`STALL_GTOL`,
    :data:`STALL_GAIN`), and no variable but ``prunable`` held at a bound by its gradient.
    """
    x0 = np.asarray(x0, dtype=float)

    def run(scale):
        def scaled(x):
            f, g = fun(x)
            return f / scale, g / scale

        options = {
            "maxiter": max_iter,
            "maxfun": 4 * max_iter,
            "ftol": 1e-15,
            "gtol": gtol / scale,
            "maxcor": 30,
        }
        out = optimize.minimize(
            scaled, x0, jac=True, method="L-BFGS-B", bounds=bounds, options=options
        )
        out.fun, out.jac = out.fun * scale, out.jac * scale
        return out

    res = run(1.0)
    if res.nit == 0 and not res.success:
        scale = float(np.max(np.abs(res.jac), initial=0.0))
        if np.isfinite(scale) and scale > 1.0:
            res = run(scale)
    pg, stuck = _projected(res.x, res.jac, bounds, prunable)
    pgrad = float(np.max(np.abs(pg))) if pg.size else 0.0
    message = str(res.message).upper().replace("_", " ")  # older SciPy: REL_REDUCTION_OF_F
    stalled = "ABNORMAL" in message or "REDUCTION OF F" in message  # not an iteration cap
    if stalled and pgrad > STALL_GTOL:
        stalled = _newton_gain(fun, res.x, pg, bounds) <= STALL_GAIN * (1.0 + abs(float(res.fun)))
    converged = (pgrad <= gtol or stalled) and stuck.size == 0
    if stuck.size:
        res.message = (
            f"{stuck.size} variable(s) held at a bound (positions {stuck.tolist()[:10]}) by a "
            f"gradient pointing beyond it; {res.message}"
        )
    if warn and not converged:
        _warn_unconverged(what, res.message, res.nit, pgrad)
    return res, converged, pgrad


def _warn_unconverged(what: str, message, n_iter: int, pgrad: float) -> None:
    warn_user(
        f"{what} did not converge: {message} (max |gradient| {pgrad:.3g} after "
        f"{n_iter} iterations)",
        ConvergenceWarning,
    )


def _check_initvals(initvals, shapes: dict) -> dict:
    """User starting values, checked against the free variables' ``shapes``."""
    if not initvals:
        return {}
    unknown = sorted(set(initvals) - set(shapes))
    if unknown:
        raise ValueError(f"initvals has unknown variables {unknown}; allowed: {sorted(shapes)}")
    out = {}
    for name, value in initvals.items():
        arr = np.asarray(value, dtype=float)
        if arr.shape != shapes[name] or not np.all(np.isfinite(arr)):
            raise ValueError(
                f"initvals[{name!r}] must be finite with shape {shapes[name]}; got {arr.shape}"
            )
        out[name] = arr
    return out


def map_regression(model, spec, *, initvals, max_iter, gtol, mode_kw) -> MapResult:
    """Type-II MAP of a marginal regression model."""
    t = model_data(model, "t")
    fun, names, sizes, unflatten = _flat_objective(model, mode_kw)
    start = _regression_start(model, spec, t, model.initial_point())
    start.update(_check_initvals(initvals, {n: np.shape(start[n]) for n in names}))
    x0 = np.concatenate([np.ravel(start[n]) for n in names])
    var_t = float(np.var(t)) or 1.0
    Phi0 = design_matrix(model, spec, start.get("log_length_scale"))
    bounds = _bounds(names, sizes, _alpha_bounds(Phi0, var_t))
    x0 = np.clip(x0, *_bound_arrays(bounds))
    starts = dict(zip(names, np.cumsum([0, *sizes[:-1]]), strict=True))

    def positions(name):
        return np.arange(sizes[names.index(name)]) + int(starts[name])

    alpha_idx = positions("log_alpha")

    def leaving_at(x):
        """Tipping & Faul's ``q^2 <= s`` at ``x`` (flat prior)."""
        o = unflatten(x)
        P = design_matrix(model, spec, o.get("log_length_scale"))
        la_, beta_ = o["log_alpha"], float(np.exp(o["log_beta"]))
        a = np.exp(la_)
        L, p, mu = gaussian_weights(P.T @ P, P.T @ t, a, beta_)
        d = np.diag(factor_inverse(L, p))
        # 1/Sigma_mm - alpha is lost to rounding where alpha Sigma_mm ~ 1: a candidate too
        out = ((mu / d) ** 2 <= 1.0 / d - a) | (a * d > 1.0 - 1e-6)
        out &= la_ < LOG_PRECISION_BOUND
        if np.all(out):
            out[np.argmin(la_)] = False
        return out

    leaving = leaving_at if _prunes(spec.prior) else None
    x, n_iter, converged, pgrad, message = _optimise(
        fun, x0, bounds, alpha_idx, leaving, max_iter=max_iter, gtol=gtol, what="type-II MAP"
    )
    own = [v for v in model.free_RVs if v.name not in HYPERPARAMETERS]
    converged = converged and not any(
        _rises_along(fun, x, positions(model.rvs_to_values[v].name), v.name) for v in own
    )
    opt = unflatten(x)
    la, lb = opt["log_alpha"], float(opt["log_beta"])
    alpha, beta = np.exp(la), float(np.exp(lb))
    lls = opt.get("log_length_scale")
    Phi = design_matrix(model, spec, None if lls is None else float(lls))
    L, p, mean = gaussian_weights(Phi.T @ Phi, Phi.T @ t, alpha, beta)
    extra = {} if lls is None else {"log_length_scale": float(lls)}
    # a user's model's own free variables: their optimum as root attributes
    own = [v.name for v in own]
    if own:
        outs = model.replace_rvs_by_values([model[n] for n in own])
        fn = model.compile_fn(outs, inputs=model.value_vars, on_unused_input="ignore", **mode_kw)
        for name, value in zip(own, fn(opt), strict=True):
            value = np.asarray(value, dtype=float)
            extra[name] = float(value) if value.ndim == 0 else value
    lml, log_post = log_marginal_likelihood(Phi, t, alpha, beta), -float(fun(x)[0])
    hyper = log_hyperprior(alpha, beta, spec.prior) if spec.prior is not None else None
    return MapResult(
        log_alpha=la,
        log_beta=lb,
        mean=mean,
        cov=factor_inverse(L, p),
        log_evidence=log_post if hyper is None else lml + hyper,
        converged=converged,
        n_iter=n_iter,
        max_abs_gradient=pgrad,
        message=message,
        Phi=Phi,
        extra=extra,
        attrs={"log_marginal_likelihood": lml, "log_posterior": log_post},
    )


def _rises_along(fun, x: np.ndarray, idx: np.ndarray, name: str) -> bool:
    """Warn (and True) if a unit step of a user's own variable (positions ``idx``) down its
    gradient still raises the log density: no optimum along it."""
    f0, g = fun(x)
    d = np.asarray(g, dtype=float)[idx]
    norm = float(np.linalg.norm(d))
    if not (np.isfinite(norm) and norm > 0):
        return False
    trial = x.copy()
    trial[idx] -= d / norm
    try:
        gain = f0 - fun(trial)[0]
    except np.linalg.LinAlgError:
        return False
    if not gain > 1e-6 * (1.0 + abs(f0)):
        return False
    warn_user(
        f"type-II MAP did not reach an optimum: the log density still rises by {gain:.3g} at "
        f"a unit step of the model's own free variable {name!r} alone (unconstrained "
        "value), so the point reached may be degenerate (e.g. a hyperprior scale of "
        "log_alpha collapsing to 0); give it a proper prior or a fixed value, or sample "
        "the model",
        ConvergenceWarning,
    )
    return True


# ------------------------------------------- pruning under the flat prior (both MAPs)


def _prunes(prior: HyperPrior | None) -> bool:
    """Whether the prior on log alpha is flat (an irrelevant precision's optimum: infinity)."""
    return prior is not None and prior.a == 0.0 and prior.b == 0.0


def _held(x: np.ndarray, bounds: list, alpha_idx: np.ndarray) -> list:
    """``bounds`` with the pruned precisions held at the upper bound."""
    out = list(bounds)
    for i in alpha_idx:
        if x[i] >= LOG_PRECISION_BOUND:
            out[i] = (LOG_PRECISION_BOUND, LOG_PRECISION_BOUND)
    return out


def _prune_flat(fun, x, alpha_idx, leaving_at, bounds, max_iter, gtol):
    """Prune the precisions creeping towards ``alpha = inf``, then re-polish.

    The candidates of ``leaving_at`` go to the bound together if the objective falls by
    at most ``1e-9 (1 + |J|)``, else the half with the largest precisions is tried.
    Returns the point, the polishes' iterations and the number pruned.
    """
    n_polish = 0
    n_start = int(np.sum(x[alpha_idx] >= LOG_PRECISION_BOUND))
    for _ in range(alpha_idx.size):
        f0 = fun(x)[0]
        la = x[alpha_idx]
        cand = leaving_at(x) & (la < LOG_PRECISION_BOUND)
        accepted = None
        while np.any(cand):
            trial = x.copy()
            trial[alpha_idx[cand]] = LOG_PRECISION_BOUND
            try:
                f1 = fun(trial)[0]
            except np.linalg.LinAlgError:
                f1 = np.inf
            if np.isfinite(f1) and f1 <= f0 + 1e-9 * (1.0 + abs(f0)):
                accepted = trial
                break
            smaller = cand & (la > np.median(la[cand]))
            if smaller.sum() == cand.sum():
                break
            cand = smaller
        if accepted is None:
            break
        held = _held(accepted, bounds, alpha_idx)
        res, _, _ = _lbfgs(fun, accepted, held, max_iter, gtol, "", False, alpha_idx)
        n_polish += int(res.nit)
        x = res.x
    return x, n_polish, int(np.sum(x[alpha_idx] >= LOG_PRECISION_BOUND)) - n_start


def _optimise(fun, x0, bounds, alpha_idx, leaving_at, *, max_iter, gtol, what, warn=True):
    """L-BFGS-B, then (flat prior) :func:`_prune_flat`; ``(x, n_iter, converged, pgrad, msg)``."""
    prunable = alpha_idx if leaving_at is not None else ()  # flat prior: alpha = inf allowed
    res, converged, pgrad = _lbfgs(
        fun, x0, bounds, max_iter, gtol, what, warn and leaving_at is None, prunable
    )
    x, n_iter, message = res.x, int(res.nit), str(res.message)
    if leaving_at is not None:
        x, n_polish, n_pruned = _prune_flat(fun, x, alpha_idx, leaving_at, bounds, max_iter, gtol)
        if n_pruned:  # the last polish again, to report (and warn about) its state
            held = _held(x, bounds, alpha_idx)
            res, converged, pgrad = _lbfgs(
                fun, x, held, max_iter, gtol, f"{what} after pruning", warn, prunable
            )
            x, message = res.x, str(res.message)
            n_iter += n_polish + int(res.nit)
        elif warn and not converged:
            _warn_unconverged(what, res.message, res.nit, pgrad)
    return x, n_iter, converged, pgrad, message
