"""Held-out scoring of a fitted RVR/RVC/RVP (of :func:`rvm_pymc.compare` and ``gamma="cv"``):
shuffled folds and pointwise predictive densities, read through the estimators' public API.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import logsumexp, ndtr, ndtri

from rvm_pymc._core.counts import mixture_logpmf, mixture_mean, mixture_quantiles
from rvm_pymc._core.gaussian import LOG_2PI

__all__ = ["Predictive", "predictive", "shuffled_folds"]


@dataclass(frozen=True)
class Predictive:
    """The predictive distribution of one fit at ``n`` new inputs.

    Regression: an equal-weight mixture of ``S`` Gaussians, ``loc`` and ``scale``
    ``(S, n)`` (``S = 1`` type-II).  Classification: ``proba`` ``(n, K)`` in the order of
    ``classes``.  Counts: a :class:`~rvm_pymc._core.counts.CountsMixture`'s fields.
    """

    loc: np.ndarray | None = None
    scale: np.ndarray | None = None
    proba: np.ndarray | None = None
    classes: np.ndarray | None = None
    rates: np.ndarray | None = None
    weights: np.ndarray | None = None
    dispersion: float | np.ndarray | None = None

    @property
    def is_regression(self) -> bool:
        return self.loc is not None

    @property
    def is_counts(self) -> bool:
        return self.rates is not None

    def mean(self) -> np.ndarray:
        """Predictive mean (regression, counts)."""
        if self.is_counts:
            return mixture_mean(self.rates, self.weights)
        return self.loc.mean(axis=0)

    def log_density(self, y, name: str = "y") -> np.ndarray:
        """``log p(y_i | x_i, data)`` for every new point, shape ``(n,)``; an error names ``y``
        as ``name``."""
        if self.is_counts:
            return mixture_logpmf(y, self.rates, self.weights, self.dispersion)
        if self.is_regression:
            y = np.asarray(y, dtype=float)
            z = (y[None, :] - self.loc) / self.scale
            comp = -0.5 * (z * z + LOG_2PI) - np.log(self.scale)
            return logsumexp(comp, axis=0) - np.log(self.loc.shape[0])
        idx = self.class_index(y, name)
        p = self.proba[np.arange(idx.size), idx]
        with np.errstate(divide="ignore"):
            return np.log(p)

    def class_index(self, y, name: str = "y") -> np.ndarray:
        """Positions of the labels ``y`` in ``classes``; ValueError naming ``name`` for an
        unseen label."""
        y, classes = np.asarray(y), self.classes
        idx = np.clip(np.searchsorted(classes, y), 0, classes.size - 1)
        bad = classes[idx] != y
        if np.any(bad):
            raise ValueError(
                f"{name} has labels not among the classes {classes.tolist()} the classifier was "
                f"fitted on: {np.unique(y[bad]).tolist()[:5]}"
            )
        return idx

    def cdf(self, y) -> np.ndarray:
        """Predictive CDF at the observed targets (regression), shape ``(n,)``."""
        z = (np.asarray(y, dtype=float)[None, :] - self.loc) / self.scale
        return ndtr(z).mean(axis=0)

    def quantile(self, q: float, rtol: float = 1e-9) -> np.ndarray:
        """Quantile ``q`` at every new input (regression), by safeguarded Newton on the CDF."""
        loc, scale = self.loc, self.scale
        z = float(ndtri(q))
        lo = np.min(loc + min(z, 0.0) * scale - scale, axis=0)  # CDF(lo) < q
        hi = np.max(loc + max(z, 0.0) * scale + scale, axis=0)  # CDF(hi) > q
        tol = rtol * np.min(scale, axis=0)
        # start at the quantile of the Gaussian with the mixture's mean and variance
        m = loc.mean(axis=0)
        x = np.clip(m + z * np.sqrt(np.mean(scale**2 + (loc - m) ** 2, axis=0)), lo, hi)
        for _ in range(200):
            F = self.cdf(x) - q
            u = (x[None, :] - loc) / scale
            f = (np.exp(-0.5 * u * u) / scale).mean(axis=0) / np.sqrt(2.0 * np.pi)
            lo = np.where(F < 0, x, lo)
            hi = np.where(F < 0, hi, x)
            with np.errstate(divide="ignore", invalid="ignore"):
                step = x - F / f
            bad = ~np.isfinite(step) | (step < lo) | (step > hi)
            new = np.where(bad, 0.5 * (lo + hi), step)
            done = np.abs(new - x) <= tol
            x = new
            if np.all(done):
                break
        return x

    def coverage(self, y, prob: float) -> float:
        """Fraction of ``y`` inside the central ``prob`` predictive interval.

        ``|F_i(y_i) - 1/2| <= prob / 2`` (no quantile needed); counts: between the
        ``(1 -+ prob) / 2`` quantiles, ends included.
        """
        if self.is_counts:
            y = np.asarray(y, dtype=float)
            mix = (self.rates, self.weights, self.dispersion)
            lo = mixture_quantiles(0.5 * (1.0 - prob), *mix)
            hi = mixture_quantiles(0.5 * (1.0 + prob), *mix)
            return float(np.mean((y >= lo) & (y <= hi)))
        return float(np.mean(np.abs(self.cdf(y) - 0.5) <= prob / 2.0))


def predictive(fit, X, *, random_state=None) -> Predictive:
    """The :class:`Predictive` of a fitted RVR, RVC or RVP at ``X`` (``random_state``: of
    ``sample_predictions``' replicates, which the densities do not use)."""
    if hasattr(fit, "predict_proba"):
        return Predictive(proba=np.asarray(fit.predict_proba(X)), classes=fit.classes_)
    if fit.posterior_.kind in ("poisson", "negative_binomial"):
        rates, weights, dispersion = fit.predictive_mixture(X)
        return Predictive(rates=rates, weights=weights, dispersion=dispersion)
    post = fit.posterior_
    if post.is_type_ii:
        mean, sd = fit.predict(X, return_std=True)
        return Predictive(loc=np.asarray(mean)[None, :], scale=np.asarray(sd)[None, :])
    tree = fit.sample_predictions(X, random_state=random_state)
    mu = np.asarray(tree["predictions"]["mu"].values, dtype=float)
    log_beta = np.asarray(fit.idata_["posterior"]["log_beta"].values, dtype=float)
    loc = mu.reshape(-1, mu.shape[-1])
    scale = np.exp(-0.5 * log_beta.reshape(-1))[:, None] * np.ones_like(loc)
    return Predictive(loc=loc, scale=scale)


def shuffled_folds(y, k: int, stratified: bool, seed) -> list[tuple[np.ndarray, np.ndarray]]:
    """``k`` shuffled folds of the rows of ``y`` (stratified by ``y`` for a classifier)."""
    from sklearn.model_selection import KFold, StratifiedKFold

    splitter = StratifiedKFold if stratified else KFold
    return list(splitter(k, shuffle=True, random_state=seed).split(y, y))
