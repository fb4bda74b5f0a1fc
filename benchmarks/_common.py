"""Shared helpers of the benchmark scripts (not part of the package).

Importing this module pins the BLAS thread pools to one thread *before* NumPy
is loaded (unless the caller has set them already, or set ``RVM_BENCH_BLAS``
to ``default``: a script that times fits as a user runs them): on a 2-core
machine multithreaded BLAS oversubscribes the cores and makes timings
erratic.  The scripts therefore import ``_common`` before anything that
imports NumPy.
"""

from __future__ import annotations

import os

if os.environ.get("RVM_BENCH_BLAS") != "default":
    for _var in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "OMP_NUM_THREADS"):
        os.environ.setdefault(_var, "1")

import datetime
import platform
import sys
import time
from collections.abc import Callable, Sequence

import numpy as np
from scipy import linalg

__all__ = [
    "dense_log_marginal_likelihood",
    "format_table",
    "header",
    "load_average",
    "rmse",
    "standardised_sinc",
    "timed",
]


def timed(func: Callable[[], object], repeats: int = 1) -> tuple[float, float, object]:
    """Call ``func`` ``repeats`` times.

    Returns (median wall-clock seconds, median CPU seconds of this process,
    last result).  With one BLAS thread the CPU time is the time the fit
    needs; it is less sensitive than wall-clock time to other processes on a
    shared machine.
    """
    walls, cpus = [], []
    out = None
    for _ in range(repeats):
        w0, c0 = time.perf_counter(), time.process_time()
        out = func()
        cpus.append(time.process_time() - c0)
        walls.append(time.perf_counter() - w0)
    return float(np.median(walls)), float(np.median(cpus)), out


def load_average() -> str:
    """The 1-minute load average (how busy the machine was), or "n/a"."""
    try:
        return f"{os.getloadavg()[0]:.2f}"
    except (AttributeError, OSError):  # pragma: no cover
        return "n/a"


def rmse(pred: np.ndarray, target: np.ndarray) -> float:
    """Root mean squared error."""
    return float(np.sqrt(np.mean((np.asarray(pred) - np.asarray(target)) ** 2)))


def dense_log_marginal_likelihood(
    Phi: np.ndarray, t: np.ndarray, alpha: np.ndarray, beta: float
) -> float:
    """``log N(t | 0, I/beta + Phi diag(alpha)^-1 Phi^T)`` with an N x N Cholesky.

    Independent of the package (used to score another package's solution with
    the same objective the reference solver maximises).
    """
    n = Phi.shape[0]
    C = (Phi / alpha) @ Phi.T
    C[np.diag_indices(n)] += 1.0 / beta
    L = linalg.cholesky(C, lower=True)
    z = linalg.solve_triangular(L, t, lower=True)
    return float(-0.5 * (n * np.log(2 * np.pi) + 2 * np.sum(np.log(np.diag(L))) + z @ z))


def source_state() -> str:
    """Where rvm_pymc was imported from: git commit and local changes when it is a checkout.

    ``RVM_PYMC_SOURCE`` (free text, e.g. "git archive of commit abc1234") is
    appended when set, for runs against an exported copy of the package.
    """
    import subprocess

    import rvm_pymc

    pkg = os.path.dirname(os.path.abspath(rvm_pymc.__file__))
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if pkg.startswith(repo + os.sep):  # relative: no machine paths in the published tables
        state = f"imported from ./{os.path.relpath(pkg, repo)}"
    else:
        state = "imported from a copy outside this checkout"
    try:
        head = subprocess.run(
            ["git", "-C", pkg, "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", pkg, "status", "--porcelain", "--", "."],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        state += f", git commit {head}" + (" + uncommitted changes" if dirty else ", clean")
    except (OSError, subprocess.CalledProcessError):
        state += ", not a git checkout"
    note = os.environ.get("RVM_PYMC_SOURCE")
    return state + (f" ({note})" if note else "")


def header(title: str, extra: Sequence[str] = ()) -> str:
    """A few lines naming the benchmark, date, machine and library versions."""
    import scipy
    import sklearn

    threads = ",".join(
        f"{v.split('_')[0]}={os.environ.get(v, 'default')}"
        for v in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "OMP_NUM_THREADS")
    )
    try:
        ncpu = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        ncpu = os.cpu_count()
    lines = [
        f"# {title}",
        f"# date {datetime.date.today().isoformat()}; Python {platform.python_version()}; "
        f"numpy {np.__version__}; scipy {scipy.__version__}; scikit-learn {sklearn.__version__}",
        f"# {ncpu} CPUs available; BLAS threads {threads}; {platform.machine()}; "
        f"load average at start {load_average()}",
        f"# command: python {' '.join(sys.argv)}",
    ]
    lines.append(f"# rvm_pymc source: {source_state()}")
    lines += [f"# {e}" for e in extra]
    return "\n".join(lines)


def format_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """Plain-text table, columns left-aligned and padded to their widest cell."""
    cells = [[str(h) for h in headers]] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]

    def line(r):
        return "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()

    out = [line(cells[0]), "  ".join("-" * w for w in widths)]
    out += [line(r) for r in cells[1:]]
    return "\n".join(out)


def standardised_sinc(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The PyMC benchmarks' problem: noisy sinc, N = 100, RBF (length scale 2) + bias.

    Columns scaled to unit RMS and targets standardised, the scale on which the
    ``"weakly_informative"`` preset is stated.
    """
    from rvm_pymc.basis import KernelBasis
    from rvm_pymc.datasets import make_sinc
    from rvm_pymc.kernels import RBF

    data = make_sinc(n_train=100, noise_sd=0.1, random_state=seed)
    Phi = KernelBasis(RBF(length_scale=2.0), bias=True).fit_transform(data.X_train)
    Phi = Phi / np.sqrt(np.mean(Phi**2, axis=0))
    t = (data.t_train - data.t_train.mean()) / data.t_train.std()
    return Phi, t


def worst_diagnostics(est, names: Sequence[str]) -> dict:
    """Worst rank R-hat (bulk and tail), smallest bulk and tail ESS over the variables
    ``names`` of ``est.idata_.posterior`` (those present), and the divergent draws."""
    from arviz_stats import ess, rhat

    post = est.idata_["posterior"].to_dataset()
    sub = post[[v for v in names if v in post]]

    def worst(ds, pick):
        return pick(float(pick(np.ravel(v.values))) for v in ds.data_vars.values())

    stats = est.idata_["sample_stats"]
    return {
        "rhat": worst(rhat(sub, method="rank"), max),
        "ess_bulk": worst(ess(sub, method="bulk"), min),
        "ess_tail": worst(ess(sub, method="tail"), min),
        "divergent": int(stats["diverging"].sum()) if "diverging" in stats else -1,
    }
