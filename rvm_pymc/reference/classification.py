"""Closed-form RVM classification by the Laplace evidence (fast, MacKay, EM).

Bernoulli-logit for two classes, softmax for K > 2 with one precision per basis shared by
its K weights.  :func:`laplace_fit` is shared with ``counts``.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from rvm_pymc._core.ard import slab_precision
from rvm_pymc._core.evidence import log_alpha_prior
from rvm_pymc._core.laplace import LaplacePosterior
from rvm_pymc._core.threads import single_blas_thread, worker_threads
from rvm_pymc._core.validation import (
    as_2d_float,
    check_consistent_length,
    check_int,
    check_memory,
    check_positive,
    plain_value,
)
from rvm_pymc.exceptions import ConvergenceWarning, warn_user
from rvm_pymc.priors import HyperPrior, resolve_prior
from rvm_pymc.reference._laplace import find_mode
from rvm_pymc.reference._options import (
    check_alpha_init,
    check_fixed_alpha,
    check_method_and_prior,
    check_representable,
    normalise_columns,
)
from rvm_pymc.reference._result import ClassificationResult
from rvm_pymc.reference.fast import fast_classification
from rvm_pymc.reference.regression import full_reestimation as laplace_reestimation

__all__ = [
    "LaplaceFit",
    "fit_classification",
    "laplace_fit",
    "laplace_posterior",
]


def encode_labels(y) -> tuple[np.ndarray, np.ndarray]:
    """``(classes, T)``: sorted distinct labels, and a 0/1 column (two classes) or one-hot rows."""
    y = np.asarray(y)
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    if y.ndim != 1:
        raise ValueError(f"y must be a 1-D array of class labels; got shape {y.shape}")
    if y.size == 0:
        raise ValueError("y is empty")
    if y.dtype.kind in "fc":
        if np.iscomplexobj(y):
            raise ValueError("y must not be complex")
        missing = ~np.isfinite(y)
    elif y.dtype == object:
        missing = np.array(
            [v is None or (isinstance(v, float | np.floating) and not np.isfinite(v)) for v in y]
        )
    else:
        missing = np.zeros(y.size, dtype=bool)
    if np.any(missing):
        raise ValueError(
            f"y contains {int(missing.sum())} missing label(s) (NaN, inf or None); "
            "remove those samples before fitting"
        )
    try:
        classes, codes = np.unique(y, return_inverse=True)
    except TypeError as exc:
        raise ValueError(f"the labels in y cannot be sorted (mixed types?): {exc}") from exc
    k = classes.size
    if k < 2:
        raise ValueError(
            f"y has a single class ({plain_value(classes[0])!r}); "
            "classification needs at least two"
        )
    codes = codes.reshape(-1)
    return classes, codes.astype(float)[:, None] if k == 2 else np.eye(k)[codes]


def _design_and_labels(Phi, y, copy: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(Phi, classes, T)`` checked; refuse a softmax fit whose Hessian, ``(m K)^2`` floats,
    or pair products would not fit."""
    Phi = as_2d_float(Phi, "Phi", copy=copy)
    if np.ndim(y) == 1:  # the lengths first: a short y may also hold a single class
        check_consistent_length(Phi=Phi, y=y)
    classes, T = encode_labels(y)
    check_consistent_length(Phi=Phi, y=T)
    (n, m), k = Phi.shape, T.shape[1]
    if k < 3:
        return Phi, classes, T
    largest = 8.0 * max((m * k) ** 2, max(n, m) * m * k * (k + 1) / 2)
    check_memory(
        largest,
        f"y has {k} classes: a softmax fit on {m} bases (its Laplace Hessian alone has "
        f"({m} * {k})^2 floats)",
        "if y is a numeric quantity rather than class labels, fit a regression instead "
        "(RVR, or rvm_pymc.reference.fit_regression); else merge classes or use fewer bases",
    )
    return Phi, classes, T


def laplace_posterior(Phi, y, alpha) -> LaplacePosterior:
    """Posterior mode, Laplace covariance and Laplace log evidence at fixed precisions.

    Parameters
    ----------
    Phi : array_like of shape (N, M)
        Design matrix restricted to the bases with finite ``alpha``.
    y : array_like of shape (N,)
        Class labels (two or more distinct values).
    alpha : array_like of shape (M,)
        Precisions, finite and > 0 (one per basis, shared by its K weights).

    Returns
    -------
    LaplacePosterior
        ``mean`` of shape (M, C) with ``C = 1`` for two classes (the logit of
        the larger label) and ``C = K`` otherwise; ``cov`` class-major.
        ``log_evidence`` is the Laplace approximation of ``log p(y | alpha)``.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.linspace(-2, 2, 40)
    >>> post = laplace_posterior(x[:, None], x + np.sin(7 * x) > 0, [1.0])
    >>> post.mean.shape, post.cov.shape, post.converged
    ((1, 1), (1, 1), True)
    """
    Phi, _, T = _design_and_labels(Phi, y, copy=True)
    alpha = check_fixed_alpha(alpha, Phi.shape[1])
    return find_mode(Phi, T, alpha)


def fit_classification(
    Phi,
    y,
    *,
    method: str = "fast",
    prior=None,
    alpha_init=None,
    max_iter: int | None = None,
    tol: float = 1e-6,
    prune_threshold: float = 1e9,
    align_tol: float = 1e-3,
    deletion_tries: int = 0,
) -> ClassificationResult:
    """Fit an RVM classifier by maximising the Laplace-approximated evidence.

    Parameters
    ----------
    Phi : array_like of shape (N, M)
        Design matrix: one column per basis function (for a kernel RVM, a
        kernel column per training point plus a bias column).
    y : array_like of shape (N,)
        Class labels: two or more distinct values of any sortable type
        (ints, strings, bools); they are returned as given by ``predict``.
    method : {"fast", "mackay", "em"}
        ``"fast"``: the sequential algorithm of Tipping & Faul (2003) on the
        linearised problem at the current mode (requires ``a = b = 0``).
        ``"mackay"``: full re-estimation ``alpha_m = (gamma_m + 2a)/(||w_m||^2 + 2b)``
        with ``gamma_m = K_m - alpha_m tr(Sigma_mm)``; ``"em"``:
        ``alpha_m = (K_m + 2a)/(||w_m||^2 + tr(Sigma_mm) + 2b)``, where ``w_m``
        holds the ``K_m`` weights of basis ``m`` (1 for two classes, K for
        softmax) and ``Sigma_mm`` their Laplace covariance.
    prior : str, mapping or HyperPrior, optional
        Gamma hyperprior; only ``a`` and ``b`` (on ``alpha``) are used, and a
        slab ``s`` (``"mackay"``, ``"em"``): prior precision ``alpha_m + 1/s^2``,
        ``alpha_m`` then possibly 0 (docs/reference_solver.md).
        Default the ``"evidence"`` preset (type-II maximum likelihood).
    alpha_init : array_like of shape (M,), optional
        Initial precisions of the columns as given, ``inf`` for a column left
        out (a warm start, e.g. another fit's :meth:`~ClassificationResult.alpha_full`).
        Default: ``"mackay"``/``"em"`` start from every usable column, with a
        prior variance of the latent function of about one, ``"fast"`` from the
        column best aligned with the classes (also when a warm start's mode
        cannot be found).
    max_iter : int, optional
        Iteration cap; default ``10 * M + 100`` for ``"fast"``, 5000 otherwise.
        A :class:`~rvm_pymc.ConvergenceWarning` is issued when reached.
    tol : float
        Convergence tolerance on every ``|d log alpha|``.
    prune_threshold : float
        Full re-estimation prunes a basis whose precision on unit-norm
        columns exceeds this (its weight then moves the latent function by
        less than ``prune_threshold ** -0.5``).
    align_tol : float
        ``"fast"`` only: skip candidates whose normalised column has
        ``|cos| > 1 - align_tol`` with an active column.
    deletion_tries : int
        ``"fast"`` only: after convergence, delete in turn each of the
        ``deletion_tries`` active bases that cost most in the linearised
        evidence, re-run without it, and keep the first outcome with a higher
        Laplace evidence (then search again): a way out of a local optimum, at
        several times the cost.  Default 0 (off).

    Returns
    -------
    ClassificationResult

    Raises
    ------
    ValueError
        For non-finite or mis-shaped ``Phi``, mismatched lengths, missing
        labels, a single class, an unknown method, or ``method="fast"`` with
        ``a`` or ``b`` nonzero.  One sample of each class is enough.

    Notes
    -----
    All three methods share their fixed points (stationarity of the Laplace
    evidence with the curvature ``B`` held at the mode).

    References
    ----------
    Tipping (2001), JMLR 1:211-244; Tipping & Faul (2003), AISTATS;
    MacKay (1992), Neural Computation 4:720-736.

    Examples
    --------
    >>> import numpy as np
    >>> from rvm_pymc.datasets import make_ripley
    >>> X, t, X_test, t_test = make_ripley(n_train=100, n_test=500, random_state=1)
    >>> def design(A):
    ...     d2 = ((A[:, None, :] - X[None, :, :]) ** 2).sum(-1)
    ...     return np.column_stack([np.ones(len(A)), np.exp(-d2 / 0.5**2)])
    >>> res = fit_classification(design(X), t)
    >>> res.n_relevance < 10
    True
    >>> bool(np.mean(res.predict(design(X_test)) != t_test) < 0.15)
    True
    """
    # Phi only read: the solver normalises its own copy
    Phi, classes, T = _design_and_labels(Phi, y, copy=False)
    fit = laplace_fit(
        Phi,
        T,
        method=method,
        prior=prior,
        alpha_init=alpha_init,
        max_iter=max_iter,
        tol=tol,
        prune_threshold=prune_threshold,
        align_tol=align_tol,
        deletion_tries=deletion_tries,
        likelihood="bernoulli",
        task="separate the classes",
        what="RVM classification",
    )
    prior, post = fit.prior, fit.post
    result = ClassificationResult(
        method=method,
        prior=prior,
        classes=classes,
        n_basis=Phi.shape[1],
        active=fit.active,
        alpha=fit.alpha,
        mean=post.mean[:, 0] if T.shape[1] == 1 else post.mean,
        cov=post.cov,
        log_likelihood=post.log_likelihood,
        log_evidence=fit.log_evidence,
        n_iter=fit.n_iter,
        converged=fit.converged,
        trace=fit.trace,
    )
    # The empty model's evidence is N log(1/K); the last (undeletable) basis leaves the fit
    # a little below it; more than 0.01 nats below means the greedy start found nothing.
    empty = Phi.shape[0] * np.log(1.0 / len(classes))
    flat = prior.a == 0.0 and prior.b == 0.0  # else log_evidence has a hyperprior term
    if method == "fast" and flat and result.log_evidence < empty - 1e-2:
        warn_user(
            f"the fast algorithm stopped at a log evidence ({result.log_evidence:.6g}) below "
            f"that of the model with no basis ({empty:.6g}): no single basis raised the "
            "evidence from its start (relevant bases may only act together, e.g. with a "
            "wide kernel); try method='mackay' or a narrower kernel",
            ConvergenceWarning,
        )
    return result


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

    ``dispersion``: the fixed ``r`` of a negative binomial; ``warn``: a ConvergenceWarning
    when the precisions do not converge.
    """
    prior = resolve_prior(prior)
    check_method_and_prior(method, prior)
    m = Phi.shape[1]
    tol = check_positive(tol, "tol")
    prune_threshold = check_positive(prune_threshold, "prune_threshold")
    align_tol = check_positive(align_tol, "align_tol", allow_zero=True)
    alpha_init = check_alpha_init(alpha_init, m, zero_ok=prior.slab is not None)
    if max_iter is None:
        max_iter = 10 * m + 100 if method == "fast" else 5000
    max_iter = check_int(max_iter, "max_iter", 1)
    deletion_tries = check_int(deletion_tries, "deletion_tries", 0)
    if deletion_tries and method != "fast":
        raise ValueError(f"deletion_tries is used by method='fast' only; got method={method!r}")

    Phin, scale, usable = normalise_columns(Phi.copy(), task)

    # loops of small products: one BLAS thread; the large products on worker threads
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
                Phin, T, usable, scale, None, prior, True, max_iter, tol, prune_threshold,
                method, alpha_init, None, likelihood, dispersion,
            )  # fmt: skip
    active, alpha_n, W_n, trace, n_iter, converged = out
    if not converged and warn:
        warn_user(
            f"{what} (method={method!r}) did not converge in {max_iter} "
            "iterations; increase max_iter or loosen tol",
            ConvergenceWarning,
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
        warn_user(
            "Newton's method did not reach the posterior mode of the final model; "
            "the Laplace approximation may be inaccurate",
            ConvergenceWarning,
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
