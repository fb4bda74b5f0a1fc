"""A Metropolis move that swaps two neighbouring bases, beside PyMC's NUTS.

With wide kernels neighbouring basis functions are almost the same column of
the design matrix, and the ARD prior keeps one of them relevant and the other
pruned: the joint posterior has a mode for each choice.  NUTS moves between
them only through the region where both weights are small, which the prior
makes narrow; on the first 300 rows of scikit-learn's breast-cancer data at
the width 0.0112 (their evidence's without the slab) each chain switched a
few times in 4000 draws (R-hat 1.015, tail ESS 135; ``benchmarks/README.md``,
"Basis swaps").

:class:`BasisSwap` proposes to exchange every per-basis value of the model
(``log_alpha`` and the weights, or their non-centred form) between two bases
``i`` and ``j``.  The exchange is its own inverse and preserves volume, so a
Metropolis-Hastings step accepts it with probability
``min(1, p(x') q(x | x') / (p(x) q(x' | x)))`` under the model's full log
density ``p``.  The pair is drawn from a fixed list (each basis and its
:data:`NEIGHBOURS` most similar columns), with probability proportional to
``EPS + max(r_i, r_j)``, ``r = 1 / (1 + alpha)`` (near 1 for a relevant
basis), so that the proposals go where a swap changes something; because the
exchange changes the weights of other pairs, ``q`` enters the acceptance as
the ratio of the two normalising sums.  NUTS then explores each mode as
before.  :func:`nuts_with_swaps` builds the two steps as ``pm.sample`` would
build NUTS alone.  PyMC's NUTS only: nutpie and numpyro take no second step,
so the estimators sample the classifiers with PyMC's NUTS unless another
sampler is named (and then warn if ``basis_swaps`` was asked for).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
import pymc as pm
from pymc.step_methods.compound import BlockedStep, Competence, StepMethodState
from pymc.step_methods.state import dataclass_state
from pymc.util import get_random_generator

__all__ = [
    "EPS",
    "NEIGHBOURS",
    "SWAP_KINDS",
    "SWAP_PROPOSALS",
    "BasisSwap",
    "neighbour_pairs",
    "nuts_with_swaps",
    "swap_axes",
]

SWAP_PROPOSALS = 64
"""Proposals per draw by default (``basis_swaps=None``) for the models of :data:`SWAP_KINDS`."""
SWAP_KINDS = ("binary", "softmax")
"""The models that swap by default: the classifiers, whose table is in ``benchmarks/README.md``
("Basis swaps"); the others can ask for swaps with ``basis_swaps``."""
NEIGHBOURS = 3
"""Each basis is paired with this many of its most similar columns (cosine of ``Phi``)."""
EPS = 0.02
"""Floor of a pair's selection weight: pairs of two pruned bases are still proposed."""


def neighbour_pairs(Phi: np.ndarray, k: int = NEIGHBOURS) -> np.ndarray:
    """Pairs ``(i, j)``, ``i < j``, of each column of ``Phi`` and its ``k`` most similar others.

    Parameters
    ----------
    Phi : ndarray of shape (N, M)
    k : int

    Returns
    -------
    ndarray of shape (P, 2), dtype intp
        Sorted, without repeats; empty when ``M < 2``.
    """
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


@dataclass_state
class BasisSwapState(StepMethodState):
    n_proposals: int


class BasisSwap(BlockedStep):
    """Metropolis-Hastings swaps of two neighbouring bases' values (see the module).

    Parameters
    ----------
    vars : list of TensorVariable
        The model's value variables with a basis axis (:func:`swap_axes`).
    axes : dict of str to int
        The basis axis of each of ``vars``, by name.
    pairs : ndarray of shape (P, 2)
        The pairs that may swap (:func:`neighbour_pairs`).
    n_proposals : int
        Proposals per draw.
    relevance : str or None
        Name of the value variable holding ``log alpha`` (weights the pairs);
        None: every pair alike.
    model : pm.Model, optional
    rng : RandomGenerator, optional
    compile_kwargs : dict, optional
        PyTensor compile options of the log density.
    """

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
        self._logp = model.compile_fn(
            model.logp(), inputs=self._inputs, point_fn=False, **(compile_kwargs or {})
        )
        self.rng = get_random_generator(rng)

    def _weights(self, arrays: dict[str, np.ndarray]) -> np.ndarray:
        if self.relevance is None:
            return np.ones(len(self.pairs))
        r = 1.0 / (1.0 + np.exp(np.clip(arrays[self.relevance], -50.0, 50.0)))
        return EPS + np.maximum(r[self.pairs[:, 0]], r[self.pairs[:, 1]])

    def _exchange(self, arrays: dict[str, np.ndarray], pair: np.ndarray) -> None:
        for name, axis in self.axes.items():
            a = np.moveaxis(arrays[name], axis, 0)
            a[pair] = a[pair[::-1]]

    def step(self, point: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """One draw's ``n_proposals`` swaps; returns the new point and the share accepted."""
        arrays = {v.name: np.array(point[v.name], dtype=v.dtype, copy=True) for v in self._inputs}
        args = [arrays[n] for n in self._names]
        logp = float(self._logp(*args))
        cum = np.cumsum(self._weights(arrays))
        accepted = 0
        for _ in range(self.n_proposals):
            k = int(np.searchsorted(cum, self.rng.random() * cum[-1], side="right"))
            self._exchange(arrays, self.pairs[k])
            new_cum = np.cumsum(self._weights(arrays))
            new = float(self._logp(*args))
            if np.log(self.rng.random()) < new - logp + np.log(cum[-1]) - np.log(new_cum[-1]):
                logp, cum = new, new_cum
                accepted += 1
            else:
                self._exchange(arrays, self.pairs[k])
        out = dict(point)
        out.update(arrays)
        return out, [{"swap_rate": accepted / max(self.n_proposals, 1)}]

    @staticmethod
    def competence(var, has_grad):
        """Never chosen by PyMC on its own: the estimators add it beside NUTS."""
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
) -> tuple[list[dict], list[BlockedStep]] | None:
    """A :class:`BasisSwap` and NUTS started as ``pm.sample`` starts it; None if no swap applies.

    None when ``n_proposals`` is 0, the model has no ``"Phi"`` data or no
    value variable with a ``"basis"`` axis, or it has fewer than two bases.
    Otherwise ``(initial points, [swap, nuts])`` for ``pm.sample(step=...,
    initvals=..., random_seed=random_seed)``: the initial points come from
    ``pm.init_nuts`` with the per-chain seeds that ``pm.sample`` derives
    from ``random_seed`` (``get_random_generator(random_seed).spawn(chains)``,
    one integer below 2^30 from each), so the chains start where PyMC's NUTS
    alone would start them.  NUTS comes last, so that the ``lp`` PyMC records
    is the log density of the point kept.
    """
    axes = swap_axes(model)
    if n_proposals <= 0 or not axes or "Phi" not in model.named_vars:
        return None
    pairs = neighbour_pairs(np.asarray(model["Phi"].get_value()), NEIGHBOURS)
    if len(pairs) == 0:
        return None
    rngs = get_random_generator(random_seed).spawn(chains)
    seeds = [int(rng.integers(2**30)) for rng in rngs]
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
    swap = BasisSwap(
        [v for v in model.value_vars if v.name in axes],
        axes=axes,
        pairs=pairs,
        n_proposals=n_proposals,
        relevance=log_alpha if log_alpha in axes else None,
        model=model,
        compile_kwargs=compile_kwargs,
    )
    return list(initial), [swap, nuts]
