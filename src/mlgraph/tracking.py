"""MLflow tracking: one run per Hydra job, the job process being the only writer.

The store is any MLflow tracking URI: by default SQLite at an absolute ``outputs/mlflow.db``
(MLflow 3 rejects the old file store), or an ``mlflow server`` backed by PostgreSQL for a team
(``tracking=server``). The experiment, and with it the database schema, is created before
parallel jobs start (:class:`TrackingSetupCallback`), because concurrent first use of a fresh
SQLite database fails.
"""

from __future__ import annotations

import functools
import importlib.metadata
import platform
import subprocess
import time
from pathlib import Path
from typing import Any, Iterable, Mapping

import mlflow
from hydra.experimental.callback import Callback
from mlflow.entities import Metric, Param, RunTag
from omegaconf import DictConfig, OmegaConf

# `tracking.uri` in conf/ resolves `outputs/` to an absolute path (SQLite needs one).
OmegaConf.register_new_resolver("abspath", lambda p: str(Path(p).expanduser().resolve()), replace=True)

# MLflow's per-request limits for log_batch.
_MAX_METRICS, _MAX_PARAMS, _MAX_TAGS = 1000, 100, 100
_MAX_PARAM_LEN = 6000
PACKAGES = ("mlgraph", "numpy", "scipy", "scikit-learn", "joblib", "hydra-core", "omegaconf",
            "mlflow", "threadpoolctl", "pandas", "matplotlib")


def _prepare_sqlite(uri: str) -> None:
    """Create the parent folder of a SQLite store; MLflow does not."""
    if uri.startswith("sqlite:///"):
        Path(uri[len("sqlite:///"):]).parent.mkdir(parents=True, exist_ok=True)


def setup_experiment(uri: str, experiment: str, artifact_location: str | None = None) -> str:
    """Point MLflow at ``uri`` and make sure ``experiment`` exists; return its id.

    A race with another process creating the same experiment is resolved by reading it back.
    """
    _prepare_sqlite(uri)
    mlflow.set_tracking_uri(uri)
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


def setup_from_config(tracking: DictConfig) -> str:
    """:func:`setup_experiment` from the ``tracking`` config group."""
    return setup_experiment(tracking.uri, tracking.experiment, tracking.get("artifact_location"))


class TrackingSetupCallback(Callback):
    """Hydra callback creating the store and experiment once, before any job starts."""

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        setup_from_config(config.tracking)


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


def config_params(cfg: DictConfig) -> dict[str, str]:
    """The resolved config, flattened, as MLflow params (values truncated to MLflow's limit)."""
    resolved = OmegaConf.to_container(cfg, resolve=True, throw_on_missing=True)
    resolved.pop("hydra", None)
    return {k: str(v)[:_MAX_PARAM_LEN] for k, v in flatten(resolved).items()}


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
        yield items[start:start + size]


def log_batch(run_id: str, metrics: Iterable[tuple[str, float, int]] = (),
              params: Mapping[str, str] | None = None, tags: Mapping[str, str] | None = None) -> None:
    """Log ``(key, value, step)`` metrics, params and tags in as few requests as MLflow allows."""
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
