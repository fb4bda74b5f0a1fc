"""The default number of draws per chain (``draws=None``), resolved at ``fit`` per estimator.

As the docstrings of RVR and RVC and docs/pymc.md ("Default length") say: 6000
for RVC and for NUTS over the kernel width (``gamma="integrate"``), 2000 for RVR
and RVP, whatever the method (so that an estimator's
reference, map and nuts trees keep as many draws); ``get_params`` and ``clone``
keep the ``None`` of the signature.  No PyMC model is compiled: the map and nuts
fits stop at the backend, whose options are recorded.
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import clone

import rvm_pymc.inference
from rvm_pymc.datasets import make_ripley
from rvm_pymc.estimators import RVC, RVP, RVR

DOCUMENTED = {RVR: 2000, RVC: 6000, RVP: 2000}


class _Stop(Exception):
    """Raised by the recording backend: the fit goes no further."""


@pytest.fixture(scope="module")
def data():
    X, y, _, _ = make_ripley(n_train=40, n_test=2, random_state=0)
    counts = np.random.default_rng(0).poisson(np.exp(X[:, 0]))
    return {RVR: (X, X[:, 0] + 0.1 * X[:, 1]), RVC: (X, y), RVP: (X, counts)}


@pytest.mark.parametrize("cls", [RVR, RVC, RVP], ids=lambda c: c.__name__)
def test_reference_trees_keep_the_documented_draws_and_params_keep_none(cls, data):
    X, y = data[cls]
    est = cls(gamma=2.0, random_state=0)
    assert est.get_params()["draws"] is None
    fitted = est.fit(X, y)
    assert fitted.get_params()["draws"] is None  # fit resolves, does not overwrite
    assert dict(fitted.idata_["posterior"].sizes)["draw"] == DOCUMENTED[cls]
    again = clone(fitted)
    assert again.get_params() == est.get_params()
    assert again.set_params(draws=30).fit(X, y).idata_["posterior"].sizes["draw"] == 30
    assert clone(again).get_params()["draws"] == 30


def _record_backend(monkeypatch) -> dict:
    """The options the estimator passes to its PyMC backend, which then stops the fit."""
    seen = {}

    def record(opts, *args, **kwargs):
        seen.update(opts)
        raise _Stop

    monkeypatch.setattr(rvm_pymc.inference, "fit_backend", record)
    return seen


@pytest.mark.parametrize("method", ["map", "nuts"])
@pytest.mark.parametrize("cls", [RVR, RVC, RVP], ids=lambda c: c.__name__)
def test_pymc_fits_get_the_same_draws(cls, method, data, monkeypatch):
    seen = _record_backend(monkeypatch)
    X, y = data[cls]
    est = cls(method=method, gamma=2.0, random_state=0)
    with pytest.raises(_Stop):
        est.fit(X, y)
    assert seen["draws"] == DOCUMENTED[cls]
    assert seen["until_converged"] is True  # draws=None: NUTS stops once converged
    assert est.get_params()["draws"] is None
    with pytest.raises(_Stop):
        clone(est).set_params(draws=123).fit(X, y)
    assert seen["draws"] == 123
    assert seen["until_converged"] is False  # a given length is kept


def test_nuts_over_the_width_takes_up_to_6000_draws(monkeypatch):
    """gamma='integrate' (RVR and RVC): the width's cap, 6000, stopping once converged."""
    seen = {}

    def record(opts, *args, **kwargs):
        seen.update(opts)
        raise _Stop

    monkeypatch.setattr(rvm_pymc.inference, "fit_width_backend", record)
    X, _, _, _ = make_ripley(n_train=30, n_test=2, random_state=0)
    fits = ((RVR, X[:, 0]), (RVC, (X[:, 0] > 0).astype(int)))
    for cls, y in fits:
        est = cls(method="nuts", gamma="integrate")
        seen.clear()
        with pytest.raises(_Stop):
            est.fit(X, y)
        assert (seen["draws"], seen["until_converged"]) == (6000, True)
        assert est.get_params()["draws"] is None


def test_draws_below_one_is_refused_by_name(data):
    X, y = data[RVC]
    for bad in (0, -5, 2.5, True):
        with pytest.raises(ValueError, match="draws must be None or an integer >= 1"):
            RVC(draws=bad).fit(X, y)


def test_cli_fit_follows_the_estimator_default(tmp_path, data):
    """``rvm-pymc fit`` without ``--draws`` keeps the estimator's default (RVC: 6000)."""
    import pandas as pd

    from rvm_pymc.cli import main
    from rvm_pymc.estimators import load

    X, y = data[RVC]
    csv = tmp_path / "d.csv"
    pd.DataFrame({"a": X[:, 0], "b": X[:, 1], "cls": np.array(["u", "v"])[y]}).to_csv(
        csv, index=False
    )
    for extra, expected in (([], DOCUMENTED[RVC]), (["--draws", "60"], 60)):
        out = tmp_path / f"out{expected}"
        args = ["fit", str(csv), "--target", "cls", "--out", str(out), "--no-plot", *extra]
        assert main(args) == 0
        est = load(out / "model.nc")
        assert isinstance(est, RVC)
        assert est.idata_["posterior"].sizes["draw"] == expected


@pytest.mark.parametrize(
    ("cls", "kwargs", "expected"),
    [
        (RVR, {}, 0.8),  # the collapsed sampler
        (RVR, {"sampler_kwargs": {"model": "joint"}}, 0.95),
        (RVC, {}, 0.95),
        (RVP, {}, 0.95),
        (RVR, {"sampler_kwargs": {"target_accept": 0.9}}, 0.9),
        (RVC, {"sampler_kwargs": {"target_accept": 0.85}}, 0.85),
        (RVR, {"gamma": "integrate"}, 0.95),  # collapsed over the width
        (RVC, {"gamma": "integrate"}, 0.99),  # joint over the width
    ],
    ids=["rvr", "rvr-joint", "rvc", "rvp", "rvr-given", "rvc-given", "rvr-width", "rvc-width"],
)
def test_nuts_target_accept_default_per_model(cls, kwargs, expected, data, pm_sample_kwargs):
    """0.8 for the collapsed regression sampler, 0.95 with weights or collapsed over the
    width, 0.99 for weights over the width; a given value wins.

    Read where PyMC receives it: ``pm.sample(target_accept=...)``, or the NUTS step
    built beside the basis swaps (RVC) that ``pm.sample`` is given.
    """
    import pymc as pm

    seen = pm_sample_kwargs
    X, y = data[cls]
    sampler_kwargs = {"nuts_sampler": "pymc", **kwargs.get("sampler_kwargs", {})}
    gamma = kwargs.get("gamma", 2.0)
    est = cls(method="nuts", gamma=gamma, random_state=0, sampler_kwargs=sampler_kwargs)
    with pytest.raises(seen.stop):
        est.fit(X, y)
    if "step" in seen:
        assert "target_accept" not in seen
        steps = seen["step"] if isinstance(seen["step"], list) else [seen["step"]]
        (nuts,) = [s for s in steps if isinstance(s, pm.NUTS)]
        assert nuts.target_accept == expected
    else:
        assert seen["target_accept"] == expected


@pytest.mark.parametrize(
    ("cls", "kwargs", "expected"),
    [
        (RVR, {}, 500),  # the collapsed sampler
        (RVR, {"sampler_kwargs": {"model": "joint"}}, 1000),
        (RVC, {}, 1000),
        (RVP, {}, 1000),
        (RVR, {"tune": 700}, 700),
        (RVC, {"tune": 0}, 0),
    ],
    ids=["rvr", "rvr-joint", "rvc", "rvp", "rvr-given", "rvc-given"],
)
def test_nuts_tune_default_per_model(cls, kwargs, expected, data, monkeypatch):
    """``tune=None``: 500 for the collapsed regression sampler, 1000 with weights."""
    seen = _record_backend(monkeypatch)
    X, y = data[cls]
    est = cls(method="nuts", gamma=2.0, random_state=0, **kwargs)
    with pytest.raises(_Stop):
        est.fit(X, y)
    assert seen["tune"] == expected
    assert est.get_params()["tune"] == kwargs.get("tune")  # None stays None
