"""``rvm-pymc demo``: noisy sinc fitted by :func:`rvm_pymc.comparison.fit_all` (RVRs with
``gamma="evidence"``), compared on fresh noisy targets; NUTS, which prunes nothing, shows
no relevance count (:data:`NO_PRUNING`)."""

from __future__ import annotations

import argparse
import math
import os

import numpy as np

from rvm_pymc._core.validation import MEMORY_FRACTION, available_memory
from rvm_pymc.cli._errors import RunError, UsageError
from rvm_pymc.cli._paths import check_output_file

__all__ = ["NO_PRUNING", "check_demo_arguments", "demo_command", "fit_demo"]

NO_PRUNING = "n/a (no pruning)"
"""The relevance of a sampled (NUTS) fit in the demo's table and legend."""


def _gib(n_bytes: float) -> str:
    return f"{n_bytes / 2**30:.1f} GiB"


def _check_memory(n_train: int) -> None:
    available = available_memory()
    if available is None:
        return
    need = 8 * n_train * n_train
    allowed = MEMORY_FRACTION * available
    if need > allowed:
        largest = math.isqrt(int(allowed // 8))
        raise UsageError(
            f"argument --n-train: {n_train} points need a {n_train} x {n_train} kernel matrix "
            f"of {_gib(need)}, more than {MEMORY_FRACTION:.0%} of the available memory "
            f"({_gib(available)}); use --n-train {largest} or fewer"
        )


def check_demo_arguments(args: argparse.Namespace) -> None:
    """Checks of ``rvm-pymc demo`` that need more than one value at a time.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed arguments (each value is already range-checked).

    Raises
    ------
    UsageError
        If the kernel matrix would not fit in memory or the output cannot be
        written.
    """
    _check_memory(args.n_train)
    if args.output != "none":
        check_output_file("--output", args.output, image=True)


def fit_demo(args: argparse.Namespace):
    """The sinc ``Dataset`` and ``FitSet`` of ``--methods``; RunError if a fit is not finite."""
    from rvm_pymc.cli._commands import progress
    from rvm_pymc.cli._progress import bars_on_stderr, nuts_progress
    from rvm_pymc.comparison import fit_all
    from rvm_pymc.datasets import make_sinc

    data = make_sinc(n_train=args.n_train, noise_sd=args.noise_sd, random_state=args.seed)
    nuts = {
        "sampler_kwargs": {
            "progressbar": nuts_progress(),
            "nuts_sampler": "pymc",  # PyMC's NUTS on PyTensor's default backend (Numba)
        }
    }
    pymc = [m for m in args.methods if m != "reference"]
    about = [f"{' and '.join(pymc)} compile PyMC models, up to a few minutes on a machine's "
             "first run"] if pymc else []  # fmt: skip
    if "nuts" in args.methods:
        about.append(f"nuts: 2 chains of {min(args.draws, 1000)} tuning + {args.draws} draws")
    if about:  # a reference fit takes milliseconds: nothing to announce
        progress(f"fitting {', '.join(args.methods)} ({'; '.join(about)})")
    with bars_on_stderr():
        fits = fit_all(
            data.X_train, data.t_train, methods=args.methods, task="regression",
            kernel="rbf", gamma="evidence", gamma_grid=args.gammas, solver=args.method,
            random_state=args.seed, draws=args.draws, tune=min(args.draws, 1000),
            method_params={"nuts": nuts} if "nuts" in args.methods else None,
        )  # fmt: skip
    for name, fit in fits.items():
        mean, std = fit.predict(data.X_test, return_std=True)
        finite = np.isfinite(mean).all() and np.isfinite(std).all()
        if fit.posterior_.is_type_ii:  # a sampled fit has no evidence (NaN)
            finite = finite and np.isfinite(fit.log_evidence_)
        if not finite:
            raise RunError(f"the fit failed: the {name} fit returned non-finite numbers")
        if name != "reference":
            progress(f"{name}: {fits.fit_times[name]:.1f} s")
    return data, fits


def _demo_table(args, data, fits):
    """compare() on fresh noisy test targets, plus the RMSE against the noise-free sinc."""
    from rvm_pymc.comparison import compare

    rng = np.random.default_rng([args.seed, 1])
    t_new = data.t_test + args.noise_sd * rng.standard_normal(data.t_test.size)
    table = compare(fits, data.X_test, t_new, cv=None, loo=False, random_state=args.seed)
    table.insert(3, "rmse_sinc", [
        float(np.sqrt(np.mean((f.predict(data.X_test) - data.t_test) ** 2))) for f in fits.values()
    ])  # fmt: skip
    table["noise_sd"] = [float(np.sqrt(f.noise_var_)) for f in fits.values()]
    if "n_relevant" in table.columns:  # a sampled fit prunes nothing: no count to show
        sampled = [not f.posterior_.is_type_ii for f in fits.values()]
        table["n_relevant"] = [
            NO_PRUNING if s else int(n) for s, n in zip(sampled, table["n_relevant"], strict=True)
        ]
    cols = ["n_relevant", "rmse_sinc", "rmse", "lpd", "coverage_95", "noise_sd", "gamma",
            "log_evidence", "fit_time", "divergences", "max_rhat"]  # fmt: skip
    return table[[c for c in cols if c in table.columns]]


def _write_figure(args, data, fits) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from rvm_pymc._core.files import atomic_write
    from rvm_pymc.datasets import sinc
    from rvm_pymc.plotting import plot_predictive_1d

    labels = {name: f"{name} ({NO_PRUNING})" for name, f in fits.items()
              if not f.posterior_.is_type_ii}  # fmt: skip
    ax = plot_predictive_1d(dict(fits), data.X_train, data.t_train, data.X_test,
                            bands=(0.95,), truth=sinc, labels=labels)  # fmt: skip
    ax.set_title(f"RVM on noisy sinc ({args.n_train} points): 95% predictive bands")
    ax.figure.tight_layout()
    fmt = os.path.splitext(args.output)[1].lower().lstrip(".")
    try:  # atomic: a failed write leaves an existing file as it was
        atomic_write(args.output, lambda tmp: ax.figure.savefig(tmp, dpi=110, format=fmt))
    except OSError as exc:  # atomic_write names the path itself: give the bare reason
        reason = os.strerror(exc.errno) if exc.errno else (exc.strerror or str(exc))
        raise RunError(f"cannot write --output {args.output}: {reason}") from exc
    finally:
        plt.close(ax.figure)


def _widths(args, fits) -> str:
    """The width each fit chose, and the grid that bracketed it."""
    grid = ", ".join(f"{g:g}" for g in args.gammas)
    how = "refined from" if len(args.gammas) > 1 else "of"
    chosen = {name: float(f.gamma_) for name, f in fits.items()}
    if len(set(chosen.values())) == 1:
        return f"{next(iter(chosen.values())):.4g} {how} {grid}"
    each = ", ".join(f"{name} {g:.4g}" for name, g in chosen.items())
    return f"{each} {how} {grid} (each by the evidence under its own prior)"


def demo_command(args: argparse.Namespace) -> int:
    """``rvm-pymc demo``: fit, print the comparison table, write the figure."""
    try:
        data, fits = fit_demo(args)
        table = _demo_table(args, data, fits)
    except (RunError, KeyboardInterrupt):
        raise
    except MemoryError as exc:
        raise RunError(f"the fit failed: out of memory ({exc})") from exc
    except Exception as exc:
        raise RunError(f"the fit failed: {type(exc).__name__}: {exc}") from exc
    rows = [
        ("data", f"sinc, {args.n_train} points, Gaussian noise sd {args.noise_sd:g}"),
        ("RBF gamma (max evidence)", _widths(args, fits)),
    ]
    if "reference" in fits:
        ref = fits["reference"]
        rows.append(("reference fit", f"solver {args.method!r}, "
                     f"{fits.fit_times['reference'] * 1e3:.1f} ms for all widths; at the chosen "
                     f"one {ref.n_iter_} iterations, converged {ref.converged_}"))  # fmt: skip
    tune = fits["nuts"].tune if "nuts" in fits else 0
    nuts = f" (NUTS: 2 chains, {tune} tuning + {args.draws} draws each)"
    rows.append(("methods", ", ".join(args.methods) + (nuts if "nuts" in args.methods else "")))
    width = max(len(k) for k, _ in rows)
    print("rvm-pymc demo: relevance vector regression on noisy sinc")
    for k, v in rows:
        print(f"  {k:<{width}}  {v}")
    print(
        "\nThe fits side by side (rvm_pymc.comparison.compare on 1000 fresh noisy test points;"
        "\nrmse_sinc against the noise-free function, lpd in nats per point; n_relevant counts"
        "\nthe relevance vectors of the type-II fits, the bias not counted, as the plot's"
        "\nlegend; NUTS prunes no basis, so it has no such count; log_evidence is"
        "\nlog p(t | alpha, beta) of the type-II fits):"
    )
    print(table.to_string(float_format=lambda v: f"{v:.4g}"))
    if args.output != "none":
        _write_figure(args, data, fits)
        print(f"  wrote {args.output}")
    return 0
