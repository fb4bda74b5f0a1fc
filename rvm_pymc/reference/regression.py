"""Closed-form RVM regression: the entry point and full re-estimation (MacKay, EM).

The fast fit is :mod:`~rvm_pymc.reference.fast`'s (Tipping & Faul 2003).
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
from rvm_pymc._core.evidence import log_alpha_prior, log_hyperprior, log_marginal_likelihood
from rvm_pymc._core.gaussian import regression_posterior
from rvm_pymc._core.rowqr import RowQR
from rvm_pymc._core.sparsity import LEAVING_SETTLED, active_sq, leaving_active
from rvm_pymc._core.threads import single_blas_thread
from rvm_pymc._core.validation import (
    as_2d_float,
    as_target_float,
    check_consistent_length,
    check_finite,
    check_int,
    check_positive,
)
from rvm_pymc.exceptions import ConvergenceWarning, warn_user
from rvm_pymc.priors import HyperPrior, resolve_prior
from rvm_pymc.reference._laplace import find_mode
from rvm_pymc.reference._options import (
    BETA_MAX_FACTOR,
    check_alpha_init,
    check_method_and_prior,
    check_representable,
    normalise_columns,
)
from rvm_pymc.reference._result import RegressionResult
from rvm_pymc.reference.fast import FastOptions, fast_sequential

__all__ = ["PRUNE_DATA_RATIO", "fit_regression", "full_reestimation"]


def fit_regression(
    Phi,
    t,
    *,
    method: str = "fast",
    prior=None,
    beta_init: float | None = None,
    alpha_init=None,
    fixed_noise: bool = False,
    max_iter: int | None = None,
    tol: float = 1e-6,
    prune_threshold: float = 1e9,
    noise_update_every: int = 5,
    align_tol: float = 1e-3,
    noise_update_start: int = 20,
) -> RegressionResult:
    """Fit RVM regression by maximising the (log-coordinate) evidence.

    Parameters
    ----------
    Phi : array_like of shape (N, M), or RowQR
        Design matrix: one column per basis function (for a kernel RVM, a
        kernel column per training point plus a bias column).  With
        ``method="fast"`` also the row compression of ``[Phi | t]``
        (:class:`RowQR`, from :func:`row_qr`): the same fit, to rounding, at
        O(M^2) memory.
    t : array_like of shape (N,)
        Targets (with a RowQR: the ones compressed into it).
    method : {"fast", "mackay", "em"}
        ``"fast"``: the sequential algorithm of Tipping & Faul (2003), one
        basis at a time (requires ``a = b = 0`` and no slab).  ``"mackay"``: full
        re-estimation ``alpha = (gamma + 2a)/(mu^2 + 2b)``.  ``"em"``: full
        re-estimation ``alpha = (1 + 2a)/(mu^2 + Sigma_mm + 2b)``.  All three
        have the same fixed points (docs/design.md section 1).
    prior : str, mapping or HyperPrior, optional
        Gamma hyperpriors (see :func:`rvm_pymc.priors.resolve_prior`); default
        the ``"evidence"`` preset (type-II maximum likelihood).  With a slab
        ``s`` (``"mackay"`` and ``"em"`` only) a weight's prior precision is
        ``alpha_m + 1/s^2`` (docs/reference_solver.md); ``alpha_m`` may then
        end at 0 when ``a = 0``.
    beta_init : float, optional
        Initial noise precision; default ``100 / var(t)`` (noise sd 10% of the
        target sd).
    alpha_init : array_like of shape (M,), optional
        Initial precisions of the columns as given, ``inf`` for a column left
        out (a warm start, e.g. another fit's :meth:`~RegressionResult.alpha_full`).
        Default: ``"mackay"``/``"em"`` start every normalised weight with prior
        variance ``||t||^2 / M``, ``"fast"`` from the column best aligned with
        ``t`` (also when a warm start's posterior precision is singular).
    fixed_noise : bool
        Keep ``beta`` at ``beta_init`` (which is then required).
    max_iter : int, optional
        Iteration cap; default ``20 * M + 1000`` for ``"fast"``, 5000 otherwise.
        A :class:`~rvm_pymc.ConvergenceWarning` is issued when reached.
    tol : float
        Convergence tolerance on every ``|d log alpha|`` and ``|d log beta|``.
    prune_threshold : float
        Full re-estimation prunes a basis when its precision on normalised
        columns exceeds ``prune_threshold / var(t)``.  With ``a = b = 0`` it
        also prunes a basis whose precision and optimal precision both exceed
        ``1e3 * beta``, or whose optimum is ``alpha = inf`` and whose share of
        the log evidence is below ``tol`` (EM approaches ``alpha = inf`` only
        linearly).
    noise_update_every : int
        ``"fast"`` only: update ``beta`` (and re-solve from scratch) every this
        many basis updates, and always before declaring convergence.
    noise_update_start : int
        ``"fast"`` only: the periodic noise updates start after this many
        iterations (a fit that settles earlier updates the noise then): an
        early large noise estimate explains signal away.
    align_tol : float
        ``"fast"`` only: a candidate whose normalised column is nearly parallel
        to an active column is skipped, and reconsidered when that column
        leaves the model: ``1 - |cos| < align_tol x`` the median of
        ``1 - |cos|`` between the first column and the others.

    Returns
    -------
    RegressionResult

    Raises
    ------
    ValueError
        For non-finite or mis-shaped input, a constant target, an unknown
        method, or ``method="fast"`` with ``a`` or ``b`` nonzero or a slab.
    numpy.linalg.LinAlgError
        When the posterior precision is numerically singular (e.g. from an
        ``alpha_init`` many orders of magnitude too small).

    References
    ----------
    Tipping (2001), JMLR 1:211-244; Tipping & Faul (2003), AISTATS.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> x = np.linspace(-1, 1, 50)
    >>> Phi = np.column_stack([np.ones(50), x, x**2, x**3])
    >>> t = 1.0 + 2.0 * x + 0.05 * rng.standard_normal(50)
    >>> res = fit_regression(Phi, t)
    >>> 3 in res.active  # the cubic term is pruned
    False
    >>> bool(abs(res.mean[1] - 2.0) < 0.05)
    True
    """
    # The fast method only reads columns and products of Phi: a float64 array is used
    # as given (no N x M copy); the others normalise a copy.
    rows = Phi if isinstance(Phi, RowQR) else None
    fast = method == "fast"
    if rows is not None:  # a row compression: its triangle stands for the design
        if not fast:
            raise ValueError(
                f"Phi as a RowQR (a row compression of the design) needs method='fast'; "
                f"got method={method!r}"
            )
        Phi = rows.R
    if fast and isinstance(Phi, np.ndarray) and Phi.dtype == np.float64 and Phi.ndim == 2:
        if Phi.shape[1] == 0:
            raise ValueError(f"Phi has 0 features (shape {Phi.shape})")
        if Phi.shape[0] == 0:
            raise ValueError("Phi has 0 sample(s); at least 1 required")
    else:  # our own float64 copy
        Phi = as_2d_float(Phi, "Phi")
    if fast:  # the column norms, needed anyway, are finite only if every entry is
        with np.errstate(over="ignore", under="ignore", invalid="ignore"):
            norms = np.sqrt(np.einsum("ij,ij->j", Phi, Phi))
        if not np.isfinite(norms).all():  # a non-finite entry, or squares that overflow
            check_finite(Phi, "Phi")
    if rows is not None:
        t = _compressed_targets(rows, t)
    else:
        if np.ndim(t) == 1:  # the lengths first: a short t may also look constant
            check_consistent_length(Phi=Phi, t=t)
        t = as_target_float(t, "t")
        check_consistent_length(Phi=Phi, t=t)
    prior = resolve_prior(prior)
    check_method_and_prior(method, prior)
    _n, m = (Phi.shape[0] if rows is None else rows.n), Phi.shape[1]
    if np.ptp(t) == 0:
        raise ValueError(
            f"t is constant (all values equal {t[0].item()!r}); the noise precision is not "
            "identifiable from a constant target"
        )
    with np.errstate(over="ignore", under="ignore"):
        var_t = float(np.var(t))
    if not np.isfinite(var_t) or var_t < 1e-280:
        raise ValueError(
            f"t spans {np.ptp(t):.3g}, a scale whose square over- or underflows; rescale t"
        )
    tol = check_positive(tol, "tol")
    prune_threshold = check_positive(prune_threshold, "prune_threshold")
    noise_update_every = check_int(noise_update_every, "noise_update_every", 1)
    noise_update_start = check_int(noise_update_start, "noise_update_start", 0)
    align_tol = check_positive(align_tol, "align_tol", allow_zero=True)
    if align_tol >= 1:
        raise ValueError(f"align_tol must be in [0, 1); got {align_tol!r}")
    if fixed_noise and beta_init is None:
        raise ValueError("fixed_noise=True requires beta_init (the fixed noise precision)")
    beta0 = 100.0 / var_t if beta_init is None else check_positive(beta_init, "beta_init")
    alpha_init = check_alpha_init(alpha_init, m, zero_ok=prior.slab is not None)
    if max_iter is None:
        max_iter = 20 * m + 1000 if fast else 5000
    max_iter = check_int(max_iter, "max_iter", 1)

    beta_max = max(BETA_MAX_FACTOR / var_t, beta0)

    # unit-norm columns: Phin / scale if raw, else normalised in place (fast: on a copy; a zero
    # or tiny norm may be an underflow, which normalise_columns sorts out)
    if fast and np.all(np.isfinite(norms) & (norms >= 1e-140)):
        Phin, scale, usable, raw = Phi, norms, np.ones(norms.size, dtype=bool), True
    else:
        Phin, scale, usable = normalise_columns(np.array(Phi) if fast else Phi, "explain t")
        raw = False
    z = t if rows is None else rows.z  # the targets of the design (a RowQR's: its own)

    with single_blas_thread():  # loops of small products: one BLAS thread (see _threads)
        if fast:
            options = FastOptions(
                prior, fixed_noise, max_iter, tol, noise_update_every, align_tol, beta_max,
                noise_update_start,
            )  # fmt: skip
            start = None if alpha_init is None else alpha_init / scale**2
            out = fast_sequential(
                Phin, z, usable, beta0, options,
                scale if raw else None, start, None if rows is None else (_n, rows.remainder),
            )  # fmt: skip
        else:
            out = full_reestimation(
                Phin, t, usable, scale, beta0, prior, fixed_noise, max_iter, tol,
                prune_threshold / var_t, method, alpha_init, beta_max,
            )  # fmt: skip
    active, alpha_n, beta, trace, n_iter, converged = out
    at_bound = not fixed_noise and beta >= beta_max * (1 - 1e-9)
    if at_bound:
        warn_user(
            f"RVM regression (method={method!r}): the noise precision reached its upper "
            f"bound {BETA_MAX_FACTOR:.0e} / var(t) (noise sd {1 / np.sqrt(beta):.3g}, "
            f"{np.sqrt(var_t * beta) ** -1:.0e} of the target sd): the basis fits the "
            f"{_n} targets (almost) exactly, so the noise level cannot be estimated from "
            "them; the fit returned is the one at that bound"
            + ("" if converged else f" (and did not settle in {max_iter} iterations)"),
            ConvergenceWarning,
        )
    elif not converged:
        few = f" (only {_n} points: the hyperparameters are barely determined)" if _n < 10 else ""
        warn_user(
            f"RVM regression (method={method!r}) did not converge in {max_iter} "
            f"iterations{few}; increase max_iter or loosen tol",
            ConvergenceWarning,
        )
    # Solve on the normalised columns, then undo the scaling analytically:
    # alpha_m = s_m^2 alphan_m, mu_m = mun_m / s_m, Sigma = D^-1 Sigman D^-1
    order = np.argsort(active)
    active = np.asarray(active)[order]
    alpha_n = np.asarray(alpha_n, dtype=float)[order]
    s = scale[active]
    Pa = Phin[:, active] / s if raw else Phin[:, active]
    prec = alpha_n + slab_precision(prior, s)  # the weights' prior precision
    post = regression_posterior(Pa, z, prec, beta)
    extra = {} if rows is None else {"n": rows.n, "rss_offset": rows.remainder}
    lml = log_marginal_likelihood(Pa, z, prec, beta, post, **extra)
    gamma = 1.0 - prec * np.diag(post.cov)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        alpha = alpha_n * s**2
        mean = post.mean / s
        cov = (post.cov / s[:, None]) / s[None, :]
    check_representable(alpha, alpha_n, cov, s)
    return RegressionResult(
        method=method,
        prior=prior,
        n_basis=m,
        active=active,
        alpha=alpha,
        beta=float(beta),
        mean=mean,
        cov=cov,
        gamma=gamma,
        log_marginal_likelihood=lml,
        log_evidence=lml + log_hyperprior(alpha, beta, prior),
        n_iter=n_iter,
        converged=converged,
        trace={k: np.asarray(v) for k, v in trace.items()},
        noise_at_bound=bool(at_bound),
    )


def _compressed_targets(rows: RowQR, t) -> np.ndarray:
    """The targets ``t`` of a row compression ``rows``, checked against it (count and norm)."""
    t = as_target_float(t, "t")
    if t.shape != (rows.n,):
        raise ValueError(f"t has shape {t.shape}, but Phi (a RowQR) compresses {rows.n} rows")
    tt, held = float(t @ t), float(rows.z @ rows.z) + rows.remainder
    if not abs(tt - held) <= 1e-8 * max(tt, held):
        raise ValueError(
            f"t (squared norm {tt:.6g}) is not the target compressed into Phi (a RowQR; "
            f"squared norm {held:.6g}): compress the design with these targets"
        )
    return t


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
    likelihood=None,
    dispersion=None,
):
    """MacKay or EM re-estimation of all precisions (and the noise), on normalised columns.

    Regression (``likelihood`` None): the Gaussian posterior, and ``beta`` unless
    ``fixed_noise``.  Else the Laplace posterior (:func:`find_mode` of ``likelihood``,
    ``t`` its targets ``T``), ``beta`` unused, and the third value returned the mode ``W``.
    On normalised columns the rate ``b`` becomes ``b ||phi_m||^2`` and a slab's precision
    ``1 / (s^2 ||phi_m||^2)``.
    """
    gaussian = likelihood is None
    n = Phin.shape[0]
    b_n = prior.b * scale**2
    c_n = slab_precision(prior, scale)
    flat = prior.a == 0 and prior.b == 0
    if alpha_init is None:
        active = np.flatnonzero(usable)
        # Regression: prior variance ||t||^2 / M per weight (floored relative to beta so
        # that A + beta Phi^T Phi stays well conditioned); else about one for the latent.
        start = max(active.size / float(t @ t), 1e-8 * beta) if gaussian else active.size / n
        alpha = np.full(active.size, start)
    else:
        active = np.flatnonzero(np.isfinite(alpha_init) & usable)
        if active.size == 0 and not gaussian:
            raise ValueError("alpha_init is finite only on all-zero columns of Phi")
        alpha = alpha_init[active] / scale[active] ** 2
    if gaussian:
        gram, PhiT_t = Phin.T @ Phin, Phin.T @ t
    if flat and prior.slab is None:  # the evidence is flat along parallel columns
        Pa = Phin[:, active]
        keep, alpha = merge_parallel(
            gram[np.ix_(active, active)] if gaussian else Pa.T @ Pa, alpha
        )
        active = active[keep]
    W = None if gaussian else np.zeros((active.size, t.shape[1]))
    trace = {"log_evidence": [], "n_active": [], **({"beta": []} if gaussian else {})}
    converged = False
    it = 0
    for it in range(1, max_iter + 1):  # noqa: B007
        c = c_n[active]
        prec = alpha + c  # the weights' prior precision (alpha without a slab)
        Pa = Phin[:, active]
        if gaussian:
            G = gram[np.ix_(active, active)]
            post = regression_posterior(Pa, t, prec, beta, gram=G, PhiT_t=PhiT_t[active])
            lml = log_marginal_likelihood(Pa, t, prec, beta, post)
            trace["log_evidence"].append(
                lml + log_hyperprior(alpha * scale[active] ** 2, beta, prior)
            )
            trace["beta"].append(beta)
            k, sdiag, w2 = 1, np.diag(post.cov), post.mean**2
        else:
            post = find_mode(Pa, t, prec, W, likelihood=likelihood, dispersion=dispersion)
            W = post.mean
            trace["log_evidence"].append(
                post.log_evidence + log_alpha_prior(alpha * scale[active] ** 2, prior)
            )
            k, w2 = t.shape[1], np.sum(W**2, axis=1)
            sdiag = np.diag(post.cov).reshape(k, active.size).sum(axis=0)
        trace["n_active"].append(active.size)
        new_alpha = reestimate_alpha(method, alpha, c, sdiag, w2, k, prior.a, b_n[active])
        new_beta = beta
        if gaussian and not fixed_noise:
            resid = t - Pa @ post.mean
            rss, sum_gamma = float(resid @ resid), float(np.sum(1.0 - prec * sdiag))
            if method == "mackay":
                new_beta = mackay_beta(n, sum_gamma, rss, prior, beta_max)
            else:
                new_beta = em_beta(n, sum_gamma, rss, beta, prior, beta_max)
        keep = new_alpha < prune_level
        if gaussian and flat:
            keep &= ~_negligible(gram, PhiT_t, active, prec, beta, post, tol)
        if not np.any(keep):  # never prune the last basis
            keep[np.argmin(new_alpha)] = True
            new_alpha = np.minimum(new_alpha, prune_level)
        pruned = not np.all(keep)
        # Laplace, flat prior: a basis whose linearised optimum is alpha = inf (q^2 <= s)
        # may creep out for a long time; it is dropped once the rest has settled to
        # LEAVING_SETTLED.  With b > 0 every basis has a finite optimum: none leaves.
        leaving = np.zeros(active.size, dtype=bool)
        if flat and not gaussian:
            leaving = leaving_active(prec, W, post.cov)
            if np.all(leaving):
                leaving[:] = False
        # in the log of the prior precision (log alpha without a slab; alpha may reach 0)
        dlog = np.abs(np.log(new_alpha + c) - np.log(prec))[~leaving]
        settled = not gaussian or abs(np.log(new_beta) - np.log(beta)) < tol
        if not pruned and np.any(leaving) and np.all(dlog < max(tol, LEAVING_SETTLED)):
            keep = keep & ~leaving
        elif not pruned and np.all(dlog < tol) and settled:
            converged = True
            keep = keep & ~leaving
        active, alpha, beta = active[keep], new_alpha[keep], new_beta
        W = None if gaussian else W[keep]
        if converged:
            break
    return active, alpha, beta if gaussian else W, trace, it, converged


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
