"""Time to a usable posterior with PyMC: parametrisation and backend defaults.

Two parts, each printing a table (timings on a shared 2-core machine are
noisy: every cell is the median over ``--repeats`` runs, run in alternation).

``--part params``
    The default weight parametrisation per model.  ``RVC(method="nuts")``
    (binary: the first 100 standardised breast-cancer rows; softmax: every
    third standardised wine row, 60) and ``RVR(method="nuts",
    sampler_kwargs={"model": "joint"})`` (sinc, N = 50) with centred and
    non-centred weights, default settings otherwise (2 chains, 500 tune + 500
    draws, ``init="auto"``), on the NUTS backend ``--sampler`` (PyMC's in
    FAST_COMPILE mode, or numpyro: the geometry, not the backend, decides
    divergences and R-hat): divergences, the worst R-hat, the smallest bulk
    ESS, and that ESS per second of the whole fit.
``--part backends``
    ``RVR(method="nuts")`` (the collapsed sampler) on sinc (N = 100) and
    standardised diabetes (N = 300) with each backend available: PyMC's NUTS
    on PyTensor's default (Numba) backend, PyMC's NUTS on the C backend (when a
    C compiler is found), nutpie and numpyro (when installed).  Each run is a
    fresh subprocess with ``PYTENSOR_FLAGS=base_compiledir=<dir>`` and
    ``NUMBA_CACHE_DIR=<dir>`` on a directory the script makes: ``cold`` is the
    first run on an empty directory, ``warm`` a second run on the same one.
    Columns: total wall time of ``fit``; the time to the first draw (wall time
    until PyMC's sampler reports its first iteration; compilation and
    initialisation before it; nutpie and numpyro do not report one); the
    smallest bulk ESS per second of the whole fit; divergences; the worst R-hat;
    ``usable`` (no divergence and R-hat <= 1.01, so ``converged_`` is True)
    against the goal for that cache (time to a converged posterior: sinc
    N = 100 20 s cold and 5 s warm; diabetes N = 300 60 s warm; breast cancer
    N = 300 90 s warm).  ``--draws`` / ``--tune`` set the estimator's lengths
    (default its own, 500 / 500) to find defaults that reach R-hat <= 1.01.
``--part cores``
    ``RVR(method="nuts", random_state=0)`` with PyMC's NUTS and
    ``sampler_kwargs={"cores": c}`` for each ``c`` of ``--cores`` (default
    ``1,2``; ``default``: no ``cores``, the package's choice), each in a fresh
    subprocess on an empty compile cache: ``cold`` is its first fit, ``warm``
    a second fit in the same process; the configurations alternate.  Columns:
    both wall times (median over ``--repeats``), the worst R-hat, the smallest
    bulk / tail ESS, that bulk ESS per second of the warm fit, divergences,
    whether every fit converged (no divergence, R-hat <= 1.01, ESS >= 400),
    the goals, whether the warm fit repeated the cold fit's draws, and the
    load average at the start of each fit.  Problems: ``sinc100``,
    ``diabetes300``, ``breast300`` (``RVC``), ``wine60``.
``--part gradient``
    The cost of one evaluation of the collapsed model's log density, and of
    its value and gradient, at M = 101 and 301 bases (N = M - 1 rows; a 3-D
    RBF design of nearly full numerical rank, and a smooth 1-D one, sinc's
    inputs at gamma 0.5, of rank about 40) in each PyTensor mode (Numba, C,
    FAST_COMPILE): the price of one NUTS leapfrog step, dominated by the
    M x M Cholesky factorisation and the triangular inverse behind
    ``diag(Sigma)`` (the dense form), or by the r x r factorisation and
    O(M r^2) products of the low-rank form.

Usage::

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_pymc_speed.py --part params [--sampler numpyro]
    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_pymc_speed.py --part backends
        [--backends pymc,nutpie,numpyro] [--problems sinc100,diabetes300] [--repeats 1]
        [--draws 1000 --tune 1000]
    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_pymc_speed.py --part cores
        [--problems sinc100] [--cores 1,2] [--repeats 2]
    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_pymc_speed.py --part gradient
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import warnings

import _common  # first non-stdlib import: pins BLAS threads before NumPy loads
import numpy as np


def _problem(name: str):
    """``(X, y, estimator class, extra sampler_kwargs)`` of a benchmark problem."""
    from sklearn import datasets
    from sklearn.preprocessing import StandardScaler

    from rvm_pymc import RVC, RVR
    from rvm_pymc.datasets import make_sinc

    if name == "sinc100":
        d = make_sinc(n_train=100, noise_sd=0.1, random_state=0)
        return d.X_train, d.t_train, RVR, {}, {"gamma": 0.5}
    if name == "sinc50-joint":
        d = make_sinc(n_train=50, noise_sd=0.1, random_state=0)
        return d.X_train, d.t_train, RVR, {"model": "joint"}, {"gamma": 0.5}
    if name == "diabetes300":
        X, y = datasets.load_diabetes(return_X_y=True)
        return StandardScaler().fit_transform(X[:300]), y[:300], RVR, {}, {}
    if name.startswith("breast"):
        n = int(name[len("breast") :])
        X, y = datasets.load_breast_cancer(return_X_y=True)
        return StandardScaler().fit_transform(X)[:n], y[:n], RVC, {}, {}
    if name == "wine60":
        X, y = datasets.load_wine(return_X_y=True)
        X = StandardScaler().fit_transform(X)
        idx = np.arange(0, X.shape[0], 3)
        return X[idx], y[idx], RVC, {}, {}
    raise ValueError(f"unknown problem {name!r}")


GOAL_SECONDS = {
    ("sinc100", "cold"): 20.0,
    ("sinc100", "warm"): 5.0,
    ("diabetes300", "warm"): 60.0,
    ("breast300", "warm"): 90.0,
}
"""The goals: seconds to a converged posterior (R-hat <= 1.01, no divergence), by
problem and compile cache (``cold``: an empty one; ``warm``: a second fit)."""


def _fit(problem: str, sampler_kwargs: dict, seed: int = 0, lengths: dict | None = None) -> dict:
    """One ``method="nuts"`` fit (default settings, or the ``draws`` / ``tune`` of ``lengths``)."""
    import pymc as pm

    X, y, cls, extra, est_kw = _problem(problem)
    est_kw = {**est_kw, **(lengths or {})}
    first = {}
    original = pm.sample

    def sample(*args, **kwargs):  # record when the sampler reports its first iteration
        inner = kwargs.get("callback")  # the package's own (Ctrl-C, the stopping rule)

        def callback(trace, draw):
            first.setdefault("t", time.perf_counter())
            if inner is not None:
                inner(trace=trace, draw=draw)

        if kwargs.get("nuts_sampler", "pymc") == "pymc":
            kwargs["callback"] = callback
        return original(*args, **kwargs)

    pm.sample = sample
    try:
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est = cls(
                method="nuts",
                random_state=seed,
                sampler_kwargs={"progressbar": False, **extra, **sampler_kwargs},
                **est_kw,
            ).fit(X, y)
        total = time.perf_counter() - t0
    finally:
        pm.sample = original
    attrs = est.idata_.attrs
    return {
        "total": total,
        "first_draw": first.get("t", np.nan) - t0,
        "n_divergent": int(attrs.get("n_divergent", -1)),
        "max_rhat": float(attrs.get("max_rhat", np.nan)),
        "min_ess_bulk": float(attrs.get("min_ess_bulk", np.nan)),
        "min_ess_tail": float(attrs.get("min_ess_tail", np.nan)),
        "sampler": str(attrs.get("sampler", "?")),
        "draws_sum": float(np.sum(est.idata_["posterior"]["w"].values)),
        "draws": int(est.idata_["posterior"].sizes["draw"]),
    }


# ------------------------------------------------------------ parametrisation


def part_params(repeats: int, sampler: str) -> None:
    configs = [
        (p, par)
        for p in ("breast100", "wine60", "sinc50-joint")
        for par in ("centred", "non_centred")
    ]
    rows = []
    results: dict = {c: [] for c in configs}
    for _ in range(repeats):
        for problem, par in configs:  # in alternation
            kw = {"parametrization": par, "nuts_sampler": sampler}
            if sampler == "pymc":
                kw["compile_kwargs"] = {"mode": "FAST_COMPILE"}
            results[(problem, par)].append(_fit(problem, kw))
            print(f"  {problem} {par}: {results[(problem, par)][-1]}", flush=True)
    for (problem, par), runs in results.items():
        med = {k: np.median([r[k] for r in runs]) for k in ("total", "min_ess_bulk")}
        rows.append(
            [
                problem,
                par,
                f"{med['total']:.1f}",
                max(r["n_divergent"] for r in runs),
                f"{max(r['max_rhat'] for r in runs):.3f}",
                f"{med['min_ess_bulk']:.0f}",
                f"{med['min_ess_bulk'] / med['total']:.2f}",
            ]
        )
    print(
        _common.format_table(
            ["problem", "weights", "fit s", "divergent", "max R-hat", "min ESS", "ESS/s"], rows
        )
    )


# ------------------------------------------------------------------- backends


def _backends() -> list[tuple[str, dict, dict]]:
    """``(label, sampler_kwargs, extra environment)`` of every backend available here."""
    out = [("pymc (numba, default)", {"nuts_sampler": "pymc"}, {})]
    if shutil.which(os.environ.get("CXX", "g++")):
        c_mode = {"nuts_sampler": "pymc", "compile_kwargs": {"mode": "CVM"}}
        out.append(("pymc (C)", c_mode, {}))
    for pkg in ("nutpie", "numpyro"):
        if importlib.util.find_spec(pkg):
            out.append((pkg, {"nuts_sampler": pkg}, {}))
        else:
            print(f"note: {pkg} is not installed; skipped (python -m pip install {pkg})")
    return out


def _run_child(
    problem: str, sampler_kwargs: dict, cache: str, lengths: dict, mode: str = "once"
) -> dict:
    env = dict(os.environ)
    env["PYTENSOR_FLAGS"] = f"base_compiledir={cache}"
    env["NUMBA_CACHE_DIR"] = os.path.join(cache, "numba")
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    payload = json.dumps([problem, sampler_kwargs, lengths, mode])
    cmd = [sys.executable, __file__, "--child", payload]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("RESULT ")]
    if not lines:
        return {"error": (out.stderr.strip().splitlines() or ["?"])[-1]}
    return json.loads(lines[-1][len("RESULT ") :])


def part_backends(
    repeats: int, problems: list[str], only: str | None = None, lengths: dict | None = None
) -> None:
    rows = []
    backends = [b for b in _backends() if only is None or b[0].split()[0] in only.split(",")]
    for problem in problems:
        for label, kw, _ in backends:
            runs = {"cold": [], "warm": []}
            for _ in range(repeats):
                cache = tempfile.mkdtemp(prefix="rvm_bench_cache_")
                try:
                    runs["cold"].append(_run_child(problem, kw, cache, lengths or {}))
                    runs["warm"].append(_run_child(problem, kw, cache, lengths or {}))
                finally:
                    shutil.rmtree(cache, ignore_errors=True)
                print(f"  {problem} {label}: {runs}", flush=True)
            for which, rs in runs.items():
                ok = [r for r in rs if "error" not in r]
                if not ok:
                    rows.append([problem, label, which, rs[0]["error"][:60], *[""] * 8])
                    continue

                def med(key, ok=ok):
                    return float(np.median([r[key] for r in ok]))

                rows.append(
                    [
                        problem,
                        label,
                        which,
                        f"{med('total'):.1f}",
                        f"{med('first_draw'):.1f}",
                        f"{med('min_ess_bulk') / med('total'):.1f}",
                        f"{med('min_ess_bulk'):.0f} / {med('min_ess_tail'):.0f}",
                        max(r["n_divergent"] for r in ok),
                        f"{max(r['max_rhat'] for r in ok):.3f}",
                        "yes" if all(_usable(r) for r in ok) else "no",
                        f"{GOAL_SECONDS.get((problem, which), float('nan')):.0f}",
                    ]
                )
    heads = ["problem", "backend", "cache", "total s", "first draw s", "ESS/s"]
    heads.append("min ESS bulk / tail")
    print(_common.format_table([*heads, "div", "R-hat", "usable", "goal s"], rows))
    print(
        f"lengths: {lengths or 'the estimator defaults'}; usable = no divergence, "
        "R-hat <= 1.01 and ESS bulk and tail >= 400"
    )


def _usable(r: dict) -> bool:
    """The goal's test of convergence: no divergence, R-hat <= 1.01, ESS bulk and tail >= 400."""
    ess = min(r["min_ess_bulk"], r.get("min_ess_tail", np.inf))
    return r["n_divergent"] == 0 and r["max_rhat"] <= 1.01 and ess >= 400


# ---------------------------------------------------------------------- cores


def _fit_twice(problem: str, sampler_kwargs: dict) -> dict:
    """Two PyMC NUTS fits in this process: ``cold`` (first) and ``warm`` (second)."""
    kw = {"nuts_sampler": "pymc", **sampler_kwargs}
    out = {}
    for which in ("cold", "warm"):
        load = _common.load_average()
        out[which] = {**_fit(problem, kw), "load": load}
    return out


def part_cores(repeats: int, problems: list[str], cores: list[str]) -> None:
    """PyMC's NUTS with chains in sequence (``cores=1``) or in parallel processes.

    Each configuration runs in a fresh subprocess on an empty compile cache
    (``PYTENSOR_FLAGS=base_compiledir=<new dir>``): ``cold`` is its first fit,
    ``warm`` a second fit in the same process.  The configurations alternate,
    so the load of the shared machine falls on each alike.
    """
    configs = [(p, c) for p in problems for c in cores]
    runs: dict = {c: [] for c in configs}
    for _ in range(repeats):
        for problem, c in configs:  # in alternation
            kw = {} if c == "default" else {"cores": int(c)}
            cache = tempfile.mkdtemp(prefix="rvm_bench_cache_")
            try:
                res = _run_child(problem, kw, cache, {}, mode="twice")
            finally:
                shutil.rmtree(cache, ignore_errors=True)
            runs[(problem, c)].append(res)
            print(f"  {problem} cores={c}: {res}", flush=True)
    rows = []
    for (problem, c), rs in runs.items():
        ok = [r for r in rs if "error" not in r]
        if not ok:
            rows.append([problem, c, rs[0]["error"][:60], *[""] * 10])
            continue
        both = [r[w] for r in ok for w in ("cold", "warm")]
        rows.append(
            [
                problem,
                c,
                f"{np.median([r['cold']['total'] for r in ok]):.1f}",
                f"{np.median([r['warm']['total'] for r in ok]):.1f}",
                f"{max(r['max_rhat'] for r in both):.3f}",
                f"{min(r['min_ess_bulk'] for r in both):.0f}"
                f" / {min(r['min_ess_tail'] for r in both):.0f}",
                f"{np.median([r['warm']['min_ess_bulk'] / r['warm']['total'] for r in ok]):.1f}",
                max(r["n_divergent"] for r in both),
                "/".join(sorted({str(r.get("draws", "?")) for r in both})),
                "yes" if all(_usable(r) for r in both) else "no",
                f"{GOAL_SECONDS.get((problem, 'cold'), float('nan')):.0f}"
                f" / {GOAL_SECONDS.get((problem, 'warm'), float('nan')):.0f}",
                "yes"
                if all(r["cold"]["draws_sum"] == r["warm"]["draws_sum"] for r in ok)
                else "no",
                " ".join(f"{r['cold']['load']}/{r['warm']['load']}" for r in ok),
            ]
        )
    heads = ["problem", "cores", "cold s", "warm s", "max R-hat", "min ESS bulk / tail"]
    heads += ["ESS/s (warm)", "div", "draws a chain", "converged", "goal s (cold / warm)"]
    print(_common.format_table([*heads, "same draws", "load (cold/warm)"], rows))
    print(
        "median over repeats; ESS/s: the smallest bulk ESS per second of the warm fit; "
        "draws a chain: kept after tuning (the estimators' draws=None stops NUTS at the "
        "first checkpoint that passes the convergence check); "
        "converged: no divergence, R-hat <= 1.01 and ESS bulk and tail >= 400 in every fit; "
        "'same draws': the warm "
        "fit repeats the cold fit's draws"
    )


# ------------------------------------------------------------------- gradient


def _gradient_designs(m: int):
    """``(label, Phi, t)``: the dense 3-D RBF design and a smooth 1-D one (rank ~40) of M bases."""
    rng = np.random.default_rng(0)
    n = m - 1
    x = rng.standard_normal((n, 3))
    d2 = ((x[:, None] - x[None]) ** 2).sum(-1)
    Phi = np.column_stack([np.ones(n), np.exp(-d2 / 6.0)])
    t = np.sin(x[:, 0]) + 0.1 * rng.standard_normal(n)
    yield "3-D RBF", Phi, t
    x1 = np.sort(rng.uniform(-10.0, 10.0, n))  # sinc's inputs, gamma 0.5
    Phi = np.column_stack([np.ones(n), np.exp(-0.5 * (x1[:, None] - x1[None]) ** 2)])
    yield "1-D RBF", Phi, np.sinc(x1 / np.pi) + 0.1 * rng.standard_normal(n)


def part_gradient(repeats: int) -> None:
    """Cost of one log density (and gradient) evaluation of the collapsed model.

    For each design both forms of :func:`rvm_pymc.models.regression_marginal`:
    ``dense`` (M x M Cholesky) and ``low-rank`` (through the factor of
    ``Phi^T Phi``, r x r) when the factor's rank is below M.
    """
    import pytensor

    from rvm_pymc import models

    rows = []
    for m in (101, 301):
        for label, Phi, t in _gradient_designs(m):
            Phi = Phi / np.sqrt(np.mean(Phi**2, axis=0))
            rank = models.gram_factor(Phi).shape[1]
            forms = [("dense", False)] + ([("low-rank", True)] if rank < m else [])
            for form, low_rank in forms:
                model = models.regression_marginal(
                    Phi, (t - t.mean()) / t.std(), low_rank=low_rank
                )
                logp, vs = model.logp(), model.value_vars
                rng = np.random.default_rng(1)
                point = [rng.normal(0.0, 1.0, m), np.asarray(1.0)]
                for mode, mode_label in (
                    ("NUMBA", "numba"),
                    ("FAST_RUN", "C"),
                    ("FAST_COMPILE", "fast_compile"),
                ):
                    cells = [label, m, rank, form, mode_label]
                    for outs in ([logp], [logp, *pytensor.grad(logp, vs)]):
                        t0 = time.perf_counter()
                        fn = model.compile_fn(outs, inputs=vs, point_fn=False, mode=mode)
                        fn(*point)
                        compile_s = time.perf_counter() - t0
                        per = []
                        for _ in range(max(repeats, 5)):
                            t0 = time.perf_counter()
                            for _ in range(20):
                                fn(*point)
                            per.append((time.perf_counter() - t0) / 20)
                        cells += [f"{1e3 * np.median(per):.2f}", f"{compile_s:.1f}"]
                    rows.append(cells)
    heads = ["design", "M", "rank", "form", "mode", "logp ms", "compile s", "logp+grad ms"]
    print(_common.format_table([*heads, "compile s"], rows))
    print(
        "rank: of Phi^T Phi at models.GRAM_RTOL; compile s: this process, the compile "
        f"cache as found (not cold); load average {_common.load_average()}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--part", choices=("params", "backends", "cores", "gradient"), default="backends"
    )
    ap.add_argument("--draws", type=int, help="draws per chain of --part backends")
    ap.add_argument("--tune", type=int, help="tuning steps of --part backends")
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--problems", default="sinc100,diabetes300")
    ap.add_argument("--backends", help="comma-separated subset of pymc,nutpie,numpyro")
    ap.add_argument(
        "--cores",
        default="1,2",
        help="comma-separated cores of --part cores ('default': the package's own choice)",
    )
    ap.add_argument("--sampler", default="pymc", help="NUTS backend of --part params")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        problem, kw, lengths, mode = json.loads(args.child)
        res = _fit_twice(problem, kw) if mode == "twice" else _fit(problem, kw, lengths=lengths)
        print("RESULT " + json.dumps(res), flush=True)
        return
    print(_common.header(f"PyMC speed: {args.part}"))
    lengths = {k: v for k, v in (("draws", args.draws), ("tune", args.tune)) if v is not None}
    if args.part == "params":
        part_params(args.repeats, args.sampler)
    elif args.part == "gradient":
        part_gradient(args.repeats)
    elif args.part == "cores":
        part_cores(args.repeats, args.problems.split(","), args.cores.split(","))
    else:
        part_backends(args.repeats, args.problems.split(","), args.backends, lengths)


if __name__ == "__main__":
    main()
