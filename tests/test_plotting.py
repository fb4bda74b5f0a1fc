"""The plots of rvm_pymc.plotting: headless, draw what they say, take every method.

Each plot is drawn on the Agg backend (tests/conftest.py) for fits of all three
methods and its artists are counted and read back: one legend entry per fit,
one ring per relevance vector, the drawn values against a direct computation.
The fits are tiny (N = 24) and made once per module; NUTS runs 40 draws.
"""

from __future__ import annotations

import subprocess
import sys
import warnings

import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.colors import to_rgba
from matplotlib.contour import ContourSet

from rvm_pymc.comparison import n_relevant, rank_bases
from rvm_pymc.datasets import make_gaussian_mixture_classes, make_ripley, make_sinc
from rvm_pymc.estimators import RVC, RVR
from rvm_pymc.plotting import (
    diagnostic_tree,
    plot_class_probability_2d,
    plot_evidence_vs_cv,
    plot_log_alpha,
    plot_predictive_1d,
    plot_regression_1d,
    plot_reliability,
    plot_solver_trace,
    plot_trace,
    plot_weights_forest,
    trace_selection,
)

METHODS = ("reference", "map", "nuts")
NUTS = {"nuts_sampler": "pymc", "cores": 1, "progressbar": False}


def _fit_all(cls, X, y, gamma):
    fits = {}
    for m in METHODS:
        kw = {"draws": 40, "tune": 40, "sampler_kwargs": NUTS} if m == "nuts" else {}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # 40 draws: R-hat warnings are expected
            fits[m] = cls(gamma=gamma, method=m, random_state=0, **kw).fit(X, y)
    return fits


@pytest.fixture(scope="module")
def sinc():
    d = make_sinc(n_train=24, noise_sd=0.1, random_state=0)
    return d.X_train, d.t_train


@pytest.fixture(scope="module")
def ripley():
    d = make_ripley(n_train=24, n_test=80, random_state=0)
    return d.X_train, d.t_train, d.X_test, d.t_test


@pytest.fixture(scope="module")
def reg_fits(sinc):
    import pymc  # noqa: F401

    return _fit_all(RVR, *sinc, gamma=0.5)


@pytest.fixture(scope="module")
def clf_fits(ripley):
    import pymc  # noqa: F401

    return _fit_all(RVC, *ripley[:2], gamma=2.0)


@pytest.fixture(scope="module")
def three_classes():
    d = make_gaussian_mixture_classes(n_samples=45, n_test=90, n_classes=3, random_state=0)
    fit = RVC(gamma=1.0, random_state=0).fit(d.X_train, d.t_train)
    return fit, d.X_train, d.t_train, d.X_test, d.t_test


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _legend_texts(ax):
    return [t.get_text() for t in ax.get_legend().get_texts()]


def _relevant_by_rule(est):
    """The NUTS relevance rule of the comparison table, written out: the sign of the
    weight is known with posterior probability >= 0.95."""
    w = np.asarray(est.posterior_.draws).reshape(-1, len(est.active_names_))
    keep = np.maximum(np.mean(w > 0, axis=0), np.mean(w < 0, axis=0)) >= 0.95
    return [n for n, k in zip(est.active_names_, keep, strict=True) if k]


def _n_rings(ax, color):
    return sum(
        len(ln.get_xdata())
        for ln in ax.get_lines()
        if ln.get_marker() == "o"
        and ln.get_markerfacecolor() == "none"
        and to_rgba(ln.get_markeredgecolor()) == to_rgba(color)
    )


def test_importing_plotting_loads_neither_matplotlib_nor_arviz():
    code = (
        "import sys, rvm_pymc.plotting; print('matplotlib' in sys.modules, 'arviz' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


# ------------------------------------------------------------- predictive 1-D


@pytest.mark.pymc
def test_predictive_1d_one_entry_per_fit_and_one_ring_per_relevance_vector(reg_fits, sinc):
    X, t = sinc
    colors = {"reference": "red", "map": "green", "nuts": "blue"}
    ax = plot_predictive_1d(reg_fits, X, t, truth=lambda x: np.sinc(x / np.pi), colors=colors)
    texts = _legend_texts(ax)
    assert len(texts) == len(reg_fits) + 2  # the fits, truth, training data: each once
    assert texts.count("training data") == 1 and texts.count("truth") == 1
    # one band per fit and band level, a light fill; the second and third fits' hatched
    fills = [c for c in ax.collections if c.get_label() == "_nolegend_" and not c.get_hatch()]
    assert len(fills) == 2 * 3
    assert len([c for c in ax.collections if c.get_hatch()]) == 2 * 2
    for name, est in reg_fits.items():
        want = (
            est.n_relevance_
            if name != "nuts"
            else len([n for n in _relevant_by_rule(est) if n != "bias"])
        )
        assert _n_rings(ax, colors[name]) == want
        assert want > 0
        (line,) = [ln for ln in ax.get_lines() if ln.get_label().startswith(name)]
        assert to_rgba(line.get_color()) == to_rgba(colors[name])
        np.testing.assert_allclose(line.get_ydata(), est.predict(line.get_xdata()[:, None]))
    # the type-II fits ring exactly their relevance vectors
    ref = reg_fits["reference"]
    xs = np.concatenate(
        [ln.get_xdata() for ln in ax.get_lines()
         if ln.get_marker() == "o" and to_rgba(ln.get_markeredgecolor()) == to_rgba("red")]
    )  # fmt: skip
    np.testing.assert_array_equal(np.sort(xs), np.sort(X[ref.relevance_indices_, 0]))


def test_predictive_1d_bands_are_the_predictive_quantiles(sinc):
    X, t = sinc
    est = RVR(gamma=0.5, random_state=0).fit(X, t)
    grid = np.linspace(-5, 5, 7)[:, None]
    ax = plot_predictive_1d(est, X, t, grid, bands=(0.9,))
    (band,) = [c for c in ax.collections if c.get_label() == "_nolegend_"]
    mean, sd = est.predict(grid, return_std=True)
    z = 1.6448536269514722  # the 95% quantile of N(0, 1): a central 90% band
    want = np.concatenate([mean - z * sd, mean + z * sd])
    got = band.get_paths()[0].vertices[:, 1]
    # the polygon's corners are exactly the band's edges at the grid points
    assert np.max(np.min(np.abs(got[:, None] - want[None, :]), axis=1)) < 1e-12
    assert np.max(np.min(np.abs(want[:, None] - got[None, :]), axis=1)) < 1e-12
    assert _legend_texts(ax) == [f"reference ({est.n_relevance_} RVs)", "training data"]


@pytest.mark.pymc
def test_predictive_1d_nuts_bands_are_quantiles_of_the_mixture_over_draws(reg_fits, sinc):
    from scipy.special import ndtr

    X, t = sinc
    est = reg_fits["nuts"]
    grid = np.linspace(-8, 8, 9)[:, None]
    ax = plot_predictive_1d(est, X, t, grid, bands=(0.9,))
    (band,) = [c for c in ax.collections if c.get_label() == "_nolegend_"]
    # the predictive written out: N(phi(x) w_s + y_offset, 1/beta_s) over the draws s
    mu = est.sample_predictions(grid)["predictions"]["mu"].values.reshape(-1, grid.shape[0])
    sd = np.exp(-0.5 * est.idata_["posterior"]["log_beta"].values.reshape(-1, 1))
    for x, y in band.get_paths()[0].vertices:
        i = int(np.argmin(np.abs(grid[:, 0] - x)))
        F = ndtr((y - mu[:, i]) / sd[:, 0]).mean()
        assert min(abs(F - 0.05), abs(F - 0.95)) < 1e-8


def test_predictive_1d_refuses_bad_input(sinc, ripley):
    X, t = sinc
    est = RVR(gamma=0.5).fit(X, t)
    with pytest.raises(ValueError, match="X_train must have 1 feature"):
        plot_predictive_1d(est, np.hstack([X, X]), t)
    with pytest.raises(ValueError, match="X_grid must have 1 feature"):
        plot_predictive_1d(est, X, t, np.zeros((5, 2)))
    clf = RVC(gamma=2.0).fit(*ripley[:2])
    with pytest.raises(ValueError, match="classifier"):
        plot_predictive_1d({"clf": clf}, X, t)
    with pytest.raises(ValueError, match="fitted on 2 features"):
        plot_predictive_1d(RVR(gamma=0.5).fit(*ripley[:2]), X, t)
    with pytest.raises(ValueError, match="not a fitted RVR/RVC"):
        plot_predictive_1d(RVR(), X, t)
    with pytest.raises(ValueError, match="bands"):
        plot_predictive_1d(est, X, t, bands=(1.5,))


def test_plot_regression_1d_overlays_with_one_legend_entry_each(sinc):
    X, t = sinc
    grid = np.linspace(-10, 10, 50)
    ax = None
    for solver in ("fast", "mackay"):
        est = RVR(gamma=0.5, solver=solver).fit(X, t)
        mean, sd = est.predict(grid[:, None], return_std=True)
        ax = plot_regression_1d(X[:, 0], t, grid, mean, sd, est.relevance_indices_,
                                truth=np.sinc(grid / np.pi), label=solver, ax=ax)  # fmt: skip
    assert _legend_texts(ax) == ["fast", "mackay", "truth", "training data"]
    fits = [ln for ln in ax.get_lines() if ln.get_label() in ("fast", "mackay")]
    assert [to_rgba(ln.get_color()) for ln in fits] == [to_rgba("C0"), to_rgba("C1")]
    assert len([ln for ln in ax.get_lines() if ln.get_label() == "training data"]) == 1


# ------------------------------------------------------------------ log alpha


@pytest.mark.pymc
@pytest.mark.parametrize("which", ["reg_fits", "clf_fits"])
def test_log_alpha_points_intervals_and_pruned_marks(which, request):
    fits = request.getfixturevalue(which)
    ax = plot_log_alpha(fits, top=None)  # every basis
    assert len(_legend_texts(ax)) == len(fits)
    n_basis = len(ax.get_xticks())
    assert n_basis == fits["nuts"].posterior_.n_basis  # NUTS keeps every basis
    for k, (name, est) in enumerate(fits.items()):
        c = to_rgba(f"C{k}")
        mine = [ln for ln in ax.get_lines() if to_rgba(ln.get_color()) == c]
        if name == "nuts":
            (pts,) = [ln for ln in mine if ln.get_marker() == "o"]
            la = np.asarray(est.posterior_.log_alpha).reshape(-1, n_basis)
            np.testing.assert_allclose(pts.get_ydata(), np.median(la, axis=0))
        else:
            (pts,) = [ln for ln in mine if ln.get_marker() == "D"]
            np.testing.assert_allclose(pts.get_ydata(), est.posterior_.log_alpha)
            tri = [ln for ln in mine if ln.get_marker() == "^"]
            n_pruned = sum(len(ln.get_xdata()) for ln in tri)
            assert n_pruned == n_basis - len(est.active_names_) > 0


# ---------------------------------------------------------------- forest


@pytest.mark.pymc
@pytest.mark.parametrize("which", ["reg_fits", "clf_fits"])
def test_weights_forest_rows_are_the_relevant_bases(which, request):
    fits = request.getfixturevalue(which)
    ax = plot_weights_forest(fits)
    rows = [t.get_text() for t in ax.get_yticklabels()]
    want = set(fits["reference"].active_names_) | set(fits["map"].active_names_)
    want |= set(_relevant_by_rule(fits["nuts"]))
    assert set(rows) == want and rows[0] == ("bias" if "bias" in want else rows[0])
    assert _legend_texts(ax) == list(fits)
    for k, (name, est) in enumerate(fits.items()):
        c = to_rgba(f"C{k}")
        (means,) = [ln for ln in ax.get_lines() if ln.get_label() == name]
        have = [r for r in rows if r in est.active_names_]
        w = est.idata_["posterior"]["w"].sel(basis=have)
        np.testing.assert_allclose(means.get_xdata(), w.mean(("chain", "draw")).values)
        crosses = [ln for ln in ax.get_lines() if ln.get_marker() == "x"
                   and to_rgba(ln.get_color()) == c]  # fmt: skip
        assert sum(len(ln.get_xdata()) for ln in crosses) == len(rows) - len(have)
        # the thin interval is the equal-tailed 90% interval of the draws
        thin = [col for col in ax.collections if to_rgba(col.get_color()[0]) == c
                and col.get_linewidth()[0] == pytest.approx(1.2)]  # fmt: skip
        segs = np.array([s[:, 0] for s in thin[0].get_segments()])
        draws = w.values.reshape(-1, len(have))
        np.testing.assert_allclose(segs, np.quantile(draws, [0.05, 0.95], axis=0).T, rtol=1e-10)


def test_weights_forest_softmax_has_a_row_per_basis_and_class(three_classes):
    fit = three_classes[0]
    ax = plot_weights_forest({"reference": fit})
    rows = [t.get_text() for t in ax.get_yticklabels()]
    assert len(rows) == len(fit.active_names_) * fit.classes_.size
    (means,) = [ln for ln in ax.get_lines() if ln.get_label() == "reference"]
    assert len(means.get_xdata()) == len(rows)


# ---------------------------------------------------------------- solver traces


def test_solver_trace_draws_every_solver_from_its_trace(sinc):
    from rvm_pymc.basis import KernelBasis
    from rvm_pymc.kernels import RBF
    from rvm_pymc.reference import fit_regression

    X, t = sinc
    Phi = KernelBasis(RBF(gamma=0.5)).fit_transform(X)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # EM stopped at max_iter
        results = {m: fit_regression(Phi, t, method=m, max_iter=300) for m in ("mackay", "em")}
        results["fast"] = fit_regression(Phi, t, method="fast")
    ax_ev, ax_n = plot_solver_trace(results)
    assert len(_legend_texts(ax_ev)) == 3
    for line, (name, res) in zip(ax_ev.get_lines(), results.items(), strict=True):
        np.testing.assert_array_equal(line.get_ydata(), res.trace["log_evidence"])
        assert line.get_label().startswith(name)
    for line, res in zip(ax_n.get_lines(), results.values(), strict=True):
        np.testing.assert_array_equal(line.get_ydata(), res.trace["n_active"])
    # one result, named by its solver
    ax_one, _ = plot_solver_trace(results["fast"])
    assert [ln.get_label().split()[0] for ln in ax_one.get_lines()] == ["fast"]


def test_solver_trace_refuses_bad_input(sinc):
    X, _ = sinc
    # inputs are refused, not fitted (by a regression solver, whatever the targets)
    with pytest.raises(TypeError, match="draws fits and does not fit: fit first") as info:
        plot_solver_trace(X)
    assert "fit_classification for class labels" in str(info.value)
    with pytest.raises(ValueError, match="'log_evidence' and 'n_active'"):
        plot_solver_trace({"x": {"log_evidence": [1.0]}})
    with pytest.raises(ValueError, match="traces is empty"):
        plot_solver_trace({})


# ---------------------------------------------------------------- evidence vs CV


def test_evidence_vs_cv_twin_axes_and_best_marked(sinc):
    from sklearn.model_selection import KFold

    from rvm_pymc.model_selection import evidence_vs_cv

    X, t = sinc
    grid = [1.0, 0.05, 3.0, 0.3]  # unsorted on purpose; the evidence peaks inside
    res = evidence_vs_cv(RVR(), X, t, grid, cv=KFold(3, shuffle=True, random_state=0))
    ax, ax_cv = plot_evidence_vs_cv(res)
    assert ax_cv is not None and len(_legend_texts(ax)) == 2
    order = np.argsort(res["gamma"])
    ev = next(ln for ln in ax.get_lines() if ln.get_marker() == "o")
    np.testing.assert_array_equal(ev.get_xdata(), res["gamma"][order])
    np.testing.assert_array_equal(ev.get_ydata(), res["log_evidence"][order])
    (star,) = [ln for ln in ax.get_lines() if ln.get_marker() == "*"]
    assert star.get_xdata()[0] == res["gamma"][np.argmax(res["log_evidence"])]
    (star_cv,) = [ln for ln in ax_cv.get_lines() if ln.get_marker() == "*"]
    assert star_cv.get_xdata()[0] == res["gamma"][np.argmax(res["cv_score_mean"])]
    # an estimator fitted with gamma="evidence" has no CV score: evidence only
    est = RVR(gamma="evidence", gamma_grid=sorted(grid)).fit(X, t)
    ax, ax_cv = plot_evidence_vs_cv(est)
    assert ax_cv is None and len(_legend_texts(ax)) == 1
    with pytest.raises(ValueError, match="evidence_vs_cv"):
        plot_evidence_vs_cv({"gamma": [1.0]})


# ---------------------------------------------------------------- 2-D probability


def _contour_sets(ax, filled):
    return [c for c in ax.collections if isinstance(c, ContourSet) and c.filled == filled]


@pytest.mark.pymc
def test_class_probability_2d_one_fit_and_overlay(clf_fits, ripley):
    X, y = ripley[:2]
    ref = clf_fits["reference"]
    ax = plot_class_probability_2d(ref, X, y)
    assert len(_contour_sets(ax, True)) == 1 and len(_contour_sets(ax, False)) == 1
    assert _n_rings(ax, "k") == ref.n_relevance_
    assert len(_legend_texts(ax)) == 1 + 2  # the fit, the two classes
    # the drawn boundary is where the fit says p = 0.5
    (cs,) = _contour_sets(ax, False)
    pts = np.vstack(cs.allsegs[0])
    np.testing.assert_allclose(ref.predict_proba(pts)[:, 1], 0.5, atol=0.02)

    ax = plot_class_probability_2d(clf_fits, X, y)
    assert len(_contour_sets(ax, True)) == 0 and len(_contour_sets(ax, False)) == 3
    assert len(_legend_texts(ax)) == 3 + 2
    assert _n_rings(ax, "C2") == len(
        [n for n in _relevant_by_rule(clf_fits["nuts"]) if n != "bias"]
    )
    for k, est in enumerate(clf_fits.values()):
        if est.method != "nuts":
            assert _n_rings(ax, f"C{k}") == est.n_relevance_


def test_class_probability_2d_three_classes_and_bad_input(three_classes, sinc):
    fit, X, y = three_classes[:3]
    ax = plot_class_probability_2d(fit, X, y)
    assert len(ax.get_images()) == 1 and len(_contour_sets(ax, False)) == 1
    assert len(_legend_texts(ax)) == 1 + 3
    with pytest.raises(ValueError, match="X must have 2 features"):
        plot_class_probability_2d(fit, X[:, :1], y)
    with pytest.raises(ValueError, match="regression fit"):
        plot_class_probability_2d(RVR(gamma=0.5).fit(X, np.arange(X.shape[0], dtype=float)), X, y)
    with pytest.raises(ValueError, match="labels not among the classes"):
        plot_class_probability_2d(fit, X, np.full(X.shape[0], 7))


# ---------------------------------------------------------------- reliability


def _by_hand(p, hit, lo, n_bins):
    edges = np.linspace(lo, 1.0, n_bins + 1)
    xs, ys = [], []
    for b in range(n_bins):
        upper = p <= edges[b + 1] if b == n_bins - 1 else p < edges[b + 1]
        sel = (p >= edges[b]) & upper
        if sel.any():
            xs.append(p[sel].mean())
            ys.append(hit[sel].mean())
    return np.array(xs), np.array(ys)


@pytest.mark.pymc
def test_reliability_binary_is_counted_by_hand(clf_fits, ripley):
    X_test, y_test = ripley[2:]
    ax = plot_reliability(clf_fits, X_test, y_test, n_bins=5)
    texts = _legend_texts(ax)
    assert len(texts) == 3 and all("ECE" in s for s in texts)
    for name, est in clf_fits.items():
        (line,) = [ln for ln in ax.get_lines() if ln.get_label().startswith(name)]
        xs, ys = _by_hand(est.predict_proba(X_test)[:, 1], (y_test == 1).astype(float), 0.0, 5)
        np.testing.assert_allclose(line.get_xdata(), xs)
        np.testing.assert_allclose(line.get_ydata(), ys)


def test_reliability_multiclass_is_confidence_against_accuracy(three_classes, sinc):
    fit, _, _, X_test, y_test = three_classes
    ax = plot_reliability(fit, X_test, y_test, n_bins=4)
    P = fit.predict_proba(X_test)
    hit = (fit.classes_[P.argmax(1)] == y_test).astype(float)
    xs, ys = _by_hand(P.max(1), hit, 1 / 3, 4)
    (line,) = [ln for ln in ax.get_lines() if ln.get_label().startswith("reference")]
    np.testing.assert_allclose(line.get_xdata(), xs)
    np.testing.assert_allclose(line.get_ydata(), ys)
    assert ax.get_ylabel() == "accuracy"
    with pytest.raises(ValueError, match="needs classifiers"):
        plot_reliability(RVR(gamma=0.5).fit(*sinc), *sinc)
    with pytest.raises(ValueError, match="X_test must have 2 features"):
        plot_reliability(fit, X_test[:, :1], y_test)
    with pytest.raises(ValueError, match="n_bins"):
        plot_reliability(fit, X_test, y_test, n_bins=0)


def test_every_plot_draws_on_the_axes_given(sinc, ripley, three_classes):
    X, t = sinc
    Xc, yc, Xct, yct = ripley
    reg = {s: RVR(gamma=0.5, solver=s).fit(X, t) for s in ("fast", "mackay")}
    clf = {s: RVC(gamma=2.0, solver=s).fit(Xc, yc) for s in ("fast", "mackay")}
    fig, axes = plt.subplots(3, 3)
    a = axes.ravel()
    assert plot_predictive_1d(reg, X, t, ax=a[0], colors=["m", "y"]) is a[0]
    assert plot_log_alpha(reg, ax=a[1]) is a[1]
    assert plot_weights_forest(clf, ax=a[2]) is a[2]
    assert plot_class_probability_2d(clf, Xc, yc, ax=a[3]) is a[3]
    assert plot_reliability(clf, Xct, yct, ax=a[4]) is a[4]
    res = {"gamma": [0.1, 1.0], "log_evidence": [1.0, 2.0]}
    assert plot_evidence_vs_cv(res, ax=a[5]) == (a[5], None)
    trace = {"fast": {"log_evidence": [0.0, 1.0], "n_active": [1, 2]}}
    assert plot_solver_trace(trace, axes=(a[6], a[7])) == (a[6], a[7])
    assert len(fig.axes) == 9  # nothing drawn elsewhere (the one-fit colour bar is not used)
    means = [ln for ln in a[0].get_lines() if ln.get_label().startswith(("fast", "mackay"))]
    assert [ln.get_color() for ln in means] == ["m", "y"]
    with pytest.raises(ValueError, match="colors has 1 colours for 2 fits"):
        plot_log_alpha(reg, colors=["k"])
    with pytest.raises(ValueError, match="in none of the fits"):
        plot_log_alpha(reg, bases=["x999"])
    with pytest.raises(ValueError, match="weights differ in shape"):
        plot_weights_forest({"binary": clf["fast"], "softmax": three_classes[0]})


# ------------------------------------------------------------- readability


@pytest.mark.pymc
def test_log_alpha_shows_the_top_20_most_relevant_bases_by_default(reg_fits):
    ax = plot_log_alpha(reg_fits)
    every = 1 + len(reg_fits["nuts"].active_names_) - 1  # bias and 24 kernels
    assert every == 25
    shown = [t.get_text() for t in ax.get_xticklabels()]
    assert len(shown) == 20  # LOG_ALPHA_TOP
    # by hand: the best place of a basis in any fit's ranking by |E[w]| / sd(w)
    best = {}
    for est in reg_fits.values():
        post = est.posterior_
        names = list(post.basis_names)
        m = np.asarray(post.weight_mean()).reshape(len(names))
        if post.is_type_ii:
            sd = np.sqrt(np.diag(post.cov))
        else:
            sd = post.draws.reshape(-1, len(names)).std(axis=0)
        order = np.argsort(-np.abs(m) / sd, kind="stable")
        assert [names[i] for i in order] == rank_bases(est)
        for r, i in enumerate(order):
            best[names[i]] = min(best.get(names[i], r), r)
    natural = [f"x{i}" for i in range(24)]
    want = sorted(best, key=lambda n: (best[n], ["bias", *natural].index(n)))[:20]
    assert set(shown) == set(want)
    assert ax.figure.get_size_inches()[0] <= 0.3 * 20 + 2.0 + 1e-9
    assert "20 most relevant of 25 bases" in ax.get_title()
    assert len(plot_log_alpha(reg_fits, top=5).get_xticks()) == 5
    with pytest.raises(ValueError, match="top must be"):
        plot_log_alpha(reg_fits, top=0)


@pytest.mark.pymc
def test_legends_count_relevance_as_the_comparison_table(reg_fits, clf_fits, sinc, ripley):
    """One count everywhere: rvm_pymc.comparison.n_relevant (the bias not counted)."""
    ax = plot_predictive_1d(reg_fits, *sinc)
    for name, est in reg_fits.items():
        assert f"{name} ({n_relevant(est)} RVs)" in _legend_texts(ax)
        if name == "nuts":  # the sign rule, the bias not counted
            assert n_relevant(est) == len([n for n in _relevant_by_rule(est) if n != "bias"])
        else:  # the relevance vectors
            assert n_relevant(est) == est.n_relevance_
            assert n_relevant(est) == len([n for n in est.active_names_ if n != "bias"])
    ax = plot_class_probability_2d(clf_fits, *ripley[:2])
    for est in clf_fits.values():
        assert any(t.endswith(f", {n_relevant(est)} RVs") for t in _legend_texts(ax))


@pytest.mark.pymc
def test_predictive_1d_fits_differ_in_line_style_and_bands_stay_light(reg_fits, sinc):
    ax = plot_predictive_1d(reg_fits, *sinc)
    means = [ln for ln in ax.get_lines() if ln.get_label().startswith(tuple(reg_fits))]
    assert len({ln.get_linestyle() for ln in means}) == 3  # solid, dashed, dash-dot
    widths = [ln.get_linewidth() for ln in means]
    assert widths == sorted(widths, reverse=True)  # the first fit's mean is not hidden
    zs = [ln.get_zorder() for ln in means]
    assert zs == sorted(zs, reverse=True)
    fills = [c for c in ax.collections if not c.get_hatch()]
    assert all(c.get_alpha() <= 0.15 for c in fills)
    # every band edge is a thin line in the style of its fit
    for ln in means:
        edges = [e for e in ax.get_lines() if e.get_label() == "_nolegend_"
                 and e.get_marker() not in ("o", ".")
                 and to_rgba(e.get_color()) == to_rgba(ln.get_color())]  # fmt: skip
        assert len(edges) == 2 * 2
        assert {e.get_linestyle() for e in edges} == {ln.get_linestyle()}


@pytest.mark.pymc
def test_reliability_has_counts_per_bin_and_binomial_bands(clf_fits, ripley):
    from scipy.stats import binom

    X_test, y_test = ripley[2:]
    ax = plot_reliability(clf_fits, X_test, y_test, n_bins=5, band=0.9)
    for name, est in clf_fits.items():
        p = est.predict_proba(X_test)[:, 1]
        hit = (y_test == est.classes_[1]).astype(float)
        edges = np.linspace(0, 1, 6)
        which = np.clip(np.searchsorted(edges, p, side="right") - 1, 0, 4)
        n = np.bincount(which, minlength=5)
        keep = n > 0
        conf = np.bincount(which, weights=p, minlength=5)[keep] / n[keep]
        lo = binom.ppf(0.05, n[keep], conf) / n[keep]
        hi = binom.ppf(0.95, n[keep], conf) / n[keep]
        (bars,) = [c for c in ax.collections if c.get_gid() == f"binomial band: {name}"]
        segs = np.array(bars.get_segments())
        np.testing.assert_allclose(segs[:, 0, 0], conf)
        np.testing.assert_allclose(segs[:, 0, 1], lo)
        np.testing.assert_allclose(segs[:, 1, 1], hi)
        counts = [t.get_text() for t in ax.texts if t.get_gid() == f"bin count: {name}"]
        assert counts == [str(int(k)) for k in n[keep]]
        assert sum(map(int, counts)) == len(y_test) and hit.size == len(y_test)
    assert "90% binomial range" in ax.get_title()
    bare = plot_reliability(clf_fits, X_test, y_test, band=None, show_counts=False)
    assert not bare.texts and not [c for c in bare.collections if c.get_gid()]


@pytest.mark.pymc
def test_trace_plot_of_nuts_shows_log_beta_and_the_most_relevant_bases(reg_fits):
    nuts = reg_fits["nuts"]
    var_names, coords = trace_selection(nuts)
    assert var_names == ["log_beta", "w", "log_alpha"]
    assert set(coords["basis"]) == set(rank_bases(nuts)[:8]) and len(coords["basis"]) == 8
    plot_trace(nuts)  # az.plot_trace: one panel per variable and basis
    assert len([a for a in plt.gcf().axes if a.has_data()]) == 1 + 8 + 8
    plt.close("all")
    plot_trace(nuts, dist=True, compact=False)  # a density beside every trace
    assert len([a for a in plt.gcf().axes if a.has_data()]) == 2 * (1 + 8 + 8)
    assert trace_selection(nuts, top=None)[1]["basis"] == list(nuts.active_names_)
    ref_vars, _ = trace_selection(reg_fits["reference"], top=3)
    assert ref_vars == ["w"]  # a type-II fit samples only its weights


@pytest.mark.pymc
def test_arviz_trace_and_rank_plots_of_the_diagnostic_tree(reg_fits):
    """ArviZ refuses the 51 panels of a NUTS fit's idata_; the documented call draws 17."""
    import arviz as az

    nuts = reg_fits["nuts"]
    for plot in (az.plot_trace, az.plot_rank):
        with pytest.raises(ValueError, match="max_subplots"):
            plot(nuts.idata_)  # log_beta, then w and log_alpha of each of 25 bases
    tree = diagnostic_tree(nuts)
    var_names, coords = trace_selection(nuts)
    assert list(tree["posterior"].data_vars) == var_names == ["log_beta", "w", "log_alpha"]
    assert list(tree["posterior"]["basis"].values) == coords["basis"]
    assert set(tree.children) == {"posterior", "sample_stats"}
    for plot in (az.plot_trace, az.plot_rank):
        plot(tree)
        assert len([a for a in plt.gcf().axes if a.has_data()]) == 1 + 8 + 8
        plt.close("all")
    assert az.summary(diagnostic_tree(nuts, top=3)).shape[0] == 1 + 3 + 3


def test_diagnostic_tree_of_a_softmax_fit_stays_within_arviz_panel_limit():
    import arviz as az

    d = make_gaussian_mixture_classes(n_samples=60, n_test=10, n_classes=6, random_state=0)
    fit = RVC(gamma=1.0, draws=50, random_state=0).fit(d.X_train, d.t_train)
    tree = diagnostic_tree(fit)  # 8 bases x 6 classes would be 48 panels
    assert tree["posterior"]["W"].sizes == {"chain": 2, "draw": 50, "basis": 6, "class": 6}
    az.plot_trace(tree)
    assert len([a for a in plt.gcf().axes if a.has_data()]) == 36


@pytest.mark.pymc
def test_the_arviz_calls_documented_for_idata_run(reg_fits, ripley, three_classes):
    """Every code block of docs/comparison.md's "ArviZ on idata_" runs on the fits it names:
    the diagnostic tree of a NUTS fit and the posterior predictive check of every kind."""
    import re
    from pathlib import Path

    from rvm_pymc import RVP

    text = (Path(__file__).parents[1] / "docs" / "comparison.md").read_text(encoding="utf-8")
    section = text.split("### ArviZ on `idata_`", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    assert len(blocks) == 2 and "az.plot_trace(tree)" in blocks[0]
    assert "az.plot_ppc_pava(rvc.idata_)" in blocks[1]
    X, y, _, _ = ripley
    rng = np.random.default_rng(0)
    Xc = rng.uniform(-2, 2, size=(40, 1))
    names = {
        "est": reg_fits["nuts"],
        "rvr": reg_fits["reference"],
        "rvc": RVC(gamma=2.0, draws=100, random_state=0).fit(X, y),
        "rvc3": three_classes[0],
        "rvp": RVP(gamma=1.0, draws=100, random_state=0).fit(
            Xc, rng.poisson(np.exp(1 + Xc[:, 0]))
        ),
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ArviZ's notes on short chains
        namespace = dict(names)  # one session: the blocks in order, as a reader runs them
        for block in blocks:
            exec(block, namespace)  # the documentation's own code
    # the binary check is the PAV calibration plot: one panel of conditional event probability
    plt.close("all")
    import arviz as az

    az.plot_ppc_pava(names["rvc"].idata_)
    assert [a.get_ylabel() for a in plt.gcf().axes if a.has_data()] == ["CEP"]
