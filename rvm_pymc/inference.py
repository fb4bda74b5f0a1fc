"""Fitting the PyMC RVM models: type-II MAP, NUTS, and the collapsed sampler.

All three return the :class:`xarray.DataTree` layout of ``pm.sample``
(``posterior``, ``sample_stats``, ``log_likelihood``, ``observed_data``,
``constant_data``).  A MAP fit is represented by draws of the weights from
their Gaussian posterior at the optimal hyperparameters (which are repeated in
every draw), so ArviZ summaries and plots work on every fit alike.

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
from rvm_pymc._idata import design_matrix, model_coords, model_data
from rvm_pymc._map import draw_gaussian, gaussian_weights, map_classification, map_regression
from rvm_pymc.exceptions import PriorWarning
from rvm_pymc.models import ModelSpec, model_spec
from rvm_pymc.priors import HyperPrior

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
    prior: HyperPrior = spec.prior
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
    draws: int = 1000,
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
    draws : int
        Number of draws of the weights from their Gaussian posterior.
    random_seed : int, optional
        Seed of those draws.
    initvals : mapping, optional
        Starting values of free variables (``log_alpha``, ``log_beta``,
        ``log_length_scale``); default a data-scaled start.
    max_iter : int
        Iteration cap of L-BFGS-B; a :class:`~rvm_pymc.ConvergenceWarning` is
        issued when it stops before ``max|gradient| <= gtol``.
    gtol : float
        Tolerance on the largest gradient component of the log density (for
        ``laplace="tipping"``: on the largest change of ``log alpha``).
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
        ``posterior``: one chain of ``draws`` draws of ``w`` (or ``W``) from
        ``N(mu, Sigma)`` at the optimum, and the optimal ``log_alpha``,
        ``alpha`` (and ``log_beta``, ``beta``, ``log_length_scale``) repeated
        in every draw; ``sample_stats.lp``; pointwise ``log_likelihood``;
        ``observed_data``; ``constant_data``.  Root attributes:
        ``log_evidence`` (the DESIGN.md objective ``J``, without the Gamma
        normalising constants, Laplace-approximate for classifiers),
        ``converged``, ``n_iter``, ``max_abs_gradient``, ``optimizer_message``.

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
    (True, (1, 10, 2))
    """
    spec = model_spec(model)
    draws = _check_int(draws, "draws", 1)
    max_iter = _check_int(max_iter, "max_iter", 1)
    if not (isinstance(gtol, int | float) and gtol > 0):
        raise ValueError(f"gtol must be a positive number; got {gtol!r}")
    kw = dict(
        draws=draws,
        rng=np.random.default_rng(random_seed),
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
        )
    return idata, sampler


def _add_log_likelihood(idata, model, spec) -> None:
    post = idata["posterior"]
    obs = model_coords(model, "obs")
    Phi = model_data(model, "Phi")
    if spec.kind == "regression_joint":
        t = model_data(model, "t")
        ll = _idata.normal_loglik(t, post["w"].values @ Phi.T, post["beta"].values)
        name = "t_obs"
    elif spec.kind == "binary":
        ll = _idata.bernoulli_loglik(model_data(model, "y"), post["w"].values @ Phi.T)
        name = "y_obs"
    else:
        logits = np.einsum("nm,cdmk->cdnk", Phi, post["W"].values)
        ll = _idata.categorical_loglik(model_data(model, "y").astype(np.int64), logits)
        name = "y_obs"
    da = xr.DataArray(
        ll,
        dims=("chain", "draw", "obs"),
        coords={"chain": post["chain"].values, "draw": post["draw"].values, "obs": obs},
    )
    _idata.set_group(idata, "log_likelihood", {name: da})


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

    Returns
    -------
    xarray.DataTree
        As from ``pm.sample``, plus a pointwise ``log_likelihood`` group (for
        LOO) and root attributes ``rvm_inference``, ``sampler``,
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
    )
    _add_log_likelihood(idata, model, spec)
    names = [v.name for v in model.free_RVs] + (["w"] if "w" in model.named_vars else [])
    diag = _idata.check_sampling(idata, sorted(set(names)), rhat_threshold=rhat_threshold)
    idata.attrs.update(rvm_inference="nuts", rvm_kind=spec.kind, sampler=sampler, **diag)
    return idata


def _exact_weight_draws(model, spec, post, rng) -> tuple[np.ndarray, np.ndarray]:
    """One draw of ``w ~ N(mu, Sigma)`` per posterior draw, and the pointwise log-likelihood."""
    t = model_data(model, "t")
    la = post["log_alpha"].values
    n_chain, n_draw, m = la.shape
    la = la.reshape(-1, m)
    beta = post["beta"].values.ravel()
    lls = post["log_length_scale"].values.ravel() if spec.rbf_width else None
    w = np.empty_like(la)
    ll = np.empty((la.shape[0], t.size))
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
        w[i] = draw_gaussian(L, p, mean, z[i : i + 1])[0]
        ll[i] = _idata.normal_loglik(t, Phi @ w[i], beta[i])
    return w.reshape(n_chain, n_draw, m), ll.reshape(n_chain, n_draw, t.size)


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
    compile_kwargs, cores, rhat_threshold
        As in :func:`sample_nuts`.

    Returns
    -------
    xarray.DataTree
        The ``pm.sample`` result with ``w`` added to ``posterior`` and a
        pointwise ``log_likelihood`` group ``t_obs`` computed from ``(w, beta)``
        (the likelihood of the joint model, as LOO expects).

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
    )
    seed = random_seed if isinstance(random_seed, int | np.integer) else None
    rng = np.random.default_rng(None if seed is None else [int(seed), 7919])
    post = idata["posterior"]
    w, ll = _exact_weight_draws(model, spec, post, rng)
    _idata.add_posterior_variable(idata, "w", w, ("basis",))
    post = idata["posterior"]
    da = xr.DataArray(
        ll,
        dims=("chain", "draw", "obs"),
        coords={
            "chain": post["chain"].values,
            "draw": post["draw"].values,
            "obs": model_coords(model, "obs"),
        },
    )
    _idata.set_group(idata, "log_likelihood", {"t_obs": da})
    names = [v.name for v in model.free_RVs] + ["w"]
    diag = _idata.check_sampling(idata, names, rhat_threshold=rhat_threshold)
    idata.attrs.update(rvm_inference="collapsed_nuts", rvm_kind=spec.kind, sampler=sampler, **diag)
    return idata
