"""nutpie until converged: :func:`nutpie_until_converged` runs nutpie's background sampler,
reads its draws while it runs, and cuts them at the first checkpoint of the stopping rule
(:class:`~rvm_pymc.inference._stop.StopWhenConverged`) that passes.

The run is the one ``pm.sample(nuts_sampler="nutpie")`` starts (the same compiled model,
seed and options), so a stopped run keeps exactly the first draws of that fixed-length run.
"""

from __future__ import annotations

import time
import warnings

import numpy as np
import xarray as xr

from rvm_pymc.inference._options import NutsRun
from rvm_pymc.inference._stop import StopWhenConverged

__all__ = ["POLL_SECONDS", "nutpie_until_converged"]

POLL_SECONDS = 1.0
"""Seconds between two reads of nutpie's draws."""


def nutpie_until_converged(
    model, run: NutsRun, stop: StopWhenConverged, *, cores: int, poll: float = POLL_SECONDS
) -> xr.DataTree:
    """Sample ``model`` by nutpie with the options of ``run`` (``cores`` chains at a time),
    stopping at ``stop``'s first passing checkpoint; the tree ``pm.sample`` returns, its
    chains cut to that checkpoint's draws (all ``run.draws`` when none passes)."""
    import nutpie
    from pymc.backends.arviz import patch_nutpie_idata
    from pymc.util import get_random_generator

    start = {} if run.initvals is None else {"initial_points": dict(run.initvals)}
    compiled = nutpie.compile_pymc_model(model, backend="numba", **start)
    # the seed pm.sample gives nutpie: its first chain's, from one generator a chain
    first_chain = get_random_generator(run.random_seed).spawn(run.chains)[0]
    t0 = time.time()
    sampler = nutpie.sample(
        compiled,
        draws=run.draws,
        tune=max(run.tune, 1),  # nutpie needs a tuning step
        chains=run.chains,
        cores=cores,
        seed=int(first_chain.integers(2**30)),
        target_accept=run.target_accept,
        save_warmup=False,
        progress_bar=bool(run.progressbar),
        blocking=False,
    )
    tree = _read_until_converged(sampler, stop, poll)
    patch_nutpie_idata(tree, model, sampling_time=time.time() - t0)
    return tree


def _read_until_converged(sampler, stop: StopWhenConverged, poll: float) -> xr.DataTree:
    """Read ``sampler`` every ``poll`` seconds, checking each checkpoint once every chain
    has reached it; the tree cut at the first that passes, else the whole run's.  A Ctrl-C
    or an error ends the sampler's threads before it propagates."""
    try:
        return _read(sampler, stop, poll)
    except BaseException:
        sampler.cancel()
        raise


def _read(sampler, stop: StopWhenConverged, poll: float) -> xr.DataTree:
    while True:
        finished = _finished(sampler)  # before the read: a finished run's read is whole
        with warnings.catch_warnings():  # ArviZ on a read of fewer draws than chains
            warnings.filterwarnings("ignore", "Found chain dimension to be longer", UserWarning)
            trace = sampler.inspect()
        done = _draws_done(trace, stop.names[0], stop.chains)
        while (k := stop.due(done)) is not None:
            if stop.passes(k, *_first_draws(trace, stop.names, k)):
                return sampler.abort().isel(draw=slice(0, k), missing_dims="ignore")
        if finished or done >= stop.draws:
            return sampler.wait()
        time.sleep(poll)


def _finished(sampler) -> bool:
    """Whether nutpie's ``sampler`` has finished (nutpie 0.16 raises TimeoutError while it
    runs)."""
    try:
        return bool(sampler.is_finished)
    except TimeoutError:
        return False


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
