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
    SHA-256 of the format, the class name, both JSON strings and every
    variable and coordinate of every group (path, name, dims, values),
    checked on load.

With ``h5netcdf`` or ``netCDF4`` installed the groups are netCDF-4 groups
(``xarray.open_datatree(path)`` reads them).  Otherwise the tree is flattened
into one netCDF-3 file written by SciPy: variable ``v`` of group ``g`` becomes
``g__v`` with dimensions ``g__dim``, group attributes go to JSON root attributes.
:func:`load_estimator` reads both (it tells them by the file's magic bytes).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
from collections.abc import Mapping
from typing import Any

import numpy as np
import xarray as xr
from sklearn.utils.validation import check_is_fitted

from rvm_pymc import kernels as _k
from rvm_pymc.kernels import Basis, PrecomputedBasis
from rvm_pymc.priors import HyperPrior

__all__ = ["FORMAT", "FORMAT_VERSION", "load_estimator", "netcdf_engine", "save_estimator"]

FORMAT = "rvm_pymc.estimator"
FORMAT_VERSION = 1
STATE = "rvm_estimator"
_SEP = "__"
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
_ARRAYS = ("coef_", "sigma_", "alpha_", "active_", "relevance_indices_", "relevance_vectors_")
_SCALARS = (
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


def netcdf_engine() -> str:
    """Default engine of :func:`save_estimator`: ``"h5netcdf"``, ``"netcdf4"`` or ``"scipy"``."""
    for module, engine in (("h5netcdf", "h5netcdf"), ("netCDF4", "netcdf4")):
        if importlib.util.find_spec(module) is not None:
            return engine
    return "scipy"


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


def _digest(tree: xr.DataTree, cls_name: str, params: str, fitted: str) -> str:
    h = hashlib.sha256()
    h.update(f"{FORMAT}/{FORMAT_VERSION}/{cls_name}\x00".encode())
    h.update(params.encode())
    h.update(b"\x00")
    h.update(fitted.encode())
    for node in sorted(tree.subtree, key=lambda n: n.path):
        ds = node.to_dataset(inherit=False)
        for name in sorted(map(str, ds.variables)):
            var = ds.variables[name]
            h.update(f"{node.path}/{name}{tuple(map(str, var.dims))}".encode())
            h.update(_canonical(var.values))
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


def _jsonable_attrs(attrs: Mapping) -> dict[str, Any]:
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


def save_estimator(est, path, engine: str | None = None) -> None:
    """Write a fitted RVR/RVC to ``path`` (see the module docstring for the layout).

    ``engine`` is ``"h5netcdf"`` or ``"netcdf4"`` (netCDF-4 groups), ``"scipy"``
    (flattened netCDF-3), or None for :func:`netcdf_engine`.
    """
    check_is_fitted(est, "coef_")
    if engine is None:
        engine = netcdf_engine()
    elif engine not in ENGINES:
        raise ValueError(f"engine must be one of {ENGINES} or None; got {engine!r}")
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
        node.attrs = _jsonable_attrs(node.attrs)
    tree[STATE] = xr.DataTree(state)
    tree.attrs.update(
        rvm_pymc_format=FORMAT,
        rvm_pymc_format_version=FORMAT_VERSION,
        rvm_estimator_class=type(est).__name__,
        rvm_params=params,
        rvm_fitted=fitted_json,
        rvm_checksum=_digest(tree, type(est).__name__, params, fitted_json),
    )
    if engine == "scipy":
        _flatten(tree).to_netcdf(os.fspath(path), engine="scipy")
    else:
        tree.to_netcdf(os.fspath(path), engine=engine)


def _flatten(tree: xr.DataTree) -> xr.Dataset:
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
            variables[f"{g}{_SEP}{name}"] = xr.Variable(
                dims, values, {"rvm_coord": is_coord, "rvm_dtype": kind}
            )
        attrs[f"rvm_group{_SEP}{g}"] = json.dumps(_jsonable_attrs(node.attrs))
    return xr.Dataset(variables, attrs=attrs)


def _unflatten(ds: xr.Dataset) -> xr.DataTree:
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
        groups[g][target][v] = xr.Variable(dims, values)
    nodes = {}
    for g, content in groups.items():
        path = "/" if g == "root" else "/" + g.replace(_SEP, "/")
        nodes[path] = xr.Dataset(
            content["vars"],
            coords=content["coords"],
            attrs=json.loads(ds.attrs[f"rvm_group{_SEP}{g}"]),
        )
    return xr.DataTree.from_dict(nodes)


def _read(path) -> xr.DataTree:
    path = os.fspath(path)
    with open(path, "rb") as fh:
        magic = fh.read(4)
    if magic[:3] == b"CDF":
        with xr.open_dataset(path, engine="scipy") as ds:
            if f"rvm_group{_SEP}root" not in ds.attrs:
                raise ValueError(f"{path} was not written by RVR/RVC.save (no rvm_pymc header)")
            return _unflatten(ds.load())
    if magic == b"\x89HDF":
        engine = netcdf_engine()
        if engine == "scipy":
            raise ValueError(f"{path} is a netCDF-4 file; reading it needs h5netcdf or netCDF4")
        with xr.open_datatree(path, engine=engine) as tree:
            return tree.load()
    raise ValueError(f"{path} is not a netCDF file written by rvm_pymc (bad magic bytes)")


# ------------------------------------------------------------------------ load


def _mismatch(path, why: str) -> ValueError:
    return ValueError(f"{os.fspath(path)}: the model in the file does not match: {why}")


def load_estimator(path, expected: type | None = None):
    """Read an estimator written by :func:`save_estimator`; refuse tampered or mismatched files.

    Parameters
    ----------
    path : str or path-like
    expected : type, optional
        The class the caller wants (``RVR`` or ``RVC``); None accepts either.

    Returns
    -------
    RVR or RVC
    """
    from rvm_pymc.estimators import RVC, RVR

    tree = _read(path)
    attrs = tree.attrs
    if attrs.get("rvm_pymc_format") != FORMAT:
        raise ValueError(f"{os.fspath(path)} was not written by RVR/RVC.save (no rvm_pymc header)")
    if int(attrs.get("rvm_pymc_format_version", -1)) != FORMAT_VERSION:
        raise ValueError(
            f"{os.fspath(path)} has format version {attrs.get('rvm_pymc_format_version')}; "
            f"this rvm_pymc reads version {FORMAT_VERSION}"
        )
    name = attrs.get("rvm_estimator_class")
    classes = {"RVR": RVR, "RVC": RVC}
    if name not in classes:
        raise _mismatch(path, f"unknown estimator class {name!r}")
    cls = classes[name]
    if expected is not None and cls is not expected:
        raise _mismatch(path, f"it holds an {name}, not an {expected.__name__}; use {name}.load")
    params_json, fitted_json = attrs["rvm_params"], attrs["rvm_fitted"]
    if _digest(tree, name, params_json, fitted_json) != attrs.get("rvm_checksum"):
        raise ValueError(
            f"{os.fspath(path)}: checksum mismatch: the file was modified or corrupted "
            "after it was saved; refusing to load it"
        )
    est = cls(**_params_from_json(params_json))
    _restore(est, tree, json.loads(fitted_json), path)
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
    for key in list(idata.attrs):
        if key.startswith("rvm_") and key != "rvm_estimator":
            del idata.attrs[key]
    est.idata_ = idata
    basis = est._make_basis(est.gamma_)
    if isinstance(basis, PrecomputedBasis):
        est.kernel_ = None
        est.basis_ = basis.fit(np.zeros((1, int(est.n_features_in_))))
    else:
        est.kernel_ = basis.kernel_ if hasattr(basis, "kernel_") else _k.make_kernel(basis.kernel)
        est.basis_ = None
    est._set_posterior(est.coef_, est.sigma_, est.alpha_)
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
