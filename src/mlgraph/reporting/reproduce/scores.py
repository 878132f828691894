"""Reading a reproduction's runs back from MLflow as scores, and the papers' own material.

Every ``scores_*`` function gives one frame of the same columns (:func:`scores_frame`): the
paper's data set, a group (paper 001's table or B, paper 004's classifier), the method, the
metric, x (a labelling rate or kept fraction in %, a boosting round; NaN for none) and the mean
and standard deviation over repetitions. :func:`paper_table`, :func:`paper_claims` and
:func:`notes` read the transcribed tables, the stated conclusions and the method notes that
ship in ``mlgraph/data/builtin``.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

BUILTIN = Path(__file__).resolve().parents[2] / "data" / "builtin"


def finished_runs(uri: str, experiment: str) -> pd.DataFrame:
    """The latest finished run per configuration of ``experiment`` (empty when it has none)."""
    from mlgraph.reporting.runs import latest_runs

    try:
        return latest_runs(uri, experiment)
    except LookupError:  # no such experiment, or no finished run in it
        return pd.DataFrame(columns=["run_id", "tags.dataset", "tags.method", "tags.selector", "fraction"])


def _artifact(run_id: str, name: str, **read) -> pd.DataFrame | None:
    import mlflow

    try:
        path = mlflow.artifacts.download_artifacts(run_id=run_id, artifact_path=name)
    except Exception:  # the run has no such artifact (a method without rounds, say)
        return None
    return pd.read_csv(path, **read)


def _param(runs: pd.DataFrame, key: str, default=None) -> pd.Series:
    column = f"params.{key}"
    return runs[column] if column in runs else pd.Series(default, index=runs.index, dtype=object)


def paper_dataset(dataset: str, used: Mapping[str, str]) -> str:
    """The paper's name of a data set we ran (``mediamill-small`` → ``mediamill`` where it
    stood in)."""
    return next((paper for paper, ours in used.items() if ours == dataset), dataset)


def scores_000(runs: pd.DataFrame, used: Mapping[str, str]) -> tuple[pd.DataFrame, dict]:
    """Paper 000: the mean and std per labelling rate of every run (x = rate in %), and the
    per-(rate, repetition) trial tables by dataset for the Friedman and post hoc tests."""
    rows, trials = [], {}
    for _, run in runs.iterrows():
        summary = _artifact(run["run_id"], "summary.csv", index_col=0)
        table = _artifact(run["run_id"], "trials.csv")
        if summary is None or table is None:
            continue
        dataset = paper_dataset(run["tags.dataset"], used)
        trials.setdefault(dataset, {})[run["tags.method"]] = table
        for metric in ("avg_precision", "micro_f1", "macro_f1"):
            for _, row in summary.iterrows():
                rows.append(
                    (
                        dataset,
                        "",
                        run["tags.method"],
                        metric,
                        float(row["step"]),
                        row[metric],
                        row[f"{metric}_std"],
                    )
                )
    return scores_frame(rows), trials


def scores_frame(rows) -> pd.DataFrame:
    """Rows of (dataset, group, method, metric, x, mean, std) as a scores frame."""
    return pd.DataFrame(rows, columns=["dataset", "group", "method", "metric", "x", "mean", "std"])


def _dsml_runs(runs: pd.DataFrame) -> pd.DataFrame:
    dsml = runs[runs["tags.method"] == "dsml"].copy()
    dsml["B"] = pd.to_numeric(_param(dsml, "method.B"), errors="coerce").round(2)
    dsml["reuse"] = _param(dsml, "method.model_reuse", "True").astype(str) == "True"
    dsml["adjusting"] = _param(dsml, "method.distribution_adjusting", "True").astype(str) == "True"
    return dsml[dsml["adjusting"] & (pd.to_numeric(_param(dsml, "method.T", 10), errors="coerce") == 10)]


def scores_001(runs: pd.DataFrame) -> tuple[pd.DataFrame, dict]:
    """Paper 001: group ``table2`` (each method; DSML with B = 1.05 and model reuse),
    ``table3`` (DSML by B, methods ``B=1.00`` …) and ``B=<b>`` (DSML with/without reuse after
    each round, x = t); plus the per-fold tables of the Table 2 methods."""
    from mlgraph.reporting.paper_layouts import DUAL_METRICS

    rows, folds = [], {}
    dsml = _dsml_runs(runs)
    table2 = [*(r for _, r in runs[runs["tags.method"] != "dsml"].iterrows())]
    table2 += [r for _, r in dsml[(dsml.B == 1.05) & dsml.reuse].iterrows()]
    for run in table2:
        for metric in DUAL_METRICS:
            rows.append(
                (
                    run["tags.dataset"],
                    "table2",
                    run["tags.method"],
                    metric,
                    np.nan,
                    run[f"metrics.{metric}"],
                    run[f"metrics.{metric}_std"],
                )
            )
        table = _artifact(run["run_id"], "trials.csv")
        if table is not None:
            folds[run["tags.method"]] = table
    for _, run in dsml[dsml.reuse].iterrows():
        for metric in DUAL_METRICS:
            rows.append(
                (
                    run["tags.dataset"],
                    "table3",
                    f"B={run.B:.2f}",
                    metric,
                    np.nan,
                    run[f"metrics.{metric}"],
                    run[f"metrics.{metric}_std"],
                )
            )
    for _, run in dsml.iterrows():
        curve = _artifact(run["run_id"], "rounds.csv", index_col=0)
        if curve is None:
            continue
        for t, row in curve.iterrows():
            for metric in DUAL_METRICS:
                rows.append(
                    (
                        run["tags.dataset"],
                        f"B={run.B:.2f}",
                        "reuse" if run.reuse else "no reuse",
                        metric,
                        float(t),
                        row[metric],
                        row[f"{metric}_std"],
                    )
                )
    return scores_frame(rows), folds


def paper_scores_001() -> pd.DataFrame:
    """The paper's own Frequency-Gender numbers in the same layout (for its claims)."""
    table = paper_table("001")
    table = table[table.dataset == "frequency_gender"]
    rows = []
    for _, row in table.iterrows():
        if row["table"] == 2:
            rows.append((row.dataset, "table2", row.method, row.metric, np.nan, row["mean"], row["std"]))
        else:
            rows.append(
                (row.dataset, "table3", f"B={float(row.B):.2f}", row.metric, np.nan, row["mean"], row["std"])
            )
    return scores_frame(rows)


def scores_tabular(runs: pd.DataFrame, metrics: Sequence[str]) -> pd.DataFrame:
    """Paper 002: one mean and std per (dataset, method, metric); the std is NaN for one split."""
    rows = []
    single = _param(runs, "protocol.repeats").astype(str) == "1"
    for (_, run), one in zip(runs.iterrows(), single, strict=True):
        for metric in metrics:
            mean = run.get(f"metrics.{metric}", np.nan)
            std = np.nan if one else run.get(f"metrics.{metric}_std", np.nan)
            rows.append((run["tags.dataset"], "", run["tags.method"], metric, np.nan, mean, std))
    return scores_frame(rows)


def paper_scores_002() -> pd.DataFrame:
    table = paper_table("002")
    return scores_frame(
        (r.dataset, "", r.method, r.metric, np.nan, r["mean"], r["std"]) for _, r in table.iterrows()
    )


def scores_004(runs: pd.DataFrame, used: Mapping[str, str]) -> pd.DataFrame:
    """Paper 004: each selector (method) per classifier (group) at each kept fraction (x, in %),
    and the all-features run as method ``none`` at every fraction."""
    from mlgraph.evaluation.figures import FS_METRICS

    rows = []
    fractions = sorted(runs.loc[runs["tags.selector"] != "none", "fraction"].unique())
    for _, run in runs.iterrows():
        selector = run["tags.selector"]
        xs = [run["fraction"]] if selector != "none" else fractions
        for x in xs:
            for metric in FS_METRICS:
                rows.append(
                    (
                        paper_dataset(run["tags.dataset"], used),
                        run["tags.method"],
                        selector,
                        metric,
                        round(100 * x),
                        run.get(f"metrics.{metric}", np.nan),
                        run.get(f"metrics.{metric}_std", np.nan),
                    )
                )
    return scores_frame(rows)


# --- The paper's tables and claims
def paper_table(paper_id: str) -> pd.DataFrame:
    """A paper's transcribed table (``data/builtin/paper<id>_tables.csv``), empty if it has none."""
    path = BUILTIN / f"paper{paper_id}_tables.csv"
    return pd.read_csv(path, dtype={"B": str}) if path.exists() else pd.DataFrame()


def _toml(path: Path) -> dict:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib
    with open(path, "rb") as stream:
        return tomllib.load(stream)


def paper_claims(paper_id: str) -> dict:
    """A paper's stated conclusions and how each is checked (``paper<id>_claims.toml``)."""
    return _toml(BUILTIN / f"paper{paper_id}_claims.toml")


@functools.cache
def notes() -> dict:
    """The method notes that explain gaps (``reproduce_notes.toml``), by id."""
    return _toml(BUILTIN / "reproduce_notes.toml")


def cell_notes(paper_id: str, dataset: str, method: str, metric: str) -> list[str]:
    """The ids of the notes about a cell: those of its paper that name its data set, method or
    metric (a field a note does not give matches anything)."""
    method = "dsml" if method.startswith("B=") else method  # paper 001's Table 3: DSML by B
    found = []
    for note_id, note in notes().items():
        if note.get("paper") != paper_id or not any(k in note for k in ("datasets", "methods", "metrics")):
            continue
        if all(
            value in note.get(key, [value])
            for key, value in (("datasets", dataset), ("methods", method), ("metrics", metric))
        ):
            found.append(note_id)
    return found
