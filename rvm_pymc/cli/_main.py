"""The ``rvm-pymc`` command line: its errors, argument types, parser and entry point."""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import re
import stat
import sys
import traceback
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import NoReturn

from rvm_pymc._core.validation import MEMORY_FRACTION
from rvm_pymc._core.version import VERSION
from rvm_pymc.inference import defaults as nuts_defaults

__all__ = [
    "GAMMA_RANGE",
    "MAX_NOISE_SD",
    "MAX_SEED",
    "MIN_N_TRAIN",
    "DataError",
    "RunError",
    "UsageError",
    "build_parser",
    "main",
]


class UsageError(Exception):
    """A command line that cannot be run: exit status 2, before any fitting."""


class DataError(UsageError):
    """A data file that cannot be used (found while reading, before any fit): exit status 2."""


class RunError(Exception):
    """A run that failed after the arguments were accepted: exit status 1."""


MIN_N_TRAIN = 10
"""Fewest training points of the demo."""
MAX_NOISE_SD = 1e6
"""Largest noise sd of the demo (its signal has amplitude 1)."""
GAMMA_RANGE = (1e-6, 1e6)
"""RBF widths the demo accepts: outside, its kernel matrix is flat or diagonal."""
MAX_SEED = 2**32 - 1
DRAWS_RANGE = (50, 100_000)  # draws and tuning steps per chain
FRACTION_RANGE = (0.05, 0.5)


def ranged(
    low: float,
    high: float = math.inf,
    why: str = "",
    *,
    integer: bool = True,
    low_open: bool = False,
) -> Callable[[str], float | int]:
    """The argument type of a finite number in ``[low, high]`` (or ``(low, high]``): else an
    ArgumentTypeError with ``why`` after the range."""

    def parse(text: str) -> float | int:
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

    return parse


seed = ranged(0, MAX_SEED)
draws = ranged(*DRAWS_RANGE, " (R-hat and ESS of fewer draws say little)")
tune = ranged(*DRAWS_RANGE, " (fewer cannot adapt the step size)")
n_train = ranged(MIN_N_TRAIN, why=" (fewer points cannot be fitted reliably)")
noise_sd = ranged(0.0, MAX_NOISE_SD, " (the signal has amplitude 1)", integer=False, low_open=True)
demo_gamma = ranged(*GAMMA_RANGE, " (outside it the RBF kernel on inputs in [-10, 10] is flat or "
                    "diagonal)", integer=False)  # fmt: skip
fraction = ranged(*FRACTION_RANGE, integer=False)
positive = ranged(0.0, integer=False, low_open=True)


def kernel_gamma(text: str) -> float | str:
    """A positive finite kernel width, or ``auto`` / ``cv`` / ``scale`` / ``evidence``."""
    if text in ("auto", "cv", "scale", "evidence"):
        return text
    try:
        return float(positive(text))
    except argparse.ArgumentTypeError as exc:
        words = "'auto', 'cv', 'scale' or 'evidence'"
        raise argparse.ArgumentTypeError(f"{exc}; or give {words}") from None


def gamma_grid(text: str) -> list[float]:
    """Kernel widths separated by commas (``0.01,0.1,1``): each positive and finite."""
    parts = [part.strip() for part in text.split(",")]
    if not text.strip() or any(not part for part in parts):
        raise argparse.ArgumentTypeError(
            f"expected widths separated by commas, e.g. 0.01,0.1,1; got {text!r}"
        )
    return [float(positive(part)) for part in parts]


PROG = "rvm-pymc"
KERNELS = ("rbf", "laplacian", "cauchy", "linear", "poly", "linear_spline")
METHODS = ("reference", "map", "nuts")
TASKS = ("regression", "classification", "counts")
COUNT_LIKELIHOODS = ("poisson", "negative_binomial")


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are exceptions, so that main prints one line."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see '{self.prog} --help')")


def _add_seed(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument(
        "--seed", type=seed, default=0,
        help=f"random seed of {what}, in [0, {MAX_SEED}] (default 0)",
    )  # fmt: skip


def _draws_help(default: int | str, extra: str) -> str:
    low, high = DRAWS_RANGE
    return f"{extra}, in [{low}, {high}] (default {default})"


def _add_demo(sub, common: argparse.ArgumentParser) -> None:
    from rvm_pymc.cli._commands import check_demo_arguments, demo_command

    demo = sub.add_parser(
        "demo",
        parents=[common],
        help="fit noisy sinc by reference, MAP and NUTS and compare",
        description="Fit noisy sinc (Tipping 2001) by the three methods "
        "(rvm_pymc.comparison.fit_all): the closed-form reference solver (type-II ML), "
        "type-II MAP in PyMC and NUTS (full Bayes, a short run), each an RVR with "
        "gamma='evidence' choosing the RBF width of largest evidence (--gammas, refined "
        "between them); print the comparison table (rvm_pymc.comparison.compare) and write a "
        "figure of the predictive bands.",
    )
    demo.add_argument(
        "--n-train", type=n_train, default=100,
        help=f"training points, at least {MIN_N_TRAIN}; the N x N kernel matrix must "
        f"fit in {MEMORY_FRACTION * 100:.0f}%% of the available memory (default 100)",
    )  # fmt: skip
    demo.add_argument(
        "--noise-sd", type=noise_sd, default=0.1,
        help=f"sd of the Gaussian noise, in (0, {MAX_NOISE_SD:g}] (default 0.1)",
    )  # fmt: skip
    _add_seed(demo, "the data, the draws and NUTS")
    demo.add_argument("--method", choices=["fast", "mackay", "em"], default="fast",
                      help="reference solver (default fast)")  # fmt: skip
    low, high = GAMMA_RANGE
    demo.add_argument(
        "--gammas", type=demo_gamma, nargs="+", default=[0.05, 0.1, 0.2, 0.5, 1.0],
        metavar="GAMMA",
        help=f"RBF widths bracketing the choice (gamma_grid: each is fitted, the best refined "
        f"between its neighbours), each in [{low:g}, {high:g}] (default 0.05 0.1 0.2 0.5 1)",
    )  # fmt: skip
    demo.add_argument(
        "--methods", nargs="+", choices=METHODS, default=list(METHODS),
        metavar="METHOD",
        help="fits to compare: reference, map, nuts (default all three; NUTS runs "
        "PyMC's own sampler on PyTensor's default backend)",
    )  # fmt: skip
    demo.add_argument(
        "--draws", type=draws, default=2000,
        help=_draws_help(2000, "NUTS draws per chain, 2 chains, after min(draws, 1000) "
                         "tuning steps (the estimator's defaults, at which its NUTS converges)"),
    )  # fmt: skip
    demo.add_argument(
        "--output", default="rvm_demo.png",
        help="figure to write (.png, .pdf, .svg, ...), or 'none' (default rvm_demo.png)",
    )  # fmt: skip
    demo.set_defaults(func=demo_command, check=check_demo_arguments)


def _model_options(p: argparse.ArgumentParser, saved: bool) -> None:
    """The data, columns and model options of ``fit`` and ``compare``."""
    p.add_argument(
        "data", metavar="DATA.csv",
        help="CSV table with a header row; every column but the target is a feature, "
        "but for row indices, wherever they are, each left out with a note: a column named "
        "'rownames' or 'Unnamed: N' (an empty header, as pandas writes its index), and one "
        "named like an index (id, index, X, ...) that holds the row numbers 0..N-1 or 1..N",
    )  # fmt: skip
    p.add_argument("--target", required=True, metavar="COL", help="name of the target column")
    columns = p.add_mutually_exclusive_group()
    columns.add_argument(
        "--features", nargs="+", metavar="COL",
        help="the feature columns to use (default: every column but the target)",
    )  # fmt: skip
    columns.add_argument(
        "--drop", nargs="+", metavar="COL", default=[],
        help="columns to leave out of the features (names, ids, ...)",
    )  # fmt: skip
    p.add_argument(
        "--numeric-only", action="store_true",
        help="leave out, with a note, every feature column that is not a number in every row "
        "(text, or empty cells); by default such columns are refused, all named at once "
        "with why, so that no feature is dropped unnoticed",
    )  # fmt: skip
    p.add_argument(
        "--one-hot", action="store_true",
        help="encode each text feature column of at most 20 distinct values (a type, a sex, "
        "an origin) as 0/1 columns COL=level, an empty cell as a level NA; predict encodes "
        "new rows by the levels of the fit (default: text columns are refused, see "
        "--numeric-only)",
    )  # fmt: skip
    p.add_argument(
        "--task", choices=TASKS, default=None,
        help="regression, classification or counts (a Poisson RVM; default: classification "
        "for text labels or at most 10 distinct integers, counts for more non-negative "
        "integers with a zero among them, with a note, regression otherwise)",
    )  # fmt: skip
    p.add_argument(
        "--likelihood", choices=COUNT_LIKELIHOODS, default="poisson",
        help="counts only: poisson (default) or negative_binomial, for overdispersed counts "
        "(variance above the mean; its dispersion is fitted too, by reference or nuts)",
    )  # fmt: skip
    p.add_argument(
        "--force-classes", action="store_true",
        help="fit a classification target with more classes than a fifth of the rows "
        "(refused by default: too few rows per class to learn them, and a softmax RVM over "
        "many classes is slow and its model large)",
    )  # fmt: skip
    p.add_argument("--kernel", choices=KERNELS, default="rbf", help="kernel (default rbf)")
    p.add_argument(
        "--gamma", type=kernel_gamma, default="auto", metavar="G|auto|cv|scale|evidence",
        help="kernel width: a number; 'cv' (the widths of a grid around 'scale' scored by "
        "5-fold cross-validation of the held-out log density of the reference fit, the "
        "best fitted on all rows); 'scale' (1 / (n_features * var X)); 'evidence' (the width "
        "of largest evidence, refined on a continuous scale: on small noisy data it often "
        "interpolates, and says so); 'auto' (default, as RVR, RVC and RVP): 'cv' up to 2000 "
        "rows, 'scale' above",
    )  # fmt: skip
    p.add_argument(
        "--gamma-grid", type=gamma_grid, default=None, metavar="G,G,...",
        help="the widths --gamma cv (or auto) and --gamma evidence try, comma-separated (e.g. "
        "0.01,0.1,1); extend it past an edge where the best width lies (default: the "
        "estimator's grid around 'scale', 9 widths over 4 decades)",
    )  # fmt: skip
    if saved:
        where = "the rows, and the means and sds are saved with the model"
    else:
        where = "the training split, the held-out rows by the same means and sds"
    p.add_argument(
        "--no-standardise", dest="standardise", action="store_false",
        help="use the features as they are, as RVR and RVC do (default: each is "
        f"standardised to mean 0, sd 1 over {where})",
    )  # fmt: skip
    _add_seed(p, "the draws, NUTS and splits")
    p.add_argument(
        "--draws",
        type=draws,
        default=None,
        help=_draws_help(
            f"the estimator's: {nuts_defaults.ESTIMATOR_DRAWS['classification']} for "
            f"classification, {nuts_defaults.ESTIMATOR_DRAWS['regression']} otherwise",
            f"draws per chain kept, {nuts_defaults.ESTIMATOR_CHAINS} chains (with the default, "
            "NUTS stops once converged, at most that many; a given number is kept whole)",
        ),
    )
    p.add_argument("--tune", type=tune, default=None,
                   help=_draws_help(f"the estimator's: {nuts_defaults.COLLAPSED_TUNE} for "
                                    f"regression, {nuts_defaults.JOINT_TUNE} otherwise",
                                    "NUTS tuning steps per chain"))  # fmt: skip
    p.add_argument(
        "--jobs", type=ranged(1, 256), default=1, metavar="N",
        help="processes for the independent fits: the widths (and folds) of --gamma cv and "
        "evidence and the folds of compare, in [1, 256] (default 1)",
    )  # fmt: skip


def _add_data_commands(sub, common: argparse.ArgumentParser) -> None:
    from rvm_pymc.cli._commands import (
        check_data_arguments,
        compare_command,
        fit_command,
        predict_command,
    )

    fit = sub.add_parser(
        "fit",
        parents=[common],
        help="fit an RVM to a CSV table and save it",
        description="Fit an RVM (RVR for regression, RVC for classification, RVP for counts) "
        "to a CSV table. Writes into --out: the saved "
        "model (model.nc), its feature names and standardisation (model.json), the "
        "predictions on the training rows (predictions.csv), a summary (summary.txt, "
        "summary.json) and a plot (fit.png). Features are standardised by default.",
    )
    _model_options(fit, saved=True)
    fit.add_argument(
        "--method", choices=METHODS, default="reference",
        help="reference (closed form, no compilation; default), map "
        "(type-II MAP in PyMC) or nuts (full Bayes; compiles, then samples)",
    )  # fmt: skip
    fit.add_argument(
        "--out", default="rvm_fit", metavar="DIR",
        help="output directory, created if missing; a reused one holds the new fit's files "
        "only (default rvm_fit)",
    )  # fmt: skip
    fit.add_argument("--no-plot", action="store_true", help="do not write fit.png")
    fit.set_defaults(func=fit_command, check=check_data_arguments)

    predict = sub.add_parser(
        "predict",
        parents=[common],
        help="predict with a model saved by 'fit'",
        description="Predict with a model saved by 'rvm-pymc fit': the input rows with the "
        "prediction appended (regression: prediction and predictive_sd, noise included; "
        "classification: the predicted label and p_<class> for every class). The model's "
        "standardisation is applied to the features; a target column, if present, is kept "
        "and ignored.",
    )
    predict.add_argument(
        "model", metavar="MODEL", help="the --out directory of 'rvm-pymc fit' (or its model.nc)"
    )
    predict.add_argument(
        "data", metavar="DATA.csv", help="CSV table holding the model's feature columns"
    )
    predict.add_argument(
        "--out", default=None, metavar="FILE", help="CSV file to write (default: standard output)"
    )
    predict.set_defaults(func=predict_command, check=check_data_arguments)

    compare = sub.add_parser(
        "compare",
        parents=[common],
        help="compare reference, MAP and NUTS on a CSV table",
        description="Split the rows into a training and a held-out part (--test-size), fit "
        "the RVM by each method on the training part and print one row per method "
        "(rvm_pymc.comparison.compare): sparsity, held-out accuracy and log predictive "
        "density, k-fold cross-validation with refitting (every method is refitted on every "
        "fold: NUTS makes this slow), PSIS-LOO and sampler diagnostics. Features are "
        "standardised on the training split. Saves no model (that is 'fit'); --out writes "
        "the table.",
    )
    _model_options(compare, saved=False)
    compare.add_argument(
        "--methods", nargs="+", choices=METHODS, default=list(METHODS), metavar="METHOD",
        help="methods to compare (default all three)",
    )  # fmt: skip
    low, high = FRACTION_RANGE
    compare.add_argument(
        "--test-size", type=fraction, default=0.25,
        help=f"held-out share of the rows, in [{low:g}, {high:g}] (default 0.25)",
    )  # fmt: skip
    compare.add_argument(
        "--cv", type=ranged(0, 50), default=5,
        help="folds of the cross-validation, in [0, 50]; 0 skips it (default 5)",
    )  # fmt: skip
    compare.add_argument(
        "--out",
        default=None,
        metavar="FILE",
        help="also write the full table as CSV: one row per method, every column",
    )
    compare.set_defaults(func=compare_command, check=check_data_arguments)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``rvm-pymc``; its errors raise :class:`UsageError`.

    Returns
    -------
    argparse.ArgumentParser
        With the commands ``demo``, ``fit``, ``predict`` and ``compare``, each setting
        ``func`` (the command) and ``check`` (its argument checks, run before fitting).
    """
    parser = _Parser(prog=PROG, description="Relevance Vector Machines with PyMC.")
    parser.add_argument("--version", action="version", version=f"{PROG} {VERSION}")
    parser.add_argument(
        "--debug", action="store_true", help="show the Python traceback of a failed run"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    common = argparse.ArgumentParser(add_help=False)  # the options every command takes
    common.add_argument(  # also after the command; SUPPRESS keeps one given before it
        "--debug", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS
    )
    _add_demo(sub, common)
    _add_data_commands(sub, common)
    return parser


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


_FLAGS = (
    (re.compile(r"\bgamma_grid\b"), "--gamma-grid"),
    (re.compile(r"\bgamma='(\w+)'"), r"--gamma \1"),
    (re.compile(r"\bgamma=(\d[\w.+-]*)"), r"--gamma \1"),
    (re.compile(r"\bdraws=(\d+)"), r"--draws \1"),
    (re.compile(r"\btune=(\d+)"), r"--tune \1"),
    (re.compile(r"\bn_jobs\b"), "--jobs"),
    (re.compile(r"\brandom_state\b"), "--seed"),
)


def cli_words(text: str) -> str:
    """An estimator's message in the command line's words (``gamma=0.5``: ``--gamma 0.5``)."""
    for pattern, flag in _FLAGS:
        text = pattern.sub(flag, text)
    return text


def _error(message: str) -> None:
    print(f"{PROG}: error: {_one_line(message)}", file=sys.stderr)


@contextlib.contextmanager
def _one_line_warnings(debug: bool) -> Iterator[None]:
    """Warnings as ``rvm-pymc: warning: ...`` lines (as Python raised them under --debug)."""
    if debug:
        yield
        return

    def show(message, category, filename, lineno, file=None, line=None) -> None:
        print(f"{PROG}: warning: {cli_words(_one_line(message))}", file=sys.stderr)

    with warnings.catch_warnings():
        warnings.showwarning = show
        yield


def _output_is_a_pipe() -> bool:
    try:
        return stat.S_ISFIFO(os.fstat(sys.stdout.fileno()).st_mode)
    except (AttributeError, OSError, ValueError):  # no file descriptor (captured output)
        return False


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``rvm-pymc`` command.

    Parameters
    ----------
    argv : sequence of str, optional
        The arguments after the program name; default ``sys.argv[1:]``.

    Returns
    -------
    int
        The exit status: 0 success, 1 failed run, 2 bad usage, 130 interrupted.
        Errors are printed as one line to standard error; nothing is raised.
    """
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        if args.command is None:
            parser.print_help(sys.stderr)
            return 2
        args.check(args)
    except UsageError as exc:
        _error(str(exc))
        return 2
    except SystemExit as exc:  # --help and --version print and exit 0
        return exc.code if isinstance(exc.code, int) else 0
    debug = bool(args.debug)
    try:
        with _one_line_warnings(debug):
            return args.func(args)
    except UsageError as exc:  # bad input data, found while reading, before any fit
        if debug and isinstance(exc, DataError):
            traceback.print_exc()
        _error(str(exc))
        return 2
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        if isinstance(exc, BrokenPipeError) and _output_is_a_pipe():
            # the reader left (`predict ... | head`): later writes go nowhere; 128 + SIGPIPE
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 141
        if debug:
            traceback.print_exc()
        message = str(exc) if isinstance(exc, RunError) else f"{type(exc).__name__}: {exc}"
        hint = "" if debug else " (rerun with --debug for the traceback)"
        _error(message + hint)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
