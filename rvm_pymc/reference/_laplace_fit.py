"""The Laplace-evidence fit shared by classification and counts (fast, MacKay, EM)."""

from __future__ import annotations

import warnings
from typing import NamedTuple

import numpy as np

from rvm_pymc._core.ard import merge_parallel, reestimate_alpha, slab_precision
from rvm_pymc._core.evidence import log_alpha_prior
from rvm_pymc._core.laplace import LaplacePosterior
from rvm_pymc._core.sparsity import LEAVING_SETTLED, leaving_active
from rvm_pymc._core.threads import single_blas_thread, worker_threads
from rvm_pymc._core.validation import check_int
from rvm_pymc.exceptions import ConvergenceWarning
from rvm_pymc.priors import HyperPrior, resolve_prior
from rvm_pymc.reference._fast_classification import fast_classification
from rvm_pymc.reference._laplace import find_mode
from rvm_pymc.reference._options import (
    check_alpha_init,
    check_float,
    check_method_and_prior,
    check_representable,
    normalise_columns,
)

__all__ = ["LaplaceFit", "laplace_fit"]


class LaplaceFit(NamedTuple):
    """Outcome of :func:`laplace_fit` on the columns of ``Phi`` as given."""

    prior: HyperPrior
    active: np.ndarray
    alpha: np.ndarray
    post: LaplacePosterior
    log_evidence: float  # Laplace evidence plus the hyperprior terms
    trace: dict
    n_iter: int
    converged: bool


def laplace_fit(
    Phi: np.ndarray,
    T: np.ndarray,
    *,
    method: str,
    prior,
    alpha_init,
    max_iter,
    tol,
    prune_threshold,
    align_tol,
    deletion_tries,
    likelihood: str,
    task: str,
    what: str,
    dispersion: float | None = None,
    warn: bool = True,
) -> LaplaceFit:
    """Check the common arguments, fit, and find the final mode (see ``fit_classification``).

    ``dispersion``: the fixed ``r`` of a negative binomial likelihood; ``warn``: a
    ConvergenceWarning when the precisions do not converge (a caller that iterates
    warns itself).
    """
    prior = resolve_prior(prior)
    check_method_and_prior(method, prior)
    m = Phi.shape[1]
    tol = check_float(tol, "tol")
    prune_threshold = check_float(prune_threshold, "prune_threshold")
    align_tol = check_float(align_tol, "align_tol", strict=False)
    alpha_init = check_alpha_init(alpha_init, m, zero_ok=prior.slab is not None)
    if max_iter is None:
        max_iter = 10 * m + 100 if method == "fast" else 5000
    max_iter = check_int(max_iter, "max_iter", 1)
    deletion_tries = check_int(deletion_tries, "deletion_tries", 0)
    if deletion_tries and method != "fast":
        raise ValueError(f"deletion_tries is used by method='fast' only; got method={method!r}")

    Phin, scale, usable = normalise_columns(Phi.copy(), task)

    # loops of small products: one BLAS thread (see _threads); the large products on
    # worker threads kept for the fit (_design_products)
    with single_blas_thread(), worker_threads():
        if method == "fast":
            start = None if alpha_init is None else alpha_init / scale**2
            out = fast_classification(
                Phin,
                T,
                usable,
                max_iter,
                tol,
                align_tol,
                deletion_tries,
                start,
                likelihood,
                dispersion,
            )
        else:
            out = laplace_reestimation(
                Phin,
                T,
                usable,
                scale,
                prior,
                max_iter,
                tol,
                prune_threshold,
                method,
                alpha_init,
                likelihood,
                dispersion,
            )
    active, alpha_n, W_n, trace, n_iter, converged = out
    if not converged and warn:
        warnings.warn(
            f"{what} (method={method!r}) did not converge in {max_iter} "
            "iterations; increase max_iter or loosen tol",
            ConvergenceWarning,
            stacklevel=3,
        )
    s = scale[active]
    with np.errstate(over="ignore", divide="ignore", invalid="ignore", under="ignore"):
        alpha, W0 = alpha_n * s**2, W_n / s[:, None]
    check_representable(alpha, alpha_n, W0, s)
    order = np.argsort(active)
    active = np.asarray(active)[order]
    alpha = np.asarray(alpha, dtype=float)[order]
    # the weights' prior precision: alpha, plus 1/s^2 with a slab (columns as given)
    prec = alpha + slab_precision(prior, np.ones(active.size))
    post = find_mode(
        Phi[:, active], T, prec, W0[order], likelihood=likelihood, dispersion=dispersion
    )
    if not post.converged:
        warnings.warn(
            "Newton's method did not reach the posterior mode of the final model; "
            "the Laplace approximation may be inaccurate",
            ConvergenceWarning,
            stacklevel=3,
        )
    return LaplaceFit(
        prior=prior,
        active=active,
        alpha=alpha,
        post=post,
        log_evidence=post.log_evidence + log_alpha_prior(alpha, prior),
        trace={k: np.asarray(v) for k, v in trace.items()},
        n_iter=n_iter,
        converged=converged,
    )


def laplace_reestimation(
    Phin,
    T,
    usable,
    scale,
    prior: HyperPrior,
    max_iter,
    tol,
    prune_level,
    method,
    alpha_init,
    likelihood="bernoulli",
    dispersion=None,
):
    """MacKay or EM re-estimation of all precisions of a Laplace fit, on normalised columns.

    On normalised columns the rate ``b`` becomes ``b ||phi_m||^2`` and a slab's
    precision ``1 / (s^2 ||phi_m||^2)``.
    """
    n = Phin.shape[0]
    c = T.shape[1]
    b_n = prior.b * scale**2
    c_n = slab_precision(prior, scale)
    flat = prior.a == 0.0 and prior.b == 0.0
    if alpha_init is None:
        active = np.flatnonzero(usable)
        # Start with an average prior variance of one for the latent function.
        alpha = np.full(active.size, active.size / n)
    else:
        active = np.flatnonzero(np.isfinite(alpha_init) & usable)
        if active.size == 0:
            raise ValueError("alpha_init is finite only on all-zero columns of Phi")
        alpha = alpha_init[active] / scale[active] ** 2
    if flat and prior.slab is None:  # the evidence is flat along parallel columns
        Pa = Phin[:, active]
        keep, alpha = merge_parallel(Pa.T @ Pa, alpha)
        active = active[keep]
    W = np.zeros((active.size, c))
    trace = {"log_evidence": [], "n_active": []}
    converged = False
    it = 0
    for it in range(1, max_iter + 1):  # noqa: B007
        slab = c_n[active]
        prec = alpha + slab  # the weights' prior precision (alpha without a slab)
        post = find_mode(Phin[:, active], T, prec, W, likelihood=likelihood, dispersion=dispersion)
        W = post.mean
        trace["log_evidence"].append(
            post.log_evidence + log_alpha_prior(alpha * scale[active] ** 2, prior)
        )
        trace["n_active"].append(active.size)
        w2 = np.sum(W**2, axis=1)
        sdiag = np.diag(post.cov).reshape(c, active.size).sum(axis=0)
        new_alpha = reestimate_alpha(method, alpha, slab, sdiag, w2, c, prior.a, b_n[active])
        keep = new_alpha < prune_level
        if not np.any(keep):  # never prune the last basis
            keep[np.argmin(new_alpha)] = True
            new_alpha = np.minimum(new_alpha, prune_level)
        pruned = not np.all(keep)
        # Under the flat prior a basis whose linearised optimum is alpha = inf
        # (q^2 <= s) is on its way out: its alpha may grow by a constant factor per
        # iteration for a long time, and the others keep moving (slightly) while it
        # does; it is dropped once the rest has settled to LEAVING_SETTLED, and the
        # iteration goes on to tol.  With b > 0 the hyperprior term -b alpha gives
        # every basis a finite optimum: no basis is leaving, none is dropped (except
        # by prune_level), and the iteration runs to the fixed point of all of them.
        if flat:
            leaving = leaving_active(prec, W, post.cov)
            if np.all(leaving):
                leaving[:] = False
        else:
            leaving = np.zeros(active.size, dtype=bool)
        # in the log of the prior precision (log alpha without a slab; alpha may reach 0)
        dlog = np.abs(np.log(new_alpha + slab) - np.log(prec))[~leaving]
        early = flat and np.any(leaving) and np.all(dlog < max(tol, LEAVING_SETTLED))
        if not pruned and early:
            keep = keep & ~leaving
        elif not pruned and np.all(dlog < tol):
            converged = True
            keep = keep & ~leaving
        active, alpha, W = active[keep], new_alpha[keep], W[keep]
        if converged:
            break
    return active, alpha, W, trace, it, converged
