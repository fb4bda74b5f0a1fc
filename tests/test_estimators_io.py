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
def test_round_trip_keeps_the_cv_path_and_the_interpolation_flag(tmp_path, sinc, engine):
    import warnings

    from rvm_pymc.exceptions import InterpolationWarning

    X, y = sinc
    est = RVR(random_state=1).fit(X, y)  # gamma="auto": cross-validated here
    est.save(tmp_path / "cv.nc", engine=engine)
    back = RVR.load(tmp_path / "cv.nc")
    assert sorted(back.cv_path_) == sorted(est.cv_path_)
    for k, v in est.cv_path_.items():
        np.testing.assert_array_equal(back.cv_path_[k], v)
    assert back.interpolates_ is est.interpolates_ is False
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InterpolationWarning)
        dense = RVR(gamma=50.0).fit(X, y)  # a narrow kernel: every point relevant
    dense.save(tmp_path / "dense.nc", engine=engine)
    assert dense.interpolates_ and RVR.load(tmp_path / "dense.nc").interpolates_


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
    import pandas as pd

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
@pytest.mark.parametrize("group", [io.STATE, "constant_data"])
def test_edited_posterior_refused(tmp_path, sinc, engine, group):
    """Rewrite the file with one value that defines the draws changed and the old checksum:
    the posterior mean (the draws are made from it on load) or the design matrix."""
    X, y = sinc
    path = tmp_path / "rvr.nc"
    RVR(gamma=0.3, random_state=0).fit(X, y).save(path, engine=engine)
    tree = _files.read_tree(path)
    ds = tree[group].to_dataset()
    name = "weight_mean" if group == io.STATE else "Phi"
    ds[name].values.flat[0] = 123.0
    tree[group] = ds
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
    """The draws groups (posterior predictive labels, log-likelihood) are zlib-compressed
    when a file holds them (an ``idata_`` changed after the fit is saved whole)."""
    h5py = pytest.importorskip("h5py")
    X, y = blobs
    est = RVC(random_state=0, draws=400).fit(X, y == 0)
    tree = est.idata_
    tree["posterior"].attrs["note"] = "changed after the fit"  # saved whole (version 3)
    est.save(tmp_path / "rvc.nc", engine="h5netcdf")
    assert _files.read_tree(tmp_path / "rvc.nc").attrs["rvm_pymc_format_version"] == 3
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


# ------------------------------------------------------- the draws made again on load


def _assert_same_tree(a, b) -> None:
    """Every group, variable, coordinate and attribute of two trees is the same."""
    assert sorted(n.path for n in a.subtree) == sorted(n.path for n in b.subtree)
    for node in a.subtree:
        da, db = node.to_dataset(inherit=False), b[node.path].to_dataset(inherit=False)
        assert set(da.variables) == set(db.variables), node.path
        for name in da.variables:
            np.testing.assert_array_equal(
                da[name].values, db[name].values, err_msg=f"{node.path}/{name}"
            )
        assert da.attrs.keys() == db.attrs.keys(), node.path
        for key, value in da.attrs.items():  # NaN (a NUTS fit's log evidence) equals NaN
            np.testing.assert_array_equal(value, db.attrs[key], err_msg=f"{node.path}@{key}")


def _fits(sinc, blobs):
    X, y = sinc
    Xc, yc = blobs
    rng = np.random.default_rng(3)
    counts = rng.poisson(np.exp(0.3 * Xc[:, 0]))
    from rvm_pymc.estimators import RVP

    return {
        "rvr": (RVR(gamma=0.3, random_state=0).fit(X, y), X),
        "rvc-binary": (RVC(gamma=0.5, random_state=1).fit(Xc, np.where(yc == 0, "a", "b")), Xc),
        "rvc-3-classes": (RVC(gamma=0.5, random_state=2).fit(Xc, yc), Xc),
        "rvp": (RVP(gamma=0.5, random_state=3).fit(Xc, counts), Xc),
    }


@pytest.mark.parametrize("engine", ENGINES)
def test_saved_file_leaves_out_the_draws_and_load_makes_them_identically(
    tmp_path, sinc, blobs, engine
):
    """Format 4: the type-II draws, lp, log-likelihood and posterior predictive are made
    again from the Gaussian and the seed on load; ``idata_`` is the same, value for value."""
    for name, (est, X) in _fits(sinc, blobs).items():
        path = tmp_path / f"{name}.nc"
        est.save(path, engine=engine)
        tree = _files.read_tree(path)
        assert tree.attrs["rvm_pymc_format_version"] == io.FORMAT_VERSION == 4
        for group in ("posterior", "posterior_predictive", "log_likelihood", "sample_stats"):
            assert not tree[group].data_vars, (name, group)  # left out, coordinates kept
        back = load(path)
        assert back._idata is None  # built on first access, as after a fit
        _assert_same_tree(est.idata_, back.idata_)
        if isinstance(est, RVR | RVC):
            _assert_same_fit(est, back, X)
        np.testing.assert_array_equal(back.predict(X), est.predict(X))
        again = tmp_path / f"{name}-again.nc"
        back.save(again, engine=engine)  # a loaded model saves compact again
        assert _files.read_tree(again).attrs["rvm_pymc_format_version"] == 4
        _assert_same_tree(est.idata_, load(again).idata_)


@pytest.mark.parametrize(("n", "limit"), [(93, 0.2e6), (141, 0.2e6), (1000, 1e6)])
def test_reference_fit_files_are_small(tmp_path, noisy_sinc, n, limit):
    """A reference fit at N <= 1000 saves in at most 1 MB (93 rows: 6.5 MB in format 3,
    2 x 2000 draws of weights, log-likelihood and predictive; an RVC of 141 rows: 22 MB)."""
    X, y = noisy_sinc(n)
    for est, target in [
        (RVR(gamma=0.3, random_state=0), y),
        (RVC(gamma=0.3, random_state=0), np.where(y > 0.1, "up", "down")),
    ]:
        est.fit(X, target)
        path = tmp_path / "model.nc"
        est.save(path)
        assert path.stat().st_size <= limit, (type(est).__name__, path.stat().st_size)
        _assert_same_tree(est.idata_, load(path).idata_)


def test_an_idata_changed_after_the_fit_is_saved_whole(tmp_path, sinc):
    """Draws that cannot be made again identically are kept: format 3, the tree as it was."""
    X, y = sinc
    est = RVR(gamma=0.3, random_state=0).fit(X, y)
    post = est.idata_["posterior"].to_dataset()
    post["w"].values[0, 0, 0] += 1.0  # an edited draw
    est.idata_["posterior"] = post
    path = tmp_path / "edited.nc"
    est.save(path)
    assert _files.read_tree(path).attrs["rvm_pymc_format_version"] == 3
    back = load(path)
    _assert_same_tree(est.idata_, back.idata_)


def test_a_model_loaded_from_a_format_3_file_saves_whole(tmp_path):
    """The seed of a format-3 file's draws is unknown: saved again, its draws are kept."""
    from pathlib import Path

    legacy = Path(__file__).parent / "data" / "legacy_rvr_reference.nc"
    est = RVR.load(legacy)
    path = tmp_path / "again.nc"
    est.save(path)
    assert _files.read_tree(path).attrs["rvm_pymc_format_version"] == 3
    _assert_same_tree(est.idata_, load(path).idata_)


def test_a_version_4_file_whose_record_of_the_draws_disagrees_is_refused(tmp_path, sinc):
    X, y = sinc
    path = tmp_path / "rvr.nc"
    RVR(gamma=0.3, random_state=0).fit(X, y).save(path)
    tree = _files.read_tree(path)
    fitted = json.loads(tree.attrs["rvm_fitted"])
    fitted[io.REBUILT]["draws"] += 1
    tree.attrs["rvm_fitted"] = json.dumps(fitted, sort_keys=True)
    a = tree.attrs
    a["rvm_checksum"] = io._digest(tree, a["rvm_estimator_class"], a["rvm_params"],
                                   a["rvm_fitted"], 4)  # fmt: skip
    _write(tree, tmp_path / "edited.nc", "h5netcdf")
    with pytest.raises(ValueError, match="the draws to make again and the posterior's"):
        load(tmp_path / "edited.nc")


@pytest.mark.pymc
@pytest.mark.filterwarnings("ignore::rvm_pymc.exceptions.SamplingWarning")
@pytest.mark.parametrize("method", ["map", "nuts"])
def test_pymc_fits_save_compact_and_load_identically(tmp_path, noisy_sinc, method):
    """MAP (a Laplace Gaussian) leaves out its draws; NUTS keeps its samples and leaves out
    the log-likelihood and posterior predictive; both load with the same ``idata_``."""
    X, y = noisy_sinc(30)
    fast = {"compile_kwargs": {"mode": "FAST_COMPILE"}}
    if method == "nuts":
        fast.update(nuts_sampler="pymc", cores=1, progressbar=False)
    est = RVR(gamma=0.3, method=method, draws=60, tune=60, random_state=0,
              sampler_kwargs=fast).fit(X, y)  # fmt: skip
    path = tmp_path / f"{method}.nc"
    est.save(path)
    tree = _files.read_tree(path)
    assert tree.attrs["rvm_pymc_format_version"] == 4
    assert ("w" in tree["posterior"].data_vars) == (method == "nuts")
    assert not tree["log_likelihood"].data_vars
    back = load(path)
    _assert_same_tree(est.idata_, back.idata_)
    np.testing.assert_array_equal(back.predict(X), est.predict(X))
