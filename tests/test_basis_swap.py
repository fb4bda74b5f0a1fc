"""The basis-swap Metropolis move beside NUTS (:mod:`rvm_pymc.inference._swap`).

The move must leave the model's posterior invariant: run alone on three bases
(whose values can only be permuted by it) its chain must visit the six
permutations in proportion to their posterior density, the selection weights
that favour relevant bases included.  The estimators add it to PyMC's NUTS for
the classifiers only, unless ``basis_swaps`` asks (the collapsed regression sampler
swaps its precisions then); that is checked at
``pm.sample``, which is replaced by a recorder.
"""

from __future__ import annotations

import itertools

import numpy as np
import pymc as pm
import pytest

from rvm_pymc.datasets import make_ripley
from rvm_pymc.estimators import RVC, RVR
from rvm_pymc.inference import _swap, defaults


def test_neighbour_pairs_are_each_column_and_its_nearest():
    rng = np.random.default_rng(0)
    base = rng.normal(size=(50, 3))
    Phi = np.column_stack([base[:, 0], base[:, 1], base[:, 0] + 0.01 * base[:, 2], base[:, 1]])
    pairs = _swap.neighbour_pairs(Phi, k=1)
    assert {tuple(p) for p in pairs} == {(0, 2), (1, 3)}
    assert pairs.dtype == np.intp
    assert np.all(pairs[:, 0] < pairs[:, 1])
    assert len(_swap.neighbour_pairs(Phi, k=3)) == 6  # every pair of 4 once
    assert _swap.neighbour_pairs(Phi[:, :1]).shape == (0, 2)


def _three_bases():
    X = np.linspace(-1, 1, 20)[:, None]
    Phi = np.hstack([np.exp(-((X - c) ** 2)) for c in (-0.5, 0.0, 0.5)])
    y = (X[:, 0] > 0).astype(float)
    with pm.Model(coords={"basis": ["a", "b", "c"], "obs": range(20)}) as model:
        Phi_d = pm.Data("Phi", Phi, dims=("obs", "basis"))
        # unequal priors: the three permutations' densities differ
        log_alpha = pm.Normal("log_alpha", mu=[-1.0, 0.0, 1.0], sigma=2.0, dims="basis")
        w = pm.Normal("w", 0.0, pm.math.exp(-0.5 * log_alpha), dims="basis")
        pm.Bernoulli("y", logit_p=pm.math.dot(Phi_d, w), observed=y)
    return model


def test_swaps_alone_visit_the_permutations_in_proportion_to_the_posterior():
    model = _three_bases()
    start = {"log_alpha": np.array([-3.0, 0.0, 3.0]), "w": np.array([1.2, -0.4, 0.1])}
    axes = _swap.swap_axes(model)
    assert axes == {"log_alpha": 0, "w": 0}
    step = _swap.BasisSwap(
        model.value_vars,
        axes=axes,
        # a path, not all pairs: the selection weights' total then depends on
        # which precision sits in the middle, and the move must correct for it
        pairs=np.array([[0, 1], [1, 2]]),
        n_proposals=1,
        model=model,
        rng=np.random.default_rng(3),
    )
    logp = model.compile_logp()
    perms = list(itertools.permutations(range(3)))
    dens = np.array([np.exp(logp({k: v[list(p)] for k, v in start.items()})) for p in perms])
    expected = dens / dens.sum()
    assert expected.max() / expected.min() > 5  # the check can tell the states apart
    visits = np.zeros(len(perms))
    point = dict(start)
    order = {float(v): i for i, v in enumerate(start["log_alpha"])}
    n = 30_000
    for _ in range(n):
        point, stats = step.step(point)
        perm = tuple(order[float(v)] for v in point["log_alpha"])
        visits[perms.index(perm)] += 1
        # the weights travel with their precisions
        assert point["w"][list(perm).index(0)] == start["w"][0]
    freq = visits / n
    # a 6-state Metropolis chain: its autocorrelation widens the binomial error
    np.testing.assert_allclose(freq, expected, atol=0.02)
    assert 0.0 <= stats[0]["swap_rate"] <= 1.0


class _Stop(Exception):
    """Raised by the recording ``pm.sample``."""


@pytest.mark.parametrize(
    ("cls", "given", "swaps"),
    [(RVC, None, True), (RVC, 0, False), (RVR, None, False), (RVR, 8, True)],
)
def test_the_classifiers_sample_with_swaps_by_default_others_when_asked(
    cls, given, swaps, pm_sample_kwargs
):
    seen = pm_sample_kwargs
    X, y, _, _ = make_ripley(n_train=30, n_test=2, random_state=0)
    target = y if cls is RVC else X[:, 0] + 0.1 * X[:, 1]
    kw = {"nuts_sampler": "pymc", **({} if given is None else {"basis_swaps": given})}
    with pytest.raises(seen.stop):
        cls(method="nuts", gamma=2.0, random_state=0, sampler_kwargs=kw).fit(X, target)
    steps = seen.get("step") or []
    assert any(isinstance(s, _swap.BasisSwap) for s in steps) is swaps
    if swaps:
        swap, nuts = steps  # NUTS last: its lp is the recorded point's
        assert isinstance(nuts, pm.NUTS)
        assert nuts.target_accept == (0.95 if cls is RVC else 0.8)  # the model's own
        assert swap.n_proposals == (given or defaults.SWAP_PROPOSALS)
        assert swap.relevance == "log_alpha"
        assert set(swap.axes) == ({"log_alpha", "w_raw"} if cls is RVC else {"log_alpha"})
        # the classifier's proposals: the O(N) likelihood; the collapsed model: its whole density
        density = _swap.LinearLikelihood if cls is RVC else _swap.FullDensity
        assert type(swap._density) is density
        assert len(seen["initvals"]) == seen["chains"] == 2
        assert isinstance(seen["random_seed"], int)  # PyMC splits it as it would alone
        assert "target_accept" not in seen
    else:
        assert seen["target_accept"] in (0.8, 0.95)


def test_basis_swaps_below_zero_is_refused_by_name():
    X, y, _, _ = make_ripley(n_train=30, n_test=2, random_state=0)
    with pytest.raises(ValueError, match="basis_swaps"):
        RVC(method="nuts", gamma=2.0, sampler_kwargs={"basis_swaps": -1}).fit(X, y)


def test_swaps_seed_the_chains_starts_as_pm_sample_seeds_nuts_alone(monkeypatch):
    """``pm.init_nuts`` gets the per-chain seeds that ``pm.sample`` itself derives."""
    import pymc.sampling.mcmc as mcmc

    seen = []

    def spy(**kwargs):
        seen.append([int(s) for s in kwargs["random_seed"]])
        raise _Stop

    model = _three_bases()
    monkeypatch.setattr(mcmc, "init_nuts", spy)
    with model, pytest.raises(_Stop):
        pm.sample(chains=2, random_seed=5, progressbar=False)
    monkeypatch.setattr(pm, "init_nuts", spy)
    with pytest.raises(_Stop):
        _swap.nuts_with_swaps(
            model,
            n_proposals=4,
            chains=2,
            tune=10,
            random_seed=5,
            target_accept=0.9,
            initvals=None,
            compile_kwargs=None,
        )
    assert len(seen) == 2 and len(seen[0]) == 2
    assert seen[0] == seen[1]


def test_exchange_swaps_along_each_variables_basis_axis():
    model = _three_bases()
    step = _swap.BasisSwap(
        model.value_vars,
        axes={"log_alpha": 0, "w": 0},
        pairs=np.array([[0, 2]]),
        n_proposals=1,
        model=model,
    )
    step.axes = {"a": 0, "b": 1}  # a (basis,) and a (class, basis) array
    arrays = {"a": np.array([1.0, 2.0, 3.0]), "b": np.arange(6.0).reshape(2, 3)}
    step._exchange(arrays, np.array([0, 2]))
    np.testing.assert_array_equal(arrays["a"], [3.0, 2.0, 1.0])
    np.testing.assert_array_equal(arrays["b"], [[2.0, 1.0, 0.0], [5.0, 4.0, 3.0]])


def test_softmax_swaps_every_class_weight_of_a_basis(pm_sample_kwargs):
    from sklearn.datasets import load_iris

    seen = pm_sample_kwargs
    X, y = load_iris(return_X_y=True)
    with pytest.raises(seen.stop):
        RVC(method="nuts", gamma=0.5, sampler_kwargs={"nuts_sampler": "pymc"}).fit(X[::5], y[::5])
    swap = seen["step"][0]
    assert swap.axes == {"log_alpha": 0, "W_raw": 0}  # W_raw is (basis, class)


@pytest.mark.parametrize(
    ("given", "sampler", "warns"), [(None, None, False), (8, "numpyro", True)]
)
def test_swaps_choose_pymcs_nuts_and_other_samplers_warn(
    given, sampler, warns, monkeypatch, pm_sample_kwargs
):
    """With numpyro installed, None still means PyMC's NUTS for a classifier (its swaps);
    numpyro named with swaps asked for drops them, with a warning."""
    import importlib.util

    from rvm_pymc.exceptions import SamplingWarning
    from rvm_pymc.inference import _nuts

    real = importlib.util.find_spec
    monkeypatch.setattr(
        _nuts.importlib.util,
        "find_spec",
        lambda name, *a: object() if name == "numpyro" else real(name, *a),
    )
    seen = pm_sample_kwargs
    X, y, _, _ = make_ripley(n_train=30, n_test=2, random_state=0)
    kw = {"nuts_sampler": sampler, **({} if given is None else {"basis_swaps": given})}
    draws = None if sampler is None else 100  # numpyro cannot stop once converged
    est = RVC(method="nuts", gamma=2.0, random_state=0, draws=draws, sampler_kwargs=kw)
    if warns:
        with pytest.warns(SamplingWarning, match="basis_swaps=8 is ignored"):
            with pytest.raises(seen.stop):
                est.fit(X, y)
        assert seen["nuts_sampler"] == "numpyro" and "step" not in seen
    else:
        with pytest.raises(seen.stop):
            est.fit(X, y)
        assert seen["nuts_sampler"] == "pymc"
        assert isinstance(seen["step"][0], _swap.BasisSwap)


def _builder_model(kind: str, parametrization: str, slab: float | None):
    from rvm_pymc.models import classification_binary, classification_softmax

    rng = np.random.default_rng(1)
    X = rng.normal(size=(40, 2))
    Phi = np.hstack(
        [np.ones((40, 1)), np.exp(-np.square(X[:, None, :] - X[None, :12, :]).sum(-1))]
    )
    prior = {"a": 1e-4, "b": 1e-4, "slab": slab}
    if kind == "binary":
        return classification_binary(
            Phi, (X[:, 0] > 0).astype(int), parametrization=parametrization, prior=prior
        )
    y = np.digitize(X[:, 0], [-0.5, 0.5])
    return classification_softmax(Phi, y, parametrization=parametrization, prior=prior)


def _random_start(model, seed: int) -> dict:
    """The model's initial point moved at random, the precisions toward relevance."""
    rng = np.random.default_rng(seed)
    return {
        k: v + rng.normal(size=np.shape(v)) - (2.0 if k == "log_alpha" else 0.0)
        for k, v in model.initial_point().items()
    }


def _sixteen_swaps(model, axes, pairs, seed: int, density=None) -> _swap.BasisSwap:
    return _swap.BasisSwap(
        [v for v in model.value_vars if v.name in axes],
        axes=axes,
        pairs=pairs,
        n_proposals=16,
        model=model,
        rng=np.random.default_rng(seed),
        density=density,
    )


@pytest.mark.parametrize(
    ("kind", "parametrization", "slab"),
    [("binary", "centred", None), ("binary", "non_centred", 5.0), ("softmax", "non_centred", 5.0)],
)
def test_the_classifiers_swaps_give_the_same_chain_through_the_linear_likelihood(
    kind, parametrization, slab
):
    """The O(N) likelihood update takes every decision the whole log density takes."""
    model = _builder_model(kind, parametrization, slab)
    axes = _swap.swap_axes(model)
    split = _swap.linear_likelihood(model, kind, axes)
    assert isinstance(split, _swap.LinearLikelihood)
    pairs = _swap.neighbour_pairs(np.asarray(model["Phi"].get_value()))
    start = _random_start(model, seed=2)
    runs = []
    for density in (None, split):
        step = _sixteen_swaps(model, axes, pairs, seed=4, density=density)
        point, rates = dict(start), []
        for _ in range(20):
            point, stats = step.step(point)
            rates.append(stats[0]["swap_rate"])
        runs.append((point, rates))
    (p_full, r_full), (p_split, r_split) = runs
    assert r_full == r_split
    assert 0.0 < np.mean(r_full) < 1.0  # some swaps accepted, some refused
    for name in axes:
        np.testing.assert_array_equal(p_full[name], p_split[name])
    assert not np.array_equal(p_full["log_alpha"], start["log_alpha"])


def test_linear_likelihood_refuses_a_model_whose_likelihood_is_not_phi_w_alone():
    model = _builder_model("binary", "centred", None)
    axes = _swap.swap_axes(model)
    Phi = np.asarray(model["Phi"].get_value())
    y = np.asarray(model["y"].get_value())
    from rvm_pymc.models._likelihoods import bernoulli_logit

    with pm.Model(coords=model.coords) as other:
        Phi_d = pm.Data("Phi", Phi, dims=("obs", "basis"))
        y_d = pm.Data("y", y, dims="obs")
        log_alpha = pm.Normal("log_alpha", 0.0, 2.0, dims="basis")
        w = pm.Normal("w", 0.0, pm.math.exp(-0.5 * log_alpha), dims="basis")
        bernoulli_logit("y_obs", Phi_d @ w + 0.3 * Phi_d[:, 0] * w[1], y_d)
    assert _swap.linear_likelihood(other, "binary", axes) is None
    assert _swap.linear_likelihood(model, "regression_joint", axes) is None


def _reference_step(step, density, point, rng):
    """``BasisSwap.step`` with every selection weight and total recomputed at each proposal."""
    arrays = {k: np.array(v, dtype=float, copy=True) for k, v in point.items()}
    args = [arrays[v.name] for v in step._inputs]

    def weights():
        r = 1.0 / (1.0 + np.exp(np.clip(arrays["log_alpha"], -50.0, 50.0)))
        return _swap.EPS + np.maximum(r[step.pairs[:, 0]], r[step.pairs[:, 1]])

    logp = density.start(args)
    for u_pick, u_accept in rng.random((step.n_proposals, 2)):
        w = weights()
        k = int(np.searchsorted(np.cumsum(w), u_pick * w.sum(), side="right"))
        _swap.exchange(arrays, step.axes, step.pairs[k])
        new = density.propose(args, step.pairs[k])
        if np.log(u_accept) < new - logp + np.log(w.sum()) - np.log(weights().sum()):
            logp = new
        else:
            _swap.exchange(arrays, step.axes, step.pairs[k])
    return arrays


def test_the_incremental_selection_weights_give_the_chain_of_a_full_recomputation():
    """Updating only the pairs a swap touches (and the total) changes no decision."""
    model = _builder_model("binary", "non_centred", 5.0)
    axes = _swap.swap_axes(model)
    pairs = _swap.neighbour_pairs(np.asarray(model["Phi"].get_value()))
    step = _sixteen_swaps(model, axes, pairs, seed=5)
    density = _swap.FullDensity(model)
    rng_ref = np.random.default_rng(5)
    point = _random_start(model, seed=6)
    moved = 0
    for _ in range(25):
        want = _reference_step(step, density, point, rng_ref)
        got, _ = step.step(point)
        for name in axes:
            np.testing.assert_array_equal(got[name], want[name])
        moved += not np.array_equal(got["log_alpha"], point["log_alpha"])
        point = got
    assert moved >= 10  # the chain moves: the test compares decisions, not a standstill


def test_linear_likelihood_gives_none_for_a_layout_it_cannot_read():
    """A softmax model of one's own with float labels: the whole log density, no error."""
    model = _builder_model("softmax", "centred", None)
    Phi = np.asarray(model["Phi"].get_value())
    y = np.asarray(model["y"].get_value()).astype(float)
    from rvm_pymc.models._likelihoods import categorical_logit

    with pm.Model(coords=model.coords) as other:
        Phi_d = pm.Data("Phi", Phi, dims=("obs", "basis"))
        y_d = pm.Data("y", y, dims="obs")
        log_alpha = pm.Normal("log_alpha", 0.0, 2.0, dims="basis")
        W = pm.Normal("W", 0.0, pm.math.exp(-0.5 * log_alpha)[:, None], dims=("basis", "class"))
        categorical_logit("y_obs", Phi_d @ W, y_d)
    assert _swap.linear_likelihood(other, "softmax", _swap.swap_axes(other)) is None
