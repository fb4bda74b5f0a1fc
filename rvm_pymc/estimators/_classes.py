"""RVR, RVC and RVP, the estimators' public classes, and RVR's RVM* predictive.

RVM* (:func:`rvm_star_predict`, mathematics in :mod:`rvm_pymc._core.augment`) evaluates
``k(x, x*)`` at every training input (``X_train_``), block by block of test inputs so that
memory stays ``O(n_test)``.
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit, softmax
from sklearn.base import ClassifierMixin, RegressorMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from rvm_pymc._core.augment import augmented_predictive, rvm_star_prior_var, signal_variance
from rvm_pymc._core.counts import (
    CountsMixture,
    check_counts,
    gaussian_rates,
    mixture_logpmf,
    mixture_quantiles,
)
from rvm_pymc._core.validation import check_numeric, plain_value
from rvm_pymc.estimators._base import METHODS, SOLVERS, _BaseRVM, init_with
from rvm_pymc.estimators._params import (
    COUNTS_CONSTRAINTS,
    REGRESSOR_CONSTRAINTS,
)
from rvm_pymc.estimators._width_selection import integrates_width, latent_at

__all__ = [
    "BLOCK_ENTRIES",
    "METHODS",
    "RVC",
    "RVP",
    "RVR",
    "SOLVERS",
]


class RVR(RegressorMixin, _BaseRVM):
    """Relevance vector regression (Tipping 2001), scikit-learn style.

    Model: ``t = Phi(x) w + noise``, ``w_m ~ N(0, 1/alpha_m)``, noise precision
    ``beta``; the precisions are fitted by maximum evidence, which prunes most
    weights (``alpha_m -> inf``).  The model is fitted to the centred targets
    (``y_offset_`` is their mean), on the scale of their sd, and mapped back;
    with ``bias=False`` to the targets as they are, on the scale of their root
    mean square (``y_offset_`` is 0).

    Parameters
    ----------
    kernel : str, Kernel, callable or Basis, default "rbf"
        A kernel name (``"rbf"``, ``"laplacian"``, ``"cauchy"``, ``"poly"``,
        ``"linear"``, ``"linear_spline"``), ``"precomputed"`` (``X`` is the
        kernel matrix between samples and training points), a
        :class:`~rvm_pymc.kernels.Kernel`, a callable ``k(X, Y)``, or a
        :class:`~rvm_pymc.basis.Basis` (any design matrix, e.g.
        :func:`~rvm_pymc.basis.polynomial_basis`; ``bias`` is then the basis's).
    gamma : float, "auto", "cv", "scale", "evidence" or "integrate", default "auto"
        Inverse squared width of rbf/cauchy (``exp(-gamma |x-y|^2)``), inverse
        width of laplacian, scale of poly; ignored by other kernels.
        ``"scale"`` is ``1 / (n_features * X.var())`` as in scikit-learn's SVR.
        ``"cv"`` picks the width of ``gamma_grid`` (refined by half steps) of best
        5-fold cross-validated log predictive density of the reference fit
        (``cv_path_``; folds shuffled by an integer ``random_state``, 0 for None,
        stratified for a classifier).
        ``"evidence"`` picks the width of largest evidence, searched over
        ``gamma_grid`` and refined on a continuous ``log gamma``
        (``evidence_path_``); it may prefer a kernel that interpolates the targets
        (an ``InterpolationWarning`` says so).  Map/nuts are fitted at the width
        chosen under the prior they fit.
        ``"integrate"`` (``method="nuts"``, ``kernel="rbf"``) samples the width with
        the other unknowns: predictions average over the draws, each at its own
        width, ``gamma_`` is the posterior median and ``gamma_draws_`` every
        draw's; ``design_matrix`` raises and ``model_`` is None.  ``coef_``,
        ``sigma_`` and ``alpha_`` then summarise columns whose width differs from
        draw to draw: read the draws and the predictions, not them.
        ``"auto"`` is ``"cv"`` from 4 up to 2000 training points (with at least two
        rows of every class) and ``"scale"`` otherwise (docs, "Defaults").
        The user guide's "Choosing the kernel width" has the details.
        The command line (``rvm-pymc fit`` and ``compare``) standardises the features
        to mean 0, sd 1 before the fit; an estimator uses ``X`` as given.
    gamma_grid : array_like, optional
        Widths that bracket ``gamma="cv"`` and ``gamma="evidence"``;
        default ``"scale"`` x ``logspace(-2, 2, 9)``.
    degree, coef0 : int, float, default 3, 1.0
        Degree and offset of the ``"poly"`` kernel.
    bias : bool, default True
        Add a bias column (with an ARD prior like every other) and, for
        :class:`RVR`, centre the targets.  ``False``: no constant term; the
        targets are scaled by their root mean square but not centred, so every
        method predicts 0 at a design row of zeros.  With a
        :class:`~rvm_pymc.basis.Basis` as ``kernel`` its own columns are used
        and ``bias`` says only whether the targets are centred.
    method : {"reference", "map", "nuts"}, default "reference"
        How to fit (see the module docstring).
    solver : {"fast", "mackay", "em"}, default "fast"
        Algorithm of the reference solver; ``"fast"`` needs ``a = b = 0``.
    prior : str, mapping or HyperPrior, optional
        Gamma hyperpriors and a ``slab`` (NUTS, ``solver="mackay"``/``"em"``;
        :mod:`rvm_pymc.priors`); default ``"evidence"`` (type-II maximum
        likelihood), or ``"weakly_informative"`` for ``method="nuts"``
        (``"weakly_informative_slab"`` for :class:`RVC` and :class:`RVP`).  A
        mapping is merged over that default.
    max_iter : int, optional
        Iteration cap of the reference solver (its default when None).
    tol : float, default 1e-6
        Convergence tolerance on ``|d log alpha|`` of the reference solver.
    draws : int, optional
        Posterior draws per chain kept in ``idata_`` (Gaussian draws for
        reference/map, antithetic across chain pairs; NUTS draws for nuts).
        None: 2000 (6000 for :class:`RVC` and ``gamma="integrate"``), for nuts
        at most: NUTS stops at the first checkpoint (500 draws a chain, then
        every 250) whose draws pass the ``converged_`` check
        (``sampler_kwargs={"until_converged": False}`` runs the whole length).
    tune : int, optional
        NUTS tuning steps per chain; None: 500 for RVR's collapsed sampler,
        1000 for the models with weights (``RVC``, ``RVP``,
        ``sampler_kwargs={"model": "joint"}``).
    chains : int, optional
        Chains; default 2 for every method.
    sampler_kwargs : dict, optional
        Extra keyword arguments for the PyMC fit (map/nuts), checked at ``fit``.
        ``initvals`` replaces the start of ``init`` and is on the scaled problem
        (``Phi / basis_scale_``, ``(y - y_offset_) / y_scale_``).  NUTS's
        ``target_accept`` defaults to 0.8 for the collapsed regression sampler
        and 0.95 for the models with weights; over the width, 0.95 for RVR's
        collapsed sampler and 0.99 for the classifiers'.
    init : {"auto", "reference", "default"}, default "auto"
        Where MAP and NUTS start: ``"reference"`` at the reference solution
        under the same prior, so that a comparison measures the approximation
        and not another optimum; ``"default"`` at the PyMC fit's own start;
        ``"auto"`` is ``"reference"``.  Ignored by ``method="reference"``.
    n_jobs : int, optional
        Parallel fits of the grid widths of ``gamma="evidence"`` through joblib
        (``-1``: all cores).  None means 1 unless a
        :func:`joblib.parallel_config` context says otherwise (see the "Parallel
        and distributed fits" section of the user guide).
    random_state : int, Generator or None
        Seeds the posterior draws (and NUTS).
    predictive : {"rvm", "rvm*"}, default "rvm"
        The predictive of :meth:`predict`: the model's own (``"rvm"``), whose
        variance falls to the noise away from the relevance vectors, or RVM*
        (Rasmussen & Quinonero-Candela 2005): the model augmented at each test
        input ``x*`` by a basis ``k(x, x*)`` with its weight integrated out
        (:mod:`rvm_pymc._core.augment`), whose variance far from the data tends
        to about ``var(y)``; the mean moves too.  Needs method ``"reference"``
        or ``"map"`` and a kernel (not ``"precomputed"`` or a Basis); ``fit``
        then keeps ``X_train_`` and ``y_train_``.

    Attributes
    ----------
    coef_ : ndarray of shape (n_active,)
        Posterior mean of the active weights, in the order of ``active_names_``
        (the bias first when it is active).
    sigma_ : ndarray of shape (n_active, n_active)
        Posterior covariance of the active weights.
    alpha_ : ndarray of shape (n_active,)
        Precisions of the active weights.
    beta_ : float
        Noise precision (posterior median for nuts).
    noise_var_ : float
        Noise variance of ``predict(return_std=True)``: ``1/beta_``, or the
        posterior mean of ``1/beta`` for nuts.
    y_offset_, y_scale_ : float
        Mean and sd of the training targets (0.0 and root mean square with
        ``bias=False``): the scaling of the fitted problem.
    basis_scale_ : ndarray of shape (n_basis,)
        Root mean square of every column of the training design matrix, by
        which the fits divide it.
    intercept_ : float
        The constant term of the predictive mean: the bias weight (0.0 when
        pruned or absent) plus ``y_offset_``, so that the plain RVM predictive's
        ``predict(X)`` is
        ``design_matrix(X)[:, k:] @ coef_[k:] + intercept_`` with
        ``k = int(bias_active_)`` (not with ``gamma="integrate"``, where
        ``design_matrix`` raises).  For :class:`RVC` and :class:`RVP` it is the
        bias weight of the latent logit or log rate (one per class for K > 2),
        not a term of ``predict``.
    bias_active_ : bool
        Whether the bias column is relevant.
    active_ : ndarray of int
        Relevant columns of the design matrix (0 is the bias): those not pruned
        by reference/map; all non-zero columns for nuts.
    active_names_ : list of str
        Their names: ``"bias"`` and ``"x<i>"`` for the kernel on training point i.
    relevance_indices_, relevance_vectors_ : ndarray
        The training points that are relevance vectors: their indices and
        inputs (no inputs for precomputed kernels and user bases).
    gamma_ : float or None
        Kernel width used (None for kernels without one).
    gamma_draws_ : ndarray of shape (n_chains, n_draws)
        Only with ``gamma="integrate"``: the width of every draw.
    kernel_ : Kernel or None
        The fitted kernel (None for ``"precomputed"`` and user bases, which
        keep the fitted ``basis_``).
    n_iter_ : int
        Iterations of the fit.
    converged_ : bool
        The reference solver or MAP optimiser met its tolerance; for NUTS, no
        divergent draw, rank-normalised R-hat (bulk and tail) at most 1.01 and
        bulk and tail ESS at least 400 for every sampled variable
        (``rhat_threshold`` and ``min_ess`` in ``sampler_kwargs``).  With
        ``draws=None`` this is also NUTS's stopping rule
        (:mod:`rvm_pymc.inference._stop`).
    log_evidence_ : float
        Log evidence (plus hyperprior terms) at the optimum, of the targets in
        their own units; NaN for nuts.
    cv_path_ : dict
        Only with ``gamma="cv"``: ``{"gamma", "cv_lpd", "cv_lpd_se",
        "relevance_fraction"}`` arrays by increasing width scored.
    interpolates_ : bool
        Whether the type-II fit keeps more than half of its training rows as
        relevance vectors (under a prior that prunes, ``a = b = 0``) or ended
        with the noise precision at its bound: its bands are then too narrow and
        ``fit`` warned (:class:`~rvm_pymc.exceptions.InterpolationWarning`).
        False for nuts.
    evidence_path_ : dict
        Only with ``gamma="evidence"``: ``{"gamma", "log_evidence", "converged",
        "noise_at_bound", "all_bases"}`` arrays, one entry per fit of the search
        in the order made.
    idata_ : xarray.DataTree
        The fit in the result schema of :mod:`rvm_pymc.results`, built on first
        access.  PSIS-LOO of a reference or map fit is not a valid estimate;
        compare fits by :func:`rvm_pymc.compare`'s ``elpd_kfold``.
    posterior_ : rvm_pymc.results.WeightPosterior
        The estimator's one posterior, in the units of the data.
    model_ : pymc.Model or None
        The fit's RVM as a PyMC model in the units of the data
        (:func:`rvm_pymc.models.data_unit_model`; map/nuts):
        ``pm.sample_posterior_predictive(est.idata_, model=est.model_)``
        replicates the data, ``pm.set_data({"Phi": est.design_matrix(X)})``
        predicts at new inputs.  None for reference, after unpickling and after
        :meth:`load`.
    X_train_, y_train_ : ndarray
        Only with ``predictive="rvm*"``: the training data.
    n_features_in_, feature_names_in_
        As in scikit-learn.

    References
    ----------
    Tipping (2001), JMLR 1:211-244; Tipping & Faul (2003), AISTATS;
    Rasmussen & Quinonero-Candela (2005), ICML (RVM*).

    Examples
    --------
    >>> import numpy as np
    >>> from rvm_pymc.estimators import RVR
    >>> rng = np.random.default_rng(0)
    >>> X = np.linspace(-10, 10, 100)[:, None]
    >>> y = np.sinc(X[:, 0] / np.pi) + 0.1 * rng.standard_normal(100)
    >>> rvr = RVR(gamma=0.1, random_state=0).fit(X, y)
    >>> rvr.n_relevance_ < 15
    True
    >>> mean, std = rvr.predict([[0.0]], return_std=True)
    >>> bool(abs(mean[0] - 1.0) < 0.1), bool(0.05 < std[0] < 0.2)
    (True, True)
    """

    _kind = "regression"
    _parameter_constraints: dict = REGRESSOR_CONSTRAINTS

    __init__ = init_with("predictive", "rvm")

    def _fit_data(self, X, y) -> tuple[np.ndarray, np.ndarray]:
        check_numeric(X, "X")
        try:
            check_numeric(y, "y")
        except ValueError as exc:
            if "numeric" not in str(exc):
                raise
            raise ValueError(f"{exc} (RVR fits numbers; for class labels use RVC)") from None
        X, y = validate_data(self, X, y, dtype=np.float64, y_numeric=True, ensure_min_samples=2)
        y = np.asarray(y, dtype=float)
        n_bad = int(y.size - np.count_nonzero(np.isfinite(y)))
        if n_bad:  # None in an object array becomes NaN after scikit-learn's check
            raise ValueError(
                f"y has {n_bad} missing or non-finite value(s) (None, NaN or inf); "
                "remove or impute them before fitting"
            )
        if self.predictive == "rvm*":  # RVM* keeps the training data; else stale ones go
            self.X_train_, self.y_train_ = np.array(X, dtype=np.float64), np.array(y)
        else:
            self.__dict__.pop("X_train_", None)
            self.__dict__.pop("y_train_", None)
        return X, y

    def predict(self, X, return_std: bool = False):
        """Predictive mean (and standard deviation) at ``X``; RVM*'s with ``predictive="rvm*"``.

        Parameters
        ----------
        X : array_like of shape (n_samples, n_features)
        return_std : bool, default False
            Also return the predictive sd, noise included:
            ``sqrt(noise_var_ + phi(x)^T sigma_ phi(x))``.

        Returns
        -------
        y_mean : ndarray of shape (n_samples,)
        y_std : ndarray of shape (n_samples,), only when ``return_std``
        """
        if self.predictive == "rvm*":
            return rvm_star_predict(self, X, return_std)
        if integrates_width(self):  # the mixture over the draws, each at its own width
            F = latent_at(self, self._validated(X)).reshape(-1, len(X))
            if not return_std:
                return F.mean(axis=0)
            return F.mean(axis=0), np.sqrt(F.var(axis=0, ddof=1) + self.noise_var_)
        Phi = self.design_matrix(X)
        mean = Phi @ self.coef_ + self.y_offset_
        if not return_std:
            return mean
        var = np.maximum(np.einsum("ij,jk,ik->i", Phi, self.sigma_, Phi), 0.0)
        return mean, np.sqrt(var + self.noise_var_)


class RVC(ClassifierMixin, _BaseRVM):
    """Relevance vector classification (Tipping 2001), scikit-learn style.

    Two classes: ``P(y = classes_[1]) = sigmoid(phi(x)^T w)``; K > 2 classes:
    one softmax model whose K weight columns share one precision per row (a
    training point is relevant to all classes or none).  The weight posterior
    is the Laplace approximation at the mode (reference, map) or the NUTS
    draws (nuts).

    Parameters
    ----------
    kernel, gamma, gamma_grid, degree, coef0, bias, method, solver, prior, \
max_iter, tol, draws, tune, chains, sampler_kwargs, init, n_jobs, random_state
        As for :class:`RVR`; the prior uses only ``a, b`` and ``slab``.  The
        default prior of ``method="nuts"`` is ``"weakly_informative_slab"``
        (:mod:`rvm_pymc.priors`), whose slab keeps the chains mixing where the
        classes separate; ``prior="weakly_informative"`` or ``{"slab": None}``
        drops it.  Default ``draws`` 6000 (for nuts, at most 6000).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The class labels, sorted, in the dtype given.
    coef_ : ndarray of shape (n_active,) or (n_active, n_classes)
        Posterior mode (mean for nuts) of the active weights; for two classes
        the weights of the logit of ``classes_[1]``.
    sigma_ : ndarray
        Posterior covariance, (n_active, n_active) for two classes, class-major
        (n_active K, n_active K) otherwise.
    alpha_, intercept_, bias_active_, active_, active_names_, relevance_indices_, \
relevance_vectors_, gamma_, gamma_draws_, kernel_, n_iter_, converged_, log_evidence_, \
cv_path_, evidence_path_, interpolates_, idata_, posterior_, model_, basis_scale_, \
n_features_in_, feature_names_in_
        As for :class:`RVR`.

    Examples
    --------
    >>> import numpy as np
    >>> from rvm_pymc.estimators import RVC
    >>> from rvm_pymc.datasets import make_ripley
    >>> X, y, X_test, y_test = make_ripley(n_train=100, n_test=200, random_state=0)
    >>> labels = np.array(["blue", "red"])[y]
    >>> clf = RVC(gamma=2.0, random_state=0).fit(X, labels)
    >>> clf.classes_.tolist()
    ['blue', 'red']
    >>> bool(clf.score(X_test, np.array(["blue", "red"])[y_test]) > 0.85)
    True
    >>> clf.predict_proba(X_test[:2]).shape
    (2, 2)
    """

    _kind = "classification"

    def _fit_data(self, X, y) -> tuple[np.ndarray, np.ndarray]:
        check_numeric(X, "X")
        X, y = validate_data(self, X, y, dtype=np.float64, ensure_min_samples=2)
        # integer or boolean labels are classes by construction: skip scikit-learn's check
        if y.dtype.kind not in "biu":
            check_classification_targets(y)
        self.classes_, codes = np.unique(y, return_inverse=True)
        if self.classes_.size < 2:
            label = plain_value(self.classes_[0])
            raise ValueError(
                f"RVC needs samples of at least two classes; y has 1 class ({label!r})"
            )
        return X, codes.reshape(-1).astype(np.int64)

    def _laplace(self):
        """The fitted Gaussian posterior as a ClassificationResult over the active bases."""
        from rvm_pymc.reference import ClassificationResult

        m = self.coef_.shape[0]
        return ClassificationResult(
            method=self.solver,
            prior=self._prior(),
            classes=np.arange(self.classes_.size),
            n_basis=m,
            active=np.arange(m),
            alpha=self.alpha_,
            mean=self.coef_,
            cov=self.sigma_,
            log_likelihood=float("nan"),
            log_evidence=self.log_evidence_,
            n_iter=self.n_iter_,
            converged=self.converged_,
            trace={},
        )

    def predict_proba(self, X) -> np.ndarray:
        """Class probabilities, columns in the order of ``classes_``.

        For reference/map, moderated by the weight uncertainty (MacKay's
        probit approximation); for nuts, the average over the posterior draws.

        Parameters
        ----------
        X : array_like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
        """
        if integrates_width(self):  # the average over the draws, each at its own width
            F = latent_at(self, self._validated(X))
            F = F.reshape(-1, *F.shape[2:])
            if self.classes_.size == 2:
                p1 = expit(F).mean(axis=0)
                return np.column_stack([1.0 - p1, p1])
            return softmax(F, axis=-1).mean(axis=0)
        Phi = self.design_matrix(X)
        draws = self.posterior_.draws
        if draws is None:
            return self._laplace().predict_proba(Phi, moderated=True)
        if self.classes_.size == 2:
            p1 = expit(Phi @ draws.reshape(-1, Phi.shape[1]).T).mean(axis=1)
            return np.column_stack([1.0 - p1, p1])
        out = np.zeros((Phi.shape[0], self.classes_.size))
        for Wd in draws.reshape(-1, *draws.shape[2:]):
            out += softmax(Phi @ Wd, axis=1)
        return out / (draws.shape[0] * draws.shape[1])

    def decision_function(self, X) -> np.ndarray:
        """Log-odds of the predicted probabilities.

        Two classes: ``log(p1 / p0)`` of :meth:`predict_proba`, shape
        (n_samples,), positive for ``classes_[1]``.  K classes: the centred log
        probabilities, shape (n_samples, K).
        """
        logp = np.log(np.clip(self.predict_proba(X), 1e-300, None))
        if self.classes_.size == 2:
            return logp[:, 1] - logp[:, 0]
        return logp - logp.mean(axis=1, keepdims=True)

    def predict(self, X) -> np.ndarray:
        """Most probable class, as the labels given to ``fit``."""
        proba = self.predict_proba(X)  # first: it checks that the estimator is fitted
        return self.classes_[np.argmax(proba, axis=1)]


class RVP(RegressorMixin, _BaseRVM):
    """Relevance vector regression for counts (Poisson or negative binomial, log link).

    Model: ``y ~ Poisson(exp(phi(x)^T w))``, or the NB2 of that mean ``mu`` and
    variance ``mu + mu^2 / r``, ``w_m ~ N(0, 1/alpha_m)``, the precisions fitted by
    maximum (Laplace) evidence, as for :class:`RVC`.  As scikit-learn's
    :class:`~sklearn.linear_model.PoissonRegressor`: :meth:`predict` returns the
    mean count, :meth:`score` is D^2 (the fraction of Poisson deviance
    explained), and the targets must be non-negative (not necessarily integers).

    Parameters
    ----------
    likelihood : {"poisson", "negative_binomial"}, default "poisson"
        The distribution of a count given its mean.  ``"negative_binomial"``
        (NB2) adds the dispersion ``r`` for overdispersed counts.  The reference
        solver fits ``r`` by maximising the Laplace evidence (within
        ``rvm_pymc.reference.counts.DISPERSION_BOUNDS``); NUTS samples ``log r``
        under the prior ``1/sqrt(r) ~ HalfNormal(DISPERSION_PRIOR_SCALE)``
        (:mod:`rvm_pymc.priors`), which shrinks towards the Poisson.
        ``method="map"`` takes the Poisson only.
    kernel, gamma, gamma_grid, degree, coef0, bias, method, solver, prior, \
max_iter, tol, draws, tune, chains, sampler_kwargs, init, n_jobs, random_state
        As for :class:`RVR`; the prior uses only ``a, b`` and ``slab``, and the
        default prior of ``method="nuts"`` is ``"weakly_informative_slab"``, as
        for :class:`RVC`.  The counts are not scaled; the basis columns are.

    Attributes
    ----------
    coef_ : ndarray of shape (n_active,)
        Posterior mode (mean for nuts) of the active weights of the log rate.
    sigma_ : ndarray of shape (n_active, n_active)
        Their posterior covariance (Laplace for reference/map).
    dispersion_ : float or None
        The negative binomial's ``r`` (posterior median for nuts); None for the Poisson.
    alpha_, intercept_, bias_active_, active_, active_names_, relevance_indices_, \
relevance_vectors_, gamma_, kernel_, n_iter_, converged_, log_evidence_, cv_path_, \
evidence_path_, interpolates_, idata_, posterior_, model_, basis_scale_, n_features_in_, \
feature_names_in_
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

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.positive_only = True
        return tags

    def _fit_data(self, X, y) -> tuple[np.ndarray, np.ndarray]:
        check_numeric(X, "X")
        check_counts(y)  # before scikit-learn's checks: the message names y and counts
        X, y = validate_data(self, X, y, dtype=np.float64, y_numeric=True, ensure_min_samples=2)
        return X, check_counts(y)

    def _latent(self, X) -> tuple[np.ndarray, np.ndarray] | np.ndarray:
        """Mean and variance of the log rate (type-II), or its draws ``(n, S)`` (nuts)."""
        Phi = self.design_matrix(X)
        draws = self.posterior_.draws
        if draws is None:
            var = np.maximum(np.einsum("ij,jk,ik->i", Phi, self.sigma_, Phi), 0.0)
            return Phi @ self.coef_, var
        return Phi @ draws.reshape(-1, Phi.shape[1]).T

    def predictive_mixture(self, X) -> CountsMixture:
        """The posterior predictive at ``X`` as a mixture of Poissons (or of NB2s).

        Returns a :class:`~rvm_pymc._core.counts.CountsMixture`: rates
        ``(n_samples, S)`` and weights ``(S,)`` (Gauss-Hermite nodes of the
        Laplace posterior for reference/map, the draws for nuts) and
        ``dispersion`` (None for the Poisson, else ``r``: a float, or ``(S,)``
        for nuts).
        """
        lat = self._latent(X)
        ld = self.posterior_.log_dispersion
        r = None if ld is None else np.exp(np.asarray(ld, dtype=float).reshape(-1))
        if isinstance(lat, tuple):
            return CountsMixture(*gaussian_rates(*lat), None if r is None else float(r[0]))
        return CountsMixture(np.exp(lat), np.full(lat.shape[1], 1.0 / lat.shape[1]), r)

    def predict(self, X) -> np.ndarray:
        """Predictive mean count at ``X``.

        ``exp(mu + s^2 / 2)`` under the Laplace posterior of the log rate
        (reference, map); the average of ``exp(f)`` over the draws (nuts).

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
        posterior predictive (:meth:`predictive_mixture`).

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
        """D^2, the fraction of Poisson deviance explained (for either likelihood).

        ``sklearn.metrics.d2_tweedie_score(y, predict(X), power=1)``.
        """
        from sklearn.metrics import d2_tweedie_score

        y = check_counts(y, fitting=False)
        return float(d2_tweedie_score(y, self.predict(X), sample_weight=sample_weight, power=1))


BLOCK_ENTRIES = 1 << 20
"""Entries of the training-by-test kernel matrix of one block (8 MB of float64)."""


def rvm_star_predict(est, X, return_std: bool):
    """Predictive mean (and sd, noise included) of RVM* at ``X`` for a fitted RVR."""
    check_numeric(X, "X")
    check_is_fitted(est, "coef_")
    if not hasattr(est, "X_train_"):
        raise ValueError(
            "predictive='rvm*' was set after the fit, which did not keep the training "
            "inputs RVM* needs; refit the estimator"
        )
    X = validate_data(est, X, reset=False, dtype=np.float64)
    post = est.posterior_
    beta = float(np.exp(post.log_beta))
    kernel = est.kernel_
    Phi = est._design_of(est.X_train_)
    resid = est.y_train_ - est.y_offset_ - Phi @ post.mean
    sig = signal_variance(est.y_scale_**2, 1.0 / beta)
    block = max(1, BLOCK_ENTRIES // max(est.X_train_.shape[0], 1))
    mean = np.empty(X.shape[0])
    var = np.empty(X.shape[0])
    for s in range(0, X.shape[0], block):
        xb = X[s : s + block]
        k_self = kernel.diag(xb)
        mean[s : s + len(xb)], var[s : s + len(xb)] = augmented_predictive(
            est._design_of(xb),
            kernel(est.X_train_, xb),
            k_self,
            Phi,
            resid,
            post.mean,
            post.cov,
            beta,
            rvm_star_prior_var(sig, k_self),
        )
    mean += est.y_offset_
    if not return_std:
        return mean
    return mean, np.sqrt(var + 1.0 / beta)
