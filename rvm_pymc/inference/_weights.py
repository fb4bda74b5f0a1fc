"""The collapsed sampler's exact weight draws, chain by chain (:class:`ChainDraws`, shared by
the stopping rule and the result), and :func:`reported_draws`, the draws a fit reports."""

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
        """The derived draws ``(chain, k, ...)`` of ``draws``, computing only new rows."""
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
    """``rows(draws, rng, chain, start)``: one ``w ~ N(mu, Sigma)`` a hyperparameter draw."""
    t = model_data(model, "t")
    gram = None if spec.rbf_width else _gram(model, spec, t, None)  # fixed columns: once

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


def _gram(model, spec, t, log_length_scale: float | None) -> tuple[np.ndarray, np.ndarray]:
    Phi = design_matrix(model, spec, log_length_scale)
    return Phi.T @ Phi, Phi.T @ t


def reported_draws(
    model, spec: ModelSpec, weights: ChainDraws | None, unscaled: bool = False
) -> Callable[[Draws], Draws]:
    """``report(draws)``: the recorded draws ``(chain, k, ...)`` as the fit reports them.

    With ``weights``, ``w`` is added.  With ``unscaled``, an RBF-width model with unit-RMS
    columns reports those of the unscaled columns: ``w / r``, ``log_alpha + 2 log r`` with
    ``r`` each column's RMS at the draw's width (1 for the bias).
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
