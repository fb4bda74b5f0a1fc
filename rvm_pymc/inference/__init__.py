"""Fitting the PyMC RVM models: type-II MAP, NUTS, and the collapsed sampler.

All return the result schema of :mod:`rvm_pymc.results`; a MAP fit as exact draws of
the weights from their Gaussian posterior at the optimal hyperparameters (point values in
``constant_data``).  Type-II MAP maximises the density of the *log* precisions (Jacobian
included, docs/design.md section 1), not what ``pm.find_MAP`` maximises.  The collapsed
sampler runs NUTS over the hyperparameters with the weights integrated out, then draws the
weights once per draw.  NUTS defaults: :mod:`rvm_pymc.inference.defaults`; convergence
standard: :mod:`rvm_pymc._core.convergence`.

References
----------
Tipping, M. E. (2001). Sparse Bayesian learning and the relevance vector
machine. *Journal of Machine Learning Research* 1, 211-244.

Hoffman, M. D. and Gelman, A. (2014). The No-U-Turn sampler. *Journal of
Machine Learning Research* 15, 1593-1623.
"""

from rvm_pymc._core.lazy import attach

__all__ = [
    "NEAR_IMPROPER",
    "SAMPLERS",
    "NutsResult",
    "fit_map",
    "map_datatree",
    "nuts_posterior",
    "optimise_map",
    "sample_collapsed",
    "sample_nuts",
]

__getattr__, __dir__ = attach(
    __name__,
    {
        **dict.fromkeys(__all__, "._fits"),
        **dict.fromkeys(("NEAR_IMPROPER", "SAMPLERS", "NutsResult"), "._nuts"),
        # the estimators' entry and options (read before PyMC is imported)
        **dict.fromkeys(("fit_backend", "fit_width_backend"), "._backend"),
        "check_sampler_kwargs": "._options",
        "DEFAULT_PARAMETRIZATION": ".defaults",
    },
)
