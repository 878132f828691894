"""Tables and figures per comparison: runs read back from MLflow.

python -m mlgraph.report experiment=ssl_comparison      # or: make report

``report.md`` and ``report.html`` open with one table of means per metric (data sets × methods,
:mod:`mlgraph.reporting.tables`), then one verdict per metric, then the tests across data sets
(:mod:`mlgraph.evaluation.comparison`) with their figures, then the layout of the runs' paper
(:mod:`mlgraph.reporting.paper_layouts`): paper 000's figures and tests per data set, paper 002's
tables beside the paper's numbers, paper 004's feature-fraction curves or paper 001's dual-set tables.
"""

from __future__ import annotations

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
from mlgraph.evaluation.figures import method_label
from mlgraph.evaluation.metrics import METRICS
from mlgraph.reporting.paper_layouts import (
    DUAL_METRICS,
    TABLE_METRICS,
    dataset_report,
    dual_set_report,
    fraction_report,
    fully_supervised,
    table_report,
)
from mlgraph.reporting.runs import latest_runs, long_scores, markdown

log = logging.getLogger(__name__)


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
