"""Width grids and cross-validation through joblib, on a real dask.distributed cluster.

The cluster (two worker processes, one thread each) is started by the module
fixture and torn down after; every parallel result must equal the serial one
exactly (the fits are deterministic), and the scheduler must have run the tasks.
"""

import warnings

import joblib
import numpy as np
import pytest

from rvm_pymc.estimators import RVC, RVR
from rvm_pymc.exceptions import ConvergenceWarning
from rvm_pymc.model_selection import evidence_vs_cv

distributed = pytest.importorskip("distributed")  # in the test extra; skipped only outside it

GRID = [0.03, 0.1, 0.3, 1.0]


@pytest.fixture(scope="module")
def client():
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as c,
    ):
        yield c


def _sinc(n=80, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-10, 10, (n, 1))
    return X, np.sinc(X[:, 0] / np.pi) + 0.1 * rng.standard_normal(n)


def _ran_on_cluster(client, fn):
    """``fn()`` and the number of tasks the scheduler ran while it ran.

    joblib's dask backend batches calls into tasks once they prove quick, so the
    count is at least 2 when the work went to the cluster, not one per call.
    """
    with distributed.get_task_stream(client) as ts:
        out = fn()
    return out, len(ts.data)


def test_gamma_evidence_grid_on_dask_equals_serial(client):
    X, y = _sinc()
    serial = RVR(gamma="evidence", gamma_grid=GRID).fit(X, y)

    def fit():
        with joblib.parallel_config(backend="dask"):
            return RVR(gamma="evidence", gamma_grid=GRID).fit(X, y)

    dist, n_tasks = _ran_on_cluster(client, fit)
    assert n_tasks >= 2
    np.testing.assert_array_equal(dist.evidence_path_["log_evidence"],
                                  serial.evidence_path_["log_evidence"])  # fmt: skip
    assert dist.gamma_ == serial.gamma_
    np.testing.assert_array_equal(dist.coef_, serial.coef_)
    np.testing.assert_array_equal(dist.predict(X), serial.predict(X))


def test_classifier_grid_with_n_jobs_on_dask(client):
    rng = np.random.default_rng(1)
    X = rng.standard_normal((60, 2))
    y = np.where(X[:, 0] + 0.5 * rng.standard_normal(60) > 0, "b", "a")
    serial = RVC(gamma="evidence", gamma_grid=GRID).fit(X, y)

    def fit():
        with joblib.parallel_config(backend="dask"):
            return RVC(gamma="evidence", gamma_grid=GRID, n_jobs=2).fit(X, y)

    dist, n_tasks = _ran_on_cluster(client, fit)
    assert n_tasks >= 2
    np.testing.assert_array_equal(dist.evidence_path_["log_evidence"],
                                  serial.evidence_path_["log_evidence"])  # fmt: skip
    np.testing.assert_array_equal(dist.predict_proba(X), serial.predict_proba(X))


def test_evidence_vs_cv_on_dask_equals_serial(client):
    from sklearn.model_selection import KFold

    X, y = _sinc(60, seed=2)
    cv = KFold(3, shuffle=True, random_state=0)
    serial = evidence_vs_cv(RVR(), X, y, GRID[:3], cv=cv, search=False)

    def run():
        with joblib.parallel_config(backend="dask"):
            return evidence_vs_cv(RVR(), X, y, GRID[:3], cv=cv, search=False)

    dist, n_tasks = _ran_on_cluster(client, run)
    assert n_tasks >= 2  # 12 calls: a full-data fit and three folds per width
    for key in serial:
        np.testing.assert_array_equal(dist[key], serial[key])


def test_worker_warnings_reach_the_caller(client):
    """The kept width's warnings, raised on a worker, reach the caller naming the width.

    The widths the search discards stay quiet (a warning about a fit that is not
    returned only confuses); ``evidence_path_["converged"]`` records every width's.
    """
    X, y = _sinc()
    with joblib.parallel_config(backend="dask"), warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        est = RVR(gamma="evidence", gamma_grid=GRID, max_iter=2).fit(X, y)
    msgs = [str(x.message) for x in w if issubclass(x.category, ConvergenceWarning)]
    # every width stopped at max_iter = 2, on a worker; the kept one says so, naming its width
    kept = [m for m in msgs if "did not converge" in m]
    assert len(kept) == 1 and kept[0].startswith(f"gamma={est.gamma_:.4g}: "), msgs
    assert not est.evidence_path_["converged"].any()
    assert est.evidence_path_["converged"].shape == est.evidence_path_["gamma"].shape
    assert est.evidence_path_["gamma"][0] == 0.3  # the grid's middle width first


def test_n_jobs_is_validated():
    X, y = _sinc(20)
    for bad in (0, 1.5, "2", True):
        with pytest.raises(ValueError, match="n_jobs"):
            RVR(n_jobs=bad).fit(X, y)
