"""The task behind ``python -m run``: one config in, one tracked MLflow run out.

Data flows one way: dataset → protocol (trials) → method (fit/score per trial, in parallel)
→ metrics → tracking and report. Everything is a plain function of the composed config, so
tests call :func:`run_experiment` without Hydra.
"""

from __future__ import annotations

import contextlib
import inspect
import logging
import os
import tempfile
import time
from pathlib import Path

import mlflow
import pandas as pd
from hydra.utils import call, get_method, instantiate
from omegaconf import DictConfig, OmegaConf
from sklearn.pipeline import Pipeline

from mlgraph.data import load_dataset
from mlgraph.data.dual_set import DualSetDataset
from mlgraph.methods.dual_set import DualSetEstimator, DualSetFromMultiLabel
from mlgraph.metrics import DUAL_SET_METRICS, METRICS
from mlgraph.report import FIG1_METRICS, format_summary, plot_metrics_vs_rate, plot_rounds, save_figure
from mlgraph.runner import resolve_parallelism, run_trials, summarise
from mlgraph.selection import Standardise
from mlgraph.tracking import config_params, log_batch, provenance_tags, setup_from_config

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


class AllTrialsFailed(RuntimeError):
    """Every trial of a job failed: the job fails, with the first error."""


def load_from_config(dataset: DictConfig):
    """Load the dataset a ``dataset`` config group describes (protocol keys excluded): a MULAN
    multi-label dataset, or, with a ``_target_`` loader, any other kind (dual-set data)."""
    fields = OmegaConf.to_container(dataset, resolve=True, throw_on_missing=True)
    for protocol_key in ("subsample", "cv_train_size"):
        fields.pop(protocol_key, None)
    if "_target_" in fields:  # the config's `name` labels runs; a loader may or may not take it
        loader = get_method(fields["_target_"])
        if "name" not in inspect.signature(loader).parameters:
            fields.pop("name", None)
        return instantiate(fields)
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
    long = ok[columns].melt(var_name="key").assign(
        metric=lambda d: d.key.str.split("@").str[0], round=lambda d: d.key.str.split("@").str[1].astype(int))
    stats = long.groupby(["round", "metric"]).value.agg(["mean", "std"]).unstack("metric")
    stats.columns = [m if s == "mean" else f"{m}_std" for s, m in stats.columns]
    return stats


def _metric_rows(summary: pd.DataFrame, table: pd.DataFrame, metrics: list[str]):
    """(key, value, step): per rate with step = rate in %, plus scalars over all trials."""
    for rate, row in summary.iterrows():
        for metric in metrics:
            if pd.notna(row[metric]):
                yield metric, row[metric], row["step"]
                yield f"{metric}_std", row[f"{metric}_std"], row["step"]
    ok = table[table.status == "ok"]
    for metric in metrics:
        if ok[metric].notna().any():
            yield f"{metric}_overall", ok[metric].mean(), 0
    if len(summary) == 1:  # cross-validation and halves: each fold or split, step = its number
        for repetition, values in zip(ok["repetition"], ok[metrics].itertuples(index=False)):
            for metric, value in zip(metrics, values):
                if pd.notna(value):
                    yield f"{metric}_fold", value, repetition
    for t, row in round_curves(table).iterrows():  # paper 001, Fig. 3: step = boosting round
        for metric in metrics:
            if metric in row and pd.notna(row[metric]):
                yield f"round_{metric}", row[metric], t
    yield "n_trials", len(table), 0
    yield "n_failed", int((table.status != "ok").sum()), 0
    if len(ok):
        yield "fit_seconds_mean", ok["fit_seconds"].mean(), 0


def _log_artifacts(run_dir: Path, cfg: DictConfig, table: pd.DataFrame, summary: pd.DataFrame,
                   title: str) -> None:
    run_dir.mkdir(parents=True, exist_ok=True)
    table.to_csv(run_dir / "trials.csv", index=False)
    summary.to_csv(run_dir / "summary.csv")
    (run_dir / "config.yaml").write_text(OmegaConf.to_yaml(cfg, resolve=True))
    names = ["trials.csv", "summary.csv", "config.yaml"]
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


def run_from_hydra(cfg: DictConfig) -> pd.DataFrame:
    """The body of every Hydra entry point (``python -m run``, ``mlgraph run``): reads the
    launcher and job folder from Hydra's runtime config and calls :func:`run_experiment`."""
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    hc = HydraConfig.get()
    parallel = hc.mode == RunMode.MULTIRUN and "joblib" in hc.runtime.choices.get("hydra/launcher", "")
    return run_experiment(cfg, in_parallel_launcher=parallel, output_dir=hc.runtime.output_dir)


def run_experiment(cfg: DictConfig, in_parallel_launcher: bool = False,
                   output_dir: str | os.PathLike | None = None) -> pd.DataFrame:
    """Run every trial of ``cfg`` and track them as one MLflow run; return the summary table.

    A failing trial is logged as failed and the others go on; if all fail, the run is marked
    FAILED and :class:`AllTrialsFailed` is raised. Errors before the trials (bad data, bad
    config) also mark the run FAILED, keeping what was already logged.
    """
    parallelism = resolve_parallelism(cfg.n_jobs, in_parallel_launcher)
    experiment_id = setup_from_config(cfg.tracking)
    selector = cfg.get("selector", {}).get("name", "none")
    run_name = f"{cfg.method.name}-{cfg.dataset.name}" + (f"-{selector}" if selector != "none" else "")
    spent = {"logging": 0.0, "trials": 0.0}  # tracking overhead, reported by `make bench`
    with mlflow.start_run(experiment_id=experiment_id, run_name=run_name) as run:
        run_id = run.info.run_id
        try:
            with _timed(spent, "logging"):
                log_batch(run_id, params=config_params(cfg),
                          tags={**provenance_tags(), "method": cfg.method.name, "dataset": cfg.dataset.name,
                                "selector": selector,
                                "n_jobs": parallelism.n_jobs, "blas_threads": parallelism.blas_threads})
            data = load_from_config(cfg.dataset)
            with _timed(spent, "logging"):
                log_batch(run_id, tags={"dataset_sha256": data.sha256, "dataset_source": data.source,
                                        "dataset_shape": f"{data.n_samples}x{data.n_features}x"
                                                         f"{getattr(data, 'n_labels', data.Y.shape[1])}"})
            protocol = {k: v for k, v in cfg.protocol.items() if k != "normalise"}
            estimator = make_estimator(cfg.method, cfg.get("selector"), cfg.protocol.get("normalise", False))
            if isinstance(data, DualSetDataset) and not isinstance(estimator, DualSetEstimator):
                estimator = DualSetFromMultiLabel(estimator)  # one-hot sets, best label within each
            trials = call(protocol, n_samples=data.n_samples, seed=cfg.seed)
            metrics = task_metrics(data)
            with _timed(spent, "trials"):
                table = run_trials(estimator, data.X, data.Y, trials, metrics, parallelism,
                                   progress=cfg.get("progress", True), description=run_name)
        except Exception as exc:
            mlflow.set_tag("error", f"{type(exc).__name__}: {exc}"[:5000])
            raise
        for metric in metrics:  # a metric column exists even if every trial failed
            table[metric] = table.get(metric, float("nan"))
        summary = summarise(table, metrics)
        failed = table[table.status != "ok"]
        with _timed(spent, "logging"), _artifact_dir(output_dir) as out:
            log_batch(run_id, metrics=_metric_rows(summary, table, metrics),
                      tags={"trials_failed": f"{len(failed)} of {len(table)}"})
            _log_artifacts(out, cfg, table, summary, title=f"{cfg.method.name} on {data.name}")
        log_batch(run_id, metrics=[(f"{k}_seconds", v, 0) for k, v in spent.items()])
        print(f"\n{run_name}: {len(trials)} trials, MLflow run {run_id}\n{format_summary(summary, shown_metrics(metrics))}")
        if len(failed):
            log.warning("%d of %d trials failed (see trials.csv); first error: %s", len(failed),
                        len(table), failed.error.iloc[0])
        if len(failed) == len(table):
            mlflow.set_tag("error", failed.error.iloc[0][:5000])
            raise AllTrialsFailed(f"all {len(table)} trials failed; first error: {failed.error.iloc[0]}")
    return summary
