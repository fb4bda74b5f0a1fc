import functools
import os

# BLAS threads oversubscribe small machines (docs/design.md section 5).
for _var in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "OMP_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import matplotlib  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

matplotlib.use("Agg")


@functools.cache
def _noisy_sinc(n: int, low: float, high: float, seed: int, noise_sd: float):
    rng = np.random.default_rng(seed)
    X = np.linspace(low, high, n)[:, None]
    y = np.sinc(X[:, 0] / np.pi) + noise_sd * rng.standard_normal(n)
    return X, y


@pytest.fixture(scope="session")
def noisy_sinc():
    """The noisy sinc of the tests: ``noisy_sinc(n)`` -> ``(X, y)``, new arrays on every call.

    ``X`` is ``n`` evenly spaced points of ``[low, high]`` (default ``[-10, 10]``)
    as a column, ``y = sin(x)/x`` plus Gaussian noise of sd ``noise_sd``
    (default 0.1) drawn by ``numpy.random.default_rng(seed)`` (default 0).  The
    same arguments give the same data in every test file; the data are made
    once per session and copied, so a test that writes into them harms no other.
    (``rvm_pymc.datasets.make_sinc`` draws its inputs at random instead.)
    """

    def make(
        n: int, *, low: float = -10.0, high: float = 10.0, seed: int = 0, noise_sd: float = 0.1
    ) -> tuple[np.ndarray, np.ndarray]:
        X, y = _noisy_sinc(n, low, high, seed, noise_sd)
        return X.copy(), y.copy()

    return make


class SamplingStopped(Exception):
    """Raised by the recorder of :func:`pm_sample_kwargs`: the fit goes no further."""


@pytest.fixture
def pm_sample_kwargs(monkeypatch):
    """``pm.sample`` replaced by a recorder that stops the fit; the dict gets its keywords.

    ``pm_sample_kwargs.stop`` is the exception it raises (for ``pytest.raises``).
    """
    import pymc as pm

    class Recorded(dict):
        stop = SamplingStopped

    seen = Recorded()

    def record(*args, **kwargs):
        seen.update(kwargs)
        raise SamplingStopped

    monkeypatch.setattr(pm, "sample", record)
    return seen
