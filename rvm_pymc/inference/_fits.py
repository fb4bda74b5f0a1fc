"""MAP, NUTS and the collapsed sampler on the PyMC models (see :mod:`rvm_pymc.inference`)."""

from __future__ import annotations

import numbers
from collections.abc import Mapping

import numpy as np
import pymc as pm
import xarray as xr

from rvm_pymc._core.validation import check_int
from rvm_pymc.inference._map import MapResult, map_regression
from rvm_pymc.inference._map_classification import map_classification
from rvm_pymc.inference._nuts import (
    NEAR_IMPROPER,
    SAMPLERS,
    NutsResult,
    compile_options,
    nuts_datatree,
    run_nuts,
)
from rvm_pymc.models import data as _idata
from rvm_pymc.models.data import class_labels, model_coords, result_kind, target_data
from rvm_pymc.models.spec import model_spec
from rvm_pymc.results import WeightPosterior, to_datatree

__all__ = [
    "NEAR_IMPROPER",
    "SAMPLERS",
    "NutsResult",
    "fit_map",
    "map_datatree",
    "nuts_posterior",
    "optimise_map",
    "sample_collapsed",
    "sample_nuts",
]


def fit_map(
    model: pm.Model,
    *,
    draws: int = 500,
    chains: int = 2,
    random_seed: int | None = None,
    initvals: Mapping[str, np.ndarray] | None = None,
    max_iter: int = 5000,
    gtol: float = 1e-8,
    laplace: str = "exact",
    compile_kwargs: Mapping | None = None,
) -> xr.DataTree:
    """Type-II MAP: maximise the log-coordinate density of the hyperparameters.

    Parameters
    ----------
    model : pymc.Model
        :func:`~rvm_pymc.models.regression_marginal`,
        :func:`~rvm_pymc.models.regression_marginal_rbf`, or a centred
        :func:`~rvm_pymc.models.classification_binary` /
        :func:`~rvm_pymc.models.classification_softmax` model.
    draws, chains : int
        Draws per chain of the weights from their Gaussian posterior at the
        optimum (antithetic across chain pairs, see :mod:`rvm_pymc.results`).
    random_seed : int, optional
        Seed of those draws and of the posterior predictive replicates.
    initvals : mapping, optional
        Starting values of free variables (``log_alpha``, ``log_beta``,
        ``log_length_scale``); default a data-scaled start.
    max_iter : int
        Iteration cap of L-BFGS-B; a :class:`~rvm_pymc.ConvergenceWarning` is
        issued when it stops before ``max|gradient| <= gtol``.
    gtol : float
        Target of L-BFGS-B on the largest gradient component of the log
        density in the log precisions (for ``laplace="tipping"``: on the
        largest change of ``log alpha``).  Converged when it is met, or when
        L-BFGS-B can make no more progress (``J`` unchanged in floating point)
        with the gradient below :data:`rvm_pymc.inference._map.STALL_GTOL` (1e-6) or a Newton
        step along it gaining at most :data:`rvm_pymc.inference._map.STALL_GAIN` ``* (1 + |J|)``
        (1e-12).
    laplace : {"exact", "tipping"}
        Classifiers only.  ``"exact"`` maximises the Laplace-approximate
        evidence with its exact gradient (implicit differentiation through
        the inner Newton solve).  ``"tipping"`` finds the fixed point of
        Tipping's re-estimation, which holds the likelihood curvature fixed
        at the mode; that is the reference solver's answer and differs from
        the ``"exact"`` maximiser by O(1/N) (0.015 in predictive probability
        at N = 50, 0.001 at N = 200 on a two-dimensional problem).
    compile_kwargs : mapping, optional
        Passed to PyTensor; default ``{"mode": "FAST_COMPILE"}`` (see the module
        docstring).  ``{"mode": "NUMBA"}`` is PyTensor's default backend.

    Returns
    -------
    xarray.DataTree
        The result schema of :mod:`rvm_pymc.results` over every basis of the
        model: ``posterior`` holds draws of ``w`` (or ``W``) from
        ``N(mu, Sigma)`` at the optimum; the optimal ``log_alpha`` (and
        ``log_beta``) are point values in ``constant_data`` (a pruned basis
        sits at ``log alpha = 50``); ``log_length_scale`` of the RBF-width model
        is a root attribute.  Root attributes also: ``log_evidence`` (the
        docs/design.md objective ``J``, without the Gamma normalising constants,
        Laplace-approximate for classifiers), ``converged``, ``n_iter``,
        ``max_abs_gradient``, ``optimizer_message``.

    Raises
    ------
    ValueError
        For a joint regression model (use the marginal model), a non-centred
        classifier, or invalid arguments.

    References
    ----------
    Tipping (2001), JMLR 1:211-244, sections 2.2 and 4; MacKay (1992),
    Neural Computation 4:720-736.

    Examples
    --------
    >>> import numpy as np
    >>> from rvm_pymc.models import regression_marginal
    >>> rng = np.random.default_rng(0)
    >>> Phi = np.column_stack([np.ones(20), np.linspace(-1, 1, 20)])
    >>> t = 2 * Phi[:, 1] + 0.1 * rng.standard_normal(20)
    >>> fit = fit_map(regression_marginal(Phi, t), draws=10)
    >>> bool(fit.attrs["converged"]), fit.posterior["w"].shape
    (True, (2, 10, 2))
    """
    res = optimise_map(
        model,
        initvals=initvals,
        max_iter=max_iter,
        gtol=gtol,
        laplace=laplace,
        compile_kwargs=compile_kwargs,
    )
    return map_datatree(model, res, draws=draws, chains=chains, random_seed=random_seed)


def optimise_map(
    model: pm.Model,
    *,
    initvals: Mapping[str, np.ndarray] | None = None,
    max_iter: int = 5000,
    gtol: float = 1e-8,
    laplace: str = "exact",
    compile_kwargs: Mapping | None = None,
) -> MapResult:
    """The optimisation of :func:`fit_map` alone: a :class:`~rvm_pymc.inference._map.MapResult`.

    Same arguments as :func:`fit_map`; the estimators use it to map the
    optimum back to the units of the data before building the one tree.
    """
    spec = model_spec(model)
    max_iter = check_int(max_iter, "max_iter", 1)
    if isinstance(gtol, bool) or not (isinstance(gtol, numbers.Real) and gtol > 0):
        raise ValueError(f"gtol must be a positive number; got {gtol!r}")
    kw = dict(
        initvals=initvals,
        max_iter=max_iter,
        gtol=float(gtol),
        mode_kw=compile_options(
            {"mode": "FAST_COMPILE"} if compile_kwargs is None else compile_kwargs
        ),
    )
    if laplace not in ("exact", "tipping"):
        raise ValueError(f"laplace must be 'exact' or 'tipping'; got {laplace!r}")
    _idata.check_gram(model, spec)
    if spec.kind == "regression_marginal":
        if laplace != "exact":
            raise ValueError("laplace applies to classifiers only (regression MAP is exact)")
        return map_regression(model, spec, **kw)
    if spec.kind in ("binary", "softmax"):
        return map_classification(model, spec, laplace=laplace, **kw)
    raise ValueError(
        "type-II MAP integrates the weights out: build the model with "
        "regression_marginal (got a joint regression model)"
    )


def map_datatree(model: pm.Model, res: MapResult, *, draws=500, chains=2, random_seed=None):
    """The result-schema DataTree of a :func:`optimise_map` result on ``model``'s data."""
    spec = model_spec(model)
    draws = check_int(draws, "draws", 1)
    chains = check_int(chains, "chains", 1)
    post = WeightPosterior(
        kind=result_kind(spec),
        basis_names=tuple(model_coords(model, "basis")),
        log_alpha=res.log_alpha,
        log_beta=res.log_beta,
        mean=res.mean,
        cov=res.cov,
    )
    attrs = {
        "rvm_inference": "map",
        "rvm_kind": spec.kind,
        "log_evidence": res.log_evidence,
        "converged": int(res.converged),
        "n_iter": res.n_iter,
        "max_abs_gradient": res.max_abs_gradient,
        "optimizer_message": res.message,
        **res.attrs,
        **res.extra,
    }
    return to_datatree(
        post,
        Phi=res.Phi,
        target=target_data(model, spec),
        classes=class_labels(model, spec),
        draws=draws,
        chains=chains,
        random_state=random_seed,
        attrs=attrs,
    )


# ------------------------------------------------------------------------ NUTS


def sample_nuts(
    model: pm.Model,
    *,
    draws: int = 1000,
    tune: int = 1000,
    chains: int = 4,
    nuts_sampler: str | None = None,
    target_accept: float = 0.9,
    random_seed=None,
    progressbar: bool = True,
    compile_kwargs: Mapping | None = None,
    cores: int | None = None,
    rhat_threshold: float = 1.01,
    initvals: Mapping[str, np.ndarray] | None = None,
) -> xr.DataTree:
    """Full Bayes by NUTS over the weights and the log precisions (joint models).

    Parameters
    ----------
    model : pymc.Model
        :func:`~rvm_pymc.models.regression_joint`,
        :func:`~rvm_pymc.models.classification_binary` or
        :func:`~rvm_pymc.models.classification_softmax`.
    draws, tune, chains : int
        As in ``pm.sample``.
    nuts_sampler : {"pymc", "nutpie", "numpyro"}, optional
        Default numpyro when installed, else nutpie when installed, else
        PyMC's NUTS (PyMC's always when ``compile_kwargs`` is given); for the
        collapsed sampler with more than 200 bases nutpie before numpyro.
        Chosen by time to a posterior from an empty compile cache
        (:data:`rvm_pymc.inference._nuts.DEFAULT_SAMPLERS`,
        :data:`~rvm_pymc.inference._nuts.JAX_COLLAPSED_MAX_BASES`).  The note
        before the compile names the backend used.
        An uninstalled choice raises ImportError.
    target_accept : float
        Target acceptance rate of the step-size adaptation.
    random_seed : int or sequence, optional
    progressbar : bool
        The sampler's progress bars (default on; ``False`` for none).  Before
        compiling, a one-line note goes to the ``rvm_pymc`` logger (INFO, to
        stderr unless logging is configured, as PyMC's own "Initializing
        NUTS" note).
    compile_kwargs : mapping, optional
        PyTensor compile options (PyMC's sampler only).
    cores : int, optional
        Parallel chains (PyMC's sampler only).
    rhat_threshold : float
        Warn when the worst R-hat exceeds it.
    initvals : mapping, optional
        Starting values of free variables, as ``pm.sample``'s ``initvals``
        (the estimators pass the reference solution with ``init="reference"``).

    Returns
    -------
    xarray.DataTree
        The result schema of :mod:`rvm_pymc.results`: ``posterior`` holds the
        weights ``w`` (``W``), ``log_alpha`` (and ``log_beta``); pointwise
        ``log_likelihood`` (for LOO), ``posterior_predictive``, the sampler's
        ``sample_stats``; root attributes ``rvm_inference``, ``sampler``,
        ``n_divergent``, ``max_rhat``, ``min_ess_bulk`` and ``sampling_time``
        (seconds of tuning and drawing by the sampler's clock; compilation
        before it not counted).

    Warns
    -----
    PriorWarning
        When a Gamma shape or rate in use is below :data:`NEAR_IMPROPER`.
    SamplingWarning
        On divergences or R-hat above ``rhat_threshold``.

    References
    ----------
    Hoffman & Gelman (2014), JMLR 15:1593-1623; Tipping (2001), JMLR 1:211-244.
    """
    spec = model_spec(model)
    if spec.kind == "regression_marginal":
        raise ValueError("the marginal regression model has no weights; use sample_collapsed")
    return nuts_datatree(model, spec, _run(model, spec, False, locals()), random_seed=random_seed)


def sample_collapsed(
    model: pm.Model,
    *,
    draws: int = 1000,
    tune: int = 1000,
    chains: int = 4,
    nuts_sampler: str | None = None,
    target_accept: float = 0.9,
    random_seed=None,
    progressbar: bool = True,
    compile_kwargs: Mapping | None = None,
    cores: int | None = None,
    rhat_threshold: float = 1.01,
    initvals: Mapping[str, np.ndarray] | None = None,
) -> xr.DataTree:
    """Collapsed sampler: NUTS on the marginal model, then exact weight draws.

    NUTS explores ``(log alpha, log beta)`` (and ``log_length_scale``) under
    the marginal likelihood of :func:`~rvm_pymc.models.regression_marginal`;
    for every posterior draw one ``w ~ N(mu, Sigma)`` is drawn exactly, so
    the result is a draw from the joint posterior of the joint model without
    its funnel geometry.

    Parameters
    ----------
    model : pymc.Model
        A marginal regression model.
    draws, tune, chains, nuts_sampler, target_accept, random_seed, progressbar,
    compile_kwargs, cores, rhat_threshold, initvals
        As in :func:`sample_nuts`.

    Returns
    -------
    xarray.DataTree
        The result schema of :mod:`rvm_pymc.results`: ``posterior`` holds
        ``w`` (one exact draw per draw of the hyperparameters), ``log_alpha``,
        ``log_beta`` (and ``log_length_scale``); the pointwise
        ``log_likelihood`` of ``t_obs`` is computed from ``(w, beta)`` (the
        likelihood of the joint model, as LOO expects); ``sample_stats`` are
        the sampler's.

    Warns
    -----
    PriorWarning, SamplingWarning
        As in :func:`sample_nuts`.

    References
    ----------
    Tipping (2001), JMLR 1:211-244, section 2; Hoffman & Gelman (2014).
    """
    spec = model_spec(model)
    if spec.kind != "regression_marginal":
        raise ValueError(
            "sample_collapsed needs a marginal regression model (regression_marginal)"
        )
    _idata.check_gram(model, spec)
    return nuts_datatree(model, spec, _run(model, spec, True, locals()), random_seed=random_seed)


def _run(model, spec, collapsed: bool, args: dict) -> NutsResult:
    keys = (
        "draws",
        "tune",
        "chains",
        "nuts_sampler",
        "target_accept",
        "random_seed",
        "progressbar",
        "compile_kwargs",
        "cores",
        "rhat_threshold",
        "initvals",
    )
    return run_nuts(model, spec, collapsed=collapsed, **{k: args[k] for k in keys})


def nuts_posterior(
    model: pm.Model,
    *,
    draws: int = 1000,
    tune: int = 1000,
    chains: int = 4,
    nuts_sampler: str | None = None,
    target_accept: float = 0.9,
    random_seed=None,
    progressbar: bool = True,
    compile_kwargs: Mapping | None = None,
    cores: int | None = None,
    rhat_threshold: float = 1.01,
    initvals: Mapping[str, np.ndarray] | None = None,
) -> NutsResult:
    """The NUTS run of :func:`sample_collapsed` (marginal regression model) or
    :func:`sample_nuts` (joint models) without the DataTree.

    Same arguments; returns a :class:`~rvm_pymc.inference._nuts.NutsResult`, whose
    ``posterior`` the estimators map to the units of the data before they
    build their one tree (so the pointwise likelihood and the replicates are
    computed once).
    """
    spec = model_spec(model)
    collapsed = spec.kind == "regression_marginal"
    if collapsed:
        _idata.check_gram(model, spec)
    return _run(model, spec, collapsed, locals())
