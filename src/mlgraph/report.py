"""Tables and figures: per run (from trial results) and per comparison (runs read back from MLflow).

python -m mlgraph.report experiment=ssl_comparison      # or: make report
"""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from mlgraph.metrics import METRICS

if TYPE_CHECKING:
    import matplotlib.pyplot as plt

# Figure and report words for metric keys (titles and axes say these, never the raw keys).
TITLES = {
    "avg_precision": "Average precision",
    "micro_f1": "Micro-F1",
    "macro_f1": "Macro-F1",
    "hamming_loss": "Hamming loss",
    "one_error": "One-error",
    "coverage": "Coverage",
    "coverage_norm": "Coverage (÷ q)",
    "ranking_loss": "Ranking loss",
    "macro_auc": "Macro-averaging AUC",
    "micro_auc": "Micro-averaging AUC",
    "subset_accuracy": "Subset accuracy",
    "example_precision": "Example-based precision",
    "example_recall": "Example-based recall",
    "example_f1": "Example-based F1",
    "jaccard": "Jaccard index",
    "accuracy_a": "Accuracy-a",
    "accuracy_b": "Accuracy-b",
    "accuracy_all": "Accuracy-all",
}
FIG1_METRICS = ("avg_precision", "micro_f1", "macro_f1")
log = logging.getLogger(__name__)


def pyplot():
    """matplotlib's pyplot on the Agg backend (figures are files and MLflow artifacts, never
    windows), imported when the first figure is drawn: a run imports it after its trials."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def metric_words(metric: str) -> str:
    """A metric key in words for an axis ("average precision"; acronyms and names keep their
    capitals: "Hamming loss", "AUC")."""
    words = TITLES.get(metric, metric.replace("_", " "))
    if words[1:2].isupper() or words.split(" ")[0] in ("Hamming", "Jaccard"):
        return words
    return words[0].lower() + words[1:]


# --- Figure style: one colour, marker and line style per method, the same in every figure -----
# Colours are Okabe & Ito's colour-blind-safe palette (plus grey and brown); a figure never
# holds two methods of one colour, and markers and line styles tell apart curves that overlap
# (ML-MR under ML-MRRW). Each paper's own method is vermillion with round markers.
VERMILLION, BLUE, SKY, GREEN, ORANGE, PURPLE, YELLOW = (
    "#D55E00",
    "#0072B2",
    "#56B4E9",
    "#009E73",
    "#E69F00",
    "#CC79A7",
    "#F0E442",
)
GREY, BROWN, BLACK = "#7F7F7F", "#8C564B", "#000000"
STYLES = {  # method, selector or classifier name: (colour, marker, line style)
    # paper 000
    "mlmrrw": (VERMILLION, "o", "-"),
    "mlmr": (BLUE, "s", "--"),
    "mlknn": (GREY, "v", "-."),
    "gfhf": (SKY, "^", ":"),
    "lgc": (GREEN, "D", "-"),
    "fsksc": (ORANGE, "P", "--"),
    "sswl": (PURPLE, "X", "-."),
    # paper 002
    "ml2": (VERMILLION, "o", "-"),
    "br": (BLUE, "s", "--"),
    "clr": (GREEN, "D", "-."),
    "ecc": (ORANGE, "^", ":"),
    "rakel": (PURPLE, "v", "-"),
    # paper 001 (ML-kNN as in paper 000)
    "dsml": (VERMILLION, "o", "-"),
    "independent": (BLUE, "s", "--"),
    "cooccurrence": (SKY, "^", ":"),
    "stacking": (GREEN, "D", "-."),
    "mlrbf": (ORANGE, "P", "-"),
    "bpmll": (PURPLE, "X", "--"),
    "ranksvm": (BROWN, "*", ":"),
    # paper 004: selectors, the all-features line, the two classifiers
    "gmba": (VERMILLION, "o", "-"),
    "mlfs": (BLUE, "s", "--"),
    "mlrf": (GREEN, "D", "-."),
    "spec": (ORANGE, "^", ":"),
    "none": (BLACK, "", "--"),
    "br_knn": (BLUE, "s", "-"),
    "cc_knn": (GREEN, "D", "--"),
}
HOLLOW = {"mlmr", "gfhf", "br", "independent", "mlfs"}  # drawn with open markers over their neighbours
_FALLBACK = [(c, m, "-") for c, m in zip([YELLOW, BROWN, GREY, SKY], "hp<>", strict=True)]

# Display names of methods in figures and tables (paper 000's, 002's and 001's spelling).
PAPER000 = {
    "mlknn": "MLkNN",
    "gfhf": "ML-GFHF",
    "lgc": "ML-LGC",
    "fsksc": "ML-FSKSC",
    "sswl": "SSWL",
    "mlmr": "ML-MR",
    "mlmrrw": "ML-MRRW",
}
PAPER002 = {"ml2": "ML²", "br": "BR", "clr": "CLR", "ecc": "ECC", "rakel": "RAkEL"}
PAPER001 = {
    "dsml": "DSML",
    "independent": "Ind. Dec.",
    "cooccurrence": "Co-Occ. Dec.",
    "stacking": "Label Stacking",
    "mlrbf": "ML-RBF",
    "bpmll": "BP-MLL",
    "ranksvm": "RankSVM",
}
PAPER004 = {
    "gmba": "GMBA",
    "mlfs": "MLFS",
    "mlrf": "MLRF",
    "spec": "SPEC",
    "none": "all features",
    "br_knn": "BR-3NN",
    "cc_knn": "CC-3NN",
}


def method_label(name: str) -> str:
    """The display name of a method, selector or classifier (its key when it has none)."""
    for names in (PAPER000, PAPER002, PAPER001, PAPER004):
        if name in names:
            return names[name]
    return name


def method_style(name: str) -> dict:
    """``color``, ``marker`` and ``linestyle`` of a method, by its key (``mlmrrw``) or display
    name (``ML-MRRW``); a label with settings after the name (``DSML B=1.05``) takes the
    method's style. Unknown names get a fixed fallback chosen from the name, so that the same
    name is drawn alike in every figure."""
    words = name.split(" ")
    candidates = [" ".join(words[:n]) for n in range(len(words), 0, -1)]  # "DSML B=1.05" → "DSML"
    key = next((k for c in candidates for k in STYLES if c in (k, method_label(k))), name)
    if key not in STYLES:
        colour, marker, linestyle = _FALLBACK[sum(map(ord, key)) % len(_FALLBACK)]
    else:
        colour, marker, linestyle = STYLES[key]
    face = "white" if key in HOLLOW else colour
    return {"color": colour, "marker": marker or "None", "linestyle": linestyle, "markerfacecolor": face}


def _dodged(x, i: int, n: int, width: float):
    """``x`` shifted by a small per-line offset, so that error bars of equal values stay apart."""
    return pd.Series(x, dtype=float).to_numpy() + (i - (n - 1) / 2) * width


def _curve(ax, x, y, yerr, label: str, i: int = 0, n: int = 1, width: float = 0.0, **style):
    """One method's line with ±1 std error bars in its fixed style (``style`` overrides it),
    shifted by ``width`` per line when ``n`` lines share the x values."""
    drawn = {**method_style(label), **style}
    ax.errorbar(
        _dodged(x, i, n, width),
        y,
        yerr=yerr,
        markersize=4.5,
        markeredgewidth=1.0,
        capsize=2,
        elinewidth=0.8,
        linewidth=1.3,
        label=label,
        **drawn,
    )


def _figure(rows: int, columns: int, width: float, height: float):
    """Panels laid out by matplotlib's constrained layout, which leaves room for the title
    and for a legend placed outside the panels."""
    return pyplot().subplots(rows, columns, figsize=(width, height), squeeze=False, layout="constrained")


def _legend(fig: plt.Figure, handles, labels, ncol: int, title: str = "") -> None:
    """One legend for the figure, below the panels (it never hides a curve), and the title."""
    if handles:
        fig.legend(handles, labels, loc="outside lower center", ncol=ncol, frameon=False, fontsize=9)
    if title:
        fig.suptitle(title)


def plot_metrics_vs_rate(
    summaries: Mapping[str, pd.DataFrame], metrics: Sequence[str] = FIG1_METRICS, title: str = ""
) -> plt.Figure:
    """Paper 000, Fig. 1–4: one panel per metric against the labelling rate (%), one line per
    method in its fixed style (:func:`method_style`), error bars of ±1 standard deviation over
    repetitions, lines shifted by 0.3 % apiece so that equal values stay apart.

    ``summaries`` maps a method key or label to the output of :func:`mlgraph.runner.summarise`.
    """
    fig, axes = _figure(1, len(metrics), 4.2 * len(metrics), 3.9)
    for ax, metric in zip(axes[0], metrics, strict=True):
        for i, (label, summary) in enumerate(summaries.items()):
            _curve(
                ax, summary["step"], summary[metric], summary[f"{metric}_std"], label, i, len(summaries), 0.3
            )
        ax.set_xlabel("labelling rate (%)")
        ax.set_ylabel(metric_words(metric))
        ax.grid(alpha=0.3)
    _legend(fig, *axes[0][0].get_legend_handles_labels(), ncol=min(len(summaries), 7), title=title)
    return fig


def plot_rounds(
    curves: Mapping[str, pd.DataFrame],
    metrics: Sequence[str] = ("accuracy_a", "accuracy_b", "accuracy_all"),
    title: str = "",
    panels: Mapping[str, str] | None = None,
) -> plt.Figure:
    """Paper 001, Fig. 3: dual-set accuracies after each boosting round t, ±1 std over trials,
    one line per run label: solid with model reuse, dotted without (as the paper draws them).
    ``panels`` maps labels to a row title (e.g. ``B=1.05``), giving one row of panels per value
    as the paper's sub-figures."""
    rows = list(dict.fromkeys((panels or {}).get(label, "") for label in curves))
    fig, axes = _figure(len(rows), len(metrics), 4.2 * len(metrics), 3.0 * len(rows) + 0.9)
    for label, curve in curves.items():
        row = rows.index((panels or {}).get(label, ""))
        reuse = "model_reuse=False" not in label
        style = {} if reuse else {"linestyle": ":", "markerfacecolor": "white"}
        for ax, metric in zip(axes[row], metrics, strict=True):
            _curve(
                ax,
                curve.index,
                curve[metric],
                curve[f"{metric}_std"],
                label,
                int(not reuse),
                2,
                0.08,
                **style,
            )
    for row, name in enumerate(rows):
        for ax, metric in zip(axes[row], metrics, strict=True):
            ax.set_xlabel("boosting round t")
            ax.set_ylabel(metric_words(metric))
            if name:
                ax.set_title(name)
            ax.grid(alpha=0.3)
    handles = {}
    for ax in axes[:, 0]:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            handles.setdefault(label, handle)
    _legend(fig, list(handles.values()), list(handles), ncol=min(len(handles), 4), title=title)
    return fig


def cd_figure(scores: pd.DataFrame, alpha: float, title: str, higher_is_better: bool = True) -> plt.Figure:
    """:func:`mlgraph.stats.cd_diagram` with each method in its fixed colour."""
    from mlgraph import stats

    palette = {m: method_style(m)["color"] for m in scores.columns}
    return stats.cd_diagram(
        scores, alpha=alpha, title=title, higher_is_better=higher_is_better, color_palette=palette
    )


FIGURE_FORMATS = ("png", "svg", "pdf")
PNG_DPI = 200


def save_figure(fig: plt.Figure, path, formats: Sequence[str] = FIGURE_FORMATS) -> list[Path]:
    """Write ``fig`` once per format (``path`` with its suffix replaced: PNG at 200 dpi, SVG and
    PDF as vector graphics with the text embedded) and free it (sweeps create many figures);
    return the paths written. The layout and the tight box are computed once and kept for every
    format, which then draws once each instead of twice. On Linux, in a process running no other
    thread, a forked child writes the formats after the first meanwhile (the run's figure takes
    about a quarter less time); where it fails, they are written here."""
    targets = [Path(path).with_suffix(f".{fmt}") for fmt in formats]
    bbox = "tight"
    if len(formats) > 1:
        fig.draw_without_rendering()  # the layout, once
        fig.set_layout_engine("none")
        bbox = fig.get_tightbbox().padded(pyplot().rcParams["savefig.pad_inches"])
    child = _fork_writer(fig, targets[1:], bbox) if len(formats) > 1 else None
    _write_formats(fig, targets if child is None else targets[:1], bbox)
    if child is not None:
        _, status = os.waitpid(child, 0)
        if status != 0 or not all(t.is_file() for t in targets[1:]):
            _write_formats(fig, targets[1:], bbox)
    pyplot().close(fig)
    return targets


def _write_formats(fig: plt.Figure, targets: Sequence[Path], bbox) -> None:
    for target in targets:
        fig.savefig(target, dpi=PNG_DPI if target.suffix == ".png" else "figure", bbox_inches=bbox)


def _fork_writer(fig: plt.Figure, targets: Sequence[Path], bbox) -> int | None:
    """The pid of a forked child writing ``targets``, or None where forking is not safe (not
    Linux, or another thread, which may hold a lock the child would wait for forever)."""
    if not sys.platform.startswith("linux") or threading.active_count() > 1:
        return None
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            _write_formats(fig, targets, bbox)
            code = 0
        finally:
            os._exit(code)
    return pid


def format_summary(summary: pd.DataFrame, metrics: Sequence[str] = FIG1_METRICS) -> str:
    """Plain-text table: one row per labelling rate, ``mean ± std`` per metric."""
    table = pd.DataFrame({"rate %": summary["step"].to_numpy()})
    for metric in metrics:
        table[metric] = [
            f"{m:.4f} ± {s:.4f}" for m, s in zip(summary[metric], summary[f"{metric}_std"], strict=True)
        ]
    table["trials"] = summary["n_ok"].to_numpy()
    if summary["n_failed"].any():
        table["failed"] = summary["n_failed"].to_numpy()
    return table.to_string(index=False)


# --- Comparison report: runs read back from MLflow -------------------------------------------

PAPER001_CSV = Path(__file__).resolve().parent / "data" / "builtin" / "paper001_tables.csv"


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


def latest_runs(uri: str, experiment: str) -> pd.DataFrame:
    """The latest FINISHED run of each (dataset, method, selector, fraction) of ``experiment``
    (report runs excluded)."""
    import mlflow

    from mlgraph.tracking import quiet_artifact_downloads

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


def _artifact_table(run_id: str, name: str, **read) -> pd.DataFrame:
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


def dataset_report(dataset: str, runs: pd.DataFrame, cfg, out: Path) -> list[str]:
    """Figure, Friedman table, rank-sum differences and CD diagrams of one dataset; returns the
    markdown section."""
    from mlgraph import stats

    out.mkdir(parents=True, exist_ok=True)
    summaries, trials = {}, {}
    for run_id, method in zip(runs.run_id, runs["tags.method"], strict=True):
        summaries[method_label(method)] = _artifact_table(run_id, "summary.csv", index_col=0)
        trials[method_label(method)] = _artifact_table(run_id, "trials.csv")
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
    reference = method_label(cfg.reference)
    friedman = stats.friedman_table(tables, alpha=cfg.alpha)
    friedman.to_csv(out / "friedman.csv")
    section += [
        f"Friedman test over blocks = {cfg.blocks} (Eq. 25; α = {cfg.alpha})",
        "",
        markdown(friedman),
        "",
    ]
    if reference in summaries and len(summaries) > 1:
        posthoc = stats.posthoc_table(tables, reference=reference, alpha=cfg.alpha)
        posthoc.to_csv(out / "posthoc.csv")
        section += [
            f"Rank-sum differences D = R({reference}) − R(i) against the critical difference "
            "of Eq. 26 (real N; the paper's printed CD uses N = 1)",
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


FS_METRICS = ("hamming_loss", "micro_f1", "macro_f1")  # paper 004, Figs. 3-6


def plot_fraction_curves(
    runs: pd.DataFrame, metrics: Sequence[str] = FS_METRICS, title: str = ""
) -> plt.Figure:
    """Paper 004, Figs. 3-6: each metric (mean ± std over folds) against the % of features kept,
    one line per selector in its fixed style, one row of panels per classifier; all features as
    a black dashed horizontal line."""
    methods = list(dict.fromkeys(runs["tags.method"]))
    fig, axes = _figure(len(methods), len(metrics), 4.2 * len(metrics), 3.2 * len(methods) + 0.7)
    for row, method in zip(axes, methods, strict=True):
        mine = runs[runs["tags.method"] == method]
        selected = mine[mine["tags.selector"] != "none"]
        selectors = sorted(selected["tags.selector"].unique(), key=list(STYLES).index)
        for ax, metric in zip(row, metrics, strict=True):
            for i, selector in enumerate(selectors):
                group = selected[selected["tags.selector"] == selector].sort_values("fraction")
                _curve(
                    ax,
                    100 * group["fraction"],
                    group[f"metrics.{metric}"],
                    group[f"metrics.{metric}_std"],
                    method_label(selector),
                    i,
                    len(selectors),
                    0.8,
                )
            for value in mine.loc[mine["tags.selector"] == "none", f"metrics.{metric}"]:
                ax.axhline(value, linewidth=1.2, label=method_label("none"), **method_style("none"))
            ax.set_xlabel("features kept (%)")
            ax.set_ylabel(metric_words(metric))
            ax.set_title(method_label(method))
            ax.grid(alpha=0.3)
    _legend(fig, *axes[0][0].get_legend_handles_labels(), ncol=5, title=title)
    return fig


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
PAPER002_CSV = Path(__file__).resolve().parent / "data" / "builtin" / "paper002_tables.csv"
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
            curves[run["label"]] = _artifact_table(run["run_id"], "rounds.csv", index_col=0)
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


def build_report(cfg) -> Path:
    """Read the runs of ``cfg.tracking.experiment`` back from MLflow, write the comparison under
    ``cfg.report.out/<experiment>/`` and log it as the artifacts of a ``report`` run."""
    import mlflow

    from mlgraph.tracking import log_batch, provenance_tags, setup_from_config

    experiment = cfg.tracking.experiment
    experiment_id = setup_from_config(cfg.tracking)
    runs = latest_runs(cfg.tracking.uri, experiment)
    out = Path(cfg.report.out) / experiment
    sections = [
        f"# Comparison report: MLflow experiment `{experiment}`",
        "",
        f"{len(runs)} runs (latest finished per dataset and method) from {cfg.tracking.uri}.",
        "",
    ]
    # Layouts: a feature-fraction sweep (paper 004) if any run has a selector; else, if every run
    # labels all its training points (see fully_supervised), paper 002's tables; else paper 000.
    feature_sweep = (runs["tags.selector"] != "none").any()
    if "metrics.accuracy_all" in runs and runs["metrics.accuracy_all"].notna().all():
        for dataset, group in runs.groupby("tags.dataset", sort=True):
            sections += dual_set_report(dataset, group, out / dataset)
    elif not feature_sweep and fully_supervised(runs):
        sections += table_report(runs, out)
    else:
        for dataset, group in runs.groupby("tags.dataset", sort=True):
            if feature_sweep:
                sections += fraction_report(dataset, group, out / dataset)
            else:
                sections += dataset_report(dataset, group, cfg.report, out / dataset)
    if cfg.report.get("baseline"):  # e.g. tuning=inner beside the explore-tuned comparison
        from mlgraph.side_by_side import side_by_side_section

        sections += side_by_side_section(cfg, experiment, out)
    (out / "report.md").write_text("\n".join(sections))
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
    mlgraph.report ...``): the same config composition as ``mlgraph run`` (so the preset names
    the MLflow experiment), as a Hydra job whose folder keeps the log; ``--help`` lists the options."""
    import sys

    from mlgraph.cli import hydra_main

    hydra_main(build_report, sys.argv[1:] if argv is None else argv, "report")


if __name__ == "__main__":
    main()
