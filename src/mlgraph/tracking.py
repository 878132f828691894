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
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from hydra.errors import CompactHydraException
from omegaconf import DictConfig, OmegaConf

# `tracking.uri` in conf/ resolves `outputs/` to an absolute path (SQLite needs one).
OmegaConf.register_new_resolver("abspath", lambda p: str(Path(p).expanduser().resolve()), replace=True)

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


def check_reachable(uri: str, wait_seconds: float = 10.0) -> None:
    """Fail fast, naming the URI, when an HTTP tracking server does not answer its health
    check within ``wait_seconds`` (MLflow's own client would retry for minutes per request)."""
    if not uri.startswith(("http://", "https://")):
        return
    deadline = time.monotonic() + wait_seconds
    while True:
        try:
            with urllib.request.urlopen(uri.rstrip("/") + "/health", timeout=5) as answer:
                if answer.status == 200:
                    return
                reason = f"HTTP {answer.status}"
        except urllib.error.HTTPError as exc:
            reason = f"HTTP {exc.code}"
        except (OSError, ValueError) as exc:
            reason = str(getattr(exc, "reason", exc))
        if time.monotonic() >= deadline:
            raise TrackingUnavailable(
                f"MLflow tracking server {redact(uri)} does not answer ({reason}); nothing was run. "
                "Start it (`make server-up` starts one on PostgreSQL) or point tracking.uri (or "
                "MLFLOW_TRACKING_URI) at a running server."
            )
        time.sleep(1.0)


def setup_experiment(uri: str, experiment: str, artifact_location: str | None = None) -> str:
    """Point MLflow at ``uri`` and make sure ``experiment`` exists; return its id.

    Safe for any number of processes starting at once: SQLite stores are opened under
    :func:`store_lock`, and a race with another process creating the same experiment on a
    server is resolved by reading it back.
    """
    import mlflow

    check_reachable(uri)
    mlflow.set_tracking_uri(uri)
    try:
        with store_lock(uri):
            if (db := _sqlite_path(uri)) is not None:
                _init_sqlite(db)
            client = mlflow.MlflowClient(uri)
            found = client.get_experiment_by_name(experiment)
            if found is not None:
                return found.experiment_id
            try:
                return client.create_experiment(experiment, artifact_location=artifact_location)
            except mlflow.exceptions.MlflowException:
                found = client.get_experiment_by_name(experiment)
                if found is None:
                    raise
                return found.experiment_id
    except Exception as exc:  # the driver's and SQLAlchemy's errors, in one paragraph
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise TrackingUnavailable(
            f"cannot open the MLflow store {redact(uri)} (tracking.uri): {type(exc).__name__}: "
            f"{redact(first)}; nothing was run. A postgresql:// store needs the team extra "
            "(pip install 'mlgraph[server]') and a running database."
        ) from exc


def setup_from_config(tracking: DictConfig) -> str:
    """:func:`setup_experiment` from the ``tracking`` config group."""
    return setup_experiment(tracking.uri, tracking.experiment, tracking.get("artifact_location"))


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
    params = {k: v for k, v in config_params(cfg).items() if k.split(".")[0] not in RESULT_NEUTRAL}
    return hashlib.sha256(json.dumps(params, sort_keys=True).encode()).hexdigest()[:16]


@functools.cache
def _git(*args: str) -> str:
    root = Path(__file__).resolve().parents[2]
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
