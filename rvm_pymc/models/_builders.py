"""The PyMC model builders (see :mod:`rvm_pymc.models`)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from pytensor.graph.basic import Variable

from rvm_pymc._core.rbf_width import rbf_columns, sq_distances
from rvm_pymc._core.validation import as_2d_float, as_target_float, check_consistent_length
from rvm_pymc.models._checks import (
    LIKELIHOODS,
    basis_coords,
    check_design,
    check_labels,
    check_one_of,
    check_parametrization,
)
from rvm_pymc.models._likelihoods import bernoulli_logit, categorical_logit, marginal_likelihood
from rvm_pymc.models._marginal_low_rank import (
    GRAM_FACTOR_DATA,
    LOW_RANK_FRACTION,
    gram_factor,
    marginal_likelihood_low_rank,
)
from rvm_pymc.models._priors import _ard_precisions, _noise_precision, _weights
from rvm_pymc.models._raveled import shape_free_logp_dlogp
from rvm_pymc.models.spec import RBF_DISTANCES, RBF_UNIT_RMS, WIDTH_PRIOR_DATA
from rvm_pymc.priors import HyperPrior, resolve_prior


class RVMModel(pm.Model):
    """A :class:`pymc.Model` whose ``print(model)`` lists its variables and priors, and whose
    NUTS log density is compiled once for every number of bases
    (:mod:`rvm_pymc.models._raveled`).  ``model.copy()`` returns a plain ``pymc.Model``.
    """

    def __str__(self) -> str:
        return self.str_repr()

    def _logp_dlogp_function(self, grad_vars, *, tempered=False, ravel_inputs=None, **kwargs):
        if not ravel_inputs:
            return super()._logp_dlogp_function(
                grad_vars, tempered=tempered, ravel_inputs=ravel_inputs, **kwargs
            )
        return shape_free_logp_dlogp(self, grad_vars, tempered=tempered, **kwargs)


_BUILDER_MADE = "_rvm_pymc_builder"


def _builder_made(model: RVMModel) -> RVMModel:
    """Mark ``model`` as made by a builder (its likelihood is the package's)."""
    setattr(model, _BUILDER_MADE, True)
    return model


def builder_made(model) -> bool:
    """Whether a builder of :mod:`rvm_pymc.models` made ``model`` with a likelihood of the
    package's own formulas (any other model is scored from the model itself).

    Parameters
    ----------
    model : pymc.Model

    Returns
    -------
    bool
    """
    return bool(getattr(model, _BUILDER_MADE, False))


def _new_model(Phi, name: str, target, basis_names, **coords):
    """A new RVMModel with the data ``Phi`` (obs, basis) and ``name`` (obs)."""
    coords = {"basis": basis_coords(basis_names, Phi.shape[1]), "obs": np.arange(len(target)),
              **coords}  # fmt: skip
    with RVMModel(coords=coords) as model:
        Phi_d = pm.Data("Phi", Phi, dims=("obs", "basis"))
        target_d = pm.Data(name, target, dims="obs")
    return model, Phi_d, target_d


def _no_slab(hp: HyperPrior, builder: str) -> HyperPrior:
    """``hp``, or ValueError if it has a slab."""
    if hp.slab is not None:
        raise ValueError(
            f"{builder} has no slab (prior slab={hp.slab}): its marginal likelihood "
            "integrates out weights of prior precision alpha. Use regression_joint for a "
            "slab (RVR: sampler_kwargs={'model': 'joint'})"
        )
    return hp


def regression_joint(
    Phi,
    t,
    *,
    prior=None,
    parametrization: str = "centred",
    basis_names: Sequence | None = None,
    likelihood: str = "normal",
) -> pm.Model:
    """RVM regression with explicit weights (for full NUTS).

    ``log alpha_m``, ``log beta`` with the log-Gamma priors of the module
    docstring; ``w_m ~ N(0, 1/alpha_m)``; ``t ~ N(Phi w, 1/beta)``, or with
    ``likelihood="student_t"`` ``t ~ StudentT(nu, Phi w, beta^-1/2)``.

    Parameters
    ----------
    Phi : array_like of shape (N, M)
        Design matrix (kernel columns and bias, or any basis).
    t : array_like of shape (N,)
        Targets.
    prior : str, mapping or HyperPrior, optional
        Gamma hyperprior (a, b, c, d); default the ``"weakly_informative"`` preset.
        With a ``slab`` the weights' prior precision is ``alpha + 1/slab^2``
        (:func:`rvm_pymc.priors.slab_variance`; data ``slab_scale``).
    parametrization : {"centred", "non_centred"}
        ``"non_centred"`` samples ``w_raw ~ N(0, 1)`` and sets
        ``w = w_raw / sqrt(alpha)`` (a Deterministic).
    basis_names : sequence, optional
        Coordinate values of the ``basis`` dimension (default ``0..M-1``).
    likelihood : {"normal", "student_t"}
        ``"student_t"``: Student-t noise of scale ``beta^-1/2`` and free degrees of
        freedom ``nu ~ Gamma(2, 0.1)`` (Juarez & Steel 2010).  Not
        :func:`~rvm_pymc.models.builder_made`: NUTS scores it by its own likelihood and
        type-II MAP refuses it.

    Returns
    -------
    pymc.Model
        Free variables ``log_alpha`` (basis), ``log_beta``, ``w`` or ``w_raw``
        (basis) (and ``nu``); Deterministics ``alpha``, ``beta`` (and ``w``);
        observed ``t_obs``.

    References
    ----------
    Tipping (2001), JMLR 1:211-244, section 2.  Juarez & Steel (2010), J. Bus. Econ.
    Stat. 28:52-66 (the prior of ``nu``).

    Examples
    --------
    >>> import numpy as np
    >>> Phi = np.column_stack([np.ones(5), np.arange(5.0)])
    >>> model = regression_joint(Phi, np.arange(5.0), prior="weakly_informative")
    >>> sorted(v.name for v in model.free_RVs)
    ['log_alpha', 'log_beta', 'w']
    """
    Phi, t = check_design(Phi, t, "t")
    check_parametrization(parametrization)
    check_one_of("likelihood", likelihood, LIKELIHOODS)
    hp = resolve_prior(prior, default="weakly_informative")
    model, Phi_d, t_d = _new_model(Phi, "t", t, basis_names)
    with model:
        log_alpha = _ard_precisions(hp)
        log_beta = _noise_precision(hp)
        w = _weights("w", log_alpha, parametrization, dims=("basis",), slab=hp.slab)
        mu, sigma = Phi_d @ w, pt.exp(-0.5 * log_beta)
        if likelihood == "normal":
            pm.Normal("t_obs", mu=mu, sigma=sigma, observed=t_d, dims="obs")
            return _builder_made(model)
        nu = pm.Gamma("nu", alpha=2.0, beta=0.1)
        pm.StudentT("t_obs", nu=nu, mu=mu, sigma=sigma, observed=t_d, dims="obs")
    return model  # not builder_made: scored by its own likelihood


def regression_marginal(
    Phi, t, *, prior=None, basis_names: Sequence | None = None, low_rank: bool | None = None
) -> pm.Model:
    """RVM regression with the weights integrated out (type-II MAP, collapsed NUTS).

    ``t ~ N(0, I/beta + Phi A^-1 Phi^T)``, evaluated by :func:`marginal_logp_fast`
    in O(N M^2); given ``(alpha, beta)`` the weights are exactly Gaussian
    (:func:`rvm_pymc.reference.regression_posterior`).

    Parameters
    ----------
    Phi : array_like of shape (N, M)
    t : array_like of shape (N,)
    prior : str, mapping or HyperPrior, optional
        Default the ``"weakly_informative"`` preset.  Use ``"evidence"`` or
        ``"near_improper"`` for Tipping's type-II maximum likelihood.
    basis_names : sequence, optional
        Coordinate values of the ``basis`` dimension.
    low_rank : bool, optional
        Evaluate the likelihood through a low-rank factor of ``Phi^T Phi``
        (:func:`marginal_logp_low_rank`).  Default (None): when the rank of
        :func:`gram_factor` is at most ``LOW_RANK_FRACTION`` of ``M``.

    Returns
    -------
    pymc.Model
        Free variables ``log_alpha`` (basis) and ``log_beta``; observed ``t_obs``.
        Data ``Phi``, ``t`` and ``PhiTPhi`` (set it too after a new ``Phi``), and in the
        low-rank form ``PhiTPhi_factor`` (after a new ``Phi``: build the model again).

    References
    ----------
    Tipping (2001), JMLR 1:211-244; Tipping & Faul (2003), AISTATS.

    Examples
    --------
    >>> import numpy as np
    >>> Phi = np.column_stack([np.ones(5), np.arange(5.0)])
    >>> model = regression_marginal(Phi, np.arange(5.0), prior="evidence")
    >>> [v.name for v in model.free_RVs]
    ['log_alpha', 'log_beta']
    """
    Phi, t = check_design(Phi, t, "t")
    hp = _no_slab(resolve_prior(prior, default="weakly_informative"), "regression_marginal")
    if low_rank not in (None, True, False):
        raise ValueError(f"low_rank must be None, True or False; got {low_rank!r}")
    W = None if low_rank is False else gram_factor(Phi)
    if low_rank is None and W.shape[1] > LOW_RANK_FRACTION * Phi.shape[1]:
        W = None
    model, Phi_d, _ = _new_model(Phi, "t", t, basis_names)
    with model:
        log_alpha = _ard_precisions(hp)
        log_beta = _noise_precision(hp)
        PtP_d = pm.Data("PhiTPhi", Phi.T @ Phi)
        if W is None:
            marginal_likelihood(log_alpha, log_beta, Phi_d, PtP_d)
        else:
            W_d = pm.Data(GRAM_FACTOR_DATA, W)
            marginal_likelihood_low_rank(log_alpha, log_beta, Phi_d, W_d)
    return _builder_made(model)


def rbf_design(X, centres, log_length_scale, *, bias: bool = True):
    """RBF design matrix ``[1 | exp(-|x - c|^2 / (2 l^2))]``, ``l = exp(log_length_scale)``.

    Parameters
    ----------
    X : (N, d) tensor or array
    centres : (K, d) tensor or array
    log_length_scale : scalar tensor or float
    bias : bool
        Prepend a column of ones.

    Returns
    -------
    (N, K + bias) tensor or ndarray
    """
    if not isinstance(X, Variable):
        D = sq_distances(X, centres)
        return rbf_columns(D, log_length_scale, bias=bias, unit_rms=False)
    sq = pt.sum(X**2, axis=1)[:, None] + pt.sum(centres**2, axis=1)[None, :] - 2.0 * X @ centres.T
    return rbf_columns(pt.maximum(sq, 0.0), log_length_scale, bias=bias, unit_rms=False, xp=pt)


def _length_scale_prior(X, length_scale_prior) -> tuple[float, float]:
    """``(mean, sd)`` of the Normal prior of ``log_length_scale``, checked."""
    if length_scale_prior is None:
        d = np.sqrt(sq_distances(X, X))
        med = float(np.median(d[np.triu_indices(len(X), 1)]))
        if not med > 0:
            raise ValueError("X has no two distinct rows; cannot set a length-scale prior")
        length_scale_prior = (float(np.log(med)), 1.0)
    try:
        ls_mu, ls_sd = (float(v) for v in length_scale_prior)
    except (TypeError, ValueError) as exc:
        raise ValueError("length_scale_prior must be a pair (mean, sd) of numbers") from exc
    if not (np.isfinite(ls_mu) and np.isfinite(ls_sd) and ls_sd > 0):
        raise ValueError(
            f"length_scale_prior must be finite with sd > 0; got {length_scale_prior}"
        )
    return ls_mu, ls_sd


def _rbf_width_model(X, target_name, target, centres, bias, length_scale_prior, unit_rms,
                     basis_names=None, **coords):  # fmt: skip
    """A new RVMModel with the data and free ``log_length_scale`` of an RBF-width model; returns
    the model, its design matrix tensor and the target data."""
    C = X if centres is None else as_2d_float(centres, "centres")
    if C.shape[1] != X.shape[1]:
        raise ValueError(f"centres has {C.shape[1]} features but X has {X.shape[1]}")
    ls_mu, ls_sd = _length_scale_prior(X, length_scale_prior)
    names = (["bias"] if bias else []) + [f"x{i}" for i in range(len(C))]
    if basis_names is not None:
        names = basis_coords(basis_names, len(names))
    coords = {"basis": names, "obs": np.arange(len(target)), "feature": np.arange(X.shape[1]),
              "centre": np.arange(len(C)), **coords}  # fmt: skip
    with RVMModel(coords=coords) as model:
        pm.Data("X", X, dims=("obs", "feature"))
        pm.Data("centres", C, dims=("centre", "feature"))
        D_d = pm.Data(RBF_DISTANCES, sq_distances(X, C), dims=("obs", "centre"))
        if unit_rms:
            pm.Data(RBF_UNIT_RMS, 1.0)
        target_d = pm.Data(target_name, target, dims="obs")
        mu_d = pm.Data(WIDTH_PRIOR_DATA[0], ls_mu)
        sd_d = pm.Data(WIDTH_PRIOR_DATA[1], ls_sd)
        log_ls = pm.Normal("log_length_scale", mu=mu_d, sigma=sd_d)
        pm.Deterministic("length_scale", pt.exp(log_ls))
        Phi = rbf_columns(D_d, log_ls, bias=bias, unit_rms=unit_rms, xp=pt)
    return model, Phi, target_d


def regression_marginal_rbf(
    X,
    t,
    *,
    centres=None,
    bias: bool = True,
    length_scale_prior: tuple[float, float] | None = None,
    prior=None,
    unit_rms: bool = False,
    basis_names: Sequence | None = None,
) -> pm.Model:
    """Marginal RVM regression whose RBF length scale is an unknown.

    The design matrix is ``[1 | exp(-D / (2 l^2))]`` of the squared distances ``D`` of
    ``X`` to ``centres`` (data ``sqdist``) with ``log l = log_length_scale ~ N(m, s)``
    (the kernel's ``gamma`` is ``exp(-2 log l) / 2``): type-II MAP chooses the width by
    the evidence, NUTS integrates over it.

    Parameters
    ----------
    X : array_like of shape (N, d)
        Inputs.
    t : array_like of shape (N,)
        Targets.
    centres : array_like of shape (K, d), optional
        Kernel centres; default ``X`` (one basis per training point).
    bias : bool
        Put a column of ones first (coordinate ``"bias"``).
    length_scale_prior : (float, float), optional
        Mean and sd of the Normal prior of ``log_length_scale``; default the log
        of the median pairwise distance between the inputs, and sd 1.
    prior : str, mapping or HyperPrior, optional
        Gamma hyperprior; default ``"weakly_informative"``.
    unit_rms : bool, default False
        Divide every kernel column by its root mean square over the inputs at each
        width (data ``rbf_unit_rms``), as the estimators do.
    basis_names : sequence, optional
        Coordinate values of ``basis`` (default ``"bias"``, ``"x0"``, ``"x1"``, ...).

    Returns
    -------
    pymc.Model
        Free variables ``log_alpha`` (basis), ``log_beta``, ``log_length_scale``.

    References
    ----------
    Tipping (2001), JMLR 1:211-244, section 5 (adapting the kernel width).
    """
    X = as_2d_float(X, "X", min_samples=2)
    t = as_target_float(t, "t")
    check_consistent_length(X=X, t=t)
    hp = _no_slab(resolve_prior(prior, default="weakly_informative"), "regression_marginal_rbf")
    model, Phi, _ = _rbf_width_model(
        X, "t", t, centres, bias, length_scale_prior, unit_rms, basis_names
    )
    with model:
        log_alpha = _ard_precisions(hp)
        log_beta = _noise_precision(hp)
        marginal_likelihood(log_alpha, log_beta, Phi)
    return _builder_made(model)


def classification_rbf(
    X,
    y,
    *,
    n_classes: int | None = None,
    centres=None,
    bias: bool = True,
    length_scale_prior: tuple[float, float] | None = None,
    prior=None,
    parametrization: str = "centred",
    class_names: Sequence | None = None,
    unit_rms: bool = False,
    basis_names: Sequence | None = None,
) -> pm.Model:
    """RVM classification (binary or softmax) whose RBF length scale is an unknown.

    The design matrix of :func:`regression_marginal_rbf` with the weights of
    :func:`~rvm_pymc.models.classification_binary` (two classes) or
    :func:`~rvm_pymc.models.classification_softmax` (``W``, K > 2), for NUTS.

    Parameters
    ----------
    X : array_like of shape (N, d)
    y : array_like of shape (N,)
        Class codes ``0..K-1``.
    n_classes : int, optional
        ``K``; default ``max(y) + 1`` (at least 2).  Two classes: one weight vector ``w``.
    centres, bias, length_scale_prior, unit_rms, basis_names
        As for :func:`regression_marginal_rbf`.
    prior, parametrization
        As for :func:`~rvm_pymc.models.classification_binary`.
    class_names : sequence, optional
        Coordinate values of ``class`` (softmax).

    Returns
    -------
    pymc.Model
        Free variables ``log_alpha``, ``log_length_scale`` and ``w`` / ``W`` (or
        ``w_raw`` / ``W_raw``); observed ``y_obs``.
    """
    X = as_2d_float(X, "X", min_samples=2)
    if n_classes is None:
        n_classes = max(2, int(np.max(np.asarray(y))) + 1)
    y, k = check_labels(y, n_classes, binary=n_classes == 2)
    check_consistent_length(X=X, y=y)
    check_parametrization(parametrization)
    hp = resolve_prior(prior, default="weakly_informative")
    coords = {}
    if k > 2:
        coords["class"] = list(range(k)) if class_names is None else list(class_names)
    model, Phi, y_d = _rbf_width_model(X, "y", y, centres, bias, length_scale_prior, unit_rms,
                                       basis_names, **coords)  # fmt: skip
    with model:
        log_alpha = _ard_precisions(hp)
        if k == 2:
            w = _weights("w", log_alpha, parametrization, dims=("basis",), slab=hp.slab)
            bernoulli_logit("y_obs", Phi @ w, y_d)
        else:
            W = _weights("W", log_alpha, parametrization, dims=("basis", "class"), slab=hp.slab)
            categorical_logit("y_obs", Phi @ W, y_d)
    return _builder_made(model)
