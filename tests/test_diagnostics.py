"""The vectorised R-hat and ESS of :mod:`rvm_pymc._core.convergence` against ArviZ's.

ArviZ (``arviz_stats``) computes them one variable at a time; the package
computes every variable at once and must give the same numbers: on chains that
mix and chains that do not, heavy tails, ties and constant variables, odd and
even draw counts, one to four chains, and too few draws (NaN).
"""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr
from arviz_stats import ess, rhat

from rvm_pymc._core.convergence import ess_bulk, ess_tail, rank_rhat


def _cases():
    rng = np.random.default_rng(0)
    out = {}
    for chains, draws in ((2, 500), (4, 301), (2, 1001), (1, 200), (3, 7)):
        x = rng.standard_normal((chains, draws, 6))
        for i in range(1, draws):  # AR(1), coefficients 0 .. 0.95
            x[:, i] = np.linspace(0, 0.95, 6) * x[:, i - 1] + x[:, i]
        out[f"ar-{chains}x{draws}"] = x
    y = rng.standard_t(1.5, size=(2, 400, 4))  # heavy tails
    y[1] += np.array([0.0, 0.3, 3.0, 10.0])  # the second chain shifted: not mixed
    out["shifted"] = y
    z = rng.integers(0, 3, size=(2, 300, 3)).astype(float)  # ties
    z[..., 2] = 1.5  # a constant
    out["ties"] = z
    out["short"] = rng.standard_normal((2, 3, 2))  # under ArviZ's 4 draws: NaN
    return out


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")  # a constant
@pytest.mark.parametrize(("name", "x"), list(_cases().items()))
def test_rhat_and_ess_are_arviz_s(name, x):
    ds = xr.Dataset({"v": (("chain", "draw", "v_dim"), x)})
    want = {
        "rhat": rhat(ds)["v"].values,
        "bulk": ess(ds, method="bulk")["v"].values,
        "tail": ess(ds, method="tail")["v"].values,
    }
    got = {"rhat": rank_rhat(x), "bulk": ess_bulk(x), "tail": ess_tail(x)}
    for key in want:
        np.testing.assert_allclose(got[key], want[key], rtol=1e-9, atol=0, equal_nan=True)
        assert got[key].shape == x.shape[2:]


def test_extra_axes_keep_their_shape_and_a_nan_draw_gives_nan():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 100, 3, 2))
    x[0, 5, 1, 0] = np.nan
    for f in (rank_rhat, ess_bulk, ess_tail):
        out = f(x)
        assert out.shape == (3, 2)
        assert np.isnan(out[1, 0]) and np.isfinite(np.delete(out.ravel(), 2)).all()


def test_the_tail_follows_the_probability_given():
    x = np.random.default_rng(2).standard_normal((2, 400, 2))
    ds = xr.Dataset({"v": (("chain", "draw", "v_dim"), x)})
    want = ess(ds, method="tail", prob=0.95)["v"].values
    np.testing.assert_allclose(ess_tail(x, prob=0.95), want, rtol=1e-9)
