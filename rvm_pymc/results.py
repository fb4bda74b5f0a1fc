"""One result schema for every fit: the weight posterior and the DataTree built from it.

Every fit ends in a :class:`WeightPosterior`, shown to ArviZ as one
:class:`xarray.DataTree` layout built by :func:`to_datatree` (``docs/design.md``,
section 3): ``posterior`` (``w`` or softmax's ``W``, and what a sampled fit samples),
``posterior_predictive`` and ``log_likelihood`` (``t_obs``, ``y_obs`` or ``counts_obs``),
``observed_data``, ``constant_data`` (``Phi`` in data units, ``y_offset``, and what a
type-II fit holds fixed) and ``sample_stats``.  A type-II fit's draws are exact draws of
its Gaussian weight posterior, antithetic across chain pairs.  :func:`predictions` adds
the ArviZ ``predictions`` groups for new inputs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple

import numpy as np
import xarray as xr
from scipy.special import expit, softmax

from rvm_pymc._core.gaussian import covariance_draws
from rvm_pymc._core.likelihoods import latent as _latent
from rvm_pymc._core.likelihoods import log_likelihood as _log_likelihood
from rvm_pymc._core.likelihoods import log_weight_prior as _log_weight_prior
from rvm_pymc._core.likelihoods import replicate as _replicate

__all__ = [
    "KINDS",
    "OBS_NAMES",
    "TYPE_II_LOO_NOTE",
    "FitInfo",
    "PointEstimates",
    "WeightPosterior",
    "latent_predictions",
    "predictions",
    "to_datatree",
]

KINDS = ("regression", "binary", "softmax", "poisson", "negative_binomial")
OBS_NAMES = {
    "regression": "t_obs",
    "binary": "y_obs",
    "softmax": "y_obs",
    "poisson": "counts_obs",
    "negative_binomial": "counts_obs",
}
"""The observed variable of each kind (the name of the PyMC model's likelihood)."""

TYPE_II_LOO_NOTE = (
    "PSIS-LOO (arviz.loo) of this type-II fit is not a valid estimate of the out-of-sample "
    "fit: its draws are of the Gaussian (Laplace) weight posterior at hyperparameters fitted "
    "on every point, so leaving a point out of the weights leaves it in the hyperparameters "
    "and the estimate is optimistic; for classifiers and counts the Gaussian's tails also "
    "make the importance ratios heavy-tailed (Pareto k above 0.7, p_loo even above the "
    "number of points). Compare fits by k-fold cross-validation with refitting "
    "(rvm_pymc.compare, elpd_kfold)."
)
"""The attribute ``rvm_loo_note`` of a type-II fit's ``log_likelihood`` group."""


@dataclass(frozen=True)
class FitInfo:
    """What a fit reports beside its :class:`WeightPosterior`.

    ``log_evidence`` (NaN for NUTS); ``n_iter``: iterations, or tuning steps plus
    draws (NUTS); ``converged``; ``library``: the layer that fitted; ``attrs``: more
    root attributes of the tree; ``sample_stats``: a sampler's ``(chain, draw)``
    statistics; ``model``: the fitted PyMC model (map/nuts, on the scaled problem).
    """

    log_evidence: float
    n_iter: int
    converged: bool
    library: str
    attrs: Mapping[str, Any] = field(default_factory=dict)
    sample_stats: Mapping[str, np.ndarray] | None = None
    model: Any = field(default=None, repr=False, compare=False)


class PointEstimates(NamedTuple):
    """Point summaries of a :class:`WeightPosterior`: the estimators' fitted attributes.

    ``coef``, ``sigma``: mean and covariance of the weights; ``alpha``:
    ``exp(log_alpha)`` (of its median for draws); ``beta``: the noise precision (its
    median) and ``noise_var``: the mean of ``1/beta`` (both None but for regression).
    """

    coef: np.ndarray
    sigma: np.ndarray
    alpha: np.ndarray
    beta: float | None
    noise_var: float | None


@dataclass(frozen=True)
class WeightPosterior:
    """The posterior of one fit over a set of bases, before it is drawn into a DataTree.

    Exactly one of (``mean``, ``cov``) and ``draws`` is given: a type-II fit is a
    Gaussian at fixed hyperparameters, a sampled fit is its draws.

    Attributes
    ----------
    kind : {"regression", "binary", "softmax", "poisson", "negative_binomial"}
    basis_names : tuple of str
        The bases (columns of the design matrix) it covers.
    log_alpha : ndarray
        ``(M,)`` for a type-II fit, ``(chain, draw, M)`` for a sampled one.
    log_beta : float, ndarray or None
        Log noise precision (regression): a float, or ``(chain, draw)`` draws.
    mean, cov : ndarray or None
        Gaussian weight posterior: mean ``(M,)`` or ``(M, K)``, covariance
        ``(M K, M K)``, class-major for softmax (block ``k`` holds the M
        weights of class ``k``).
    draws : ndarray or None
        Weight draws ``(chain, draw, M)`` or ``(chain, draw, M, K)``.
    y_offset : float
        Added to the latent mean of regression (the centring of the targets).
    log_dispersion : float, ndarray or None
        Log of the negative binomial's dispersion ``r``: a float, or
        ``(chain, draw)`` draws; None for the other kinds.
    """

    kind: str
    basis_names: tuple
    log_alpha: np.ndarray
    log_beta: Any = None
    mean: np.ndarray | None = None
    cov: np.ndarray | None = None
    draws: np.ndarray | None = None
    y_offset: float = 0.0
    log_dispersion: Any = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}; got {self.kind!r}")
        if (self.draws is None) == (self.mean is None):
            raise ValueError("give either the Gaussian (mean, cov) or the draws, not both")
        if self.mean is not None and self.cov is None:
            raise ValueError("a Gaussian posterior needs cov")
        m = len(self.basis_names)
        w = np.asarray(self.mean if self.draws is None else self.draws[0, 0])
        k = 1 if w.ndim == 1 else w.shape[-1]
        if (
            w.shape[0] != m
            or w.ndim != (2 if self.kind == "softmax" else 1)
            or (self.kind == "softmax" and k < 2)
        ):
            raise ValueError(
                f"the weights of a {self.kind} posterior over {m} bases must have shape "
                f"{(m, 'K >= 2') if self.kind == 'softmax' else (m,)}; got {w.shape}"
            )
        if self.cov is not None and np.shape(self.cov) != (m * k, m * k):
            raise ValueError(f"cov must have shape {(m * k, m * k)}; got {np.shape(self.cov)}")
        if np.shape(self.log_alpha)[-1:] != (m,):
            raise ValueError(f"log_alpha must end in {m} bases; got {np.shape(self.log_alpha)}")
        if (self.kind == "negative_binomial") != (self.log_dispersion is not None):
            raise ValueError("log_dispersion is given for a negative_binomial posterior only")

    @property
    def likelihood_parameter(self):
        """The log of the likelihood's own parameter: ``log_beta``, ``log_dispersion`` or None."""
        return self.log_dispersion if self.kind == "negative_binomial" else self.log_beta

    @property
    def is_type_ii(self) -> bool:
        """True for a Gaussian at fixed hyperparameters (reference, map)."""
        return self.draws is None

    @property
    def n_basis(self) -> int:
        return len(self.basis_names)

    def _n_classes(self) -> int:
        w = self.mean if self.draws is None else self.draws[0, 0]
        return 1 if w.ndim == 1 else int(w.shape[1])

    def weight_mean(self) -> np.ndarray:
        """Posterior mean of the weights, ``(M,)`` or ``(M, K)``."""
        if self.draws is None:
            return self.mean
        return self.draws.reshape(-1, *self.draws.shape[2:]).mean(axis=0)

    def weight_cov(self) -> np.ndarray:
        """Posterior covariance of the weights, class-major for softmax."""
        if self.draws is None:
            return self.cov
        flat = self.draws.reshape(-1, *self.draws.shape[2:])
        if flat.ndim == 3:
            flat = flat.transpose(0, 2, 1).reshape(flat.shape[0], -1)
        return np.atleast_2d(np.cov(flat, rowvar=False))

    def point_estimates(self) -> PointEstimates:
        """Mean and covariance of the weights, precisions and noise (docs/design.md section 3)."""
        la = np.asarray(self.log_alpha, dtype=float)
        if not self.is_type_ii:
            la = np.median(la.reshape(-1, la.shape[-1]), axis=0)
        beta = noise_var = None
        if self.log_beta is not None:
            b = np.exp(np.asarray(self.log_beta, dtype=float))
            beta, noise_var = float(np.median(b)), float(np.mean(1.0 / b))
        return PointEstimates(self.weight_mean(), self.weight_cov(), np.exp(la), beta, noise_var)

    def to_data_units(self, col_scale, t_mean: float = 0.0, t_sd: float = 1.0) -> WeightPosterior:
        """The posterior of a fit on ``Phi / col_scale``, ``(t - t_mean) / t_sd`` in data units.

        ``w = w_s t_sd / col_scale``, ``log alpha = log alpha_s + 2 log(col_scale / t_sd)``,
        ``log beta = log beta_s - 2 log t_sd``, ``y_offset = t_mean``.
        """
        r = np.asarray(col_scale, dtype=float)
        f = t_sd / r
        k = self._n_classes()
        changes: dict[str, Any] = {
            "log_alpha": np.asarray(self.log_alpha) + 2.0 * np.log(r / t_sd),
            "y_offset": float(t_mean) + self.y_offset * t_sd,
        }
        if self.log_beta is not None:
            changes["log_beta"] = np.asarray(self.log_beta) - 2.0 * np.log(t_sd)
            if np.ndim(changes["log_beta"]) == 0:
                changes["log_beta"] = float(changes["log_beta"])
        fw = f if k == 1 else f[:, None]
        if self.draws is None:
            ff = np.tile(f, k)
            changes["mean"] = self.mean * fw
            changes["cov"] = self.cov * ff[:, None] * ff[None, :]
        else:
            changes["draws"] = self.draws * fw
        return replace(self, **changes)

    def restrict(self, idx) -> WeightPosterior:
        """The marginal posterior of the bases ``idx`` (positions in ``basis_names``)."""
        idx = np.asarray(idx, dtype=np.intp)
        m, k = self.n_basis, self._n_classes()
        names = tuple(self.basis_names[i] for i in idx)
        la = np.asarray(self.log_alpha)[..., idx]
        if self.draws is None:
            flat = (np.arange(k)[:, None] * m + idx[None, :]).reshape(-1)
            changes = {"mean": self.mean[idx], "cov": self.cov[np.ix_(flat, flat)]}
        else:
            changes = {"draws": self.draws[:, :, idx]}
        return replace(self, basis_names=names, log_alpha=la, **changes)


def _dataset(variables: Mapping[str, tuple], coords: Mapping[str, Any]) -> xr.Dataset:
    ds = xr.Dataset({k: xr.DataArray(v, dims=d) for k, (d, v) in variables.items()})
    used = {d for var in ds.data_vars.values() for d in var.dims}
    ds = ds.assign_coords({d: coords[d] for d in used if d in coords})
    ds.attrs["inference_library"] = "rvm_pymc"
    return ds


def _type_ii_draws(post: WeightPosterior, draws: int, chains: int, rng) -> np.ndarray:
    """``(chains, draws, M[, K])`` Gaussian draws, antithetic across chain pairs."""
    k = post._n_classes()
    if chains % 2 == 0:
        half = covariance_draws(post.mean, post.cov, draws * chains // 2, rng)
        half = half.reshape(chains // 2, draws, *half.shape[1:])
        pairs = np.stack([half, 2.0 * post.mean - half], axis=1)
        out = pairs.reshape(chains, draws, *half.shape[2:])
    else:
        out = covariance_draws(post.mean, post.cov, draws * chains, rng)
        out = out.reshape(chains, draws, *out.shape[1:])
    return out if k > 1 else out.reshape(chains, draws, post.n_basis)


def to_datatree(
    post: WeightPosterior,
    *,
    Phi: np.ndarray,
    target: np.ndarray,
    classes: Sequence | None = None,
    draws: int = 500,
    chains: int = 2,
    random_state: np.random.Generator | int | None = None,
    sample_stats: Mapping[str, np.ndarray] | None = None,
    extra_posterior: Mapping[str, tuple] | None = None,
    latent: np.ndarray | None = None,
    constant_data: Mapping[str, tuple] | None = None,
    attrs: Mapping[str, Any] | None = None,
) -> xr.DataTree:
    """Build the DataTree of the result schema from a posterior.

    Parameters
    ----------
    post : WeightPosterior
        In data units, over the bases of ``Phi``'s columns.
    Phi : ndarray of shape (N, M)
        Training design matrix of those bases (data units).
    target : ndarray of shape (N,)
        Regression targets, or class codes ``0..K-1``.
    classes : sequence, optional
        Class labels (classification): the ``class`` coordinate.
    draws, chains : int
        Draws per chain of a type-II fit (a sampled fit keeps its own).
    random_state : numpy.random.Generator, int or None
        Seeds the Gaussian draws and the posterior predictive replicates.
    sample_stats : mapping, optional
        ``(chain, draw)`` arrays of a sampler (replaces ``lp``); only numbers
        and booleans are kept.
    extra_posterior : mapping, optional
        More sampled variables, ``name -> (dims, values)`` with leading
        ``("chain", "draw")`` dims (e.g. ``log_length_scale``).
    latent : ndarray of shape (chain, draw, N), optional
        The latent mean of every draw, when the design matrix differs between
        draws (the RBF-width model); ``Phi`` is then None.
    constant_data : mapping, optional
        More constant data, ``name -> (dims, values)`` (e.g. ``X``, ``centres``).
    attrs : mapping, optional
        Root attributes.

    Returns
    -------
    xarray.DataTree
    """
    rng = np.random.default_rng(random_state)
    target = np.asarray(target)
    if Phi is not None:
        Phi = np.asarray(Phi, dtype=float)
        if Phi.shape != (target.shape[0], post.n_basis):
            raise ValueError(
                f"Phi has shape {Phi.shape}; expected ({target.shape[0]}, {post.n_basis})"
            )
    elif latent is None:
        raise ValueError("give Phi, or the latent mean of every draw")
    kind = post.kind
    w = _type_ii_draws(post, draws, chains, rng) if post.is_type_ii else post.draws
    n_chain, n_draw = w.shape[:2]
    F = _latent(kind, Phi, w, post.y_offset) if latent is None else np.asarray(latent)
    ll = _log_likelihood(kind, F, target, post.likelihood_parameter)
    obs_name = OBS_NAMES[kind]
    wname = "W" if kind == "softmax" else "w"
    cd = ("chain", "draw")
    coords: dict[str, Any] = {
        "chain": np.arange(n_chain),
        "draw": np.arange(n_draw),
        "basis": [str(b) for b in post.basis_names],
        "obs": np.arange(target.shape[0]),
    }
    if classes is not None:
        coords["class"] = [str(c) for c in classes]
    wdims = (*cd, "basis", "class") if kind == "softmax" else (*cd, "basis")
    posterior = {wname: (wdims, w)}
    constant = dict(constant_data or {})
    if Phi is not None:
        constant["Phi"] = (("obs", "basis"), Phi)
    if kind == "regression":
        constant["y_offset"] = ((), float(post.y_offset))
    held, lead = (constant, ()) if post.is_type_ii else (posterior, cd)
    held["log_alpha"] = ((*lead, "basis"), np.asarray(post.log_alpha, dtype=float))
    for name in ("log_beta", "log_dispersion"):
        value = getattr(post, name)
        if value is not None:
            held[name] = (lead, float(value) if post.is_type_ii else np.asarray(value, float))
    posterior.update(extra_posterior or {})
    if sample_stats is None:
        la = np.broadcast_to(
            np.asarray(post.log_alpha, dtype=float), (n_chain, n_draw, w.shape[2])
        )
        sample_stats = {"lp": ll.sum(-1) + _log_weight_prior(w, la)}
    groups = {
        "posterior": _dataset(posterior, coords),
        "posterior_predictive": _dataset(
            {obs_name: ((*cd, "obs"), _replicate(kind, F, post.likelihood_parameter, rng))},
            coords,
        ),
        "log_likelihood": _dataset({obs_name: ((*cd, "obs"), ll)}, coords),
        "sample_stats": _dataset(
            {
                k: (cd, np.asarray(v))
                for k, v in sample_stats.items()
                if np.asarray(v).dtype.kind in "biuf"
            },
            coords,
        ),
        "observed_data": _dataset({obs_name: (("obs",), _observed(kind, target))}, coords),
        "constant_data": _dataset(constant, coords),
    }
    if post.is_type_ii:
        groups["log_likelihood"].attrs["rvm_loo_note"] = TYPE_II_LOO_NOTE
    if classes is not None:
        groups["observed_data"] = groups["observed_data"].assign_coords({"class": coords["class"]})
    tree = xr.DataTree.from_dict(groups)
    tree.attrs.update(dict(attrs or {}))
    return tree


def _observed(kind: str, target: np.ndarray) -> np.ndarray:
    """The observed targets as stored: whole-number counts as int64, as their replicates."""
    if (
        kind in ("poisson", "negative_binomial")
        and target.dtype.kind == "f"
        and np.all(target == np.round(target))
        and np.all(np.abs(target) < 2.0**53)
    ):
        return target.astype(np.int64)
    return target


def _kind_of(tree: xr.DataTree) -> str:
    post = tree["posterior"]
    if "W" in post:
        return "softmax"
    if "counts_obs" in tree["observed_data"]:
        nb = "log_dispersion" in post or "log_dispersion" in tree["constant_data"]
        return "negative_binomial" if nb else "poisson"
    return "regression" if "t_obs" in tree["observed_data"] else "binary"


def predictions(tree: xr.DataTree, Phi_new: np.ndarray, *, random_state=None) -> xr.DataTree:
    """The ArviZ ``predictions`` groups for new inputs, from the draws of a result tree.

    Parameters
    ----------
    tree : xarray.DataTree
        A tree of the result schema (:func:`to_datatree`).
    Phi_new : ndarray of shape (n, M)
        Design matrix of the new inputs over the bases of ``tree`` (data units).
    random_state : numpy.random.Generator, int or None
        Seeds the replicates.

    Returns
    -------
    xarray.DataTree
        ``predictions``: replicates of the observed variable and the latent
        mean ``mu`` (the rate for counts) or probabilities ``p`` of every draw;
        ``predictions_constant_data``: ``Phi``.

    Raises
    ------
    ValueError
        For a tree whose likelihood is its own PyMC model's.
    """
    if tree.attrs.get("likelihood") == "model":
        raise ValueError(
            "the tree's likelihood is that of its own PyMC model, not the RVM's: predict with "
            "that model (pm.set_data, then pm.sample_posterior_predictive)"
        )
    rng = np.random.default_rng(random_state)
    kind = _kind_of(tree)
    post, const = tree["posterior"], tree["constant_data"]
    if "Phi" not in const:
        raise ValueError(
            "the tree has no constant_data.Phi: its design matrix changes between draws "
            "(the RBF-width model), so predictions need the latent mean of each draw "
            "(latent_predictions), not Phi_new"
        )
    Phi_new = np.asarray(Phi_new, dtype=float)
    n_basis = post.sizes["basis"]
    if Phi_new.ndim != 2 or Phi_new.shape[1] != n_basis:
        raise ValueError(f"Phi_new must have {n_basis} columns; got shape {Phi_new.shape}")
    w = np.asarray(post["W" if kind == "softmax" else "w"].values, dtype=float)
    y_offset = float(const["y_offset"].values) if "y_offset" in const else 0.0
    F = _latent(kind, Phi_new, w, y_offset)
    return latent_predictions(tree, F, {"Phi": (("obs", "basis"), Phi_new)}, random_state=rng)


def latent_predictions(
    tree: xr.DataTree, F: np.ndarray, constant_data: Mapping[str, tuple], *, random_state=None
) -> xr.DataTree:
    """The ArviZ ``predictions`` groups from the latent mean of every draw at new inputs.

    Parameters
    ----------
    tree : xarray.DataTree
        A tree of the result schema.
    F : ndarray of shape (chain, draw, n) or (chain, draw, n, K)
        The latent mean of each draw of ``tree`` at ``n`` new inputs (regression:
        ``y_offset`` included).
    constant_data : mapping
        ``predictions_constant_data``, ``name -> (dims, values)``.
    random_state : numpy.random.Generator, int or None
        Seeds the replicates.

    Returns
    -------
    xarray.DataTree
    """
    rng = np.random.default_rng(random_state)
    kind = _kind_of(tree)
    post, const = tree["posterior"], tree["constant_data"]
    F = np.asarray(F, dtype=float)
    name = {"regression": "log_beta", "negative_binomial": "log_dispersion"}.get(kind)
    log_beta = None if name is None else (post if name in post else const)[name].values
    obs_name = OBS_NAMES[kind]
    cd = ("chain", "draw")
    coords: dict[str, Any] = {
        "chain": post["chain"].values,
        "draw": post["draw"].values,
        "basis": post["basis"].values,
        "obs": np.arange(F.shape[2]),
    }
    pred = {obs_name: ((*cd, "obs"), _replicate(kind, F, log_beta, rng))}
    if kind == "regression":
        pred["mu"] = ((*cd, "obs"), F)
    elif kind in ("poisson", "negative_binomial"):
        pred["mu"] = ((*cd, "obs"), np.exp(F))
    elif kind == "binary":
        pred["p"] = ((*cd, "obs"), expit(F))
    else:
        coords["class"] = post["class"].values
        pred["p"] = ((*cd, "obs", "class"), softmax(F, axis=-1))
    return xr.DataTree.from_dict(
        {
            "predictions": _dataset(pred, coords),
            "predictions_constant_data": _dataset(dict(constant_data), coords),
        }
    )
