"""The posterior of ``RVR(method="nuts")`` stopped by the default rule, checked independently.

``converged_`` is the stopping rule itself, so it cannot tell a wrong posterior.  Here the
collapsed sampler's draws (``draws=None``: stopped at the first checkpoint that passes) are
held against the exact posterior of a two-basis regression, integrated on a grid over
``(log alpha_1, log alpha_2, log beta)`` with the model's own density (docs/design.md
section 1: the Gamma density of the *log* precisions, Jacobian included, on the scaled
problem of the estimators' one scaling boundary).  Each posterior mean must lie within a
few Monte Carlo standard errors (ArviZ's ``mcse``) of the reference, and the same check
must reject the reference of a likelihood whose noise precision is 1.5 times too large.
"""

from __future__ import annotations

import arviz_stats
import numpy as np
import pytest

from rvm_pymc.basis import polynomial_basis
from rvm_pymc.estimators import RVR
from rvm_pymc.priors import resolve_prior

pytestmark = pytest.mark.filterwarnings(  # PyMC forks a process per chain
    "ignore:This process .* is multi-threaded, use of fork:DeprecationWarning"
)
Z_MAX = 4.0
"""Largest |posterior mean - reference| / MCSE accepted."""


def _data():
    rng = np.random.default_rng(3)
    x = np.linspace(-1.0, 1.0, 15)[:, None]
    return x, 0.5 + 1.2 * x[:, 0] + 0.3 * rng.standard_normal(15)


def _grid_posterior(Phi, t, prior, beta_factor=1.0):
    """Posterior means of ``log beta``, ``log alpha`` and ``w`` of the collapsed model.

    The density over ``(log alpha, log beta)`` is ``log N(t | 0, I/beta' + Phi A^-1 Phi^T)
    + sum(a log alpha - b alpha) + c log beta - d beta`` with ``beta' = beta_factor * beta``
    (1: the model's), integrated on a uniform grid; ``w``'s mean is that of
    ``beta' Sigma Phi^T t``.
    """
    la = np.arange(-12.0, 12.0 + 1e-9, 0.1)
    lb = np.arange(-8.0, 12.0 + 1e-9, 0.05)
    a1, a2 = np.meshgrid(la, la, indexing="ij")
    A1, A2 = np.exp(a1), np.exp(a2)
    G, b, tt, n = Phi.T @ Phi, Phi.T @ t, t @ t, t.size
    logp, mean_w = [], []
    for log_beta in lb:
        beta = beta_factor * np.exp(log_beta)
        s11, s22, s12 = A1 + beta * G[0, 0], A2 + beta * G[1, 1], beta * G[0, 1]
        det = s11 * s22 - s12**2
        mu1 = beta * (s22 * b[0] - s12 * b[1]) / det
        mu2 = beta * (s11 * b[1] - s12 * b[0]) / det
        quad = beta * tt - beta * (b[0] * mu1 + b[1] * mu2)
        log_det_c = np.log(det) - a1 - a2 - n * np.log(beta)
        lp = -0.5 * (log_det_c + quad)
        lp += prior.a * (a1 + a2) - prior.b * (A1 + A2) + prior.c * log_beta
        logp.append(lp - prior.d * np.exp(log_beta))
        mean_w.append((mu1, mu2))
    logp = np.stack(logp)  # (lb, la1, la2)
    p = np.exp(logp - logp.max())
    p /= p.sum()
    w = np.stack(mean_w)  # (lb, 2, la1, la2)
    return {
        "log_beta": float(np.sum(p * lb[:, None, None])),
        "log_alpha": np.array([np.sum(p * a1), np.sum(p * a2)]),
        "w": np.array([np.sum(p * w[:, 0]), np.sum(p * w[:, 1])]),
    }


@pytest.fixture(scope="module", params=["pymc", "nutpie"])
def stopped(request):
    """The default NUTS fit (``draws=None``) of a line through 15 points, by each sampler
    that stops (nutpie where it is installed)."""
    if request.param != "pymc":
        pytest.importorskip(request.param)
    x, t = _data()
    est = RVR(
        method="nuts",
        kernel=polynomial_basis(1),
        bias=False,
        random_state=0,
        sampler_kwargs={"progressbar": False, "nuts_sampler": request.param},
    )
    return est.fit(x, t), x, t


def _z_scores(stopped, beta_factor):
    """(posterior mean - reference) / MCSE of ``log beta``, ``log alpha`` and ``w``, data units."""
    est, x, t = stopped
    Phi = polynomial_basis(1).fit_transform(x)
    col = np.sqrt(np.mean(Phi**2, axis=0))  # the estimators' scaling: unit RMS columns,
    t_sd = float(np.sqrt(np.mean(t**2)))  # targets over their RMS without a bias column
    prior = resolve_prior("weakly_informative")  # RVR's default for NUTS, on the scaled problem
    assert est.prior_ == prior
    ref = _grid_posterior(Phi / col, t / t_sd, prior, beta_factor)
    # the same quantities in the units of the data (w = w_s t_sd / col, alpha ~ 1 / w^2)
    want = {
        "log_beta": ref["log_beta"] - 2.0 * np.log(t_sd),
        "log_alpha": ref["log_alpha"] + 2.0 * np.log(col / t_sd),
        "w": ref["w"] * t_sd / col,
    }
    tree = est.idata_
    means = tree["posterior"].mean(("chain", "draw"))
    errors = arviz_stats.mcse(tree, var_names=list(want), method="mean")
    return np.concatenate([np.ravel((means[k].values - want[k]) / errors[k].values) for k in want])


def test_the_stopped_run_is_the_default_rule(stopped):
    est = stopped[0]
    assert est.idata_.attrs["sampler"] == est.sampler_kwargs["nuts_sampler"]
    assert est.idata_.attrs["max_draws"] == 2000
    assert est.idata_["posterior"].sizes["draw"] < 2000  # stopped at a checkpoint
    assert est.converged_


def test_the_stopped_posterior_matches_the_exact_one(stopped):
    z = _z_scores(stopped, 1.0)
    assert np.all(np.abs(z) < Z_MAX), z


def test_the_check_rejects_a_posterior_with_a_wrong_noise_precision(stopped):
    z = _z_scores(stopped, 1.5)
    assert np.max(np.abs(z)) > Z_MAX, z
