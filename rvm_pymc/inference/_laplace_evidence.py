"""Evaluators of the Laplace evidence ``J(log alpha)`` for the Laplace-collapsed sampler.

Each evaluator is called with ``log alpha`` and returns ``(J, dJ/dlog_alpha, ok)``,
solving for the mode ``w*`` warm-started from its previous call (NUTS
evaluates neighbouring points): :class:`CompiledEvidence` with the compiled
functions of :func:`~rvm_pymc.inference._laplace.compile_laplace` (any
classifier), :class:`BinaryEvidence` in closed form for the binary model;
:func:`evidence_of` picks one.  A failed solve is ``(-inf, 0, False)``, never
an exception: :mod:`rvm_pymc.inference._laplace_collapsed` turns it into a
divergent transition.
"""

from __future__ import annotations

import warnings

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from scipy.special import expit, log_expit

from rvm_pymc._core.gaussian import factor_inverse, factor_logdet, spd_factor
from rvm_pymc.exceptions import ConvergenceWarning
from rvm_pymc.inference._laplace import LaplaceFunctions, newton_mode
from rvm_pymc.models.data import model_data
from rvm_pymc.models.spec import ModelSpec

__all__ = [
    "CHECK_RTOL",
    "BinaryEvidence",
    "CompiledEvidence",
    "LaplaceModeError",
    "evidence_of",
    "solve_mode",
]

CHECK_RTOL = 1e-8
""":func:`evidence_of` uses :class:`BinaryEvidence` only if it reproduces the
compiled ``J`` and gradient to this relative tolerance."""


class LaplaceModeError(RuntimeError):
    """The inner Newton solve of the Laplace approximation failed where it must not."""


def solve_mode(fns, w0: np.ndarray, log_alpha: np.ndarray):
    """``newton_mode`` with its failure as a value: ``(w*, H, ok)``.

    ``fns`` is anything with ``psi`` and ``newton`` as
    :class:`~rvm_pymc.inference._laplace.LaplaceFunctions`.

    ``ok`` is False when step halving failed (newton_mode's warning is
    replaced by the value), the iteration cap was reached, ``H`` is not
    positive definite to working precision, or anything is non-finite.
    """
    if not np.all(np.isfinite(log_alpha)):
        return w0, None, False
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        with np.errstate(over="ignore", invalid="ignore"):
            try:
                w, H, ok = newton_mode(fns, w0, log_alpha)
            except np.linalg.LinAlgError:
                return w0, None, False
    return w, H, bool(ok and np.all(np.isfinite(w)))


class CompiledEvidence:
    """``J(log alpha)`` and its gradient from the compiled Laplace functions (any classifier).

    :func:`~rvm_pymc.inference._laplace.newton_mode` finds ``w*``, warm-started
    from the previous mode; :meth:`LaplaceFunctions.outer
    <rvm_pymc.inference._laplace.LaplaceFunctions.outer>` gives ``J`` and its
    exact gradient (implicit differentiation, third derivatives included).
    ``psi`` and ``newton`` are those of the functions, for :func:`solve_mode`.
    """

    name = "compiled"

    def __init__(self, fns: LaplaceFunctions) -> None:
        self.fns = fns
        self.shape = fns.shape
        self.psi, self.newton = fns.psi, fns.newton
        self._w = np.zeros(int(np.prod(fns.shape)))  # warm start of the next solve

    def __call__(self, log_alpha: np.ndarray) -> tuple[float, np.ndarray, bool]:
        """``(J, dJ/dlog_alpha, ok)``; ``(-inf, 0, False)`` when the solve fails."""
        la = np.asarray(log_alpha, dtype=float)
        w, _, ok = solve_mode(self, self._w, la)
        if not ok:
            return -np.inf, np.zeros_like(la), False
        J, grad = self.fns.outer(w, la)
        J, grad = float(J), np.asarray(grad, dtype=float)
        if not (np.isfinite(J) and np.all(np.isfinite(grad))):
            return -np.inf, np.zeros_like(la), False
        self._w = w
        return J, grad, True


class BinaryEvidence:
    """``J(log alpha)`` and its gradient of the binary classifier in closed form (NumPy).

    For ``y ~ Bernoulli(sigmoid(Phi w))``, ``w_m ~ N(0, 1/alpha_m)`` and a
    prior ``pi(log alpha)`` (the model's own, compiled from it), with
    ``p = sigmoid(Phi w*)``, ``d = p(1 - p)``, ``H = Phi^T diag(d) Phi + A``
    and ``Sigma = H^-1``:

    .. math::

        J = \\sum_n [y_n f_n - \\log(1 + e^{f_n})]
            + \\tfrac12 \\sum_m (\\log\\alpha_m - \\alpha_m w_m^{*2})
            - \\tfrac12 \\log|H| + \\log\\pi(\\log\\alpha),

        \\frac{dJ}{d\\log\\alpha_m} = \\tfrac12
            - \\tfrac12\\alpha_m (w_m^{*2} + \\Sigma_{mm})
            + \\tfrac12 \\alpha_m w^*_m (\\Sigma v)_m
            + \\frac{\\partial \\log\\pi}{\\partial\\log\\alpha_m},

    where ``v = Phi^T (p(1-p)(1-2p) * s)``, ``s_n = (Phi Sigma Phi^T)_nn``, is
    the gradient of ``log|H|`` in ``w`` (the third derivative of the
    likelihood) and ``-alpha_m w*_m Sigma e_m = dw*/dlog alpha_m`` (implicit
    function theorem: ``dg/dlog alpha_m = -alpha_m w_m e_m``).  The same
    ``J`` and gradient as :class:`CompiledEvidence` (tested to 1e-10), at
    about half the cost: the factor of ``H`` from the last Newton step is
    reused, and that derivative predicts the next call's mode to first order,
    which saves Newton steps.
    """

    name = "binary_closed_form"

    def __init__(self, Phi: np.ndarray, y: np.ndarray, log_prior) -> None:
        self.Phi, self.y, self.log_prior = Phi, y.astype(float), log_prior
        self.shape = (Phi.shape[1],)
        self._last: tuple | None = None  # (log_alpha, w*, Sigma) of the last success

    def psi(self, w: np.ndarray, log_alpha: np.ndarray) -> float:
        """The log density in ``w`` up to terms free of ``w`` (enough for step halving)."""
        f = self.Phi @ w
        return float(np.sum(self.y * f + log_expit(-f)) - 0.5 * np.sum(np.exp(log_alpha) * w**2))

    def newton(self, w: np.ndarray, log_alpha: np.ndarray):
        """``(Psi, g, H)`` of :func:`~rvm_pymc.inference._laplace.newton_mode`."""
        alpha = np.exp(log_alpha)
        f = self.Phi @ w
        p = expit(f)
        g = self.Phi.T @ (self.y - p) - alpha * w
        H = self.Phi.T @ (self.Phi * (p * (1.0 - p))[:, None])
        H[np.diag_indices_from(H)] += alpha
        return self.psi(w, log_alpha), g, H

    def __call__(self, log_alpha: np.ndarray) -> tuple[float, np.ndarray, bool]:
        """``(J, dJ/dlog_alpha, ok)``; ``(-inf, 0, False)`` when the solve fails."""
        la = np.asarray(log_alpha, dtype=float)
        fail = -np.inf, np.zeros_like(la), False
        w0 = np.zeros(self.shape)
        if self._last is not None:  # first-order prediction of the new mode
            la_0, w_0, Sigma_0 = self._last
            w0 = w_0 - Sigma_0 @ (np.exp(la_0) * w_0 * (la - la_0))
        w, H, ok = solve_mode(self, w0, la)
        if not ok:
            return fail
        with np.errstate(over="ignore", invalid="ignore"):
            try:
                L, pj = spd_factor(H, "negative Hessian")
            except np.linalg.LinAlgError:
                return fail
            Sigma = factor_inverse(L, pj)
            alpha = np.exp(la)
            f = self.Phi @ w
            p = expit(f)
            s = np.einsum("nm,nm->n", self.Phi @ Sigma, self.Phi)
            v = self.Phi.T @ (p * (1.0 - p) * (1.0 - 2.0 * p) * s)
            lp, dlp = self.log_prior(la)
            J = (
                float(np.sum(self.y * f + log_expit(-f)))
                + 0.5 * float(np.sum(la - alpha * w**2))
                - 0.5 * factor_logdet(L, pj)
                + float(lp)
            )
            grad = (
                0.5
                - 0.5 * alpha * (w**2 + np.diag(Sigma))
                + 0.5 * alpha * w * (Sigma @ v)
                + np.asarray(dlp, dtype=float)
            )
        if not (np.isfinite(J) and np.all(np.isfinite(grad))):
            return fail
        self._last = (la, w, Sigma)
        return J, grad, True


def _log_prior_function(model: pm.Model, mode):
    """``log_alpha -> (log pi, grad)``: the model's own prior of ``log_alpha``, compiled."""
    rv = model["log_alpha"]
    value = model.rvs_to_values[rv]
    lp = model.logp(vars=[rv], jacobian=True)
    kw = {"mode": mode} if mode is not None else {}
    fn = model.compile_fn([lp, pt.grad(lp, value)], inputs=[value], point_fn=False, **kw)
    return fn


def evidence_of(model: pm.Model, spec: ModelSpec, fns: LaplaceFunctions, mode=None):
    """The evaluator of ``J`` for ``model``: :class:`BinaryEvidence` where it applies.

    The closed form is used for a binary model when it reproduces the
    compiled ``J`` and gradient (:class:`CompiledEvidence`) at ``log alpha = 0``
    to :data:`CHECK_RTOL` (a model with the package's names but another
    likelihood does not, and gets the compiled evaluator); softmax models use
    the compiled one.  The evaluator's ``name`` says which (root attribute
    ``laplace_evaluator`` of the result).
    """
    compiled = CompiledEvidence(fns)
    if spec.kind != "binary":
        return compiled
    closed = BinaryEvidence(fns.Phi, model_data(model, "y"), _log_prior_function(model, mode))
    la = np.zeros(fns.shape[0])
    J_c, g_c, ok_c = compiled(la)
    J_b, g_b, ok_b = closed(la)
    closed._last = None  # start the sampler from a cold solve, as the compiled one
    compiled._w = np.zeros(int(np.prod(fns.shape)))
    if not (ok_c and ok_b):
        raise LaplaceModeError("the Laplace mode at log alpha = 0 could not be found")
    scale = 1.0 + np.max(np.abs(g_c))
    agree = abs(J_b - J_c) <= CHECK_RTOL * (1.0 + abs(J_c)) and np.all(
        np.abs(g_b - g_c) <= CHECK_RTOL * scale
    )
    return closed if agree else compiled
