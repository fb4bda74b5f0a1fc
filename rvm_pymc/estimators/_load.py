"""``load``: read any estimator written by its ``save`` method."""

from __future__ import annotations

from rvm_pymc.estimators._classes import RVC, RVR
from rvm_pymc.estimators._counts import RVP

__all__ = ["load"]


def load(path):
    """Read an :class:`RVR`, :class:`RVC` or :class:`RVP` written by its ``save`` method.

    Parameters
    ----------
    path : str or path-like

    Returns
    -------
    RVR, RVC or RVP
        Whichever the file holds.

    Raises
    ------
    ValueError
        If the file was not written by ``save``, fails its checksum (modified
        or corrupted) or holds an inconsistent model.
    """
    from rvm_pymc.estimators._io import load_estimator

    return load_estimator(path, {"RVR": RVR, "RVC": RVC, "RVP": RVP})
