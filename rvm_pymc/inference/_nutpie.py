"""nutpie's NUTS: :func:`nutpie_sample` runs nutpie's background sampler as
``pm.sample(nuts_sampler="nutpie")`` runs it (the same compiled model, seed, options and
progress bars) and, with a stopping rule
(:class:`~rvm_pymc.inference._stop.StopWhenConverged`), reads its draws while it runs and
cuts them at the first checkpoint that passes, so a stopped run keeps exactly the first
draws of the fixed-length run.  A Ctrl-C or an error ends nutpie's threads and propagates
(nutpie's own blocking ``sample`` would return the draws so far instead).
"""

from __future__ import annotations

import functools
import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import xarray as xr

from rvm_pymc.inference._options import NutsRun
from rvm_pymc.inference._stop import StopWhenConverged

__all__ = ["POLL_SECONDS", "nutpie_sample"]

POLL_SECONDS = 1.0
"""Seconds between two looks at nutpie's progress (and its draws, once a checkpoint is
reported) by a stopping rule."""


def nutpie_sample(
    model, run: NutsRun, stop: StopWhenConverged | None, *, cores: int, poll: float = POLL_SECONDS
) -> xr.DataTree:
    """Sample ``model`` by nutpie (its Numba backend) with the options of ``run``, ``cores``
    chains at a time; ``stop``: end at its first passing checkpoint.  The tree ``pm.sample``
    returns, cut to that checkpoint's draws (the whole run when none passes or no ``stop``);
    ``sampling_time`` is the wall time from the start to the last read."""
    import nutpie
    from pymc.backends.arviz import patch_nutpie_idata
    from pymc.progress_bar.progress import NutpieProgressBarManager
    from pymc.util import get_random_generator

    start = {} if run.initvals is None else {"initial_points": dict(run.initvals)}
    compiled = nutpie.compile_pymc_model(model, backend="numba", **start)
    # the seed pm.sample gives nutpie: its first chain's, from one generator a chain
    first_chain = get_random_generator(run.random_seed).spawn(run.chains)[0]
    bars = NutpieProgressBarManager(
        chains=run.chains, draws=run.draws, progressbar=run.progressbar
    )
    done: list[int] = []  # each chain's draws after tuning, as nutpie last reported them

    def on_progress(chains) -> None:
        done[:] = [cp.finished_draws - (cp.total_draws - run.draws) for cp in chains]
        bars.update(chains)

    options = {
        "draws": run.draws,
        "tune": max(run.tune, 1),  # nutpie needs a tuning step
        "chains": run.chains,
        "cores": min(cores, run.chains),
        "seed": int(first_chain.integers(2**30)),
        "target_accept": run.target_accept,
        "save_warmup": False,
        "progress_bar": False,
        "progress_callback": on_progress,
        "blocking": False,
    }
    t0 = time.time()
    with bars:
        start_run = functools.partial(nutpie.sample, compiled, **options)
        tree = read_until_converged(start_run, stop, poll, lambda: min(done, default=None))
    patch_nutpie_idata(tree, model, sampling_time=time.time() - t0)
    return tree


def read_until_converged(
    start: Callable[[], Any],
    stop: StopWhenConverged | None,
    poll: float,
    reported: Callable[[], int | None] = lambda: None,
) -> xr.DataTree:
    """The draws of the background sampler ``start()`` returns: looked at every ``poll``
    seconds, each checkpoint of ``stop`` checked once every chain has reached it, and cut
    at the first that passes (else, or without ``stop``, the whole run).  ``reported()``:
    the draws after tuning that every chain has reported (None: unknown); no read is made
    before a checkpoint (or the end) is reported.  A Ctrl-C or an error ends the sampler's
    threads before it propagates."""
    sampler = None
    try:
        sampler = start()
        return sampler.wait() if stop is None else _read(sampler, stop, poll, reported)
    except BaseException:
        if sampler is not None:
            sampler.cancel()
        raise


def _read(sampler, stop: StopWhenConverged, poll: float, reported) -> xr.DataTree:
    while True:
        finished = _finished(sampler)
        n = reported()
        if not finished and n is not None and not stop.reached(n):
            time.sleep(poll)  # no checkpoint reached yet: a read would be wasted
            continue
        trace = sampler.wait() if finished else _inspect(sampler)
        done = _draws_done(trace, stop.names[0], stop.chains)
        while (k := stop.due(done)) is not None:
            if stop.passes(k, *_first_draws(trace, stop.names, k)):
                whole = trace if finished else sampler.abort()
                return whole.isel(draw=slice(0, k), missing_dims="ignore")
        if finished:
            return trace
        if done >= stop.draws:  # every chain has its draws: every checkpoint was checked
            return sampler.wait()
        time.sleep(poll)


def _finished(sampler) -> bool:
    """Whether nutpie's ``sampler`` has finished (nutpie 0.16 raises TimeoutError while it
    runs, and the sampler's own error when it failed)."""
    try:
        return bool(sampler.is_finished)
    except TimeoutError:
        return False


def _inspect(sampler) -> xr.DataTree:
    """The draws so far (ArviZ warns of a read with fewer draws than chains)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Found chain dimension to be longer", UserWarning)
        return sampler.inspect()


def _draws_done(trace: xr.DataTree, name: str, chains: int) -> int:
    """The draws after tuning that every one of ``chains`` chains has in ``trace`` (nutpie
    pads a shorter chain's float draws with NaN)."""
    if "posterior" not in trace.children or name not in trace["posterior"]:
        return 0
    x = np.asarray(trace["posterior"][name].values, dtype=float)
    if x.shape[0] < chains or x.shape[1] == 0:
        return 0
    drawn = ~np.isnan(x).all(axis=tuple(range(2, x.ndim)))
    return int(drawn.sum(axis=1).min())


def _first_draws(trace: xr.DataTree, names, k: int) -> tuple[dict[str, np.ndarray], int]:
    """Each chain's first ``k`` draws of ``names``, and the divergences among them."""
    post = trace["posterior"]
    values = {n: np.asarray(post[n].values[:, :k]) for n in names}
    stats = trace["sample_stats"]
    n_div = int(np.sum(stats["diverging"].values[:, :k])) if "diverging" in stats else 0
    return values, n_div
