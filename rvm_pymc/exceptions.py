"""Warnings and errors raised by rvm_pymc, and :func:`warn_user`, which raises a warning
at the user's line."""

import os
import warnings

_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def warn_user(message: str, category: type[Warning]) -> None:
    """``warnings.warn`` at the first frame outside this package: the user's line, however
    deep in the package the warning is raised (no stack level to count by hand)."""
    warnings.warn(message, category, skip_file_prefixes=(_PACKAGE,))


class ConvergenceWarning(UserWarning):
    """A fit stopped before its convergence criterion was met."""


class SamplingWarning(UserWarning):
    """MCMC diagnostics (divergences, R-hat, ESS) indicate an unreliable posterior."""


class PriorWarning(UserWarning):
    """The chosen hyperprior is unsuitable for the requested fit (e.g. near-improper for NUTS)."""


class InterpolationWarning(UserWarning):
    """A type-II fit interpolates its training data (most rows relevant, or the noise at its
    bound): its predictive bands are too narrow (``rvm_pymc._core.interpolation``)."""
