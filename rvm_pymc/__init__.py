"""rvm_pymc: Relevance Vector Machines as first-class citizens of the Bayesian workflow.

The closed-form reference solver lives in :mod:`rvm_pymc.reference` and does not
import PyMC; the PyMC models and fits are imported lazily.
"""

from rvm_pymc._core.lazy import attach
from rvm_pymc._core.version import VERSION
from rvm_pymc.exceptions import (
    ConvergenceWarning,
    InterpolationWarning,
    PriorWarning,
    SamplingWarning,
)
from rvm_pymc.priors import PRESETS, HyperPrior, resolve_prior

__version__ = VERSION

__all__ = [
    "PRESETS",
    "RVC",
    "RVP",
    "RVR",
    "ConvergenceWarning",
    "HyperPrior",
    "InterpolationWarning",
    "PriorWarning",
    "SamplingWarning",
    "__version__",
    "compare",
    "compare_weights",
    "fit_all",
    "resolve_prior",
    "summary",
]

__getattr__, __dir__ = attach(
    __name__,
    {
        "RVR": "rvm_pymc.estimators",
        "RVC": "rvm_pymc.estimators",
        "RVP": "rvm_pymc.estimators",
        "compare": "rvm_pymc.comparison",
        "compare_weights": "rvm_pymc.comparison",
        "fit_all": "rvm_pymc.comparison",
        "summary": "rvm_pymc.comparison",
    },
)
