"""Atomic writes, and DataTrees in netCDF files (netCDF-4 groups, or flattened into one
netCDF-3 file by SciPy) with damage reported."""

from __future__ import annotations

import contextlib
import errno
import importlib
import io
import json
import os
import secrets
import stat
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import numpy as np
import xarray as xr

__all__ = [
    "ENGINES",
    "ENGINE_MODULES",
    "INSTALL_HINT",
    "atomic_write",
    "atomic_write_bytes",
    "damaged_if_failing",
    "engine_available",
    "flatten_tree",
    "jsonable_attrs",
    "netcdf_engine",
    "read_tree",
    "temporary_file",
    "tree_bytes",
    "unflatten_tree",
    "write_tree",
]

_SEP = "__"


def jsonable_attrs(attrs: Mapping) -> dict[str, Any]:
    """Attributes as JSON-able values (numpy scalars and arrays to Python, others to str)."""
    out = {}
    for k, v in attrs.items():
        if isinstance(v, bool | np.bool_):
            v = int(v)
        elif isinstance(v, np.generic):
            v = v.item()
        elif isinstance(v, np.ndarray):
            v = v.tolist()
        if not isinstance(v, str | int | float | list):
            v = str(v)
        out[str(k)] = v
    return out


ENGINES = ("h5netcdf", "netcdf4", "scipy")
# what each engine needs importable (h5netcdf >= 1.8: h5py too)
ENGINE_MODULES = {
    "h5netcdf": ("h5netcdf", "h5py"),
    "netcdf4": ("netCDF4",),
    "scipy": ("scipy.io",),
}
INSTALL_HINT = "install them with `pip install 'rvm-pymc[io]'` or use engine='scipy'"


def engine_available(engine: str) -> bool:
    """Whether every module ``engine`` needs imports (False for a broken install too)."""
    for module in ENGINE_MODULES[engine]:
        try:
            importlib.import_module(module)
        except Exception:  # ImportError, or OSError/AttributeError of a broken install
            return False
    return True


def netcdf_engine() -> str:
    """The first of ``"h5netcdf"`` and ``"netcdf4"`` that imports, else ``"scipy"``."""
    for engine in ("h5netcdf", "netcdf4"):
        if engine_available(engine):
            return engine
    return "scipy"


COMPRESS_MIN_SIZE = 1024
"""Numeric variables of at least this many values are zlib-compressed (HDF5 engines)."""


def _compression(tree: xr.DataTree) -> dict[str, dict[str, dict[str, Any]]]:
    """Lossless zlib encodings of the large numeric variables of every group of ``tree``."""
    encoding = {}
    for node in tree.subtree:
        ds = node.to_dataset(inherit=False)
        large = {
            name: {"zlib": True, "complevel": 1, "shuffle": True}
            for name, var in ds.variables.items()  # coordinates too: 'draw' is 0..1999
            if var.dtype.kind in "biuf" and var.ndim and var.size >= COMPRESS_MIN_SIZE
        }
        if large:
            encoding[node.path] = large
    return encoding


IN_MEMORY_ENGINES = ("h5netcdf", "scipy")
"""Engines that serialise a tree in memory (:func:`tree_bytes`); netCDF4 writes files only."""


def tree_bytes(tree: xr.DataTree, engine: str) -> bytes:
    """The netCDF file of ``tree`` written by ``engine`` (one of :data:`IN_MEMORY_ENGINES`)."""
    if engine == "scipy":
        return bytes(flatten_tree(tree).to_netcdf(engine="scipy"))
    if engine == "h5netcdf":
        buffer = io.BytesIO()
        tree.to_netcdf(buffer, engine="h5netcdf", encoding=_compression(tree) or None)
        return buffer.getvalue()
    raise ValueError(f"engine {engine!r} cannot write to memory; use one of {IN_MEMORY_ENGINES}")


def _write_all(path: str, data: bytes) -> None:
    """Write ``data`` to the existing file ``path`` with plain ``os.write`` (short writes too)."""
    fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


def write_tree(tree: xr.DataTree, path: str, engine: str) -> None:
    """Write ``tree`` to ``path`` with ``engine`` (not atomic: see :func:`atomic_write`)."""
    if engine in IN_MEMORY_ENGINES:
        data = tree_bytes(tree, engine)
        with open(path, "wb") as fh:
            fh.write(data)
    else:
        tree.to_netcdf(path, engine=engine, encoding=_compression(tree) or None)


def _with_path(exc: OSError, path: str) -> OSError:
    """``exc`` again (same type and errno) with a message that names ``path``."""
    reason = exc.strerror or str(exc) or type(exc).__name__
    if exc.errno is None:
        return type(exc)(f"cannot save to {path}: {reason}")
    return type(exc)(exc.errno, f"cannot save to {path}: {reason}")


def temporary_file(directory: str, base: str) -> str:
    """Create an empty, new, hidden file next to the target; its mode follows the umask."""
    for _ in range(100):
        tmp = os.path.join(directory, f".{base}.{secrets.token_hex(6)}.tmp")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except FileExistsError:
            continue
        os.close(fd)
        return tmp
    raise FileExistsError(errno.EEXIST, f"no free temporary file name in {directory}")


def atomic_write(path, write: Callable[[str], None]) -> None:
    """``write(tmp)`` on a temporary file beside ``path``, fsync, rename to ``path``; on any
    failure the temporary file is removed and ``path`` left as it was."""
    shown = os.fspath(path)
    target = os.path.realpath(shown)
    directory, base = os.path.split(target)
    if not os.path.isdir(directory):
        raise FileNotFoundError(
            errno.ENOENT, f"cannot save to {shown}: the directory {directory} does not exist"
        )
    if os.path.isdir(target):
        raise IsADirectoryError(errno.EISDIR, f"cannot save to {shown}: it is a directory")
    try:
        tmp = temporary_file(directory, base)
    except OSError as exc:
        raise _with_path(exc, shown) from exc
    try:
        with contextlib.suppress(FileNotFoundError):  # keep the mode of the file replaced
            os.chmod(tmp, stat.S_IMODE(os.stat(target).st_mode))
        write(tmp)
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise _with_path(exc, shown) from exc
        raise
    with contextlib.suppress(OSError, AttributeError):  # the rename made durable (POSIX)
        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def atomic_write_bytes(path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically with plain file I/O (:func:`atomic_write`)."""
    atomic_write(path, lambda tmp: _write_all(tmp, data))


def flatten_tree(tree: xr.DataTree) -> xr.Dataset:
    """One netCDF-3-compatible Dataset holding every group of ``tree``."""
    variables, attrs = {}, {}
    for node in tree.subtree:
        g = node.path.strip("/").replace("/", _SEP) or "root"
        ds = node.to_dataset(inherit=False)
        for name, var in ds.variables.items():
            dims = [f"{g}{_SEP}{d}" for d in var.dims]
            is_coord = int(name in ds.coords)
            values = var.values
            kind = "str" if values.dtype.kind in "UO" else values.dtype.str
            if kind == "str":
                values = values.astype(str)
            flat_attrs = {"rvm_coord": is_coord, "rvm_dtype": kind}
            if var.attrs:
                flat_attrs["rvm_attrs"] = json.dumps(jsonable_attrs(var.attrs))
            variables[f"{g}{_SEP}{name}"] = xr.Variable(dims, values, flat_attrs)
        attrs[f"rvm_group{_SEP}{g}"] = json.dumps(jsonable_attrs(node.attrs))
    return xr.Dataset(variables, attrs=attrs)


def unflatten_tree(ds: xr.Dataset) -> xr.DataTree:
    groups: dict[str, dict] = {}
    for key in ds.attrs:
        if key.startswith(f"rvm_group{_SEP}"):
            groups[key.split(_SEP, 1)[1]] = {"vars": {}, "coords": {}}
    for name in ds.variables:
        g, v = str(name).split(_SEP, 1)
        var = ds.variables[name]
        dims = [str(d).split(_SEP, 1)[1] for d in var.dims]
        target = "coords" if int(var.attrs.get("rvm_coord", 0)) else "vars"
        kind = var.attrs.get("rvm_dtype", "str")
        values = var.values.astype(str if kind == "str" else np.dtype(kind))
        var_attrs = json.loads(var.attrs.get("rvm_attrs", "{}"))
        groups[g][target][v] = xr.Variable(dims, values, var_attrs)
    nodes = {}
    for g, content in groups.items():
        path = "/" if g == "root" else "/" + g.replace(_SEP, "/")
        nodes[path] = xr.Dataset(
            content["vars"],
            coords=content["coords"],
            attrs=json.loads(ds.attrs[f"rvm_group{_SEP}{g}"]),
        )
    return xr.DataTree.from_dict(nodes)


_HDF5_MAGIC = b"\x89HDF\r\n\x1a\n"


@contextlib.contextmanager
def damaged_if_failing(path: str, what: str) -> Iterator[None]:
    """Turn any error of the readers inside the block into one ValueError naming ``path``."""
    try:
        yield
    except Exception as exc:
        raise ValueError(
            f"{path} is damaged or truncated: {what} ({type(exc).__name__}: {exc})"
        ) from exc


def read_tree(path) -> xr.DataTree:
    """The tree stored in ``path``; ValueError for anything but a readable rvm_pymc file."""
    name = os.fspath(path)
    try:
        with open(name, "rb") as fh:
            magic = fh.read(8)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise ValueError(f"{name} cannot be read: {exc.strerror or exc}") from exc
    if not magic:
        raise ValueError(f"{name} is empty (0 bytes): not a file written by RVR/RVC.save")
    if magic[:3] == b"CDF":
        with damaged_if_failing(name, "it cannot be read as a netCDF-3 file"):
            # no mmap: a file truncated while mapped would crash the process (SIGBUS)
            with xr.open_dataset(name, engine="scipy", mmap=False) as ds:
                ds = ds.load()
        if f"rvm_group{_SEP}root" not in ds.attrs:
            raise ValueError(f"{name} was not written by RVR/RVC.save (no rvm_pymc header)")
        with damaged_if_failing(name, "its groups cannot be rebuilt"):
            return unflatten_tree(ds)
    if magic == _HDF5_MAGIC:
        engine = netcdf_engine()
        if engine == "scipy":
            raise ValueError(
                f"{name} is a netCDF-4 file; reading it needs h5netcdf and h5py, or netCDF4; "
                "install them with `pip install 'rvm-pymc[io]'`"
            )
        with damaged_if_failing(name, "it cannot be read as a netCDF-4 file"):
            if engine == "h5netcdf":
                # h5py first: h5netcdf leaves a half-built object that complains when
                # collected if the file or its root attributes cannot be read
                import h5py

                with h5py.File(name, "r") as h5:
                    {key: h5.attrs[key] for key in h5.attrs}
            with xr.open_datatree(name, engine=engine) as tree:
                return tree.load()
    if len(magic) < 8 and (b"CDF".startswith(magic[:3]) or _HDF5_MAGIC.startswith(magic)):
        raise ValueError(f"{name} is damaged or truncated: only {len(magic)} bytes")
    raise ValueError(
        f"{name} is not a netCDF file written by rvm_pymc (bad magic bytes: another kind "
        "of file, or its first bytes are damaged)"
    )
