r"""Closed-form RVM for counts: Poisson or negative binomial (log link), Laplace evidence.

``t ~ Poisson(exp(Phi w))``: the classifier's fit
(:func:`~rvm_pymc.reference.classification.laplace_fit`) with ``B = diag(lambda)``, as in
SparseBayes.  ``t ~ NB2(exp(Phi w), r)`` (variance ``mu + mu^2 / r``): the same fit at a
fixed ``r``, and ``r`` by type-II maximum likelihood: coordinate ascent on the Laplace
evidence, alternating the precisions and a bounded Brent search in ``log r`` within
:data:`DISPERSION_BOUNDS`, from the Poisson fit, until ``log r`` moves by less than
:data:`DISPERSION_RTOL`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import minimize_scalar

from rvm_pymc._core.ard import slab_precision
from rvm_pymc._core.counts import (
    CountsMixture,
    check_counts,
    gaussian_rates,
    mixture_logpmf,
    mixture_quantiles,
)
from rvm_pymc._core.laplace import LaplacePosterior
from rvm_pymc._core.validation import as_2d_float, check_consistent_length, check_positive
from rvm_pymc.exceptions import ConvergenceWarning, warn_user
from rvm_pymc.priors import HyperPrior
from rvm_pymc.reference._laplace import COUNT_LIKELIHOODS, find_mode
from rvm_pymc.reference._options import check_fixed_alpha
from rvm_pymc.reference._result import SparseFitMixin
from rvm_pymc.reference.classification import LaplaceFit, laplace_fit

__all__ = [
    "DISPERSION_BOUNDS",
    "CountsResult",
    "fit_counts",
    "negative_binomial_laplace_posterior",
    "poisson_laplace_posterior",
]

DISPERSION_BOUNDS = (1e-3, 1e6)
"""The range of the NB2 dispersion ``r`` searched by :func:`fit_counts`; at the upper bound
the variance exceeds the Poisson's by under 0.1% for every mean below 1000."""

DISPERSION_RTOL = 1e-4
"""Coordinate ascent on ``(alpha, log r)`` stops when ``log r`` moves by less than this."""

MAX_DISPERSION_STEPS = 50
"""The most alternations of the precisions and ``r``."""


@dataclass
class CountsResult(SparseFitMixin):
    """Outcome of a reference Poisson or negative binomial RVM fit (Laplace approximation).

    Attributes
    ----------
    method, prior, n_basis, active, converged
        As in :class:`~rvm_pymc.reference.ClassificationResult`.
    likelihood : str
        ``"poisson"`` or ``"negative_binomial"``.
    alpha : ndarray of shape (M_active,)
        ARD precisions of the active columns.
    mean, cov : ndarray
        Posterior mode (M_active,) and Laplace covariance (M_active, M_active)
        of the active weights of the log rate.
    log_likelihood : float
        ``log p(t | w*)`` at the mode (with the ``-log t!`` terms).
    log_evidence : float
        Laplace approximation to ``log p(t | alpha)`` (``log p(t | alpha, r)`` at the
        fitted ``r`` for the negative binomial) plus ``sum(a log alpha - b alpha)``.
    n_iter : int
        Iterations of the precisions (summed over the alternations with ``r``).
    trace : dict of ndarray
        As :class:`~rvm_pymc.reference.ClassificationResult` (of the last fit of the
        precisions); for the negative binomial also ``dispersion``, ``r`` after each
        alternation.
    dispersion : float or None
        The NB2 dispersion ``r`` (None for Poisson).
    """

    method: str
    likelihood: str
    prior: HyperPrior
    n_basis: int
    active: np.ndarray
    alpha: np.ndarray
    mean: np.ndarray
    cov: np.ndarray
    log_likelihood: float
    log_evidence: float
    n_iter: int
    converged: bool
    trace: dict[str, np.ndarray] = field(repr=False)
    dispersion: float | None = None

    def latent(self, Phi_new) -> tuple[np.ndarray, np.ndarray]:
        """Mean and variance of the log rate ``f = phi^T w`` under the Laplace posterior."""
        Pa = self._active_columns(Phi_new)
        var = np.maximum(np.einsum("ij,jk,ik->i", Pa, self.cov, Pa), 0.0)
        return Pa @ self.mean, var

    def predict(self, Phi_new) -> np.ndarray:
        """Predictive mean count ``E[exp(f)] = exp(mu + s^2 / 2)`` (the lognormal mean)."""
        mu, var = self.latent(Phi_new)
        return np.exp(mu + 0.5 * var)

    def predictive(self, Phi_new) -> CountsMixture:
        """The predictive mixture: Gauss-Hermite rates ``(n, S)``, weights ``(S,)``, ``r``."""
        return CountsMixture(*gaussian_rates(*self.latent(Phi_new)), self.dispersion)

    def log_predictive_density(self, Phi_new, y) -> np.ndarray:
        """``log p(y | data)`` pointwise: the Poisson- (NB-) lognormal, by quadrature."""
        return mixture_logpmf(check_counts(y, fitting=False), *self.predictive(Phi_new))

    def predict_interval(self, Phi_new, level: float = 0.9) -> tuple[np.ndarray, np.ndarray]:
        """Central predictive interval of the counts: quantiles ``(1 -+ level) / 2``."""
        mix = self.predictive(Phi_new)
        lo = mixture_quantiles(0.5 * (1.0 - level), *mix)
        return lo, mixture_quantiles(0.5 * (1.0 + level), *mix)


def poisson_laplace_posterior(Phi, y, alpha) -> LaplacePosterior:
    """Posterior mode, Laplace covariance and Laplace log evidence of a Poisson RVM.

    Parameters
    ----------
    Phi : array_like of shape (N, M)
        Design matrix restricted to the bases with finite ``alpha``.
    y : array_like of shape (N,)
        Counts (>= 0).
    alpha : array_like of shape (M,)
        Precisions, finite and > 0.

    Returns
    -------
    LaplacePosterior
        ``mean`` of shape (M, 1); ``log_evidence`` approximates
        ``log p(y | alpha)`` (with the ``-log y!`` terms).
    """
    return _posterior_at(Phi, y, alpha, "poisson")


def negative_binomial_laplace_posterior(Phi, y, alpha, dispersion) -> LaplacePosterior:
    """As :func:`poisson_laplace_posterior` for ``y ~ NB2(exp(Phi w), dispersion)``.

    ``log_evidence`` approximates ``log p(y | alpha, r)``.
    """
    return _posterior_at(Phi, y, alpha, "negative_binomial", dispersion)


def _posterior_at(Phi, y, alpha, likelihood: str, dispersion=None) -> LaplacePosterior:
    """The checked arguments' :func:`find_mode` (``dispersion``: of the negative binomial)."""
    Phi = as_2d_float(Phi, "Phi")
    y = check_counts(y)
    check_consistent_length(Phi=Phi, y=y)
    alpha = check_fixed_alpha(alpha, Phi.shape[1])
    if likelihood == "negative_binomial":
        dispersion = check_positive(dispersion, "dispersion")
    return find_mode(Phi, y[:, None], alpha, likelihood=likelihood, dispersion=dispersion)


def fit_counts(
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
    likelihood: str = "poisson",
    dispersion_init: float | None = None,
) -> CountsResult:
    """Fit a Poisson or negative binomial RVM (log link) by maximising the Laplace evidence.

    Parameters
    ----------
    Phi : array_like of shape (N, M)
        Design matrix (for a kernel RVM a kernel column per training point
        plus a bias column: without a bias the rate is ``exp(0) = 1`` far
        from the data).
    y : array_like of shape (N,)
        Counts: finite, >= 0, not all zero (non-integers are accepted, as by
        scikit-learn's ``PoissonRegressor``).
    method, prior, alpha_init, max_iter, tol, prune_threshold, align_tol, deletion_tries
        As for :func:`~rvm_pymc.reference.fit_classification`; ``"fast"``
        starts from the column best aligned with ``log(y + 1/2)``.
    likelihood : {"poisson", "negative_binomial"}
        ``"negative_binomial"``: NB2 with mean ``exp(Phi w)`` and variance
        ``mu + mu^2 / r``, the dispersion ``r`` fitted too (module docstring;
        within ``DISPERSION_BOUNDS``, no prior on ``r``).
    dispersion_init : float, optional
        The negative binomial's starting ``r`` (default: from the Poisson fit).

    Returns
    -------
    CountsResult

    Raises
    ------
    ValueError
        For non-finite or mis-shaped ``Phi``, mismatched lengths, negative,
        missing or all-zero counts, an unknown method or likelihood, or
        ``method="fast"`` with ``a`` or ``b`` nonzero.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> x = np.linspace(-2, 2, 60)
    >>> y = rng.poisson(np.exp(1 + np.sin(2 * x)))
    >>> Phi = np.column_stack([np.ones_like(x), np.exp(-(x[:, None] - x) ** 2)])
    >>> res = fit_counts(Phi, y)
    >>> res.converged, res.n_relevance < 10
    (True, True)
    """
    Phi = as_2d_float(Phi, "Phi")
    y = check_counts(y)
    check_consistent_length(Phi=Phi, y=y)
    if likelihood not in COUNT_LIKELIHOODS:
        raise ValueError(f"likelihood must be one of {COUNT_LIKELIHOODS}; got {likelihood!r}")
    if dispersion_init is not None:
        dispersion_init = check_positive(dispersion_init, "dispersion_init")
    options = dict(
        method=method,
        prior=prior,
        max_iter=max_iter,
        tol=tol,
        prune_threshold=prune_threshold,
        align_tol=align_tol,
        deletion_tries=deletion_tries,
    )
    T = y[:, None]
    if likelihood == "poisson":
        fit = _fit_at(Phi, T, alpha_init, None, options)
        return _result(method, likelihood, Phi, fit, fit.n_iter, fit.converged, None)
    # the negative binomial: coordinate ascent on the Laplace evidence in the precisions and log r
    warm = method == "fast"  # MacKay and EM with a warm start never add a basis
    n_iter = 0
    r, path, converged = dispersion_init, [], False
    if r is None:
        fit = _fit_at(Phi, T, alpha_init, None, options, warn=False)
        n_iter += fit.n_iter
        r = best_dispersion(Phi, T, fit)
        alpha_init = _full_alpha(fit, Phi.shape[1]) if warm else alpha_init
    for _ in range(MAX_DISPERSION_STEPS):
        fit = _fit_at(Phi, T, alpha_init, r, options, warn=False)
        n_iter += fit.n_iter
        r_new = best_dispersion(Phi, T, fit, start=r)
        path.append(r)
        if abs(math.log(r_new) - math.log(r)) < DISPERSION_RTOL:
            converged = fit.converged
            break
        r = r_new
        if warm:
            alpha_init = _full_alpha(fit, Phi.shape[1])
    r = path[-1]  # the dispersion of the last fit (not the update that followed it)
    if not converged:
        warn_user(
            f"RVM negative binomial regression (method={method!r}) did not converge: the "
            f"precisions{'' if fit.converged else ' (last fit)'} or the dispersion (after "
            f"{len(path)} alternations, last r = {r:.6g}); increase max_iter or loosen tol",
            ConvergenceWarning,
        )
    fit = fit._replace(trace={**fit.trace, "dispersion": np.asarray(path)})
    return _result(method, "negative_binomial", Phi, fit, n_iter, converged, r)


def _fit_at(Phi, T, alpha_init, dispersion, options, warn=True) -> LaplaceFit:
    """The Laplace-evidence fit of the precisions at a fixed dispersion (None: Poisson)."""
    likelihood = "poisson" if dispersion is None else "negative_binomial"
    what = f"RVM {'Poisson' if dispersion is None else 'negative binomial'} regression"
    return laplace_fit(
        Phi,
        T,
        alpha_init=alpha_init,
        likelihood=likelihood,
        dispersion=dispersion,
        task="explain the counts",
        what=what,
        warn=warn,
        **options,
    )


def _full_alpha(fit: LaplaceFit, m: int) -> np.ndarray:
    """The precisions of every column (inf where pruned): a warm start."""
    alpha = np.full(m, np.inf)
    alpha[fit.active] = fit.alpha
    return alpha


def best_dispersion(Phi, T, fit: LaplaceFit, start: float | None = None) -> float:
    """The ``r`` in :data:`DISPERSION_BOUNDS` maximising the Laplace evidence at ``fit``'s
    precisions (Brent in ``log r``); ``start`` is also tried."""
    Pa = Phi[:, fit.active]
    prec = fit.alpha + slab_precision(fit.prior, np.ones(fit.active.size))
    W0 = fit.post.mean

    def neg_evidence(log_r: float) -> float:
        try:
            post = find_mode(
                Pa, T, prec, W0, likelihood="negative_binomial", dispersion=math.exp(log_r)
            )
        except np.linalg.LinAlgError:
            return np.inf
        return -post.log_evidence

    lo, hi = (math.log(b) for b in DISPERSION_BOUNDS)
    res = minimize_scalar(neg_evidence, bounds=(lo, hi), method="bounded",
                          options={"xatol": 0.1 * DISPERSION_RTOL})  # fmt: skip
    best, value = float(res.x), float(res.fun)
    for cand in [hi] + ([] if start is None else [math.log(start)]):
        v = neg_evidence(cand)  # Brent never evaluates the ends of the interval
        if v < value:
            best, value = cand, v
    return math.exp(best)


def _result(method, likelihood, Phi, fit: LaplaceFit, n_iter, converged, r) -> CountsResult:
    return CountsResult(
        method=method,
        likelihood=likelihood,
        prior=fit.prior,
        n_basis=Phi.shape[1],
        active=fit.active,
        alpha=fit.alpha,
        mean=fit.post.mean[:, 0],
        cov=fit.post.cov,
        log_likelihood=fit.post.log_likelihood,
        log_evidence=fit.log_evidence,
        n_iter=n_iter,
        converged=converged,
        trace=fit.trace,
        dispersion=r,
    )
