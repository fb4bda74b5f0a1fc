"""Arguments of ``rvm-pymc fit``, ``predict`` and ``compare`` (the commands on CSV data)."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable

__all__ = ["KERNELS", "add_data_commands"]

KERNELS = ("rbf", "laplacian", "cauchy", "linear", "poly", "linear_spline")
METHODS = ("reference", "map", "nuts")
TASKS = ("regression", "classification")


def _gamma(text: str) -> float | str:
    """A positive finite width, or ``scale`` / ``evidence``."""
    if text in ("scale", "evidence"):
        return text
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a positive number, 'scale' or 'evidence'; got {text[:40]!r}"
        ) from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be a positive finite number; got {text[:40]}")
    return value


def _int_in(low: int, high: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected a whole number, got {text[:40]!r}"
            ) from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be in [{low}, {high}]; got {value}")
        return value

    return parse


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text[:40]!r}") from None
    if not 0.05 <= value <= 0.5:
        raise argparse.ArgumentTypeError(f"must be in [0.05, 0.5]; got {text[:40]}")
    return value


def _model_options(p: argparse.ArgumentParser, *, task_help: str) -> None:
    p.add_argument(
        "data",
        metavar="DATA.csv",
        help="CSV table with a header row; every column but the target is a feature",
    )
    p.add_argument("--target", required=True, metavar="COL", help="name of the target column")
    p.add_argument("--task", choices=TASKS, default=None, help=task_help)
    p.add_argument("--kernel", choices=KERNELS, default="rbf", help="kernel (default rbf)")
    p.add_argument(
        "--gamma",
        type=_gamma,
        default="evidence",
        metavar="G|scale|evidence",
        help="kernel width: a number, 'scale' (1 / (n_features * var X)) or 'evidence' "
        "(the width of largest evidence on a grid around 'scale', by the reference solver; "
        "the default)",
    )
    p.add_argument(
        "--no-standardise",
        dest="standardise",
        action="store_false",
        help="use the features as they are (default: each is standardised to mean 0, sd 1 "
        "over the training rows, and the means and sds are saved with the model)",
    )
    p.add_argument(
        "--seed",
        type=_int_in(0, 2**32 - 1),
        default=0,
        help="random seed of the draws, NUTS and splits (default 0)",
    )
    p.add_argument(
        "--draws",
        type=_int_in(10, 100_000),
        default=500,
        help="draws per chain kept (and NUTS draws), 2 chains (default 500)",
    )
    p.add_argument(
        "--tune",
        type=_int_in(10, 100_000),
        default=500,
        help="NUTS tuning steps per chain (default 500)",
    )
    p.add_argument(
        "--jobs",
        type=_int_in(1, 256),
        default=1,
        metavar="N",
        help="processes for the independent fits: the widths of --gamma evidence and the "
        "folds of compare (default 1)",
    )


def add_data_commands(sub, hidden_debug: Callable[[argparse.ArgumentParser], None]) -> None:
    """Add ``fit``, ``predict`` and ``compare`` to the subparsers ``sub`` of ``rvm-pymc``."""
    from rvm_pymc.cli._commands import compare_command, fit_command, predict_command

    task_help = (
        "regression or classification (default: classification for text labels or "
        "at most 10 distinct integers, regression otherwise)"
    )
    fit = sub.add_parser(
        "fit",
        help="fit an RVM to a CSV table and save it",
        description="Fit an RVM (RVR or RVC) to a CSV table. Writes into --out: the saved "
        "model (model.nc), its feature names and standardisation (model.json), the "
        "predictions on the training rows (predictions.csv), a summary (summary.txt, "
        "summary.json) and a plot (fit.png). Features are standardised by default.",
    )
    _model_options(fit, task_help=task_help)
    fit.add_argument(
        "--method",
        choices=METHODS,
        default="reference",
        help="reference (closed form, no compilation; default), map "
        "(type-II MAP in PyMC) or nuts (full Bayes; compiles, then samples)",
    )
    fit.add_argument(
        "--out",
        default="rvm_fit",
        metavar="DIR",
        help="output directory, created if missing (default rvm_fit)",
    )
    fit.add_argument("--no-plot", action="store_true", help="do not write fit.png")
    hidden_debug(fit)
    fit.set_defaults(func=fit_command, check=lambda args: None)

    predict = sub.add_parser(
        "predict",
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
    hidden_debug(predict)
    predict.set_defaults(func=predict_command, check=lambda args: None)

    compare = sub.add_parser(
        "compare",
        help="compare reference, MAP and NUTS on a CSV table",
        description="Fit the RVM by several methods on a training split and compare them "
        "(rvm_pymc.comparison.compare): sparsity, held-out accuracy and log predictive "
        "density, k-fold cross-validation with refitting (every method is refitted on every "
        "fold: NUTS makes this slow), PSIS-LOO and sampler diagnostics. Features are "
        "standardised on the training split.",
    )
    _model_options(compare, task_help=task_help)
    compare.add_argument(
        "--methods",
        nargs="+",
        choices=METHODS,
        default=list(METHODS),
        metavar="METHOD",
        help="methods to compare (default all three)",
    )
    compare.add_argument(
        "--test-size",
        type=_fraction,
        default=0.25,
        help="held-out share of the rows, in [0.05, 0.5] (default 0.25)",
    )
    compare.add_argument(
        "--cv",
        type=_int_in(0, 50),
        default=5,
        help="folds of the cross-validation; 0 skips it (default 5)",
    )
    compare.add_argument(
        "--out",
        default=None,
        metavar="FILE",
        help="also write the full table (every column) as CSV",
    )
    hidden_debug(compare)
    compare.set_defaults(func=compare_command, check=lambda args: None)
