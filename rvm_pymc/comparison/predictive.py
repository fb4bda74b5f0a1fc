"""Pointwise predictive densities of a fitted estimator.

Defined in :mod:`rvm_pymc._core.predictive`.
"""

from rvm_pymc._core.predictive import Predictive, predictive

__all__ = ["Predictive", "predictive"]
