"""Comparisons read back from MLflow: the latest finished run of each method, their artifact
tables, the blocks × methods score tables the statistics rank, and Markdown tables."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

from mlgraph.evaluation.figures import PAPER000, PAPER001, PAPER002


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
