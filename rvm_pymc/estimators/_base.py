"""Shared machinery of :class:`~rvm_pymc.estimators.RVR` and :class:`~rvm_pymc.estimators.RVC`.

Parameters and their validation, the basis (kernel and width), the fit of every
candidate width by the reference solver, the active set and the save/load
entry points.  See :mod:`rvm_pymc.estimators` for the public classes.
"""

from __future__ import annotations

import contextlib
import copy
import warnings
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, clone
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted, validate_data

from rvm_pymc._core.parallel import run_tasks
from rvm_pymc._core.threads import single_blas_thread
from rvm_pymc._core.validation import check_numeric
from rvm_pymc.basis import Basis, KernelBasis, PrecomputedBasis
from rvm_pymc.estimators._params import (
    GAMMA_KERNELS,
    INITS,
    METHODS,
    SOLVERS,
    WIDTH_KERNELS,
    check_params,
)
from rvm_pymc.estimators._scaling import column_rms, scale_columns, scale_gamma, target_scale
from rvm_pymc.exceptions import ConvergenceWarning
from rvm_pymc.kernels import Kernel, make_kernel
from rvm_pymc.priors import resolve_prior

__all__ = ["INITS", "METHODS", "SOLVERS"]

_DEFAULT_GRID = np.logspace(-2.0, 2.0, 9)


class _BaseRVM(BaseEstimator):
    """Parameters, validation, basis and fitting shared by :class:`RVR` and :class:`RVC`."""

    _kind = ""

    def __init__(
        self,
        *,
        kernel: str | Kernel | Basis = "rbf",
        gamma: float | str = "scale",
        gamma_grid: Any = None,
        degree: int = 3,
        coef0: float = 1.0,
        bias: bool = True,
        method: str = "reference",
        solver: str = "fast",
        prior: Any = None,
        max_iter: int | None = None,
        tol: float = 1e-6,
        draws: int = 500,
        tune: int = 500,
        chains: int | None = None,
        sampler_kwargs: dict | None = None,
        init: str = "auto",
        n_jobs: int | None = None,
        random_state: Any = None,
    ) -> None:
        self.kernel = kernel
        self.gamma = gamma
        self.gamma_grid = gamma_grid
        self.degree = degree
        self.coef0 = coef0
        self.bias = bias
        self.method = method
        self.solver = solver
        self.prior = prior
        self.max_iter = max_iter
        self.tol = tol
        self.draws = draws
        self.tune = tune
        self.chains = chains
        self.sampler_kwargs = sampler_kwargs
        self.init = init
        self.n_jobs = n_jobs
        self.random_state = random_state

    @contextlib.contextmanager
    def _unchanged_on_failure(self):
        """Restore every attribute if the block fails (also on KeyboardInterrupt).

        A fit that raises leaves the estimator as it was: unfitted, or with its
        previous fit, never a mixture of the two.
        """
        saved = dict(self.__dict__)
        try:
            yield
        except BaseException:
            self.__dict__.clear()
            self.__dict__.update(saved)
            raise

    def __getstate__(self):
        # a PyMC model does not pickle (its distributions are classes made at run time)
        state = super().__getstate__()
        if state.get("model_") is not None:
            state = {**state, "model_": None}
        return state

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.pairwise = isinstance(self.kernel, str) and self.kernel == "precomputed"
        tags.non_deterministic = self.method == "nuts"
        return tags

    # ------------------------------------------------------------------ validation

    def _check_params(self) -> None:
        """Raise ``ValueError`` for an invalid parameter; called by ``fit``."""
        check_params(self)

    def _prior(self):
        """The hyperprior: default ``"evidence"``, ``"weakly_informative"`` for NUTS."""
        default = "weakly_informative" if self.method == "nuts" else "evidence"
        return resolve_prior(self.prior, default=default)

    # ----------------------------------------------------------------------- basis

    def _scale_gamma(self, X: np.ndarray) -> float:
        """``1 / (n_features * X.var())`` as scikit-learn's SVR (1.0 for constant X)."""
        return scale_gamma(X)

    def _gamma_candidates(self, X: np.ndarray) -> list[float | None]:
        """Widths to fit: one for a fixed width, the grid for ``gamma="evidence"``."""
        k = self.kernel
        if not (isinstance(k, str) and k.lower() in GAMMA_KERNELS):
            return [None]
        if self.gamma == "scale":
            return [self._scale_gamma(X)]
        if self.gamma == "evidence":
            if self.gamma_grid is None:
                return list(self._scale_gamma(X) * _DEFAULT_GRID)
            return [float(g) for g in np.asarray(self.gamma_grid, dtype=float).reshape(-1)]
        return [float(self.gamma)]

    def _make_basis(self, gamma: float | None, seed: int | None = None) -> Basis:
        """An unfitted basis for one width (``seed``: of its choice of centres at large N)."""
        k = self.kernel
        if isinstance(k, Basis):
            return copy.deepcopy(k)
        if isinstance(k, str) and k == "precomputed":
            return PrecomputedBasis(bias=bool(self.bias))
        if isinstance(k, str):
            name = k.lower()
            params: dict[str, Any] = {}
            if name in WIDTH_KERNELS:
                params = {"gamma": gamma}
            elif name in ("poly", "polynomial"):
                params = {"degree": self.degree, "gamma": gamma, "coef0": self.coef0}
            kernel = make_kernel(name, **params)
        else:
            kernel = make_kernel(k)
        # above AUTO_FULL_MAX (2000) training points KernelBasis keeps a subset of centres
        return KernelBasis(kernel, bias=bool(self.bias), random_state=seed)

    def _design(
        self, gamma: float | None, X: np.ndarray, seed: int | None
    ) -> tuple[Basis, np.ndarray, np.ndarray]:
        """The fitted basis for one width, its scaled design matrix and the column scales.

        Returns ``(basis, Phi / scale, scale)`` with ``scale`` the root-mean-square
        of every column of the design matrix: every fit sees the scaled columns
        (the one scaling boundary).  A kernel design matrix is built here and
        scaled in place (no second N x M array).  ``seed`` is drawn once per fit,
        so that every call for one width (a worker's and the rebuild of the
        chosen width) picks the same centres.
        """
        basis = self._make_basis(gamma, seed)
        Phi = basis.fit_transform(X)
        scale = column_rms(Phi)
        # a KernelBasis fills a new array for every call: ours to overwrite
        return basis, scale_columns(Phi, scale, own=type(basis) is KernelBasis), scale

    def _fit_widths(self, X, t, prior, solver, widths, seed) -> list:
        """The reference fit of every width of a grid, through joblib.

        ``n_jobs`` and any :func:`joblib.parallel_config` in effect (for
        example ``backend="dask"`` with a ``dask.distributed`` client) decide
        where they run; each task gets a clone of the estimator (parameters
        only) and builds its own design matrix, so no N x M matrix is sent to
        or kept from a worker.  A worker's warnings are raised here, naming the
        width.
        """
        spec = clone(self)
        return run_tasks(
            _fit_width,
            [(spec, X, g, t, prior, solver, seed) for g in widths],
            [f"gamma={g:.4g}" for g in widths],
            self.n_jobs,
            stacklevel=5,
        )

    def _active_design(self, X) -> np.ndarray:
        """Validate ``X`` and return its design matrix restricted to the active bases."""
        check_numeric(X, "X")
        check_is_fitted(self, "coef_")
        X = validate_data(self, X, reset=False, dtype=np.float64)
        if self.kernel_ is None:
            return self.basis_.transform(X)[:, self.active_]
        cols = []
        if self.bias_active_:
            cols.append(np.ones((X.shape[0], 1)))
        if self.relevance_vectors_.shape[0]:
            cols.append(self.kernel_(X, self.relevance_vectors_))
        return np.hstack(cols) if cols else np.zeros((X.shape[0], 0))

    # --------------------------------------------------------------------- fitting

    def _fit(self, X: np.ndarray, target: np.ndarray) -> None:
        """:meth:`_fit_at_widths`, on one BLAS thread for ``method="reference"`` (``_threads``)."""
        reference = self.method == "reference"
        with single_blas_thread() if reference else contextlib.nullcontext():
            self._fit_at_widths(X, target)

    def _fit_at_widths(self, X: np.ndarray, target: np.ndarray) -> None:
        """Fit every candidate width by the reference solver; keep the best; finish by method.

        The one scaling boundary (docs/design.md section 3): every fit path sees the
        basis columns scaled to unit root-mean-square and, for regression, the
        targets centred and scaled to unit sd; the posterior is mapped back to
        the units of the data once, by :meth:`WeightPosterior.to_data_units`.
        """
        self._check_params()
        if (
            isinstance(self.kernel, str)
            and self.kernel == "precomputed"
            and X.shape[0] != X.shape[1]
        ):
            raise ValueError(
                "kernel='precomputed' needs X to be the square kernel matrix of the training "
                f"points (n_samples x n_samples); got X of shape {X.shape}"
            )
        prior = self._prior()
        regression = self._kind == "regression"
        self.__dict__.pop("evidence_path_", None)  # only a gamma="evidence" fit has one
        if regression:
            t_mean, t_sd = target_scale(target)
            t_s = (target - t_mean) / t_sd
        else:
            t_mean, t_sd, t_s = 0.0, 1.0, target
        # MAP/NUTS start from (and gamma="evidence" chooses the width by) the reference
        # solver under the same prior; "fast" needs a = b = 0, MacKay takes any prior
        ref_solver = self.solver if (prior.a == 0 and prior.b == 0) else "mackay"
        if self.method == "reference":
            ref_solver = self.solver
        candidates = self._gamma_candidates(X)
        seed = _seed(self.random_state)  # one draw per fit: the posterior draws below
        # the centres at large N: None keeps KernelBasis's fixed seed (the same data give
        # the same centres); else one seed for every call of this fit (a Generator would
        # give a worker's fit and the rebuild of the chosen width different centres)
        basis_seed = None if self.random_state is None else seed
        if len(candidates) == 1:
            g = candidates[0]
            need_ref = self.method == "reference" or self._starts_from_reference()
            basis, Phi, scale = self._design(g, X, basis_seed)
            ref = self._reference_fit(Phi, t_s, prior, ref_solver) if need_ref else None
        else:
            refs = self._fit_widths(X, t_s, prior, ref_solver, candidates, basis_seed)
            le = np.array([r.log_evidence for r in refs])
            self.evidence_path_ = {
                "gamma": np.array(candidates),
                "log_evidence": le - target.size * np.log(t_sd),
            }
            k = int(np.nanargmax(le))
            g, ref = candidates[k], refs[k]
            if len(candidates) > 2 and g in (min(candidates), max(candidates)):
                warnings.warn(
                    "gamma='evidence': the largest evidence is at the "
                    f"{'smallest' if g == min(candidates) else 'largest'} width of gamma_grid "
                    f"(gamma={g:.4g}); the best width may lie outside the grid: "
                    "extend gamma_grid past that edge",
                    ConvergenceWarning,
                    stacklevel=3,
                )
            basis, Phi, scale = self._design(g, X, basis_seed)  # rebuilt for the chosen width only
        self.gamma_ = g
        self.basis_ = basis
        self.kernel_ = basis.kernel_ if hasattr(basis, "kernel_") else None
        self.basis_scale_ = scale
        self.y_scale_ = t_sd
        names = tuple(map(str, basis.basis_names_))
        self.model_ = None
        if self.method == "reference":
            active = np.asarray(ref.active, dtype=np.intp)
            post = _reference_posterior(self._kind_of_fit(), ref, names, active)
            info = {
                "log_evidence": float(ref.log_evidence),
                "n_iter": max(int(ref.n_iter), 1),
                "converged": bool(ref.converged),
                "library": "rvm_pymc.reference",
            }
        else:
            from rvm_pymc.inference import fit_backend

            start = ref if self._starts_from_reference() else None
            post, info, self.model_ = fit_backend(
                self._pymc_options(), Phi, t_s, names, prior, seed, start
            )
            active = np.array([names.index(n) for n in post.basis_names], dtype=np.intp)
        # the one map back to the units of the data
        post = post.to_data_units(scale[active], t_mean, t_sd)
        log_evidence = info["log_evidence"] - (target.size * np.log(t_sd) if regression else 0.0)
        self._set_active(active, X)
        # the active columns in the units of the basis (Phi holds them scaled)
        Phi_active = Phi[:, active] * scale[active]
        self._set_result(post, Phi_active, target, info, log_evidence, seed)

    def _kind_of_fit(self) -> str:
        if self._kind == "regression":
            return "regression"
        return "binary" if self.classes_.size == 2 else "softmax"

    def _starts_from_reference(self) -> bool:
        if "initvals" in (self.sampler_kwargs or {}):  # the user's own start
            return False
        init = "reference" if self.init == "auto" and self.method == "map" else self.init
        return self.method != "reference" and init == "reference"

    def _pymc_options(self) -> dict[str, Any]:
        classes = getattr(self, "classes_", None)
        return {
            "method": self.method,
            "kind": self._kind_of_fit(),
            "class_names": None if classes is None else [str(c) for c in classes],
            "draws": self.draws,
            "tune": self.tune,
            "chains": self._chains(),
            "max_iter": self.max_iter,
            "sampler_kwargs": dict(self.sampler_kwargs or {}),
        }

    def _chains(self) -> int:
        return 2 if self.chains is None else int(self.chains)

    def _set_result(self, post, Phi_active, target, info, log_evidence, seed) -> None:
        """Hold the one posterior; every fitted attribute is read from it."""
        self.posterior_ = post
        self.coef_ = post.weight_mean()
        self.sigma_ = post.weight_cov()
        la = np.asarray(post.log_alpha, dtype=float)
        self.alpha_ = np.exp(la if post.is_type_ii else np.median(la.reshape(-1, la.shape[-1]), 0))
        self._set_intercept()
        if post.log_beta is not None:
            beta = np.exp(np.asarray(post.log_beta, dtype=float))
            self.beta_ = float(np.median(beta))
            self.noise_var_ = float(np.mean(1.0 / beta))
            self.y_offset_ = float(post.y_offset)
        self.n_iter_ = int(info["n_iter"])
        self.converged_ = bool(info["converged"])
        self.log_evidence_ = float(log_evidence)
        self._tree_inputs = {
            "Phi": Phi_active,
            "target": target,
            "classes": getattr(self, "classes_", None),
            "seed": seed,
            "sample_stats": info.get("sample_stats"),
            "attrs": {**info.get("attrs", {}), **_fit_attrs(self, info["library"])},
            "draws": self.draws,
            "chains": self._chains(),
        }
        self._idata = None

    def _set_intercept(self) -> None:
        zero = np.zeros(self.coef_.shape[1:]) if self.coef_.ndim > 1 else 0.0
        self.intercept_ = self.coef_[0] if self.bias_active_ else zero

    def _restore_posterior(self) -> None:
        """Rebuild the one posterior from the saved attributes and ``idata_`` (see ``load``)."""
        from rvm_pymc.results import WeightPosterior

        tree = self.idata_
        kind = self._kind_of_fit()
        regression = kind == "regression"
        names = tuple(self.active_names_)
        if self.method == "nuts":
            post = tree["posterior"]
            self.posterior_ = WeightPosterior(
                kind=kind,
                basis_names=names,
                log_alpha=np.asarray(post["log_alpha"].values, dtype=float),
                log_beta=np.asarray(post["log_beta"].values, dtype=float) if regression else None,
                draws=np.asarray(post["W" if kind == "softmax" else "w"].values, dtype=float),
                y_offset=float(self.y_offset_) if regression else 0.0,
            )
        else:
            self.posterior_ = WeightPosterior(
                kind=kind,
                basis_names=names,
                log_alpha=np.log(self.alpha_),
                log_beta=float(np.log(self.beta_)) if regression else None,
                mean=self.coef_,
                cov=self.sigma_,
                y_offset=float(self.y_offset_) if regression else 0.0,
            )
        self._set_intercept()

    @property
    def idata_(self):
        """The fit as an ArviZ DataTree of the result schema (:mod:`rvm_pymc.results`).

        Built on first access from the estimator's one posterior (a grid search
        that never looks at it does not pay for the draws) and kept.
        """
        check_is_fitted(self, "coef_")
        if getattr(self, "_idata", None) is None:
            from rvm_pymc.results import to_datatree

            inp = self._tree_inputs
            self._idata = to_datatree(
                self.posterior_,
                Phi=inp["Phi"],
                target=inp["target"],
                classes=inp["classes"],
                draws=inp["draws"],
                chains=inp["chains"],
                random_state=inp["seed"],
                sample_stats=inp["sample_stats"],
                attrs=inp["attrs"],
            )
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
            ``predictions`` (replicates ``t_obs``/``y_obs`` and the latent
            mean ``mu`` or probabilities ``p`` of every draw) and
            ``predictions_constant_data`` (``Phi`` at ``X``); see
            :func:`rvm_pymc.results.predictions`.
        """
        from rvm_pymc.results import predictions

        Phi = self._active_design(X)  # X checked before the draws of idata_ are made
        return predictions(self.idata_, Phi, random_state=random_state)

    def _set_active(self, active: np.ndarray, X: np.ndarray) -> None:
        """Active bases, relevance indices and vectors from column indices of ``Phi``."""
        active = np.asarray(active, dtype=np.intp)
        basis = self.basis_
        offset = int(basis.bias)
        self.active_ = active
        self.active_names_ = [str(basis.basis_names_[i]) for i in active]
        self.bias_active_ = bool(basis.bias and active.size and active[0] == 0)
        if isinstance(basis, PrecomputedBasis) or self.kernel_ is not None:
            self.relevance_indices_ = active[active >= offset] - offset
            if hasattr(basis, "centre_indices_"):  # columns -> rows of X (a subset of centres)
                self.relevance_indices_ = basis.centre_indices_[self.relevance_indices_]
        else:
            self.relevance_indices_ = np.zeros(0, dtype=np.intp)
        if self.kernel_ is not None:
            self.relevance_vectors_ = X[self.relevance_indices_]
        else:
            self.relevance_vectors_ = np.zeros((0, X.shape[1]))
        if self.kernel_ is not None:
            self.basis_ = None  # predictions need only kernel_ and relevance_vectors_

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

    # -------------------------------------------------------------------- save/load

    def save(self, path, engine: str | None = None) -> None:
        """Write the fitted estimator to a netCDF file, without pickle.

        The file holds ``idata_`` (its groups as netCDF groups when ``h5netcdf``
        or ``netCDF4`` is installed, else flattened into a netCDF-3 file
        written by SciPy), the arrays needed for prediction, the parameters
        as JSON attributes and a SHA-256 checksum of all of it.

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

        See Also
        --------
        load : read it back; refuses a modified file or one of another model.
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
            estimator or an inconsistent model, or fails its checksum
            (modified or corrupted).
        """
        from rvm_pymc.estimators._io import load_estimator

        return load_estimator(path, {cls.__name__: cls}, expected=cls)


def _fit_width(est: _BaseRVM, X: np.ndarray, gamma: float, t, prior, solver, seed):
    """One task of :meth:`_BaseRVM._fit_widths`: the reference fit at one width."""
    _, Phi, _scale = est._design(gamma, X, seed)
    return est._reference_fit(Phi, t, prior, solver)


def _reference_posterior(kind: str, ref, names: tuple, active: np.ndarray):
    """The reference solver's result as a WeightPosterior over its active bases."""
    from rvm_pymc.results import WeightPosterior

    beta = getattr(ref, "beta", None)
    mean = np.asarray(ref.mean, dtype=float)
    if kind == "binary" and mean.ndim == 2:
        mean = mean[:, 0]
    return WeightPosterior(
        kind=kind,
        basis_names=tuple(names[i] for i in active),
        log_alpha=np.log(np.asarray(ref.alpha, dtype=float)),
        log_beta=None if beta is None else float(np.log(beta)),
        mean=mean,
        cov=np.asarray(ref.cov, dtype=float),
    )


def _seed(random_state: Any) -> int:
    """An integer seed from ``random_state`` (None, int, RandomState or Generator)."""
    if isinstance(random_state, np.random.Generator):
        return int(random_state.integers(2**31 - 1))
    return int(check_random_state(random_state).randint(2**31 - 1))


def _fit_attrs(est: _BaseRVM, library: str) -> dict[str, Any]:
    """Root attributes of ``idata_``."""
    return {
        "inference_library": library,
        "rvm_estimator": type(est).__name__,
        "method": est.method,
        "solver": est.solver,
        "log_evidence": float(getattr(est, "log_evidence_", np.nan)),
        "n_iter": int(getattr(est, "n_iter_", 0)),
        "converged": int(bool(getattr(est, "converged_", False))),
    }
