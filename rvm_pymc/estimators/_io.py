"""Save and load fitted estimators without pickle: the DataTree in netCDF plus JSON.

A file holds ``idata_``, a group ``rvm_estimator`` with the fitted arrays the tree does
not hold, and root attributes: the format header, ``rvm_params`` and ``rvm_fitted``
(JSON) and ``rvm_checksum`` (SHA-256 of everything load reads).  Format 4 leaves out
the draws that are made again identically on load (checked as it saves); else format 3
(the tree whole).  Formats 2 and 3 are still read.
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

from rvm_pymc import kernels
from rvm_pymc._core.files import (
    ENGINE_MODULES,
    ENGINES,
    IN_MEMORY_ENGINES,
    INSTALL_HINT,
    atomic_write,
    atomic_write_bytes,
    damaged_if_failing,
    engine_available,
    jsonable_attrs,
    netcdf_engine,
    read_tree,
    tree_bytes,
    write_tree,
)
from rvm_pymc._core.validation import plain_value
from rvm_pymc._core.version import VERSION
from rvm_pymc.basis import Basis, PrecomputedBasis
from rvm_pymc.estimators._classes import RVC, RVP, RVR
from rvm_pymc.priors import HyperPrior
from rvm_pymc.results import WeightPosterior, to_datatree

__all__ = [
    "FORMAT_VERSION",
    "build_tree",
    "engine_available",
    "load",
    "load_estimator",
    "netcdf_engine",
    "save_estimator",
]

FORMAT = "rvm_pymc.estimator"
FORMAT_VERSION = 4
WHOLE_VERSION = 3  # a file that holds idata_ whole
READABLE_VERSIONS = (2, 3, 4)
REBUILT = "idata_rebuilt"  # key of the fitted JSON: how load makes the left-out draws again
STATE = "rvm_estimator"
_HEADER = (
    "rvm_pymc_format",
    "rvm_pymc_format_version",
    "rvm_estimator_class",
    "rvm_params",
    "rvm_fitted",
    "rvm_checksum",
)


def _digest(
    tree: xr.DataTree, cls_name: str, params: str, fitted: str, version: int = FORMAT_VERSION
) -> str:
    """SHA-256 (hex) of everything :func:`load_estimator` reads but ``rvm_checksum``."""
    h = hashlib.sha256()
    for text in (f"{FORMAT}/{version}/{cls_name}", params, fitted):
        _hash_field(h, text.encode())
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


# fitted arrays (the rvm_estimator group) and scalars (the rvm_fitted JSON) not in the tree
_STATE_ARRAYS = ("active_", "relevance_indices_", "relevance_vectors_", "basis_scale_")
_OPTIONAL_ARRAYS = ("X_train_", "y_train_")  # predictive="rvm*" only
_FITTED = ("y_scale_", "gamma_", "n_features_in_")


def _state(est) -> tuple[xr.Dataset, dict[str, Any]]:
    """What the tree of a fitted estimator does not hold: arrays and JSON scalars."""
    arrays = {name: np.asarray(getattr(est, name)) for name in _STATE_ARRAYS}
    arrays.update({k: np.asarray(getattr(est, k)) for k in _OPTIONAL_ARRAYS if hasattr(est, k)})
    post = est.posterior_
    if post.is_type_ii:  # the tree holds its draws, not its Gaussian
        arrays["weight_mean"], arrays["weight_cov"] = post.mean, post.cov
    fitted: dict[str, Any] = {
        k: plain_value(v) for k in _FITTED if (v := getattr(est, k)) is not None or k == "gamma_"
    }
    if hasattr(est, "feature_names_in_"):
        fitted["feature_names_in_"] = [str(c) for c in est.feature_names_in_]
    if hasattr(est, "classes_"):
        classes = np.asarray(est.classes_)
        fitted["classes_dtype"] = classes.dtype.str if classes.dtype != object else "object"
        arrays["classes_"] = classes.astype(str) if classes.dtype == object else classes
    for attr in ("evidence_path_", "cv_path_"):
        for k, v in getattr(est, attr, {}).items():
            arrays[f"{attr}{k}"] = np.asarray(v, dtype=float)
    data = {k: ([f"{k}dim{i}" for i in range(v.ndim)], v) for k, v in arrays.items()}
    return xr.Dataset(data), fitted


def save_estimator(est, path, engine: str | None = None) -> None:
    """Write a fitted estimator to ``path`` atomically (see :meth:`RVR.save`)."""
    check_is_fitted(est, "coef_")
    _check_path(path)
    if getattr(est, "predictive", "rvm") == "rvm*" and not hasattr(est, "X_train_"):
        raise ValueError("predictive='rvm*' was set after the fit: refit before saving")
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
    params = params_to_json(est.get_params(deep=False))
    state, fitted = _state(est)
    tree = est.idata_.copy()
    for node in tree.subtree:
        node.attrs = jsonable_attrs(node.attrs)
    version = WHOLE_VERSION
    made = compact(tree, est.posterior_, (getattr(est, "_tree_inputs", None) or {}).get("seed"))
    if made is not None:
        tree, fitted[REBUILT] = made
        version = FORMAT_VERSION
    fitted_json = json.dumps(fitted, sort_keys=True)
    tree[STATE] = xr.DataTree(state)
    tree.attrs.update(
        rvm_pymc_format=FORMAT,
        rvm_pymc_format_version=version,
        rvm_estimator_class=type(est).__name__,
        rvm_params=params,
        rvm_fitted=fitted_json,
    )
    # after the update: the root attributes are part of the checksum
    tree.attrs["rvm_checksum"] = _digest(tree, type(est).__name__, params, fitted_json, version)
    if engine in IN_MEMORY_ENGINES:  # HDF5 never writes to the disk (a full disk: OSError)
        atomic_write_bytes(path, tree_bytes(tree, engine))
    else:
        atomic_write(path, lambda tmp: write_tree(tree, tmp, engine))


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


CLASSES = {"RVR": RVR, "RVC": RVC, "RVP": RVP}


def load_estimator(path, expected: type | None = None):
    """Read an estimator written by :func:`save_estimator` (of class ``expected``, if given).

    A ``ValueError`` naming ``path`` and the reason for a damaged or mismatched file.
    """
    shown = _check_path(path)
    tree = read_tree(path)
    attrs = tree.attrs
    header = {k: v if isinstance(v := attrs.get(k), str) else None for k in _HEADER}  # texts
    if header["rvm_pymc_format"] != FORMAT:
        raise ValueError(
            f"{shown} was not written by RVR/RVC.save (no rvm_pymc header), "
            "or its header is damaged"
        )
    version = plain_value(attrs.get("rvm_pymc_format_version"))
    if not (isinstance(version, int | np.integer) and int(version) in READABLE_VERSIONS):
        raise ValueError(_version_message(shown, version))
    version = int(version)
    missing = [key for key in _HEADER[2:] if header[key] is None]
    if missing:
        raise ValueError(f"{shown} is damaged: its header lacks {', '.join(missing)}")
    name, params_json, fitted_json, checksum = (header[key] for key in _HEADER[2:])
    with damaged_if_failing(shown, "its checksum cannot be computed"):
        digest = _digest(tree, name, params_json, fitted_json, version)
    if digest != checksum:
        raise ValueError(
            f"{shown}: checksum mismatch: the file was modified or corrupted "
            "after it was saved; refusing to load it"
        )
    classes = CLASSES if expected is None else {expected.__name__: expected}
    if expected is not None and name != expected.__name__ and name in CLASSES:
        raise _mismatch(path, f"it holds an {name}, not an {expected.__name__}; use {name}.load")
    if name not in classes:
        raise _mismatch(path, f"unknown estimator class {name!r}")
    cls = classes[name]
    try:
        est = cls(**params_from_json(params_json))
        _restore(est, tree, json.loads(fitted_json), path, version)
    except Exception as exc:
        if isinstance(exc, ValueError) and shown in str(exc):
            raise
        raise _mismatch(
            path,
            f"it cannot be restored ({type(exc).__name__}: {exc}); was it written by another "
            "version of rvm_pymc?",
        ) from exc
    return est


def _version_message(shown: str, version: Any) -> str:
    """Why a file of format ``version`` is refused, and what to do."""
    *first, last = map(str, READABLE_VERSIONS)
    readable = f"{', '.join(first)} and {last}" if first else last
    said = f"{shown} has format version {version!r}; rvm_pymc {VERSION} reads versions {readable}"
    if not isinstance(version, int | np.integer):
        return f"{said} only, as an integer: the header is damaged"
    if int(version) > FORMAT_VERSION:
        return f"{said} only: the file was saved by a newer rvm_pymc; upgrade rvm_pymc to load it"
    return f"{said} only: the file was saved by an older rvm_pymc; re-fit and save the model"


def _restore(est, tree: xr.DataTree, fitted: dict[str, Any], path, version: int) -> None:
    """Set every fitted attribute of ``est`` from a file's tree and JSON scalars."""
    if STATE not in tree.children:
        raise _mismatch(path, f"it has no {STATE!r} group (the relevance vectors and scales)")
    state = {str(k): v.values for k, v in tree[STATE].to_dataset().data_vars.items()}
    if version == 2:  # a version-2 file: the weights' Gaussian under the estimator's names
        coef, sigma = state.pop("coef_", None), state.pop("sigma_", None)
        state.pop("alpha_", None)
        if est.method != "nuts" and coef is not None:
            state["weight_mean"], state["weight_cov"] = coef, sigma
    missing = [k for k in _FITTED if k not in fitted]
    missing += [k for k in _STATE_ARRAYS if k not in state]
    if missing:
        raise _mismatch(path, f"it lacks the fitted {', '.join(missing)}")
    idata = tree.copy()
    del idata[STATE]
    for key in _HEADER:
        idata.attrs.pop(key, None)
    if idata.attrs.get("method") != est.method:
        raise _mismatch(
            path, f"idata_ was fitted by {idata.attrs.get('method')!r}, params say {est.method!r}"
        )
    for name in _STATE_ARRAYS:
        index = name in ("active_", "relevance_indices_")
        setattr(est, name, np.asarray(state[name], dtype=np.intp if index else None))
    for name in set(_OPTIONAL_ARRAYS) & set(state):
        setattr(est, name, np.asarray(state[name], dtype=float))
    for k in _FITTED:
        setattr(est, k, fitted[k])
    if "feature_names_in_" in fitted:
        est.feature_names_in_ = np.asarray(fitted["feature_names_in_"], dtype=object)
    if "classes_" in state:
        est.classes_ = np.asarray(state["classes_"]).astype(fitted["classes_dtype"])
    for attr in ("cv_path_", "evidence_path_"):
        got = {k[len(attr) :]: v for k, v in state.items() if k.startswith(attr)}
        if got:
            flags = () if attr == "cv_path_" else set(got) - {"gamma", "log_evidence"}
            setattr(est, attr, {k: v.astype(bool) if k in flags else v for k, v in got.items()})
    basis = est._make_basis(est.gamma_)
    if isinstance(basis, PrecomputedBasis):
        est.kernel_ = None
        est.basis_ = basis.fit(np.zeros((1, int(est.n_features_in_))))
    else:
        est.kernel_ = (
            basis.kernel_ if hasattr(basis, "kernel_") else kernels.make_kernel(basis.kernel)
        )
        est.basis_ = None
    active = est.active_
    est.active_names_ = [str(b) for b in idata["posterior"]["basis"].values]
    est.bias_active_ = bool(basis.bias and active.size and active[0] == 0)
    est._set_result(_posterior(est, idata, state))
    est.n_iter_ = int(idata.attrs["n_iter"])
    est.converged_ = bool(idata.attrs["converged"])
    est.log_evidence_ = float(idata.attrs["log_evidence"])
    if "interpolates" in idata.attrs:
        est.interpolates_ = bool(idata.attrs["interpolates"])
    else:  # an older file: the rule again
        n_train = int(next(iter(idata["observed_data"].data_vars.values())).size)
        at_bound = bool(idata.attrs.get("noise_at_bound", False))
        est.interpolates_ = est._interpolates(n_train, at_bound)
    if "gamma" in idata["posterior"]:  # gamma="integrate"
        est.gamma_draws_ = np.asarray(idata["posterior"]["gamma"].values, dtype=float)
        est.kernel_ = kernels.make_kernel("rbf", gamma=est.gamma_)
    est.model_ = None
    rebuilt = fitted.get(REBUILT) if version >= 4 else None
    if rebuilt is None:
        est.idata_ = idata
    else:  # built on first access, as after a fit
        _check_rebuilt(rebuilt, idata, path)
        est._tree_inputs = tree_inputs(idata, int(rebuilt["seed"]), bool(rebuilt["type_ii"]))
        est.idata_ = None
    _check_consistent(est, path)


def _check_rebuilt(rebuilt: Mapping, idata: xr.DataTree, path) -> None:
    """Check that a version-4 file's account of its left-out draws fits its tree."""
    post = idata["posterior"]
    sizes = (int(post.sizes.get("chain", -1)), int(post.sizes.get("draw", -1)))
    if sizes != (int(rebuilt["chains"]), int(rebuilt["draws"])):
        raise _mismatch(path, "the draws to make again and the posterior's coordinates differ")
    for group, names in dict(rebuilt["dropped"]).items():
        if group not in idata.children or set(names) & set(idata[group].data_vars):
            raise _mismatch(path, f"the group {group!r} does not match the draws left out")


def _posterior(est, tree: xr.DataTree, state: dict):
    """The estimator's posterior, read from its tree (and state, for a type-II fit)."""
    post, const = tree["posterior"], tree["constant_data"]
    kind, sampled = est._kind_of_fit(), est.method == "nuts"
    held = post if sampled else const
    used = {"log_beta": kind == "regression", "log_dispersion": kind == "negative_binomial"}
    wanted = ["log_alpha"] + [n for n, u in used.items() if u]
    fields = {n: np.asarray(held[n].values, dtype=float) for n in wanted}
    if sampled:
        fields["draws"] = np.asarray(post["W" if kind == "softmax" else "w"].values, dtype=float)
    else:
        fields.update({n: float(fields[n]) for n in used if n in fields})
        fields["mean"] = np.asarray(state["weight_mean"], dtype=float)
        fields["cov"] = np.asarray(state["weight_cov"], dtype=float)
    y_offset = float(const["y_offset"].values) if kind == "regression" else 0.0
    names = tuple(str(b) for b in post["basis"].values)
    return WeightPosterior(kind=kind, basis_names=names, y_offset=y_offset, **fields)


def _check_consistent(est, path) -> None:
    """Check the basis and the classes (which the posterior does not)."""
    if est.active_.size != len(est.active_names_):
        raise _mismatch(path, "the active set and the bases of the idata_ posterior differ")
    if est.kernel_ is not None and est.relevance_vectors_.shape[1:] != (est.n_features_in_,):
        raise _mismatch(path, "relevance vectors and n_features_in_ disagree")
    X, y = getattr(est, "X_train_", np.zeros((0, 0))), getattr(est, "y_train_", np.zeros(1))
    if getattr(est, "predictive", "rvm") == "rvm*" and X.shape != (y.size, est.n_features_in_):
        raise _mismatch(path, "predictive='rvm*' without the training data it needs")
    if hasattr(est, "classes_"):
        want = 2 if est.coef_.ndim == 1 else est.coef_.shape[1]
        if est.classes_.size != want:
            raise _mismatch(path, f"{est.classes_.size} classes but weights for {want}")


def kernel_to_json(k: Any) -> Any:
    """A kernel name, or a built-in kernel (sums and products too), as JSON data."""
    if isinstance(k, str):
        return k
    name = type(k).__name__
    try:  # a built-in kernel class itself, not a subclass
        builtin = type(k) is kernels.kernel_class(name)
    except ValueError:
        builtin = False
    if not builtin:
        raise ValueError(
            f"kernel={k!r} cannot be saved without pickle (only kernel names and the built-in "
            "Kernel classes can); use joblib.dump / pickle for this estimator"
        )
    if name in ("Sum", "Product"):
        return {"kernel": name, "k1": kernel_to_json(k.k1), "k2": kernel_to_json(k.k2)}
    return {"kernel": name, "params": k.get_params()}


def kernel_from_json(spec: Any) -> Any:
    """The kernel of :func:`kernel_to_json`'s data."""
    if isinstance(spec, str):
        return spec
    cls = kernels.kernel_class(spec["kernel"])
    if "k1" in spec:
        return cls(kernel_from_json(spec["k1"]), kernel_from_json(spec["k2"]))
    return cls(**spec["params"])


def params_to_json(params: dict[str, Any]) -> str:
    """An estimator's ``get_params()`` as JSON text."""
    out = dict(params)
    out["kernel"] = kernel_to_json(params["kernel"])
    prior = params["prior"]
    if isinstance(prior, HyperPrior):
        out["prior"] = {"HyperPrior": prior.as_dict()}
    elif isinstance(prior, Mapping):
        out["prior"] = {"mapping": {k: float(v) for k, v in prior.items()}}
    if params["gamma_grid"] is not None:
        out["gamma_grid"] = np.asarray(params["gamma_grid"], dtype=float).tolist()
    rs = params["random_state"]  # a Generator/RandomState: None, its draws are in the file
    out["random_state"] = int(rs) if isinstance(rs, int | np.integer) else None
    try:
        return json.dumps(out, sort_keys=True)
    except TypeError as exc:
        raise ValueError(f"the parameters cannot be saved as JSON ({exc}); use joblib") from exc


def params_from_json(text: str) -> dict[str, Any]:
    """The parameters of :func:`params_to_json`'s text."""
    params = json.loads(text)
    params["kernel"] = kernel_from_json(params["kernel"])
    prior = params["prior"]
    if isinstance(prior, dict):
        params["prior"] = (
            HyperPrior(**prior["HyperPrior"]) if "HyperPrior" in prior else prior["mapping"]
        )
    return params


def _canonical(values: np.ndarray) -> bytes:
    """Bytes of values in a form that survives every netCDF engine's round trip."""
    a = np.asarray(values)
    if a.dtype.kind in "biuf":
        f = np.ascontiguousarray(a, dtype=np.float64)
        f = np.where(np.isnan(f), np.nan, f)  # one NaN bit pattern
        return b"n" + repr(a.shape).encode() + f.tobytes()
    return b"s" + repr(a.shape).encode() + "\x1f".join(map(str, a.ravel().tolist())).encode()


def _canonical_attr(value: Any) -> bytes:
    """Bytes of an attribute value, the same for the forms engines return (str/[str], ...)."""
    if isinstance(value, str | bytes):
        a = np.asarray([value.decode() if isinstance(value, bytes) else value])
    else:
        try:
            a = np.asarray(value)
            if a.dtype == object:
                a = a.astype(str)
        except (ValueError, TypeError):  # ragged
            a = np.asarray([repr(value)])
    a = a.ravel()
    return _canonical(a) if a.size else b"e"


def _hash_field(h: Any, data: bytes) -> None:
    """Feed ``data`` to ``h``, length first."""
    h.update(len(data).to_bytes(8, "little"))
    h.update(data)


def _hash_attrs(h: Any, attrs: Mapping, skip: tuple[str, ...] = ()) -> None:
    keys = sorted(str(k) for k in attrs if str(k) not in skip)
    _hash_field(h, str(len(keys)).encode())
    for key in keys:
        _hash_field(h, key.encode())
        _hash_field(h, _canonical_attr(attrs[key]))


# the groups a compact file leaves out (the second: a type-II fit's only)
DERIVED_GROUPS = ("log_likelihood", "posterior_predictive")
TYPE_II_GROUPS = ("posterior", "sample_stats")
_ADDED_CONSTANTS = ("Phi", "y_offset", "log_alpha", "log_beta", "log_dispersion")  # by to_datatree


def _dataset(tree: xr.DataTree, group: str) -> xr.Dataset:
    return tree[group].to_dataset(inherit=False)


def tree_inputs(tree: xr.DataTree, seed: int, type_ii: bool) -> dict[str, Any]:
    """The inputs (an estimator's ``_tree_inputs``) that build ``tree``'s draws again."""
    const = _dataset(tree, "constant_data")
    observed = _dataset(tree, "observed_data")
    (obs_name,) = list(observed.data_vars)
    post = _dataset(tree, "posterior")
    classes = [str(c) for c in observed["class"].values] if "class" in observed.coords else None
    stats = None
    if not type_ii:
        stats = {str(k): v.values for k, v in _dataset(tree, "sample_stats").data_vars.items()}
    return {
        "Phi": np.asarray(const["Phi"].values, dtype=float),
        "Phi_of_X": False,
        "target": np.asarray(observed[obs_name].values),
        "classes": classes,
        "seed": int(seed),
        "sample_stats": stats,
        "attrs": dict(tree.attrs),
        "draws": int(post.sizes["draw"]),
        "chains": int(post.sizes["chain"]),
        "constants": {
            str(k): (v.dims, v.values)
            for k, v in const.data_vars.items()
            if k not in _ADDED_CONSTANTS
        },
    }


def build_tree(posterior, inputs: Mapping[str, Any]) -> xr.DataTree:
    """The tree of ``posterior`` from an estimator's ``_tree_inputs``."""
    return to_datatree(
        posterior,
        Phi=inputs["Phi"],
        target=inputs["target"],
        classes=inputs["classes"],
        draws=inputs["draws"],
        chains=inputs["chains"],
        random_state=inputs["seed"],
        sample_stats=inputs["sample_stats"],
        attrs=inputs["attrs"],
        constant_data=inputs["constants"],
        latent=inputs.get("latent"),
        extra_posterior=inputs.get("extra_posterior"),
    )


def _identical(a: xr.DataTree, b: xr.DataTree) -> bool:
    """Every group of ``a`` and ``b`` identical, dtypes too."""
    paths = sorted(node.path for node in a.subtree)
    if paths != sorted(node.path for node in b.subtree):
        return False
    pairs = [(_dataset(a, path), _dataset(b, path)) for path in paths]
    same = (v.dtype == db.variables[k].dtype for da, db in pairs for k, v in da.variables.items())
    return all(da.identical(db) for da, db in pairs) and all(same)


def _dropped(tree: xr.DataTree, type_ii: bool) -> dict[str, list[str]]:
    groups = DERIVED_GROUPS + (TYPE_II_GROUPS if type_ii else ())
    return {g: [str(k) for k in _dataset(tree, g).data_vars] for g in groups if g in tree.children}


def compact(
    tree: xr.DataTree, posterior, seed: int | None
) -> tuple[xr.DataTree, dict[str, Any]] | None:
    """``(compact tree, what load needs to rebuild it)``, or None if not identical again."""
    if seed is None:
        return None
    needed = ("posterior", "observed_data", "constant_data", "sample_stats", *DERIVED_GROUPS)
    if set(tree.children) != set(needed) or "Phi" not in tree["constant_data"]:
        return None  # a group missing, or added by a user
    type_ii = bool(posterior.is_type_ii)
    dropped = _dropped(tree, type_ii)
    small = tree.copy()
    for group, names in dropped.items():
        small[group] = xr.DataTree(_dataset(small, group).drop_vars(names))
    try:
        inputs = tree_inputs(small, seed, type_ii)
        again = build_tree(posterior, inputs)
    except Exception:  # not a tree of this package's fits: saved whole
        return None
    if not _identical(again, tree):
        return None
    return small, {
        "seed": int(seed),
        "draws": inputs["draws"],
        "chains": inputs["chains"],
        "type_ii": type_ii,
        "dropped": dropped,
    }


def load(path):
    """Read an :class:`RVR`, :class:`RVC` or :class:`RVP` written by its ``save`` method.

    Parameters
    ----------
    path : str or path-like

    Returns
    -------
    RVR, RVC or RVP
        Whichever the file holds.

    Raises
    ------
    ValueError
        If the file was not written by ``save``, fails its checksum or holds an
        inconsistent model.
    """
    return load_estimator(path)
