"""Large N: `RVR().fit` at N = 1e4 to 1e6, `RVC().fit` at 1e4 to 2e5: time and peak memory.

Every fit runs as a user runs it: through the estimator, with the BLAS
libraries' own default threads (``RVM_BENCH_BLAS=default``: ``_common`` pins
nothing; the estimators themselves run their solver loops on one BLAS thread
and the row-blocked QR of a large RVR design on one thread per CPU), in its
own child process (a fresh interpreter), so that its peak resident memory
(``ru_maxrss`` of the child, the interpreter and its imports included) is
that fit's alone.  Each child reports wall-clock and
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
dimensions (x uniform on [-5, 5]^3, same noise); the Ripley two-class mixture;
for ``--accuracy`` also ``sinc(x0)`` on [-10, 10]^3 (two irrelevant features).
Estimators with their defaults (``gamma="scale"``, ``solver="fast"``); above
2000 training points ``KernelBasis`` keeps at most 1000 centres (the rule is
printed in the header; ``rvm_pymc/_core/centres.py``).  Above 2^22 design
entries (N > 4,190 at 1001 columns) ``RVR`` never holds its design: it
fits the QR factor of ``[Phi | t]`` accumulated over row blocks
(``rvm_pymc/estimators/_rows.py``); ``RVC`` holds the N x M design.  The "exact" rows fit the
same data with every training point a centre (``KernelBasis(...,
centres="all")`` passed as ``kernel``, the same width), where the N x N design
fits in memory; they time out after ``--timeout`` seconds.  Run::

    python benchmarks/bench_scale.py            # all rows
    python benchmarks/bench_scale.py --max-n 100000  # without the N = 1e6 / 2e5 rows
    python benchmarks/bench_scale.py --quick    # N <= 3e4, no exact rows
    python benchmarks/bench_scale.py --accuracy # exact vs centres, 3 data sets

``--accuracy`` fits each problem of ``_ACCURACY`` on ``--sets`` data sets at
``--sizes`` both ways (the centres forced where N is below the threshold) and
prints the mean test RMSE of each, their ratio, the mean per-set ratio and
the mean log evidence of the exact fit minus that of the centres.

The machine is reported in the header; on a shared machine the times are
noisy (the memory is not).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

# the fits as a user runs them: the BLAS libraries' default threads (before _common)
os.environ.setdefault("RVM_BENCH_BLAS", "default")

import _common  # first non-stdlib import (it would pin BLAS threads before NumPy loads)
import numpy as np

SEED = 1
NOISE = 0.1


def _radial_sinc(n: int, rng: np.random.Generator, noise: float) -> tuple:
    X = rng.uniform(-5.0, 5.0, size=(n, 3))
    r = np.linalg.norm(X, axis=1)
    return X, np.sinc(r / np.pi) + noise * rng.standard_normal(n), np.sinc(r / np.pi)


def _x0_sinc(n: int, rng: np.random.Generator, noise: float) -> tuple:
    X = rng.uniform(-10.0, 10.0, size=(n, 3))
    f = np.sinc(X[:, 0] / np.pi)
    return X, f + noise * rng.standard_normal(n), f


def _data(problem: str, n: int, seed: int = SEED) -> tuple:
    """(X, t, X_test, f_test, t_test): training data, test inputs, noise-free and noisy targets."""
    rng = np.random.default_rng(seed)
    if problem == "sinc1":
        from rvm_pymc.datasets import make_sinc

        d = make_sinc(n_train=n, n_test=2000, noise_sd=NOISE, random_state=seed)
        f = d.t_test
        return d.X_train, d.t_train, d.X_test, f, f + NOISE * rng.standard_normal(f.size)
    if problem in ("sinc3", "x0sinc3"):
        make = _radial_sinc if problem == "sinc3" else _x0_sinc
        X, t, _ = make(n, rng, NOISE)
        Xt, tt, ft = make(2000, np.random.default_rng(seed + 1000), NOISE)
        return X, t, Xt, ft, tt
    from rvm_pymc.datasets import make_ripley

    d = make_ripley(n_train=n, n_test=5000, random_state=seed)
    return d.X_train, d.t_train, d.X_test, None, d.t_test


def child(spec: dict) -> dict:
    """Fit one case in this process; return its measurements."""
    import resource
    import warnings

    from rvm_pymc import RVC, RVR
    from rvm_pymc.basis import KernelBasis
    from rvm_pymc.kernels import RBF

    X, t, Xt, ft, tt = _data(spec["problem"], spec["n"], spec.get("seed", SEED))
    cls = RVC if spec["problem"] == "ripley" else RVR
    gamma = spec.get("gamma", "scale")
    est = cls(gamma=gamma)
    if spec.get("force"):  # the centres below their threshold, to compare with the exact fit
        from rvm_pymc._core import centres as _centres

        _centres.AUTO_FULL_MAX = 0
    if spec["exact"]:
        if gamma == "scale":  # as the estimator computes it
            Xa = np.asarray(X, dtype=float).reshape(len(X), -1)
            gamma = 1.0 / (Xa.shape[1] * Xa.var())
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
        "log_evidence": float(est.log_evidence_),
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


_NAMES = {
    "sinc1": "sinc 1-D",
    "sinc3": "radial sinc 3-D",
    "x0sinc3": "sinc(x0) 3-D",
    "ripley": "Ripley (RVC)",
}


def _row(spec: dict, res: dict) -> list:
    gamma = spec.get("gamma", "scale")
    head = [
        _NAMES[spec["problem"]],
        f"{spec['n']:,}",
        gamma if isinstance(gamma, str) else f"{gamma:g}",
        "exact" if spec["exact"] else ("auto*" if spec.get("force") else "auto"),
    ]
    load = f"{res.get('load', float('nan')):.1f}"
    if "failed" in res:
        return [*head, res["failed"]] + [""] * 7 + [load]
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
        load,
    ]


_HEADERS = ["problem", "N", "gamma", "basis", "s", "cpu", "GB", "M", "RV", "error", "conv"]
_HEADERS += ["warnings", "load"]


def _scale_cases(quick: bool, max_n: int) -> list[dict]:
    """The rows of the default table: RVR up to N = 1e6, RVC up to 2e5 (at most ``max_n``)."""
    cases = []
    for problem in ("sinc1", "sinc3"):
        if not quick:
            cases.append({"problem": problem, "n": 10_000, "exact": True})
        for n in (10_000, 30_000) + (() if quick else (100_000, 1_000_000)):
            cases.append({"problem": problem, "n": n, "exact": False})
    if not quick:
        cases.append({"problem": "ripley", "n": 10_000, "exact": True})
    sizes = (10_000, 20_000) + (() if quick else (200_000,))
    cases += [{"problem": "ripley", "n": n, "exact": False} for n in sizes]
    return [c for c in cases if c["n"] <= max_n]


#: ``--accuracy``: (problem, gamma) pairs, each on ``--sets`` data sets at ``--sizes``.
_ACCURACY = [("sinc1", "scale"), ("sinc1", 1.0), ("sinc3", "scale"), ("x0sinc3", 0.1)]


def _accuracy_cases(sizes: tuple[int, ...], sets: int, problems: list[str]) -> list[dict]:
    """Exact vs centres on three data sets; the centres forced where N <= AUTO_FULL_MAX."""
    from rvm_pymc._core import centres as _centres

    cases = []
    for n in sizes:
        for problem, gamma in _ACCURACY:
            if problems and problem not in problems:
                continue
            for seed in range(sets):
                for exact in (True, False):
                    spec = {"problem": problem, "n": n, "gamma": gamma, "seed": seed}
                    spec["exact"] = exact
                    if not exact and n <= _centres.AUTO_FULL_MAX:
                        spec["force"] = True
                    cases.append(spec)
    return cases


def _accuracy_summary(cases: list[dict], results: list[dict]) -> str:
    """Mean test RMSE (noise-free targets) over the data sets: exact, centres, their ratio.

    Also the mean of the per-set ratios and the mean log evidence of the exact
    fit minus that of the centres (data units; each fit scored on its own design).
    """
    groups: dict[tuple, dict[int, dict[bool, dict]]] = {}
    for spec, res in zip(cases, results, strict=True):
        key = (spec["problem"], spec["n"], spec["gamma"])
        if "rmse_f" in res:
            groups.setdefault(key, {}).setdefault(spec["seed"], {})[spec["exact"]] = res
    rows = []
    for (problem, n, gamma), by_seed in groups.items():
        pairs = [(r[True], r[False]) for r in by_seed.values() if len(r) == 2]
        if not pairs:
            continue
        ex = np.array([p[0]["rmse_f"] for p in pairs])
        au = np.array([p[1]["rmse_f"] for p in pairs])
        dev = np.mean([p[0]["log_evidence"] - p[1]["log_evidence"] for p in pairs])
        rows.append([_NAMES[problem], f"{n:,}", gamma, len(pairs), f"{ex.mean():.5f}"])
        rows[-1] += [f"{au.mean():.5f}", f"{au.mean() / ex.mean():.3f}"]
        rows[-1] += [f"{np.mean(au / ex):.3f}", f"{dev:.1f}"]
    head = ["problem", "N", "gamma", "sets", "exact", "centres", "ratio of means"]
    head += ["mean ratio", "evidence exact - centres"]
    return _common.format_table(head, rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--quick", action="store_true", help="N <= 3e4, no exact rows")
    parser.add_argument(
        "--accuracy",
        action="store_true",
        help="exact fit vs the centres on three data sets per problem (N = 3000 and 10,000)",
    )
    parser.add_argument(
        "--sizes", default="3000,10000", help="with --accuracy: training set sizes"
    )
    parser.add_argument("--sets", type=int, default=3, help="with --accuracy: data sets")
    parser.add_argument(
        "--problems",
        default="",
        help="with --accuracy: comma-separated subset of " + ",".join(_NAMES),
    )
    parser.add_argument(
        "--max-n", type=int, default=1_000_000, help="skip rows with more training points"
    )
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per fit")
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(json.loads(args.child))))
        return
    from rvm_pymc._core import centres as _centres
    from rvm_pymc.estimators import _rows

    if args.accuracy:
        sizes = tuple(int(n) for n in args.sizes.split(","))
        cases = _accuracy_cases(sizes, args.sets, [p for p in args.problems.split(",") if p])
    else:
        cases = _scale_cases(args.quick, args.max_n)
    print(
        _common.header(
            "Large N: RVR / RVC fit time and peak memory (each fit in its own process)",
            [
                f"solver='fast'; auto = KernelBasis centres='auto': {_centres.describe_rule()}",
                f"RVR above {_rows.ROW_BLOCKED_ENTRIES:,} design entries (N x M): the QR factor "
                f"of [Phi | t] over blocks of {_rows.BLOCK_ROWS} rows, never the whole design",
                "auto* = that rule forced below its threshold; exact = every training point "
                "a centre (N x (N+1) design), the same width",
                f"noise sd {NOISE}; data seed {SEED} (--accuracy: 0, 1, ...); s = wall seconds of "
                "fit, cpu = CPU seconds; GB = peak RSS of the child process (interpreter "
                "included); load = 1-minute load average when the fit started",
                "error: regression RMSE vs the noise-free function / vs noisy test targets "
                "(floor 0.1); classification test error rate (Bayes error ~0.08)",
            ],
        )
    )
    rows, results = [], []
    for spec in cases:
        load = float(_common.load_average()) if _common.load_average() != "n/a" else np.nan
        res = run_case(spec, args.timeout)
        res["load"] = load
        results.append(res)
        rows.append(_row(spec, res))
        print("  ".join(str(c) for c in rows[-1]), file=sys.stderr, flush=True)
    print(_common.format_table(_HEADERS, rows))
    if args.accuracy:
        print()
        print(_accuracy_summary(cases, results))


if __name__ == "__main__":
    main()
