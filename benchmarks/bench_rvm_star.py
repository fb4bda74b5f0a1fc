"""RVM* against the evidence fit and NUTS: predictive bands inside and outside the training range.

Sinc (``rvm_pymc.datasets.make_sinc``: N = 100 training inputs uniform on
[-10, 10], noise sd 0.1).  Held-out points, 1000 each, with noisy targets
(``sinc(x)`` plus noise of the training noise's sd):

- ``inside``: x uniform on [-10, 10], the training range;
- ``outside``: x uniform on [-15, -10) and (10, 15], beyond it.

Fits at the estimators' defaults (``gamma="auto"``, the evidence's width; NUTS
with its default prior, draws and tuning), through ``rvm_pymc.fit_all``:
``reference`` and ``map`` (the evidence approximation), the same two with
``predictive="rvm*"`` (RVM*, Rasmussen & Quinonero-Candela 2005), and
``nuts``.  ``rvm_pymc.compare`` scores each on each held-out set: the mean
log predictive density per point (``lpd``), the RMSE of the predictive mean
and the coverage of the central 50/90/95% predictive intervals.  The table
gives the mean over the splits (seeds) and, in brackets, its standard error;
``d_lpd`` is the split-by-split difference of ``lpd`` to the ``reference``
fit (the spread between splits cancels in it), with its median and the
number of splits on which the fit beats ``reference`` (``wins``).

    python benchmarks/bench_rvm_star.py --splits 10     # ~1 min per split (NUTS)
    python benchmarks/bench_rvm_star.py --splits 1 --no-nuts
"""

from __future__ import annotations

import argparse
import time
import warnings

import _common
import numpy as np
import pandas as pd

from rvm_pymc import compare, fit_all
from rvm_pymc.datasets import make_sinc
from rvm_pymc.estimators import RVR

COLS = ["lpd", "rmse", "coverage_50", "coverage_90", "coverage_95"]
NOISE_SD = 0.1


def held_out(seed: int, n: int = 1000) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The inside and outside test sets of one split, noisy targets."""
    rng = np.random.default_rng(20_000 + seed)
    x_in = rng.uniform(-10.0, 10.0, n)
    x_out = rng.uniform(10.0, 15.0, n) * rng.choice([-1.0, 1.0], n)
    out = {}
    for name, x in (("inside", x_in), ("outside", x_out)):
        y = np.sinc(x / np.pi) + NOISE_SD * rng.standard_normal(n)
        out[name] = (x[:, None], y)
    return out


def run_split(seed: int, nuts: bool) -> pd.DataFrame:
    d = make_sinc(n_train=100, noise_sd=NOISE_SD, random_state=seed)
    X, y = d.X_train, d.t_train
    methods = ("reference", "map", "nuts") if nuts else ("reference", "map")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # NUTS diagnostics are in the table
        fits = fit_all(X, y, methods=methods, random_state=seed)
        for m in ("reference", "map"):
            t0 = time.perf_counter()
            fits[f"{m}+rvm*"] = RVR(method=m, predictive="rvm*", random_state=seed).fit(X, y)
            fits.fit_times[f"{m}+rvm*"] = time.perf_counter() - t0
        rows = []
        for where, (Xt, yt) in held_out(seed).items():
            table = compare(fits, Xt, yt, cv=None, loo=False, random_state=seed)
            table.attrs = {}  # the pointwise frames: not needed, and pandas cannot concat them
            table = table.rename_axis("fit").reset_index()
            table["where"], table["split"] = where, seed
            rows.append(table)
    return pd.concat(rows, ignore_index=True)


def _cell(values: pd.Series) -> str:
    m = values.mean()
    se = values.std(ddof=1) / np.sqrt(len(values)) if len(values) > 1 else np.nan
    return f"{m:.3f}" + (f" ({se:.3f})" if np.isfinite(se) else "")


def summarise(df: pd.DataFrame) -> tuple[list[str], list[list[str]]]:
    """Mean (se) over the splits; ``d_lpd``: the split-by-split difference to ``reference``."""
    order = ["reference", "reference+rvm*", "map", "map+rvm*", "nuts"]
    headers = ["where", "fit", "n_relevant", *COLS, "d_lpd", "median d_lpd", "wins"]
    rows = []
    for where in ("inside", "outside"):
        here = df[df["where"] == where]
        base = here[here["fit"] == "reference"].set_index("split")["lpd"]
        for fit in [f for f in order if f in set(df["fit"])]:
            g = here[here["fit"] == fit].set_index("split")
            cells = [where, fit, f"{g['n_relevant'].mean():.1f}"]
            cells += [_cell(g[c]) for c in COLS]
            d = g["lpd"] - base.loc[g.index]
            cells += [_cell(d), f"{d.median():.3f}", f"{int((d > 1e-6).sum())}/{d.size}"]
            rows.append(cells)
    return headers, rows


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--splits", type=int, default=10)
    p.add_argument("--no-nuts", action="store_true")
    p.add_argument("--csv", help="also write the per-split table to this CSV file")
    args = p.parse_args(argv)
    print(
        _common.header(
            "RVM* vs the evidence fit vs NUTS on sinc: held-out bands inside/outside [-10, 10]",
            [
                "N = 100 training points on [-10, 10], noise sd 0.1; 1000 noisy test points "
                "inside and 1000 in 10 < |x| < 15 per split",
                f"splits (seeds) 0..{args.splits - 1}; estimator defaults (gamma='auto'); "
                "mean (standard error) over the splits",
            ],
        ),
        flush=True,
    )
    frames = []
    for seed in range(args.splits):
        t0 = time.perf_counter()
        frames.append(run_split(seed, nuts=not args.no_nuts))
        print(f"# split {seed}: {time.perf_counter() - t0:.0f} s", flush=True)
    df = pd.concat(frames, ignore_index=True)
    if args.csv:
        df.to_csv(args.csv, index=False)
    headers, rows = summarise(df)
    print(_common.format_table(headers, rows))
    fit_s = df.drop_duplicates(["fit", "split"]).groupby("fit")["fit_time"].mean()
    print(
        "# mean fit seconds (wall clock, shared machine; gamma='auto' searches the width "
        "in each): " + ", ".join(f"{k} {v:.1f}" for k, v in fit_s.items())
    )
    if "divergences" in df:
        nd = df[df["fit"] == "nuts"].drop_duplicates("split")
        if len(nd):
            print(
                f"# nuts: divergences per split {nd['divergences'].tolist()}, max R-hat "
                f"{nd['max_rhat'].max():.3f}, min bulk ESS {nd['min_ess_bulk'].min():.0f}"
            )


if __name__ == "__main__":
    main()
