"""Options of the PyMC fits: the closed set of ``sampler_kwargs`` keys per method (no PyMC
import: the estimators' parameter checks read it first)."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from rvm_pymc._core.convergence import MIN_ESS, RHAT_MAX
from rvm_pymc._core.validation import check_int
from rvm_pymc.inference import defaults
from rvm_pymc.models import PARAMETRIZATIONS

__all__ = [
    "MAP_KEYS",
    "NUTS_KEYS",
    "STOPPING_SAMPLERS",
    "NutsRun",
    "check_probability",
    "check_sampler_kwargs",
    "check_stopping",
    "compile_options",
    "takes_nuts_run",
]


def check_probability(value, name: str) -> float:
    """``value`` as a float in (0, 1), or ValueError naming ``name``."""
    try:
        v = float(value)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a number in (0, 1); got {value!r}") from exc
    if not 0.0 < v < 1.0:
        raise ValueError(f"{name} must be in (0, 1); got {value!r}")
    return v


def compile_options(compile_kwargs: Mapping | None) -> dict:
    """PyTensor compile options as a dict (empty for None), or ValueError."""
    if compile_kwargs is None:
        return {}
    if not isinstance(compile_kwargs, Mapping):
        raise ValueError(f"compile_kwargs must be a mapping; got {type(compile_kwargs).__name__}")
    return dict(compile_kwargs)


@dataclass(frozen=True, kw_only=True)
class NutsRun:
    """The run options of every NUTS fit: the keywords of
    :func:`~rvm_pymc.inference.sample_nuts` and its kin.

    Attributes
    ----------
    draws, tune, chains : int
        As in ``pm.sample`` (draws and chains at least 1, and at least two draws in all).
    nuts_sampler : {"pymc", "nutpie", "numpyro"} or None
        None: numpyro, else nutpie, when installed (nutpie first for a collapsed sampler
        of more than 200 bases), else PyMC's NUTS; nutpie, else PyMC's, when
        ``until_converged=True`` (numpyro cannot be stopped); PyMC's whenever
        ``compile_kwargs``, plain progress lines or basis swaps need it.  An uninstalled
        choice raises ImportError.
    target_accept : float
        Target acceptance rate of the step-size adaptation, in (0, 1).
    random_seed : int, sequence or None
    progressbar : bool or str
        The sampler's progress bars (a string: one of PyMC's bar layouts), or
        ``"lines"``: plain lines through the ``rvm_pymc`` logger every 10 s and
        every 10% of each chain, and one at the end (PyMC's sampler only).
    compile_kwargs : mapping or None
        PyTensor compile options (PyMC's sampler only).
    cores : int or None
        Chains run at once (PyMC's sampler: processes; nutpie: threads; not numpyro);
        None: one per chain, up to the CPUs available.  The draws do not depend on it.
    rhat_threshold, min_ess : float
        The convergence standard: warn when the worst R-hat exceeds
        ``rhat_threshold`` or the smallest bulk or tail ESS is below ``min_ess``.
    initvals : mapping or None
        Starting values of free variables, as ``pm.sample``'s ``initvals``.
    basis_swaps : int or None
        Metropolis proposals per draw, beside PyMC's NUTS, to swap two neighbouring
        bases (:mod:`rvm_pymc.inference._swap`); None: 64 for the classifiers, else 0.
        Ignored by nutpie and numpyro.
    until_converged : bool or None
        True: ``draws`` is the most a chain takes; sampling stops at the first
        checkpoint (500 draws a chain after tuning, then every 250) whose draws pass the
        convergence standard, keeping exactly those (:mod:`rvm_pymc.inference._stop`;
        PyMC's sampler and nutpie; numpyro raises ValueError).  None: the same where
        PyMC's sampler or nutpie runs.  False, or one chain: the whole ``draws``.
    """

    draws: int = defaults.DRAWS
    tune: int = defaults.TUNE
    chains: int = defaults.CHAINS
    nuts_sampler: str | None = None
    target_accept: float = defaults.TARGET_ACCEPT
    random_seed: Any = None
    progressbar: bool | str = True
    compile_kwargs: Mapping | None = None
    cores: int | None = None
    rhat_threshold: float = RHAT_MAX
    min_ess: float = MIN_ESS
    initvals: Mapping | None = None
    basis_swaps: int | None = None
    until_converged: bool | None = defaults.UNTIL_CONVERGED

    def __post_init__(self) -> None:
        set_ = functools.partial(object.__setattr__, self)
        if self.basis_swaps is not None:
            set_("basis_swaps", check_int(self.basis_swaps, "basis_swaps", 0))
        for name, minimum in (("draws", 1), ("tune", 0), ("chains", 1)):
            set_(name, check_int(getattr(self, name), name, minimum))
        set_("target_accept", check_probability(self.target_accept, "target_accept"))
        set_("compile_kwargs", compile_options(self.compile_kwargs))
        if self.until_converged is not None:
            if not isinstance(self.until_converged, bool | np.bool_):
                raise ValueError(
                    f"until_converged must be True, False or None; got {self.until_converged!r}"
                )
            set_("until_converged", bool(self.until_converged))
        if self.draws * self.chains < 2:
            raise ValueError(
                "draws * chains must be at least 2 (the posterior covariance needs two "
                f"draws); got draws={self.draws}, chains={self.chains}"
            )


def takes_nuts_run(func: Callable[..., Any]) -> Callable[..., Any]:
    """``func(model, run: NutsRun)`` as ``f(model, *, draws=1000, ...)``, its signature built
    from :class:`NutsRun`'s fields."""
    params = [inspect.Parameter("model", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    params += [
        inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, default=f.default)
        for f in fields(NutsRun)
    ]
    signature = inspect.Signature(params)

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        bound = signature.bind(*args, **kwargs)
        model = bound.arguments.pop("model")
        return func(model, NutsRun(**bound.arguments))

    wrapper.__signature__ = signature  # type: ignore[attr-defined]
    return wrapper


MAP_KEYS = ("initvals", "max_iter", "gtol", "laplace", "compile_kwargs")
_NUTS_FIT_KEYS = ("draws", "tune", "chains", "random_seed")
NUTS_KEYS = (
    "model",
    "parametrization",
    *(f.name for f in fields(NutsRun) if f.name not in _NUTS_FIT_KEYS),
)
"""What ``sampler_kwargs`` may hold for NUTS (the run options the estimator does not set)."""
_FIT_KEYS = {
    "map": (("model",), "the estimator's data and prior"),
    "nuts": (
        (*_NUTS_FIT_KEYS, "random_state"),
        "the estimator's draws, tune, chains and random_state",
    ),
}
"""Keys the fit sets itself, and where it takes them from."""
_NUTS_MODELS = ("collapsed", "joint")
_CLASSIFIER_KINDS = ("classifier", "poisson")
"""``kind`` values (the estimators' RVC and RVP) that refuse the collapsed sampler."""


STOPPING_SAMPLERS = ("pymc", "nutpie")
"""The NUTS backends that ``until_converged`` can stop: PyMC's (a callback after every draw)
and nutpie (its background sampler, read while it runs)."""


def check_stopping(nuts_sampler: str | None, given: str, instead: str) -> None:
    """ValueError unless ``nuts_sampler`` can stop once converged (None, or one of
    :data:`STOPPING_SAMPLERS`)."""
    if nuts_sampler is not None and nuts_sampler not in STOPPING_SAMPLERS:
        raise ValueError(
            f"{given} stops NUTS once converged, which needs PyMC's sampler or nutpie (their "
            f"draws can be read while they run); nuts_sampler={nuts_sampler!r} cannot be "
            f"stopped: pass {instead} to run a fixed length with {nuts_sampler}, or "
            "nuts_sampler='pymc' or 'nutpie'"
        )


def check_sampler_kwargs(
    method: str, sampler_kwargs: dict | None, kind: str | None = None, *, stops: bool = False
) -> dict[str, Any]:
    """``sampler_kwargs`` as a dict, or ValueError naming keys that ``method`` does not take."""
    allowed = MAP_KEYS if method == "map" else NUTS_KEYS
    kw = dict(sampler_kwargs or {})
    fit_keys, source = _FIT_KEYS.get(method, ((), ""))
    own = sorted(k for k in kw if k in fit_keys)
    if own:
        raise ValueError(
            f"sampler_kwargs {own} do not apply to method={method!r}: the fit sets "
            f"{'them' if len(own) > 1 else 'it'} itself, from {source}"
        )
    unknown = sorted(set(kw) - set(allowed), key=str)
    if unknown:
        raise ValueError(
            f"sampler_kwargs {unknown} do not apply to method={method!r}; allowed: "
            f"{', '.join(allowed)}"
        )
    if method == "nuts" and kw.get("model", "collapsed") not in _NUTS_MODELS:
        raise ValueError(
            f"sampler_kwargs['model'] must be one of {_NUTS_MODELS}; got {kw['model']!r}"
        )
    if method == "nuts" and kind in _CLASSIFIER_KINDS and kw.get("model") == "collapsed":
        raise ValueError(
            "sampler_kwargs['model']='collapsed' applies to RVR only: the collapsed sampler "
            "integrates out the weights of the Gaussian regression likelihood; a classifier "
            "or RVP samples its weights jointly (model='joint', the default)"
        )
    if method == "nuts" and kw.get("parametrization", "centred") not in PARAMETRIZATIONS:
        raise ValueError(
            f"sampler_kwargs['parametrization'] must be one of {PARAMETRIZATIONS}; "
            f"got {kw['parametrization']!r}"
        )
    if method == "nuts" and kw.get("until_converged", stops) is True:
        if "until_converged" in kw:
            check_stopping(kw.get("nuts_sampler"), "until_converged=True", "until_converged=False")
        else:
            check_stopping(kw.get("nuts_sampler"), "draws=None", "a number of draws")
    return kw
