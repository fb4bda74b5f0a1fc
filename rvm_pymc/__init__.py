"""rvm_pymc: Relevance Vector Machines as first-class citizens of the Bayesian workflow.

The closed-form reference solver lives in :mod:`rvm_pymc.reference` and does not
import PyMC; the PyMC models and fits are imported lazily.
"""

from rvm_pymc.exceptions import ConvergenceWarning, PriorWarning, SamplingWarning
from rvm_pymc.priors import PRESETS, HyperPrior, resolve_prior

__version__ = "0.1.0.dev0"

__all__ = [
    "PRESETS",
    "ConvergenceWarning",
    "HyperPrior",
    "PriorWarning",
    "SamplingWarning",
    "__version__",
    "resolve_prior",
]
