"""Synthetic benchmark data sets of the RVM literature (NumPy only, no downloads).

Every generator draws from a :class:`numpy.random.Generator` built by
:func:`check_random_state` and returns a :class:`Dataset`, which unpacks as
``X_train, t_train, X_test, t_test``::

    X, t, Xt, tt = make_sinc(random_state=0)

Regression test targets are noise-free, as in Tipping (2001); classification
test labels are class draws (they carry the Bayes error, as in Ripley 1996).

References
----------
.. [1] Tipping, M. E. (2001). Sparse Bayesian learning and the relevance vector
   machine. *Journal of Machine Learning Research*, 1, 211-244.
.. [2] Friedman, J. H. (1991). Multivariate adaptive regression splines.
   *The Annals of Statistics*, 19(1), 1-67.
.. [3] Ripley, B. D. (1996). *Pattern Recognition and Neural Networks*.
   Cambridge University Press.
"""

from rvm_pymc.datasets._base import Dataset, check_random_state
from rvm_pymc.datasets._classification import (
    RIPLEY_COVARIANCE,
    RIPLEY_MEANS,
    make_gaussian_mixture_classes,
    make_ripley,
)
from rvm_pymc.datasets._regression import (
    FRIEDMAN_AUTO_NOISE_SEED,
    FRIEDMAN_AUTO_NOISE_SIZE,
    make_friedman1,
    make_friedman2,
    make_friedman3,
    make_sinc,
    sinc,
)

__all__ = [
    "FRIEDMAN_AUTO_NOISE_SEED",
    "FRIEDMAN_AUTO_NOISE_SIZE",
    "RIPLEY_COVARIANCE",
    "RIPLEY_MEANS",
    "Dataset",
    "check_random_state",
    "make_friedman1",
    "make_friedman2",
    "make_friedman3",
    "make_gaussian_mixture_classes",
    "make_ripley",
    "make_sinc",
    "sinc",
]
