"""File-system errors are one paragraph naming the path: unwritable, non-folder, full; an end of
a run that a full store refused is tried again as the process ends."""

import errno
import logging
import shutil

import mlflow
import pytest
import sqlalchemy.exc

from mlgraph.tracking import storage, store
from mlgraph.tracking.storage import StorageError, check_writable, storage_problem


def test_a_file_in_the_way_of_the_output_folder_is_named(tmp_path):
    blocker = tmp_path / "outputs"
    blocker.write_text("not a folder")
    with pytest.raises(
        StorageError, match=r"cannot write to the run folder .*outputs/runs: a part of the path is a file"
    ):
        check_writable(blocker / "runs", "run folder")
    check_writable(tmp_path / "fine" / "runs")
    assert not list((tmp_path / "fine" / "runs").iterdir())  # the probe leaves nothing behind


@pytest.mark.parametrize(
    "exc, words",
    [
        (
            OSError(errno.ENOSPC, "No space left on device", "/data/out/trials.csv"),
            "/data/out/trials.csv: the disk is full",
        ),
        (OSError(errno.EROFS, "Read-only file system", "/ro/x"), "/ro/x: the file system is read-only"),
        (
            sqlalchemy.exc.OperationalError("INSERT ...", {}, Exception("database or disk is full")),
            "sqlite:////s/mlflow.db: SQLite: database or disk is full",
        ),
    ],
)
def test_storage_errors_anywhere_in_the_chain_become_one_paragraph(exc, words):
    try:
        try:
            raise exc
        except Exception as inner:
            raise RuntimeError("MLflow wrapped it") from inner
    except RuntimeError as outer:
        problem = storage_problem(outer, "sqlite:////s/mlflow.db")
    assert isinstance(problem, StorageError) and words in str(problem) and "resume=true" in str(problem)


def test_other_errors_are_not_storage_errors():
    assert storage_problem(ValueError("k must be positive")) is None
    assert storage_problem(OSError(errno.ECONNREFUSED, "refused")) is None


def test_a_folder_with_too_little_room_for_a_job_is_full(tmp_path, monkeypatch):
    usage = shutil.disk_usage(tmp_path)
    monkeypatch.setattr(storage.shutil, "disk_usage", lambda path: usage._replace(free=16 * 1024))
    with pytest.raises(StorageError, match=r"the disk is full \(16 KB free, a job needs 1 MB to start\)"):
        check_writable(tmp_path / "runs", "run folder")
    monkeypatch.setattr(
        storage.shutil, "disk_usage", lambda path: usage._replace(free=storage.MIN_FREE_BYTES)
    )
    check_writable(tmp_path / "runs", "run folder")


def test_mlflow_does_not_print_the_traceback_of_a_full_store_the_job_reports(caplog):
    logger = logging.getLogger("mlflow.store.db.utils")
    full = sqlalchemy.exc.OperationalError("UPDATE runs ...", {}, Exception("database or disk is full"))
    for error in (full, sqlalchemy.exc.OperationalError("SELECT ...", {}, Exception("no such table: runs"))):
        try:
            raise error
        except sqlalchemy.exc.OperationalError:
            logger.exception("SQLAlchemy database error. The following exception is caught.")
    assert [r.exc_info[1] for r in caplog.records] == [error]  # only the other error


@pytest.fixture
def run(tmp_path):
    """A run opened in this process (as without a tracking process), closed afterwards."""
    run_id = store.open_run(
        {"uri": f"sqlite:///{tmp_path}/mlflow.db", "experiment": "e"}, None, None, "r", None, {}
    )
    yield run_id
    while mlflow.active_run() is not None:
        mlflow.end_run()
    store._UNCLOSED.clear()


def test_an_end_the_full_store_refused_is_tried_again_as_the_process_ends(run, monkeypatch):
    client = mlflow.MlflowClient()
    real = mlflow.MlflowClient.set_terminated

    def full(self, run_id, status=None, end_time=None):
        raise mlflow.exceptions.MlflowException("(sqlite3.OperationalError) database or disk is full")

    monkeypatch.setattr(mlflow.MlflowClient, "set_terminated", full)
    with pytest.raises(mlflow.exceptions.MlflowException):
        store.end_run("FINISHED")
    with pytest.raises(mlflow.exceptions.MlflowException):
        store.end_run("FAILED")  # the job's close after the error: its status is the one kept
    store.set_tags({"error": "the disk is full"})  # to the same run, not a new one MLflow would start
    assert store._UNCLOSED == {run: (mlflow.get_tracking_uri(), "FAILED")}
    assert client.get_run(run).info.status == "RUNNING"
    monkeypatch.setattr(mlflow.MlflowClient, "set_terminated", real)  # room again
    store.close_unclosed()
    (only,) = client.search_runs([client.get_run(run).info.experiment_id])
    assert only.info.run_id == run and only.info.status == "FAILED"
    assert only.data.tags["error"] == "the disk is full" and not store._UNCLOSED


def test_a_full_disk_under_the_artifacts_names_the_runs_artifact_folder(run, tmp_path, monkeypatch):
    def full(self, run_id, local_path, artifact_path=None):
        raise OSError(errno.ENOSPC, "No space left on device")  # what shutil's copy says: no file name

    monkeypatch.setattr(mlflow.MlflowClient, "log_artifact", full)
    (tmp_path / "trials_partial.csv").write_text("rate\n0.5\n")
    with pytest.raises(OSError) as caught:
        store.log_artifact(run, str(tmp_path / "trials_partial.csv"))
    folder = mlflow.MlflowClient().get_run(run).info.artifact_uri
    assert caught.value.filename == folder
    assert f"cannot write {folder}: the disk is full" in str(storage_problem(caught.value))
