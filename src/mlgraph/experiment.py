"""The task behind ``python -m run``: one config in, one tracked MLflow run out.

Data flows one way: dataset → protocol (trials) → method (fit/score per trial, in parallel)
→ metrics → tracking and report. Everything is a plain function of the composed config, so
tests call :func:`run_experiment` without Hydra.
"""

from __future__ import annotations

import contextlib
import inspect
import logging
import numbers
import os
import re
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
from hydra.errors import CompactHydraException
from hydra.utils import call, get_method, instantiate
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException
from sklearn.pipeline import Pipeline

from mlgraph.data import load_dataset
from mlgraph.data.dual_set import DualSetDataset
from mlgraph.data.splits import SPLIT_KEYS, load_fixed_split
from mlgraph.graphs import KINDS, SEARCHES, WEIGHTS
from mlgraph.methods.base import check_params, nonneg, positive, positive_int
from mlgraph.methods.dual_set import DualSetEstimator, DualSetFromMultiLabel
from mlgraph.metrics import DUAL_SET_METRICS, METRICS
from mlgraph.protocols import protocol_inputs, uses_fixed_split
from mlgraph.report import (
    FIG1_METRICS,
    format_summary,
    plot_metrics_vs_rate,
    plot_rounds,
    pyplot,
    save_figure,
)
from mlgraph.runner import Parallelism, resolve_parallelism, run_trials, summarise
from mlgraph.selection import Standardise
from mlgraph.signals import (
    Interrupted,
    deferred,
    die_of,
    die_with_parent,
    end_worker_between_jobs,
    interrupts_raise,
    raise_pending,
    stop_workers,
)
from mlgraph.sweep import JobInfo, close_orphaned_sweep, concurrent_jobs, run_name
from mlgraph.tracking import config_hash, config_params, log_batch, provenance_tags, setup_from_config

log = logging.getLogger(__name__)


@contextlib.contextmanager
def _timed(totals: dict[str, float], key: str):
    started = time.perf_counter()
    try:
        yield
    finally:
        totals[key] += time.perf_counter() - started


@contextlib.contextmanager
def _artifact_dir(output_dir: str | os.PathLike | None):
    """Hydra's job folder when there is one, else a temporary folder removed afterwards."""
    if output_dir:
        yield Path(output_dir)
    else:
        with tempfile.TemporaryDirectory(prefix="mlgraph-") as tmp:
            yield Path(tmp)


class ConfigError(CompactHydraException, ValueError):
    """A bad config value or input file, found before any trial runs and before an MLflow run
    opens. Hydra prints it as one paragraph (``HYDRA_FULL_ERROR=1`` shows the traceback)."""


class AllTrialsFailed(CompactHydraException, RuntimeError):
    """Every trial of a job failed (or, with ``strict=true``, any): the run is FAILED."""


def load_from_config(dataset: DictConfig, protocol: DictConfig | None = None):
    """Load the dataset a ``dataset`` config group describes (protocol keys excluded): a MULAN
    multi-label dataset, or, with a ``_target_`` loader, any other kind (dual-set data). Under a
    protocol that evaluates the published split (``protocol=fixed``), a MULAN dataset's training
    and test files instead, stacked, with their boundary ``n_train``."""
    fields = OmegaConf.to_container(dataset, resolve=True, throw_on_missing=True)
    for protocol_key in ("subsample", "cv_train_size"):
        fields.pop(protocol_key, None)
    fixed = protocol is not None and uses_fixed_split(protocol)
    if "_target_" in fields:  # the config's `name` labels runs; a loader may or may not take it
        if fixed:
            raise ValueError(
                f"protocol=fixed evaluates a MULAN dataset's published train/test files; "
                f"dataset {fields.get('name')!r} has none (use protocol=cv5 or halves)"
            )
        loader = get_method(fields["_target_"])
        if "name" not in inspect.signature(loader).parameters:
            fields.pop("name", None)
        return instantiate(fields)
    if fixed:
        return load_fixed_split(**fields)
    for split_key in SPLIT_KEYS:
        fields.pop(split_key, None)
    return load_dataset(**fields)


def task_metrics(data) -> list[str]:
    """Dual-set data are scored by Definition 4 of paper 001; multi-label data by every metric."""
    return list(DUAL_SET_METRICS) if isinstance(data, DualSetDataset) else list(METRICS)


def _instantiate(group: DictConfig):
    return instantiate({k: v for k, v in group.items() if k != "name"}, _convert_="all")


def make_estimator(method: DictConfig, selector: DictConfig | None = None, normalise: bool = False):
    """Instantiate the estimator of a ``method`` config (its ``name`` is a label only). With a
    feature ``selector`` and/or ``normalise`` (paper 004's protocol), the pipeline
    normalise → select features → method, every step fitted on a trial's training part only."""
    estimator = _instantiate(method)
    steps = [("normalise", Standardise())] if normalise else []
    if selector is not None and selector.get("_target_") is not None:
        steps.append(("select", _instantiate(selector)))
    return Pipeline([*steps, ("classify", estimator)]) if steps else estimator


def shown_metrics(metrics: list[str]) -> list[str]:
    """The console summary's columns: paper 000's three metrics, or the task's own."""
    return [m for m in FIG1_METRICS if m in metrics] or metrics


def round_curves(table: pd.DataFrame) -> pd.DataFrame:
    """Mean and std over trials of the per-round accuracies (``<metric>@t`` columns), one row per
    round t (paper 001, Fig. 3); empty for methods without rounds."""
    ok = table[table.status == "ok"]
    columns = [c for c in ok.columns if "@" in c]
    if not columns:
        return pd.DataFrame()
    long = (
        ok[columns]
        .melt(var_name="key")
        .assign(
            metric=lambda d: d.key.str.split("@").str[0],
            round=lambda d: d.key.str.split("@").str[1].astype(int),
        )
    )
    stats = long.groupby(["round", "metric"]).value.agg(["mean", "std"]).unstack("metric")
    stats.columns = [m if s == "mean" else f"{m}_std" for s, m in stats.columns]
    return stats


def _metric_rows(summary: pd.DataFrame, table: pd.DataFrame, metrics: list[str]):
    """(key, value, step): per rate with step = rate in %, plus scalars over all trials."""
    for _, row in summary.iterrows():
        for metric in metrics:
            if pd.notna(row[metric]):
                yield metric, row[metric], row["step"]
                yield f"{metric}_std", row[f"{metric}_std"], row["step"]
    ok = table[table.status == "ok"]
    overall = "_overall" if len(ok) == len(table) else "_overall_ok_only"  # says it skips failures
    for metric in metrics:
        if ok[metric].notna().any():
            yield f"{metric}{overall}", ok[metric].mean(), 0
    if len(summary) == 1:  # cross-validation and halves: each fold or split, step = its number
        for repetition, values in zip(ok["repetition"], ok[metrics].itertuples(index=False), strict=True):
            for metric, value in zip(metrics, values, strict=True):
                if pd.notna(value):
                    yield f"{metric}_fold", value, repetition
    for t, row in round_curves(table).iterrows():  # paper 001, Fig. 3: step = boosting round
        for metric in metrics:
            if metric in row and pd.notna(row[metric]):
                yield f"round_{metric}", row[metric], t
    yield "n_trials", len(table), 0
    yield "n_failed", int((table.status != "ok").sum()), 0
    if "n_degenerate_labels" in ok and len(ok):
        yield "n_degenerate_labels", ok["n_degenerate_labels"].max(), 0
        yield "n_trials_with_degenerate_labels", int(ok["n_degenerate_labels"].gt(0).sum()), 0
    for column in (c for c in ok.columns if c.startswith("solver_")):  # how far an approximation is
        yield f"{column}_max", ok[column].max(), 0
    for column in (c for c in ok.columns if c.startswith("graph_")):  # e.g. an approximate search's recall
        yield f"{column}_min", ok[column].min(), 0
    if len(ok):
        yield "fit_seconds_mean", ok["fit_seconds"].mean(), 0


def _log_artifacts(
    run_dir: Path, cfg: DictConfig, table: pd.DataFrame, summary: pd.DataFrame, title: str
) -> None:
    run_dir.mkdir(parents=True, exist_ok=True)
    table.to_csv(run_dir / "trials.csv", index=False)
    summary.to_csv(run_dir / "summary.csv")
    (run_dir / "config.yaml").write_text(OmegaConf.to_yaml(cfg, resolve=True))
    names = ["trials.csv", "summary.csv", "config.yaml"]
    import mlflow

    if summary["n_ok"].sum() and len(summary) > 1:  # a curve needs several labelling rates
        fig = plot_metrics_vs_rate({cfg.method.name: summary}, FIG1_METRICS, title=title)
        save_figure(fig, run_dir / "metrics_vs_rate.png")
        names.append("metrics_vs_rate.png")
    rounds = round_curves(table)
    if not rounds.empty:
        rounds.to_csv(run_dir / "rounds.csv")
        save_figure(plot_rounds({cfg.method.name: rounds}, title=title), run_dir / "rounds.png")
        names += ["rounds.csv", "rounds.png"]
    for name in names:
        mlflow.log_artifact(str(run_dir / name))


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
    parallel = multirun and ("joblib" in launcher or "submitit_local" in launcher)
    try:
        with interrupts_raise():  # from the job's first step: none of it may turn a signal into a result
            return run_experiment(
                cfg,
                in_parallel_launcher=parallel,
                output_dir=hc.runtime.output_dir,
                launcher_jobs=concurrent_jobs(hc.launcher) if parallel else None,
                job=JobInfo.from_hydra(hc),
            )
    except Interrupted as exc:
        if multirun:
            with deferred():
                try:
                    close_orphaned_sweep()
                except Exception as err:  # the store may be gone too; the job still ends
                    log.warning("could not close the sweep's parent run: %s", err)
        die_of(exc.signum)


def _optional(check):
    return lambda v: v is None or check(v)


def _one_of(*allowed):
    return lambda v: v in allowed


def _count(v) -> bool:
    return isinstance(v, numbers.Integral) and nonneg(v)


# Keys outside the estimator's own parameters: (check, what is allowed).
_RUN_KEYS = {
    "seed": (_count, "a non-negative integer"),
    "n_jobs": (lambda v: v == "auto" or positive_int(v), "a positive integer or 'auto'"),
    "progress": (_one_of(True, False), "true or false"),
    "resume": (_one_of(True, False), "true or false"),
    "strict": (_one_of(True, False), "true or false"),
    "graph_cache": (
        _optional(lambda v: isinstance(v, str) and not Path(v).is_file()),
        "null or a folder path (not a file)",
    ),
    "tracking.checkpoint_seconds": (nonneg, "a number of seconds >= 0"),
    "metrics.empty_rows": (_one_of("mulan", "exclude"), "mulan or exclude"),
    "metrics.ties": (_one_of("mulan", "max"), "mulan or max"),
    "metrics.zero_division": (_one_of("warn", 0, 1), "warn, 0 or 1"),
    "dataset.n_labels": (_optional(positive_int), "null or a positive integer"),
    "dataset.subsample": (_optional(lambda v: positive(v) and v <= 1), "null or a fraction in (0, 1]"),
    "dataset.cv_train_size": (_optional(positive_int), "null or a positive integer"),
    "graph.kind": (_one_of(*KINDS), " or ".join(KINDS)),
    "graph.k": (positive_int, "a positive integer (neighbours per point)"),
    "graph.b": (_optional(positive_int), "null or a positive integer (the degree of every node)"),
    "graph.eps": (_optional(positive), "null or a positive number"),
    "graph.weights": (_one_of(*WEIGHTS), " or ".join(WEIGHTS)),
    "graph.search": (_one_of(*SEARCHES), " or ".join(SEARCHES)),
}


def check_run_keys(cfg: DictConfig) -> None:
    """Validate the keys of :data:`_RUN_KEYS` that the config has, naming the key, its value
    and what is allowed."""
    absent = object()
    for key, (ok, allowed) in _RUN_KEYS.items():
        value = OmegaConf.select(cfg, key, default=absent, throw_on_missing=False)
        if value is not absent and not ok(value):
            raise ConfigError(f"{key}={value!r} is not valid: it must be {allowed}.")


def check_estimator_params(estimator) -> None:
    """Run each step's declarative parameter checks (``_rules``) once, before any trial, and
    name the failing config key (``method.<param>`` or ``selector.<param>``)."""
    steps = estimator.steps if isinstance(estimator, Pipeline) else [("classify", estimator)]
    groups = {"classify": "method", "select": "selector"}
    for step, est in steps:
        inner = getattr(est, "estimator", None)  # DualSetFromMultiLabel wraps a multi-label method
        for candidate in (est, inner):
            if candidate is None or not hasattr(candidate, "_rules"):
                continue
            try:
                check_params(candidate, candidate._rules)
            except ValueError as exc:
                match = re.search(r"parameter (\w+)=(.*?) must be (.*)$", str(exc))
                if not match:
                    raise ConfigError(f"{groups.get(step, step)}: {exc}") from exc
                name, value, allowed = match.groups()
                raise ConfigError(
                    f"{groups.get(step, step)}.{name}={value} is not valid for "
                    f"{type(candidate).__name__}: it must be {allowed}."
                ) from exc


@dataclass
class Plan:
    """Everything a job needs, built and checked before its MLflow run opens."""

    data: object
    estimator: object
    trials: list
    metrics: list[str]
    parallelism: Parallelism
    evaluation: dict


def _config_error(where: str, exc: BaseException) -> ConfigError:
    if isinstance(exc, OmegaConfBaseException) and "Missing mandatory value" in str(exc):
        key = getattr(exc, "full_key", "") or where
        return ConfigError(f"{key} is required and has no value: give it on the command line, e.g. {key}=...")
    text = str(exc).strip() or type(exc).__name__
    return ConfigError(f"{where}: {text}")


def prepare(cfg: DictConfig, in_parallel_launcher: bool = False, launcher_jobs: int | None = None) -> Plan:
    """Validate every key, load the data, build the trials and check the estimator, raising
    :class:`ConfigError` (one paragraph) on the first problem."""
    check_run_keys(cfg)
    try:
        data = load_from_config(cfg.dataset, cfg.protocol)
    except (ValueError, TypeError, OSError, LookupError, OmegaConfBaseException) as exc:
        raise _config_error(f"dataset={cfg.dataset.get('name', '?')}", exc) from exc
    try:
        protocol = {k: v for k, v in cfg.protocol.items() if k != "normalise"}
        trials = call(protocol, seed=cfg.seed, **protocol_inputs(protocol, data))
    except Exception as exc:  # Hydra's `call` wraps the protocol's own error
        raise _config_error("protocol", exc.__cause__ or exc) from exc
    try:
        estimator = make_estimator(cfg.method, cfg.get("selector"), cfg.protocol.get("normalise", False))
    except Exception as exc:  # Hydra wraps a constructor's error in InstantiationException
        raise _config_error("method", exc.__cause__ or exc) from exc
    if isinstance(data, DualSetDataset) and not isinstance(estimator, DualSetEstimator):
        estimator = DualSetFromMultiLabel(estimator)  # one-hot sets, best label within each
    check_estimator_params(estimator)
    options = cfg.get("metrics") or {}
    evaluation = {
        "empty_rows": options.get("empty_rows", "mulan"),
        "ties": options.get("ties", "mulan"),
        "zero_division": options.get("zero_division", "warn"),
        "diagnostics": True,
    }
    metrics = task_metrics(data)
    if isinstance(data, DualSetDataset):
        evaluation = {}
    parallelism = resolve_parallelism(
        cfg.n_jobs, in_parallel_launcher, n_trials=len(trials), launcher_jobs=launcher_jobs
    )
    return Plan(data, estimator, trials, metrics, parallelism, evaluation)


class Checkpoint:
    """Finished trials, saved as they complete: ``trials_partial.csv`` in the job folder at
    once, and in the MLflow run at most every ``every`` seconds and when the run stops, so that
    an interrupted run resumes where it stopped."""

    NAME = "trials_partial.csv"

    def __init__(self, run_id: str, folder: Path, every: float, done: pd.DataFrame):
        self.run_id, self.folder, self.every = run_id, folder, every
        self.rows = done.to_dict("records")
        self.saved, self.last = len(self.rows), time.monotonic()

    def add(self, row: dict) -> None:
        self.rows.append(row)
        if time.monotonic() - self.last >= self.every:
            self.flush()

    def flush(self) -> None:
        import mlflow

        if len(self.rows) == self.saved:
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        path, tmp = self.folder / self.NAME, self.folder / f".{self.NAME}.tmp"
        pd.DataFrame(self.rows).to_csv(tmp, index=False)
        os.replace(tmp, path)  # a reader never sees half a table
        mlflow.MlflowClient().log_artifact(self.run_id, str(path))
        self.saved, self.last = len(self.rows), time.monotonic()


def finished_trials(run_id: str) -> pd.DataFrame:
    """The successful trials an interrupted run saved (none if it saved nothing)."""
    import mlflow

    with tempfile.TemporaryDirectory(prefix="mlgraph-resume-") as tmp:
        try:
            path = mlflow.MlflowClient().download_artifacts(run_id, Checkpoint.NAME, tmp)
        except Exception:  # no checkpoint was saved before it stopped
            return pd.DataFrame()
        table = pd.read_csv(path, keep_default_na=False, na_values=[""])
    return table[table.status == "ok"].reset_index(drop=True)


def find_previous(experiment_id: str, chash: str):
    """The latest FINISHED run with config hash ``chash``, else the latest unfinished one."""
    import mlflow

    runs = mlflow.MlflowClient().search_runs(
        [experiment_id],
        f"tags.config_hash = '{chash}'",
        order_by=["attributes.start_time DESC"],
        max_results=100,
    )
    finished = [r for r in runs if r.info.status == "FINISHED"]
    return (finished or runs or [None])[0]


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
    run = client.create_run(experiment_id, run_name=name, tags=tags)
    with contextlib.suppress(Exception):  # a missing mandatory value leaves nothing to log
        log_batch(run.info.run_id, params=config_params(cfg))
    client.set_terminated(run.info.run_id, "FAILED")


def run_experiment(
    cfg: DictConfig,
    in_parallel_launcher: bool = False,
    output_dir: str | os.PathLike | None = None,
    job: JobInfo | None = None,
    launcher_jobs: int | None = None,
) -> pd.DataFrame | None:
    """Run every trial of ``cfg`` and track them as one MLflow run; return the summary table.

    Config and data are checked first (:class:`ConfigError`, no run opened, except that a sweep
    job records its failure); the store is opened and the run created while the first trials
    run (a store that cannot be opened stops them). With ``resume=true`` the store is read first:
    a job whose config hash already has a FINISHED run is skipped (returns None), and an
    interrupted one is reopened and runs only the trials it had not finished. A failing trial is
    logged as failed and the others go on; if all fail (or any, with ``strict=true``) the run is
    FAILED and :class:`AllTrialsFailed` is raised. SIGTERM/SIGINT end the run KILLED with its
    finished trials saved.
    """
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
        return None
    done = finished_trials(previous.info.run_id) if previous is not None else pd.DataFrame()
    with interrupts_raise(), _artifact_dir(output_dir) as out:
        return _tracked(cfg, plan, name, job, experiment_id, chash, previous, done, out)


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
    """The trials and their MLflow run, which :func:`open_run` opens (the store too, unless
    ``experiment_id`` is known) once the trials are running; rows finished before are kept
    and checkpointed then."""
    import mlflow

    spent = {"logging": 0.0, "trials": 0.0}  # tracking overhead, reported by `make bench`
    data, parallelism = plan.data, plan.parallelism
    # the tags that identify the job go in with the run, so that even a run killed at once is
    # found and reopened by a resume
    identity = {**job.tags(), "config_hash": chash}
    run: dict = {}  # run_id and checkpoint, once the run exists
    early: list[dict] = []  # rows finished before

    def open_run() -> None:
        started = time.perf_counter()
        experiment = experiment_id or setup_from_config(cfg.tracking)
        opened = (
            dict(run_id=previous.info.run_id)
            if previous is not None
            else dict(experiment_id=experiment, run_name=name, parent_run_id=job.parent_run_id, tags=identity)
        )
        with deferred() as pending:  # a run exists only once it is ours to close
            active = stack.enter_context(mlflow.start_run(**opened))
            run["id"] = active.info.run_id
            run["checkpoint"] = Checkpoint(
                run["id"], out, float(cfg.tracking.get("checkpoint_seconds", 30)), done
            )
        raise_pending(pending)
        tags = {
            **provenance_tags(),
            **identity,
            "method": cfg.method.name,
            "dataset": cfg.dataset.name,
            "selector": cfg.get("selector", {}).get("name", "none"),
            "n_jobs": parallelism.n_jobs,
            "blas_threads": parallelism.blas_threads,
            "dataset_sha256": data.sha256,
            "dataset_source": data.source,
            "dataset_shape": f"{data.n_samples}x{data.n_features}x{getattr(data, 'n_labels', data.Y.shape[1])}",
        }
        if previous is not None:
            tags["resumed_trials"] = str(len(done))
            log.info(
                "%s: resuming run %s, %d of %d trials already done",
                name,
                run["id"],
                len(done),
                len(plan.trials),
            )
        log_batch(run["id"], params=None if previous is not None else config_params(cfg), tags=tags)
        for row in early:
            run["checkpoint"].add(row)
        if len({t.rate for t in plan.trials}) > 1:  # the run's figure: import its library now
            pyplot()
        spent["logging"] += time.perf_counter() - started

    def add_row(row: dict) -> None:
        (run["checkpoint"].add if "checkpoint" in run else early.append)(row)

    with contextlib.ExitStack() as stack:
        try:
            with _timed(spent, "trials"):
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
                    on_start=open_run,
                )
            spent["trials"] -= spent["logging"]  # the run was opened while they ran
            _finish(cfg, plan, table, name, job, run["id"], out, spent)
        except (Interrupted, SystemExit) as exc:  # submitit exits after requeueing a pre-empted job
            if "checkpoint" not in run:  # no run yet: nothing to close
                raise
            why = (
                exc.name if isinstance(exc, Interrupted) else "requeued by SLURM (pre-emption or time limit)"
            )
            with deferred():
                stop_workers()
                run["checkpoint"].flush()
                mlflow.set_tag("interrupted", why)
                mlflow.end_run("KILLED")
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
                raise
            with deferred():
                stop_workers()
                run["checkpoint"].flush()
                mlflow.set_tag("error", f"{type(exc).__name__}: {exc}"[:5000])
                mlflow.end_run("FAILED")
            raise
    return summarise(table, plan.metrics)


def _finish(
    cfg, plan: Plan, table: pd.DataFrame, name: str, job: JobInfo, run_id: str, out: Path, spent: dict
) -> None:
    """Log the run's metrics, tables and figures, say what is degenerate, and fail the run when
    every trial failed, or any with ``strict=true``."""
    import mlflow

    metrics = plan.metrics
    for metric in metrics:  # a metric column exists even if every trial failed
        table[metric] = table.get(metric, float("nan"))
    summary = summarise(table, metrics)
    failed = table[table.status != "ok"]
    notes = _edge_case_notes(table, metrics, cfg)
    with _timed(spent, "logging"):
        log_batch(
            run_id,
            metrics=_metric_rows(summary, table, metrics),
            tags={
                "trials_failed": f"{len(failed)} of {len(table)}",
                **({"notes": " ".join(notes)[:5000]} if notes else {}),
            },
        )
        _log_artifacts(out, cfg, table, summary, title=f"{cfg.method.name} on {plan.data.name}")
    log_batch(run_id, metrics=[(f"{k}_seconds", v, 0) for k, v in spent.items()])
    overrides = f"overrides: {' '.join(job.overrides)}\n" if job.overrides else ""
    log.info(
        "%s: %d trials, MLflow run %s\n%s%s",
        name,
        len(table),
        run_id,
        overrides,
        format_summary(summary, shown_metrics(metrics)),
    )
    for note in notes:
        log.warning("%s", note)
    if len(failed):
        log.warning(
            "%d of %d trials failed (see trials.csv); first error: %s",
            len(failed),
            len(table),
            failed.error.iloc[0],
        )
    if len(failed) == len(table) or (len(failed) and cfg.get("strict", False)):
        mlflow.set_tag("error", failed.error.iloc[0][:5000])
        which = "all" if len(failed) == len(table) else f"{len(failed)} of"
        raise AllTrialsFailed(
            f"{name}: {which} {len(table)} trials failed (run {run_id} is FAILED); "
            f"first error: {failed.error.iloc[0]}"
        )


def _edge_case_notes(table: pd.DataFrame, metrics: list[str], cfg) -> list[str]:
    """Warnings, once per run, for what the numbers hide: labels with one class in a test part,
    undefined ranking metrics, failed trials left out of the averages."""
    ok = table[table.status == "ok"]
    notes = []
    if "n_degenerate_labels" in ok and ok.n_degenerate_labels.gt(0).any():
        hit = ok.n_degenerate_labels.gt(0)
        zero_division = (cfg.get("metrics") or {}).get("zero_division", "warn")
        notes.append(
            f"{int(hit.sum())} of {len(ok)} trials have labels with no positive or no negative "
            f"test instance (up to {int(ok.n_degenerate_labels.max())} labels): their F1 terms are "
            f"undefined and count as metrics.zero_division={zero_division} "
            f"({'0' if zero_division == 'warn' else zero_division}); macro_auc leaves them out."
        )
    for metric in metrics:
        undefined = ok[metric].isna() if metric in ok else pd.Series(dtype=bool)
        if undefined.any():
            notes.append(
                f"{metric} is undefined (NaN) in {int(undefined.sum())} of {len(ok)} trials: their "
                "test parts have no row it can score (e.g. every row with no relevant label, or a "
                "label with a single class)."
            )
    if len(ok) < len(table) and len(ok):
        notes.append(
            f"*_overall metrics cover the {len(ok)} successful trials only and are logged as "
            f"*_overall_ok_only; {len(table) - len(ok)} trials failed."
        )
    return notes
