"""Near the limit: the fast solver at N = 4000 against the cost of the Gram matrix.

Any kernel RVM must at least look at the N x N kernel matrix, so the time
NumPy needs to build it is a natural unit.  On one noisy sinc data set
(N = 4000, Gaussian noise sd 0.1) this script times, in the same run:

* the N x N RBF Gram matrix ``exp(-gamma ||x_i - x_j||^2)`` built with plain
  NumPy/SciPy in three ways (broadcast differences, ``scipy.spatial.distance.cdist``,
  and the ``|x|^2 + |y|^2 - 2 x.y`` expansion with a BLAS product), each
  followed by an in-place ``np.exp``; the fastest of the three is the reference;
* ``fit_regression(Phi, t, method="fast")`` on a prebuilt design matrix
  (``KernelBasis(RBF(gamma), bias=True, centres="all")``, N x (N + 1)); building Phi is not
  counted.

The steps are timed in interleaved rounds (every Gram method, then the fit,
again and again) so that both sides see the same machine load; each time is the
median over the rounds, as wall-clock and as CPU time of this process (one BLAS
thread, so CPU time is the work done, and it is less disturbed by other
processes on a shared machine); the minima are shown too.  Target: fit time
at most 2x the Gram time (median CPU seconds, fastest Gram method).
Run::

    python benchmarks/bench_regression_limit.py
"""

from __future__ import annotations

import argparse
import time
import warnings

import _common  # first non-stdlib import: pins BLAS threads before NumPy loads
import numpy as np
from scipy.spatial.distance import cdist

from rvm_pymc.basis import KernelBasis
from rvm_pymc.datasets import make_sinc
from rvm_pymc.kernels import RBF
from rvm_pymc.reference import fit_regression

GAMMA = 0.1
SEED = 0
TARGET = 2.0  # fit at most this many times the fastest Gram build (median CPU time)


def gram_broadcast(X, gamma):
    D = X[:, None, :] - X[None, :, :]
    K = np.einsum("ijk,ijk->ij", D, D)
    K *= -gamma
    return np.exp(K, out=K)


def gram_cdist(X, gamma):
    K = cdist(X, X, "sqeuclidean")
    K *= -gamma
    return np.exp(K, out=K)


def gram_expansion(X, gamma):
    sq = np.einsum("ij,ij->i", X, X)
    K = X @ X.T
    K *= 2.0
    K -= sq[:, None]
    K -= sq[None, :]
    np.minimum(K, 0.0, out=K)
    K *= gamma
    return np.exp(K, out=K)


GRAM_METHODS = {
    "broadcast": gram_broadcast,
    "cdist": gram_cdist,
    "expansion": gram_expansion,
}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=4000)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args(argv)
    n = args.n
    start = time.perf_counter()
    print(
        _common.header(
            f"RVM regression near the limit: fit vs N x N Gram matrix (sinc, N={n})",
            [
                f"RBF exp(-gamma d^2), gamma={GAMMA}; noise sd 0.1; data seed {SEED}; "
                f"{args.repeats} interleaved rounds (each Gram method, then the fit); "
                "medians (and minima) of CPU and wall seconds",
                "fit = fit_regression(Phi, t, method='fast') on the prebuilt N x (N+1) "
                "design matrix (building Phi not counted); target: fit <= 2x Gram",
            ],
        ),
        flush=True,
    )
    X, t, X_test, t_test = make_sinc(n, 1000, noise_sd=0.1, random_state=SEED)
    ref = RBF(gamma=GAMMA)(X, X)

    basis = KernelBasis(RBF(gamma=GAMMA), bias=True, centres="all")  # every point a centre
    b_wall, b_cpu, Phi = _common.timed(lambda: basis.fit_transform(X), 1)

    # Interleave the rounds (every Gram method, then the fit, repeat) so that both
    # sides see the same machine load; report the median and the minimum per step.
    steps = {
        f"Gram, NumPy ({name})": (lambda f=f: f(X, GAMMA)) for name, f in GRAM_METHODS.items()
    }
    steps["fit_regression (fast)"] = lambda: fit_regression(Phi, t, method="fast")
    walls = {k: [] for k in steps}
    cpus = {k: [] for k in steps}
    errors, res = {}, None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(args.repeats):
            for key, func in steps.items():
                wall, cpu, out = _common.timed(func, 1)
                walls[key].append(wall)
                cpus[key].append(cpu)
                if key.startswith("Gram"):
                    errors[key] = float(np.max(np.abs(out - ref)))
                else:
                    res = out
                del out
    med = {k: (np.median(walls[k]), np.median(cpus[k])) for k in steps}
    low = {k: (np.min(walls[k]), np.min(cpus[k])) for k in steps}
    gram_keys = [k for k in steps if k.startswith("Gram")]
    fit_key = "fit_regression (fast)"
    best_med = min(med[k][1] for k in gram_keys)
    best_low = min(low[k][1] for k in gram_keys)
    ratio_cpu = med[fit_key][1] / best_med
    ratio_low = low[fit_key][1] / best_low
    ratio_wall = med[fit_key][0] / min(med[k][0] for k in gram_keys)
    rows = []
    for key in steps:
        is_fit = key == fit_key
        rows.append(
            [
                key,
                f"{med[key][0]:.4f}",
                f"{med[key][1]:.4f}",
                f"{low[key][1]:.4f}",
                f"{ratio_cpu:.2f}x (min {ratio_low:.2f}x, wall {ratio_wall:.2f}x)"
                if is_fit
                else "",
                "" if is_fit else f"{errors[key]:.1e}",
            ]
        )
    rows.append(
        [
            "(KernelBasis.fit_transform, N x (N+1), once)",
            f"{b_wall:.4f}",
            f"{b_cpu:.4f}",
            "",
            "",
            "",
        ]
    )
    print(
        _common.format_table(
            [
                "step",
                "wall s",
                "cpu s",
                "min cpu s",
                "fit / fastest Gram (cpu)",
                "max |K - RBF(X, X)|",
            ],
            rows,
        )
    )
    verdict = "PASS" if ratio_cpu <= TARGET else "FAIL"
    rmse = _common.rmse(res.predict(basis.transform(X_test)), t_test)
    print(
        f"target fit <= {TARGET:g}x Gram (median CPU time): {ratio_cpu:.2f}x -> {verdict}"
        f" (ratio of minima {ratio_low:.2f}x, of median wall-clock {ratio_wall:.2f}x)"
    )
    print(
        f"fit: {res.n_relevance} relevance vectors (bias {'in' if 0 in res.active else 'out'}), "
        f"{res.n_iter} iterations, converged={res.converged}, noise sd "
        f"{1 / np.sqrt(res.beta):.4f} (true 0.1), test RMSE {rmse:.4f}, warnings: "
        f"{len(caught)}"
    )
    print(
        f"total run time {time.perf_counter() - start:.0f} s; "
        f"load average at end {_common.load_average()}"
    )


if __name__ == "__main__":
    main()
