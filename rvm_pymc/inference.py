"""Fitting the PyMC RVM models: type-II MAP, NUTS, and the collapsed sampler.

All three return the one result schema of :mod:`rvm_pymc.results`
(``posterior``, ``posterior_predictive``, ``log_likelihood``,
``sample_stats``, ``observed_data``, ``constant_data``).  A MAP fit is
represented by draws of the weights from their Gaussian posterior at the
optimal hyperparameters, which are point values in ``constant_data``, not
draws, so ArviZ summaries and plots work on every fit alike.

Type-II MAP maximises the model's log density over the *log* precisions
(Jacobian included, DESIGN.md section 1), with the weights integrated out:
exactly for regression (:func:`rvm_pymc.models.regression_marginal`) and by
the Laplace approximation for classification (see :mod:`rvm_pymc._laplace`).
That is not what ``pm.find_MAP`` maximises on a model with ``alpha ~ Gamma``:
``find_MAP`` drops the Jacobian, whose mode ``alpha = (gamma + 2(a-1))/(mu^2 + 2b)``
is unbounded for ``a < 1/2``.

Compilation dominates the cost of small fits.  ``compile_kwargs`` is passed
to PyTensor; it applies to PyMC's own NUTS and to the MAP, not to nutpie or
numpyro.  ``{"mode": "FAST_COMPILE"}`` compiles in about a second and
evaluates a few times slower than the Numba backend, whose cold compile took
1.5-3 minutes here (warm: a few seconds).  A MAP needs only hundreds of
evaluations, so :func:`fit_map` compiles in FAST_COMPILE mode unless told
otherwise; the samplers keep PyMC's default (Numba), which pays off over the
tens of thousands of gradient evaluations of NUTS.

References
----------
Tipping, M. E. (2001). Sparse Bayesian learning and the relevance vector
machine. *Journal of Machine Learning Research* 1, 211-244.

Hoffman, M. D. and Gelman, A. (2014). The No-U-Turn sampler. *Journal of
Machine Learning Research* 15, 1593-1623.
"""

from __future__ import annotations

import importlib.util
import warnings
from collections.abc import Mapping

import numpy as np
import pymc as pm
import xarray as xr

from rvm_pymc import _idata
from rvm_pymc._gaussian import factor_draw
from rvm_pymc._idata import design_matrix, model_coords, model_data
from rvm_pymc._map import MapResult, gaussian_weights, map_classification, map_regression
from rvm_pymc._model_spec import ModelSpec, model_spec
from rvm_pymc.exceptions import PriorWarning
from rvm_pymc.priors import HyperPrior
from rvm_pymc.results import WeightPosterior, to_datatree

__all__ = ["NEAR_IMPROPER", "SAMPLERS", "fit_map", "sample_collapsed", "sample_nuts"]

SAMPLERS = ("pymc", "nutpie", "numpyro")
NEAR_IMPROPER = 1e-3
"""NUTS warns (PriorWarning) when a Gamma shape or rate in use is below this."""
_CHUNK = 256


# --------------------------------------------------------------------- checks


def _check_int(value, name: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}; got {value!r}")
    return int(value)


def _check_prob(value, name: str) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a number in (0, 1); got {value!r}") from exc
    if not 0.0 < v < 1.0:
        raise ValueError(f"{name} must be in (0, 1); got {value!r}")
    return v


def _compile_kw(compile_kwargs: Mapping | None) -> dict:
    if compile_kwargs is None:
        return {}
    if not isinstance(compile_kwargs, Mapping):
        raise ValueError(f"compile_kwargs must be a mapping; got {type(compile_kwargs).__name__}")
    return dict(compile_kwargs)


def _warn_if_near_improper(spec: ModelSpec) -> None:
    prior: HyperPrior | None = spec.prior
    if prior is None:  # a user's own prior: not ours to judge
        return
    used = {"a": prior.a, "b": prior.b}
    if spec.kind.startswith("regression"):
        used.update(c=prior.c, d=prior.d)
    small = {k: v for k, v in used.items() if v < NEAR_IMPROPER}
    if small:
        warnings.warn(
            f"hyperprior parameters {small} are below {NEAR_IMPROPER}: the posterior is "
            "(nearly) improper in the precisions and NUTS will not converge; use the "
            "'weakly_informative' preset on standardised data, or type-II MAP",
            PriorWarning,
            stacklevel=3,
        )


def _resolve_sampler(nuts_sampler: str | None, compile_kwargs: dict) -> str:
    if nuts_sampler is None:
        nuts_sampler = "nutpie" if importlib.util.find_spec("nutpie") else "pymc"
    if nuts_sampler not in SAMPLERS:
        raise ValueError(f"nuts_sampler must be one of {SAMPLERS} or None; got {nuts_sampler!r}")
    if nuts_sampler != "pymc":
        if importlib.util.find_spec(nuts_sampler) is None:
            raise ImportError(
                f"nuts_sampler={nuts_sampler!r} needs the {nuts_sampler} package "
                f"(pip install {nuts_sampler})"
            )
        if compile_kwargs:
            raise ValueError(
                f"compile_kwargs applies to nuts_sampler='pymc' only, not {nuts_sampler!r}"
            )
    return nuts_sampler


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
        with the gradient below :data:`rvm_pymc._map.STALL_GTOL` (1e-6).
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
        DESIGN.md objective ``J``, without the Gamma normalising constants,
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
    """The optimisation of :func:`fit_map` alone: a :class:`~rvm_pymc._map.MapResult`.

    Same arguments as :func:`fit_map`; the estimators use it to map the
    optimum back to the units of the data before building the one tree.
    """
    spec = model_spec(model)
    max_iter = _check_int(max_iter, "max_iter", 1)
    if not (isinstance(gtol, int | float) and gtol > 0):
        raise ValueError(f"gtol must be a positive number; got {gtol!r}")
    kw = dict(
        initvals=initvals,
        max_iter=max_iter,
        gtol=float(gtol),
        mode_kw=_compile_kw(
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


def _kind(spec: ModelSpec) -> str:
    return "regression" if spec.kind.startswith("regression") else spec.kind


def _classes(model, spec: ModelSpec) -> list | None:
    if spec.kind == "softmax":
        return model_coords(model, "class")
    return [0, 1] if spec.kind == "binary" else None


def _target(model, spec: ModelSpec) -> np.ndarray:
    if spec.kind.startswith("regression"):
        return model_data(model, "t")
    return model_data(model, "y").astype(np.int64)


def map_datatree(model: pm.Model, res: MapResult, *, draws=500, chains=2, random_seed=None):
    """The result-schema DataTree of a :func:`optimise_map` result on ``model``'s data."""
    spec = model_spec(model)
    draws = _check_int(draws, "draws", 1)
    chains = _check_int(chains, "chains", 1)
    post = WeightPosterior(
        kind=_kind(spec),
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
        target=_target(model, spec),
        classes=_classes(model, spec),
        draws=draws,
        chains=chains,
        random_state=random_seed,
        attrs=attrs,
    )


# ------------------------------------------------------------------------ NUTS


def _sample(
    model,
    spec,
    *,
    draws,
    tune,
    chains,
    nuts_sampler,
    target_accept,
    random_seed,
    progressbar,
    compile_kwargs,
    cores,
    initvals=None,
):
    draws = _check_int(draws, "draws", 1)
    tune = _check_int(tune, "tune", 0)
    chains = _check_int(chains, "chains", 1)
    target_accept = _check_prob(target_accept, "target_accept")
    ck = _compile_kw(compile_kwargs)
    sampler = _resolve_sampler(nuts_sampler, ck)
    _warn_if_near_improper(spec)
    with model:
        idata = pm.sample(
            draws=draws,
            tune=tune,
            chains=chains,
            cores=cores,
            random_seed=random_seed,
            nuts_sampler=sampler,
            target_accept=target_accept,
            progressbar=progressbar,
            compute_convergence_checks=False,
            compile_kwargs=ck or None,
            initvals=None if initvals is None else dict(initvals),
        )
    return idata, sampler


def _nuts_datatree(model, spec, pm_tree, w, *, random_seed, attrs, rhat_threshold):
    """The result-schema tree of a NUTS run: weight draws ``w``, the sampled hyperparameters."""
    post = pm_tree["posterior"]
    la = np.asarray(post["log_alpha"].values, dtype=float)
    lb = np.asarray(post["log_beta"].values, dtype=float) if "log_beta" in post else None
    stats = pm_tree["sample_stats"]
    sample_stats = {
        k: np.asarray(v.values) for k, v in stats.data_vars.items() if v.dims == ("chain", "draw")
    }
    extra, latent, constant = {}, None, None
    Phi = design_matrix(model, spec) if not spec.rbf_width else None
    if spec.rbf_width:
        lls = np.asarray(post["log_length_scale"].values, dtype=float)
        extra["log_length_scale"] = (("chain", "draw"), lls)
        X, C = model_data(model, "X"), model_data(model, "centres")
        latent = np.empty((*lls.shape, X.shape[0]))
        for idx in np.ndindex(lls.shape):
            latent[idx] = design_matrix(model, spec, float(lls[idx])) @ w[idx]
        constant = {"X": (("obs", "feature"), X), "centres": (("centre", "feature"), C)}
    wp = WeightPosterior(
        kind=_kind(spec),
        basis_names=tuple(model_coords(model, "basis")),
        log_alpha=la,
        log_beta=lb,
        draws=w,
    )
    tree = to_datatree(
        wp,
        Phi=Phi,
        target=_target(model, spec),
        classes=_classes(model, spec),
        random_state=random_seed,
        sample_stats=sample_stats,
        extra_posterior=extra,
        latent=latent,
        constant_data=constant,
        attrs=attrs,
    )
    names = [
        n
        for n in ("w", "W", "log_alpha", "log_beta", "log_length_scale")
        if n in tree["posterior"]
    ]
    diag = _idata.check_sampling(tree, names, rhat_threshold=rhat_threshold)
    tree.attrs.update(diag)
    return tree


def sample_nuts(
    model: pm.Model,
    *,
    draws: int = 1000,
    tune: int = 1000,
    chains: int = 4,
    nuts_sampler: str | None = None,
    target_accept: float = 0.9,
    random_seed=None,
    progressbar: bool = False,
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
        Default nutpie when installed, else PyMC's NUTS (PyMC's own rule).
        An uninstalled choice raises ImportError.
    target_accept : float
        Target acceptance rate of the step-size adaptation.
    random_seed : int or sequence, optional
    progressbar : bool
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
        ``n_divergent``, ``max_rhat``, ``min_ess_bulk``.

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
    idata, sampler = _sample(
        model,
        spec,
        draws=draws,
        tune=tune,
        chains=chains,
        nuts_sampler=nuts_sampler,
        target_accept=target_accept,
        random_seed=random_seed,
        progressbar=progressbar,
        compile_kwargs=compile_kwargs,
        cores=cores,
        initvals=initvals,
    )
    wname = "W" if spec.kind == "softmax" else "w"
    w = np.asarray(idata["posterior"][wname].values, dtype=float)
    return _nuts_datatree(
        model,
        spec,
        idata,
        w,
        random_seed=_seed_of(random_seed, 7907),
        attrs={"rvm_inference": "nuts", "rvm_kind": spec.kind, "sampler": sampler},
        rhat_threshold=rhat_threshold,
    )


def _seed_of(random_seed, salt: int):
    """A generator seeded from ``random_seed`` and ``salt`` (fresh entropy for None)."""
    seed = random_seed if isinstance(random_seed, int | np.integer) else None
    return np.random.default_rng(None if seed is None else [int(seed), salt])


def _exact_weight_draws(model, spec, post, rng) -> np.ndarray:
    """One draw of ``w ~ N(mu, Sigma)`` per posterior draw of the hyperparameters."""
    t = model_data(model, "t")
    la = post["log_alpha"].values
    n_chain, n_draw, m = la.shape
    la = la.reshape(-1, m)
    beta = np.exp(post["log_beta"].values.ravel())
    lls = post["log_length_scale"].values.ravel() if spec.rbf_width else None
    w = np.empty_like(la)
    z = rng.standard_normal(la.shape)
    fixed = None if spec.rbf_width else design_matrix(model, spec)
    if fixed is not None:
        PtP, Ptt = fixed.T @ fixed, fixed.T @ t
    for i in range(la.shape[0]):
        Phi = fixed
        if Phi is None:
            Phi = design_matrix(model, spec, float(lls[i]))
            PtP, Ptt = Phi.T @ Phi, Phi.T @ t
        L, p, mean = gaussian_weights(PtP, Ptt, np.exp(la[i]), float(beta[i]))
        w[i] = factor_draw(L, p, mean, z[i : i + 1])[0]
    return w.reshape(n_chain, n_draw, m)


def sample_collapsed(
    model: pm.Model,
    *,
    draws: int = 1000,
    tune: int = 1000,
    chains: int = 4,
    nuts_sampler: str | None = None,
    target_accept: float = 0.9,
    random_seed=None,
    progressbar: bool = False,
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
    idata, sampler = _sample(
        model,
        spec,
        draws=draws,
        tune=tune,
        chains=chains,
        nuts_sampler=nuts_sampler,
        target_accept=target_accept,
        random_seed=random_seed,
        progressbar=progressbar,
        compile_kwargs=compile_kwargs,
        cores=cores,
        initvals=initvals,
    )
    w = _exact_weight_draws(model, spec, idata["posterior"], _seed_of(random_seed, 7919))
    return _nuts_datatree(
        model,
        spec,
        idata,
        w,
        random_seed=_seed_of(random_seed, 7907),
        attrs={"rvm_inference": "collapsed_nuts", "rvm_kind": spec.kind, "sampler": sampler},
        rhat_threshold=rhat_threshold,
    )
