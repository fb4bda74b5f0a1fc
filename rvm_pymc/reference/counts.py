"""Closed-form RVM for counts: Poisson likelihood with the log link, Laplace evidence.

``t ~ Poisson(exp(Phi w))``: the fit of the classifier
(:mod:`rvm_pymc.reference._laplace_fit`) with ``B = diag(lambda)``, as in
SparseBayes (Tipping & Faul 2003).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from rvm_pymc._core.counts import (
    check_counts,
    gaussian_rates,
    mixture_logpmf,
    mixture_quantiles,
)
from rvm_pymc._core.laplace import LaplacePosterior
from rvm_pymc._core.validation import as_2d_float, check_consistent_length
from rvm_pymc.priors import HyperPrior
from rvm_pymc.reference._laplace import find_mode
from rvm_pymc.reference._laplace_fit import laplace_fit
from rvm_pymc.reference._options import check_fixed_alpha
from rvm_pymc.reference._result import SparseFitMixin

__all__ = ["CountsResult", "fit_counts", "poisson_laplace_posterior"]


@dataclass
class CountsResult(SparseFitMixin):
    """Outcome of a reference Poisson RVM fit (Laplace approximation).

    Attributes
    ----------
    method : str
        ``"fast"``, ``"mackay"`` or ``"em"``.
    prior : HyperPrior
        Only ``a`` and ``b`` (on ``alpha``) enter, and a slab ``s``: the
        weights' prior precisions are then ``alpha + 1/s^2``.
    n_basis : int
        Number of columns ``M`` of the design matrix.
    active : ndarray of int, shape (M_active,)
        Indices of the relevant columns, increasing.
    alpha : ndarray of shape (M_active,)
        ARD precisions of the active columns.
    mean, cov : ndarray
        Posterior mode (M_active,) and Laplace covariance (M_active, M_active)
        of the active weights of the log rate.
    log_likelihood : float
        ``log p(t | w*)`` at the mode (with the ``-log t!`` terms).
    log_evidence : float
        Laplace approximation to ``log p(t | alpha)`` plus ``sum(a log alpha - b alpha)``.
    n_iter : int
    converged : bool
    trace : dict of ndarray
        As :class:`~rvm_pymc.reference.ClassificationResult`.
    """

    method: str
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

    def latent(self, Phi_new) -> tuple[np.ndarray, np.ndarray]:
        """Mean and variance of the log rate ``f = phi^T w`` under the Laplace posterior."""
        Pa = self._active_columns(Phi_new)
        var = np.maximum(np.einsum("ij,jk,ik->i", Pa, self.cov, Pa), 0.0)
        return Pa @ self.mean, var

    def predict(self, Phi_new) -> np.ndarray:
        """Predictive mean count ``E[exp(f)] = exp(mu + s^2 / 2)`` (the lognormal mean)."""
        mu, var = self.latent(Phi_new)
        return np.exp(mu + 0.5 * var)

    def predictive(self, Phi_new) -> tuple[np.ndarray, np.ndarray]:
        """The predictive mixture: Gauss-Hermite rates ``(n, S)`` and weights ``(S,)``."""
        return gaussian_rates(*self.latent(Phi_new))

    def log_predictive_density(self, Phi_new, y) -> np.ndarray:
        """``log p(y | data)`` pointwise: the Poisson-lognormal, by quadrature."""
        return mixture_logpmf(check_counts(y, fitting=False), *self.predictive(Phi_new))

    def predict_interval(self, Phi_new, level: float = 0.9) -> tuple[np.ndarray, np.ndarray]:
        """Central predictive interval of the counts: quantiles ``(1 -+ level) / 2``."""
        rates, weights = self.predictive(Phi_new)
        lo = mixture_quantiles(0.5 * (1.0 - level), rates, weights)
        return lo, mixture_quantiles(0.5 * (1.0 + level), rates, weights)


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
    Phi = as_2d_float(Phi, "Phi")
    y = check_counts(y)
    check_consistent_length(Phi=Phi, y=y)
    alpha = check_fixed_alpha(alpha, Phi.shape[1])
    return find_mode(Phi, y[:, None], alpha, likelihood="poisson")


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
) -> CountsResult:
    """Fit a Poisson RVM (log link) by maximising the Laplace-approximated evidence.

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

    Returns
    -------
    CountsResult

    Raises
    ------
    ValueError
        For non-finite or mis-shaped ``Phi``, mismatched lengths, negative,
        missing or all-zero counts, an unknown method, or ``method="fast"``
        with ``a`` or ``b`` nonzero.

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
    fit = laplace_fit(
        Phi,
        y[:, None],
        method=method,
        prior=prior,
        alpha_init=alpha_init,
        max_iter=max_iter,
        tol=tol,
        prune_threshold=prune_threshold,
        align_tol=align_tol,
        deletion_tries=deletion_tries,
        likelihood="poisson",
        task="explain the counts",
        what="RVM Poisson regression",
    )
    return CountsResult(
        method=method,
        prior=fit.prior,
        n_basis=Phi.shape[1],
        active=fit.active,
        alpha=fit.alpha,
        mean=fit.post.mean[:, 0],
        cov=fit.post.cov,
        log_likelihood=fit.post.log_likelihood,
        log_evidence=fit.log_evidence,
        n_iter=fit.n_iter,
        converged=fit.converged,
        trace=fit.trace,
    )
