"""NUTS's log density of a builder's model, compiled once for every number of bases.

PyMC's samplers take the free variables as one raveled vector.  PyMC cuts
that vector into the variables at offsets and lengths read off the initial
point, as constants: ``log_alpha = x[0:81]``, ``log_beta = x[81]``.  The
compiled function then holds ``M`` (the number of bases), and every new
``M`` compiles again, although the data (``pm.Data``) and the dimensions
(``model.dim_lengths``, shared variables) already leave the rest of the graph
free of them.  A cross-validation's folds have bases on their training rows,
so their ``M`` is not the fit's on all rows (81 against 101 on sinc N = 100,
5 folds; and folds of unequal sizes differ among themselves): on sinc a fold
of a new ``M`` took 3.3-8.8 s to compile where a fold of a shape already seen
took 0.4 s (Numba, compile cache warm from another ``M``).

:func:`shape_free_logp_dlogp` cuts the vector at offsets computed from the
model's dimension lengths instead, so one compiled function (one entry of
PyTensor's and Numba's caches) serves every ``M``.  A variable whose shape is
not its dimensions' lengths (no ``dims``, or a transformed value) keeps
PyMC's constant shape.

On PyTensor's Numba backend (its default) the function is compiled without
in-place elementwise operations (:data:`NUMBA_EXCLUDED_REWRITES`): Numba
compiled the collapsed model's log density and gradient in 12.0-12.6 s
without them against 16.3-17.2 s with them (sinc N = 100, low-rank form, a
fresh process on an empty cache, three alternating pairs), and a call costs
the same (53-58 us against 54-60; the dense form at M = 301: 1242 against
1211 us).  A ``mode`` given by the caller (``compile_kwargs``) is used as given.

It builds on two details of PyMC 6 (``Model._logp_dlogp_function``, which
:class:`~rvm_pymc.models.RVMModel` overrides, and ``ValueGradFunction``'s
``_raveled_inputs`` flag); ``tests/test_raveled.py`` checks that NUTS goes
through it.  What differs from PyMC's own function, besides the graph: its
one gradient variable is the joined vector (``fn._grad_vars``), and the cut
points read the dimension lengths when it is called, so after
``pm.set_data(..., coords=...)`` changes a dimension the function follows it
where PyMC's raises a shape error.
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
"""Rewrites left out of NUTS's log density when it compiles on the Numba backend by default.

Measured one at a time on the collapsed sinc model (compile and first call, a
fresh process on an empty cache): without ``inplace_elemwise`` 12.3 s, without
PyTensor's other in-place rewrites (BLAS, Blockwise, set-subtensor) 16.1-17.0 s,
with all of them 15.8-17.6 s."""


def _nuts_mode(mode):
    """``mode`` if given; else the default mode without :data:`NUMBA_EXCLUDED_REWRITES`
    when it links with Numba (None, PyMC's default, otherwise)."""
    if mode is not None:
        return mode
    default = get_default_mode()
    if type(default.linker).__name__ != "NumbaLinker":
        return None
    return default.excluding(*NUMBA_EXCLUDED_REWRITES)


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
    """PyMC's ``ValueGradFunction`` of ``model`` on one raveled input cut by dimension lengths.

    The same function as ``model.logp_dlogp_function(grad_vars,
    ravel_inputs=True, ...)``: the value (and gradient) of the joint log
    density (tempered: ``varlogp + w * datalogp``) at a vector that holds
    ``grad_vars`` raveled in their order, with the other value variables as
    settable extra values.  The cut points are expressions of the model's
    dimension lengths wherever a variable's shape is its dims' lengths, so
    the compiled graph holds no number of bases.
    """
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
    kwargs["mode"] = _nuts_mode(kwargs.get("mode"))
    fn = ValueGradFunction(
        costs,
        [joined],
        extra,
        model=model,
        initial_point=initial_point,
        ravel_inputs=False,
        **kwargs,
    )
    # the compiled function takes the raveled vector itself, as PyMC's raveled one does;
    # this flag tells ``__call__`` and PyMC's leapfrog integrator so
    fn._raveled_inputs = True
    return fn
