"""The ``rvm_pymc`` logger (INFO to stderr unless the application configured logging, as
PyMC's), and plain progress lines of a sampler (:class:`DrawLines`)."""

from __future__ import annotations

import contextlib
import logging
import math
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

__all__ = ["PLAIN_PROGRESS", "DrawLines", "log", "note_once", "quiet_pymc"]

log = logging.getLogger("rvm_pymc")
if not logging.root.handlers:
    log.setLevel(logging.INFO)
    if not log.handlers:
        log.addHandler(logging.StreamHandler())

_NOTED: set = set()


def note_once(message: str, *args: Any) -> None:
    """``log.info(message, *args)`` the first time in this process, and never again."""
    key = (message, args)
    if key not in _NOTED:
        _NOTED.add(key)
        log.info(message, *args)


@contextlib.contextmanager
def quiet_pymc() -> Iterator[None]:
    """PyMC's INFO notes held back in the block (its warnings still show)."""
    logger = logging.getLogger("pymc")
    level = logger.level
    if logger.getEffectiveLevel() < logging.WARNING:
        logger.setLevel(logging.WARNING)
    try:
        yield
    finally:
        logger.setLevel(level)


PLAIN_PROGRESS = "lines"
"""The ``progressbar`` value asking for :class:`DrawLines` instead of a live bar."""


def _diverging(stats: Any) -> bool:
    """Whether a draw's sampler statistics (a dict, or one dict per step method) say so."""
    if isinstance(stats, Mapping):
        stats = [stats]
    return any(bool(s.get("diverging", False)) for s in stats or () if isinstance(s, Mapping))


class DrawLines:
    """Plain progress lines of a sampler, for a log or a redirected standard error."""

    def __init__(
        self,
        draws: int,
        tune: int,
        chains: int,
        *,
        every_seconds: float = 10.0,
        every_share: float = 0.1,
        write: Callable[[str], None] | None = None,
    ) -> None:
        self.draws, self.tune, self.chains = int(draws), int(tune), int(chains)
        self.total = self.draws + self.tune
        self.every_seconds = float(every_seconds)
        self.step = max(1, math.ceil(every_share * self.total))
        self.write = write
        self.start: float | None = None
        self.last: dict[int, float] = {}
        self.divergent: dict[int, int] = {}

    def _emit(self, line: str) -> None:
        (self.write or log.info)(line)

    def __call__(self, trace: Any = None, draw: Any = None) -> None:
        now = time.monotonic()
        if self.start is None:
            self.start = now
        chain, done = int(draw.chain), int(draw.draw_idx) + 1
        if not draw.tuning and _diverging(draw.stats):
            self.divergent[chain] = self.divergent.get(chain, 0) + 1
        last = self.last.setdefault(chain, self.start)
        if done % self.step and done < self.total and now - last < self.every_seconds:
            return
        self.last[chain] = now
        phase = "tuning" if draw.tuning else "sampling"
        self._emit(
            f"NUTS chain {chain + 1}/{self.chains}: {done}/{self.total} ({phase}), "
            f"{self.divergent.get(chain, 0)} divergences, {now - self.start:.0f} s elapsed"
        )

    def summary(self, seconds: float, max_rhat: float, n_divergent: int) -> None:
        """The one line at the end: time, worst R-hat and divergences of every chain."""
        self._emit(
            f"NUTS done: {self.chains} chain{'s' if self.chains > 1 else ''} of {self.tune} "
            f"tuning + {self.draws} draws in "
            f"{seconds:.1f} s; max R-hat {max_rhat:.3f}, {n_divergent} divergences"
        )
