"""RVP: the Poisson RVM estimator (reference method), its result tree and save/load."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.metrics import d2_tweedie_score

from rvm_pymc import RVP
from rvm_pymc.estimators import load


@pytest.fixture(scope="module")
def counts():
    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, size=(80, 1))
    rate = lambda A: np.exp(1 + np.sin(2 * A[:, 0]))  # noqa: E731
    return X, rng.poisson(rate(X)), rate


@pytest.fixture(scope="module")
def fitted(counts):
    X, y, _ = counts
    return RVP(random_state=0).fit(X, y)


def test_predict_is_the_mean_count_and_score_is_d2(counts, fitted):
    X, y, rate = counts
    Xt = np.linspace(-2, 2, 41)[:, None]
    pred = fitted.predict(Xt)
    assert fitted.converged_ and fitted.n_relevance_ < 10
    np.testing.assert_allclose(
        pred,
        np.exp(
            fitted.design_matrix(Xt) @ fitted.coef_
            + 0.5
            * np.einsum(
                "ij,jk,ik->i", fitted.design_matrix(Xt), fitted.sigma_, fitted.design_matrix(Xt)
            )
        ),
    )
    assert np.mean(np.abs(pred - rate(Xt))) < 0.5 * np.mean(np.sqrt(rate(Xt)))
    assert fitted.score(X, y) == pytest.approx(d2_tweedie_score(y, fitted.predict(X), power=1))
    assert fitted.score(X, y) > 0.5


def test_intervals_cover_fresh_counts(counts, fitted):
    X, _, rate = counts
    lo, hi = fitted.predict_interval(X, 0.9)
    fresh = np.random.default_rng(5).poisson(rate(X), size=(40, X.shape[0]))
    assert 0.85 < np.mean((fresh >= lo) & (fresh <= hi)) < 0.99
    with pytest.raises(ValueError, match="level"):
        fitted.predict_interval(X, 1.5)


def test_tree_and_predictions_are_of_counts(counts, fitted):
    X, _, _ = counts
    tree = fitted.idata_
    assert "counts_obs" in tree["observed_data"]
    # observed counts and their replicates of one dtype (ArviZ's PPC draws them alike)
    assert tree["observed_data"]["counts_obs"].dtype == np.int64
    assert tree["posterior_predictive"]["counts_obs"].dtype == np.int64
    np.testing.assert_array_equal(tree["observed_data"]["counts_obs"], counts[1])
    pred = fitted.sample_predictions(X[:10], random_state=1)["predictions"]
    # the average rate over the weight draws is the predictive mean
    np.testing.assert_allclose(
        pred["mu"].mean(("chain", "draw")), fitted.predict(X[:10]), rtol=0.03
    )


def test_save_load_round_trip(tmp_path, counts, fitted):
    X, y, _ = counts
    path = tmp_path / "rvp.nc"
    fitted.save(path)
    back = load(path)
    assert type(back) is RVP
    np.testing.assert_array_equal(back.predict(X), fitted.predict(X))
    assert back.idata_["observed_data"]["counts_obs"].dtype == np.int64
    assert back.score(X, y) == fitted.score(X, y)
    assert RVP.load(path).get_params() == fitted.get_params()


@pytest.mark.parametrize(
    ("y", "match"),
    [(-1.0, "y has 1 negative"), (np.nan, "y has 1 missing"), ("zeros", "y is all zero")],
)
def test_bad_counts_are_refused_naming_y(counts, y, match):
    X, y0, _ = counts
    y_bad = np.zeros(len(y0)) if isinstance(y, str) else np.r_[y0[:-1], y].astype(float)
    est = RVP()
    with pytest.raises(ValueError, match=match):
        est.fit(X, y_bad)
    assert not hasattr(est, "coef_")


def test_clone_and_tags():
    est = RVP(gamma=0.5, solver="mackay", random_state=3)
    assert clone(est).get_params() == est.get_params()
    assert est.__sklearn_tags__().target_tags.positive_only
    assert RVP.__module__ == "rvm_pymc.estimators"


def test_compare_counts_reports_poisson_lpd_d2_and_coverage(counts):
    from rvm_pymc import compare, fit_all

    X, y, rate = counts
    rng = np.random.default_rng(7)
    X_test = rng.uniform(-2, 2, size=(100, 1))
    y_test = rng.poisson(rate(X_test))
    fits = fit_all(X, y, methods=("reference",), task="counts", random_state=0)
    table = compare(fits, X_test, y_test, cv=3, random_state=0)
    row = table.loc["reference"]
    est = fits["reference"]
    assert row["lpd"] == pytest.approx(np.mean(est.log_predictive_density(X_test, y_test)))
    assert row["d2"] == pytest.approx(est.score(X_test, y_test))
    lo, hi = est.predict_interval(X_test, 0.9)
    assert row["coverage_90"] == pytest.approx(np.mean((y_test >= lo) & (y_test <= hi)))
    assert 0.8 < row["coverage_90"] <= 1.0
    assert np.isfinite(row["elpd_kfold"]) and np.isfinite(row["log_evidence"])
    assert row["log_evidence"] == pytest.approx(est.log_evidence_, abs=1e-6)
    with pytest.raises(ValueError, match="RVP"):
        from rvm_pymc import RVR

        compare({"a": est, "b": RVR(gamma=1.0).fit(X, y.astype(float))})


def test_counts_that_are_not_whole_numbers_stay_float(counts):
    X, y, _ = counts
    est = RVP(gamma=1.0, draws=20, random_state=0).fit(X, y + 0.5)
    obs = est.idata_["observed_data"]["counts_obs"]
    assert obs.dtype == np.float64
    np.testing.assert_array_equal(obs, y + 0.5)
