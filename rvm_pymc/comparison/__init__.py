"""Full Bayes next to the evidence approximation: one table, the same yardsticks for every fit.

:func:`fit_all` fits one model by several methods on the same data;
:func:`compare` scores fitted RVR/RVC estimators side by side: sparsity,
held-out accuracy and calibration, k-fold cross-validation with refitting
(the default yardstick), PSIS-LOO beside it, and the sampler diagnostics;
:func:`compare_weights` lines up the weights and precisions basis by basis;
:func:`summary` is ``arviz.summary`` with the RVM's own lines and warnings.
Every fit other than a baseline is compared with it point by point
(:func:`paired_difference`, the convention of ``arviz.compare``);
:func:`arviz_trees` gives the fits' DataTrees one number of chains and draws
for ArviZ's multi-model plots, and :func:`loo_compare` refuses to rank a
type-II fit against a sampled one by PSIS-LOO.

Why k-fold with refitting and not LOO: a type-II fit (reference, map) holds
its hyperparameters at values fitted on all the data, so PSIS-LOO of its
weight posterior leaves each point out of the weights but not of the
hyperparameters, and is optimistic (by about 0.15 nats per point on the
diabetes data).  K-fold refits everything, hyperparameters and kernel width
included, on every training fold.  ``elpd_loo`` is reported beside it, with
the column ``loo_optimistic`` True for the type-II fits.
"""

from rvm_pymc.comparison._arviz import arviz_trees, is_type_ii_tree, loo_compare
from rvm_pymc.comparison._compare import FitSet, compare, fit_all
from rvm_pymc.comparison._measures import (
    effective_parameters,
    log_evidence,
    log_hyperprior,
    n_relevant,
    rank_bases,
    relevant_bases,
    same_basis,
)
from rvm_pymc.comparison._paired import paired_difference
from rvm_pymc.comparison._weights import compare_weights, summary

__all__ = [
    "FitSet",
    "arviz_trees",
    "compare",
    "compare_weights",
    "effective_parameters",
    "fit_all",
    "is_type_ii_tree",
    "log_evidence",
    "log_hyperprior",
    "loo_compare",
    "n_relevant",
    "paired_difference",
    "rank_bases",
    "relevant_bases",
    "same_basis",
    "summary",
]

# pickles and the documentation name the public module, not the private one that defines them
FitSet.__module__ = __name__
