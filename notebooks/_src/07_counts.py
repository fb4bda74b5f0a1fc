# %% [markdown]
# # Counts: a Poisson RVM on the Linnerud exercise data
#
# `RVP` is the RVM for counts: `y ~ Poisson(exp(phi(x)^T w))` (the log link),
# with the ARD prior `w_m ~ N(0, 1/alpha_m)` of `RVR` and `RVC`. It follows
# scikit-learn's `PoissonRegressor`: `predict` returns the mean count and
# `score` is D², the fraction of Poisson deviance explained.
#
# The data are scikit-learn's Linnerud set (shipped with scikit-learn, no
# download): 20 middle-aged men, their weight, waist and pulse, and the number
# of chin-ups each managed. Which of the three measurements tells how many
# chin-ups a man does? The basis here is the three standardised measurements
# themselves plus a bias (`PrecomputedBasis(bias=True)`: the design matrix is
# the input), so the ARD prior chooses among the measurements, not among
# training points. Three fits of the one model:
#
# - `"reference"`: the closed-form solver, type-II maximum likelihood of the
#   precisions with the Laplace approximation of the weights (the fast
#   method on the linearised problem);
# - `"map"`: the type-II MAP in PyMC, the exact Laplace evidence maximised
#   from the reference solution;
# - `"nuts"`: full Bayes at the estimator's defaults: the
#   `"weakly_informative"` hyperprior with a slab of scale 5 on the weights
#   (`"weakly_informative_slab"`), 2 chains of at most 2000 draws after 1000
#   tuning steps, stopped once the draws pass the convergence check (the first
#   run on a machine spends a minute or more compiling).

# %%
import warnings

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from IPython.display import display
from sklearn.datasets import load_linnerud

from rvm_pymc import RVP, compare
from rvm_pymc.basis import PrecomputedBasis

warnings.formatwarning = lambda message, category, *args, **kwargs: (
    f"{category.__name__}: {message}\n"
)
data = load_linnerud(as_frame=True)
names = ["Weight", "Waist", "Pulse"]
X_raw = data.target[names].to_numpy(float)  # scikit-learn files the measurements as targets
y = data.data["Chins"].to_numpy()
mean, sd = X_raw.mean(axis=0), X_raw.std(axis=0)
X = (X_raw - mean) / sd
print("chin-ups:", y.astype(int).tolist())

# %% [markdown]
# ## Three fits
#
# The columns are named `bias`, `c0` (weight), `c1` (waist) and `c2` (pulse).

# %%
fits = {}
for method in ["reference", "map", "nuts"]:
    extra = {}
    if method == "nuts":
        extra = {"sampler_kwargs": {"progressbar": False}}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        # PyMC forks a process per chain; Python 3.12 warns about any fork of a
        # process with threads (here the notebook kernel's own), not a problem of the fit
        warnings.filterwarnings("ignore", "This process .* use of fork", DeprecationWarning)
        fits[method] = RVP(
            kernel=PrecomputedBasis(bias=True), method=method, random_state=0, **extra
        ).fit(X, y)
    for w in caught:
        print(f"{method}: {type(w.message).__name__}: {w.message}")
rows = {}
for method, f in fits.items():
    sd_w = np.sqrt(np.diag(f.sigma_))
    weights = zip(f.active_names_, f.coef_, sd_w, strict=True)
    rows[method] = {
        "active bases": ", ".join(f.active_names_),
        **{f"w[{n}]": f"{m:+.3f} ± {s:.3f}" for n, m, s in weights},
        "log evidence": f.log_evidence_,
        "D² (training)": f.score(X, y),
    }
display(pd.DataFrame(rows).T.fillna(""))

# %% [markdown]
# The evidence keeps the waist and prunes weight and pulse: given the waist,
# neither moves the expected count. The MAP, started from the reference
# solution, maximises the exact Laplace evidence, whose optimum differs from
# the reference solver's fixed point (which holds the curvature of the
# likelihood fixed at the mode) by a term of order 1/N: the same active set
# and weights to about three decimals. NUTS keeps every basis, but the
# posterior of the weight and pulse coefficients sits on zero, and its waist
# coefficient agrees with the type-II fits within its posterior sd.
#
# ## Mean count and 90% predictive interval against the waist
#
# The other two measurements at their means. The predictive distribution of
# a count is a Poisson mixed over the posterior of its rate: the
# Poisson-lognormal of the Laplace posterior (by quadrature) for the type-II
# fits, the draws for NUTS.

# %%
waist = np.linspace(X_raw[:, 1].min() - 2, X_raw[:, 1].max() + 2, 101)
grid = np.tile(mean, (waist.size, 1))
grid[:, 1] = waist
G = (grid - mean) / sd
fig, ax = plt.subplots(figsize=(8, 4.5))
ax.plot(X_raw[:, 1], y, "k.", ms=8, label="men")
for (method, f), colour in zip(fits.items(), ["C0", "C1", "C2"], strict=True):
    lo, hi = f.predict_interval(G, 0.9)
    ax.plot(waist, f.predict(G), color=colour, label=f"{method}: mean count")
    ax.fill_between(waist, lo, hi, step="mid", color=colour, alpha=0.12)
ax.set_xlabel("waist (inches)")
ax.set_ylabel("chin-ups")
ax.set_title("RVP on Linnerud: mean and 90% predictive interval")
ax.legend(fontsize="small")
plt.show()

# %% [markdown]
# ## The fits compared
#
# `rvm_pymc.compare` puts PSIS-LOO of each fit side by side (the Poisson
# log predictive density of every point left out, `elpd_loo`), with the
# effective number of parameters. LOO of a type-II fit keeps the
# hyperparameters fitted on every point (`loo_optimistic`), so it flatters
# the reference and MAP fits; with 20 points, k-fold refitting (the honest
# yardstick) would be noisy too.

# %%
table = compare(fits, random_state=0)
cols = ["method", "prior", "n_relevant", "effective_parameters", "log_evidence",
        "elpd_loo", "elpd_loo_se", "p_loo", "loo_optimistic", "pareto_k_bad",
        "divergences", "max_rhat"]  # fmt: skip
display(table[cols])

# %% [markdown]
# The two type-II fits agree with each other to the digits shown. NUTS has no
# evidence (it integrates over the precisions); its chains converged (no
# divergence, R-hat under the package's bar) and every Pareto k is below ArviZ's
# threshold, so its PSIS-LOO is reliable. It is about 2 nats below the
# type-II fits', well within one standard error (about 6), and theirs is
# flattered (`loo_optimistic`); NUTS pays for its three small weights
# with a larger `p_loo`. Without the slab (`prior="weakly_informative"`)
# the same run had 20 divergent transitions.
