"""Large N: ``RVR().fit`` at N = 1e4, 3e4, 1e5 and ``RVC().fit`` at N = 2e4, time and peak memory.

Every fit runs in its own child process (a fresh interpreter), so that its
peak resident memory (``ru_maxrss`` of the child, the interpreter and its
imports included) is that fit's alone.  Each child reports wall-clock and
CPU seconds of ``fit`` (data generation and imports not counted), the peak
memory, the number of candidate centres (columns of the design matrix minus
the bias), relevance vectors, and the test error:

* regression: RMSE against the noise-free function on 2000 test points
  (``rmse_f``), and against noisy test targets (``rmse_t``; the noise sd 0.1
  is its floor);
* classification: test error rate on 5000 test points (the Bayes error of the
  Ripley mixture is about 8%).

Problems: the sinc of Tipping (2001) in one dimension (x uniform on
[-10, 10], Gaussian noise sd 0.1) and a radial sinc ``sin(|x|)/|x|`` in three
dimensions (x uniform on [-5, 5]^3, same noise); the Ripley two-class mixture.
Estimators with their defaults (``gamma="scale"``, ``solver="fast"``); above
5000 training points ``KernelBasis`` keeps at most 500 centres chosen by
greedy pivoted Cholesky.  The "exact" rows fit the same data with every
training point a centre (``KernelBasis(..., centres="all")`` passed as
``kernel``, the same width), where the N x N design fits in memory; they time
out after ``--timeout`` seconds.  Run::

    python benchmarks/bench_scale.py            # all rows
    python benchmarks/bench_scale.py --quick    # N <= 3e4, no exact rows

The machine is reported in the header; on a shared machine the times are
noisy (the memory is not).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

import _common  # first non-stdlib import: pins BLAS threads before NumPy loads
import numpy as np

SEED = 1
NOISE = 0.1


def _radial_sinc(n: int, rng: np.random.Generator, noise: float) -> tuple:
    X = rng.uniform(-5.0, 5.0, size=(n, 3))
    r = np.linalg.norm(X, axis=1)
    return X, np.sinc(r / np.pi) + noise * rng.standard_normal(n), np.sinc(r / np.pi)


def _data(problem: str, n: int) -> tuple:
    """(X, t, X_test, f_test, t_test): training data, test inputs, noise-free and noisy targets."""
    rng = np.random.default_rng(SEED)
    if problem == "sinc1":
        from rvm_pymc.datasets import make_sinc

        d = make_sinc(n_train=n, n_test=2000, noise_sd=NOISE, random_state=SEED)
        f = d.t_test
        return d.X_train, d.t_train, d.X_test, f, f + NOISE * rng.standard_normal(f.size)
    if problem == "sinc3":
        X, t, _ = _radial_sinc(n, rng, NOISE)
        Xt, tt, ft = _radial_sinc(2000, np.random.default_rng(SEED + 1000), NOISE)
        return X, t, Xt, ft, tt
    from rvm_pymc.datasets import make_ripley

    d = make_ripley(n_train=n, n_test=5000, random_state=SEED)
    return d.X_train, d.t_train, d.X_test, None, d.t_test


def child(spec: dict) -> dict:
    """Fit one case in this process; return its measurements."""
    import resource
    import warnings

    from rvm_pymc import RVC, RVR
    from rvm_pymc.basis import KernelBasis
    from rvm_pymc.kernels import RBF

    X, t, Xt, ft, tt = _data(spec["problem"], spec["n"])
    cls = RVC if spec["problem"] == "ripley" else RVR
    est = cls()
    if spec["exact"]:
        Xa = np.asarray(X, dtype=float).reshape(len(X), -1)
        gamma = 1.0 / (Xa.shape[1] * Xa.var())  # gamma="scale", as the auto rows use
        est = cls(kernel=KernelBasis(RBF(gamma=gamma), centres="all"))
    w0, c0 = time.perf_counter(), time.process_time()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est.fit(X, t)
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    out = {
        "wall": wall,
        "cpu": cpu,
        "rss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6,
        "centres": int(est.basis_scale_.size - 1),  # every basis here has a bias column
        "rv": int(est.n_relevance_),
        "converged": bool(est.converged_),
        "warnings": sorted({type(w.message).__name__ for w in caught}),
    }
    if cls is RVR:
        pred = est.predict(Xt)
        out["rmse_f"] = _common.rmse(pred, ft)
        out["rmse_t"] = _common.rmse(pred, tt)
    else:
        out["error"] = float(np.mean(est.predict(Xt) != tt))
    return out


def run_case(spec: dict, timeout: float) -> dict:
    """Run one case in a child interpreter (its own peak memory); None fields on failure."""
    cmd = [sys.executable, __file__, "--child", json.dumps(spec)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return {"failed": f"timeout {timeout:.0f} s"}
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode or not lines:
        return {"failed": (proc.stderr.strip().splitlines() or ["?"])[-1][:60]}
    return json.loads(lines[-1])


def _row(spec: dict, res: dict) -> list:
    name = {"sinc1": "sinc 1-D", "sinc3": "radial sinc 3-D", "ripley": "Ripley (RVC)"}
    head = [name[spec["problem"]], f"{spec['n']:,}", "exact" if spec["exact"] else "auto"]
    if "failed" in res:
        return [*head, res["failed"]] + [""] * 7
    if "error" in res:
        err = f"{res['error']:.4f}"
    else:
        err = f"{res['rmse_f']:.5f} / {res['rmse_t']:.5f}"
    return [
        *head,
        f"{res['wall']:.2f}",
        f"{res['cpu']:.2f}",
        f"{res['rss_gb']:.2f}",
        res["centres"],
        res["rv"],
        err,
        "yes" if res["converged"] else "NO",
        ",".join(res["warnings"]) or "-",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--quick", action="store_true", help="N <= 3e4, no exact rows")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per fit")
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(json.loads(args.child))))
        return
    cases = []
    for problem in ("sinc1", "sinc3"):
        if not args.quick:
            cases.append({"problem": problem, "n": 10_000, "exact": True})
        for n in (10_000, 30_000) + (() if args.quick else (100_000,)):
            cases.append({"problem": problem, "n": n, "exact": False})
    if not args.quick:
        cases.append({"problem": "ripley", "n": 10_000, "exact": True})
    cases += [{"problem": "ripley", "n": n, "exact": False} for n in (10_000, 20_000)]
    print(
        _common.header(
            "Large N: RVR / RVC fit time and peak memory (each fit in its own process)",
            [
                "defaults: gamma='scale', solver='fast'; auto = KernelBasis centres='auto' "
                "(N > 5000: at most 500 centres, greedy pivoted Cholesky, tol 1e-6)",
                "exact = every training point a centre (N x (N+1) design), the same width",
                f"noise sd {NOISE}; data seed {SEED}; s = wall seconds of fit, cpu = CPU "
                "seconds; GB = peak RSS of the child process (interpreter included)",
                "error: regression RMSE vs the noise-free function / vs noisy test targets "
                "(floor 0.1); classification test error rate (Bayes error ~0.08)",
            ],
        )
    )
    rows = []
    for spec in cases:
        res = run_case(spec, args.timeout)
        rows.append(_row(spec, res))
        print("  ".join(str(c) for c in rows[-1]), file=sys.stderr, flush=True)
    print(
        _common.format_table(
            ["problem", "N", "basis", "s", "cpu", "GB", "M", "RV", "error", "conv", "warnings"],
            rows,
        )
    )


if __name__ == "__main__":
    main()
