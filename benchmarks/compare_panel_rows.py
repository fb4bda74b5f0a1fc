"""Do two runs of the real-data panel give the same numbers?

Compares the per-split rows CSV of a new run of ``bench_real_panel.py`` (``--out DIR``)
with the committed one, cell by cell, on the (set, split, method) rows both hold and
whose training rows agree (a run with another ``--max-n`` subsamples large sets
differently): numbers to ``--rtol`` (1e-10 by default) of ``max(1, |old|)``, times
excluded, text (the warnings) exactly; rows and columns on one side only are listed.
Prints every cell that moved and the worst difference of a number.

Usage::

    python benchmarks/bench_real_panel.py --methods "RVM()" gamma=evidence gamma=scale \
        --out DIR
    python benchmarks/compare_panel_rows.py DIR
"""

from __future__ import annotations

import argparse
import os

import numpy as np
import pandas as pd

RESULTS = os.path.join(os.path.dirname(__file__), "results")
KEY = ["set", "split", "method"]
UNTIMED = {"time_s", "cpu_s"}


def compare(old: pd.DataFrame, new: pd.DataFrame, rtol: float) -> list[str]:
    """Lines naming each moved cell, then a summary line."""
    both = old.merge(new, on=KEY, how="outer", suffixes=("_old", "_new"), indicator=True)
    methods = set(old["method"]) & set(new["method"])
    alone = both[(both["_merge"] != "both") & both["method"].isin(methods)]
    lines = [f"{r.set} split {r.split} {r.method}: in the {r._merge} run only"
             for r in alone.itertuples()]  # fmt: skip
    lines = [line.replace("left_only", "old").replace("right_only", "new") for line in lines]
    lines += [f"column only in the old rows: {c}" for c in sorted(set(old) - set(new))]
    lines += [f"column only in the new rows: {c}" for c in sorted(set(new) - set(old))]
    rows = both[both["_merge"] == "both"]
    unequal = rows["n_train_old"] != rows["n_train_new"]
    lines.append(f"subsampled differently (left out): {sorted(set(rows.loc[unequal, 'set']))}")
    rows = rows[~unequal]
    worst = 0.0
    for col in new.columns:
        if col in KEY or col in UNTIMED or f"{col}_old" not in rows:
            continue
        a, b = rows[f"{col}_old"], rows[f"{col}_new"]
        if pd.api.types.is_numeric_dtype(a) and pd.api.types.is_numeric_dtype(b):
            x, y = a.to_numpy(float), b.to_numpy(float)
            rel = np.abs(x - y) / np.maximum(1.0, np.abs(x))
            rel[np.isnan(x) & np.isnan(y)] = 0.0
            rel[np.isnan(rel)] = np.inf  # NaN on one side only
            moved = rel > rtol
            worst = max(worst, float(rel.max(initial=0.0)))
        else:
            moved = (a.fillna("") != b.fillna("")).to_numpy()
        for _, r in rows[moved].iterrows():
            lines.append(f"{r.set} split {r.split} {r.method}: {col} {r[f'{col}_old']!r} -> "
                         f"{r[f'{col}_new']!r}")  # fmt: skip
    lines.append(f"{len(rows)} rows compared; worst difference of a number {worst:.3g}")
    return lines


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("new", help="--out directory of the new run")
    parser.add_argument("--old", default=RESULTS, help="directory of the rows to compare with")
    parser.add_argument("--rtol", type=float, default=1e-10)
    args = parser.parse_args(argv)
    for kind in ("regression", "classification"):
        name = f"real_panel_{kind}_rows.csv"
        paths = [os.path.join(d, name) for d in (args.old, args.new)]
        if not all(os.path.exists(p) for p in paths):
            print(f"## {kind}: no rows in one of {paths}\n")
            continue
        old, new = (pd.read_csv(p) for p in paths)
        print(f"## {kind}\n")
        print("\n".join(compare(old, new, args.rtol)) + "\n")


if __name__ == "__main__":
    main()
