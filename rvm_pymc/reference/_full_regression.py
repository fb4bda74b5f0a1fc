"""Full re-estimation of RVM regression (MacKay, EM; :mod:`rvm_pymc._core.ard`)."""

from __future__ import annotations

import numpy as np

from rvm_pymc._core.ard import (
    em_beta,
    mackay_beta,
    merge_parallel,
    reestimate_alpha,
    slab_precision,
)
from rvm_pymc._core.evidence import log_hyperprior, log_marginal_likelihood
from rvm_pymc._core.gaussian import regression_posterior
from rvm_pymc._core.sparsity import active_sq
from rvm_pymc.priors import HyperPrior

__all__ = ["PRUNE_DATA_RATIO", "full_reestimation"]

#: Full re-estimation prunes a basis whose precision and optimal precision both
#: exceed this multiple of the noise precision (on unit-norm columns); see _negligible.
PRUNE_DATA_RATIO = 1e3


def full_reestimation(
    Phin,
    t,
    usable,
    scale,
    beta,
    prior: HyperPrior,
    fixed_noise,
    max_iter,
    tol,
    prune_level,
    method,
    alpha_init,
    beta_max,
):
    """MacKay or EM re-estimation of all precisions and the noise, on normalised columns."""
    n, _m = Phin.shape
    b_n = prior.b * scale**2
    c_n = slab_precision(prior, scale)
    if alpha_init is None:
        active = np.flatnonzero(usable)
        # Start every weight with prior variance ||t||^2 / M on the normalised scale.
        # (floored relative to the noise precision so that A + beta Phi^T Phi stays
        # well conditioned when t has a large mean)
        alpha = np.full(active.size, max(active.size / float(t @ t), 1e-8 * beta))
    else:
        active = np.flatnonzero(np.isfinite(alpha_init) & usable)
        alpha = alpha_init[active] / scale[active] ** 2
    gram = Phin.T @ Phin
    PhiT_t = Phin.T @ t
    flat_alpha = prior.a == 0 and prior.b == 0
    if flat_alpha and prior.slab is None:  # the evidence is flat along parallel columns
        keep, alpha = merge_parallel(gram[np.ix_(active, active)], alpha)
        active = active[keep]
    trace = {"log_evidence": [], "n_active": [], "beta": []}
    converged = False
    it = 0
    for it in range(1, max_iter + 1):  # noqa: B007
        Pa = Phin[:, active]
        c = c_n[active]
        prec = alpha + c  # the weights' prior precision (alpha without a slab)
        post = regression_posterior(
            Pa, t, prec, beta, gram=gram[np.ix_(active, active)], PhiT_t=PhiT_t[active]
        )
        lml = log_marginal_likelihood(Pa, t, prec, beta, post)
        trace["log_evidence"].append(lml + log_hyperprior(alpha * scale[active] ** 2, beta, prior))
        trace["n_active"].append(active.size)
        trace["beta"].append(beta)
        sdiag = np.diag(post.cov)
        gamma = 1.0 - prec * sdiag
        mu2 = post.mean**2
        new_alpha = reestimate_alpha(method, alpha, c, sdiag, mu2, 1, prior.a, b_n[active])
        new_beta = beta
        if not fixed_noise:
            resid = t - Pa @ post.mean
            rss = float(resid @ resid)
            if method == "mackay":
                new_beta = mackay_beta(n, float(np.sum(gamma)), rss, prior, beta_max)
            else:
                new_beta = em_beta(n, float(np.sum(gamma)), rss, beta, prior, beta_max)
        keep = new_alpha < prune_level
        if flat_alpha:
            keep &= ~_negligible(gram, PhiT_t, active, prec, beta, post, tol)
        if not np.any(keep):  # never prune the last basis
            keep[np.argmin(new_alpha)] = True
            new_alpha = np.minimum(new_alpha, prune_level)
        # in the log of the prior precision (log alpha without a slab; alpha may reach 0)
        dlog = np.abs(np.log(new_alpha[keep] + c[keep]) - np.log(prec[keep]))
        dbeta = abs(np.log(new_beta) - np.log(beta))
        pruned = not np.all(keep)
        active, alpha, beta = active[keep], new_alpha[keep], new_beta
        if not pruned and dlog.max(initial=0.0) < tol and dbeta < tol:
            converged = True
            break
    return active, alpha, beta, trace, it, converged


def _negligible(gram, PhiT_t, active, alpha, beta, post, tol):
    """Bases to prune under ``a = b = 0``: negligible now and at their own optimum.

    Either ``q^2 <= s`` with a contribution ``|l_m(alpha_m)|`` below ``tol``, or
    ``alpha_m`` and its optimum both above ``PRUNE_DATA_RATIO * s`` (at most
    ~5e-7 nats of evidence): EM creeps to ``alpha = inf`` only linearly.
    """
    G = gram[np.ix_(active, active)]
    S = beta * np.diag(G) - beta**2 * np.sum((G @ post.cov) * G, axis=1)
    Q = beta * (PhiT_t[active] - G @ post.mean)
    s, q = active_sq(alpha, S, Q, np.diag(post.cov), post.mean)
    q2 = q**2
    contribution = 0.5 * (-np.log1p(s / alpha) + q2 / (alpha + s))
    leaving = q2 <= s
    with np.errstate(divide="ignore", over="ignore"):
        alpha_opt = np.where(leaving, np.inf, s**2 / np.where(leaving, 1.0, q2 - s))
    level = PRUNE_DATA_RATIO * s
    return (leaving & (np.abs(contribution) < tol)) | ((alpha > level) & (alpha_opt > level))
