"""The parameters of :class:`~rvm_pymc.estimators.RVR` and `RVC`, and their checks.

:func:`check_params` is called by ``fit`` before any work: every invalid
parameter is a ``ValueError`` naming it.  The names of the methods, solvers,
starts and kernels with a width live here too, for
:mod:`rvm_pymc.estimators._base`.
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from rvm_pymc.basis import Basis
from rvm_pymc.kernels import Kernel, make_kernel
from rvm_pymc.priors import resolve_prior

__all__ = ["GAMMA_KERNELS", "INITS", "METHODS", "SOLVERS", "WIDTH_KERNELS", "check_params"]

METHODS = ("reference", "map", "nuts")
INITS = ("auto", "reference", "default")
SOLVERS = ("fast", "mackay", "em")
WIDTH_KERNELS = ("rbf", "laplacian", "exponential", "cauchy")
GAMMA_KERNELS = (*WIDTH_KERNELS, "poly", "polynomial")


def is_int(value: Any) -> bool:
    """Whether ``value`` is an integer (Python or NumPy), not a bool."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool | np.bool_)


def check_params(est: Any) -> None:
    """Raise ``ValueError`` naming the first invalid parameter of the estimator ``est``.

    Parameters
    ----------
    est : RVR or RVC
        The estimator whose parameters (as set by ``__init__`` or
        ``set_params``) are checked; nothing is modified.
    """
    if est.method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}; got {est.method!r}")
    if est.solver not in SOLVERS:
        raise ValueError(f"solver must be one of {SOLVERS}; got {est.solver!r}")
    _check_kernel(est.kernel, est.gamma, est.gamma_grid)
    if not is_int(est.degree) or est.degree < 1:
        raise ValueError(f"degree must be an integer >= 1; got {est.degree!r}")
    if not isinstance(est.bias, bool | np.bool_):
        raise ValueError(f"bias must be True or False; got {est.bias!r}")
    for name in ("draws", "tune"):
        v = getattr(est, name)
        if not is_int(v) or v < (1 if name == "draws" else 0):
            raise ValueError(f"{name} must be an integer >= {int(name == 'draws')}; got {v!r}")
    if est.chains is not None and (not is_int(est.chains) or est.chains < 1):
        raise ValueError(f"chains must be None or an integer >= 1; got {est.chains!r}")
    if est.max_iter is not None and (not is_int(est.max_iter) or est.max_iter < 1):
        raise ValueError(f"max_iter must be None or an integer >= 1; got {est.max_iter!r}")
    if not (
        isinstance(est.tol, numbers.Real)
        and not isinstance(est.tol, bool | np.bool_)
        and np.isfinite(est.tol)
        and est.tol > 0
    ):
        raise ValueError(f"tol must be a finite float > 0; got {est.tol!r}")
    if est.n_jobs is not None and (not is_int(est.n_jobs) or est.n_jobs == 0):
        raise ValueError(
            f"n_jobs must be None or a nonzero integer (-1: all cores); got {est.n_jobs!r}"
        )
    if est.sampler_kwargs is not None and not isinstance(est.sampler_kwargs, dict):
        raise ValueError("sampler_kwargs must be None or a dict")
    if est.init not in INITS:
        raise ValueError(f"init must be one of {INITS}; got {est.init!r}")
    _check_random_state(est.random_state)
    if est.method != "reference":
        from rvm_pymc.inference import check_sampler_kwargs

        kind = "classifier" if est._kind == "classification" else None
        check_sampler_kwargs(est.method, est.sampler_kwargs, kind)  # before any fitting
    default = "weakly_informative" if est.method == "nuts" else "evidence"
    resolve_prior(est.prior, default=default)  # raises ValueError for a bad prior


def _check_kernel(k: Any, g: Any, gamma_grid: Any) -> None:
    """``kernel``, ``gamma`` and ``gamma_grid``."""
    if isinstance(k, str):
        if k != "precomputed":
            make_kernel(k)  # raises ValueError for an unknown name
    elif not (isinstance(k, Kernel | Basis) or callable(k)):
        raise ValueError(
            "kernel must be a kernel name, 'precomputed', a Kernel, a callable "
            f"k(X, Y) or a Basis; got {type(k).__name__}"
        )
    if isinstance(g, str):
        if g not in ("scale", "evidence"):
            raise ValueError(f"gamma must be a float > 0, 'scale' or 'evidence'; got {g!r}")
        if g == "evidence" and not (isinstance(k, str) and k.lower() in GAMMA_KERNELS):
            raise ValueError(
                f"gamma='evidence' needs a kernel with a width: one of {GAMMA_KERNELS}; "
                f"got kernel={k!r}"
            )
    elif not (
        isinstance(g, numbers.Real) and not isinstance(g, bool) and np.isfinite(g) and g > 0
    ):
        raise ValueError(f"gamma must be a float > 0, 'scale' or 'evidence'; got {g!r}")
    if gamma_grid is not None:
        message = f"gamma_grid must be a non-empty sequence of floats > 0; got {gamma_grid!r}"
        try:
            grid = np.asarray(gamma_grid, dtype=float).reshape(-1)
        except (TypeError, ValueError):
            raise ValueError(message) from None
        if grid.size == 0 or not np.all(np.isfinite(grid) & (grid > 0)):
            raise ValueError(message)


def _check_random_state(random_state: Any) -> None:
    """None, an integer seed in [0, 2**32 - 1], a RandomState or a Generator."""
    if random_state is None or isinstance(
        random_state, np.random.RandomState | np.random.Generator
    ):
        return
    if is_int(random_state) and 0 <= random_state < 2**32:
        return
    raise ValueError(
        "random_state must be None, an integer seed in [0, 2**32 - 1], a "
        f"numpy.random.RandomState or a numpy.random.Generator; got {random_state!r}"
    )
