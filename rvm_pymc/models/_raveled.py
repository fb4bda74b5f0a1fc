"""NUTS's log density of a builder's model, compiled once for every number of bases
(``docs/pymc.md``, "One compile per model form"): the raveled free variables are cut at
offsets computed from the model's dimension lengths, not constants.  Relies on PyMC 6's
``Model._logp_dlogp_function`` and ``ValueGradFunction._raveled_inputs``.
"""

from __future__ import annotations

import pytensor.tensor as pt
from pymc.model.core import ValueGradFunction
from pytensor.compile.mode import get_default_mode
from pytensor.graph.basic import Constant
from pytensor.graph.replace import clone_replace
from pytensor.graph.traversal import graph_inputs

__all__ = ["JOINED_NAME", "NUMBA_EXCLUDED_REWRITES", "shape_free_logp_dlogp"]

JOINED_NAME = "joined_inputs"

NUMBA_EXCLUDED_REWRITES = ("inplace_elemwise",)
"""Rewrites left out on the default Numba backend (faster to compile)."""


def _length(dim_length) -> int | None:
    """The value of a model's dimension length (a shared variable or a constant)."""
    if isinstance(dim_length, Constant):
        return int(dim_length.data)
    get_value = getattr(dim_length, "get_value", None)
    return None if get_value is None else int(get_value())


def _symbolic_shape(model, value_var, shape: tuple[int, ...]) -> tuple:
    """``shape`` in terms of ``model.dim_lengths`` where it equals its dims' lengths."""
    rv = model.values_to_rvs.get(value_var)
    if rv is None or model.rvs_to_transforms.get(rv) is not None:
        return shape
    dims = model.named_vars_to_dims.get(rv.name)
    if dims is None or len(dims) != len(shape):
        return shape
    lengths = [model.dim_lengths[d] for d in dims]
    if tuple(_length(n) for n in lengths) != shape:
        return shape
    return tuple(pt.cast(n, "int64") for n in lengths)


def shape_free_logp_dlogp(
    model, grad_vars, *, tempered: bool, initial_point, **kwargs
) -> ValueGradFunction:
    """``model.logp_dlogp_function(grad_vars, ravel_inputs=True, ...)`` cut by dim lengths."""
    grad_vars = list(grad_vars)
    costs = [model.varlogp, model.datalogp] if tempered else [model.logp()]
    pieces = []
    for var in grad_vars:
        shape = _symbolic_shape(model, var, tuple(initial_point[var.name].shape))
        size = pt.prod(pt.stack([pt.as_tensor(s, dtype="int64") for s in shape])) if shape else 1
        pieces.append((var, shape, size))
    raveled = [pt.as_tensor(v, allow_xtensor_conversion=True).ravel() for v in grad_vars]
    joined = pt.concatenate(raveled).type(JOINED_NAME)
    replace, start = {}, pt.constant(0, dtype="int64")
    for var, shape, size in pieces:
        piece = joined[start : start + size].reshape(shape).astype(var.dtype)
        replace[var] = var.type.filter_variable(piece)
        start = start + size
    costs = [clone_replace(c, replace, rebuild_strict=False) for c in costs]
    inputs = {i for i in graph_inputs(costs) if not isinstance(i, Constant)}
    extra = {
        v: initial_point[v.name] for v in model.value_vars if v in inputs and v not in grad_vars
    }
    mode, default = kwargs.get("mode"), get_default_mode()
    if mode is None and type(default.linker).__name__ == "NumbaLinker":
        mode = default.excluding(*NUMBA_EXCLUDED_REWRITES)  # the Numba default, lighter
    kwargs["mode"] = mode
    fn = ValueGradFunction(
        costs,
        [joined],
        extra,
        model=model,
        initial_point=initial_point,
        ravel_inputs=False,
        **kwargs,
    )
    # the compiled function takes the raveled vector itself: tell __call__ and the integrator
    fn._raveled_inputs = True
    return fn
