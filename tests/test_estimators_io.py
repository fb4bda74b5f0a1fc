"""Saving and loading RVR/RVC without pickle: exact round trips, refused files."""

from __future__ import annotations

import json

import numpy as np
import pytest
from sklearn.datasets import make_blobs

from rvm_pymc._core import files as _files
from rvm_pymc.basis import FunctionBasis
from rvm_pymc.estimators import RVC, RVR, load
from rvm_pymc.estimators import _io as io
from rvm_pymc.kernels import RBF, Linear

# No skip: the "test" extra installs h5netcdf and h5py, so both engines must work.
ENGINES = ["scipy", "h5netcdf"]


@pytest.fixture(scope="module")
def sinc(noisy_sinc):
    return noisy_sinc(80)


@pytest.fixture(scope="module")
def blobs():
    return make_blobs(90, centers=3, random_state=0)


def _write(tree, path, engine):
    if engine == "scipy":
        _files.flatten_tree(tree).to_netcdf(path, engine="scipy")
    else:
        tree.to_netcdf(path, engine=engine)


def _assert_same_fit(a, b, X):
    assert type(a) is type(b)
    pa, pb = a.get_params(deep=False), b.get_params(deep=False)
    assert pa.keys() == pb.keys()
    for key, value in pa.items():
        if key != "kernel":
            assert pb[key] == value, key
    assert repr(a.kernel) == repr(b.kernel)
    for name in ("coef_", "sigma_", "alpha_", "active_", "relevance_indices_"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    assert a.active_names_ == b.active_names_
    assert a.n_iter_ == b.n_iter_ and a.log_evidence_ == b.log_evidence_
    assert a.gamma_ == b.gamma_ and a.n_features_in_ == b.n_features_in_
    assert a.intercept_ == pytest.approx(b.intercept_, abs=0)
    var = "W" if getattr(a, "classes_", np.zeros(2)).size > 2 else "w"
    np.testing.assert_array_equal(
        a.idata_["posterior"][var].values, b.idata_["posterior"][var].values
    )
    if isinstance(a, RVR):
        assert a.beta_ == b.beta_
        np.testing.assert_array_equal(a.predict(X, return_std=True), b.predict(X, return_std=True))
    else:
        np.testing.assert_array_equal(a.classes_, b.classes_)
        assert a.classes_.dtype == b.classes_.dtype
        np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(X))
        np.testing.assert_array_equal(a.predict(X), b.predict(X))


@pytest.mark.parametrize("engine", ENGINES)
def test_round_trip_rvr(tmp_path, sinc, engine):
    X, y = sinc
    est = RVR(gamma="evidence", gamma_grid=[0.03, 0.3, 3.0], random_state=1).fit(X, y)
    est.save(tmp_path / "rvr.nc", engine=engine)
    back = RVR.load(tmp_path / "rvr.nc")
    X_new = np.linspace(-12, 12, 41)[:, None]
    _assert_same_fit(est, back, X_new)
    np.testing.assert_array_equal(
        back.evidence_path_["log_evidence"], est.evidence_path_["log_evidence"]
    )
    assert back.idata_["posterior"]["draw"].dtype == np.int64
    assert "rvm_estimator" not in back.idata_.children


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(
    "labels",
    [
        np.array(["ant", "bee", "cow"]),
        np.array(["x", "y", "z"], dtype=object),
        np.array([4, 5, 9]),
    ],
    ids=["str", "object", "int"],
)
def test_round_trip_rvc(tmp_path, blobs, engine, labels):
    X, y = blobs
    est = RVC(random_state=0).fit(X, labels[y])
    est.save(tmp_path / "rvc.nc", engine=engine)
    back = load(tmp_path / "rvc.nc")
    _assert_same_fit(est, back, X)


def test_round_trip_binary_bool_dataframe_kernel_object(tmp_path, blobs):
    pd = pytest.importorskip("pandas")
    X, y = blobs
    df = pd.DataFrame(X, columns=["a", "b"])
    est = RVC(kernel=0.5 * RBF(length_scale=2.0) + Linear(), random_state=0).fit(df, y == 1)
    est.save(tmp_path / "bin.nc", engine="scipy")
    back = RVC.load(tmp_path / "bin.nc")
    _assert_same_fit(est, back, df)
    np.testing.assert_array_equal(back.feature_names_in_, ["a", "b"])


@pytest.mark.parametrize("bias", [True, False])
def test_round_trip_keeps_the_constant_term(tmp_path, sinc, bias):
    """``intercept_`` (bias weight plus ``y_offset_``) is rebuilt from the stored fields;
    a ``bias=False`` fit loads without a constant term, and its tree predicts 0 at x = 0."""
    from rvm_pymc.results import predictions

    X, y = sinc
    est = RVR(kernel="linear", bias=bias).fit(X, 2.0 * X[:, 0] + 5.0 * bias + y)
    est.save(tmp_path / "lin.nc", engine="scipy")
    back = RVR.load(tmp_path / "lin.nc")
    _assert_same_fit(est, back, X)
    zero = np.zeros((1, 1))
    assert back.intercept_ == pytest.approx(back.predict(zero)[0], abs=1e-12)
    mu = predictions(back.idata_, back.design_matrix(zero))["predictions"]["mu"].values
    np.testing.assert_allclose(mu, back.intercept_, atol=1e-12)
    if not bias:
        assert back.intercept_ == back.y_offset_ == 0.0


def test_round_trip_precomputed(tmp_path, sinc):
    from sklearn.metrics.pairwise import rbf_kernel

    X, y = sinc
    K = rbf_kernel(X, gamma=0.1)
    est = RVR(kernel="precomputed").fit(K, y)
    est.save(tmp_path / "pre.nc", engine="scipy")
    back = RVR.load(tmp_path / "pre.nc")
    _assert_same_fit(est, back, K[:7])


def test_tampered_bytes_refused(tmp_path, sinc):
    """Change one stored weight in the raw file: the checksum catches it."""
    X, y = sinc
    est = RVR(gamma=0.3, random_state=0).fit(X, y)
    path = tmp_path / "rvr.nc"
    est.save(path, engine="scipy")  # netCDF-3 stores big-endian float64
    raw = path.read_bytes()
    needle = np.asarray(est.coef_, dtype=">f8").tobytes()
    assert raw.count(needle) == 1
    forged = np.asarray(est.coef_ * 1.01, dtype=">f8").tobytes()
    path.write_bytes(raw.replace(needle, forged))
    with pytest.raises(ValueError, match="checksum mismatch"):
        RVR.load(path)


@pytest.mark.parametrize("engine", ENGINES)
def test_edited_posterior_refused(tmp_path, sinc, engine):
    """Rewrite the file with one posterior draw changed and the old checksum."""
    X, y = sinc
    path = tmp_path / "rvr.nc"
    RVR(gamma=0.3, random_state=0).fit(X, y).save(path, engine=engine)
    tree = _files.read_tree(path)
    post = tree["posterior"].to_dataset()
    post["w"][0, 0, 0] = 123.0
    tree["posterior"] = post
    _write(tree, tmp_path / "edited.nc", engine)
    with pytest.raises(ValueError, match="modified or corrupted"):
        load(tmp_path / "edited.nc")


def test_mismatched_files_refused(tmp_path, sinc, blobs):
    X, y = sinc
    path = tmp_path / "rvr.nc"
    RVR(gamma=0.3).fit(X, y).save(path, engine="scipy")
    Xc, yc = blobs
    RVC().fit(Xc, yc).save(tmp_path / "rvc.nc", engine="scipy")
    with pytest.raises(ValueError, match="holds an RVC, not an RVR"):
        RVR.load(tmp_path / "rvc.nc")
    with pytest.raises(ValueError, match="holds an RVR, not an RVC"):
        RVC.load(path)

    # a consistent checksum does not make an inconsistent model loadable
    tree = _files.read_tree(path)
    params = json.loads(tree.attrs["rvm_params"])
    params["method"] = "map"
    tree.attrs["rvm_params"] = json.dumps(params, sort_keys=True)
    tree.attrs["rvm_checksum"] = io._digest(
        tree, "RVR", tree.attrs["rvm_params"], tree.attrs["rvm_fitted"]
    )
    _write(tree, tmp_path / "forged.nc", "scipy")
    with pytest.raises(ValueError, match=r"does not match.*fitted by 'reference'"):
        RVR.load(tmp_path / "forged.nc")

    # the class name is part of the checksum
    tree = _files.read_tree(path)
    tree.attrs["rvm_estimator_class"] = "RVC"
    _write(tree, tmp_path / "renamed.nc", "scipy")
    with pytest.raises(ValueError, match="checksum mismatch"):
        RVC.load(tmp_path / "renamed.nc")


def test_foreign_files_refused(tmp_path, sinc):
    import xarray as xr

    xr.Dataset({"a": ("x", [1.0, 2.0])}).to_netcdf(tmp_path / "other.nc", engine="scipy")
    with pytest.raises(ValueError, match=r"not written by RVR/RVC\.save"):
        RVR.load(tmp_path / "other.nc")
    (tmp_path / "text.nc").write_text("hello")
    with pytest.raises(ValueError, match="not a netCDF file"):
        load(tmp_path / "text.nc")


# the fits only need to exist (the linear-kernel one stops at max_iter)
@pytest.mark.filterwarnings("ignore::rvm_pymc.exceptions.ConvergenceWarning")
def test_unsavable_parameters(tmp_path, sinc):
    X, y = sinc
    with pytest.raises(ValueError, match="cannot be saved without pickle"):
        RVR(kernel=lambda A, B: A @ B.T).fit(X, y).save(tmp_path / "f.nc")
    basis = FunctionBasis([1.0, lambda A: A[:, 0]])
    with pytest.raises(ValueError, match="user basis"):
        RVR(kernel=basis).fit(X, y).save(tmp_path / "g.nc")
    with pytest.raises(ValueError, match="engine must be"):
        RVR().fit(X, y).save(tmp_path / "h.nc", engine="zarr")
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        RVR().save(tmp_path / "i.nc")


def test_hdf5_files_compress_the_large_groups_losslessly(tmp_path, blobs):
    """The draws groups (posterior predictive labels, log-likelihood) are zlib-compressed."""
    h5py = pytest.importorskip("h5py")
    X, y = blobs
    est = RVC(random_state=0, draws=400).fit(X, y == 0)
    tree = est.idata_
    est.save(tmp_path / "rvc.nc", engine="h5netcdf")
    _write(tree, tmp_path / "plain.nc", "h5netcdf")  # the same tree, uncompressed
    with h5py.File(tmp_path / "rvc.nc", "r") as f:
        for group in ("posterior_predictive", "log_likelihood"):
            assert f[group]["y_obs"].compression == "gzip", group
        small = f["constant_data"]["Phi"]  # a data variable under the threshold stays plain
        assert small.size < _files.COMPRESS_MIN_SIZE and small.compression is None
    size, plain = (tmp_path / "rvc.nc").stat().st_size, (tmp_path / "plain.nc").stat().st_size
    assert size < 0.75 * plain, (size, plain)
    back = load(tmp_path / "rvc.nc")
    _assert_same_fit(est, back, X)
    for group in ("posterior_predictive", "log_likelihood"):
        np.testing.assert_array_equal(back.idata_[group]["y_obs"], tree[group]["y_obs"])
