"""Property-based tests (hypothesis) of the reference solver and the estimators.

Random small problems: a design matrix (Gaussian columns, or a bias plus RBF
kernel columns on random inputs), a sparse true weight vector and Gaussian
noise of a sd drawn from a few levels (never noise-free: exactly fitted targets
are a degenerate case of their own).  The properties:

- the log evidence never decreases along the iterations of ``"fast"`` and ``"em"``;
- results do not depend on the order of the training points;
- predictions are equivariant to shifting and scaling the targets, and
  invariant to scaling a column of a user basis;
- every posterior covariance is symmetric positive definite.

Examples are derandomised (the same ones on every run, so the suite does not
flake) and no example database is written; set ``RVM_HYPOTHESIS_EXAMPLES`` to
search longer.
"""

from __future__ import annotations

import os
import warnings

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from rvm_pymc.basis import FunctionBasis, PrecomputedBasis  # noqa: E402
from rvm_pymc.estimators import RVC, RVR  # noqa: E402
from rvm_pymc.exceptions import ConvergenceWarning  # noqa: E402
from rvm_pymc.reference import fit_classification, fit_regression  # noqa: E402

N_EXAMPLES = int(os.environ.get("RVM_HYPOTHESIS_EXAMPLES", "25"))
PROPERTY = settings(
    max_examples=N_EXAMPLES, deadline=None, database=None, derandomize=N_EXAMPLES <= 25
)

seeds = st.integers(min_value=0, max_value=2**32 - 1)
sizes = st.integers(min_value=8, max_value=40)
n_columns = st.integers(min_value=1, max_value=6)
noise_levels = st.sampled_from([0.05, 0.2, 1.0])
designs = st.sampled_from(["gaussian", "kernel"])


def _design(rng: np.random.Generator, n: int, m: int, kind: str) -> np.ndarray:
    """An (n, M) design matrix: m Gaussian columns, or a bias and n RBF columns."""
    if kind == "gaussian":
        return rng.standard_normal((n, m)) * rng.uniform(0.1, 10.0, m)
    x = np.sort(rng.uniform(-5.0, 5.0, n))
    gamma = rng.choice([0.1, 0.5, 2.0])
    return np.column_stack([np.ones(n), np.exp(-gamma * (x[:, None] - x[None, :]) ** 2)])


def regression_problem(seed: int, n: int, m: int, noise: float, kind: str):
    """Design matrix, targets of a sparse weight vector plus noise (sd ``noise`` x signal sd)."""
    rng = np.random.default_rng(seed)
    Phi = _design(rng, n, m, kind)
    w = np.zeros(Phi.shape[1])
    on = rng.choice(Phi.shape[1], size=min(3, Phi.shape[1]), replace=False)
    w[on] = rng.standard_normal(on.size) * 2.0
    f = Phi @ w
    sd = max(float(np.std(f)), 1.0)
    return Phi, f + noise * sd * rng.standard_normal(n)


def classification_problem(seed: int, n: int, m: int, kind: str, n_classes: int = 2):
    """Design matrix and labels drawn from a softmax of a random latent function."""
    rng = np.random.default_rng(seed)
    Phi = _design(rng, n, m, kind)
    W = rng.standard_normal((Phi.shape[1], n_classes)) / np.sqrt(Phi.shape[1])
    latent = Phi @ W
    latent = 3.0 * latent / max(float(np.std(latent)), 1e-12)
    p = np.exp(latent - latent.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    y = np.array([rng.choice(n_classes, p=row) for row in p])
    y[:n_classes] = np.arange(n_classes)  # every class present
    return Phi, y


def _quiet(fn, *args, **kwargs):
    """Call ``fn``; a ConvergenceWarning at the iteration cap is not what is tested here."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return fn(*args, **kwargs)


def assert_spd(cov: np.ndarray) -> None:
    """Symmetric (to rounding) and positive definite (a Cholesky factor exists)."""
    cov = np.asarray(cov, dtype=float)
    assert cov.ndim == 2 and cov.shape[0] == cov.shape[1]
    assert np.all(np.isfinite(cov))
    scale = np.sqrt(np.outer(np.diag(cov), np.diag(cov)))
    assert np.all(np.abs(cov - cov.T) <= 1e-10 * scale)
    np.linalg.cholesky((cov + cov.T) / 2)  # raises LinAlgError if not positive definite
    assert np.all(np.diag(cov) > 0)


# ------------------------------------------------------ evidence never decreases


@PROPERTY
@given(seed=seeds, n=sizes, m=n_columns, noise=noise_levels, kind=designs)
@pytest.mark.parametrize("method", ["fast", "em"])
def test_evidence_never_decreases(method, seed, n, m, noise, kind):
    """Every iteration of "fast" and "em" keeps or raises the log evidence.

    Tolerance: the trace is recomputed at every iteration from a Cholesky
    factor; its terms (N/2 log 2 pi, the log determinant, the quadratic form)
    are each of order max(|log evidence|, N) and carry rounding errors of a few
    hundred ulps of that (condition numbers up to ~1e6 on the normalised
    columns), so a step is "a decrease" only below -1e-9 of that size.
    """
    Phi, t = regression_problem(seed, n, m, noise, kind)
    res = _quiet(fit_regression, Phi, t, method=method, max_iter=300)
    trace = np.asarray(res.trace["log_evidence"], dtype=float)
    assert np.all(np.isfinite(trace))
    size = np.maximum(np.maximum(np.abs(trace[1:]), np.abs(trace[:-1])), n)
    steps = np.diff(trace)
    worst = int(np.argmin(steps / size)) if steps.size else 0
    assert np.all(steps >= -1e-9 * size), (worst, steps[worst], trace[worst])
    # the result is the state after the last recorded step (or a later one at the cap)
    assert res.log_evidence >= trace[-1] - 1e-9 * max(abs(trace[-1]), n)


# ------------------------------------------------------------- permutations


@PROPERTY
@given(seed=seeds, n=sizes, m=n_columns, noise=noise_levels, kind=designs)
@pytest.mark.parametrize("method", ["fast", "mackay", "em"])
def test_regression_invariant_to_the_order_of_training_points(method, seed, n, m, noise, kind):
    Phi, t = regression_problem(seed, n, m, noise, kind)
    perm = np.random.default_rng(seed + 1).permutation(n)
    # the iterations use Phi^T Phi and Phi^T t only, so even a fit stopped at the cap
    # is the same fit in any order, up to rounding (which may move a stop by an iteration)
    a = _quiet(fit_regression, Phi, t, method=method, max_iter=150)
    b = _quiet(fit_regression, Phi[perm], t[perm], method=method, max_iter=150)
    if a.converged != b.converged:
        return
    np.testing.assert_array_equal(a.active, b.active)
    assert b.log_evidence == pytest.approx(a.log_evidence, rel=1e-6, abs=1e-6 * n)
    assert b.beta == pytest.approx(a.beta, rel=1e-4)
    mean_a, sd_a = a.predict(Phi, return_std=True)
    mean_b, sd_b = b.predict(Phi, return_std=True)
    np.testing.assert_allclose(mean_b, mean_a, rtol=1e-4, atol=1e-4 * np.std(t))
    np.testing.assert_allclose(sd_b, sd_a, rtol=1e-4)


@PROPERTY
@given(seed=seeds, n=sizes, m=n_columns, kind=designs, k=st.sampled_from([2, 3]))
def test_classification_invariant_to_the_order_of_training_points(seed, n, m, kind, k):
    Phi, y = classification_problem(seed, n, m, kind, n_classes=k)
    perm = np.random.default_rng(seed + 1).permutation(n)
    a = _quiet(fit_classification, Phi, y, max_iter=500)
    b = _quiet(fit_classification, Phi[perm], y[perm], max_iter=500)
    if not (a.converged and b.converged):
        return
    np.testing.assert_array_equal(a.active, b.active)
    assert b.log_evidence == pytest.approx(a.log_evidence, rel=1e-6, abs=1e-6 * n)
    np.testing.assert_allclose(b.predict_proba(Phi), a.predict_proba(Phi), atol=1e-5)


@PROPERTY
@given(seed=seeds, n=sizes, noise=noise_levels)
def test_estimators_invariant_to_the_order_of_training_points(seed, n, noise):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-3.0, 3.0, (n, 2))
    t = np.sin(X[:, 0]) + X[:, 1] + noise * rng.standard_normal(n)
    y = (t > np.median(t)).astype(int)
    perm = rng.permutation(n)
    X_new = rng.uniform(-3.0, 3.0, (7, 2))
    for est_cls, target in ((RVR, t), (RVC, y)):
        a = _quiet(est_cls(gamma=0.5).fit, X, target)
        b = _quiet(est_cls(gamma=0.5).fit, X[perm], target[perm])
        if not (a.converged_ and b.converged_):
            continue
        # the same training points are relevance vectors, whatever their order
        np.testing.assert_array_equal(np.sort(perm[b.relevance_indices_]), a.relevance_indices_)
        if est_cls is RVR:
            np.testing.assert_allclose(b.predict(X_new), a.predict(X_new), rtol=1e-4, atol=1e-5)
        else:
            np.testing.assert_allclose(b.predict_proba(X_new), a.predict_proba(X_new), atol=1e-5)


# ------------------------------------------------------------- equivariance

finite_shifts = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False)
finite_scales = st.floats(min_value=1e-4, max_value=1e4).flatmap(
    lambda a: st.sampled_from([a, -a])
)


@PROPERTY
@given(seed=seeds, n=sizes, noise=noise_levels, shift=finite_shifts, scale=finite_scales)
def test_rvr_predictions_equivariant_to_target_shift_and_scale(seed, n, noise, shift, scale):
    """predict(a y + b) = a predict(y) + b, and the predictive sd scales by |a|."""
    rng = np.random.default_rng(seed)
    X = np.sort(rng.uniform(-5.0, 5.0, n))[:, None]
    y = np.sinc(X[:, 0] / np.pi) + noise * rng.standard_normal(n)
    X_new = np.linspace(-6.0, 6.0, 9)[:, None]
    base = _quiet(RVR(gamma=0.5).fit, X, y)
    moved = _quiet(RVR(gamma=0.5).fit, X, scale * y + shift)
    np.testing.assert_array_equal(moved.active_, base.active_)
    mean0, sd0 = base.predict(X_new, return_std=True)
    mean1, sd1 = moved.predict(X_new, return_std=True)
    # a y + b is rounded in float64: every target moves by up to eps/2 |b/a| in the units
    # of y, which moves the fit (mean and sd) by as much on top of its own rounding (seen:
    # b = 524288, a = 1e-4 changed the sd by 1e-7 of 0.09)
    rounding = 4 * np.finfo(float).eps * abs(shift / scale)
    np.testing.assert_allclose(
        (mean1 - shift) / scale, mean0, rtol=1e-6, atol=1e-6 * sd0.max() + rounding
    )
    np.testing.assert_allclose(sd1 / abs(scale), sd0, rtol=1e-6, atol=rounding)


@PROPERTY
@given(
    seed=seeds,
    n=sizes,
    m=n_columns,
    noise=noise_levels,
    column=st.integers(min_value=0, max_value=5),
    factor=st.floats(min_value=1e-3, max_value=1e3).flatmap(lambda c: st.sampled_from([c, -c])),
)
def test_predictions_invariant_to_scaling_a_column_of_a_user_basis(
    seed, n, m, noise, column, factor
):
    """Multiplying one basis function by c leaves every prediction unchanged.

    For the reference solver (which works on normalised columns) and for RVR
    with a PrecomputedBasis and with a FunctionBasis whose function is scaled.
    """
    Phi, t = regression_problem(seed, n, m, noise, "gaussian")
    j = column % m
    scaled = Phi.copy()
    scaled[:, j] *= factor
    Phi_new = np.random.default_rng(seed + 2).standard_normal((6, m))
    scaled_new = Phi_new.copy()
    scaled_new[:, j] *= factor
    # the reference solver on the design matrix itself
    a = _quiet(fit_regression, Phi, t, max_iter=2000)
    b = _quiet(fit_regression, scaled, t, max_iter=2000)
    np.testing.assert_array_equal(b.active, a.active)
    mean_a, sd_a = a.predict(Phi_new, return_std=True)
    mean_b, sd_b = b.predict(scaled_new, return_std=True)
    np.testing.assert_allclose(mean_b, mean_a, rtol=1e-6, atol=1e-6 * np.std(t))
    np.testing.assert_allclose(sd_b, sd_a, rtol=1e-6)
    # the estimator with a user basis: the matrix given, or functions of X
    for make in (
        lambda c: PrecomputedBasis(bias=False),
        lambda c: FunctionBasis([_Column(i, c if i == j else 1.0) for i in range(m)]),
    ):
        plain = _quiet(RVR(kernel=make(1.0)).fit, Phi, t)
        if isinstance(make(1.0), PrecomputedBasis):
            other = _quiet(RVR(kernel=make(factor)).fit, scaled, t)
            pred = other.predict(scaled_new, return_std=True)
        else:
            other = _quiet(RVR(kernel=make(factor)).fit, Phi, t)
            pred = other.predict(Phi_new, return_std=True)
        np.testing.assert_array_equal(other.active_, plain.active_)
        want = plain.predict(Phi_new, return_std=True)
        np.testing.assert_allclose(pred[0], want[0], rtol=1e-6, atol=1e-6 * np.std(t))
        np.testing.assert_allclose(pred[1], want[1], rtol=1e-6)


class _Column:
    """The basis function ``c * X[:, i]`` (picklable, named)."""

    def __init__(self, i: int, c: float) -> None:
        self.i, self.c = i, c
        self.__name__ = f"col{i}"

    def __call__(self, X: np.ndarray) -> np.ndarray:
        return self.c * X[:, self.i]


# ------------------------------------------------------- posterior covariance


@PROPERTY
@given(seed=seeds, n=sizes, m=n_columns, noise=noise_levels, kind=designs)
@pytest.mark.parametrize("method", ["fast", "mackay", "em"])
def test_regression_posterior_covariance_is_spd(method, seed, n, m, noise, kind):
    Phi, t = regression_problem(seed, n, m, noise, kind)
    res = _quiet(fit_regression, Phi, t, method=method, max_iter=300)
    assert_spd(res.cov)
    assert np.all(res.alpha > 0) and res.beta > 0


@PROPERTY
@given(seed=seeds, n=sizes, m=n_columns, kind=designs, k=st.sampled_from([2, 3]))
@pytest.mark.parametrize("method", ["fast", "mackay", "em"])
def test_classification_posterior_covariance_is_spd(method, seed, n, m, kind, k):
    Phi, y = classification_problem(seed, n, m, kind, n_classes=k)
    res = _quiet(fit_classification, Phi, y, method=method, max_iter=60)
    assert_spd(res.cov)
    assert res.cov.shape[0] == res.active.size * (1 if k == 2 else k)


@PROPERTY
@given(seed=seeds, n=sizes, noise=noise_levels, gamma=st.sampled_from([0.1, 0.5, 2.0]))
def test_estimator_sigma_is_spd(seed, n, noise, gamma):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-3.0, 3.0, (n, 1))
    t = np.sin(2 * X[:, 0]) + noise * rng.standard_normal(n)
    labels = np.array(["a", "b", "c"])[np.digitize(t, np.quantile(t, [1 / 3, 2 / 3]))]
    for est in (RVR(gamma=gamma), RVC(gamma=gamma)):
        fitted = _quiet(est.fit, X, t if isinstance(est, RVR) else labels)
        assert_spd(fitted.sigma_)
