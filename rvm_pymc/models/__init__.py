"""PyMC model builders for the relevance vector machine (docs/design.md section 1).

Every builder validates its input, puts the data in ``pm.Data`` containers and returns a
fresh :class:`RVMModel`.  The free hyperparameters are the *log* precisions, under the
Gamma prior of the precision written as a density of its logarithm (Jacobian included),

.. math::

    p(\\log\\alpha_m) \\propto \\alpha_m^{a} e^{-b\\alpha_m}, \\qquad
    p(\\log\\beta) \\propto \\beta^{c} e^{-d\\beta},

so that the model's log density is the objective ``J`` of docs/design.md (``a = b = 0``,
the ``"evidence"`` preset, is a flat prior).  Coordinates: ``basis``, ``obs`` and
(softmax) ``class``; data containers: ``docs/pymc.md``.

References
----------
Tipping, M. E. (2001). Sparse Bayesian learning and the relevance vector
machine. *Journal of Machine Learning Research* 1, 211-244.
"""

from rvm_pymc._core.lazy import attach

__all__ = [
    "GRAM_RTOL",
    "LOW_RANK_FRACTION",
    "PARAMETRIZATIONS",
    "ModelSpec",
    "RVMModel",
    "builder_made",
    "classification_binary",
    "classification_rbf",
    "classification_softmax",
    "counts_negative_binomial",
    "counts_poisson",
    "data_unit_constants",
    "data_unit_model",
    "gram_factor",
    "log_gamma_normaliser",
    "marginal_logp",
    "marginal_logp_fast",
    "marginal_logp_low_rank",
    "model_constants",
    "model_spec",
    "rbf_design",
    "regression_joint",
    "regression_marginal",
    "regression_marginal_rbf",
]

_HOMES = {
    "._glm_builders": (
        "classification_binary",
        "classification_softmax",
        "counts_poisson",
        "counts_negative_binomial",
    ),
    "._likelihoods": ("marginal_logp", "marginal_logp_fast"),
    "._marginal_low_rank": (
        "GRAM_RTOL",
        "LOW_RANK_FRACTION",
        "gram_factor",
        "marginal_logp_low_rank",
    ),
    ".spec": ("ModelSpec", "data_unit_constants", "model_constants", "model_spec"),
    "._checks": ("PARAMETRIZATIONS",),
    "._data_units": ("data_unit_model",),
    "._priors": ("log_gamma_normaliser",),
}

__getattr__, __dir__ = attach(
    __name__,
    {**dict.fromkeys(__all__, "._builders"), **{n: m for m, ns in _HOMES.items() for n in ns}},
)
