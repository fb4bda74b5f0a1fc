"""Full re-estimation of RVM regression (MacKay, EM) on normalised columns.

Every precision and the noise precision updated at once per iteration
(:func:`rvm_pymc._core.ard.reestimate_alpha`, a slab included), with the
pruning rules of docs/reference_solver.md; under the flat hyperprior, columns
parallel to rounding start as one basis
(:func:`~rvm_pymc._core.ard.merge_parallel`).  The entry point is
:func:`rvm_pymc.reference.fit_regression`.
"""

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
    """MacKay or EM re-estimation of all precisions on normalised columns.

    The hyperprior acts on the precisions of the columns as given: on
    normalised columns the rate ``b`` becomes ``b * ||phi_m||^2``, and a slab's
    precision ``1/s^2`` becomes ``1 / (s^2 ||phi_m||^2)`` (:mod:`rvm_pymc._core.ard`).
    """
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
    """Bases to prune: negligible now and at their own optimum.

    ``alpha``: the weights' prior precisions (with a slab, ``alpha + c``; the
    slab's floor ``c`` is far below the levels compared with here).

    With ``a = b = 0`` an irrelevant precision creeps to infinity under MacKay
    and (slowly: by about ``s_m`` per iteration, so linearly) under EM updates.
    For basis ``m`` with sparsity and quality factors ``s_m, q_m`` (Tipping &
    Faul 2003) the log evidence as a function of ``alpha_m`` alone is
    ``l_m(alpha)``, maximised at ``alpha*_m = s_m^2 / (q_m^2 - s_m)`` (``inf`` when
    ``q_m^2 <= s_m``).  A basis is pruned when either

    * ``q_m^2 <= s_m`` and its whole contribution ``|l_m(alpha_m)|`` (a
      difference of log evidences, free of units) is below ``tol``; or
    * both ``alpha_m`` and ``alpha*_m`` exceed ``PRUNE_DATA_RATIO = 1e3`` times the
      data precision of its (unit-norm) column, ``beta``: the weight's prior sd
      is then below 3% of the noise sd along its column, and since
      ``s_m <= beta`` its share of the log evidence at any
      ``alpha >= 1e3 beta`` is below ``(q_m^2 - s_m)^2 / (2 s_m^2) < 5e-7`` nats
      when ``q_m^2 > s_m``.  This is the rule of thumb of Tipping (2001) and
      SparseBayes (prune a precision beyond a large threshold), scaled by the
      data; it makes EM sparse in a few hundred iterations instead of never.

    Pruning a basis whose optimum is ``alpha = inf`` raises the evidence, so
    EM stays monotone; the fixed points are unchanged to within the shares above.
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
