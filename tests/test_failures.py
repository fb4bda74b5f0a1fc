"""Every failure a clear message: one table of bad inputs, each with its exception and phrase.

Each row of ``FAILURES`` is (id, callable, expected exception type, a phrase of
its message); the callable gets a namespace of tiny data, fitted estimators and
files.  Estimators, the reference solver, save/load and the command line.  Every
message must also be free of tracebacks and of private names (``_something``).
The estimators run the reference method on tiny data; no PyMC model is compiled
(the map/nuts rows fail in the parameter checks, before PyMC is imported).
The gamma="scale" tests at the end check the issue's case in more detail.
"""

from __future__ import annotations

import contextlib
import io
import re
from types import SimpleNamespace
from unittest import mock

import numpy as np
import pytest
from sklearn.exceptions import NotFittedError

from rvm_pymc import cli
from rvm_pymc.basis import FunctionBasis
from rvm_pymc.estimators import RVC, RVR, load
from rvm_pymc.estimators._width_selection import scale_gamma
from rvm_pymc.kernels import RBF, make_kernel
from rvm_pymc.reference import fit_classification, fit_regression

PRIVATE_NAME = re.compile(r"(?<![\w\-./])_[A-Za-z]\w*")  # _positive_float, _WidthKernel, ...


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = np.linspace(-3.0, 3.0, 20)[:, None]
    t = np.sin(X[:, 0]) + 0.1 * rng.standard_normal(20)
    return X, t


@pytest.fixture(scope="module")
def ctx(tmp_path_factory):
    """Tiny data (12 points), a fitted RVR and RVC, and files good and bad."""
    tmp = tmp_path_factory.mktemp("failures")
    rng = np.random.default_rng(0)
    X = np.linspace(-3.0, 3.0, 12)[:, None]
    t = np.sin(X[:, 0]) + 0.1 * rng.standard_normal(12)
    y = (t > 0).astype(int)
    X_nan = X.copy()
    X_nan[3, 0] = np.nan
    rvr = RVR(gamma=0.5).fit(X, t)
    rvc = RVC(gamma=0.5).fit(X, y)
    rvr.save(tmp / "rvr.nc")
    rvc.save(tmp / "rvc.nc")
    (tmp / "text.nc").write_text("not a model\n")
    (tmp / "empty.nc").write_bytes(b"")
    whole = (tmp / "rvr.nc").read_bytes()
    (tmp / "truncated.nc").write_bytes(whole[: len(whole) // 2])
    np.save(tmp / "array.npy", np.zeros(3))
    import xarray as xr

    xr.Dataset({"a": ("x", [1.0, 2.0])}).to_netcdf(tmp / "other.nc")
    return SimpleNamespace(X=X, t=t, y=y, X_nan=X_nan, rvr=rvr, rvc=rvc, tmp=tmp)


class CliExit(Exception):
    """What ``rvm-pymc`` ended with: its exit status and the lines on stderr."""

    def __init__(self, status: int, lines: list[str]) -> None:
        self.status, self.lines = status, lines
        super().__init__(f"exit {status}: {' | '.join(lines)}")


def _cli(*argv: str) -> None:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        status = cli.main(list(argv))
    raise CliExit(status, err.getvalue().strip().splitlines())


def _with(a: np.ndarray, index: int, value) -> np.ndarray:
    out = a.astype(object if value is None else float)
    out[index] = value
    return out


def nan_left(X: np.ndarray) -> np.ndarray:
    """A basis function that is NaN for x <= 0."""
    return np.where(X[:, 0] > 0, 1.0, np.nan)


def _low_memory(fn, n_bytes: int = 2**30):
    """Run ``fn`` as if only ``n_bytes`` of memory were available.

    The operating system says so: ``/proc/meminfo`` reports ``n_bytes`` available and
    there is no cgroup limit.
    """
    real_open = open

    def fake_open(file, *args, **kwargs):
        if str(file) == "/proc/meminfo":
            return io.StringIO(f"MemTotal: {4 * n_bytes // 1024} kB\n"
                               f"MemAvailable: {n_bytes // 1024} kB\n")  # fmt: skip
        if str(file).startswith("/sys/fs/cgroup/"):
            raise FileNotFoundError(file)
        return real_open(file, *args, **kwargs)

    with mock.patch("builtins.open", fake_open):
        return fn()


def _diabetes(n: int):
    """The first ``n`` rows of sklearn's diabetes data: a numeric target (>100 values)."""
    from sklearn.datasets import load_diabetes

    X, y = load_diabetes(return_X_y=True)
    return X[:n], y[:n]


def _row(id_, fn, exc, phrase, marks=()):
    return pytest.param(fn, exc, phrase, id=id_, marks=marks)


VE, TE, NF = ValueError, TypeError, NotFittedError

FAILURES = [
    # ---- RVR / RVC data
    _row("rvr-X-nan", lambda c: RVR().fit(c.X_nan, c.t), VE, "Input X contains NaN"),
    _row("rvr-X-inf", lambda c: RVR().fit(_with(c.X, 3, np.inf), c.t), VE,
         "Input X contains infinity"),
    _row("rvr-y-nan", lambda c: RVR().fit(c.X, _with(c.t, 2, np.nan)), VE, "Input y contains NaN"),
    _row("rvr-y-none", lambda c: RVR().fit(c.X, _with(c.t, 2, None)), VE,
         "y has 1 missing or non-finite value(s)"),
    _row("rvr-X-3d", lambda c: RVR().fit(c.X[:, :, None], c.t), VE, "Found array with dim 3"),
    _row("rvr-y-2d", lambda c: RVR().fit(c.X, np.column_stack([c.t, c.t])), VE,
         "y should be a 1d array"),
    _row("rvr-lengths", lambda c: RVR().fit(c.X, c.t[:-1]), VE,
         "inconsistent numbers of samples: [12, 11]"),
    _row("rvr-one-sample", lambda c: RVR().fit(c.X[:1], c.t[:1]), VE,
         "a minimum of 2 is required"),
    _row("rvr-string-targets", lambda c: RVR().fit(c.X, np.array(["a", "b"] * 6)), VE,
         "y must be numeric; got values of dtype <U1"),
    _row("rvr-string-X", lambda c: RVR().fit(np.array([["a"]] * 12), c.t), VE,
         "X must be numeric"),
    _row("rvr-complex-X", lambda c: RVR().fit(c.X + 1j, c.t), VE, "X must be real-valued"),
    _row("rvr-ragged-X", lambda c: RVR().fit([[1.0], [2.0, 3.0]], [1.0, 2.0]), VE,
         "X is not a rectangular array"),
    _row("rvr-constant-y", lambda c: RVR().fit(c.X, np.full(12, 0.1)), VE,
         "y is constant (all values 0.1)"),
    _row("rvr-scale-gamma-X-1e-160", lambda c: RVR().fit(c.X * 1e-160, c.t), VE,
         "X has variance"),
    _row("rvr-scale-gamma-X-1e160", lambda c: RVR().fit(c.X * 1e160, c.t), VE,
         "rescale X (e.g. sklearn's StandardScaler) or pass a numeric gamma"),
    # ---- RVR / RVC parameters
    _row("rvr-unknown-kernel", lambda c: RVR(kernel="rbff").fit(c.X, c.t), VE,
         "unknown kernel 'rbff'"),
    _row("rvr-kernel-int", lambda c: RVR(kernel=3).fit(c.X, c.t), VE,
         "kernel must be a kernel name"),
    _row("rvr-kernel-bad-width", lambda c: RVR(kernel=RBF(gamma=-1.0)).fit(c.X, c.t), VE,
         "gamma must be finite and > 0; got -1.0"),
    _row("kernel-unknown-parameter", lambda c: make_kernel("rbf", width=3.0), TE,
         "kernel 'rbf' (RBF) has no parameter(s) ['width']"),
    _row("rvr-negative-gamma", lambda c: RVR(gamma=-1.0).fit(c.X, c.t), VE,
         "gamma must be a float > 0, 'auto', 'cv', 'scale', 'evidence' or 'integrate'; got -1.0"),
    _row("rvr-nan-gamma", lambda c: RVR(gamma=float("nan")).fit(c.X, c.t), VE,
         "gamma must be a float > 0"),
    _row("rvr-unknown-gamma-word", lambda c: RVR(gamma="widest").fit(c.X, c.t), VE,
         "got 'widest'"),
    _row("rvr-gamma-grid-negative",
         lambda c: RVR(gamma="evidence", gamma_grid=[0.1, -1.0]).fit(c.X, c.t), VE,
         "gamma_grid must be a non-empty sequence of floats > 0"),
    _row("rvr-gamma-grid-strings",
         lambda c: RVR(gamma="evidence", gamma_grid=["a"]).fit(c.X, c.t), VE,
         "gamma_grid must be a non-empty sequence of floats > 0; got ['a']"),
    _row("rvr-bias-string", lambda c: RVR(bias="no").fit(c.X, c.t), VE,
         "bias must be True or False; got 'no'"),
    _row("rvc-bias-int", lambda c: RVC(bias=1).fit(c.X, c.y), VE,
         "bias must be True or False; got 1"),
    _row("rvr-random-state-string", lambda c: RVR(random_state="seed").fit(c.X, c.t), VE,
         "random_state must be None, an integer seed"),
    _row("rvc-random-state-negative", lambda c: RVC(random_state=-1).fit(c.X, c.y), VE,
         "random_state must be None, an integer seed in [0, 2**32 - 1]"),
    _row("rvr-precomputed-not-square",
         lambda c: RVR(kernel="precomputed").fit(np.ones((12, 5)), c.t), VE,
         "needs X to be the square kernel matrix of the training points (n_samples x "
         "n_samples); got X of shape (12, 5)"),
    _row("rvc-precomputed-not-square",
         lambda c: RVC(kernel="precomputed").fit(np.ones((12, 13)), c.y), VE,
         "got X of shape (12, 13)"),
    _row("rvr-evidence-without-width",
         lambda c: RVR(kernel="linear", gamma="evidence").fit(c.X, c.t), VE,
         "gamma='evidence' needs a kernel with a width"),
    _row("rvr-bad-method", lambda c: RVR(method="mcmc").fit(c.X, c.t), VE,
         "method must be one of ('reference', 'map', 'nuts'); got 'mcmc'"),
    _row("rvr-bad-solver", lambda c: RVR(solver="newton").fit(c.X, c.t), VE,
         "solver must be one of"),
    _row("rvr-unknown-prior", lambda c: RVR(prior="flat").fit(c.X, c.t), VE,
         "unknown prior preset 'flat'"),
    _row("rvr-negative-prior", lambda c: RVR(prior={"a": -1, "b": 0, "c": 0, "d": 0})
         .fit(c.X, c.t), VE, "hyperprior parameter a must be finite and >= 0"),
    _row("rvr-prior-unknown-key", lambda c: RVR(prior={"e": 1}).fit(c.X, c.t), VE,
         "prior has unknown keys ['e']"),
    _row("rvr-fast-with-gamma-prior",
         lambda c: RVR(prior="weakly_informative", solver="fast").fit(c.X, c.t), VE,
         "Use method='mackay' or 'em' for a Gamma prior on alpha"),
    _row("rvr-degree-0", lambda c: RVR(kernel="poly", degree=0).fit(c.X, c.t), VE,
         "degree must be an integer >= 1"),
    _row("rvr-draws-0", lambda c: RVR(draws=0).fit(c.X, c.t), VE,
         "draws must be None or an integer >= 1"),
    _row("rvr-chains-0", lambda c: RVR(chains=0).fit(c.X, c.t), VE,
         "chains must be None or an integer >= 1"),
    _row("rvr-max-iter-float", lambda c: RVR(max_iter=10.5).fit(c.X, c.t), VE,
         "max_iter must be None or an integer >= 1; got 10.5"),
    _row("rvr-negative-tol", lambda c: RVR(tol=-1.0).fit(c.X, c.t), VE,
         "tol must be a finite float > 0"),
    _row("rvr-bool-tol", lambda c: RVR(tol=True).fit(c.X, c.t), VE, "tol must be a finite float"),
    _row("rvr-inf-tol", lambda c: RVR(tol=np.inf).fit(c.X, c.t), VE, "tol must be a finite float"),
    _row("rvr-zero-n-jobs", lambda c: RVR(n_jobs=0).fit(c.X, c.t), VE, "n_jobs must be None"),
    _row("rvr-coef0-negative", lambda c: RVR(kernel="poly", coef0=-1.0).fit(c.X, c.t), VE,
         "coef0 must be finite and >= 0"),
    _row("rvr-bad-init", lambda c: RVR(init="zeros").fit(c.X, c.t), VE, "init must be one of"),
    _row("rvr-sampler-kwargs-list", lambda c: RVR(method="map", sampler_kwargs=[1])
         .fit(c.X, c.t), VE, "sampler_kwargs must be None or a dict"),
    _row("rvr-map-unknown-sampler-kwarg",
         lambda c: RVR(method="map", sampler_kwargs={"bogus": 1}).fit(c.X, c.t), VE,
         "sampler_kwargs ['bogus'] do not apply to method='map'"),
    _row("rvr-nuts-unknown-sampler-kwarg",
         lambda c: RVR(method="nuts", sampler_kwargs={"draws": 10}).fit(c.X, c.t), VE,
         "sampler_kwargs ['draws'] do not apply to method='nuts'"),
    _row("rvr-nuts-bogus-model",
         lambda c: RVR(method="nuts", sampler_kwargs={"model": "bogus"}).fit(c.X, c.t), VE,
         "sampler_kwargs['model'] must be one of ('collapsed', 'joint'); got 'bogus'"),
    _row("rvc-nuts-bogus-parametrization",
         lambda c: RVC(method="nuts", sampler_kwargs={"parametrization": "raw"}).fit(c.X, c.y),
         VE, "sampler_kwargs['parametrization'] must be one of ('centred', 'non_centred')"),
    _row("rvr-nuts-seed-in-sampler-kwargs",
         lambda c: RVR(method="nuts", sampler_kwargs={"random_seed": 1}).fit(c.X, c.t), VE,
         "the fit sets it itself, from the estimator's draws, tune, chains and random_state"),
    _row("rvr-map-model-in-sampler-kwargs",
         lambda c: RVR(method="map", sampler_kwargs={"model": "joint"}).fit(c.X, c.t), VE,
         "sampler_kwargs ['model'] do not apply to method='map': the fit sets it itself"),
    _row("rvr-callable-kernel-wrong-shape",
         lambda c: RVR(kernel=lambda A, B: np.ones(3)).fit(c.X, c.t), VE,
         "returned shape (3,); expected (12, 12)"),
    _row("rvr-callable-kernel-nan",
         lambda c: RVR(kernel=lambda A, B: np.full((len(A), len(B)), np.nan)).fit(c.X, c.t),
         VE, "has 144 non-finite entries (of 144)"),
    _row("rvr-basis-function-nan",
         lambda c: RVR(kernel=FunctionBasis([np.sin, nan_left])).fit(c.X, c.t),
         VE, "6 non-finite entries (of 24) in column(s) ['nan_left']"),
    _row("rvr-basis-function-wrong-shape",
         lambda c: RVR(kernel=FunctionBasis([lambda X: np.ones(3)])).fit(c.X, c.t), VE,
         "returned shape (3,); expected (12,)"),
    _row("rvc-one-class", lambda c: RVC().fit(c.X, np.zeros(12)), VE,
         "at least two classes; y has 1 class (0.0)"),
    _row("rvc-continuous-targets", lambda c: RVC().fit(c.X, c.t), VE,
         "Unknown label type: continuous"),
    _row("rvc-nan-label", lambda c: RVC().fit(c.X, _with(c.y, 0, np.nan)), VE,
         "Input y contains NaN"),
    _row("rvc-string-X", lambda c: RVC().fit(np.array([["a"]] * 12), c.y), VE,
         "X must be numeric"),
    _row("rvc-unknown-prior", lambda c: RVC(prior="nope").fit(c.X, c.y), VE,
         "unknown prior preset 'nope'"),
    # ---- prediction
    _row("rvr-predict-before-fit", lambda c: RVR().predict(c.X), NF, "not fitted yet"),
    _row("rvr-idata-before-fit", lambda c: RVR().idata_, NF, "not fitted yet"),
    _row("rvc-proba-before-fit", lambda c: RVC().predict_proba(c.X), NF, "not fitted yet"),
    _row("rvr-predict-2-features", lambda c: c.rvr.predict(np.ones((3, 2))), VE,
         "X has 2 features, but RVR is expecting 1 features"),
    _row("rvc-predict-2-features", lambda c: c.rvc.predict(np.ones((3, 2))), VE,
         "X has 2 features, but RVC is expecting 1 features"),
    _row("rvr-predict-nan", lambda c: c.rvr.predict(c.X_nan), VE, "Input X contains NaN"),
    _row("rvr-predict-strings", lambda c: c.rvr.predict(np.array([["a"]])), VE,
         "X must be numeric"),
    _row("rvr-sample-predictions-2-features",
         lambda c: c.rvr.sample_predictions(np.ones((3, 2))), VE, "X has 2 features"),
    _row("rvr-sample-predictions-strings",
         lambda c: c.rvr.sample_predictions(np.array([["a"]])), VE,
         "X must be numeric; got values of dtype <U1"),
    _row("rvc-sample-predictions-nan", lambda c: c.rvc.sample_predictions(c.X_nan), VE,
         "Input X contains NaN"),
    # ---- reference solver
    _row("ref-fast-with-gamma-prior",
         lambda c: fit_regression(c.X, c.t, method="fast", prior="weakly_informative"), VE,
         "method='fast' maximises the evidence with a = b = 0"),
    _row("ref-bad-method", lambda c: fit_regression(c.X, c.t, method="newton"), VE,
         "method must be one of ('fast', 'mackay', 'em'); got 'newton'"),
    _row("ref-Phi-nan", lambda c: fit_regression(c.X_nan, c.t), VE,
         "Phi contains non-finite values (1 NaN, 0 inf)"),
    _row("ref-lengths", lambda c: fit_regression(c.X, c.t[:5]), VE,
         "inconsistent numbers of samples: Phi has 12, t has 5"),
    _row("ref-constant-t", lambda c: fit_regression(c.X, np.ones(12)), VE, "t is constant"),
    _row("ref-t-1e-200", lambda c: fit_regression(c.X, c.t * 1e-200), VE,
         "a scale whose square over- or underflows; rescale t"),
    _row("ref-t-2d", lambda c: fit_regression(c.X, np.column_stack([c.t, c.t])), VE,
         "t must be 1-D"),
    _row("ref-string-t", lambda c: fit_regression(c.X, np.array(["a"] * 12)), VE,
         "t must be numeric"),
    _row("ref-max-iter-0", lambda c: fit_regression(c.X, c.t, max_iter=0), VE,
         "max_iter must be an integer >= 1"),
    _row("ref-fixed-noise-without-beta", lambda c: fit_regression(c.X, c.t, fixed_noise=True),
         VE, "fixed_noise=True requires beta_init"),
    _row("ref-alpha-init-with-fast", lambda c: fit_regression(c.X, c.t, alpha_init=[0.0]), VE,
         "alpha_init must be > 0"),
    _row("ref-alpha-init-shape",
         lambda c: fit_regression(c.X, c.t, method="em", alpha_init=[1.0, 2.0]), VE,
         "alpha_init must have shape (1,)"),
    _row("ref-zero-Phi", lambda c: fit_regression(np.zeros((12, 2)), c.t), VE,
         "Phi has no nonzero column"),
    _row("refc-one-class", lambda c: fit_classification(c.X, np.zeros(12)), VE,
         "y has a single class"),
    _row("refc-missing-label", lambda c: fit_classification(c.X, _with(c.y, 0, np.nan)), VE,
         "y contains 1 missing label(s)"),
    _row("refc-lengths", lambda c: fit_classification(c.X, c.y[3:10]), VE,
         "inconsistent numbers of samples: Phi has 12, y has 7"),
    _row("refc-short-y-of-one-class", lambda c: fit_classification(c.X, c.y[:5]), VE,
         "inconsistent numbers of samples: Phi has 12, y has 5"),
    _row("ref-short-constant-t", lambda c: fit_regression(c.X, np.ones(5)), VE,
         "inconsistent numbers of samples: Phi has 12, t has 5"),
    _row("refc-one-float-class-plain", lambda c: fit_classification(c.X, np.full(12, 2.5)), VE,
         "y has a single class (2.5); classification needs at least two"),
    _row("ref-constant-t-plain", lambda c: fit_regression(c.X, np.full(12, 2.5)), VE,
         "t is constant (all values equal 2.5)"),
    _row("ref-numpy-max-iter-plain", lambda c: fit_regression(c.X, c.t, max_iter=np.int64(0)),
         VE, "max_iter must be an integer >= 1; got 0"),
    _row("ref-numpy-tol-plain", lambda c: fit_regression(c.X, c.t, tol=np.float64(-1.0)), VE,
         "tol must be finite and > 0; got -1.0"),
    _row("rvc-linear-tiny-columns", lambda c: RVC(kernel="linear").fit(c.X * 1e-160, c.y), VE,
         "not representable in float64"),
    _row("refc-tiny-columns", lambda c: fit_classification(c.X * 1e-320, c.y), VE,
         "rescale the columns of Phi"),
    _row("rvc-regression-target-memory",
         lambda c: _low_memory(lambda: RVC().fit(*_diabetes(300))), VE,
         "fit a regression instead (RVR",
         # scikit-learn's check of the labels says it first, as it should
         marks=pytest.mark.filterwarnings("ignore:The number of unique classes:UserWarning")),
    _row("refc-many-classes-memory",
         lambda c: _low_memory(lambda: fit_classification(np.ones((300, 301)),
                                                          np.arange(300) % 150)),
         VE, "y has 150 classes: a softmax fit on 301 bases"),
    _row("refc-negative-deletion-tries",
         lambda c: fit_classification(c.X, c.y, deletion_tries=-1), VE,
         "deletion_tries must be an integer >= 0"),
    # ---- save / load
    _row("save-to-missing-directory", lambda c: c.rvr.save(c.tmp / "nope" / "m.nc"),
         FileNotFoundError, "the directory"),
    _row("save-onto-a-directory", lambda c: c.rvr.save(c.tmp), IsADirectoryError,
         "it is a directory"),
    _row("save-unknown-engine", lambda c: c.rvr.save(c.tmp / "e.nc", engine="zarr"), VE,
         "engine must be one of"),
    _row("save-before-fit", lambda c: RVR().save(c.tmp / "u.nc"), NF, "not fitted yet"),
    _row("save-path-none", lambda c: c.rvr.save(None), TE,
         "path must be a str or path-like object; got NoneType"),
    _row("save-user-basis",
         lambda c: RVR(kernel=FunctionBasis([np.sin])).fit(c.X, c.t).save(c.tmp / "f.nc"),
         VE, "cannot be saved without pickle"),
    _row("save-callable-kernel",
         lambda c: RVR(kernel=lambda A, B: A @ B.T).fit(c.X, c.t).save(c.tmp / "k.nc"),
         VE, "cannot be saved without pickle"),
    _row("load-missing-file", lambda c: load(c.tmp / "missing.nc"), FileNotFoundError,
         "No such file"),
    _row("load-directory", lambda c: load(c.tmp), VE, "cannot be read"),
    _row("load-text-file", lambda c: load(c.tmp / "text.nc"), VE,
         "is not a netCDF file written by rvm_pymc"),
    _row("load-empty-file", lambda c: load(c.tmp / "empty.nc"), VE, "is empty (0 bytes)"),
    _row("load-truncated-file", lambda c: load(c.tmp / "truncated.nc"), VE,
         "is damaged or truncated"),
    _row("load-other-netcdf", lambda c: load(c.tmp / "other.nc"), VE,
         "was not written by RVR/RVC.save"),
    _row("load-npy-file", lambda c: load(c.tmp / "array.npy"), VE, "bad magic bytes"),
    _row("load-rvr-as-rvc", lambda c: RVC.load(c.tmp / "rvr.nc"), VE,
         "it holds an RVR, not an RVC; use RVR.load"),
    _row("load-rvc-as-rvr", lambda c: RVR.load(c.tmp / "rvc.nc"), VE,
         "it holds an RVC, not an RVR; use RVC.load"),
    _row("load-path-int", lambda c: load(3), TE, "path must be a str or path-like object"),
    # ---- command line (refused before any fit; exit 2, one line)
    _row("cli-unknown-command", lambda c: _cli("frob"), CliExit, "invalid choice: 'frob'"),
    _row("cli-n-train-3", lambda c: _cli("demo", "--n-train", "3"), CliExit,
         "--n-train: must be >= 10"),
    _row("cli-noise-sd-1e300", lambda c: _cli("demo", "--noise-sd", "1e300"), CliExit,
         "--noise-sd: must be in (0, 1000000]"),
    _row("cli-output-missing-directory",
         lambda c: _cli("demo", "--output", str(c.tmp / "nope" / "f.png")), CliExit,
         "does not exist"),
    _row("cli-negative-gamma", lambda c: _cli("demo", "--gammas", "-1"), CliExit,
         "--gammas: must be in [1e-06, 1000000]"),
    _row("cli-unknown-method", lambda c: _cli("demo", "--method", "x"), CliExit,
         "invalid choice: 'x'"),
    _row("cli-seed-too-large", lambda c: _cli("demo", "--seed", "99999999999"), CliExit,
         "--seed: must be in [0, 4294967295]"),
]  # fmt: skip


@pytest.mark.parametrize(("fn", "exc", "phrase"), FAILURES)
def test_failure_table(ctx, fn, exc, phrase):
    with pytest.raises(exc) as info:
        fn(ctx)
    assert type(info.value) is exc  # not a subclass: the type promised
    message = str(info.value)
    assert phrase in message
    assert "Traceback" not in message
    assert not PRIVATE_NAME.search(message), message
    if exc is CliExit:
        assert info.value.status == 2
        assert len(info.value.lines) == 1 and info.value.lines[0].startswith("rvm-pymc: error:")


def test_the_table_is_wide():
    """At least 40 cases, across estimators, the reference solver, save/load and the CLI."""
    ids = [p.id for p in FAILURES]
    assert len(ids) == len(set(ids)) >= 40
    for prefix in ("rvr-", "rvc-", "ref-", "refc-", "save-", "load-", "cli-"):
        assert sum(i.startswith(prefix) for i in ids) >= 3, prefix


# ------------------------------------------------------------ gamma="scale"


@pytest.mark.parametrize("scale", [1e-160, 1e-200, 1e160, 1e300])
@pytest.mark.parametrize("gamma", ["scale", "evidence"])
def test_scale_gamma_names_the_scale_of_X(data, scale, gamma):
    """The issue's case: it said "gamma must be finite and > 0; got inf"."""
    X, t = data
    word = "small" if scale < 1 else "large"
    with pytest.raises(ValueError, match=rf"X has variance .* too {word} .*rescale X"):
        RVR(gamma=gamma).fit(X * scale, t)


@pytest.mark.parametrize("scale", [1e-150, 1e-10, 1e10, 1e150])
def test_scale_gamma_is_equivariant_within_the_float_range(data, scale):
    """Inside the float range gamma="scale" follows the scale of X: the same fit."""
    X, t = data
    base = RVR().fit(X, t)
    moved = RVR().fit(X * scale, t)
    assert moved.gamma_ == pytest.approx(base.gamma_ / scale**2, rel=1e-12)
    np.testing.assert_array_equal(moved.relevance_indices_, base.relevance_indices_)
    np.testing.assert_allclose(moved.predict(X * scale), base.predict(X), rtol=1e-8, atol=1e-10)


def test_linear_kernel_on_X_whose_squares_overflow_names_the_scale(data):
    """Kernel entries near 1e200 are finite, their squares are not: the column
    scale overflowed to inf and every kernel column was scaled to zeros (a
    silent constant model); now a ValueError says to rescale X."""
    X, t = data
    with pytest.raises(ValueError, match=r"entries up to 9e\+200 .*overflow.*rescale X"):
        RVR(kernel="linear").fit(X * 1e100, t)
    base = RVR(kernel="linear").fit(X, t)
    moved = RVR(kernel="linear").fit(X * 1e60, t)  # squares near 1e240: still a fit
    assert moved.log_evidence_ == pytest.approx(base.log_evidence_, rel=1e-9)
    np.testing.assert_allclose(moved.predict(X * 1e60), base.predict(X), rtol=1e-8, atol=1e-10)


def test_scale_gamma_of_constant_X_is_one():
    assert scale_gamma(np.full((20, 2), 1e-300)) == 1.0


@pytest.mark.parametrize("scale", [1e-160, 1e160])
def test_numeric_gamma_on_X_at_the_float_limits_fits(data, scale):
    """A numeric width on such X is a valid (if useless) kernel: a fit, no error.

    At 1e-160 the RBF kernel of width 0.5 is 1 everywhere (the constant model:
    every prediction is the mean of y); at 1e160 it is the identity (squared
    distances overflow to inf, exp(-inf) = 0 as it should be).
    """
    import warnings

    from rvm_pymc.exceptions import ConvergenceWarning, InterpolationWarning

    X, t = data
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est = RVR(gamma=0.5).fit(X * scale, t)
    # the identity kernel (1e160) fits every target: the noise at its bound, and it says so
    converged = [w for w in caught if issubclass(w.category, ConvergenceWarning)]
    said = [w for w in caught if issubclass(w.category, InterpolationWarning)]
    assert len(converged) <= 1 and len(said) == int(est.interpolates_)
    assert len(converged) + len(said) == len(caught)
    assert est.interpolates_ == (scale > 1)
    K = est.kernel_(X * scale, X * scale)
    pred = est.predict(X * scale)
    assert np.all(np.isfinite(pred))
    if scale < 1:
        np.testing.assert_array_equal(K, np.ones_like(K))
        np.testing.assert_allclose(pred, t.mean(), rtol=1e-12)
    else:
        np.testing.assert_array_equal(K, np.eye(len(t)))


# ------------------------------------------------------------ checked before any work


def test_bad_sampler_kwargs_are_refused_before_pymc_is_imported():
    """A bad ``model`` value or a key the fit sets itself fails in the parameter checks."""
    import subprocess
    import sys

    code = (
        "import sys, numpy as np\n"
        "from rvm_pymc.estimators import RVR\n"
        "X = np.linspace(-3, 3, 12)[:, None]\n"
        "for kw in ({'model': 'bogus'}, {'random_seed': 1}, {'parametrization': 'raw'}):\n"
        "    try:\n"
        "        RVR(method='nuts', sampler_kwargs=kw).fit(X, np.sin(X[:, 0]))\n"
        "    except ValueError as exc:\n"
        "        assert 'sampler_kwargs' in str(exc), exc\n"
        "    else:\n"
        "        raise AssertionError(kw)\n"
        "print(sorted(m for m in ('pymc', 'pytensor') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_precomputed_relevance_indices_are_training_points(data):
    """A square training kernel matrix: relevance indices are rows of X (training points)."""
    from sklearn.metrics.pairwise import rbf_kernel

    X, t = data
    K = rbf_kernel(X, X, gamma=0.5)
    est = RVR(kernel="precomputed").fit(K, t)
    ref = RVR(gamma=0.5).fit(X, t)
    np.testing.assert_array_equal(est.relevance_indices_, ref.relevance_indices_)
    assert np.all(est.relevance_indices_ < len(t))
    np.testing.assert_allclose(est.predict(K[:5]), ref.predict(X[:5]), rtol=1e-8, atol=1e-10)
