"""Fitting the PyMC RVM models: type-II MAP, NUTS, and the collapsed sampler.

All return the one result schema of :mod:`rvm_pymc.results`.  A MAP fit is
represented by exact draws of the weights from their Gaussian posterior at the
optimal hyperparameters (point values in ``constant_data``), so ArviZ
summaries and plots work on every fit alike.  Type-II MAP maximises the
density of the *log* precisions (Jacobian included, docs/design.md section 1),
not what ``pm.find_MAP`` maximises.  The collapsed sampler runs NUTS over the
hyperparameters with the weights integrated out (exactly, for regression),
then draws the weights once per draw.  ``compile_kwargs`` is passed to PyTensor (PyMC's NUTS
and the MAP; :func:`fit_map` compiles in FAST_COMPILE mode unless told
otherwise).  The NUTS defaults are :mod:`rvm_pymc.inference.defaults`; the
convergence standard is :mod:`rvm_pymc._core.convergence`.

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

_getattr, __dir__ = attach(
    __name__,
    {
        **dict.fromkeys(__all__, "._fits"),
        "NEAR_IMPROPER": "._nuts",
        "SAMPLERS": "._nuts",
        "NutsResult": "._nuts",
        # the estimators' entry (not part of the documented API) and its options,
        # which the parameter checks read before PyMC is imported
        "fit_backend": "._backend",
        "fit_width_backend": "._backend",
        "check_sampler_kwargs": "._options",
        "DEFAULT_PARAMETRIZATION": ".defaults",
    },
)

_REMOVED = {
    "sample_laplace_collapsed": (
        "sample_laplace_collapsed was removed: no estimator, CLI command or "
        "compare row reached it. Sample a classifier with RVC(method='nuts') or "
        "rvm_pymc.inference.sample_nuts"
    )
}


def __getattr__(name: str) -> object:
    if name in _REMOVED:
        raise AttributeError(_REMOVED[name])
    return _getattr(name)
