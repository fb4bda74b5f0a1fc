r"""Kernels: the functions ``k(x, y)`` whose columns make the design matrix of an RVM.

A :class:`Kernel` maps ``X`` (n, d) and ``Y`` (m, d) to the (n, m) matrix
:math:`K_{ij} = k(x_i, y_j)`; kernels compose with ``+`` and ``*``, also with a
positive scalar.  The bases that turn a kernel into the design matrix
(:class:`~rvm_pymc.basis.KernelBasis`, ``FunctionBasis``, ``PrecomputedBasis``,
...) live in :mod:`rvm_pymc.basis`, which imports this module; this module
does not import it (asking this module for one raises an AttributeError that
says where it lives).
NumPy/SciPy only; PyMC is not imported.
"""

from __future__ import annotations

import copy
import inspect
import numbers
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy.spatial.distance import cdist

from rvm_pymc._core.validation import as_2d_float, check_positive, is_real

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


def _check_finite_matrix(M: np.ndarray, what: str) -> None:
    """Raise ``ValueError`` naming ``what`` if ``M`` has NaN or infinite entries."""
    n_bad = int(M.size - np.count_nonzero(np.isfinite(M)))
    if n_bad:
        raise ValueError(
            f"{what} has {n_bad} non-finite entr{'y' if n_bad == 1 else 'ies'} "
            f"(of {M.size}); check the hyperparameters and the scale of the inputs"
        )


#: Rows per block of the generic :meth:`Kernel.diag` (a block x block matrix at a time).
_DIAG_BLOCK = 256


# --------------------------------------------------------------------------- kernels


class Kernel:
    """Base class of all kernels: ``k(X, Y=None)`` returns the (n, m) kernel matrix.

    Calling a kernel validates ``X`` and ``Y`` (1-D input is one feature; NaN
    and inf are rejected), checks they have the same number of features and
    that the result is finite.  ``Y`` defaults to ``X`` (the Gram matrix).
    Subclasses implement ``_evaluate(X, Y)`` and ``get_params()``, and set
    ``symmetric = True`` when ``k(x, y) == k(y, x)`` (every kernel of this module
    but :class:`CallableKernel`): a design matrix is then built as ``k(C, X).T``,
    blocks of whole rows, which costs less than ``k(X, C)`` written column-major.

    Examples
    --------
    >>> k = 2.0 * RBF(gamma=0.5) + Linear()
    >>> k
    ((Constant(value=2.0) * RBF(gamma=0.5)) + Linear())
    >>> k([[0.0], [1.0]]).round(4)
    array([[2.    , 1.2131],
           [1.2131, 3.    ]])
    """

    __array_ufunc__ = None  # so that ``np.float64(2.0) * k`` uses Kernel.__rmul__
    symmetric: bool = False  # k(x, y) == k(y, x); unknown for a subclass unless it says so

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """A subclass redefining ``_evaluate`` or ``__call__`` (of ``RBF``, say) is not
        assumed symmetric unless it says so, and :meth:`fill` goes through its ``_evaluate``."""
        super().__init_subclass__(**kwargs)
        own = vars(cls)
        if ("_evaluate" in own or "__call__" in own) and "symmetric" not in own:
            cls.symmetric = False
        if "_evaluate" in own and "_fill" not in own:
            cls._fill = Kernel._fill

    def __call__(self, X: ArrayLike, Y: ArrayLike | None = None) -> np.ndarray:
        X = as_2d_float(X, "X")
        Y = X if Y is None else as_2d_float(Y, "Y")
        if X.shape[1] != Y.shape[1]:
            raise ValueError(f"X has {X.shape[1]} features but Y has {Y.shape[1]}")
        K = np.asarray(self._evaluate(X, Y), dtype=np.float64)
        _check_finite_matrix(K, f"kernel matrix of {self!r}")
        return K

    def _evaluate(self, X: np.ndarray, Y: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def fill(self, X: np.ndarray, Y: np.ndarray, out: np.ndarray) -> np.ndarray:
        """Write ``k(X, Y)`` into ``out``, a C-contiguous float64 (n, m) array; return it.

        For building a large matrix in blocks: no copy of the inputs and, for
        the width kernels, no temporary.  Only ``out`` is checked: ``X`` (n, d)
        and ``Y`` (m, d) must be finite float64 arrays, and the caller checks
        that the result is finite.
        """
        shape = (X.shape[0], Y.shape[0])
        if out.shape != shape or out.dtype != np.float64 or not out.flags.c_contiguous:
            raise ValueError(
                f"out must be a C-contiguous float64 array of shape {shape}; got "
                f"{out.dtype} {out.shape}, C-contiguous {out.flags.c_contiguous}"
            )
        self._fill(X, Y, out)
        return out

    def _fill(self, X: np.ndarray, Y: np.ndarray, out: np.ndarray) -> None:
        out[...] = self._evaluate(X, Y)

    def diag(self, X: ArrayLike) -> np.ndarray:
        """The diagonal ``k(x_i, x_i)`` of the Gram matrix, without building the matrix.

        Parameters
        ----------
        X : array_like of shape (n_samples, n_features) or (n_samples,)

        Returns
        -------
        ndarray of shape (n_samples,)

        Examples
        --------
        >>> (2.0 * RBF(gamma=0.5) + Linear()).diag([[0.0], [1.0]])
        array([2., 3.])
        """
        X = as_2d_float(X, "X")
        d = np.asarray(self._diag(X), dtype=np.float64).reshape(X.shape[0])
        _check_finite_matrix(d, f"kernel diagonal of {self!r}")
        return d

    def _diag(self, X: np.ndarray) -> np.ndarray:
        """Generic diagonal: the kernel on blocks of rows against themselves."""
        out = np.empty(X.shape[0])
        for s in range(0, X.shape[0], _DIAG_BLOCK):
            xb = X[s : s + _DIAG_BLOCK]
            out[s : s + xb.shape[0]] = np.diagonal(np.asarray(self._evaluate(xb, xb), dtype=float))
        return out

    def get_params(self) -> dict[str, Any]:
        """Return the hyperparameters as a dict (keyword arguments of the constructor)."""
        return {}

    def __sklearn_clone__(self) -> Kernel:
        """A copy (``sklearn.base.clone``; a kernel holds nothing fitted)."""
        return copy.deepcopy(self)

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"

    def _combine(self, other: Any, cls: type[_Binary], left: bool) -> Kernel:
        if is_real(other):
            other = Constant(other)
        if not isinstance(other, Kernel):
            return NotImplemented
        return cls(self, other) if left else cls(other, self)

    def __add__(self, other: Kernel | float) -> Kernel:
        return self._combine(other, Sum, left=True)

    def __radd__(self, other: Kernel | float) -> Kernel:
        if is_real(other) and other == 0:
            return self  # so that the built-in sum() of kernels works
        return self._combine(other, Sum, left=False)

    def __mul__(self, other: Kernel | float) -> Kernel:
        return self._combine(other, Product, left=True)

    def __rmul__(self, other: Kernel | float) -> Kernel:
        return self._combine(other, Product, left=False)


class Constant(Kernel):
    r"""Constant kernel :math:`k(x, y) = c`, :math:`c > 0`; what ``2.0 * k`` and ``k + 1.0`` use.

    Examples
    --------
    >>> Constant(3.0)([[0.0], [1.0]], [[5.0]])
    array([[3.],
           [3.]])
    """

    symmetric = True

    def __init__(self, value: float = 1.0) -> None:
        self.value = check_positive(value, "value")

    def _evaluate(self, X: np.ndarray, Y: np.ndarray) -> np.ndarray:
        return np.full((X.shape[0], Y.shape[0]), self.value)

    def _diag(self, X: np.ndarray) -> np.ndarray:
        return np.full(X.shape[0], self.value)

    def get_params(self) -> dict[str, Any]:
        return {"value": self.value}


class _Binary(Kernel):
    _op = "?"
    _ufunc: Callable[[np.ndarray, np.ndarray], np.ndarray]

    def __init__(self, k1: Kernel, k2: Kernel) -> None:
        if not (isinstance(k1, Kernel) and isinstance(k2, Kernel)):
            raise TypeError(f"{type(self).__name__} combines two Kernel instances")
        self.k1, self.k2 = k1, k2

    @property
    def symmetric(self) -> bool:  # type: ignore[override]
        return self.k1.symmetric and self.k2.symmetric

    def get_params(self) -> dict[str, Any]:
        return {"k1": self.k1, "k2": self.k2}

    def _evaluate(self, X: np.ndarray, Y: np.ndarray) -> np.ndarray:
        return type(self)._ufunc(self.k1._evaluate(X, Y), self.k2._evaluate(X, Y))

    def _diag(self, X: np.ndarray) -> np.ndarray:
        return type(self)._ufunc(self.k1._diag(X), self.k2._diag(X))

    def __repr__(self) -> str:
        return f"({self.k1!r} {self._op} {self.k2!r})"


class Sum(_Binary):
    r"""Sum of two kernels, built by ``k1 + k2``: :math:`k(x, y) = k_1(x, y) + k_2(x, y)`.

    Examples
    --------
    >>> (Linear() + Linear())([[1.0, 2.0]])
    array([[10.]])
    """

    _op, _ufunc = "+", np.add


class Product(_Binary):
    r"""Elementwise product, built by ``k1 * k2``: :math:`k(x, y) = k_1(x, y)\,k_2(x, y)`.

    Examples
    --------
    >>> (Linear() * Linear())([[1.0, 2.0]])
    array([[25.]])
    """

    _op, _ufunc = "*", np.multiply


def _sq_dist(X: np.ndarray, Y: np.ndarray, out: np.ndarray) -> np.ndarray:
    """Squared Euclidean distances into ``out``: exactly 0 for identical points, never negative."""
    cdist(X, Y, "sqeuclidean", out=out)
    return np.maximum(out, 0.0, out=out)


class _WidthKernel(Kernel):
    """A kernel with one width: ``gamma = 1 / (_c * length_scale**_p)``; give one, not both.

    ``gamma`` defaults to 1.0 when neither is given; both must be finite and > 0.
    """

    _c, _p = 2.0, 2
    symmetric = True

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
        raise NotImplementedError


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

    def _fill(self, X: np.ndarray, Y: np.ndarray, out: np.ndarray) -> None:
        _sq_dist(X, Y, out)
        out *= -self.gamma
        np.exp(out, out=out)


class Laplacian(_WidthKernel):
    r"""Laplacian (exponential) kernel on the L1 distance, as sklearn's ``laplacian_kernel``.

    .. math::

        k(x, y) = \exp(-\gamma \lVert x - y \rVert_1), \qquad \gamma = 1 / \ell

    In one dimension this is the exponential (Matern-1/2) kernel; in several it
    is the product of one-dimensional exponential kernels (L1, not Euclidean).

    Parameters
    ----------
    gamma, length_scale : float, optional
        Inverse width or width :math:`\ell`; give at most one (default ``gamma=1.0``).

    Examples
    --------
    >>> Laplacian(gamma=1.0)([[0.0, 0.0]], [[1.0, 1.0]]).round(4)
    array([[0.1353]])
    """

    _c, _p = 1.0, 1

    def _fill(self, X: np.ndarray, Y: np.ndarray, out: np.ndarray) -> None:
        cdist(X, Y, "cityblock", out=out)
        out *= -self.gamma
        np.exp(out, out=out)


class Cauchy(_WidthKernel):
    r"""Cauchy kernel; with ``length_scale`` it is sklearn's ``RationalQuadratic(alpha=1)``.

    .. math::

        k(x, y) = \frac{1}{1 + \gamma \lVert x - y \rVert_2^2}, \qquad \gamma = 1 / (2 \ell^2)

    Parameters
    ----------
    gamma, length_scale : float, optional
        Inverse width or width :math:`\ell`; give at most one (default ``gamma=1.0``).

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

    Meant for inputs scaled to a positive range of order one such as [0, 1]:
    it is not translation invariant and is not positive semi-definite when
    inputs are negative.

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

    The one registry of the kernels, for readers of saved parameters
    (:class:`CallableKernel` and user subclasses are not in it).

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


_BASIS_NAMES = frozenset(
    {
        "Basis",
        "FunctionBasis",
        "KernelBasis",
        "PrecomputedBasis",
        "column_scale",
        "make_basis",
        "polynomial_basis",
    }
)


def __getattr__(name: str):
    """An AttributeError that names :mod:`rvm_pymc.basis` for the bases once reached here."""
    if name in _BASIS_NAMES:
        raise AttributeError(
            f"rvm_pymc.kernels.{name} was removed; import it from rvm_pymc.basis "
            f"(from rvm_pymc.basis import {name})"
        )
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
