"""Tables and figures built from trial results (and, later, from tracked runs)."""

from __future__ import annotations

from typing import Mapping, Sequence

import matplotlib

matplotlib.use("Agg")  # figures are files and MLflow artifacts, never windows
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

TITLES = {"avg_precision": "Average precision", "micro_f1": "Micro-F1", "macro_f1": "Macro-F1"}
FIG1_METRICS = ("avg_precision", "micro_f1", "macro_f1")


def plot_metrics_vs_rate(summaries: Mapping[str, pd.DataFrame],
                         metrics: Sequence[str] = FIG1_METRICS, title: str = "") -> plt.Figure:
    """Paper 000, Fig. 1–4: one panel per metric against the labelling rate (%), one line per
    method, error bars of ±1 standard deviation over repetitions.

    ``summaries`` maps a method label to the output of :func:`mlgraph.runner.summarise`.
    """
    fig, axes = plt.subplots(1, len(metrics), figsize=(4.2 * len(metrics), 3.6), squeeze=False)
    for ax, metric in zip(axes[0], metrics):
        for label, summary in summaries.items():
            ax.errorbar(summary["step"], summary[metric], yerr=summary[f"{metric}_std"],
                        marker="o", markersize=3, capsize=2, linewidth=1, label=label)
        ax.set_xlabel("Labelling rate (%)")
        ax.set_title(TITLES.get(metric, metric))
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=8)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig


def save_figure(fig: plt.Figure, path) -> None:
    """Write ``fig`` as a PNG and free it (long sweeps create many figures)."""
    fig.savefig(path, dpi=120)
    plt.close(fig)


def format_summary(summary: pd.DataFrame, metrics: Sequence[str] = FIG1_METRICS) -> str:
    """Plain-text table: one row per labelling rate, ``mean ± std`` per metric."""
    table = pd.DataFrame({"rate %": summary["step"].to_numpy()})
    for metric in metrics:
        table[metric] = [f"{m:.4f} ± {s:.4f}" for m, s in
                         zip(summary[metric], summary[f"{metric}_std"])]
    table["trials"] = summary["n_ok"].to_numpy()
    if summary["n_failed"].any():
        table["failed"] = summary["n_failed"].to_numpy()
    return table.to_string(index=False)
