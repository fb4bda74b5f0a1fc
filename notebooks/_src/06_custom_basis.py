# %% [markdown]
# # Your own basis: a cubic polynomial on eight points
#
# The RVM needs a design matrix, not a kernel. Here the basis is the
# polynomial `[1, x, x^2, x^3]` (`rvm_pymc.basis.polynomial_basis(3)`),
# and the data are eight points:
#
# | x | 1 | 3 | 5 | 6 | 7 | 8 | 8.5 | 9 |
# |---|---|---|---|---|---|---|---|---|
# | t | 3 | -2 | 3 | 8 | 20 | 12 | 7 | 10 |
#
# We fit it by the three methods of `RVR` and draw the 95% predictive band of
# each: the reference solver (type-II maximum likelihood of the precisions,
# closed form), the type-II MAP in PyMC (the same objective, started from the
# reference solution) and NUTS (full Bayes under the `"weakly_informative"`
# hyperprior, since the flat prior of type-II ML gives an improper posterior).
# NUTS runs 2 chains of 1000 draws after 1000 tuning steps (PyTensor's
# default Numba backend: the first run on a machine spends a minute or more
# compiling, later runs reuse the cache).

# %%
import warnings

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from IPython.display import display

from rvm_pymc import RVR
from rvm_pymc.basis import polynomial_basis
from rvm_pymc.plotting import plot_log_alpha, plot_predictive_1d
from rvm_pymc.reference import fit_regression

x = np.array([1, 3, 5, 6, 7, 8, 8.5, 9.0])
t = np.array([3, -2, 3, 8, 20, 12, 7, 10.0])
X = x[:, None]
basis = polynomial_basis(3)
print(basis.fit_transform(X)[:3])  # columns 1, x, x^2, x^3

# %% [markdown]
# ## Three fits of one model
#
# The polynomial basis has its own constant column, and with a basis of one's
# own the estimator adds none; its `bias=True` (the default) still centres the
# targets (`bias=False` would fit them uncentred: the last section). Every fit
# works on unit-RMS columns and standardised targets and reports in the units
# of the data (`docs/estimators.md`, "Scaling: one boundary").

# %%
nuts_kw = {"progressbar": False}
fits = {}
for method in ["reference", "map", "nuts"]:
    extra = {"sampler_kwargs": nuts_kw, "draws": 1000, "tune": 1000} if method == "nuts" else {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        # PyMC forks a process per chain; Python 3.12 warns about any fork of a
        # process with threads (here the notebook kernel's own), not a problem of the fit
        warnings.filterwarnings("ignore", "This process .* use of fork", DeprecationWarning)
        fits[method] = RVR(kernel=basis, method=method, random_state=0, **extra).fit(X, t)
    for w in caught:
        print(f"{method}: {type(w.message).__name__}: {w.message}")
rows = {}
for name, f in fits.items():
    rows[name] = {
        "active bases": ", ".join(f.active_names_),
        "noise sd": np.sqrt(f.noise_var_),
        "log evidence": f.log_evidence_,
        "converged": f.converged_,
    }
display(pd.DataFrame(rows).T)

# %% [markdown]
# ## The 95% predictive bands
#
# The band is `mean ± 1.96 sd` of the predictive distribution (noise
# included): exact for the two type-II fits; for NUTS the predictive mean
# and sd of the posterior draws (a Gaussian summary of a mixture).

# %%
grid = np.linspace(0, 10, 201)[:, None]
fig, ax = plt.subplots(figsize=(8, 4.5))
plot_predictive_1d(fits, X, t, grid, bands=(0.95,), ax=ax)
ax.set_ylim(-25, 40)
ax.set_title("cubic polynomial RVM: 95% predictive bands")
plt.show()

# %%
at = np.array([0.0, 2.0, 4.0, 8.0, 10.0])[:, None]
table = {}
for name, f in fits.items():
    m, s = f.predict(at, return_std=True)
    table[(name, "mean")] = m
    table[(name, "95% half-width")] = 1.96 * s
display(pd.DataFrame(table, index=pd.Index(at[:, 0], name="x")).round(2))

# %% [markdown]
# ## Which powers of x matter
#
# Type-II ML prunes the columns whose precision runs to infinity; NUTS
# prunes nothing, and its posterior of `log alpha` shows the relevance
# instead: a large `log alpha` shrinks that weight towards zero. The
# precisions are in the units of the data (a weight of `x^3` multiplies
# values up to 729), so compare a column across fits, not columns with each
# other.

# %%
plot_log_alpha(fits)
plt.show()

# %%
la = fits["nuts"].idata_.posterior["log_alpha"]
display(la.quantile([0.05, 0.5, 0.95], dim=("chain", "draw")).to_pandas().T.round(2))

# %% [markdown]
# ## What centring the targets does
#
# The estimators centre the targets (`y_offset_`) before fitting, unless
# `bias=False`, so the constant column competes with the mean already taken
# out. On these eight points the evidence then prefers (almost) no basis at
# all: a flat line at the mean with a noise sd of about 6. The closed-form
# solver on the raw, uncentred targets (unit-RMS columns, all three update
# rules; the fit of `RVR(kernel=basis, bias=False)`) keeps the single column
# `x` instead: a line through the origin.

# %%
P = basis.fit_transform(X)
scale = np.sqrt(np.mean(P**2, axis=0))
rows = {}
for method in ["fast", "mackay", "em"]:
    r = fit_regression(P / scale, t, method=method, max_iter=5000)
    names = [["1", "x", "x^2", "x^3"][i] for i in r.active]
    rows[method] = {
        "kept": ", ".join(names),
        "log evidence": r.log_evidence,
        "noise sd": r.beta**-0.5,
    }
display(pd.DataFrame(rows).T.round(3))

# %% [markdown]
# What to read from it (this seeded run): with eight points and a noise sd
# of about 6, the evidence does not support a cubic. After centring, MAP keeps
# no basis at all and predicts the mean, 7.6, with a 95% half-width of 12.3
# everywhere; reference keeps one `x^3` weight, and it and NUTS (which
# averages over the precisions) rise a little towards x = 10: reference from
# 7.6 at x = 0 to 9.3, NUTS from 7.5 to 9.3, their bands widening beyond the
# data (half-width 13.5 at x = 10 for both, against 12.3 for MAP). Without
# centring the solver keeps `x` alone. The noise dominates every band: eight
# points cannot pin down a cubic.
