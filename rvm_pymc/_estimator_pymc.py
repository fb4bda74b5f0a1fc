"""The ``"map"`` and ``"nuts"`` fits of the estimators, on :mod:`rvm_pymc.inference`.

Imported only when an estimator is fitted with one of these methods, so that
``import rvm_pymc`` and ``method="reference"`` never import PyMC.

Both work on the scaled problem the estimator hands them (basis columns of
unit root-mean-square, regression targets standardised: the one scaling
boundary of :mod:`rvm_pymc._estimator_base`), which is also the scale on which
the ``"weakly_informative"`` prior is stated (:mod:`rvm_pymc.priors`), and
return a :class:`~rvm_pymc.results.WeightPosterior` that the estimator maps
back to the units of the data once.

``"map"``
    :func:`rvm_pymc.inference.optimise_map` on the full design matrix
    (marginal regression model; centred classification model), started by
    default from the reference solution under the same prior
    (``init="auto"``).  Under the flat prior an irrelevant precision is pruned
    to the upper bound ``log alpha = 50``; the posterior is the Gaussian
    (Laplace) posterior of the optimum, restricted to the other bases (its
    marginal: no second pruning, no re-solve).
``"nuts"``
    Full Bayes over all bases (nothing is pruned).  Regression uses the
    collapsed sampler by default (``sampler_kwargs={"model": "joint"}`` for
    weight-space NUTS).  Weights are non-centred for the classifiers and
    centred for joint regression by default (:data:`DEFAULT_PARAMETRIZATION`).
    ``init="reference"`` starts the chains at the reference solution.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rvm_pymc._model_checks import PARAMETRIZATIONS

__all__ = ["check_sampler_kwargs", "fit_pymc"]

_MAP_KEYS = ("initvals", "max_iter", "gtol", "laplace", "compile_kwargs")
_NUTS_KEYS = (
    "model",
    "initvals",
    "parametrization",
    "nuts_sampler",
    "target_accept",
    "compile_kwargs",
    "cores",
    "progressbar",
    "rhat_threshold",
)
DEFAULT_PARAMETRIZATION = {
    "regression": "centred",
    "binary": "non_centred",
    "softmax": "non_centred",
}
"""Weights of NUTS by default (``sampler_kwargs["parametrization"]``), chosen by
``benchmarks/bench_pymc_speed.py --part params`` (docs/pymc.md): the centred
classifiers mixed badly (R-hat 1.25-1.65, bulk ESS 3-7 of 1000 draws), the
non-centred ones far better."""
_SAMPLER_START_CAP = 10.0
"""A sampler started at the reference solution starts a pruned basis at ``log alpha = 10``
(prior sd of its weight e^-5 of the scaled target's sd)."""
_REQUIRED = {
    "rvm_pymc.inference": ("optimise_map", "nuts_posterior"),
    "rvm_pymc.models": (
        "regression_marginal",
        "regression_joint",
        "classification_binary",
        "classification_softmax",
    ),
}


def _pymc_api():
    """The inference and models modules, or NotImplementedError naming what is missing."""
    import importlib

    mods = []
    for name, funcs in _REQUIRED.items():
        try:
            mod = importlib.import_module(name)
        except ImportError as exc:
            raise NotImplementedError(
                f"method='map'/'nuts' needs {name} ({exc}); use method='reference'"
            ) from exc
        missing = [f for f in funcs if not hasattr(mod, f)]
        if missing:
            raise NotImplementedError(
                f"method='map'/'nuts' needs {name}.{', '.join(missing)}, which this "
                "installation does not provide; use method='reference'"
            )
        mods.append(mod)
    return mods


_FIT_KEYS = {
    "map": (("model",), "the estimator's data and prior"),
    "nuts": (
        ("draws", "tune", "chains", "random_seed", "random_state"),
        "the estimator's draws, tune, chains and random_state",
    ),
}
"""Keys the fit sets itself, and where it takes them from."""
_NUTS_MODELS = ("collapsed", "joint")
_CLASSIFIER_KINDS = ("binary", "softmax", "classifier")
"""``kind`` values of :func:`check_sampler_kwargs` that refuse the collapsed sampler
(``"classifier"``: an RVC before its classes are known)."""


def check_sampler_kwargs(
    method: str, sampler_kwargs: dict | None, kind: str | None = None
) -> dict[str, Any]:
    """``sampler_kwargs`` as a dict, or ValueError naming keys that ``method`` does not take.

    Called by the estimator's parameter checks, before PyMC is imported: a key
    the fit sets itself (the model for MAP; ``draws``, ``tune``, ``chains``
    and the seed for NUTS, which come from the estimator's parameters), an
    unknown key, or a ``model`` / ``parametrization`` of NUTS that is not one
    of its choices is refused here.  With the estimator's ``kind`` known
    (``"binary"``, ``"softmax"``, or ``"classifier"`` for an RVC whose classes
    are not yet known), NUTS ``model="collapsed"`` is refused too:
    the collapsed sampler integrates out the weights of the Gaussian
    regression likelihood only.
    """
    allowed = _MAP_KEYS if method == "map" else _NUTS_KEYS
    kw = dict(sampler_kwargs or {})
    fit_keys, source = _FIT_KEYS.get(method, ((), ""))
    own = sorted(k for k in kw if k in fit_keys)
    if own:
        raise ValueError(
            f"sampler_kwargs {own} do not apply to method={method!r}: the fit sets "
            f"{'them' if len(own) > 1 else 'it'} itself, from {source}"
        )
    unknown = sorted(set(kw) - set(allowed), key=str)
    if unknown:
        raise ValueError(
            f"sampler_kwargs {unknown} do not apply to method={method!r}; allowed: "
            f"{', '.join(allowed)}"
        )
    if method == "nuts" and kw.get("model", "collapsed") not in _NUTS_MODELS:
        raise ValueError(
            f"sampler_kwargs['model'] must be one of {_NUTS_MODELS}; got {kw['model']!r}"
        )
    if method == "nuts" and kind in _CLASSIFIER_KINDS and kw.get("model") == "collapsed":
        raise ValueError(
            "sampler_kwargs['model']='collapsed' applies to RVR only: the collapsed sampler "
            "integrates out the weights of the Gaussian regression likelihood; a classifier "
            "samples its weights jointly (model='joint', the default)"
        )
    if method == "nuts" and kw.get("parametrization", "centred") not in PARAMETRIZATIONS:
        raise ValueError(
            f"sampler_kwargs['parametrization'] must be one of {PARAMETRIZATIONS}; "
            f"got {kw['parametrization']!r}"
        )
    return kw


def _model(models, opts, Phi, target, names, prior, *, joint, parametrization="centred"):
    kind = opts["kind"]
    if kind == "regression":
        if joint:
            return models.regression_joint(
                Phi, target, prior=prior, parametrization=parametrization, basis_names=names
            )
        return models.regression_marginal(Phi, target, prior=prior, basis_names=names)
    if kind == "binary":
        return models.classification_binary(
            Phi, target, prior=prior, parametrization=parametrization, basis_names=names
        )
    return models.classification_softmax(
        Phi,
        target,
        n_classes=len(opts["class_names"]),
        prior=prior,
        parametrization=parametrization,
        basis_names=names,
        class_names=opts["class_names"],
    )


def _set_start(kw: dict, start, n_basis: int, kind: str, **start_options) -> str:
    """Put the reference start into ``kw["initvals"]`` unless the user gave one; say where from.

    Returns ``"user"`` (``initvals`` in ``sampler_kwargs``), ``"reference"``
    (``start`` given: :func:`_start` with ``start_options``) or ``"default"``.
    """
    if "initvals" in kw:
        return "user"
    if start is None:
        return "default"
    kw["initvals"] = _start(start, n_basis, kind, **start_options)
    return "reference"


def _start(
    start, n_basis: int, kind: str, *, cap: float, weights: bool, parametrization: str = "centred"
):
    """Initial values at the reference solution ``start`` (same prior, same scaled data).

    A basis the reference pruned starts at ``log alpha = cap`` (the MAP's upper
    bound, where a pruned precision sits; a finite, large precision for a sampler).
    """
    active = np.asarray(start.active, dtype=np.intp)
    la = np.full(n_basis, cap)
    la[active] = np.minimum(np.log(np.asarray(start.alpha, dtype=float)), cap)
    out: dict[str, np.ndarray] = {"log_alpha": la}
    if kind == "regression":
        out["log_beta"] = np.asarray(np.log(start.beta))
    if weights:
        mean = np.asarray(start.mean, dtype=float).reshape(active.size, -1)
        full = np.zeros((n_basis, mean.shape[1]))
        full[active] = mean
        name = "W" if kind == "softmax" else "w"
        if kind != "softmax":
            full = full[:, 0]
        if parametrization == "non_centred":
            root = np.exp(0.5 * la) if full.ndim == 1 else np.exp(0.5 * la)[:, None]
            out[f"{name}_raw"] = full * root
        else:
            out[name] = full
    return out


def fit_pymc(opts: dict, Phi: np.ndarray, target: np.ndarray, names, prior, seed: int, start):
    """Fit by type-II MAP or NUTS on the scaled problem.

    Parameters
    ----------
    opts : dict
        ``method``, ``kind``, ``class_names``, ``draws``, ``tune``, ``chains``,
        ``max_iter``, ``sampler_kwargs`` of the estimator.
    Phi, target : ndarray
        The design matrix and targets after the estimator's scaling boundary.
    names : tuple of str
        Basis names.
    prior : HyperPrior
    seed : int
    start : RegressionResult, ClassificationResult or None
        The reference solution (same prior, same scaled problem) to start from.

    Returns
    -------
    (WeightPosterior, dict, pymc.Model)
        The posterior over the relevant bases (MAP: those not pruned to the
        upper bound; NUTS: all), on the scaled problem; ``log_evidence``,
        ``n_iter``, ``converged``, ``library``, ``attrs`` (and NUTS's
        ``sample_stats``); the fitted model.
    """
    inference, models = _pymc_api()
    if opts["method"] == "map":
        return _fit_map(inference, models, opts, Phi, target, names, prior, start)
    return _fit_nuts(inference, models, opts, Phi, target, names, prior, seed, start)


def _fit_map(inference, models, opts, Phi, target, names, prior, start):
    from rvm_pymc._map import LOG_PRECISION_BOUND
    from rvm_pymc.results import WeightPosterior

    kw = check_sampler_kwargs("map", opts["sampler_kwargs"])
    if opts["max_iter"] is not None:
        kw.setdefault("max_iter", opts["max_iter"])
    model = _model(models, opts, Phi, target, names, prior, joint=False)
    started_from = _set_start(
        kw, start, Phi.shape[1], opts["kind"], cap=LOG_PRECISION_BOUND, weights=False
    )
    res = inference.optimise_map(model, **kw)
    active = np.flatnonzero(res.log_alpha < LOG_PRECISION_BOUND)
    post = WeightPosterior(
        kind=opts["kind"],
        basis_names=tuple(names),
        log_alpha=res.log_alpha,
        log_beta=res.log_beta,
        mean=res.mean,
        cov=res.cov,
    ).restrict(active)
    info = {
        "log_evidence": float(res.log_evidence),
        "n_iter": max(int(res.n_iter), 1),
        "converged": bool(res.converged),
        "library": "rvm_pymc.inference",
        "attrs": {
            "max_abs_gradient": float(res.max_abs_gradient),
            "optimizer_message": str(res.message),
            "started_from": started_from,
            # classifiers: the Laplace evidence used and its check (rvm_pymc._laplace.axis_check)
            **{k: res.attrs[k] for k in ("laplace", "axis_check") if k in res.attrs},
        },
    }
    return post, info, model


def _fit_nuts(inference, models, opts, Phi, target, names, prior, seed, start):
    kw = check_sampler_kwargs("nuts", opts["sampler_kwargs"], opts["kind"])
    which = kw.pop("model", "collapsed")  # checked by check_sampler_kwargs
    regression = opts["kind"] == "regression"
    parametrization = kw.pop("parametrization", DEFAULT_PARAMETRIZATION[opts["kind"]])
    joint = not regression or which == "joint"
    model = _model(
        models, opts, Phi, target, names, prior, joint=joint, parametrization=parametrization
    )
    started_from = _set_start(
        kw,
        start,
        Phi.shape[1],
        opts["kind"],
        cap=_SAMPLER_START_CAP,
        weights=joint,
        parametrization=parametrization,
    )
    res = inference.nuts_posterior(
        model,
        draws=opts["draws"],
        tune=opts["tune"],
        chains=opts["chains"],
        random_seed=seed,
        **kw,
    )
    diag_keys = (
        "sampler",
        "n_divergent",
        "max_rhat",
        "min_ess_bulk",
        "sampling_time",
        "rvm_inference",
    )
    info = {
        "log_evidence": float("nan"),
        "n_iter": opts["tune"] + opts["draws"],
        "converged": bool(
            int(res.attrs.get("n_divergent", 0)) == 0
            and float(res.attrs.get("max_rhat", np.inf)) <= kw.get("rhat_threshold", 1.01)
        ),
        "library": "rvm_pymc.inference",
        "sample_stats": res.sample_stats,
        "attrs": {
            **{k: res.attrs[k] for k in diag_keys if k in res.attrs},
            "started_from": started_from,
        },
    }
    return res.posterior, info, model
