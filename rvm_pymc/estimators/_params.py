"""The estimators' parameters and their checks.

Each parameter's admissible values are declared once, in scikit-learn's
``_parameter_constraints`` form, with the message that names it (:data:`PARAMETERS`);
:func:`check_params` adds the checks that involve several parameters or the data.  Every
invalid parameter is a ``ValueError`` naming it.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions, make_constraint

from rvm_pymc.basis import Basis
from rvm_pymc.inference.defaults import ESTIMATOR_CHAINS, estimator_draws, estimator_tune
from rvm_pymc.kernels import KERNEL_NAMES, Kernel
from rvm_pymc.priors import HyperPrior, resolve_prior

__all__ = [
    "COUNTS_CONSTRAINTS",
    "GAMMA_KERNELS",
    "INITS",
    "METHODS",
    "PARAMETER_CONSTRAINTS",
    "REGRESSOR_CONSTRAINTS",
    "SOLVERS",
    "WIDTH_KERNELS",
    "Checked",
    "backend_options",
    "check_params",
    "default_prior",
    "validate_params",
]

METHODS = ("reference", "map", "nuts")
INITS = ("auto", "reference", "default")
SOLVERS = ("fast", "mackay", "em")
PREDICTIVES = ("rvm", "rvm*")
COUNT_LIKELIHOODS = ("poisson", "negative_binomial")
WIDTH_KERNELS = ("rbf", "laplacian", "exponential", "cauchy")
GAMMA_KERNELS = (*WIDTH_KERNELS, "poly", "polynomial")


class _KernelName(StrOptions):
    """A kernel name (case-insensitive) or ``"precomputed"``."""

    def is_satisfied_by(self, val: Any) -> bool:
        return isinstance(val, str) and (val.lower() in self.options or val == "precomputed")


def _positive_int(left: int) -> Interval:
    return Interval(numbers.Integral, left, None, closed="left")


_INT = numbers.Integral
_POSITIVE = Interval(numbers.Real, 0, None, closed="neither")
PARAMETERS: dict[str, tuple[list, str]] = {
    "method": ([StrOptions(set(METHODS))], f"one of {METHODS}"),
    "solver": ([StrOptions(set(SOLVERS))], f"one of {SOLVERS}"),
    "kernel": (
        [_KernelName(set(KERNEL_NAMES)), Kernel, Basis, callable],
        "a kernel name, 'precomputed', a Kernel, a callable k(X, Y) or a Basis",
    ),
    "gamma": (
        [StrOptions({"auto", "scale", "evidence", "cv", "integrate"}), _POSITIVE],
        "a float > 0, 'auto', 'cv', 'scale', 'evidence' or 'integrate'",
    ),
    "gamma_grid": ([None, "array-like"], "a non-empty sequence of floats > 0"),
    "degree": ([_positive_int(1)], "an integer >= 1"),
    "coef0": ([Interval(numbers.Real, None, None, closed="neither")], "a finite float"),
    "bias": (["boolean"], "True or False"),
    "draws": ([None, _positive_int(1)], "None or an integer >= 1"),
    "tune": ([None, _positive_int(0)], "None or an integer >= 0"),
    "chains": ([None, _positive_int(1)], "None or an integer >= 1"),
    "max_iter": ([None, _positive_int(1)], "None or an integer >= 1"),
    "tol": ([_POSITIVE], "a finite float > 0"),
    "n_jobs": (
        [None, Interval(_INT, None, -1, closed="right"), _positive_int(1)],
        "None or a nonzero integer (-1: all cores)",
    ),
    "sampler_kwargs": ([None, dict], "None or a dict"),
    "init": ([StrOptions(set(INITS))], f"one of {INITS}"),
    "random_state": (
        [
            None,
            Interval(_INT, 0, 2**32 - 1, closed="both"),
            np.random.RandomState,
            np.random.Generator,
        ],
        "None, an integer seed in [0, 2**32 - 1], a numpy.random.RandomState or a "
        "numpy.random.Generator",
    ),
    "prior": (
        [None, str, Mapping, HyperPrior],
        "None, a preset name, a mapping of a, b, c, d, slab or a HyperPrior",
    ),
    "predictive": ([StrOptions(set(PREDICTIVES))], f"one of {PREDICTIVES}"),  # RVR's
    "likelihood": ([StrOptions(set(COUNT_LIKELIHOODS))], f"one of {COUNT_LIKELIHOODS}"),  # RVP's
}
"""Every parameter: its admissible values (a boolean satisfies only ``"boolean"``) and what
it must be, in the words of its ``ValueError``."""

MESSAGES = {name: message for name, (_, message) in PARAMETERS.items()}
_ALL_CONSTRAINTS = {name: constraints for name, (constraints, _) in PARAMETERS.items()}
PARAMETER_CONSTRAINTS = {
    k: v for k, v in _ALL_CONSTRAINTS.items() if k not in ("predictive", "likelihood")
}
REGRESSOR_CONSTRAINTS = {**PARAMETER_CONSTRAINTS, "predictive": _ALL_CONSTRAINTS["predictive"]}
COUNTS_CONSTRAINTS = {**PARAMETER_CONSTRAINTS, "likelihood": _ALL_CONSTRAINTS["likelihood"]}
_CONSTRAINTS = {name: [make_constraint(c) for c in cs] for name, cs in _ALL_CONSTRAINTS.items()}
_TAKE_BOOLEANS = {name for name, cs in _ALL_CONSTRAINTS.items() if "boolean" in cs}


def validate_params(
    params: Mapping[str, Any], constraints: Mapping[str, list] = PARAMETER_CONSTRAINTS
) -> None:
    """Raise ``ValueError`` naming the first of ``params`` outside its ``constraints``."""
    for name in constraints:
        value = params[name]
        boolean = isinstance(value, bool | np.bool_) and name not in _TAKE_BOOLEANS
        if not boolean and any(c.is_satisfied_by(value) for c in _CONSTRAINTS[name]):
            continue  # (a boolean satisfies only "boolean")
        if name == "kernel" and isinstance(value, str):
            raise ValueError(
                f"unknown kernel {value!r}; valid names are {list(KERNEL_NAMES)} "
                "(case-insensitive) or 'precomputed'"
            )
        shown = type(value).__name__ if name == "kernel" else repr(value)
        raise ValueError(f"{name} must be {MESSAGES[name]}; got {shown}")


def default_prior(est: Any) -> str:
    """The preset of ``prior=None`` (and under a partial mapping) for ``est``."""
    if est.method != "nuts":
        return "evidence"
    return "weakly_informative" if est._kind == "regression" else "weakly_informative_slab"


def default_tune(est: Any) -> int:
    """NUTS tuning steps of ``tune=None``."""
    model = (est.sampler_kwargs or {}).get("model", "collapsed")
    return estimator_tune(est._kind == "regression" and model == "collapsed")


class Checked(NamedTuple):
    """What :func:`check_params` resolved, for the fit to use as is."""

    prior: HyperPrior
    sampler_kwargs: dict[str, Any]  # {} for method="reference"
    draws: int


def check_params(est: Any, X: np.ndarray) -> Checked:
    """Check every parameter of ``est`` on training ``X``; return what they resolve to."""
    est._validate_params()
    k, gamma = est.kernel, est.gamma
    if gamma in ("evidence", "cv") and not (isinstance(k, str) and k.lower() in GAMMA_KERNELS):
        raise ValueError(
            f"gamma={gamma!r} needs a kernel with a width: one of {GAMMA_KERNELS}; "
            f"got kernel={k!r}"
        )
    if gamma == "integrate":
        _check_integrate(est)
    if est.gamma_grid is not None:
        message = f"gamma_grid must be {MESSAGES['gamma_grid']}; got {est.gamma_grid!r}"
        try:
            grid = np.asarray(est.gamma_grid, dtype=float).reshape(-1)
        except (TypeError, ValueError):
            raise ValueError(message) from None
        if grid.size == 0 or not np.all(np.isfinite(grid) & (grid > 0)):
            raise ValueError(message)
    if isinstance(k, str) and k == "precomputed" and X.shape[0] != X.shape[1]:
        raise ValueError(
            "kernel='precomputed' needs X to be the square kernel matrix of the training "
            f"points (n_samples x n_samples); got X of shape {X.shape}"
        )
    if getattr(est, "predictive", "rvm") == "rvm*":
        _check_rvm_star(est)
    if getattr(est, "likelihood", "poisson") == "negative_binomial" and est.method == "map":
        raise ValueError(
            "likelihood='negative_binomial' is fitted by method='reference' (the Laplace "
            "evidence, r by type-II maximum likelihood) or method='nuts' (r sampled); "
            "method='map' is not implemented for it"
        )
    kwargs: dict[str, Any] = {}
    if est.method != "reference":
        from rvm_pymc.inference import check_sampler_kwargs

        kind = {"classification": "classifier", "counts": "poisson"}.get(est._kind)
        kwargs = check_sampler_kwargs(
            est.method, est.sampler_kwargs, kind, stops=est.draws is None
        )
    prior = resolve_prior(est.prior, default=default_prior(est))
    if prior.slab is not None:
        _check_slab(est, prior, kwargs)
    width = est.gamma == "integrate"
    draws = estimator_draws(est._kind, width) if est.draws is None else int(est.draws)
    return Checked(prior, kwargs, draws)


def backend_options(est: Any, checked: Checked) -> dict[str, Any]:
    """The options of :func:`rvm_pymc.inference.fit_backend` for ``est``."""
    classes = getattr(est, "classes_", None)
    return {
        "method": est.method,
        "kind": est._kind_of_fit(),
        "class_names": None if classes is None else [str(c) for c in classes],
        "draws": checked.draws,
        "until_converged": est.draws is None,
        "tune": default_tune(est) if est.tune is None else int(est.tune),
        "chains": ESTIMATOR_CHAINS if est.chains is None else int(est.chains),
        "max_iter": est.max_iter,
        "sampler_kwargs": checked.sampler_kwargs,
    }


INTEGRATE_KERNELS = ("rbf",)


def _check_integrate(est: Any) -> None:
    """Check ``gamma="integrate"``: NUTS over the width of an RBF kernel (RVR, RVC)."""
    k = est.kernel
    if est._kind not in ("regression", "classification"):
        raise ValueError(
            f"gamma='integrate' is for RVR and RVC; {type(est).__name__} takes gamma "
            "'auto', 'cv', 'scale', 'evidence' or a float"
        )
    if est.method != "nuts":
        raise ValueError(
            "gamma='integrate' samples the kernel width with the other unknowns and needs "
            f"method='nuts'; got method={est.method!r}. For one width chosen from the data "
            "use gamma='auto', 'cv' or 'evidence'"
        )
    if not (isinstance(k, str) and k.lower() in INTEGRATE_KERNELS):
        shown = repr(k) if isinstance(k, str) else f"a {type(k).__name__}"
        raise ValueError(
            f"gamma='integrate' needs kernel='rbf' (its width is a parameter of the model); "
            f"got kernel={shown}"
        )
    if (est.sampler_kwargs or {}).get("model", "collapsed") != "collapsed":
        raise ValueError(
            "gamma='integrate' samples RVR's collapsed model (the weights integrated out at "
            "each width); sampler_kwargs={'model': 'joint'} is not available with it"
        )
    if est.gamma_grid is not None:
        raise ValueError(
            "gamma_grid brackets a width search; gamma='integrate' samples the width under "
            "its prior instead: leave gamma_grid=None"
        )
    if (est.sampler_kwargs or {}).get("basis_swaps"):
        raise ValueError(
            "basis swaps move weights between fixed columns; with gamma='integrate' the "
            "columns change with the width, so sampler_kwargs['basis_swaps'] must be 0 or "
            "None"
        )


def _check_slab(est: Any, prior: HyperPrior, kwargs: dict[str, Any]) -> None:
    """Check that a slab goes to NUTS over the weights or to MacKay/EM."""
    if est.method == "reference" and est.solver == "fast":
        raise ValueError(
            f"prior has slab={prior.slab}, which solver='fast' does not take (its sequential "
            "updates take a weight's prior precision to be alpha alone): use "
            "solver='mackay' or 'em' with a slab"
        )
    if est.method not in ("nuts", "reference"):
        raise ValueError(
            f"prior has slab={prior.slab}, which only method='nuts' and method='reference' "
            f"(solver='mackay' or 'em') take: type-II MAP integrates out weights of prior "
            f"precision alpha alone (got method={est.method!r}). Drop the slab, or use "
            "method='nuts' or 'reference'"
        )
    if est.gamma == "integrate" and est._kind == "regression":
        raise ValueError(
            f"prior has slab={prior.slab}, but RVR with gamma='integrate' samples the "
            "collapsed model (the weights integrated out at each width, with prior "
            "precision alpha alone), which has no slab: drop the slab, or fix the width "
            "(a float or 'auto') and use sampler_kwargs={'model': 'joint'}"
        )
    if (
        est.method == "nuts"
        and est._kind == "regression"
        and kwargs.get("model", "collapsed") != "joint"
    ):
        raise ValueError(
            f"prior has slab={prior.slab}, but RVR's NUTS samples the collapsed model by "
            "default, whose weights are integrated out with prior precision alpha: use "
            "sampler_kwargs={'model': 'joint'} with a slab"
        )


def _check_rvm_star(est: Any) -> None:
    """Check that ``predictive="rvm*"`` has a Gaussian posterior and a kernel."""
    if est.method == "nuts":
        raise ValueError(
            "predictive='rvm*' needs the Gaussian weight posterior of method='reference' or "
            "'map'; NUTS draws are of the model without the basis RVM* adds at each test "
            "point, and conditioning each draw would not give the augmented posterior. "
            "Use predictive='rvm' with method='nuts' (its predictive already integrates "
            "over the precisions)"
        )
    k = est.kernel
    if isinstance(k, Basis) or (isinstance(k, str) and k == "precomputed"):
        shown = repr(k) if isinstance(k, str) else f"a {type(k).__name__}"
        raise ValueError(
            "predictive='rvm*' evaluates the kernel between the training inputs and each "
            "test input (and at the test input itself), so it needs a kernel given by "
            f"name, a Kernel or a callable; got kernel={shown}"
        )
