"""PyMC's NUTS runs one process per chain by default, up to the CPUs the process may use.

PyMC's own default (``min(4, cpu_count() // 2)``) runs two chains one after
the other on a 2-CPU machine; the package passes ``cores`` itself
unless the user gives it (``sampler_kwargs={"cores": ...}``).
No model is sampled here: ``pm.sample`` is replaced by a recorder that stops
the fit.  That the draws do not depend on ``cores`` is
``tests/test_interrupt.py::test_nuts_draws_reproducible_with_parallel_chains``.
"""

from __future__ import annotations

import os
from types import SimpleNamespace

import pytest

from rvm_pymc.datasets import make_ripley
from rvm_pymc.estimators import RVC, RVR


def _default_cores(chains, seen):
    """The ``cores`` an RVR NUTS fit with ``chains`` chains (and no ``cores``) gives pm.sample."""
    X, _, _, _ = make_ripley(n_train=30, n_test=2, random_state=0)
    kw = {"nuts_sampler": "pymc"}
    est = RVR(method="nuts", gamma=2.0, chains=chains, random_state=0, sampler_kwargs=kw)
    seen.clear()
    with pytest.raises(seen.stop):
        est.fit(X, X[:, 0])
    assert seen["chains"] == chains
    return seen["cores"]


@pytest.mark.parametrize(
    ("cpus", "chains", "expected"), [(1, 2, 1), (2, 2, 2), (8, 2, 2), (2, 4, 2)]
)
def test_default_cores_is_a_process_per_chain_up_to_the_usable_cpus(
    cpus, chains, expected, monkeypatch, pm_sample_kwargs
):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(cpus)), raising=False)
    assert _default_cores(chains, pm_sample_kwargs) == expected


def test_default_cores_is_one_in_a_daemonic_worker_or_off_the_main_thread(
    monkeypatch, pm_sample_kwargs
):
    import multiprocessing
    import threading

    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    seen = []
    worker = threading.Thread(target=lambda: seen.append(_default_cores(2, pm_sample_kwargs)))
    worker.start()
    worker.join()
    assert seen == [1]
    monkeypatch.setattr(multiprocessing, "current_process", lambda: SimpleNamespace(daemon=True))
    assert _default_cores(2, pm_sample_kwargs) == 1


def test_default_cores_without_an_affinity_call_counts_the_cpus(monkeypatch, pm_sample_kwargs):
    monkeypatch.delattr(os, "sched_getaffinity", raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: None)
    assert _default_cores(2, pm_sample_kwargs) == 1
    monkeypatch.setattr(os, "cpu_count", lambda: 3)
    assert _default_cores(4, pm_sample_kwargs) == 3


@pytest.mark.parametrize("cls", [RVR, RVC], ids=lambda c: c.__name__)
@pytest.mark.parametrize(("given", "cpus", "expected"), [(None, 2, 2), (None, 1, 1), (1, 2, 1)])
def test_pm_sample_receives_the_resolved_cores(
    cls, given, cpus, expected, monkeypatch, pm_sample_kwargs
):
    seen = pm_sample_kwargs
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(cpus)), raising=False)
    X, y, _, _ = make_ripley(n_train=30, n_test=2, random_state=0)
    target = y if cls is RVC else X[:, 0] + 0.1 * X[:, 1]
    kw = {"nuts_sampler": "pymc", **({} if given is None else {"cores": given})}
    with pytest.raises(seen.stop):
        cls(method="nuts", gamma=2.0, random_state=0, sampler_kwargs=kw).fit(X, target)
    assert seen["cores"] == expected
    assert seen["chains"] == 2
