"""Closed-form reference solver (NumPy/SciPy only; importing it never imports PyMC).

:func:`fit_regression`, :func:`fit_classification` (binary logistic or softmax) and
:func:`fit_counts` (Poisson or negative binomial), each with ``method="fast"`` (Tipping &
Faul 2003), ``"mackay"`` or ``"em"`` (Tipping 2001); classification and counts by the Laplace
approximation.  A regression design too large to hold is fitted through its row
compression (:func:`row_qr`, :class:`RowQR`).  The evidence helpers, O(N M^2), are the
yardstick of the PyMC fits; :func:`fit_posterior` is the estimators' entry, returning a
:class:`~rvm_pymc.results.WeightPosterior` and :class:`~rvm_pymc.results.FitInfo`.
"""

import numpy as np

from rvm_pymc._core.ard import slab_precision
from rvm_pymc._core.evidence import (
    dense_log_marginal_likelihood,
    log_hyperprior,
    log_marginal_likelihood,
)
from rvm_pymc._core.gaussian import GaussianPosterior, regression_posterior
from rvm_pymc._core.rowqr import RowQR, row_qr
from rvm_pymc._core.sparsity import LEAVING_SETTLED, leaving_active
from rvm_pymc._core.validation import plain_value
from rvm_pymc.reference._options import check_fixed_alpha
from rvm_pymc.reference._result import ClassificationResult, RegressionResult
from rvm_pymc.reference.classification import fit_classification
from rvm_pymc.reference.counts import (
    CountsResult,
    fit_counts,
    negative_binomial_laplace_posterior,
    poisson_laplace_posterior,
)
from rvm_pymc.reference.regression import fit_regression
from rvm_pymc.results import FitInfo, WeightPosterior

__all__ = [
    "LEAVING_SETTLED",
    "ClassificationResult",
    "CountsResult",
    "GaussianPosterior",
    "RegressionResult",
    "RowQR",
    "dense_log_marginal_likelihood",
    "fit_classification",
    "fit_counts",
    "fit_posterior",
    "fit_regression",
    "leaving_active",
    "log_evidence",
    "log_hyperprior",
    "log_marginal_likelihood",
    "negative_binomial_laplace_posterior",
    "poisson_laplace_posterior",
    "regression_posterior",
    "row_qr",
]

RowQR.__module__ = row_qr.__module__ = __name__  # documented here (defined in _core)


def log_evidence(Phi, t, alpha, beta, prior=None) -> float:
    """Log-coordinate objective at given precisions: log marginal likelihood + hyperprior.

    Parameters
    ----------
    Phi : array_like of shape (N, M)
        Design matrix restricted to the bases with finite ``alpha``.
    t : array_like of shape (N,)
    alpha : array_like of shape (M,)
        ARD precisions (finite, > 0; >= 0 with a slab).
    beta : float
        Noise precision.
    prior : str, mapping or HyperPrior, optional
        Hyperprior (default ``"evidence"``: the plain log marginal likelihood).
        With a slab ``s`` the weights' prior precisions are ``alpha + 1/s^2``.

    Returns
    -------
    float
        ``log N(t | 0, I/beta + Phi (A + I/s^2)^-1 Phi^T)`` (no ``1/s^2`` without a slab)
        ``+ sum(a log alpha - b alpha) + c log beta - d beta``.
    """
    from rvm_pymc.priors import resolve_prior

    prior = resolve_prior(prior)
    Phi, t, alpha = (np.asarray(v, dtype=float) for v in (Phi, t, alpha))
    if Phi.ndim != 2 or alpha.shape != (Phi.shape[1],) or t.shape != (Phi.shape[0],):
        raise ValueError(f"shapes do not match: Phi {Phi.shape}, t {t.shape}, alpha {alpha.shape}")
    check_fixed_alpha(alpha, alpha.size, zero_ok=prior.slab is not None)
    if not (np.isfinite(beta) and beta > 0):
        raise ValueError(f"beta must be finite and > 0; got {plain_value(beta)!r}")
    prec = alpha + slab_precision(prior, np.ones(alpha.size))
    return log_marginal_likelihood(Phi, t, prec, float(beta)) + log_hyperprior(
        alpha, float(beta), prior
    )


def fit_posterior(
    Phi,
    target,
    kind: str,
    basis_names,
    *,
    solver: str,
    prior,
    max_iter=None,
    tol: float = 1e-6,
    start: WeightPosterior | None = None,
    likelihood: str | None = None,
) -> tuple[WeightPosterior, FitInfo]:
    """Fit by the reference solver; return the posterior over the active bases and its report.

    Parameters
    ----------
    Phi : ndarray of shape (N, M)
        Design matrix (the estimators give it scaled: the one scaling boundary).
    target : ndarray of shape (N,)
        Regression targets, class codes ``0..K-1``, or counts.
    kind : {"regression", "classification", "counts"}
        Which fit: :func:`fit_regression`, :func:`fit_classification` (binary
        or softmax by the number of classes in ``target``) or :func:`fit_counts`
        (a ``"poisson"`` posterior).
    basis_names : sequence of str
        The names of the M columns of ``Phi``.
    solver : {"fast", "mackay", "em"}
    prior : str, mapping or HyperPrior
    max_iter : int, optional
    tol : float
    start : WeightPosterior, optional
        A warm start: a fit on (some of) the same bases, matched by name.  Its
        bases start in the model at its precisions (``"mackay"`` and ``"em"``
        then never add a basis), regression at its noise precision and a
        negative binomial at its ``r``.  None, or no basis in common: the
        solver's own start.
    likelihood : {"poisson", "negative_binomial"}, optional
        Counts only (default ``"poisson"``): :func:`fit_counts`'s likelihood, a
        ``"negative_binomial"`` posterior with ``log_dispersion``.

    Returns
    -------
    (WeightPosterior, FitInfo)
        The Gaussian (Laplace) posterior over the bases the solver kept, on
        the problem it was given; its log evidence, iterations and convergence.
    """
    fits = dict(regression=fit_regression, classification=fit_classification, counts=fit_counts)
    if kind not in fits:
        raise ValueError(f"kind must be one of {tuple(fits)}; got {kind!r}")
    extra = _warm_start(start, basis_names, kind)
    if kind == "counts":
        extra["likelihood"] = "poisson" if likelihood is None else likelihood
        if extra["likelihood"] != "negative_binomial":
            extra.pop("dispersion_init", None)
    elif likelihood is not None:
        raise ValueError(f"likelihood applies to kind='counts' only; got kind={kind!r}")
    res = fits[kind](Phi, target, method=solver, prior=prior, max_iter=max_iter, tol=tol, **extra)
    if kind == "classification":
        kind = "binary" if len(res.classes) == 2 else "softmax"  # (binary: mean is (M,))
    elif kind == "counts":
        kind = res.likelihood
    beta = getattr(res, "beta", None)
    r = getattr(res, "dispersion", None)
    with np.errstate(divide="ignore"):  # alpha = 0 (a slab's weight): log alpha = -inf
        log_alpha = np.log(np.asarray(res.alpha, dtype=float))
    post = WeightPosterior(
        kind=kind,
        basis_names=tuple(str(basis_names[i]) for i in np.asarray(res.active, dtype=np.intp)),
        log_alpha=log_alpha,
        log_beta=None if beta is None else float(np.log(beta)),
        mean=np.asarray(res.mean, dtype=float),
        cov=np.asarray(res.cov, dtype=float),
        log_dispersion=None if r is None else float(np.log(r)),
    )
    info = FitInfo(
        log_evidence=float(res.log_evidence),
        n_iter=max(int(res.n_iter), 1),
        converged=bool(res.converged),
        library="rvm_pymc.reference",
        attrs={"noise_at_bound": True} if getattr(res, "noise_at_bound", False) else {},
    )
    return post, info


def _warm_start(start: WeightPosterior | None, basis_names, kind: str) -> dict:
    """The solver's keywords that start it from ``start`` (none without a common basis)."""
    if start is None:
        return {}
    where = {str(n): i for i, n in enumerate(basis_names)}
    alpha = np.full(len(where), np.inf)
    for name, log_a in zip(start.basis_names, np.asarray(start.log_alpha), strict=True):
        if name in where:
            alpha[where[name]] = np.exp(log_a)
    if not np.any(np.isfinite(alpha)):
        return {}
    out: dict = {"alpha_init": alpha}
    if kind == "regression" and start.log_beta is not None:
        out.update(beta_init=float(np.exp(start.log_beta)), noise_update_start=0)
    if kind == "counts" and start.log_dispersion is not None:
        out["dispersion_init"] = float(np.exp(start.log_dispersion))
    return out
