"""Input validation: every check raises ValueError naming the argument; none modifies it."""

from __future__ import annotations

import contextlib
import numbers
import os

import numpy as np

__all__ = [
    "MEMORY_FRACTION",
    "as_2d_float",
    "as_target_float",
    "available_memory",
    "check_consistent_length",
    "check_memory",
    "check_numeric",
    "check_positive",
    "plain_value",
]

MEMORY_FRACTION = 0.25
"""Share of the available memory that the largest single array of a fit may take."""


def is_real(x) -> bool:
    """Whether ``x`` is a real number (a :class:`numbers.Real`, not a bool)."""
    return isinstance(x, numbers.Real) and not isinstance(x, bool)


def plain_value(value):
    """``value`` with NumPy scalars turned into Python scalars, for messages (``1.0``, not
    ``np.float64(1.0)``)."""
    return value.item() if isinstance(value, np.generic) else value


def available_memory() -> int | None:
    """Bytes of memory this process may still use (also under a cgroup v2 limit), or None."""
    found: list[int] = []
    with contextlib.suppress(OSError, ValueError), open("/proc/meminfo") as fh:
        for line in fh:
            if line.startswith("MemAvailable:"):
                found.append(int(line.split()[1]) * 1024)
                break
    if not found:
        with contextlib.suppress(OSError, ValueError, AttributeError):
            found.append(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    with contextlib.suppress(OSError, ValueError):
        with open("/sys/fs/cgroup/memory.max") as fh:
            limit = fh.read().strip()
        if limit != "max":
            with open("/sys/fs/cgroup/memory.current") as fh:
                found.append(max(int(limit) - int(fh.read().strip()), 0))
    return min(found) if found else None


def check_memory(n_bytes: float, what: str, advice: str = "") -> None:
    """ValueError if an array of ``n_bytes`` exceeds :data:`MEMORY_FRACTION` of the memory."""
    available = available_memory()
    if available is None or n_bytes <= MEMORY_FRACTION * available:
        return
    gib = 2.0**30
    raise ValueError(
        f"{what} needs {n_bytes / gib:.1f} GiB, more than {MEMORY_FRACTION:.0%} of the "
        f"available memory ({available / gib:.1f} GiB)" + (f"; {advice}" if advice else "")
    )


def _as_float_array(value, name: str, copy: bool = True) -> np.ndarray:
    try:
        arr = np.asarray(value)
    except Exception as exc:  # pragma: no cover - exotic objects
        raise TypeError(f"{name} could not be converted to an array: {exc}") from exc
    if arr.dtype == object or not (
        np.issubdtype(arr.dtype, np.number) or np.issubdtype(arr.dtype, np.bool_)
    ):
        try:
            arr = arr.astype(np.float64)
        except (TypeError, ValueError) as exc:
            raise ValueError(
                f"{name} must be numeric; got values of dtype {arr.dtype!s} that cannot be "
                f"converted to float"
            ) from exc
    if np.iscomplexobj(arr):
        raise ValueError(f"{name} must be real-valued; got a complex array")
    return arr.astype(np.float64, copy=copy)


def check_numeric(value, name: str) -> None:
    """ValueError naming ``value`` unless it is numeric, before scikit-learn's validation
    (whose NumPy messages do not name it); sparse matrices pass untouched."""
    if value is None or hasattr(value, "toarray"):
        return  # None and sparse matrices: the caller's validator has its own messages
    try:
        arr = np.asarray(value)
    except ValueError as exc:  # ragged nested sequences
        raise ValueError(f"{name} is not a rectangular array ({exc})") from None
    if np.iscomplexobj(arr):  # scikit-learn's phrase first: its checks look for it
        raise ValueError(f"Complex data not supported: {name} must be real-valued")
    if arr.dtype == object or arr.dtype.kind in "USV":
        try:
            arr.astype(np.float64)
        except ValueError:
            raise ValueError(
                f"{name} must be numeric; got values of dtype {arr.dtype!s} that cannot be "
                "converted to float"
            ) from None
        except TypeError as exc:  # e.g. a dict among the values
            raise TypeError(f"{name} must be numeric: {exc}") from None


def check_finite(arr: np.ndarray, name: str) -> None:
    """Raise ``ValueError`` if ``arr`` contains NaN or infinity."""
    # a finite sum proves every entry finite: look entry by entry only when it is not
    with np.errstate(over="ignore", invalid="ignore"):
        if np.isfinite(np.add.reduce(arr, axis=None)):
            return
    if not np.all(np.isfinite(arr)):
        n_nan = int(np.isnan(arr).sum())
        n_inf = int(np.isinf(arr).sum())
        raise ValueError(
            f"{name} contains non-finite values ({n_nan} NaN, {n_inf} inf); "
            f"remove or impute them before fitting"
        )


def as_2d_float(X, name: str = "X", *, min_samples: int = 1, copy: bool = True) -> np.ndarray:
    """Return ``X`` as a finite 2-D float64 copy; a 1-D input becomes one column."""
    arr = _as_float_array(X, name, copy)
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2:
        raise ValueError(f"{name} must be 1-D or 2-D; got an array with {arr.ndim} dimensions")
    if arr.shape[1] == 0:
        raise ValueError(f"{name} has 0 features (shape {arr.shape})")
    if arr.shape[0] < min_samples:
        raise ValueError(f"{name} has {arr.shape[0]} sample(s); at least {min_samples} required")
    check_finite(arr, name)
    return arr


def as_target_float(t, name: str = "t", *, min_samples: int = 2) -> np.ndarray:
    """Return a regression target as a finite 1-D float64 copy."""
    arr = _as_float_array(t, name)
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D; got shape {arr.shape}")
    if arr.shape[0] < min_samples:
        raise ValueError(f"{name} has {arr.shape[0]} sample(s); at least {min_samples} required")
    check_finite(arr, name)
    return arr


def check_consistent_length(**arrays) -> None:
    """Raise ``ValueError`` unless all arrays have the same number of rows."""
    lengths = {name: np.shape(a)[0] for name, a in arrays.items()}
    if len(set(lengths.values())) > 1:
        desc = ", ".join(f"{k} has {v}" for k, v in lengths.items())
        raise ValueError(f"inconsistent numbers of samples: {desc}")


def check_positive(value, name: str, *, allow_zero: bool = False) -> float:
    """Return ``value`` as a float after checking it is finite and positive."""
    try:
        v = float(value)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a number; got {plain_value(value)!r}") from exc
    if not np.isfinite(v) or v < 0 or (v == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{name} must be finite and {bound}; got {plain_value(value)!r}")
    return v


def check_int(value, name: str, minimum: int) -> int:
    """Return ``value`` as an int after checking it is an integer >= ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}; got {plain_value(value)!r}")
    return int(value)
