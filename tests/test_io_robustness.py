"""Saving and loading under failure: damaged files, failed writes, the default engine.

Every way a file can fail to load is one ValueError that names the file (a
missing file stays FileNotFoundError); a save that fails leaves the previous
file byte for byte and no temporary file; the default engine works after
``pip install -e ".[test]"`` (no skip).
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from rvm_pymc import __version__
from rvm_pymc._core import files as _files
from rvm_pymc.estimators import RVC, RVR, load
from rvm_pymc.estimators import _io as io

NEWER = io.FORMAT_VERSION + 1

ENGINES = ("scipy", "h5netcdf")


@pytest.fixture(scope="module")
def fitted(noisy_sinc) -> RVR:
    return RVR(gamma=0.3, random_state=0).fit(*noisy_sinc(40))


@pytest.fixture(scope="module")
def files(fitted, tmp_path_factory) -> dict[str, Path]:
    """One good file per engine, never modified by the tests."""
    d = tmp_path_factory.mktemp("good")
    out = {}
    for engine in ENGINES:
        out[engine] = d / f"{engine}.nc"
        fitted.save(out[engine], engine=engine)
    return out


def _listing(d: Path) -> list[str]:
    return sorted(p.name for p in d.iterdir())


# --------------------------------------------------------------- default engine


def test_default_engine_round_trip_without_skip(fitted, tmp_path):
    """The test extra installs h5netcdf *and* h5py: the default engine writes netCDF-4."""
    assert io.engine_available("h5netcdf"), "pip install -e '.[test]' must install h5py"
    assert io.netcdf_engine() == "h5netcdf"
    path = tmp_path / "default.nc"
    fitted.save(path)  # no engine: the default
    assert path.read_bytes()[:8] == b"\x89HDF\r\n\x1a\n"
    back = RVR.load(path)
    X = np.linspace(-12, 12, 31)[:, None]
    np.testing.assert_array_equal(back.predict(X), fitted.predict(X))
    assert back.log_evidence_ == fitted.log_evidence_
    assert back.idata_.attrs["log_evidence"] == fitted.idata_.attrs["log_evidence"]
    assert _listing(tmp_path) == ["default.nc"]


def test_engine_check_needs_h5py_not_just_h5netcdf(fitted, tmp_path, monkeypatch):
    """h5netcdf >= 1.8 imports without h5py; the default must then fall back to SciPy."""
    monkeypatch.setitem(sys.modules, "h5py", None)  # import h5py -> ImportError
    monkeypatch.setitem(sys.modules, "netCDF4", None)
    assert not io.engine_available("h5netcdf")
    assert io.engine_available("scipy")
    assert io.netcdf_engine() == "scipy"
    path = tmp_path / "fallback.nc"
    fitted.save(path)
    assert path.read_bytes()[:3] == b"CDF"
    np.testing.assert_array_equal(RVR.load(path).coef_, fitted.coef_)
    with pytest.raises(ImportError, match=r"engine='h5netcdf' needs .*h5py.*rvm-pymc\[io\]"):
        fitted.save(tmp_path / "forced.nc", engine="h5netcdf")
    assert not (tmp_path / "forced.nc").exists()


# ------------------------------------------------------------- failing to load


def _raw(files, engine) -> bytes:
    return files[engine].read_bytes()


def _bytes(make: Callable[[dict[str, Path]], bytes]):
    def maker(files, d: Path) -> Path:
        path = d / "model.nc"
        path.write_bytes(make(files))
        return path

    return maker


def _truncated(engine: str, keep: float | int):
    def make(files):
        raw = _raw(files, engine)
        n = keep if isinstance(keep, int) else int(len(raw) * keep)
        return raw[:n]

    return _bytes(make)


def _flipped(engine: str, position: int | Callable[[bytes], int]):
    def make(files):
        raw = bytearray(_raw(files, engine))
        raw[position if isinstance(position, int) else position(bytes(raw))] ^= 0xFF
        return bytes(raw)

    return _bytes(make)


def _first_weight_byte(fitted_coef: np.ndarray) -> Callable[[bytes], int]:
    needle = np.asarray(fitted_coef, dtype=">f8").tobytes()

    def find(raw: bytes) -> int:
        assert raw.count(needle) == 1
        return raw.index(needle)  # the sign/exponent byte of the first weight

    return find


def _edited(engine: str, edit: Callable[[xr.DataTree], None], *, rehash: bool = False):
    """Rewrite the good file with ``edit`` applied; keep the old checksum unless ``rehash``."""

    def maker(files, d: Path) -> Path:
        tree = _files.read_tree(files[engine])
        edit(tree)
        if rehash:
            a = tree.attrs
            a["rvm_checksum"] = io._digest(
                tree, a["rvm_estimator_class"], a["rvm_params"], a["rvm_fitted"]
            )
        path = d / "model.nc"
        io.write_tree(tree, str(path), engine)
        return path

    return maker


def _set_attr(key, value, group: str = "/"):
    def edit(tree):
        (tree if group == "/" else tree[group]).attrs[key] = value

    return edit


def _del_attr(key):
    def edit(tree):
        del tree.attrs[key]

    return edit


def _var_attr(tree):
    const = tree["constant_data"].to_dataset()
    const["Phi"].attrs["units"] = "volts"
    tree["constant_data"] = const


def _params(edit: Callable[[dict], None]):
    def apply(tree):
        params = json.loads(tree.attrs["rvm_params"])
        edit(params)
        tree.attrs["rvm_params"] = json.dumps(params, sort_keys=True)

    return apply


def _drop_state(tree):
    del tree[io.STATE]


def _foreign_nc3(files, d):
    path = d / "foreign.nc"
    xr.Dataset({"a": ("x", [1.0, 2.0])}).to_netcdf(path, engine="scipy")
    return path


def _foreign_nc4(files, d):
    path = d / "foreign.nc"
    xr.Dataset({"a": ("x", [1.0, 2.0])}, attrs={"title": "x"}).to_netcdf(path, engine="h5netcdf")
    return path


def _missing(files, d):
    return d / "no-such-file.nc"


def _directory(files, d):
    (d / "adir.nc").mkdir()
    return d / "adir.nc"


LOAD_FAILURES = [
    # (maker, loader, exception, phrase)
    pytest.param(_missing, load, FileNotFoundError, "No such file", id="missing"),
    pytest.param(_directory, load, ValueError, "cannot be read", id="directory"),
    pytest.param(_bytes(lambda f: b""), load, ValueError, "is empty", id="empty"),
    pytest.param(_bytes(lambda f: b"hello world"), load, ValueError, "bad magic", id="text"),
    pytest.param(_truncated("scipy", 0.5), load, ValueError, "damaged or truncated",
                 id="nc3-truncated-half"),
    pytest.param(_truncated("scipy", 100), load, ValueError, "damaged or truncated",
                 id="nc3-truncated-100B"),
    pytest.param(_truncated("scipy", 2), load, ValueError, "truncated: only 2 bytes",
                 id="nc3-truncated-2B"),
    pytest.param(_truncated("h5netcdf", 0.5), load, ValueError, "damaged or truncated",
                 id="nc4-truncated-half"),
    pytest.param(_truncated("h5netcdf", 104), load, ValueError, "damaged or truncated",
                 id="nc4-truncated-104B"),
    pytest.param(_truncated("h5netcdf", 5), load, ValueError, "truncated: only 5 bytes",
                 id="nc4-truncated-5B"),
    pytest.param(_flipped("scipy", 3), load, ValueError, "damaged or truncated",
                 id="nc3-flipped-version-byte"),
    pytest.param(_flipped("h5netcdf", 10), load, ValueError, "damaged or truncated",
                 id="nc4-flipped-superblock-byte"),
    pytest.param(_flipped("scipy", 1), load, ValueError, "bad magic", id="flipped-magic"),
    pytest.param(_edited("scipy", _set_attr("log_evidence", 999.0)), load, ValueError,
                 "checksum mismatch", id="nc3-edited-root-attr"),
    pytest.param(_edited("h5netcdf", _set_attr("log_evidence", 999.0)), load, ValueError,
                 "checksum mismatch", id="nc4-edited-root-attr"),
    pytest.param(_edited("h5netcdf", _set_attr("creation_library", "x", "posterior")), load,
                 ValueError, "checksum mismatch", id="nc4-edited-group-attr"),
    pytest.param(_edited("scipy", _set_attr("creation_library", "x", "posterior")), load,
                 ValueError, "checksum mismatch", id="nc3-edited-group-attr"),
    pytest.param(_edited("scipy", _var_attr), load, ValueError, "checksum mismatch",
                 id="nc3-added-variable-attr"),
    pytest.param(_edited("h5netcdf", _var_attr), load, ValueError, "checksum mismatch",
                 id="nc4-added-variable-attr"),
    pytest.param(_edited("h5netcdf", _set_attr("rvm_fitted", "{}")), load, ValueError,
                 "checksum mismatch", id="edited-fitted-json"),
    pytest.param(_edited("h5netcdf", _del_attr("rvm_checksum")), load, ValueError,
                 "header lacks rvm_checksum", id="no-checksum"),
    pytest.param(_edited("scipy", _del_attr("rvm_params")), load, ValueError,
                 "header lacks rvm_params", id="no-params"),
    pytest.param(_edited("h5netcdf", _set_attr("rvm_pymc_format_version", 1)), load,
                 ValueError, f"format version 1; rvm_pymc {__version__} reads versions 2, 3 and "
                 "4 only: the file was saved by an older rvm_pymc; re-fit and save the model",
                 id="old-format-version"),
    pytest.param(_edited("h5netcdf", _set_attr("rvm_pymc_format_version", NEWER)), load,
                 ValueError, f"format version {NEWER}; rvm_pymc {__version__} reads versions 2, "
                 "3 and 4 only: the file was saved by a newer rvm_pymc; upgrade rvm_pymc to load "
                 "it",
                 id="newer-format-version"),
    pytest.param(_edited("scipy", _set_attr("rvm_pymc_format_version", "2")), load,
                 ValueError, f"format version '2'; rvm_pymc {__version__} reads versions 2, 3 and "
                 "4 only, as an integer: the header is damaged", id="format-version-text"),
    pytest.param(_edited("h5netcdf", _set_attr("rvm_pymc_format", "other")), load,
                 ValueError, "not written by RVR/RVC.save", id="other-format"),
    pytest.param(_foreign_nc3, load, ValueError, "not written by RVR/RVC.save",
                 id="foreign-netcdf3"),
    pytest.param(_foreign_nc4, load, ValueError, "not written by RVR/RVC.save",
                 id="foreign-netcdf4"),
    pytest.param(_edited("scipy", _set_attr("rvm_params", "{not json"), rehash=True), load,
                 ValueError, "cannot be restored (JSONDecodeError", id="params-not-json"),
    pytest.param(_edited("scipy", _params(lambda p: p.update(bogus=1)), rehash=True), load,
                 ValueError, "cannot be restored (TypeError", id="params-unknown-key"),
    pytest.param(_edited("h5netcdf", _set_attr("rvm_fitted", "{}"), rehash=True), load,
                 ValueError, "does not match", id="fitted-empty-rehashed"),
    pytest.param(_edited("h5netcdf", _drop_state, rehash=True), load, ValueError,
                 "does not match", id="state-group-removed-rehashed"),
    pytest.param(_edited("scipy", _set_attr("rvm_estimator_class", "SVR"), rehash=True), load,
                 ValueError, "unknown estimator class 'SVR'", id="unknown-class-rehashed"),
    pytest.param(lambda files, d: files["scipy"], RVC.load, ValueError,
                 "holds an RVR, not an RVC", id="wrong-class"),
]  # fmt: skip


@pytest.mark.parametrize(("maker", "loader", "exc", "phrase"), LOAD_FAILURES)
def test_load_failures(files, tmp_path, maker, loader, exc, phrase):
    path = maker(files, tmp_path)
    with pytest.raises(Exception) as info:
        loader(path)
    assert type(info.value) is exc, f"{type(info.value).__name__}: {info.value}"
    assert phrase in str(info.value)
    assert str(path) in str(info.value)


def test_netcdf4_file_without_h5py_names_what_to_install(files, monkeypatch):
    monkeypatch.setitem(sys.modules, "h5py", None)
    monkeypatch.setitem(sys.modules, "netCDF4", None)
    with pytest.raises(ValueError, match=r"needs h5netcdf and h5py.*rvm-pymc\[io\]") as info:
        RVR.load(files["h5netcdf"])
    assert str(files["h5netcdf"]) in str(info.value)


def test_flipped_weight_byte_fails_checksum(files, fitted, tmp_path):
    maker = _flipped("scipy", _first_weight_byte(fitted.coef_))
    path = maker(files, tmp_path)
    with pytest.raises(ValueError, match="checksum mismatch") as info:
        RVR.load(path)
    assert str(path) in str(info.value)


@pytest.mark.filterwarnings("error")  # also: no unraisable-exception noise from the readers
@pytest.mark.parametrize("engine", ENGINES)
def test_every_flipped_byte_is_refused_or_harmless(files, fitted, tmp_path, engine):
    """Flip single bytes all over the file: a ValueError naming it, or the same model."""
    raw = _raw(files, engine)
    rng = np.random.default_rng(12345)
    positions = sorted({*range(0, 400, 9), *rng.integers(0, len(raw), 40).tolist()})
    path = tmp_path / "flipped.nc"
    refused = 0
    for i in positions:
        damaged = bytearray(raw)
        damaged[i] ^= 0xFF
        path.write_bytes(bytes(damaged))
        try:
            back = RVR.load(path)
        except ValueError as exc:
            assert str(path) in str(exc), (i, str(exc))
            refused += 1
        else:  # a byte nobody reads (padding, an unused slot): the model is unchanged
            np.testing.assert_array_equal(back.coef_, fitted.coef_, err_msg=f"byte {i}")
            assert back.idata_.attrs == fitted.idata_.attrs, f"byte {i}"
    assert refused > len(positions) // 2


# ------------------------------------------------------------- failing to save


def _fail_midway(exc: BaseException, directory: Path, seen: list[list[str]]):
    """An ``os.write`` that puts the first 100 bytes on disk, then raises ``exc`` (disk full,
    Ctrl-C); ``seen`` gets the listing of ``directory`` at that moment."""
    real = os.write

    def write(fd, data):
        if not seen:
            seen.append(_listing(directory))
            return real(fd, bytes(data[:100]))
        raise exc

    return write


def _no_space(*args, **kwargs):
    raise OSError(errno.ENOSPC, "No space left on device")


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("stage", ["write", "fsync", "replace", "interrupt"])
def test_failed_save_keeps_previous_file(fitted, tmp_path, monkeypatch, engine, stage):
    """The file is serialised in memory and written with plain ``os.write``: a disk that fills
    (or a Ctrl-C) midway is an OSError naming the path, no temporary file, the old file intact."""
    path = tmp_path / "model.nc"
    fitted.save(path, engine=engine)
    before = path.read_bytes()
    other = RVR(gamma=1.0).fit(np.linspace(0, 1, 12)[:, None], np.linspace(0, 1, 12))
    written: list[list[str]] = []
    if stage in ("write", "interrupt"):
        exc = KeyboardInterrupt() if stage == "interrupt" else _no_space_error()
        monkeypatch.setattr(os, "write", _fail_midway(exc, tmp_path, written))
    else:
        monkeypatch.setattr(os, stage, _no_space)
    expected = KeyboardInterrupt if stage == "interrupt" else OSError
    with pytest.raises(expected) as info:
        other.save(path, engine=engine)
    monkeypatch.undo()
    if stage in ("write", "interrupt"):  # the bytes went to a temporary file beside it
        assert len(written) == 1 and len(written[0]) == 2, written
        tmp = next(name for name in written[0] if name != "model.nc")
        assert tmp.startswith(".model.nc.") and tmp.endswith(".tmp")
    if stage != "interrupt":
        assert info.value.errno == errno.ENOSPC
        assert f"cannot save to {path}" in str(info.value)
    assert path.read_bytes() == before
    assert _listing(tmp_path) == ["model.nc"]  # no temporary file left behind
    np.testing.assert_array_equal(RVR.load(path).coef_, fitted.coef_)


def _no_space_error() -> OSError:
    return OSError(errno.ENOSPC, "No space left on device")


@pytest.fixture
def full_disk(tmp_path):
    """A 200 KB tmpfs mounted at ``tmp_path / "disk"`` (Linux, as root); skipped where the
    mount is not permitted (no root, a container without the capability), never failed."""
    disk = tmp_path / "disk"
    disk.mkdir()
    mount, umount = shutil.which("mount"), shutil.which("umount")
    if not sys.platform.startswith("linux") or mount is None or umount is None:
        pytest.skip("needs Linux and mount(8)")
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    argv = [mount, "-t", "tmpfs", "-o", "size=200k", "tmpfs", str(disk)]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {proc.stderr.strip() or proc.returncode}")
    try:
        yield disk
    finally:
        subprocess.run([umount, str(disk)], capture_output=True, timeout=30)


_SAVE_ON_FULL_DISK = """
import errno, hashlib, json, os, sys
import numpy as np
from rvm_pymc.estimators import RVR

disk = sys.argv[1]
path = os.path.join(disk, "model.nc")
X = np.linspace(-5, 5, 30)[:, None]
RVR(gamma=0.5, draws=50).fit(X, np.sinc(X[:, 0])).save(path)
with open(path, "rb") as fh:
    saved = hashlib.sha256(fh.read()).hexdigest()
with open(os.path.join(disk, "filler"), "wb", buffering=0) as fh:  # fill the file system
    try:
        while True:
            fh.write(b"x" * 1024)
    except OSError as exc:
        assert exc.errno == errno.ENOSPC, exc
other = RVR(gamma=1.0).fit(X, np.cos(X[:, 0]))  # 2 x 2000 draws: far more than is free
try:
    other.save(path)
except OSError as exc:
    print(json.dumps({"errno": exc.errno, "message": str(exc), "sha256": saved}))
else:
    print(json.dumps({"errno": None, "message": "saved", "sha256": saved}))
"""


def test_save_on_a_full_file_system_is_an_oserror(full_disk):
    """A real full disk: the save raises OSError naming the path (HDF5 used to crash the
    process writing its temporary file), leaves no temporary file, keeps the old file."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    run = [sys.executable, "-c", _SAVE_ON_FULL_DISK, str(full_disk)]
    proc = subprocess.run(run, capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, f"status {proc.returncode}\n{proc.stderr[-3000:]}"
    said = json.loads(proc.stdout.strip().splitlines()[-1])
    path = full_disk / "model.nc"
    assert said["errno"] == errno.ENOSPC, said
    assert said["message"] == f"[Errno 28] cannot save to {path}: No space left on device"
    assert _listing(full_disk) == ["filler", "model.nc"]  # no temporary file left
    assert hashlib.sha256(path.read_bytes()).hexdigest() == said["sha256"]  # byte for byte
    old = RVR.load(path)  # the first model
    assert old.gamma_ == 0.5 and old.idata_["posterior"].sizes["draw"] == 50


def test_save_replaces_atomically_and_keeps_mode(fitted, tmp_path):
    path = tmp_path / "model.nc"
    path.write_bytes(b"old contents")
    os.chmod(path, 0o640)
    fitted.save(path, engine="scipy")
    assert path.stat().st_mode & 0o777 == 0o640
    assert _listing(tmp_path) == ["model.nc"]
    np.testing.assert_array_equal(RVR.load(path).coef_, fitted.coef_)


def test_save_through_symlink_replaces_the_target(fitted, tmp_path):
    (tmp_path / "real").mkdir()
    target = tmp_path / "real" / "model.nc"
    target.write_bytes(b"old")
    link = tmp_path / "link.nc"
    link.symlink_to(target)
    fitted.save(link, engine="scipy")
    assert link.is_symlink()
    assert target.read_bytes()[:3] == b"CDF"
    np.testing.assert_array_equal(RVR.load(link).coef_, fitted.coef_)


def _blocked_h5py(monkeypatch):
    monkeypatch.setitem(sys.modules, "h5py", None)


def _read_only_directory(monkeypatch):
    """No new file can be created anywhere (as root, chmod would not stop it)."""
    real_open = os.open

    def denied(path, flags, *args, **kwargs):
        if flags & os.O_CREAT:
            raise PermissionError(errno.EACCES, "Permission denied")
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", denied)


SAVE_FAILURES = [
    # (path relative to tmp_path, engine, setup, exception, phrase)
    pytest.param("missing/model.nc", None, None, FileNotFoundError, "does not exist",
                 id="missing-directory"),
    pytest.param("adir", None, "mkdir", IsADirectoryError, "is a directory",
                 id="path-is-directory"),
    pytest.param("model.nc", "zarr", None, ValueError, "engine must be one of",
                 id="unknown-engine"),
    pytest.param("model.nc", "h5netcdf", _blocked_h5py, ImportError, "needs the modules",
                 id="engine-without-h5py"),
    pytest.param("model.nc", "scipy", _read_only_directory, PermissionError,
                 "Permission denied", id="unwritable-directory"),
]  # fmt: skip


@pytest.mark.parametrize(("name", "engine", "setup", "exc", "phrase"), SAVE_FAILURES)
def test_save_failures(fitted, tmp_path, monkeypatch, name, engine, setup, exc, phrase):
    path = tmp_path / name
    if setup == "mkdir":
        path.mkdir()
    elif setup is not None:
        setup(monkeypatch)
    with pytest.raises(Exception) as info:
        fitted.save(path, engine=engine)
    assert type(info.value) is exc, f"{type(info.value).__name__}: {info.value}"
    assert phrase in str(info.value)
    if exc is not ValueError and exc is not ImportError:
        assert str(path) in str(info.value)
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []
