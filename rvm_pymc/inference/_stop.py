"""Stop NUTS once its draws pass the convergence standard (``until_converged``).

:class:`StopWhenConverged` checks the first ``k`` draws of every chain at each checkpoint
``k`` (:data:`~rvm_pymc.inference.defaults.FIRST_CHECK`, then every
:data:`~rvm_pymc.inference.defaults.CHECK_EVERY`).  As a ``pm.sample`` callback, at the
first that passes it cuts every chain to ``k`` draws and raises :class:`Converged`, on which
PyMC ends every chain; nutpie's run is read and cut by
:func:`~rvm_pymc.inference._nutpie.nutpie_sample` through :meth:`~StopWhenConverged.due`
and :meth:`~StopWhenConverged.passes`.  The checkpoints depend on the draws alone, not on
how the chains run.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from rvm_pymc._core.convergence import passes_checks, sampling_diagnostics
from rvm_pymc._core.progress import log
from rvm_pymc.inference._options import STOPPING_SAMPLERS
from rvm_pymc.inference._user_models import extra_free
from rvm_pymc.inference.defaults import CHECK_EVERY, FIRST_CHECK

__all__ = [
    "CHECKED",
    "STOP_ATTRS",
    "Converged",
    "StopWhenConverged",
    "recorded_names",
    "stop_rule",
]

STOP_ATTRS = ("max_draws", "convergence_checks")
"""Root attributes of a run with the rule."""


class Converged(KeyboardInterrupt):
    """Raised by :class:`StopWhenConverged` to end ``pm.sample``; never taken for a Ctrl-C."""


class StopWhenConverged:
    """The stopping rule; called as a ``pm.sample`` callback, it ends sampling at the first
    checkpoint that passes."""

    def __init__(
        self,
        names: Sequence[str],
        *,
        draws: int,
        tune: int,
        chains: int,
        rhat_threshold: float,
        min_ess: float,
        first: int = FIRST_CHECK,
        every: int = CHECK_EVERY,
        report: Callable[[dict[str, np.ndarray]], dict[str, np.ndarray]] | None = None,
    ) -> None:
        if not names:
            raise ValueError("StopWhenConverged needs at least one variable to check")
        self.names = tuple(names)
        self.draws, self.tune, self.chains = int(draws), int(tune), int(chains)
        self.rhat_threshold, self.min_ess = float(rhat_threshold), float(min_ess)
        self.every = int(every)
        self.report_draws = report
        self.next = int(first)
        self.traces: dict[int, Any] = {}
        self.stopped_at: int | None = None
        self.checks: list[tuple[int, dict]] = []

    def __call__(self, trace: Any, draw: Any) -> None:
        self.traces[int(draw.chain)] = trace
        if draw.tuning or len(self.traces) < self.chains:
            return
        k = self.due(min(len(t) for t in self.traces.values()) - self.tune)
        if k is not None and self.passes(k, *self._pymc_draws(k)):
            for t in self.traces.values():  # keep each chain's first tune + k iterations
                if not hasattr(t, "draw_idx"):
                    raise RuntimeError(
                        "until_converged needs PyMC's in-memory trace backend; got "
                        f"{type(t).__name__}"
                    )
                t.draw_idx = min(int(t.draw_idx), self.tune + k)
            raise Converged

    def report(self, tree) -> None:
        """Record :data:`STOP_ATTRS` in ``tree``'s attributes; log a stop."""
        tree.attrs["max_draws"] = self.draws
        tree.attrs["convergence_checks"] = len(self.checks)
        if self.stopped_at is None:
            return
        k, diag = self.checks[-1]
        log.info(
            "NUTS stopped at %d of at most %d draws a chain: converged (max R-hat %.3f, "
            "smallest ESS bulk %.0f / tail %.0f, no divergence)",
            k,
            self.draws,
            diag["max_rhat"],
            diag["min_ess_bulk"],
            diag["min_ess_tail"],
        )

    def reached(self, done: int) -> bool:
        """Whether ``done`` draws a chain after tuning reach the next checkpoint, or the end
        of the run when no checkpoint is left."""
        return done >= min(self.next, self.draws)

    def due(self, done: int) -> int | None:
        """The next checkpoint, once every chain has ``done`` draws after tuning; None
        before it, or when no checkpoint is left before ``draws``."""
        if self.next >= self.draws or done < self.next:
            return None
        k, self.next = self.next, self.next + self.every
        return k

    def passes(self, k: int, values: dict[str, np.ndarray], n_div: int) -> bool:
        """Check checkpoint ``k`` on ``values``, each ``(chain, k, ...)`` draws as the
        sampler records them, and ``n_div`` divergences among them; True if it passes."""
        if self.report_draws is not None:
            values = self.report_draws(values)
        diag = sampling_diagnostics(values, n_div)
        self.checks.append((k, diag))
        ok = passes_checks(diag, self.rhat_threshold, self.min_ess)
        if ok:
            self.stopped_at = k
        return ok

    def _pymc_draws(self, k: int) -> tuple[dict[str, np.ndarray], int]:
        """Each PyMC chain's first ``k`` draws after tuning, and their divergences."""
        chains = [self.traces[c] for c in sorted(self.traces)]
        values = {
            name: np.stack([t.get_values(name, burn=self.tune)[:k] for t in chains])
            for name in self.names
        }
        n_div = sum(
            int(np.sum(t.get_sampler_stats("diverging", burn=self.tune)[:k]))
            for t in chains
            if "diverging" in t.stat_names
        )
        return values, n_div


CHECKED = ("log_alpha", "log_beta", "log_length_scale", "log_dispersion")
"""Variables the convergence check covers beside the weights and a user's own free ones."""


def recorded_names(spec, collapsed: bool) -> list[str]:
    """The recorded variables the convergence check reads: any sampled weights, then CHECKED."""
    return [*(() if collapsed else ("W" if spec.kind == "softmax" else "w",)), *CHECKED]


def stop_rule(model, spec, run, sampler: str, collapsed: bool, report=None):
    """The :class:`StopWhenConverged` of ``run``, or None (``until_converged=False``, one chain,
    a sampler not among :data:`~rvm_pymc.inference._options.STOPPING_SAMPLERS`); it checks
    :func:`recorded_names` (else every free variable) and the user's own free variables, as
    ``report`` maps them."""
    if run.until_converged is False or run.chains < 2 or sampler not in STOPPING_SAMPLERS:
        return None
    names = [n for n in recorded_names(spec, collapsed) if n in model.named_vars]
    if not any(n in CHECKED for n in names):
        names = [v.name for v in model.free_RVs]
    names += [n for n in extra_free(model) if n not in names]
    return StopWhenConverged(
        names,
        draws=run.draws,
        tune=run.tune,
        chains=run.chains,
        rhat_threshold=run.rhat_threshold,
        min_ess=run.min_ess,
        report=report,
    )
