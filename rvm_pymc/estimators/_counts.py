"""RVP: relevance vector regression for counts, Poisson or negative binomial
(see :mod:`rvm_pymc.estimators`)."""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.base import RegressorMixin
from sklearn.utils.validation import validate_data

from rvm_pymc._core.counts import (
    CountsMixture,
    check_counts,
    gaussian_rates,
    mixture_logpmf,
    mixture_quantiles,
)
from rvm_pymc._core.validation import check_numeric
from rvm_pymc.estimators._base import _BaseRVM, init_with
from rvm_pymc.estimators._params import COUNTS_CONSTRAINTS

__all__ = ["RVP"]


class RVP(RegressorMixin, _BaseRVM):
    """Relevance vector regression for counts (Poisson or negative binomial, log link).

    Model: ``y ~ Poisson(exp(phi(x)^T w))``, or with
    ``likelihood="negative_binomial"`` the NB2 of mean ``mu = exp(phi(x)^T w)``
    and variance ``mu + mu^2 / r`` (dispersion ``r > 0``; the Poisson is its
    limit ``r -> inf``), ``w_m ~ N(0, 1/alpha_m)``, the precisions fitted by
    maximum (Laplace) evidence, which prunes most weights, as for :class:`RVC`.
    It follows the conventions of scikit-learn's :class:`~sklearn.linear_model.PoissonRegressor`:
    :meth:`predict` returns the mean count, :meth:`score` is D^2, the fraction
    of Poisson deviance explained (``sklearn.metrics.d2_tweedie_score`` with
    ``power=1``), and the targets must be non-negative (not necessarily
    integers).

    The name: RVR and RVC are Relevance Vector Regression and Classification;
    RVP is the Relevance Vector machine for Poisson counts (the P of
    ``PoissonRegressor``; SparseBayes calls the same likelihood "Poisson").

    Parameters
    ----------
    likelihood : {"poisson", "negative_binomial"}, default "poisson"
        The distribution of a count given its mean.  ``"negative_binomial"``
        (NB2) adds the dispersion ``r`` for overdispersed counts (variance
        above the mean).  The reference solver fits ``r`` by maximising the
        Laplace evidence (alternating with the precisions; ``r`` within
        ``rvm_pymc.reference.counts.DISPERSION_BOUNDS``, an ``r`` at the
        upper bound is the Poisson fit); NUTS samples ``log r`` jointly with
        the weights and precisions under the prior ``1/sqrt(r) ~
        HalfNormal(DISPERSION_PRIOR_SCALE)`` (:mod:`rvm_pymc.priors`), which
        is centred on the Poisson and shrinks towards it.  ``method="map"``
        takes the Poisson only.
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
    dispersion_ : float or None
        The negative binomial's ``r``: the type-II estimate (reference), the
        posterior median (nuts); None for the Poisson.
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

    Overdispersed counts:

    >>> mu = np.exp(1 + np.sin(2 * X[:, 0]))
    >>> y_nb = rng.negative_binomial(2.0, 2.0 / (2.0 + mu))
    >>> nb = RVP(likelihood="negative_binomial", random_state=0).fit(X, y_nb)
    >>> bool(0.5 < nb.dispersion_ < 10)
    True
    """

    _kind = "counts"
    _parameter_constraints: dict = COUNTS_CONSTRAINTS

    __init__ = init_with("likelihood", "poisson", first=True)

    def _kind_of_fit(self) -> str:
        return self.likelihood

    def _reference_options(self) -> dict[str, Any]:
        return {"likelihood": self.likelihood}

    def _set_result(self, post) -> None:
        super()._set_result(post)
        self.dispersion_ = None
        if post.log_dispersion is not None:
            self.dispersion_ = float(np.exp(np.median(post.log_dispersion)))

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

    def predictive_mixture(self, X) -> CountsMixture:
        """The posterior predictive at ``X`` as a mixture of Poissons (or of NB2s).

        Returns a :class:`~rvm_pymc._core.counts.CountsMixture`: rates
        ``(n_samples, S)`` and weights ``(S,)`` summing to one, Gauss-Hermite
        nodes of the Gaussian (Laplace) posterior of the log mean for
        reference/map, the posterior draws with equal weights for nuts; and
        ``dispersion``, None for the Poisson, else ``r`` (a float for a
        type-II fit, its draw ``(S,)`` for each component for nuts).
        :meth:`predict_interval`, :meth:`log_predictive_density` and
        :func:`rvm_pymc.compare` read it.
        """
        lat = self._latent(X)
        ld = self.posterior_.log_dispersion
        r = None if ld is None else np.exp(np.asarray(ld, dtype=float).reshape(-1))
        if isinstance(lat, tuple):
            return CountsMixture(*gaussian_rates(*lat), None if r is None else float(r[0]))
        return CountsMixture(np.exp(lat), np.full(lat.shape[1], 1.0 / lat.shape[1]), r)

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
        posterior predictive distribution (a Poisson or NB2 mixed over the
        posterior of the mean; by Gauss-Hermite quadrature for reference/map).

        Returns
        -------
        (lower, upper) : ndarrays of shape (n_samples,)
        """
        if not 0.0 < float(level) < 1.0:
            raise ValueError(f"level must be in (0, 1); got {level!r}")
        mix = self.predictive_mixture(X)
        lo = mixture_quantiles(0.5 * (1.0 - level), *mix)
        return lo, mixture_quantiles(0.5 * (1.0 + level), *mix)

    def log_predictive_density(self, X, y) -> np.ndarray:
        """Pointwise log posterior predictive probability of the counts ``y`` at ``X``."""
        return mixture_logpmf(check_counts(y, fitting=False), *self.predictive_mixture(X))

    def score(self, X, y, sample_weight=None) -> float:
        """D^2: the fraction of Poisson deviance explained (1 is perfect, 0 a constant).

        The same measure of the mean for either likelihood.

        ``sklearn.metrics.d2_tweedie_score(y, predict(X), power=1)``, as
        :meth:`sklearn.linear_model.PoissonRegressor.score`.
        """
        from sklearn.metrics import d2_tweedie_score

        y = check_counts(y, fitting=False)
        return float(d2_tweedie_score(y, self.predict(X), sample_weight=sample_weight, power=1))
