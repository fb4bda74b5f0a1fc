"""The PyMC builders of the RVMs with a non-Gaussian likelihood: classifiers and counts."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pymc as pm

from rvm_pymc._core.counts import check_counts
from rvm_pymc._core.validation import as_2d_float, check_consistent_length
from rvm_pymc.models._builders import _builder_made, _new_model
from rvm_pymc.models._checks import check_labels, check_parametrization
from rvm_pymc.models._likelihoods import (
    bernoulli_logit,
    categorical_logit,
    negative_binomial_log,
    poisson_log,
)
from rvm_pymc.models._priors import _ard_precisions, _log_dispersion, _weights
from rvm_pymc.priors import DISPERSION_PRIOR_SCALE, resolve_prior

__all__ = [
    "classification_binary",
    "classification_softmax",
    "counts_negative_binomial",
    "counts_poisson",
]


def _one_output_glm(Phi, y, prior, parametrization, basis_names, observed, likelihood,
                    dispersion_scale=None):  # fmt: skip
    """The model of one latent output ``Phi @ w`` observed through ``likelihood`` (with a
    ``dispersion_scale``: ``likelihood(observed, eta, log_r, y)``)."""
    check_consistent_length(Phi=Phi, y=y)
    check_parametrization(parametrization)
    hp = resolve_prior(prior, default="weakly_informative")
    model, Phi_d, y_d = _new_model(Phi, "y", y, basis_names)
    with model:
        log_alpha = _ard_precisions(hp)
        extra = () if dispersion_scale is None else (_log_dispersion(dispersion_scale),)
        w = _weights("w", log_alpha, parametrization, dims=("basis",), slab=hp.slab)
        likelihood(observed, Phi_d @ w, *extra, y_d)
    return _builder_made(model)


def classification_binary(
    Phi, y, *, prior=None, parametrization: str = "centred", basis_names: Sequence | None = None
) -> pm.Model:
    """Binary RVM classification: ``y ~ Bernoulli(sigmoid(Phi w))``.

    Parameters
    ----------
    Phi : array_like of shape (N, M)
    y : array_like of shape (N,)
        Labels in {0, 1}.
    prior, parametrization, basis_names
        As for :func:`regression_joint` (of the prior only ``a, b`` and ``slab``).
        Type-II MAP (Laplace) needs ``parametrization="centred"``.

    Returns
    -------
    pymc.Model
        Free variables ``log_alpha`` and ``w`` (or ``w_raw``); observed ``y_obs``.

    References
    ----------
    Tipping (2001), JMLR 1:211-244, section 4.
    """
    Phi = as_2d_float(Phi, "Phi", min_samples=2)
    y, _ = check_labels(y, 2, binary=True)
    return _one_output_glm(Phi, y, prior, parametrization, basis_names, "y_obs", bernoulli_logit)


def classification_softmax(
    Phi,
    y,
    *,
    n_classes: int | None = None,
    prior=None,
    parametrization: str = "centred",
    basis_names: Sequence | None = None,
    class_names: Sequence | None = None,
) -> pm.Model:
    """K-class RVM classification: ``y ~ Categorical(softmax(Phi W))``.

    One precision ``alpha_m`` per basis, shared by the K columns of ``W``
    (``W[m, k] ~ N(0, 1/alpha_m)``).

    Parameters
    ----------
    Phi : array_like of shape (N, M)
    y : array_like of shape (N,)
        Class codes in ``0..K-1``.
    n_classes : int, optional
        ``K``; default ``max(y) + 1``.
    prior : str, mapping or HyperPrior, optional
        As for :func:`classification_binary`.
    parametrization : {"centred", "non_centred"}
    basis_names, class_names : sequence, optional
        Coordinate values of ``basis`` and ``class``.

    Returns
    -------
    pymc.Model
        Free variables ``log_alpha`` (basis) and ``W`` or ``W_raw`` (basis, class);
        observed ``y_obs``.

    References
    ----------
    Tipping (2001), JMLR 1:211-244, section 4 (multi-class extension).
    """
    Phi = as_2d_float(Phi, "Phi", min_samples=2)
    y, k = check_labels(y, n_classes, binary=False)
    check_consistent_length(Phi=Phi, y=y)
    check_parametrization(parametrization)
    hp = resolve_prior(prior, default="weakly_informative")
    if class_names is None:
        class_names = list(range(k))
    elif len(class_names) != k:
        raise ValueError(f"class_names has {len(class_names)} entries; expected {k}")
    model, Phi_d, y_d = _new_model(Phi, "y", y, basis_names, **{"class": list(class_names)})
    with model:
        log_alpha = _ard_precisions(hp)
        W = _weights("W", log_alpha, parametrization, dims=("basis", "class"), slab=hp.slab)
        categorical_logit("y_obs", Phi_d @ W, y_d)
    return _builder_made(model)


def counts_poisson(
    Phi, y, *, prior=None, parametrization: str = "centred", basis_names: Sequence | None = None
) -> pm.Model:
    """RVM for counts: ``y ~ Poisson(exp(Phi w))`` (log link).

    Parameters
    ----------
    Phi : array_like of shape (N, M)
    y : array_like of shape (N,)
        Counts (finite, >= 0, not all zero).
    prior, parametrization, basis_names
        As for :func:`classification_binary`.

    Returns
    -------
    pymc.Model
        Free variables ``log_alpha`` and ``w`` (or ``w_raw``); observed
        ``counts_obs``; data ``Phi`` and ``y``.
    """
    Phi = as_2d_float(Phi, "Phi", min_samples=2)
    y = check_counts(y)
    return _one_output_glm(Phi, y, prior, parametrization, basis_names, "counts_obs", poisson_log)


def counts_negative_binomial(
    Phi,
    y,
    *,
    prior=None,
    parametrization: str = "centred",
    basis_names: Sequence | None = None,
    dispersion_prior_scale: float = DISPERSION_PRIOR_SCALE,
) -> pm.Model:
    """RVM for overdispersed counts: ``y ~ NB2(exp(Phi w), r)`` (log link).

    Mean ``mu = exp(Phi w)``, variance ``mu + mu^2 / r``, the free ``log_dispersion``
    (``log r``) under ``1/sqrt(r) ~ HalfNormal(dispersion_prior_scale)``.

    Parameters
    ----------
    Phi, y, prior, parametrization, basis_names
        As for :func:`counts_poisson`.
    dispersion_prior_scale : float
        Data ``dispersion_prior_scale``; default
        :data:`rvm_pymc.priors.DISPERSION_PRIOR_SCALE`.

    Returns
    -------
    pymc.Model
        Free variables ``log_alpha``, ``log_dispersion`` and ``w`` (or
        ``w_raw``); observed ``counts_obs``; data ``Phi`` and ``y``.
    """
    Phi = as_2d_float(Phi, "Phi", min_samples=2)
    y = check_counts(y)
    scale = float(dispersion_prior_scale)
    if not (np.isfinite(scale) and scale > 0):
        raise ValueError(f"dispersion_prior_scale must be finite and > 0; got {scale!r}")
    return _one_output_glm(Phi, y, prior, parametrization, basis_names, "counts_obs",
                           negative_binomial_log, scale)  # fmt: skip
