"""compare / fit_all / compare_weights / summary: every number checked by a direct computation."""

from __future__ import annotations

import warnings

import arviz as az
import numpy as np
import pytest
from scipy.special import logsumexp
from scipy.stats import norm
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.metrics import brier_score_loss, log_loss
from sklearn.model_selection import KFold

import rvm_pymc
from rvm_pymc import RVC, RVR, compare, compare_weights, fit_all, summary
from rvm_pymc.basis import polynomial_basis
from rvm_pymc.comparison import FitSet, effective_parameters, relevant_bases
from rvm_pymc.datasets import make_ripley, make_sinc
from rvm_pymc.exceptions import ConvergenceWarning, SamplingWarning


@pytest.fixture(scope="module")
def sinc():
    X, t, Xt, tt = make_sinc(n_train=30, n_test=25, noise_sd=0.1, random_state=1)
    return X, t, Xt, tt


@pytest.fixture(scope="module")
def type_ii(sinc):
    X, t, _, _ = sinc
    return fit_all(X, t, methods=("reference", "map"), gamma=0.5, random_state=0)


@pytest.fixture(scope="module")
def nuts(sinc):
    X, t, _, _ = sinc
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return RVR(gamma=0.5, method="nuts", draws=100, tune=150, random_state=3).fit(X, t)


def _type_ii_design(fit, X):
    """The active design matrix of an RBF fit with bias, built by hand."""
    K = np.exp(-fit.gamma_ * ((X[:, None, 0] - fit.relevance_vectors_[None, :, 0]) ** 2))
    return np.column_stack([np.ones(len(X)), K]) if fit.bias_active_ else K


def test_held_out_and_sparsity_columns_by_hand(sinc, type_ii):
    _, _, Xt, tt = sinc
    table = compare(type_ii, Xt, tt, cv=None, loo=False)
    assert list(table.index) == ["reference", "map"]
    for name, fit in type_ii.items():
        row = table.loc[name]
        mean, sd = fit.predict(Xt, return_std=True)
        assert row["lpd"] == pytest.approx(np.mean(norm.logpdf(tt, mean, sd)), rel=1e-12)
        assert row["rmse"] == pytest.approx(np.sqrt(np.mean((mean - tt) ** 2)), rel=1e-12)
        for p in (0.5, 0.9, 0.95):
            lo, hi = norm.interval(p, mean, sd)
            assert row[f"coverage_{round(100 * p)}"] == np.mean((tt >= lo) & (tt <= hi))
        gam = 1.0 - fit.alpha_ * np.diag(fit.sigma_)
        assert row["effective_parameters"] == pytest.approx(gam.sum(), rel=1e-10)
        # the relevance count: the relevance vectors, the bias not counted
        assert row["n_relevant"] == fit.active_.size - fit.bias_active_ == fit.n_relevance_
        assert row["log_evidence"] == pytest.approx(fit.log_evidence_, rel=1e-9)
        assert row["method"] == name and row["prior"] == "evidence"
        assert np.isnan(row["max_rhat"]) and np.isnan(row["divergences"])
        assert row["fit_time"] == type_ii.fit_times[name] > 0
    # the held-out density of a type-II fit is exact: rebuilt from its weights by hand
    ref = type_ii["reference"]
    Phi = _type_ii_design(ref, Xt)
    mu = Phi @ ref.coef_ + ref.y_offset_
    var = 1.0 / ref.beta_ + np.einsum("ij,jk,ik->i", Phi, ref.sigma_, Phi)
    assert table.loc["reference", "lpd"] == pytest.approx(
        np.mean(norm.logpdf(tt, mu, np.sqrt(var))), rel=1e-9
    )


def test_kfold_is_an_explicit_refitting_loop(sinc, type_ii):
    X, t, _, _ = sinc
    table = compare(type_ii, cv=3, loo=False, random_state=7)  # X, y from the FitSet
    for name, fit in type_ii.items():
        lpd = np.empty(len(t))
        for tr, te in KFold(3, shuffle=True, random_state=7).split(X):
            model = clone(fit).fit(X[tr], t[tr])
            mean, sd = model.predict(X[te], return_std=True)
            lpd[te] = norm.logpdf(t[te], mean, sd)
        assert table.loc[name, "elpd_kfold"] == pytest.approx(lpd.sum(), rel=1e-6)
        se = np.sqrt(len(t) * np.var(lpd))
        assert table.loc[name, "elpd_kfold_se"] == pytest.approx(se, rel=1e-6)
        assert table.loc[name, "kfold_fit_time"] > 0


def test_loo_is_arviz_loo_and_flagged_for_type_ii(type_ii, nuts):
    fits = {**type_ii, "nuts": nuts}
    table = compare(fits, cv=None)
    for name, fit in fits.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = az.loo(fit.idata_, pointwise=True)
        bad = int(np.sum(res.pareto_k.values > res.good_k))
        assert table.loc[name, "pareto_k_bad"] == bad
        if bad:  # unreliable: NaN, the reason beside it
            assert (
                np.isnan(table.loc[name, "elpd_loo"]) and "Pareto k" in table.loc[name, "loo_note"]
            )
            continue
        assert table.loc[name, "elpd_loo"] == pytest.approx(res.elpd, rel=1e-12)
        assert table.loc[name, "elpd_loo_se"] == pytest.approx(res.se, rel=1e-12)
    assert table["loo_optimistic"].tolist() == [True, True, False]
    assert "elpd_kfold" not in table  # no training data for a plain dict: no k-fold


def test_nuts_row_by_hand(sinc, nuts):
    _, _, Xt, tt = sinc
    row = compare({"nuts": nuts}, Xt, tt, cv=None, loo=False).loc["nuts"]
    # held-out density: the mixture over the posterior draws, built by hand
    post = nuts.posterior_
    w = post.draws.reshape(-1, post.n_basis)
    log_beta = np.asarray(post.log_beta).reshape(-1)
    K = np.exp(-nuts.gamma_ * (Xt[:, None, 0] - nuts.relevance_vectors_[None, :, 0]) ** 2)
    Phi = np.column_stack([np.ones(len(Xt)), K])
    mu = w @ Phi.T + post.y_offset
    sd = np.exp(-0.5 * log_beta)[:, None]
    dens = logsumexp(norm.logpdf(tt[None, :], mu, sd), axis=0) - np.log(len(w))
    assert row["lpd"] == pytest.approx(dens.mean(), rel=1e-9)
    assert row["rmse"] == pytest.approx(np.sqrt(np.mean((mu.mean(0) - tt) ** 2)), rel=1e-9)
    # coverage counted from replicates of the mixture (Monte Carlo quantiles)
    rng = np.random.default_rng(0)
    pick = rng.integers(len(w), size=40_000)
    reps = mu[pick] + sd[pick] * rng.standard_normal((pick.size, len(tt)))
    for p in (0.5, 0.9):
        lo, hi = np.quantile(reps, [0.5 - p / 2, 0.5 + p / 2], axis=0)
        hand = np.mean((tt >= lo) & (tt <= hi))
        assert abs(row[f"coverage_{round(100 * p)}"] - hand) <= 1.0 / len(tt) + 1e-12
    # diagnostics are ArviZ's
    tree = nuts.idata_
    assert row["divergences"] == int(tree["sample_stats"]["diverging"].values.sum())
    rhat = az.rhat(tree, var_names=["w", "log_alpha", "log_beta"])
    assert row["max_rhat"] == pytest.approx(max(float(rhat[v].max()) for v in rhat.data_vars))
    # relevance: the sign of the weight known with probability >= 0.95, the bias not counted
    sure = np.maximum(np.mean(w > 0, axis=0), np.mean(w < 0, axis=0)) >= 0.95
    names = list(nuts.active_names_)
    kernel = np.array([n != "bias" for n in names])
    assert row["n_relevant"] == int(np.sum(sure & kernel))
    assert int(sure.sum()) == len(relevant_bases(nuts))
    lo, hi = np.quantile(w, [0.05, 0.95], axis=0)
    assert row["n_relevant"] == int(np.sum(((lo > 0) | (hi < 0)) & kernel))  # 90% excludes 0


def test_effective_parameters_of_nuts_is_the_mean_trace_of_the_hat_matrix(nuts):
    """The posterior mean over draws of trace(H), H = beta Phi (beta Phi^T Phi + A)^-1 Phi^T:
    in [0, min(N, M)] by construction (the variance of the latent function over the draws,
    the former rule, counted the spread of the precisions: 894 for N = 250)."""
    EFFECTIVE_PARAMETER_DRAWS = 200  # effective_parameters averages this many draws, evenly spaced

    post = nuts.posterior_
    X_train = nuts.relevance_vectors_
    K_train = np.exp(-nuts.gamma_ * (X_train[:, None, 0] - X_train[None, :, 0]) ** 2)
    Phi = np.column_stack([np.ones(len(X_train)), K_train])
    la = np.asarray(post.log_alpha).reshape(-1, post.n_basis)
    lb = np.asarray(post.log_beta).reshape(-1)
    pick = np.unique(
        np.linspace(0, lb.size - 1, min(EFFECTIVE_PARAMETER_DRAWS, lb.size)).astype(int)
    )
    traces = []
    for s in pick:
        beta, A = np.exp(lb[s]), np.diag(np.exp(la[s]))
        H = beta * Phi @ np.linalg.inv(beta * Phi.T @ Phi + A) @ Phi.T  # N x N hat matrix
        traces.append(np.trace(H))
    p_eff = effective_parameters(nuts)
    assert p_eff == pytest.approx(np.mean(traces), rel=1e-8)
    assert 0 <= p_eff <= min(Phi.shape)
    assert compare({"nuts": nuts}, cv=None, loo=False).loc["nuts", "effective_parameters"] == p_eff


def test_effective_parameters_of_a_type_ii_fit_is_the_data_space_trace(type_ii):
    """sum_m (1 - alpha_m Sigma_mm) = trace(beta Phi Sigma Phi^T) at the training points."""
    fit = type_ii["reference"]
    Phi = np.asarray(fit.idata_["constant_data"]["Phi"].values)
    trace = fit.beta_ * np.trace(Phi @ fit.sigma_ @ Phi.T)
    assert effective_parameters(fit) == pytest.approx(trace, rel=1e-8)


def test_kfold_refuses_folds_that_do_not_partition_the_data(type_ii):
    """elpd_kfold sums one held-out density per point: other splitters were silently wrong."""
    from sklearn.model_selection import RepeatedKFold, ShuffleSplit

    X, t = type_ii.X, type_ii.y
    with pytest.raises(ValueError, match="exactly one test fold"):  # was NaN
        compare(type_ii, cv=ShuffleSplit(3, test_size=0.2, random_state=0), loo=False)
    with pytest.raises(ValueError, match="exactly one test fold"):  # was the last repeat only
        compare(type_ii, cv=RepeatedKFold(n_splits=3, n_repeats=2, random_state=0), loo=False)
    with pytest.raises(ValueError, match="both X and y"):
        compare(type_ii, X=X, cv=3, loo=False)
    with pytest.raises(ValueError, match="both X and y"):
        compare(type_ii, y=t, cv=3, loo=False)
    folds = list(KFold(3, shuffle=True, random_state=1).split(X))  # an iterable of splits works
    table = compare(type_ii, cv=folds, loo=False)
    assert np.all(np.isfinite(table["elpd_kfold"]))


def test_classification_columns_by_hand():
    X, y, Xt, yt = make_ripley(n_train=60, n_test=80, random_state=0)
    fit = RVC(gamma=2.0, random_state=0).fit(X, y)
    row = compare({"ref": fit}, Xt, yt, cv=None, loo=False).loc["ref"]
    proba = fit.predict_proba(Xt)
    assert row["error_rate"] == pytest.approx(np.mean(fit.predict(Xt) != yt))
    assert row["brier"] == pytest.approx(2 * brier_score_loss(yt, proba[:, 1]), rel=1e-12)
    assert row["log_loss"] == pytest.approx(log_loss(yt, proba), rel=1e-12)
    assert row["lpd"] == pytest.approx(-row["log_loss"])
    table = compare({"ref": fit}, cv=3, X=X, y=y, loo=False, random_state=0)
    assert np.isfinite(table.loc["ref", "elpd_kfold"]) and table.loc["ref", "elpd_kfold"] < 0


def test_kfold_orders_fits_as_the_exact_held_out_density():
    """A Gaussian linear model with a fixed basis: k-fold elpd ranks as the held-out lpd does.

    The data come from a cubic with a proper Gaussian prior on its weights and
    known noise; on a large fresh sample, the held-out log density of each fit
    (exact for a type-II fit: its Gaussian predictive) is the quantity k-fold
    estimates.  Underfitting bases (degree 1, 2) must rank below the true one.
    """
    rng = np.random.default_rng(11)
    w_true = rng.normal(0, 1, 4)
    w_true[3] = 1.5

    def draw(n):
        x = rng.uniform(-2, 2, n)
        return x[:, None], polynomial_basis(3).fit_transform(x) @ w_true + 0.3 * rng.normal(size=n)

    X, y = draw(60)
    X_big, y_big = draw(20_000)
    fits = {f"deg{d}": RVR(kernel=polynomial_basis(d)).fit(X, y) for d in (1, 2, 3)}
    with pytest.warns(UserWarning, match=r"\['deg2', 'deg3'\] are not fits of the basis"):
        table = compare(fits, X_big, y_big, X=X, y=y, cv=5, loo=False, random_state=0)
    assert table["same_basis"].tolist() == [True, False, False]
    exact = table["lpd"].sort_values().index.tolist()
    assert exact == ["deg1", "deg2", "deg3"]
    assert table["elpd_kfold"].sort_values().index.tolist() == exact


def test_compare_weights_refuses_fits_of_different_bases(sinc):
    X, t = sinc[0], sinc[1]
    base = RVR(gamma=0.5).fit(X, t)
    other_width = RVR(gamma=0.1).fit(X, t)
    other_inputs = RVR(gamma=0.5).fit(X + 0.25, t)  # same names x0..x29, other centres
    compare_weights({"a": base, "b": RVR(gamma=0.5, solver="mackay").fit(X, t)})  # one basis
    for bad in (other_width, other_inputs):
        with pytest.raises(ValueError, match="not fits of the same basis"):
            compare_weights({"a": base, "b": bad})


def test_compare_weights_by_hand(type_ii, nuts):
    fits = {"reference": type_ii["reference"], "nuts": nuts}
    table, agreement = compare_weights(fits)
    ref = fits["reference"]
    # every basis of either fit is a row; pruned bases are a point mass at 0
    assert set(table.index) == set(nuts.active_names_) | set(ref.active_names_)
    pruned = [n for n in table.index if n not in ref.active_names_]
    assert (table.loc[pruned, ("reference", "w_mean")] == 0).all()
    assert np.isinf(table.loc[pruned, ("reference", "log_alpha_mean")]).all()
    i = ref.active_names_.index("x" + str(ref.relevance_indices_[0]))
    name = ref.active_names_[i]
    assert table.loc[name, ("reference", "w_mean")] == pytest.approx(ref.coef_[i])
    assert table.loc[name, ("reference", "w_sd")] == pytest.approx(np.sqrt(ref.sigma_[i, i]))
    d = nuts.posterior_.draws.reshape(-1, nuts.posterior_.n_basis)[
        :, nuts.active_names_.index(name)
    ]
    z = (ref.coef_[i] - d.mean()) / np.hypot(np.sqrt(ref.sigma_[i, i]), d.std())
    assert table.loc[name, ("z", "reference|nuts")] == pytest.approx(z, rel=1e-9)
    a, b = set(relevant_bases(ref)), set(relevant_bases(nuts))
    assert agreement.loc["reference", "nuts"] == pytest.approx(len(a & b) / len(a | b))
    assert agreement.loc["nuts", "nuts"] == 1.0
    assert table[("reference", "relevant")].sum() == len(a)


def test_summary_lines_and_warnings(sinc, type_ii, nuts):
    X, t, _, _ = sinc
    s = summary(type_ii["reference"])
    assert s.loc["rvm:n_relevant", "mean"] == type_ii["reference"].n_relevance_  # no bias
    assert s.loc["rvm:log_evidence", "mean"] == pytest.approx(type_ii["reference"].log_evidence_)
    assert s.loc["rvm:converged", "mean"] == 1.0
    short = RVR(gamma=0.5, solver="mackay", max_iter=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        short.fit(X, t)
    with pytest.warns(ConvergenceWarning, match="did not converge"):
        summary(short)
    with pytest.warns(SamplingWarning, match="min bulk ESS"):
        s = summary(nuts, ess_min=1e9)
    assert "rvm:max_rhat" in s.index and "log_beta" in s.index


# the classification of sinc codes by fit_all has its best evidence width on the grid's edge
@pytest.mark.filterwarnings(
    "ignore:gamma='evidence'. the largest evidence:rvm_pymc.exceptions.ConvergenceWarning"
)
def test_bad_input():
    X, t, _, _ = make_sinc(n_train=20, random_state=0)
    with pytest.raises(ValueError, match="methods must be distinct names"):
        fit_all(X, t, methods=("reference", "bogus"))
    with pytest.raises(ValueError, match="not `method`"):
        fit_all(X, t, methods=("reference",), method="map")
    with pytest.raises(ValueError, match="task must be"):
        fit_all(X, t, methods=("reference",), task="ranking")
    fit = RVR(gamma=0.5).fit(X, t)
    with pytest.raises(ValueError, match="non-empty mapping"):
        compare([fit])
    with pytest.raises(ValueError, match="both X_test and y_test"):
        compare({"a": fit}, X)
    Xc, yc, _, _ = make_ripley(n_train=40, random_state=0)
    with pytest.raises(ValueError, match="all regressors"):
        compare({"a": fit, "b": RVC(gamma=2.0).fit(Xc, yc)})
    with pytest.raises(TypeError, match="not an RVR/RVC"):
        compare({"a": object()})
    with pytest.raises(NotFittedError):
        compare({"a": RVR()})
    with pytest.raises(ValueError, match="prob must lie"):
        relevant_bases(fit, prob=0.5)
    assert isinstance(fit_all(X, t, methods=("reference",)), FitSet)
    # integer-valued float targets (scikit-learn's diabetes) are regression, integer codes classes
    counts = np.round(100 * t + 200)
    assert isinstance(fit_all(X, counts, methods=("reference",))["reference"], RVR)
    codes = (t > 0.2).astype(int)
    assert isinstance(fit_all(X, codes, methods=("reference",))["reference"], RVC)
    as_float = fit_all(X, codes.astype(float), methods=("reference",), task="classification")
    assert isinstance(as_float["reference"], RVC)
    assert rvm_pymc.compare is compare and effective_parameters(fit) > 0


def test_gamma_evidence_warns_on_the_edge_of_its_grid():
    X, t, _, _ = make_sinc(n_train=40, noise_sd=0.1, random_state=0)
    with pytest.warns(ConvergenceWarning, match="largest gamma of gamma_grid"):
        RVR(gamma="evidence", gamma_grid=[0.05, 0.2, 0.1]).fit(X, t)  # order does not matter
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        RVR(gamma="evidence", gamma_grid=[1.0, 0.01, 30.0, 0.1]).fit(X, t)


def test_estimators_with_kernel_or_basis_objects_clone():
    """k-fold refits clones: RVR(kernel=<Kernel or Basis>) must survive sklearn's clone."""
    from sklearn.model_selection import cross_val_score

    from rvm_pymc.kernels import RBF

    X, t, _, _ = make_sinc(n_train=30, random_state=0)
    for kernel in (RBF(gamma=0.5), RBF(gamma=0.5) + RBF(gamma=0.05), polynomial_basis(3)):
        est = RVR(kernel=kernel)
        twin = clone(est.fit(X, t))
        assert repr(twin.kernel) == repr(kernel) and twin.kernel is not kernel
        assert not hasattr(twin, "coef_") and not hasattr(twin.kernel, "n_features_in_")
        assert np.all(np.isfinite(cross_val_score(RVR(kernel=kernel), X, t, cv=3)))


def test_a_fit_that_prunes_every_basis_is_compared():
    """MAP may prune every basis (the cubic on eight points of notebook 06): all still works."""
    x = np.array([1, 3, 5, 6, 7, 8, 8.5, 9.0])[:, None]
    t = np.array([3, -2, 3, 8, 20, 12, 7, 10.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fits = fit_all(x, t, methods=("reference", "map"), kernel=polynomial_basis(3))
    assert fits["map"].coef_.size == 0, "the premise: every basis pruned"
    table, agreement = compare_weights(fits)
    assert not table[("map", "relevant")].any() and (table[("map", "w_mean")] == 0).all()
    assert agreement.loc["map", "reference"] == 0.0
    row = compare(fits, x, t, cv=None, loo=False).loc["map"]
    assert row["n_relevant"] == 0 and row["effective_parameters"] == 0
    assert np.isfinite(row["lpd"])


def test_text_sampler_statistics_are_dropped_from_the_tree():
    """nutpie's divergence_message (text) made saved NUTS fits fail their checksum on load."""
    from rvm_pymc.results import WeightPosterior, to_datatree

    draws = np.random.default_rng(0).normal(size=(2, 5, 2))
    post = WeightPosterior(
        kind="regression",
        basis_names=("bias", "x0"),
        log_alpha=np.zeros((2, 5, 2)),
        log_beta=np.zeros((2, 5)),
        draws=draws,
    )
    stats = {
        "diverging": np.zeros((2, 5), dtype=bool),
        "divergence_message": np.full((2, 5), None, dtype=object),
    }
    tree = to_datatree(post, Phi=np.ones((3, 2)), target=np.zeros(3), sample_stats=stats)
    assert set(tree["sample_stats"].data_vars) == {"diverging"}


def test_fit_all_method_params_go_to_one_method_only():
    X, t, _, _ = make_sinc(n_train=30, random_state=0)
    fits = fit_all(X, t, methods=("reference",), gamma=0.5,
                   method_params={"reference": {"solver": "mackay"}})  # fmt: skip
    assert fits["reference"].solver == "mackay" and fits["reference"].gamma == 0.5
    with pytest.raises(ValueError, match=r"method_params names \['nuts'\], not among"):
        fit_all(X, t, methods=("reference",), method_params={"nuts": {}})
    with pytest.raises(ValueError, match="must not set `method`"):
        fit_all(X, t, methods=("reference",), method_params={"reference": {"method": "map"}})


# --------------------------------------------------------- paired differences and flags


@pytest.fixture(scope="module")
def three_type_ii(sinc, type_ii):
    """reference and map (evidence prior) and a reference fit under the weakly informative
    prior, all on one basis (gamma = 0.5): their predictions differ."""
    X, t, _, _ = sinc
    wi = RVR(gamma=0.5, prior="weakly_informative", solver="mackay", random_state=0).fit(X, t)
    return FitSet({**type_ii, "wi": wi}, X=X, y=t, fit_times=type_ii.fit_times)


def _loo_pointwise(fit):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return az.loo(fit.idata_, pointwise=True)


def test_paired_differences_to_the_baseline_by_hand(sinc, three_type_ii):
    X, t, Xt, tt = sinc
    fits = three_type_ii
    table = compare(fits, Xt, tt, cv=3, random_state=7)
    assert table.attrs["baseline"] == "reference"  # the default: the reference fit
    # held-out: per point, as lpd
    lpd = {n: norm.logpdf(tt, *f.predict(Xt, return_std=True)) for n, f in fits.items()}
    # k-fold: the explicit refitting loop
    kf = {}
    for name, fit in fits.items():
        kf[name] = np.empty(len(t))
        for tr, te in KFold(3, shuffle=True, random_state=7).split(X):
            model = clone(fit).fit(X[tr], t[tr])
            kf[name][te] = norm.logpdf(t[te], *model.predict(X[te], return_std=True))
    loo = {n: _loo_pointwise(f) for n, f in fits.items()}
    for name in fits:
        d = lpd[name] - lpd["reference"]
        assert table.loc[name, "lpd_diff"] == pytest.approx(d.mean(), abs=1e-12)
        assert table.loc[name, "lpd_diff_se"] == pytest.approx(
            np.sqrt(np.var(d) / d.size), abs=1e-12
        )
        d = kf[name] - kf["reference"]
        assert table.loc[name, "elpd_kfold_diff"] == pytest.approx(d.sum(), abs=1e-6)
        se = np.sqrt(d.size * np.var(d))
        assert table.loc[name, "elpd_kfold_diff_se"] == pytest.approx(se, abs=1e-6)
        d = loo[name].elpd_i.values - loo["reference"].elpd_i.values
        if table.loc[name, "pareto_k_bad"] == 0 and table.loc["reference", "pareto_k_bad"] == 0:
            assert table.loc[name, "elpd_loo_diff"] == pytest.approx(d.sum(), rel=1e-10)
            se = np.sqrt(d.size * np.var(d))
            assert table.loc[name, "elpd_loo_diff_se"] == pytest.approx(se, rel=1e-10)
        # the pointwise values behind every difference
        pw = table.attrs["pointwise"]
        np.testing.assert_allclose(pw["lpd"][name], lpd[name], rtol=1e-12)
        np.testing.assert_allclose(pw["elpd_kfold"][name], kf[name], rtol=1e-6)
        np.testing.assert_allclose(pw["elpd_loo"][name], loo[name].elpd_i.values, rtol=1e-12)
        np.testing.assert_allclose(pw["pareto_k"][name], loo[name].pareto_k.values, rtol=1e-12)
    assert (table.loc["reference", ["lpd_diff", "elpd_kfold_diff_se"]] == 0).all()
    assert abs(table.loc["wi", "lpd_diff"]) > 1e-4  # the premise: the fits differ
    # the paired standard error is that of arviz.compare (dse)
    trees = {"reference": fits["reference"].idata_, "wi": fits["wi"].idata_}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cmp = az.compare(trees, round_to="none")
    worse = cmp.index[1]
    assert cmp.loc[worse, "dse"] == pytest.approx(
        np.sqrt(len(t) * np.var(loo["wi"].elpd_i.values - loo["reference"].elpd_i.values)),
        rel=1e-6,
    )
    # another baseline: the differences change sign
    other = compare(fits, Xt, tt, cv=None, baseline="wi")
    assert other.attrs["baseline"] == "wi"
    assert other.loc["reference", "lpd_diff"] == pytest.approx(-table.loc["wi", "lpd_diff"])
    with pytest.raises(ValueError, match="baseline 'nope'"):
        compare(fits, cv=None, baseline="nope")


def test_paired_difference_is_the_az_compare_convention():
    from rvm_pymc.comparison import paired_difference

    rng = np.random.default_rng(0)
    a, b = rng.normal(size=50), rng.normal(size=50)
    d, se = paired_difference(a, b)
    assert d == pytest.approx(np.sum(a - b)) and se == pytest.approx(np.sqrt(50 * np.var(a - b)))
    assert paired_difference(a, b, mean=True) == pytest.approx((d / 50, se / 50))
    assert np.isnan(paired_difference(np.array([np.nan, 1.0]), np.zeros(2))[0])


def test_kfold_diagnostics_columns_and_the_warning_naming_unconverged_folds(sinc):
    X, t, _, _ = sinc
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fits = fit_all(X, t, methods=("reference",), gamma=0.5, max_iter=2, random_state=0)
    with pytest.warns(ConvergenceWarning, match=r"'reference': folds 0, 1, 2 of 3"):
        table = compare(fits, cv=3, loo=False, random_state=7)
    folds = table.attrs["folds"]
    assert list(folds["fold"]) == [0, 1, 2] and not folds["converged"].any()
    for i, (tr, te) in enumerate(KFold(3, shuffle=True, random_state=7).split(X)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = clone(fits["reference"]).fit(X[tr], t[tr])
        assert folds.loc[i, "converged"] == model.converged_
        assert folds.loc[i, "n_test"] == len(te)
    row = table.loc["reference"]
    assert row["kfold_folds"] == 3 and row["kfold_converged"] == 0
    assert np.isnan(row["kfold_max_rhat"]) and np.isnan(row["kfold_divergences"])  # type-II
    assert folds["elpd"].sum() == pytest.approx(row["elpd_kfold"])
    # converged refits: no warning, every fold counted
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        fine = compare(fit_all(X, t, methods=("reference",), gamma=0.5), cv=3, loo=False)
    assert fine.loc["reference", "kfold_converged"] == 3


def test_fits_of_different_bases_are_flagged_and_warned(sinc):
    X, t, Xt, tt = sinc
    fits = {"reference": RVR(gamma=0.5).fit(X, t), "wide": RVR(gamma=0.05).fit(X, t)}
    with pytest.warns(UserWarning, match=r"\['wide'\] are not fits of the basis of the baseline"):
        table = compare(fits, Xt, tt, cv=None, loo=False)
    assert table["same_basis"].tolist() == [True, False]
    assert table["gamma"].tolist() == [0.5, 0.05]
    assert table["basis"].tolist() == ["rbf(gamma=0.5)", "rbf(gamma=0.05)"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        same = compare({"a": fits["reference"], "b": RVR(gamma=0.5).fit(X, t)}, cv=None, loo=False)
    assert same["same_basis"].all()


def test_log_evidence_is_one_quantity_and_the_hyperprior_another(sinc, three_type_ii):
    """log p(t | alpha, beta) for every type-II fit, by a dense N x N Gaussian; the Gamma terms of
    the prior in a column of their own (MAP's log_evidence_ adds them, the reference's not)."""
    from scipy.stats import multivariate_normal

    X, t, _, _ = sinc
    table = compare(three_type_ii, cv=None, loo=False)
    for name, fit in three_type_ii.items():
        Phi = _type_ii_design(fit, X)
        C = np.eye(len(t)) / fit.beta_ + (Phi / fit.alpha_) @ Phi.T
        direct = multivariate_normal(np.full(len(t), fit.y_offset_), C).logpdf(t)
        assert table.loc[name, "log_evidence"] == pytest.approx(direct, rel=1e-8)
        p = fit.prior_
        hyper = (
            p.a * np.log(fit.alpha_).sum() - p.b * fit.alpha_.sum()
            + p.c * np.log(fit.beta_) - p.d * fit.beta_
        )  # fmt: skip
        assert table.loc[name, "log_hyperprior"] == pytest.approx(hyper, rel=1e-10, abs=1e-12)
    assert table.loc["reference", "log_hyperprior"] == 0.0  # the evidence prior
    assert table.loc["wi", "log_hyperprior"] != 0.0


def test_log_evidence_of_a_classifier_is_its_laplace_evidence():
    X, y, _, _ = make_ripley(n_train=60, n_test=10, random_state=0)
    fit = RVC(gamma=2.0, random_state=0).fit(X, y)
    row = compare({"reference": fit}, cv=None, loo=False).loc["reference"]
    Phi = np.asarray(fit.idata_["constant_data"]["Phi"].values)
    w, S = fit.coef_.reshape(-1), fit.sigma_
    f = Phi @ w
    code = np.searchsorted(fit.classes_, y)
    loglik = np.sum(np.where(code == 1, -np.logaddexp(0, -f), -np.logaddexp(0, f)))
    logprior = norm.logpdf(w, 0, 1 / np.sqrt(fit.alpha_)).sum()
    laplace = loglik + logprior + 0.5 * np.linalg.slogdet(2 * np.pi * S)[1]
    assert row["log_evidence"] == pytest.approx(laplace, rel=1e-9)
    assert row["log_evidence"] == pytest.approx(fit.log_evidence_, rel=1e-9)


def test_unreliable_psis_loo_is_nan_with_the_reason():
    """Type-II classification on separable-ish data: most Pareto k are large and PSIS-LOO gave
    absurd values (elpd_loo -3709 with p_loo 3702 beside elpd_kfold -43); now NaN and why."""
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(-1.5, 1, (20, 2)), rng.normal(1.5, 1, (20, 2))])
    y = np.repeat([0, 1], 20)
    fit = RVC(gamma=2.0, random_state=0).fit(X, y)
    table = compare({"reference": fit}, cv=None)
    row = table.loc["reference"]
    res = _loo_pointwise(fit)
    k = res.pareto_k.values
    bad = int(np.sum(~(k <= res.good_k)))
    assert bad > 0, "the premise: Pareto k above the threshold"
    assert row["pareto_k_bad"] == bad
    assert np.isnan(row["elpd_loo"]) and np.isnan(row["p_loo"]) and np.isnan(row["elpd_loo_se"])
    assert f"{bad} of {len(y)} Pareto k > {res.good_k:.2f}" in row["loo_note"]
    assert np.isnan(row["elpd_loo_diff"])
    # the PSIS values are kept pointwise for whoever wants to look
    np.testing.assert_allclose(table.attrs["pointwise"]["elpd_loo"]["reference"], res.elpd_i)


# ArviZ's PSIS on 100 NUTS draws finds a Pareto k above 0.57 for a point or two and says so;
# the comparison reports pareto_k_bad itself
@pytest.mark.filterwarnings("ignore:Estimated shape parameter of Pareto:UserWarning")
def test_arviz_trees_share_draws_and_loo_compare_refuses_type_ii_against_sampled(type_ii, nuts):
    from rvm_pymc.comparison import arviz_trees, is_type_ii_tree, loo_compare

    fits = {"reference": type_ii["reference"], "nuts": nuts}
    default = 2000  # RVR's draws=None (RVC's is 6000: tests/test_default_draws.py)
    assert fits["reference"].idata_["posterior"].sizes["draw"] == default
    trees = arviz_trees(fits)
    for name, tree in trees.items():
        assert dict(tree["posterior"].sizes)["draw"] == 100 == nuts.draws
        assert tree["log_likelihood"].sizes["draw"] == 100
        assert tree.attrs["rvm_type_ii"] == int(name == "reference")
        assert is_type_ii_tree(tree) == is_type_ii_tree(fits[name].idata_) == (name != "nuts")
    assert fits["reference"].idata_["posterior"].sizes["draw"] == default  # the fit is not changed
    with pytest.raises(ValueError, match=r"type-II fits \['reference'\] against sampled"):
        loo_compare(fits)
    with pytest.warns(UserWarning, match="optimistic"):
        ranked = loo_compare(fits, allow_type_ii=True)
    assert ranked.loc["reference", "type_ii"] and not ranked.loc["nuts", "type_ii"]
    both = loo_compare(type_ii)  # type-II against type-II: no objection
    assert set(both.index) == {"reference", "map"}


def test_effective_parameters_of_a_nuts_classifier_is_bounded_by_construction():
    """Binary NUTS: the mean over draws of trace(B^1/2 Phi (Phi^T B Phi + A)^-1 Phi^T B^1/2) with
    B = diag(p (1 - p)) at the draw's weights; the former rule gave 894 for N = 250."""
    X, y, _, _ = make_ripley(n_train=30, n_test=10, random_state=0)
    fast = {"compile_kwargs": {"mode": "FAST_COMPILE"}, "nuts_sampler": "pymc", "cores": 1}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = RVC(gamma=2.0, method="nuts", draws=30, tune=30, sampler_kwargs=fast,
                  random_state=0).fit(X, y)  # fmt: skip
    post = fit.posterior_
    Phi = np.asarray(fit.idata_["constant_data"]["Phi"].values)
    w = post.draws.reshape(-1, post.n_basis)
    la = np.asarray(post.log_alpha).reshape(-1, post.n_basis)
    slab = fit.prior_.slab  # the default prior of a classifier's NUTS has one
    assert slab is not None
    # 1/s^2 is the precision of a weight of the scaled design Phi / basis_scale: in the
    # units of the tree's Phi it is basis_scale^2 / s^2
    scale = np.asarray(fit.idata_["constant_data"]["basis_scale"].values, dtype=float)
    slab_precision = scale**2 / slab**2
    traces = []
    for s in range(len(w)):  # 60 draws: every one is used
        p = 1.0 / (1.0 + np.exp(-Phi @ w[s]))
        Bh = np.diag(np.sqrt(p * (1 - p)))
        S = np.linalg.inv(Phi.T @ Bh @ Bh @ Phi + np.diag(np.exp(la[s]) + slab_precision))
        traces.append(np.trace(Bh @ Phi @ S @ Phi.T @ Bh))
    p_eff = effective_parameters(fit)
    assert p_eff == pytest.approx(np.mean(traces), rel=1e-8)
    assert 0 <= p_eff <= min(Phi.shape)
