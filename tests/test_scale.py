"""Large N: candidate centres (rvm_pymc._core.centres), the blocked design, the automatic path.

The automatic path (a subset of centres above ``AUTO_FULL_MAX`` training
points) is forced at small N by lowering that threshold, and checked against
the exact fit (every training point a centre).  The N = 100,000 run is a
``slow`` test; ``benchmarks/bench_scale.py`` times it.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from rvm_pymc.basis import KernelBasis
from rvm_pymc.kernels import (
    RBF,
    CallableKernel,
    Cauchy,
    Laplacian,
    Linear,
    LinearSpline,
    Polynomial,
)


@pytest.mark.parametrize(
    "kernel",
    [
        RBF(gamma=0.3),
        Laplacian(gamma=0.5),
        Cauchy(gamma=2.0),
        Linear(),
        Polynomial(degree=3, gamma=0.5),
        LinearSpline(),
        2.0 * RBF() + Linear(),
        RBF() * Polynomial(),
        CallableKernel(lambda X, Y: (X @ Y.T + 1.0) ** 2),
    ],
    ids=repr,
)
def test_kernel_diag_is_the_gram_diagonal(kernel):
    X = np.random.default_rng(0).uniform(0.0, 1.0, size=(300, 2))  # > one diag block
    np.testing.assert_allclose(kernel.diag(X), np.diag(kernel(X)), rtol=1e-12)


def test_kernel_diag_rejects_non_finite():
    with pytest.raises(ValueError, match="kernel diagonal"):
        CallableKernel(lambda X, Y: np.full((len(X), len(Y)), np.nan)).diag([[0.0]])


@pytest.mark.parametrize("bad", ["some", 0, -3, 2.5, True, None])
def test_centres_parameter_checked(bad):
    with pytest.raises(ValueError, match="centres must be"):
        KernelBasis(RBF(), centres=bad).fit(np.zeros((3, 1)))


def test_kernel_basis_with_a_subset_of_centres():
    X = np.random.default_rng(3).uniform(-5, 5, size=(700, 2))
    basis = KernelBasis(RBF(gamma=0.5), centres=60).fit(X)
    idx = basis.centre_indices_
    assert basis.n_basis_ == idx.size + 1 <= 61
    assert basis.basis_names_ == ["bias"] + [f"x{i}" for i in idx]
    np.testing.assert_array_equal(basis.centres_, X[idx])
    Phi = basis.transform(X)
    np.testing.assert_array_equal(Phi[:, 0], 1.0)
    np.testing.assert_allclose(Phi[:, 1:], RBF(gamma=0.5)(X, X[idx]), rtol=1e-14)
    full = KernelBasis(RBF(gamma=0.5)).fit(X)  # 700 <= AUTO_FULL_MAX: every point
    np.testing.assert_array_equal(full.centre_indices_, np.arange(700))
    assert repr(KernelBasis(RBF(gamma=0.5), centres=60)) == (
        "KernelBasis(kernel=RBF(gamma=0.5), bias=True, centres=60)"
    )


def _fit_in_fresh_process(est: str, make: str, n_train: int, n_test: int, error: str) -> list[str]:
    """Fit ``est`` on ``make(n_train, n_test)`` in a new interpreter.

    Prints peak RSS (kB), the test error, ``converged_`` and the number of basis functions.
    """
    code = (
        "import resource, numpy as np\n"
        f"from rvm_pymc import {est}\n"
        f"from rvm_pymc.datasets import {make}\n"
        f"d = {make}(n_train={n_train}, n_test={n_test}, random_state=1)\n"
        f"est = {est}().fit(d.X_train, d.t_train)\n"
        "p = est.predict(d.X_test)\n"
        f"err = {error}\n"
        "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, err, est.converged_,\n"
        "      est.basis_scale_.size)\n"
    )
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=600
    ).stdout.split()


@pytest.mark.slow
def test_hundred_thousand_points_within_memory():
    """``RVR().fit`` at N = 100,000 in a fresh process: peak RSS below 4 GB, RMSE at the floor."""
    out = _fit_in_fresh_process(
        "RVR", "make_sinc", 100_000, 2000, "np.sqrt(np.mean((p - d.t_test) ** 2))"
    )
    rss_kb, err, converged = int(out[0]), float(out[1]), out[2] == "True"
    assert rss_kb < 4e6 and converged
    assert err < 0.01  # noise sd 0.1: an RVM at N = 1e5 is far below it (0.001 measured)


@pytest.mark.slow
def test_rvc_twenty_thousand_points_within_memory():
    """``RVC().fit`` at N = 20,000 in a fresh process: below 4 GB, near the Bayes error."""
    out = _fit_in_fresh_process("RVC", "make_ripley", 20_000, 5000, "np.mean(p != d.t_test)")
    rss_kb, err, converged, n_basis = int(out[0]), float(out[1]), out[2] == "True", int(out[3])
    assert rss_kb < 4e6 and converged and n_basis <= 1001
    assert err < 0.1  # the Bayes error of the mixture is about 0.08 (0.088 measured)
