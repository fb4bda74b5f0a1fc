"""The Laplace-collapsed sampler of the RVM classifiers: NUTS on ``J(log alpha)``.

The classification twin of the collapsed regression sampler
(:func:`rvm_pymc.inference.sample_collapsed`).  The weights of a classifier
have no closed-form marginal, so they are integrated out by the Laplace
approximation of :mod:`rvm_pymc.inference._laplace`:

.. math::

    J(\\log\\alpha) = \\Psi(w^*, \\log\\alpha) + \\tfrac{D}{2}\\log 2\\pi
        - \\tfrac12\\log|H|, \\qquad H = -\\nabla^2_w\\Psi(w^*),

with ``Psi`` the log density of the centred classifier model (likelihood,
ARD prior of the weights and the model's own prior of ``log alpha``) and
``w*`` its mode in the weights.  ``exp(J)`` is the Laplace approximation of
``p(y, log alpha)``, so NUTS over ``log alpha`` alone samples the approximate
posterior ``p(log alpha | y)``; its exact gradient is the implicit
differentiation of :func:`~rvm_pymc.inference._laplace.compile_laplace`.
Every posterior draw then gets one weight draw from the Laplace Gaussian
``N(w*, H^-1)`` at its ``log alpha``.  The result approximates the joint
posterior without its funnel between a weight and its precision (which the
joint NUTS of :func:`~rvm_pymc.inference.sample_nuts` does not cross); the
price is the Laplace approximation of the weights given ``alpha`` and one
Newton solve plus an ``O((M K)^3)`` gradient per leapfrog step.

How it is wired: :class:`LaplaceEvidenceOp`, a PyTensor Op of ``log_alpha``
with two outputs, ``J`` and ``dJ/dlog_alpha``, computed together by one
Newton solve (warm-started from the previous mode) and one evaluation of the
gradient; its pullback is ``dJ/dlog_alpha`` times the cotangent.  The
evaluator behind it (:mod:`rvm_pymc.inference._laplace_evidence`) is a closed
form in NumPy for a binary model and the compiled functions of
:func:`~rvm_pymc.inference._laplace.compile_laplace` otherwise.  The Op sits
in a ``pm.Potential`` of a model whose
only free variable is ``log_alpha`` (``basis``), flat there, because the
model's prior of ``log alpha`` is already inside ``Psi`` and thus ``J``
(whatever prior the classifier has: the package's log-Gamma, or one of the
user's own).  A Python Op cannot be compiled to JAX or Numba's nopython
mode, so only PyMC's own NUTS runs it (Numba calls it in object mode); the
graph around it and the Laplace functions are compiled in the mode of
:data:`DEFAULT_COMPILE` unless ``compile_kwargs`` says otherwise.

A failed inner solve (Newton's step halving cannot raise ``Psi``, or ``H``
is not positive definite to working precision) at a point of a trajectory
makes ``J = -inf`` there: NUTS counts that transition as divergent, so the
failure is reported in ``sample_stats.diverging`` and ``n_divergent``, never
hidden.  The weight draws afterwards need the mode at accepted points: a
failure there is an error
(:class:`~rvm_pymc.inference._laplace_evidence.LaplaceModeError`).

References
----------
Tipping, M. E. (2001). Sparse Bayesian learning and the relevance vector
machine. *Journal of Machine Learning Research* 1, 211-244, section 4.

MacKay, D. J. C. (1992). The evidence framework applied to classification
networks. *Neural Computation* 4, 720-736.

Hoffman, M. D. and Gelman, A. (2014). The No-U-Turn sampler. *Journal of
Machine Learning Research* 15, 1593-1623.
"""

from __future__ import annotations

import warnings
from dataclasses import replace

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import xarray as xr
from pytensor.gradient import DisconnectedType
from pytensor.graph.basic import Apply
from pytensor.graph.op import Op

from rvm_pymc._core.gaussian import (
    factor_draw,
    spd_factor,
)
from rvm_pymc.inference._laplace import compile_laplace
from rvm_pymc.inference._laplace_evidence import LaplaceModeError, evidence_of, solve_mode
from rvm_pymc.inference._nuts import nuts_datatree, nuts_result, pymc_sample
from rvm_pymc.inference._options import NutsRun, takes_nuts_run
from rvm_pymc.inference._user_models import check_user_model
from rvm_pymc.inference._weights import ChainDraws, chain_seeds
from rvm_pymc.models.data import model_coords
from rvm_pymc.models.spec import ModelSpec, model_spec

__all__ = [
    "DEFAULT_COMPILE",
    "LaplaceEvidenceOp",
    "laplace_collapsed_model",
    "laplace_weight_draws",
    "sample_laplace_collapsed",
]

DEFAULT_COMPILE = {"mode": "NUMBA"}
"""PyTensor mode of the compiled Laplace functions and of the sampled graph unless
``compile_kwargs`` is given (in PyTensor 3 ``FAST_RUN`` is Numba too).  Measured
on breast cancer (300 rows, 301 bases, one thread, shared machine): one Newton
pieces call ``(Psi, g, H)`` 3-7 ms and one ``(J, grad)`` 18-25 ms in Numba
(compile 4-8 s), 23 / 58 ms in C (``CVM``; compile 164 s), 9 / 48 ms in
``FAST_COMPILE``.  The Op itself is Python: Numba runs it in object mode."""
OBJECT_MODE_NOTE = "Numba will use object mode to run LaplaceEvidenceOp"
"""The start of Numba's UserWarning about the Op, expected and silenced here."""


class LaplaceEvidenceOp(Op):
    """``log_alpha -> (J, dJ/dlog_alpha)``, the Laplace evidence of a classifier.

    One ``perform`` computes both outputs by one call of the evaluator
    (:mod:`rvm_pymc.inference._laplace_evidence`: a Newton solve
    warm-started from the previous mode, as NUTS evaluates neighbouring
    points, then ``J`` and its exact gradient).  The pullback of ``J`` is
    the second output times the cotangent, so PyMC's compiled log density
    and gradient cost one solve, not two.  A failed solve gives ``J = -inf``
    and a zero gradient (see the module docstring); second derivatives are
    not implemented.

    Parameters
    ----------
    evidence : CompiledEvidence or BinaryEvidence
    """

    __props__ = ()

    def __init__(self, evidence) -> None:
        self.evidence = evidence

    def __eq__(self, other) -> bool:  # one instance per model: equal only to itself
        return self is other

    def __hash__(self) -> int:
        return id(self)

    def make_node(self, log_alpha) -> Apply:
        log_alpha = pt.as_tensor_variable(log_alpha).astype("float64")
        if log_alpha.ndim != 1:
            raise ValueError(f"log_alpha must be a vector; got {log_alpha.ndim} dimensions")
        return Apply(self, [log_alpha], [pt.dscalar(), pt.dvector()])

    def perform(self, node, inputs, outputs) -> None:
        J, grad, _ = self.evidence(inputs[0])
        outputs[0][0] = np.asarray(J)
        outputs[1][0] = grad

    def pullback(self, inputs, outputs, cotangents):
        c_J, c_grad = cotangents
        if not isinstance(c_grad.type, DisconnectedType):
            raise NotImplementedError(
                "second derivatives of the Laplace evidence are not implemented"
            )
        return [c_J * outputs[1]]

    def connection_pattern(self, node):
        return [[True, True]]


def laplace_collapsed_model(model: pm.Model, evidence) -> pm.Model:
    """The model NUTS samples: free ``log_alpha`` (``basis``) and ``pm.Potential(J)``.

    ``log_alpha`` is flat in this model because ``J`` already holds the
    classifier's prior of it (``Psi`` is the classifier's whole log density),
    so the posterior is ``exp(J)`` normalised: the same prior, counted once.
    The Potential is named ``laplace_log_evidence``; ``evidence`` is the
    evaluator of :func:`~rvm_pymc.inference._laplace_evidence.evidence_of`.
    """
    coords = {"basis": list(model_coords(model, "basis"))}
    op = LaplaceEvidenceOp(evidence)
    with pm.Model(coords=coords) as collapsed:
        la = pm.Flat("log_alpha", dims="basis")
        pm.Potential("laplace_log_evidence", op(la)[0])
    return collapsed


def laplace_weight_draws(
    fns, log_alpha: np.ndarray, rng: np.random.Generator, *, chain: int = 0, start: int = 0
) -> np.ndarray:
    """One draw of the weights from ``N(w*, H^-1)`` per draw of ``log_alpha``.

    Parameters
    ----------
    fns : LaplaceFunctions, CompiledEvidence or BinaryEvidence
        Anything with ``shape``, ``psi`` and ``newton`` as
        :class:`~rvm_pymc.inference._laplace.LaplaceFunctions`.
    log_alpha : ndarray of shape (chain, draw, M)
    rng : numpy.random.Generator
    chain, start : int
        The chain of ``log_alpha``'s first and the index of its first draw, for
        the message of an error (``log_alpha`` holds one chain's draws from
        ``start`` on, or whole chains from ``chain`` on).

    Returns
    -------
    ndarray of shape (chain, draw, M) or (chain, draw, M, K)
        ``w*`` at each draw's ``log alpha`` (Newton, warm-started from the
        previous draw's mode) plus ``R z`` with ``R R^T = H^-1``
        (:func:`rvm_pymc._core.gaussian.factor_draw`).

    Raises
    ------
    LaplaceModeError
        If the Newton solve fails at a draw (the sampler accepted it, so it
        had a finite ``J``; a failure here is not expected and not hidden).
    """
    la = np.asarray(log_alpha, dtype=float)
    n_chain, n_draw, m = la.shape
    flat = la.reshape(-1, m)
    d = int(np.prod(fns.shape))
    z = rng.standard_normal((flat.shape[0], d))
    out = np.empty((flat.shape[0], d))
    w = np.zeros(d)
    for i in range(flat.shape[0]):
        w, H, ok = solve_mode(fns, w, flat[i])
        if not ok:
            raise LaplaceModeError(
                f"the Newton solve for the Laplace mode failed at posterior draw {i} "
                f"(chain {chain + i // n_draw}, draw {start + i % n_draw}); its weights "
                "cannot be drawn"
            )
        L, p = spd_factor(H, "negative Hessian of the Laplace approximation")
        out[i] = factor_draw(L, p, w, z[i : i + 1])[0]
    return out.reshape(n_chain, n_draw, *fns.shape)


def _check_classifier(model: pm.Model) -> tuple[ModelSpec, str]:
    spec = model_spec(model)
    if spec.kind not in ("binary", "softmax"):
        raise ValueError(
            "sample_laplace_collapsed needs a classifier (classification_binary or "
            f"classification_softmax); got a {spec.kind.replace('_', ' ')} model"
        )
    if spec.parametrization != "centred":
        raise ValueError(
            "the Laplace-collapsed sampler integrates out the weights by the Laplace "
            "approximation in w: build the model with parametrization='centred'"
        )
    return spec, "w" if spec.kind == "binary" else "W"


@takes_nuts_run
def sample_laplace_collapsed(model: pm.Model, run: NutsRun) -> xr.DataTree:
    """Laplace-collapsed NUTS of a classifier: NUTS on ``J(log alpha)``, then weight draws.

    NUTS explores ``log alpha`` under the Laplace-approximate evidence

    .. math::

        p(\\log\\alpha \\mid y) \\propto \\exp J(\\log\\alpha), \\qquad
        J = \\Psi(w^*) + \\tfrac{D}{2}\\log 2\\pi - \\tfrac12\\log|H|,

    (``Psi`` the classifier's log density, prior of ``log alpha`` included;
    its exact gradient by implicit differentiation through the Newton mode,
    :mod:`rvm_pymc.inference._laplace`); then for every posterior draw one
    ``w ~ N(w*, H^-1)`` at that draw's ``log alpha``.  See
    :mod:`rvm_pymc.inference._laplace_collapsed` for how it is built and
    what a failed inner solve does.

    Parameters
    ----------
    model : pymc.Model
        A centred :func:`~rvm_pymc.models.classification_binary` or
        :func:`~rvm_pymc.models.classification_softmax` model.
    draws, tune, chains, nuts_sampler, target_accept, random_seed, progressbar, \
compile_kwargs, cores, rhat_threshold, min_ess, initvals, basis_swaps, until_converged
        Keyword-only, as in :func:`~rvm_pymc.inference.sample_nuts`, except:
        only PyMC's own NUTS runs the Python Op (``nuts_sampler`` None or
        ``"pymc"``); ``compile_kwargs`` defaults to
        :data:`~rvm_pymc.inference._laplace_collapsed.DEFAULT_COMPILE`
        (its ``mode`` also compiles the Laplace functions);
        ``initvals`` may set ``log_alpha`` only (the weights are not sampled).

    Returns
    -------
    xarray.DataTree
        The result schema of :mod:`rvm_pymc.results`, as :func:`sample_nuts`:
        ``posterior`` holds ``w`` (``W``; one Laplace draw per draw) and
        ``log_alpha``; the pointwise ``log_likelihood`` is computed from the
        weight draws; ``sample_stats`` are the sampler's.  Root attributes
        ``rvm_inference = "laplace_collapsed_nuts"``, ``rvm_kind``,
        ``sampler``, ``n_divergent`` (failed inner solves included),
        ``max_rhat``, ``min_ess_bulk`` (over ``w`` and ``log_alpha``),
        ``sampling_time`` and ``laplace_evaluator`` (``"binary_closed_form"``
        or ``"compiled"``, see
        :func:`~rvm_pymc.inference._laplace_evidence.evidence_of`).

    Raises
    ------
    ValueError
        For a regression or non-centred model, or ``nuts_sampler`` other than
        PyMC's.
    LaplaceModeError
        If the Newton solve fails at an accepted draw (not expected: the
        sampler had a finite ``J`` there).
    KeyboardInterrupt
        As in :func:`sample_nuts`.

    Warns
    -----
    PriorWarning, SamplingWarning
        As in :func:`sample_nuts`.

    References
    ----------
    Tipping (2001), JMLR 1:211-244, section 4; MacKay (1992), Neural
    Computation 4:720-736; Hoffman & Gelman (2014), JMLR 15:1593-1623.
    """
    spec, wname = _check_classifier(model)
    check_user_model(model, spec, "laplace_collapsed")
    if run.nuts_sampler not in (None, "pymc"):
        raise ValueError(
            "the Laplace-collapsed sampler evaluates J in a Python Op, which only PyMC's own "
            f"NUTS can run; got nuts_sampler={run.nuts_sampler!r}"
        )
    run = replace(run, nuts_sampler="pymc", compile_kwargs=run.compile_kwargs or DEFAULT_COMPILE)
    mode = run.compile_kwargs.get("mode")
    fns = compile_laplace(model, wname, mode)
    evidence = evidence_of(model, spec, fns, mode)
    collapsed = laplace_collapsed_model(model, evidence)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=OBJECT_MODE_NOTE, category=UserWarning)
        weights = ChainDraws(
            lambda d, rng, chain, start: laplace_weight_draws(
                evidence, d["log_alpha"][None], rng, chain=chain, start=start
            )[0],
            chain_seeds(run.random_seed),
        )
        pm_tree = pymc_sample(collapsed, spec, run, "pymc", collapsed=True, weights=weights)
    w = weights.upto({"log_alpha": pm_tree["posterior"]["log_alpha"].values})
    res = nuts_result(
        model, spec, pm_tree, w, run=run, sampler="pymc", inference="laplace_collapsed_nuts"
    )
    res.attrs["laplace_evaluator"] = evidence.name
    return nuts_datatree(
        model, spec, res, random_seed=run.random_seed, compile_kwargs=run.compile_kwargs
    )
