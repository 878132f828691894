"""Each paper's part of the report: its tables, figures and tests on our runs, one :class:`Part`
per table or figure of the paper, with the verdicts about it.

A section function (:data:`SECTIONS`) reads a paper's runs back, compares the numbers its tables
print (:func:`~mlgraph.reporting.reproduce.claims.compare_cells`), checks its stated
conclusions (:func:`~mlgraph.reporting.reproduce.claims.evaluate_claims`) and lays out what
the report shows as blocks (:func:`text`, :func:`tests_table`, :func:`cells_table`,
:func:`figures`, :func:`means_table`) that ``reproduce_blocks.html.j2`` renders.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from mlgraph.reporting.reproduce.claims import (
    HELD,
    NOT_HELD,
    Verdict,
    compare_cells,
    decisive_decimals,
    evaluate_claims,
    higher_is_better,
)
from mlgraph.reporting.reproduce.presets import FS_DATASETS, Plan
from mlgraph.reporting.reproduce.scores import (
    notes,
    paper_claims,
    paper_dataset,
    paper_scores_001,
    paper_scores_002,
    scores_000,
    scores_001,
    scores_004,
    scores_tabular,
)

VERDICT_CSS = {"reproduced": "ok", HELD: "ok", "not reproduced": "bad", NOT_HELD: "bad"}


@dataclass
class Part:
    """One section of the report: a table or figure of the paper (``key``, as :func:`place`
    names the place of a stated conclusion) and what it is about, what our runs show for it
    (``blocks``, in order), the numbers of the paper it compares (``cells``) and the verdicts on
    its conclusions."""

    key: str
    about: str = ""
    blocks: list[dict] = field(default_factory=list)
    cells: pd.DataFrame = field(default_factory=pd.DataFrame)
    verdicts: list[Verdict] = field(default_factory=list)

    @property
    def title(self) -> str:
        return f"{self.key}: {self.about}" if self.about else self.key


@dataclass
class Section:
    """What one paper's analysis gives the report."""

    cells: pd.DataFrame  # every compared number (compare_cells), as cells.csv holds them
    verdicts: list[Verdict]
    parts: list[Part]
    means: dict | None = None  # the means_table block that opens the report


def place(where: str) -> str:
    """The table or figure of the paper a conclusion is about, from its ``where``:
    ``Case I (Emotions), Table 2`` → ``Table 2``; paper 000's numbered conclusions of Case k
    describe its Fig. k (``Case II (Scene), conclusion 1`` → ``Fig. 2``); any other place
    (``4.4 Results``) as it is."""
    found = re.search(r"\b(Table|Fig\.)\s*\d+", where)
    if found:
        return found.group(0)
    case = re.match(r"Case (IV|I{1,3})\b", where)
    return f"Fig. {['I', 'II', 'III', 'IV'].index(case.group(1)) + 1}" if case else where


def assign(parts: list[Part], verdicts: Sequence[Verdict]) -> list[Part]:
    """Each verdict into the part of its place; a place without a part gets one (after the rest)."""
    by_key = {part.key: part for part in parts}
    for verdict in verdicts:
        key = place(verdict.claim["where"])
        if key not in by_key:
            by_key[key] = Part(key, "" if key == verdict.claim["where"] else verdict.claim["where"])
            parts.append(by_key[key])
        by_key[key].verdicts.append(verdict)
    return parts


# --- Blocks: what a part shows, as reproduce_blocks.html.j2 takes it
def text(words: str) -> dict:
    return {"kind": "text", "text": words}


def figures(found: Sequence, small: bool = False) -> dict:
    """Figures (:class:`mlgraph.reporting.html.Figure`); ``small`` ones side by side."""
    return {"kind": "figures", "figures": list(found), "small": small}


def _fig(fig, name: str, figdir: Path, caption: str):
    from mlgraph.evaluation.figures import save_figure
    from mlgraph.reporting.html import embed_figure

    figdir.mkdir(parents=True, exist_ok=True)
    return embed_figure(save_figure(fig, figdir / f"{name}.png"), caption, figdir.parent)


def tests_table(frame: pd.DataFrame, index_name: str) -> dict:
    """A table of test results (Friedman, rank sums): floats to 3 decimals, small p-values in
    scientific notation."""
    from mlgraph.evaluation.figures import TITLES

    shown = frame.rename(index=lambda i: TITLES.get(i, i), columns=lambda c: TITLES.get(c, c))
    numeric = [str(c) for c in shown.columns if shown[c].dtype.kind in "fiu"]

    def number(v: float) -> str:
        return "" if not np.isfinite(v) else (f"{v:.2e}" if 0 < abs(v) < 1e-3 else f"{v:.3f}")

    columns = [
        shown[c].map(number)
        if shown[c].dtype.kind == "f"
        else shown[c].map(lambda v: "" if pd.isna(v) else v)
        for c in shown.columns
    ]
    rows = [[str(i), *values] for i, *values in zip(shown.index, *columns, strict=True)]
    return {
        "kind": "table",
        "columns": [index_name, *map(str, shown.columns)],
        "rows": rows,
        "numeric": numeric,
    }


def _value(mean: float, std: float, decimals: int) -> str:
    if mean is None or not np.isfinite(mean):
        return "—"
    return f"{mean:.{decimals}f}" + (f" ± {std:.{decimals}f}" if std is not None and np.isfinite(std) else "")


def cell(row: pd.Series | None, decimals: int) -> dict | None:
    """One compared number for the page: ours and the paper's mean ± std, the difference and
    the tolerance it is held to, each to the decimals at which |difference| and tolerance
    compare as they do exactly (ours to as many), the verdict and the notes on a gap."""
    if row is None:
        return None
    verdict = row["verdict"]
    out = {
        "css": VERDICT_CSS.get(verdict, "na"),
        "verdict": verdict,
        "paper": _value(row["paper_mean"], row["paper_std"], decimals),
        "ours": _value(row["ours_mean"], row["ours_std"], decimals),
        "difference": None,
        "notes": [],
    }
    if np.isfinite(row["difference"]):
        digits, tolerance = decisive_decimals(abs(row["difference"]), row["tolerance"], (decimals, decimals))
        out.update(
            ours=_value(row["ours_mean"], row["ours_std"], digits),
            difference=f"{row['difference']:+.{digits}f}",
            tolerance=f"{row['tolerance']:.{tolerance}f}",
        )
    if verdict == "not reproduced":
        out["notes"] = note_links(row["notes"])
    return out


def note_links(ids: str | Sequence[str]) -> list[tuple[str, str]]:
    """(id, title) of each known note of ``ids`` (a list or comma-separated)."""
    ids = ids.split(",") if isinstance(ids, str) else ids
    return [(i, notes()[i]["title"]) for i in ids if i in notes()]


def cells_table(
    cells: pd.DataFrame,
    rows: str,
    columns: str,
    row_order,
    column_order,
    decimals: int,
    label: Callable[[str], str],
    caption: str = "",
) -> dict:
    """Compared numbers as a table of ``rows`` × ``columns`` (the paper's layout)."""
    lookup = {(r[rows], r[columns]): r for _, r in cells.iterrows()}
    body = [
        {"label": label(r), "cells": [cell(lookup.get((r, c)), decimals) for c in column_order]}
        for r in row_order
    ]
    return {"kind": "cells", "caption": caption, "head": [label(c) for c in column_order], "rows": body}


def means_table(
    scores: pd.DataFrame, keys: Mapping[str, Sequence[str]], label, caption: str, methods: Sequence[str]
) -> dict:
    """Each method's mean score per ``keys`` (averaged over x: rates, fractions), the best of
    each row marked, each row to the decimals that tell its best from the runner-up. ``keys``
    gives each key's values in the paper's order (others follow), ``methods`` the columns'."""
    from mlgraph.evaluation.figures import STYLES, method_label

    if scores.empty:
        return {"kind": "means", "caption": caption, "methods": [], "rows": []}
    wide = scores.groupby([*keys, "method"])["mean"].mean().unstack("method")
    if wide.index.nlevels == 1:  # rows by one key: tuples all the same
        wide.index = pd.MultiIndex.from_arrays([wide.index], names=list(keys))
    rank = [{v: i for i, v in enumerate(order)} for order in keys.values()]
    wide = wide.loc[
        sorted(wide.index, key=lambda i: [r.get(v, len(r)) for r, v in zip(rank, i, strict=True)])
    ]
    order = [m for m in methods if m in wide.columns] + sorted(set(wide.columns) - set(methods))
    rows = []
    for index, values in wide[order].iterrows():
        metric = index[list(keys).index("metric")]
        ranked = values.dropna().sort_values(ascending=not higher_is_better(metric))
        digits = 3
        if len(ranked) > 1:
            digits = decisive_decimals(ranked.iloc[0], ranked.iloc[1])[0]
        best = ranked.iloc[0] if len(ranked) else np.nan
        rows.append(
            {
                "label": label(index),
                "values": [
                    ("—" if not np.isfinite(v) else f"{v:.{digits}f}", bool(np.isfinite(v) and v == best))
                    for v in values
                ],
            }
        )
    head = [(method_label(m), STYLES.get(m, ("#7F7F7F",))[0]) for m in order]
    return {"kind": "means", "caption": caption, "methods": head, "rows": rows}


def _labelled(table: pd.DataFrame) -> pd.DataFrame:
    from mlgraph.evaluation.figures import method_label

    return table.rename(columns=method_label)


def _metric_key(metric: str) -> str:
    from mlgraph.evaluation.figures import metric_words

    return metric_words(metric)


# --- Paper 000: Figs. 1-4 and their Friedman and rank-sum tables
TABLES_000 = {"emotions": (2, 3), "scene": (6, 7), "yeast": (10, 11), "mediamill": (14, 15)}


def section_000(runs: pd.DataFrame, plan: Plan, figdir: Path) -> Section:
    from mlgraph.evaluation import stats
    from mlgraph.evaluation.figures import PAPER000, TITLES, cd_figure, method_label, plot_metrics_vs_rate
    from mlgraph.reporting.runs import score_tables

    metrics = ["avg_precision", "micro_f1", "macro_f1"]
    scores, trials = scores_000(runs, plan.used)
    tables = {d: score_tables(t, metrics, "rates") for d, t in trials.items()}
    verdicts = evaluate_claims("000", scores, tables=tables)
    parts = []
    for number, dataset in enumerate(TABLES_000, start=1):
        ran = plan.used.get(dataset, dataset)
        on = dataset + (f" (run on {ran})" if ran != dataset else "")
        friedman, posthoc = TABLES_000[dataset]
        fig = Part(f"Fig. {number}", f"{on}, the three metrics against the labelling rate")
        table_f = Part(f"Table {friedman}", f"{on}, Friedman test")
        table_p = Part(f"Table {posthoc}", f"{on}, rank-sum differences against ML-MRRW")
        parts += [fig, table_f, table_p]
        part = scores[scores.dataset == dataset]
        if part.empty:
            for each in (fig, table_f, table_p):
                each.blocks.append(text("No finished run on this data set."))
            continue
        order = [m for m in PAPER000 if m in set(part.method)]
        summaries = {}
        for method in order:
            mine = part[part.method == method].pivot_table(
                index="x", columns="metric", values=["mean", "std"]
            )
            summary = pd.DataFrame({"step": mine.index})
            for metric in metrics:
                summary[metric] = mine[("mean", metric)].to_numpy()
                summary[f"{metric}_std"] = mine[("std", metric)].to_numpy()
            summaries[method_label(method)] = summary
        figure = _fig(
            plot_metrics_vs_rate(summaries, metrics, title=f"{len(order)} methods on {ran}"),
            f"fig{number}_{dataset}",
            figdir,
            f"Fig. {number}: average precision, micro-F1 and macro-F1 against the labelling rate on {ran}, "
            "mean ± std over repetitions",
        )
        fig.blocks.append(figures([figure]))
        if not all(t.shape[1] >= 3 and len(t) >= 2 for t in tables[dataset].values()):
            for each in (table_f, table_p):
                each.blocks.append(text("The test needs at least three methods run at two labelling rates."))
            continue
        labelled = {m: _labelled(t) for m, t in tables[dataset].items()}
        blocks = len(next(iter(labelled.values())))
        table_f.blocks += [
            text(
                f"Friedman test (Eq. 25), blocks = the {blocks} labelling rates (mean over repetitions), α = 0.05:"
            ),
            tests_table(stats.friedman_table(labelled), "metric"),
        ]
        if "ML-MRRW" in next(iter(labelled.values())):
            table_p.blocks += [
                text(
                    "Rank-sum differences D = R(ML-MRRW) − R(i) against Eq. 26's critical difference with "
                    "the real N, and with the paper's N = 1:"
                ),
                tests_table(stats.posthoc_table(labelled, "ML-MRRW"), "D"),
            ]
        diagrams = [
            _fig(
                cd_figure(table, 0.05, f"{ran}: {TITLES[metric]}"),
                f"cd_{dataset}_{metric}",
                figdir,
                f"Critical-difference diagram (Nemenyi) of {TITLES[metric].lower()} on {ran}",
            )
            for metric, table in labelled.items()
        ]
        table_p.blocks.append(figures(diagrams, small=True))
    means = means_table(
        scores,
        {"dataset": list(TABLES_000), "metric": metrics},
        lambda i: f"{i[0]}, {_metric_key(i[1])}",
        "Each method's score averaged over the labelling rates (mean over repetitions)",
        list(PAPER000),
    )
    return Section(pd.DataFrame(), verdicts, assign(parts, verdicts), means)


# --- Paper 001: Tables 2 and 3 on Frequency-Gender, Fig. 3
def section_001(runs: pd.DataFrame, plan: Plan, figdir: Path) -> Section:
    from mlgraph.evaluation import stats
    from mlgraph.evaluation.figures import PAPER001, TITLES, cd_figure, plot_rounds
    from mlgraph.reporting.paper_layouts import DUAL_METRICS

    scores, folds = scores_001(runs)
    theirs = paper_scores_001()
    cells = compare_cells(
        "001",
        scores.drop(columns="x"),
        theirs.drop(columns="x"),
        ["dataset", "group", "method", "metric"],
        lambda row: 4,
    )
    verdicts = evaluate_claims("001", scores, folds=folds, paper_scores=theirs)
    words = lambda m: TITLES.get(m, m)  # noqa: E731
    methods = ["dsml", "independent", "cooccurrence", "stacking", "mlknn", "mlrbf", "bpmll", "ranksvm"]
    name = lambda v: words(v) if v in TITLES else PAPER001.get(v, "ML-kNN" if v == "mlknn" else v)  # noqa: E731
    mine = cells[cells.group == "table2"]
    table2 = Part("Table 2", "Frequency-Gender, five-fold cross-validation (B = 1.05, T = 10)", cells=mine)
    table2.blocks.append(cells_table(mine, "method", "metric", methods, DUAL_METRICS, 4, name))
    mine = cells[cells.group == "table3"]
    table3 = Part("Table 3", "DSML on Frequency-Gender as B grows (T = 10)", cells=mine)
    bs = sorted(set(mine["method"]))
    table3.blocks.append(cells_table(mine, "method", "metric", bs, DUAL_METRICS, 4, words))
    fig3 = Part(
        "Fig. 3",
        "accuracies after each boosting round, with (solid) and without (dotted) model reuse",
    )
    curves, panels = {}, {}
    for group, part in scores[scores.group.str.startswith("B=")].groupby("group"):
        if part["method"].nunique() < 2:
            continue  # Fig. 3 draws each B with and without reuse (Table 3's other B have one)
        for variant, rounds in part.groupby("method"):
            wide = rounds.pivot_table(index="x", columns="metric", values=["mean", "std"])
            curve = pd.DataFrame(index=wide.index.astype(int))
            for metric in DUAL_METRICS:
                curve[metric] = wide[("mean", metric)].to_numpy()
                curve[f"{metric}_std"] = wide[("std", metric)].to_numpy()
            label = f"DSML {group}" + (" model_reuse=False" if variant == "no reuse" else "")
            curves[label], panels[label] = curve, group
    if curves:
        figure = _fig(
            plot_rounds(curves, title="DSML on Frequency-Gender", panels=panels),
            "fig3_rounds",
            figdir,
            "Fig. 3: Accuracy-a, -b and -all after each round t, mean ± std over the five folds, one row per B",
        )
        fig3.blocks.append(figures([figure]))
    else:
        fig3.blocks.append(text("No run of DSML with and without model reuse at the same B."))
    table = {
        m: pd.DataFrame(
            {k: t[t.status == "ok"].set_index("repetition")[m] for k, t in folds.items()}
        ).dropna()
        for m in DUAL_METRICS
    }
    if folds and all(t.shape[1] >= 3 and len(t) >= 2 for t in table.values()):
        labelled = {m: _labelled(t) for m, t in table.items()}
        result = stats.bonferroni_dunn(labelled["accuracy_all"], "DSML")
        diagram = _fig(
            cd_figure(labelled["accuracy_all"], 0.05, "Frequency-Gender: Accuracy-all"),
            "cd_accuracy_all",
            figdir,
            "Critical-difference diagram (Nemenyi) of Accuracy-all over the five folds",
        )
        table2.blocks += [
            text("Significance over the five folds: Friedman test, blocks = folds:"),
            tests_table(stats.friedman_table(labelled), "metric"),
            text(
                f"Bonferroni-Dunn test of Accuracy-all against DSML (CD = {result['CD']:.2f} on average ranks):"
            ),
            tests_table(result["table"], "method"),
            figures([diagram], small=True),
        ]
    means = means_table(
        scores[scores.group == "table2"],
        {"metric": DUAL_METRICS},
        lambda i: words(i[0]),
        "Each method's score in Table 2's setting (mean over the five folds)",
        methods,
    )
    return Section(cells, verdicts, assign([table2, table3, fig3], verdicts), means)


# --- Paper 002: Tables 2 (regular-scale) and 3 (large-scale), one layout per metric
def section_002(runs: pd.DataFrame, plan: Plan, figdir: Path) -> Section:
    from mlgraph.evaluation import stats
    from mlgraph.evaluation.figures import PAPER002, TITLES, cd_figure
    from mlgraph.reporting.paper_layouts import COMPARABLE, PAPER002_DATASETS, PAPER002_NAMES, TABLE_METRICS

    ours = scores_tabular(runs, TABLE_METRICS)
    theirs = paper_scores_002()
    cells = compare_cells(
        "002",
        ours.drop(columns=["x", "group"]),
        theirs.drop(columns=["x", "group"]),
        ["dataset", "method", "metric"],
        lambda row: 3,
    )
    cells.loc[cells.dataset.isin(plan.paper.not_public) & (cells.verdict == "no run"), "verdict"] = (
        "not available"
    )
    verdicts = evaluate_claims("002", ours, paper_scores=theirs)
    name = lambda d: PAPER002_NAMES.get(d, d)  # noqa: E731
    unclear = [d for d, (v, _) in COMPARABLE.items() if v == "unclear"]
    parts = []
    for claim in paper_claims("002")["claim"]:  # Table 2's data sets, then Table 3's
        key = place(claim["where"])
        scale = "regular-scale" if key == "Table 2" else "large-scale"
        datasets = [d for d in PAPER002_DATASETS if d in claim["dataset"]]
        mine = cells[cells.dataset.isin(datasets)]
        part = Part(key, f"the {scale} data sets, mean ± std over random halves", cells=mine)
        if unclear and set(unclear) & set(datasets):
            part.blocks.append(
                text(
                    f"Comparability: {', '.join(sorted(set(unclear) & set(datasets)))} unclear (fewer features "
                    "than the paper's; see the notes); the others we have are the paper's."
                )
            )
        for metric in TABLE_METRICS:
            arrow = "↑" if higher_is_better(metric) else "↓"
            part.blocks.append(
                cells_table(
                    mine[mine.metric == metric],
                    "method",
                    "dataset",
                    list(PAPER002),
                    datasets,
                    3,
                    lambda v: PAPER002.get(v, name(v)),
                    caption=f"{TITLES[metric]} {arrow}",
                )
            )
        parts.append(part)
    blocks = {
        m: ours[ours.metric == m].pivot_table(index="dataset", columns="method", values="mean").dropna()
        for m in TABLE_METRICS
    }
    blocks = {m: _labelled(t) for m, t in blocks.items() if t.shape[1] >= 3 and len(t) >= 2}
    if blocks:
        n = len(next(iter(blocks.values())))
        significance = Part("Significance", f"over the {n} data sets every method ran on")
        significance.blocks += [
            text(f"Friedman test (Demšar 2006), blocks = the {n} data sets every method ran on:"),
            tests_table(stats.friedman_table(blocks), "metric"),
        ]
        diagrams = [
            _fig(
                cd_figure(
                    table,
                    0.05,
                    f"{TITLES[metric]} over {n} data sets",
                    higher_is_better=higher_is_better(metric),
                ),
                f"cd_{metric}",
                figdir,
                f"Critical-difference diagram (Nemenyi) of {TITLES[metric].lower()} over {n} data sets",
            )
            for metric, table in blocks.items()
        ]
        significance.blocks.append(figures(diagrams, small=True))
        parts.append(significance)
    means = means_table(
        ours,
        {"dataset": PAPER002_DATASETS, "metric": TABLE_METRICS},
        lambda i: f"{name(i[0])}, {_metric_key(i[1])}",
        "Each method's score (mean over random halves)",
        list(PAPER002),
    )
    return Section(cells, verdicts, assign(parts, verdicts), means)


# --- Paper 004: Figs. 3-6, the selectors against the kept fraction
def section_004(runs: pd.DataFrame, plan: Plan, figdir: Path) -> Section:
    from mlgraph.evaluation import stats
    from mlgraph.evaluation.figures import (
        FS_METRICS,
        PAPER004,
        TITLES,
        cd_figure,
        method_label,
        plot_fraction_curves,
    )

    scores = scores_004(runs, plan.used)
    verdicts = evaluate_claims("004", scores)
    results = Part("4.4 Results", "Figs. 3–6, each selector's score against the % of features kept")
    parts = [results]
    for dataset, group in runs.groupby("tags.dataset"):
        shown = paper_dataset(dataset, plan.used)
        title = f"Feature selection on {dataset}" + (
            f" (for the paper's {shown})" if shown != dataset else ""
        )
        figure = _fig(
            plot_fraction_curves(group, title=title),
            f"fractions_{dataset}",
            figdir,
            f"{title}: Hamming loss, micro-F1 and macro-F1 against the % of features kept, mean ± std over "
            "folds; all features dashed",
        )
        results.blocks.append(figures([figure]))
    if runs.empty:
        results.blocks.append(text("No finished run."))
    selected = scores[scores.method != "none"]
    blocks = {}
    for metric in FS_METRICS:
        wide = (
            selected[selected.metric == metric]
            .pivot_table(index=["dataset", "group", "x"], columns="method", values="mean")
            .dropna()
        )
        if wide.shape[1] >= 3 and len(wide) >= 2:
            blocks[metric] = _labelled(wide)
    if blocks:
        significance = Part("Significance", "over every (data set, classifier, kept fraction)")
        significance.blocks += [
            text("Friedman test, blocks = every (data set, classifier, kept fraction):"),
            tests_table(stats.friedman_table(blocks), "metric"),
        ]
        diagrams = [
            _fig(
                cd_figure(table, 0.05, TITLES[metric], higher_is_better=higher_is_better(metric)),
                f"cd_{metric}",
                figdir,
                f"Critical-difference diagram (Nemenyi) of {TITLES[metric].lower()} over {len(table)} blocks",
            )
            for metric, table in blocks.items()
        ]
        significance.blocks.append(figures(diagrams, small=True))
        parts.append(significance)
    means = means_table(
        selected,
        {"dataset": FS_DATASETS, "group": ["br_knn", "cc_knn"], "metric": FS_METRICS},
        lambda i: f"{i[0]}, {method_label(i[1])}, {_metric_key(i[2])}",
        "Each selector's score averaged over the kept fractions (the cases of the conclusions)",
        list(PAPER004),
    )
    return Section(pd.DataFrame(), verdicts, assign(parts, verdicts), means)


SECTIONS = {"000": section_000, "001": section_001, "002": section_002, "004": section_004}
