"""The per-paper sections of ``mlgraph report``, below its tables of means and verdicts
(:mod:`mlgraph.reporting.report` chooses one by the runs): paper 000's figures, Friedman tables,
rank-sum differences and CD diagrams per data set; paper 002's Tables 2/3 beside the paper's
numbers; paper 004's feature-fraction curves; paper 001's dual-set accuracy tables."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from mlgraph.evaluation.comparison import higher_is_better
from mlgraph.evaluation.figures import (
    FS_METRICS,
    PAPER002,
    TITLES,
    cd_figure,
    method_label,
    plot_fraction_curves,
    plot_metrics_vs_rate,
    plot_rounds,
    save_figure,
)
from mlgraph.evaluation.metrics import METRICS
from mlgraph.reporting.runs import artifact_table, markdown, score_tables

PAPER001_CSV = Path(__file__).resolve().parents[1] / "data" / "builtin" / "paper001_tables.csv"


def paper001_value(dataset: str, metric: str, method: str | None = None, B: float | None = None):
    """Paper 001's mean of ``metric`` on ``dataset``: Table 2 for ``method``, or Table 3 (DSML,
    T = 10) for ``B``; None where the paper prints N/A or has no such cell."""
    table = pd.read_csv(PAPER001_CSV, dtype={"B": str})
    table = table[(table.dataset == dataset) & (table.metric == metric)]
    if B is not None:
        hit = table[(table["table"] == 3) & (pd.to_numeric(table.B).round(2) == round(B, 2))]
    else:
        hit = table[(table["table"] == 2) & (table.method == method)]
    return float(hit["mean"].iloc[0]) if len(hit) else None


DUAL_METRICS = ("accuracy_a", "accuracy_b", "accuracy_all")


def explained_friedman(table: pd.DataFrame) -> pd.DataFrame:
    """:func:`mlgraph.evaluation.stats.friedman_table` with each undefined number replaced by
    why it is undefined (one block; every block ranking the methods alike; all ties)."""
    shown = table.astype(object)
    for metric, row in table.iterrows():
        if row["N"] < 2:
            why = "undefined: 1 block"
        else:
            why = "diverges: every block ranks the methods in the same order"
        for column in ("F_F", "F_critical", "F_p_value", "reject_H0_iman_davenport"):
            value = row[column]
            if value is None or (isinstance(value, float) and math.isnan(value)):
                shown.loc[metric, column] = why if column != "F_critical" or row["N"] < 2 else value
        if isinstance(row["F_R_tie_corrected"], float) and math.isnan(row["F_R_tie_corrected"]):
            shown.loc[metric, "F_R_tie_corrected"] = "undefined: every block is a complete tie"
    return shown


def posthoc_verdicts(tables: dict[str, pd.DataFrame], reference: str, alpha: float) -> pd.DataFrame:
    """Paper 000's Table 3 with names: per method (rows) and metric (columns) the rank-sum
    difference D = R(reference) − R(method) and what it says against Eq. 26's critical
    difference (real N), then the CD rows (real N, and the paper's N = 1)."""
    from mlgraph.evaluation import stats

    words = {stats.VERDICT_BETTER: f"{reference} better", stats.VERDICT_WORSE: f"{reference} worse"}
    columns = {}
    for metric, table in tables.items():
        if reference not in table.columns or table.shape[1] < 2:
            continue
        diffs = stats.rank_sum_differences(table, reference, alpha, higher_is_better(metric))
        column = {
            method: f"{row['D']:+.1f}: {words.get(row['verdict'], row['verdict'])}"
            for method, row in diffs.iterrows()
        }
        column[f"CD (N={len(table)})"] = f"{diffs['CD'].iloc[0]:.2f}"
        column["CD (paper, N=1)"] = f"{diffs['CD_paper_N1'].iloc[0]:.2f}"
        columns[metric] = pd.Series(column)
    shown = pd.DataFrame(columns).fillna("—")
    shown.index.name = "method"
    return shown


def dataset_report(
    dataset: str, runs: pd.DataFrame, cfg, out: Path, reference: str | None = None
) -> list[str]:
    """Figure, Friedman table, rank-sum differences and CD diagrams of one dataset; returns the
    markdown section. ``reference`` (a method key) defaults to ``cfg.reference``."""

    from mlgraph.evaluation import stats

    out.mkdir(parents=True, exist_ok=True)
    summaries, trials = {}, {}
    for run_id, method in zip(runs.run_id, runs["tags.method"], strict=True):
        summaries[method_label(method)] = artifact_table(run_id, "summary.csv", index_col=0)
        trials[method_label(method)] = artifact_table(run_id, "trials.csv")
    metrics = list(cfg.metrics)
    fig = plot_metrics_vs_rate(summaries, metrics, title=f"{len(summaries)} methods on {dataset}")
    save_figure(fig, out / "metrics_vs_rate.png")
    means = pd.concat({label: s.set_index("step")[metrics] for label, s in summaries.items()}, axis=1)
    means.to_csv(out / "means.csv")
    section = [f"## {dataset}", "", f"![metrics vs rate]({dataset}/metrics_vs_rate.png)", ""]
    tables = score_tables(trials, metrics, cfg.blocks)
    for metric, table in tables.items():
        unranked = [label for label in trials if label not in table.columns]
        if unranked:
            section += [f"{', '.join(unranked)}: no {metric} (no scores), left out of its ranking.", ""]
    reference = method_label(reference or cfg.reference)
    friedman = explained_friedman(stats.friedman_table(tables, alpha=cfg.alpha))
    friedman.to_csv(out / "friedman.csv")
    section += [
        f"Friedman test over blocks = {cfg.blocks} (Eq. 25; α = {cfg.alpha}); F_F is "
        "Iman–Davenport's correction, p-values are upper tails",
        "",
        markdown(friedman),
        "",
    ]
    if reference in summaries and len(summaries) > 1:
        posthoc = posthoc_verdicts(tables, reference, cfg.alpha)
        posthoc.to_csv(out / "posthoc.csv")
        section += [
            f"Rank-sum differences D = R({reference}) − R(method), negative when {reference} "
            "ranks better, against the critical difference of Eq. 26 (real N; the paper's printed "
            "CD uses N = 1)",
            "",
            markdown(posthoc),
            "",
        ]
    for metric, table in tables.items():
        if table.shape[1] > 2 and len(table) > 1:
            save_figure(
                cd_figure(table, cfg.alpha, f"{dataset}: {TITLES.get(metric, metric)}"),
                out / f"cd_{metric}.png",
            )
            section += [f"![CD diagram {metric}]({dataset}/cd_{metric}.png)"]
    return section + [""]


def fraction_report(dataset: str, runs: pd.DataFrame, out: Path) -> list[str]:
    """Curves and the table (metric per selector and fraction) of one dataset's feature sweep."""
    out.mkdir(parents=True, exist_ok=True)
    save_figure(
        plot_fraction_curves(runs, title=f"Feature selection on {dataset}"), out / "fraction_curves.png"
    )
    table = runs.pivot_table(
        index=["tags.method", "fraction"],
        columns="tags.selector",
        values=[f"metrics.{m}" for m in FS_METRICS],
    )
    table.columns = [f"{metric.removeprefix('metrics.')}[{sel}]" for metric, sel in table.columns]
    table.to_csv(out / "fraction_table.csv")
    section = [f"## {dataset}", "", f"![fraction curves]({dataset}/fraction_curves.png)", ""]
    for metric in FS_METRICS:
        wide = runs[runs["tags.selector"] != "none"].pivot_table(
            index=["tags.method", "fraction"], columns="tags.selector", values=f"metrics.{metric}"
        )
        wide.index = [f"{m} {100 * f:.0f}%" for m, f in wide.index]
        for method, value in runs.loc[
            runs["tags.selector"] == "none", ["tags.method", f"metrics.{metric}"]
        ].values:
            wide.loc[f"{method} all"] = value
        section += [f"{TITLES.get(metric, metric)} (mean over folds)", "", markdown(wide), ""]
    return section


# --- Paper 002, Tables 2/3: one number per (method, dataset), the paper's beside it ----------

TABLE_METRICS = ("hamming_loss", "one_error", "coverage_norm", "ranking_loss", "avg_precision", "macro_auc")
PAPER002_CSV = Path(__file__).resolve().parents[1] / "data" / "builtin" / "paper002_tables.csv"
# The CSV uses our dataset names; the paper's where they differ. Data sets we lack keep the paper's.
PAPER002_NAMES = {
    "cal500": "CAL500",
    "langlog": "llog",
    "rcv1subset1-500": "rcv1-s1",
    "tmc2007-500": "tmc2007",
}
# Columns of Table 2 (regular-scale) then Table 3 (large-scale); datasets not in the paper follow.
PAPER002_DATASETS = (
    "cal500",
    "langlog",
    "enron",
    "image",
    "scene",
    "yeast",
    "slashdot",
    "corel5k",
    "rcv1subset1-500",
    "rcv1-s2",
    "bibtex",
    "corel16k-s1",
    "corel16k-s2",
    "tmc2007-500",
)
# Is our copy the paper's data set? Table 1 of the paper (n × d × q, LCard, distinct label sets)
# against shared/datasets/MANIFEST.tsv. The numbers are only comparable where this says yes.
COMPARABLE = {
    "cal500": ("yes", "502 × 68 × 174, LCard 26.044, 502 label sets, as in Table 1"),
    "langlog": (
        "yes",
        "1460 × 1004 × 75, LCard 1.180 as in Table 1; but 304 distinct label sets here, 286 in Table 1",
    ),
    "enron": ("yes", "1702 × 1001 × 53, LCard 3.378, 753 label sets, as in Table 1"),
    "image": ("no", "not available here"),
    "scene": ("yes", "2407 × 294 × 6, LCard 1.074, 15 label sets, as in Table 1"),
    "yeast": ("yes", "2417 × 103 × 14, LCard 4.237, 198 label sets, as in Table 1"),
    "slashdot": ("yes", "3782 × 1079 × 22, LCard 1.181, 156 label sets, as in Table 1"),
    "corel5k": ("yes", "5000 × 499 × 374, LCard 3.522, 3175 label sets, as in Table 1"),
    "rcv1subset1-500": (
        "unclear",
        "the paper's rcv1-s1: the same 6000 instances and 101 labels (LCard "
        "2.880, 1028 label sets) but 500 word features here, 944 in Table 1",
    ),
    "rcv1-s2": ("no", "not available here"),
    "bibtex": ("yes", "7395 × 1836 × 159, LCard 2.402, 2856 label sets, as in Table 1"),
    "corel16k-s1": ("no", "not available here"),
    "corel16k-s2": ("no", "not available here"),
    "tmc2007-500": (
        "unclear",
        "the paper's tmc2007: the same 22 labels (LCard 2.158, 1341 label sets) on "
        "28,596 instances (Table 1 prints 28,696) but 500 features here, 981 in "
        "Table 1 (not the full 49,060 either)",
    ),
}


def paper002_tables(path: Path = PAPER002_CSV) -> pd.DataFrame:
    """Paper 002's Tables 2/3 (mean ± std over ten 50/50 splits) as transcribed, one row per
    (dataset, method, metric), in our names."""
    return pd.read_csv(path, dtype={"mean": float, "std": float})


def _rates(value) -> list[float] | None:
    try:
        return [float(rate) for rate in json.loads(value)]
    except (TypeError, ValueError):
        return None


def fully_supervised(runs: pd.DataFrame) -> bool:
    """Whether every run labels all its training points: the single labelling rate 1.0 (param
    ``protocol.rates`` "[1.0]", the halves protocol, one MLflow step 100) or cross-validation
    (no rates). Such runs have one number per metric, so they are tabulated (paper 002, Tables
    2/3): curves against the rate and Friedman tests over rates would have a single point."""
    blank = pd.Series(None, index=runs.index, dtype=object)
    rates = runs.get("params.protocol.rates", blank)
    target = runs.get("params.protocol._target_", blank).fillna("").astype(str)
    each = [
        _rates(r) == [1.0] if pd.notna(r) else t.endswith("cross_validation_trials")
        for r, t in zip(rates, target, strict=True)
    ]
    return bool(each) and all(each)


def _ordered(names, first: Sequence[str]) -> list[str]:
    names = set(names)
    return [n for n in first if n in names] + sorted(names - set(first))


def metric_table(runs: pd.DataFrame, paper: pd.DataFrame, metric: str) -> pd.DataFrame:
    """One row per (method, dataset): our mean and std (NaN for a single repetition), the
    paper's, the gap (ours − paper) and ``best``: ours is the best on that dataset at the 3
    printed decimals (ties all best, as the paper's bold), lower or higher as
    ``METRICS[metric].greater_is_better`` says."""
    nan = pd.Series(float("nan"), index=runs.index)
    single = runs.get("params.protocol.repeats", nan).astype(str) == "1"  # a std over one split is no spread
    table = pd.DataFrame(
        {
            "method": runs["tags.method"],
            "dataset": runs["tags.dataset"],
            "mean": runs.get(f"metrics.{metric}", nan),
            "std": runs.get(f"metrics.{metric}_std", nan).mask(single),
        }
    ).reset_index(drop=True)
    theirs = paper.loc[paper.metric == metric, ["method", "dataset", "mean", "std"]]
    table = table.merge(
        theirs.rename(columns={"mean": "paper_mean", "std": "paper_std"}),
        on=["method", "dataset"],
        how="left",
    )
    table["gap"] = table["mean"] - table["paper_mean"]
    printed = table["mean"].map(lambda v: float(f"{v:.3f}"))
    best = printed.groupby(table["dataset"]).transform("max" if METRICS[metric].greater_is_better else "min")
    table["best"] = printed == best  # NaN never equals
    return table


def _cell(row) -> str:
    ours = (
        "—"
        if pd.isna(row["mean"])
        else f"{row['mean']:.3f}" + ("" if pd.isna(row["std"]) else f" ± {row['std']:.3f}")
    )
    paper = "—" if pd.isna(row["paper_mean"]) else f"{row['paper_mean']:.3f}"
    return f"**{ours}** (paper {paper})" if row["best"] else f"{ours} (paper {paper})"


def table_layout(table: pd.DataFrame, values: pd.Series) -> pd.DataFrame:
    """Paper 002's layout of ``values`` (aligned with ``table``): rows = methods in the paper's
    order (display names), columns = datasets as in Tables 2 then 3; "—" where nothing is."""
    wide = table.assign(value=values).pivot(index="method", columns="dataset", values="value")
    wide = wide.reindex(
        index=_ordered(table["method"], list(PAPER002)), columns=_ordered(table["dataset"], PAPER002_DATASETS)
    ).fillna("—")
    wide.index = pd.Index([method_label(m) for m in wide.index], name="method")
    wide.columns.name = None
    return wide


def comparability_notes(datasets: Sequence[str]) -> list[str]:
    """Which of our datasets are the paper's (see ``COMPARABLE``), and the paper's we lack."""
    lines = []
    for dataset in _ordered(datasets, PAPER002_DATASETS):
        verdict, why = COMPARABLE.get(dataset, ("no", "not in paper 002"))
        name = f"{dataset} (paper: {PAPER002_NAMES[dataset]})" if dataset in PAPER002_NAMES else dataset
        lines.append(f"- {name}: comparable {verdict}: {why}")
    missing = [d for d in PAPER002_DATASETS if d not in set(datasets)]
    if missing:
        lines.append(f"- paper datasets without a run here: {', '.join(missing)}")
    return lines


def _protocol_note(runs: pd.DataFrame) -> str:
    """The protocol settings of the runs, naming the datasets of each value when they differ."""
    parts = []
    for key in ("test_size", "repeats"):
        column = f"params.protocol.{key}"
        if column not in runs:
            continue
        groups = runs.dropna(subset=[column]).groupby(column)["tags.dataset"].unique()
        if len(groups) == 1:
            parts.append(f"{key} {groups.index[0]}")
        else:
            parts.append(
                f"{key} "
                + ", ".join(f"{value} ({', '.join(sorted(names))})" for value, names in groups.items())
            )
    return f"Protocol of these runs: {'; '.join(parts) or 'unknown'}. The paper's: test_size 0.5, repeats 10."


def table_report(runs: pd.DataFrame, out: Path) -> list[str]:
    """Paper 002, Tables 2/3 from fully supervised runs: per metric, methods × datasets of
    ``mean ± std`` over repetitions, the best per dataset in bold and the paper's mean beside
    each cell, plus the gap ours − paper for average precision. Writes ``table_<metric>.csv``
    (tidy: see :func:`metric_table`) and ``gap_avg_precision.csv``; returns the markdown."""
    out.mkdir(parents=True, exist_ok=True)
    runs = runs.drop_duplicates(["tags.dataset", "tags.method"], keep="last")
    paper = paper002_tables()
    section = [
        "## Paper 002, Tables 2/3 layout: mean ± std over repetitions (paper's mean beside)",
        "",
        _protocol_note(runs),
        "In bold: the best of our methods per dataset at 3 decimals "
        "(↓ smaller is better, ↑ larger). Coverage is divided by q, as the paper's lies in [0, 1].",
        "",
        *comparability_notes(runs["tags.dataset"].unique()),
        "",
    ]
    for metric in TABLE_METRICS:
        if f"metrics.{metric}" not in runs:
            continue
        table = metric_table(runs, paper, metric)
        table.to_csv(out / f"table_{metric}.csv", index=False)
        arrow = "↑" if METRICS[metric].greater_is_better else "↓"
        section += [
            f"### {TITLES.get(metric, metric)} {arrow}",
            "",
            markdown(table_layout(table, table.apply(_cell, axis=1))),
            "",
        ]
        if metric == "avg_precision":
            gap = table_layout(table, table["gap"].map(lambda v: "—" if pd.isna(v) else f"{v:+.3f}"))
            gap.to_csv(out / "gap_avg_precision.csv")
            section += [
                "Gap in average precision, ours − paper (comparable datasets: see above)",
                "",
                markdown(gap),
                "",
            ]
    return section


def _run_labels(runs: pd.DataFrame) -> pd.Series:
    """Method name plus the method parameters that differ between its runs (e.g. ``B=1.05``)."""
    params = [
        c
        for c in runs
        if c.startswith("params.method.") and runs.groupby("tags.method")[c].nunique(dropna=False).max() > 1
    ]
    return runs.apply(
        lambda r: " ".join(
            [method_label(r["tags.method"]), *[f"{c.rsplit('.', 1)[1]}={r[c]}" for c in params]]
        ),
        axis=1,
    )


def dual_set_report(dataset: str, runs: pd.DataFrame, out: Path) -> list[str]:
    """Paper 001's Tables 2/3 layout (Accuracy-a/-b/-all, mean ± std over folds, best in bold)
    with the paper's Frequency-Gender values beside ours, and the Fig. 3 round curves."""
    out.mkdir(parents=True, exist_ok=True)
    runs = runs.assign(label=_run_labels(runs))
    paper_b = "params.method.B" in runs and runs["params.method.B"].nunique() > 1
    rows = {}
    for _, run in runs.iterrows():
        cells = {}
        for metric in DUAL_METRICS:
            mean, std = run[f"metrics.{metric}"], run[f"metrics.{metric}_std"]
            if paper_b and str(run.get("params.method.model_reuse", True)) == "True":
                ref = paper001_value(dataset, metric, B=float(run["params.method.B"]))
            elif run["label"] == method_label(run["tags.method"]):  # the paper's settings only
                ref = paper001_value(dataset, metric, method=run["tags.method"])
            else:
                ref = None
            paper = "—" if ref is None else f"{ref:.4f}"
            cells[metric] = (mean, f"{mean:.4f} ± {std:.4f} (paper {paper})")
        rows[run["label"]] = cells
    table = pd.DataFrame(
        {label: {m: text for m, (_, text) in cells.items()} for label, cells in rows.items()}
    ).T
    for metric in DUAL_METRICS:
        best = max(cells[metric][0] for cells in rows.values())
        table[metric] = [
            f"**{text}**" if rows[label][metric][0] == best else text
            for label, text in zip(table.index, table[metric], strict=True)
        ]
    table.columns = [TITLES[m] for m in DUAL_METRICS]
    table.to_csv(out / "accuracies.csv")
    section = [
        f"## {dataset}",
        "",
        "Five-fold accuracies (Definition 4), mean ± std over folds; the paper's "
        "Frequency-Gender values beside ours",
        "",
        markdown(table),
        "",
    ]
    curves, panels = {}, {}
    for _, run in runs.iterrows():
        try:
            curves[run["label"]] = artifact_table(run["run_id"], "rounds.csv", index_col=0)
        except Exception:  # methods without boosting rounds have no curve
            continue
        if paper_b:  # Fig. 3's sub-figures: one per B
            panels[run["label"]] = f"B={float(run['params.method.B']):.2f}"
    if curves:
        save_figure(
            plot_rounds(curves, title=f"Accuracy after each round on {dataset}", panels=panels),
            out / "rounds.png",
        )
        section += [f"![rounds]({dataset}/rounds.png)", ""]
    return section
