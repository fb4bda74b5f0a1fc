r"""scikit-learn estimators: relevance vector regression (RVR), classification (RVC), counts (RVP).

All three fit the one RVM model of docs/design.md three ways, chosen by ``method``:

``"reference"``
    The closed-form solver of :mod:`rvm_pymc.reference` (NumPy/SciPy only):
    type-II maximum likelihood of the precisions (Tipping & Faul 2003 with
    ``solver="fast"``, or full MacKay / EM re-estimation), then the Gaussian
    (Laplace, for classification) posterior of the weights.
``"map"``
    Type-II MAP of the log precisions in PyMC (same objective, so the same
    optimum as ``"reference"`` with the same prior), then the same Gaussian
    posterior of the weights.
``"nuts"``
    Full Bayes by NUTS in PyMC; predictions from the posterior draws.

Every method sees the same scaled problem (the one scaling boundary): the
basis columns divided by their root mean square and, for regression, the
targets centred and divided by their sd (with ``bias=False``, a model without
a constant term, only divided by their root mean square); the posterior is mapped back to the
units of the data once, so predictions are equivariant to shifting and scaling
the targets.  Whatever the method, the estimator holds one posterior,
``posterior_`` (a :class:`~rvm_pymc.results.WeightPosterior`); ``coef_``,
``sigma_``, ``alpha_``, ... are read from it, and ``idata_`` is the DataTree of
the result schema of :mod:`rvm_pymc.results`, built from it on first access.

The kernel design matrix is ``Phi = [1 | k(X, X_train)]``: column 0 is the
bias (when ``bias=True``), column ``i + 1`` the kernel centred on training
point ``i``.  The bias is not a training point: ``relevance_indices_`` lists
only the training points whose kernel column survived, and
``bias_active_`` tells whether the bias did; ``intercept_`` is the constant
term of the latent mean (its weight plus, for regression, ``y_offset_``).

References
----------
Tipping, M. E. (2001). Sparse Bayesian learning and the relevance vector
machine. *Journal of Machine Learning Research* 1, 211-244.

Tipping, M. E. and Faul, A. C. (2003). Fast marginal likelihood maximisation
for sparse Bayesian models. *Proceedings of AISTATS 2003*.
"""

from rvm_pymc.estimators._classes import (
    METHODS,
    RVC,
    RVR,
    SOLVERS,
)
from rvm_pymc.estimators._counts import RVP
from rvm_pymc.estimators._load import load

__all__ = ["METHODS", "RVC", "RVP", "RVR", "SOLVERS", "load"]

# pickles and the documentation name the public module, not the private one that defines them
RVR.__module__ = __name__
RVC.__module__ = __name__
RVP.__module__ = __name__
