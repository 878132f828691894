"""Tables and figures per comparison: runs read back from MLflow.

python -m mlgraph.report experiment=ssl_comparison      # or: make report

``report.md`` and ``report.html`` open with one table of means per metric (data sets × methods,
:mod:`mlgraph.reporting.tables`), then one verdict per metric, then the tests across data sets
(:mod:`mlgraph.evaluation.comparison`) with their figures, then the layout of the runs' paper:
paper 000's figures and tests per data set, paper 002's tables beside the paper's numbers,
paper 004's feature-fraction curves or paper 001's dual-set tables.
"""

from __future__ import annotations

import json
import logging
import math
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
from hydra.errors import CompactHydraException
from markupsafe import Markup, escape

from mlgraph.evaluation.comparison import TESTS, Comparison, compare, higher_is_better
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
from mlgraph.reporting.runs import artifact_table, latest_runs, long_scores, markdown, score_tables

log = logging.getLogger(__name__)

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


class ReportError(CompactHydraException, ValueError):
    """A report option or run set the report cannot work with, found before anything is
    written. Hydra prints it as one paragraph (``HYDRA_FULL_ERROR=1`` shows the traceback)."""


def shipped_methods() -> set[str]:
    """The methods mlgraph ships: the names of ``conf/method/*.yaml``."""
    from mlgraph.config.app import CONFIG_DIR

    return {path.stem for path in (CONFIG_DIR / "method").glob("*.yaml")}


# The method each paper proposes, the reference when no other is set.
PAPER_METHODS = ("mlmrrw", "ml2", "dsml", "gmba")


def choose_reference(setting: str | None, methods: Sequence[str], where: str) -> tuple[str, str]:
    """``(reference, why)``: ``setting`` (``report.reference``) when the runs have it; unset
    (null), the user's own method (a method mlgraph does not ship), else the first paper's own
    method present, else the first method. A set reference without runs is a
    :class:`ReportError` naming the methods the runs have (``where``: the experiment)."""
    methods = list(dict.fromkeys(methods))
    if setting not in (None, "", "auto"):
        if setting not in methods:
            raise ReportError(
                f"report.reference={setting}: {where} has no finished run of {setting!r}. Its runs "
                f"hold the methods {', '.join(methods)}. Set report.reference to one of them, or "
                "leave it unset (null) to compare against your own method if the runs have one, "
                "else the paper's."
            )
        return setting, "report.reference"
    own = [m for m in methods if m not in shipped_methods()]
    if own:
        why = "your own method (not one mlgraph ships)"
        if len(own) > 1:
            why += f"; the first of {', '.join(own)}: report.reference chooses another"
        return own[0], why
    paper = next((m for m in PAPER_METHODS if m in methods), None)
    if paper is not None:
        return paper, "the paper's own method"
    return methods[0], "the first method of the runs (none is a paper's own method)"


def _check_options(cfg) -> None:
    """The report's own keys, each failure one paragraph naming the key."""
    test = cfg.get("test", "ttest")
    if test not in TESTS:
        raise ReportError(
            f"report.test={test}: must be one of {', '.join(TESTS)} (the paired test of the marks)"
        )
    alpha = cfg.get("alpha", 0.05)
    if not (isinstance(alpha, int | float) and 0 < alpha < 1):
        raise ReportError(f"report.alpha={alpha}: must be a number in (0, 1)")
    rope = cfg.get("rope", 0.01)
    if not (
        isinstance(rope, int | float) and not isinstance(rope, bool) and math.isfinite(rope) and rope >= 0
    ):
        raise ReportError(
            f"report.rope={rope}: must be a number ≥ 0 on the metrics' scale (0.01 = one point)"
        )
    for metric in cfg.metrics:
        try:
            higher_is_better(metric)
        except ValueError:
            known = ", ".join(sorted([*METRICS, *DUAL_METRICS]))
            raise ReportError(
                f"report.metrics: {metric!r} is not a metric the runs record; choose among {known}"
            ) from None


def _profile(runs: pd.DataFrame) -> tuple[str | None, object]:
    """The runs' metric profile and F1 rule (``params.profile.name``, ``params.metrics.zero_division``);
    ``"mixed"`` where the runs differ."""
    names = runs.get("params.profile.name", pd.Series("mlgraph", index=runs.index)).fillna("mlgraph")
    rules = runs.get("params.metrics.zero_division", pd.Series(None, index=runs.index, dtype=object))
    pairs = set(zip(names, rules.astype(object).where(rules.notna(), None), strict=True))
    if len(pairs) == 1:
        return next(iter(pairs))
    return f"mixed ({', '.join(sorted({str(n) for n, _ in pairs}))})", "mixed"


def _comparison_metrics(cfg, layout_metrics: Sequence[str]) -> list[str]:
    return list(dict.fromkeys([*cfg.metrics, *layout_metrics]))


def _p(value) -> str:
    if isinstance(value, str):
        return value
    return f"{value:.3g}" if value >= 1e-3 else f"{value:.1e}"


def verdict(comparison: Comparison) -> str:
    """One paragraph: the reference against the others on this metric, from the tests across
    data sets (Friedman, Nemenyi, Wilcoxon–Holm, Bayesian) and the paired marks."""
    across = comparison.across
    ref = method_label(comparison.reference)
    others = [m for m in comparison.methods if m != comparison.reference]
    n = len(comparison.ranked_datasets)
    words = [
        f"{ref} vs {len(others)} method{'s' if len(others) != 1 else ''} on {n} data "
        f"set{'s' if n != 1 else ''}:"
    ]
    friedman = across["friedman"]
    if isinstance(friedman, str):
        words.append(f"no Friedman test ({friedman}).")
    else:
        p = friedman["F_p_value"] if friedman["decided_by"].startswith("Iman") else friedman["p_value"]
        words.append(
            f"Friedman {'rejects' if friedman['reject'] else 'does not reject'} equal ranks "
            f"({friedman['decided_by']}, p = {_p(p)})"
            + (";" if friedman["reject"] else ", so no method ranks significantly apart;")
        )
    nemenyi = across["nemenyi"]
    if not isinstance(nemenyi, str):
        ranks = nemenyi["average_ranks"]
        top = nemenyi["top_group"]
        place = "is" if comparison.reference in top else "is not"
        words.append(
            f"{ref} {place} in the top group (Nemenyi, CD = {nemenyi['CD']:.2f}: "
            f"{', '.join(method_label(m) for m in top)}), average rank {ranks[comparison.reference]:.2f}"
            + (" (best)." if ranks[comparison.reference] == ranks.min() else ".")
        )
    if not isinstance(comparison.wtl, str):
        wins, ties, losses = (int(comparison.wtl[c].sum()) for c in ("win", "tie", "loss"))
        words.append(
            f"Per data set ({comparison.test_name}, α = {comparison.alpha:g}) {ref} wins {wins}, "
            f"ties {ties}, loses {losses} of {wins + ties + losses} comparisons."
        )
    wilcoxon = across["wilcoxon_holm"]
    if not isinstance(wilcoxon, str):
        better = [method_label(m) for m, v in wilcoxon["verdict"].items() if v == "better"]
        worse = [method_label(m) for m, v in wilcoxon["verdict"].items() if v == "worse"]
        words.append(
            "Wilcoxon–Holm: "
            + (f"better than {', '.join(better)}" if better else "better than none")
            + (f", worse than {', '.join(worse)}" if worse else "")
            + "."
        )
    bayes = across["bayesian"]
    if not isinstance(bayes, str):
        groups: dict[str, list[str]] = {}
        for method, row in bayes["table"].iterrows():
            groups.setdefault(row["verdict"], []).append(method_label(method))
        words.append(
            f"Bayesian signed-rank (ROPE ± {bayes['rope']:g}, P ≥ {bayes['credibility']:g}): "
            + "; ".join(f"{word}: {', '.join(names)}" for word, names in groups.items())
            + "."
        )
    return " ".join(words)


def _figure_paths(path: Path) -> list[Path]:
    return [path.with_suffix(f".{fmt}") for fmt in ("png", "svg", "pdf")]


def write_comparison(
    comparison: Comparison, out: Path, profile: str | None, zero_division: object
) -> dict[str, Any]:
    """``tables/<metric>.{tex,md,html,csv}`` and ``figures/<metric>_{nemenyi,bonferroni_dunn,
    bayesian}.{png,svg,pdf}`` under ``out``; returns the table paths and, per figure, its paths
    or the sentence saying why it was not drawn."""
    from mlgraph.evaluation.figures import save_figure
    from mlgraph.reporting import plots, tables

    written: dict[str, Any] = {
        "tables": tables.write_tables(
            comparison, out / "tables", profile=profile, zero_division=zero_division
        )
    }
    (out / "figures").mkdir(parents=True, exist_ok=True)
    for name, draw in (
        ("nemenyi", plots.nemenyi_figure),
        ("bonferroni_dunn", plots.bonferroni_dunn_figure),
        ("bayesian", plots.simplex_figure),
    ):
        fig = draw(comparison)
        written[name] = (
            fig if isinstance(fig, str) else save_figure(fig, out / "figures" / f"{comparison.metric}_{name}")
        )
    return written


def _table(frame: pd.DataFrame, index: str = "method") -> pd.DataFrame:
    """A result table for the report: method names as labels, numbers as strings."""
    shown = frame.copy()
    shown.index = pd.Index([method_label(m) for m in shown.index], name=index)
    for column in shown.columns:
        if shown[column].dtype == bool:
            shown[column] = shown[column].map({True: "yes", False: "no"})
        elif column in ("p_value", "p_holm"):
            shown[column] = shown[column].map(_p)
        elif column.startswith("p_"):  # posterior probabilities
            shown[column] = shown[column].map(lambda v: f"{v:.3f}")
    return shown


# A report is a list of blocks, written once as Markdown and once as HTML (report.html.j2).
Block = dict[str, Any]


def _statistics(comparison: Comparison, written: dict[str, Any]) -> list[Block]:
    """The tests across data sets of one metric, with their figures."""
    from mlgraph.reporting.tables import metric_heading

    across = comparison.across
    ref = method_label(comparison.reference)
    heading = metric_heading(comparison.metric, comparison.higher_is_better)
    blocks: list[Block] = [{"kind": "details", "summary": heading}]
    friedman = across["friedman"]
    if isinstance(friedman, str):
        blocks.append({"kind": "p", "text": f"Friedman test: {friedman}."})
    else:
        row = {k: friedman[k] for k in ("N", "K", "F_R", "p_value", "F_F", "F_df1", "F_df2", "F_p_value")}
        row["reject"] = f"{'yes' if friedman['reject'] else 'no'} ({friedman['decided_by']})"
        shown = pd.DataFrame([row], index=pd.Index([heading], name="metric"))
        for column in ("p_value", "F_p_value"):
            shown[column] = shown[column].map(_p)
        blocks += [
            {
                "kind": "p",
                "text": f"Friedman test (paper 000, Eq. 25) with Iman–Davenport's F_F, α = {comparison.alpha:g}.",
            },
            {"kind": "table", "frame": shown},
        ]
    if comparison.notes:
        blocks += [{"kind": "p", "text": note[0].upper() + note[1:] + "."} for note in comparison.notes]
    for name, title in (
        ("nemenyi", "Nemenyi (all pairs)"),
        ("bonferroni_dunn", f"Bonferroni–Dunn (against {ref})"),
    ):
        result = across[name]
        if isinstance(result, str):
            blocks.append({"kind": "p", "text": f"{title}: {result}."})
            continue
        text = f"{title}: CD = {result['CD']:.3f} on average ranks (q_α = {result['q_alpha']:.3f})."
        if name == "nemenyi":
            text += f" Top group: {', '.join(method_label(m) for m in result['top_group'])}."
        blocks.append({"kind": "p", "text": text})
        if name == "bonferroni_dunn":
            blocks.append({"kind": "table", "frame": _table(result["table"])})
        if not isinstance(written[name], str):
            blocks.append({"kind": "figure", "paths": written[name], "caption": f"{heading}: {title}"})
    wilcoxon = across["wilcoxon_holm"]
    blocks.append(
        {
            "kind": "p",
            "text": f"Wilcoxon signed-rank test of {ref} against each method over the data sets, Holm's correction"
            + (f": {wilcoxon}." if isinstance(wilcoxon, str) else ":"),
        }
    )
    if not isinstance(wilcoxon, str):
        blocks.append({"kind": "table", "frame": _table(wilcoxon)})
    bayes = across["bayesian"]
    if isinstance(bayes, str):
        blocks.append({"kind": "p", "text": f"Bayesian signed-rank test: {bayes}."})
    else:
        blocks += [
            {
                "kind": "p",
                "text": f"Bayesian signed-rank test (Benavoli et al. 2017), ROPE ± {bayes['rope']:g} on the "
                f"metric's scale, {bayes['nsamples']} posterior samples, seed {bayes['seed']}: the probability "
                f"that {ref} is better, equivalent or worse.",
            },
            {"kind": "table", "frame": _table(bayes["table"])},
        ]
        if not isinstance(written["bayesian"], str):
            blocks.append(
                {"kind": "figure", "paths": written["bayesian"], "caption": f"{heading}: posterior simplex"}
            )
    blocks.append({"kind": "end"})
    return blocks


def comparison_blocks(
    runs: pd.DataFrame,
    cfg,
    reference: str,
    why: str,
    metrics: Sequence[str],
    out: Path,
    read: Callable[[str], pd.DataFrame] | None = None,
) -> list[Block]:
    """The top of the report: means tables (the reference's column first), verdicts and the
    statistics across data sets, with ``tables/`` and ``figures/`` written under ``out``; metrics
    no run has are left out. ``read(run_id)`` gives a run's ``trials.csv`` (default: MLflow)."""
    from mlgraph.reporting.tables import metric_heading, to_html, to_markdown

    scores = long_scores(runs, list(metrics), read)
    metrics = [m for m in metrics if scores[m].notna().any()]
    profile, zero_division = _profile(runs)
    methods = list(dict.fromkeys(scores["method"]))
    variants = [m for m in methods if m.startswith(f"{method_label(reference)} ")]
    if reference not in methods and variants:  # a parameter sweep of the reference: its first run
        reference, why = variants[0], f"{why}; its runs differ in parameters, the first is compared"
    comparisons = compare(
        scores,
        metrics,
        reference=reference,
        methods=[m for m in methods if m == reference] + [m for m in methods if m != reference],
        test=cfg.get("test", "ttest"),
        alpha=cfg.alpha,
        rope=cfg.get("rope", 0.01),
        seed=0,
    )
    intro = (
        f"Reference: {method_label(reference)} ({why}). Marks •/◦ by the {TESTS[cfg.get('test', 'ttest')]} "
        f"over the repetitions (paired by split) at α = {cfg.alpha:g}; Bayesian signed-rank test with ROPE ± "
        f"{cfg.get('rope', 0.01):g}. Metric profile: {profile}. Every table is also in tables/ as "
        "LaTeX, Markdown, HTML and CSV."
    )
    means: list[Block] = [{"kind": "h2", "text": "Means"}, {"kind": "p", "text": intro}]
    verdicts: list[Block] = [{"kind": "h2", "text": "Verdicts"}]
    statistics: list[Block] = [{"kind": "h2", "text": "Statistics across data sets"}]
    items = []
    for metric, comparison in comparisons.items():
        written = write_comparison(comparison, out, profile, zero_division)
        means += [
            {"kind": "h3", "text": metric_heading(metric, comparison.higher_is_better)},
            {
                "kind": "comparison",
                "markdown": to_markdown(comparison, profile=profile, zero_division=zero_division),
                "html": to_html(comparison, profile=profile, zero_division=zero_division),
            },
        ]
        items.append(f"{metric_heading(metric, comparison.higher_is_better)}: {verdict(comparison)}")
        statistics += _statistics(comparison, written)
    verdicts.append({"kind": "list", "items": items})
    return means + verdicts + statistics


_INLINE = re.compile(r"\*\*(.+?)\*\*|`(.+?)`")


def _inline(text: str) -> Markup:
    """Markdown's **bold** and `code` of one line as HTML, everything else escaped."""
    parts, last = [], 0
    for match in _INLINE.finditer(text):
        parts.append(escape(text[last : match.start()]))
        tag = "strong" if match.group(1) is not None else "code"
        parts.append(Markup(f"<{tag}>{{}}</{tag}>").format(match.group(1) or match.group(2)))
        last = match.end()
    parts.append(escape(text[last:]))
    return Markup("").join(parts)


def markdown_blocks(lines: Sequence[str], out: Path) -> list[Block]:
    """The Markdown the layout sections write (headings, pipe tables, figures, lists,
    paragraphs) as blocks for the HTML page; each "## " section collapsible."""
    blocks: list[Block] = []
    text = "\n".join(lines).split("\n")
    i, open_section = 0, False
    while i < len(text):
        line = text[i]
        if line.startswith(("## ", "# ")):
            if open_section:
                blocks.append({"kind": "end"})
            blocks.append({"kind": "details", "summary": line.lstrip("# ")})
            open_section = True
        elif line.startswith("### "):
            blocks.append({"kind": "h3", "text": line[4:]})
        elif line.startswith("!["):
            alt, path = re.match(r"!\[(.*)\]\((.*)\)", line).groups()
            blocks.append({"kind": "figure", "paths": _figure_paths(out / path), "caption": alt})
        elif line.startswith("|"):
            rows = []
            while i < len(text) and text[i].startswith("|"):
                rows.append([c.strip() for c in re.split(r"(?<!\\)\|", text[i].strip())[1:-1]])
                i += 1
            header, body = rows[0], rows[2:]
            blocks.append(
                {"kind": "cells", "columns": header, "rows": [[_inline(c) for c in r] for r in body]}
            )
            continue
        elif line.startswith("- "):
            items = []
            while i < len(text) and text[i].startswith("- "):
                items.append(_inline(text[i][2:]))
                i += 1
            blocks.append({"kind": "list", "items": items})
            continue
        elif line.strip():
            blocks.append({"kind": "p", "text": _inline(line)})
        i += 1
    if open_section:
        blocks.append({"kind": "end"})
    return blocks


def blocks_markdown(blocks: Sequence[Block], out: Path) -> list[str]:
    """The blocks as Markdown lines (collapsible sections become ``####`` headings)."""
    lines: list[str] = []
    for block in blocks:
        kind = block["kind"]
        if kind in ("h2", "h3"):
            lines += ["#" * int(kind[1]) + " " + block["text"], ""]
        elif kind == "details":
            lines += [f"### {block['summary']}", ""]
        elif kind == "p":
            lines += [str(block["text"]), ""]
        elif kind == "list":
            lines += [f"- {item}" for item in block["items"]] + [""]
        elif kind == "table":
            lines += [markdown(block["frame"]), ""]
        elif kind == "comparison":
            lines += [block["markdown"]]
        elif kind == "figure":
            png = next(p for p in block["paths"] if p.suffix == ".png")
            lines += [f"![{block['caption']}]({png.relative_to(out).as_posix()})", ""]
    return lines


def _html_blocks(blocks: Sequence[Block], out: Path) -> list[Block]:
    """Tables as (columns, rows) and figures embedded, for ``report.html.j2``."""
    from mlgraph.reporting.html import embed_figure

    shown = []
    for block in blocks:
        if block["kind"] == "table":
            frame = block["frame"].reset_index()
            block = {
                "kind": "cells",
                "columns": [str(c) for c in frame.columns],
                "rows": [[markdown_cell(v) for v in row] for row in frame.itertuples(index=False)],
            }
        elif block["kind"] == "figure":
            block = {"kind": "figure", "figure": embed_figure(block["paths"], block["caption"], out)}
        shown.append(block)
    return shown


def markdown_cell(value) -> str:
    """A value as :func:`mlgraph.reporting.runs.markdown` prints it."""
    if isinstance(value, float):
        return f"{value:.2e}" if value != 0 and abs(value) < 1e-3 else f"{value:.4f}"
    return str(value)


def build_report(cfg) -> Path:
    """Read the runs of ``cfg.tracking.experiment`` back from MLflow, write the comparison under
    ``cfg.report.out/<experiment>/`` (``report.md``, ``report.html``, ``tables/``, ``figures/``
    and the layout's own files) and log it as the artifacts of a ``report`` run."""
    import mlflow

    from mlgraph.reporting.html import render
    from mlgraph.tracking.store import log_batch, provenance_tags, setup_from_config

    _check_options(cfg.report)
    experiment = cfg.tracking.experiment
    experiment_id = setup_from_config(cfg.tracking)
    runs = latest_runs(cfg.tracking.uri, experiment)
    reference, why = choose_reference(
        cfg.report.get("reference"),
        list(runs["tags.method"]),
        f"MLflow experiment {experiment!r} at {cfg.tracking.uri}",
    )
    out = Path(cfg.report.out) / experiment
    out.mkdir(parents=True, exist_ok=True)
    title = f"Comparison report: MLflow experiment `{experiment}`"
    intro = f"{len(runs)} runs (latest finished per dataset and method) from {cfg.tracking.uri}."
    # Layouts: a feature-fraction sweep (paper 004) if any run has a selector; else, if every run
    # labels all its training points (see fully_supervised), paper 002's tables; else paper 000.
    feature_sweep = (runs["tags.selector"] != "none").any()
    sections: list[str] = []
    if "metrics.accuracy_all" in runs and runs["metrics.accuracy_all"].notna().all():
        layout_metrics: Sequence[str] = DUAL_METRICS
        for dataset, group in runs.groupby("tags.dataset", sort=True):
            sections += dual_set_report(dataset, group, out / dataset)
    elif not feature_sweep and fully_supervised(runs):
        layout_metrics = TABLE_METRICS
        sections += table_report(runs, out)
    else:
        layout_metrics = ()
        for dataset, group in runs.groupby("tags.dataset", sort=True):
            if feature_sweep:
                sections += fraction_report(dataset, group, out / dataset)
            else:
                sections += dataset_report(dataset, group, cfg.report, out / dataset, reference)
    if cfg.report.get("baseline"):  # e.g. tuning=inner beside the explore-tuned comparison
        from mlgraph.reporting.side_by_side import side_by_side_section

        sections += side_by_side_section(cfg, experiment, out)
    if feature_sweep:
        top: list[Block] = [
            {
                "kind": "p",
                "text": "A feature-fraction sweep: its selectors and fractions are compared in the "
                "curves and tables below, not as methods in tables of means.",
            }
        ]
    else:
        top = comparison_blocks(
            runs, cfg.report, reference, why, _comparison_metrics(cfg.report, layout_metrics), out
        )
    lines = [f"# {title}", "", intro, "", *blocks_markdown(top, out), "## Per data set", "", *sections]
    (out / "report.md").write_text("\n".join(lines), encoding="utf-8")
    page = render(
        "report.html.j2",
        title=title.replace("`", ""),
        intro=intro,
        blocks=_html_blocks(
            [*top, {"kind": "h2", "text": "Per data set"}, *markdown_blocks(sections, out)], out
        ),
    )
    (out / "report.html").write_text(page, encoding="utf-8")
    with mlflow.start_run(experiment_id=experiment_id, run_name="report") as run:
        log_batch(
            run.info.run_id,
            tags={**provenance_tags(), "kind": "report", "source_runs": ",".join(runs.run_id)[:5000]},
            params={f"report.{k}": str(v) for k, v in cfg.report.items()},
        )
        mlflow.log_artifacts(str(out))
    log.info("report: %s (MLflow run %s)", out / "report.md", run.info.run_id)
    return out


def main(argv: list[str] | None = None) -> None:
    """``mlgraph report experiment=ssl_comparison [report.alpha=0.1 ...]`` (or ``python -m
    mlgraph.reporting.report ...``): the same config composition as ``mlgraph run`` (so the preset names
    the MLflow experiment), as a Hydra job whose folder keeps the log; ``--help`` lists the options."""
    import sys

    from mlgraph.config.app import hydra_main

    hydra_main(build_report, sys.argv[1:] if argv is None else argv, "report")


if __name__ == "__main__":
    main()
