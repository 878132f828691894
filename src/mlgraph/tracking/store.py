"""MLflow tracking: one run per Hydra job, the job process being the only writer.

The store is any MLflow tracking URI: by default SQLite at an absolute ``outputs/mlflow.db``
(MLflow 3 rejects the old file store), or an ``mlflow server`` backed by PostgreSQL for a team
(``tracking=server``). Concurrent first use of a fresh SQLite database corrupts it (two Alembic
migrations at once), so creating or opening a store happens under an inter-process lock file
beside the database (:func:`store_lock`), in every process, on every machine that shares it; a
server is checked to answer before anything runs (:func:`~mlgraph.tracking.server.check_reachable`).
"""

from __future__ import annotations

import atexit
import contextlib
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
import subprocess
import time
import uuid
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from mlgraph.config.keys import is_result_neutral
from mlgraph.config.secrets import redact, redact_file, redact_mapping, redacted_copy
from mlgraph.tracking.server import (
    TrackingUnavailable,
    _permission_paragraph,
    _unseen_paragraph,
    check_reachable,
    current_user,
    experiment_permission,
)

# StorageError and check_writable are also the store's names, for the engine's imports.
from mlgraph.tracking.storage import _NO_ROOM, storage_problem
from mlgraph.tracking.storage import StorageError as StorageError
from mlgraph.tracking.storage import check_writable as check_writable

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
    MLflow's client sends (:func:`~mlgraph.tracking.server.current_user`) checked first.
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
            raise TrackingUnavailable(_unseen_paragraph(uri, user, experiment)) from exc
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
        if permission == "NO_PERMISSIONS":
            raise TrackingUnavailable(_unseen_paragraph(uri, user, experiment))
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


_SOURCE_TREE = Path(__file__).resolve().parents[3]


@functools.cache
def _git(*args: str, cwd: Path = _SOURCE_TREE) -> str:
    """``git args`` in the source tree, or "unknown". Without optional locks: ``git status``
    would otherwise refresh the index under ``.git/index.lock``, which a git killed with its
    job (a signal while the run opens, the timeout) leaves behind to block the user's commits."""
    try:
        out = subprocess.run(
            ["git", "--no-optional-locks", *args], cwd=cwd, capture_output=True, text=True, timeout=10
        )
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
    """Log ``(key, value, step)`` metrics, params and tags in as few requests as MLflow allows;
    params and tags redacted (:func:`~mlgraph.config.secrets.redact_mapping`)."""
    import mlflow
    from mlflow.entities import Metric, Param, RunTag

    client = mlflow.MlflowClient()
    stamp = int(time.time() * 1000)
    metric_objs = [Metric(key, float(value), stamp, int(step)) for key, value, step in metrics]
    param_objs = [Param(key, value) for key, value in redact_mapping(params or {}).items()]
    tag_objs = [RunTag(key, value) for key, value in redact_mapping(tags or {}).items()]
    for chunk in _chunks(metric_objs, _MAX_METRICS):
        client.log_batch(run_id, metrics=chunk)
    for chunk in _chunks(param_objs, _MAX_PARAMS):
        client.log_batch(run_id, params=chunk)
    for chunk in _chunks(tag_objs, _MAX_TAGS):
        client.log_batch(run_id, tags=chunk)


# --------------------------------------------------------------------------------------------
# A job's run, step by step: each step runs where mlgraph.tracking.process.tracked sends it
# (the tracking process, or the job's own), every step of one run in the same process, which
# holds MLflow's active run. Every step may run twice (again in the job's process when the
# tracking process died during it); open_run says how to take its run over.
# --------------------------------------------------------------------------------------------
_run_id: str | None = None  # the run this process opened last, until it ends
_UNCLOSED: dict[str, tuple[str, str]] = {}  # run id -> (store URI, status): ends the store refused


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
    run, and return its id. Name and tags are redacted."""
    global _run_id
    import mlflow

    if experiment_id is None:
        experiment_id = setup_from_config(tracking)
    else:
        mlflow.set_tracking_uri(tracking["uri"])
    if resume_id is not None:
        _say_left_running(resume_id)
    opened = (
        dict(run_id=resume_id)
        if resume_id is not None
        else dict(
            experiment_id=experiment_id,
            run_name=redact(name),
            parent_run_id=parent_run_id,
            tags=redact_mapping(tags),
        )
    )
    _run_id = mlflow.start_run(**opened).info.run_id
    return _run_id


LEFT_RUNNING = (
    "left RUNNING: its processes died before they could end it (SIGKILL, or a store they could not write)"
)


def close_left_running(experiment_id: str, config_hash: str, keep: str | None = None) -> list[str]:
    """For ``resume=true``, which assumes that no other process runs the same job: end FAILED
    every run with ``config_hash`` still RUNNING, but ``keep`` (the run the resume reopens), with
    the tag ``interrupted`` saying it was left so; a later resume that reopens one of them says
    so in ``resumed_after``. Returns their ids."""
    import mlflow

    client = mlflow.MlflowClient()
    left = client.search_runs(
        [experiment_id], f"tags.config_hash = '{config_hash}' and attributes.status = 'RUNNING'"
    )
    closed = [run.info.run_id for run in left if run.info.run_id != keep]
    for run_id in closed:
        client.set_tag(run_id, "interrupted", LEFT_RUNNING)
        client.set_terminated(run_id, "FAILED")
    return closed


def _say_left_running(run_id: str) -> None:
    """A run that a resume reopens while it is still RUNNING was left so by processes that died
    before they could end it (SIGKILL of the job with its tracking process, a store that could not
    be written): its tag ``resumed_after`` says so."""
    import mlflow

    client = mlflow.MlflowClient()
    if client.get_run(run_id).info.status == "RUNNING":
        client.set_tag(run_id, "resumed_after", LEFT_RUNNING)


def _take_over_run(run_id: str, tracking: Mapping, *_) -> None:
    """After the tracking process died (:mod:`mlgraph.tracking.process`): the run it had opened
    becomes MLflow's active run in this process, through this process's own connection."""
    global _run_id
    import mlflow

    mlflow.set_tracking_uri(tracking["uri"])
    quiet_artifact_downloads()
    if mlflow.active_run() is None:
        mlflow.start_run(run_id=run_id)
    _run_id = run_id


def _open_run_again(
    sent_at: float,
    tracking: Mapping,
    experiment_id: str | None,
    resume_id: str | None,
    name: str,
    parent_run_id: str | None,
    tags: Mapping[str, str],
) -> str:
    """:func:`open_run` once more, here, after the tracking process died while it opened the run:
    a run it had created by then (RUNNING, with this config hash, started since the request went
    out at ``sent_at``, a few seconds' leeway for the store's clock) is taken over, not doubled."""
    import mlflow

    if resume_id is not None:  # reopened by the dead process or not: it is this run either way
        _take_over_run(resume_id, tracking)
        return resume_id
    if experiment_id is None:
        experiment_id = setup_from_config(tracking)
    mlflow.set_tracking_uri(tracking["uri"])
    found = mlflow.MlflowClient().search_runs(
        [experiment_id],
        f"tags.config_hash = '{tags.get('config_hash')}' and attributes.status = 'RUNNING' "
        f"and attributes.start_time >= {int((sent_at - 5) * 1000)}",
        order_by=["attributes.start_time DESC"],
        max_results=1,
    )
    if found:
        _take_over_run(found[0].info.run_id, tracking)
        return found[0].info.run_id
    return open_run(tracking, experiment_id, None, name, parent_run_id, tags)


open_run.take_over = _take_over_run
open_run.redo = _open_run_again


def describe_run(
    run_id: str, params: Mapping[str, str] | None, tags: Mapping[str, str], dataset: Mapping, reopened: bool
) -> None:
    """Log a run's params, its tags with :func:`provenance_tags`, and its dataset input
    (:func:`dataset_input` of the ``dataset`` fields); a ``reopened`` run loses its
    ``interrupted`` tag."""
    import mlflow

    client = mlflow.MlflowClient()
    # a tracking process that died while it described the run may have deleted it already
    if reopened and "interrupted" in client.get_run(run_id).data.tags:
        client.delete_tag(run_id, "interrupted")
    log_batch(run_id, params=params, tags={**provenance_tags(), **tags})
    log_dataset(run_id, dataset_input(**dataset))


def dataset_input(name: str, digest: str, source: str, schema: str, profile: str, context: str):
    """An MLflow dataset input (what ``mlflow.log_input`` logs; the UI's Datasets column) from
    its fields, JSON texts for ``source``, ``schema`` and ``profile``."""
    from mlflow.entities import Dataset, DatasetInput, InputTag
    from mlflow.utils.mlflow_tags import MLFLOW_DATASET_CONTEXT

    dataset = Dataset(
        name=name, digest=digest, source_type="local", source=redact(source), schema=schema, profile=profile
    )
    return DatasetInput(dataset, tags=[InputTag(MLFLOW_DATASET_CONTEXT, context)])


def log_artifact(run_id: str, path: str) -> None:
    """Copy one file to a run's artifacts (a checkpoint, again and again, while the job appends
    to it), through a redacted copy when it holds a credential."""
    import mlflow

    with redacted_copy(path) as copy, _naming_artifacts(run_id):
        mlflow.MlflowClient().log_artifact(run_id, copy)


@contextlib.contextmanager
def _naming_artifacts(run_id: str):
    """A full or read-only disk said without a file name (MLflow's copy into a run's artifacts)
    names the run's artifact folder, for :func:`~mlgraph.tracking.storage.storage_problem`'s paragraph."""
    try:
        yield
    except OSError as exc:
        if exc.filename is not None or exc.errno not in _NO_ROOM:
            raise
        import mlflow

        folder = mlflow.MlflowClient().get_run(run_id).info.artifact_uri
        raise OSError(exc.errno, exc.strerror, folder) from exc


def log_artifacts(paths: Iterable[str], tags: Mapping[str, str]) -> None:
    """Tag the active run and copy files to its artifacts, each text file (``config.yaml``, the
    tables) redacted in place first, so that neither the run nor the job folder keeps a
    credential."""
    import mlflow

    if tags:
        set_tags(tags)
    for path in paths:
        redact_file(path)
        with _naming_artifacts(mlflow.active_run().info.run_id):
            mlflow.log_artifact(str(path))


def set_tags(tags: Mapping[str, Any]) -> None:
    """Tag the active run (redacted), or the run this process opened once an attempt to end it
    has failed (MLflow's own ``set_tags`` would then start a new run)."""
    import mlflow

    active = mlflow.active_run()
    if active is not None or _run_id is None:
        mlflow.set_tags(redact_mapping(tags))
    else:
        log_batch(_run_id, tags=tags)


def end_run(status: str) -> None:
    """End the active run with ``status`` (FINISHED, FAILED or KILLED), or the run this process
    opened when an earlier attempt failed. When the store cannot be written (full, read-only),
    the end gets a last try as this process ends (:func:`close_unclosed`); a later
    ``resume=true`` reopens a run it still leaves RUNNING."""
    global _run_id
    import mlflow

    run_id = mlflow.active_run().info.run_id if mlflow.active_run() is not None else _run_id
    if run_id is None:
        return
    try:
        if mlflow.active_run() is not None:
            mlflow.end_run(status)  # takes the run off MLflow's stack before it asks the store
        else:
            mlflow.MlflowClient().set_terminated(run_id, status)
    except Exception as exc:
        if storage_problem(exc) is not None:
            if not _UNCLOSED:
                atexit.register(close_unclosed)  # the tracking process calls it itself
            _UNCLOSED[run_id] = (mlflow.get_tracking_uri(), status)
        raise
    _UNCLOSED.pop(run_id, None)
    _run_id = None


def close_unclosed() -> None:
    """The last try, as the process that ran a run's steps ends, at each end the store refused
    (:func:`end_run`): room made meanwhile, or a rolled-back journal, lets it through; else the
    run stays RUNNING and ``resume=true`` continues it."""
    import mlflow

    while _UNCLOSED:
        run_id, (uri, status) = _UNCLOSED.popitem()
        with contextlib.suppress(Exception):
            mlflow.MlflowClient(uri).set_terminated(run_id, status)


# The run tag that names the job's local checkpoint (mlgraph.engine.checkpoint.Checkpoint.TAG).
_CHECKPOINT_TAG = "checkpoint_file"


def close_abandoned_run() -> None:
    """In the tracking process, when the job's process died without a word (SIGKILL, the
    out-of-memory killer, a crash): copy the job's local checkpoint (every trial it finished) to
    the run it left open, and end that run KILLED with the tag ``interrupted`` saying so;
    ``resume=true`` continues it."""
    import mlflow

    if mlflow.active_run() is None:
        return
    run_id = mlflow.active_run().info.run_id
    client = mlflow.MlflowClient()
    local = client.get_run(run_id).data.tags.get(_CHECKPOINT_TAG)
    if local and Path(local).is_file():
        with contextlib.suppress(Exception):  # the status matters more
            log_artifact(run_id, local)
    client.set_tag(
        run_id,
        "interrupted",
        "the job's process died (SIGKILL, the kernel's out-of-memory killer, or a crash)",
    )
    end_run("KILLED")


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
