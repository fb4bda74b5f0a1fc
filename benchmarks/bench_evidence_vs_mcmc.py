"""Evidence fit against MCMC on real regression data: does integrating over the precisions,
the noise and the kernel width predict better than the evidence's point estimate?

For every regression set of the real-data panel (``benchmarks/_panel_data.py``,
subsampled to at most ``--max-n`` rows with the panel's seed) and every
train/test split (70/30, ``sklearn.model_selection.train_test_split`` with
``random_state`` = split index; features standardised with the training rows'
mean and sd), four fits through the public estimators, side by side:

``evidence``
    ``RVR(gamma="evidence")``: the reference solver at the width of maximum
    evidence (type-II maximum likelihood; the baseline of the paired differences).
``nuts_at_evidence``
    ``RVR(method="nuts", gamma=<the evidence fit's gamma_>)``: NUTS over the
    precisions and the noise at that same width.
``nuts_width``
    ``RVR(method="nuts", gamma="integrate")``: NUTS over the width too.
``default``
    ``RVR()``: the reference solver at the width of 5-fold cross-validation
    (``gamma="auto"``), for reference.

Columns per fit: test log predictive density per point (``lpd``), the paired
difference ``lpd - lpd(evidence)`` over the test points with its standard error
(``sd / sqrt(n_test)``), RMSE, coverage of the central 95 % predictive interval,
``ok`` (NUTS: R-hat <= 1.01, bulk and tail ESS >= 400 over every sampled
variable, no divergence; the reference fits: ``-``) and the wall time of ``fit``.
The summary gives, per fit, the mean over sets of the paired difference with
its standard error across sets and the number of sets where the fit beats the
evidence by more than 2 standard errors (and where it loses by as much).

Every (set, split) is appended to ``benchmarks/results/evidence_vs_mcmc.csv``
(``--out`` names another) as it finishes; ``--resume`` skips those already there, so
an interrupted run loses at most the set in progress.  The markdown table and summary
go to ``benchmarks/results/evidence_vs_mcmc.md``.  ``--width-target-accept`` sets
``nuts_width``'s ``target_accept`` for a study of that default.

Usage::

    python benchmarks/bench_evidence_vs_mcmc.py                 # every set, one split
    python benchmarks/bench_evidence_vs_mcmc.py --splits 3 --resume
    python benchmarks/bench_evidence_vs_mcmc.py --quick         # 3 small sets, a smoke run
    python benchmarks/bench_evidence_vs_mcmc.py --only mcycle,cars,hills
    python benchmarks/bench_evidence_vs_mcmc.py --max-n 150 --splits 2 \
        --width-target-accept 0.95 --out evidence_vs_mcmc_ta095   # a study of that default
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy as np
import pandas as pd
from _common import header, load_average

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
FITS = ("evidence", "nuts_at_evidence", "nuts_width", "default")
BASELINE = "evidence"
QUICK = ("mcycle", "cars", "hills")


def _split(X, y, split: int, test_size: float = 0.3):
    from sklearn.model_selection import train_test_split

    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=test_size, random_state=split)
    mean, sd = X_tr.mean(0), X_tr.std(0)
    sd = np.where(sd > 0, sd, 1.0)
    return (X_tr - mean) / sd, (X_te - mean) / sd, y_tr, y_te


def _ok(est) -> str:
    """The convergence standard over every sampled variable (the width included)."""
    if est.method != "nuts":
        return "-"
    a = est.idata_.attrs
    good = (
        a["max_rhat"] <= 1.01
        and min(a["min_ess_bulk"], a["min_ess_tail"]) >= 400
        and a["n_divergent"] == 0
    )
    return "yes" if good else "no"


def _estimator(name: str, gamma_evidence: float | None, seed: int, width_ta=None):
    from rvm_pymc import RVR

    if name == "evidence":
        return RVR(gamma="evidence", random_state=seed)
    if name == "nuts_at_evidence":
        return RVR(method="nuts", gamma=gamma_evidence, random_state=seed)
    if name == "nuts_width":
        kw = {} if width_ta is None else {"sampler_kwargs": {"target_accept": width_ta}}
        return RVR(method="nuts", gamma="integrate", random_state=seed, **kw)
    return RVR(random_state=seed)


def fit_scored(est, X_tr, y_tr, X_te, seed: int):
    """Fit ``est`` (warnings silenced) and its predictive at ``X_te``: ``(wall, predictive)``."""
    from rvm_pymc.comparison.predictive import predictive

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        est.fit(X_tr, y_tr)
        wall = time.perf_counter() - t0
    return wall, predictive(est, X_te, random_state=seed)


def run_split(name: str, X, y, split: int, seed: int, width_ta=None) -> list[dict]:
    """The four fits on one split: one row each (pointwise lpd kept for the pairing)."""
    X_tr, X_te, y_tr, y_te = _split(X, y, split)
    rows, lpd, gamma_ev = [], {}, None
    for fit in FITS:
        est = _estimator(fit, gamma_ev, seed, width_ta)
        wall, pred = fit_scored(est, X_tr, y_tr, X_te, seed)
        if fit == "evidence":
            gamma_ev = float(est.gamma_)
        lpd[fit] = pred.log_density(y_te)
        rows.append(
            {
                "set": name,
                "split": split,
                "fit": fit,
                "n_train": len(y_tr),
                "n_test": len(y_te),
                "gamma": float(est.gamma_),
                "lpd": float(np.mean(lpd[fit])),
                "rmse": float(np.sqrt(np.mean((pred.mean() - y_te) ** 2))),
                "coverage_95": pred.coverage(y_te, 0.95),
                "ok": _ok(est),
                "draws": int(est.idata_["posterior"].sizes["draw"]) if est.method == "nuts" else 0,
                "fit_time": wall,
                "load": load_average(),
            }
        )
    for row in rows:
        d = lpd[row["fit"]] - lpd[BASELINE]
        row["lpd_diff"] = float(np.mean(d))
        row["lpd_diff_se"] = float(np.std(d, ddof=1) / np.sqrt(d.size))
    return rows


def _table(frame: pd.DataFrame) -> str:
    cols = ["set", "split", "fit", "gamma", "lpd", "lpd_diff", "lpd_diff_se", "rmse"]
    cols += ["coverage_95", "ok", "draws", "fit_time"]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in frame[cols].itertuples(index=False):
        lines.append(
            "| " + " | ".join(f"{v:.4g}" if isinstance(v, float) else str(v) for v in r) + " |"
        )
    return "\n".join(lines)


def summary(frame: pd.DataFrame) -> str:
    """Per fit: mean paired difference over sets (each set's mean over its splits) +- se
    across sets, and the sets where the fit is better (worse) by more than 2 se."""
    lines = [
        "| fit | sets | mean lpd_diff | se across sets | better by > 2 se | worse by > 2 se |"
    ]
    lines.append("|---|---|---|---|---|---|")
    for fit in FITS:
        if fit == BASELINE:
            continue
        mine = frame[frame["fit"] == fit]
        if mine.empty:
            continue
        # per set: the mean over splits; its se from the split se's (independent test sets)
        per_set = mine.groupby("set").agg(
            d=("lpd_diff", "mean"),
            se=("lpd_diff_se", lambda s: float(np.sqrt(np.sum(np.square(s))) / len(s))),
        )
        n = len(per_set)
        se = float(per_set["d"].std(ddof=1) / np.sqrt(n)) if n > 1 else float("nan")
        better = int(np.sum(per_set["d"] > 2 * per_set["se"]))
        worse = int(np.sum(per_set["d"] < -2 * per_set["se"]))
        lines.append(
            f"| {fit} | {n} | {per_set['d'].mean():.4g} | {se:.3g} | {better} | {worse} |"
        )
    return "\n".join(lines)


PAIRS = (
    ("nuts_at_evidence", "evidence"),
    ("nuts_width", "nuts_at_evidence"),
    ("nuts_width", "default"),
    ("default", "evidence"),
)
"""The comparisons of :func:`between_fits`: (fit, against)."""
DEGENERATE_GAP = 1.0
"""A set's evidence fit counts as degenerate when its lpd per point is below the cv
default's by more than this (nats per point; the evidence width interpolates)."""


def between_fits(frame: pd.DataFrame) -> str:
    """Sets as the units: each set's lpd per point (mean over its splits) of one fit minus
    another's; median, mean +- se across sets, and the sets where the first is ahead.  Split
    by whether the set's evidence fit is degenerate (:data:`DEGENERATE_GAP`)."""
    lpd = frame.pivot_table(index="set", columns="fit", values="lpd", aggfunc="mean")
    degenerate = lpd["evidence"] < lpd["default"] - DEGENERATE_GAP
    lines = [
        "| fit - against | sets | median | mean ± se across sets | ahead in |",
        "|---|---|---|---|---|",
    ]
    for fit, against in PAIRS:
        if fit not in lpd or against not in lpd:
            continue
        for label, mask in (
            ("all", np.ones(len(lpd), bool)),
            ("evidence degenerate", degenerate.to_numpy()),
            ("evidence sound", ~degenerate.to_numpy()),
        ):
            d = (lpd[fit] - lpd[against])[mask].dropna()
            if d.empty:
                continue
            se = float(d.std(ddof=1) / np.sqrt(len(d))) if len(d) > 1 else float("nan")
            lines.append(
                f"| {fit} - {against} ({label}) | {len(d)} | {d.median():+.3f} | "
                f"{d.mean():+.4g} ± {se:.3g} | {int((d > 0).sum())} of {len(d)} |"
            )
    ok = frame[frame["ok"].isin(["yes", "no"])]
    conv = ok.groupby("fit")["ok"].agg(lambda s: f"{int((s == 'yes').sum())} of {len(s)}")
    lines.append("")
    lines.append(
        "NUTS fits that pass R-hat <= 1.01, bulk and tail ESS >= 400, no divergence "
        "((set, split) fits): " + "; ".join(f"{k} {v}" for k, v in conv.items())
    )
    lines.append(
        f"Sets whose evidence fit is degenerate (lpd more than {DEGENERATE_GAP:g} nat per "
        f"point below the cv default's): {int(degenerate.sum())} of {len(lpd)} "
        f"({', '.join(sorted(lpd.index[degenerate]))})"
    )
    return "\n".join(lines)


def main(argv=None) -> None:
    import _panel_data as panel

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="comma-separated set names")
    parser.add_argument("--quick", action="store_true", help=f"only {QUICK}, one split")
    parser.add_argument("--splits", type=int, default=1, help="train/test splits per set")
    parser.add_argument("--resume", action="store_true", help="skip (set, split) already saved")
    parser.add_argument("--max-n", type=int, default=300, help="subsample larger sets")
    parser.add_argument("--seed", type=int, default=0, help="random_state of the fits")
    parser.add_argument(
        "--width-target-accept", type=float, help="nuts_width's target_accept (not the default)"
    )
    parser.add_argument("--out", default="evidence_vs_mcmc", help="name of the .csv and .md")
    args = parser.parse_args(argv)
    csv_path = os.path.join(RESULTS, f"{args.out}.csv")
    md_path = os.path.join(RESULTS, f"{args.out}.md")
    names = list(panel.regression_sets())
    if args.only:
        names = [n for n in names if n in args.only.split(",")]
    elif args.quick:
        names = [n for n in names if n in QUICK]
    splits = 1 if args.quick else args.splits
    os.makedirs(RESULTS, exist_ok=True)
    done = set()
    if args.resume and os.path.exists(csv_path):
        old = pd.read_csv(csv_path)
        done = set(zip(old["set"], old["split"], strict=True))
    elif os.path.exists(csv_path):
        os.remove(csv_path)
    about = f"max_n {args.max_n}, {splits} split(s) of 70/30, seed {args.seed}"
    print(header("Evidence fit against MCMC on real regression data", [about]), flush=True)
    t_start = time.perf_counter()
    for name in names:
        try:
            data = panel.load(name, max_n=args.max_n)
        except ImportError as exc:
            print(f"{name}: skipped ({exc})", flush=True)
            continue
        for split in range(splits):
            if (name, split) in done:
                continue
            t0 = time.perf_counter()
            rows = run_split(name, data.X, data.y, split, args.seed, args.width_target_accept)
            frame = pd.DataFrame(rows)
            frame.to_csv(csv_path, mode="a", header=not os.path.exists(csv_path), index=False)
            print(_table(frame), flush=True)
            print(f"({name} split {split}: {time.perf_counter() - t0:.0f} s)\n", flush=True)
    frame = pd.read_csv(csv_path)
    frame = frame[frame["set"].isin(names)]
    text = "\n\n".join(
        [
            header("Evidence fit against MCMC on real regression data"),
            _table(frame),
            "Paired lpd difference against the evidence fit (per test point, nats):",
            summary(frame),
            "Between fits, sets as the units (each set's lpd per point, mean over splits):",
            between_fits(frame),
            f"Wall time of this run: {time.perf_counter() - t_start:.0f} s.",
        ]
    )
    with open(md_path, "w") as fh:
        fh.write(text + "\n")
    print(summary(frame))
    print(between_fits(frame))


if __name__ == "__main__":
    main()
