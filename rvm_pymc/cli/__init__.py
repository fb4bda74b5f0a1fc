"""The ``rvm-pymc`` command line (``docs/cli.md``).

- ``rvm-pymc demo``: noisy sinc fitted by the reference solver, MAP and NUTS,
  compared (:func:`rvm_pymc.comparison.compare`) and plotted.
- ``rvm-pymc fit DATA.csv --target COL``: one RVM fitted to a CSV table; writes
  the saved model, predictions, a summary and a plot to ``--out``.
- ``rvm-pymc predict MODEL DATA.csv``: predictions of a saved fit.
- ``rvm-pymc compare DATA.csv --target COL``: the methods side by side.

Every argument is checked before the fit starts.  Errors are one line on
standard error, ``rvm-pymc: error: ...`` (``--debug`` adds the traceback); the
exit status is 0 for success, 1 for a failed run, 2 for bad usage or data, 130
for Ctrl-C.
"""

from rvm_pymc._core.validation import MEMORY_FRACTION
from rvm_pymc.cli._demo import check_demo_arguments
from rvm_pymc.cli._main import main
from rvm_pymc.cli._parser import build_parser
from rvm_pymc.cli._types import GAMMA_RANGE, MAX_NOISE_SD, MAX_SEED, MIN_N_TRAIN

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
