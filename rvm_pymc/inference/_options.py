"""Options of the PyMC fits: the one closed set of ``sampler_kwargs`` keys per method.

Imported by the estimators' parameter checks before PyMC is (this module imports
neither PyMC nor the rest of :mod:`rvm_pymc.inference`).
"""

from __future__ import annotations

from typing import Any

from rvm_pymc.models import PARAMETRIZATIONS

__all__ = ["DEFAULT_PARAMETRIZATION", "MAP_KEYS", "NUTS_KEYS", "check_sampler_kwargs"]

MAP_KEYS = ("initvals", "max_iter", "gtol", "laplace", "compile_kwargs")
NUTS_KEYS = (
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
    allowed = MAP_KEYS if method == "map" else NUTS_KEYS
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
