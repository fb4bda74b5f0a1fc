"""Where :class:`~rvm_pymc.reference.ClassificationResult` was defined before it moved to
:mod:`rvm_pymc.reference._result`: kept so that results pickled then still load."""

from rvm_pymc.reference._result import ClassificationResult

__all__ = ["ClassificationResult"]
