"""Result container shared by the reference regression fits."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from rvm_pymc.priors import HyperPrior


class SparseFitMixin:
    """Accessors shared by the reference results (needs ``n_basis``, ``active``,
    ``alpha`` and ``mean`` attributes)."""

    @property
    def n_relevance(self) -> int:
        """Number of relevant basis functions."""
        return int(self.active.size)

    def alpha_full(self) -> np.ndarray:
        """ARD precisions of all ``M`` columns, ``inf`` for pruned ones."""
        out = np.full(self.n_basis, np.inf)
        out[self.active] = self.alpha
        return out

    def _active_columns(self, Phi_new) -> np.ndarray:
        """The active columns of a design matrix ``Phi_new`` over all ``M`` bases, checked."""
        Phi_new = np.asarray(Phi_new, dtype=float)
        if Phi_new.ndim != 2 or Phi_new.shape[1] != self.n_basis:
            raise ValueError(
                f"Phi_new must have shape (n, {self.n_basis}); got {np.shape(Phi_new)}"
            )
        return Phi_new[:, self.active]

    def coef_full(self) -> np.ndarray:
        """Posterior mean (mode) of all weights, zero for pruned columns: (M,) or (M, K)."""
        out = np.zeros((self.n_basis, *np.shape(self.mean)[1:]))
        out[self.active] = self.mean
        return out


@dataclass
class RegressionResult(SparseFitMixin):
    """Outcome of a reference RVM regression fit.

    All quantities are on the scale of the columns of ``Phi`` as given (any
    internal column normalisation has been undone).

    Attributes
    ----------
    method : str
        ``"fast"``, ``"mackay"`` or ``"em"``.
    prior : HyperPrior
        The Gamma hyperprior (a, b, c, d) used, and its slab ``s`` if any (the
        weights' prior precisions are then ``alpha + 1/s^2``).
    n_basis : int
        Number of columns ``M`` of the design matrix.
    active : ndarray of int, shape (M_active,)
        Indices of the relevant (unpruned) columns, increasing.
    alpha : ndarray, shape (M_active,)
        ARD precisions of the active columns (>= 0 with a slab, else > 0).
    beta : float
        Noise precision.
    mean, cov : ndarray
        Posterior mean (M_active,) and covariance (M_active, M_active) of the
        active weights.
    gamma : ndarray, shape (M_active,)
        ``1 - alpha_m Sigma_mm`` (``alpha_m + 1/s^2`` with a slab): how well
        determined each weight is.
    log_marginal_likelihood : float
        ``log N(t | 0, I/beta + Phi A^-1 Phi^T)`` at the optimum (``A + I/s^2``
        with a slab).
    log_evidence : float
        The objective maximised: the log marginal likelihood plus the
        hyperprior terms of docs/design.md (equal to it for the ``"evidence"`` preset).
    n_iter : int
        Iterations used.
    converged : bool
        Whether the stopping criterion was met within ``max_iter``.
    trace : dict of ndarray
        Per iteration: ``"log_evidence"``, ``"n_active"``, ``"beta"``; the fast
        method also records ``"action"`` (0 re-estimate, 1 add, 2 delete,
        3 noise update).
    noise_at_bound : bool
        Whether the noise precision ended at its upper bound: the basis fits
        the targets (almost) exactly, and the evidence grows without bound as
        the noise vanishes, so its value is not that of a maximum.
    """

    method: str
    prior: HyperPrior
    n_basis: int
    active: np.ndarray
    alpha: np.ndarray
    beta: float
    mean: np.ndarray
    cov: np.ndarray
    gamma: np.ndarray
    log_marginal_likelihood: float
    log_evidence: float
    n_iter: int
    converged: bool
    trace: dict[str, np.ndarray] = field(repr=False)
    noise_at_bound: bool = False

    def predict(
        self, Phi_new, return_std: bool = False, include_noise: bool = True
    ) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
        """Predictive mean (and sd) at new points.

        Parameters
        ----------
        Phi_new : array_like of shape (n, M)
            Design matrix of the new points, with all ``M`` columns (the
            pruned ones are ignored).
        return_std : bool
            Also return the predictive standard deviation.
        include_noise : bool
            Include the noise variance ``1/beta``; False gives the sd of the
            latent function ``phi(x)^T w``.

        Returns
        -------
        mean : ndarray of shape (n,)
        std : ndarray of shape (n,), only when ``return_std``
            ``sqrt(1/beta + phi(x)^T Sigma phi(x))``, computed row by row
            without an n x n matrix.
        """
        Pa = self._active_columns(Phi_new)
        mean = Pa @ self.mean
        if not return_std:
            return mean
        var = np.sum((Pa @ self.cov) * Pa, axis=1)
        var = np.maximum(var, 0.0)
        if include_noise:
            var = var + 1.0 / self.beta
        return mean, np.sqrt(var)
