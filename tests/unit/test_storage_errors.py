"""File-system errors are one paragraph naming the path: unwritable, non-folder, full."""

import errno

import pytest
import sqlalchemy.exc

from mlgraph.tracking.store import StorageError, check_writable, storage_problem


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
