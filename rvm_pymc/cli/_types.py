"""The argument types of every ``rvm-pymc`` command: one parser per kind of value.

Each type turns the text of an option into a value in its range or raises
:class:`argparse.ArgumentTypeError`, whose message argparse prints after the
option's name (``argument --seed: must be in [0, 4294967295]; got -1``).
Every command takes its numbers through these, so one option has one range
wherever it appears.
"""

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
"""Fewest training points of the demo: below about 6 the fast solver can fail
outright (a singular Cholesky factor at 2-5 points), and 10 points are the
least that pin down an RBF width and a noise level on sinc."""
MAX_NOISE_SD = 1e6
"""Largest noise sd of the demo (its signal has amplitude 1); beyond about
1e10 the targets' squares leave the range the solver represents."""
GAMMA_RANGE = (1e-6, 1e6)
"""RBF widths the demo accepts: its inputs lie in [-10, 10], so below 1e-6 the
kernel matrix is constant to 4e-4 and above 1e6 it is the identity matrix for
any two points more than 0.003 apart; neither says anything about a width."""
MAX_SEED = 2**32 - 1
DRAWS_RANGE = (50, 100_000)
"""Draws and tuning steps per chain, of every command: NUTS cannot adapt its
step size in fewer than about 50 tuning steps, and R-hat and the effective
sample size of fewer than 50 draws say little."""
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
    """``text`` as a finite number in ``[low, high]`` (``(low, high]`` if ``low_open``).

    Parameters
    ----------
    text : str
        The option's value as given.
    integer : bool
        Whether a whole number is expected.
    low, high : float
        The range.
    low_open : bool, default False
        Exclude ``low``.
    why : str, optional
        Said after the range when a value is outside it.

    Raises
    ------
    argparse.ArgumentTypeError
        With a message that argparse prints after the option's name.
    """
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
