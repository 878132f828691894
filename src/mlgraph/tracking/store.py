"""MLflow tracking: one run per Hydra job, the job process being the only writer.

The store is any MLflow tracking URI: by default SQLite at an absolute ``outputs/mlflow.db``
(MLflow 3 rejects the old file store), or an ``mlflow server`` backed by PostgreSQL for a team
(``tracking=server``). Concurrent first use of a fresh SQLite database corrupts it (two Alembic
migrations at once), so creating or opening a store happens under an inter-process lock file
beside the database (:func:`store_lock`), in every process, on every machine that shares it; a
server is checked to answer before anything runs (:func:`check_reachable`).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import functools
import hashlib
import importlib.metadata
import json
import math
import os
import platform
import re
import shutil
import ssl
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from hydra.errors import CompactHydraException
from omegaconf import DictConfig, OmegaConf

from mlgraph.config.keys import is_result_neutral

# MLflow's per-request limits for log_batch.
_MAX_METRICS, _MAX_PARAMS, _MAX_TAGS = 1000, 100, 100
_MAX_PARAM_LEN = 6000
PACKAGES = (
    "mlgraph",
    "numpy",
    "scipy",
    "scikit-learn",
    "joblib",
    "hydra-core",
    "omegaconf",
    "mlflow",
    "threadpoolctl",
    "pandas",
    "matplotlib",
)


class TrackingUnavailable(CompactHydraException):
    """The tracking store cannot be reached or opened; raised before any trial runs."""


def redact(uri: str) -> str:
    """``uri`` with any password replaced by ``***`` (messages and tags must not carry it)."""
    return re.sub(r"(//[^:/@]+):[^@/]*@", r"\1:***@", uri)


def _sqlite_path(uri: str) -> Path | None:
    return Path(uri[len("sqlite:///") :]) if uri.startswith("sqlite:///") else None


@contextlib.contextmanager
def store_lock(uri: str):
    """Hold an exclusive lock file beside a SQLite store (``mlflow.db.lock``) while it is
    created, migrated or first opened; other stores need none. ``flock`` serialises processes
    on one machine and, over NFS, across machines."""
    db = _sqlite_path(uri)
    if db is None:
        yield
        return
    db.parent.mkdir(parents=True, exist_ok=True)  # MLflow does not create it
    with open(db.with_name(db.name + ".lock"), "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _init_sqlite(db: Path) -> None:
    """Under :func:`store_lock`: a new store is a copy of :func:`_store_template` (or, without
    one, built by MLflow's migrations) opened by MLflow in a temporary file and renamed into
    place, so that a process killed meanwhile leaves no half-built database; tables a killed
    batch migration left behind (``_alembic_tmp_*``) in an existing store are dropped so that
    MLflow can finish migrating it."""
    import sqlite3

    if db.exists():
        with contextlib.closing(sqlite3.connect(db)) as con:
            leftovers = [
                r[0]
                for r in con.execute(
                    "SELECT name FROM sqlite_master WHERE type='table' AND name LIKE '\\_alembic\\_tmp\\_%' ESCAPE '\\'"
                )
            ]
            for table in leftovers:
                con.execute(f'DROP TABLE "{table}"')
            con.commit()
        return
    template = _store_template()
    tmp = db.with_name(f".{db.name}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        if template is not None:
            shutil.copyfile(template, tmp)
        _open_sqlite(tmp, db.parent / "mlartifacts")  # creates the Default experiment here
        os.replace(tmp, db)
    finally:
        tmp.unlink(missing_ok=True)


def _open_sqlite(path: Path, artifact_root: Path):
    """Open (migrating it when it has no tables) the SQLite store at ``path`` with MLflow's own
    store class, and close it again."""
    from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore

    SqlAlchemyStore(f"sqlite:///{path}", str(artifact_root)).engine.dispose()


def _store_template() -> Path | None:
    """An empty SQLite store migrated to this MLflow version's schema, built once per version
    in the user cache (``~/.cache/mlgraph``) and copied for each new store: MLflow's Alembic
    migrations take seconds, a copy milliseconds. It has no Default experiment, which MLflow
    creates when it first opens a copy, with that store's artifact root. None (each new store
    is migrated) when the cache folder cannot be written."""
    import sqlite3

    import mlflow

    from mlgraph.data.registry import cache_dir

    template = cache_dir() / f"mlflow-{mlflow.__version__}-store.db"
    try:
        with store_lock(f"sqlite:///{template}"):
            if not template.exists():
                tmp = template.with_name(f".{template.name}.{uuid.uuid4().hex[:8]}.tmp")
                try:
                    _open_sqlite(tmp, template.parent)
                    with contextlib.closing(sqlite3.connect(tmp)) as con:
                        con.execute("DELETE FROM experiments")
                        con.commit()
                    os.replace(tmp, template)
                finally:
                    tmp.unlink(missing_ok=True)
    except OSError:
        return None
    return template


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


def _storage_paragraph(path: str, why: str) -> str:
    return (
        f"cannot write {path}: {why}. Whatever was logged before stays in the store; make room (or "
        "point MLGRAPH_OUTPUT_DIR, hydra.run.dir or tracking.uri elsewhere) and run the same command "
        "with resume=true to continue from the trials already saved."
    )


def check_writable(folder: str | os.PathLike, what: str = "output folder") -> None:
    """Create ``folder`` (and its parents) and write a probe file in it, or raise a one-paragraph
    :class:`StorageError` naming it (read-only, not a folder, full)."""
    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".mlgraph-probe-") as probe:
            probe.write(b"\0" * 4096)
            probe.flush()
            os.fsync(probe.fileno())
    except OSError as exc:
        why = _STORAGE_ERRNOS.get(exc.errno, exc.strerror or type(exc).__name__)
        room = "make room, or " if exc.errno in (errno.ENOSPC, errno.EDQUOT) else ""
        raise StorageError(
            f"cannot write to the {what} {folder}: {why} ({exc.filename or folder}); nothing was run. "
            f"{room.capitalize()}{'p' if room else 'P'}oint MLGRAPH_OUTPUT_DIR (or hydra.run.dir, "
            "hydra.sweep.dir) at a folder you can write."
        ) from exc


def check_reachable(uri: str, wait_seconds: float = 10.0) -> None:
    """Fail fast, naming the URI, when an HTTP tracking server does not answer its health
    check within ``wait_seconds`` (MLflow's own client would retry for minutes per request)."""
    if not uri.startswith(("http://", "https://")):
        return
    deadline = time.monotonic() + wait_seconds
    while True:
        try:  # through MLflow's client: its TLS settings (MLFLOW_TRACKING_SERVER_CERT_PATH) apply
            answer = _auth_request(uri, "/health")
            if answer.status_code == 200:
                return
            reason = f"HTTP {answer.status_code}"
        except Exception as exc:  # MLflow wraps the connection error in its own exception
            if "CERTIFICATE_VERIFY_FAILED" in str(exc) or "certificate verify failed" in str(exc):
                raise TrackingUnavailable(
                    f"MLflow tracking server {redact(uri)} shows a TLS certificate this machine does not "
                    "trust; nothing was run. Set MLFLOW_TRACKING_SERVER_CERT_PATH to the certificate (or "
                    "the bundle of the authority that signed it)."
                ) from exc
            found = re.search(r"\[Errno[^\]]*\][^\"')]*", str(exc))
            reason = found.group(0).strip() if found else str(exc).splitlines()[0]
        if time.monotonic() >= deadline:
            raise TrackingUnavailable(
                f"MLflow tracking server {redact(uri)} does not answer ({reason}); nothing was run. "
                "Start it (`make server-up` starts one on PostgreSQL) or point tracking.uri (or "
                "MLFLOW_TRACKING_URI) at a running server."
            )
        time.sleep(1.0)


def quiet_artifact_downloads() -> None:
    """No MLflow progress bar per artifact read (a resumed run reads its checkpoint, a report one
    table per run), unless ``MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR`` is set."""
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")


def setup_experiment(uri: str, experiment: str, artifact_location: str | None = None) -> str:
    """Point MLflow at ``uri`` and make sure ``experiment`` exists and this user may log to it;
    return its id.

    Safe for any number of processes starting at once: SQLite stores are opened under
    :func:`store_lock`, and a race with another process creating the same experiment on a
    server is resolved by reading it back. A server that asks for a password gets the one
    MLflow's client sends (:func:`current_user`) checked first.
    """
    import mlflow

    check_reachable(uri)
    quiet_artifact_downloads()
    mlflow.set_tracking_uri(uri)
    user = current_user(uri)
    try:
        with store_lock(uri):
            if (db := _sqlite_path(uri)) is not None:
                _init_sqlite(db)
            client = mlflow.MlflowClient(uri)
            experiment_id = _experiment_id(client, experiment, artifact_location)
    except Exception as exc:  # the driver's and SQLAlchemy's errors, in one paragraph
        if _denied(exc):
            raise TrackingUnavailable(_permission_paragraph(uri, user, experiment, "no")) from exc
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        hint = (
            " A postgresql:// store needs the team extra (pip install 'mlgraph[server]') and a running database."
            if uri.startswith("postgresql")
            else ""
        )
        raise TrackingUnavailable(
            f"cannot open the MLflow store {redact(uri)} (tracking.uri): {type(exc).__name__}: "
            f"{redact(first)}; nothing was run.{hint}"
        ) from exc
    if user is not None and not user["is_admin"]:
        permission = experiment_permission(uri, user["username"], experiment_id)
        if permission not in ("EDIT", "MANAGE"):
            raise TrackingUnavailable(_permission_paragraph(uri, user, experiment, permission))
    return experiment_id


# MLflow 3's UI opens an experiment without this tag in its GenAI view; these are model-training runs.
EXPERIMENT_KIND = ("mlflow.experimentKind", "custom_model_development")


def _experiment_id(client, experiment: str, artifact_location: str | None) -> str:
    """The id of ``experiment`` through MLflow ``client``, created if it does not exist (by this
    process or, in a race, by another)."""
    import mlflow

    found = client.get_experiment_by_name(experiment)
    if found is not None:
        if EXPERIMENT_KIND[0] not in found.tags:  # an experiment made before mlgraph set it
            with contextlib.suppress(mlflow.exceptions.MlflowException):  # a reader may not tag
                client.set_experiment_tag(found.experiment_id, *EXPERIMENT_KIND)
        return found.experiment_id
    try:
        return client.create_experiment(
            experiment, artifact_location=artifact_location, tags=dict([EXPERIMENT_KIND])
        )
    except mlflow.exceptions.MlflowException:
        found = client.get_experiment_by_name(experiment)
        if found is None:
            raise
        return found.experiment_id


def _denied(exc: BaseException) -> bool:
    return getattr(exc, "error_code", "") == "PERMISSION_DENIED" or " 403 " in str(exc)


# --------------------------------------------------------------------------------------------
# A team server with members (MLflow's basic-auth app)
# --------------------------------------------------------------------------------------------
CREDENTIALS_FILE = "~/.mlflow/credentials"


def _credentials_source() -> str:
    """Where MLflow's client takes the user name from (it reads both, the environment first)."""
    from mlflow.utils.credentials import _read_mlflow_creds_from_file

    if os.environ.get("MLFLOW_TRACKING_USERNAME"):
        return "MLFLOW_TRACKING_USERNAME/MLFLOW_TRACKING_PASSWORD"
    if _read_mlflow_creds_from_file()[0]:
        return CREDENTIALS_FILE
    return ""


def _auth_request(uri: str, endpoint: str, **params):
    """One GET to the server with the credentials MLflow's client would send (no retries)."""
    from mlflow.utils.credentials import get_default_host_creds
    from mlflow.utils.rest_utils import http_request

    return http_request(
        get_default_host_creds(uri),
        endpoint,
        "GET",
        max_retries=0,
        timeout=10,
        raise_on_status=False,
        params=params,
    )


def current_user(uri: str) -> dict | None:
    """``{"username", "is_admin"}`` of the user the server's basic-auth app recognises from the
    credentials MLflow's client sends (``MLFLOW_TRACKING_USERNAME``/``MLFLOW_TRACKING_PASSWORD``,
    else ``~/.mlflow/credentials``); None for a store without users. Missing or refused
    credentials are a one-paragraph :class:`TrackingUnavailable`."""
    if not uri.startswith(("http://", "https://")):
        return None
    try:
        answer = _auth_request(uri, "/api/2.0/mlflow/users/current")
    except Exception as exc:  # the health check answered; a failure here is the server's
        raise TrackingUnavailable(f"MLflow tracking server {redact(uri)}: {exc}; nothing was run.") from exc
    if answer.status_code == 404:  # no basic-auth app: no users
        return None
    if answer.status_code == 401:
        source = _credentials_source()
        if not source:
            raise TrackingUnavailable(
                f"MLflow tracking server {redact(uri)} lets in its members only, and no user name and "
                "password were given; nothing was run. Set MLFLOW_TRACKING_USERNAME and "
                f"MLFLOW_TRACKING_PASSWORD, or write them into {CREDENTIALS_FILE} (mode 600): a "
                "section [mlflow] with mlflow_tracking_username = ... and mlflow_tracking_password = ... "
                "The server's admin creates members (scripts/server-user.sh)."
            )
        from mlflow.utils.credentials import read_mlflow_creds

        raise TrackingUnavailable(
            f"MLflow tracking server {redact(uri)} refused the password of user "
            f"{read_mlflow_creds().username!r} (from {source}); nothing was run. Check the user name "
            "and password, or ask the server's admin to reset them."
        )
    if answer.status_code != 200:
        raise TrackingUnavailable(
            f"MLflow tracking server {redact(uri)} answered HTTP {answer.status_code} when asked who "
            "you are; nothing was run."
        )
    return answer.json()["user"]


def experiment_permission(uri: str, username: str, experiment_id: str) -> str:
    """The permission ``username`` holds on an experiment (READ, USE, EDIT, MANAGE, or
    NO_PERMISSIONS), as the server resolves it from grants, groups (roles) and its default."""
    answer = _auth_request(
        uri,
        "/api/3.0/mlflow/users/permissions/get",
        username=username,
        resource_type="experiment",
        resource_id=experiment_id,
    )
    return (
        answer.json().get("permission", "NO_PERMISSIONS") if answer.status_code == 200 else "NO_PERMISSIONS"
    )


def _permission_paragraph(uri: str, user: dict | None, experiment: str, permission: str) -> str:
    who = f"user {user['username']!r}" if user else "this user"
    return (
        f"{who} has {permission} permission on experiment {experiment!r} of MLflow tracking server "
        f"{redact(uri)}, and running into it needs EDIT; nothing was run. Ask the experiment's "
        "manager (its creator) or the server's admin to grant you, or your group, EDIT on it, or use "
        "an experiment of your own (tracking.experiment=...)."
    )


def setup_from_config(tracking: Mapping) -> str:
    """:func:`setup_experiment` from the ``tracking`` config group (or its plain copy)."""
    return setup_experiment(tracking["uri"], tracking["experiment"], tracking.get("artifact_location"))


def flatten(mapping: Mapping, prefix: str = "") -> dict[str, Any]:
    """Flatten nested mappings to dotted keys (``method.gamma_A``)."""
    flat: dict[str, Any] = {}
    for key, value in mapping.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            flat.update(flatten(value, f"{name}."))
        else:
            flat[name] = value
    return flat


def canonical(value: Any) -> str:
    """One text per value, so that a UI filter ``params.`method.nu1` = "1"`` matches whether the
    config said 1, 1.0 or 1e0: integral floats lose their ``.0``, other floats take their
    shortest round-trip form, sequences are rendered item by item."""
    if isinstance(value, float) and math.isfinite(value) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(canonical(v) for v in value) + "]"
    return "null" if value is None else str(value)


def resolved_config(cfg: DictConfig) -> dict:
    """The resolved config as plain containers, Hydra's own node left out."""
    resolved = OmegaConf.to_container(cfg, resolve=True, throw_on_missing=True)
    resolved.pop("hydra", None)
    return resolved


def config_params(cfg: DictConfig) -> dict[str, str]:
    """The resolved config, flattened, as MLflow params in :func:`canonical` form (values
    truncated to MLflow's limit)."""
    return {k: canonical(v)[:_MAX_PARAM_LEN] for k, v in flatten(resolved_config(cfg)).items()}


# Keys that change how a job runs or where it is recorded, never its numbers.
RESULT_NEUTRAL = ("progress", "n_jobs", "graph_cache", "tracking", "resume", "strict", "report")


def config_hash(cfg: DictConfig) -> str:
    """SHA-256 (16 hex digits) of the canonical resolved config without :data:`RESULT_NEUTRAL`
    keys: two jobs with equal hashes compute the same numbers. Resuming matches runs by it."""

    params = {
        k: v
        for k, v in config_params(cfg).items()
        if k.split(".")[0] not in RESULT_NEUTRAL and not is_result_neutral(k, cfg)
    }
    return hashlib.sha256(json.dumps(params, sort_keys=True).encode()).hexdigest()[:16]


@functools.cache
def _git(*args: str) -> str:
    root = Path(__file__).resolve().parents[3]
    try:
        out = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return out.stdout.strip() if out.returncode == 0 else "unknown"


def provenance_tags() -> dict[str, str]:
    """Git commit (and whether the tree had uncommitted changes), Python and package versions."""
    tags = {
        "git_commit": _git("rev-parse", "HEAD"),
        "git_dirty": str(bool(_git("status", "--porcelain", "--untracked-files=no"))).lower(),
        "python_version": platform.python_version(),
    }
    for package in PACKAGES:
        try:
            tags[f"version.{package}"] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            tags[f"version.{package}"] = "not installed"
    return tags


def _chunks(items: list, size: int) -> Iterable[list]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


# A concurrent job of the same sweep may insert the same dataset row (experiment, name, digest)
# between the store's lookup and its insert; the loser's transaction is rolled back whole.
_UNIQUE_CONFLICT = re.compile(r"unique constraint|UniqueViolation|IntegrityError", re.IGNORECASE)


def log_dataset(run_id: str, dataset_input, attempts: int = 5) -> None:
    """Log one MLflow dataset input to a run. When another job inserted the same dataset at the
    same moment, the store refuses ours with a uniqueness conflict; asking again finds the row
    and links it, so conflicts are retried (``attempts`` times in all), any other error raised."""
    import mlflow

    client = mlflow.MlflowClient()
    for attempt in range(1, attempts + 1):
        try:
            client.log_inputs(run_id, [dataset_input])
            return
        except mlflow.exceptions.MlflowException as error:
            if attempt == attempts or not _UNIQUE_CONFLICT.search(str(error)):
                raise
            time.sleep(0.05 * attempt)


def log_batch(
    run_id: str,
    metrics: Iterable[tuple[str, float, int]] = (),
    params: Mapping[str, str] | None = None,
    tags: Mapping[str, str] | None = None,
) -> None:
    """Log ``(key, value, step)`` metrics, params and tags in as few requests as MLflow allows."""
    import mlflow
    from mlflow.entities import Metric, Param, RunTag

    client = mlflow.MlflowClient()
    stamp = int(time.time() * 1000)
    metric_objs = [Metric(key, float(value), stamp, int(step)) for key, value, step in metrics]
    param_objs = [Param(key, value) for key, value in (params or {}).items()]
    tag_objs = [RunTag(key, str(value)) for key, value in (tags or {}).items()]
    for chunk in _chunks(metric_objs, _MAX_METRICS):
        client.log_batch(run_id, metrics=chunk)
    for chunk in _chunks(param_objs, _MAX_PARAMS):
        client.log_batch(run_id, params=chunk)
    for chunk in _chunks(tag_objs, _MAX_TAGS):
        client.log_batch(run_id, tags=chunk)


# --------------------------------------------------------------------------------------------
# A job's run, step by step: each step runs where mlgraph.tracking.process.tracked sends it
# (the tracking process, or the job's own), every step of one run in the same process, which
# holds MLflow's active run.
# --------------------------------------------------------------------------------------------
def open_run(
    tracking: Mapping,
    experiment_id: str | None,
    resume_id: str | None,
    name: str,
    parent_run_id: str | None,
    tags: Mapping[str, str],
) -> str:
    """Open the store of the ``tracking`` config (unless ``experiment_id`` says it is open),
    start the run ``name`` with ``tags`` (or reopen the run ``resume_id``) as MLflow's active
    run, and return its id."""
    import mlflow

    if experiment_id is None:
        experiment_id = setup_from_config(tracking)
    else:
        mlflow.set_tracking_uri(tracking["uri"])
    opened = (
        dict(run_id=resume_id)
        if resume_id is not None
        else dict(experiment_id=experiment_id, run_name=name, parent_run_id=parent_run_id, tags=dict(tags))
    )
    return mlflow.start_run(**opened).info.run_id


def describe_run(
    run_id: str, params: Mapping[str, str] | None, tags: Mapping[str, str], dataset: Mapping, reopened: bool
) -> None:
    """Log a run's params, its tags with :func:`provenance_tags`, and its dataset input
    (:func:`dataset_input` of the ``dataset`` fields); a ``reopened`` run loses its
    ``interrupted`` tag."""
    import mlflow

    if reopened:
        mlflow.MlflowClient().delete_tag(run_id, "interrupted")
    log_batch(run_id, params=params, tags={**provenance_tags(), **tags})
    log_dataset(run_id, dataset_input(**dataset))


def dataset_input(name: str, digest: str, source: str, schema: str, profile: str, context: str):
    """An MLflow dataset input (what ``mlflow.log_input`` logs; the UI's Datasets column) from
    its fields, JSON texts for ``source``, ``schema`` and ``profile``."""
    from mlflow.entities import Dataset, DatasetInput, InputTag
    from mlflow.utils.mlflow_tags import MLFLOW_DATASET_CONTEXT

    dataset = Dataset(
        name=name, digest=digest, source_type="local", source=source, schema=schema, profile=profile
    )
    return DatasetInput(dataset, tags=[InputTag(MLFLOW_DATASET_CONTEXT, context)])


def log_artifact(run_id: str, path: str) -> None:
    """Copy one file to a run's artifacts (a checkpoint, again and again)."""
    import mlflow

    mlflow.MlflowClient().log_artifact(run_id, path)


def log_artifacts(paths: Iterable[str], tags: Mapping[str, str]) -> None:
    """Tag the active run and copy files to its artifacts."""
    import mlflow

    if tags:
        set_tags(tags)
    for path in paths:
        mlflow.log_artifact(str(path))


def set_tags(tags: Mapping[str, Any]) -> None:
    """Tag the active run."""
    import mlflow

    mlflow.set_tags(dict(tags))


def end_run(status: str) -> None:
    """End the active run with ``status`` (FINISHED, FAILED or KILLED)."""
    import mlflow

    mlflow.end_run(status)


def log_sklearn_model(
    model, example, prediction, trusted: list[str], requirements: list[str], tags: Mapping
) -> None:
    """Log a fitted estimator to the active run in MLflow's scikit-learn flavour as ``model``,
    serialised by skops trusting only the ``trusted`` types, with the signature of
    ``example`` → ``prediction``, the example itself and pinned ``requirements``; then ``tags``."""
    import mlflow.sklearn
    from mlflow.models import infer_signature

    mlflow.sklearn.log_model(
        model,
        name="model",
        signature=infer_signature(example, prediction),
        input_example=example,
        serialization_format="skops",
        skops_trusted_types=trusted,
        pip_requirements=requirements,
    )
    set_tags(tags)
