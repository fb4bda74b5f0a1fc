"""MAP, NUTS and the collapsed sampler on the PyMC models (see :mod:`rvm_pymc.inference`)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pymc as pm
import xarray as xr

from rvm_pymc._core.threads import single_blas_thread
from rvm_pymc._core.validation import check_int, is_real
from rvm_pymc.inference._map import MapResult, map_regression
from rvm_pymc.inference._map_classification import map_classification
from rvm_pymc.inference._nuts import NutsResult, nuts_datatree, run_nuts
from rvm_pymc.inference._options import NutsRun, compile_options, takes_nuts_run
from rvm_pymc.inference._user_models import (
    check_user_model,
    uses_model_likelihood,
    with_model_likelihood,
)
from rvm_pymc.models import data as _idata
from rvm_pymc.models.data import class_labels, model_coords, result_kind, target_data
from rvm_pymc.models.spec import model_spec
from rvm_pymc.results import to_datatree


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
        Target of L-BFGS-B on the largest gradient component in the log precisions
        (``laplace="tipping"``: on the largest change of ``log alpha``).  A stall with
        ``J`` unchanged in floating point also converges if the gradient is below 1e-6
        or a Newton step would gain below ``1e-12 (1 + |J|)``.
    laplace : {"exact", "tipping"}
        Classifiers only.  ``"exact"`` maximises the Laplace-approximate evidence with
        its exact gradient (implicit differentiation through the inner Newton solve);
        ``"tipping"`` finds the fixed point of Tipping's re-estimation (curvature held
        fixed at the mode: the reference solver's answer, O(1/N) from ``"exact"``).
    compile_kwargs : mapping, optional
        Passed to PyTensor; default ``{"mode": "FAST_COMPILE"}``.

    Returns
    -------
    xarray.DataTree
        The result schema of :mod:`rvm_pymc.results` over every basis: ``posterior``
        holds draws of ``w`` (or ``W``) from ``N(mu, Sigma)`` at the optimum; the optimal
        ``log_alpha`` (and ``log_beta``) are point values in ``constant_data`` (a pruned
        basis at ``log alpha = 50``).  Root attributes: ``log_evidence`` (``J`` of
        docs/design.md without the Gamma normalising constants, Laplace-approximate for
        classifiers), ``converged``, ``n_iter``, ``max_abs_gradient``,
        ``optimizer_message`` (and the RBF-width model's ``log_length_scale``).

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
    """The optimisation of :func:`fit_map` alone (same arguments), without the DataTree.

    Returns a :class:`~rvm_pymc.inference._map.MapResult`.
    """
    spec = model_spec(model)
    max_iter = check_int(max_iter, "max_iter", 1)
    if not (is_real(gtol) and gtol > 0):
        raise ValueError(f"gtol must be a positive number; got {gtol!r}")
    mode_kw = compile_options(
        {"mode": "FAST_COMPILE"} if compile_kwargs is None else compile_kwargs
    )
    kw = dict(initvals=initvals, max_iter=max_iter, gtol=float(gtol), mode_kw=mode_kw)
    if laplace not in ("exact", "tipping"):
        raise ValueError(f"laplace must be 'exact' or 'tipping'; got {laplace!r}")
    _idata.check_gram(model, spec)
    if spec.kind == "regression_marginal" and laplace != "exact":
        raise ValueError("laplace applies to classifiers only (regression MAP is exact)")
    if spec.kind == "negative_binomial":
        raise ValueError(
            "type-II MAP of the negative binomial model (a free log_dispersion) is not "
            "implemented: sample it (sample_nuts), or fit it by the reference solver"
        )
    if spec.kind not in ("regression_marginal", "binary", "softmax", "poisson"):
        raise ValueError(
            "type-II MAP integrates the weights out of the Normal likelihood of "
            "regression_marginal (got a joint regression model): build the model with "
            "regression_marginal, or sample a likelihood of its own (such as "
            'regression_joint(..., likelihood="student_t")) with sample_nuts'
        )
    check_user_model(model, spec, "map", kw["mode_kw"])
    with single_blas_thread():
        if spec.kind == "regression_marginal":
            return map_regression(model, spec, **kw)
        return map_classification(model, spec, laplace=laplace, **kw)


def map_datatree(model: pm.Model, res: MapResult, *, draws=500, chains=2, random_seed=None):
    """The result-schema DataTree of a :func:`optimise_map` result on ``model``'s data."""
    spec = model_spec(model)
    draws = check_int(draws, "draws", 1)
    chains = check_int(chains, "chains", 1)
    post = res.posterior(result_kind(spec), model_coords(model, "basis"))
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
    rng = np.random.default_rng(random_seed)
    tree = to_datatree(
        post,
        Phi=res.Phi,
        target=target_data(model, spec),
        classes=class_labels(model, spec),
        draws=draws,
        chains=chains,
        random_state=rng,
        attrs=attrs,
    )
    if uses_model_likelihood(model, spec):  # a classifier of one's own likelihood
        draws_ = tree["posterior"]["W" if spec.kind == "softmax" else "w"].values
        # the model's logp takes every free variable: the optimum's log_alpha at every draw
        la = np.broadcast_to(res.log_alpha, (*draws_.shape[:2], res.log_alpha.size))
        dims = ("chain", "draw", *(model.named_vars_to_dims.get("log_alpha") or ["basis"]))
        with_model_likelihood(
            tree,
            model,
            spec,
            xr.Dataset({"log_alpha": (dims, la)}),
            draws_,
            random_seed=int(rng.integers(2**31 - 1)),
            compile_kwargs={"mode": "FAST_COMPILE"},
        )
    return tree


# ------------------------------------------------------------------------ NUTS


@takes_nuts_run
def sample_nuts(model: pm.Model, run: NutsRun) -> xr.DataTree:
    """Full Bayes by NUTS over the weights and the log precisions (joint models).

    Parameters
    ----------
    model : pymc.Model
        :func:`~rvm_pymc.models.regression_joint`,
        :func:`~rvm_pymc.models.classification_binary` or
        :func:`~rvm_pymc.models.classification_softmax`.
    draws, tune, chains, nuts_sampler, target_accept, random_seed, progressbar, \
compile_kwargs, cores, rhat_threshold, min_ess, initvals, basis_swaps, until_converged
        Keyword-only: the run options of :class:`~rvm_pymc.inference._options.NutsRun`
        (defaults: :mod:`rvm_pymc.inference.defaults`); an unknown keyword is a
        TypeError.  The run holds BLAS at one thread (restored after).

    Returns
    -------
    xarray.DataTree
        The result schema of :mod:`rvm_pymc.results`: ``posterior`` holds ``w`` (``W``),
        ``log_alpha`` (and ``log_beta``); pointwise ``log_likelihood``,
        ``posterior_predictive``, the sampler's ``sample_stats``; root attributes
        ``rvm_inference``, ``sampler``, ``n_divergent``, ``max_rhat``, ``min_ess_bulk``,
        ``min_ess_tail`` and ``sampling_time`` (seconds of sampling, without
        compilation).

    Raises
    ------
    KeyboardInterrupt
        On Ctrl-C (SIGINT) during the run: never swallowed.

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
    check_user_model(model, spec, "nuts")
    res = run_nuts(model, spec, collapsed=False, run=run)
    return nuts_datatree(
        model, spec, res, random_seed=run.random_seed, compile_kwargs=run.compile_kwargs
    )


@takes_nuts_run
def sample_collapsed(model: pm.Model, run: NutsRun) -> xr.DataTree:
    """Collapsed sampler: NUTS on the marginal model, then exact weight draws.

    NUTS explores ``(log alpha, log beta)`` (and ``log_length_scale``) under the marginal
    likelihood of :func:`~rvm_pymc.models.regression_marginal`; one exact
    ``w ~ N(mu, Sigma)`` a draw gives the joint posterior without its funnel.

    Parameters
    ----------
    model : pymc.Model
        A marginal regression model.
    draws, tune, chains, nuts_sampler, target_accept, random_seed, progressbar, \
compile_kwargs, cores, rhat_threshold, min_ess, initvals, basis_swaps, until_converged
        Keyword-only, as in :func:`sample_nuts`.

    Returns
    -------
    xarray.DataTree
        As for :func:`sample_nuts`, with ``log_length_scale`` for the RBF-width model; the
        pointwise ``log_likelihood`` of ``t_obs`` is that of the joint model at ``(w, beta)``.

    Raises
    ------
    KeyboardInterrupt
        As in :func:`sample_nuts`.

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
    check_user_model(model, spec, "collapsed", run.compile_kwargs)
    res = run_nuts(model, spec, collapsed=True, run=run)
    return nuts_datatree(model, spec, res, random_seed=run.random_seed)


@takes_nuts_run
def nuts_posterior(model: pm.Model, run: NutsRun) -> NutsResult:
    """The run of :func:`sample_collapsed` (marginal model) or :func:`sample_nuts` (joint
    models), same arguments, as a :class:`~rvm_pymc.inference._nuts.NutsResult`."""
    spec = model_spec(model)
    collapsed = spec.kind == "regression_marginal"
    if collapsed:
        _idata.check_gram(model, spec)
    check_user_model(model, spec, "collapsed" if collapsed else "nuts", run.compile_kwargs)
    return run_nuts(model, spec, collapsed=collapsed, run=run)
