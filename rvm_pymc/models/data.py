"""What the PyMC fits read from a model's data, and the MCMC diagnostics.

The design matrix and coordinates of a model (by the names of
:mod:`rvm_pymc.models`), the check that a marginal model's ``PhiTPhi`` is
``Phi^T Phi``, and the R-hat / divergence checks that raise
:class:`~rvm_pymc.exceptions.SamplingWarning`.  The DataTree itself is built
by :mod:`rvm_pymc.results`.

References
----------
Vehtari, A., Gelman, A., Simpson, D., Carpenter, B. and Bürkner, P.-C. (2021).
Rank-normalization, folding, and localization: an improved R-hat for assessing
convergence of MCMC. *Bayesian Analysis* 16, 667-718.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
import xarray as xr

from rvm_pymc._core.diagnostics import summary
from rvm_pymc.exceptions import SamplingWarning
from rvm_pymc.models import rbf_design
from rvm_pymc.models._marginal_low_rank import GRAM_FACTOR_DATA
from rvm_pymc.models.spec import ModelSpec

LOG_2PI = float(np.log(2.0 * np.pi))


# ------------------------------------------------------------- model data


def model_data(model, name: str) -> np.ndarray:
    """The value of the model's ``pm.Data`` container ``name`` as a float array."""
    return np.asarray(model[name].get_value(), dtype=float)


def model_coords(model, dim: str) -> list:
    """The coordinate values of ``dim`` in ``model``."""
    return list(model.coords[dim])


def design_matrix(model, spec: ModelSpec, log_length_scale=None) -> np.ndarray:
    """The design matrix; for the RBF-width model at the given log length scale."""
    if not spec.rbf_width:
        return model_data(model, "Phi")
    return rbf_design(
        model_data(model, "X"), model_data(model, "centres"), log_length_scale, bias=spec.rbf_bias
    )


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
    if spec.kind == "poisson":
        return model_data(model, "y")
    return model_data(model, "y").astype(np.int64)


def check_gram(model, spec: ModelSpec) -> None:
    """Raise ValueError if a marginal model's ``PhiTPhi`` is not ``Phi^T Phi``.

    Or if its low-rank factor ``PhiTPhi_factor`` (when it has one) is not one of
    ``PhiTPhi``.
    """
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
        # W W^T is PhiTPhi but for eigenvalues below GRAM_RTOL times the largest
        tol = 1e-10 * float(np.abs(PtP).max())
        if W.shape[0] != PtP.shape[0] or not np.allclose(W @ W.T, PtP, rtol=0.0, atol=tol):
            raise ValueError(
                f"the data containers PhiTPhi and {GRAM_FACTOR_DATA} (its low-rank factor) "
                "disagree: after pm.set_data({'Phi': ...}) build the model again with "
                "regression_marginal"
            )


# ------------------------------------------------------------- diagnostics


def sampling_diagnostics(posterior: xr.Dataset, n_divergent: int = 0) -> dict[str, float]:
    """The worst rank-normalised R-hat and the smallest bulk and tail ESS of ``posterior``.

    ``posterior`` holds ``(chain, draw, ...)`` variables; R-hat is the
    rank-normalised split R-hat (the larger of the bulk and the folded, tail,
    values), NaN for one chain; ArviZ's statistics, computed for every element
    at once (:mod:`rvm_pymc._core.diagnostics`), elements ArviZ gives NaN for
    (a constant's R-hat) left out as ArviZ's reductions leave them.  Returns
    ``n_divergent``, ``max_rhat``, ``min_ess_bulk`` and ``min_ess_tail``; no
    warning (:func:`check_sampling` warns).
    """
    stats = [
        summary(np.asarray(v.transpose("chain", "draw", ...).values, dtype=float))
        for v in posterior.data_vars.values()
    ]

    def worst(key: str, pick) -> float:
        values = np.concatenate([np.ravel(s[key]) for s in stats])
        values = values[~np.isnan(values)]
        return float(pick(values)) if values.size else float("nan")

    return {
        "n_divergent": int(n_divergent),
        "max_rhat": worst("rhat", np.max),
        "min_ess_bulk": worst("ess_bulk", np.min),
        "min_ess_tail": worst("ess_tail", np.min),
    }


def passes_checks(diag: dict[str, float], rhat_threshold: float, min_ess: float) -> bool:
    """Whether :func:`sampling_diagnostics` ``diag`` passes: no divergence, R-hat at most
    ``rhat_threshold`` (a number, so at least two chains) and bulk and tail ESS at least
    ``min_ess``."""
    return (
        diag["n_divergent"] == 0
        and bool(diag["max_rhat"] <= rhat_threshold)
        and min(diag["min_ess_bulk"], diag["min_ess_tail"]) >= min_ess
    )


def check_sampling(
    idata: xr.DataTree,
    var_names: Sequence[str],
    *,
    rhat_threshold: float = 1.01,
    min_ess: float = 400.0,
) -> dict[str, float]:
    """Count divergences; the worst rank-normalised R-hat and the smallest bulk and tail ESS.

    The numbers of :func:`sampling_diagnostics` over ``var_names``.  Issues a
    :class:`SamplingWarning` for any divergence, for ``max R-hat >
    rhat_threshold`` and for an ESS below ``min_ess``; returns the numbers so
    that callers can record them.
    """
    stats = idata["sample_stats"]
    n_div = int(stats["diverging"].sum()) if "diverging" in stats else 0
    n_draws = int(stats.sizes["chain"] * stats.sizes["draw"])
    diag = sampling_diagnostics(idata["posterior"].to_dataset()[list(var_names)], n_div)
    max_rhat, ess_bulk, ess_tail = diag["max_rhat"], diag["min_ess_bulk"], diag["min_ess_tail"]
    if n_div:
        warnings.warn(
            f"{n_div} of {n_draws} draws diverged; the posterior may be biased. Raise "
            "target_accept, use a more informative prior or the other parametrization",
            SamplingWarning,
            stacklevel=3,
        )
    if np.isfinite(max_rhat) and max_rhat > rhat_threshold:
        warnings.warn(
            f"max R-hat is {max_rhat:.3f} > {rhat_threshold} (variables {list(var_names)}); "
            "the chains have not mixed",
            SamplingWarning,
            stacklevel=3,
        )
    if min(ess_bulk, ess_tail) < min_ess:
        warnings.warn(
            f"the smallest effective sample size is {min(ess_bulk, ess_tail):.0f} "
            f"(bulk {ess_bulk:.0f}, tail {ess_tail:.0f}) < {min_ess:g}: too few for stable "
            "estimates of the posterior and its tails; draw more",
            SamplingWarning,
            stacklevel=3,
        )
    return diag
