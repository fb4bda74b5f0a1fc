# %% [markdown]
# # Classification: Ripley's mixture, breast cancer and three classes
#
# `RVC` fits the RVM classifier: a Bernoulli-logit likelihood for two
# classes, a softmax with one shared precision per basis for K > 2, and the
# Laplace approximation to the weight posterior inside the evidence
# (`docs/estimators.md`). This notebook uses the closed-form reference
# solver throughout (no PyMC compilation):
#
# 1. a Ripley-style two-class mixture in 2-D: probability contours and
#    relevance vectors;
# 2. moderated against mode probabilities;
# 3. calibration on scikit-learn's breast-cancer data;
# 4. a 3-class softmax RVM, with one-vs-rest beside it.

# %%
import time

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from IPython.display import display
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import brier_score_loss, log_loss
from sklearn.model_selection import train_test_split
from sklearn.multiclass import OneVsRestClassifier
from sklearn.preprocessing import StandardScaler

from rvm_pymc import RVC
from rvm_pymc.basis import KernelBasis
from rvm_pymc.datasets import make_gaussian_mixture_classes, make_ripley
from rvm_pymc.kernels import RBF
from rvm_pymc.plotting import plot_class_probability_2d, plot_reliability
from rvm_pymc.reference import fit_classification

# %% [markdown]
# ## Ripley's mixture
#
# 250 training and 1000 test points from two classes, each a mixture of two
# Gaussians (Ripley 1996); the Bayes error is about 8%. Tipping (2001) used a
# Gaussian kernel of width 0.5, i.e. `gamma = 1 / (2 * 0.5^2) = 2`, and
# reported 9.3% test error with 4 relevance vectors (on Ripley's own sample;
# this is a fresh draw from the same mixture).

# %%
X, y, X_test, y_test = make_ripley(n_train=250, n_test=1000, random_state=0)
t0 = time.perf_counter()
rvc = RVC(gamma=2.0, random_state=0).fit(X, y)
print(
    f"fit in {time.perf_counter() - t0:.2f} s: {rvc.n_relevance_} relevance vectors, "
    f"bias {'kept' if rvc.bias_active_ else 'pruned'}"
)
print(f"test error {np.mean(rvc.predict(X_test) != y_test):.3f}")
ax = plot_class_probability_2d(rvc, X, y)
ax.set_title("RVC on the Ripley mixture: P(class 1) and the relevance vectors")
plt.show()

# %% [markdown]
# ## Moderated against mode probabilities
#
# The weights have a (Laplace) posterior `N(mu, Sigma)`. The *mode*
# probability plugs in the most probable weights, `sigmoid(phi^T mu)`; the
# *moderated* probability averages the sigmoid over the weight posterior,
# approximately `sigmoid(kappa(s^2) phi^T mu)` with `s^2 = phi^T Sigma phi` and
# `kappa(s^2) = (1 + pi s^2 / 8)^(-1/2)` (MacKay 1992). `RVC.predict_proba`
# returns the moderated one. Moderation pulls probabilities towards 1/2
# where the weights are uncertain (far from the relevance vectors) and
# never changes the predicted class. The reference solver gives both:

# %%
basis = KernelBasis(RBF(gamma=2.0), bias=True)
res = fit_classification(basis.fit_transform(X), y)
Phi_test = basis.transform(X_test)
p_mod = res.predict_proba(Phi_test, moderated=True)[:, 1]
p_mode = res.predict_proba(Phi_test, moderated=False)[:, 1]
rows = {}
for name, p in [("mode", p_mode), ("moderated", p_mod)]:
    rows[name] = {
        "test error": np.mean((p > 0.5) != y_test),
        "log loss": log_loss(y_test, p),
        "Brier": brier_score_loss(y_test, p),
        "mean |p - 1/2|": np.mean(np.abs(p - 0.5)),
    }
print("same predicted class everywhere:", bool(np.all((p_mod > 0.5) == (p_mode > 0.5))))
display(pd.DataFrame(rows).T.round(4))

# %% [markdown]
# On this test set the two differ little (log loss 0.255 against 0.257): most
# test points lie where the weights are well determined. The difference shows
# away from the data, along a line through the plane:

# %%
g = np.linspace(-1.5, 1.5, 200)
line = np.column_stack([g, np.full_like(g, 0.4)])
Pl = basis.transform(line)
fig, ax = plt.subplots(figsize=(8, 3.5))
ax.plot(g, res.predict_proba(Pl, moderated=False)[:, 1], label="mode: sigmoid(phi^T mu)")
ax.plot(g, res.predict_proba(Pl, moderated=True)[:, 1], label="moderated")
ax.set_xlabel("x1 (along x2 = 0.4)")
ax.set_ylabel("P(class 1)")
ax.legend()
ax.set_title("moderation flattens the probability where the weights are uncertain")
plt.show()

# %% [markdown]
# ## Calibration on breast-cancer data
#
# scikit-learn's Wisconsin breast-cancer data (569 tumours, 30 features;
# bundled with scikit-learn, no download): a stratified 70/30 split, features
# standardised on the training part. Beside the RVC, an L2-regularised
# logistic regression on the raw features. A reliability diagram bins the
# predicted probability and plots the observed frequency in each bin;
# calibrated probabilities lie on the diagonal.

# %%
bc = load_breast_cancer()
Xb_tr, Xb_te, yb_tr, yb_te = train_test_split(
    bc.data, bc.target, test_size=0.3, stratify=bc.target, random_state=0
)
scaler = StandardScaler().fit(Xb_tr)
Xb_tr, Xb_te = scaler.transform(Xb_tr), scaler.transform(Xb_te)
t0 = time.perf_counter()
rvc_bc = RVC(gamma="evidence", random_state=0).fit(Xb_tr, yb_tr)
print(
    f"RVC: {time.perf_counter() - t0:.1f} s, gamma {rvc_bc.gamma_:.4g} (max evidence), "
    f"{rvc_bc.n_relevance_} relevance vectors of {len(yb_tr)} training points"
)
logreg = LogisticRegression(max_iter=1000).fit(Xb_tr, yb_tr)
rows = {}
for name, model in [("RVC", rvc_bc), ("logistic regression", logreg)]:
    p = model.predict_proba(Xb_te)[:, 1]
    rows[name] = {
        "test error": np.mean(model.predict(Xb_te) != yb_te),
        "log loss": log_loss(yb_te, p),
        "Brier": brier_score_loss(yb_te, p),
    }
display(pd.DataFrame(rows).T.round(4))
ax = plot_reliability({"RVC": rvc_bc}, Xb_te, yb_te, n_bins=8)
ax.set_title("breast cancer, 171 held-out tumours")
plt.show()

# %% [markdown]
# In this run the RVC makes 8 errors in 171 (4.7%) with 9 relevance vectors
# out of 398 training points; the logistic regression on all 30 features makes
# 7 and has half the log loss (0.085 against 0.168): the sparse kernel model
# buys its sparsity with probabilities that are less sharp here.
#
# With 171 test points most of them sit in the two extreme bins; the middle
# bins hold a handful each, so their scatter about the diagonal is mostly
# noise. The expected calibration error (ECE, in the legend) sums the gaps
# weighted by the bin counts.

# %% [markdown]
# ## Three classes: softmax RVM and one-vs-rest
#
# `RVC` on K > 2 classes fits *one* softmax model whose K weight vectors
# share one precision per basis, so a training point is relevant to all
# classes or to none. One-vs-rest (scikit-learn's `OneVsRestClassifier`
# around a binary `RVC`) fits K independent binary RVMs, each with its own
# relevance vectors, and normalises their probabilities.

# %%
d3 = make_gaussian_mixture_classes(
    n_samples=150, n_test=1000, n_classes=3, cluster_sd=0.7, random_state=0
)
soft = RVC(gamma=1.0, random_state=0).fit(d3.X_train, d3.t_train)
ovr = OneVsRestClassifier(RVC(gamma=1.0, random_state=0)).fit(d3.X_train, d3.t_train)
ovr_rvs = sorted(set().union(*(set(e.relevance_indices_) for e in ovr.estimators_)))
rows = {}
for name, model, n_rv in [
    ("softmax RVC", soft, soft.n_relevance_),
    ("one-vs-rest RVC", ovr, len(ovr_rvs)),
]:
    p = model.predict_proba(d3.X_test)
    rows[name] = {
        "test error": np.mean(model.predict(d3.X_test) != d3.t_test),
        "log loss": log_loss(d3.t_test, p, labels=soft.classes_),
        "relevance vectors (distinct points)": n_rv,
    }
display(pd.DataFrame(rows).T)
fig, axes = plt.subplots(1, 2, figsize=(12, 4.8))
plot_class_probability_2d(soft, d3.X_train, d3.t_train, ax=axes[0])
axes[0].set_title("softmax RVC: shared relevance vectors")
plot_class_probability_2d(
    ovr.estimators_[0], d3.X_train, d3.t_train == soft.classes_[0], ax=axes[1]
)
axes[1].set_title("one-vs-rest: the class-0-vs-rest member")
fig.tight_layout()

# %% [markdown]
# In this run the softmax RVM errs on 1.5% of the 1000 test points with 3
# relevance vectors shared by the three classes; one-vs-rest errs on 3.8% with
# 6 distinct relevance vectors over its three binary fits.
