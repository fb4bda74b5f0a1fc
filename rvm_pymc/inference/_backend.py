"""The estimators' "map" and "nuts" backends: build the model on the scaled problem, fit,
return a :class:`~rvm_pymc.results.WeightPosterior` and a :class:`~rvm_pymc.results.FitInfo`
(imported only by such a fit, so ``import rvm_pymc`` never imports PyMC).  MAP starts at the
reference solution; a precision pruned to ``log alpha = 50`` leaves the posterior."""

from __future__ import annotations

import numpy as np

from rvm_pymc import models
from rvm_pymc._core.convergence import MIN_ESS, RHAT_MAX, passes_checks
from rvm_pymc.inference._fits import nuts_posterior, optimise_map
from rvm_pymc.inference._map import LOG_PRECISION_BOUND
from rvm_pymc.inference._nuts import run_nuts
from rvm_pymc.inference._options import NutsRun
from rvm_pymc.inference._stop import STOP_ATTRS
from rvm_pymc.inference.defaults import DEFAULT_PARAMETRIZATION, estimator_target_accept
from rvm_pymc.models.spec import model_spec
from rvm_pymc.results import FitInfo, WeightPosterior

__all__ = ["fit_backend", "fit_width_backend"]

_SAMPLER_START_CAP = 10.0
"""``log alpha`` at which a sampler started at the reference starts a pruned basis."""


def _model(opts, Phi, target, names, prior, *, joint, parametrization="centred"):
    kind, kw = opts["kind"], {"prior": prior, "basis_names": names}
    if kind == "regression" and not joint:
        return models.regression_marginal(Phi, target, **kw)
    kw["parametrization"] = parametrization
    if kind == "softmax":
        classes = opts["class_names"]
        return models.classification_softmax(
            Phi, target, n_classes=len(classes), class_names=classes, **kw
        )
    build = {
        "regression": models.regression_joint,
        "poisson": models.counts_poisson,
        "negative_binomial": models.counts_negative_binomial,
        "binary": models.classification_binary,
    }[kind]
    return build(Phi, target, **kw)


def _set_start(kw: dict, start, names, kind: str, **options) -> str:
    """Set ``kw["initvals"]`` to the reference start (:func:`_start` with ``options``, the cap
    :data:`_SAMPLER_START_CAP` unless given) unless given; return where it came from."""
    if "initvals" in kw:
        return "user"
    if start is None:
        return "default"
    kw["initvals"] = _start(start, names, kind, **{"cap": _SAMPLER_START_CAP, **options})
    return "reference"


def _start(
    start: WeightPosterior,
    names,
    kind: str,
    *,
    cap: float,
    weights: bool,
    parametrization: str = "centred",
    slab: float | None = None,
):
    """Initial values at the reference posterior ``start``: a pruned basis at ``log alpha = cap``,
    a slab's ``alpha = 0`` at ``-cap``; non-centred weights ``w * sqrt(alpha + 1/slab^2)``."""
    position = {str(n): i for i, n in enumerate(names)}
    active = np.array([position[str(n)] for n in start.basis_names], dtype=np.intp)
    la = np.full(len(names), cap)
    # a slab's alpha = 0 arrives as log alpha = -inf
    la[active] = np.clip(np.asarray(start.log_alpha, dtype=float), -cap, cap)
    out: dict[str, np.ndarray] = {"log_alpha": la}
    if kind == "regression":
        out["log_beta"] = np.asarray(start.log_beta, dtype=float)
    if kind == "negative_binomial" and start.log_dispersion is not None:
        out["log_dispersion"] = np.clip(np.asarray(start.log_dispersion, dtype=float), -cap, cap)
    if weights:
        mean = np.asarray(start.mean, dtype=float).reshape(active.size, -1)
        full = np.zeros((len(names), mean.shape[1]))
        full[active] = mean
        name = "W" if kind == "softmax" else "w"
        if kind != "softmax":
            full = full[:, 0]
        if parametrization == "non_centred":
            log_prec = la if slab is None else np.logaddexp(la, -2.0 * np.log(slab))
            root = np.exp(0.5 * log_prec)
            out[f"{name}_raw"] = full * (root if full.ndim == 1 else root[:, None])
        else:
            out[name] = full
    return out


def fit_backend(
    opts: dict,
    Phi: np.ndarray,
    target: np.ndarray,
    names,
    prior,
    seed: int,
    start: WeightPosterior | None,
) -> tuple[WeightPosterior, FitInfo]:
    """Fit by type-II MAP or NUTS on the scaled problem."""
    if opts["method"] == "map":
        return _fit_map(opts, Phi, target, names, prior, start)
    return _fit_nuts(opts, Phi, target, names, prior, seed, start)


def _fit_map(opts, Phi, target, names, prior, start):
    kw = dict(opts["sampler_kwargs"])
    if opts["max_iter"] is not None:
        kw.setdefault("max_iter", opts["max_iter"])
    model = _model(opts, Phi, target, names, prior, joint=False)
    started_from = _set_start(
        kw, start, names, opts["kind"], weights=False, cap=LOG_PRECISION_BOUND
    )
    res = optimise_map(model, **kw)
    active = np.flatnonzero(res.log_alpha < LOG_PRECISION_BOUND)
    post = res.posterior(opts["kind"], names).restrict(active)
    attrs = {
        "max_abs_gradient": float(res.max_abs_gradient),
        "optimizer_message": str(res.message),
        "started_from": started_from,
        # classifiers: the Laplace evidence used and its check
        **{k: res.attrs[k] for k in ("laplace", "axis_check") if k in res.attrs},
    }
    return post, FitInfo(
        log_evidence=float(res.log_evidence),
        n_iter=max(int(res.n_iter), 1),
        converged=bool(res.converged),
        library="rvm_pymc.inference",
        attrs=attrs,
        model=model,
    )


def _nuts_options(opts, start, names, prior, joint: bool, width: bool = False):
    """NUTS's run options (the estimators' defaults and the reference start filled in), the
    weights' parametrization, and the FitInfo attributes of the start and parametrization."""
    kw = dict(opts["sampler_kwargs"])
    kw.pop("model", None)
    parametrization = kw.pop("parametrization", DEFAULT_PARAMETRIZATION[opts["kind"]])
    kw.setdefault("target_accept", estimator_target_accept(joint, opts["kind"], width))
    kw.setdefault("until_converged", bool(opts["until_converged"]))
    options = {"weights": joint, "parametrization": parametrization, "slab": prior.slab}
    attrs = {"started_from": _set_start(kw, start, names, opts["kind"], **options)}
    if joint:
        attrs["parametrization"] = parametrization
    return kw, parametrization, attrs


def _fit_nuts(opts, Phi, target, names, prior, seed, start):
    joint = opts["kind"] != "regression" or opts["sampler_kwargs"].get("model") == "joint"
    kw, parametrization, attrs = _nuts_options(opts, start, names, prior, joint)
    model = _model(opts, Phi, target, names, prior, joint=joint, parametrization=parametrization)
    res = nuts_posterior(
        model,
        draws=opts["draws"],
        tune=opts["tune"],
        chains=opts["chains"],
        random_seed=seed,
        **kw,
    )
    return res.posterior, _nuts_info(opts, kw, res, attrs, model)


def _nuts_info(opts, kw, res, start_attrs, model) -> FitInfo:
    """The FitInfo of a NUTS run ``res`` (run options ``kw``; ``start_attrs`` of
    :func:`_nuts_options`)."""
    diag_keys = ("sampler", "n_divergent", "max_rhat", "min_ess_bulk", "min_ess_tail")
    diag_keys += ("sampling_time", "rvm_inference", *STOP_ATTRS)
    checks = (kw.get("rhat_threshold", RHAT_MAX), kw.get("min_ess", MIN_ESS))
    attrs = {k: res.attrs[k] for k in diag_keys if k in res.attrs}
    return FitInfo(
        log_evidence=float("nan"),
        converged=passes_checks(res.attrs, *checks),
        n_iter=opts["tune"] + int(res.posterior.draws.shape[1]),
        library="rvm_pymc.inference",
        sample_stats=res.sample_stats,
        model=model,
        attrs={**attrs, **start_attrs},
    )


def fit_width_backend(
    opts: dict,
    X: np.ndarray,
    centres: np.ndarray,
    target: np.ndarray,
    names,
    prior,
    seed: int,
    start: WeightPosterior | None,
    *,
    width_prior: tuple[float, float],
    bias: bool,
) -> tuple[WeightPosterior, FitInfo, np.ndarray]:
    """NUTS with the RBF width a parameter (``gamma="integrate"``), on the scaled targets."""
    regression = opts["kind"] == "regression"
    kw, parametrization, attrs = _nuts_options(opts, start, names, prior, not regression, True)
    common = {"centres": centres, "bias": bias, "length_scale_prior": width_prior,
              "prior": prior, "unit_rms": True, "basis_names": names}  # fmt: skip
    if regression:
        model = models.regression_marginal_rbf(X, target, **common)
    else:
        classes = opts["class_names"]
        model = models.classification_rbf(
            X, target, n_classes=len(classes), class_names=classes if len(classes) > 2 else None,
            parametrization=parametrization, **common,
        )  # fmt: skip
    if attrs["started_from"] == "reference":
        kw["initvals"]["log_length_scale"] = np.asarray(float(width_prior[0]))
    # the run reports (and checks) the weights and log_alpha of the unscaled columns
    run = NutsRun(draws=opts["draws"], tune=opts["tune"], chains=opts["chains"],
                  random_seed=seed, **kw)  # fmt: skip
    res = run_nuts(model, model_spec(model), collapsed=regression, run=run, unscaled=True)
    lls = np.asarray(res.log_length_scale, dtype=float)
    return res.posterior, _nuts_info(opts, kw, res, attrs, model), lls
