"""Regression at large N on the row compression of the design (rvm_pymc._core.rowqr).

The triangle of ``[Phi | t]``, accumulated over row blocks, must carry the
same sufficient statistics as the design itself; the fast solver on it must
compute the same state, and the fits (solver and estimator) must be the same
to rounding.  All on small problems: the N = 1e6 run is in
``benchmarks/bench_scale.py``.
"""

from __future__ import annotations

import numpy as np
import pytest

from rvm_pymc import RVC, RVR
from rvm_pymc._core import centres as _centres
from rvm_pymc._core.evidence import log_marginal_likelihood
from rvm_pymc._core.rowqr import RowQR, column_triangle, row_qr, triangle_without
from rvm_pymc.basis import KernelBasis
from rvm_pymc.datasets import make_sinc
from rvm_pymc.estimators import _rows
from rvm_pymc.kernels import RBF
from rvm_pymc.reference import fit_regression
from rvm_pymc.reference._sequential_state import SequentialState


def _problem(n=5000, gamma=10.0, centres=200, seed=0):
    """A sinc design on ``centres`` RBF centres (columns at unit rms) and standardised targets."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(-10, 10, n)
    t = np.sinc(x / np.pi) + 0.1 * rng.standard_normal(n)
    t = (t - t.mean()) / t.std()
    basis = KernelBasis(RBF(gamma=gamma / x.var()), centres=centres).fit(x[:, None])
    Phi = basis.transform(x[:, None])
    return Phi / np.sqrt(np.mean(Phi**2, axis=0)), t


def _compress(Phi, t, block_rows=97, workers=3) -> RowQR:
    return row_qr(
        lambda a, b: (Phi[a:b], t[a:b]),
        Phi.shape[0],
        Phi.shape[1],
        block_rows=block_rows,
        workers=workers,
    )


def test_blocked_statistics_equal_the_one_shot_ones():
    Phi, t = _problem()
    rows = _compress(Phi, t)  # 52 blocks of 97 rows (the last one short) on 3 threads
    assert rows.shape == Phi.shape and rows.R.shape == (Phi.shape[1],) * 2
    np.testing.assert_array_equal(rows.R, np.triu(rows.R))
    norms = np.linalg.norm(Phi, axis=0)
    scale = np.outer(norms, norms)
    assert np.max(np.abs(rows.R.T @ rows.R - Phi.T @ Phi) / scale) < 1e-13
    tn = np.linalg.norm(t)
    assert np.max(np.abs(rows.R.T @ rows.z - Phi.T @ t) / (norms * tn)) < 1e-13
    assert float(rows.z @ rows.z) + rows.remainder == pytest.approx(float(t @ t), rel=1e-13)
    # the remainder is the least-squares residual (of a design of full numerical rank)
    X = np.random.default_rng(1).standard_normal((Phi.shape[0], 30))
    full_rank = _compress(X, t)
    w = np.linalg.lstsq(X, t, rcond=None)[0]
    assert full_rank.remainder == pytest.approx(float(np.sum((t - X @ w) ** 2)), rel=1e-10)
    # one thread, one block: the same triangle up to the signs of its rows
    one = _compress(Phi, t, block_rows=Phi.shape[0], workers=1)
    sign = np.sign(np.diag(one.R)) * np.sign(np.diag(rows.R))
    top = np.abs(np.diag(rows.R)) > 1e-6 * norms  # rows of R determined to working precision
    np.testing.assert_allclose((sign[:, None] * rows.R)[top], one.R[top], atol=1e-9 * tn)


def test_row_qr_checks_its_blocks():
    with pytest.raises(ValueError, match="at least one row"):
        row_qr(lambda a, b: (np.ones((b - a, 2)), np.ones(b - a)), 0, 2)
    with pytest.raises(ValueError, match=r"block\(0, 4\) returned shapes \(4, 3\)"):
        row_qr(lambda a, b: (np.ones((b - a, 3)), np.ones(b - a)), 4, 2)


def test_row_qr_into_its_workspace_is_the_same_factor():
    """``into=True`` (the block written into the workspace) factors the same rows."""
    Phi, t = _problem(n=700, centres=60)
    calls = []

    def fill(a, b, out):
        calls.append(out.strides[0])
        out[...] = Phi[a:b]
        return t[a:b]

    given = _compress(Phi, t)
    into = row_qr(fill, *Phi.shape, block_rows=97, workers=3, into=True)
    assert set(calls) == {8} and len(calls) == 8  # column-major views, 8 blocks
    np.testing.assert_array_equal(into.R, given.R)
    np.testing.assert_array_equal(into.z, given.z)
    assert into.remainder == given.remainder
    with pytest.raises(ValueError, match=r"block\(0, 4\) returned targets of shape \(3,\)"):
        row_qr(lambda a, b, out: np.ones(3), 4, 2, into=True)


def test_row_qr_workers_run_on_one_blas_thread():
    """Two workers under two BLAS threads each oversubscribe two CPUs: one BLAS thread."""
    from concurrent.futures import ThreadPoolExecutor

    from threadpoolctl import threadpool_info, threadpool_limits

    def blas_threads():
        return {i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"}

    seen = []

    def block(a, b):
        seen.append(blas_threads())
        return np.ones((b - a, 2)), np.arange(a, b, dtype=float)

    with threadpool_limits(2, user_api="blas"):
        control = ThreadPoolExecutor(1).submit(blas_threads).result()
        row_qr(block, 40, 2, block_rows=10, workers=2)
        after = blas_threads()
    if control != {2}:  # e.g. OPENBLAS_NUM_THREADS=1 set: other threads keep one
        pytest.skip(f"a thread under threadpool_limits(2) saw {control} BLAS threads")
    assert len(seen) == 4 and all(s == {1} for s in seen)
    assert after == {2}  # restored


@pytest.mark.parametrize("kernel", [RBF(gamma=0.3), lambda A, B: (A @ B.T + 1.0) ** 2])
def test_transform_into_a_view_is_the_design(kernel):
    """``Basis.transform(X, out=...)`` writes the same numbers into a strided view (a
    symmetric kernel through a small buffer, a user kernel through its whole design)."""
    X = np.random.default_rng(3).uniform(-3, 3, size=(300, 2))
    basis = KernelBasis(kernel, centres=40).fit(X)
    Phi = basis.transform(X)
    work = np.full((310, basis.n_basis_ + 1), np.nan, order="F")
    out = work[5:305, : basis.n_basis_]  # columns contiguous, not the whole array
    assert basis.transform(X, out=out) is out
    np.testing.assert_array_equal(out, Phi)
    assert np.isnan(work[:5]).all() and np.isnan(work[305:]).all() and np.isnan(work[:, -1]).all()
    with pytest.raises(ValueError, match=r"out must be a writeable float64 array of shape"):
        basis.transform(X, out=np.empty((300, basis.n_basis_), dtype=np.float32))
    if isinstance(kernel, RBF):
        return  # an RBF design is finite for every finite input
    X[7, 1] = 1e200  # the user kernel overflows: reported as by transform(X)
    with np.errstate(over="ignore"), pytest.raises(ValueError, match="non-finite"):
        basis.transform(X, out=out)


def test_sequential_state_on_the_compression_is_the_same_state():
    """Same active set and precisions: the same evidence, S, Q and exact statistics."""
    Phi, t = _problem(gamma=1.0)  # a wide kernel: the statistics are ill-conditioned
    rows = _compress(Phi, t)
    norms = np.linalg.norm(Phi, axis=0)
    usable = np.ones(Phi.shape[1], dtype=bool)
    full = SequentialState(Phi, t, usable, 50.0, norms)
    comp = SequentialState(
        rows.R, rows.z, usable, 50.0, norms, n=rows.n, rss_offset=rows.remainder
    )
    for st in (full, comp):
        st.start([0, 40, 90, 150], np.array([1e-3, 2e-3, 5e-3, 1e-2]))
        st.resolve(confirm=True)
    assert comp.lml == pytest.approx(full.lml, abs=10 * (full.lml_rounding + comp.lml_rounding))
    assert comp.rss == pytest.approx(full.rss, rel=1e-9)
    np.testing.assert_allclose(comp.Q, full.Q, rtol=1e-7, atol=1e-9 * full.beta)
    cols = np.arange(0, Phi.shape[1], 7)
    S_full, Q_full = full.exact_statistics(cols)
    S_comp, Q_comp = comp.exact_statistics(cols)
    np.testing.assert_allclose(S_comp, S_full, rtol=1e-7)
    np.testing.assert_allclose(Q_comp, Q_full, rtol=1e-7, atol=1e-9 * full.beta)
    # the evidence of the final posterior, on the compression, is that of the data
    idx = np.asarray(full.active)
    Pa = Phi[:, idx] / norms[idx]
    lml = log_marginal_likelihood(Pa, t, full.alpha, full.beta)
    lml_c = log_marginal_likelihood(
        rows.R[:, idx] / norms[idx], rows.z, full.alpha, full.beta, n=rows.n,
        rss_offset=rows.remainder,
    )  # fmt: skip
    assert lml_c == pytest.approx(lml, rel=1e-12)


def test_fit_regression_on_the_compression_is_the_same_fit():
    Phi, t = _problem(n=3000)
    full = fit_regression(Phi, t)
    comp = fit_regression(_compress(Phi, t), t)
    np.testing.assert_array_equal(comp.active, full.active)
    assert comp.n_iter == full.n_iter and comp.converged and full.converged
    np.testing.assert_allclose(comp.mean, full.mean, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(comp.alpha, full.alpha, rtol=1e-7)
    assert comp.beta == pytest.approx(full.beta, rel=1e-10)
    assert comp.log_evidence == pytest.approx(full.log_evidence, abs=1e-8)


def test_fit_regression_checks_the_compression():
    Phi, t = _problem(n=600, centres=40)
    rows = _compress(Phi, t)
    with pytest.raises(ValueError, match="needs method='fast'"):
        fit_regression(rows, t, method="mackay")
    with pytest.raises(ValueError, match="compresses 600 rows"):
        fit_regression(rows, t[:-1])
    with pytest.raises(ValueError, match="not the target compressed"):
        fit_regression(rows, t[::-1] * 2.0)


@pytest.fixture
def small_centres(monkeypatch):
    """``centres="auto"``: 150 centres above 300 training points."""
    monkeypatch.setattr(_centres, "AUTO_FULL_MAX", 300)
    monkeypatch.setattr(_centres, "AUTO_MAX_CENTRES", 150)
    monkeypatch.setattr(_centres, "AUTO_FILL_CENTRES", 150)


@pytest.mark.parametrize("gamma", ["scale", 3.0])
def test_rvr_through_the_compression_is_the_same_fit(small_centres, monkeypatch, gamma):
    """The same fit to rounding: no further from the full design's fit than a fit of the
    inputs perturbed by one unit in the last place (the wide ``"scale"`` kernel makes
    weights of opposite signs ~150 times the targets: differences of 1e-8)."""
    d = make_sinc(n_train=4000, n_test=300, noise_sd=0.1, random_state=2)
    full = RVR(gamma=gamma).fit(d.X_train, d.t_train)
    ulp = np.random.default_rng(0).choice([-1.0, 1.0], size=d.X_train.shape)
    nudged = RVR(gamma=gamma).fit(d.X_train * (1 + np.finfo(float).eps * ulp), d.t_train)
    seen = []
    real = _rows.compressed_design

    def spy(basis, X, t, block_rows=_rows.BLOCK_ROWS):
        seen.append(X.shape[0])
        return real(basis, X, t, block_rows=333)  # 13 blocks

    monkeypatch.setattr(_rows, "ROW_BLOCKED_ENTRIES", 0)
    monkeypatch.setattr("rvm_pymc.estimators._base.compressed_design", spy)
    comp = RVR(gamma=gamma).fit(d.X_train, d.t_train)
    assert seen == [4000]  # the design was never built whole
    np.testing.assert_array_equal(comp.relevance_indices_, full.relevance_indices_)
    np.testing.assert_array_equal(nudged.relevance_indices_, full.relevance_indices_)
    np.testing.assert_allclose(comp.basis_scale_, full.basis_scale_, rtol=1e-12)
    mean_f, sd_f = full.predict(d.X_test, return_std=True)
    rounding = 10 * np.max(np.abs(nudged.predict(d.X_test) - mean_f)) + 1e-12
    mean, sd = comp.predict(d.X_test, return_std=True)
    assert np.max(np.abs(mean - mean_f)) <= rounding
    np.testing.assert_allclose(sd, sd_f, rtol=1e-8)
    assert comp.log_evidence_ == pytest.approx(full.log_evidence_, abs=1e-7)
    # the training design of idata_: the active columns, built anew when it is first read
    assert comp._tree_inputs["Phi_of_X"] and not full._tree_inputs.get("Phi_of_X")
    assert comp._tree_inputs["Phi"].shape == d.X_train.shape
    np.testing.assert_allclose(
        comp.idata_["constant_data"]["Phi"].values,
        full.idata_["constant_data"]["Phi"].values,
        rtol=0,
        atol=1e-12,
    )


def test_the_compression_only_for_the_fast_reference_regression(small_centres, monkeypatch):
    monkeypatch.setattr(_rows, "ROW_BLOCKED_ENTRIES", 0)

    def fail(*args, **kwargs):
        raise AssertionError("the row compression was used")

    monkeypatch.setattr("rvm_pymc.estimators._base.compressed_design", fail)
    d = make_sinc(n_train=400, n_test=10, noise_sd=0.1, random_state=3)
    RVR(solver="mackay", gamma=3.0).fit(d.X_train, d.t_train)
    RVC(gamma=3.0).fit(d.X_train, d.t_train > 0)


def test_no_compression_of_a_square_design(monkeypatch):
    """At most N / ROW_BLOCKED_RATIO columns (bias included); never every point a centre."""
    monkeypatch.setattr(_rows, "ROW_BLOCKED_ENTRIES", 0)
    X = np.linspace(-1, 1, 400)[:, None]
    est = RVR()
    most = 400 // _rows.ROW_BLOCKED_RATIO - 1  # centres, with the bias N / ratio columns
    assert _rows.row_blocked(est, KernelBasis(RBF(), centres=most).fit(X), 400)
    assert not _rows.row_blocked(est, KernelBasis(RBF(), centres=most + 1).fit(X), 400)
    assert not _rows.row_blocked(est, KernelBasis(RBF(), centres="all").fit(X), 400)


@pytest.mark.parametrize("shape", [(400, 6), (5, 6)])
def test_triangle_without_a_column_is_the_triangle_of_the_rest(shape):
    rng = np.random.default_rng(shape[0])
    Phi, t = rng.standard_normal(shape), rng.standard_normal(shape[0])
    T = column_triangle(Phi, t)
    assert T.shape == (min(shape[0], shape[1] + 1), shape[1] + 1)
    A = np.column_stack([Phi, t])
    np.testing.assert_allclose(T.T @ T, A.T @ A, rtol=0, atol=1e-11 * shape[0])
    for i in (0, 3, shape[1] - 1):
        rest = np.column_stack([np.delete(Phi, i, axis=1), t])
        T2 = triangle_without(T, i)
        np.testing.assert_allclose(T2.T @ T2, rest.T @ rest, rtol=0, atol=1e-11 * shape[0])
        # a triangle again (upper), unless the rest has more columns than rows
        if T2.shape[0] >= T2.shape[1]:
            assert np.array_equal(T2, np.triu(T2))
