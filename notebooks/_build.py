"""Build the notebooks from the cell lists below (run: python notebooks/_build.py).

Notebooks are generated so that their source stays reviewable as plain Python;
tests/test_notebooks.py executes every notebook in this folder.
"""

from pathlib import Path

import nbformat

HERE = Path(__file__).parent

REGRESSION = [
    ("md", """# Relevance vector regression with the reference solver

Noisy sinc (Tipping 2001): 100 points, Gaussian noise sd 0.1. We fit the RVM
with the three reference methods, compare their evidence, sparsity and test
error, and choose the RBF width by the evidence."""),
    ("code", """import time

import matplotlib.pyplot as plt
import numpy as np

from rvm_pymc.basis import KernelBasis
from rvm_pymc.datasets import make_sinc
from rvm_pymc.kernels import RBF
from rvm_pymc.plotting import plot_regression_1d
from rvm_pymc.reference import fit_regression

X, t, X_test, t_test = make_sinc(n_train=100, noise_sd=0.1, random_state=0)"""),
    ("md", "## Choosing the width by the evidence"),
    ("code", """gammas = [0.05, 0.1, 0.2, 0.5, 1.0, 2.0]
fits = {}
for g in gammas:
    basis = KernelBasis(RBF(gamma=g), bias=True)
    res = fit_regression(basis.fit_transform(X), t, method="fast")
    rmse = np.sqrt(np.mean((res.predict(basis.transform(X_test)) - t_test) ** 2))
    fits[g] = (basis, res)
    print(f"gamma={g:<5} log evidence={res.log_evidence:8.3f}  RVs={res.n_relevance:2d}  "
          f"test RMSE={rmse:.4f}")
best = max(fits, key=lambda g: fits[g][1].log_evidence)
print("chosen gamma:", best)"""),
    ("md", """## Three methods, one objective

`fast` (Tipping & Faul 2003), `mackay` and `em` maximise the same evidence.
The evidence is multimodal, so from their default starts they can stop at
different local maxima; started from the fast solution the other two stay put."""),
    ("code", """basis, _ = fits[best]
Phi, Phi_test = basis.fit_transform(X), basis.transform(X_test)
for method in ["fast", "mackay", "em"]:
    t0 = time.perf_counter()
    res = fit_regression(Phi, t, method=method, max_iter=None if method != "em" else 2000)
    dt = time.perf_counter() - t0
    rmse = np.sqrt(np.mean((res.predict(Phi_test) - t_test) ** 2))
    print(f"{method:7s} log evidence={res.log_evidence:8.3f} RVs={res.n_relevance:3d} "
          f"RMSE={rmse:.4f} noise sd={res.beta ** -0.5:.4f} iters={res.n_iter:5d} "
          f"{dt * 1e3:7.1f} ms")"""),
    ("code", """res = fit_regression(Phi, t, method="fast")
mean, sd = res.predict(Phi_test, return_std=True)
ax = plot_regression_1d(X[:, 0], t, X_test[:, 0], mean, sd, res.active[res.active > 0] - 1,
                        truth=t_test, title="fast RVM on sinc")
fig, ax2 = plt.subplots(figsize=(8, 3))
ax2.plot(res.trace["log_evidence"])
ax2.set_xlabel("iteration")
ax2.set_ylabel("log evidence")
ax3 = ax2.twinx()
ax3.plot(res.trace["n_active"], color="C1")
ax3.set_ylabel("relevance vectors")
assert np.all(np.diff(res.trace["log_evidence"]) > -1e-8)"""),
]


EVIDENCE_VS_NUTS = [
    ("md", """# The evidence approximation against full Bayes (PyMC)

Noisy sinc again (100 points, noise sd 0.1), an RBF kernel column per point
plus a bias. Three fits of the one RVM model:

1. **type-II maximum likelihood** (Tipping's RVM: flat prior on the log
   precisions, weights integrated out) with the reference solver;
2. **type-II MAP in PyMC** with the proper `"weakly_informative"` prior, checked
   against the reference solver's MacKay fixed point under the same prior;
3. **full Bayes**: NUTS on `(log alpha, log beta)` of the marginal model with the
   same prior, then an exact draw of the weights per draw (the collapsed sampler).

The proper prior is stated for standardised targets and unit-RMS columns, so
all three work on that scale and predictions are transformed back."""),
    ("code", """import time
import warnings

import arviz_stats as azs
import matplotlib.pyplot as plt
import numpy as np

from rvm_pymc import inference, models
from rvm_pymc.basis import KernelBasis
from rvm_pymc.datasets import make_sinc
from rvm_pymc.kernels import RBF
from rvm_pymc.reference import fit_regression

X, t, X_test, f_test = make_sinc(n_train=100, noise_sd=0.1, random_state=0)
t_new = f_test + 0.1 * np.random.default_rng(1).standard_normal(f_test.size)  # fresh noisy targets
basis = KernelBasis(RBF(length_scale=2.0), bias=True)
Phi, Phi_test = basis.fit_transform(X), basis.transform(X_test)
t_mean, t_sd = t.mean(), t.std()
col = np.sqrt(np.mean(Phi**2, axis=0))
ts, Ps, Ps_test = (t - t_mean) / t_sd, Phi / col, Phi_test / col
M = Ps.shape[1]"""),
    ("md", "## Type-II maximum likelihood and type-II MAP"),
    ("code", """ml = fit_regression(Ps, ts, method="fast", prior="evidence")
mackay = fit_regression(Ps, ts, method="mackay", prior="weakly_informative")
t0 = time.perf_counter()
fit = inference.fit_map(models.regression_marginal(Ps, ts, prior="weakly_informative"),
                        random_seed=0)
print(f"type-II MAP in PyMC: {time.perf_counter() - t0:.1f} s")
alpha_map = np.exp(fit.constant_data["log_alpha"].values)
print(f"objective J: reference MacKay {mackay.log_evidence:.6f}, "
      f"PyMC {fit.attrs['log_evidence']:.6f}")
dla = np.log(alpha_map) - np.log(mackay.alpha_full())
print("max |log alpha difference|:", np.max(np.abs(dla)))
print(f"type-II ML keeps {ml.n_relevance} of {M} bases; under the proper prior every alpha is "
      f"finite (largest {alpha_map.max():.1f} = about (1 + 2a)/(2b))")
assert abs(fit.attrs["log_evidence"] - mackay.log_evidence) <= 1e-6 * abs(mackay.log_evidence)"""),
    ("md", "## Full Bayes: the collapsed sampler"),
    ("code", """t0 = time.perf_counter()
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    post = inference.sample_collapsed(
        models.regression_marginal(Ps, ts, prior="weakly_informative"),
        draws=1000, tune=1000, chains=2, random_seed=0,
    )
print(f"{time.perf_counter() - t0:.0f} s, compilation included")
print("sampling warnings:", [str(w.message) for w in caught
                             if type(w.message).__name__ == "SamplingWarning"] or "none")
print("divergences:", int(post.sample_stats["diverging"].sum()))
assert int(post.sample_stats["diverging"].sum()) == 0
print("min bulk ESS over log beta and the log alphas:",
      round(float(min(azs.ess(post, var_names=["log_beta"])["log_beta"].item(),
                       azs.ess(post, var_names=["log_alpha"])["log_alpha"].min().item()))))"""),
    ("md", """## Predictions

Predictive mean and standard deviation (noise included) on 1000 test inputs;
RMSE against the noise-free sinc, coverage of the 95% intervals and the mean
log predictive density on fresh noisy targets."""),
    ("code", """def unscale(mean, sd):
    return mean * t_sd + t_mean, sd * t_sd

preds = {
    "type-II ML (flat)": unscale(*ml.predict(Ps_test, return_std=True)),
    "type-II MAP (proper)": unscale(*mackay.predict(Ps_test, return_std=True)),
}
w = post.posterior["w"].values.reshape(-1, M)
beta = np.exp(post.posterior["log_beta"].values.ravel())
f_draws = w @ Ps_test.T
preds["NUTS (proper)"] = unscale(f_draws.mean(0), np.sqrt(f_draws.var(0) + np.mean(1 / beta)))
for name, (mean, sd) in preds.items():
    rmse = np.sqrt(np.mean((mean - f_test) ** 2))
    cover = np.mean(np.abs(t_new - mean) <= 1.96 * sd)
    lpd = np.mean(-0.5 * np.log(2 * np.pi * sd**2) - 0.5 * ((t_new - mean) / sd) ** 2)
    print(f"{name:22s} RMSE {rmse:.4f}   95% coverage {cover:.3f}   "
          f"mean log pred. density {lpd:.4f}")
(m_map, s_map), (m_nuts, s_nuts) = preds["type-II MAP (proper)"], preds["NUTS (proper)"]
print(f"NUTS vs MAP, same prior: max |mean difference| {np.max(np.abs(m_nuts - m_map)):.4f}, "
      f"sd ratio median {np.median(s_nuts / s_map):.3f} (max {np.max(s_nuts / s_map):.3f})")"""),
    ("code", """fig, ax = plt.subplots(figsize=(9, 4))
xs = X_test[:, 0]
ax.plot(X[:, 0], t, ".", color="0.6", label="training data")
ax.plot(xs, f_test, "k-", lw=1, label="sinc")
for (name, (m, s)), c in zip(preds.items(), ["C0", "C2", "C1"], strict=True):
    ax.plot(xs, m, color=c, label=name)
    ax.fill_between(xs, m - 1.96 * s, m + 1.96 * s, color=c, alpha=0.15)
ax.legend(fontsize=8)
ax.set_title("predictive mean and 95% interval")"""),
    ("md", """## Which bases matter

Type-II ML sets most precisions to infinity: its sparsity is a property of that
point estimate. Does the posterior single out the same bases? Below, the
posterior medians of `log alpha` of the bases type-II ML keeps, beside those of
the others. (When this notebook was written they were not separated: with 101
strongly correlated kernel columns the function is spread over many of them,
each precision near the prior's scale.) PSIS-LOO uses the pointwise
log-likelihood of the joint model that the collapsed sampler stores."""),
    ("code", """la = post.posterior["log_alpha"].values.reshape(-1, M)
kept = ml.active
others = np.setdiff1d(np.arange(M), kept)
print("posterior median log alpha, bases type-II ML keeps:",
      np.round(np.median(la[:, kept], 0), 2))
print("posterior median log alpha, the others: median", round(float(np.median(la[:, others])), 2))
print(azs.loo(post))"""),
]


def build(cells, name):
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    for i, (kind, src) in enumerate(cells):
        make = nbformat.v4.new_markdown_cell if kind == "md" else nbformat.v4.new_code_cell
        cell = make(src)
        cell["id"] = f"{name[:2]}-{i:02d}"  # stable ids: rebuilding changes nothing
        nb.cells.append(cell)
    nbformat.write(nb, HERE / name)


if __name__ == "__main__":
    build(REGRESSION, "01_reference_regression.ipynb")
    build(EVIDENCE_VS_NUTS, "02_evidence_vs_nuts.ipynb")
