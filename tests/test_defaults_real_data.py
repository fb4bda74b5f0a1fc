"""The default width on real data: chosen by cross-validation, never silently interpolating.

scikit-learn's diabetes data (bundled, offline): on its first 100 rows the evidence for
the width prefers a kernel that keeps most rows as relevance vectors, with the noise
collapsed; the default (``gamma="auto"``: k-fold cross-validation of the held-out log
density up to 2000 rows) does not, and predicts the other 342 rows far better.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy.stats import norm
from sklearn.datasets import load_diabetes

from rvm_pymc import RVC, RVP, RVR, InterpolationWarning, compare, fit_all


@pytest.fixture(scope="module")
def diabetes():
    X, y = load_diabetes(return_X_y=True)
    return X[:100], y[:100], X[100:], y[100:]


def _lpd(est, X, y) -> float:
    mean, sd = est.predict(X, return_std=True)
    return float(np.mean(norm.logpdf(y, mean, sd)))


def test_evidence_width_interpolates_and_says_so(diabetes):
    X, y, _, _ = diabetes
    with pytest.warns(InterpolationWarning, match=r"keeps \d+ of 100 training rows"):
        est = RVR(gamma="evidence").fit(X, y)
    assert est.interpolates_ and est.n_relevance_ > 50


def test_default_width_is_cross_validated_and_does_not_interpolate(diabetes):
    X, y, X_test, y_test = diabetes
    with warnings.catch_warnings():
        warnings.simplefilter("error", InterpolationWarning)
        est = RVR().fit(X, y)
    assert not est.interpolates_ and est.n_relevance_ <= 50
    path = est.cv_path_
    assert est.gamma_ == path["gamma"][int(np.argmax(path["cv_lpd"]))]
    assert np.all(np.diff(path["gamma"]) > 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InterpolationWarning)
        evidence = RVR(gamma="evidence").fit(X, y)
    # held out (342 rows): the evidence's interpolating fit is far worse
    assert _lpd(est, X_test, y_test) > _lpd(evidence, X_test, y_test) + 1.0
    assert _lpd(est, X_test, y_test) > -6.0  # a Gaussian of the sd of y scores about -5.8


def test_cv_score_of_a_width_is_the_mean_held_out_log_density(diabetes):
    """The path's score at a width, against a direct computation over the same folds."""
    from sklearn.model_selection import KFold

    X, y, _, _ = diabetes
    est = RVR(random_state=3).fit(X, y)
    g = float(est.cv_path_["gamma"][0])
    lpd = np.empty(y.size)
    for train, test in KFold(5, shuffle=True, random_state=3).split(X):
        fold = RVR(gamma=g).fit(X[train], y[train])
        mean, sd = fold.predict(X[test], return_std=True)
        lpd[test] = norm.logpdf(y[test], mean, sd)
    assert est.cv_path_["cv_lpd"][0] == pytest.approx(np.mean(lpd), rel=1e-10)


def test_cv_width_refuses_a_class_of_one_row_and_auto_takes_scale():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((12, 2))
    y = np.array([0] * 6 + [1] * 5 + [2])
    with pytest.raises(ValueError, match=r"gamma='cv' needs at least 2 rows of every class"):
        RVC(gamma="cv").fit(X, y)
    est = RVC().fit(X, y)
    assert est.gamma_ == pytest.approx(RVC(gamma="scale").fit(X, y).gamma_)
    assert not hasattr(est, "cv_path_")


def test_compare_reports_every_folds_width_and_interpolation(diabetes):
    X, y, _, _ = diabetes
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InterpolationWarning)
        fits = fit_all(X, y, methods=("reference",), gamma="evidence")
    with pytest.warns(InterpolationWarning, match=r"k-fold refits of 'reference' interpolate"):
        table = compare(fits, loo=False, random_state=0)
    folds = table.attrs["folds"]
    assert {"gamma", "n_relevant", "n_train", "interpolates", "warnings"} <= set(folds)
    assert (
        folds["interpolates"].to_numpy().tolist()
        == (folds["n_relevant"] > folds["n_train"] / 2).to_numpy().tolist()
    )
    assert table.loc["reference", "kfold_interpolating"] == int(folds["interpolates"].sum()) > 0
    assert bool(table.loc["reference", "interpolates"])
    assert folds["warnings"].str.contains("InterpolationWarning").sum() > 0


def test_fit_all_fits_every_method_at_the_first_methods_width(diabetes):
    """One width per comparison: MAP at the reference fit's cross-validated width, and
    in every k-fold fold at the width that fold's reference refit chose."""
    X, y, _, _ = diabetes
    fits = fit_all(X[:60], y[:60], methods=("reference", "map"), random_state=0)
    assert fits.width_from == "reference"
    assert fits["map"].gamma_ == fits["reference"].gamma_
    assert fits["map"].gamma == fits["reference"].gamma_  # fitted at it, not chosen again
    table = compare(fits, loo=False, cv=3, random_state=0)
    assert table["same_basis"].all()
    folds = table.attrs["folds"]
    by_fit = folds.pivot(index="fold", columns="fit", values="gamma")
    np.testing.assert_array_equal(by_fit["map"], by_fit["reference"])
    own = fit_all(X[:60], y[:60], methods=("reference", "map"), same_width=False)
    assert own.width_from is None and own["map"].gamma == "auto"


def test_cli_compare_fits_every_method_at_one_width(tmp_path, capsys):
    """The command line's compare: MAP at the reference fit's cross-validated width."""
    import pandas as pd

    from rvm_pymc.cli import main

    X, y = load_diabetes(return_X_y=True)
    table = pd.DataFrame(X[:60], columns=[f"x{i}" for i in range(10)]).assign(y=y[:60])
    table.to_csv(tmp_path / "d.csv", index=False)
    argv = ["compare", str(tmp_path / "d.csv"), "--target", "y", "--methods", "reference"]
    argv += ["map", "--cv", "2", "--out", str(tmp_path / "c.csv")]
    assert main(argv) == 0
    err = capsys.readouterr().err
    out = pd.read_csv(tmp_path / "c.csv")
    assert out["gamma"].nunique() == 1 and bool(out["same_basis"].all())
    said = f"fitting map to 45 training rows at reference's width, gamma {out['gamma'][0]:.4g}"
    assert said in err


def test_compare_gives_nan_and_the_reason_when_psis_fails(diabetes, monkeypatch):
    import arviz

    def failing_loo(*args, **kwargs):
        raise ValueError("All tail values are the same")

    X, y, _, _ = diabetes
    fits = fit_all(X[:40], y[:40], methods=("reference",), gamma=0.1)
    monkeypatch.setattr(arviz, "loo", failing_loo)
    table = compare(fits, cv=None)
    assert np.isnan(table.loc["reference", "elpd_loo"])
    assert table.loc["reference", "loo_note"].startswith("PSIS-LOO failed (All tail values")
    assert table.attrs["pointwise"]["elpd_loo"]["reference"].isna().all()


def test_cv_scores_a_fold_that_cannot_be_fitted_as_minus_infinity():
    """Sparse targets: a fold whose training part is constant cannot be fitted; that width
    scores -inf there instead of the whole fit failing (the full data are fitted)."""
    X = np.linspace(0, 1, 30)[:, None]
    y = np.zeros(30)
    y[[3, 17]] = 5.0
    for seed in range(6):  # some seeds put both non-zero rows in one test fold
        est = RVR(random_state=seed).fit(X, y)
        assert np.isfinite(est.predict(X)).all()
    counts = np.zeros(30, dtype=int)
    counts[4] = 3
    said = r"gamma='auto': gamma='cv': no width .* at gamma='scale' instead"
    with pytest.warns(UserWarning, match=said):
        RVP().fit(X, counts)  # every fold without the count: cv has nothing to score
    with pytest.raises(ValueError, match=r"gamma='cv': no width of gamma_grid could be scored"):
        RVP(gamma="cv").fit(X, counts)


def test_folds_that_interpolate_are_not_reported_as_the_fits_own():
    """The chosen width's folds may keep more than half their rows; only the final fit's
    own check warns (cv_path_ records the folds' share)."""
    rng = np.random.default_rng(0)
    X = rng.uniform(-3, 3, (40, 1))
    y = np.sin(X[:, 0]) + 0.3 * rng.standard_normal(40)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est = RVR(gamma="cv", gamma_grid=[30.0, 100.0, 300.0]).fit(X, y)
    said = [w for w in caught if issubclass(w.category, InterpolationWarning)]
    assert len(said) == int(est.interpolates_)
    assert est.cv_path_["relevance_fraction"].max() > 0.5
    # the best is the grid's widest kernel: the edge warning says to extend the grid
    assert any("best cross-validated score is at the smallest gamma" in str(w.message)
               for w in caught)  # fmt: skip


def test_fit_all_shares_only_the_first_methods_width(diabetes):
    X, y, _, _ = diabetes
    fits = fit_all(
        X[:40], y[:40], methods=("reference", "map"), method_params={"reference": {"gamma": 0.5}}
    )
    assert fits.width_from is None and fits["map"].gamma == "auto"


def test_a_fit_under_a_proper_precision_prior_is_not_called_interpolating():
    """A proper Gamma prior on the precisions prunes nothing (every basis is relevant by
    design): only the noise at its bound says such a fit interpolates."""
    from rvm_pymc.datasets import make_sinc

    X, t, _, _ = make_sinc(n_train=60, noise_sd=0.1, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", InterpolationWarning)
        est = RVR(gamma=0.5, prior="weakly_informative", solver="mackay").fit(X, t)
    assert est.n_relevance_ > 30 and not est.interpolates_
    assert 0.05 < np.sqrt(est.noise_var_) < 0.2


def test_a_pickle_from_before_the_rule_gets_interpolates_on_load():
    import pickle

    from rvm_pymc.datasets import make_sinc

    X, t, _, _ = make_sinc(n_train=40, noise_sd=0.1, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InterpolationWarning)
        dense = RVR(gamma=50.0).fit(X, t)  # a narrow kernel: every point relevant
    sparse = RVR(gamma=0.5).fit(X, t)
    for est, expected in ((dense, True), (sparse, False)):
        del est.interpolates_  # as a pickle written before the attribute existed
        back = pickle.loads(pickle.dumps(est))
        assert back.interpolates_ is expected
