r"""Kernels: the functions ``k(x, y)`` whose columns make the design matrix of an RVM.

A :class:`Kernel` maps ``X`` (n, d) and ``Y`` (m, d) to the (n, m) matrix
:math:`K_{ij} = k(x_i, y_j)`; kernels compose with ``+`` and ``*``, also with a
positive scalar.  :mod:`rvm_pymc.basis` turns a kernel into a design matrix.
"""

from rvm_pymc.kernels._base import Constant, Kernel, Product, Sum
from rvm_pymc.kernels._library import (
    KERNEL_NAMES,
    RBF,
    CallableKernel,
    Cauchy,
    Laplacian,
    Linear,
    LinearSpline,
    Polynomial,
    kernel_class,
    make_kernel,
)

__all__ = [
    "KERNEL_NAMES",
    "RBF",
    "CallableKernel",
    "Cauchy",
    "Constant",
    "Kernel",
    "Laplacian",
    "Linear",
    "LinearSpline",
    "Polynomial",
    "Product",
    "Sum",
    "kernel_class",
    "make_kernel",
]

# pickles and the documentation name this module, not the private ones that define them
for _obj in map(globals().get, __all__):
    if callable(_obj):
        _obj.__module__ = __name__
del _obj

_BASIS_NAMES = frozenset(
    "Basis FunctionBasis KernelBasis PrecomputedBasis column_scale make_basis "
    "polynomial_basis".split()
)


def __getattr__(name: str):
    """An AttributeError that names :mod:`rvm_pymc.basis` for the bases once reached here."""
    if name in _BASIS_NAMES:
        raise AttributeError(
            f"rvm_pymc.kernels.{name} was removed; import it from rvm_pymc.basis "
            f"(from rvm_pymc.basis import {name})"
        )
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
