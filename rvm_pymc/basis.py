r"""Bases: how the design matrix ``Phi`` (N x M) of an RVM is built from inputs.

A :class:`Basis` maps inputs to ``Phi``: :class:`KernelBasis` (bias column plus
one kernel column per training point, Tipping 2001), :class:`FunctionBasis`
(user functions such as ``[1, x, x^2, x^3]``), :class:`PrecomputedBasis` (a
given matrix).  The kernels live in :mod:`rvm_pymc.kernels`.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from sklearn.exceptions import NotFittedError

from rvm_pymc._core.centres import choose_centres, resolve_centres
from rvm_pymc._core.threads import thread_map
from rvm_pymc._core.validation import as_2d_float, is_real
from rvm_pymc.kernels import Kernel, make_kernel

__all__ = [
    "Basis",
    "FunctionBasis",
    "KernelBasis",
    "PrecomputedBasis",
    "column_scale",
    "make_basis",
    "polynomial_basis",
]


#: The kernel design matrix is filled this many entries (rows x centres) at a time.
_BLOCK_ENTRIES = 1 << 20
#: ... and through a buffer of this many (1 MB) when written into a strided view.
_COPY_ENTRIES = 1 << 17
#: Entries above which a kernel with ``threaded_fill`` fills its design's blocks on threads.
_THREAD_ENTRIES = 1 << 24


class Basis:
    """Base class of design-matrix builders: ``fit(X)``, then ``transform(X) -> Phi``.

    ``fit`` sets ``n_features_in_``, ``n_basis_`` (the number M of columns of
    ``Phi``) and ``basis_names_`` (one name per column).  ``transform`` returns
    a finite float64 (n, M) array, its first column all ones when ``bias=True``;
    it raises ``NotFittedError`` before ``fit``.
    """

    bias: bool = False
    _feature_word = "features"

    def fit(self, X: ArrayLike) -> Basis:
        """Record what ``transform`` needs from the training inputs; return ``self``."""
        X = as_2d_float(X, "X")
        self.n_features_in_ = X.shape[1]
        self.basis_names_ = (["bias"] if self.bias else []) + self._fit(X)
        self.n_basis_ = len(self.basis_names_)
        return self

    def transform(self, X: ArrayLike, out: np.ndarray | None = None) -> np.ndarray:
        """Return the design matrix ``Phi`` of shape ``(n_samples, n_basis_)``.

        Parameters
        ----------
        X : array_like of shape (n_samples, n_features)
        out : ndarray, optional
            A float64 array of shape ``(n_samples, n_basis_)`` (any strides) to
            write ``Phi`` into and return.

        Returns
        -------
        ndarray of shape ``(n_samples, n_basis_)``
        """
        if not hasattr(self, "n_basis_"):
            raise NotFittedError(f"this {type(self).__name__} is not fitted yet; call fit(X)")
        X = as_2d_float(X, "X")
        if X.shape[1] != self.n_features_in_:
            w = self._feature_word
            raise ValueError(
                f"X has {X.shape[1]} {w}, but {type(self).__name__} was fitted with "
                f"{self.n_features_in_} {w}"
            )
        if out is None:
            Phi = self._design(X)
        else:
            shape = (X.shape[0], self.n_basis_)
            if out.shape != shape or out.dtype != np.float64 or not out.flags.writeable:
                raise ValueError(
                    f"out must be a writeable float64 array of shape {shape}; got "
                    f"{out.dtype} {out.shape}"
                )
            Phi = self._design_into(X, out)
        with np.errstate(over="ignore", invalid="ignore"):  # inf + -inf, or a sum past 1e308
            total = Phi.sum()
        # a sum that overflows is no error: name the columns only of non-finite entries
        if not np.isfinite(total) and (bad := ~np.isfinite(Phi)).any():
            cols = [str(self.basis_names_[j]) for j in np.flatnonzero(bad.any(axis=0))]
            shown = cols[:5] + (["..."] if len(cols) > 5 else [])
            raise ValueError(
                f"the design matrix of {self!r} has {int(bad.sum())} non-finite "
                f"entr{'y' if bad.sum() == 1 else 'ies'} (of {Phi.size}) in column(s) {shown}; "
                "check the basis functions, the hyperparameters and the scale of the inputs"
            )
        return Phi

    def fit_transform(self, X: ArrayLike) -> np.ndarray:
        """Fit to ``X`` and return its design matrix."""
        return self.fit(X).transform(X)

    def _design(self, X: np.ndarray) -> np.ndarray:
        """``_transform(X)`` as float64, with the bias column first when ``bias``."""
        Phi = np.asarray(self._transform(X), dtype=np.float64)
        if self.bias:
            Phi = np.hstack([np.ones((X.shape[0], 1)), Phi])
        return Phi

    def _design_into(self, X: np.ndarray, out: np.ndarray) -> np.ndarray:
        """:meth:`_design` written into ``out`` (of the right shape and dtype)."""
        out[...] = self._design(X)
        return out

    def _fit(self, X: np.ndarray) -> list[str]:
        raise NotImplementedError

    def _transform(self, X: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def get_params(self) -> dict[str, Any]:
        """Return the constructor arguments as a dict."""
        return {"bias": self.bias}

    def __sklearn_clone__(self) -> Basis:
        """An unfitted copy with the same constructor arguments (``sklearn.base.clone``)."""
        return type(self)(**self.get_params())

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"


class KernelBasis(Basis):
    """Kernel design matrix ``Phi = [1 | k(X, centres_)]``: one column per centre.

    Up to 2000 training points every training point is a centre (Tipping 2001);
    above that, ``centres="auto"`` keeps at most 1000 of them, chosen by greedy
    pivoted Cholesky and farthest-point filling (``docs/reference_solver.md``,
    "Large N").

    Parameters
    ----------
    kernel : str, Kernel or callable
        Anything :func:`~rvm_pymc.kernels.make_kernel` accepts; ``fit`` resolves it into
        ``kernel_``.
    bias : bool
        Put a column of ones first, so that ``n_basis_ = n_centres + 1``.
    centres : "auto", "all" or int
        ``"all"``: every training point; an integer ``m``: ``m`` chosen centres;
        ``"auto"`` (default): ``"all"`` up to 2000 training points, else at most 1000.
    random_state : None, int, Generator or RandomState
        Draws the pool of at most 20000 training points searched for centres;
        None is a fixed seed.

    Attributes
    ----------
    X_fit_, centres_ : ndarray of shape (n_centres, d)
        A private copy of the centres (the training inputs or a subset).
    centre_indices_ : ndarray of int
        Their rows in the training inputs (``arange(N)`` when every point is one).
    kernel_ : Kernel
    basis_names_ : list of str
        ``["bias", "x<i>", ...]``; ``"x<i>"`` is the kernel centred on training point i.

    Examples
    --------
    >>> from rvm_pymc.kernels import RBF
    >>> basis = KernelBasis(RBF(gamma=1.0)).fit([0.0, 1.0])
    >>> basis.basis_names_
    ['bias', 'x0', 'x1']
    >>> basis.transform([0.0, 0.5]).round(4)
    array([[1.    , 1.    , 0.3679],
           [1.    , 0.7788, 0.7788]])
    >>> import numpy as np
    >>> x = np.linspace(-10, 10, 1000)
    >>> basis = KernelBasis(RBF(gamma=0.03), centres=100).fit(x)
    >>> basis.n_basis_
    101
    >>> gaps = np.diff(basis.centres_[:, 0])  # spread over [-10, 10] (a random 100: up to 1.2)
    >>> bool(gaps.min() > 0.15 and gaps.max() < 0.4)
    True
    """

    def __init__(
        self,
        kernel: str | Kernel | Callable = "rbf",
        bias: bool = True,
        centres: str | int = "auto",
        random_state: Any = None,
    ) -> None:
        self.kernel = kernel
        self.bias = bool(bias)
        self.centres = centres
        self.random_state = random_state

    def _fit(self, X: np.ndarray) -> list[str]:
        kernel = make_kernel(self.kernel)
        counts = resolve_centres(self.centres, X.shape[0])
        if counts is None:
            idx = np.arange(X.shape[0])
        else:
            idx = choose_centres(
                X, kernel, counts[0], fill_to=counts[1], random_state=self.random_state
            )
        self.kernel_ = kernel
        self.centre_indices_ = idx
        self.X_fit_ = self.centres_ = X if idx.size == X.shape[0] else X[idx]
        return [f"x{i}" for i in idx.tolist()]

    def _transform(self, X: np.ndarray) -> np.ndarray:
        return self.kernel_(X, self.X_fit_)

    def _design(self, X: np.ndarray) -> np.ndarray:
        """One column-major (n, n_basis_) array filled block by block."""
        n, off = X.shape[0], int(self.bias)
        if getattr(self.kernel_, "symmetric", False):
            return self._fill_columns(X, np.empty((self.n_basis_, n))).T
        Phi = np.empty((n, self.n_basis_), order="F")
        if off:
            Phi[:, 0] = 1.0
        rows = max(1, _BLOCK_ENTRIES // max(self.X_fit_.shape[0], 1))
        for s in range(0, n, rows):
            Phi[s : s + rows, off:] = self.kernel_(X[s : s + rows], self.X_fit_)
        return Phi

    def _design_into(self, X: np.ndarray, out: np.ndarray) -> np.ndarray:
        if getattr(self.kernel_, "symmetric", False) and out.strides[0] == out.itemsize:
            self._fill_columns(X, out.T)
            return out
        return super()._design_into(X, out)

    def _fill_columns(self, X: np.ndarray, PhiT: np.ndarray) -> np.ndarray:
        """Fill ``PhiT`` (n_basis_, n) with ``Phi.T`` of a symmetric kernel, in blocks."""
        n, off = X.shape[0], int(self.bias)
        if off:
            PhiT[0] = 1.0
        direct = PhiT.flags.c_contiguous
        rows = max(1, (_BLOCK_ENTRIES if direct else _COPY_ENTRIES) // max(n, 1))
        starts = range(0, self.X_fit_.shape[0], rows)
        if direct:

            def fill(s: int) -> None:
                self.kernel_.fill(self.X_fit_[s : s + rows], X, PhiT[off + s : off + s + rows])

            threads = PhiT.size >= _THREAD_ENTRIES and getattr(self.kernel_, "threaded_fill", 0)
            list((thread_map if threads else map)(fill, starts))
            return PhiT
        buf = np.empty((min(rows, self.X_fit_.shape[0]), n))
        for s in starts:
            C = self.X_fit_[s : s + rows]
            PhiT[off + s : off + s + C.shape[0]] = self.kernel_.fill(C, X, buf[: C.shape[0]])
        return PhiT

    def get_params(self) -> dict[str, Any]:
        return {
            "kernel": self.kernel,
            "bias": self.bias,
            "centres": self.centres,
            "random_state": self.random_state,
        }

    def __repr__(self) -> str:
        defaults = (("centres", "auto"), ("random_state", None))  # left out
        shown = [f"{k}={v!r}" for k, v in self.get_params().items() if (k, v) not in defaults]
        return f"{type(self).__name__}({', '.join(shown)})"


def _function_name(f: Any, i: int) -> str:
    if is_real(f):
        return "1" if f == 1 else f"const({float(f):g})"
    name = getattr(f, "__name__", None)
    return name if name and name != "<lambda>" else f"f{i}"


class FunctionBasis(Basis):
    """Design matrix from user basis functions, one column per function.

    Parameters
    ----------
    functions : sequence
        Callables mapping X (n, d) to an (n,) array (a scalar result is
        broadcast), or real numbers meaning a constant column.  Column names
        come from the functions' ``__name__`` (``"f<i>"`` for lambdas).
    bias : bool
        Put a column of ones first.

    Examples
    --------
    >>> basis = FunctionBasis([1, lambda X: X[:, 0], lambda X: X[:, 0] ** 2])
    >>> basis.fit_transform([1.0, 2.0])
    array([[1., 1., 1.],
           [1., 2., 4.]])
    """

    def __init__(self, functions: Sequence[Any], bias: bool = False) -> None:
        functions = list(functions)
        if not functions:
            raise ValueError("functions must contain at least one basis function")
        for i, f in enumerate(functions):
            if not (callable(f) or is_real(f)):
                raise ValueError(f"functions[{i}] must be callable or a real constant; got {f!r}")
        self.functions = functions
        self.bias = bool(bias)

    def _fit(self, X: np.ndarray) -> list[str]:
        names = [_function_name(f, i) for i, f in enumerate(self.functions)]
        if len(set(names)) < len(names):
            names = [f"{n}_{i}" for i, n in enumerate(names)]
        return names

    def _transform(self, X: np.ndarray) -> np.ndarray:
        n = X.shape[0]
        cols = []
        for i, f in enumerate(self.functions):
            out = np.asarray(f if is_real(f) else f(X.copy()), dtype=np.float64)
            if out.ndim == 0:
                out = np.full(n, float(out))
            elif out.shape not in ((n,), (n, 1)):
                raise ValueError(
                    f"basis function functions[{i}] ({self.basis_names_[i + self.bias]!r}) "
                    f"returned shape {out.shape}; expected ({n},)"
                )
            cols.append(out.reshape(n))
        return np.column_stack(cols)

    def get_params(self) -> dict[str, Any]:
        return {"functions": self.functions, "bias": self.bias}


class _Monomial:
    """``x ** power`` for one-feature input; a named, picklable basis function."""

    def __init__(self, power: int) -> None:
        self.power = power
        self.__name__ = "1" if power == 0 else ("x" if power == 1 else f"x^{power}")

    def __call__(self, X: np.ndarray) -> np.ndarray:
        if X.shape[1] != 1:
            raise ValueError(f"polynomial_basis expects one input feature; X has {X.shape[1]}")
        return X[:, 0] ** self.power


def polynomial_basis(degree: int) -> FunctionBasis:
    """Polynomial basis ``[1, x, x^2, ..., x^degree]`` for one-dimensional input.

    Parameters
    ----------
    degree : int
        Highest power, a non-negative integer.

    Returns
    -------
    FunctionBasis
        ``degree + 1`` columns named ``"1", "x", "x^2", ...``.

    Examples
    --------
    >>> polynomial_basis(2).fit_transform([2.0, 3.0])
    array([[1., 2., 4.],
           [1., 3., 9.]])
    """
    if isinstance(degree, bool) or not isinstance(degree, numbers.Integral) or degree < 0:
        raise ValueError(f"degree must be a non-negative integer; got {degree!r}")
    return FunctionBasis([_Monomial(p) for p in range(int(degree) + 1)])


class PrecomputedBasis(Basis):
    """The input is the design matrix itself, or the kernel matrix (new x training points).

    Parameters
    ----------
    bias : bool
        Put a column of ones first.

    Examples
    --------
    >>> basis = PrecomputedBasis(bias=True).fit([[1.0, 0.5], [0.5, 1.0]])
    >>> basis.basis_names_
    ['bias', 'c0', 'c1']
    >>> basis.transform([[0.2, 0.3]])
    array([[1. , 0.2, 0.3]])
    """

    _feature_word = "columns"

    def __init__(self, bias: bool = False) -> None:
        self.bias = bool(bias)

    def _fit(self, X: np.ndarray) -> list[str]:
        return [f"c{j}" for j in range(X.shape[1])]

    def _transform(self, X: np.ndarray) -> np.ndarray:
        return X


def make_basis(
    kernel: str | Kernel | Callable | Basis = "rbf", bias: bool = True, **params: Any
) -> Basis:
    """Return a :class:`Basis` for a kernel name/instance/callable, ``"precomputed"`` or a Basis.

    Parameters
    ----------
    kernel : str, Kernel, callable or Basis
        A :class:`Basis` is returned as is (``bias`` is then ignored);
        ``"precomputed"`` gives a :class:`PrecomputedBasis`; anything else goes
        through :func:`~rvm_pymc.kernels.make_kernel` into a :class:`KernelBasis`.
    bias : bool
        Put a column of ones first.
    **params
        Kernel hyperparameters (only with a kernel name).

    Returns
    -------
    Basis

    Examples
    --------
    >>> make_basis("rbf", gamma=2.0)
    KernelBasis(kernel=RBF(gamma=2.0), bias=True)
    >>> make_basis("precomputed", bias=False)
    PrecomputedBasis(bias=False)
    """
    if isinstance(kernel, Basis) or (isinstance(kernel, str) and kernel == "precomputed"):
        if params:
            raise ValueError(f"parameters {sorted(params)} do not apply to kernel={kernel!r}")
        return kernel if isinstance(kernel, Basis) else PrecomputedBasis(bias=bias)
    return KernelBasis(make_kernel(kernel, **params), bias=bias)


def column_scale(Phi: ArrayLike) -> np.ndarray:
    """Euclidean norms of the columns of ``Phi``, zero-norm columns mapped to 1.

    Parameters
    ----------
    Phi : array_like of shape (N, M)

    Returns
    -------
    ndarray of shape (M,)

    Examples
    --------
    >>> column_scale([[3.0, 0.0], [4.0, 0.0]])
    array([5., 1.])
    """
    scale = np.linalg.norm(as_2d_float(Phi, "Phi"), axis=0)
    scale[scale == 0.0] = 1.0
    return scale
