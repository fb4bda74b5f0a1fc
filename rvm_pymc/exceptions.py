"""Warnings and errors raised by rvm_pymc."""


class ConvergenceWarning(UserWarning):
    """A fit stopped before its convergence criterion was met."""


class SamplingWarning(UserWarning):
    """MCMC diagnostics (divergences, R-hat, ESS) indicate an unreliable posterior."""


class PriorWarning(UserWarning):
    """The chosen hyperprior is unsuitable for the requested fit (e.g. near-improper for NUTS)."""


class InterpolationWarning(UserWarning):
    """A type-II fit interpolates its training data (most rows relevant, or the noise at its
    bound): its predictive bands are too narrow (``rvm_pymc._core.interpolation``)."""
