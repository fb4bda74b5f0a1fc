"""The base class of RVR, RVC and RVP: basis, scaling, fit, fitted attributes and views.

A fit scales the problem, runs one backend, maps its ``WeightPosterior`` back to data
units and sets every attribute from it.
"""

from __future__ import annotations

import copy
import functools
import inspect
import numbers
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, clone
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted, validate_data

from rvm_pymc._core.interpolation import interpolates, interpolation_message
from rvm_pymc._core.parallel import run_recorded
from rvm_pymc._core.rowqr import RowQR
from rvm_pymc._core.threads import single_blas_thread
from rvm_pymc._core.validation import check_numeric
from rvm_pymc.basis import Basis, KernelBasis, PrecomputedBasis, make_basis
from rvm_pymc.estimators._params import (
    GAMMA_KERNELS,
    METHODS,
    PARAMETER_CONSTRAINTS,
    SOLVERS,
    WIDTH_KERNELS,
    Checked,
    backend_options,
    check_params,
    default_prior,
    validate_params,
)
from rvm_pymc.estimators._rows import (
    column_rms,
    compressed_design,
    row_blocked,
    scale_columns,
    target_scale,
)
from rvm_pymc.estimators._width_selection import (
    Fitted,
    fit_integrated,
    integrates_width,
    latent_at,
    sample_predictions_at,
    select_width,
)
from rvm_pymc.exceptions import InterpolationWarning, warn_user
from rvm_pymc.kernels import Kernel, make_kernel
from rvm_pymc.models.spec import DISPERSION_SCALE_DATA, data_unit_constants
from rvm_pymc.priors import resolve_prior

__all__ = ["METHODS", "SOLVERS", "init_with"]


class _BaseRVM(BaseEstimator):
    """Parameters, validation, basis, fitting and views shared by RVR, RVC and RVP."""

    _kind = ""
    _parameter_constraints: dict = PARAMETER_CONSTRAINTS

    def __init__(
        self,
        *,
        kernel: str | Kernel | Basis = "rbf",
        gamma: float | str = "auto",
        gamma_grid: Any = None,
        degree: int = 3,
        coef0: float = 1.0,
        bias: bool = True,
        method: str = "reference",
        solver: str = "fast",
        prior: Any = None,
        max_iter: int | None = None,
        tol: float = 1e-6,
        draws: int | None = None,
        tune: int | None = None,
        chains: int | None = None,
        sampler_kwargs: dict | None = None,
        init: str = "auto",
        n_jobs: int | None = None,
        random_state: Any = None,
    ) -> None:
        params = dict(locals())
        del params["self"]
        vars(self).update(params)  # every parameter an attribute, as given (scikit-learn)

    def __getstate__(self):
        # a PyMC model does not pickle (its distributions are classes made at run time)
        state = super().__getstate__()
        if state.get("model_") is not None:
            state = {**state, "model_": None}
        return state

    def __setstate__(self, state):
        # defaults of pickles written by older versions
        if self._kind == "regression":
            state = {"predictive": "rvm", **state}
        if self._kind == "counts":
            state = {"likelihood": "poisson", **state}
            if "posterior_" in state:
                state.setdefault("dispersion_", None)
        super().__setstate__(state)
        if "posterior_" in state:
            self._set_intercept()
        if "posterior_" in state and "interpolates_" not in state:
            inputs = state.get("_tree_inputs") or {}
            at_bound = bool((inputs.get("attrs") or {}).get("noise_at_bound", False))
            target = inputs.get("target")
            self.interpolates_ = self._interpolates(0 if target is None else len(target), at_bound)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.pairwise = isinstance(self.kernel, str) and self.kernel == "precomputed"
        tags.non_deterministic = self.method == "nuts"
        return tags

    def _validate_params(self) -> None:
        """scikit-learn's hook: each parameter against ``_parameter_constraints``."""
        validate_params(self.get_params(deep=False), self._parameter_constraints)

    def _check_params(self, X: np.ndarray) -> Checked:
        """:func:`check_params` of this estimator."""
        return check_params(self, X)

    def _prior(self):
        """The hyperprior, defaults resolved."""
        return resolve_prior(self.prior, default=default_prior(self))

    def _make_basis(self, gamma: float | None, seed: int | None = None) -> Basis:
        """An unfitted basis for one width (``seed``: its choice of centres at large N)."""
        k = self.kernel
        if isinstance(k, Basis):
            return copy.deepcopy(k)
        params: dict[str, Any] = {}
        name = k.lower() if isinstance(k, str) else None
        if name in WIDTH_KERNELS:
            params = {"gamma": gamma}
        elif name in ("poly", "polynomial"):
            params = {"degree": self.degree, "gamma": gamma, "coef0": self.coef0}
        basis = make_basis(k, bias=bool(self.bias), **params)
        if isinstance(basis, KernelBasis):
            basis.random_state = seed
        return basis

    def _design(
        self, X: np.ndarray, t, seed, gamma: float | None, centres=None, compress: bool = True
    ) -> tuple[Basis, np.ndarray | RowQR, np.ndarray]:
        """The fitted basis for one width, its scaled design matrix and the column scales."""
        if centres is None:
            basis = self._make_basis(gamma, seed).fit(X)
        else:
            basis = self._make_basis(gamma)
            basis.centres = "all"
            basis.fit(X[centres])
        if compress and centres is None and row_blocked(self, basis, X.shape[0]):
            return (basis, *compressed_design(basis, X, t))
        Phi = basis.transform(X)
        scale = column_rms(Phi)
        # a KernelBasis fills a new array for every call: ours to overwrite
        return basis, scale_columns(Phi, scale, own=type(basis) is KernelBasis), scale

    def _validated(self, X) -> np.ndarray:
        """``X`` checked against the fit."""
        check_numeric(X, "X")
        check_is_fitted(self, "coef_")
        return validate_data(self, X, reset=False, dtype=np.float64)

    def _design_of(self, X: np.ndarray) -> np.ndarray:
        """The design matrix of validated ``X`` over the active bases."""
        if self.kernel_ is None:
            return self.basis_.transform(X)[:, self.active_]
        cols = []
        if self.bias_active_:
            cols.append(np.ones((X.shape[0], 1)))
        if self.relevance_vectors_.shape[0]:
            cols.append(self.kernel_(X, self.relevance_vectors_))
        return np.hstack(cols) if cols else np.zeros((X.shape[0], 0))

    def design_matrix(self, X) -> np.ndarray:
        """The design matrix of ``X`` over the bases of the fit, in the units of the data.

        Its columns are the active bases (``active_names_``), unscaled: the
        ``Phi`` of ``model_`` and ``idata_.constant_data``.

        Parameters
        ----------
        X : array_like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_active)

        Examples
        --------
        Posterior predictive draws at new inputs from ``model_`` (map and nuts)::

            import pymc as pm

            with est.model_:
                pm.set_data({"Phi": est.design_matrix(X_new)},
                            coords={"obs": np.arange(len(X_new))})
                pred = pm.sample_posterior_predictive(est.idata_, predictions=True)
        """
        X = self._validated(X)
        if integrates_width(self):
            raise ValueError(
                "this fit integrates over the kernel width (gamma='integrate'): each posterior "
                "draw has its own design matrix, so there is no one design_matrix(X); use "
                "predict, predict_proba or sample_predictions, which integrate over the widths"
            )
        return self._design_of(X)

    def _data_unit_model(self, Phi, target, scale, prior):
        """``model_``: the fit's RVM in data units."""
        from rvm_pymc.models import data_unit_model

        post = self.posterior_
        fixed = None
        if post.is_type_ii:
            keys = ("log_alpha", "log_beta", "log_dispersion")
            fixed = {k: getattr(post, k) for k in keys if getattr(post, k) is not None}
        classes = getattr(self, "classes_", None)
        return data_unit_model(
            self._kind_of_fit(),
            Phi,
            target,
            basis_scale=scale,
            y_offset=post.y_offset,
            y_scale=self.y_scale_,
            prior=prior,
            fixed=fixed,
            basis_names=post.basis_names,
            class_names=None if classes is None else [str(c) for c in classes],
        )

    @property
    def idata_(self):
        """The fit as an ArviZ DataTree of the result schema, built on first access."""
        check_is_fitted(self, "coef_")
        if getattr(self, "_idata", None) is None:
            from rvm_pymc.estimators._io import build_tree

            inp = self._tree_inputs
            Phi = self._design_of(inp["Phi"]) if inp.get("Phi_of_X") else inp["Phi"]
            if integrates_width(self) and "latent" not in inp:  # each draw at its own width
                inp = {**inp, "latent": latent_at(self, inp["constants"]["X"][1])}
            self._idata = build_tree(self.posterior_, {**inp, "Phi": Phi})
        return self._idata

    @idata_.setter
    def idata_(self, tree) -> None:
        self._idata = tree

    def sample_predictions(self, X, *, random_state=None):
        """Posterior predictive draws at new inputs, as the ArviZ ``predictions`` groups.

        Parameters
        ----------
        X : array_like of shape (n_samples, n_features)
        random_state : int, Generator or None
            Seeds the replicates (the weight draws are those of ``idata_``).

        Returns
        -------
        xarray.DataTree
            See :func:`rvm_pymc.results.predictions`.
        """
        from rvm_pymc.results import predictions

        if integrates_width(self):
            return sample_predictions_at(self, self._validated(X), random_state)
        if getattr(self, "predictive", "rvm") == "rvm*":
            raise ValueError(
                "sample_predictions draws from the RVM posterior over the relevance vectors, "
                "not from RVM*'s (predictive='rvm*'); use predict(X, return_std=True)"
            )
        Phi = self.design_matrix(X)  # X checked before the draws of idata_ are made
        return predictions(self.idata_, Phi, random_state=random_state)

    def fit(self, X, y):
        """Fit the model.

        Parameters
        ----------
        X : array_like of shape (n_samples, n_features)
            Training inputs (the kernel matrix for ``kernel="precomputed"``).
        y : array_like of shape (n_samples,)
            :class:`RVR`: targets, not constant; :class:`RVC`: class labels, two or
            more distinct values of any sortable type; :class:`RVP`: counts, finite,
            >= 0, not all zero.

        Returns
        -------
        self

        Raises
        ------
        ValueError
            For invalid data (RVP's names ``y`` for negative, missing or all-zero
            counts) or parameters; a fit that fails (or is interrupted) leaves the
            estimator as it was.
        """
        self._fit(X, y)
        return self

    def _fit(self, X, y) -> None:
        """Check the data, fit on one BLAS thread; on any failure restore every attribute."""
        saved = dict(self.__dict__)
        try:
            X, target = self._fit_data(X, y)
            with single_blas_thread():
                self._fit_at_widths(X, target)
        except BaseException:
            self.__dict__.clear()
            self.__dict__.update(saved)
            raise

    def _fit_at_widths(self, X: np.ndarray, target: np.ndarray) -> None:
        """Scale, choose the width, fit by one backend, then set every fitted attribute."""
        checked = self._check_params(X)
        prior, options = checked.prior, backend_options(self, checked)
        regression = self._kind == "regression"
        for attr in ("evidence_path_", "cv_path_", "gamma_draws_"):
            self.__dict__.pop(attr, None)
        if regression:
            t_mean, t_sd = target_scale(target, centre=bool(self.bias))
            t_s = (target - t_mean) / t_sd
        else:
            t_mean, t_sd, t_s = 0.0, 1.0, target
        log_t_sd = target.size * np.log(t_sd) if regression else 0.0
        # the reference fit that starts MAP/NUTS and chooses the width: under the same
        # prior, so MacKay unless "fast" can take it (a = b = 0, no slab)
        plain = prior.a == 0 and prior.b == 0 and prior.slab is None
        ref_solver = self.solver if plain or self.method == "reference" else "mackay"
        seed = _seed(self.random_state)
        # the centres at large N: one seed for every design of this fit, so that a worker's
        # fit and the rebuild of the chosen width agree (None: the basis's fixed seed)
        basis_seed = None if self.random_state is None else seed
        need_ref = self.method == "reference" or self._starts_from_reference()
        rs = self.random_state
        fold_seed = 0 if rs is None else int(rs) if isinstance(rs, numbers.Integral) else seed
        has_width = isinstance(self.kernel, str) and self.kernel.lower() in GAMMA_KERNELS
        refit = None
        if has_width and self.gamma in ("auto", "cv"):
            params = {"method": "reference", "prior": prior, "solver": ref_solver, "n_jobs": 1}
            refit = functools.partial(_refit, clone(self).set_params(**params))
        integrate = self.gamma == "integrate"
        width = select_width(
            X,
            target,
            gamma="scale" if integrate else self.gamma,
            grid=self.gamma_grid,
            has_width=has_width,
            classifier=self._kind == "classification",
            design=functools.partial(self._design, X, t_s, basis_seed),
            fit=functools.partial(self._reference_fit, t_s, prior, ref_solver),
            refit=refit,
            run=functools.partial(run_recorded, n_jobs=self.n_jobs),
            need_reference=need_ref,
            fold_seed=fold_seed,
        )
        if width.cv_path is not None:
            self.cv_path_ = width.cv_path
        if width.evidence_path is not None:
            path = width.evidence_path
            self.evidence_path_ = {**path, "log_evidence": path["log_evidence"] - log_t_sd}
        start = width.reference[0] if self._starts_from_reference() else None
        if integrate:
            fitted = fit_integrated(options, X, t_s, width, prior, seed, start)
        elif self.method == "reference":
            fitted = Fitted(*width.reference, width.scale)
        else:
            from rvm_pymc.inference import fit_backend

            # PyMC's models refuse all-zero columns: leave them out, as the reference does
            Phi, names = width.Phi, tuple(map(str, width.basis.basis_names_))
            used = np.any(Phi != 0.0, axis=0)
            if not used.all():
                Phi, names = Phi[:, used], tuple(n for n, u in zip(names, used, strict=True) if u)
            fit = fit_backend(options, Phi, t_s, names, prior, seed, start)
            fitted = Fitted(*fit, width.scale)
        post, info, scale = fitted.post, fitted.info, fitted.scale
        basis, Phi, draws = width.basis, width.Phi, fitted.gamma_draws
        position = {str(n): i for i, n in enumerate(basis.basis_names_)}
        active = np.array([position[n] for n in post.basis_names], dtype=np.intp)
        self.gamma_ = width.gamma if draws is None else float(np.median(draws))
        self.basis_ = basis
        self.kernel_ = basis.kernel_ if hasattr(basis, "kernel_") else None
        if draws is not None:
            self.gamma_draws_ = draws
            self.kernel_ = make_kernel("rbf", gamma=self.gamma_)
        self.basis_scale_ = scale
        self.y_scale_ = t_sd
        self._set_active(active, X)
        self._set_result(post.to_data_units(scale[active], t_mean, t_sd))
        Phi_data, self.model_ = None, None
        if draws is None:  # the active columns in data units (a row compression: X, "Phi_of_X")
            Phi_data = X if isinstance(Phi, RowQR) else Phi[:, active] * scale[active]
            if self.method != "reference":
                self.model_ = self._data_unit_model(Phi_data, target, scale[active], prior)
        self.n_iter_ = int(info.n_iter)
        self.converged_ = bool(info.converged)
        self.log_evidence_ = float(info.log_evidence - log_t_sd)
        tree = fitted.tree or {}
        constants = data_unit_constants(
            self._kind_of_fit(), scale[active], y_scale=t_sd, prior=prior
        )
        if self.method != "nuts":  # the dispersion's prior is NUTS's (reference: r by evidence)
            constants.pop(DISPERSION_SCALE_DATA, None)
        self._check_interpolation(X.shape[0], bool(info.attrs.get("noise_at_bound", False)), prior)
        self._tree_inputs = {
            "Phi": Phi_data,
            "Phi_of_X": isinstance(Phi, RowQR) and draws is None,
            "target": target,
            "classes": getattr(self, "classes_", None),
            "seed": seed,
            "sample_stats": info.sample_stats,
            "attrs": {
                **info.attrs,
                "inference_library": info.library,
                "rvm_estimator": type(self).__name__,
                "method": self.method,
                "solver": self.solver,
                "log_evidence": self.log_evidence_,
                "n_iter": self.n_iter_,
                "converged": int(self.converged_),
                "interpolates": int(self.interpolates_),
                **tree.get("attrs", {}),
            },
            "draws": checked.draws,
            "chains": options["chains"],
            "constants": {**constants, **tree.get("constants", {})},
            "extra_posterior": tree.get("extra_posterior"),
        }
        self._idata = None

    def _interpolates(self, n_train: int, noise_at_bound: bool, prior=None) -> bool:
        """Whether this type-II fit interpolates (:mod:`rvm_pymc._core.interpolation`)."""
        prior = self._prior() if prior is None else prior
        prunes = prior.a == 0 and prior.b == 0
        n_rel = self.n_relevance_
        return bool(
            self.posterior_.is_type_ii and interpolates(n_rel, n_train, noise_at_bound, prunes)
        )

    def _check_interpolation(self, n_train: int, noise_at_bound: bool, prior) -> None:
        """Set ``interpolates_`` and warn when it is True."""
        self.interpolates_ = self._interpolates(n_train, noise_at_bound, prior)
        if self.interpolates_:  # the target's sd is said only beside a noise sd
            noise = getattr(self, "noise_var_", None)
            sd = None if noise is None else float(np.sqrt(noise))
            what = (type(self).__name__, self.n_relevance_, n_train, self.gamma_, noise_at_bound)
            message = interpolation_message(*what, sd, getattr(self, "y_scale_", None))
            warn_user(message, InterpolationWarning)

    def _reference_fit(self, t, prior, solver: str, Phi, names, start=None, cap=None, tol=None):
        """The reference backend on the scaled problem: ``(WeightPosterior, FitInfo)``."""
        from rvm_pymc import reference

        max_iter = self.max_iter
        if cap is not None:
            max_iter = cap if max_iter is None else min(max_iter, cap)

        return reference.fit_posterior(
            Phi,
            t,
            self._kind,
            names,
            solver=solver,
            prior=prior,
            max_iter=max_iter,
            tol=self.tol if tol is None else max(tol, self.tol),
            start=start if solver == "fast" else None,
            likelihood=getattr(self, "likelihood", None),  # RVP's
        )

    def _kind_of_fit(self) -> str:
        if self._kind in ("regression", "counts"):
            return "regression" if self._kind == "regression" else self.likelihood
        return "binary" if self.classes_.size == 2 else "softmax"

    def _starts_from_reference(self) -> bool:
        own_start = "initvals" in (self.sampler_kwargs or {})
        return self.method != "reference" and self.init in ("auto", "reference") and not own_start

    def _set_result(self, post) -> None:
        """Hold the posterior (data units) and set the attributes read from it."""
        self.posterior_ = post
        est = post.point_estimates()
        self.coef_, self.sigma_, self.alpha_ = est.coef, est.sigma, est.alpha
        if post.log_beta is not None:
            self.beta_, self.noise_var_ = est.beta, est.noise_var
            self.y_offset_ = float(post.y_offset)
        if self._kind == "counts":
            ld = post.log_dispersion
            self.dispersion_ = None if ld is None else float(np.exp(np.median(ld)))
        self._set_intercept()

    def _set_intercept(self) -> None:
        """``intercept_``, the constant term of the latent mean."""
        zero = np.zeros(self.coef_.shape[1:]) if self.coef_.ndim > 1 else 0.0
        bias = self.coef_[0] if self.bias_active_ else zero
        self.intercept_ = bias + self.posterior_.y_offset

    def _set_active(self, active: np.ndarray, X: np.ndarray) -> None:
        """Active bases, relevance indices and vectors from column indices."""
        active = np.asarray(active, dtype=np.intp)
        basis = self.basis_
        offset = int(basis.bias)
        self.active_ = active
        self.active_names_ = [str(basis.basis_names_[i]) for i in active]
        self.bias_active_ = bool(basis.bias and active.size and active[0] == 0)
        if isinstance(basis, PrecomputedBasis) or self.kernel_ is not None:
            self.relevance_indices_ = active[active >= offset] - offset
            if hasattr(basis, "centre_indices_"):  # a subset of centres
                self.relevance_indices_ = basis.centre_indices_[self.relevance_indices_]
        else:
            self.relevance_indices_ = np.zeros(0, dtype=np.intp)
        if self.kernel_ is not None:
            self.relevance_vectors_ = X[self.relevance_indices_]
            self.basis_ = None
        else:
            self.relevance_vectors_ = np.zeros((0, X.shape[1]))

    @property
    def prior_(self):
        """The hyperprior of the fit (:class:`~rvm_pymc.priors.HyperPrior`), defaults resolved."""
        check_is_fitted(self, "coef_")
        return self._prior()

    @property
    def n_relevance_(self) -> int:
        """Number of relevant training points (the bias not counted)."""
        check_is_fitted(self, "coef_")
        return int(self.relevance_indices_.size)

    def save(self, path, engine: str | None = None) -> None:
        """Write the fitted estimator to a netCDF file, without pickle.

        The file holds ``idata_``, the arrays needed for prediction, the
        parameters as JSON and a SHA-256 checksum of all of it.

        Parameters
        ----------
        path : str or path-like
        engine : {"h5netcdf", "netcdf4", "scipy"}, optional
            Force a writer; default the first of these that is installed.

        Raises
        ------
        ValueError
            If a parameter cannot be written without pickle (a callable
            kernel, a user :class:`~rvm_pymc.basis.Basis`).
        """
        from rvm_pymc.estimators._io import save_estimator

        save_estimator(self, path, engine=engine)

    @classmethod
    def load(cls, path):
        """Read an estimator written by :meth:`save`.

        Parameters
        ----------
        path : str or path-like

        Returns
        -------
        estimator
            A fitted instance of this class.

        Raises
        ------
        ValueError
            If the file was not written by :meth:`save`, holds another kind of
            estimator or an inconsistent model, or fails its checksum.
        """
        from rvm_pymc.estimators._io import load_estimator

        return load_estimator(path, expected=cls)


def init_with(name: str, default: str, first: bool = False):
    """The ``__init__`` of an estimator with one keyword more than :class:`_BaseRVM`."""
    base = list(inspect.signature(_BaseRVM.__init__).parameters.values())
    kind = inspect.Parameter.KEYWORD_ONLY
    extra = inspect.Parameter(name, kind, default=default, annotation="str")
    params = [base[0], extra, *base[1:]] if first else [*base, extra]

    names = {p.name for p in params[1:]}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        where = f"{type(self).__name__}.__init__()"
        if args:  # as Python words it for the keyword-only signature
            raise TypeError(f"{where} takes 1 positional argument but {len(args) + 1} were given")
        for key in kwargs:
            if key not in names:
                raise TypeError(f"{where} got an unexpected keyword argument {key!r}")
        value = kwargs.pop(name, default)
        _BaseRVM.__init__(self, **kwargs)
        setattr(self, name, value)

    __init__.__signature__ = inspect.Signature(params, return_annotation="None")
    return __init__


def _refit(spec: _BaseRVM, gamma: float, X: np.ndarray, y: np.ndarray) -> _BaseRVM:
    """One fold's fit of ``gamma="cv"``: a clone of ``spec`` at ``gamma``."""
    return clone(spec).set_params(gamma=gamma).fit(X, y)


def _seed(random_state: Any) -> int:
    """An integer seed from ``random_state``."""
    if isinstance(random_state, np.random.Generator):
        return int(random_state.integers(2**31 - 1))
    return int(check_random_state(random_state).randint(2**31 - 1))
