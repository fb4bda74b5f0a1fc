"""RVR, RVC and RVP: the estimators' public classes (see :mod:`rvm_pymc.estimators`).

``RVR(predictive="rvm*")`` predicts by RVM* (:func:`rvm_star_predict`): the mathematics
(the rank-one update and the prior of the new weight) is :mod:`rvm_pymc._core.augment`;
here it is fed the fitted posterior in the units of the data, the training inputs kept
by ``fit`` (``X_train_``, ``y_train_``: RVM* evaluates the new basis ``k(x, x*)`` at every
training input, so the prediction is no longer sparse) and the kernel, block by block of
test inputs so that memory stays ``O(n_test)`` (a block of ``B`` test inputs holds an
``N x B`` kernel matrix, ``N B <=`` :data:`BLOCK_ENTRIES`).
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
from rvm_pymc._core.validation import check_numeric
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
    "rvm_star_predict",
]


class RVR(RegressorMixin, _BaseRVM):
    """Relevance vector regression (Tipping 2001), scikit-learn style.

    Model: ``t = Phi(x) w + noise``, ``w_m ~ N(0, 1/alpha_m)``, noise precision
    ``beta``; the precisions are fitted by maximum evidence, which prunes most
    weights (``alpha_m -> inf``).  The model is fitted to the centred targets
    (``y_offset_`` is their mean), on the scale of their sd, and mapped back;
    with ``bias=False`` (no constant term) to the targets as they are, on the
    scale of their root mean square (``y_offset_`` is 0).

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
        ``"cv"`` scores the widths of ``gamma_grid`` by 5-fold cross-validation of
        the held-out log predictive density of the reference fit (from the grid's
        middle out, each side until the score falls, then half a grid step on either
        side of the best), and fits the best on all the data; ``cv_path_`` records
        every width scored.  The folds are shuffled with an integer ``random_state``
        (0 for None), stratified for a classifier.
        ``"scale"`` is ``1 / (n_features * X.var())`` as in scikit-learn's SVR.
        ``"evidence"`` searches the widths on a few centres (``gamma_grid`` from
        its middle out, then a refinement of the best on a continuous
        ``log gamma`` to 10 %), fits the best width found and the grid's best
        (and near ties) over all bases, keeps the best: the fit of ``gamma=<that width>``
        itself; ``evidence_path_`` records every fit of the search.  On small noisy
        real data the evidence (with no prior on the noise) often prefers a kernel
        that interpolates the targets (an ``InterpolationWarning`` says so).
        Map/nuts are then fitted at the chosen width, chosen under the prior they fit
        (NUTS's slab included: MacKay's reference fit takes it).
        ``"integrate"`` (``method="nuts"`` and ``kernel="rbf"`` only) makes the width a
        parameter that NUTS samples with the other unknowns: ``log l`` with
        ``gamma = exp(-2 log l) / 2`` has a Normal prior centred on the ``"scale"``
        width whose 2 sd reach the ends of the default grid; the design matrix is
        recomputed at every width from the squared distances to the centres, its
        kernel columns scaled to RMS 1 there.  RVR samples the collapsed model (the
        weights drawn exactly at each draw's width), RVC the weights jointly.
        ``predict``/``predict_proba`` average over the draws, each draw's design at its
        own width; ``gamma_`` is the posterior median width and ``gamma_draws_`` every
        draw's (also ``idata_.posterior["gamma"]``); ``design_matrix`` raises and
        ``model_`` is None.  ``coef_``, ``sigma_`` and ``alpha_`` then summarise
        weights of columns whose width differs from draw to draw: read the draws and
        the predictions, not them.  A slab (RVC's default NUTS prior) acts on the
        RMS-1 columns of each width.
        ``"auto"`` is ``"cv"`` from 4 up to 2000 training points (with at least two
        rows of every class) and ``"scale"`` otherwise.  Why cross-validation: the
        real-data panel of ``benchmarks/bench_real_panel.py`` (docs, "Defaults").
        The command line (``rvm-pymc fit`` and ``compare``) standardises the features
        to mean 0, sd 1 before the fit; an estimator uses ``X`` as given.
    gamma_grid : array_like, optional
        Widths that bracket ``gamma="cv"`` and ``gamma="evidence"`` (fitted from the
        middle out; the width chosen lies between the smallest and the largest);
        default ``"scale"`` x ``logspace(-2, 2, 9)``.
    degree, coef0 : int, float
        Degree and offset of the ``"poly"`` kernel.
    bias : bool, default True
        Add a bias column (its weight has an ARD prior like every other) and,
        for :class:`RVR`, centre the targets.  ``False``: the model has no
        constant term: no bias column, and the targets are scaled by their
        root mean square but not centred (``y_offset_`` is 0), so that every
        method predicts 0 at a design row of zeros (e.g. ``x = 0`` with the
        linear kernel).  With a :class:`~rvm_pymc.basis.Basis` as ``kernel``
        its own columns are used (a bias column only if it has one) and
        ``bias`` says only whether the targets are centred.
    method : {"reference", "map", "nuts"}, default "reference"
        How to fit (see the module docstring).
    solver : {"fast", "mackay", "em"}, default "fast"
        Algorithm of the reference solver; ``"fast"`` needs ``a = b = 0``.
    prior : str, mapping or HyperPrior, optional
        Gamma hyperpriors and a ``slab`` (NUTS, ``solver="mackay"``/``"em"``;
        :mod:`rvm_pymc.priors`); default ``"evidence"`` (type-II maximum
        likelihood), or ``"weakly_informative"`` for ``method="nuts"``
        (``"weakly_informative_slab"`` for :class:`RVC` and :class:`RVP`).  A mapping is merged
        over that default.
    max_iter : int, optional
        Iteration cap of the reference solver (its default when None).
    tol : float, default 1e-6
        Convergence tolerance on ``|d log alpha|`` of the reference solver.
    draws : int, optional
        Posterior draws per chain kept in ``idata_`` (Gaussian draws for
        reference/map, antithetic across chain pairs; NUTS draws for nuts);
        None: 2000 (6000 for :class:`RVC`) for reference and map, and for
        nuts at most that many (6000 over the width, ``gamma="integrate"``):
        NUTS then stops at the first checkpoint (500 draws a chain, then every
        250) whose draws pass the ``converged_``
        check and keeps them (``until_converged`` of
        :func:`rvm_pymc.inference.sample_nuts`; ``sampler_kwargs={"until_converged":
        False}`` runs the whole length).  An integer is the length of every
        method.
    tune : int, optional
        NUTS tuning steps per chain; None: 500 for the collapsed regression
        sampler (``RVR``'s NUTS), 1000 for the models with weights (``RVC``,
        ``RVP``, ``sampler_kwargs={"model": "joint"}``), each chosen by the
        benchmark problems' table (:func:`~rvm_pymc.estimators._params.default_tune`).
    chains : int, optional
        Chains; default 2 for every method, so that multi-model ArviZ plots
        keep every fit.
    sampler_kwargs : dict, optional
        Extra keyword arguments for the PyMC fit (map/nuts); checked at
        ``fit`` before any work.  ``initvals`` there replaces the start of
        ``init`` and is on the scaled problem (``Phi / basis_scale_``,
        ``(y - y_offset_) / y_scale_``).  NUTS runs with ``target_accept``
        0.8 for the collapsed regression sampler, 0.95 for the models with
        weights (classifiers, counts, ``model="joint"``), over the width 0.95 for
        the collapsed sampler and 0.99 for the classifiers', unless given here.
    init : {"auto", "reference", "default"}, default "auto"
        Where MAP and NUTS start: ``"reference"`` at the reference solution
        under the same prior (``solver`` for ``a = b = 0`` without a slab,
        MacKay otherwise), so that a comparison measures the approximation and not
        another local optimum of the evidence; ``"default"`` at the PyMC
        fit's own start; ``"auto"`` is ``"reference"`` (for nuts too: chains
        started at the evidence optimum mixed where PyMC's own start did
        not; ``benchmarks/bench_nuts_defaults.py``).  Ignored by
        ``method="reference"``.
    n_jobs : int, optional
        Parallel fits of the grid widths of ``gamma="evidence"`` through joblib,
        two at a time (the refinement that follows is sequential)
        (``-1``: all cores).  None means 1 unless a
        :func:`joblib.parallel_config` context says otherwise, e.g.
        ``backend="dask"`` to run them on a ``dask.distributed`` cluster
        (see the "Parallel and distributed fits" section of the user guide).
    random_state : int, Generator or None
        Seeds the posterior draws (and NUTS).
    predictive : {"rvm", "rvm*"}, default "rvm"
        The predictive of :meth:`predict`: the model's own (``"rvm"``), whose
        variance falls to the noise away from the relevance vectors, or RVM*
        (Rasmussen & Quinonero-Candela 2005): the model augmented at each
        test input ``x*`` by a basis ``k(x, x*)`` with its weight integrated
        out (prior variance ``(var(y) - 1/beta) / k(x*, x*)^2``; see
        :mod:`rvm_pymc._core.augment`), whose variance far from the data
        tends to about ``var(y)``; the mean moves too.  Needs method
        ``"reference"`` or ``"map"`` and a kernel (not ``"precomputed"`` or a
        Basis); ``fit`` then keeps ``X_train_`` and ``y_train_``.  A
        constructor parameter, not a ``predict`` option: it changes the mean
        as well as the sd and decides at ``fit`` what is kept, so it is
        cloned, searched and saved with the estimator.

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
        Noise variance used by ``predict(return_std=True)``: ``1/beta_``, or
        the posterior mean of ``1/beta`` for nuts.
    y_offset_ : float
        Added to every prediction: the mean of the training targets (every
        method fits the centred targets); 0.0 with ``bias=False``.
    y_scale_ : float
        The sd of the training targets (the scale of the fitted problem);
        their root mean square with ``bias=False``.
    basis_scale_ : ndarray of shape (n_basis,)
        Root mean square of every column of the training design matrix (the
        columns the fits see are divided by it).
    intercept_ : float
        The constant term of the predictive mean, as in scikit-learn's linear
        models: the posterior mean of the bias weight (0.0 when the bias is
        pruned or absent) plus ``y_offset_``, so that ``predict(X)`` is
        ``design_matrix(X)[:, k:] @ coef_[k:] + intercept_`` with
        ``k = int(bias_active_)`` (``coef_`` keeps the bias weight first).
        For :class:`RVC` and :class:`RVP` (no ``y_offset_``) the bias weight
        of the logit or log rate, one per class for K > 2 classes.
    bias_active_ : bool
        Whether the bias column is relevant.
    active_ : ndarray of int
        Columns of the design matrix that are relevant (0 is the bias): those
        not pruned (``alpha = inf``) by reference/map; all columns for nuts,
        which does not prune (but for a column that is zero at every training
        input, e.g. the linear kernel of a point at the origin, which no
        method fits).
    active_names_ : list of str
        Their names: ``"bias"`` and ``"x<i>"`` for the kernel on training point i.
    relevance_indices_ : ndarray of int
        Indices of the training points that are relevance vectors (bias excluded).
    relevance_vectors_ : ndarray of shape (n_relevance, n_features)
        Those training points (empty for precomputed kernels and user bases).
    gamma_ : float or None
        Kernel width used (None for kernels without one); with ``gamma="integrate"``
        the posterior median width.
    gamma_draws_ : ndarray of shape (n_chains, n_draws)
        Only with ``gamma="integrate"``: the width of every posterior draw.
    kernel_ : Kernel or None
        The fitted kernel (None for ``"precomputed"`` and user bases, which
        keep the fitted ``basis_``).
    n_iter_ : int
        Iterations of the fit.
    converged_ : bool
        Whether the fit converged: the reference solver or the MAP optimiser
        met its tolerance; NUTS had no divergent draw, a rank-normalised R-hat
        (bulk and tail) of at most 1.01 and a bulk and tail ESS of at least
        400 for every sampled variable (``rhat_threshold`` and ``min_ess`` in
        ``sampler_kwargs`` change the two thresholds).  With ``draws=None``
        this check is also NUTS's stopping rule, so a fit that stopped before
        its most draws (``idata_.attrs["max_draws"]``) is converged by
        construction (:mod:`rvm_pymc.inference._stop` says what that does and
        does not assure).
    log_evidence_ : float
        Log evidence (plus hyperprior terms) at the optimum, of the targets in
        their own units; NaN for nuts.
    cv_path_ : dict
        Only with ``gamma="cv"`` (and ``"auto"`` when it is ``"cv"``): ``{"gamma",
        "cv_lpd", "cv_lpd_se", "relevance_fraction"}`` arrays, one entry per width
        scored, by increasing width: the mean held-out log density per training row,
        its standard error, and the mean fraction of a fold's rows kept relevant.
    interpolates_ : bool
        Whether the fit (reference or map) keeps more than half of its training rows
        as relevance vectors (under a prior that prunes, ``a = b = 0``: a proper
        Gamma prior on the precisions keeps every basis by design) or ended with the
        noise precision at its bound: it then
        interpolates, its bands are too narrow, and ``fit`` warned
        (:class:`~rvm_pymc.exceptions.InterpolationWarning`).  False for nuts.
    evidence_path_ : dict
        Only with ``gamma="evidence"``: ``{"gamma", "log_evidence", "converged",
        "noise_at_bound", "all_bases"}`` arrays, one entry per fit of the search:
        the grid's and the refinement's in the order made (on the search's
        centres), then the fits over all bases (``all_bases``).
    idata_ : xarray.DataTree
        The fit in the result schema of :mod:`rvm_pymc.results` (the same
        groups for every method: posterior, posterior_predictive,
        log_likelihood, observed_data, constant_data, sample_stats), built on
        first access.  PSIS-LOO (``arviz.loo``) of a reference or map fit is
        not a valid estimate (hyperparameters fitted on every point; for
        classifiers and counts heavy-tailed importance ratios): its
        ``log_likelihood`` group says so in the attribute ``rvm_loo_note``;
        compare fits by :func:`rvm_pymc.compare`'s ``elpd_kfold``.
        :func:`rvm_pymc.plotting.diagnostic_tree` is the part of it ArviZ's trace and rank
        plots can draw.
    posterior_ : rvm_pymc.results.WeightPosterior
        The estimator's one posterior, in the units of the data.
    model_ : pymc.Model or None
        The fit's RVM as a PyMC model in the units of the data, over the bases
        of ``idata_`` (:func:`rvm_pymc.models.data_unit_model`; map/nuts):
        ``pm.sample_posterior_predictive(est.idata_, model=est.model_)``
        replicates the data, and ``pm.set_data({"Phi": est.design_matrix(X)})``
        gives predictions at new inputs.  The scaling of the fit is inside it
        as data (``basis_scale``, ``y_offset``, ``y_scale``); map's
        hyperparameters are data (point values), nuts's free variables.
        None for reference, after unpickling and after :meth:`load`.
    X_train_, y_train_ : ndarray
        Only with ``predictive="rvm*"``: the training data, for the new basis
        of each test input.
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
        """Predictive mean (and standard deviation) at ``X``.

        Parameters
        ----------
        X : array_like of shape (n_samples, n_features)
        return_std : bool, default False
            Also return the predictive sd, noise included:
            ``sqrt(1/beta + phi(x)^T Sigma phi(x))`` (for nuts, the posterior
            mean of ``1/beta`` and the covariance of the weight draws).

        Returns
        -------
        y_mean : ndarray of shape (n_samples,)
        y_std : ndarray of shape (n_samples,), only when ``return_std``

        Notes
        -----
        With ``predictive="rvm*"`` both are those of RVM* (see ``predictive``
        and :mod:`rvm_pymc._core.augment`), computed in blocks of test inputs.
        """
        if self.predictive == "rvm*":
            return rvm_star_predict(self, X, return_std)
        if integrates_width(self):  # the mixture over the draws, each at its own width
            F = latent_at(self, self._validated(X)).reshape(-1, len(X))
            if not return_std:
                return F.mean(axis=0)
            return F.mean(axis=0), np.sqrt(F.var(axis=0, ddof=1) + self.noise_var_)
        Phi = self._active_design(X)
        mean = Phi @ self.coef_ + self.y_offset_
        if not return_std:
            return mean
        var = np.maximum(np.einsum("ij,jk,ik->i", Phi, self.sigma_, Phi), 0.0)
        return mean, np.sqrt(var + self.noise_var_)


class RVC(ClassifierMixin, _BaseRVM):
    """Relevance vector classification (Tipping 2001), scikit-learn style.

    Two classes: ``P(y = classes_[1]) = sigmoid(phi(x)^T w)``; K > 2 classes:
    one softmax model with a K-column weight matrix whose rows share one
    precision (a training point is relevant to all classes or none), not
    one-vs-rest.  The weight posterior is the Laplace approximation at the
    mode (reference, map) or the NUTS draws (nuts).

    Parameters
    ----------
    kernel, gamma, gamma_grid, degree, coef0, bias, method, solver, prior, \
max_iter, tol, draws, tune, chains, sampler_kwargs, init, n_jobs, random_state
        As for :class:`RVR`; the prior uses only ``a, b`` (there is no noise)
        and ``slab``.  The default prior of ``method="nuts"`` is
        ``"weakly_informative_slab"``: Gamma(1, 0.01) on every ``alpha`` and a
        slab of scale 5 (every weight's prior precision ``alpha + 1/25`` on
        the scaled design; :mod:`rvm_pymc.priors`).  Without the slab the
        chains diverged and did not mix where the classes separate
        (``docs/pymc.md``); ``prior="weakly_informative"`` drops it, a
        mapping is merged over it (``{"slab": None}`` drops it too).
        Default ``draws`` 6000 (for nuts, at most 6000): NUTS's ESS on breast
        cancer at the evidence's width fell short of ``converged_``'s 400 at
        4000 (``docs/pymc.md``, "Default length").

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
evidence_path_, idata_, posterior_, model_, basis_scale_, n_features_in_, feature_names_in_
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
        # 1-D integer or boolean labels are classes (binary or multiclass) by construction:
        # scikit-learn's check of the target type (70-80 us) is for the other dtypes
        if y.dtype.kind not in "biu":
            check_classification_targets(y)
        self.classes_, codes = np.unique(y, return_inverse=True)
        if self.classes_.size < 2:
            label = c.item() if isinstance(c := self.classes_[0], np.generic) else c
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
        probit approximation; see
        :meth:`rvm_pymc.reference.ClassificationResult.predict_proba`); for
        nuts, the average over the posterior draws.

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
        Phi = self._active_design(X)
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
        (n_samples,), positive for ``classes_[1]`` (for reference/map this is
        ``kappa(s^2) phi^T w``, the moderated latent value).  K classes: the
        centred log probabilities, shape (n_samples, K).  Its sign / argmax is
        :meth:`predict`, and its ranking that of :meth:`predict_proba`.
        """
        p = np.clip(self.predict_proba(X), 1e-300, None)
        logp = np.log(p)
        if self.classes_.size == 2:
            return logp[:, 1] - logp[:, 0]
        return logp - logp.mean(axis=1, keepdims=True)

    def predict(self, X) -> np.ndarray:
        """Most probable class, as the labels given to ``fit``."""
        proba = self.predict_proba(X)
        return self.classes_[np.argmax(proba, axis=1)]


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


# ------------------------------------------------------------- RVM* (RVR)

BLOCK_ENTRIES = 1 << 20
"""Entries of the training-by-test kernel matrix of one block (8 MB of float64)."""


def rvm_star_predict(est, X, return_std: bool):
    """Predictive mean (and sd, noise included) of RVM* at ``X`` for a fitted RVR.

    Parameters
    ----------
    est : RVR
        Fitted with ``predictive="rvm*"`` by method ``"reference"`` or ``"map"``.
    X : array_like of shape (n_samples, n_features)
    return_std : bool

    Returns
    -------
    y_mean : ndarray of shape (n_samples,)
    y_std : ndarray of shape (n_samples,), only when ``return_std``

    Raises
    ------
    ValueError
        If ``predictive="rvm*"`` was set after the fit (the training inputs
        were not kept): refit.
    """
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
    n_train = est.X_train_.shape[0]
    block = max(1, BLOCK_ENTRIES // max(n_train, 1))
    mean = np.empty(X.shape[0])
    var = np.empty(X.shape[0])
    for s in range(0, X.shape[0], block):
        xb = X[s : s + block]
        k_self = kernel.diag(xb)
        m, v = augmented_predictive(
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
        mean[s : s + xb.shape[0]] = m
        var[s : s + xb.shape[0]] = v
    mean += est.y_offset_
    if not return_std:
        return mean
    return mean, np.sqrt(var + 1.0 / beta)
