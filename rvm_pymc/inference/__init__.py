"""Fitting the PyMC RVM models: type-II MAP, NUTS, and the collapsed sampler.

All three return the one result schema of :mod:`rvm_pymc.results`
(``posterior``, ``posterior_predictive``, ``log_likelihood``,
``sample_stats``, ``observed_data``, ``constant_data``).  A MAP fit is
represented by draws of the weights from their Gaussian posterior at the
optimal hyperparameters, which are point values in ``constant_data``, not
draws, so ArviZ summaries and plots work on every fit alike.

Type-II MAP maximises the model's log density over the *log* precisions
(Jacobian included, docs/design.md section 1), with the weights integrated out:
exactly for regression (:func:`rvm_pymc.models.regression_marginal`) and by
the Laplace approximation for classification (see :mod:`rvm_pymc.inference._laplace`).
That is not what ``pm.find_MAP`` maximises on a model with ``alpha ~ Gamma``:
``find_MAP`` drops the Jacobian, whose mode ``alpha = (gamma + 2(a-1))/(mu^2 + 2b)``
is unbounded for ``a < 1/2``.

Compilation dominates the cost of small fits.  ``compile_kwargs`` is passed
to PyTensor; it applies to PyMC's own NUTS and to the MAP, not to nutpie or
numpyro.  ``{"mode": "FAST_COMPILE"}`` compiles in about a second and
evaluates a few times slower than the Numba backend, whose cold compile took
1.5-3 minutes here (warm: a few seconds).  A MAP needs only hundreds of
evaluations, so :func:`fit_map` compiles in FAST_COMPILE mode unless told
otherwise; the samplers keep PyMC's default (Numba), which pays off over the
tens of thousands of gradient evaluations of NUTS.

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
        "NEAR_IMPROPER": "._nuts",
        "SAMPLERS": "._nuts",
        "NutsResult": "._nuts",
        # the estimators' entry (not part of the documented API) and its options,
        # which the parameter checks read before PyMC is imported
        "fit_backend": "._backend",
        "check_sampler_kwargs": "._options",
        "DEFAULT_PARAMETRIZATION": "._options",
    },
)
