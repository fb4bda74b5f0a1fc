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
from rvm_pymc.estimators._width_selection import Fitted, width_prior
from rvm_pymc.models.spec import RBF_UNIT_RMS

__all__ = ["fit_integrated", "integrates_width", "latent_at", "sample_predictions_at"]


def integrates_width(est: Any) -> bool:
    """Whether ``est`` was fitted with ``gamma="integrate"`` (it holds width draws)."""
    return getattr(est, "gamma_draws_", None) is not None


def fit_integrated(options, X, t_s, width, prior, seed: int, start) -> Fitted:
    """NUTS over the width on the scaled targets ``t_s`` (``options``: of the backend).

    ``width``: the :class:`~._width_selection.Width` of the ``"scale"`` width, whose
    basis gives the centres; ``start``: its reference posterior, or None.  Returns the
    posterior over all bases (unscaled columns), the width of every draw, and what the
    tree holds besides (``idata_`` computes each draw's latent mean when first read).
    """
    from rvm_pymc.inference import fit_width_backend

    basis = width.basis
    names = tuple(map(str, basis.basis_names_))
    post, info, lls = fit_width_backend(
        options, X, basis.centres_, t_s, names, prior, seed, start,
        width_prior=width_prior(X), bias=bool(basis.bias),
    )  # fmt: skip
    gammas = gamma_of(lls)
    tree = {
        "extra_posterior": {
            "log_length_scale": (("chain", "draw"), lls),
            "gamma": (("chain", "draw"), gammas),
        },
        # the model divided each kernel column by its RMS at the draw's width (a slab's
        # precision is of those columns); basis_scale (ones) is of the unscaled ones
        "constants": {
            "X": (("obs", "feature"), X),
            "centres": (("centre", "feature"), basis.centres_),
            RBF_UNIT_RMS: ((), np.asarray(1.0)),
        },
        "attrs": {"width": "integrated"},
    }
    return Fitted(post, info, np.ones(len(names)), gammas, tree)


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
