"""A NUTS fit chooses its width and its start under the prior it samples, a slab included.

``RVC(method="nuts")`` samples under the ``"weakly_informative_slab"`` prior; its
``gamma="auto"`` width (the evidence's, up to 2000 points) and its reference start
are those of ``RVC(method="reference", solver="mackay")`` under that same prior
(docs/pymc.md, "Classification NUTS: which configuration is the default").  No
PyMC model is compiled: the NUTS fit stops at the backend, whose inputs are recorded.
"""

from __future__ import annotations

import numpy as np
import pytest

import rvm_pymc.estimators._base as base
import rvm_pymc.inference
from rvm_pymc.datasets import make_ripley
from rvm_pymc.estimators import RVC
from rvm_pymc.inference._backend import _start
from rvm_pymc.priors import PRESETS
from rvm_pymc.results import WeightPosterior

_SELECT = base.select_width  # the width selection itself (each fit below wraps it anew)


class _Stop(Exception):
    """Raised by the recording backend: the fit goes no further."""


def _recorded(est, X, y, monkeypatch):
    """The width, prior and reference start ``est.fit`` chose, and the backend's prior."""
    seen = {}

    def width_of(*args, **kwargs):
        width = _SELECT(*args, **kwargs)
        _, prior, solver = kwargs["fit"].args  # the reference fit's targets, prior, solver
        seen.update(gamma=width.gamma, prior=prior, solver=solver, start=width.reference)
        return width

    def backend(opts, Phi, target, names, prior, seed, start):
        seen.update(backend_prior=prior, backend_start=start)
        raise _Stop

    monkeypatch.setattr(base, "select_width", width_of)
    monkeypatch.setattr(rvm_pymc.inference, "fit_backend", backend)
    if est.method == "nuts":
        with pytest.raises(_Stop):
            est.fit(X, y)
    else:
        est.fit(X, y)
    return seen


def test_nuts_width_and_start_are_the_slab_priors_reference_fit(monkeypatch):
    X, y, _, _ = make_ripley(n_train=80, n_test=2, random_state=2)
    slab = PRESETS["weakly_informative_slab"]
    for gamma in ("auto", "evidence"):  # cross-validated (the default) and by the evidence
        nuts = _recorded(RVC(method="nuts", gamma=gamma, random_state=0), X, y, monkeypatch)
        assert nuts["prior"] == slab == nuts["backend_prior"]
        assert nuts["solver"] == "mackay"
        ref = _recorded(
            RVC(method="reference", gamma=gamma, solver="mackay", prior=slab, random_state=0),
            X,
            y,
            monkeypatch,
        )
        assert nuts["gamma"] == ref["gamma"]
        post = nuts["backend_start"]
        assert post.basis_names == ref["start"][0].basis_names
        np.testing.assert_array_equal(post.log_alpha, ref["start"][0].log_alpha)
        np.testing.assert_array_equal(post.mean, ref["start"][0].mean)
    # the slab changes this problem's evidence width: the old start (the prior without it)
    # differs
    plain = _recorded(
        RVC(
            method="reference",
            gamma="evidence",
            solver="mackay",
            prior=slab.without_slab(),
            random_state=0,
        ),
        X,
        y,
        monkeypatch,
    )
    assert plain["gamma"] != nuts["gamma"]


def test_non_centred_start_uses_the_slabs_precision_and_stays_finite():
    names = ("b0", "b1", "b2")
    start = WeightPosterior(
        kind="binary",
        basis_names=("b0", "b1"),
        log_alpha=np.array([np.log(0.5), -np.inf]),  # a slab's reference may reach alpha = 0
        mean=np.array([2.0, -3.0]),
        cov=np.eye(2),
    )
    out = _start(
        start, names, "binary", cap=10.0, weights=True, parametrization="non_centred", slab=5.0
    )
    np.testing.assert_array_equal(out["log_alpha"], [np.log(0.5), -10.0, 10.0])
    precision = np.exp(out["log_alpha"]) + 1 / 25  # the model's alpha + 1/slab^2
    np.testing.assert_allclose(out["w_raw"], np.array([2.0, -3.0, 0.0]) * np.sqrt(precision))


def test_non_centred_softmax_start_scales_every_class_column_by_its_basis():
    start = WeightPosterior(
        kind="softmax",
        basis_names=("b1",),
        log_alpha=np.array([np.log(2.0)]),
        mean=np.array([[1.0, -2.0, 0.5]]),
        cov=np.eye(3),
    )
    out = _start(
        start, ("b0", "b1"), "softmax", cap=10.0, weights=True,
        parametrization="non_centred", slab=5.0,
    )  # fmt: skip
    precision = np.exp(out["log_alpha"]) + 1 / 25
    assert out["W_raw"].shape == (2, 3)
    expected = [[0.0, 0.0, 0.0], [1.0, -2.0, 0.5]]
    np.testing.assert_allclose(out["W_raw"] / np.sqrt(precision)[:, None], expected)


def test_a_slab_sends_a_flat_gamma_prior_to_mackay(monkeypatch):
    """``solver="fast"`` takes no slab: with a = b = 0 and a slab the start is MacKay's."""
    X, y, _, _ = make_ripley(n_train=40, n_test=2, random_state=0)
    prior = {"a": 0.0, "b": 0.0, "slab": 5.0}
    seen = _recorded(RVC(method="nuts", prior=prior, random_state=0), X, y, monkeypatch)
    assert seen["solver"] == "mackay" and seen["prior"].slab == 5.0
    assert np.all(np.isfinite(seen["backend_start"].mean))
