"""Storage errors: a folder, file or store that cannot be written (read-only, not a folder, full)
is said in one paragraph naming the path (:class:`StorageError`), whether found before a job
starts (:func:`check_writable`) or in an error raised while it runs (:func:`storage_problem`).
"""

from __future__ import annotations

import errno
import logging
import os
import re
import shutil
import ssl
import tempfile
from pathlib import Path

from hydra.errors import CompactHydraException

from mlgraph.config.secrets import redact


class StorageError(CompactHydraException):
    """A folder or store cannot be written (read-only, not a folder, full): one paragraph naming
    the path; what was already logged stays."""


# OSError numbers that mean "this place cannot be written", and what each means in words.
_STORAGE_ERRNOS = {
    errno.ENOSPC: "the disk is full",
    errno.EDQUOT: "the disk quota is used up",
    errno.EROFS: "the file system is read-only",
    errno.EACCES: "permission denied",
    errno.EPERM: "operation not permitted",
    errno.ENOTDIR: "a part of the path is a file, not a folder",
    errno.EEXIST: "a file of that name is in the way",
    errno.EISDIR: "it is a folder",
}
_NO_ROOM = (errno.ENOSPC, errno.EDQUOT, errno.EROFS)  # said of a write, often without the file name
# SQLite's words for the same (through SQLAlchemy and MLflow, whose exceptions carry no errno).
_SQLITE_STORAGE = re.compile(
    r"database or disk is full|attempt to write a readonly database|unable to open database file|disk I/O error"
)


def storage_problem(exc: BaseException, uri: str | None = None) -> StorageError | None:
    """The one-paragraph :class:`StorageError` for an error that says a folder, file or store
    cannot be written (an OSError of :data:`_STORAGE_ERRNOS`, or SQLite's own message for a store
    at ``uri``, anywhere in the exception's chain); None for any other error."""
    if isinstance(exc, CompactHydraException):  # already one paragraph
        return None
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        on_a_file = exc.filename is not None or exc.errno in _NO_ROOM if isinstance(exc, OSError) else False
        if on_a_file and not isinstance(exc, ssl.SSLError) and exc.errno in _STORAGE_ERRNOS:
            path = exc.filename or "(a file of the run)"
            return StorageError(_storage_paragraph(str(path), _STORAGE_ERRNOS[exc.errno]))
        match = _SQLITE_STORAGE.search(str(exc))
        if match:
            return StorageError(
                _storage_paragraph(redact(uri or "the MLflow store"), f"SQLite: {match.group(0)}")
            )
        exc = exc.__cause__ or exc.__context__
    return None


class _StoreErrorsSaidOnce(logging.Filter):
    """MLflow logs a store's write error with its whole traceback, then raises it; a full or
    read-only store is said once, in the paragraph of :func:`storage_problem`."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.exc_info and storage_problem(record.exc_info[1]) is not None)


logging.getLogger("mlflow.store.db.utils").addFilter(_StoreErrorsSaidOnce())


def _storage_paragraph(path: str, why: str) -> str:
    return (
        f"cannot write {path}: {why}. Whatever was logged before stays in the store; make room (or "
        "point MLGRAPH_OUTPUT_DIR, hydra.run.dir or tracking.uri elsewhere) and run the same command "
        "with resume=true to continue from the trials already saved."
    )


# Room a job needs before it starts: a new SQLite store (about 1 MB), the run's tables and figures.
MIN_FREE_BYTES = 1 << 20


def check_writable(folder: str | os.PathLike, what: str = "output folder") -> None:
    """Create ``folder`` (and its parents), write a probe file in it and check that it has
    :data:`MIN_FREE_BYTES` free, or raise a one-paragraph :class:`StorageError` naming it
    (read-only, not a folder, full)."""
    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".mlgraph-probe-") as probe:
            probe.write(b"\0" * 4096)
            probe.flush()
            os.fsync(probe.fileno())
        free = shutil.disk_usage(folder).free
        if free < MIN_FREE_BYTES:
            raise OSError(
                errno.ENOSPC, "", f"{free // 1024} KB free, a job needs {MIN_FREE_BYTES >> 20} MB to start"
            )
    except OSError as exc:
        why = _STORAGE_ERRNOS.get(exc.errno, exc.strerror or type(exc).__name__)
        room = "make room, or " if exc.errno in (errno.ENOSPC, errno.EDQUOT) else ""
        raise StorageError(
            f"cannot write to the {what} {folder}: {why} ({exc.filename or folder}); nothing was run. "
            f"{room.capitalize()}{'p' if room else 'P'}oint MLGRAPH_OUTPUT_DIR (or hydra.run.dir, "
            "hydra.sweep.dir) at a folder you can write."
        ) from exc
