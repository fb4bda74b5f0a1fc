"""Nothing half-done: interrupted fits leave the estimator as it was; seeds reproduce fits.

A fit stopped by ``KeyboardInterrupt`` (injected into the reference solver or
into L-BFGS-B's objective of the MAP fit) must leave every attribute as it
was: an unfitted estimator stays unfitted, a fitted one keeps its previous fit
(the same objects, not a mixture of old and new).  The same ``random_state``
gives the same draws and results (reference, map, nuts), another one other
draws.  ``tests/test_one_result.py`` already interrupts a refit by replacing
``_reference_fit``; these tests interrupt deeper, midway, and the PyMC fits.
"""

from __future__ import annotations

import numpy as np
import pytest
from shared_helpers import assert_unchanged, interrupt_after
from sklearn.exceptions import NotFittedError

import rvm_pymc.reference
from rvm_pymc.estimators import RVC, RVR

FAST = {"compile_kwargs": {"mode": "FAST_COMPILE"}}
NUTS = {**FAST, "nuts_sampler": "pymc", "cores": 1}


@pytest.fixture(scope="module")
def data(noisy_sinc):
    X, t = noisy_sinc(25, low=-5.0, high=5.0, seed=1)
    return X, t, (t > 0.2).astype(int), np.linspace(-6.0, 6.0, 11)[:, None]


# ------------------------------------------------------------- reference


@pytest.mark.filterwarnings("ignore:gamma='evidence'")  # the grid's edge: not tested here
@pytest.mark.parametrize("est_cls", [RVR, RVC])
def test_interrupted_first_fit_leaves_the_estimator_unfitted(data, est_cls, monkeypatch):
    X, t, y, X_new = data
    name = "fit_regression" if est_cls is RVR else "fit_classification"
    real = getattr(rvm_pymc.reference, name)
    stop = interrupt_after(real, 2)  # the third width of the grid
    monkeypatch.setattr(rvm_pymc.reference, name, stop)
    est = est_cls(gamma="evidence", gamma_grid=[0.1, 0.3, 1.0, 3.0])
    saved = dict(est.__dict__)
    with pytest.raises(KeyboardInterrupt):
        est.fit(X, t if est_cls is RVR else y)
    assert len(stop.calls) == 3  # it was stopped midway, after two completed fits
    assert_unchanged(est, saved)
    with pytest.raises(NotFittedError):
        est.predict(X_new)
    monkeypatch.setattr(rvm_pymc.reference, name, real)
    est.fit(X, t if est_cls is RVR else y)  # and it fits afterwards (the grid, then refined)
    assert est.evidence_path_["gamma"][:3].tolist() == [1.0, 0.3, 3.0]  # from the middle out


@pytest.mark.filterwarnings("ignore:gamma='evidence'")
@pytest.mark.parametrize("est_cls", [RVR, RVC])
def test_interrupted_refit_keeps_the_previous_fit(data, est_cls, monkeypatch):
    """A refit (other width and grid) stopped in the solver keeps every old attribute."""
    X, t, y, X_new = data
    target = t if est_cls is RVR else y
    est = est_cls(gamma="evidence", gamma_grid=[0.3, 1.0], random_state=0).fit(X, target)
    before = est.predict(X_new)
    tree = est.idata_
    saved = dict(est.__dict__)
    name = "fit_regression" if est_cls is RVR else "fit_classification"
    monkeypatch.setattr(
        rvm_pymc.reference, name, interrupt_after(getattr(rvm_pymc.reference, name), 1)
    )
    est.set_params(gamma_grid=[0.05, 0.1, 0.2])  # stopped at the second width
    saved["gamma"], saved["gamma_grid"] = est.gamma, est.gamma_grid  # set_params is not fit
    with pytest.raises(KeyboardInterrupt):
        est.fit(X, target)
    assert_unchanged(est, saved)
    assert est.idata_ is tree
    np.testing.assert_array_equal(est.predict(X_new), before)
    assert est.evidence_path_["gamma"][:2].tolist() == [1.0, 0.3]  # the old grid's fits


# ------------------------------------------------------------------- map


def _sigint_at_draw(monkeypatch, chain: int, at: int) -> list:
    """Deliver SIGINT to this process at the given draw of PyMC's sampler (as Ctrl-C would)."""
    import os
    import signal

    import pymc as pm

    real = pm.sample
    sent = []

    def sample(*args, callback=None, **kwargs):
        def at_draw(trace, draw):  # PyMC passes these two by name
            if draw.chain == chain and draw.draw_idx == at and not sent:
                sent.append(draw.draw_idx)
                os.kill(os.getpid(), signal.SIGINT)
            if callback is not None:
                callback(trace=trace, draw=draw)

        return real(*args, callback=at_draw, **kwargs)

    monkeypatch.setattr(pm, "sample", sample)
    return sent


@pytest.mark.pymc
@pytest.mark.parametrize(
    ("mode", "previous"), [("FAST_COMPILE", None), ("FAST_COMPILE", "reference"), (None, None)]
)
def test_ctrl_c_during_nuts_is_never_swallowed(data, mode, previous, monkeypatch):
    """SIGINT mid-sampling: fit raises KeyboardInterrupt, the estimator is as it was.

    PyMC's sequential sampler catches the interrupt, ends the chain and samples
    the next; the fit must not come back with fewer chains (or fitted at all).
    """
    import pymc  # noqa: F401

    X, t, _, X_new = data
    est = RVR(gamma=0.5, random_state=0, draws=40, tune=40)
    if previous:
        est.fit(X, t)
        before = est.predict(X_new, return_std=True)
    kw = {"nuts_sampler": "pymc", "cores": 1, "progressbar": False}
    if mode:
        kw["compile_kwargs"] = {"mode": mode}
    est.set_params(method="nuts", sampler_kwargs=kw)
    saved = dict(est.__dict__)
    sent = _sigint_at_draw(monkeypatch, chain=0, at=20)
    with pytest.raises(KeyboardInterrupt):
        est.fit(X, t)
    assert sent == [20]  # delivered mid-way through the first chain
    assert_unchanged(est, saved)
    if previous:
        np.testing.assert_array_equal(est.predict(X_new, return_std=True), before)
    else:
        with pytest.raises(NotFittedError):
            est.predict(X_new)


# -------------------------------------------------------- reproducibility


@pytest.mark.parametrize("est_cls", [RVR, RVC])
def test_reference_fit_reproducible_from_random_state(data, est_cls):
    """Same seed (int or a fresh Generator): identical draws whatever the global state."""
    X, t, y, X_new = data
    target = t if est_cls is RVR else y

    def draws(random_state):
        np.random.seed(int(np.random.default_rng().integers(1000)))  # noqa: NPY002 (noise)
        est = est_cls(gamma=0.5, draws=30, random_state=random_state).fit(X, target)
        pred = est.sample_predictions(X_new, random_state=random_state)["predictions"]
        return est.idata_["posterior"]["w"].values, pred[next(iter(pred.data_vars))].values

    for seed in (7, lambda: np.random.default_rng(7)):
        a = draws(seed() if callable(seed) else seed)
        b = draws(seed() if callable(seed) else seed)
        for x, y_ in zip(a, b, strict=True):
            np.testing.assert_array_equal(x, y_)
    c = draws(8)
    assert not np.array_equal(c[0], a[0]) and not np.array_equal(c[1], a[1])


@pytest.mark.pymc
def test_map_fit_reproducible_from_random_state(data):
    import pymc  # noqa: F401

    X, t, _, X_new = data
    fits = [
        RVR(gamma=0.5, method="map", draws=20, random_state=s, sampler_kwargs=FAST).fit(X, t)
        for s in (3, 3, 4)
    ]
    w = [f.idata_["posterior"]["w"].values for f in fits]
    np.testing.assert_array_equal(w[1], w[0])
    assert not np.array_equal(w[2], w[0])
    # the optimum does not depend on the seed at all
    for f in fits[1:]:
        np.testing.assert_array_equal(f.predict(X_new), fits[0].predict(X_new))
        assert f.log_evidence_ == fits[0].log_evidence_


def _nuts_fits(X, t, seeds):
    kw = dict(gamma=0.5, method="nuts", draws=15, tune=15, chains=2, sampler_kwargs=NUTS)
    return [RVR(random_state=s, **kw).fit(X, t) for s in seeds]


@pytest.mark.pymc
@pytest.mark.filterwarnings("ignore::rvm_pymc.exceptions.SamplingWarning")  # 15 draws
def test_nuts_draws_reproducible_from_random_state(data):
    """The same random_state gives the same NUTS draws (and fit)."""
    import pymc  # noqa: F401

    X, t, _, X_new = data
    fits = _nuts_fits(X, t, (11, 11))
    post = [f.idata_["posterior"] for f in fits]
    for var in ("w", "log_alpha", "log_beta"):
        np.testing.assert_array_equal(post[1][var].values, post[0][var].values)
        # the two chains have seeds of their own
        assert not np.array_equal(post[0][var].values[0], post[0][var].values[1])
    np.testing.assert_array_equal(fits[1].predict(X_new), fits[0].predict(X_new))
    assert fits[1].beta_ == fits[0].beta_


@pytest.mark.slow
@pytest.mark.pymc
@pytest.mark.filterwarnings("ignore::rvm_pymc.exceptions.SamplingWarning")
def test_nuts_draws_differ_between_seeds(data):
    import pymc  # noqa: F401

    X, t, _, _ = data
    a, b = (f.idata_["posterior"] for f in _nuts_fits(X, t, (11, 12)))
    for var in ("w", "log_alpha", "log_beta"):
        assert not np.array_equal(a[var].values, b[var].values)


# ------------------------------------------------- chains in parallel processes


@pytest.mark.pymc
def test_ctrl_c_during_parallel_nuts_is_never_swallowed(data, monkeypatch):
    """Ctrl-C with the chains in two processes (``cores=2``): SIGINT reaches the
    fit's process and its chain processes (as a terminal sends it to the whole
    foreground group); fit raises KeyboardInterrupt, the estimator is as it was,
    and no chain process is left behind."""
    import multiprocessing
    import os
    import signal

    import pymc  # noqa: F401
    import pymc as pm

    X, t, _, X_new = data
    est = RVR(gamma=0.5, random_state=0, draws=40, tune=40, method="nuts")
    est.set_params(sampler_kwargs={**NUTS, "cores": 2, "progressbar": False})
    saved = dict(est.__dict__)
    real, sent = pm.sample, []
    # processes of earlier tests (a dask cluster, ...) are not the fit's chains
    before = {c.pid for c in multiprocessing.active_children()}

    def chains():
        return [c for c in multiprocessing.active_children() if c.pid not in before]

    def sample(*args, callback=None, **kwargs):
        def at_draw(trace, draw):
            if draw.chain == 0 and draw.draw_idx == 20 and not sent:
                sent.append(len(chains()))
                for child in chains():
                    os.kill(child.pid, signal.SIGINT)
                os.kill(os.getpid(), signal.SIGINT)
            if callback is not None:
                callback(trace=trace, draw=draw)

        return real(*args, callback=at_draw, **kwargs)

    monkeypatch.setattr(pm, "sample", sample)
    with pytest.raises(KeyboardInterrupt):
        est.fit(X, t)
    assert sent == [2]  # both chains were running in processes of their own
    assert_unchanged(est, saved)
    with pytest.raises(NotFittedError):
        est.predict(X_new)
    assert chains() == []


@pytest.mark.pymc
@pytest.mark.filterwarnings("ignore::rvm_pymc.exceptions.SamplingWarning")  # 15 draws
def test_nuts_draws_reproducible_with_parallel_chains(data):
    """cores=2 gives the same draws for the same random_state, and the same draws as cores=1."""
    import pymc  # noqa: F401

    X, t, _, _ = data
    kw = dict(gamma=0.5, method="nuts", draws=15, tune=15, chains=2)
    fits = [
        RVR(random_state=11, sampler_kwargs={**NUTS, "cores": c}, **kw).fit(X, t)
        for c in (2, 2, 1)
    ]
    post = [f.idata_["posterior"] for f in fits]
    for var in ("w", "log_alpha", "log_beta"):
        np.testing.assert_array_equal(post[1][var].values, post[0][var].values)
        np.testing.assert_array_equal(post[2][var].values, post[0][var].values)
