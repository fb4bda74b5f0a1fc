"""Type-II MAP warns when a user's own free variable has no optimum (issue 43)."""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytest

from rvm_pymc import ConvergenceWarning, inference, models

pytestmark = pytest.mark.pymc


def test_map_warns_when_a_hyperprior_scale_of_log_alpha_collapses():
    """``log_alpha ~ Normal(m, s)`` with ``s`` free: the density is unbounded as ``s -> 0``
    (every log precision at ``m``); before, L-BFGS-B stalled there and the fit said
    converged."""
    n = 30
    x = np.linspace(-1.0, 1.0, n)
    Phi = np.column_stack([np.ones(n), x, x**2, x**3])
    t = 0.5 + 2.0 * x + 0.1 * np.random.default_rng(1).standard_normal(n)
    with pm.Model(coords={"basis": ["1", "x", "x2", "x3"], "obs": np.arange(n)}) as model:
        Phi_d = pm.Data("Phi", Phi, dims=("obs", "basis"))
        t_d = pm.Data("t", t, dims="obs")
        PtP = pm.Data("PhiTPhi", Phi.T @ Phi)
        s = pm.HalfNormal("s", 1.0)
        log_alpha = pm.Normal("log_alpha", pm.Normal("m", 0.0, 10.0), s, dims="basis")
        log_beta = pm.Normal("log_beta", 0.0, 10.0)
        pm.CustomDist("t_obs", log_alpha, log_beta, Phi_d, PtP, logp=models.marginal_logp_fast,
                      signature="(m),(),(n,m),(m,m)->(n)", observed=t_d, dims="obs")  # fmt: skip
    with pytest.warns(ConvergenceWarning, match="'s' alone") as record:
        tree = inference.fit_map(
            model, draws=10, random_seed=0, compile_kwargs={"mode": "FAST_COMPILE"}
        )
    assert not tree.attrs["converged"]
    ours = [r for r in record if "'s' alone" in str(r.message)]
    assert ours[0].filename == __file__  # reported at the user's call
