"""The ``rvm-pymc`` command line.

``rvm-pymc demo`` fits noisy sinc with the closed-form reference solver,
prints a short table and writes a PNG of the fit.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence

import numpy as np

__all__ = ["main"]


def _demo(args: argparse.Namespace) -> int:
    from rvm_pymc.datasets import make_sinc
    from rvm_pymc.kernels import RBF, KernelBasis
    from rvm_pymc.reference import fit_regression

    data = make_sinc(n_train=args.n_train, noise_sd=args.noise_sd, random_state=args.seed)
    t0 = time.perf_counter()
    # Choose the RBF width by the evidence over a small grid.
    best = None
    for gamma in args.gammas:
        basis = KernelBasis(RBF(gamma=gamma), bias=True)
        Phi = basis.fit_transform(data.X_train)
        res = fit_regression(Phi, data.t_train, method=args.method)
        if best is None or res.log_evidence > best[2].log_evidence:
            best = (gamma, basis, res)
    elapsed = time.perf_counter() - t0
    gamma, basis, res = best
    mean, std = res.predict(basis.transform(data.X_test), return_std=True)
    rmse = float(np.sqrt(np.mean((mean - data.t_test) ** 2)))
    # training points that are relevance vectors (column 0 is the bias)
    rv_points = res.active[res.active > 0] - 1
    rows = [
        ("data", f"sinc, {args.n_train} points, Gaussian noise sd {args.noise_sd}"),
        ("solver", f"reference, method={args.method!r}"),
        ("RBF gamma (max evidence)", f"{gamma:g} of {list(args.gammas)}"),
        ("log evidence", f"{res.log_evidence:.3f}"),
        ("test RMSE (1000 noise-free)", f"{rmse:.4f}"),
        ("relevance vectors", f"{res.n_relevance} (bias {'in' if 0 in res.active else 'out'})"),
        ("noise sd estimate", f"{res.beta ** -0.5:.4f} (true {args.noise_sd})"),
        ("iterations / converged", f"{res.n_iter} / {res.converged}"),
        ("fit time (all widths)", f"{elapsed * 1e3:.1f} ms"),
    ]
    width = max(len(k) for k, _ in rows)
    print("rvm-pymc demo: relevance vector regression on noisy sinc")
    for k, v in rows:
        print(f"  {k:<{width}}  {v}")
    if args.output != "none":
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        from rvm_pymc.plotting import plot_regression_1d

        ax = plot_regression_1d(
            data.X_train[:, 0], data.t_train, data.X_test[:, 0], mean, std, rv_points,
            truth=data.t_test,
            title=f"RVM regression on sinc: RMSE {rmse:.3f}, {res.n_relevance} RVs",
        )
        ax.figure.tight_layout()
        ax.figure.savefig(args.output, dpi=110)
        plt.close(ax.figure)
        print(f"  wrote {args.output}")
    return 0


def _positive_float(text: str) -> float:
    value = float(text)
    if not np.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a finite number > 0; got {text}")
    return value


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``rvm-pymc``."""
    parser = argparse.ArgumentParser(
        prog="rvm-pymc", description="Relevance Vector Machines with PyMC."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="fit noisy sinc with the reference solver")
    demo.add_argument("--n-train", type=int, default=100, help="training points (default 100)")
    demo.add_argument("--noise-sd", type=_positive_float, default=0.1, help="noise sd (0.1)")
    demo.add_argument("--seed", type=int, default=0, help="random seed (0)")
    demo.add_argument("--method", choices=["fast", "mackay", "em"], default="fast")
    demo.add_argument("--gammas", type=_positive_float, nargs="+",
                      default=[0.05, 0.1, 0.2, 0.5, 1.0], help="RBF widths to choose from")
    demo.add_argument("--output", default="rvm_demo.png",
                      help="PNG to write, or 'none' (default rvm_demo.png)")
    demo.set_defaults(func=_demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``rvm-pymc`` command."""
    args = build_parser().parse_args(argv)
    if getattr(args, "n_train", 2) < 2:
        print("rvm-pymc: error: --n-train must be at least 2", file=sys.stderr)
        return 2
    return args.func(args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
