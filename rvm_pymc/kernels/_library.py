"""The kernels of the package (RBF, Laplacian, Cauchy, linear, polynomial, spline, callable)."""

from __future__ import annotations

import inspect
import numbers
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy.spatial.distance import cdist

from rvm_pymc._core.validation import check_positive
from rvm_pymc.kernels._base import Constant, Kernel, Product, Sum

__all__ = [
    "KERNEL_NAMES",
    "RBF",
    "CallableKernel",
    "Cauchy",
    "Laplacian",
    "Linear",
    "LinearSpline",
    "Polynomial",
    "kernel_class",
    "make_kernel",
]


def _sq_dist(X: np.ndarray, Y: np.ndarray, out: np.ndarray) -> np.ndarray:
    """Squared Euclidean distances into ``out``: exactly 0 for identical points, never negative."""
    cdist(X, Y, "sqeuclidean", out=out)
    return np.maximum(out, 0.0, out=out)


class _WidthKernel(Kernel):
    """A kernel with one width, ``gamma = 1 / (_c * length_scale**_p)`` (default gamma 1)."""

    _c, _p = 2.0, 2
    symmetric = True
    threaded_fill = True  #: ``fill`` releases the GIL: blocks may be filled on threads

    def __init__(self, gamma: float | None = None, length_scale: float | None = None) -> None:
        if gamma is not None and length_scale is not None:
            raise ValueError(
                f"{type(self).__name__}: give exactly one of gamma or length_scale, not both"
            )
        if length_scale is not None:
            self.length_scale = check_positive(length_scale, "length_scale")
            with np.errstate(over="ignore", divide="ignore"):  # tiny widths give inf
                g = float(1.0 / (self._c * np.float64(self.length_scale) ** self._p))
            self.gamma = check_positive(g, "gamma (from length_scale)")
        else:
            self.gamma = check_positive(1.0 if gamma is None else gamma, "gamma")
            with np.errstate(over="ignore", divide="ignore"):
                self.length_scale = float((self._c * np.float64(self.gamma)) ** (-1.0 / self._p))
        self._given = "gamma" if length_scale is None else "length_scale"

    def get_params(self) -> dict[str, Any]:
        return {self._given: getattr(self, self._given)}

    def _diag(self, X: np.ndarray) -> np.ndarray:
        return np.ones(X.shape[0])  # every width kernel is 1 at distance 0

    def _evaluate(self, X: np.ndarray, Y: np.ndarray) -> np.ndarray:
        out = np.empty((X.shape[0], Y.shape[0]))
        self._fill(X, Y, out)  # in place: no temporaries of the matrix's size
        return out

    def _fill(self, X: np.ndarray, Y: np.ndarray, out: np.ndarray) -> None:
        """``exp(-gamma d(X, Y))`` of the subclass's distance ``_distance``, in place."""
        self._distance(X, Y, out)
        out *= -self.gamma
        np.exp(out, out=out)


class RBF(_WidthKernel):
    r"""Gaussian (squared exponential) kernel.

    .. math::

        k(x, y) = \exp(-\gamma \lVert x - y \rVert_2^2), \qquad \gamma = 1 / (2 \ell^2)

    Parameters
    ----------
    gamma, length_scale : float, optional
        Inverse width or width :math:`\ell`; give at most one (default ``gamma=1.0``).

    Examples
    --------
    >>> k = RBF(length_scale=1.0)
    >>> k.gamma
    0.5
    >>> k([[0.0], [2.0]]).round(4)
    array([[1.    , 0.1353],
           [0.1353, 1.    ]])
    """

    _distance = staticmethod(_sq_dist)


class Laplacian(_WidthKernel):
    r"""Laplacian (exponential) kernel on the L1 distance, as sklearn's ``laplacian_kernel``.

    .. math::

        k(x, y) = \exp(-\gamma \lVert x - y \rVert_1), \qquad \gamma = 1 / \ell

    Parameters
    ----------
    gamma, length_scale : float, optional
        As for :class:`RBF`.

    Examples
    --------
    >>> Laplacian(gamma=1.0)([[0.0, 0.0]], [[1.0, 1.0]]).round(4)
    array([[0.1353]])
    """

    _c, _p = 1.0, 1

    @staticmethod
    def _distance(X: np.ndarray, Y: np.ndarray, out: np.ndarray) -> None:
        cdist(X, Y, "cityblock", out=out)


class Cauchy(_WidthKernel):
    r"""Cauchy kernel; with ``length_scale`` it is sklearn's ``RationalQuadratic(alpha=1)``.

    .. math::

        k(x, y) = \frac{1}{1 + \gamma \lVert x - y \rVert_2^2}, \qquad \gamma = 1 / (2 \ell^2)

    Parameters
    ----------
    gamma, length_scale : float, optional
        As for :class:`RBF`.

    Examples
    --------
    >>> Cauchy(gamma=1.0)([[0.0]], [[0.0], [1.0]])
    array([[1. , 0.5]])
    """

    def _fill(self, X: np.ndarray, Y: np.ndarray, out: np.ndarray) -> None:
        _sq_dist(X, Y, out)
        out *= self.gamma
        out += 1.0
        np.reciprocal(out, out=out)


class Linear(Kernel):
    r"""Linear (dot-product) kernel.

    .. math::

        k(x, y) = x^\top y

    Examples
    --------
    >>> Linear()([[1.0, 2.0]], [[3.0, 4.0]])
    array([[11.]])
    """

    symmetric = True

    def _evaluate(self, X: np.ndarray, Y: np.ndarray) -> np.ndarray:
        return X @ Y.T

    def _diag(self, X: np.ndarray) -> np.ndarray:
        return np.einsum("ij,ij->i", X, X)


class Polynomial(Kernel):
    r"""Inhomogeneous polynomial kernel, as sklearn's ``polynomial_kernel``.

    .. math::

        k(x, y) = (\gamma \, x^\top y + c_0)^p

    Parameters
    ----------
    degree : int
        The power :math:`p`, a positive integer.
    gamma : float
        Scale of the dot product, finite and > 0.
    coef0 : float
        Offset :math:`c_0`, finite and >= 0 (keeps the kernel positive semi-definite).

    Examples
    --------
    >>> Polynomial(degree=2)([[1.0, 2.0]], [[3.0, 4.0]])
    array([[144.]])
    """

    symmetric = True

    def __init__(self, degree: int = 2, gamma: float = 1.0, coef0: float = 1.0) -> None:
        if isinstance(degree, bool) or not isinstance(degree, numbers.Integral) or degree < 1:
            raise ValueError(f"degree must be a positive integer; got {degree!r}")
        self.degree = int(degree)
        self.gamma = check_positive(gamma, "gamma")
        self.coef0 = check_positive(coef0, "coef0", allow_zero=True)

    def _evaluate(self, X: np.ndarray, Y: np.ndarray) -> np.ndarray:
        return (self.gamma * (X @ Y.T) + self.coef0) ** self.degree

    def _diag(self, X: np.ndarray) -> np.ndarray:
        return (self.gamma * np.einsum("ij,ij->i", X, X) + self.coef0) ** self.degree

    def get_params(self) -> dict[str, Any]:
        return {"degree": self.degree, "gamma": self.gamma, "coef0": self.coef0}


class LinearSpline(Kernel):
    r"""Vapnik's univariate linear spline kernel (Tipping 2001), multiplied over dimensions.

    .. math::

        k(x, y) = \prod_{j=1}^d \Big[ 1 + x_j y_j + x_j y_j m_j
            - \frac{x_j + y_j}{2} m_j^2 + \frac{m_j^3}{3} \Big],
        \qquad m_j = \min(x_j, y_j)

    Meant for inputs scaled to a positive range such as [0, 1] (not positive
    semi-definite for negative inputs).

    Examples
    --------
    >>> LinearSpline()([[0.5]], [[0.0], [1.0]]).round(6)
    array([[1.      , 1.604167]])
    """

    symmetric = True

    def _evaluate(self, X: np.ndarray, Y: np.ndarray) -> np.ndarray:
        K = np.ones((X.shape[0], Y.shape[0]))
        for j in range(X.shape[1]):
            x, y = X[:, j, None], Y[None, :, j]
            m = np.minimum(x, y)
            K *= 1.0 + x * y + x * y * m - 0.5 * (x + y) * m**2 + m**3 / 3.0
        return K


class CallableKernel(Kernel):
    """Wrap a user function ``func(X, Y) -> (n, m) array`` as a :class:`Kernel`.

    ``func`` receives validated float64 arrays (n, d) and (m, d); its output is
    checked for shape and finiteness.

    Parameters
    ----------
    func : callable

    Examples
    --------
    >>> k = CallableKernel(lambda X, Y: (X @ Y.T) ** 2)
    >>> k([[1.0], [2.0]], [[3.0]])
    array([[ 9.],
           [36.]])
    """

    def __init__(self, func: Callable[[np.ndarray, np.ndarray], ArrayLike]) -> None:
        if not callable(func):
            raise TypeError(f"func must be callable; got {type(func).__name__}")
        self.func = func

    def _evaluate(self, X: np.ndarray, Y: np.ndarray) -> np.ndarray:
        K = np.asarray(self.func(X, Y), dtype=np.float64)
        if K.shape != (X.shape[0], Y.shape[0]):
            raise ValueError(
                f"kernel {self!r} returned shape {K.shape}; expected "
                f"{(X.shape[0], Y.shape[0])} for X of shape {X.shape} and Y of shape {Y.shape}"
            )
        return K

    def get_params(self) -> dict[str, Any]:
        return {"func": self.func}

    def __repr__(self) -> str:
        return f"CallableKernel({getattr(self.func, '__qualname__', repr(self.func))})"


_KERNELS: dict[str, type[Kernel]] = {
    "rbf": RBF,
    "linear": Linear,
    "poly": Polynomial,
    "polynomial": Polynomial,
    "laplacian": Laplacian,
    "exponential": Laplacian,
    "cauchy": Cauchy,
    "linear_spline": LinearSpline,
    "spline": LinearSpline,
}


KERNEL_NAMES: tuple[str, ...] = tuple(sorted(_KERNELS))
"""The names :func:`make_kernel` accepts (case-insensitive)."""

_CLASSES: dict[str, type[Kernel]] = {
    c.__name__: c for c in (*_KERNELS.values(), Constant, Sum, Product)
}


def kernel_class(name: str) -> type[Kernel]:
    """The built-in kernel class whose class name is ``name`` (``"RBF"``, ``"Sum"``, ...).

    Parameters
    ----------
    name : str

    Returns
    -------
    type

    Raises
    ------
    ValueError
        If ``name`` is not the name of a built-in kernel class.
    """
    if not isinstance(name, str) or name not in _CLASSES:
        raise ValueError(
            f"unknown kernel class {name!r}; the built-in kernel classes are {sorted(_CLASSES)}"
        )
    return _CLASSES[name]


def make_kernel(kernel: str | Kernel | Callable = "rbf", **params: Any) -> Kernel:
    """Return a :class:`Kernel` from a name, an instance or a callable.

    Parameters
    ----------
    kernel : str, Kernel or callable
        A name, case-insensitive: ``"rbf"``, ``"linear"``, ``"poly"``/``"polynomial"``,
        ``"laplacian"``/``"exponential"``, ``"cauchy"``, ``"linear_spline"``/``"spline"``;
        a :class:`Kernel` (returned as is); or ``f(X, Y)`` (wrapped in :class:`CallableKernel`).
    **params
        Hyperparameters for the named kernel's constructor.

    Returns
    -------
    Kernel

    Examples
    --------
    >>> make_kernel("rbf", length_scale=2.0)
    RBF(length_scale=2.0)
    >>> make_kernel("poly", degree=3)
    Polynomial(degree=3, gamma=1.0, coef0=1.0)
    """
    if isinstance(kernel, Kernel) or (callable(kernel) and not isinstance(kernel, str)):
        if params:
            raise ValueError(f"kernel parameters {sorted(params)} need a kernel name")
        return kernel if isinstance(kernel, Kernel) else CallableKernel(kernel)
    if isinstance(kernel, str) and kernel.lower() in _KERNELS:
        cls = _KERNELS[kernel.lower()]
        allowed = list(inspect.signature(cls).parameters)
        unknown = sorted(set(params) - set(allowed))
        if unknown:  # else Python's TypeError names a private base class's __init__
            raise TypeError(
                f"kernel {kernel!r} ({cls.__name__}) has no parameter(s) {unknown}; "
                f"its parameters are {allowed or 'none'}"
            )
        return cls(**params)
    raise ValueError(
        f"unknown kernel {kernel!r}; valid names are {sorted(_KERNELS)}, "
        f"or pass a Kernel instance or a callable f(X, Y)"
    )
