"""Legible sweeps: what each job varies, one parent run per sweep, and the sweep's table.

A Hydra multirun opens a parent MLflow run (:class:`SweepCallback`) before its jobs start; each
job's run is nested under it, named by method and data set, then the parameters the sweep
varies (``mlmrrw-yeast nu1=1 nu2=0.1``), and tagged with its overrides, the sweep id and its job number.
When the sweep ends, however it ends, the parent holds ``sweep.csv`` (one row per job: overrides, status, headline
metrics), the best job as tags, and a final status. The parent's id, the sweep id and the swept
keys reach the jobs through environment variables, which every launcher passes on (local
worker processes inherit them, submitit exports them to SLURM jobs). A job whose process dies is
closed from the sweep's process (:func:`close_dead_job`, called by :mod:`mlgraph.engine.launcher`), and
SLURM's warning signal is kept well before the time limit (:func:`signal_delay`).
"""

from __future__ import annotations

import atexit
import contextlib
import datetime
import hashlib
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd
from hydra.experimental.callback import Callback
from omegaconf import DictConfig

from mlgraph.config import keys as config_keys
from mlgraph.config.secrets import redact_file, redact_mapping
from mlgraph.engine.jobs import (
    ENV_JOBS,
    ENV_KEYS,
    ENV_PARENT,
    ENV_PROGRESS,
    ENV_SWEEP,
    HEADLINE,
    JobInfo,
    parent_name,
    planned_jobs,
    resume_note,
    sweep_size,
    sweeper_params,
    swept_keys,
)
from mlgraph.processes.signals import Interrupted, forward_and_wait, process_gone
from mlgraph.tracking.store import (
    StorageError,
    TrackingUnavailable,
    canonical,
    check_writable,
    log_batch,
    setup_from_config,
)

if TYPE_CHECKING:
    import mlflow

log = logging.getLogger(__name__)


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


# Jobs of this sweep whose process died, recorded by the launcher in the sweep's own process:
# (job number, overrides, cause, run id or None), reported by the parent run when the sweep ends.
DEAD_JOBS: list[tuple[int, tuple[str, ...], str, str | None]] = []


def close_dead_job(job_num: int, overrides, cause: str) -> str | None:
    """Called by the sweep's process when job ``job_num``'s process died without closing its run
    (SIGKILL, out of memory, a crash): mark that run KILLED with a note saying how the process
    died, and remember the job for the parent run. Returns the run's id (None: it had no run yet)."""
    run_id = close_left_running_job(job_num, cause)
    DEAD_JOBS.append((job_num, tuple(overrides), cause, run_id))
    return run_id


def close_left_running_job(job_num: int, cause: str) -> str | None:
    """If job ``job_num``'s process ended (``cause``) leaving its run RUNNING, mark the run KILLED
    with a note (a run the job closed itself is left as it is). Returns the run's id, if any."""
    import mlflow

    parent, sweep_id = os.environ.get(ENV_PARENT), os.environ.get(ENV_SWEEP)
    if not parent:
        return None
    note = (
        f"The job's process died of {cause} while this run was RUNNING; the trials it finished "
        "are saved. Run the sweep's command again with resume=true to finish it."
    )
    try:
        client = mlflow.MlflowClient()
        experiment_id = client.get_run(parent).info.experiment_id
        runs = client.search_runs(
            [experiment_id],
            f"tags.sweep_id = '{sweep_id}' and tags.job_num = '{job_num}' and attributes.status = 'RUNNING'",
        )
        for run in runs:
            client.set_tag(run.info.run_id, "interrupted", f"process died of {cause}")
            client.set_tag(run.info.run_id, "mlflow.note.content", note)
            client.set_terminated(run.info.run_id, "KILLED")
    except Exception as exc:  # the sweep goes on; its parent run still reports the dead job
        log.warning("could not mark the run of dead job #%d KILLED: %s", job_num, exc)
        return None
    return runs[0].info.run_id if runs else None


SKIPPED_TAG = "skipped_job."


def record_skipped(job: JobInfo, run_id: str) -> None:
    """A resumed sweep's job found its config FINISHED in run ``run_id`` (maybe under another
    sweep's parent): note it on this sweep's parent, whose table then counts it as finished."""
    import mlflow

    if job.parent_run_id and job.job_num is not None:
        mlflow.MlflowClient().set_tag(job.parent_run_id, f"{SKIPPED_TAG}{job.job_num}", run_id)


def _row(run, job_num=None) -> dict:
    row = {
        "job_num": run.data.tags.get("job_num") if job_num is None else job_num,
        "run_name": run.info.run_name,
        "overrides": run.data.tags.get("overrides", ""),
        "status": run.info.status,
        "run_id": run.info.run_id,
        "config_hash": run.data.tags.get("config_hash"),
        "skipped": job_num is not None,
    }
    row.update({m: run.data.metrics.get(m) for m in HEADLINE if m in run.data.metrics})
    return row


def sweep_table(client: mlflow.MlflowClient, experiment_id: str, parent_id: str) -> pd.DataFrame:
    """One row per job of the sweep (the latest run of each config), headline metrics included;
    jobs a resume skipped because their config had a FINISHED run elsewhere are rows of that run
    (``skipped`` true)."""
    import mlflow

    runs = client.search_runs(
        [experiment_id],
        f"tags.`mlflow.parentRunId` = '{parent_id}'",
        run_view_type=mlflow.entities.ViewType.ACTIVE_ONLY,
        max_results=50000,
    )
    rows = [_row(r) for r in sorted(runs, key=lambda r: r.info.start_time)]
    skipped = {
        key[len(SKIPPED_TAG) :]: run_id
        for key, run_id in client.get_run(parent_id).data.tags.items()
        if key.startswith(SKIPPED_TAG)
    }
    for job_num, run_id in skipped.items():
        with contextlib.suppress(mlflow.exceptions.MlflowException):  # deleted since
            rows.append(_row(client.get_run(run_id), job_num))
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
    params = sweeper_params(config)
    text = repr(
        (
            config.tracking.experiment,
            sorted(o for o in config.hydra.overrides.task if not o.startswith("resume=")),
            sorted(params.items()),
        )
    )
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def signal_delay(timeout_min: float, signal_delay_s: int) -> int:
    """The SLURM warning signal's lead on the time limit, at most a quarter of the limit: SLURM
    sends it ``signal_delay_s`` before the limit (up to 60 s earlier still), and a requeued job
    that is signalled as soon as it starts can never finish. A larger delay is cut to that, with
    a warning."""
    limit = int(float(timeout_min) * 60)
    most = max(1, limit // 4)
    if int(signal_delay_s) <= most:
        return int(signal_delay_s)
    log.warning(
        "hydra.launcher.signal_delay_s=%s is not well below timeout_min=%s (%d s): each job would be "
        "signalled to stop with %d s of its %d s or less done; using signal_delay_s=%d, a quarter of the "
        "limit (SLURM may signal up to 60 s earlier still).",
        signal_delay_s,
        timeout_min,
        limit,
        max(0, limit - int(signal_delay_s)),
        limit,
        most,
    )
    return most


def duration(seconds: float) -> str:
    """``seconds`` as a person reads it: "42 s", "3 min 05 s", "1 h 02 min"."""
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"


def record_job_end(folder: str | os.PathLike, job_num, status: str, skipped: bool, seconds: float) -> None:
    """A job's note for the sweep's progress (:class:`SweepProgress`): one small JSON file,
    written to a temporary name and renamed, so that a reader never sees half of it. Any
    process may write it: a launcher's worker, a SLURM job on another node."""
    folder = Path(folder)
    note = {"job": job_num, "status": status, "skipped": skipped, "seconds": round(seconds, 3)}
    name = f"{job_num}-{os.getpid()}-{uuid.uuid4().hex[:6]}.json"
    tmp = folder / f".{name}.tmp"
    tmp.write_text(json.dumps(note))
    os.replace(tmp, folder / name)


class SweepProgress:
    """Jobs finished out of the sweep's total and the time left, in the sweep's main process.

    Each job leaves a note in ``folder`` when it ends (:func:`record_job_end`, from the sweep
    callback's ``on_job_end``); a thread reads new notes every ``every`` seconds, prints one
    line per change and writes the same to the sweep's parent run (tag ``progress``, metrics
    ``progress/jobs_done`` and ``progress/seconds_left`` with step = jobs done). The time left is
    the jobs left times the wall time per job run so far (so it accounts for the jobs running
    at once); jobs a resumed sweep skipped count as done but not in that rate."""

    def __init__(self, folder: Path, total: int | None, client=None, parent: str | None = None, every=2.0):
        self.folder, self.total, self.client, self.parent, self.every = folder, total, client, parent, every
        self.seen: set[str] = set()
        self.done = self.failed = self.skipped = 0
        self.started = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="sweep-progress", daemon=True)

    def start(self) -> SweepProgress:
        self.folder.mkdir(parents=True, exist_ok=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=10)
        self.poll()

    def _loop(self) -> None:
        while not self._stop.wait(self.every):
            try:
                self.poll()
            except Exception as exc:  # progress must never stop a sweep
                log.debug("sweep progress: %s", exc)

    def seconds_left(self) -> float | None:
        ran = self.done - self.skipped
        if not ran or self.total is None:
            return None
        return max(0, self.total - self.done) * (time.monotonic() - self.started) / ran

    def line(self) -> str:
        of = f"/{self.total}" if self.total else ""
        extra = ", ".join(
            f"{n} {what}" for n, what in ((self.failed, "failed"), (self.skipped, "skipped")) if n
        )
        left = self.seconds_left()
        return (
            f"[sweep] {self.done}{of} jobs done"
            + (f" ({extra})" if extra else "")
            + f", {duration(time.monotonic() - self.started)} elapsed"
            + ("" if left is None else f", about {duration(left)} left")
        )

    def poll(self) -> None:
        """Count the notes not seen yet; report when there were any."""
        new = sorted(p for p in self.folder.glob("*.json") if p.name not in self.seen)
        for path in new:
            try:
                note = json.loads(path.read_text())
            except (OSError, ValueError):
                continue  # read again next time
            self.seen.add(path.name)
            self.done += 1
            self.failed += note.get("status") != "COMPLETED"
            self.skipped += bool(note.get("skipped"))
        if not new:
            return
        text = self.line()
        print(text, flush=True)
        if self.client is not None and self.parent is not None:
            left = self.seconds_left()
            self.client.set_tag(self.parent, "progress", text.removeprefix("[sweep] "))
            self.client.log_metric(self.parent, "progress/jobs_done", self.done, step=self.done)
            if left is not None:
                self.client.log_metric(self.parent, "progress/seconds_left", left, step=self.done)


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
        self.progress: SweepProgress | None = None
        self.job_started = time.monotonic()
        self.all_failed = False  # set when the sweep ends with no job finished

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        # Hydra turns a callback's exception into a warning and runs the sweep anyway: a store
        # or a scheduler that refuses must stop it here, before any job, in one paragraph.
        import mlflow

        problem = config_keys.paragraph(config)  # every job would fail the same way
        if problem:
            print(problem, file=sys.stderr)
            raise SystemExit(2)
        try:
            check_writable(config.hydra.sweep.dir, "sweep folder")
            check_slurm(config.hydra.launcher)  # first: it leaves nothing behind
            experiment_id = setup_from_config(config.tracking)
        except (TrackingUnavailable, SlurmRefused, StorageError) as exc:
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
        self.planned = planned_jobs(config)
        if previous:
            run = previous[0]
            self.client.update_run(run.info.run_id, status="RUNNING")
            sweep_id = run.data.tags["sweep_id"]
            done = sweep_table(self.client, experiment_id, run.info.run_id)
            log.info(
                "resuming sweep %s (parent run %s): %s",
                sweep_id,
                run.info.run_id,
                resume_note(done, self.planned),
            )
        else:
            sweep_id = datetime.datetime.now().strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:4]
            keys = swept_keys(config)
            run = self.client.create_run(
                experiment_id,
                run_name=parent_name(config, keys, sweep_id),
                tags=redact_mapping(
                    {
                        "kind": "sweep",
                        "sweep_id": sweep_id,
                        "sweep_key": key,
                        "swept": ",".join(keys),
                        "overrides": " ".join(config.hydra.overrides.task)[:5000],
                    }
                ),
            )
        self.parent = run.info.run_id
        os.environ.update(
            {
                ENV_PARENT: self.parent,
                ENV_SWEEP: sweep_id,
                ENV_KEYS: run.data.tags.get("swept", ",".join(swept_keys(config))),
                ENV_JOBS: str(sweep_size(config) or ""),
                ENV_PROGRESS: str(self.sweep_dir.resolve() / ".progress"),
            }
        )
        self.progress = SweepProgress(
            Path(os.environ[ENV_PROGRESS]), sweep_size(config), self.client, self.parent
        ).start()
        atexit.register(self._close)
        for signum in (signal.SIGTERM, signal.SIGINT):  # the sweep's own process: close, then die
            signal.signal(signum, self._on_signal)

    def on_run_start(self, config: DictConfig, **kwargs: Any) -> None:
        """A single run: its folder must be writable before Hydra writes into it."""
        try:
            check_writable(config.hydra.run.dir, "run folder")
        except StorageError as exc:
            print(exc, file=sys.stderr)
            raise SystemExit(2) from exc

    def _on_signal(self, signum, frame):
        if self.interrupted:
            return  # closing already: a second Ctrl-C must not leave the parent RUNNING
        self.interrupted = True
        forward_and_wait(signum)  # each job closes its run before the launcher's executor is torn down
        raise Interrupted(signum)

    def __getstate__(self) -> dict:
        """Launchers send the callbacks to their workers: without the main process's thread."""
        return {**self.__dict__, "progress": None}

    def on_job_start(self, config: DictConfig, **kwargs: Any) -> None:
        self.job_started = time.monotonic()

    def on_job_end(self, config: DictConfig, job_return: Any, **kwargs: Any) -> None:
        """In the job's own process: leave the note that the sweep's progress counts (a job
        skipped by ``resume=true`` returns None)."""
        folder = os.environ.get(ENV_PROGRESS)
        if not folder or not Path(folder).is_dir():
            return
        status = getattr(job_return.status, "name", str(job_return.status))
        skipped = status == "COMPLETED" and job_return.return_value is None
        try:
            record_job_end(
                folder, config.hydra.job.get("num"), status, skipped, time.monotonic() - self.job_started
            )
        except OSError as exc:  # the job's result stands without its note
            log.warning("could not record the job's end for the sweep's progress: %s", exc)

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        """The sweeper returned: close the parent; a sweep whose every job failed exits with
        status 1 (a sweeper that goes on past failed jobs, as Optuna's does, returns normally)."""
        self.completed = True
        self._close()
        if self.all_failed:
            raise SystemExit(1)

    def _close(self) -> None:
        """Log the table and end the parent: FINISHED when every job finished (or had finished
        before a resume), FAILED when some failed or died, KILLED when the sweep itself was
        stopped (its jobs were still running). The parent is ended even if the table cannot be
        written (a full disk, a store gone)."""
        if self.parent is None:
            return
        parent, self.parent = self.parent, None
        if self.progress is not None:
            self.progress.stop()
        for name in (ENV_PARENT, ENV_SWEEP, ENV_KEYS, ENV_JOBS, ENV_PROGRESS):
            os.environ.pop(name, None)
        status = "KILLED" if self.interrupted else "FAILED"
        try:
            all_done = self._report(parent)
            if all_done and self.completed and not self.interrupted:
                status = "FINISHED"
        except Exception as exc:
            print(
                f"sweep {parent}: its table could not be written: {type(exc).__name__}: {exc}",
                file=sys.stderr,
            )
        finally:
            DEAD_JOBS.clear()
            try:
                self.client.set_terminated(parent, status)
            except Exception as exc:
                print(f"sweep {parent}: could not be marked {status}: {exc}", file=sys.stderr)

    def _report(self, parent: str) -> bool:
        """Write the sweep's table and tags to its parent run, print its summary; whether every
        job finished."""
        table = sweep_table(self.client, self.experiment_id, parent)
        self.sweep_dir.mkdir(parents=True, exist_ok=True)
        path = self.sweep_dir / "sweep.csv"
        table.to_csv(path, index=False)
        redact_file(path)
        self.client.log_artifact(parent, str(path))
        finished = int((table.status == "FINISHED").sum()) if len(table) else 0
        skipped = int((table.status == "FINISHED").mul(table.skipped).sum()) if len(table) else 0
        counted = len(table) + sum(run_id is None for *_, run_id in DEAD_JOBS)  # some died before their run
        n_jobs = max(self.planned or 0, counted) if counted else 0  # jobs never started are not finished
        dead = "; ".join(f"#{n} ({' '.join(o)}): {cause}" for n, o, cause, _ in DEAD_JOBS)
        tags = {
            "jobs": str(n_jobs),
            "jobs_finished": str(finished),
            "jobs_skipped": str(skipped),
            "jobs_died": str(len(DEAD_JOBS)),  # of this attempt: a resume that finishes them says 0
            "dead_jobs": dead[:5000] or "none",
        }
        best = _best(table) if len(table) else None
        if best is not None:
            tags.update(
                best_run=best.run_name,
                best_run_id=best.run_id,
                best_metric=best.name,
                best_value=canonical(float(best[best.name])),
            )
        log_batch(parent, tags=tags)
        summary = f"sweep {parent}: {finished} of {n_jobs} jobs finished"
        if skipped:
            summary += f" ({skipped} of {n_jobs} already finished)"
        if DEAD_JOBS:
            summary += f", {len(DEAD_JOBS)} died (resume with resume=true)"
        if not n_jobs:  # stopped before any job (a sweeper that refused its config says why)
            return False
        print(
            f"{summary}, table {path}"
            + (f", best {best.run_name} ({best.name} {best[best.name]:.4f})" if best is not None else "")
        )
        if not finished and not self.interrupted:
            self.all_failed = True
            print(
                f"sweep {parent}: all {n_jobs} jobs failed; first error: {self._first_error(table)}",
                file=sys.stderr,
            )
        return finished == n_jobs

    def _first_error(self, table: pd.DataFrame) -> str:
        """The error of the sweep's first failed job (in job order): its run's ``error`` tag, or
        how its process died."""
        for run_id in table.run_id:
            tags = self.client.get_run(run_id).data.tags
            error = tags.get("error") or tags.get("interrupted")
            if error:
                return error.strip()
        if DEAD_JOBS:
            num, _, cause, _ = min(DEAD_JOBS, key=lambda d: d[0])
            return f"job #{num} died of {cause}"
        return "none recorded (see the jobs' logs in the sweep folder)"
