r"""scikit-learn estimators: relevance vector regression (RVR), classification (RVC), counts (RVP).

All three fit the one RVM model of docs/design.md three ways, chosen by ``method``:

``"reference"``
    The solver of :mod:`rvm_pymc.reference` (NumPy/SciPy only): type-II maximum
    likelihood of the precisions (Tipping & Faul 2003 with ``solver="fast"``, or
    MacKay / EM re-estimation), then the Gaussian (Laplace, for classification)
    posterior of the weights.
``"map"``
    Type-II MAP of the log precisions in PyMC (the same optimum as
    ``"reference"`` under the same prior), then the same Gaussian posterior.
``"nuts"``
    Full Bayes by NUTS in PyMC; predictions from the posterior draws.

Every method holds one posterior, ``posterior_`` (a
:class:`~rvm_pymc.results.WeightPosterior`); ``coef_``, ``sigma_``, ``alpha_``, ... are
read from it and ``idata_`` is its DataTree.  Column 0 of the design matrix is the bias,
column ``i + 1`` the kernel centred on training point ``i``.
"""

from rvm_pymc.estimators._classes import METHODS, RVC, RVP, RVR, SOLVERS
from rvm_pymc.estimators._io import load
from rvm_pymc.estimators._width_selection import SEARCHED as WIDTH_SEARCHES

__all__ = ["METHODS", "RVC", "RVP", "RVR", "SOLVERS", "WIDTH_SEARCHES", "load"]

# pickles and the documentation name the public module, not the private one that defines them
RVR.__module__ = __name__
RVC.__module__ = __name__
RVP.__module__ = __name__
