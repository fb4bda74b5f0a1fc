"""The checksum of a saved estimator: SHA-256 of everything the loader reads from the file.

Values are fed in a canonical form that survives every netCDF engine's round
trip (:func:`_canonical`, :func:`_canonical_attr`), each field with its length
first, so that fields cannot run together.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

import numpy as np
import xarray as xr

__all__ = ["digest"]


def _canonical(values: np.ndarray) -> bytes:
    a = np.asarray(values)
    if a.dtype.kind in "biuf":
        f = np.ascontiguousarray(a, dtype=np.float64)
        f = np.where(np.isnan(f), np.nan, f)  # one NaN bit pattern
        return b"n" + repr(a.shape).encode() + f.tobytes()
    return b"s" + repr(a.shape).encode() + "\x1f".join(map(str, a.ravel().tolist())).encode()


def _canonical_attr(value: Any) -> bytes:
    """Bytes of an attribute value that survive every engine's round trip.

    A string and a one-element list of it, an int and the equal float, ``[]``
    and an empty array of any dtype give the same bytes: engines return
    attributes in those forms (h5netcdf: lists as arrays, ``[]`` as float64).
    """
    if isinstance(value, str | bytes):
        a = np.asarray([value.decode() if isinstance(value, bytes) else value])
    else:
        try:
            a = np.asarray(value)
            if a.dtype == object:
                a = a.astype(str)
        except (ValueError, TypeError):  # ragged: no engine writes it, but be total
            a = np.asarray([repr(value)])
    a = a.ravel()
    if a.size == 0:
        return b"e"
    return _canonical(a)


def _hash_field(h: Any, data: bytes) -> None:
    """Feed ``data`` to ``h`` with its length first, so fields cannot run together."""
    h.update(len(data).to_bytes(8, "little"))
    h.update(data)


def _hash_attrs(h: Any, attrs: Mapping, skip: tuple[str, ...] = ()) -> None:
    keys = sorted(str(k) for k in attrs if str(k) not in skip)
    _hash_field(h, str(len(keys)).encode())
    for key in keys:
        _hash_field(h, key.encode())
        _hash_field(h, _canonical_attr(attrs[key]))


def digest(tree: xr.DataTree, header: str, params: str, fitted: str) -> str:
    """SHA-256 (hex) of ``header`` (format, version and class), both JSON strings and ``tree``.

    Every attribute of every group (the root's too, except ``rvm_checksum``)
    and every variable and coordinate of every group: path, name, dims,
    values, attributes.
    """
    h = hashlib.sha256()
    _hash_field(h, header.encode())
    _hash_field(h, params.encode())
    _hash_field(h, fitted.encode())
    for node in sorted(tree.subtree, key=lambda n: n.path):
        _hash_field(h, f"group {node.path}".encode())
        _hash_attrs(h, node.attrs, skip=("rvm_checksum",) if node.is_root else ())
        ds = node.to_dataset(inherit=False)
        for name in sorted(map(str, ds.variables)):
            var = ds.variables[name]
            _hash_field(h, f"{node.path}/{name}{tuple(map(str, var.dims))}".encode())
            _hash_field(h, _canonical(var.values))
            _hash_attrs(h, var.attrs)
    return h.hexdigest()
