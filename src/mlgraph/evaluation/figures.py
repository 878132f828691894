"""Figures and their words: metric titles, one fixed style per method, the per-run curves, CD
diagrams, and :func:`save_figure` (PNG, SVG and PDF). The per-run figure of the engine and the
comparison reports of :mod:`mlgraph.reporting` draw with these."""

from __future__ import annotations

import logging
import os
import sys
import threading
import zlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

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
# A method not in STYLES (a user's own) gets a colour and a marker that no method in STYLES has,
# each picked by a checksum of its name (not hash(), which changes between processes), so it is
# drawn alike in every figure and never as one of the shipped methods. Paul Tol's colours.
FALLBACK_COLOURS = ("#332288", "#44AA99", "#999933", "#CC6677", "#882255", "#DDCC77")
FALLBACK_MARKERS = ("h", "p", "<", ">", "d", "H", "8")

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
    method's style. Unknown names get a colour and marker of :data:`FALLBACK_COLOURS` and
    :data:`FALLBACK_MARKERS` chosen by a checksum of the name, so that the same name is drawn
    alike in every figure and in a colour no shipped method has."""
    words = name.split(" ")
    candidates = [" ".join(words[:n]) for n in range(len(words), 0, -1)]  # "DSML B=1.05" → "DSML"
    key = next((k for c in candidates for k in STYLES if c in (k, method_label(k))), name)
    if key not in STYLES:
        digest = zlib.crc32(key.encode("utf-8"))
        colour = FALLBACK_COLOURS[digest % len(FALLBACK_COLOURS)]
        marker = FALLBACK_MARKERS[(digest // len(FALLBACK_COLOURS)) % len(FALLBACK_MARKERS)]
        linestyle = "-"
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

    ``summaries`` maps a method key or label to the output of :func:`mlgraph.engine.runner.summarise`.
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
    """:func:`mlgraph.evaluation.stats.cd_diagram` with each method in its fixed colour."""
    from mlgraph.evaluation import stats

    palette = {m: method_style(m)["color"] for m in scores.columns}
    return stats.cd_diagram(
        scores, alpha=alpha, title=title, higher_is_better=higher_is_better, color_palette=palette
    )


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
