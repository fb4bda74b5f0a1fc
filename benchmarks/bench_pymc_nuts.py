"""NUTS on the RVM: joint model (PyMC, nutpie, numpyro) against the collapsed sampler.

Noisy sinc, N = 100 training points, RBF basis (one column per training point)
plus bias: M = 101.  Targets standardised and columns scaled to unit RMS, as
the ``"weakly_informative"`` preset expects.  For every sampler and prior
preset the script prints wall time with and without compilation, the number
of divergences, the worst R-hat, the smallest bulk ESS over ``log_beta`` and
the ``log_alpha`` of the relevance vectors (the bases the reference solver
keeps), and that ESS per second of sampling and of wall time.

Each configuration runs in a fresh subprocess, all with the same draws, tune
and chains.  ``compile (cold)`` uses an empty PyTensor cache directory,
``compile (warm)`` a second run on the same cache (numpyro compiles with JAX,
whose cache here is per process, so its cold and warm are alike); the cold
column is filled for the first preset of each sampler only.  Compile time is
wall time minus the sampler's recorded ``sampling_time``.

Which time the ESS is divided by: ``ESS/s`` divides by ``sampling_time`` as
PyMC records it, tuning included, which differs by backend: PyMC's own NUTS
times its chain loop, and with ``cores > 1`` (the default, one process per
chain up to the number of CPUs) that includes starting the worker processes;
nutpie times ``nutpie.sample`` (compiled beforehand, so compilation is
excluded); numpyro times its sampler call, which includes JAX's
just-in-time compilation (so numpyro's compile column understates its
compilation and its ``ESS/s`` is conservative).  ``ESS/s wall`` divides by
the wall time of the whole fit on a warm cache: model build, compilation,
sampling and, for the collapsed sampler, the exact weight draws.

Usage::

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_pymc_nuts.py [--draws 1000 --tune 1000]
        [--chains 2]
        [--samplers pymc,nutpie,numpyro,pymc:nc,numpyro:nc,collapsed,collapsed:nutpie,...]
        [--presets weakly_informative,near_improper]
    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_pymc_nuts.py --gradient-timing

``--gradient-timing`` prints the cost of one log density + gradient
evaluation of the collapsed (marginal) model with its written-out gradient
(what ``regression_marginal`` builds), of the same density differentiated by
PyTensor through the Cholesky factorisation (``models.marginal_logp``, the
graph the marginal model used before), and of the joint model, all compiled
by PyTensor's default (Numba) backend as PyMC's NUTS calls them.

nutpie and numpyro are skipped (with a note) when not importable.

References
----------
Tipping, M. E. (2001). Sparse Bayesian learning and the relevance vector
machine. *JMLR* 1, 211-244.  Hoffman, M. D. and Gelman, A. (2014). The No-U-Turn
sampler. *JMLR* 15, 1593-1623.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time

import _common  # first non-stdlib import: pins BLAS threads before NumPy loads
import numpy as np

SAMPLERS = (
    "pymc",
    "nutpie",
    "numpyro",
    "pymc:nc",
    "numpyro:nc",
    "collapsed",
    "collapsed:nutpie",
    "collapsed:numpyro",
)
"""Joint model with a NUTS backend (``:nc`` = non-centred weights), or the collapsed sampler."""
PRESETS = ("weakly_informative", "near_improper")


def problem(seed: int = 0):
    """Design matrix, standardised targets and the reference relevance vectors."""
    from rvm_pymc.reference import fit_regression

    Phi, t = _common.standardised_sinc(seed)
    ref = fit_regression(Phi, t, method="fast", prior="evidence")
    return Phi, t, ref.active


def worker(sampler: str, preset: str, draws: int, tune: int, chains: int, seed: int) -> dict:
    """Run one configuration in this process and return its measurements."""
    import warnings

    from arviz_stats import ess

    from rvm_pymc import inference, models

    Phi, t, active = problem()
    warnings.simplefilter("ignore")
    start = time.perf_counter()
    kw = {"draws": draws, "tune": tune, "chains": chains, "random_seed": seed}
    if sampler.startswith("collapsed"):
        backend = sampler.partition(":")[2] or "pymc"
        model = models.regression_marginal(Phi, t, prior=preset)
        idata = inference.sample_collapsed(model, nuts_sampler=backend, **kw)
    else:
        backend, _, nc = sampler.partition(":")
        param = "non_centred" if nc == "nc" else "centred"
        model = models.regression_joint(Phi, t, prior=preset, parametrization=param)
        idata = inference.sample_nuts(model, nuts_sampler=backend, **kw)
    wall = time.perf_counter() - start
    post = idata["posterior"]
    sampling = float(idata.attrs.get("sampling_time", np.nan))
    sub = post.to_dataset()[["log_beta", "log_alpha"]].isel(basis=active)
    e = ess(sub, method="bulk")
    min_ess = float(min(float(e["log_beta"]), float(e["log_alpha"].min())))
    ess_w = float(ess(post.to_dataset()[["w"]].isel(basis=active), method="bulk")["w"].min())
    steps = idata["sample_stats"]["n_steps"] if "n_steps" in idata["sample_stats"] else None
    return {
        "sampler": sampler,
        "preset": preset,
        "wall": wall,
        "sampling": sampling,
        "compile": wall - sampling,
        "divergences": int(idata.attrs["n_divergent"]),
        "max_rhat": float(idata.attrs["max_rhat"]),
        "min_ess": min_ess,
        "ess_w": ess_w,
        "steps": float(steps.mean()) if steps is not None else float("nan"),
        "n_relevant": len(active),
    }


def gradient_timing(n_eval: int = 3000) -> None:
    """Microseconds per compiled log density + gradient call (PyMC's NUTS path)."""
    import warnings

    import pymc as pm

    from rvm_pymc import models
    from rvm_pymc.models._likelihoods import _marginal_random

    warnings.simplefilter("ignore")
    Phi, t, _ = problem()

    def autodiff_marginal():
        # regression_marginal's model with the plain graph of models.marginal_logp
        prior = models.model_spec(models.regression_marginal(Phi, t)).prior
        coords = {"basis": np.arange(Phi.shape[1]), "obs": np.arange(len(t))}
        with pm.Model(coords=coords) as model:
            Phi_d = pm.Data("Phi", Phi, dims=("obs", "basis"))
            t_d = pm.Data("t", t, dims="obs")
            la = models._ard_precisions(prior)
            lb = models._noise_precision(prior)
            PtP_d = pm.Data("PhiTPhi", Phi.T @ Phi)
            pm.CustomDist(
                "t_obs",
                la,
                lb,
                Phi_d,
                PtP_d,
                logp=models.marginal_logp,
                random=_marginal_random,
                signature="(m),(),(n,m),(m,m)->(n)",
                observed=t_d,
                dims="obs",
            )
        return model

    builds = {
        "collapsed, written-out gradient": lambda: models.regression_marginal(Phi, t),
        "collapsed, autodiff through Cholesky": autodiff_marginal,
        "joint (centred)": lambda: models.regression_joint(Phi, t),
    }
    print(f"noisy sinc N=100, M=101; logp + gradient, Numba backend, {n_eval} calls")
    for name, build in builds.items():
        model = build()
        t0 = time.perf_counter()
        f = model.logp_dlogp_function(ravel_inputs=True)
        f.set_extra_values({})
        x = np.concatenate([np.ravel(v) for v in model.initial_point().values()])
        fn = f._pytensor_function
        fn(x)
        compile_s = time.perf_counter() - t0
        best = np.inf
        for _ in range(3):
            t0 = time.perf_counter()
            for _ in range(n_eval):
                fn(x)
            best = min(best, (time.perf_counter() - t0) / n_eval)
        print(f"{name:<38} {best * 1e6:8.1f} us/eval (best of 3)   compile {compile_s:5.1f} s")


def run(sampler, preset, args, cache_dir) -> dict:
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    env["PYTENSOR_FLAGS"] = f"base_compiledir={cache_dir}"
    cmd = [
        sys.executable,
        __file__,
        "--worker",
        f"{sampler},{preset}",
        "--draws",
        str(args.draws),
        "--tune",
        str(args.tune),
        "--chains",
        str(args.chains),
    ]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("{")]
    if out.returncode or not lines:
        return {"sampler": sampler, "preset": preset, "error": out.stderr.strip()[-300:]}
    return json.loads(lines[-1])


def available(sampler: str) -> bool:
    head, _, tail = sampler.partition(":")
    backend = tail if head == "collapsed" else head
    return backend in ("", "pymc") or importlib.util.find_spec(backend) is not None


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--tune", type=int, default=1000)
    parser.add_argument("--chains", type=int, default=2)
    parser.add_argument("--samplers", default=",".join(SAMPLERS))
    parser.add_argument("--presets", default=",".join(PRESETS))
    parser.add_argument("--gradient-timing", action="store_true")
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.gradient_timing:
        gradient_timing()
        return
    if args.worker:
        sampler, preset = args.worker.split(",")
        print(json.dumps(worker(sampler, preset, args.draws, args.tune, args.chains, 1)))
        return
    rows = []
    for sampler in args.samplers.split(","):
        if not available(sampler):
            print(f"# {sampler}: not installed, skipped")
            continue
        with tempfile.TemporaryDirectory(prefix="bench_nuts_") as cache:
            for i, preset in enumerate(args.presets.split(",")):
                first = run(sampler, preset, args, cache)
                if i == 0:
                    first["compile_cold"] = first.get("compile", np.nan)
                    warm = run(sampler, preset, args, cache)
                    first = {**warm, "compile_cold": first.get("compile", np.nan)}
                rows.append(first)
                print(f"# done {sampler} {preset}", file=sys.stderr, flush=True)
    print(
        f"noisy sinc N=100, M=101 (RBF l=2 + bias), draws={args.draws}, tune={args.tune}, "
        f"chains={args.chains}; ESS = min bulk ESS over log_beta and the log_alpha of the "
        f"reference relevance vectors"
    )
    head = (
        f"{'sampler':<17} {'preset':<19} {'cold':>7} {'warm':>7} {'sample':>8} {'wall':>8} "
        f"{'div':>5} {'R-hat':>6} {'steps':>6} {'ESS':>7} {'ESS/s':>7} {'ESS/s wall':>10} "
        f"{'ESS w':>6}"
    )
    print(head)
    print("-" * len(head))
    for r in rows:
        if "error" in r:
            print(f"{r['sampler']:<17} {r['preset']:<19} FAILED: {r['error']}")
            continue
        cold = r.get("compile_cold", np.nan)
        print(
            f"{r['sampler']:<17} {r['preset']:<19} {cold:7.1f} {r['compile']:7.1f} "
            f"{r['sampling']:8.1f} {r['wall']:8.1f} {r['divergences']:5d} {r['max_rhat']:6.3f} "
            f"{r['steps']:6.0f} {r['min_ess']:7.0f} {r['min_ess'] / r['sampling']:7.2f} "
            f"{r['min_ess'] / r['wall']:10.2f} {r['ess_w']:6.0f}"
        )
    print(
        "times in seconds; cold/warm = compile time on an empty/filled PyTensor cache; "
        "ESS w = min bulk ESS of the weights of the relevance vectors"
    )


if __name__ == "__main__":
    main()
