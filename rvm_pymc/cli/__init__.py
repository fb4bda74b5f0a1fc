"""The ``rvm-pymc`` command line (``docs/cli.md``).

- ``rvm-pymc demo``: noisy sinc fitted by the reference solver, MAP and NUTS,
  compared (:func:`rvm_pymc.comparison.compare`) and plotted.
- ``rvm-pymc fit DATA.csv --target COL``: one RVM fitted to a CSV table; writes
  the saved model, predictions, a summary and a plot to ``--out``.
- ``rvm-pymc predict MODEL DATA.csv``: predictions of a saved fit.
- ``rvm-pymc compare DATA.csv --target COL``: the methods side by side.

Errors are one line on standard error (``--debug`` adds the traceback); the exit status is
0 for success, 1 for a failed run, 2 for bad usage or data, 130 for Ctrl-C.
"""

from rvm_pymc._core.lazy import attach
from rvm_pymc._core.validation import MEMORY_FRACTION
from rvm_pymc.cli._main import GAMMA_RANGE, MAX_NOISE_SD, MAX_SEED, MIN_N_TRAIN, build_parser, main

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

# the commands import pandas and the comparison: not on ``import rvm_pymc.cli``
__getattr__, __dir__ = attach(__name__, {"check_demo_arguments": "rvm_pymc.cli._commands"})
