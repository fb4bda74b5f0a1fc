"""An estimator's parameters as JSON text, so that a saved file holds no pickle.

Kernel names and the built-in kernel classes (and their sums and products),
the prior (a preset name, a mapping or a :class:`~rvm_pymc.priors.HyperPrior`),
``gamma_grid`` and an integer ``random_state`` round-trip; anything else is
refused with advice to use joblib.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import numpy as np

from rvm_pymc import kernels
from rvm_pymc.priors import HyperPrior

__all__ = ["kernel_from_json", "kernel_to_json", "params_from_json", "params_to_json"]


def kernel_to_json(k: Any) -> Any:
    """A kernel name, or a built-in kernel (sums and products too), as JSON data."""
    if isinstance(k, str):
        return k
    name = type(k).__name__
    if name in ("Sum", "Product") and type(k) is kernels.kernel_class(name):
        return {"kernel": name, "k1": kernel_to_json(k.k1), "k2": kernel_to_json(k.k2)}
    if _is_builtin(k):
        return {"kernel": name, "params": k.get_params()}
    raise ValueError(
        f"kernel={k!r} cannot be saved without pickle (only kernel names and the built-in "
        "Kernel classes can); use joblib.dump / pickle for this estimator"
    )


def _is_builtin(k: Any) -> bool:
    """Whether ``k`` is an instance of a built-in kernel class itself (not of a subclass)."""
    try:
        return type(k) is kernels.kernel_class(type(k).__name__)
    except ValueError:
        return False


def kernel_from_json(spec: Any) -> Any:
    """The kernel of :func:`kernel_to_json`'s data."""
    if isinstance(spec, str):
        return spec
    cls = kernels.kernel_class(spec["kernel"])
    if "k1" in spec:
        return cls(kernel_from_json(spec["k1"]), kernel_from_json(spec["k2"]))
    return cls(**spec["params"])


def params_to_json(params: dict[str, Any]) -> str:
    """An estimator's ``get_params()`` as JSON text (no pickle): kernel, prior, grid, seed."""
    out = dict(params)
    out["kernel"] = kernel_to_json(params["kernel"])
    prior = params["prior"]
    if isinstance(prior, HyperPrior):
        out["prior"] = {"HyperPrior": prior.as_dict()}
    elif isinstance(prior, Mapping):
        out["prior"] = {"mapping": {k: float(v) for k, v in prior.items()}}
    if params["gamma_grid"] is not None:
        out["gamma_grid"] = np.asarray(params["gamma_grid"], dtype=float).tolist()
    rs = params["random_state"]
    if not (rs is None or isinstance(rs, int | np.integer)):
        out["random_state"] = None  # a Generator/RandomState: its draws are in the file
    elif rs is not None:
        out["random_state"] = int(rs)
    try:
        return json.dumps(out, sort_keys=True)
    except TypeError as exc:
        raise ValueError(f"the parameters cannot be saved as JSON ({exc}); use joblib") from exc


def params_from_json(text: str) -> dict[str, Any]:
    """The parameters of :func:`params_to_json`'s text."""
    params = json.loads(text)
    params["kernel"] = kernel_from_json(params["kernel"])
    prior = params["prior"]
    if isinstance(prior, dict):
        params["prior"] = (
            HyperPrior(**prior["HyperPrior"]) if "HyperPrior" in prior else prior["mapping"]
        )
    return params
