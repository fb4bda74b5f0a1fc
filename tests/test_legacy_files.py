"""Files saved, and estimators pickled, by an earlier version still load and predict the same.

The fixtures in ``tests/data`` were written by commit 6629c42 (the last commit
before the package was split into layered subpackages), from
``make_sinc(n_train=40, noise_sd=0.1, random_state=0)`` and
``make_ripley(n_train=60, n_test=20, random_state=0)``; their predictions at
that commit are in ``legacy_predictions.json``.  ``legacy_rvp_reference.nc``
was written by commit bf452a2, whose trees stored the observed counts as
float64 (now int64, the dtype of their replicates): ``RVP(gamma=1.0,
draws=50, random_state=0)`` on 40 counts, its predictions in
:data:`RVP_PREDICTIONS`.
"""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import numpy as np
import pytest

from rvm_pymc import RVC, RVP, RVR

DATA = Path(__file__).parent / "data"
EXPECTED = json.loads((DATA / "legacy_predictions.json").read_text())
XQ = np.asarray(EXPECTED["X"])[:, None]
XC = np.asarray(EXPECTED["Xc"])
XP = np.linspace(-2.0, 2.0, 7)[:, None]
RVP_PREDICTIONS = [
    3.1901927031142114, 2.1774205455216302, 1.6533358007125951, 3.6741920030862993,
    9.115569948041522, 4.78490206593797, 1.5775657010983308,
]  # fmt: skip


@pytest.mark.parametrize(
    ("name", "key"),
    [
        ("legacy_rvr_reference.nc", "rvr_reference"),
        ("legacy_rvr_reference_scipy.nc", "rvr_reference"),
        ("legacy_rvr_map.nc", "rvr_map"),
    ],
)
def test_saved_regressor_loads_and_predicts_as_before(name, key):
    est = RVR.load(DATA / name)
    mean, sd = est.predict(XQ, return_std=True)
    want_mean, want_sd = (np.asarray(v) for v in EXPECTED[key])
    np.testing.assert_allclose(mean, want_mean, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(sd, want_sd, rtol=1e-10, atol=1e-12)
    assert est.idata_["posterior"]["w"].shape[-1] == est.coef_.size


def test_saved_classifier_loads_and_predicts_as_before():
    est = RVC.load(DATA / "legacy_rvc_reference.nc")
    np.testing.assert_allclose(
        est.predict_proba(XC), np.asarray(EXPECTED["rvc_reference"]), rtol=1e-10, atol=1e-12
    )


def test_saved_counts_with_float_observations_load_and_predict_as_before():
    est = RVP.load(DATA / "legacy_rvp_reference.nc")
    np.testing.assert_allclose(est.predict(XP), RVP_PREDICTIONS, rtol=1e-10, atol=1e-12)
    assert est.idata_["observed_data"]["counts_obs"].dtype == np.float64  # as it was saved


@pytest.mark.parametrize(
    ("name", "cls", "check"),
    [
        ("legacy_rvr_reference.pkl", RVR, "rvr_reference"),
        ("legacy_rvc_reference.pkl", RVC, "rvc_reference"),
    ],
)
def test_pickled_estimator_unpickles(name, cls, check):
    with open(DATA / name, "rb") as f:
        est = pickle.load(f)
    assert type(est) is cls
    if cls is RVR:
        got = np.asarray(est.predict(XQ, return_std=True))
        want = np.asarray(EXPECTED[check])
        # pickled when intercept_ was the bias weight alone: now the whole constant term
        assert est.intercept_ == pytest.approx(est.coef_[0] * est.bias_active_ + est.y_offset_)
    else:
        got, want = est.predict_proba(XC), np.asarray(EXPECTED[check])
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
