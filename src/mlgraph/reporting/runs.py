"""Comparisons read back from MLflow: the latest finished run of each method, their artifact
tables, the long per-repetition score table of :mod:`mlgraph.evaluation.comparison`, the
blocks × methods score tables the statistics rank, and Markdown tables."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import pandas as pd

from mlgraph.evaluation.figures import PAPER000, PAPER001, PAPER002, method_label
from mlgraph.evaluation.protocols import rate_step


def latest_runs(uri: str, experiment: str) -> pd.DataFrame:
    """The latest FINISHED run of each (dataset, method, selector, fraction) of ``experiment``
    (report runs excluded)."""
    import mlflow

    from mlgraph.tracking.store import quiet_artifact_downloads

    quiet_artifact_downloads()
    mlflow.set_tracking_uri(uri)
    runs = mlflow.search_runs(experiment_names=[experiment], filter_string="attributes.status = 'FINISHED'")
    if runs.empty or "tags.method" not in runs:
        raise LookupError(f"no finished run in MLflow experiment {experiment!r} at {uri}")
    runs = runs[runs["tags.method"].notna() & runs["tags.dataset"].notna()].copy()
    runs["tags.selector"] = runs.get("tags.selector", pd.Series(index=runs.index)).fillna("none")
    fraction = runs["params.selector.fraction"] if "params.selector.fraction" in runs else None
    runs["fraction"] = pd.to_numeric(pd.Series(fraction, index=runs.index), errors="coerce").fillna(1.0)
    runs.loc[runs["tags.selector"] == "none", "fraction"] = 1.0
    keys = [
        "tags.dataset",
        "tags.method",
        "tags.selector",
        "fraction",
        *sorted(c for c in runs if c.startswith("params.method.")),
    ]  # a B sweep keeps every B
    runs = runs.sort_values("start_time").groupby(keys, dropna=False).tail(1)
    order = {name: i for i, name in enumerate([*PAPER000, *PAPER002, *PAPER001])}
    runs = runs.assign(_order=runs["tags.method"].map(lambda m: order.get(m, len(order))))
    return runs.sort_values(["tags.dataset", "_order", "tags.method"], ignore_index=True)


def artifact_table(run_id: str, name: str, **read) -> pd.DataFrame:
    """The CSV artifact ``name`` of run ``run_id`` as a table."""
    import mlflow

    return pd.read_csv(mlflow.artifacts.download_artifacts(run_id=run_id, artifact_path=name), **read)


def run_keys(runs: pd.DataFrame) -> pd.Series:
    """The method of each run as the comparison names it: its key (``mlmrrw``), or, where one
    method has several runs on a data set (a parameter sweep), its display name with the
    ``method.*`` parameters that differ (``DSML B=1.05``)."""
    params = [
        c
        for c in runs
        if c.startswith("params.method.") and runs.groupby("tags.method")[c].nunique(dropna=False).max() > 1
    ]
    if not params:
        return runs["tags.method"].astype(str)
    return runs.apply(
        lambda r: " ".join(
            [method_label(r["tags.method"]), *[f"{c.rsplit('.', 1)[1]}={r[c]}" for c in params]]
        ),
        axis=1,
    )


def long_scores(
    runs: pd.DataFrame,
    metrics: Sequence[str],
    read: Callable[[str], pd.DataFrame] | None = None,
) -> pd.DataFrame:
    """The per-repetition scores of ``runs`` (as :func:`latest_runs` returns them) as the long
    table of :mod:`mlgraph.evaluation.comparison`: ``dataset`` is the data set, or
    ``"<data set> <rate> %"`` when the runs label part of the training rows (one block per
    labelling rate, as paper 000 counts its data sets); ``method`` is :func:`run_keys`;
    ``repetition`` is ``"<seed>:<repetition>"`` (splits are drawn from the seed and the
    repetition, so only equal keys pair). Failed trials are left out; a metric a run lacks is
    NaN. ``read(run_id)`` gives a run's ``trials.csv`` (default: from MLflow)."""
    read = read or (lambda run_id: artifact_table(run_id, "trials.csv"))
    seeds = runs.get("params.seed", pd.Series("0", index=runs.index)).fillna("0").astype(str)
    frames = []
    for run_id, dataset, method, seed in zip(
        runs["run_id"], runs["tags.dataset"], run_keys(runs), seeds, strict=True
    ):
        trials = read(run_id)
        trials = trials[trials["status"] == "ok"] if "status" in trials else trials
        frame = pd.DataFrame(
            {
                "dataset": str(dataset),
                "method": method,
                "rate": trials["rate"].astype(float) if "rate" in trials else 1.0,
                "repetition": [f"{seed}:{r}" for r in trials["repetition"]],
            }
        )
        for metric in metrics:
            frame[metric] = (
                pd.to_numeric(trials[metric], errors="coerce") if metric in trials else float("nan")
            )
        frames.append(frame)
    columns = ["dataset", "method", "rate", "repetition", *metrics]
    table = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=columns)
    partial = table.groupby("dataset")["rate"].transform(lambda r: (r != 1.0).any())
    table = table.sort_values(["dataset", "rate"], kind="stable")
    table["dataset"] = [
        f"{d} {rate_step(r)} %" if p else d
        for d, r, p in zip(table["dataset"], table["rate"], partial.loc[table.index], strict=True)
    ]
    return table.drop(columns="rate").reset_index(drop=True)


def score_tables(trials: Mapping[str, pd.DataFrame], metrics: Sequence[str], blocks: str) -> dict:
    """Per metric, a blocks × methods table of scores for the Friedman test: the mean over
    repetitions per labelling rate (``blocks="rates"``, the paper's N = 10 for ten rates) or
    every (rate, repetition) split (``"trials"``; all methods share the splits of a seed)."""
    keys = {"rates": ["rate"], "trials": ["rate", "repetition"]}
    if blocks not in keys:
        raise ValueError(f"report.blocks must be one of {sorted(keys)}, got {blocks!r}")
    tables = {}
    for metric in metrics:
        columns = {
            label: t[t.status == "ok"].groupby(keys[blocks])[metric].mean() for label, t in trials.items()
        }
        # a method without scores has no ranking metric at all: ranked on the others only
        columns = {label: c for label, c in columns.items() if c.notna().any()}
        tables[metric] = pd.DataFrame(columns).dropna()  # blocks every method completed
    return tables


def markdown(table: pd.DataFrame, floatfmt: str = "{:.4f}") -> str:
    """A pipe table (index included) for report.md."""

    def cell(v):
        if isinstance(v, float) and v != 0 and abs(v) < 1e-3:
            return f"{v:.2e}"  # p-values
        return floatfmt.format(v) if isinstance(v, float) else str(v)

    header = [str(table.index.name or "")] + [str(c) for c in table.columns]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += [
        "| " + " | ".join([str(i)] + [cell(v) for v in row]) + " |"
        for i, row in zip(table.index, table.itertuples(index=False), strict=True)
    ]
    return "\n".join(lines)
