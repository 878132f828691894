"""What the main job does beyond its trials, made cheaper without changing a number: new SQLite
stores copied from a migrated template, BLAS limits without a library scan per trial."""

import contextlib
import sqlite3

import mlflow
from threadpoolctl import threadpool_info

from mlgraph.graphs.kernels import thread_pools
from mlgraph.tracking import store as tracking


def schema(db):
    """Tables, indices and the migration version; each statement's clauses as a set (MLflow's
    batch migrations write a table's constraints in no fixed order)."""
    with contextlib.closing(sqlite3.connect(db)) as con:
        rows = con.execute("SELECT type, name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'")
        objects = {
            (kind, name): frozenset(line.strip().rstrip(",") for line in (sql or "").splitlines())
            for kind, name, sql in rows
        }
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
    with thread_pools().limit(limits=1):
        assert all(i["num_threads"] == 1 for i in threadpool_info())
    assert [i["num_threads"] for i in threadpool_info()] == before
