"""Full Bayes next to the evidence approximation: one table, the same yardsticks for every fit.

:func:`fit_all` fits one model by several methods on the same data; :func:`compare`
scores the fits side by side (sparsity, held-out scores, k-fold cross-validation with
refitting, PSIS-LOO, diagnostics, paired differences to a baseline);
:func:`compare_weights` lines up the weights basis by basis; :func:`summary` is
``arviz.summary`` with the RVM's own lines; :func:`arviz_trees` and :func:`loo_compare`
prepare the fits for ArviZ.  PSIS-LOO of a type-II fit is optimistic (it keeps the
hyperparameters fitted on every point); k-fold refits everything.
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

FitSet.__module__ = __name__  # pickles and the docs name the public module
