"""Legible sweeps: what each job varies, one parent run per sweep, and the sweep's table.

A Hydra multirun opens a parent MLflow run (:class:`SweepCallback`) before its jobs start; each
job's run is nested under it, named after the parameters the sweep varies (``mlmrrw-yeast nu1=1
nu2=0.1``) and tagged with its overrides, the sweep id and its job number. When the sweep ends,
however it ends, the parent holds ``sweep.csv`` (one row per job: overrides, status, headline
metrics), the best job as tags, and a final status. The parent's id, the sweep id and the swept
keys reach the jobs through environment variables, which every launcher passes on (joblib
workers inherit them, submitit exports them to SLURM jobs).
"""

from __future__ import annotations

import atexit
import datetime
import hashlib
import logging
import math
import os
import signal
import subprocess
import sys
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import joblib
import pandas as pd
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.errors import HydraException
from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

from mlgraph.signals import Interrupted, forward_and_wait, process_gone
from mlgraph.tracking import TrackingUnavailable, canonical, setup_from_config

if TYPE_CHECKING:
    import mlflow

log = logging.getLogger(__name__)

ENV_PARENT, ENV_SWEEP, ENV_KEYS = "MLGRAPH_PARENT_RUN_ID", "MLGRAPH_SWEEP_ID", "MLGRAPH_SWEPT_KEYS"
ENV_JOBS = "MLGRAPH_SWEEP_JOBS"
HEADLINE = (
    "avg_precision_overall",
    "accuracy_all_overall",
    "micro_f1_overall",
    "macro_f1_overall",
    "hamming_loss_overall",
)
# Keys never shown in a run name: they are in its prefix, or change nothing that is computed.
_UNNAMED = {"method", "dataset", "progress", "n_jobs", "resume", "strict", "graph_cache"}


@dataclass(frozen=True)
class JobInfo:
    """Where a job sits: its overrides, the keys its sweep varies, the sweep and job number."""

    overrides: tuple[str, ...] = ()
    varied: tuple[str, ...] | None = None  # None: a single run, named after its overrides
    sweep_id: str | None = None
    job_num: int | None = None
    parent_run_id: str | None = None
    choices: dict = field(default_factory=dict)

    @classmethod
    def from_hydra(cls, hc) -> JobInfo:
        overrides = tuple(hc.overrides.task)
        choices = dict(hc.runtime.choices)
        if os.environ.get(ENV_PARENT) and hc.mode.name == "MULTIRUN":
            keys = tuple(k for k in os.environ.get(ENV_KEYS, "").split(",") if k)
            return cls(
                overrides, keys, os.environ.get(ENV_SWEEP), hc.job.num, os.environ[ENV_PARENT], choices
            )
        return cls(overrides, None, None, None, None, choices)

    def tags(self) -> dict[str, str]:
        tags = {"overrides": " ".join(self.overrides)[:5000]}
        if self.sweep_id:
            tags.update(sweep_id=self.sweep_id, job_num=str(self.job_num))
        return tags


def override_keys(overrides, sweeps_only: bool) -> list[str]:
    """The keys (or config groups) set by Hydra ``overrides``; with ``sweeps_only``, those that
    take several values (``a=1,2``, ``range(...)``, ``choice(...)``, globs)."""
    parsed = OverridesParser.create().parse_overrides(list(overrides))
    return [o.key_or_group for o in parsed if o.is_sweep_override() or not sweeps_only]


def _sweeper_params(config: DictConfig) -> dict:
    params = config.hydra.sweeper.get("params")
    return OmegaConf.to_container(params, resolve=False) if params else {}


def swept_keys(config: DictConfig) -> list[str]:
    """What a multirun varies: sweep overrides on the command line and the sweeper's params
    (experiment presets put their grids there)."""
    params = _sweeper_params(config)
    keys = override_keys(config.hydra.overrides.task, sweeps_only=True)
    keys += override_keys([f"{k}={v}" for k, v in params.items()], sweeps_only=True)
    return list(dict.fromkeys(keys))


def sweep_size(config: DictConfig) -> int | None:
    """How many jobs a multirun launches: the product of the swept keys' value counts (the
    sweeper's params, then the command line, as Hydra's basic sweeper combines them); None
    when a glob or an interval sweep makes it unknown here."""
    args = [f"{k}={v}" for k, v in _sweeper_params(config).items()] + list(config.hydra.overrides.task)
    try:
        counts = {
            o.get_key_element(): len(list(o.sweep_string_iterator())) if o.is_sweep_override() else 1
            for o in OverridesParser.create().parse_overrides(args)
        }
    except HydraException:
        return None
    return math.prod(counts.values())


def concurrent_jobs(launcher: DictConfig) -> int | None:
    """How many jobs of this sweep run at once in a local parallel launcher (joblib's
    ``n_jobs``, at most the sweep's size, from the sweep's process), so that each can give
    its share of the cores to BLAS; None when not known."""
    size = os.environ.get(ENV_JOBS, "")
    if not size.isdigit():
        return None
    n_jobs = launcher.get("n_jobs")
    at_once = joblib.effective_n_jobs(n_jobs) if isinstance(n_jobs, int) else int(size)
    return max(1, min(int(size), at_once))


def run_name(cfg: DictConfig, job: JobInfo) -> str:
    """``<method>-<dataset>[-<selector>]`` then ``key=value`` for every varied key (the sweep's
    swept keys, or a single run's own overrides), the key shortened to its last part."""
    selector = cfg.get("selector", {}).get("name", "none")
    name = f"{cfg.method.name}-{cfg.dataset.name}" + (f"-{selector}" if selector != "none" else "")
    keys = job.varied if job.varied is not None else override_keys(job.overrides, sweeps_only=False)
    keys = [k.lstrip("+~") for k in keys]
    keys = [k for k in keys if k not in _UNNAMED and not k.startswith(("hydra", "tracking"))]
    shorts = [k.split(".")[-1].split("/")[-1] for k in keys]
    parts = []
    for key, short in zip(keys, shorts, strict=True):
        label = short if shorts.count(short) == 1 else key
        value = job.choices.get(key)  # a config group is named by the option chosen
        if value is None:
            value = OmegaConf.select(cfg, key.replace("/", "."), default=None)
            value = OmegaConf.to_object(value) if OmegaConf.is_config(value) else value
        parts.append(f"{label}={canonical(value)}")
    return " ".join([name, *parts])


def close_orphaned_sweep() -> None:
    """Called by a job stopped by a signal: when the sweep's main process is gone (killed by
    SIGKILL, so it could not close the parent run), mark the parent KILLED, not RUNNING."""
    import multiprocessing

    import mlflow

    parent_run, launcher = os.environ.get(ENV_PARENT), multiprocessing.parent_process()
    if not parent_run or launcher is None or not process_gone(launcher.pid, wait_seconds=3.0):
        return
    client = mlflow.MlflowClient()
    if client.get_run(parent_run).info.status == "RUNNING":
        client.set_tag(parent_run, "closed_by", "a job, after the sweep's main process died")
        client.set_terminated(parent_run, "KILLED")


def sweep_table(client: mlflow.MlflowClient, experiment_id: str, parent_id: str) -> pd.DataFrame:
    """One row per job of the sweep (the latest run of each config), headline metrics included."""
    import mlflow

    runs = client.search_runs(
        [experiment_id],
        f"tags.`mlflow.parentRunId` = '{parent_id}'",
        run_view_type=mlflow.entities.ViewType.ACTIVE_ONLY,
        max_results=50000,
    )
    rows = []
    for r in sorted(runs, key=lambda r: r.info.start_time):
        row = {
            "job_num": r.data.tags.get("job_num"),
            "run_name": r.info.run_name,
            "overrides": r.data.tags.get("overrides", ""),
            "status": r.info.status,
            "run_id": r.info.run_id,
            "config_hash": r.data.tags.get("config_hash"),
        }
        row.update({m: r.data.metrics.get(m) for m in HEADLINE if m in r.data.metrics})
        rows.append(row)
    table = pd.DataFrame(rows)
    if table.empty:
        return table
    table["config_hash"] = table.config_hash.fillna(table.run_id)  # a config error has no hash
    finished_first = table.assign(_done=table.status == "FINISHED").sort_values("_done", kind="stable")
    table = finished_first.drop_duplicates("config_hash", keep="last").drop(columns="_done")
    return table.sort_values("job_num", key=lambda s: pd.to_numeric(s, errors="coerce"), ignore_index=True)


def _best(table: pd.DataFrame) -> pd.Series | None:
    done = table[table.status == "FINISHED"]
    for metric in HEADLINE:
        if metric in done and done[metric].notna().any():
            ascending = metric.startswith("hamming_loss")
            return done.sort_values(metric, ascending=ascending).iloc[0].rename(metric)
    return None


def sweep_key(config: DictConfig) -> str:
    """Identifies a sweep by its experiment, command-line overrides and sweeper params, so
    that running the same command again with ``resume=true`` finds its parent run."""
    params = _sweeper_params(config)
    text = repr(
        (
            config.tracking.experiment,
            sorted(o for o in config.hydra.overrides.task if not o.startswith("resume=")),
            sorted(params.items()),
        )
    )
    return hashlib.sha256(text.encode()).hexdigest()[:16]


class SlurmRefused(RuntimeError):
    """SLURM would not accept the sweep's jobs."""


def check_slurm(launcher: DictConfig) -> None:
    """For the SLURM launcher, ask ``sbatch --test-only`` whether a job with the launcher's
    partition, time, CPUs and memory would be accepted; say the command and its answer if not."""
    if "SlurmLauncher" not in str(launcher.get("_target_", "")):
        return
    command = [
        "sbatch",
        "--test-only",
        f"--time={int(launcher.timeout_min)}",
        f"--cpus-per-task={int(launcher.cpus_per_task)}",
        f"--mem={int(launcher.mem_gb)}G",
        "--wrap=true",
        *([f"--partition={launcher.partition}"] if launcher.get("partition") else []),
    ]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as exc:
        raise SlurmRefused(
            f"cannot submit to SLURM: `{' '.join(command)}` failed ({exc}); nothing was "
            "submitted. Is this a SLURM login node (sbatch on PATH, SLURM_CONF)?"
        ) from exc
    if done.returncode != 0:
        answer = (done.stderr or done.stdout).strip().splitlines()
        raise SlurmRefused(
            f"SLURM refuses the sweep's jobs: `{' '.join(command)}` said "
            f"{answer[-1] if answer else f'exit status {done.returncode}'!r}; nothing was "
            "submitted. Check hydra.launcher.partition, timeout_min, cpus_per_task and mem_gb."
        )


class SweepCallback(Callback):
    """Creates the store and experiment once, opens (or, resuming, reopens) the sweep's parent
    run before any job starts, and closes it with the sweep's table however the sweep ends."""

    def __init__(self) -> None:
        self.parent: str | None = None
        self.completed = False
        self.interrupted = False

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        # Hydra turns a callback's exception into a warning and runs the sweep anyway: a store
        # or a scheduler that refuses must stop it here, before any job, in one paragraph.
        import mlflow

        try:
            check_slurm(config.hydra.launcher)  # first: it leaves nothing behind
            experiment_id = setup_from_config(config.tracking)
        except (TrackingUnavailable, SlurmRefused) as exc:
            print(exc, file=sys.stderr)
            raise SystemExit(2) from exc
        self.client = mlflow.MlflowClient(config.tracking.uri)
        self.experiment_id, self.sweep_dir = experiment_id, Path(config.hydra.sweep.dir)
        key = sweep_key(config)
        previous = (
            self.client.search_runs(
                [experiment_id],
                f"tags.sweep_key = '{key}' and tags.kind = 'sweep'",
                order_by=["attributes.start_time DESC"],
                max_results=1,
            )
            if config.get("resume")
            else []
        )
        if previous:
            run = previous[0]
            self.client.update_run(run.info.run_id, status="RUNNING")
            sweep_id = run.data.tags["sweep_id"]
            log.info("resuming sweep %s (parent run %s)", sweep_id, run.info.run_id)
        else:
            sweep_id = datetime.datetime.now().strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:4]
            keys = swept_keys(config)
            run = self.client.create_run(
                experiment_id,
                run_name=f"sweep {sweep_id}: {' '.join(keys)}",
                tags={
                    "kind": "sweep",
                    "sweep_id": sweep_id,
                    "sweep_key": key,
                    "swept": ",".join(keys),
                    "overrides": " ".join(config.hydra.overrides.task)[:5000],
                },
            )
        self.parent = run.info.run_id
        os.environ.update(
            {
                ENV_PARENT: self.parent,
                ENV_SWEEP: sweep_id,
                ENV_KEYS: run.data.tags.get("swept", ",".join(swept_keys(config))),
                ENV_JOBS: str(sweep_size(config) or ""),
            }
        )
        atexit.register(self._close)
        for signum in (signal.SIGTERM, signal.SIGINT):  # the sweep's own process: close, then die
            signal.signal(signum, self._on_signal)

    def _on_signal(self, signum, frame):
        if self.interrupted:
            return  # closing already: a second Ctrl-C must not leave the parent RUNNING
        self.interrupted = True
        forward_and_wait(signum)  # each job closes its run before the launcher's executor is torn down
        raise Interrupted(signum)

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        self.completed = True
        self._close()

    def _close(self) -> None:
        """Log the table and end the parent: FINISHED when every job finished, FAILED when some
        failed, KILLED when the sweep itself was stopped (its jobs were still running)."""
        if self.parent is None:
            return
        parent, self.parent = self.parent, None
        for name in (ENV_PARENT, ENV_SWEEP, ENV_KEYS, ENV_JOBS):
            os.environ.pop(name, None)
        table = sweep_table(self.client, self.experiment_id, parent)
        self.sweep_dir.mkdir(parents=True, exist_ok=True)
        path = self.sweep_dir / "sweep.csv"
        table.to_csv(path, index=False)
        self.client.log_artifact(parent, str(path))
        tags = {
            "jobs": str(len(table)),
            "jobs_finished": str(int((table.status == "FINISHED").sum())) if len(table) else "0",
        }
        best = _best(table) if len(table) else None
        if best is not None:
            tags.update(
                best_run=best.run_name,
                best_run_id=best.run_id,
                best_metric=best.name,
                best_value=canonical(float(best[best.name])),
            )
        for k, v in tags.items():
            self.client.set_tag(parent, k, v)
        all_done = bool(len(table)) and (table.status == "FINISHED").all()
        status = "KILLED" if self.interrupted else ("FINISHED" if self.completed and all_done else "FAILED")
        self.client.set_terminated(parent, status)
        print(
            f"sweep {parent}: {tags['jobs_finished']} of {tags['jobs']} jobs finished, "
            f"table {path}"
            + (f", best {best.run_name} ({best.name} {best[best.name]:.4f})" if best is not None else "")
        )
