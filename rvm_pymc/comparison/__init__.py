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

K-fold refits everything, hyperparameters and width included, on every fold;
PSIS-LOO of a type-II fit leaves a point out of the weights only, so it is
optimistic (``loo_optimistic``; ``docs/comparison.md``).
"""

from rvm_pymc.comparison._arviz import arviz_trees, is_type_ii_tree, loo_compare
from rvm_pymc.comparison._compare import FitSet, compare, fit_all, paired_difference
from rvm_pymc.comparison._measures import (
    effective_parameters,
    log_evidence,
    log_hyperprior,
    n_relevant,
    rank_bases,
    relevant_bases,
    same_basis,
)
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
