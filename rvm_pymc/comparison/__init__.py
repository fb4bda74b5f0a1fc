"""Full Bayes next to the evidence approximation: one table, the same yardsticks for every fit.

:func:`fit_all` fits one model by several methods on the same data;
:func:`compare` scores fitted RVR/RVC estimators side by side: sparsity,
held-out accuracy and calibration, k-fold cross-validation with refitting
(the default yardstick), PSIS-LOO beside it, and the sampler diagnostics;
:func:`compare_weights` lines up the weights and precisions basis by basis;
:func:`summary` is ``arviz.summary`` with the RVM's own lines and warnings.

Why k-fold with refitting and not LOO: a type-II fit (reference, map) holds
its hyperparameters at values fitted on all the data, so PSIS-LOO of its
weight posterior leaves each point out of the weights but not of the
hyperparameters, and is optimistic (by about 0.15 nats per point on the
diabetes data).  K-fold refits everything, hyperparameters and kernel width
included, on every training fold.  ``elpd_loo`` is reported beside it, with
the column ``loo_optimistic`` True for the type-II fits.
"""

from rvm_pymc.comparison._compare import FitSet, compare, fit_all
from rvm_pymc.comparison._measures import effective_parameters, relevant_bases
from rvm_pymc.comparison._weights import compare_weights, summary

__all__ = [
    "FitSet",
    "compare",
    "compare_weights",
    "effective_parameters",
    "fit_all",
    "relevant_bases",
    "summary",
]

# pickles and the documentation name the public module, not the private one that defines them
FitSet.__module__ = __name__
