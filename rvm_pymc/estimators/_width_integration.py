"""``gamma="integrate"``: NUTS with the RBF width a parameter, and predictions over its draws.

The fit samples the log length scale ``l`` of the kernel
``exp(-gamma |x - c|^2)``, ``gamma = exp(-2 l) / 2``, beside the precisions
(and the noise, for :class:`~rvm_pymc.estimators.RVR`), under a Normal prior
centred on the ``"scale"`` width (:func:`~._width_selection.width_prior`);
the backend is :func:`rvm_pymc.inference.fit_width_backend`.  Every basis
stays in (as for every NUTS fit).  The estimator's posterior holds, for each
draw, the weights of the unscaled columns ``[1 | exp(-gamma_s D)]`` in the
units of the data, and ``gamma_draws_`` the widths: a prediction computes
each draw's design matrix at its own width (:func:`latent_at`), in chunks of
draws.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rvm_pymc._core.rbf_width import gamma_of, sq_distances, width_latent
from rvm_pymc.estimators._width_selection import width_prior
from rvm_pymc.kernels import make_kernel
from rvm_pymc.models.spec import data_unit_constants

__all__ = ["fit_integrated", "integrates_width", "latent_at", "sample_predictions_at"]


def integrates_width(est: Any) -> bool:
    """Whether ``est`` was fitted with ``gamma="integrate"`` (it holds width draws)."""
    return getattr(est, "gamma_draws_", None) is not None


def fit_integrated(est, X, target, *, width, checked, seed, t_s, t_mean, t_sd) -> None:
    """Fit ``est`` by NUTS over the width and set its attributes (the scaled targets ``t_s``).

    ``width``: the :class:`~._width_selection.Width` of the ``"scale"`` width, whose
    basis gives the centres and whose reference fit is the start.
    """
    from rvm_pymc.inference import fit_width_backend

    basis = width.basis
    names = tuple(map(str, basis.basis_names_))
    bias = bool(basis.bias)
    centres = basis.centres_
    start = width.reference[0] if est._starts_from_reference() else None
    prior = checked.prior
    post, info, lls = fit_width_backend(
        est._pymc_options(checked), X, centres, t_s, names, prior, seed, start,
        width_prior=width_prior(X), bias=bias,
    )  # fmt: skip
    ones = np.ones(len(names))
    post = post.to_data_units(ones, t_mean, t_sd)
    gammas = gamma_of(lls)
    est.gamma_ = float(np.median(gammas))
    est.gamma_draws_ = gammas
    est.basis_ = basis
    est.kernel_ = basis.kernel_
    est.basis_scale_ = ones
    est.y_scale_ = t_sd
    est._set_active(np.arange(len(names)), X)
    est.kernel_ = make_kernel("rbf", gamma=est.gamma_)  # the median width (for show)
    est._set_result(post)
    est.model_ = None
    est.n_iter_ = int(info.n_iter)
    est.converged_ = bool(info.converged)
    est._check_interpolation(X.shape[0], False, prior)
    est.log_evidence_ = float("nan")
    from rvm_pymc.estimators._base import _fit_attrs

    w = post.draws
    chains, draws = w.shape[:2]
    F = width_latent(
        sq_distances(X, centres), gammas, w.reshape(-1, *w.shape[2:]), bias=bias,
        y_offset=post.y_offset,
    ).reshape(chains, draws, *(-1, *w.shape[3:]))  # fmt: skip
    constants = data_unit_constants(est._kind_of_fit(), ones, y_scale=t_sd, prior=prior)
    constants["X"] = (("obs", "feature"), X)
    constants["centres"] = (("centre", "feature"), centres)
    est._tree_inputs = {
        "Phi": None,
        "Phi_of_X": False,
        "latent": F,
        "extra_posterior": {
            "log_length_scale": (("chain", "draw"), lls),
            "gamma": (("chain", "draw"), gammas),
        },
        "target": target,
        "classes": getattr(est, "classes_", None),
        "seed": seed,
        "sample_stats": info.sample_stats,
        "attrs": {**info.attrs, **_fit_attrs(est, info.library), "width": "integrated"},
        "draws": checked.draws,
        "chains": est._chains(),
        "constants": constants,
    }
    est._idata = None


def latent_at(est, X: np.ndarray) -> np.ndarray:
    """The latent mean of every draw at validated inputs ``X``: ``(chain, draw, n[, K])``
    (regression: ``y_offset`` included), each draw's design at its own width."""
    w = est.posterior_.draws
    chains, draws = w.shape[:2]
    F = width_latent(
        sq_distances(X, est.relevance_vectors_),
        est.gamma_draws_,
        w.reshape(-1, *w.shape[2:]),
        bias=est.bias_active_,
        y_offset=est.posterior_.y_offset,
    )
    return F.reshape(chains, draws, *F.shape[1:])


def sample_predictions_at(est, X: np.ndarray, random_state=None):
    """The ``predictions`` groups of ``sample_predictions`` of a width-integrating fit."""
    from rvm_pymc.results import latent_predictions

    return latent_predictions(
        est.idata_,
        latent_at(est, X),
        {"X": (("obs", "feature"), X)},
        random_state=random_state,
    )
