"""Tuning steps of NUTS over the RBF width: RVR(gamma="integrate", tune=T) on the 60 fits
of the evidence-against-MCMC table, against that table's width fits (the default tune).

For every regression set of the real-data panel (subsampled to at most 150 rows) and
splits 0 and 1 of ``bench_evidence_vs_mcmc.py`` (its split, its convergence check),
one fit ``RVR(method="nuts", gamma="integrate", random_state=0, tune=T)``: converged
by the check, draws a chain, wall time of ``fit`` and held-out lpd per point.  Rows
go to ``results/width_tune_<T>.jsonl`` as they finish; ``--summary`` prints the
comparison with the ``nuts_width`` rows of ``results/evidence_vs_mcmc.csv``.

Usage::

    python benchmarks/bench_width_tune.py 300              # about 40 min
    python benchmarks/bench_width_tune.py 300 --summary    # the table of a finished run
"""

from __future__ import annotations

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy as np
import pandas as pd
from _common import load_average, source_state
from bench_evidence_vs_mcmc import RESULTS, _ok, _split, fit_scored


def run(tune: int, path: str) -> None:
    import _panel_data as panel

    from rvm_pymc import RVR

    for name in panel.regression_sets():
        data = panel.load(name, max_n=150)
        for split in (0, 1):
            X_tr, X_te, y_tr, y_te = _split(data.X, data.y, split)
            est = RVR(method="nuts", gamma="integrate", random_state=0, tune=tune)
            wall, pred = fit_scored(est, X_tr, y_tr, X_te, 0)
            a = est.idata_.attrs
            row = {"set": name, "split": split, "tune": tune, "ok": _ok(est),
                   "draws": int(est.idata_["posterior"].sizes["draw"]), "wall": wall,
                   "lpd": float(np.mean(pred.log_density(y_te))),
                   "max_rhat": float(a["max_rhat"]), "min_ess_bulk": float(a["min_ess_bulk"]),
                   "min_ess_tail": float(a["min_ess_tail"]),
                   "n_divergent": int(a["n_divergent"]), "load": load_average(),
                   "source": source_state()}  # fmt: skip
            with open(path, "a") as fh:
                fh.write(json.dumps(row) + "\n")
            print(row, flush=True)


def summary(path: str) -> str:
    """The run at ``path`` against the table's width fits, fit by fit where they differ."""
    rows = pd.DataFrame([json.loads(line) for line in open(path)])
    table = pd.read_csv(os.path.join(RESULTS, "evidence_vs_mcmc.csv"))
    base = table[table["fit"] == "nuts_width"]
    m = rows.merge(base, on=["set", "split"], suffixes=("", "_default"))
    differ = m[m["ok"] != m["ok_default"]]
    cols = ["set", "split", "ok", "ok_default", "draws", "draws_default", "max_rhat",
            "min_ess_bulk", "min_ess_tail", "n_divergent"]  # fmt: skip
    lines = [
        f"fits: {len(m)}; converged at tune {rows['tune'].iloc[0]}: {(m['ok'] == 'yes').sum()}, "
        f"at the default: {(m['ok_default'] == 'yes').sum()}",
        f"wall: total {m['wall'].sum():.0f} s against {m['fit_time'].sum():.0f} s; median "
        f"ratio {np.median(m['wall'] / m['fit_time']):.2f}",
        f"lpd minus the default's: median {np.median(m['lpd'] - m['lpd_default']):+.4f}, "
        f"largest |difference| {np.max(np.abs(m['lpd'] - m['lpd_default'])):.3f}",
        "fits whose convergence differs:",
        differ[cols].to_markdown(index=False, floatfmt=".4g") if len(differ) else "(none)",
    ]
    return "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tune", type=int, help="tuning steps of every fit")
    parser.add_argument("--summary", action="store_true", help="only the table of a run")
    args = parser.parse_args(argv)
    path = os.path.join(RESULTS, f"width_tune_{args.tune}.jsonl")
    if not args.summary:
        run(args.tune, path)
    print(summary(path))


if __name__ == "__main__":
    main()
