"""NUTS over the RBF width by nutpie, stopped by the package's rule, against the default fit.

The anchor is ``RVR(method="nuts", gamma="integrate")`` at its defaults (PyMC's NUTS, two
chains, 500 tuning steps, ``target_accept`` 0.95, the stopping rule: the first checkpoint
after 500 draws a chain, then every 250, that passes R-hat <= 1.01, bulk and tail ESS >= 400
and no divergence).  The candidate is a *prototype*, not a package path: the same collapsed
model (``regression_marginal_rbf`` on the standardised target, unit-RMS columns, the
estimator's width prior and hyperprior) sampled by nutpie's background sampler, whose trace
is read every ``--poll`` seconds and cut at the first checkpoint that passes the same
standard, over ``log_alpha``, ``log_beta`` and ``log_length_scale`` (the estimator checks
the weights and ``log_alpha`` of the unscaled columns instead).  Both run under one BLAS
thread, as the package samples.  Warm walls: each side is compiled by a first fit that is
not timed.  Needs nutpie (not a dependency of the package).

Usage: ``python benchmarks/bench_nutpie_stop.py [--seeds 1,2] [--poll 5]``.
"""

from __future__ import annotations

import os

os.environ.setdefault("RVM_BENCH_BLAS", "default")  # the package pins its own sampling to 1

import _common  # noqa: F401,I001  (before NumPy)

import argparse
import time
import warnings

import numpy as np
from _common import format_table, header, load_average, worst_diagnostics

SET, MAX_N = "boston", 150
CHECKED = ("log_alpha", "log_beta", "log_length_scale")


def _data():
    import _panel_data as panel

    data = panel.load(SET, max_n=MAX_N)
    X = np.asarray(data.X, dtype=float)
    sd = X.std(0)
    return (X - X.mean(0)) / np.where(sd > 0, sd, 1.0), np.asarray(data.y, dtype=float)


def pymc_fit(X, y, seed: int) -> dict:
    from rvm_pymc import RVR

    est = RVR(method="nuts", gamma="integrate", random_state=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        est.fit(X, y)
        wall = time.perf_counter() - t0
    d = worst_diagnostics(est, ["log_alpha", "log_beta", "log_length_scale", "w"])
    return {
        "draws": int(est.idata_["posterior"].sizes["draw"]),
        "wall": wall,
        "rhat": d["rhat"],
        "ess": (d["ess_bulk"], d["ess_tail"]),
        "divergent": d["divergent"],
        "converged": bool(est.converged_),
    }


def nutpie_model(X, y):
    import nutpie
    from pymc.model.transform.optimization import freeze_dims_and_data

    from rvm_pymc.estimators._width_selection import width_prior
    from rvm_pymc.models import regression_marginal_rbf

    t = (y - y.mean()) / y.std()
    model = regression_marginal_rbf(X, t, length_scale_prior=width_prior(X), unit_rms=True)
    return nutpie.compile_pymc_model(freeze_dims_and_data(model))


def nutpie_fit(compiled, seed: int, poll: float, max_draws: int = 6000) -> dict:
    import nutpie

    from rvm_pymc._core.convergence import MIN_ESS, RHAT_MAX, sampling_diagnostics
    from rvm_pymc._core.threads import single_blas_thread
    from rvm_pymc.inference.defaults import CHECK_EVERY, FIRST_CHECK

    with single_blas_thread():
        t0 = time.perf_counter()
        run = nutpie.sample(
            compiled,
            draws=max_draws,
            tune=500,
            chains=2,
            cores=2,
            seed=seed,
            target_accept=0.95,
            blocking=False,
            progress_bar=False,
        )
        k = FIRST_CHECK
        while True:
            time.sleep(poll)
            trace = run.inspect()
            post = trace.posterior
            done = min(
                int(np.isfinite(post["log_beta"].values[c]).sum())
                for c in range(post.sizes["chain"])
            )
            while k <= done:
                d = sampling_diagnostics({v: post[v].values[:, :k] for v in CHECKED})
                div = int(np.asarray(trace.sample_stats["diverging"].values)[:, :k].sum())
                ok = div == 0 and d["max_rhat"] <= RHAT_MAX
                ok = ok and min(d["min_ess_bulk"], d["min_ess_tail"]) >= MIN_ESS
                if ok or k >= max_draws:
                    run.abort()
                    return {
                        "draws": k,
                        "wall": time.perf_counter() - t0,
                        "rhat": d["max_rhat"],
                        "ess": (d["min_ess_bulk"], d["min_ess_tail"]),
                        "divergent": div,
                        "converged": ok,
                    }
                k += CHECK_EVERY


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", default="1,2")
    p.add_argument("--poll", type=float, default=5.0, help="seconds between reads of the trace")
    args = p.parse_args(argv)
    seeds = [int(s) for s in args.seeds.split(",")]
    X, y = _data()
    print(header("NUTS over the width: nutpie with the stopping rule (prototype) vs the default"))
    print(f"# {SET} N = {len(y)}, d = {X.shape[1]}; warm fits; load at start {load_average()}")
    rows, walls = [], {"pymc": [], "nutpie": []}
    pymc_fit(X, y, 0)  # compiles
    for s in seeds:
        r = pymc_fit(X, y, s)
        walls["pymc"].append(r["wall"])
        rows.append(["RVR(method='nuts', gamma='integrate') (PyMC, default)", s, r])
    compiled = nutpie_model(X, y)
    nutpie_fit(compiled, 0, args.poll)  # the first run warms nutpie's threads and caches
    for s in seeds:
        r = nutpie_fit(compiled, s, args.poll)
        walls["nutpie"].append(r["wall"])
        rows.append(["nutpie + the rule (prototype)", s, r])
    table = [
        [
            name,
            s,
            r["draws"],
            f"{r['wall']:.1f}",
            f"{r['rhat']:.4f}",
            f"{r['ess'][0]:.0f} / {r['ess'][1]:.0f}",
            r["divergent"],
            r["converged"],
        ]
        for name, s, r in rows
    ]
    print(
        format_table(
            [
                "fit",
                "seed",
                "draws a chain",
                "wall s",
                "R-hat",
                "ESS bulk / tail",
                "divergent",
                "converged",
            ],
            table,
        )
    )
    ratio = np.median(walls["nutpie"]) / np.median(walls["pymc"])
    print(f"median warm wall, nutpie / PyMC: {ratio:.2f}; load at end {load_average()}")


if __name__ == "__main__":
    main()
