"""Type-II MAP in PyMC against the closed-form reference solver.

Noisy sinc, N = 100, RBF basis (length scale 2) plus bias, M = 101, targets
standardised and columns scaled to unit RMS.  For each PyTensor compile mode
and prior preset the script prints the compile time (cold: empty PyTensor
cache; warm: second run on the same cache), the optimisation time, and the
agreement with the reference MacKay fixed point under the same prior: the
objective ``J`` of both, the largest relative difference of ``alpha`` over the
bases with ``alpha < 1e3`` in both fits, of ``beta``, and the number of such
bases.  The objective is multimodal with one basis per training point, so a
lower ``J`` means another local optimum, not an error.

Usage::

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_pymc_map.py [--modes FAST_COMPILE,NUMBA,CVM]

References
----------
Tipping, M. E. (2001). Sparse Bayesian learning and the relevance vector
machine. *JMLR* 1, 211-244.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import _common  # first non-stdlib import: pins BLAS threads before NumPy loads
import numpy as np

MODES = ("FAST_COMPILE", "NUMBA", "CVM")
PRESETS = ("weakly_informative", "near_improper")


def worker(mode: str) -> list[dict]:
    import warnings

    from rvm_pymc import models
    from rvm_pymc.inference import _map as _map
    from rvm_pymc.reference import fit_regression, log_evidence

    warnings.simplefilter("ignore")
    Phi, t = _common.standardised_sinc()
    rows = []
    for preset in PRESETS:
        model = models.regression_marginal(Phi, t, prior=preset)
        spec = models.model_spec(model)
        t0 = time.perf_counter()
        fun, names, sizes, unflatten = _map._flat_objective(model, {"mode": mode})
        fun(np.zeros(sum(sizes)))  # first call finishes lazy compilation
        t1 = time.perf_counter()
        # the steps of rvm_pymc.inference._map.map_regression, timed apart from compilation
        start = _map._regression_start(model, spec, t, model.initial_point())
        x0 = np.concatenate([np.ravel(start[n]) for n in names])
        bounds = _map._bounds(names, sizes, _map._alpha_bounds(Phi, float(np.var(t)) or 1.0))
        lo = [-np.inf if b[0] is None else b[0] for b in bounds]
        hi = [np.inf if b[1] is None else b[1] for b in bounds]
        res, converged, _ = _map._lbfgs(fun, np.clip(x0, lo, hi), bounds, 5000, 1e-8, "MAP")
        t2 = time.perf_counter()
        opt = unflatten(res.x)
        alpha, beta = np.exp(opt["log_alpha"]), float(np.exp(opt["log_beta"]))
        j_pymc = log_evidence(Phi, t, alpha, beta, preset)
        t3 = time.perf_counter()
        ref = fit_regression(Phi, t, method="mackay", prior=preset, tol=1e-10, max_iter=100_000)
        t_ref = time.perf_counter() - t3
        a_ref = ref.alpha_full()
        both = (alpha < 1e3) & (a_ref < 1e3)
        rows.append(
            {
                "mode": mode,
                "preset": preset,
                "compile": t1 - t0,
                "optimise": t2 - t1,
                "n_iter": int(res.nit),
                "converged": bool(converged),
                "J_pymc": float(j_pymc),
                "J_ref": float(ref.log_evidence),
                "t_ref": t_ref,
                "alpha_rel": float(np.max(np.abs(alpha[both] / a_ref[both] - 1), initial=0)),
                "beta_rel": abs(beta / ref.beta - 1),
                "n_small": [int(np.sum(alpha < 1e3)), int(np.sum(a_ref < 1e3))],
            }
        )
    return rows


def run(mode: str, cache: str) -> list[dict]:
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", PYTENSOR_FLAGS=f"base_compiledir={cache}")
    out = subprocess.run(
        [sys.executable, __file__, "--worker", mode],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("[")]
    if out.returncode or not lines:
        raise RuntimeError(f"worker {mode} failed: {out.stderr[-500:]}")
    return json.loads(lines[-1])


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(args.worker)))
        return
    print("noisy sinc N=100, M=101 (RBF l=2 + bias); reference: MacKay with the same prior")
    head = (
        f"{'mode':<13} {'preset':<19} {'cold':>6} {'warm':>6} {'optim':>6} {'iter':>5} "
        f"{'ref s':>6} {'J pymc':>9} {'J ref':>9} {'alpha rel':>9} {'beta rel':>9} {'#a<1e3':>8}"
    )
    print(head)
    print("-" * len(head))
    for mode in args.modes.split(","):
        with tempfile.TemporaryDirectory(prefix="bench_map_") as cache:
            cold = run(mode, cache)
            warm = run(mode, cache)
        for c, w in zip(cold, warm, strict=True):
            print(
                f"{mode:<13} {w['preset']:<19} {c['compile']:6.1f} {w['compile']:6.1f} "
                f"{w['optimise']:6.2f} {w['n_iter']:5d} {w['t_ref']:6.2f} {w['J_pymc']:9.3f} "
                f"{w['J_ref']:9.3f} {w['alpha_rel']:9.1e} {w['beta_rel']:9.1e} "
                f"{w['n_small'][0]:>3}/{w['n_small'][1]:<3}"
            )
    print("times in seconds; #a<1e3 = bases with alpha < 1e3 in the PyMC / reference fit")


if __name__ == "__main__":
    main()
