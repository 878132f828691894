"""A job's results once its trials are done (:func:`finish`): the summary on the console, the
MLflow metrics (their keys below), the tables and figures as artifacts, notes on what the
numbers hide (degenerate labels, undefined metrics, failed trials), the model when asked for,
and :class:`AllTrialsFailed` when the run fails."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import pandas as pd
from hydra.errors import CompactHydraException
from omegaconf import DictConfig, OmegaConf

from mlgraph.engine.jobs import JobInfo
from mlgraph.engine.lineage import log_model
from mlgraph.engine.plan import Plan
from mlgraph.engine.runner import summarise, unavailable_scores_note
from mlgraph.engine.tuning import log_choices
from mlgraph.evaluation.figures import (
    FIG1_METRICS,
    format_summary,
    plot_metrics_vs_rate,
    plot_rounds,
    save_figure,
)
from mlgraph.tracking.process import tracked
from mlgraph.tracking.store import log_artifacts, log_batch, set_tags

log = logging.getLogger("mlgraph.engine.experiment")  # a job's messages under one name, the task's


class AllTrialsFailed(CompactHydraException, RuntimeError):
    """Every trial of a job failed (or, with ``strict=true``, any): the run is FAILED."""


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


# MLflow metric keys. A run's summary numbers (``<metric>_overall``, ``n_trials``, ``n_failed``)
# and its per-rate series sit at the top level: each metric ``<metric>`` and ``<metric>_std``
# once per labelling rate, step = the rate in percent (100: all labelled), the keys every
# comparison reads. The other series are grouped under what their step means, so that the UI's
# "Step" axis is explained by the section's name.
PER_FOLD = "per_fold/"  # cross-validation folds and random splits, step = fold (split) number
PER_ROUND = "per_round/"  # paper 001, Fig. 3: step = boosting round t
DIAGNOSTICS = "run/"  # degenerate labels, approximate solvers, time spent (after per_* in the UI)


def _metric_rows(summary: pd.DataFrame, table: pd.DataFrame, metrics: list[str]):
    """(key, value, step): the summary over all trials, then the series by prefix (above)."""
    ok = table[table.status == "ok"]
    overall = "_overall" if len(ok) == len(table) else "_overall_ok_only"  # says it skips failures
    for metric in metrics:
        if ok[metric].notna().any():
            yield f"{metric}{overall}", ok[metric].mean(), 0
    yield "n_trials", len(table), 0
    yield "n_failed", int((table.status != "ok").sum()), 0
    for _, row in summary.iterrows():
        for metric in metrics:
            if pd.notna(row[metric]):
                yield metric, row[metric], row["step"]
                yield f"{metric}_std", row[f"{metric}_std"], row["step"]
    if len(summary) == 1:  # cross-validation and halves: each fold or split, step = its number
        for repetition, values in zip(ok["repetition"], ok[metrics].itertuples(index=False), strict=True):
            for metric, value in zip(metrics, values, strict=True):
                if pd.notna(value):
                    yield f"{PER_FOLD}{metric}", value, repetition
    for t, row in round_curves(table).iterrows():  # paper 001, Fig. 3: step = boosting round
        for metric in metrics:
            if metric in row and pd.notna(row[metric]):
                yield f"{PER_ROUND}{metric}", row[metric], t
    if "n_degenerate_labels" in ok and len(ok):
        yield f"{DIAGNOSTICS}n_degenerate_labels", ok["n_degenerate_labels"].max(), 0
        yield f"{DIAGNOSTICS}n_trials_with_degenerate_labels", int(ok["n_degenerate_labels"].gt(0).sum()), 0
    for column in (c for c in ok.columns if c.startswith("solver_")):  # how far an approximation is
        yield f"{DIAGNOSTICS}{column}_max", ok[column].max(), 0
    for column in (c for c in ok.columns if c.startswith("graph_")):  # e.g. an approximate search's recall
        yield f"{DIAGNOSTICS}{column}_min", ok[column].min(), 0
    if len(ok):
        yield f"{DIAGNOSTICS}fit_seconds_mean", ok["fit_seconds"].mean(), 0


def _log_artifacts(
    run_dir: Path, cfg: DictConfig, table: pd.DataFrame, summary: pd.DataFrame, title: str
) -> None:
    run_dir.mkdir(parents=True, exist_ok=True)
    table.to_csv(run_dir / "trials.csv", index=False)
    summary.to_csv(run_dir / "summary.csv")
    (run_dir / "config.yaml").write_text(OmegaConf.to_yaml(cfg, resolve=True))
    paths = [run_dir / "trials.csv", run_dir / "summary.csv", run_dir / "config.yaml"]
    if summary["n_ok"].sum() and len(summary) > 1:  # a curve needs several labelling rates
        fig = plot_metrics_vs_rate({cfg.method.name: summary}, FIG1_METRICS, title=title)
        paths += save_figure(fig, run_dir / "metrics_vs_rate.png")
    rounds = round_curves(table)
    if not rounds.empty:
        rounds.to_csv(run_dir / "rounds.csv")
        paths += [
            run_dir / "rounds.csv",
            *save_figure(plot_rounds({cfg.method.name: rounds}, title=title), run_dir / "rounds.png"),
        ]
    tuned_files, tuned_tags = log_choices(table, run_dir, title=f"values chosen by tuning=inner: {title}")
    tracked(log_artifacts, [str(p) for p in paths + tuned_files], tuned_tags)


def finish(
    cfg: DictConfig,
    plan: Plan,
    table: pd.DataFrame,
    name: str,
    job: JobInfo,
    run_id: str,
    out: Path,
    spent: dict,
) -> None:
    """Log the run's metrics, tables and figures (and model), say what is degenerate, and fail
    the run when every trial failed, or any with ``strict=true``; ``spent`` holds the seconds of
    the trials and of tracking so far, logged as ``run/<key>_seconds`` with this step's."""
    metrics = plan.metrics
    for metric in metrics:  # a metric column exists even if every trial failed
        table[metric] = table.get(metric, float("nan"))
    summary = summarise(table, metrics)
    failed = table[table.status != "ok"]
    notes = _edge_case_notes(table, metrics, cfg)
    started = time.perf_counter()  # tracking overhead, beside the trials' time
    tracked(
        log_batch,
        run_id,
        metrics=list(_metric_rows(summary, table, metrics)),
        tags={
            "trials_failed": f"{len(failed)} of {len(table)}",
            **({"notes": " ".join(notes)[:5000]} if notes else {}),
        },
    )
    _log_artifacts(out, cfg, table, summary, title=f"{cfg.method.name} on {plan.data.name}")
    if cfg.tracking.get("log_model", False) and len(failed) < len(table):
        try:
            log_model(plan)
        except Exception as exc:  # the run's results stand; say why there is no model
            log.warning("%s: the model could not be logged: %s: %s", name, type(exc).__name__, exc)
            tracked(set_tags, {"log_model_error": f"{type(exc).__name__}: {exc}"[:5000]})
    spent["logging"] += time.perf_counter() - started
    tracked(log_batch, run_id, metrics=[(f"{DIAGNOSTICS}{k}_seconds", v, 0) for k, v in spent.items()])
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
        tracked(set_tags, {"error": failed.error.iloc[0][:5000]})
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
        options = cfg.get("metrics") or {}
        zero_division = options.get("zero_division", "warn")
        auc = options.get("auc_single_class", "skip")
        notes.append(
            f"{int(hit.sum())} of {len(ok)} trials have labels with no positive or no negative "
            f"test instance (up to {int(ok.n_degenerate_labels.max())} labels): their F1 terms are "
            f"undefined and count as metrics.zero_division={zero_division} "
            f"({'0' if zero_division == 'warn' else zero_division}); macro_auc "
            + (
                "leaves them out (metrics.auc_single_class=skip; MULAN's is NaN)."
                if auc == "skip"
                else "is NaN (metrics.auc_single_class=nan, MULAN's rule)."
            )
        )
    unavailable = unavailable_scores_note(ok, metrics)
    notes += [unavailable] if unavailable else []
    scored = ok[ok.scores_from != "none"] if "scores_from" in ok else ok  # NaN by absence is said above
    for metric in metrics:
        undefined = scored[metric].isna() if metric in scored else pd.Series(dtype=bool)
        if undefined.any():
            notes.append(
                f"{metric} is undefined (NaN) in {int(undefined.sum())} of {len(scored)} trials: their "
                "test parts have no row it can score (e.g. every row with no relevant label, or a "
                "label with a single class)."
            )
    if len(ok) < len(table) and len(ok):
        notes.append(
            f"*_overall metrics cover the {len(ok)} successful trials only and are logged as "
            f"*_overall_ok_only; {len(table) - len(ok)} trials failed."
        )
    return notes
