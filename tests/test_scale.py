"""Large N: candidate centres (rvm_pymc._core.centres), the blocked design, the automatic path.

The automatic path (a subset of centres above ``AUTO_FULL_MAX`` training
points) is forced at small N by lowering that threshold, and checked against
the exact fit (every training point a centre).  The N = 100,000 run is a
``slow`` test; ``benchmarks/bench_scale.py`` times it.
"""

from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import pytest

from rvm_pymc import RVC, RVR
from rvm_pymc._core import centres as _centres
from rvm_pymc.basis import KernelBasis
from rvm_pymc.datasets import make_ripley, make_sinc
from rvm_pymc.exceptions import ConvergenceWarning
from rvm_pymc.kernels import (
    RBF,
    CallableKernel,
    Cauchy,
    Laplacian,
    Linear,
    LinearSpline,
    Polynomial,
)


@pytest.fixture
def auto_subset(monkeypatch):
    """Make ``centres="auto"`` choose 100 centres above 100 training points."""
    monkeypatch.setattr(_centres, "AUTO_FULL_MAX", 100)
    monkeypatch.setattr(_centres, "AUTO_MAX_CENTRES", 100)
    monkeypatch.setattr(_centres, "AUTO_FILL_CENTRES", 100)


def _rmse(est, data) -> float:
    return float(np.sqrt(np.mean((est.predict(data.X_test) - data.t_test) ** 2)))


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


def test_chosen_centres_span_every_kernel_column():
    """Pivoted Cholesky: every residual kernel variance ends below tol (Nystrom check)."""
    X = np.random.default_rng(1).uniform(-10, 10, size=(1500, 2))
    k = RBF(gamma=0.05)
    idx = _centres.choose_centres(X, k, 400, tol=1e-6)
    assert np.all(np.diff(idx) > 0) and idx.size < 400  # sorted, distinct, stopped by tol
    K_nS = k(X, X[idx])
    L = np.linalg.cholesky(k(X[idx]))
    V = np.linalg.solve(L, K_nS.T)
    residual = 1.0 - np.sum(V * V, axis=0)  # k(x, x) = 1
    assert residual.max() <= 1e-6 * (1 + 1e-3)
    # one centre fewer leaves some column unexplained beyond tol: the rule is not wasteful
    fewer = _centres.choose_centres(X, k, idx.size - 1, tol=1e-6)
    K1 = k(X, X[fewer])
    V1 = np.linalg.solve(np.linalg.cholesky(k(X[fewer])), K1.T)
    assert (1.0 - np.sum(V1 * V1, axis=0)).max() > 1e-6


def test_centre_count_follows_the_width_and_the_cap():
    x = np.linspace(-10, 10, 3000)[:, None]
    wide = _centres.choose_centres(x, RBF(gamma=0.03), 500)
    narrow = _centres.choose_centres(x, RBF(gamma=300.0), 500)
    assert wide.size < 30 < narrow.size == 500


def _kernel_distance(k, A, B):
    return k.diag(A)[:, None] + k.diag(B)[None, :] - 2.0 * k(A, B)


def test_spread_fill_covers_as_far_as_it_packs():
    """Farthest-point fill: no point is farther from the centres than two centres are apart."""
    X = np.random.default_rng(8).uniform(-5, 5, size=(800, 2))
    k = RBF(gamma=0.2)
    out = _centres.spread_fill(X, k, k.diag(X), [3, 10], 60)
    assert out[:2] == [3, 10] and len(out) == len(set(out)) == 60
    cover = _kernel_distance(k, X, X[out]).min(axis=1).max()
    pair = _kernel_distance(k, X[out], X[out])
    pack = pair[~np.eye(60, dtype=bool)].min()
    assert pack >= cover * (1 - 1e-9)
    # a random choice of 60 points does not have this property on these data
    rand = np.random.default_rng(0).choice(800, 60, replace=False)
    pr = _kernel_distance(k, X[rand], X[rand])
    assert pr[~np.eye(60, dtype=bool)].min() < _kernel_distance(k, X, X[rand]).min(axis=1).max()


def test_spread_fill_never_adds_a_duplicate():
    X = np.repeat(np.arange(5.0), 4)[:, None]  # 5 distinct points, each 4 times
    k = RBF(gamma=1.0)
    out = _centres.spread_fill(X, k, k.diag(X), [0], 12)
    assert sorted(X[out, 0]) == [0.0, 1.0, 2.0, 3.0, 4.0]


def test_fill_past_the_numerical_rank():
    x = np.linspace(-10, 10, 3000)[:, None]
    k = RBF(gamma=0.03)
    rank = _centres.choose_centres(x, k, 500)
    filled = _centres.choose_centres(x, k, 500, fill_to=200)
    assert rank.size < 30 and filled.size == 200
    assert set(rank) <= set(filled)
    gaps = np.diff(x[filled, 0])  # spread over the inputs, no clumps
    assert gaps.max() < 2.5 * 20 / 200
    # a kernel of higher rank than the cap keeps the cap: no fill
    narrow = _centres.choose_centres(x, RBF(gamma=300.0), 100, fill_to=200)
    assert narrow.size == 100


def test_pool_drawn_by_random_state(monkeypatch):
    monkeypatch.setattr(_centres, "CENTRE_POOL", 400)
    X = np.random.default_rng(2).uniform(-3, 3, size=(2000, 1))
    k = RBF(gamma=20.0)
    a = _centres.choose_centres(X, k, 50, random_state=None)
    assert np.array_equal(a, _centres.choose_centres(X, k, 50, random_state=None))
    assert np.array_equal(
        _centres.choose_centres(X, k, 50, random_state=7),
        _centres.choose_centres(X, k, 50, random_state=np.random.default_rng(7)),
    )
    assert not np.array_equal(a, _centres.choose_centres(X, k, 50, random_state=7))


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


def test_design_built_in_blocks_equals_one_call(monkeypatch):
    import rvm_pymc.basis as basis_mod

    X = np.random.default_rng(4).normal(size=(1000, 3))
    whole = KernelBasis(Cauchy(gamma=0.7), centres="all").fit(X).transform(X[:333])
    monkeypatch.setattr(basis_mod, "_BLOCK_ENTRIES", 5000)  # 5 rows per block
    blocks = KernelBasis(Cauchy(gamma=0.7), centres="all").fit(X).transform(X[:333])
    np.testing.assert_array_equal(whole, blocks)


def test_auto_regression_matches_the_exact_fit(auto_subset, monkeypatch):
    """Forced subset vs every point a centre: mean test RMSE over seeds within 5%."""
    exact, auto = [], []
    for seed in range(4):
        d = make_sinc(n_train=400, n_test=500, noise_sd=0.1, random_state=seed)
        est = RVR(gamma=3.0).fit(d.X_train, d.t_train)
        assert est.basis_scale_.size == 101  # the subset was used
        auto.append(_rmse(est, d))
        np.testing.assert_array_equal(est.relevance_vectors_, d.X_train[est.relevance_indices_])
        names = [n for n in est.active_names_ if n != "bias"]
        assert names == [f"x{i}" for i in est.relevance_indices_]
        with monkeypatch.context() as m:
            m.setattr(_centres, "AUTO_FULL_MAX", 50_000)
            ref = RVR(gamma=3.0).fit(d.X_train, d.t_train)
        assert ref.basis_scale_.size == 401
        exact.append(_rmse(ref, d))
    assert np.mean(auto) <= 1.05 * np.mean(exact)


def test_auto_classification_matches_the_exact_fit(auto_subset, monkeypatch):
    d = make_ripley(n_train=400, n_test=2000, random_state=0)
    est = RVC().fit(d.X_train, d.t_train)
    assert est.basis_scale_.size < 401
    with monkeypatch.context() as m:
        m.setattr(_centres, "AUTO_FULL_MAX", 50_000)
        ref = RVC().fit(d.X_train, d.t_train)
    err, err_ref = (np.mean(e.predict(d.X_test) != d.t_test) for e in (est, ref))
    assert err <= 1.05 * err_ref


def test_auto_path_saves_and_loads(auto_subset, tmp_path):
    d = make_sinc(n_train=300, n_test=50, noise_sd=0.1, random_state=5)
    est = RVR(random_state=3).fit(d.X_train, d.t_train)
    est.save(tmp_path / "m.nc")
    back = RVR.load(tmp_path / "m.nc")
    np.testing.assert_array_equal(back.relevance_indices_, est.relevance_indices_)
    np.testing.assert_array_equal(back.basis_scale_, est.basis_scale_)
    np.testing.assert_allclose(back.predict(d.X_test), est.predict(d.X_test), rtol=1e-12)


def test_auto_path_evidence_width(auto_subset):
    d = make_sinc(n_train=300, n_test=200, noise_sd=0.1, random_state=6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # a width at the grid's edge
        est = RVR(gamma="evidence").fit(d.X_train, d.t_train)
    assert est.evidence_path_["gamma"].size >= 9  # the grid, then refined
    assert est.gamma_ in est.evidence_path_["gamma"]
    assert _rmse(est, d) < 0.05


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
