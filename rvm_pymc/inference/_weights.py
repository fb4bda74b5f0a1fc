"""The collapsed samplers' weight draws, drawn chain by chain as the hyperparameters are.

The collapsed regression sampler samples the hyperparameters by NUTS and
draws the weights afterwards, one draw per hyperparameter draw
(:func:`exact_weight_rows`: ``w ~ N(mu, Sigma)`` exactly).  :class:`ChainDraws`
holds them per chain, so that a convergence check during sampling
(:mod:`rvm_pymc.inference._stop`) and the fit's result share one set of draws.
:func:`reported_draws` maps the recorded draws to those a fit reports (with those
weights, and for the estimators' RBF-width model with unit-RMS columns, of the
unscaled columns): what the convergence check and the stopping rule check.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np

from rvm_pymc._core.gaussian import factor_draw, gaussian_weights
from rvm_pymc._core.rbf_width import column_rms_at
from rvm_pymc.models.data import design_matrix, model_data
from rvm_pymc.models.spec import RBF_DISTANCES, ModelSpec

__all__ = ["ChainDraws", "chain_seeds", "exact_weight_rows", "reported_draws", "seed_of"]

Draws = dict[str, np.ndarray]


def seed_of(random_seed, *salt: int) -> np.random.Generator:
    """A generator seeded from ``random_seed`` and ``salt`` (fresh entropy for None)."""
    seed = random_seed if isinstance(random_seed, int | np.integer) else None
    return np.random.default_rng(None if seed is None else [int(seed), *salt])


class ChainDraws:
    """Draws derived from each chain's draws (the collapsed samplers' weights), each once."""

    def __init__(
        self,
        rows: Callable[[Mapping[str, np.ndarray], np.random.Generator, int, int], np.ndarray],
        rng_of: Callable[[int], np.random.Generator],
    ) -> None:
        self.rows, self.rng_of = rows, rng_of
        self._done: dict[int, list[np.ndarray]] = {}
        self._rngs: dict[int, np.random.Generator] = {}

    def upto(self, draws: Mapping[str, np.ndarray]) -> np.ndarray:
        """The derived draws ``(chain, k, ...)`` of ``draws`` (arrays ``(chain, k, ...)``),
        computing only the rows of each chain not computed before."""
        first = next(iter(draws.values()))
        n_chain, k = first.shape[:2]
        out = []
        for c in range(n_chain):
            done = self._done.setdefault(c, [])
            n = sum(len(d) for d in done)
            if n < k:
                rng = self._rngs.setdefault(c, self.rng_of(c))
                new = self.rows({m: v[c, n:k] for m, v in draws.items()}, rng, c, n)
                done.append(np.asarray(new))
            out.append(np.concatenate(done)[:k])
        return np.stack(out)


def chain_seeds(random_seed) -> Callable[[int], np.random.Generator]:
    """The generator of each chain's exact weight draws (:class:`ChainDraws`)."""
    return lambda chain: seed_of(random_seed, 7919, chain)


def exact_weight_rows(model, spec: ModelSpec):
    """``rows(draws, rng, chain, start)``: one draw of ``w ~ N(mu, Sigma)`` per draw of the
    hyperparameters (``draws``: ``log_alpha``, ``log_beta`` and, for the
    RBF-width model, ``log_length_scale``, of ``n`` rows each)."""
    t = model_data(model, "t")
    fixed = None if spec.rbf_width else design_matrix(model, spec)
    gram = None if fixed is None else (fixed.T @ fixed, fixed.T @ t)

    def rows(draws, rng: np.random.Generator, chain: int, start: int) -> np.ndarray:
        la = np.asarray(draws["log_alpha"], dtype=float)
        beta = np.exp(np.asarray(draws["log_beta"], dtype=float))
        z = rng.standard_normal(la.shape)
        w = np.empty_like(la)
        for i in range(la.shape[0]):
            PtP, Ptt = gram or _gram(model, spec, t, float(draws["log_length_scale"][i]))
            L, p, mean = gaussian_weights(PtP, Ptt, np.exp(la[i]), float(beta[i]))
            w[i] = factor_draw(L, p, mean, z[i : i + 1])[0]
        return w

    return rows


def _gram(model, spec, t, log_length_scale: float) -> tuple[np.ndarray, np.ndarray]:
    Phi = design_matrix(model, spec, log_length_scale)
    return Phi.T @ Phi, Phi.T @ t


def reported_draws(
    model, spec: ModelSpec, weights: ChainDraws | None, unscaled: bool = False
) -> Callable[[Draws], Draws]:
    """``report(draws)``: the draws ``(chain, k, ...)`` recorded by the sampler as the fit
    reports them.

    With the collapsed sampler's ``weights``, ``w`` is added (drawn from the recorded
    hyperparameters).  With ``unscaled``, for an RBF-width model whose kernel columns
    are scaled to RMS 1 at every width (``spec.rbf_unit_rms``, the estimators'), the
    weights and ``log_alpha`` become those of the unscaled columns
    ``[1 | exp(-gamma D)]``, draw by draw: ``w / r``, ``log_alpha + 2 log r`` with ``r``
    each column's RMS at the draw's width (1 for the bias; computed once a draw).
    The convergence standard is checked on what this returns, so that it holds for
    the posterior a user reads.
    """
    rms_rows = None
    if unscaled and spec.rbf_width and spec.rbf_unit_rms:
        D = model_data(model, RBF_DISTANCES)

        def rows(draws, rng, chain: int, start: int) -> np.ndarray:
            lls = np.asarray(draws["log_length_scale"], dtype=float)
            rms = column_rms_at(D, lls)
            if spec.rbf_bias:
                rms = np.concatenate([np.ones((*lls.shape, 1)), rms], axis=-1)
            return rms

        rms_rows = ChainDraws(rows, lambda chain: None)

    def report(draws: Draws) -> Draws:
        out = dict(draws)
        if weights is not None:
            out["w"] = weights.upto(draws)
        if rms_rows is not None:
            rms = rms_rows.upto({"log_length_scale": draws["log_length_scale"]})
            name = "W" if "W" in out else "w"
            w = np.asarray(out[name], dtype=float)
            out[name] = w / (rms if w.ndim == 3 else rms[..., None])
            out["log_alpha"] = np.asarray(out["log_alpha"], dtype=float) + 2.0 * np.log(rms)
        return out

    return report
