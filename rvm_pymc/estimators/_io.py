"""Save and load fitted estimators without pickle: the DataTree in netCDF plus JSON attributes.

File layout (format versions 3 and 4)
-------------------------------------
The one source of truth is the fit's ``idata_`` (groups ``posterior``,
``log_likelihood``, ``constant_data``, ...) and the constructor parameters as
JSON, as in pymc-marketing's ``ModelBuilder``.  Everything the estimator reads
from its posterior (``coef_``, ``sigma_``, ``alpha_``, ``beta_``,
``noise_var_``, ``y_offset_``, ``active_names_``, ``n_iter_``,
``converged_``, ``log_evidence_``) is rebuilt from the tree on load, not
stored a second time.  One more group, ``rvm_estimator``, holds only what the
tree does not: the Gaussian of a type-II fit (``weight_mean``, ``weight_cov``;
the tree holds its draws), the active columns of the full basis and the
relevance vectors (``active_``, ``relevance_indices_``,
``relevance_vectors_``), ``basis_scale_``, the training data of
``predictive="rvm*"`` (``X_train_``, ``y_train_``), the class labels in their own
dtype (``classes_``; the tree's ``class`` coordinate is text), ``cv_path_`` and
``evidence_path_``.  On the root, the attributes

``rvm_pymc_format``, ``rvm_pymc_format_version``, ``rvm_estimator_class``
    what the file is;
``rvm_params``, ``rvm_fitted``
    the constructor parameters, and the scalars that are in no group
    (``y_scale_``, ``gamma_``, ``n_features_in_``, ...), as JSON;
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
:mod:`rvm_pymc._core.files`: the file is serialised in memory and its bytes
written with plain file I/O (with ``netCDF4`` the library writes the temporary
file), so a full disk raises an :class:`OSError` naming ``path``.

Version 4 leaves out the draws that the rest of the file defines
(:mod:`rvm_pymc.estimators._compact`): a type-II fit's weight draws and ``lp``
(seeded draws from ``weight_mean``, ``weight_cov``), and every fit's
``log_likelihood`` and ``posterior_predictive``; the groups stay, with their
coordinates and attributes, and ``rvm_fitted`` records the seed, the draws
and chains, and the variables left out (key ``idata_rebuilt``).  A loaded
estimator builds them on first access of ``idata_``, as a fitted one does.
Save writes version 4 only when the draws made again from the compact tree are
identical to the fit's (checked as it saves), and version 3 (``idata_`` whole)
otherwise: a tree changed after the fit, or a model loaded from a version-3
file (whose seed is unknown).  A reference fit on 93 rows: 6.5 MB in version
3, under 0.1 MB in version 4.

Format version 2 stored the fitted arrays (``coef_``, ``sigma_``, ``alpha_``,
...) and scalars beside the tree; it is still read (:func:`_from_version_2`).
Version 1 (no attributes in the checksum) is refused with a message saying so.
"""

from __future__ import annotations

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
from rvm_pymc._core.version import VERSION
from rvm_pymc.basis import Basis, PrecomputedBasis
from rvm_pymc.estimators._checksum import digest
from rvm_pymc.estimators._compact import compact, tree_inputs
from rvm_pymc.estimators._json import params_from_json, params_to_json
from rvm_pymc.results import WeightPosterior

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
FORMAT_VERSION = 4
WHOLE_VERSION = 3
"""The version of a file that holds ``idata_`` whole (its draws not made again on load)."""
READABLE_VERSIONS = (2, 3, 4)
REBUILT = "idata_rebuilt"
"""Key of the fitted JSON of a version-4 file: how load makes the draws left out again."""
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
    """SHA-256 of everything :func:`load_estimator` reads from ``tree`` (hex), as ``version``."""
    return digest(tree, f"{FORMAT}/{version}/{cls_name}", params, fitted)


_STATE_ARRAYS = ("active_", "relevance_indices_", "relevance_vectors_", "basis_scale_")
"""Fitted arrays that are in no group of the tree (the ``rvm_estimator`` group holds them)."""
_OPTIONAL_ARRAYS = ("X_train_", "y_train_")  # predictive="rvm*" only; in the same group
_FITTED = ("y_scale_", "gamma_", "n_features_in_")
"""Fitted scalars that are in no group of the tree (the ``rvm_fitted`` JSON holds them)."""

# ----------------------------------------------------------------------- state


def _state(est) -> tuple[xr.Dataset, dict[str, Any]]:
    """What the tree of a fitted estimator does not hold: arrays (a Dataset) and JSON scalars."""
    arrays = {name: np.asarray(getattr(est, name)) for name in _STATE_ARRAYS}
    arrays.update({k: np.asarray(getattr(est, k)) for k in _OPTIONAL_ARRAYS if hasattr(est, k)})
    post = est.posterior_
    if post.is_type_ii:  # the tree holds its draws, not the Gaussian they are drawn from
        arrays["weight_mean"], arrays["weight_cov"] = post.mean, post.cov
    fitted: dict[str, Any] = {
        k: (v.item() if isinstance(v, np.generic) else v)
        for k in _FITTED
        if (v := getattr(est, k)) is not None or k == "gamma_"
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
    if made is not None:  # the draws are left out; load makes them again, identically
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


ESTIMATOR_NAMES = ("RVR", "RVC", "RVP")
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
    if not (isinstance(version, int | np.integer) and int(version) in READABLE_VERSIONS):
        raise ValueError(_version_message(shown, version))
    version = int(version)
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
        digest = _digest(tree, name, params_json, fitted_json, version)
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
    """Why a file of format ``version`` is refused, and what to do: upgrade or re-fit."""
    *first, last = map(str, READABLE_VERSIONS)
    readable = f"{', '.join(first)} and {last}" if first else last
    said = f"{shown} has format version {version!r}; rvm_pymc {VERSION} reads versions {readable}"
    if not isinstance(version, int | np.integer):
        return f"{said} only, as an integer: the header is damaged"
    if int(version) > FORMAT_VERSION:
        return f"{said} only: the file was saved by a newer rvm_pymc; upgrade rvm_pymc to load it"
    return f"{said} only: the file was saved by an older rvm_pymc; re-fit and save the model"


def _from_version_2(state: dict, fitted: dict, method: str) -> tuple[dict, dict]:
    """The contents of a version-2 file in the names of version 3.

    Version 2 stored ``coef_``/``sigma_`` (the Gaussian of a type-II fit; for
    NUTS the moments of its draws, which are in the tree) and the fitted
    scalars; what the tree holds is now read from the tree, the rest is kept.
    """
    state = dict(state)
    coef, sigma = state.pop("coef_", None), state.pop("sigma_", None)
    state.pop("alpha_", None)
    if method != "nuts" and coef is not None:
        state["weight_mean"], state["weight_cov"] = coef, sigma
    return state, dict(fitted)


def _restore(est, tree: xr.DataTree, fitted: dict[str, Any], path, version: int) -> None:
    """Set every fitted attribute of ``est`` from the tree of a file and its JSON scalars."""
    if STATE not in tree.children:
        raise _mismatch(path, f"it has no {STATE!r} group (the relevance vectors and scales)")
    state = {str(k): v.values for k, v in tree[STATE].to_dataset().data_vars.items()}
    if version == 2:
        state, fitted = _from_version_2(state, fitted, est.method)
    missing = [k for k in _FITTED if k not in fitted]
    missing += [k for k in _STATE_ARRAYS if k not in state]
    if missing:
        raise _mismatch(path, f"it lacks the fitted {', '.join(missing)}")
    idata = tree.copy()
    del idata[STATE]
    for key in _HEADER:  # the file's own header; the fit's attributes stay
        idata.attrs.pop(key, None)
    if idata.attrs.get("method") != est.method:
        raise _mismatch(
            path, f"idata_ was fitted by {idata.attrs.get('method')!r}, params say {est.method!r}"
        )
    for name in _STATE_ARRAYS:
        arr = np.asarray(state[name])
        if name in ("active_", "relevance_indices_"):
            arr = arr.astype(np.intp)
        setattr(est, name, arr)
    for name in set(_OPTIONAL_ARRAYS) & set(state):
        setattr(est, name, np.asarray(state[name], dtype=float))
    for k in _FITTED:
        setattr(est, k, fitted[k])
    if "feature_names_in_" in fitted:
        est.feature_names_in_ = np.asarray(fitted["feature_names_in_"], dtype=object)
    if "classes_" in state:
        dtype = fitted["classes_dtype"]
        est.classes_ = np.asarray(state["classes_"]).astype(
            object if dtype == "object" else np.dtype(dtype)
        )
    if "cv_path_gamma" in state:  # gamma="cv", the default since it was made
        est.cv_path_ = {k[8:]: v for k, v in state.items() if k.startswith("cv_path_")}
    if "evidence_path_gamma" in state:  # "converged" since format 3, then "noise_at_bound"
        est.evidence_path_ = {
            k[14:]: v if k[14:] in ("gamma", "log_evidence") else v.astype(bool)
            for k, v in state.items()
            if k.startswith("evidence_path_")
        }
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
    if "interpolates" in idata.attrs:  # saved since the rule
        est.interpolates_ = bool(idata.attrs["interpolates"])
    else:  # a file from before it: the rule again, on the observed rows
        n_train = int(next(iter(idata["observed_data"].data_vars.values())).size)
        at_bound = bool(idata.attrs.get("noise_at_bound", False))
        est.interpolates_ = est._interpolates(n_train, at_bound)
    est.model_ = None  # a PyMC model is not saved (as after unpickling)
    rebuilt = fitted.get(REBUILT) if version >= 4 else None
    if rebuilt is None:
        est.idata_ = idata
    else:  # as after a fit: idata_ is built from these on first access
        _check_rebuilt(rebuilt, idata, path)
        est._tree_inputs = tree_inputs(idata, int(rebuilt["seed"]), bool(rebuilt["type_ii"]))
        est.idata_ = None
    _check_consistent(est, path)


def _check_rebuilt(rebuilt: Mapping, idata: xr.DataTree, path) -> None:
    """What a version-4 file says of its left-out draws agrees with its tree."""
    post = idata["posterior"]
    sizes = (int(post.sizes.get("chain", -1)), int(post.sizes.get("draw", -1)))
    if sizes != (int(rebuilt["chains"]), int(rebuilt["draws"])):
        raise _mismatch(path, "the draws to make again and the posterior's coordinates differ")
    for group, names in dict(rebuilt["dropped"]).items():
        if group not in idata.children or set(names) & set(idata[group].data_vars):
            raise _mismatch(path, f"the group {group!r} does not match the draws left out")


def _posterior(est, tree: xr.DataTree, state: dict):
    """The estimator's one posterior, read from its tree (and the Gaussian of a type-II fit)."""
    post, const = tree["posterior"], tree["constant_data"]
    regression = est._kind == "regression"
    kind = est._kind_of_fit()
    common = {
        "kind": kind,
        "basis_names": tuple(str(b) for b in post["basis"].values),
        "y_offset": float(const["y_offset"].values) if regression else 0.0,
    }
    if est.method == "nuts":
        return WeightPosterior(
            **common,
            log_alpha=np.asarray(post["log_alpha"].values, dtype=float),
            log_beta=np.asarray(post["log_beta"].values, dtype=float) if regression else None,
            draws=np.asarray(post["W" if kind == "softmax" else "w"].values, dtype=float),
        )
    return WeightPosterior(
        **common,
        log_alpha=np.asarray(const["log_alpha"].values, dtype=float),
        log_beta=float(const["log_beta"].values) if regression else None,
        mean=np.asarray(state["weight_mean"], dtype=float),
        cov=np.asarray(state["weight_cov"], dtype=float),
    )


def _check_consistent(est, path) -> None:
    """What the construction of the posterior does not check: the basis and the classes."""
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
