"""PyMC model builders for the relevance vector machine (docs/design.md section 1).

Every builder validates its input, puts the data in ``pm.Data`` containers and
returns a fresh :class:`RVMModel`; fitting lives in :mod:`rvm_pymc.inference`.

The free hyperparameters are the *log* precisions.  Their prior is the Gamma
prior of the precision written as a density of its logarithm (Jacobian
included),

.. math::

    p(\\log\\alpha_m) \\propto \\alpha_m^{a} e^{-b\\alpha_m}, \\qquad
    p(\\log\\beta) \\propto \\beta^{c} e^{-d\\beta},

so that the model's log density is the log-coordinate objective ``J`` of
docs/design.md (``a = b = 0``, the ``"evidence"`` preset, is a flat prior).

Coordinates: ``basis``, ``obs`` and (softmax) ``class``; the data containers
are listed in ``docs/pymc.md``.

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

__getattr__, __dir__ = attach(
    __name__,
    {
        **dict.fromkeys(__all__, "._builders"),
        "PARAMETRIZATIONS": "._checks",
        "classification_binary": "._glm_builders",
        "classification_softmax": "._glm_builders",
        "counts_poisson": "._glm_builders",
        "counts_negative_binomial": "._glm_builders",
        "marginal_logp": "._likelihoods",
        "marginal_logp_fast": "._likelihoods",
        "GRAM_RTOL": "._marginal_low_rank",
        "LOW_RANK_FRACTION": "._marginal_low_rank",
        "gram_factor": "._marginal_low_rank",
        "marginal_logp_low_rank": "._marginal_low_rank",
        "ModelSpec": ".spec",
        "data_unit_model": "._data_units",
        "data_unit_constants": ".spec",
        "model_constants": ".spec",
        "log_gamma_normaliser": "._priors",
        "model_spec": ".spec",
    },
)
