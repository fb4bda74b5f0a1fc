"""RVP: relevance vector Poisson regression, for counts (see :mod:`rvm_pymc.estimators`)."""

from __future__ import annotations

import numpy as np
from sklearn.base import RegressorMixin
from sklearn.utils.validation import validate_data

from rvm_pymc._core.counts import (
    check_counts,
    gaussian_rates,
    mixture_logpmf,
    mixture_quantiles,
)
from rvm_pymc._core.validation import check_numeric
from rvm_pymc.estimators._base import _BaseRVM

__all__ = ["RVP"]


class RVP(RegressorMixin, _BaseRVM):
    """Relevance vector Poisson regression: counts with the log link, scikit-learn style.

    Model: ``y ~ Poisson(exp(phi(x)^T w))``, ``w_m ~ N(0, 1/alpha_m)``, the
    precisions fitted by maximum (Laplace) evidence, which prunes most
    weights, as for :class:`RVC`.  It follows the conventions of
    scikit-learn's :class:`~sklearn.linear_model.PoissonRegressor`:
    :meth:`predict` returns the mean count, :meth:`score` is D^2, the fraction
    of Poisson deviance explained (``sklearn.metrics.d2_tweedie_score`` with
    ``power=1``), and the targets must be non-negative (not necessarily
    integers).

    The name: RVR and RVC are Relevance Vector Regression and Classification;
    RVP is the Relevance Vector machine for Poisson counts (the P of
    ``PoissonRegressor``; SparseBayes calls the same likelihood "Poisson").

    Parameters
    ----------
    kernel, gamma, gamma_grid, degree, coef0, bias, method, solver, prior, \
max_iter, tol, draws, tune, chains, sampler_kwargs, init, n_jobs, random_state
        As for :class:`RVR`; the prior uses only ``a, b`` (there is no noise
        precision) and ``slab``.  The default prior of ``method="nuts"`` is
        ``"weakly_informative_slab"``, as for :class:`RVC`: Gamma(1, 0.01) on
        every ``alpha`` and a slab of scale 5 on the weights (on Linnerud's
        chin-ups 2 x 2000 draws without it had 20 divergent transitions, with
        it none; ``docs/pymc.md``).  The counts are not scaled (their log rate
        has no units); the basis columns are, as for every estimator.

    Attributes
    ----------
    coef_ : ndarray of shape (n_active,)
        Posterior mode (mean for nuts) of the active weights of the log rate.
    sigma_ : ndarray of shape (n_active, n_active)
        Their posterior covariance (Laplace for reference/map).
    alpha_, intercept_, bias_active_, active_, active_names_, relevance_indices_, \
relevance_vectors_, gamma_, kernel_, n_iter_, converged_, log_evidence_, \
evidence_path_, idata_, posterior_, model_, basis_scale_, n_features_in_, feature_names_in_
        As for :class:`RVR`.

    Examples
    --------
    >>> import numpy as np
    >>> from rvm_pymc.estimators import RVP
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-2, 2, size=(80, 1))
    >>> y = rng.poisson(np.exp(1 + np.sin(2 * X[:, 0])))
    >>> est = RVP(random_state=0).fit(X, y)
    >>> bool(est.score(X, y) > 0.5), est.predict(X[:3]).shape
    (True, (3,))
    """

    _kind = "counts"

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.positive_only = True
        return tags

    def fit(self, X, y):
        """Fit the model.

        Parameters
        ----------
        X : array_like of shape (n_samples, n_features)
        y : array_like of shape (n_samples,)
            Counts: finite, >= 0, not all zero.

        Returns
        -------
        self

        Raises
        ------
        ValueError
            For invalid data (naming ``y`` for negative, missing or all-zero
            counts) or parameters; a fit that fails leaves the estimator as
            it was before.
        """
        with self._unchanged_on_failure():
            check_numeric(X, "X")
            check_counts(y)  # before scikit-learn's checks: the message names y and counts
            X, y = validate_data(
                self, X, y, dtype=np.float64, y_numeric=True, ensure_min_samples=2
            )
            self._fit(X, check_counts(y))
        return self

    def _latent(self, X) -> tuple[np.ndarray, np.ndarray] | np.ndarray:
        """Mean and variance of the log rate (type-II), or its draws ``(n, S)`` (nuts)."""
        Phi = self._active_design(X)
        draws = self.posterior_.draws
        if draws is None:
            var = np.maximum(np.einsum("ij,jk,ik->i", Phi, self.sigma_, Phi), 0.0)
            return Phi @ self.coef_, var
        return Phi @ draws.reshape(-1, Phi.shape[1]).T

    def predictive_mixture(self, X) -> tuple[np.ndarray, np.ndarray]:
        """The posterior predictive at ``X`` as a mixture of Poissons.

        Returns rates ``(n_samples, S)`` and weights ``(S,)`` summing to one:
        Gauss-Hermite nodes of the Gaussian (Laplace) posterior of the log
        rate for reference/map, the posterior draws with equal weights for
        nuts.  :meth:`predict_interval`, :meth:`log_predictive_density` and
        :func:`rvm_pymc.compare` read it.
        """
        lat = self._latent(X)
        if isinstance(lat, tuple):
            return gaussian_rates(*lat)
        return np.exp(lat), np.full(lat.shape[1], 1.0 / lat.shape[1])

    def predict(self, X) -> np.ndarray:
        """Predictive mean count at ``X``.

        ``E[exp(f)] = exp(mu + s^2 / 2)`` under the Gaussian (Laplace)
        posterior of the log rate ``f`` (reference, map); the average of
        ``exp(f)`` over the draws (nuts).

        Parameters
        ----------
        X : array_like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        lat = self._latent(X)
        if isinstance(lat, tuple):
            return np.exp(lat[0] + 0.5 * lat[1])
        return np.exp(lat).mean(axis=1)

    def predict_interval(self, X, level: float = 0.9) -> tuple[np.ndarray, np.ndarray]:
        """Central predictive interval of the counts at ``X``.

        The ``(1 - level) / 2`` and ``(1 + level) / 2`` quantiles of the
        posterior predictive distribution (a Poisson mixed over the posterior
        of the rate; by Gauss-Hermite quadrature for reference/map).

        Returns
        -------
        (lower, upper) : ndarrays of shape (n_samples,)
        """
        if not 0.0 < float(level) < 1.0:
            raise ValueError(f"level must be in (0, 1); got {level!r}")
        rates, weights = self.predictive_mixture(X)
        lo = mixture_quantiles(0.5 * (1.0 - level), rates, weights)
        return lo, mixture_quantiles(0.5 * (1.0 + level), rates, weights)

    def log_predictive_density(self, X, y) -> np.ndarray:
        """Pointwise log posterior predictive probability of the counts ``y`` at ``X``."""
        rates, weights = self.predictive_mixture(X)
        return mixture_logpmf(check_counts(y, fitting=False), rates, weights)

    def score(self, X, y, sample_weight=None) -> float:
        """D^2: the fraction of Poisson deviance explained (1 is perfect, 0 a constant).

        ``sklearn.metrics.d2_tweedie_score(y, predict(X), power=1)``, as
        :meth:`sklearn.linear_model.PoissonRegressor.score`.
        """
        from sklearn.metrics import d2_tweedie_score

        y = check_counts(y, fitting=False)
        return float(d2_tweedie_score(y, self.predict(X), sample_weight=sample_weight, power=1))
