"""Tests for rvm_pymc.kernels and rvm_pymc.basis: kernels against brute-force loops and
scikit-learn, bases, and the import graph between the two modules."""

from __future__ import annotations

import ast
import math
import pickle
import warnings
from pathlib import Path

import numpy as np
import pytest
from sklearn.exceptions import NotFittedError
from sklearn.gaussian_process.kernels import RationalQuadratic
from sklearn.metrics.pairwise import (
    laplacian_kernel,
    linear_kernel,
    polynomial_kernel,
    rbf_kernel,
)

import rvm_pymc
from rvm_pymc.basis import (
    Basis,
    FunctionBasis,
    KernelBasis,
    PrecomputedBasis,
    column_scale,
    make_basis,
    polynomial_basis,
)
from rvm_pymc.kernels import (
    RBF,
    CallableKernel,
    Cauchy,
    Constant,
    Kernel,
    Laplacian,
    Linear,
    LinearSpline,
    Polynomial,
    Product,
    Sum,
    make_kernel,
)

TOL = {"rtol": 1e-12, "atol": 1e-12}


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(20260101)


# ------------------------------------------------------------- brute-force oracles


def _spline_1d(a: float, b: float) -> float:
    m = min(a, b)
    return 1 + a * b + a * b * m - (a + b) / 2 * m**2 + m**3 / 3


ORACLES = {
    "rbf": (RBF(gamma=0.7), lambda a, b: math.exp(-0.7 * sum((a - b) ** 2))),
    "laplacian": (Laplacian(gamma=0.4), lambda a, b: math.exp(-0.4 * sum(abs(a - b)))),
    "cauchy": (Cauchy(gamma=1.3), lambda a, b: 1 / (1 + 1.3 * sum((a - b) ** 2))),
    "linear": (Linear(), lambda a, b: sum(a * b)),
    "poly": (
        Polynomial(degree=3, gamma=0.5, coef0=2.0),
        lambda a, b: (0.5 * sum(a * b) + 2.0) ** 3,
    ),
    "spline": (
        LinearSpline(),
        lambda a, b: math.prod(_spline_1d(x, y) for x, y in zip(a, b, strict=True)),
    ),
    "constant": (Constant(2.5), lambda a, b: 2.5),
}


def _brute_force(f, X: np.ndarray, Y: np.ndarray) -> np.ndarray:
    out = np.empty((len(X), len(Y)))
    for i in range(len(X)):
        for j in range(len(Y)):
            out[i, j] = f(X[i], Y[j])
    return out


@pytest.mark.parametrize("name", sorted(ORACLES))
def test_kernel_matches_brute_force_double_loop(name, rng):
    kernel, f = ORACLES[name]
    X, Y = rng.uniform(0, 1, (7, 3)), rng.uniform(0, 1, (5, 3))
    K = kernel(X, Y)
    assert K.shape == (7, 5)
    assert K.dtype == np.float64
    np.testing.assert_allclose(K, _brute_force(f, X, Y), **TOL)
    np.testing.assert_allclose(kernel(X), _brute_force(f, X, X), **TOL)


def test_one_dimensional_input_is_one_feature(rng):
    x, y = rng.normal(size=6), rng.normal(size=4)
    np.testing.assert_array_equal(RBF()(x, y), RBF()(x[:, None], y[:, None]))


# ------------------------------------------------------------- widths and identities


@pytest.mark.parametrize(
    ("cls", "to_gamma"),
    [
        (RBF, lambda ls: 1 / (2 * ls**2)),
        (Cauchy, lambda ls: 1 / (2 * ls**2)),
        (Laplacian, lambda ls: 1 / ls),
    ],
)
def test_length_scale_converts_to_gamma(cls, to_gamma, rng):
    X = rng.normal(size=(6, 2))
    by_length = cls(length_scale=0.8)
    by_gamma = cls(gamma=to_gamma(0.8))
    assert by_length.gamma == pytest.approx(to_gamma(0.8), rel=1e-15)
    assert by_gamma.length_scale == pytest.approx(0.8, rel=1e-14)
    np.testing.assert_allclose(by_length(X), by_gamma(X), **TOL)


def test_rbf_length_scale_is_the_gaussian_sd():
    # exp(-r^2 / (2 l^2)): at distance l the kernel is exp(-1/2)
    assert RBF(length_scale=2.0)([[0.0]], [[2.0]])[0, 0] == pytest.approx(math.exp(-0.5))


@pytest.mark.parametrize("kernel", [RBF(gamma=3.0), Laplacian(gamma=3.0), Cauchy(gamma=3.0)])
def test_identical_points_give_exactly_one(kernel, rng):
    # a large offset makes ||x||^2 + ||y||^2 - 2 x.y cancel badly; the diagonal must stay 1
    X = 1e6 + rng.normal(size=(8, 3))
    assert np.all(np.diag(kernel(X)) == 1.0)
    assert np.all(np.diag(kernel(X, X.copy())) == 1.0)
    assert np.all(kernel(X) <= 1.0)


@pytest.mark.parametrize(
    "kernel",
    [RBF(gamma=0.5), Laplacian(gamma=0.5), Cauchy(gamma=0.5), Linear(), LinearSpline()],
    ids=repr,
)
def test_gram_matrix_is_symmetric_psd(kernel, rng):
    X = rng.uniform(0, 1, (30, 2))
    K = kernel(X)
    np.testing.assert_array_equal(K, K.T)
    eig = np.linalg.eigvalsh(K)
    assert eig.min() >= -1e-10 * eig.max()


# ------------------------------------------------------------- scikit-learn references


def test_matches_sklearn_pairwise(rng):
    X, Y = rng.normal(size=(9, 4)), rng.normal(size=(6, 4))
    np.testing.assert_allclose(RBF(gamma=0.3)(X, Y), rbf_kernel(X, Y, gamma=0.3), **TOL)
    np.testing.assert_allclose(
        Laplacian(gamma=0.3)(X, Y), laplacian_kernel(X, Y, gamma=0.3), **TOL
    )
    np.testing.assert_allclose(Linear()(X, Y), linear_kernel(X, Y), **TOL)
    np.testing.assert_allclose(
        Polynomial(degree=4, gamma=0.2, coef0=0.5)(X, Y),
        polynomial_kernel(X, Y, degree=4, gamma=0.2, coef0=0.5),
        **TOL,
    )
    np.testing.assert_allclose(
        Cauchy(length_scale=1.7)(X, Y), RationalQuadratic(length_scale=1.7, alpha=1.0)(X, Y), **TOL
    )


# ------------------------------------------------------------- composition


def test_sum_product_and_scalar_are_elementwise(rng):
    X, Y = rng.normal(size=(5, 2)), rng.normal(size=(4, 2))
    k1, k2 = RBF(gamma=0.5), Polynomial(degree=2)
    A, B = k1(X, Y), k2(X, Y)
    assert isinstance(k1 + k2, Sum)
    assert isinstance(k1 * k2, Product)
    np.testing.assert_allclose((k1 + k2)(X, Y), A + B, **TOL)
    np.testing.assert_allclose((k1 * k2)(X, Y), A * B, **TOL)
    np.testing.assert_allclose((2.0 * k1)(X, Y), 2.0 * A, **TOL)
    np.testing.assert_allclose((k1 * 3)(X, Y), 3.0 * A, **TOL)
    np.testing.assert_allclose((k1 + 0.5)(X, Y), A + 0.5, **TOL)
    np.testing.assert_allclose((0.5 + k1)(X, Y), A + 0.5, **TOL)
    np.testing.assert_allclose((np.float64(2.0) * k1)(X, Y), 2.0 * A, **TOL)
    np.testing.assert_allclose(sum([k1, k2, k1])(X, Y), 2 * A + B, **TOL)
    np.testing.assert_allclose((2.0 * k1 + k1 * k2)(X, Y), 2 * A + A * B, **TOL)


@pytest.mark.parametrize("scalar", [0.0, -1.0, math.nan, math.inf])
def test_scalar_composition_needs_a_positive_scalar(scalar):
    with pytest.raises(ValueError, match="value must be finite and > 0"):
        scalar * RBF()


def test_composition_with_a_non_kernel_is_a_type_error():
    with pytest.raises(TypeError):
        RBF() + "rbf"
    with pytest.raises(TypeError):
        RBF() * [1.0]


# ------------------------------------------------------------- repr and parameters


def test_repr_and_get_params():
    assert repr(RBF(length_scale=0.5)) == "RBF(length_scale=0.5)"
    assert repr(RBF()) == "RBF(gamma=1.0)"
    assert repr(2.0 * Linear()) == "(Constant(value=2.0) * Linear())"
    assert repr(Linear() + LinearSpline()) == "(Linear() + LinearSpline())"
    assert Polynomial(degree=3).get_params() == {"degree": 3, "gamma": 1.0, "coef0": 1.0}
    assert Laplacian(gamma=2.0).get_params() == {"gamma": 2.0}
    k1, k2 = RBF(), Linear()
    assert (k1 + k2).get_params() == {"k1": k1, "k2": k2}
    assert "my_kernel" in repr(CallableKernel(_my_kernel))
    assert repr(make_basis("rbf", gamma=2.0)) == "KernelBasis(kernel=RBF(gamma=2.0), bias=True)"


@pytest.mark.parametrize(
    "kernel",
    [RBF(length_scale=0.3), Laplacian(gamma=2.0), Cauchy(), Polynomial(3, 0.5, 0.0), Linear()],
    ids=repr,
)
def test_get_params_rebuilds_the_kernel(kernel, rng):
    X = rng.normal(size=(4, 2))
    rebuilt = type(kernel)(**kernel.get_params())
    assert repr(rebuilt) == repr(kernel)
    np.testing.assert_array_equal(rebuilt(X), kernel(X))


def _my_kernel(X, Y):
    return X @ Y.T + 1.0


# ------------------------------------------------------------- make_kernel


@pytest.mark.parametrize(
    ("name", "cls"),
    [
        ("rbf", RBF),
        ("RBF", RBF),
        ("linear", Linear),
        ("poly", Polynomial),
        ("polynomial", Polynomial),
        ("laplacian", Laplacian),
        ("exponential", Laplacian),
        ("cauchy", Cauchy),
        ("linear_spline", LinearSpline),
        ("spline", LinearSpline),
    ],
)
def test_make_kernel_by_name(name, cls):
    assert type(make_kernel(name)) is cls


def test_make_kernel_passes_params_instances_and_callables(rng):
    assert make_kernel("poly", degree=5).degree == 5
    assert make_kernel("rbf", length_scale=2.0).gamma == pytest.approx(0.125)
    k = Cauchy()
    assert make_kernel(k) is k
    wrapped = make_kernel(_my_kernel)
    assert isinstance(wrapped, CallableKernel)
    X = rng.normal(size=(3, 2))
    np.testing.assert_allclose(wrapped(X), X @ X.T + 1.0, **TOL)
    with pytest.raises(ValueError, match="need a kernel name"):
        make_kernel(k, gamma=2.0)


def test_unknown_kernel_name_lists_valid_names():
    with pytest.raises(ValueError, match=r"unknown kernel 'gaussian'.*'cauchy'.*'rbf'"):
        make_kernel("gaussian")
    with pytest.raises(ValueError, match="unknown kernel 3"):
        make_kernel(3)


# ------------------------------------------------------------- bad input


@pytest.mark.parametrize("cls", [RBF, Laplacian, Cauchy])
@pytest.mark.parametrize("arg", ["gamma", "length_scale"])
@pytest.mark.parametrize("value", [0.0, -1.0, math.nan, math.inf, -math.inf])
def test_bad_width_raises_naming_the_argument(cls, arg, value):
    with pytest.raises(ValueError, match=rf"^{arg} must be finite and > 0; got"):
        cls(**{arg: value})


def test_width_message_reports_the_value():
    with pytest.raises(ValueError, match=r"gamma must be finite and > 0; got 0\.0"):
        RBF(gamma=0.0)


def test_width_given_twice_or_overflowing():
    with pytest.raises(ValueError, match="exactly one of gamma or length_scale"):
        RBF(gamma=1.0, length_scale=1.0)
    with pytest.raises(ValueError, match=r"gamma \(from length_scale\) must be finite"):
        RBF(length_scale=1e-200)


@pytest.mark.parametrize("degree", [0, -2, 1.5, True, "2"])
def test_polynomial_degree_must_be_a_positive_int(degree):
    with pytest.raises(ValueError, match="degree must be a positive integer"):
        Polynomial(degree=degree)


def test_polynomial_offsets_are_checked():
    with pytest.raises(ValueError, match="coef0 must be finite and >= 0"):
        Polynomial(coef0=-1.0)
    with pytest.raises(ValueError, match="gamma must be finite and > 0"):
        Polynomial(gamma=0.0)


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_non_finite_inputs_are_rejected(bad, rng):
    X = rng.normal(size=(4, 2))
    Xbad = X.copy()
    Xbad[1, 0] = bad
    with pytest.raises(ValueError, match=r"^X contains non-finite"):
        RBF()(Xbad, X)
    with pytest.raises(ValueError, match=r"^Y contains non-finite"):
        RBF()(X, Xbad)
    with pytest.raises(ValueError, match=r"^X contains non-finite"):
        KernelBasis().fit(Xbad)
    basis = KernelBasis().fit(X)
    with pytest.raises(ValueError, match=r"^X contains non-finite"):
        basis.transform(Xbad)


def test_feature_mismatch_between_x_and_y(rng):
    with pytest.raises(ValueError, match="X has 3 features but Y has 2"):
        Linear()(rng.normal(size=(4, 3)), rng.normal(size=(4, 2)))


def test_callable_kernel_wrong_shape_or_non_finite(rng):
    X = rng.normal(size=(4, 2))
    with pytest.raises(
        ValueError, match=r"CallableKernel.*returned shape \(4, 2\); expected \(4, 4\)"
    ):
        CallableKernel(lambda A, B: A)(X)
    with pytest.raises(ValueError, match=r"CallableKernel.*has 4 non-finite entries"):
        CallableKernel(lambda A, B: np.where(np.eye(len(A)) > 0, np.nan, 1.0))(X)
    # the check also applies inside a composition
    with pytest.raises(ValueError, match="CallableKernel"):
        (RBF() + CallableKernel(lambda A, B: np.ones(3)))(X)
    with pytest.raises(TypeError, match="func must be callable"):
        CallableKernel(3.0)


def test_overflowing_kernel_names_the_kernel():
    with pytest.raises(ValueError, match=r"Polynomial\(degree=300.*1 non-finite entry \(of 1\)"):
        with np.errstate(over="ignore"):
            Polynomial(degree=300)([[10.0]])


# ------------------------------------------------------------- KernelBasis


def test_kernel_basis_shape_bias_and_columns(rng):
    X = rng.normal(size=(10, 2))
    basis = KernelBasis(RBF(gamma=0.5))
    Phi = basis.fit_transform(X)
    assert isinstance(basis, Basis)
    assert Phi.shape == (10, 11)
    assert Phi.dtype == np.float64
    np.testing.assert_array_equal(Phi[:, 0], np.ones(10))
    np.testing.assert_allclose(Phi[:, 1:], rbf_kernel(X, X, gamma=0.5), **TOL)
    assert basis.n_basis_ == 11
    assert basis.basis_names_ == ["bias"] + [f"x{i}" for i in range(10)]
    np.testing.assert_array_equal(basis.centres_, X)
    np.testing.assert_array_equal(basis.X_fit_, X)
    assert basis.n_features_in_ == 2


@pytest.mark.parametrize("name", sorted(ORACLES))
def test_design_of_a_symmetric_kernel_equals_kernel_of_inputs_and_centres(name, rng):
    """Built as k(centres, X).T in row blocks: the same matrix as k(X, centres), column-major."""
    kernel, _ = ORACLES[name]
    assert kernel.symmetric
    X, X_new = rng.uniform(0, 1, (9, 3)), rng.uniform(0, 1, (4, 3))
    basis = KernelBasis(kernel, bias=True).fit(X)
    for Z in (X, X_new):
        Phi = basis.transform(Z)
        assert Phi.flags.f_contiguous and Phi.shape == (len(Z), 10)
        np.testing.assert_array_equal(Phi[:, 0], 1.0)
        np.testing.assert_allclose(Phi[:, 1:], kernel(Z, X), rtol=1e-14, atol=1e-14)


def test_asymmetric_kernel_keeps_its_orientation(rng):
    """A callable (or a subclass that does not declare symmetry) is evaluated as k(X, centres)."""

    class Skew(Kernel):
        def _evaluate(self, X, Y):
            return np.exp(X[:, :1] - 2.0 * Y[:, 0])

    X, X_new = rng.normal(size=(5, 1)), rng.normal(size=(3, 1))
    for kernel in (Skew(), CallableKernel(lambda A, B: np.exp(A[:, :1] - 2.0 * B[:, 0]))):
        assert not kernel.symmetric
        Phi = KernelBasis(kernel, bias=False).fit(X).transform(X_new)
        np.testing.assert_allclose(Phi, np.exp(X_new - 2.0 * X[:, 0]), rtol=1e-14)
    assert not (RBF() + CallableKernel(lambda A, B: A @ B.T)).symmetric
    assert (RBF() * Linear() + 2.0).symmetric


def test_subclass_that_redefines_a_symmetric_kernel_is_used_as_defined(rng):
    """Overriding _evaluate or __call__ of a built-in kernel: not assumed symmetric, and the
    design is the subclass's kernel (not the parent's in-place evaluation)."""

    class ShiftedRBF(RBF):
        def _evaluate(self, X, Y):
            return np.exp(-self.gamma * (X[:, :1] - Y[:, 0] - 0.5) ** 2)

    class Doubled(Linear):
        def __call__(self, X, Y=None):
            return 2.0 * super().__call__(X, Y)

    class DeclaredRBF(RBF):
        symmetric = True

        def _evaluate(self, X, Y):
            return super()._evaluate(X, Y)

    X, Z = rng.normal(size=(6, 1)), rng.normal(size=(4, 1))
    for kernel in (ShiftedRBF(gamma=0.5), Doubled(), ShiftedRBF(gamma=0.5) + Linear()):
        assert not kernel.symmetric
        Phi = KernelBasis(kernel, bias=False).fit(X).transform(Z)
        np.testing.assert_allclose(Phi, kernel(Z, X), rtol=1e-14)
    assert DeclaredRBF().symmetric  # a subclass may say so itself
    out = np.empty((4, 6))
    np.testing.assert_allclose(ShiftedRBF(gamma=0.5).fill(Z, X, out), ShiftedRBF(gamma=0.5)(Z, X))


def test_finite_design_with_an_overflowing_sum_is_accepted():
    class Huge(Kernel):
        symmetric = True

        def _evaluate(self, X, Y):
            return np.full((len(X), len(Y)), 1e308)

    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Phi = KernelBasis(Huge(), bias=False).fit_transform(np.zeros((3, 1)))
    assert np.all(Phi == 1e308)

    class PlusMinusInf(Kernel):
        symmetric = True

        def _evaluate(self, X, Y):
            K = np.zeros((len(X), len(Y)))
            K[0, 0], K[-1, -1] = np.inf, -np.inf
            return K

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match=r"2 non-finite entries \(of 9\)"):
            KernelBasis(PlusMinusInf(), bias=False).fit_transform(np.zeros((3, 1)))


def test_fill_writes_the_kernel_matrix_and_checks_out(rng):
    X, Y = rng.normal(size=(4, 2)), rng.normal(size=(3, 2))
    for kernel in (RBF(gamma=0.5), Laplacian(), Cauchy(), Polynomial(degree=2), Linear()):
        out = np.empty((4, 3))
        assert kernel.fill(X, Y, out) is out
        np.testing.assert_allclose(out, kernel(X, Y), rtol=1e-14)
    with pytest.raises(ValueError, match=r"C-contiguous float64 array of shape \(4, 3\)"):
        RBF().fill(X, Y, np.empty((3, 4)))
    with pytest.raises(ValueError, match="C-contiguous True"):
        RBF().fill(X, Y, np.empty((4, 3), dtype=np.float32))
    with pytest.raises(ValueError, match="C-contiguous False"):
        RBF().fill(X, Y, np.empty((4, 3), order="F"))


def test_non_finite_design_of_a_kernel_names_the_kernel():
    with pytest.raises(ValueError, match=r"KernelBasis\(kernel=Polynomial\(degree=300.* non-fin"):
        with np.errstate(over="ignore"):
            KernelBasis(Polynomial(degree=300)).fit_transform([[10.0], [1.0]])


def test_kernel_basis_without_bias(rng):
    X = rng.normal(size=(6, 1))
    basis = KernelBasis("laplacian", bias=False).fit(X)
    Phi = basis.transform(X)
    assert Phi.shape == (6, 6)
    assert basis.basis_names_[0] == "x0"
    np.testing.assert_allclose(Phi, laplacian_kernel(X, X, gamma=1.0), **TOL)


def test_kernel_basis_transform_uses_stored_training_points(rng):
    X = rng.normal(size=(8, 3))
    X_orig = X.copy()
    X_new = rng.normal(size=(5, 3))
    basis = KernelBasis(Cauchy(gamma=0.4))
    Phi_fit = basis.fit_transform(X)
    np.testing.assert_array_equal(basis.transform(X), Phi_fit)
    expected_new = np.hstack([np.ones((5, 1)), Cauchy(gamma=0.4)(X_new, X_orig)])
    X += 100.0  # the caller mutates its array after fit
    np.testing.assert_array_equal(basis.centres_, X_orig)
    np.testing.assert_allclose(basis.transform(X_new), expected_new, **TOL)
    np.testing.assert_array_equal(basis.transform(X_orig), Phi_fit)


def test_kernel_basis_accepts_1d_input(rng):
    x = rng.uniform(0, 1, 7)
    Phi = KernelBasis("spline").fit_transform(x)
    assert Phi.shape == (7, 8)
    np.testing.assert_allclose(Phi[:, 1:], LinearSpline()(x[:, None], x[:, None]), **TOL)


def test_kernel_basis_feature_count_and_fit_state(rng):
    basis = KernelBasis()
    with pytest.raises(NotFittedError, match="not fitted"):
        basis.transform(rng.normal(size=(3, 2)))
    basis.fit(rng.normal(size=(5, 2)))
    with pytest.raises(ValueError, match="X has 3 features, but KernelBasis was fitted with 2"):
        basis.transform(rng.normal(size=(4, 3)))


def test_kernel_basis_with_a_callable_kernel(rng):
    X = rng.normal(size=(4, 2))
    Phi = KernelBasis(_my_kernel).fit_transform(X)
    np.testing.assert_allclose(Phi[:, 1:], X @ X.T + 1.0, **TOL)


def test_basis_pickles(rng):
    X = rng.normal(size=(5, 1))
    for basis in (KernelBasis(2.0 * RBF()).fit(X), polynomial_basis(2).fit(X)):
        clone = pickle.loads(pickle.dumps(basis))
        np.testing.assert_array_equal(clone.transform(X), basis.transform(X))


# ------------------------------------------------------------- FunctionBasis, polynomial


def test_function_basis_cubic_equals_vander(rng):
    x = rng.normal(size=9)
    basis = FunctionBasis([1, lambda X: X[:, 0], lambda X: X[:, 0] ** 2, lambda X: X[:, 0] ** 3])
    np.testing.assert_allclose(basis.fit_transform(x), np.vander(x, 4, increasing=True), **TOL)
    assert basis.basis_names_ == ["1", "f1", "f2", "f3"]
    poly = polynomial_basis(3)
    np.testing.assert_allclose(poly.fit_transform(x), np.vander(x, 4, increasing=True), **TOL)
    assert poly.basis_names_ == ["1", "x", "x^2", "x^3"]


def test_function_basis_bias_constants_and_names(rng):
    X = rng.normal(size=(5, 2))

    def second(A):
        return A[:, 1]

    basis = FunctionBasis([second, 2.5, lambda A: 7.0], bias=True)
    Phi = basis.fit_transform(X)
    np.testing.assert_array_equal(Phi[:, 0], 1.0)
    np.testing.assert_array_equal(Phi[:, 1], X[:, 1])
    np.testing.assert_array_equal(Phi[:, 2], 2.5)
    np.testing.assert_array_equal(Phi[:, 3], 7.0)
    assert basis.basis_names_ == ["bias", "second", "const(2.5)", "f2"]
    assert basis.n_basis_ == 4


def test_function_basis_errors(rng):
    X = rng.normal(size=(5, 2))
    with pytest.raises(
        ValueError, match=r"functions\[0\].*returned shape \(5, 2\); expected \(5,\)"
    ):
        FunctionBasis([lambda A: A]).fit_transform(X)
    with pytest.raises(ValueError, match=r"FunctionBasis.*2 non-finite entries \(of 6\)"):
        FunctionBasis([lambda A: np.full(len(A), np.inf), 1.0, 0.0]).fit_transform(X[:2])
    with pytest.raises(ValueError, match=r"functions\[1\] must be callable or a real constant"):
        FunctionBasis([1, "x"])
    with pytest.raises(ValueError, match="at least one"):
        FunctionBasis([])
    with pytest.raises(ValueError, match="polynomial_basis expects one input feature; X has 2"):
        polynomial_basis(2).fit_transform(X)
    with pytest.raises(ValueError, match="degree must be a non-negative integer"):
        polynomial_basis(-1)
    basis = FunctionBasis([1]).fit(X)
    with pytest.raises(ValueError, match="X has 1 features, but FunctionBasis was fitted with 2"):
        basis.transform(X[:, :1])


# ------------------------------------------------------------- PrecomputedBasis, make_basis


def test_precomputed_basis_round_trip_and_column_check(rng):
    X_train, X_new = rng.normal(size=(6, 2)), rng.normal(size=(3, 2))
    K_train, K_new = RBF()(X_train), RBF()(X_new, X_train)
    basis = PrecomputedBasis()
    np.testing.assert_array_equal(basis.fit_transform(K_train), K_train)
    np.testing.assert_array_equal(basis.transform(K_new), K_new)
    assert basis.n_basis_ == 6
    with_bias = PrecomputedBasis(bias=True).fit(K_train)
    np.testing.assert_array_equal(with_bias.transform(K_new), np.hstack([np.ones((3, 1)), K_new]))
    assert with_bias.basis_names_[:2] == ["bias", "c0"]
    with pytest.raises(
        ValueError, match="X has 5 columns, but PrecomputedBasis was fitted with 6"
    ):
        basis.transform(K_new[:, :5])


def test_make_basis(rng):
    X = rng.normal(size=(5, 2))
    basis = make_basis("rbf", gamma=0.25)
    assert isinstance(basis, KernelBasis)
    np.testing.assert_allclose(basis.fit_transform(X)[:, 1:], rbf_kernel(X, gamma=0.25), **TOL)
    assert make_basis(Linear(), bias=False).fit(X).n_basis_ == 5
    existing = polynomial_basis(2)
    assert make_basis(existing) is existing
    assert isinstance(make_basis("precomputed"), PrecomputedBasis)
    assert make_basis("precomputed", bias=True).bias is True
    assert isinstance(make_basis(_my_kernel).kernel, CallableKernel)
    with pytest.raises(ValueError, match="do not apply"):
        make_basis(existing, gamma=1.0)
    with pytest.raises(ValueError, match="unknown kernel 'nope'"):
        make_basis("nope")


def test_column_scale(rng):
    Phi = rng.normal(size=(6, 3))
    Phi[:, 1] = 0.0
    scale = column_scale(Phi)
    np.testing.assert_allclose(scale[[0, 2]], np.sqrt((Phi[:, [0, 2]] ** 2).sum(axis=0)), **TOL)
    assert scale[1] == 1.0
    with pytest.raises(ValueError, match="Phi contains non-finite"):
        column_scale(np.full((2, 2), np.nan))


def test_kernel_base_class_is_abstract():
    with pytest.raises(NotImplementedError):
        Kernel()([[1.0]])


# --------------------------------------------------------------------------- imports


def _import_graph() -> dict[str, set[str]]:
    """Module -> the ``rvm_pymc`` modules it imports, from the source (ast), function-level
    imports included; ``from pkg import name`` counts as importing ``pkg.name`` when that
    is a module, else ``pkg``."""
    root = Path(rvm_pymc.__file__).parent
    files = {}
    for path in root.rglob("*.py"):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        files[".".join(parts)] = path
    graph = {}
    for mod, path in files.items():
        package = mod if path.name == "__init__.py" else mod.rsplit(".", 1)[0]
        deps = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                deps.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                    base = f"{up}.{base}" if base else up
                for a in node.names:
                    deps.add(f"{base}.{a.name}" if f"{base}.{a.name}" in files else base)
        graph[mod] = {d for d in deps if d in files and d != mod}
    return graph


def _reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        for d in graph[todo.pop()] - seen:
            seen.add(d)
            todo.append(d)
    return seen


def test_kernels_and_basis_are_not_in_an_import_cycle():
    graph = _import_graph()
    assert "rvm_pymc.kernels" in graph["rvm_pymc.basis"]  # the one direction
    assert "rvm_pymc.basis" not in graph["rvm_pymc.kernels"]
    for mod in ("rvm_pymc.kernels", "rvm_pymc.basis"):
        assert mod not in _reachable(graph, mod), f"{mod} is in an import cycle"
    # the checker sees function-level imports: rvm_pymc.reference imports the priors
    # only inside log_evidence
    assert "rvm_pymc.priors" in graph["rvm_pymc.reference"]


def test_bases_through_kernels_name_their_module():
    from rvm_pymc import basis, kernels

    for name in basis.__all__:
        with pytest.raises(AttributeError, match=f"from rvm_pymc.basis import {name}"):
            getattr(kernels, name)
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        kernels.Nope  # noqa: B018
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert kernels.RBF is RBF
