r"""The compiled Laplace evidence of a PyMC classifier (any model density).

With ``Psi(w, log_alpha)`` the model's log density,

.. math::

    J(\\log\\alpha) = \\Psi(w^*, \\log\\alpha) + \\tfrac{D}{2}\\log 2\\pi
        - \\tfrac12 \\log|H|, \\qquad H = -\\nabla^2_w \\Psi(w^*),

and its exact gradient by the implicit function theorem (PyTensor
differentiates ``g^T u`` with ``u = H^-1 dJ/dw`` held fixed).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pytensor.tensor as pt
from pytensor.gradient import disconnected_grad, jacobian
from pytensor.graph.replace import graph_replace
from pytensor.tensor.linalg import cholesky, solve_triangular
from scipy.linalg import eigh

from rvm_pymc._core.gaussian import LOG_2PI
from rvm_pymc._core.laplace import newton_mode as core_newton_mode
from rvm_pymc.exceptions import ConvergenceWarning, warn_user

AXIS_CHECK_FACTOR = 4.0
"""Trust the Laplace approximation while :func:`axis_check` is at most ``log`` of this."""


@dataclass(frozen=True)
class LaplaceFunctions:
    """Compiled ``psi``, ``newton`` (Psi, gradient, H) and ``outer`` (J, dJ) of one model.

    ``Phi`` is an input, so :meth:`restrict` gives them on any subset of the bases; ``w``
    is flat, basis-major.
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
    """Compile ``Psi``, its Newton pieces and ``(J, dJ/dlog_alpha)`` for ``model``."""
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
    compiled = tuple(
        model.compile_fn(out, inputs=inputs, point_fn=False, **kw)
        for out in (psi, [psi, g, H], [J, total])
    )
    return LaplaceFunctions(shape, np.asarray(Phi_data.get_value(), dtype=float), compiled)


def newton_mode(
    fns: LaplaceFunctions,
    w0: np.ndarray,
    log_alpha: np.ndarray,
    *,
    max_iter: int = 100,
    tol: float = 1e-11,
) -> tuple[np.ndarray, np.ndarray, bool]:
    """``(w*, H, converged)`` maximising ``Psi(., log_alpha)`` (the last small step taken
    too: an error in ``w*`` enters ``J`` to first order)."""
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
        warn_user(
            "Newton step halving failed to increase the log density; the inner "
            "Laplace mode is inaccurate",
            ConvergenceWarning,
        )
    return r.w, r.H, r.converged


def axis_check(
    fns: LaplaceFunctions, w: np.ndarray, log_alpha: np.ndarray, H: np.ndarray
) -> float:
    """The largest ``|log(2 fall)|`` of ``Psi`` one sd along each principal axis of ``H``
    (both ways; 0 for a Gaussian, ``inf`` if not finite)."""
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
