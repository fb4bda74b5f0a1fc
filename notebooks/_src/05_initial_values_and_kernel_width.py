# %% [markdown]
# # Initial values and kernel width
#
# Two questions the RVM literature keeps asking:
#
# 1. **Does the answer depend on where the solver starts?** The evidence of a
#    kernel RVM is multimodal, so MacKay's re-estimation, started from all
#    bases with a common initial precision `alpha_0` and an initial noise
#    precision `beta_0`, can stop at different local maxima. We tabulate the
#    log evidence, the sparsity and the cross-validated error over a grid of
#    starts on four data sets (noisy sinc, Friedman #1-#3; 100 training points
#    each, standardised, 3-fold CV: small, to keep the notebook quick).
# 2. **Evidence or cross-validation for the kernel width?** On Friedman #3
#    and on a linear trend plus noise, where the evidence is known to prefer
#    ever narrower kernels as the noise grows.

# %%
import warnings

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from IPython.display import display
from sklearn.model_selection import KFold

from rvm_pymc import RVR
from rvm_pymc.basis import KernelBasis
from rvm_pymc.datasets import make_friedman1, make_friedman2, make_friedman3, make_sinc
from rvm_pymc.kernels import RBF
from rvm_pymc.model_selection import evidence_vs_cv
from rvm_pymc.plotting import plot_evidence_vs_cv
from rvm_pymc.reference import fit_regression

warnings.simplefilter("ignore")  # convergence notes of the widest starts; counted below


def standardise(X, t):
    return (X - X.mean(0)) / X.std(0), (t - t.mean()) / t.std()


data = {
    "sinc": make_sinc(n_train=100, noise_sd=0.1, random_state=0),
    "Friedman #1": make_friedman1(n_train=100, random_state=0),
    "Friedman #2": make_friedman2(n_train=100, random_state=0),
    "Friedman #3": make_friedman3(n_train=100, random_state=0),
}
gamma = {"sinc": 0.5, "Friedman #1": 0.1, "Friedman #2": 0.5, "Friedman #3": 0.5}

# %% [markdown]
# ## The start of MacKay's updates
#
# `alpha_init` is the common initial precision of every basis, `beta_init`
# the initial noise precision, given here as the initial noise variance as
# a share of the target variance (the targets are standardised, so
# `beta_init = 1 / share`). For each start: the log evidence and number of
# relevance vectors of the fit on all 100 points, and the 3-fold
# cross-validated RMSE (in units of the target sd) of the same start.

# %%
alpha_starts = [1e-2, 1.0, 1e2]
noise_shares = [0.01, 0.1, 0.5]
folds = KFold(3, shuffle=True, random_state=0)
rows = []
for name, d in data.items():
    X, t = standardise(d.X_train, d.t_train)
    basis = KernelBasis(RBF(gamma=gamma[name]), bias=True)
    for a0 in alpha_starts:
        for share in noise_shares:
            kw = {"method": "mackay", "beta_init": 1.0 / share, "max_iter": 2000}
            Phi = basis.fit_transform(X)
            res = fit_regression(Phi, t, alpha_init=np.full(Phi.shape[1], a0), **kw)
            errors = []
            for tr, te in folds.split(X):
                b = KernelBasis(RBF(gamma=gamma[name]), bias=True)
                Pt = b.fit_transform(X[tr])
                r = fit_regression(Pt, t[tr], alpha_init=np.full(Pt.shape[1], a0), **kw)
                errors.append(np.mean((r.predict(b.transform(X[te])) - t[te]) ** 2))
            rows.append(
                {
                    "data": name,
                    "alpha_init": a0,
                    "noise share": share,
                    "log evidence": res.log_evidence,
                    "RVs": res.n_relevance,
                    "converged": res.converged,
                    "CV RMSE": np.sqrt(np.mean(errors)),
                }
            )
starts = pd.DataFrame(rows)
starts.pivot_table(
    index=["data", "alpha_init"], columns="noise share", values=["log evidence", "RVs", "CV RMSE"]
).round(3)

# %%
spread = starts.groupby("data").agg(
    evidence_range=("log evidence", lambda v: v.max() - v.min()),
    rv_min=("RVs", "min"),
    rv_max=("RVs", "max"),
    cv_rmse_min=("CV RMSE", "min"),
    cv_rmse_max=("CV RMSE", "max"),
    not_converged=("converged", lambda v: int((~v).sum())),
)
display(spread.round(3))

# %% [markdown]
# What the two tables say (this seeded run):
#
# * On the three Friedman problems the start moves the log evidence by 3 to
#   9 nats and the number of relevance vectors by up to a factor of three
#   (Friedman #1: 28 to 99), while the CV error barely moves (a few per cent):
#   different local maxima, similar predictions.
# * On sinc the start matters a great deal: a large initial precision
#   (`alpha_init = 100`) or a large initial noise stops MacKay's updates in a
#   poor local maximum, up to 50 nats below the best, with a CV error twice as
#   large; five of those nine starts also hit the 2000-iteration cap.
# * The best starts here are small precisions with a small initial noise.
#
# The estimators avoid the question for the default fit:
# `RVR(method="reference")` uses the fast algorithm, which starts from a
# single basis at its optimal precision and needs no `alpha_0`, and
# `method="map"` starts from that solution.

# %% [markdown]
# ## Kernel width: evidence against cross-validation on Friedman #3
#
# `rvm_pymc.model_selection.evidence_vs_cv` fits the estimator on all the
# data for the log evidence and by 5-fold cross-validation for the score
# (R^2), for each width of a grid.

# %%
d = data["Friedman #3"]
X3, t3 = standardise(d.X_train, d.t_train)
gammas = np.logspace(-2, 1.5, 12)
res3 = evidence_vs_cv(RVR(), X3, t3, gammas, cv=KFold(5, shuffle=True, random_state=0))
ax, _ = plot_evidence_vs_cv(res3)
ax.set_title("Friedman #3: log evidence and 5-fold CV R^2 over the RBF width")
print("width of largest evidence:", res3["gamma"][np.argmax(res3["log_evidence"])])
print("width of best CV score:   ", res3["gamma"][np.argmax(res3["cv_score_mean"])])

# %% [markdown]
# ## A linear trend plus noise
#
# `t = x + noise` on 60 points in [0, 1]. An RBF kernel can represent the line
# only with wide kernels; as the noise grows, the evidence finds the data
# better explained by a few narrow bumps plus noise, and its preferred width
# moves to narrower kernels (larger `gamma`), while cross-validation keeps
# preferring smooth fits.

# %%
rng = np.random.default_rng(0)
x = np.sort(rng.uniform(0, 1, 60))
grid = np.logspace(-1, 3, 13)
rows = []
fig, axes = plt.subplots(1, 3, figsize=(14, 3.8))
for ax, noise in zip(axes, [0.05, 0.2, 0.5], strict=True):
    t = x + noise * rng.standard_normal(x.size)
    r = evidence_vs_cv(RVR(), x[:, None], t, grid, cv=KFold(5, shuffle=True, random_state=0))
    plot_evidence_vs_cv(r, ax=ax)
    ax.set_title(f"noise sd {noise}")
    rows.append(
        {
            "noise sd": noise,
            "gamma (max evidence)": r["gamma"][np.argmax(r["log_evidence"])],
            "gamma (best CV)": r["gamma"][np.argmax(r["cv_score_mean"])],
        }
    )
fig.tight_layout()
display(pd.DataFrame(rows))

# %% [markdown]
# In this run the evidence picks ever narrower kernels as the noise grows
# (`gamma` 0.20, then 50, then the largest `gamma` of the grid, 1000), so at
# noise sd 0.5 it explains the line by a few narrow bumps plus noise;
# cross-validation stays at much wider kernels at the highest noise (4.6). On
# Friedman #3 the two disagree the same way: the evidence prefers a very
# narrow kernel (`gamma` 32 on standardised inputs), cross-validation a wide
# one (0.021). With 60 to 100 points the curves are flat near their maxima,
# so neighbouring widths are nearly as good.
#
# The evidence is a statement about the model class given the data;
# cross-validation measures prediction. When they disagree this much, the
# kernel family fits the data poorly (a line is not a sum of bumps), and a
# linear or polynomial basis (notebook 06) is a better fix than either width.
