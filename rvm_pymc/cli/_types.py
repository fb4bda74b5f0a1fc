"""The argument types of every ``rvm-pymc`` command: text to a value in its range, or
:class:`argparse.ArgumentTypeError` (argparse prints it after the option's name)."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable

__all__ = [
    "DRAWS_RANGE",
    "GAMMA_RANGE",
    "MAX_NOISE_SD",
    "MAX_SEED",
    "MIN_N_TRAIN",
    "count",
    "demo_gamma",
    "draws",
    "fraction",
    "gamma_grid",
    "kernel_gamma",
    "n_train",
    "noise_sd",
    "seed",
    "tune",
]

MIN_N_TRAIN = 10
"""Fewest training points of the demo (fewer do not pin down a width and a noise level)."""
MAX_NOISE_SD = 1e6
"""Largest noise sd of the demo (its signal has amplitude 1)."""
GAMMA_RANGE = (1e-6, 1e6)
"""RBF widths the demo accepts: outside, its kernel matrix is flat or diagonal."""
MAX_SEED = 2**32 - 1
DRAWS_RANGE = (50, 100_000)
"""Draws and tuning steps per chain, of every command."""
FRACTION_RANGE = (0.05, 0.5)


def number(
    text: str,
    *,
    integer: bool,
    low: float,
    high: float = math.inf,
    low_open: bool = False,
    why: str = "",
) -> float | int:
    """``text`` as a finite number (whole if ``integer``) in ``[low, high]`` (``(low, high]``
    if ``low_open``); ArgumentTypeError, with ``why`` after the range, otherwise."""
    shown = text if len(text) <= 40 else text[:37] + "..."
    try:
        value: float | int = int(text) if integer else float(text)
    except ValueError:  # also an int of more than 4300 digits
        kind = "a whole number" if integer else "a number"
        raise argparse.ArgumentTypeError(f"expected {kind}, got {shown!r}") from None
    if not integer and not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {shown!r}")
    below = value <= low if low_open else value < low
    if below or value > high:
        if math.isinf(high):
            bound = f"{'>' if low_open else '>='} {low:g}"
        else:
            bound = f"in {'(' if low_open else '['}{low:g}, {high:.15g}]"
        raise argparse.ArgumentTypeError(f"must be {bound}{why}; got {shown}")
    return value


def count(low: int, high: int, why: str = "") -> Callable[[str], int]:
    """The type of a whole number in ``[low, high]``."""

    def parse(text: str) -> int:
        return int(number(text, integer=True, low=low, high=high, why=why))

    return parse


def seed(text: str) -> int:
    """A random seed in ``[0, MAX_SEED]``."""
    return int(number(text, integer=True, low=0, high=MAX_SEED))


def draws(text: str) -> int:
    """Draws per chain, in :data:`DRAWS_RANGE`."""
    low, high = DRAWS_RANGE
    why = " (R-hat and ESS of fewer draws say little)"
    return int(number(text, integer=True, low=low, high=high, why=why))


def tune(text: str) -> int:
    """NUTS tuning steps per chain, in :data:`DRAWS_RANGE`."""
    low, high = DRAWS_RANGE
    why = " (fewer cannot adapt the step size)"
    return int(number(text, integer=True, low=low, high=high, why=why))


def n_train(text: str) -> int:
    """Training points of the demo, at least :data:`MIN_N_TRAIN`."""
    why = " (fewer points cannot be fitted reliably)"
    return int(number(text, integer=True, low=MIN_N_TRAIN, why=why))


def noise_sd(text: str) -> float:
    """Noise sd of the demo, in ``(0, MAX_NOISE_SD]``."""
    why = " (the signal has amplitude 1)"
    return float(number(text, integer=False, low=0.0, high=MAX_NOISE_SD, low_open=True, why=why))


def demo_gamma(text: str) -> float:
    """One RBF width of the demo's grid, in :data:`GAMMA_RANGE`."""
    low, high = GAMMA_RANGE
    why = " (outside it the RBF kernel on inputs in [-10, 10] is flat or diagonal)"
    return float(number(text, integer=False, low=low, high=high, why=why))


def kernel_gamma(text: str) -> float | str:
    """A positive finite kernel width, or ``auto`` / ``cv`` / ``scale`` / ``evidence``."""
    if text in ("auto", "cv", "scale", "evidence"):
        return text
    try:
        return float(number(text, integer=False, low=0.0, low_open=True))
    except argparse.ArgumentTypeError as exc:
        words = "'auto', 'cv', 'scale' or 'evidence'"
        raise argparse.ArgumentTypeError(f"{exc}; or give {words}") from None


def gamma_grid(text: str) -> list[float]:
    """Kernel widths separated by commas (``0.01,0.1,1``): each positive and finite."""
    parts = [part.strip() for part in text.split(",")]
    if not text.strip() or any(not part for part in parts):
        raise argparse.ArgumentTypeError(
            f"expected widths separated by commas, e.g. 0.01,0.1,1; got {text!r}"
        )
    return [float(number(part, integer=False, low=0.0, low_open=True)) for part in parts]


def fraction(text: str) -> float:
    """A held-out share of the rows, in :data:`FRACTION_RANGE`."""
    low, high = FRACTION_RANGE
    return float(number(text, integer=False, low=low, high=high))
