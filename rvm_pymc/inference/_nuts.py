"""NUTS for the RVM models: :func:`run_nuts` samples with ``pm.sample`` (PyMC's NUTS or
numpyro) or nutpie (:mod:`rvm_pymc.inference._nutpie`), draws a collapsed sampler's weights
exactly and checks the draws, giving a :class:`NutsResult`; :func:`nuts_datatree` turns
that into the result schema."""

from __future__ import annotations

import contextlib
import importlib.util
import signal
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pymc as pm
import xarray as xr

from rvm_pymc._core.convergence import check_sampling
from rvm_pymc._core.parallel import default_cores
from rvm_pymc._core.progress import PLAIN_PROGRESS, DrawLines, note_once
from rvm_pymc._core.threads import single_blas_thread
from rvm_pymc.exceptions import PriorWarning, SamplingWarning, warn_user
from rvm_pymc.inference._nutpie import nutpie_sample
from rvm_pymc.inference._options import STOPPING_SAMPLERS, NutsRun, check_stopping
from rvm_pymc.inference._stop import STOP_ATTRS, recorded_names, stop_rule
from rvm_pymc.inference._swap import nuts_with_swaps
from rvm_pymc.inference._user_models import (
    extra_free,
    keep_extra_free,
    uses_model_likelihood,
    with_model_likelihood,
)
from rvm_pymc.inference._weights import (
    ChainDraws,
    chain_seeds,
    exact_weight_rows,
    reported_draws,
    seed_of,
)
from rvm_pymc.inference.defaults import (
    DEFAULT_SAMPLERS,
    JAX_COLLAPSED_MAX_BASES,
    SWAP_KINDS,
    SWAP_PROPOSALS,
)
from rvm_pymc.models.data import (
    class_labels,
    design_matrix,
    model_coords,
    model_data,
    result_kind,
    target_data,
)
from rvm_pymc.models.spec import ModelSpec
from rvm_pymc.priors import HyperPrior
from rvm_pymc.results import WeightPosterior, to_datatree

__all__ = [
    "NEAR_IMPROPER",
    "SAMPLERS",
    "NutsResult",
    "nuts_datatree",
    "nuts_result",
    "pymc_sample",
    "run_nuts",
]

SAMPLERS = ("pymc", "nutpie", "numpyro")
NEAR_IMPROPER = 1e-3
"""NUTS warns (PriorWarning) when a Gamma shape or rate in use is below this."""


def _warn_if_near_improper(spec: ModelSpec, collapsed: bool) -> None:
    """PriorWarning for a near-improper prior (``collapsed``: the weights integrated out)."""
    prior: HyperPrior | None = spec.prior
    if prior is None:  # a user's own prior
        return
    used = {"a": prior.a, "b": prior.b}
    if spec.kind.startswith("regression"):
        used.update(c=prior.c, d=prior.d)
    small = {k: v for k, v in used.items() if v < NEAR_IMPROPER}
    if not small:
        return
    if collapsed and prior.b == 0:
        what = (
            "the collapsed sampler will not converge: with b = 0 the log alpha of an "
            "irrelevant basis drifts without bound (the likelihood is flat as alpha -> inf)"
        )
    elif collapsed:
        what = (
            "the collapsed sampler can explore it, but the precision of an irrelevant basis "
            "is set by the prior alone (its log alpha spreads up to about log(1/b)), so its "
            "draws and the effective number of parameters reflect that choice"
        )
    else:
        what = (
            "NUTS over the weights will not converge (the funnel between a weight and its "
            "precision reaches the improper region)"
        )
    warn_user(
        f"hyperprior parameters {small} are below {NEAR_IMPROPER}: the posterior is "
        f"(nearly) improper in the precisions; {what}; use the 'weakly_informative' preset "
        "on standardised data, or type-II MAP",
        PriorWarning,
    )


def _swap_count(run: NutsRun, spec: ModelSpec, collapsed: bool) -> int:
    """Basis-swap proposals per draw: ``run.basis_swaps`` or the default."""
    if run.basis_swaps is not None:
        return run.basis_swaps
    # a swap moves weights between fixed columns: none for a model whose columns move
    swapped = spec.kind in SWAP_KINDS and not collapsed and not spec.rbf_width
    return SWAP_PROPOSALS if swapped else 0


def _resolve_sampler(
    nuts_sampler: str | None,
    compile_kwargs: dict,
    n_bases: int = 0,
    lines: bool = False,
    swaps: bool = False,
    stops: bool = False,
) -> str:
    """The NUTS backend: ``nuts_sampler``, or for None the default (``n_bases``: of a collapsed
    model, else 0); one that can stop for ``stops``; PyMC's when the run needs its per-draw
    callback."""
    if nuts_sampler is None:
        order = DEFAULT_SAMPLERS[::-1] if n_bases > JAX_COLLAPSED_MAX_BASES else DEFAULT_SAMPLERS
        order = [n for n in order if n in STOPPING_SAMPLERS] if stops else order
        installed = [n for n in order if importlib.util.find_spec(n)]
        pymc_only = compile_kwargs or lines or swaps
        nuts_sampler = "pymc" if pymc_only or not installed else installed[0]
    if nuts_sampler not in SAMPLERS:
        raise ValueError(f"nuts_sampler must be one of {SAMPLERS} or None; got {nuts_sampler!r}")
    if stops:
        check_stopping(nuts_sampler, "until_converged=True", "until_converged=False")
    if nuts_sampler != "pymc":
        if lines:
            raise ValueError(
                f"progressbar={PLAIN_PROGRESS!r} needs PyMC's own sampler (it calls back after "
                f"every draw); got nuts_sampler={nuts_sampler!r}"
            )
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


def _backend(sampler: str, ck: dict) -> str:
    """What compiles the model for ``sampler``, in words."""
    mode = (ck or {}).get("mode")
    pymc = f"PyTensor mode {mode}" if mode is not None else "PyTensor's default backend, Numba"
    others = {"nutpie": "Numba, through nutpie", "numpyro": "JAX, through numpyro"}
    return others.get(sampler, pymc)


@dataclass
class NutsResult:
    """A NUTS run: the posterior draws and what the sampler reported.

    ``posterior``: weight and hyperparameter draws; ``sample_stats``: the sampler's
    ``(chain, draw)`` statistics; ``attrs``: ``rvm_inference``, ``rvm_kind``, ``sampler``
    and the diagnostics; ``log_length_scale``: the RBF-width model's draws, else None.
    """

    posterior: WeightPosterior
    sample_stats: dict
    attrs: dict
    log_length_scale: np.ndarray | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@contextlib.contextmanager
def _interruptible(active: bool = True) -> Iterator[Any]:
    """Make Ctrl-C during sampling a KeyboardInterrupt nothing swallows: once draws begin,
    SIGINT sets a flag and the yielded callback raises at the next draw (None: inactive)."""
    if not active or threading.current_thread() is not threading.main_thread():
        yield None
        return
    state = {"interrupted": False, "drawing": False}

    def on_sigint(signum, frame):
        state["interrupted"] = True
        if not state["drawing"]:
            raise KeyboardInterrupt

    def callback(trace, draw) -> None:
        state["drawing"] = True
        if state["interrupted"]:
            raise KeyboardInterrupt

    previous = signal.signal(signal.SIGINT, on_sigint)
    try:
        yield callback
    except BaseException as exc:
        if state["interrupted"] and not isinstance(exc, KeyboardInterrupt):
            raise KeyboardInterrupt from exc
        raise
    finally:
        signal.signal(signal.SIGINT, previous)
    if state["interrupted"]:
        raise KeyboardInterrupt


def run_nuts(
    model, spec: ModelSpec, *, collapsed: bool, run: NutsRun, unscaled: bool = False
) -> NutsResult:
    """Sample ``model`` by NUTS; for ``collapsed``, draw the weights exactly afterwards;
    ``unscaled``: as :func:`~rvm_pymc.inference._weights.reported_draws`."""
    n_bases = len(model_coords(model, "basis")) if collapsed else 0
    lines = run.progressbar == PLAIN_PROGRESS
    swaps = _swap_count(run, spec, collapsed) > 0
    stops = run.until_converged is True
    sampler = _resolve_sampler(run.nuts_sampler, run.compile_kwargs, n_bases, lines, swaps, stops)
    if swaps and sampler != "pymc" and run.basis_swaps:
        warn_user(
            f"basis_swaps={run.basis_swaps} is ignored by nuts_sampler={sampler!r}: only "
            "PyMC's NUTS takes the swap move beside it",
            SamplingWarning,
        )
    weights = None
    if collapsed:
        weights = ChainDraws(exact_weight_rows(model, spec), chain_seeds(run.random_seed))
    report = reported_draws(model, spec, weights, unscaled)
    pm_tree = pymc_sample(model, spec, run, sampler, collapsed=collapsed, report=report)
    post = pm_tree["posterior"]
    names = recorded_names(spec, collapsed)
    drawn = report({k: np.asarray(post[k].values, dtype=float) for k in names if k in post})
    inference = "collapsed_nuts" if collapsed else "nuts"
    return nuts_result(model, spec, pm_tree, drawn, run=run, sampler=sampler, inference=inference)


def pymc_sample(
    sample_model, spec: ModelSpec, run: NutsRun, sampler: str, *, collapsed: bool, report=None
) -> xr.DataTree:
    """The draws of ``sample_model`` by ``sampler`` with the options of ``run``, as
    ``pm.sample`` returns them (``report``: as
    :func:`~rvm_pymc.inference._weights.reported_draws` gives it)."""
    _warn_if_near_improper(spec, collapsed)
    if run.chains == 1:
        warn_user(
            "with one chain R-hat cannot be computed (max_rhat is NaN), so the fit is not "
            "counted as converged; use chains >= 2",
            SamplingWarning,
        )
    ck = run.compile_kwargs
    shapes = " (any number of rows or bases)" if sampler == "pymc" else " (the same shapes)"
    note_once(
        "Compiling the %s model for %s NUTS (%s); a first compile on a cold cache can take "
        "a minute or more, later fits of this model reuse the cache%s",
        spec.kind.replace("_", " "),
        sampler,
        _backend(sampler, ck),
        shapes,
    )
    plain = run.progressbar == PLAIN_PROGRESS
    swaps = _swap_count(run, spec, collapsed)
    stop = stop_rule(sample_model, spec, run, sampler, collapsed, report)
    with single_blas_thread(), _interruptible(sampler == "pymc") as on_draw, sample_model:
        lines = DrawLines(run.draws, run.tune, run.chains) if plain else None
        callback = _callbacks(on_draw, lines, stop)
        start = {
            "random_seed": run.random_seed,
            "target_accept": run.target_accept,
            "initvals": None if run.initvals is None else dict(run.initvals),
        }
        if sampler == "pymc" and swaps > 0:
            built = nuts_with_swaps(
                sample_model,
                n_proposals=swaps,
                chains=run.chains,
                kind=None if collapsed else spec.kind,
                tune=run.tune,
                compile_kwargs=ck or None,
                **start,
            )
            if built is not None:  # NUTS is built: PyMC takes no target_accept beside it
                start = {"initvals": built[0], "step": built[1], "random_seed": run.random_seed}
        cores = default_cores(run.chains) if run.cores is None else run.cores
        if sampler == "nutpie":
            tree = nutpie_sample(sample_model, run, stop, cores=cores)
        else:
            tree = pm.sample(
                draws=run.draws,
                tune=run.tune,
                chains=run.chains,
                cores=cores,
                nuts_sampler=sampler,
                progressbar=False if plain else run.progressbar,
                compute_convergence_checks=False,
                compile_kwargs=ck or None,
                **start,
                **({} if callback is None else {"callback": callback}),
            )
    if stop is not None:
        stop.report(tree)
    return tree


def _callbacks(*callbacks):
    """One ``pm.sample`` callback calling each of ``callbacks`` that is not None (or None)."""
    given = [c for c in callbacks if c is not None]
    if len(given) < 2:
        return given[0] if given else None

    def callback(trace, draw) -> None:
        for c in given:
            c(trace=trace, draw=draw)

    return callback


WIDTH_MODES_HINT = (
    "the kernel width has several modes: fit at one width rather than over it (for the "
    "estimators, gamma='cv', 'evidence' or a number)"
)


def nuts_result(
    model, spec: ModelSpec, pm_tree: xr.DataTree, drawn: dict, *, run, sampler, inference
) -> NutsResult:
    """The checked :class:`NutsResult` of :func:`pymc_sample`'s tree and ``drawn``, the
    draws as the fit reports them; ``inference`` is the ``rvm_inference`` attribute."""
    post = pm_tree["posterior"]
    w = drawn["W" if "W" in drawn else "w"]
    la, lb = drawn["log_alpha"], drawn.get("log_beta")
    ld = drawn.get("log_dispersion")
    lls = drawn["log_length_scale"] if spec.rbf_width else None
    stats = pm_tree["sample_stats"].to_dataset()
    sample_stats = {
        k: np.asarray(v.values) for k, v in stats.data_vars.items() if v.dims == ("chain", "draw")
    }
    sampled = {"w": w, "log_alpha": la, "log_beta": lb, "log_length_scale": lls}
    sampled["log_dispersion"] = ld
    sampled.update({n: np.asarray(post[n].values) for n in extra_free(model) if n in post})
    n_div = int(stats["diverging"].sum()) if "diverging" in stats else 0
    diag = check_sampling(
        {k: v for k, v in sampled.items() if v is not None},
        n_div,
        rhat_threshold=run.rhat_threshold,
        min_ess=run.min_ess,
        hints={"log_length_scale": WIDTH_MODES_HINT},
    )
    diag["sampling_time"] = float(post.attrs.get("sampling_time", np.nan))
    if run.progressbar == PLAIN_PROGRESS:
        DrawLines(int(post.sizes["draw"]), run.tune, run.chains).summary(
            diag["sampling_time"], diag["max_rhat"], diag["n_divergent"]
        )
    kind = result_kind(spec)
    names, nb_ld = tuple(model_coords(model, "basis")), ld if kind == "negative_binomial" else None
    posterior = WeightPosterior(
        kind=kind, basis_names=names, log_alpha=la, log_beta=lb, draws=w, log_dispersion=nb_ld
    )
    attrs = {
        "rvm_inference": inference,
        "rvm_kind": spec.kind,
        "sampler": sampler,
        **diag,
        **{k: pm_tree.attrs[k] for k in STOP_ATTRS if k in pm_tree.attrs},
    }
    extra = {"pymc_posterior": post.to_dataset()}
    return NutsResult(posterior, sample_stats, attrs, log_length_scale=lls, extra=extra)


def nuts_datatree(
    model, spec: ModelSpec, res: NutsResult, *, random_seed=None, compile_kwargs=None
) -> xr.DataTree:
    """The result-schema DataTree of a :class:`NutsResult` on ``model``'s data (a user's
    model's own likelihood and free variables kept, ``compile_kwargs`` compiling them)."""
    extra, latent, constant = {}, None, None
    Phi = None if spec.rbf_width else design_matrix(model, spec)
    if spec.rbf_width:
        lls, w = res.log_length_scale, res.posterior.draws
        extra["log_length_scale"] = (("chain", "draw"), lls)
        X, C = model_data(model, "X"), model_data(model, "centres")
        latent = np.empty((*lls.shape, X.shape[0]))
        for idx in np.ndindex(lls.shape):
            latent[idx] = design_matrix(model, spec, float(lls[idx])) @ w[idx]
        constant = {"X": (("obs", "feature"), X), "centres": (("centre", "feature"), C)}
    rng = seed_of(random_seed, 7907)
    tree = to_datatree(
        res.posterior,
        Phi=Phi,
        target=target_data(model, spec),
        classes=class_labels(model, spec),
        random_state=rng,
        sample_stats=res.sample_stats,
        extra_posterior=extra,
        latent=latent,
        constant_data=constant,
        attrs=res.attrs,
    )
    if "pymc_posterior" in res.extra:
        keep_extra_free(tree, model, res.extra["pymc_posterior"])
    if uses_model_likelihood(model, spec) and "pymc_posterior" in res.extra:
        with_model_likelihood(
            tree,
            model,
            spec,
            res.extra["pymc_posterior"],
            res.posterior.draws,
            random_seed=int(rng.integers(2**31 - 1)),
            compile_kwargs=compile_kwargs,
        )
    return tree
