"""``rvm-pymc demo`` with NUTS: no relevance count for a fit that prunes nothing.

NUTS keeps every basis; the count of ``rvm_pymc.comparison.n_relevant`` (weights
whose sign the posterior knows) was 0 on sinc beside a curve that fits well, and
the demo printed it in its table and legend as "nuts (0 RVs)".
"""

from __future__ import annotations

import warnings

import matplotlib.pyplot as plt
import pymc  # noqa: F401
import pytest

NO_PRUNING = "n/a (no pruning)"  # what the demo's table and legend show for a sampled fit

pytestmark = pytest.mark.pymc


def test_demo_reports_no_relevance_count_for_nuts(tmp_path, monkeypatch):
    from argparse import Namespace

    from rvm_pymc.cli import _demo

    out = tmp_path / "demo.png"
    args = Namespace(n_train=30, noise_sd=0.1, seed=0, method="fast", gammas=[0.2, 0.5],
                     methods=["reference", "nuts"], draws=60, output=str(out))  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # 60 draws: NUTS's short-run warnings
        data, fits = _demo.fit_demo(args)
    table = _demo._demo_table(args, data, fits)
    assert table.loc["nuts", "n_relevant"] == NO_PRUNING
    assert table.loc["reference", "n_relevant"] == fits["reference"].n_relevance_
    closed = []  # the demo closes its figure once written: keep it to read its legend
    monkeypatch.setattr(plt, "close", closed.append)
    _demo._write_figure(args, data, fits)
    (fig,) = closed
    assert out.stat().st_size > 0
    legend = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert f"nuts ({NO_PRUNING})" in legend
    assert f"reference ({fits['reference'].n_relevance_} RVs)" in legend
    assert not any("nuts (0 RVs)" in text for text in legend)
