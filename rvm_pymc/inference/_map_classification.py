"""Laplace type-II MAP of the RVM classifiers: the evidence of
:mod:`~rvm_pymc.inference._laplace` by L-BFGS-B, or Tipping's fixed point
(``laplace="tipping"``); under the flat prior on an active set with re-entry tests."""

from __future__ import annotations

import numpy as np

from rvm_pymc._core.ard import reestimate_alpha
from rvm_pymc._core.gaussian import factor_inverse, factor_solve, spd_factor, spd_inverse
from rvm_pymc._core.progress import log
from rvm_pymc._core.sparsity import LEAVING_SETTLED, leaving_active
from rvm_pymc.exceptions import ConvergenceWarning, warn_user
from rvm_pymc.inference._laplace import (
    AXIS_CHECK_FACTOR,
    LaplaceFunctions,
    axis_check,
    compile_laplace,
    newton_mode,
)
from rvm_pymc.inference._map import (
    LOG_PRECISION_BOUND,
    MapResult,
    _alpha_bounds,
    _check_initvals,
    _optimise,
    _prunes,
    _warn_unconverged,
)
from rvm_pymc.models import log_gamma_normaliser
from rvm_pymc.models.data import model_data
from rvm_pymc.priors import HyperPrior

__all__ = ["map_classification"]

PRUNE_PRECISION = 1e12
"""``laplace="tipping"`` prunes a basis above this precision."""
MAX_ROUNDS = 20
"""Rounds of active-set optimisation and re-entry tests before giving up."""


def _leaving(w: np.ndarray, hinv: np.ndarray, la: np.ndarray, free: np.ndarray) -> np.ndarray:
    """Free bases whose linearised evidence rises up to ``alpha = inf`` (one is always kept)."""
    m = la.size
    k = w.size // m
    idx = np.flatnonzero(free)
    ks = np.arange(k)
    # (basis, class) ordering of the flat weights -> the reference's (class, basis)
    cov = hinv.reshape(m, k, m, k)[np.ix_(idx, ks, idx, ks)]
    cov = cov.transpose(1, 0, 3, 2).reshape(k * idx.size, k * idx.size)
    out = np.zeros(m, dtype=bool)
    out[idx] = leaving_active(np.exp(la[idx]), w.reshape(m, k)[idx], cov)
    if idx.size and np.all(out[idx]):
        out[idx[np.argmin(la[idx])]] = False
    return out


def _tipping_fixed_point(fns, la0, floor, prior: HyperPrior, max_iter: int, tol: float):
    """Tipping's re-estimation at the Laplace mode; pruned bases held at the bound (flat prior:
    the :func:`_leaving` ones once the others have settled to ``LEAVING_SETTLED``)."""
    la = np.array(la0, dtype=float)
    m = la.size
    w = np.zeros(int(np.prod(fns.shape)))
    step = np.inf
    prunes = _prunes(prior)
    for it in range(1, max_iter + 1):
        w, H, _ = newton_mode(fns, w, la)
        hinv = spd_inverse(H, "negative Hessian")[0]
        k = w.size // m
        sigma = np.diag(hinv).reshape(m, k).sum(1)
        w2 = (w**2).reshape(m, k).sum(1)
        with np.errstate(divide="ignore"):
            alpha = reestimate_alpha("mackay", np.exp(la), 0.0, sigma, w2, k, prior.a, prior.b)
            new = np.log(alpha)
        pruned = (la >= LOG_PRECISION_BOUND) | ~(new < np.log(PRUNE_PRECISION))
        new = np.where(pruned, LOG_PRECISION_BOUND, np.maximum(new, floor))
        leaving = _leaving(w, hinv, la, ~pruned) if prunes else np.zeros(m, dtype=bool)
        step = float(np.max(np.abs(new - la)[~pruned & ~leaving], initial=0.0))
        newly_pruned = bool(np.any(pruned & (la < LOG_PRECISION_BOUND)))
        settled = step <= tol and not newly_pruned
        if step <= max(tol, LEAVING_SETTLED) and not newly_pruned and np.any(leaving):
            new[leaving] = LOG_PRECISION_BOUND
            settled = False
        la = new
        if settled:
            return la, it, True
    warn_user(
        f"Tipping's re-estimation did not converge in {max_iter} iterations (last max "
        f"|d log alpha| {step:.3g})",
        ConvergenceWarning,
    )
    return la, max_iter, False


def _exact_map(fns: LaplaceFunctions, la0, bounds, *, prune: bool, max_iter, gtol, warn):
    """L-BFGS-B on ``J`` over the bases of ``fns`` (pruning under the flat prior)."""
    state = {"w": np.zeros(int(np.prod(fns.shape)))}

    def fun(la):
        w, _, _ = newton_mode(fns, state["w"], la)  # the final solve is checked by the caller
        state["w"] = w
        J, grad = fns.outer(w, la)
        return -float(J), -np.asarray(grad)

    def leaving_at(la):
        w, H, _ = newton_mode(fns, np.zeros(int(np.prod(fns.shape))), la)
        return _leaving(w, spd_inverse(H, "negative Hessian")[0], la, la < LOG_PRECISION_BOUND)

    return _optimise(
        fun,
        la0,
        bounds,
        np.arange(la0.size),
        leaving_at if prune else None,
        max_iter=max_iter,
        gtol=gtol,
        what="Laplace type-II MAP",
        warn=warn,
    )


def _entering(fns: LaplaceFunctions, la: np.ndarray, w_active: np.ndarray, floor: np.ndarray):
    """Pruned bases that would raise ``J``, and the ``log alpha`` they re-enter at
    (``s^2 / (q^2 - s)``: ``q`` the gradient, ``s`` the Hessian's Schur complement)."""
    m = la.size
    k = int(np.prod(fns.shape)) // m
    out = np.flatnonzero(la >= LOG_PRECISION_BOUND)
    cols = np.flatnonzero(la < LOG_PRECISION_BOUND)
    if out.size == 0:
        return out, np.zeros(0)
    w = np.zeros((m, k))
    w[cols] = w_active.reshape(cols.size, k)
    la_eval = np.where(la >= LOG_PRECISION_BOUND, 0.0, la)
    _, g, H = fns.newton(w.ravel(), la_eval)
    ks = np.arange(k)
    a_idx = (cols[:, None] * k + ks).ravel()
    o_idx = (out[:, None] * k + ks).ravel()
    L, p = spd_factor(H[np.ix_(a_idx, a_idx)], "negative Hessian")
    H_ao = H[np.ix_(a_idx, o_idx)]
    S = H[np.ix_(o_idx, o_idx)] - H_ao.T @ factor_solve(L, p, H_ao)
    ar = np.arange(out.size)
    s = S.reshape(out.size, k, out.size, k)[ar, :, ar, :] - np.eye(k)  # (n_out, k, k)
    q = np.asarray(g)[o_idx].reshape(out.size, k)
    cov_blocks = np.linalg.inv(np.eye(k) + s)  # the basis's block at alpha = 1
    cov = np.zeros((k, out.size, k, out.size))
    cov[:, ar, :, ar] = cov_blocks
    W = np.einsum("mkl,ml->mk", cov_blocks, q)
    enter = ~leaving_active(np.ones(out.size), W, cov.reshape(k * out.size, k * out.size))
    s_bar = np.trace(s, axis1=1, axis2=2)[enter] / k
    q2_bar = np.sum(q[enter] ** 2, axis=1) / k
    with np.errstate(divide="ignore", invalid="ignore"):
        start = np.where(q2_bar > s_bar, s_bar**2 / (q2_bar - s_bar), s_bar)
        la_new = np.log(np.maximum(start, np.finfo(float).tiny))
    la_new = np.clip(la_new, floor[out[enter]], LOG_PRECISION_BOUND - 1.0)
    return out[enter], la_new


def _active_set(fns: LaplaceFunctions, la0, bounds, *, max_iter, gtol):
    """Maximise ``J`` under the flat prior on the active set, with re-entry tests."""
    la = np.array(la0, dtype=float)
    if np.all(la >= LOG_PRECISION_BOUND):
        la[0] = 0.0
    floor = np.array([b[0] for b in bounds])
    n_iter, best, best_J = 0, None, -np.inf
    for _ in range(MAX_ROUNDS):
        cols = np.flatnonzero(la < LOG_PRECISION_BOUND)
        sub = fns.restrict(cols)
        x, n, converged, pgrad, message = _exact_map(
            sub,
            la[cols],
            [bounds[i] for i in cols],
            prune=True,
            max_iter=max_iter,
            gtol=gtol,
            warn=False,
        )
        n_iter += n
        w, _, _ = newton_mode(sub, np.zeros(int(np.prod(sub.shape))), x)
        J = float(sub.outer(w, x)[0])
        log.debug(
            "active set of %d bases -> %d kept, J = %.6f",
            cols.size,
            np.sum(x < LOG_PRECISION_BOUND),
            J,
        )
        if best is not None and not J > best_J + 1e-9 * (1.0 + abs(best_J)):
            break  # the bases that re-entered did not raise J: keep the last optimum
        trial = la.copy()
        trial[cols] = x
        best, best_J = (trial, converged, pgrad, message), J
        kept = x < LOG_PRECISION_BOUND
        entering, la_enter = _entering(fns, trial, w.reshape(cols.size, -1)[kept], floor)
        if entering.size == 0:
            break
        la = trial.copy()
        la[entering] = la_enter
    else:
        best = (*best[:1], False, best[2], f"no settled active set after {MAX_ROUNDS} rounds")
    la, converged, pgrad, message = best
    return la, n_iter, converged, pgrad, message


def _mode_and_check(fns: LaplaceFunctions, la: np.ndarray):
    """The mode, its negative Hessian, Newton's success, the axis check on unpruned bases."""
    w, H, ok = newton_mode(fns, np.zeros(int(np.prod(fns.shape))), la)
    cols = np.flatnonzero(la < LOG_PRECISION_BOUND)
    k = w.size // la.size
    idx = (cols[:, None] * k + np.arange(k)).ravel()
    check = axis_check(fns.restrict(cols), w[idx], la[cols], H[np.ix_(idx, idx)])
    return w, H, ok, check


def map_classification(model, spec, *, initvals, max_iter, gtol, mode_kw, laplace) -> MapResult:
    """Laplace type-II MAP of a centred classifier."""
    if spec.parametrization != "centred":
        raise ValueError(
            "type-II MAP of a classifier uses the Laplace approximation in the weights; "
            "build the model with parametrization='centred'"
        )
    wname = "W" if spec.kind == "softmax" else "w"
    log.info(
        "Compiling the Laplace evidence of the %s model and its exact gradient (%s; "
        "typically 5-10 s)",
        spec.kind,
        mode_kw.get("mode") or "PyTensor's default backend",
    )
    fns = compile_laplace(model, wname, mode_kw.get("mode"))
    Phi = model_data(model, "Phi")
    m = Phi.shape[1]
    la0 = np.full(m, np.log(m * np.mean(Phi**2)))
    la0 = _check_initvals(initvals, {"log_alpha": (m,)}).get("log_alpha", la0)
    bounds = _alpha_bounds(Phi, 1.0)
    floor = np.array([b[0] for b in bounds])
    la0 = np.clip(la0, floor, LOG_PRECISION_BOUND)
    if laplace == "tipping" and spec.prior is None:
        raise ValueError(
            "laplace='tipping' needs the log-Gamma prior of rvm_pymc.models on log_alpha "
            "(its a, b enter the re-estimation); use laplace='exact'"
        )
    attrs = {"laplace": laplace}
    if laplace == "tipping":
        la, n_iter, converged = _tipping_fixed_point(fns, la0, floor, spec.prior, max_iter, gtol)
        pgrad, message = float("nan"), "Tipping fixed point"
    elif _prunes(spec.prior):
        la, n_iter, converged, pgrad, message = _active_set(
            fns, la0, bounds, max_iter=max_iter, gtol=gtol
        )
    else:
        la, n_iter, converged, pgrad, message = _exact_map(
            fns, la0, bounds, prune=False, max_iter=max_iter, gtol=gtol, warn=False
        )
    w_star, H, ok, check = _mode_and_check(fns, la)
    J = float(fns.outer(w_star, la)[0])
    if check > np.log(AXIS_CHECK_FACTOR) and laplace == "exact" and spec.prior is not None:
        la_t, n_t, conv_t = _tipping_fixed_point(fns, la0, floor, spec.prior, max_iter, gtol)
        w_t, H_t, ok_t, check_t = _mode_and_check(fns, la_t)
        J_t = float(fns.outer(w_t, la_t)[0])
        warn_user(
            f"the optimum of the exact Laplace evidence (J = {J:.4g}) is not a valid Laplace "
            "approximation: the fall of the log density one standard deviation along an axis "
            f"of its Gaussian differs from 1/2 by a factor {np.exp(check):.3g} (the weights "
            "separate the training classes and the likelihood saturates, so J grows towards "
            "small precisions without approximating the evidence); kept Tipping's fixed point "
            f"from the same start instead (laplace='tipping', J = {J_t:.4g})",
            ConvergenceWarning,
        )
        attrs.update(laplace="tipping", rejected_exact_log_evidence=J, rejected_axis_check=check)
        la, w_star, H, ok, check, J = la_t, w_t, H_t, ok_t, check_t, J_t
        n_iter, converged = n_iter + n_t, conv_t
        pgrad, message = float("nan"), "Tipping fixed point"
    elif laplace == "exact" and not converged:
        _warn_unconverged("Laplace type-II MAP", message, n_iter, pgrad)
    if not ok:
        warn_user("the final inner Newton solve did not converge", ConvergenceWarning)
    if check > np.log(AXIS_CHECK_FACTOR):
        warn_user(
            "the Laplace approximation at the optimum is unreliable: the fall of the log "
            "density one standard deviation along an axis of its Gaussian differs from 1/2 by "
            f"a factor {np.exp(check):.3g} (training classes separable?)",
            ConvergenceWarning,
        )
    attrs["axis_check"] = check
    L, p = spd_factor(H, "negative Hessian of the Laplace approximation")
    k = fns.shape[1] if spec.kind == "softmax" else 1
    cov = factor_inverse(L, p)  # flat weights in (basis, class) order
    cov = cov.reshape(m, k, m, k).transpose(1, 0, 3, 2).reshape(m * k, m * k)  # class-major
    norm = m * log_gamma_normaliser(spec.prior.a, spec.prior.b) if spec.prior is not None else 0.0
    return MapResult(
        log_alpha=la,
        log_beta=None,
        mean=w_star.reshape(fns.shape),
        cov=cov,
        log_evidence=J - norm,
        converged=bool(converged and ok),
        n_iter=n_iter,
        max_abs_gradient=pgrad,
        message=message,
        Phi=Phi,
        attrs=attrs,
    )
