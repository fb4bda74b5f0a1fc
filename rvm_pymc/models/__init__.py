"""PyMC model builders for the relevance vector machine (docs/design.md section 1).

Every builder is a pure function: it validates its input, puts the data in
``pm.Data`` containers and returns a fresh :class:`RVMModel` (a
:class:`pymc.Model` that prints its variables and priors); nothing is
compiled or sampled on construction.  Fitting lives in
:mod:`rvm_pymc.inference`.

The free hyperparameters are the *log* precisions.  Their prior is the Gamma
prior of the precision written as a density of its logarithm (Jacobian
included),

.. math::

    p(\\log\\alpha_m) \\propto \\alpha_m^{a} e^{-b\\alpha_m}, \\qquad
    p(\\log\\beta) \\propto \\beta^{c} e^{-d\\beta},

so that the model's log density is the log-coordinate objective ``J`` of
docs/design.md: its mode is the fixed point of Tipping's updates, and ``a = b = 0``
(the ``"evidence"`` preset, an improper flat prior on ``log alpha``) is allowed.
Proper priors include the Gamma normalising constants.

Coordinates: ``basis`` (columns of ``Phi``), ``obs`` (rows) and ``class``
(softmax only).  Data containers: ``Phi``, ``t`` (regression) or ``y``
(classification, counts), and ``X``, ``centres`` for the RBF-width model;
the marginal regression model also ``PhiTPhi`` and, when it evaluates its
likelihood through a low-rank factor of it, ``PhiTPhi_factor``.
Counts (:func:`counts_poisson`) have the observed variable ``counts_obs``.

References
----------
Tipping, M. E. (2001). Sparse Bayesian learning and the relevance vector
machine. *Journal of Machine Learning Research* 1, 211-244.

Tipping, M. E. and Faul, A. C. (2003). Fast marginal likelihood maximisation
for sparse Bayesian models. *Proceedings of AISTATS 2003*.
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
    "classification_softmax",
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
        # each name from the module that defines it (PARAMETRIZATIONS without PyMC)
        "PARAMETRIZATIONS": "._checks",
        "classification_binary": "._glm_builders",
        "classification_softmax": "._glm_builders",
        "counts_poisson": "._glm_builders",
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
