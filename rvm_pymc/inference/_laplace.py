"""Laplace-approximate evidence of the RVM classifiers, built from the PyMC model.

For the centred classification models of :mod:`rvm_pymc.models` with free
values ``log_alpha`` and ``w`` (or ``W``), let ``Psi(w, log_alpha)`` be the
model's log density (likelihood, ARD prior of the weights and log-coordinate
hyperprior).  The Laplace approximation of the log evidence is

.. math::

    J(\\log\\alpha) = \\Psi(w^*, \\log\\alpha) + \\tfrac{D}{2}\\log 2\\pi
        - \\tfrac12 \\log|H|, \\qquad H = -\\nabla^2_w \\Psi(w^*),

where ``w*`` maximises ``Psi`` over ``w`` (found by Newton's method with step
halving).  Its gradient is exact: with ``g = grad_w Psi`` and
``u = H^-1 dJ/dw``, the implicit function theorem gives

.. math::

    \\frac{dJ}{d\\log\\alpha} = \\frac{\\partial J}{\\partial\\log\\alpha}
        + \\frac{\\partial (g^T u)}{\\partial \\log\\alpha}\\Big|_{u\\ \\mathrm{fixed}},

which PyTensor differentiates symbolically (third derivatives of the
likelihood included).  Tipping's re-estimation instead holds the likelihood
curvature fixed at the mode, so its fixed point differs from the maximiser of
``J`` by that third-derivative term.

References
----------
Tipping, M. E. (2001). Sparse Bayesian learning and the relevance vector
machine. *Journal of Machine Learning Research* 1, 211-244, section 4.

MacKay, D. J. C. (1992). The evidence framework applied to classification
networks. *Neural Computation* 4, 720-736.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, replace

import numpy as np
import pytensor.tensor as pt
from pytensor.gradient import disconnected_grad, jacobian
from pytensor.graph.replace import graph_replace
from pytensor.tensor.linalg import cholesky, solve_triangular
from scipy.linalg import eigh

from rvm_pymc._core.laplace import newton_mode as core_newton_mode
from rvm_pymc.exceptions import ConvergenceWarning

LOG_2PI = float(np.log(2.0 * np.pi))
AXIS_CHECK_FACTOR = 4.0
"""The Laplace approximation at a mode is trusted when, one standard deviation
along every principal axis of its Gaussian, the log density falls by 1/2 within
this factor (between 1/8 and 2): see :func:`axis_check`."""


@dataclass(frozen=True)
class LaplaceFunctions:
    """Compiled pieces of the Laplace evidence of one model, on a set of its bases.

    The functions are compiled once with the design matrix as an input, so
    :meth:`restrict` gives the same functions on any subset of the bases
    (columns of ``Phi``) without compiling again: an active-set optimiser
    pays ``O((m K)^3)`` per gradient for ``m`` active bases instead of
    ``O((M K)^3)``.  ``psi``, ``newton`` and ``outer`` take ``(w, log_alpha)``
    of the current bases (``w`` flat, basis-major).
    """

    shape: tuple[int, ...]
    Phi: np.ndarray
    compiled: tuple
    columns: np.ndarray | None = None

    def restrict(self, columns) -> LaplaceFunctions:
        """The same functions on the bases ``columns`` (indices into the full model)."""
        columns = np.asarray(columns, dtype=np.intp)
        shape = (columns.size, *self.shape[1:])
        return replace(self, shape=shape, Phi=self.Phi[:, columns], columns=columns)

    def psi(self, w, log_alpha):
        """``Psi(w, log_alpha)``, the model's log density."""
        return self.compiled[0](w, log_alpha, self.Phi)

    def newton(self, w, log_alpha):
        """``Psi``, ``grad_w Psi`` and ``H = -grad_w^2 Psi``."""
        return self.compiled[1](w, log_alpha, self.Phi)

    def outer(self, w, log_alpha):
        """``J`` and its exact gradient ``dJ/dlog_alpha`` (``w`` the mode)."""
        return self.compiled[2](w, log_alpha, self.Phi)


def compile_laplace(model, weight_name: str, mode=None) -> LaplaceFunctions:
    """Compile ``Psi``, its Newton pieces and ``(J, dJ/dlog_alpha)`` for ``model``.

    The model's ``Phi`` data container, ``log_alpha`` and the weights are
    replaced by inputs of any number of bases (see :class:`LaplaceFunctions`).
    """
    la_value = model.rvs_to_values[model["log_alpha"]]
    wv = model.rvs_to_values[model[weight_name]]
    shape = tuple(int(s) for s in model.initial_point()[wv.name].shape)
    Phi_data = model["Phi"]
    Phi_in = pt.matrix("Phi_active")
    la = pt.vector("log_alpha_active")
    w_flat = pt.vector("w_flat")
    w = w_flat.reshape((-1, *shape[1:]))
    subs = {wv: w, la_value: la, Phi_data: Phi_in}
    n_basis = model.dim_lengths.get("basis")
    if n_basis is not None and not isinstance(n_basis, pt.TensorConstant):
        subs[n_basis] = la.shape[0]  # a mutable dimension may enter a broadcast check
    psi = graph_replace(model.logp(jacobian=True), subs, strict=False)
    n_w = w_flat.shape[0]
    g = pt.grad(psi, w_flat)
    H = -jacobian(g, w_flat, vectorize=True)
    H = 0.5 * (H + H.T)
    p = 1.0 / pt.sqrt(pt.diag(H))
    Ls = cholesky(H * p[:, None] * p[None, :], lower=True)
    logdet = 2.0 * pt.sum(pt.log(pt.diag(Ls))) - 2.0 * pt.sum(pt.log(p))
    J = psi + 0.5 * n_w * LOG_2PI - 0.5 * logdet
    dJ_dw, dJ_dla = pt.grad(J, [w_flat, la])
    v = solve_triangular(Ls, p * dJ_dw, lower=True)
    u = disconnected_grad(p * solve_triangular(Ls.T, v, lower=False))
    total = dJ_dla + pt.grad(pt.dot(g, u), la)
    kw = {"mode": mode} if mode is not None else {}
    inputs = [w_flat, la, Phi_in]
    return LaplaceFunctions(
        shape=shape,
        Phi=np.asarray(Phi_data.get_value(), dtype=float),
        compiled=(
            model.compile_fn(psi, inputs=inputs, point_fn=False, **kw),
            model.compile_fn([psi, g, H], inputs=inputs, point_fn=False, **kw),
            model.compile_fn([J, total], inputs=inputs, point_fn=False, **kw),
        ),
    )


def newton_mode(
    fns: LaplaceFunctions,
    w0: np.ndarray,
    log_alpha: np.ndarray,
    *,
    max_iter: int = 100,
    tol: float = 1e-11,
) -> tuple[np.ndarray, np.ndarray, bool]:
    """Maximise ``Psi(., log_alpha)``: :func:`rvm_pymc._core.laplace.newton_mode` on ``fns``.

    Returns ``(w*, H, converged)``, ``H`` the negative Hessian at ``w*``.  The
    last small step is taken too: ``J`` is not stationary in ``w``, so an
    error in ``w*`` enters ``J`` and its gradient to first order.
    """
    r = core_newton_mode(
        np.array(w0, dtype=float),
        lambda w: (float(fns.psi(w, log_alpha)),),
        lambda w, _: fns.newton(w, log_alpha)[1:],
        tol=tol,
        max_iter=max_iter,
        polish=True,
        what="negative Hessian",
    )
    if r.stalled and not r.converged:
        warnings.warn(
            "Newton step halving failed to increase the log density; the inner "
            "Laplace mode is inaccurate",
            ConvergenceWarning,
            stacklevel=3,
        )
    return r.w, r.H, r.converged


def axis_check(
    fns: LaplaceFunctions, w: np.ndarray, log_alpha: np.ndarray, H: np.ndarray
) -> float:
    """How far ``Psi`` is from the quadratic of the Laplace approximation at its mode.

    For the Gaussian ``N(w*, H^-1)`` the log density falls by exactly 1/2 one
    standard deviation from the mode along each principal axis of ``H``
    (eigenvectors of the Jacobi-scaled ``H``, both directions).  Returns the
    largest ``|log(fall / (1/2))|`` over the ``2 D`` points (``inf`` if ``Psi``
    is not finite there): 0 for an exactly Gaussian posterior, about 0.3 for
    the RVM classifiers' valid Laplace fits (falls 0.37-0.69, breast cancer,
    300 points).  Where the weights separate the training classes, the
    likelihood saturates: its curvature vanishes at the mode, the Gaussian's
    axis along the separating direction is as wide as the prior (e^10 at the
    lower bound of ``log alpha``) and one standard deviation back along it
    misclassifies points (falls of 1e6 seen): the Laplace evidence there is
    no approximation of the evidence.  Compare with
    ``log(AXIS_CHECK_FACTOR)``.
    """
    w = np.asarray(w, dtype=float)
    la = np.asarray(log_alpha, dtype=float)
    p = 1.0 / np.sqrt(np.diag(H))
    vals, vecs = eigh(H * p[:, None] * p[None, :])
    if not np.all(vals > 0):
        return float("inf")
    steps = p[:, None] * vecs / np.sqrt(vals)  # column i: one sd along axis i
    psi0 = float(fns.psi(w, la))
    worst = 0.0
    for i in range(steps.shape[1]):
        for sign in (1.0, -1.0):
            fall = psi0 - float(fns.psi(w + sign * steps[:, i], la))
            if not (np.isfinite(fall) and fall > 0):
                return float("inf")
            worst = max(worst, abs(float(np.log(2.0 * fall))))
    return worst
