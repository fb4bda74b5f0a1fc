# %% [markdown]
# # The Bayesian workflow for relevance vector regression
#
# Noisy sinc (Tipping 2001): 100 points `x` in [-10, 10], `t = sin(x)/x`
# plus Gaussian noise of sd 0.1; an RBF kernel column per training point
# plus a bias (101 bases). The steps:
#
# 1. the prior predictive: what the model says before seeing the data;
# 2. the reference fit (type-II maximum likelihood, closed form), with the
#    kernel width chosen by the evidence;
# 3. type-II MAP in PyMC (the same objective, started from the reference);
# 4. full Bayes by NUTS (collapsed sampler: NUTS on the log precisions, the
#    weights drawn exactly given them);
# 5. ArviZ diagnostics of the sampler;
# 6. a posterior predictive check;
# 7. predictive bands of the three fits and their relevance vectors.
#
# NUTS runs the estimator's defaults: 2 chains of at most 2000 draws after
# 500 tuning steps, stopped at the first checkpoint (500 draws a chain, then
# every 250) whose draws pass the convergence check, started at the reference
# fit (sampling takes seconds; a first
# run on a fresh machine spends a minute or more compiling the model with
# Numba, later runs reuse the cache). All seeds are fixed.

# %%
import time
import warnings

import arviz_stats as azs
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pymc as pm
from IPython.display import display

from rvm_pymc import RVR, models
from rvm_pymc.basis import KernelBasis
from rvm_pymc.comparison import summary
from rvm_pymc.datasets import make_sinc, sinc
from rvm_pymc.kernels import RBF
from rvm_pymc.plotting import plot_log_alpha, plot_predictive_1d


def short_warning(message, category, filename, lineno, line=None):
    """A warning as ``Category: message``, without the file and line that raised it."""
    return f"{category.__name__}: {message}\n"


warnings.formatwarning = short_warning  # warnings stay visible, shorter

X, t, X_test, f_test = make_sinc(n_train=100, noise_sd=0.1, random_state=0)
x = X[:, 0]

# %% [markdown]
# ## 1. Prior predictive
#
# The estimators fit on a standard scale: unit-RMS basis columns and
# standardised targets (`docs/estimators.md`). On that scale the
# `"weakly_informative"` hyperprior (the default of `method="nuts"`) puts
# Gamma priors on every precision. Before fitting, draw functions and data
# from the prior of the joint model `rvm_pymc.models.regression_joint` (200
# draws; `FAST_COMPILE`, since forward sampling needs no fast gradients).

# %%
basis = KernelBasis(RBF(gamma=0.5), bias=True)
Phi = basis.fit_transform(X)
col = np.sqrt(np.mean(Phi**2, axis=0))
ts = (t - t.mean()) / t.std()
with models.regression_joint(Phi / col, ts, prior="weakly_informative"):
    prior = pm.sample_prior_predictive(
        draws=200, random_seed=0, compile_kwargs={"mode": "FAST_COMPILE"}
    )
t_prior = prior.prior_predictive["t_obs"].values.reshape(-1, x.size)
order = np.argsort(x)
fig, ax = plt.subplots(figsize=(8, 3.5))
for draw in t_prior[:15]:
    ax.plot(x[order], draw[order], color="C0", alpha=0.35, lw=0.8)
ax.plot(x, ts, "k.", ms=4, label="the data (standardised)")
ax.set_title("prior predictive: 15 data sets drawn from the prior (standardised scale)")
ax.legend()
plt.show()
q = np.quantile(np.abs(t_prior), [0.5, 0.9, 0.99])
print(
    f"prior predictive |t|: median {q[0]:.2f}, 90% {q[1]:.2f}, 99% {q[2]:.2f} "
    f"(the data: max {np.abs(ts).max():.2f})"
)

# %% [markdown]
# The prior allows data sets on the scale of the standardised data and
# larger, with any mixture of smooth and rough shapes: it is weakly
# informative, not flat, and does not rule out what we see.
#
# ## 2. Reference fit, width by the evidence
#
# `gamma="evidence"` fits the closed-form solver for every width of a grid,
# refines the best on a continuous scale and keeps the width of largest log
# evidence.

# %%
t0 = time.perf_counter()
ref = RVR(gamma="evidence", random_state=0).fit(X, t)
print(
    f"{time.perf_counter() - t0:.2f} s; gamma {ref.gamma_:.3g}; {ref.n_relevance_} relevance "
    f"vectors; noise sd {np.sqrt(ref.noise_var_):.4f} (true 0.1)"
)
path = ref.evidence_path_
fig, ax = plt.subplots(figsize=(6, 3))
order = np.argsort(path["gamma"])  # the grid, then the refinement: plot by width
ax.semilogx(path["gamma"][order], path["log_evidence"][order], "o-")
ax.axvline(ref.gamma_, color="0.5", ls="--")
ax.set_xlabel("gamma")
ax.set_ylabel("log evidence")
plt.show()

# %% [markdown]
# ## 3. Type-II MAP in PyMC
#
# The same objective (flat prior on the log precisions, the evidence
# approximation) maximised by L-BFGS in PyMC, started from the reference
# solution: it must return it.

# %%
t0 = time.perf_counter()
fit_map = RVR(gamma=ref.gamma_, method="map", random_state=0).fit(X, t)
print(f"{time.perf_counter() - t0:.1f} s (compilation included)")
print("same relevance vectors:", set(fit_map.relevance_indices_) == set(ref.relevance_indices_))
print(f"log evidence: reference {ref.log_evidence_:.6f}, map {fit_map.log_evidence_:.6f}")

# %% [markdown]
# Started at the reference optimum, L-BFGS returns it: the same relevance
# vectors and the same log evidence to six decimals, without a warning.
#
# ## 4. Full Bayes by NUTS
#
# Under the `"weakly_informative"` hyperprior (the flat prior of type-II ML
# makes the posterior improper), at the same width.

# %%
t0 = time.perf_counter()
nuts = RVR(
    gamma=ref.gamma_,
    method="nuts",
    random_state=0,
    sampler_kwargs={"progressbar": False},
).fit(X, t)
print(f"{time.perf_counter() - t0:.0f} s (compilation included)")
attrs = nuts.idata_.attrs
print(
    f"divergences {attrs['n_divergent']}, max R-hat {attrs['max_rhat']:.3f}, "
    f"min bulk / tail ESS {attrs['min_ess_bulk']:.0f} / {attrs['min_ess_tail']:.0f}, "
    f"converged {nuts.converged_}"
)

# %% [markdown]
# ## 5. Diagnostics
#
# `rvm_pymc.comparison.summary` is ArviZ's summary of the log precisions and
# the noise, with the RVM's own warnings (R-hat above 1.01, bulk ESS below
# 400); shown are the 8 rows of largest R-hat, the worst mixed. Below it, the
# chains of `log_beta` and of the three least shrunk `log_alpha`, and the bulk
# ESS of every `log_alpha`.

# %%
table = summary(nuts)
display(table.sort_values("r_hat", ascending=False).head(8).round(3))
post = nuts.idata_.posterior
la = post["log_alpha"]
lowest = la.median(("chain", "draw")).values.argsort()[:3]
fig, axes = plt.subplots(1, 2, figsize=(12, 3.2))
for c in range(post.sizes["chain"]):
    axes[0].plot(post["log_beta"].values[c], lw=0.6, label=f"chain {c}")
    for b in lowest:
        axes[1].plot(la.values[c, :, b], lw=0.5, color=f"C{c}")
axes[0].set_title("log beta")
axes[0].legend()
axes[1].set_title("log alpha of the 3 least shrunk bases")
plt.show()
ess = azs.ess(nuts.idata_, var_names=["log_alpha"])["log_alpha"].values
print(
    f"bulk ESS of log alpha: min {ess.min():.0f}, median {np.median(ess):.0f} "
    f"of {post.sizes['chain'] * post.sizes['draw']} draws"
)

# %% [markdown]
# At the estimator's defaults the chains mix: no divergence, every R-hat
# (bulk and tail) at most 1.01 and both ESS above 400, so `converged_` is
# True and `summary` does not warn; with `draws=None` that check is also where
# NUTS stopped (`max_draws` in the tree's attributes is the most it would have
# taken). With 500 tuning steps and a fixed 500 draws (this notebook's setting
# before) the worst `log alpha` had R-hat 1.019 and a tail ESS of 300: those
# precisions sit on a flat ridge of the posterior (the data do not tell their
# bases apart), and need the longer chains, which the stopping rule runs
# until they pass.
#
# ## 6. Posterior predictive check
#
# `idata_.posterior_predictive` holds one replicate of the training targets
# per draw. If the model fits, the observed data look like a typical
# replicate: here the distribution of two summaries of the targets (their sd
# and their largest value) and of the lag-1 autocorrelation of
# the targets sorted by `x` (which a too-smooth or too-rough fit gets wrong).

# %%
rep = nuts.idata_.posterior_predictive["t_obs"].values.reshape(-1, x.size)
by_x = np.argsort(x)  # (`order` above sorts the widths of the evidence path)


def stats(tt):
    s = tt[..., by_x]
    d = s - s.mean(-1, keepdims=True)
    return {
        "sd": tt.std(-1),
        "max": tt.max(-1),
        "lag-1 autocorrelation": (d[..., 1:] * d[..., :-1]).mean(-1) / d.var(-1),
    }


obs, sim = stats(t), stats(rep)
# the summary under each panel, its p-value above: three long titles in a row overlapped
fig, axes = plt.subplots(1, 3, figsize=(13, 3.4), layout="constrained")
for ax, k in zip(axes, obs, strict=True):
    ax.hist(sim[k], bins=30, color="C0", alpha=0.6)
    ax.axvline(obs[k], color="k", lw=2)
    p = np.mean(sim[k] >= obs[k])
    ax.set_xlabel(k)
    ax.set_title(f"P(replicate >= observed) = {p:.2f}", fontsize=10)
fig.suptitle("replicates (histogram) against the observed targets (black line)")
plt.show()

# %% [markdown]
# Posterior predictive p-values near 0 or 1 would flag a misfit; values in
# between say these features of the data are typical under the model.
#
# ## 7. Predictive bands and relevance vectors
#
# The predictive mean with 50% and 95% bands (noise included) of the three
# fits; each fit's relevance vectors ringed in its colour. NUTS prunes
# nothing: a basis counts as relevant when the central 90% interval of its
# weight excludes zero (`rvm_pymc.comparison.relevant_bases`); here none
# does, as the function is spread over many small weights.

# %%
fits = {"reference": ref, "map": fit_map, "nuts": nuts}
fig, ax = plt.subplots(figsize=(10, 4.5))
plot_predictive_1d(fits, X, t, truth=sinc, ax=ax)
plt.show()
rows = {}
for name, f in fits.items():
    m, s = f.predict(X_test, return_std=True)
    rows[name] = {
        "RMSE vs sinc": np.sqrt(np.mean((m - f_test) ** 2)),
        "mean predictive sd": s.mean(),
        "noise sd": np.sqrt(f.noise_var_),
    }
display(pd.DataFrame(rows).T.round(4))

# %% [markdown]
# The posterior of `log alpha` of the bases the reference fit keeps (NUTS:
# interval; type-II fits: points):

# %%
plot_log_alpha(fits, bases=list(ref.active_names_))
plt.show()

# %% [markdown]
# Reference and MAP agree exactly (same objective, same start). NUTS, under
# a proper prior and averaging over the precisions, keeps many more bases
# with small weights; its predictive mean is close to the type-II one and
# its bands are a little wider where the data are sparse. Notebook 03
# compares the three by held-out and cross-validated predictive density.
