"""Save and load fitted estimators without pickle: the DataTree in netCDF plus JSON attributes.

File layout
-----------
The fit's ``idata_`` groups (``posterior``, ``log_likelihood``, ...), one more
group ``rvm_estimator`` with the arrays that prediction needs (``coef_``,
``sigma_``, ``alpha_``, ``active_``, ``relevance_vectors_``, ``classes_``, ...)
and, on the root, the attributes

``rvm_pymc_format``, ``rvm_pymc_format_version``, ``rvm_estimator_class``
    what the file is;
``rvm_params``, ``rvm_fitted``
    the constructor parameters and the scalar fitted attributes, as JSON;
``rvm_checksum``
    SHA-256 of everything :func:`load_estimator` reads: the format, the class
    name, both JSON strings, every attribute of every group (the root's too,
    except ``rvm_checksum`` itself) and every variable and coordinate of every
    group (path, name, dims, values, attributes); checked on load.

With ``h5netcdf`` and ``h5py`` (or ``netCDF4``) importable the groups are
netCDF-4 groups (``xarray.open_datatree(path)`` reads them).  Otherwise the
tree is flattened into one netCDF-3 file written by SciPy: variable ``v`` of
group ``g`` becomes ``g__v`` with dimensions ``g__dim``, group and variable
attributes are kept as JSON attributes.  :func:`load_estimator` reads both (it
tells them by the file's magic bytes).  Both, and the atomic write (a save that
fails midway leaves a previous file at ``path`` as it was), are
:mod:`rvm_pymc._core.files`.

Format version 2 (this one) added the attributes to the checksum; files of
version 1 are refused with a message saying so.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from typing import Any

import numpy as np
import xarray as xr
from sklearn.utils.validation import check_is_fitted

from rvm_pymc import kernels as _k
from rvm_pymc._core.files import (
    ENGINE_MODULES,
    ENGINES,
    INSTALL_HINT,
    atomic_write,
    damaged_if_failing,
    engine_available,
    jsonable_attrs,
    netcdf_engine,
    read_tree,
    write_tree,
)
from rvm_pymc.basis import Basis, PrecomputedBasis
from rvm_pymc.priors import HyperPrior

__all__ = [
    "ENGINES",
    "FORMAT",
    "FORMAT_VERSION",
    "engine_available",
    "load_estimator",
    "netcdf_engine",
    "save_estimator",
]

FORMAT = "rvm_pymc.estimator"
FORMAT_VERSION = 2
STATE = "rvm_estimator"
_HEADER = (
    "rvm_pymc_format",
    "rvm_pymc_format_version",
    "rvm_estimator_class",
    "rvm_params",
    "rvm_fitted",
    "rvm_checksum",
)
_KERNEL_TYPES = {
    c.__name__: c
    for c in (
        _k.RBF,
        _k.Laplacian,
        _k.Cauchy,
        _k.Linear,
        _k.Polynomial,
        _k.LinearSpline,
        _k.Constant,
        _k.Sum,
        _k.Product,
    )
}
_ARRAYS = (
    "coef_",
    "sigma_",
    "alpha_",
    "active_",
    "relevance_indices_",
    "relevance_vectors_",
    "basis_scale_",
)
_SCALARS = (
    "y_scale_",
    "beta_",
    "noise_var_",
    "y_offset_",
    "gamma_",
    "n_iter_",
    "converged_",
    "log_evidence_",
    "bias_active_",
    "n_features_in_",
)

# ------------------------------------------------------------------ parameters


def _kernel_to_json(k: Any) -> Any:
    if isinstance(k, str):
        return k
    if type(k) in (_k.Sum, _k.Product):
        return {
            "kernel": type(k).__name__,
            "k1": _kernel_to_json(k.k1),
            "k2": _kernel_to_json(k.k2),
        }
    if type(k).__name__ in _KERNEL_TYPES and type(k) is _KERNEL_TYPES[type(k).__name__]:
        return {"kernel": type(k).__name__, "params": k.get_params()}
    raise ValueError(
        f"kernel={k!r} cannot be saved without pickle (only kernel names and the built-in "
        "Kernel classes can); use joblib.dump / pickle for this estimator"
    )


def _kernel_from_json(spec: Any) -> Any:
    if isinstance(spec, str):
        return spec
    cls = _KERNEL_TYPES[spec["kernel"]]
    if "k1" in spec:
        return cls(_kernel_from_json(spec["k1"]), _kernel_from_json(spec["k2"]))
    return cls(**spec["params"])


def _params_to_json(params: dict[str, Any]) -> str:
    out = dict(params)
    out["kernel"] = _kernel_to_json(params["kernel"])
    prior = params["prior"]
    if isinstance(prior, HyperPrior):
        out["prior"] = {"HyperPrior": prior.as_dict()}
    elif isinstance(prior, Mapping):
        out["prior"] = {"mapping": {k: float(v) for k, v in prior.items()}}
    if params["gamma_grid"] is not None:
        out["gamma_grid"] = np.asarray(params["gamma_grid"], dtype=float).tolist()
    rs = params["random_state"]
    if not (rs is None or isinstance(rs, int | np.integer)):
        out["random_state"] = None  # a Generator/RandomState: its draws are in the file
    elif rs is not None:
        out["random_state"] = int(rs)
    try:
        return json.dumps(out, sort_keys=True)
    except TypeError as exc:
        raise ValueError(f"the parameters cannot be saved as JSON ({exc}); use joblib") from exc


def _params_from_json(text: str) -> dict[str, Any]:
    params = json.loads(text)
    params["kernel"] = _kernel_from_json(params["kernel"])
    prior = params["prior"]
    if isinstance(prior, dict):
        params["prior"] = (
            HyperPrior(**prior["HyperPrior"]) if "HyperPrior" in prior else prior["mapping"]
        )
    return params


# -------------------------------------------------------------------- checksum


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


def _digest(tree: xr.DataTree, cls_name: str, params: str, fitted: str) -> str:
    """SHA-256 of everything :func:`load_estimator` reads from ``tree`` (hex)."""
    h = hashlib.sha256()
    _hash_field(h, f"{FORMAT}/{FORMAT_VERSION}/{cls_name}".encode())
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


# ----------------------------------------------------------------------- state


def _state(est) -> tuple[xr.Dataset, dict[str, Any]]:
    """The arrays (as a Dataset) and the JSON-able scalars of a fitted estimator."""
    data = {}
    for name in _ARRAYS:
        arr = np.asarray(getattr(est, name))
        data[name] = ([f"{name}dim{i}" for i in range(arr.ndim)], arr)
    fitted: dict[str, Any] = {
        k: (v.item() if isinstance(v, np.generic) else v)
        for k in _SCALARS
        if hasattr(est, k) and not isinstance(v := getattr(est, k), np.ndarray)
    }
    fitted["active_names_"] = list(est.active_names_)
    if hasattr(est, "feature_names_in_"):
        fitted["feature_names_in_"] = [str(c) for c in est.feature_names_in_]
    if hasattr(est, "classes_"):
        classes = np.asarray(est.classes_)
        fitted["classes_dtype"] = classes.dtype.str if classes.dtype != object else "object"
        data["classes_"] = (
            ["classes_dim0"],
            classes.astype(str) if classes.dtype == object else classes,
        )
    if hasattr(est, "evidence_path_"):
        for k, v in est.evidence_path_.items():
            data[f"evidence_path_{k}"] = (["evidence_path_dim0"], np.asarray(v, dtype=float))
    return xr.Dataset(data), fitted


def save_estimator(est, path, engine: str | None = None) -> None:
    """Write a fitted RVR/RVC to ``path`` atomically (the layout is in the module docstring).

    Parameters
    ----------
    est : RVR or RVC
        A fitted estimator.
    path : str or path-like
        The file to write; an existing file is replaced only once the new one
        is completely on disk.  A symbolic link is followed (its target is
        replaced).
    engine : {"h5netcdf", "netcdf4", "scipy"}, optional
        ``"h5netcdf"`` or ``"netcdf4"`` write netCDF-4 groups, ``"scipy"`` a
        flattened netCDF-3 file; None takes :func:`netcdf_engine`.

    Raises
    ------
    ValueError
        For an unknown engine, or a parameter that cannot be saved without
        pickle.
    ImportError
        If ``engine`` is given but a module it needs does not import.
    TypeError
        If ``path`` is not a str or path-like object.
    FileNotFoundError
        If the directory of ``path`` does not exist.
    OSError
        If writing fails (no permission, disk full, ...); the message names
        ``path``, and a file already at ``path`` is left untouched.
    """
    check_is_fitted(est, "coef_")
    _check_path(path)
    if engine is None:
        engine = netcdf_engine()
    elif engine not in ENGINES:
        raise ValueError(f"engine must be one of {ENGINES} or None; got {engine!r}")
    elif not engine_available(engine):
        raise ImportError(
            f"engine={engine!r} needs the modules {' and '.join(ENGINE_MODULES[engine])}; "
            + INSTALL_HINT
        )
    if isinstance(est.kernel, Basis) and not isinstance(est.kernel, PrecomputedBasis):
        raise ValueError(
            f"an estimator with a user basis ({type(est.kernel).__name__}) cannot be saved "
            "without pickle; use joblib.dump"
        )
    params = _params_to_json(est.get_params(deep=False))
    state, fitted = _state(est)
    fitted_json = json.dumps(fitted, sort_keys=True)
    tree = est.idata_.copy()
    for node in tree.subtree:
        node.attrs = jsonable_attrs(node.attrs)
    tree[STATE] = xr.DataTree(state)
    tree.attrs.update(
        rvm_pymc_format=FORMAT,
        rvm_pymc_format_version=FORMAT_VERSION,
        rvm_estimator_class=type(est).__name__,
        rvm_params=params,
        rvm_fitted=fitted_json,
    )
    # after the update: the root attributes are part of the checksum
    tree.attrs["rvm_checksum"] = _digest(tree, type(est).__name__, params, fitted_json)
    atomic_write(path, lambda tmp: write_tree(tree, tmp, engine))


# ------------------------------------------------------------------------ load


def _check_path(path) -> str:
    """``os.fspath(path)``, or a TypeError that names the argument."""
    try:
        return os.fspath(path)
    except TypeError:
        raise TypeError(
            f"path must be a str or path-like object; got {type(path).__name__}"
        ) from None


def _mismatch(path, why: str) -> ValueError:
    return ValueError(f"{os.fspath(path)}: the model in the file does not match: {why}")


def _header_text(attrs: Mapping, key: str) -> str | None:
    value = attrs.get(key)
    return value if isinstance(value, str) else None


ESTIMATOR_NAMES = ("RVR", "RVC")
"""The classes a file written by :func:`save_estimator` can hold."""


def load_estimator(path, classes: Mapping[str, type], expected: type | None = None):
    """Read an estimator written by :func:`save_estimator`; refuse damaged or mismatched files.

    Parameters
    ----------
    path : str or path-like
    classes : mapping
        Class name -> estimator class that may be constructed (this module does
        not import :mod:`rvm_pymc.estimators`, which imports it).
    expected : type, optional
        The class the caller wants (``RVR`` or ``RVC``); None accepts any of
        ``classes``.

    Returns
    -------
    RVR or RVC

    Raises
    ------
    FileNotFoundError
        If there is no file at ``path`` (the only error that is not a ValueError).
    ValueError
        For every other reason the file cannot be loaded, with ``path`` and the
        reason in the message: it cannot be read (a directory, no permission),
        is empty, damaged or truncated, was not written by ``save``, has another
        format version, fails its checksum (modified or corrupted after it was
        saved), holds another estimator class than ``expected``, or holds a
        model that is inconsistent or cannot be restored by this version.
    """
    shown = _check_path(path)
    tree = read_tree(path)
    attrs = tree.attrs
    if _header_text(attrs, "rvm_pymc_format") != FORMAT:
        raise ValueError(
            f"{shown} was not written by RVR/RVC.save (no rvm_pymc header), "
            "or its header is damaged"
        )
    version = attrs.get("rvm_pymc_format_version")
    if isinstance(version, np.generic):
        version = version.item()
    if not (isinstance(version, int | np.integer) and int(version) == FORMAT_VERSION):
        raise ValueError(
            f"{shown} has format version {version!r}; this rvm_pymc reads version "
            f"{FORMAT_VERSION} only (re-fit and save the model with this version)"
        )
    header = {
        key: _header_text(attrs, key)
        for key in ("rvm_estimator_class", "rvm_params", "rvm_fitted", "rvm_checksum")
    }
    missing = [key for key, value in header.items() if value is None]
    if missing:
        raise ValueError(f"{shown} is damaged: its header lacks {', '.join(missing)}")
    name, params_json, fitted_json = (
        header["rvm_estimator_class"],
        header["rvm_params"],
        header["rvm_fitted"],
    )
    with damaged_if_failing(shown, "its checksum cannot be computed"):
        digest = _digest(tree, name, params_json, fitted_json)
    if digest != header["rvm_checksum"]:
        raise ValueError(
            f"{shown}: checksum mismatch: the file was modified or corrupted "
            "after it was saved; refusing to load it"
        )
    if expected is not None and name != expected.__name__:
        if name not in ESTIMATOR_NAMES and name not in classes:
            raise _mismatch(path, f"unknown estimator class {name!r}")
        raise _mismatch(path, f"it holds an {name}, not an {expected.__name__}; use {name}.load")
    if name not in classes:
        raise _mismatch(path, f"unknown estimator class {name!r}")
    cls = classes[name]
    try:
        est = cls(**_params_from_json(params_json))
        _restore(est, tree, json.loads(fitted_json), path)
    except Exception as exc:
        if isinstance(exc, ValueError) and shown in str(exc):
            raise
        raise _mismatch(
            path,
            f"it cannot be restored ({type(exc).__name__}: {exc}); was it written by another "
            "version of rvm_pymc?",
        ) from exc
    return est


def _restore(est, tree: xr.DataTree, fitted: dict[str, Any], path) -> None:
    state = tree[STATE].to_dataset()
    for name in _ARRAYS:
        arr = np.asarray(state[name].values)
        if name in ("active_", "relevance_indices_"):
            arr = arr.astype(np.intp)
        setattr(est, name, arr)
    for k in _SCALARS:
        if k in fitted:
            setattr(est, k, fitted[k])
    est.active_names_ = list(fitted["active_names_"])
    if "feature_names_in_" in fitted:
        est.feature_names_in_ = np.asarray(fitted["feature_names_in_"], dtype=object)
    if "classes_" in state:
        dtype = fitted["classes_dtype"]
        est.classes_ = np.asarray(state["classes_"].values).astype(
            object if dtype == "object" else np.dtype(dtype)
        )
    if "evidence_path_gamma" in state:
        est.evidence_path_ = {
            "gamma": state["evidence_path_gamma"].values,
            "log_evidence": state["evidence_path_log_evidence"].values,
        }
    idata = tree.copy()
    del idata[STATE]
    for key in _HEADER:  # the file's own header; the fit's attributes stay
        idata.attrs.pop(key, None)
    est.idata_ = idata
    basis = est._make_basis(est.gamma_)
    if isinstance(basis, PrecomputedBasis):
        est.kernel_ = None
        est.basis_ = basis.fit(np.zeros((1, int(est.n_features_in_))))
    else:
        est.kernel_ = basis.kernel_ if hasattr(basis, "kernel_") else _k.make_kernel(basis.kernel)
        est.basis_ = None
    est._restore_posterior()
    est.model_ = None  # a PyMC model is not saved (as after unpickling)
    _check_consistent(est, path)


def _check_consistent(est, path) -> None:
    m = est.active_.size
    if est.coef_.shape[0] != m or est.alpha_.shape != (m,) or len(est.active_names_) != m:
        raise _mismatch(path, "the active set, weights and precisions differ in size")
    k = est.coef_.shape[1] if est.coef_.ndim == 2 else 1
    if est.sigma_.shape != (m * k, m * k):
        raise _mismatch(path, f"sigma_ has shape {est.sigma_.shape}; expected {(m * k, m * k)}")
    post = est.idata_["posterior"]
    if not set(est.active_names_) <= {str(b) for b in post["basis"].values}:
        raise _mismatch(path, "the active bases are missing from the idata_ posterior")
    if est.idata_.attrs.get("method") != est.method:
        raise _mismatch(
            path,
            f"idata_ was fitted by {est.idata_.attrs.get('method')!r}, params say {est.method!r}",
        )
    if est.kernel_ is not None and est.relevance_vectors_.shape[1:] != (est.n_features_in_,):
        raise _mismatch(path, "relevance vectors and n_features_in_ disagree")
    if hasattr(est, "classes_"):
        want = 2 if est.coef_.ndim == 1 else est.coef_.shape[1]
        if est.classes_.size != want:
            raise _mismatch(path, f"{est.classes_.size} classes but weights for {want}")
