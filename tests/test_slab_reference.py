"""The slab in the reference solver: weight prior precision ``alpha_m + 1/s^2`` (no PyMC).

Every check recomputes the objective independently of the solver's code (a
dense multivariate normal, a Laplace formula written out here, a grid
integral) at the returned hyperparameters.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import expit, log_expit, logsumexp, softmax
from scipy.stats import multivariate_normal, poisson

from rvm_pymc.priors import HyperPrior
from rvm_pymc.reference import fit_classification, fit_counts, fit_regression, log_evidence

WI = dict(a=1.0, b=0.01, c=1.0, d=0.01)  # the weakly informative preset


def _regression(n=30, seed=0):
    rng = np.random.default_rng(seed)
    x = np.linspace(-1, 1, n)
    Phi = np.column_stack([np.ones(n), x, x**2, x**3, np.sin(3 * x)])
    return Phi, 1.0 + 2.0 * x + 0.1 * rng.standard_normal(n)


def _objective(Phi, t, alpha, beta, prior):
    """log N(t | 0, I/beta + Phi (A + I/s^2)^-1 Phi^T) + the log-coordinate hyperprior, densely."""
    prec = alpha + (0.0 if prior.slab is None else prior.slab**-2)
    C = np.eye(t.size) / beta + (Phi / prec) @ Phi.T
    lml = multivariate_normal(np.zeros(t.size), C).logpdf(t)
    with np.errstate(divide="ignore"):
        shape = prior.a * np.sum(np.log(alpha)) if prior.a else 0.0
    return lml + shape - prior.b * np.sum(alpha) + prior.c * np.log(beta) - prior.d * beta


# (slab, prior): a proper Gamma prior (alpha > 0 throughout) and the flat one (some alpha = 0)
CASES = [(HyperPrior(**WI, slab=0.5), "wi"), (HyperPrior(slab=0.5), "flat")]


@pytest.mark.parametrize("method", ["mackay", "em"])
@pytest.mark.parametrize(("prior", "name"), CASES)
def test_regression_evidence_is_the_dense_marginal_with_the_slab(method, prior, name):
    Phi, t = _regression()
    res = fit_regression(Phi, t, method=method, prior=prior, tol=1e-10, max_iter=20000)
    assert res.converged
    Pa = Phi[:, res.active]
    dense = _objective(Pa, t, res.alpha, res.beta, prior)
    assert res.log_evidence == pytest.approx(dense, abs=1e-9)
    assert res.trace["log_evidence"][-1] == pytest.approx(dense, abs=1e-6)
    assert log_evidence(Pa, t, res.alpha, res.beta, prior) == pytest.approx(dense, abs=1e-9)
    # the posterior is the one under the slab: Sigma = (A + I/s^2 + beta Phi^T Phi)^-1
    H = np.diag(res.alpha + prior.slab**-2) + res.beta * Pa.T @ Pa
    np.testing.assert_allclose(res.cov @ H, np.eye(res.active.size), atol=1e-9)
    np.testing.assert_allclose(res.gamma, 1.0 - (res.alpha + prior.slab**-2) * np.diag(res.cov))
    if name == "wi":  # the objective without the slab is another number (the check can fail)
        assert abs(_objective(Pa, t, res.alpha, res.beta, prior.without_slab()) - dense) > 0.1
    else:  # this slab (sd 0.5) holds the slope 2 back: its alpha is 0
        assert np.any(res.alpha == 0.0)


@pytest.mark.parametrize("method", ["mackay", "em"])
@pytest.mark.parametrize(("prior", "name"), CASES)
def test_regression_fit_is_a_stationary_point_of_the_slab_objective(method, prior, name):
    """Central differences in log alpha_m (alpha_m > 0) and log beta vanish; where
    alpha_m = 0 the slope in alpha_m is not positive (the optimum is on the bound)."""
    Phi, t = _regression()
    res = fit_regression(Phi, t, method=method, prior=prior, tol=1e-10, max_iter=20000)
    Pa, alpha, beta = Phi[:, res.active], res.alpha, res.beta
    h = 1e-5

    def f(alpha, beta):
        return _objective(Pa, t, alpha, beta, prior)

    grad = []
    for m in np.flatnonzero(alpha > 0):
        up, down = alpha.copy(), alpha.copy()
        up[m] *= np.exp(h)
        down[m] *= np.exp(-h)
        grad.append((f(up, beta) - f(down, beta)) / (2 * h))
    grad.append((f(alpha, beta * np.exp(h)) - f(alpha, beta * np.exp(-h))) / (2 * h))
    np.testing.assert_allclose(grad, 0.0, atol=1e-5)
    for m in np.flatnonzero(alpha == 0):
        up = alpha.copy()
        up[m] = 1e-6
        assert f(up, beta) <= f(alpha, beta)
    # the same alphas are not stationary for the objective without the slab
    if name == "wi":
        m = int(np.argmin(alpha))
        up, down = alpha.copy(), alpha.copy()
        up[m] *= np.exp(h)
        down[m] *= np.exp(-h)
        plain = prior.without_slab()
        slope = _objective(Pa, t, up, beta, plain) - _objective(Pa, t, down, beta, plain)
        slope /= 2 * h
        assert abs(slope) > 1e-3


@pytest.mark.parametrize("method", ["mackay", "em"])
def test_a_very_wide_slab_is_no_slab(method):
    Phi, t = _regression()
    # (EM under the flat prior creeps towards alpha = inf for long: MacKay only there)
    for prior in (HyperPrior(**WI), HyperPrior())[: 2 if method == "mackay" else 1]:
        plain = fit_regression(Phi, t, method=method, prior=prior, max_iter=20000)
        wide = fit_regression(
            Phi, t, method=method, prior=HyperPrior(**prior.as_dict() | {"slab": 1e6}),
            max_iter=20000,
        )  # fmt: skip
        np.testing.assert_array_equal(wide.active, plain.active)
        np.testing.assert_allclose(wide.alpha, plain.alpha, rtol=1e-6)
        assert wide.log_evidence == pytest.approx(plain.log_evidence, abs=1e-8)
    X, y = _binary(40)
    plain = fit_classification(X, y, method=method, prior=HyperPrior(**WI))
    wide = fit_classification(X, y, method=method, prior=HyperPrior(**WI, slab=1e6))
    np.testing.assert_array_equal(wide.active, plain.active)
    np.testing.assert_allclose(wide.alpha, plain.alpha, rtol=1e-6)
    assert wide.log_evidence == pytest.approx(plain.log_evidence, abs=1e-8)


# ------------------------------------------------------------- Laplace (classification, counts)


def _binary(n, seed=1):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 2))
    y = (X[:, 0] + 0.5 * X[:, 1] + 0.5 * rng.standard_normal(n) > 0).astype(int)
    return np.column_stack([np.ones(n), X, X[:, 0] * X[:, 1]]), y


def _laplace_by_hand(Phi, T, prec, W, likelihood):
    """log p(T | W) - W^T P W / 2 + K/2 sum log prec - log|H| / 2, H written out here.

    Also returns the gradient of the log posterior at ``W`` (zero at the mode).
    """
    F = Phi @ W
    if likelihood == "poisson":
        lam = np.exp(F[:, 0])
        loglik = poisson.logpmf(T[:, 0], lam).sum()
        grad = Phi.T @ (T[:, 0] - lam)[:, None] - prec[:, None] * W
        H = Phi.T @ (lam[:, None] * Phi) + np.diag(prec)
    elif W.shape[1] == 1:
        p = expit(F[:, 0])
        loglik = np.sum(log_expit(np.where(T[:, 0] == 1, 1.0, -1.0) * F[:, 0]))
        grad = Phi.T @ (T[:, 0] - p)[:, None] - prec[:, None] * W
        H = Phi.T @ ((p * (1 - p))[:, None] * Phi) + np.diag(prec)
    else:
        Y = softmax(F, axis=1)
        loglik = np.sum(T * (F - logsumexp(F, axis=1, keepdims=True)))
        grad = Phi.T @ (T - Y) - prec[:, None] * W
        k, m = W.shape[1], W.shape[0]
        H = np.zeros((k * m, k * m))
        for i in range(k):
            for j in range(k):
                d = Y[:, i] * ((i == j) - Y[:, j])
                H[i * m : (i + 1) * m, j * m : (j + 1) * m] = Phi.T @ (d[:, None] * Phi)
        H += np.diag(np.tile(prec, k))
    logdet = np.linalg.slogdet(H)[1]
    k = W.shape[1]
    log_ev = loglik - 0.5 * np.sum(prec[:, None] * W**2) + 0.5 * k * np.sum(np.log(prec))
    return log_ev - 0.5 * logdet, grad


@pytest.mark.parametrize("method", ["mackay", "em"])
@pytest.mark.parametrize("kind", ["binary", "softmax", "poisson"])
@pytest.mark.parametrize("prior", [HyperPrior(**WI, slab=1.0), HyperPrior(slab=1.0)])
def test_laplace_evidence_with_the_slab_matches_the_formula_at_the_mode(method, kind, prior):
    Phi, y = _binary(40)
    if kind == "poisson":
        rng = np.random.default_rng(2)
        y = rng.poisson(np.exp(0.3 + 0.5 * Phi[:, 1]))
        res = fit_counts(Phi, y, method=method, prior=prior)
        T = y[:, None].astype(float)
    else:
        if kind == "softmax":
            y = np.digitize(Phi[:, 1], [-0.5, 0.5])
        res = fit_classification(Phi, y, method=method, prior=prior)
        T = y[:, None].astype(float) if kind == "binary" else np.eye(3)[y]
    assert res.converged
    W = np.asarray(res.mean, dtype=float).reshape(res.active.size, -1)
    prec = res.alpha + prior.slab**-2
    by_hand, grad = _laplace_by_hand(Phi[:, res.active], T, prec, W, likelihood=kind)
    np.testing.assert_allclose(grad, 0.0, atol=1e-7)  # the mode under the slab's prior
    with np.errstate(divide="ignore"):
        hyper = prior.a * np.sum(np.log(res.alpha)) if prior.a else 0.0
    hyper -= prior.b * np.sum(res.alpha)
    assert res.log_evidence == pytest.approx(by_hand + hyper, abs=1e-8)
    assert res.trace["log_evidence"][-1] == pytest.approx(by_hand + hyper, abs=1e-5)
    if prior.a == 0:
        assert np.all(res.alpha >= 0)
    else:
        assert np.all(res.alpha > 0)


def test_laplace_evidence_with_the_slab_is_close_to_the_integral_two_weights():
    """The fit's Laplace evidence against ``log int p(y | w) N(w | 0, (A + I/s^2)^-1) dw``
    on a grid (the approximation's error is O(1/N); both weights kept)."""
    rng = np.random.default_rng(1)
    n = 120
    x = rng.uniform(-2, 2, n)
    y = (rng.uniform(size=n) < expit(0.5 + 1.5 * x)).astype(int)
    Phi = np.column_stack([np.ones(n), x])
    prior = HyperPrior(**WI, slab=1.0)
    res = fit_classification(Phi, y, method="mackay", prior=prior)
    assert res.active.tolist() == [0, 1]
    prec = res.alpha + 1.0
    sd = np.sqrt(np.diag(res.cov))
    grids = [np.linspace(c - 10 * s, c + 10 * s, 401) for c, s in zip(res.mean, sd, strict=True)]
    Wg = np.stack(np.meshgrid(*grids, indexing="ij"), -1).reshape(-1, 2)
    sign = np.where(y == 1, 1.0, -1.0)
    log_joint = log_expit(sign * (Wg @ Phi.T)).sum(1) + np.sum(
        0.5 * np.log(prec / (2 * np.pi)) - 0.5 * prec * Wg**2, axis=1
    )
    cell = (grids[0][1] - grids[0][0]) * (grids[1][1] - grids[1][0])
    exact = logsumexp(log_joint) + np.log(cell)
    laplace = res.log_evidence - (np.sum(np.log(res.alpha)) - 0.01 * np.sum(res.alpha))
    assert abs(laplace - exact) < 0.03
    # without the slab's precision in the integral the number is another one
    assert abs(laplace - (exact + 0.5 * np.sum(np.log(res.alpha / prec)))) > 0.1


# ------------------------------------------------------------------ the fast solver refuses


def test_the_fast_solver_refuses_a_slab_naming_prior_and_the_other_solvers():
    Phi, t = _regression()
    match = r"prior has slab=5\.0.*method='mackay' or 'em'"
    with pytest.raises(ValueError, match=match):
        fit_regression(Phi, t, method="fast", prior={"slab": 5.0})
    X, y = _binary(20)
    with pytest.raises(ValueError, match=match):
        fit_classification(X, y, method="fast", prior=HyperPrior(slab=5.0))
    with pytest.raises(ValueError, match=match):
        fit_counts(X, y, prior=HyperPrior(slab=5.0))


# ------------------------------------------------------------------------ the estimators


@pytest.mark.parametrize(
    ("kind", "solver", "prior"),
    [
        ("regression", "mackay", {**WI, "slab": 0.3}),
        ("classification", "em", {"slab": 2.0}),  # flat Gamma prior: two alphas at 0
        ("counts", "mackay", {"a": 1.0, "b": 0.01, "slab": 0.5}),
    ],
)
def test_estimators_fit_the_slab_on_the_scaled_problem(kind, solver, prior):
    """``method="reference"`` with a slab is the solver's fit of ``Phi / basis_scale_``
    (the slab is on the scaled weights), mapped back; the comparison's evidence and
    effective parameters, recomputed from the tree in data units, take the slab."""
    from rvm_pymc.basis import KernelBasis
    from rvm_pymc.comparison import effective_parameters
    from rvm_pymc.comparison import log_evidence as tree_log_evidence
    from rvm_pymc.estimators import RVC, RVP, RVR
    from rvm_pymc.kernels import RBF

    rng = np.random.default_rng(3)
    X = rng.standard_normal((30, 2))
    est_cls, fit = {
        "regression": (RVR, fit_regression),
        "classification": (RVC, fit_classification),
        "counts": (RVP, fit_counts),
    }[kind]
    if kind == "regression":
        y = np.sin(X[:, 0]) + 0.1 * rng.standard_normal(30)
    elif kind == "classification":
        y = (X[:, 0] + 0.3 * rng.standard_normal(30) > 0).astype(int)
    else:
        y = rng.poisson(np.exp(0.5 * X[:, 0]))
    est = est_cls(gamma=0.5, method="reference", solver=solver, prior=prior).fit(X, y)
    assert est.prior_.slab == prior["slab"]
    Phi = KernelBasis(RBF(gamma=0.5)).fit_transform(X)
    r = np.sqrt(np.mean(Phi**2, axis=0))
    np.testing.assert_allclose(est.basis_scale_, r, rtol=1e-12)
    m, s = (y.mean(), y.std()) if kind == "regression" else (0.0, 1.0)
    res = fit(Phi / r, (y - m) / s if kind == "regression" else y, method=solver, prior=prior)
    a = res.active
    assert ("a" in prior) or np.any(res.alpha == 0)  # under the flat prior some land on 0
    np.testing.assert_array_equal(est.active_, a)
    np.testing.assert_allclose(est.alpha_, res.alpha * r[a] ** 2 / s**2, rtol=1e-9, atol=0)
    assert est.log_evidence_ == pytest.approx(res.log_evidence - y.size * np.log(s), rel=1e-9)
    # the measures of rvm_pymc.compare, from the tree in data units
    hyper = HyperPrior(**{**HyperPrior().as_dict(), **prior})
    beta = getattr(res, "beta", 1.0)
    with np.errstate(divide="ignore"):
        lhp = hyper.a * np.sum(np.log(res.alpha)) if hyper.a else 0.0
    lhp += -hyper.b * np.sum(res.alpha) + (hyper.c * np.log(beta) - hyper.d * beta)
    lml = res.log_evidence - lhp - y.size * np.log(s)
    assert tree_log_evidence(est) == pytest.approx(lml, abs=1e-7)
    gamma_sum = res.gamma.sum() if kind == "regression" else None
    if gamma_sum is None:
        k = np.asarray(res.mean).reshape(a.size, -1).shape[1]
        var = np.diag(res.cov).reshape(k, a.size).sum(axis=0)
        gamma_sum = np.sum(k - (res.alpha + prior["slab"] ** -2) * var)
    assert effective_parameters(est) == pytest.approx(gamma_sum, rel=1e-8)


def test_estimators_refuse_the_slab_with_the_fast_solver():
    from rvm_pymc.estimators import RVR

    X = np.random.default_rng(0).standard_normal((12, 2))
    with pytest.raises(ValueError, match=r"solver='fast' does not take.*'mackay' or 'em'"):
        RVR(gamma=0.5, method="reference", prior={"slab": 5.0}).fit(X, X[:, 0])
