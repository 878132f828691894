"""The task behind ``python -m run``: one config in, one tracked MLflow run out.

Data flows one way: dataset → protocol (trials) → method (fit/score per trial, in parallel)
→ metrics → tracking and report. Everything is a plain function of the composed config, so
tests call :func:`run_experiment` without Hydra.

This module reads top to bottom, each step calling down into the module that holds it, none
calling back: :func:`run_from_hydra` → :func:`run_experiment`, which checks the config and builds
its plan (:func:`prepare`: :mod:`~mlgraph.engine.checks`, :mod:`~mlgraph.engine.plan`), finds
the run a resume continues (:mod:`~mlgraph.engine.checkpoint`), then runs the trials and opens
their MLflow run, whose results :mod:`~mlgraph.engine.results` logs, with the dataset and the
model of :mod:`~mlgraph.engine.lineage`.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
from omegaconf import DictConfig, OmegaConf

from mlgraph.config.secrets import redact, redact_mapping, tracking_problem
from mlgraph.engine.checkpoint import Checkpoint, find_previous, finished_trials
from mlgraph.engine.checks import ConfigError, check_before_run, check_run_keys
from mlgraph.engine.jobs import LOCAL_PARALLEL_LAUNCHERS, JobInfo, concurrent_jobs, run_name
from mlgraph.engine.lineage import dataset_fields, protocol_name
from mlgraph.engine.plan import Plan, load_from_config, make_estimator, n_labels, plan_from_config, schedule
from mlgraph.engine.results import finish
from mlgraph.engine.runner import run_trials, summarise
from mlgraph.engine.smoke import smoke_fit
from mlgraph.engine.sweep import close_orphaned_sweep, record_skipped
from mlgraph.evaluation.figures import pyplot
from mlgraph.processes.signals import (
    Interrupted,
    deferred,
    die_of,
    die_with_parent,
    end_worker_between_jobs,
    interrupts_raise,
    raise_pending,
    stop_workers,
)
from mlgraph.tracking.process import tracked
from mlgraph.tracking.store import (
    close_left_running,
    config_hash,
    config_params,
    describe_run,
    end_run,
    log_batch,
    open_run,
    set_tags,
    setup_from_config,
    storage_problem,
)

# what a user imports from here; the plan's builders are in mlgraph.engine.plan
__all__ = ["ConfigError", "load_from_config", "make_estimator", "prepare", "run_experiment", "run_from_hydra"]

log = logging.getLogger(__name__)


def run_from_hydra(cfg: DictConfig) -> pd.DataFrame | None:
    """The body of every Hydra entry point (``python -m run``, ``mlgraph run``): reads the
    launcher, job folder and sweep position from Hydra's runtime config and calls
    :func:`run_experiment`; a signal ends the process by that signal once the run is KILLED."""
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    hc = HydraConfig.get()
    launcher = hc.runtime.choices.get("hydra/launcher", "")
    multirun = hc.mode == RunMode.MULTIRUN
    if multirun:
        die_with_parent()  # a launcher's worker process ends with the sweep's main process
        end_worker_between_jobs()
    parallel = multirun and launcher in LOCAL_PARALLEL_LAUNCHERS
    try:
        with interrupts_raise():  # from the job's first step: none of it may turn a signal into a result
            return run_experiment(
                cfg,
                in_parallel_launcher=parallel,
                output_dir=hc.runtime.output_dir,
                launcher_jobs=concurrent_jobs(hc.launcher) if parallel else None,
                job=JobInfo.from_hydra(hc),
            )
    except Exception as exc:  # a full disk, a read-only folder: one paragraph naming the path
        problem = storage_problem(exc, cfg.tracking.get("uri"))
        if problem is None:
            raise
        if multirun:  # the sweep records the job FAILED with this paragraph
            raise problem from exc
        print(problem, file=sys.stderr)  # the documented exit status, without Hydra's framing
        raise SystemExit(2) from exc
    except Interrupted as exc:
        if multirun:
            with deferred():
                try:
                    close_orphaned_sweep()
                except Exception as err:  # the store may be gone too; the job still ends
                    log.warning("could not close the sweep's parent run: %s", err)
        die_of(exc.signum)


def run_experiment(
    cfg: DictConfig,
    in_parallel_launcher: bool = False,
    output_dir: str | os.PathLike | None = None,
    job: JobInfo | None = None,
    launcher_jobs: int | None = None,
) -> pd.DataFrame | None:
    """Run every trial of ``cfg`` and track them as one MLflow run; return the summary table.

    Config and data are checked first (:class:`~mlgraph.engine.checks.ConfigError`, no run
    opened, except that a sweep job records its failure); the store is opened and the run created
    while the first trials run (a store that cannot be opened stops them). With ``resume=true``
    the store is read first: a job whose config hash already has a FINISHED run is skipped
    (returns None), and an interrupted one is reopened and runs only the trials it had not
    finished. A failing trial is logged as failed and the others go on; if all fail (or any, with
    ``strict=true``) the run is FAILED and :class:`~mlgraph.engine.results.AllTrialsFailed` is
    raised. SIGTERM/SIGINT end the run KILLED with its finished trials saved.
    """
    problem = tracking_problem(cfg)  # a password in tracking.uri: refused before anything is written
    if problem:
        raise ConfigError(problem)
    job = job or JobInfo()
    name = run_name(cfg, job)
    try:
        plan = prepare(cfg, in_parallel_launcher, launcher_jobs)
    except ConfigError as exc:
        if job.sweep_id:
            _record_config_error(cfg, setup_from_config(cfg.tracking), name, job, exc)
        raise
    chash = config_hash(cfg)
    requeued = os.environ.get("SLURM_RESTART_COUNT", "0") not in ("", "0")  # SLURM runs it again
    experiment_id = previous = None
    if cfg.get("resume", False) or requeued:
        experiment_id = setup_from_config(cfg.tracking)
        previous = find_previous(experiment_id, chash)
        reopened = (
            previous.info.run_id if previous is not None and previous.info.status != "FINISHED" else None
        )
        close_left_running(experiment_id, chash, keep=reopened)  # any other copy left RUNNING ends FAILED
    if previous is not None and previous.info.status == "FINISHED":
        log.info(
            "%s: skipped, run %s (%s) is FINISHED with the same resolved config (config_hash %s, "
            "the config without %s)",
            name,
            previous.info.run_name,
            previous.info.run_id,
            chash,
            "progress, n_jobs, graph_cache, tracking, resume, strict, report",
        )
        record_skipped(job, previous.info.run_id)
        return None
    done = finished_trials(previous.info.run_id) if previous is not None else pd.DataFrame()
    with interrupts_raise(), _artifact_dir(output_dir) as out:
        return _tracked(cfg, plan, name, job, experiment_id, chash, previous, done, out)


def prepare(cfg: DictConfig, in_parallel_launcher: bool = False, launcher_jobs: int | None = None) -> Plan:
    """Validate every key, load the data, build the trials and check the estimator, raising
    :class:`~mlgraph.engine.checks.ConfigError` (one paragraph) on the first problem."""
    check_run_keys(cfg)  # before anything is read
    plan = plan_from_config(cfg)
    check_before_run(cfg, plan)  # before any trial runs and the MLflow run opens
    # own estimators only; on the trial with the most labelled rows, so that an estimator that
    # fails at low labelling rates still runs and records those trials as failed
    best_labelled = max(plan.trials, key=lambda trial: int(trial.labelled.sum()))
    smoke_fit(plan.estimator, plan.data, best_labelled, method=cfg.method.name)
    return schedule(plan, cfg, in_parallel_launcher, launcher_jobs)


def _record_config_error(
    cfg: DictConfig, experiment_id: str, name: str, job: JobInfo, exc: ConfigError
) -> None:
    """A sweep job whose config is invalid still appears in the sweep, as a FAILED run with
    its params (as far as they resolve) and the error."""
    import mlflow

    client = mlflow.MlflowClient()
    tags = {**job.tags(), "error": str(exc)[:5000]}
    if job.parent_run_id:
        tags["mlflow.parentRunId"] = job.parent_run_id
    run = client.create_run(experiment_id, run_name=redact(name), tags=redact_mapping(tags))
    with contextlib.suppress(Exception):  # a missing mandatory value leaves nothing to log
        log_batch(run.info.run_id, params=config_params(cfg))
    client.set_terminated(run.info.run_id, "FAILED")


def _tracked(
    cfg,
    plan: Plan,
    name: str,
    job: JobInfo,
    experiment_id: str | None,
    chash: str,
    previous,
    done: pd.DataFrame,
    out: Path,
) -> pd.DataFrame:
    """The trials and their MLflow run, which :func:`mlgraph.tracking.store.open_run` opens (the store
    too, unless ``experiment_id`` is known) once the trials are running, in the tracking process
    when the command started one (:mod:`mlgraph.tracking.process`); rows finished before are
    kept and checkpointed then."""
    spent = {"logging": 0.0, "trials": 0.0}  # tracking overhead, reported by `make bench`
    data, parallelism = plan.data, plan.parallelism
    # the tags that identify the job go in with the run, so that even a run killed at once is
    # found and reopened by a resume
    identity = {**job.tags(), "config_hash": chash}
    run: dict = {}  # run id and checkpoint, once the run exists
    early: list[dict] = []  # rows finished before

    def start_tracking() -> None:
        started = time.perf_counter()
        with deferred() as pending:  # a run exists only once it is ours to close
            run["id"] = tracked(
                open_run,
                OmegaConf.to_container(cfg.tracking, resolve=True),
                experiment_id,
                previous.info.run_id if previous is not None else None,
                name,
                job.parent_run_id,
                identity,
            )
            run["checkpoint"] = Checkpoint(
                run["id"], out, float(cfg.tracking.get("checkpoint_seconds", 30)), done
            )
        raise_pending(pending)
        checkpoint = run["checkpoint"]
        tags = {
            **identity,
            "method": cfg.method.name,
            "dataset": cfg.dataset.name,
            "selector": cfg.get("selector", {}).get("name", "none"),
            "n_jobs": parallelism.n_jobs,
            "blas_threads": parallelism.blas_threads,
            "dataset_sha256": data.sha256,
            "dataset_source": data.source,
            "dataset_shape": f"{data.n_samples}x{data.n_features}x{n_labels(data)}",
            "dataset_n_instances": data.n_samples,
            "dataset_n_features": data.n_features,
            "dataset_n_labels": n_labels(data),
            Checkpoint.TAG: str(checkpoint.path.resolve()),
            **plan.tags,
        }
        if plan.notes:
            tags["profile_notes"] = " ".join(plan.notes)[:5000]
        reopened = previous is not None and "interrupted" in previous.data.tags
        if previous is not None:
            tags["resumed_trials"] = str(len(done))
            if job.parent_run_id:  # reopened by another sweep (other jobs beside it): it counts there
                tags["mlflow.parentRunId"] = job.parent_run_id
            if reopened:  # a reopened run is no longer interrupted
                tags["resumed_after"] = previous.data.tags["interrupted"]
            log.info(
                "%s: resuming run %s, %d of %d trials already done",
                name,
                run["id"],
                len(done),
                len(plan.trials),
            )
        params = None if previous is not None else config_params(cfg)
        tracked(
            describe_run, run["id"], params, tags, dataset_fields(data, protocol_name(cfg, job)), reopened
        )
        for row in early:
            checkpoint.add(row)
        if len({t.rate for t in plan.trials}) > 1:  # the run's figure: import its library now
            pyplot()
        spent["logging"] += time.perf_counter() - started

    def add_row(row: dict) -> None:
        (run["checkpoint"].add if "checkpoint" in run else early.append)(row)

    try:
        started = time.perf_counter()  # the run is opened while the trials run: its time is not theirs
        table = run_trials(
            plan.estimator,
            data.X,
            data.Y,
            plan.trials,
            plan.metrics,
            parallelism,
            progress=cfg.get("progress", True),
            description=name,
            evaluation=plan.evaluation,
            done=done,
            on_row=add_row,
            on_start=start_tracking,
            tuning=plan.tuning,
        )
        spent["trials"] = time.perf_counter() - started - spent["logging"]
        finish(cfg, plan, table, name, job, run["id"], out, spent)
        tracked(end_run, "FINISHED")
    except (Interrupted, SystemExit) as exc:  # submitit exits after requeueing a pre-empted job
        if "checkpoint" not in run:  # no run yet: nothing to close
            stop_workers()
            raise
        why = exc.name if isinstance(exc, Interrupted) else "requeued by SLURM (pre-emption or time limit)"
        with deferred():
            _close_run("KILLED", {"interrupted": why}, run["checkpoint"])
        log.warning(
            "%s: %s; run %s KILLED with %d finished trials saved (resume with resume=true)",
            name,
            why,
            run["id"],
            len(run["checkpoint"].rows),
        )
        raise
    except BaseException as exc:
        if "checkpoint" not in run:
            stop_workers()
            raise
        with deferred():
            _close_run("FAILED", {"error": f"{type(exc).__name__}: {exc}"[:5000]}, run["checkpoint"])
        raise
    return summarise(table, plan.metrics)


def _close_run(status: str, tags: dict, checkpoint: Checkpoint) -> None:
    """End the active run as ``status`` after an interruption or an error: each step is tried
    on its own, so that a full disk that stops the checkpoint's copy does not also leave the
    run RUNNING (a store that can no longer be written leaves it RUNNING; resume=true
    continues it)."""
    steps = (
        stop_workers,
        checkpoint.flush,
        lambda: tracked(set_tags, tags),
        lambda: tracked(end_run, status),
    )
    for step in steps:
        try:
            step()
        except Exception as exc:
            if storage_problem(exc) is None:  # a full disk is said once, in its own paragraph
                log.warning(
                    "while ending the run %s: %s: %s", status, type(exc).__name__, str(exc).splitlines()[0]
                )


@contextlib.contextmanager
def _artifact_dir(output_dir: str | os.PathLike | None):
    """Hydra's job folder when there is one, else a temporary folder removed afterwards."""
    if output_dir:
        yield Path(output_dir)
    else:
        with tempfile.TemporaryDirectory(prefix="mlgraph-") as tmp:
            yield Path(tmp)
