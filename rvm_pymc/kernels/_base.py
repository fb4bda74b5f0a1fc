"""The kernel base class and its algebra: ``+`` and ``*`` of kernels and constants."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from rvm_pymc._core.validation import as_2d_float, check_positive, is_real

__all__ = ["Constant", "Kernel", "Product", "Sum"]


def check_finite_matrix(M: np.ndarray, what: str) -> None:
    """Raise ``ValueError`` naming ``what`` if ``M`` has NaN or infinite entries."""
    n_bad = int(M.size - np.count_nonzero(np.isfinite(M)))
    if n_bad:
        raise ValueError(
            f"{what} has {n_bad} non-finite entr{'y' if n_bad == 1 else 'ies'} "
            f"(of {M.size}); check the hyperparameters and the scale of the inputs"
        )


#: Rows per block of the generic :meth:`Kernel.diag` (a block x block matrix at a time).
_DIAG_BLOCK = 256


class Kernel:
    """Base class of all kernels: ``k(X, Y=None)`` returns the (n, m) kernel matrix.

    Calling a kernel validates ``X`` and ``Y`` (default ``X``; 1-D input is one
    feature) and checks that the result is finite.  Subclasses implement
    ``_evaluate(X, Y)`` and ``get_params()``, and set ``symmetric = True`` when
    ``k(x, y) == k(y, x)`` (a design matrix is then filled as ``k(C, X).T``).

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
        """A subclass redefining ``_evaluate`` or ``__call__`` is symmetric only if it says so."""
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
        check_finite_matrix(K, f"kernel matrix of {self!r}")
        return K

    def _evaluate(self, X: np.ndarray, Y: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def fill(self, X: np.ndarray, Y: np.ndarray, out: np.ndarray) -> np.ndarray:
        """Write ``k(X, Y)`` into ``out``, a C-contiguous float64 (n, m) array; return it.

        Only ``out`` is checked: ``X`` and ``Y`` must be finite float64 arrays; the
        caller checks the result.
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
        check_finite_matrix(d, f"kernel diagonal of {self!r}")
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
