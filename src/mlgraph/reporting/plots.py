"""Figures of a :class:`~mlgraph.evaluation.comparison.Comparison` across data sets: the Nemenyi
and Bonferroni–Dunn critical-difference diagrams (Demšar 2006, Figs. 1 and 2) and the simplex of
the Bayesian signed-rank test's posterior (Benavoli et al. 2017, Fig. 5). Each method keeps its
fixed colour and marker (:func:`mlgraph.evaluation.figures.method_style`) and its display name.
Figures are drawn on an Agg canvas, outside pyplot's global state."""

from __future__ import annotations

import math

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from mlgraph.evaluation.comparison import Comparison
from mlgraph.evaluation.figures import TITLES, cd_figure, method_label, method_style

__all__ = ["bonferroni_dunn_figure", "nemenyi_figure", "simplex_figure"]

SIMPLEX_POINTS = 3000  # posterior samples drawn per panel (the probabilities use all of them)


def _metric(comparison: Comparison) -> str:
    return TITLES.get(comparison.metric, comparison.metric)


def nemenyi_figure(comparison: Comparison) -> Figure | str:
    """The Nemenyi critical-difference diagram over the data sets of ``comparison.means``, or
    the sentence saying why the test does not apply."""
    result = comparison.across["nemenyi"]
    if isinstance(result, str):
        return result
    means = comparison.means.rename(columns=method_label)
    return cd_figure(
        means,
        comparison.alpha,
        f"{_metric(comparison)}: Nemenyi over {result['N']} data sets",
        comparison.higher_is_better,
    )


def bonferroni_dunn_figure(comparison: Comparison) -> Figure | str:
    """Every method at its average rank, one row each (best on top), and the band of ± CD
    around the reference: a method outside the band differs significantly from the reference
    (Bonferroni–Dunn). The sentence saying why when the test does not apply."""
    result = comparison.across["bonferroni_dunn"]
    if isinstance(result, str):
        return result
    ranks = result["average_ranks"].sort_values()
    k, cd = result["K"], result["CD"]
    centre = float(ranks[comparison.reference])
    fig = Figure(figsize=(6.4, 1.3 + 0.32 * k))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    ax.axvspan(max(0.5, centre - cd), min(k + 0.5, centre + cd), color="#E8E8E8", zorder=0)
    ax.axvline(centre, color="#999999", linewidth=0.8, zorder=1)
    for row, (method, rank) in enumerate(ranks.items()):
        style = method_style(method)
        ax.plot(
            [rank],
            [row],
            marker=style["marker"],
            color=style["color"],
            markerfacecolor=style["markerfacecolor"],
            markersize=7,
            linestyle="none",
            zorder=3,
        )
        outside = abs(rank - centre) >= cd and method != comparison.reference
        ax.annotate(
            f"{method_label(method)} ({rank:.2f})" + (" *" if outside else ""),
            (rank, row),
            xytext=(8, 0),
            textcoords="offset points",
            va="center",
            fontsize=9,
            fontweight="bold" if method == comparison.reference else "normal",
        )
    ax.set_xlim(0.5, k + 0.5 + 0.25 * k)
    ax.set_xticks(range(1, k + 1))
    ax.set_ylim(k - 0.5, -0.5)
    ax.set_yticks([])
    ax.set_xlabel("average rank (1 = best)")
    for side in ("left", "right", "top"):
        ax.spines[side].set_visible(False)
    ax.set_title(
        f"{_metric(comparison)}: Bonferroni–Dunn against {method_label(comparison.reference)}, "
        f"CD = {cd:.2f} (α = {comparison.alpha:g}, {result['N']} data sets)\n"
        "grey band: within CD of the reference; * differs significantly",
        fontsize=9,
    )
    fig.tight_layout()
    return fig


def _project(p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Barycentric (better, equivalent, worse) to the plane: better at the bottom left,
    worse at the bottom right, equivalent on top."""
    _, equivalent, worse = p.T
    return worse + 0.5 * equivalent, equivalent * math.sqrt(3) / 2


def simplex_figure(comparison: Comparison) -> Figure | str:
    """One triangle per method compared with the reference: posterior samples of (P(reference
    better), P(equivalent within the ROPE), P(worse)) as points in the method's colour, each
    corner labelled with the probability that its region is the most probable. The sentence
    saying why when the test does not apply."""
    result = comparison.across["bayesian"]
    if isinstance(result, str):
        return result
    table, samples = result["table"], result["samples"]
    methods = list(table.index)
    columns = min(3, len(methods))
    rows = math.ceil(len(methods) / columns)
    fig = Figure(figsize=(3.3 * columns, 3.1 * rows + 0.6))
    FigureCanvasAgg(fig)
    reference = method_label(comparison.reference)
    rng = np.random.default_rng(result["seed"])
    for i, method in enumerate(methods):
        ax = fig.add_subplot(rows, columns, i + 1)
        sample = samples[method]
        shown = sample[rng.choice(len(sample), min(SIMPLEX_POINTS, len(sample)), replace=False)]
        x, y = _project(shown)
        style = method_style(method)
        ax.scatter(x, y, s=3, color=style["color"], alpha=0.15, linewidths=0, rasterized=True)
        h = math.sqrt(3) / 2
        ax.plot([0, 1, 0.5, 0], [0, 0, h, 0], color="k", linewidth=0.8)
        for a, b in (((0.5, 0), (0.5, h / 3)), ((0.25, h / 2), (0.5, h / 3)), ((0.75, h / 2), (0.5, h / 3))):
            ax.plot(*zip(a, b, strict=True), color="#999999", linewidth=0.6)
        row = table.loc[method]
        ax.text(0, -0.05, f"{reference}\nbetter\n{row['p_better']:.3f}", ha="center", va="top", fontsize=8)
        ax.text(
            1,
            -0.05,
            f"{method_label(method)}\nbetter\n{row['p_worse']:.3f}",
            ha="center",
            va="top",
            fontsize=8,
        )
        ax.text(0.5, h + 0.03, f"equivalent {row['p_equivalent']:.3f}", ha="center", va="bottom", fontsize=8)
        ax.set_title(f"{reference} vs {method_label(method)}", fontsize=9, pad=14)
        ax.set_xlim(-0.25, 1.25)
        ax.set_ylim(-0.35, h + 0.12)
        ax.set_aspect("equal")
        ax.axis("off")
    fig.suptitle(
        f"{_metric(comparison)}: Bayesian signed-rank test over {len(comparison.means)} data sets, "
        f"ROPE ± {result['rope']:g} (seed {result['seed']})",
        fontsize=10,
    )
    fig.tight_layout()
    return fig
