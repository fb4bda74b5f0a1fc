"""A Metropolis move that swaps two neighbouring bases, beside PyMC's NUTS.

Nearly equal neighbouring columns give the joint posterior a mode for each choice of the
relevant one, which NUTS joins badly (``benchmarks/README.md``, "Basis swaps").
:class:`BasisSwap` exchanges every per-basis value of two bases ``i``, ``j`` (its own
inverse, volume-preserving), the pair drawn among each basis and its :data:`NEIGHBOURS`
most similar columns with probability proportional to ``EPS + max(r_i, r_j)``,
``r = 1 / (1 + alpha)``; Metropolis-Hastings accepts with ``min(1, p(x') q(x | x') /
(p(x) q(x' | x)))``.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np
import pymc as pm
from pymc.step_methods.compound import BlockedStep, Competence, StepMethodState
from pymc.step_methods.state import dataclass_state
from pymc.util import get_random_generator

from rvm_pymc._core.likelihoods import log_likelihood
from rvm_pymc.inference.defaults import SWAP_KINDS

__all__ = [
    "EPS",
    "NEIGHBOURS",
    "BasisSwap",
    "FullDensity",
    "LinearLikelihood",
    "linear_likelihood",
    "neighbour_pairs",
    "nuts_with_swaps",
    "swap_axes",
]

NEIGHBOURS = 3
"""Each basis is paired with this many of its most similar columns (cosine)."""
EPS = 0.02
"""Floor of a pair's selection weight (pairs of two pruned bases are still proposed)."""
CHECK_SWAPS = 4
"""Swaps at which :func:`linear_likelihood` checks its split."""


def neighbour_pairs(Phi: np.ndarray, k: int = NEIGHBOURS) -> np.ndarray:
    """Pairs ``(i, j)``, ``i < j``, of each column of ``Phi`` and its ``k`` most similar others."""
    Phi = np.asarray(Phi, dtype=float)
    m = Phi.shape[1]
    if m < 2:
        return np.empty((0, 2), dtype=np.intp)
    norms = np.linalg.norm(Phi, axis=0)
    U = Phi / np.where(norms > 0, norms, 1.0)
    C = U.T @ U
    np.fill_diagonal(C, -np.inf)
    k = min(k, m - 1)
    near = np.argpartition(-C, k - 1, axis=1)[:, :k]
    i = np.repeat(np.arange(m), k)
    pairs = np.sort(np.column_stack([i, near.ravel()]), axis=1)
    return np.unique(pairs, axis=0).astype(np.intp)


def swap_axes(model: pm.Model, dim: str = "basis") -> dict[str, int]:
    """The free value variables of ``model`` with a ``dim`` axis, and that axis."""
    out = {}
    for rv in model.free_RVs:
        dims = model.named_vars_to_dims.get(rv.name) or ()
        if dim in dims:
            out[model.rvs_to_values[rv].name] = list(dims).index(dim)
    return out


def exchange(arrays: dict[str, np.ndarray], axes: dict[str, int], pair: np.ndarray) -> None:
    """Swap, in place, the two bases ``pair`` of each array named in ``axes`` along its axis."""
    for name, axis in axes.items():
        lead = (slice(None),) * axis
        arrays[name][(*lead, pair)] = arrays[name][(*lead, pair[::-1])]


def _trusted(compile_kwargs: dict | None) -> dict:
    """Compile options with ``trust_input``."""
    return {**(compile_kwargs or {}), "trust_input": True}


class FullDensity:
    """A proposal's log density: the model's whole log density, compiled once."""

    def __init__(self, model: pm.Model, compile_kwargs: dict | None = None):
        self._logp = model.compile_fn(
            model.logp(), inputs=model.value_vars, point_fn=False, **_trusted(compile_kwargs)
        )

    def start(self, args: list[np.ndarray]) -> float:
        """The log density at the draw's point (``args``: the values in the model's order)."""
        return float(self._logp(*args))

    def propose(self, args: list[np.ndarray], pair: np.ndarray) -> float:
        """The log density after ``pair`` was exchanged in ``args`` (in place)."""
        return float(self._logp(*args))

    def accept(self, pair: np.ndarray) -> None:
        """The last proposal was accepted (nothing kept)."""


class LinearLikelihood(FullDensity):
    """A proposal's log density as prior plus a likelihood of ``F = Phi @ w``, updated by
    ``(Phi_i - Phi_j) (w_j - w_i)`` a swap (build it with :func:`linear_likelihood`)."""

    def __init__(self, model: pm.Model, kind: str, compile_kwargs: dict | None = None):
        weights = "W" if kind == "softmax" else "w"
        ck = _trusted(compile_kwargs)
        self.kind = kind
        self._prior = model.compile_fn(
            model.logp(vars=model.free_RVs), inputs=model.value_vars, point_fn=False, **ck
        )
        (w,) = model.replace_rvs_by_values([model[weights]])
        self._w = model.compile_fn(
            w, inputs=model.value_vars, point_fn=False, on_unused_input="ignore", **ck
        )
        self.Phi = np.asarray(model["Phi"].get_value(), dtype=float)
        self._columns = np.ascontiguousarray(self.Phi.T)
        self.target = np.asarray(model["y"].get_value())

    def _log_likelihood(self, F: np.ndarray) -> float:
        return float(log_likelihood(self.kind, F, self.target, None).sum())

    def start(self, args: list[np.ndarray]) -> float:
        self.w = np.array(self._w(*args), dtype=float)
        self.F = self.Phi @ self.w
        return self._log_likelihood(self.F) + float(self._prior(*args))

    def propose(self, args: list[np.ndarray], pair: np.ndarray) -> float:
        i, j = pair
        step = self._columns[i] - self._columns[j]
        dw = self.w[j] - self.w[i]
        self._F_new = self.F + (np.multiply.outer(step, dw) if self.w.ndim == 2 else step * dw)
        return self._log_likelihood(self._F_new) + float(self._prior(*args))

    def accept(self, pair: np.ndarray) -> None:
        self.F = self._F_new
        self.w[pair] = self.w[pair[::-1]]


def linear_likelihood(
    model: pm.Model,
    kind: str,
    axes: dict[str, int],
    compile_kwargs: dict | None = None,
    *,
    rtol: float = 1e-9,
) -> LinearLikelihood | None:
    """A :class:`LinearLikelihood` of a classifier with the builders' names if it agrees with
    the whole log density (``rtol``) at a random point and after :data:`CHECK_SWAPS` swaps,
    else None."""
    weights = "W" if kind == "softmax" else "w"
    if kind not in SWAP_KINDS or any(n not in model.named_vars for n in ("Phi", "y", weights)):
        return None
    if [rv.name for rv in model.observed_RVs] != ["y_obs"]:
        return None
    rng = np.random.default_rng(0)
    try:
        split = LinearLikelihood(model, kind, compile_kwargs)
        full = FullDensity(model, compile_kwargs)
        point = model.initial_point()
        arrays = {
            v.name: np.asarray(
                point[v.name] + rng.normal(size=np.shape(point[v.name])), dtype=v.dtype
            )
            for v in model.value_vars
        }
        args = [arrays[v.name] for v in model.value_vars]
        m = split.Phi.shape[1]
        pairs = [np.array([0, m - 1], dtype=np.intp)]
        pairs += [np.sort(rng.choice(m, 2, replace=False)) for _ in range(CHECK_SWAPS - 1)]
        checks = [(full.start(args), split.start(args))]
        for pair in pairs:
            exchange(arrays, axes, pair)
            checks.append((full.propose(args, pair), split.propose(args, pair)))
            split.accept(pair)
    except (ValueError, TypeError, IndexError):
        return None
    if all(abs(a - b) <= rtol * max(1.0, abs(a)) for a, b in checks):
        return split
    return None


@dataclass_state
class BasisSwapState(StepMethodState):
    n_proposals: int


class BasisSwap(BlockedStep):
    """Metropolis-Hastings swaps of two neighbouring bases' values."""

    name = "basis_swap"
    stats_dtypes_shapes: ClassVar[dict[str, Any]] = {"swap_rate": (np.float64, [])}
    _state_class = BasisSwapState

    def __init__(
        self,
        vars,
        *,
        axes: dict[str, int],
        pairs: np.ndarray,
        n_proposals: int,
        relevance: str | None = "log_alpha",
        model=None,
        rng=None,
        compile_kwargs: dict | None = None,
        density: FullDensity | LinearLikelihood | None = None,
        blocked: bool = True,
    ):
        model = pm.modelcontext(model)
        self.vars = list(vars)
        self.axes = dict(axes)
        self.pairs = np.asarray(pairs, dtype=np.intp)
        self.n_proposals = int(n_proposals)
        self.relevance = relevance
        self._inputs = list(model.value_vars)
        self._names = [v.name for v in self._inputs]
        self._density = density or FullDensity(model, compile_kwargs)
        self.rng = get_random_generator(rng)
        pairs_of: list[set[int]] = [set() for _ in range(int(self.pairs.max(initial=-1)) + 1)]
        for k, (i, j) in enumerate(self.pairs):
            pairs_of[i].add(k)
            pairs_of[j].add(k)
        # the pairs whose selection weight a swap of pair k can change
        self._touched = [
            np.array(sorted(pairs_of[i] | pairs_of[j]), dtype=np.intp) for i, j in self.pairs
        ]

    def _relevance(self, arrays: dict[str, np.ndarray]) -> np.ndarray | None:
        if self.relevance is None:
            return None
        return 1.0 / (1.0 + np.exp(np.clip(arrays[self.relevance], -50.0, 50.0)))

    def _weights(self, r: np.ndarray | None, pairs: np.ndarray) -> np.ndarray:
        if r is None:
            return np.ones(len(pairs))
        return EPS + np.maximum(r[pairs[:, 0]], r[pairs[:, 1]])

    def _exchange(self, arrays: dict[str, np.ndarray], pair: np.ndarray) -> None:
        exchange(arrays, self.axes, pair)

    def step(self, point: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """One draw's ``n_proposals`` swaps; returns the new point and the share accepted."""
        arrays = {v.name: np.array(point[v.name], dtype=v.dtype, copy=True) for v in self._inputs}
        args = [arrays[n] for n in self._names]
        logp = self._density.start(args)
        r = self._relevance(arrays)

        def swap(pair):
            self._exchange(arrays, pair)
            if r is not None:
                r[pair] = r[pair[::-1]]

        weights = self._weights(r, self.pairs)
        cum = np.cumsum(weights)
        total = cum[-1]
        accepted = 0
        for u_pick, u_accept in self.rng.random((self.n_proposals, 2)):
            k = int(np.searchsorted(cum, u_pick * total, side="right"))
            pair = self.pairs[k]
            swap(pair)
            touched = self._touched[k]
            new_w = self._weights(r, self.pairs[touched])
            new_total = total + (new_w.sum() - weights[touched].sum())
            new = self._density.propose(args, pair)
            log_u = math.log(u_accept) if u_accept > 0.0 else -math.inf  # random() can be 0
            if log_u < new - logp + math.log(total) - math.log(new_total):
                self._density.accept(pair)
                logp = new
                weights[touched] = new_w
                cum = np.cumsum(weights)
                total = cum[-1]
                accepted += 1
            else:
                swap(pair)
        return {**point, **arrays}, [{"swap_rate": accepted / max(self.n_proposals, 1)}]

    @staticmethod
    def competence(var, has_grad):
        """Never chosen by PyMC on its own."""
        return Competence.INCOMPATIBLE


def nuts_with_swaps(
    model: pm.Model,
    *,
    n_proposals: int,
    chains: int,
    tune: int,
    random_seed: Any,
    target_accept: float,
    initvals: Any,
    compile_kwargs: dict | None,
    kind: str | None = None,
) -> tuple[list[dict], list[BlockedStep]] | None:
    """A :class:`BasisSwap` and NUTS started as ``pm.sample`` starts it; None if none applies."""
    axes = swap_axes(model)
    if n_proposals <= 0 or not axes or "Phi" not in model.named_vars:
        return None
    pairs = neighbour_pairs(np.asarray(model["Phi"].get_value()), NEIGHBOURS)
    if len(pairs) == 0:
        return None
    seeds = [int(rng.integers(2**30)) for rng in get_random_generator(random_seed).spawn(chains)]
    initial, nuts = pm.init_nuts(
        init="auto",
        chains=chains,
        model=model,
        random_seed=seeds,
        progressbar=False,
        tune=tune,
        initvals=initvals,
        compile_kwargs=compile_kwargs,
        target_accept=target_accept,
    )
    log_alpha = model.rvs_to_values[model["log_alpha"]].name if "log_alpha" in model else None
    density = None if kind is None else linear_likelihood(model, kind, axes, compile_kwargs)
    swap = BasisSwap(
        [v for v in model.value_vars if v.name in axes],
        axes=axes,
        pairs=pairs,
        n_proposals=n_proposals,
        relevance=log_alpha if log_alpha in axes else None,
        model=model,
        compile_kwargs=compile_kwargs,
        density=density,
    )
    return list(initial), [swap, nuts]
