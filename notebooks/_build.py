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
import numpy as np
import matplotlib.pyplot as plt
from rvm_pymc.datasets import make_sinc
from rvm_pymc.kernels import RBF, KernelBasis
from rvm_pymc.reference import fit_regression
from rvm_pymc.plotting import plot_regression_1d

X, t, X_test, t_test = make_sinc(n_train=100, noise_sd=0.1, random_state=0)"""),
    ("md", "## Choosing the width by the evidence"),
    ("code", """gammas = [0.05, 0.1, 0.2, 0.5, 1.0, 2.0]
fits = {}
for g in gammas:
    basis = KernelBasis(RBF(gamma=g), bias=True)
    res = fit_regression(basis.fit_transform(X), t, method="fast")
    rmse = np.sqrt(np.mean((res.predict(basis.transform(X_test)) - t_test) ** 2))
    fits[g] = (basis, res)
    print(f"gamma={g:<5} log evidence={res.log_evidence:8.3f}  RVs={res.n_relevance:2d}  test RMSE={rmse:.4f}")
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
          f"RMSE={rmse:.4f} noise sd={res.beta ** -0.5:.4f} iters={res.n_iter:5d} {dt * 1e3:7.1f} ms")"""),
    ("code", """res = fit_regression(Phi, t, method="fast")
mean, sd = res.predict(Phi_test, return_std=True)
ax = plot_regression_1d(X[:, 0], t, X_test[:, 0], mean, sd, res.active[res.active > 0] - 1,
                        truth=t_test, title="fast RVM on sinc")
fig, ax2 = plt.subplots(figsize=(8, 3))
ax2.plot(res.trace["log_evidence"])
ax2.set_xlabel("iteration"); ax2.set_ylabel("log evidence")
ax3 = ax2.twinx(); ax3.plot(res.trace["n_active"], color="C1"); ax3.set_ylabel("relevance vectors")
assert np.all(np.diff(res.trace["log_evidence"]) > -1e-8)"""),
]


def build(cells, name):
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    for kind, src in cells:
        make = nbformat.v4.new_markdown_cell if kind == "md" else nbformat.v4.new_code_cell
        nb.cells.append(make(src))
    nbformat.write(nb, HERE / name)


if __name__ == "__main__":
    build(REGRESSION, "01_reference_regression.ipynb")
