"""The results of the reference fits: regression, and classification with its predictions."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.special import expit, logsumexp

from rvm_pymc.priors import HyperPrior


class SparseFitMixin:
    """Accessors of the reference results (from ``n_basis``, ``active``, ``alpha``, ``mean``)."""

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

    All quantities are on the scale of the columns of ``Phi`` as given.

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
        the targets (almost) exactly and the evidence has no maximum.
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
            Design matrix of the new points, all ``M`` columns (pruned ones ignored).
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
        var = np.maximum(np.sum((Pa @ self.cov) * Pa, axis=1), 0.0)
        if include_noise:
            var = var + 1.0 / self.beta
        return mean, np.sqrt(var)


def probit_scale(var: np.ndarray) -> np.ndarray:
    """MacKay's (1992) factor ``kappa(s^2) = (1 + pi s^2 / 8)^(-1/2)``."""
    return 1.0 / np.sqrt(1.0 + np.pi * np.maximum(var, 0.0) / 8.0)


@dataclass
class ClassificationResult(SparseFitMixin):
    """Outcome of a reference RVM classification fit (Laplace approximation).

    Quantities are on the scale of the columns of ``Phi`` as given.

    Attributes
    ----------
    method, n_basis, active, converged
        As in :class:`RegressionResult`.
    prior : HyperPrior
        The Gamma hyperprior; only ``a`` and ``b`` (on ``alpha``) enter, and a
        slab ``s``: the weights' prior precisions are then ``alpha + 1/s^2``.
    classes : ndarray of shape (K,)
        The distinct labels, sorted, with the dtype they were given in.
    alpha : ndarray of shape (M_active,)
        ARD precisions of the active columns (shared by the K weights of a
        basis in the softmax model).
    mean : ndarray
        Posterior mode of the active weights: shape (M_active,) for two
        classes (the logit of ``classes[1]``), (M_active, K) for K > 2.
    cov : ndarray
        Laplace covariance (inverse Hessian at the mode): (M_active, M_active)
        for two classes; (M_active K, M_active K) for K > 2 in class-major
        order, ``cov[k M_a + i, l M_a + j] = Cov(W[i, k], W[j, l])``.
    log_likelihood : float
        ``log p(t | w*)`` at the mode.
    log_evidence : float
        Laplace approximation to the log evidence plus the hyperprior terms
        ``sum(a log alpha - b alpha)`` (docs/design.md section 1).
    n_iter : int
        Hyperparameter iterations used.
    trace : dict of ndarray
        Per iteration: ``"log_evidence"`` (Laplace, with hyperprior terms; it
        need not increase at every re-estimation) and ``"n_active"``; the fast
        method also records ``"action"`` (0 re-estimate, 1 add, 2 delete).
    """

    method: str
    prior: HyperPrior
    classes: np.ndarray
    n_basis: int
    active: np.ndarray
    alpha: np.ndarray
    mean: np.ndarray
    cov: np.ndarray
    log_likelihood: float
    log_evidence: float
    n_iter: int
    converged: bool
    trace: dict[str, np.ndarray] = field(repr=False)

    @property
    def n_classes(self) -> int:
        """Number of classes K."""
        return int(self.classes.size)

    def decision_function(self, Phi_new) -> np.ndarray:
        """Latent values at the mode: ``Phi_new w*``.

        Returns
        -------
        ndarray
            Shape (n,) for two classes (positive favours ``classes[1]``), or the
            K class logits, shape (n, K).
        """
        return self._active_columns(Phi_new) @ self.mean

    def latent_cov(self, Phi_new) -> np.ndarray:
        """Posterior variance of the latent values under the Laplace approximation.

        Returns
        -------
        ndarray
            Shape (n,) for two classes (``phi^T Sigma phi``); shape (n, K, K)
            for K > 2 (``Cov(f_k, f_l)`` at each point).
        """
        Pa = self._active_columns(Phi_new)
        if self.mean.ndim == 1:
            return np.maximum(np.einsum("ij,jk,ik->i", Pa, self.cov, Pa), 0.0)
        m, k = self.mean.shape
        blocks = self.cov.reshape(k, m, k, m)
        return np.einsum("ia,kalb,ib->ikl", Pa, blocks, Pa)

    def predict_proba(self, Phi_new, moderated: bool = True) -> np.ndarray:
        """Class probabilities, columns in the order of ``classes``.

        Parameters
        ----------
        Phi_new : array_like of shape (n, M)
            Design matrix of the new points with all ``M`` columns.
        moderated : bool
            Integrate over the Laplace posterior of the weights (approximately);
            False gives the probabilities at the posterior mode.

        Returns
        -------
        ndarray of shape (n, K)

        Notes
        -----
        Two classes: MacKay's (1992) probit approximation
        ``p = sigmoid(kappa(s^2) mu)`` with ``mu = phi^T w*``, ``s^2 = phi^T
        Sigma phi`` and ``kappa(s^2) = (1 + pi s^2 / 8)^(-1/2)``.

        K > 2: the same approximation applied to every pairwise logit
        difference (a mean-field approximation of the Gaussian-softmax
        integral),

        .. math::

            \\tilde p_k = \\Big[\\sum_j
                \\exp\\big(-\\kappa(v_{kj}) (\\mu_k - \\mu_j)\\big)\\Big]^{-1},
            \\qquad v_{kj} = \\mathrm{Var}(f_k - f_j),

        then normalised to sum to one.  It reduces to the softmax of the mode
        when the variances vanish, and to the binary probit approximation
        when K = 2 (the correlation of the logits enters through ``v_kj``).

        References
        ----------
        MacKay, D. J. C. (1992). The evidence framework applied to
        classification networks. *Neural Computation* 4(5), 720-736.
        """
        mu = self.decision_function(Phi_new)
        if self.mean.ndim == 1:
            f = mu * probit_scale(self.latent_cov(Phi_new)) if moderated else mu
            p1 = expit(f)
            return np.column_stack([1.0 - p1, p1])
        if not moderated:
            return np.exp(mu - logsumexp(mu, axis=1, keepdims=True))
        C = self.latent_cov(Phi_new)
        d = np.einsum("ikk->ik", C)
        v = d[:, :, None] + d[:, None, :] - C - np.transpose(C, (0, 2, 1))
        diff = mu[:, :, None] - mu[:, None, :]  # mu_k - mu_j
        logp = -logsumexp(-probit_scale(v) * diff, axis=2)
        return np.exp(logp - logsumexp(logp, axis=1, keepdims=True))

    def predict(self, Phi_new) -> np.ndarray:
        """Most probable class under the moderated probabilities, as the labels given.

        For two classes this is the sign of :meth:`decision_function` (the
        moderation never moves a probability across 0.5).
        """
        idx = np.argmax(self.predict_proba(Phi_new, moderated=True), axis=1)
        return self.classes[idx]
