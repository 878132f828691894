"""What the main job does beyond its trials, made cheaper without changing a number: new SQLite
stores copied from a migrated template, trial workers started before the store opens, BLAS
limits without a library scan per trial."""

import contextlib
import os
import sqlite3
import sys
import time
import warnings

import mlflow
import numpy as np
import pandas as pd
import pytest
from sklearn.base import BaseEstimator
from threadpoolctl import threadpool_info

from mlgraph import tracking
from mlgraph.protocols import labelling_rate_trials
from mlgraph.runner import Parallelism, _threadpools, run_trials, started_workers
from mlgraph.signals import _children, stop_workers


def schema(db):
    """Tables, indices and the migration version; each statement's clauses as a set (MLflow's
    batch migrations write a table's constraints in no fixed order)."""
    with contextlib.closing(sqlite3.connect(db)) as con:
        rows = con.execute("SELECT type, name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'")
        objects = {(kind, name): frozenset(line.strip().rstrip(",") for line in (sql or "").splitlines())
                   for kind, name, sql in rows}
        version = con.execute("SELECT version_num FROM alembic_version").fetchall()
    return objects, version


def test_store_from_template_equals_a_migrated_one(tmp_path, monkeypatch):
    monkeypatch.setenv("MLGRAPH_CACHE_DIR", str(tmp_path / "cache"))
    migrated = tmp_path / "migrated" / "mlflow.db"
    migrated.parent.mkdir()
    tracking._open_sqlite(migrated, migrated.parent / "mlartifacts")  # MLflow's own migrations
    for name in ("a", "b"):  # the first builds the template, the second copies it
        uri = f"sqlite:///{tmp_path / name / 'mlflow.db'}"
        experiment = tracking.setup_experiment(uri, "t")
        assert schema(tmp_path / name / "mlflow.db") == schema(migrated)
        client = mlflow.MlflowClient(uri)
        default = client.get_experiment("0")
        assert default.name == "Default"
        assert default.artifact_location == str(tmp_path / name / "mlartifacts" / "0")
        assert [e.experiment_id for e in client.search_experiments()] == [experiment, "0"]
        assert not list((tmp_path / name).glob(".*.tmp"))
    assert (tmp_path / "cache" / f"mlflow-{mlflow.__version__}-store.db").exists()
    mlflow.set_tracking_uri(None)


def test_store_without_a_writable_cache_is_migrated(tmp_path, monkeypatch):
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("MLGRAPH_CACHE_DIR", str(tmp_path / "file" / "cache"))  # cannot be created
    assert tracking._store_template() is None
    uri = f"sqlite:///{tmp_path / 's' / 'mlflow.db'}"
    tracking.setup_experiment(uri, "t")
    assert mlflow.MlflowClient(uri).get_experiment_by_name("t") is not None
    mlflow.set_tracking_uri(None)


def test_blas_limits_apply_and_are_restored():
    import scipy.linalg  # noqa: F401  (loads the BLAS)

    before = [i["num_threads"] for i in threadpool_info()]
    with _threadpools(len(sys.modules)).limit(limits=1):
        assert all(i["num_threads"] == 1 for i in threadpool_info())
    assert [i["num_threads"] for i in threadpool_info()] == before


class LeastSquares(BaseEstimator):
    """Least-squares scores from the labelled rows (numbers that depend on every feature)."""

    def fit(self, X, Y):
        lab = (Y != -1).all(axis=1)
        self.w_ = np.linalg.lstsq(X[lab], Y[lab].astype(float), rcond=None)[0]
        return self

    def decision_function(self, X):
        return X @ self.w_

    def predict(self, X):
        return (self.decision_function(X) > 0.5).astype(np.int8)


def test_trials_on_started_workers_equal_sequential_ones():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 5))
    Y = (rng.random((120, 4)) < 0.4).astype(np.int8)
    trials = labelling_rate_trials(len(X), rates=[0.3, 0.6], repeats=3, seed=2)
    metrics = ["avg_precision", "micro_f1", "ranking_loss"]
    sequential = run_trials(LeastSquares(), X, Y, trials, metrics, Parallelism(1, 1), progress=False)
    with started_workers(Parallelism(2, 1), LeastSquares()) as ready:
        ready()
        parallel = run_trials(LeastSquares(), X, Y, trials, metrics, Parallelism(2, 1), progress=False)
    timing = ["fit_seconds", "predict_seconds"]
    pd.testing.assert_frame_equal(sequential.drop(columns=timing), parallel.drop(columns=timing),
                                  check_exact=False, rtol=1e-10)


@pytest.mark.parametrize("error", [RuntimeError, KeyboardInterrupt])
def test_workers_not_waited_for_leave_nothing_behind(error):
    """An error before the trials waits for the workers (no task is left queued); a signal
    stops them at once; neither prints a warning."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(error), started_workers(Parallelism(2, 1), LeastSquares()):
            raise error("the store cannot be opened")
    stop_workers()
    deadline = time.monotonic() + 30
    while _children(os.getpid()) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _children(os.getpid())
