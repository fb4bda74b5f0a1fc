"""The ``rvm-pymc`` command line.

- ``rvm-pymc demo``: noisy sinc fitted by the reference solver, MAP and NUTS
  (:func:`rvm_pymc.comparison.fit_all`, each an RVR with ``gamma="evidence"``);
  prints the comparison table of :func:`rvm_pymc.comparison.compare` and
  writes a PNG of the three predictive bands.
- ``rvm-pymc fit DATA.csv --target COL``: one RVM fitted to a CSV table;
  writes the saved model, the predictions (the rows as read, with the
  prediction beside them), a summary and a plot to ``--out``.
- ``rvm-pymc predict MODEL DATA.csv``: predictions of a saved fit (predictive
  sd, or class probabilities).
- ``rvm-pymc compare DATA.csv --target COL``: the methods side by side on a
  held-out split and by k-fold cross-validation.

The features are every column but the target (``--features`` names them,
``--drop`` leaves some out); row indices are left out with a note each,
wherever they are: ``Unnamed: N`` (an empty header, as pandas writes its
index), ``rownames`` (as R data sets have it), and a column named like an
index (``id``, ``X``, ...) that holds the row numbers.  Feature columns that
are not a number in every row are refused, all named at once with why
(``--numeric-only`` leaves them out instead, with a note; ``--one-hot``
encodes text columns of at most 20 values as 0/1 columns, whose levels
``predict`` applies to new rows); a classification
target with more classes than a fifth of its rows is refused unless
``--force-classes`` is given; a misspelled column is answered with the
closest names and every column.  Messages give the line of the file, as an
editor counts it, and warnings name the command line's flags (``--gamma``,
``--gamma-grid``), not the estimator's arguments.
Features are standardised by default (each to mean 0 and sd 1 over the
training rows; ``--no-standardise`` turns it off); ``fit`` saves the means and
sds beside the model (``model.json``) and ``predict`` applies them.

Errors are one line on standard error, ``rvm-pymc: error: ...``, and the exit
status says what went wrong:

=====  ==================================================================
0      success (also ``--help`` and ``--version``)
1      the run failed: the fit raised or gave non-finite numbers, or the
       figure could not be written
2      bad usage: an unknown option, a value out of range, an output path
       that cannot be written, a problem too large for the memory, a data
       file that is missing, empty or lacks a column, non-numeric features,
       a target with values its task cannot take (text in a regression
       target, a few text values in a numeric one, a missing value, more
       classes than a fifth of the rows), or no command at all (then the
       help is printed to standard error)
130    interrupted (Ctrl-C)
=====  ==================================================================

Every argument, output paths included, is checked before the fit starts.  ``--debug`` adds the
Python traceback of a failed run.

One default differs from the estimators': the features are standardised.  The
width is the estimators' ``--gamma auto``: cross-validated (``cv``) up to 2000 rows,
``scale`` above.  NUTS shows a live bar when standard error is a terminal and plain
progress lines otherwise (every 10% of each chain, then one line with the
time, max R-hat and divergences); standard output holds the results only.
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
