"""How large is the worst R-hat when the chains mix perfectly?  A null table for the NUTS defaults.

The package's standard for a default NUTS fit is max R-hat <= 1.01 over every
sampled variable.  R-hat is itself an estimate: even chains drawn from the
target have R-hat above 1, by an amount that shrinks with the draws and grows
with the autocorrelation, and the *maximum* over hundreds of variables (the
log precisions of every basis) sits in the upper tail of that noise.  This
script measures that floor without any model: every variable is an
independent stationary AR(1) chain started in its stationary distribution, so
the chains are exactly right and any R-hat above 1 is noise.

``rho`` sets the autocorrelation; the ESS per draw of an AR(1) chain is
``(1 - rho) / (1 + rho)`` (rho 0.5: 1/3, rho 0.25: 0.6), the range the
estimators' NUTS fits show (tail ESS / draws 0.3-0.4, bulk 0.55-0.8 in the
"NUTS at the defaults" tables of benchmarks/README.md).  The R-hat is
``arviz_stats.rhat(method="rank")`` (the larger of bulk and tail), as in
``bench_nuts_defaults.py`` and the estimators' ``converged_``.

Columns: variables V, chains x draws, rho, the median and 90th percentile over
``--reps`` replications of the max R-hat over the V variables, and ``P(<=
1.01)``: the share of replications in which perfect chains pass the standard.

Usage::

    python benchmarks/bench_rhat_noise.py
    python benchmarks/bench_rhat_noise.py --variables 102,302 --reps 40
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy as np
from _common import format_table, header

LAYOUTS = ((2, 1000), (2, 2000), (4, 1000), (2, 3000), (4, 2000))
"""(chains, draws) rows of the table: today's default first."""


def ar1_chains(rng, chains: int, draws: int, variables: int, rho: float) -> np.ndarray:
    """Stationary AR(1) draws of unit variance, shape (chains, draws, variables)."""
    e = rng.standard_normal((chains, draws, variables))
    x = np.empty_like(e)
    x[:, 0] = e[:, 0]
    scale = np.sqrt(1.0 - rho**2)
    for t in range(1, draws):
        x[:, t] = rho * x[:, t - 1] + scale * e[:, t]
    return x


def max_rhat(x: np.ndarray) -> float:
    """Worst rank-normalised R-hat (bulk and tail) over the last axis of ``x``."""
    from arviz_stats import rhat

    return float(np.max(rhat(x, method="rank")))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variables", default="102,302,602", help="comma-separated V")
    parser.add_argument("--rho", default="0.25,0.5", help="comma-separated AR(1) coefficients")
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    rows = []
    for v in (int(s) for s in args.variables.split(",")):
        for rho in (float(s) for s in args.rho.split(",")):
            for chains, draws in LAYOUTS:
                m = np.array(
                    [max_rhat(ar1_chains(rng, chains, draws, v, rho)) for _ in range(args.reps)]
                )
                rows.append(
                    [
                        v,
                        f"{chains} x {draws}",
                        rho,
                        f"{(1 - rho) / (1 + rho):.2f}",
                        f"{np.median(m):.4f}",
                        f"{np.quantile(m, 0.9):.4f}",
                        f"{np.mean(m <= 1.01):.2f}",
                    ]
                )
    print(header("Max R-hat of perfect chains", [f"replications per row: {args.reps}"]))
    heads = ["V", "chains x draws", "rho", "ESS/draw", "median max", "90% max", "P(<= 1.01)"]
    print(format_table(heads, rows))


if __name__ == "__main__":
    main()
