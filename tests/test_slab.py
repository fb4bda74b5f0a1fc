"""The slab on the ARD prior (``HyperPrior(slab=s)``): weight precision ``alpha + 1/s^2``.

The formula and its reach into the models are checked without sampling (log
densities compiled with ``FAST_COMPILE``); the fits that cannot take a slab
refuse it before any work; one tiny NUTS run checks that the estimator's
sampled model has the slab.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import norm

from rvm_pymc.priors import HyperPrior, resolve_prior, slab_variance

FAST = "FAST_COMPILE"


# ------------------------------------------------------------------ the formula


def test_slab_variance_is_the_variance_of_precision_alpha_plus_inverse_slab_squared():
    alpha = np.array([0.0, 1e-3, 0.04, 1.0, 100.0, 1e8, np.inf])
    for s in (0.5, 3.0, 10.0):
        v = slab_variance(alpha, s)
        with np.errstate(divide="ignore"):
            np.testing.assert_allclose(v, 1.0 / (alpha + 1.0 / s**2), rtol=1e-12)
            assert np.all(v <= np.minimum(s**2, 1.0 / alpha) * (1 + 1e-12))
        assert v[0] == pytest.approx(s**2)  # alpha = 0: the slab alone
        assert v[-1] == 0.0  # a pruned basis stays pruned
        # large alpha: the ARD variance 1/alpha (the slab does not undo pruning)
        assert v[-2] == pytest.approx(1e-8, rel=1e-6)
    with np.errstate(divide="ignore"):
        np.testing.assert_array_equal(slab_variance(alpha, None), 1.0 / alpha)


def test_hyperprior_slab_is_checked_and_resolved():
    assert HyperPrior().slab is None
    assert resolve_prior({"slab": 5}, default="weakly_informative") == HyperPrior(
        1.0, 0.01, 1.0, 0.01, slab=5.0
    )
    assert resolve_prior("evidence", slab=3.0).slab == 3.0
    assert HyperPrior(1, 2, 3, 4, slab=5).without_slab() == HyperPrior(1, 2, 3, 4)
    assert repr(HyperPrior(slab=2.0)).endswith("slab=2.0)")
    assert "slab" not in repr(HyperPrior())
    for bad in (0.0, -1.0, np.inf, np.nan, "wide"):
        with pytest.raises(ValueError, match="slab must be"):
            HyperPrior(slab=bad)
    with pytest.raises(ValueError, match="allowed: a, b, c, d, slab"):
        resolve_prior({"slab_scale": 5})


def test_classifiers_and_counts_default_to_the_slab_under_nuts_only():
    """RVC's and RVP's NUTS prior is the slab preset; the user's prior, other methods and
    regression keep theirs (no fit: the prior is resolved from the parameters)."""
    from rvm_pymc.estimators import RVC, RVP, RVR
    from rvm_pymc.priors import PRESETS

    slab = PRESETS["weakly_informative_slab"]
    assert slab == HyperPrior(1.0, 0.01, 1.0, 0.01, slab=5.0)
    assert slab.without_slab() == PRESETS["weakly_informative"]
    assert RVC(method="nuts")._prior() == slab
    assert RVC(method="nuts", prior="weakly_informative")._prior().slab is None
    assert RVC(method="nuts", prior={"slab": None})._prior() == PRESETS["weakly_informative"]
    assert RVC(method="nuts", prior={"slab": 3.0})._prior() == HyperPrior(1, 0.01, 1, 0.01, 3.0)
    assert RVC(method="nuts", prior={"a": 2.0})._prior() == HyperPrior(2, 0.01, 1, 0.01, 5.0)
    assert RVC(method="nuts", prior="evidence")._prior() == PRESETS["evidence"]
    for method in ("reference", "map"):
        assert RVC(method=method)._prior() == PRESETS["evidence"]
    assert RVR(method="nuts")._prior() == PRESETS["weakly_informative"]
    assert RVP(method="nuts")._prior() == slab
    assert RVP(method="nuts", prior="weakly_informative")._prior().slab is None
    assert RVP(method="map")._prior() == PRESETS["evidence"]


# ----------------------------------------------------------- the models take it


def _problem(n=12, m=4, seed=0):
    rng = np.random.default_rng(seed)
    Phi = np.column_stack([np.ones(n), rng.random((n, m - 1))])
    y = np.arange(n) % 2
    log_alpha = np.array([-6.0, -1.0, 2.0, 7.0])[:m]
    return Phi, y, log_alpha


@pytest.mark.pymc
@pytest.mark.parametrize("slab", [None, 0.7, 5.0])
def test_classifier_weights_have_the_slab_prior(slab):
    from rvm_pymc import models

    Phi, y, la = _problem()
    sd = np.sqrt(slab_variance(np.exp(la), slab))
    w = np.array([0.3, -1.2, 0.05, 2.0])
    binary = models.classification_binary(Phi, y, prior={"slab": slab})
    logp_w = binary.compile_logp(vars=[binary["w"]], mode=FAST)
    assert logp_w({"log_alpha": la, "w": w}) == pytest.approx(norm.logpdf(w, 0, sd).sum())
    assert models.model_spec(binary).prior.slab == slab
    # non-centred: w = z * sd
    nc = models.classification_binary(Phi, y, prior={"slab": slab}, parametrization="non_centred")
    w_of = nc.compile_fn(nc["w"], inputs=[nc["log_alpha"], nc["w_raw"]], mode=FAST)
    np.testing.assert_allclose(w_of({"log_alpha": la, "w_raw": w}), w * sd, rtol=1e-12)
    assert models.model_spec(nc).prior.slab == slab
    # softmax: one precision per basis, shared by the classes
    W = np.outer(w, [1.0, -0.5, 2.0])
    soft = models.classification_softmax(Phi, np.arange(12) % 3, prior={"slab": slab})
    logp_W = soft.compile_logp(vars=[soft["W"]], mode=FAST)
    expected = norm.logpdf(W, 0, sd[:, None]).sum()
    assert logp_W({"log_alpha": la, "W": W}) == pytest.approx(expected)


@pytest.mark.pymc
def test_data_unit_model_has_the_slab_in_data_units():
    """Scaled weights ``w_s ~ N(0, 1/(alpha_s + 1/s^2))`` are ``w = w_s / scale`` in data units."""
    from rvm_pymc import models

    Phi, y, la_s = _problem()
    scale = np.array([1.0, 0.4, 2.5, 0.8])
    s = 2.0
    model = models.data_unit_model("binary", Phi * scale, y, basis_scale=scale, prior={"slab": s})
    la = la_s + 2 * np.log(scale)  # log alpha in data units
    sd = np.sqrt(slab_variance(np.exp(la_s), s)) / scale
    w = np.array([0.3, -1.2, 0.05, 2.0])
    logp_w = model.compile_logp(vars=[model["w"]], mode=FAST)
    assert logp_w({"log_alpha": la, "w": w}) == pytest.approx(norm.logpdf(w, 0, sd).sum())
    assert models.model_spec(model).prior.slab == s


# --------------------------------------------------------- and the others refuse


@pytest.mark.pymc
def test_fits_without_a_slab_refuse_it():
    from rvm_pymc import models
    from rvm_pymc.estimators import RVC, RVR
    from rvm_pymc.inference import optimise_map
    from rvm_pymc.reference import fit_classification

    Phi, y, _ = _problem()
    with pytest.raises(ValueError, match="method='fast' has no slab"):
        fit_classification(Phi, y, method="fast", prior=HyperPrior(slab=5.0))
    with pytest.raises(ValueError, match="regression_marginal has no slab"):
        models.regression_marginal(Phi, Phi[:, 1], prior={"slab": 5.0})
    model = models.classification_binary(Phi, y, prior={"slab": 5.0})
    with pytest.raises(ValueError, match="slab"):
        optimise_map(model)
    X = np.random.default_rng(0).standard_normal((12, 2))
    for est, match in [
        (RVC(prior={"slab": 5.0}), "solver='fast' does not take"),
        (RVC(method="map", prior={"slab": 5.0}), "only method='nuts' and method='reference'"),
        (RVR(method="nuts", prior={"slab": 5.0}), "sampler_kwargs={'model': 'joint'}"),
    ]:
        with pytest.raises(ValueError, match=match):
            est.fit(X, y if isinstance(est, RVC) else X[:, 0])


# ---------------------------------------------------- RVC(method="nuts") samples it


@pytest.mark.slow
@pytest.mark.pymc
@pytest.mark.filterwarnings("ignore::rvm_pymc.exceptions.SamplingWarning")  # a short run
def test_rvc_nuts_samples_the_slab():
    """A slab of 0.05 holds every scaled weight within a few times 0.05.

    Without it, weights that separate Ripley's classes are of order one.
    """
    from rvm_pymc.datasets import make_ripley
    from rvm_pymc.estimators import RVC
    from rvm_pymc.models import model_spec

    X, y, _, _ = make_ripley(n_train=30, n_test=10, random_state=0)
    nuts = {"compile_kwargs": {"mode": FAST}, "nuts_sampler": "pymc", "cores": 1}
    est = RVC(
        gamma=2.0,
        method="nuts",
        prior={"slab": 0.05},
        draws=40,
        tune=40,
        chains=1,
        random_state=0,
        sampler_kwargs=nuts,
    ).fit(X, y)
    assert est.prior_.slab == 0.05
    assert model_spec(est.model_).prior.slab == 0.05
    assert est.idata_.attrs["started_from"] == "reference"  # the slab-free reference start
    w_scaled = est.idata_["posterior"]["w"].values * est.basis_scale_[est.active_]
    assert np.max(np.abs(w_scaled)) < 6 * 0.05
