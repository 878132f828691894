"""A :class:`~mlgraph.evaluation.comparison.Comparison` as the table a paper prints: LaTeX
(booktabs), Markdown, an HTML fragment and CSV.

One table per metric: a row per data set, a column per method (its display name,
:func:`mlgraph.evaluation.figures.method_label`), each cell ``mean ± std`` over repetitions, the
best per data set in bold, ``•``/``◦`` after a method the reference is significantly better /
worse than; then a *win/tie/loss* row (the reference against each method, over data sets) and
an *average rank* row. The corner cell names the metric with ↑ (higher is better) or ↓. The
caption says what the numbers are, which test gave the marks, and the metric profile with its
rule for an F1 that has no positive and no prediction.

    from mlgraph.evaluation.comparison import compare_metric
    from mlgraph.reporting import tables
    comparison = compare_metric(scores, "avg_precision", reference="mlmrrw")
    tables.write_tables(comparison, "tables/", profile="mlgraph")   # .tex .md .html .csv
"""

from __future__ import annotations

import io
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
from markupsafe import Markup

from mlgraph.evaluation.comparison import BETTER, WORSE, Comparison
from mlgraph.evaluation.figures import TITLES, method_label, method_style

__all__ = [
    "Cell",
    "caption",
    "latex_document",
    "metric_heading",
    "profile_rule",
    "to_csv",
    "to_html",
    "to_latex",
    "to_markdown",
    "write_tables",
]

MISSING = "—"  # a method without scores on a data set


@dataclass(frozen=True)
class Cell:
    """One shown cell: ``text`` (``mean ± std``, or the mean alone with one repetition, or
    ``—``), ``bold`` (best on its data set), ``mark`` (``•``, ``◦`` or ``""``) and ``note``
    (the p-value, or why there is no test), for a tooltip."""

    text: str
    bold: bool = False
    mark: str = ""
    note: str = ""


def metric_heading(metric: str, higher_is_better: bool) -> str:
    """``"Average precision ↑"``: the metric's title and its direction."""
    return f"{TITLES.get(metric, metric)} {'↑' if higher_is_better else '↓'}"


def profile_rule(profile: str | None, zero_division: object = None) -> str:
    """The metric profile and what it scores an F1 with no positive and no prediction, e.g.
    ``"metric profile mulan: MULAN's F1 = 1 for a label never positive nor predicted"``.
    ``zero_division`` overrides the profile's value (a run's ``metrics.zero_division``)."""
    from mlgraph.config.profiles import PROFILES

    if zero_division is None and profile in PROFILES:
        zero_division = PROFILES[profile].metrics["zero_division"]
    value = str(zero_division).strip().lower()
    never = "a label never positive nor predicted"
    rules = {
        "warn": f"F1 = 0 (with a warning) for {never}",
        "0": f"F1 = 0 for {never}",
        "0.0": f"F1 = 0 for {never}",
        "1": f"MULAN's F1 = 1 for {never}",
        "1.0": f"MULAN's F1 = 1 for {never}",
        "nan": f"{never} left out of the macro-F1 mean",
    }
    name = profile if profile else "unknown"
    rule = rules.get(value, f"the F1 rule for {never} is unknown")
    return f"metric profile {name}: {rule}"


def _number(value: float, decimals: int) -> str:
    return f"{value:.{decimals}f}"


def _p_text(p) -> str:
    if isinstance(p, str):
        return p
    return f"p = {p:.2g}" if p >= 1e-3 else f"p = {p:.1e}"


def _body(comparison: Comparison) -> list[tuple[str, list[Cell]]]:
    cells = comparison.cells
    rows = []
    for dataset in comparison.datasets:
        shown = []
        for method in comparison.methods:
            if (dataset, method) not in cells.index:
                shown.append(Cell(MISSING, note="no scores"))
                continue
            cell = cells.loc[(dataset, method)]
            text = _number(cell["mean"], comparison.decimals)
            if not isinstance(cell["std"], str):
                text += f" ± {_number(cell['std'], comparison.decimals)}"
            note = "" if cell["p_value"] == "reference" else _p_text(cell["p_value"])
            shown.append(Cell(text, bool(cell["best"]), cell["mark"], note))
        rows.append((dataset, shown))
    return rows


def _footer(comparison: Comparison) -> list[tuple[str, list[str]]]:
    """The win/tie/loss and average-rank rows (a sentence spans the row when it does not apply)."""
    wtl, ranks = comparison.wtl, comparison.average_ranks
    rows = []
    if isinstance(wtl, str):
        rows.append(("win/tie/loss", [wtl]))
    else:
        rows.append(
            (
                "win/tie/loss",
                [
                    MISSING if m == comparison.reference else "/".join(str(v) for v in wtl.loc[m])
                    for m in comparison.methods
                ],
            )
        )
    if isinstance(ranks, str):
        rows.append(("average rank", [ranks]))
    else:
        rows.append(("average rank", [f"{ranks[m]:.2f}" for m in comparison.methods]))
    return rows


def caption(comparison: Comparison, *, profile: str | None = "mlgraph", zero_division: object = None) -> str:
    """What the table shows, in one paragraph of plain text (see the module docstring)."""
    low, high = comparison.repetitions
    reps = f"{low}" if low == high else f"{low}–{high}"
    reference = method_label(comparison.reference)
    words = [
        f"{metric_heading(comparison.metric, comparison.higher_is_better)} "
        f"({'higher' if comparison.higher_is_better else 'lower'} is better): mean ± std over "
        f"{reps} repetition{'s' if high > 1 else ''} per data set; the best per data set in bold.",
        f"{BETTER}/{WORSE}: {reference} is significantly better/worse than the method "
        f"({comparison.test_name} over repetitions, α = {comparison.alpha:g}).",
        f"win/tie/loss: of {reference} against each method over data sets;",
        f"average rank over {len(comparison.ranked_datasets)} data set"
        f"{'' if len(comparison.ranked_datasets) == 1 else 's'} (1 = best).",
    ]
    if comparison.test == "wilcoxon" and 2.0 / 2**high >= comparison.alpha:
        words.append(
            f"With {high} repetitions the signed-rank test's smallest p is {2.0 / 2**high:.3g}: "
            f"no mark can reach α = {comparison.alpha:g}."
        )
    reasons = pd.Series(
        [p for p in comparison.cells["p_value"] if isinstance(p, str) and p != "reference"], dtype=object
    )
    if len(reasons):
        counts = reasons.value_counts(sort=False)
        words.append(
            "No mark where the test does not apply: "
            + "; ".join(f"{why} ({n} cell{'s' if n > 1 else ''})" for why, n in counts.items())
            + "."
        )
    words += [note[0].upper() + note[1:] + "." for note in comparison.notes]
    rule = profile_rule(profile, zero_division)
    words.append(rule[0].upper() + rule[1:] + ".")
    return " ".join(words)


# --------------------------------------------------------------------------
# Markdown
# --------------------------------------------------------------------------
def _md(text: str) -> str:
    return text.replace("|", "\\|")


def to_markdown(
    comparison: Comparison, *, profile: str | None = "mlgraph", zero_division: object = None
) -> str:
    """A pipe table and its caption below it, in italics."""
    methods = [method_label(m) for m in comparison.methods]
    header = [metric_heading(comparison.metric, comparison.higher_is_better), *methods]
    lines = ["| " + " | ".join(_md(h) for h in header) + " |", "|---|" + "---:|" * len(methods)]
    for dataset, cells in _body(comparison):
        shown = [(f"**{c.text}**" if c.bold else c.text) + (f" {c.mark}" if c.mark else "") for c in cells]
        lines.append("| " + " | ".join([_md(dataset), *shown]) + " |")
    for name, values in _footer(comparison):
        values = values if len(values) == len(methods) else values + [""] * (len(methods) - len(values))
        lines.append("| " + " | ".join([f"*{name}*", *(_md(v) for v in values)]) + " |")
    return (
        "\n".join(lines) + f"\n\n*{_md(caption(comparison, profile=profile, zero_division=zero_division))}*\n"
    )


# --------------------------------------------------------------------------
# LaTeX
# --------------------------------------------------------------------------
_LATEX = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    "±": r"$\pm$",
    "²": r"\textsuperscript{2}",
    "÷": r"$\div$",
    "−": r"$-$",
    "–": "--",
    "—": "---",
    "≥": r"$\geq$",
    "≤": r"$\leq$",
    "α": r"$\alpha$",
    "χ": r"$\chi$",
    "↑": r"$\uparrow$",
    "↓": r"$\downarrow$",
    BETTER: r"$\bullet$",
    WORSE: r"$\circ$",
    "×": r"$\times$",
    "’": "'",
}


def _tex(text: str) -> str:
    """``text`` with LaTeX's special characters escaped and the symbols used here as commands;
    any other non-ASCII letter is left to ``inputenc``."""
    return "".join(_LATEX.get(ch, ch) for ch in str(text))


def to_latex(
    comparison: Comparison,
    *,
    profile: str | None = "mlgraph",
    zero_division: object = None,
    label: str | None = None,
) -> str:
    """A ``table`` environment with a booktabs ``tabular`` (needs ``\\usepackage{booktabs}``),
    caption on top, ``\\label{label}`` (default ``tab:<metric>``; characters a label cannot
    hold become ``-``)."""
    methods = comparison.methods
    lines = [
        r"\begin{table}[htbp]",
        r"\centering",
        r"\small",
        r"\setlength{\tabcolsep}{4pt}",
        rf"\caption{{{_tex(caption(comparison, profile=profile, zero_division=zero_division))}}}",
        rf"\label{{{re.sub(r'[^A-Za-z0-9:_.-]', '-', label or f'tab:{comparison.metric}')}}}",
        r"\begin{tabular}{l" + "c" * len(methods) + "}",
        r"\toprule",
        " & ".join(
            [_tex(metric_heading(comparison.metric, comparison.higher_is_better))]
            + [_tex(method_label(m)) for m in methods]
        )
        + r" \\",
        r"\midrule",
    ]
    for dataset, cells in _body(comparison):
        shown = []
        for c in cells:
            text = rf"\textbf{{{_tex(c.text)}}}" if c.bold else _tex(c.text)
            shown.append(text + (f" {_tex(c.mark)}" if c.mark else ""))
        lines.append(" & ".join([_tex(dataset), *shown]) + r" \\")
    lines.append(r"\midrule")
    for name, values in _footer(comparison):
        if len(values) == len(methods):
            lines.append(" & ".join([_tex(name), *(_tex(v) for v in values)]) + r" \\")
        else:
            lines.append(rf"{_tex(name)} & \multicolumn{{{len(methods)}}}{{l}}{{{_tex(values[0])}}} \\")
    lines += [r"\bottomrule", r"\end{tabular}", r"\end{table}"]
    return "\n".join(lines) + "\n"


def latex_document(tables: Sequence[str]) -> str:
    """A minimal article holding ``tables`` (outputs of :func:`to_latex`), for pdflatex."""
    return "\n".join(
        [
            r"\documentclass{article}",
            r"\usepackage[T1]{fontenc}",
            r"\usepackage[utf8]{inputenc}",
            r"\usepackage[margin=2cm]{geometry}",
            r"\usepackage{booktabs}",
            r"\begin{document}",
            *tables,
            r"\end{document}",
            "",
        ]
    )


# --------------------------------------------------------------------------
# HTML and CSV
# --------------------------------------------------------------------------
def to_html(
    comparison: Comparison, *, profile: str | None = "mlgraph", zero_division: object = None
) -> Markup:
    """An HTML fragment (``templates/comparison_table.html.j2``, autoescaped): the table and
    its caption below it, each method's colour as a swatch beside its name, the p-value or the reason
    for no test as each cell's tooltip."""
    from mlgraph.reporting.html import render

    methods = [{"label": method_label(m), "colour": method_style(m)["color"]} for m in comparison.methods]
    return Markup(
        render(
            "comparison_table.html.j2",
            heading=metric_heading(comparison.metric, comparison.higher_is_better),
            methods=methods,
            rows=_body(comparison),
            footer=_footer(comparison),
            caption=caption(comparison, profile=profile, zero_division=zero_division),
        )
    )


def _csv_value(value):
    if isinstance(value, float) and math.isfinite(value):
        return value
    return str(value)


def to_csv(comparison: Comparison) -> str:
    """One row per (data set, method) with scores: ``dataset``, ``method``, ``label``, ``n``,
    ``mean``, ``std``, ``best``, ``mark``, ``p_value`` (a sentence where no test applies),
    ``average_rank`` and ``win_tie_loss`` (of the reference against the method; ``reference``
    in its own rows)."""
    cells = comparison.cells.reset_index()
    ranks, wtl = comparison.average_ranks, comparison.wtl
    cells.insert(2, "label", [method_label(m) for m in cells["method"]])
    cells["average_rank"] = [ranks if isinstance(ranks, str) else float(ranks[m]) for m in cells["method"]]
    cells["win_tie_loss"] = [
        "reference"
        if m == comparison.reference
        else wtl
        if isinstance(wtl, str)
        else "/".join(str(v) for v in wtl.loc[m])
        for m in cells["method"]
    ]
    for column in ("std", "p_value"):
        cells[column] = [_csv_value(v) for v in cells[column]]
    buffer = io.StringIO()
    cells.to_csv(buffer, index=False)
    return buffer.getvalue()


def write_tables(
    comparison: Comparison,
    folder: str | Path,
    *,
    profile: str | None = "mlgraph",
    zero_division: object = None,
) -> dict[str, Path]:
    """``<metric>.tex``, ``.md``, ``.html`` and ``.csv`` in ``folder`` (created); returns the
    paths by suffix."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    texts = {
        "tex": to_latex(comparison, profile=profile, zero_division=zero_division),
        "md": to_markdown(comparison, profile=profile, zero_division=zero_division),
        "html": str(to_html(comparison, profile=profile, zero_division=zero_division)),
        "csv": to_csv(comparison),
    }
    paths = {}
    for suffix, text in texts.items():
        paths[suffix] = folder / f"{comparison.metric}.{suffix}"
        paths[suffix].write_text(text, encoding="utf-8")
    return paths
