"""The entry point and the demo of the command line (see :mod:`rvm_pymc.cli`)."""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import sys
import time
import traceback
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import NoReturn

import numpy as np

from rvm_pymc._core.validation import MEMORY_FRACTION, available_memory
from rvm_pymc.cli._data import DataError
from rvm_pymc.cli._parser import add_data_commands

__all__ = [
    "GAMMA_RANGE",
    "MAX_NOISE_SD",
    "MAX_SEED",
    "MEMORY_FRACTION",
    "MIN_N_TRAIN",
    "build_parser",
    "check_demo_arguments",
    "main",
]

PROG = "rvm-pymc"
MIN_N_TRAIN = 10
"""Fewest training points of the demo: below about 6 the fast solver can fail
outright (a singular Cholesky factor at 2-5 points), and 10 points are the
least that pin down an RBF width and a noise level on sinc."""
MAX_NOISE_SD = 1e6
"""Largest noise sd of the demo (its signal has amplitude 1); beyond about
1e10 the targets' squares leave the range the solver represents."""
GAMMA_RANGE = (1e-6, 1e6)
"""RBF widths the demo accepts: its inputs lie in [-10, 10], so below 1e-6 the
kernel matrix is constant to 4e-4 and above 1e6 it is the identity matrix for
any two points more than 0.003 apart; neither says anything about a width."""
MAX_SEED = 2**32 - 1
MIN_DRAWS = 50


class UsageError(Exception):
    """A command line that cannot be run: exit status 2."""


class RunError(Exception):
    """A run that failed after the arguments were accepted: exit status 1."""


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are exceptions, so that main prints one line."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see '{self.prog} --help')")


# ------------------------------------------------------------ argument types


def _number(
    text: str,
    *,
    integer: bool,
    low: float,
    high: float = math.inf,
    low_open: bool = False,
    why: str = "",
) -> float | int:
    """``text`` as a finite number in ``[low, high]`` (``(low, high]`` if ``low_open``).

    Raises
    ------
    argparse.ArgumentTypeError
        With a message that argparse prints after the option's name.
    """
    shown = text if len(text) <= 40 else text[:37] + "..."
    try:
        value: float | int = int(text) if integer else float(text)
    except ValueError:  # also an int of more than 4300 digits
        kind = "a whole number" if integer else "a number"
        raise argparse.ArgumentTypeError(f"expected {kind}, got {shown!r}") from None
    if not integer and not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {shown!r}")
    below = value <= low if low_open else value < low
    if below or value > high:
        if math.isinf(high):
            bound = f"{'>' if low_open else '>='} {low:g}"
        else:
            bound = f"in {'(' if low_open else '['}{low:g}, {high:.15g}]"
        raise argparse.ArgumentTypeError(f"must be {bound}{why}; got {shown}")
    return value


def _n_train(text: str) -> int:
    why = " (fewer points cannot be fitted reliably)"
    return int(_number(text, integer=True, low=MIN_N_TRAIN, why=why))


def _seed(text: str) -> int:
    return int(_number(text, integer=True, low=0, high=MAX_SEED))


def _noise_sd(text: str) -> float:
    why = " (the signal has amplitude 1)"
    return float(_number(text, integer=False, low=0.0, high=MAX_NOISE_SD, low_open=True, why=why))


def _draws(text: str) -> int:
    why = " (fewer cannot adapt the step size)"
    return int(_number(text, integer=True, low=MIN_DRAWS, high=100_000, why=why))


def _gamma(text: str) -> float:
    low, high = GAMMA_RANGE
    why = " (outside it the RBF kernel on inputs in [-10, 10] is flat or diagonal)"
    return float(_number(text, integer=False, low=low, high=high, why=why))


# ------------------------------------------------------------ checks before the fit


def _gib(n_bytes: float) -> str:
    return f"{n_bytes / 2**30:.1f} GiB"


def _check_memory(n_train: int) -> None:
    available = available_memory()
    if available is None:
        return
    need = 8 * n_train * n_train
    allowed = MEMORY_FRACTION * available
    if need > allowed:
        largest = math.isqrt(int(allowed // 8))
        raise UsageError(
            f"argument --n-train: {n_train} points need a {n_train} x {n_train} kernel matrix "
            f"of {_gib(need)}, more than {MEMORY_FRACTION:.0%} of the available memory "
            f"({_gib(available)}); use --n-train {largest} or fewer"
        )


def _image_formats() -> dict[str, str]:
    from matplotlib.backend_bases import FigureCanvasBase

    return FigureCanvasBase.get_supported_filetypes()


def _check_output(output: str) -> None:
    """Refuse an output path the figure cannot be written to, before any fitting."""
    if output == "none":
        return
    suffix = os.path.splitext(output)[1].lower().lstrip(".")
    formats = _image_formats()
    if suffix not in formats:
        raise UsageError(
            f"argument --output: {output!r} must end in an image type matplotlib writes "
            f"({', '.join('.' + f for f in sorted(formats))}), or be 'none'"
        )
    target = os.path.realpath(output)
    directory = os.path.dirname(target)
    if os.path.isdir(target):
        raise UsageError(f"argument --output: {output} is a directory")
    if not os.path.isdir(directory):
        raise UsageError(f"argument --output: the directory {directory} does not exist")
    try:  # the truthful test (also as root, also on a read-only file system): make a file
        from rvm_pymc._core.files import temporary_file

        probe = temporary_file(directory, os.path.basename(target))
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise UsageError(f"argument --output: cannot write to {directory}: {reason}") from None
    os.unlink(probe)
    if os.path.exists(target) and not os.access(target, os.W_OK):
        raise UsageError(f"argument --output: {output} exists and is not writable")


def check_demo_arguments(args: argparse.Namespace) -> None:
    """Checks of ``rvm-pymc demo`` that need more than one value at a time.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed arguments (each value is already range-checked).

    Raises
    ------
    UsageError
        If the kernel matrix would not fit in memory or the output cannot be
        written.
    """
    _check_memory(args.n_train)
    _check_output(args.output)


# ------------------------------------------------------------------ the demo

DEMO_METHODS = ("reference", "map", "nuts")
NUTS_COMPILE_MODE = "FAST_COMPILE"
"""PyTensor mode of the demo's NUTS fit (PyMC's own sampler, also when nutpie
is installed): compiles in seconds where the Numba backend takes minutes on a
cold cache; each gradient is slower, which a short run (``--draws``) affords."""


def _fit_demo(args: argparse.Namespace):
    """The data and the RBF width of largest evidence (reference solver over ``--gammas``)."""
    from rvm_pymc.basis import KernelBasis
    from rvm_pymc.datasets import make_sinc
    from rvm_pymc.kernels import RBF
    from rvm_pymc.reference import fit_regression

    data = make_sinc(n_train=args.n_train, noise_sd=args.noise_sd, random_state=args.seed)
    t0 = time.perf_counter()
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
    finite = np.isfinite(res.log_evidence) and np.isfinite(mean).all() and np.isfinite(std).all()
    if not finite:
        raise RunError("the fit failed: the solver returned non-finite numbers")
    return data, gamma, res, mean, std, elapsed


def _fit_methods(args: argparse.Namespace, data, gamma: float):
    """RVR fitted at ``gamma`` by each of ``--methods``, with progress lines; a FitSet."""
    from rvm_pymc.cli._commands import announce_compilation, progress
    from rvm_pymc.comparison import FitSet
    from rvm_pymc.estimators import RVR

    fits, times = {}, {}
    for method in args.methods:
        params = {"method": method, "solver": args.method, "gamma": gamma,
                  "random_state": args.seed, "draws": args.draws, "tune": args.draws}  # fmt: skip
        if method == "nuts":
            params["sampler_kwargs"] = {
                "progressbar": sys.stderr.isatty(),
                "nuts_sampler": "pymc",  # compile_kwargs apply to PyMC's own NUTS only
                "compile_kwargs": {"mode": NUTS_COMPILE_MODE},
            }
            progress(f"nuts: 2 chains of {args.draws} tuning + {args.draws} draws")
        announce_compilation(method)
        t0 = time.perf_counter()
        fits[method] = RVR(**params).fit(data.X_train, data.t_train)
        times[method] = time.perf_counter() - t0
        if method != "reference":
            progress(f"{method}: {times[method]:.1f} s")
    return FitSet(fits, X=data.X_train, y=data.t_train, fit_times=times)


def _demo_table(args, data, fits):
    """compare() on fresh noisy test targets, plus the RMSE against the noise-free sinc."""
    from rvm_pymc.comparison import compare

    rng = np.random.default_rng([args.seed, 1])
    t_new = data.t_test + args.noise_sd * rng.standard_normal(data.t_test.size)
    table = compare(fits, data.X_test, t_new, cv=None, loo=False, random_state=args.seed)
    table.insert(3, "rmse_sinc", [
        float(np.sqrt(np.mean((f.predict(data.X_test) - data.t_test) ** 2))) for f in fits.values()
    ])  # fmt: skip
    table["noise_sd"] = [float(np.sqrt(f.noise_var_)) for f in fits.values()]
    cols = ["n_relevant", "rmse_sinc", "rmse", "lpd", "coverage_95", "noise_sd",
            "log_evidence", "fit_time", "divergences", "max_rhat"]  # fmt: skip
    return table[[c for c in cols if c in table.columns]]


def _write_figure(args, data, fits) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from rvm_pymc.datasets import sinc
    from rvm_pymc.plotting import plot_predictive_1d

    ax = plot_predictive_1d(dict(fits), data.X_train, data.t_train, data.X_test,
                            bands=(0.95,), truth=sinc)  # fmt: skip
    ax.set_title(f"RVM on noisy sinc ({args.n_train} points): 95% predictive bands")
    ax.figure.tight_layout()
    from rvm_pymc._core.files import atomic_write

    fmt = os.path.splitext(args.output)[1].lower().lstrip(".")
    try:  # atomic: a failed write leaves an existing file as it was
        atomic_write(args.output, lambda tmp: ax.figure.savefig(tmp, dpi=110, format=fmt))
    except OSError as exc:  # atomic_write names the path itself: give the bare reason
        reason = os.strerror(exc.errno) if exc.errno else (exc.strerror or str(exc))
        raise RunError(f"cannot write --output {args.output}: {reason}") from exc
    finally:
        plt.close(ax.figure)


def _demo(args: argparse.Namespace) -> int:
    try:
        data, gamma, res, _, _, elapsed = _fit_demo(args)
        fits = _fit_methods(args, data, gamma)
        table = _demo_table(args, data, fits)
    except (RunError, KeyboardInterrupt):
        raise
    except MemoryError as exc:
        raise RunError(f"the fit failed: out of memory ({exc})") from exc
    except Exception as exc:
        raise RunError(f"the fit failed: {type(exc).__name__}: {exc}") from exc
    rows = [
        ("data", f"sinc, {args.n_train} points, Gaussian noise sd {args.noise_sd:g}"),
        ("RBF gamma (max evidence)", f"{gamma:g} of {', '.join(f'{g:g}' for g in args.gammas)}"),
        ("width search", f"reference solver {args.method!r}, {elapsed * 1e3:.1f} ms for all "
         f"widths; at the chosen one {res.n_iter} iterations, converged {res.converged}"),
        ("methods", ", ".join(args.methods)
         + (f" (NUTS: 2 chains, {args.draws} tuning + {args.draws} draws each)"
            if "nuts" in args.methods else "")),
    ]  # fmt: skip
    width = max(len(k) for k, _ in rows)
    print("rvm-pymc demo: relevance vector regression on noisy sinc")
    for k, v in rows:
        print(f"  {k:<{width}}  {v}")
    print(
        "\nThe fits side by side (rvm_pymc.comparison.compare on 1000 fresh noisy test points;"
        "\nrmse_sinc against the noise-free function, lpd in nats per point):"
    )
    print(table.to_string(float_format=lambda v: f"{v:.4g}"))
    if args.output != "none":
        _write_figure(args, data, fits)
        print(f"  wrote {args.output}")
    return 0


# ------------------------------------------------------------------ parser, main


def _version() -> str:
    from rvm_pymc._core.version import VERSION

    return VERSION


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``rvm-pymc``; its errors raise :class:`UsageError`."""
    parser = _Parser(prog=PROG, description="Relevance Vector Machines with PyMC.")
    parser.add_argument("--version", action="version", version=f"{PROG} {_version()}")
    parser.add_argument(
        "--debug", action="store_true", help="show the Python traceback of a failed run"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    demo = sub.add_parser(
        "demo",
        help="fit noisy sinc by reference, MAP and NUTS and compare",
        description="Fit noisy sinc (Tipping 2001) by the three methods: the closed-form "
        "reference solver (type-II ML, choosing the RBF width by the evidence over --gammas), "
        "type-II MAP in PyMC and NUTS (full Bayes, a short run) at that width; print the "
        "comparison table and write a figure of the three predictive bands.",
    )
    demo.add_argument(
        "--n-train", type=_n_train, default=100,
        help=f"training points, at least {MIN_N_TRAIN}; the N x N kernel matrix must fit in "
        f"{MEMORY_FRACTION * 100:.0f}%% of the available memory (default 100)",
    )  # fmt: skip
    demo.add_argument(
        "--noise-sd", type=_noise_sd, default=0.1,
        help=f"sd of the Gaussian noise, in (0, {MAX_NOISE_SD:g}] (default 0.1)",
    )  # fmt: skip
    demo.add_argument(
        "--seed", type=_seed, default=0, help=f"random seed in [0, {MAX_SEED}] (default 0)"
    )
    demo.add_argument("--method", choices=["fast", "mackay", "em"], default="fast",
                      help="reference solver (default fast)")  # fmt: skip
    demo.add_argument(
        "--gammas", type=_gamma, nargs="+", default=[0.05, 0.1, 0.2, 0.5, 1.0],
        metavar="GAMMA",
        help=f"RBF widths to choose from, each in [{GAMMA_RANGE[0]:g}, {GAMMA_RANGE[1]:g}] "
        "(default 0.05 0.1 0.2 0.5 1)",
    )  # fmt: skip
    demo.add_argument(
        "--methods", nargs="+", choices=DEMO_METHODS, default=list(DEMO_METHODS),
        metavar="METHOD",
        help="fits to compare: reference, map, nuts (default all three; NUTS compiles "
        f"in PyTensor's {NUTS_COMPILE_MODE} mode)",
    )  # fmt: skip
    demo.add_argument(
        "--draws", type=_draws, default=200,
        help="NUTS tuning steps and draws per chain, 2 chains (default 200: a short run "
        "for a demo; the estimator's default is 500)",
    )  # fmt: skip
    demo.add_argument(
        "--output", default="rvm_demo.png",
        help="figure to write (.png, .pdf, .svg, ...), or 'none' (default rvm_demo.png)",
    )  # fmt: skip
    demo.add_argument(  # also after the command; SUPPRESS keeps a --debug given before it
        "--debug", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS
    )
    demo.set_defaults(func=_demo, check=check_demo_arguments)
    add_data_commands(sub, _hidden_debug)
    return parser


def _hidden_debug(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(  # also after the command; SUPPRESS keeps a --debug given before it
        "--debug", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS
    )


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _error(message: str) -> None:
    print(f"{PROG}: error: {_one_line(message)}", file=sys.stderr)


@contextlib.contextmanager
def _one_line_warnings(debug: bool) -> Iterator[None]:
    """Warnings as ``rvm-pymc: warning: ...`` lines (the full form under --debug)."""
    if debug:
        yield
        return

    def show(message, category, filename, lineno, file=None, line=None) -> None:
        print(f"{PROG}: warning: {_one_line(message)}", file=sys.stderr)

    with warnings.catch_warnings():
        warnings.showwarning = show
        yield


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``rvm-pymc`` command.

    Parameters
    ----------
    argv : sequence of str, optional
        The arguments after the program name; default ``sys.argv[1:]``.

    Returns
    -------
    int
        The exit status: 0 success, 1 failed run, 2 bad usage, 130 interrupted
        (see the module docstring).  Errors are printed as one line to standard
        error; nothing is raised (``SystemExit`` of ``--help``/``--version``
        included).
    """
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except UsageError as exc:
        _error(str(exc))
        return 2
    except SystemExit as exc:  # --help and --version print and exit 0
        return exc.code if isinstance(exc.code, int) else 0
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    debug = bool(args.debug)
    check: Callable[[argparse.Namespace], None] = args.check
    try:
        check(args)
    except UsageError as exc:
        _error(str(exc))
        return 2
    try:
        with _one_line_warnings(debug):
            return args.func(args)
    except DataError as exc:  # bad input data: found while reading, before any fit
        if debug:
            traceback.print_exc()
        _error(str(exc))
        return 2
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        if debug:
            traceback.print_exc()
        message = str(exc) if isinstance(exc, RunError) else f"{type(exc).__name__}: {exc}"
        hint = "" if debug else " (rerun with --debug for the traceback)"
        _error(message + hint)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
