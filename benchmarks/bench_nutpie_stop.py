"""NUTS over the RBF width stopped by the package's rule: nutpie against PyMC's NUTS.

Both fits are ``RVR(method="nuts", gamma="integrate")`` at the estimators' defaults (two
chains, 500 tuning steps, ``target_accept`` 0.95, ``draws=None``: the first checkpoint
after 500 draws a chain, then every 250, that passes R-hat <= 1.01, bulk and tail ESS
>= 400 and no divergence), with ``sampler_kwargs={"nuts_sampler": ...}`` naming the
sampler: PyMC's (the anchor, and the default without nutpie) and nutpie (the default with
it; its draws are read while it runs, ``rvm_pymc/inference/_nutpie.py``).  Warm walls:
each sampler's model is compiled by a first fit that is not timed.  Needs nutpie.

Usage: ``python benchmarks/bench_nutpie_stop.py [--seeds 1,2]``.
"""

from __future__ import annotations

import os

os.environ.setdefault("RVM_BENCH_BLAS", "default")  # the package pins its own sampling to 1

import _common  # noqa: F401,I001  (before NumPy)

import argparse

import numpy as np
from _common import format_table, header, load_average
from bench_nuts_width import TIMING_SET, _standardise, diagnose, fit_one

MAX_N = 150
SAMPLERS = ("pymc", "nutpie")
COLUMNS = ("fit", "seed", "draws a chain", "wall s", "R-hat", "ESS bulk / tail", "divergent")


def fit(X, y, seed: int, sampler: str) -> dict:
    """``RVR(method="nuts", gamma="integrate")`` at its defaults, sampled by ``sampler``."""
    est, wall = fit_one("regression", X, y, seed, sampler=sampler)
    d = diagnose(est)
    return {
        "draws": int(est.idata_["posterior"].sizes["draw"]),
        "wall": wall,
        "rhat": d["rhat"],
        "ess": (d["ess_bulk"], d["ess_tail"]),
        "divergent": d["divergent"],
        "converged": bool(est.converged_),
    }


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", default="1,2")
    args = p.parse_args(argv)
    seeds = [int(s) for s in args.seeds.split(",")]
    import _panel_data as panel

    data = panel.load(TIMING_SET, max_n=MAX_N)
    X, y = _standardise(data.X), np.asarray(data.y, dtype=float)
    print(header("NUTS over the width, stopped by the rule: nutpie against PyMC's NUTS"))
    about = f"{TIMING_SET} N = {len(y)}, d = {X.shape[1]}; warm fits"
    print(f"# {about}; load at start {load_average()}")
    rows, walls = [], {}
    for sampler in SAMPLERS:
        fit(X, y, 0, sampler)  # compiles
        for seed in seeds:
            r = fit(X, y, seed, sampler)
            walls.setdefault(sampler, []).append(r["wall"])
            name = f"RVR(method='nuts', gamma='integrate'), {sampler}"
            ok = "" if r["converged"] else " (not converged)"
            ess = f"{r['ess'][0]:.0f} / {r['ess'][1]:.0f}"
            cells = [f"{r['wall']:.1f}", f"{r['rhat']:.4f}{ok}", ess, r["divergent"]]
            rows.append([name, seed, r["draws"], *cells])
    print(format_table(list(COLUMNS), rows))
    ratio = np.median(walls["nutpie"]) / np.median(walls["pymc"])
    print(f"median warm wall, nutpie / PyMC: {ratio:.2f}; load at end {load_average()}")


if __name__ == "__main__":
    main()
