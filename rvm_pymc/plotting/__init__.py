"""Matplotlib plots of RVM fits: the evidence approximation next to full Bayes.

Every plot takes one fitted :class:`~rvm_pymc.estimators.RVR` /
:class:`~rvm_pymc.estimators.RVC` of any ``method``, or a mapping ``name -> fit`` overlaid
one colour per fit, draws on the given ``ax`` (or a new figure) and returns it.

- :func:`plot_predictive_1d`: predictive mean and bands, relevance vectors (1-D inputs);
- :func:`plot_regression_1d`: the same for one fit, from arrays (mean, sd);
- :func:`plot_log_alpha`: log alpha per basis, NUTS intervals against type-II points;
- :func:`plot_weights_forest`: a forest of the relevant weights (intervals by ArviZ);
- :func:`plot_solver_trace`: log evidence and relevance vectors per solver iteration;
- :func:`plot_evidence_vs_cv`: evidence and CV score over kernel widths;
- :func:`plot_class_probability_2d`: class-probability contours (2-D inputs);
- :func:`plot_reliability`: reliability diagram of classifiers, with counts and binomial bands;
- :func:`plot_trace`: ArviZ's trace plot of the scalars and the most relevant bases
  (:func:`trace_selection`);
- :func:`diagnostic_tree`: that selection as a DataTree for any ArviZ call
  (``az.plot_trace``, ``az.plot_rank``, ``az.summary``).

Relevance counts are the comparison table's (``rvm_pymc.comparison.n_relevant``).
"""

from rvm_pymc.plotting._evidence import plot_evidence_vs_cv, plot_solver_trace
from rvm_pymc.plotting._predictive import (
    plot_class_probability_2d,
    plot_predictive_1d,
    plot_regression_1d,
    plot_reliability,
)
from rvm_pymc.plotting._trace import diagnostic_tree, plot_trace, trace_selection
from rvm_pymc.plotting._weights import plot_log_alpha, plot_weights_forest

__all__ = [
    "diagnostic_tree",
    "plot_class_probability_2d",
    "plot_evidence_vs_cv",
    "plot_log_alpha",
    "plot_predictive_1d",
    "plot_regression_1d",
    "plot_reliability",
    "plot_solver_trace",
    "plot_trace",
    "plot_weights_forest",
    "trace_selection",
]
