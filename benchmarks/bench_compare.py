"""Full Bayes (NUTS) against the evidence approximation (reference, MAP), split by split.

For every data set and every random split: ``rvm_pymc.fit_all`` fits the same
RVM by the reference solver, type-II MAP in PyMC and NUTS (each method under
its default prior: the evidence prior for the type-II fits, the weakly
informative Gamma prior for NUTS, whose posterior is otherwise improper), a
fourth fit ``reference_wi`` is the type-II fit under NUTS's prior (the NUTS
fit's ``prior_``, its slab included if it has one; MacKay's updates), so that
the effect of the prior and that of integrating over the precisions can be
told apart, and ``rvm_pymc.compare`` scores them on the held-out part.  The
tables give the
mean and its standard error over the splits, per method, and are written as
Markdown to ``benchmarks/results/compare_<data>.md``.

Data: noisy sinc (N = 100, noise sd 0.1), Friedman #2 (N = 240),
scikit-learn's diabetes (standardised features, 300 training rows, the rest
held out) and breast cancer (standardised, 300 training rows; RVC).  The
synthetic test targets get noise of the training noise's sd (the generators
return them noise-free), so that densities and intervals are scored on data
like the training data.

    python benchmarks/bench_compare.py                       # all, 10 splits
    python benchmarks/bench_compare.py --data sinc --splits 3 --cv 5

Every fit runs at the estimators' defaults unless told otherwise: the width
``gamma="auto"`` (the evidence's width under each fit's own prior, so NUTS and
``reference_wi`` may get a width other than the type-II fits': the
``gamma_`` and ``same_basis`` rows say), and for NUTS the estimators' lengths
(1000 tuning steps, then 2000 draws per chain; the classifier's default may
differ) from the reference fit at the estimators' ``target_accept``.  ``--gamma data``
restores the fixed per-data-set widths of earlier runs (sinc 0.5, the others
``"scale"``); ``--draws``/``--tune`` override the estimators' lengths.

``--cv K`` adds k-fold elpd with refitting (K refits per method and split:
slow for NUTS).  Columns: see ``rvm_pymc.compare``; ``loo_gap`` is
``elpd_loo / N_train - lpd``, how much PSIS-LOO on the training data
promises above the held-out log density per point.
"""

from __future__ import annotations

import argparse
import os
import re
import time
import warnings

import _common
import numpy as np
import pandas as pd

from rvm_pymc import compare, fit_all

DATA = ("sinc", "friedman2", "diabetes", "breast_cancer")
REG_COLS = [
    "n_relevant",
    "effective_parameters",
    "p_loo",
    "rmse",
    "lpd",
    "coverage_50",
    "coverage_90",
    "coverage_95",
    "loo_gap",
    "pareto_k_bad",
    "fit_time",
    "gamma_",
    "same_basis",
    "converged",
    "divergences",
    "max_rhat",
    "min_ess_bulk",
    "lpd_diff_se",
]
CLS_COLS = [
    "n_relevant",
    "effective_parameters",
    "p_loo",
    "error_rate",
    "lpd",
    "brier",
    "loo_gap",
    "pareto_k_bad",
    "fit_time",
    "gamma_",
    "same_basis",
    "converged",
    "divergences",
    "max_rhat",
    "min_ess_bulk",
    "lpd_diff_se",
]


def load(name: str, seed: int):
    """(X_train, y_train, X_test, y_test, gamma) of one split."""
    from sklearn.datasets import load_breast_cancer, load_diabetes
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    from rvm_pymc.datasets import make_friedman2, make_sinc

    # the generators' test targets are noise-free (Tipping's RMSE convention); a predictive
    # density and its intervals are scored on noisy targets, with the training noise
    rng = np.random.default_rng(10_000 + seed)
    if name == "sinc":
        d = make_sinc(n_train=100, n_test=1000, noise_sd=0.1, random_state=seed)
        X, y, Xt, yt = d
        return X, y, Xt, yt + d.noise_sd * rng.standard_normal(yt.size), 0.5
    if name == "friedman2":
        d = make_friedman2(n_train=240, n_test=1000, random_state=seed)
        X, y, Xt, yt = d
        sc = StandardScaler().fit(X)
        noisy = yt + d.noise_sd * rng.standard_normal(yt.size)
        return sc.transform(X), y, sc.transform(Xt), noisy, "scale"
    loader = load_diabetes if name == "diabetes" else load_breast_cancer
    Xa, ya = loader(return_X_y=True)
    strat = ya if name == "breast_cancer" else None
    X, Xt, y, yt = train_test_split(Xa, ya, train_size=300, random_state=seed, stratify=strat)
    sc = StandardScaler().fit(X)
    return sc.transform(X), y, sc.transform(Xt), yt, "scale"


def run(
    name: str,
    seeds,
    draws: int | None,
    tune: int | None,
    cv: int,
    gamma: str | float | None = None,
    save=None,
) -> pd.DataFrame:
    """Fit and score every split; ``save(df)`` (optional) after each split, for a partial run.

    ``gamma=None``, ``draws=None`` and ``tune=None`` leave the estimators' defaults;
    ``gamma="data"`` takes the data set's fixed width of :func:`load`.
    """
    rows = []
    for seed in seeds:
        X, y, Xt, yt, data_gamma = load(name, seed)
        params = {"random_state": seed}
        if gamma is not None:
            params["gamma"] = data_gamma if gamma == "data" else gamma
        if draws is not None:
            params["draws"] = draws
        if tune is not None:
            params["tune"] = tune
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # counted in the table (R-hat, divergences)
            fits = fit_all(X, y, **params)
            # type-II under the prior NUTS uses: separates the prior from the integration
            cls = type(fits["reference"])
            wi_params = {k: v for k, v in params.items() if k not in ("draws", "tune")}
            # NUTS's resolved prior, slab included (the reference solver's MacKay takes it)
            wi = cls(method="reference", solver="mackay", prior=fits["nuts"].prior_, **wi_params)
            t1 = time.perf_counter()
            fits["reference_wi"] = wi.fit(X, y)
            fits.fit_times["reference_wi"] = time.perf_counter() - t1
            table = compare(fits, Xt, yt, cv=cv or None, random_state=seed)
        table["gamma_"] = [float(fits[f].gamma_) for f in table.index]
        table["loo_gap"] = table["elpd_loo"] / len(y) - table["lpd"]
        table["ep_rule"] = "data-space"  # effective_parameters of sampled fits (see summarise)
        table["split"] = seed
        table.attrs = {}  # pointwise values (DataFrames), which pandas' concat cannot compare
        rows.append(table.rename_axis("fit").reset_index())
        print(f"  {name} split {seed}: {time.perf_counter() - t0:.0f} s", flush=True)
        if save is not None:
            save(pd.concat(rows, ignore_index=True))
    return pd.concat(rows, ignore_index=True)


def summarise(df: pd.DataFrame, cols: list[str]) -> pd.DataFrame:
    """Mean ± standard error over the splits per fit; paired differences to the reference fit.

    ``d_<col>`` rows: the split-by-split difference of a fit's column minus the
    reference fit's, so that the spread between splits (most of the se of a
    column) cancels; ``dwi_<col>`` the same to ``reference_wi``.
    """
    cols = [c for c in cols if c in df] + [c for c in ("elpd_kfold",) if c in df]
    scores = ("lpd", "rmse", "error_rate", "coverage_50", "coverage_90", "coverage_95", "brier")
    paired = [c for c in scores if c in df]
    base = df[df["fit"] == "reference"].set_index("split")
    df = df.copy()
    for c in ("same_basis", "converged"):  # booleans (NaN for fits without): share of splits
        if c in df:
            df[c] = df[c].map({True: 1.0, False: 0.0, "True": 1.0, "False": 0.0})
    if "ep_rule" not in df:
        rule = pd.Series("weight-space", index=df.index)
    else:
        rule = df["ep_rule"].fillna("weight-space")
    # runs before the data-space rule measured a sampled fit's effective parameters in
    # weight space (1 - Var(w)/E[1/alpha]), which moves with the hyperprior's rate
    df.loc[(df["fit"] == "nuts") & (rule == "weight-space"), "effective_parameters"] = np.nan
    for c in paired:
        df[f"d_{c}"] = df[c].to_numpy() - base.loc[df["split"], c].to_numpy()
    cols += [f"d_{c}" for c in paired]
    if "reference_wi" in set(df["fit"]):
        # to the type-II fit under NUTS's prior (and, with gamma="auto", NUTS's width):
        # nuts - reference_wi is the effect of integrating over the precisions alone
        wi = df[df["fit"] == "reference_wi"].set_index("split")
        for c in ("lpd", "coverage_95"):
            if c in df:
                df[f"dwi_{c}"] = df[c].to_numpy() - wi.loc[df["split"], c].to_numpy()
                cols.append(f"dwi_{c}")
    g = df.groupby("fit", sort=False)[cols]
    mean, se = g.mean(), g.std(ddof=1) / np.sqrt(g.count())
    out = mean.map(lambda v: f"{v:.4g}").astype(str)
    for c in cols:
        out[c] = [
            f"{m:.4g} ± {s:.2g}" if np.isfinite(s) and np.isfinite(m) else f"{m:.4g}"
            for m, s in zip(mean[c], se[c], strict=True)
        ]
    return out.T


def markdown(table: pd.DataFrame) -> str:
    """A pipe table (no dependency on tabulate)."""
    cols = [str(c) for c in table.columns]
    lines = ["| | " + " | ".join(cols) + " |", "|---" * (len(cols) + 1) + "|"]
    for idx, row in table.iterrows():
        lines.append(f"| {idx} | " + " | ".join(str(v) for v in row) + " |")
    return "\n".join(lines)


def _header_blocks(md: str) -> list[str]:
    """The header block of every run recorded in a results page (none if it is missing)."""
    if not os.path.exists(md):
        return []
    with open(md) as fh:
        return [b.strip("\n") for b in fh.read().split("```")[1:-1:2]]


def _join_headers(blocks: list[str]) -> str:
    """Header blocks as one text that the page's code fence splits back into blocks."""
    return "\n```\n\n```\n".join(blocks)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", nargs="+", choices=DATA, default=list(DATA))
    p.add_argument("--splits", type=int, default=10)
    p.add_argument("--draws", type=int, default=None, help="NUTS draws (default: the estimators')")
    p.add_argument("--tune", type=int, default=None, help="NUTS tuning steps (default: theirs)")
    p.add_argument(
        "--gamma",
        default=None,
        help="kernel width for every fit: a number, 'auto', 'scale', 'evidence', or 'data' "
        "(the data set's fixed width of earlier runs); default: the estimators' ('auto')",
    )
    p.add_argument("--cv", type=int, default=0, help="k-fold elpd with K refits (0: off)")
    p.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results"))
    p.add_argument(
        "--from-csv",
        action="store_true",
        help="rewrite the tables from the CSV files of an earlier run in --out (no fitting)",
    )
    p.add_argument(
        "--append",
        action="store_true",
        help="keep the splits already in --out's CSV and run only the missing ones",
    )
    args = p.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    shown = {**vars(args), "out": os.path.relpath(args.out, os.path.dirname(__file__))}
    gamma = args.gamma
    if gamma not in (None, "auto", "scale", "evidence", "data"):
        gamma = float(gamma)
    head = _common.header("bench_compare", [f"arguments: {shown}"])
    print(head)
    for name in args.data:
        csv = os.path.join(args.out, f"compare_{name}.csv")
        if args.from_csv:
            if not os.path.exists(csv):
                continue
            df = pd.read_csv(csv)
            md = os.path.join(args.out, f"compare_{name}.md")
            head = _join_headers(_header_blocks(md)) or head  # the runs that made the numbers
            # the recorded header, with machine paths made relative
            head = re.sub(r"(\.\./)*\.?\.?/?tmp/[\w./-]+", "results", head)
            head = re.sub(r"/[\w./-]*/rvm_pymc\b", "./rvm_pymc", head)
        elif args.append and os.path.exists(csv):
            old_df = pd.read_csv(csv)
            done = set(old_df["split"])
            todo = [k for k in range(args.splits) if k not in done]
            old_heads = _header_blocks(os.path.join(args.out, f"compare_{name}.md"))
            if todo:  # run() of no split would concatenate nothing (pandas raises)
                new_df = run(name, todo, args.draws, args.tune, args.cv, gamma)
                df = pd.concat([old_df, new_df], ignore_index=True)
                splits = ", ".join(str(k) for k in todo)
                head = _join_headers([*old_heads, f"{head}\n# splits run: {splits}"])
            else:
                df, head = old_df, _join_headers(old_heads) or head
        else:
            partial = os.path.join(args.out, f"compare_{name}.partial.csv")
            df = run(
                name,
                range(args.splits),
                args.draws,
                args.tune,
                args.cv,
                gamma,
                save=lambda d, path=partial: d.to_csv(path, index=False),
            )
            df.to_csv(csv, index=False)  # before the summary: a run is never lost to it
            os.remove(partial)
        cols = CLS_COLS if name == "breast_cancer" else REG_COLS
        table = summarise(df, cols)
        n_splits = df["split"].nunique()
        text = (
            f"# {name}: mean ± standard error over {n_splits} splits\n\n"
            f"```\n{head}\n```\n\n"
            + markdown(table)
            + "\n\n`effective_parameters` of a NUTS fit is shown only for splits run with"
            " the data-space rule of `rvm_pymc.comparison.effective_parameters` (nan"
            " otherwise); `p_loo` (PSIS-LOO) is the count measured the same way for every"
            " fit. A mean is over the splits where the value is defined (PSIS-LOO columns"
            " are NaN where a Pareto k is too large). `same_basis` and `converged` are the"
            " share of splits; `lpd_diff_se` is the mean within-split standard error of the"
            " paired held-out difference (`compare`'s); `d_<col>` and `dwi_<col>` are"
            " split-by-split differences to `reference` and to `reference_wi`.\n"
        )
        print(text, flush=True)
        with open(os.path.join(args.out, f"compare_{name}.md"), "w") as fh:
            fh.write(text)
        if args.append:
            df.to_csv(csv, index=False)


if __name__ == "__main__":
    main()
