"""What the PyMC fits read from a model's data (by the names of :mod:`rvm_pymc.models`)."""

from __future__ import annotations

import numpy as np

from rvm_pymc._core.rbf_width import rbf_columns
from rvm_pymc.models import rbf_design
from rvm_pymc.models._marginal_low_rank import GRAM_FACTOR_DATA
from rvm_pymc.models.spec import RBF_DISTANCES, ModelSpec


def model_data(model, name: str) -> np.ndarray:
    """The value of the model's ``pm.Data`` container ``name`` as a float array."""
    return np.asarray(model[name].get_value(), dtype=float)


def model_coords(model, dim: str) -> list:
    """The coordinate values of ``dim`` in ``model``."""
    return list(model.coords[dim])


def design_matrix(model, spec: ModelSpec, log_length_scale=None) -> np.ndarray:
    """The design matrix; for the RBF-width model at ``log_length_scale``."""
    if not spec.rbf_width:
        return model_data(model, "Phi")
    if RBF_DISTANCES not in model.named_vars:  # a user's model with X and centres
        return rbf_design(
            model_data(model, "X"), model_data(model, "centres"), log_length_scale,
            bias=spec.rbf_bias,
        )  # fmt: skip
    D = model_data(model, RBF_DISTANCES)
    return rbf_columns(D, float(log_length_scale), bias=spec.rbf_bias, unit_rms=spec.rbf_unit_rms)


def result_kind(spec: ModelSpec) -> str:
    """The kind of :class:`~rvm_pymc.results.WeightPosterior` a model gives."""
    return "regression" if spec.kind.startswith("regression") else spec.kind


def class_labels(model, spec: ModelSpec) -> list | None:
    """Class labels of a classifier (the ``class`` coordinate; 0, 1 for binary), else None."""
    if spec.kind == "softmax":
        return model_coords(model, "class")
    return [0, 1] if spec.kind == "binary" else None


def target_data(model, spec: ModelSpec) -> np.ndarray:
    """The observed targets: ``t`` (regression), the counts ``y`` or the class codes ``y``."""
    if spec.kind.startswith("regression"):
        return model_data(model, "t")
    if spec.kind in ("poisson", "negative_binomial"):
        return model_data(model, "y")
    return model_data(model, "y").astype(np.int64)


def check_gram(model, spec: ModelSpec) -> None:
    """ValueError if a marginal model's ``PhiTPhi`` (or its low-rank factor) is not of ``Phi``."""
    if spec.kind != "regression_marginal" or spec.rbf_width:
        return
    Phi, PtP = model_data(model, "Phi"), model_data(model, "PhiTPhi")
    want = Phi.T @ Phi
    if PtP.shape != want.shape or not np.allclose(PtP, want, rtol=1e-10, atol=0.0):
        raise ValueError(
            "the data containers Phi and PhiTPhi disagree: after pm.set_data({'Phi': ...}) "
            "also set 'PhiTPhi' to Phi.T @ Phi"
        )
    if GRAM_FACTOR_DATA in model.named_vars:
        W = model_data(model, GRAM_FACTOR_DATA)
        tol = 1e-10 * float(np.abs(PtP).max())
        if W.shape[0] != PtP.shape[0] or not np.allclose(W @ W.T, PtP, rtol=0.0, atol=tol):
            raise ValueError(
                f"the data containers PhiTPhi and {GRAM_FACTOR_DATA} (its low-rank factor) "
                "disagree: after pm.set_data({'Phi': ...}) build the model again with "
                "regression_marginal"
            )
