"""The benchmark's report: the runs of its MLflow experiment read back, compared per table
(:mod:`mlgraph.evaluation.comparison`), written as tables (:mod:`mlgraph.reporting.tables`:
LaTeX, Markdown, HTML, CSV) and as one self-contained page (``benchmark.html.j2``).

**One table per labelling rate** (and metric), the data sets as its rows. The statistics across
data sets (Friedman, Nemenyi, Bonferroni–Dunn, Wilcoxon–Holm, the Bayesian signed-rank test)
treat the rows of a table as independent blocks; the rates of one data set share its rows and
its difficulty, so (data set, rate) pairs as blocks would count one data set several times and
make differences look more significant than they are. The per-data-set tests (•/◦) pair the
repetitions of two methods, which drew the same split. A suite whose trials are all fully
labelled (``supervised``) has one table per metric.

The page opens with the means of the first metric (every table's cells in one, each marked where
it ran under the scalable settings, or saying why it could not run), then one verdict line per
table; each table's tests and figures follow in collapsible sections.
"""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from mlgraph.reporting.benchmark.plan import LEFT_OUT, SCALABLE, SKIPPED, BenchmarkPlan

DAGGER = "†"  # a cell that ran under the scalable settings
KEYS = ["dataset", "method", "rate", "repetition"]


# --- The runs, read back -----------------------------------------------------------------------
def _scalable(runs: pd.DataFrame) -> pd.Series:
    solver = runs.get("params.method.solver", pd.Series("", index=runs.index)).astype(str)
    search = runs.get("params.graph.search", pd.Series("", index=runs.index)).astype(str)
    return (solver == "nystrom") | (search == "approximate")


def finished_runs(uri: str, experiment: str) -> pd.DataFrame:
    """Every FINISHED run of ``experiment`` that ran a method on a data set (sweep parents and
    report runs excluded); empty when there is none."""
    import mlflow

    from mlgraph.tracking.store import quiet_artifact_downloads

    quiet_artifact_downloads()
    mlflow.set_tracking_uri(uri)
    if mlflow.get_experiment_by_name(experiment) is None:
        return pd.DataFrame()
    runs = mlflow.search_runs(experiment_names=[experiment], filter_string="attributes.status = 'FINISHED'")
    if runs.empty or "tags.method" not in runs or "tags.dataset" not in runs:
        return pd.DataFrame()
    kind = runs.get("tags.kind", pd.Series(None, index=runs.index, dtype=object))
    keep = runs["tags.method"].notna() & runs["tags.dataset"].notna() & ~kind.isin(["sweep", "report"])
    return runs[keep].reset_index(drop=True)


def read_scores(plan: BenchmarkPlan, runs: pd.DataFrame, metrics: Sequence[str]) -> tuple[pd.DataFrame, dict]:
    """The long table of every successful trial of the plan's (data set, method) pairs: one row
    per (dataset, method, rate, repetition) with the metrics and the trial's fit + predict
    ``seconds``, the repetition keyed
    ``"<seed>:<repetition>"`` (a split is drawn from both, so only equal keys pair); and, per
    pair, whether it ran under the scalable settings, its run ids, its trials and their seconds. Where a pair has several
    finished runs (another call with other rates, say) their trials are merged, the newest run
    winning each (rate, repetition), among the runs that ran as the plan decides (exact, or
    under the scalable settings) where there are such runs."""
    from mlgraph.reporting.runs import artifact_table

    if not len(runs):
        return pd.DataFrame(columns=[*KEYS, *metrics]), {}
    runs = runs[runs["tags.dataset"].isin(plan.datasets) & runs["tags.method"].isin(plan.methods)].copy()
    runs["scalable"] = _scalable(runs)
    frames, how = [], {}
    for (dataset, method), group in runs.groupby(["tags.dataset", "tags.method"], sort=False):
        pair = plan.pair(dataset, method)
        wanted = pair is not None and pair.status == SCALABLE
        matching = group[group["scalable"] == wanted]
        group = (matching if len(matching) else group).sort_values("start_time", ascending=False)
        tables = []
        for _, run in group.iterrows():
            try:
                table = artifact_table(run["run_id"], "trials.csv")
            except Exception:  # a run without its trials (an older layout): nothing to compare
                continue
            table = table[table["status"] == "ok"] if "status" in table else table
            seed = str(run.get("params.seed", "0"))
            tables.append(
                table.assign(
                    dataset=dataset, method=method, repetition=[f"{seed}:{r}" for r in table["repetition"]]
                )
            )
        if not tables:
            continue
        merged = pd.concat(tables, ignore_index=True).drop_duplicates(["rate", "repetition"], keep="first")
        merged["seconds"] = sum(merged.get(c, 0.0) for c in ("fit_seconds", "predict_seconds"))
        frames.append(merged)
        how[(dataset, method)] = {
            "scalable": bool(group["scalable"].iloc[0]),
            "runs": list(group["run_id"]),
            "trials": len(merged),
            "seconds": float(merged["seconds"].sum()),
        }
    if not frames:
        return pd.DataFrame(columns=[*KEYS, *metrics]), how
    scores = pd.concat(frames, ignore_index=True)
    present = [m for m in metrics if m in scores]
    scores = scores[[*KEYS, *present, "seconds"]]
    scores["rate"] = scores["rate"].astype(float).round(10)
    order = {name: i for i, name in enumerate([*plan.datasets, *plan.methods])}  # the plan's order
    scores = scores.sort_values(["dataset", "method"], key=lambda c: c.map(order), kind="stable")
    return scores.reset_index(drop=True), how


def rate_label(rate: float) -> str:
    return "every training row labelled" if rate >= 1 else f"{rate * 100:g} % labelled"


def block_slug(rate: float) -> str:
    return "all_labelled" if rate >= 1 else f"rate_{rate * 100:g}"


# --- The comparisons -----------------------------------------------------------------------
@dataclass
class Block:
    """One labelling rate: a comparison per metric, ``title`` and ``slug`` (its folder)."""

    rate: float
    title: str
    slug: str
    comparisons: dict


def _marked(comparison, plan: BenchmarkPlan, how: dict):
    """``comparison`` with † after the marks of cells run under the scalable settings, and a
    note in its caption for them and for the (data set, method) that could not run."""
    from mlgraph.engine.memory import GB, gigabytes
    from mlgraph.evaluation.figures import method_label

    cells = comparison.cells.copy()
    scalable = [key for key in cells.index if how.get(key, {}).get("scalable")]
    notes = list(comparison.notes)
    if scalable:
        for key in scalable:
            cells.loc[key, "mark"] = (cells.loc[key, "mark"] + " " + DAGGER).strip()
        settings = sorted({" ".join(p.overrides) for p in plan.pairs if p.status == SCALABLE}) or [
            "the scalable settings"
        ]
        notes.append(
            f"{DAGGER}: ran under the scalable settings ({'; '.join(settings)}), where the exact path "
            "does not fit: " + ", ".join(f"{method_label(m)} on {d}" for d, m in scalable)
        )
    skipped = [p for p in plan.pairs if p.status == SKIPPED and p.dataset in comparison.datasets]
    for p in skipped:
        why = f"needs ~{gigabytes(p.needs_gb * GB)} GB" if p.needs_gb else p.why
        notes.append(f"{method_label(p.method)} on {p.dataset} could not run: {why}")
    return dataclasses.replace(comparison, cells=cells, notes=tuple(notes))


def compare_blocks(
    plan: BenchmarkPlan, scores: pd.DataFrame, how: dict, metrics: Sequence[str], alpha: float
) -> list[Block]:
    """One :class:`Block` per labelling rate in ``scores``; each metric compared with the
    plan's reference by :func:`mlgraph.evaluation.comparison.compare_metric`."""
    from mlgraph.evaluation.comparison import compare_metric

    blocks = []
    for rate in sorted(scores["rate"].unique()):
        part = scores[scores["rate"] == rate]
        methods = [m for m in plan.methods if m in set(part["method"])]
        comparisons = {}
        for metric in metrics:
            if metric not in part or part[metric].isna().all():
                continue
            comparison = compare_metric(
                part[["dataset", "method", "repetition", metric]],
                metric,
                reference=plan.reference,
                alpha=alpha,
                methods=methods,
            )
            comparisons[metric] = _marked(comparison, plan, how)
        blocks.append(Block(float(rate), rate_label(rate), block_slug(rate), comparisons))
    return blocks


# --- What the page shows -----------------------------------------------------------------------
def _fmt(value, decimals: int = 3) -> str:
    return f"{value:.{decimals}f}"


def _p(value) -> str:
    if isinstance(value, str):
        return value
    return f"{value:.2g}" if value >= 1e-3 else f"{value:.1e}"


def _p_title(p) -> str:
    if isinstance(p, str):
        return "" if p == "reference" else p
    return f"p = {_p(p)}"


def means_table(plan: BenchmarkPlan, blocks: Sequence[Block], metric: str) -> dict:
    """The opening table: one row per (data set, block) and one column per method, each cell
    the mean ± std of ``metric`` with its mark (best in bold), † where the scalable settings
    ran, and why where the pair could not run ("needs ~N GB") or has no run yet."""
    from mlgraph.engine.memory import GB, gigabytes
    from mlgraph.evaluation.figures import method_label
    from mlgraph.reporting.tables import metric_heading

    rows = []
    heading = None
    for block in blocks:
        comparison = block.comparisons.get(metric)
        if comparison is None:
            continue
        heading = metric_heading(metric, comparison.higher_is_better)
        for dataset in plan.datasets:
            cells = []
            for method in plan.methods:
                key = (dataset, method)
                pair = plan.pair(dataset, method)
                if key in comparison.cells.index:
                    cell = comparison.cells.loc[key]
                    std = "" if isinstance(cell["std"], str) else f" ± {_fmt(cell['std'])}"
                    cells.append(
                        {
                            "text": _fmt(cell["mean"]) + std,
                            "mark": cell["mark"],
                            "bold": bool(cell["best"]),
                            "title": _p_title(cell["p_value"]),
                            "css": "",
                        }
                    )
                elif pair is not None and pair.status == SKIPPED:
                    text = f"needs ~{gigabytes(pair.needs_gb * GB)} GB" if pair.needs_gb else "cannot run"
                    cells.append({"text": text, "mark": "", "bold": False, "title": pair.why, "css": "na"})
                else:
                    cells.append({"text": "no run", "mark": "", "bold": False, "title": "", "css": "na"})
            if any(c["css"] == "" for c in cells) or block is blocks[0]:
                label = dataset if len(blocks) == 1 else f"{dataset} · {block.title}"
                rows.append({"label": label, "cells": cells})
    return {
        "heading": heading or metric,
        "methods": [method_label(m) for m in plan.methods],
        "reference": method_label(plan.reference),
        "rows": rows,
    }


def _friedman_words(result) -> str:
    if isinstance(result, str):
        return f"Friedman's test does not apply ({result})"
    p = result["F_p_value"] if result["decided_by"] == "Iman–Davenport F_F" else result["p_value"]
    verb = "rejects" if result["reject"] else "does not reject"
    return f"Friedman's test {verb} equal ranks over {result['N']} data sets ({result['decided_by']}, p = {_p(p)})"


def verdict(comparison) -> dict:
    """One table's verdict line: the reference's average rank and its win/tie/loss against the
    others, the best method by average rank, Friedman's test and the Wilcoxon–Holm findings."""
    from mlgraph.evaluation.figures import TITLES, method_label

    reference = method_label(comparison.reference)
    ranks, wtl = comparison.average_ranks, comparison.wtl
    words = []
    if isinstance(ranks, str):
        rank_text = ranks
        best = "—"
    else:
        order = ranks.sort_values()
        best = ", ".join(method_label(m) for m in order.index if order[m] == order.iloc[0])
        rank_text = (
            f"{ranks[comparison.reference]:.2f} ({list(order.index).index(comparison.reference) + 1} of {len(order)})"
            if comparison.reference in ranks
            else "no rank"
        )
    totals = "—" if isinstance(wtl, str) else "/".join(str(int(wtl[c].sum())) for c in ("win", "tie", "loss"))
    words.append(_friedman_words(comparison.across["friedman"]))
    dunn = comparison.across["bonferroni_dunn"]
    if not isinstance(dunn, str):
        table = dunn["table"]
        for side in ("better", "worse"):
            found = [method_label(m) for m in table.index if table.loc[m, "verdict"] == side]
            if found:
                words.append(
                    f"Bonferroni–Dunn (CD = {dunn['CD']:.2f}): {reference} significantly {side} than {', '.join(found)}"
                )
    holm = comparison.across["wilcoxon_holm"]
    if not isinstance(holm, str):
        better = [method_label(m) for m in holm.index if holm.loc[m, "verdict"] == "better"]
        worse = [method_label(m) for m in holm.index if holm.loc[m, "verdict"] == "worse"]
        if better:
            words.append(f"Wilcoxon–Holm: {reference} significantly better than {', '.join(better)}")
        if worse:
            words.append(f"Wilcoxon–Holm: {reference} significantly worse than {', '.join(worse)}")
        if not better and not worse:
            words.append(f"Wilcoxon–Holm: no significant difference between {reference} and any method")
    return {
        "metric": TITLES.get(comparison.metric, comparison.metric),
        "reference_rank": rank_text,
        "best": best,
        "wtl": totals,
        "words": "; ".join(words) + ".",
        "css": "",
    }


def tests_context(comparison) -> list[dict]:
    """The tests across data sets as small tables (or the sentence saying why a test does not
    apply; one sentence for all when none applies, for the same reason)."""
    from mlgraph.evaluation.figures import method_label

    across, out = comparison.across, []
    reasons = {r for r in across.values() if isinstance(r, str)}
    if len(reasons) == 1 and all(isinstance(r, str) for r in across.values()):
        return [{"title": "Tests across data sets", "text": f"None applies: {reasons.pop()}."}]
    friedman = across["friedman"]
    if isinstance(friedman, str):
        out.append({"title": "Friedman", "text": friedman})
    else:
        out.append(
            {
                "title": "Friedman (Iman–Davenport)",
                "columns": ["N", "K", "F_R", "p (χ²)", "F_F", "p (F)", "reject"],
                "rows": [
                    [
                        friedman["N"],
                        friedman["K"],
                        _fmt(friedman["F_R"]),
                        _p(friedman["p_value"]),
                        friedman["F_F"] if isinstance(friedman["F_F"], str) else _fmt(friedman["F_F"]),
                        _p(friedman["F_p_value"]),
                        "yes" if friedman["reject"] else "no",
                    ]
                ],
            }
        )
    nemenyi = across["nemenyi"]
    if isinstance(nemenyi, str):
        out.append({"title": "Nemenyi", "text": nemenyi})
    else:
        out.append(
            {
                "title": "Nemenyi",
                "text": f"CD = {nemenyi['CD']:.3f} on average ranks; not significantly worse than the best: "
                + ", ".join(method_label(m) for m in nemenyi["top_group"])
                + ".",
            }
        )
    dunn = across["bonferroni_dunn"]
    if isinstance(dunn, str):
        out.append({"title": "Bonferroni–Dunn", "text": dunn})
    else:
        table = dunn["table"]
        out.append(
            {
                "title": f"Bonferroni–Dunn against {method_label(comparison.reference)} (CD = {dunn['CD']:.3f})",
                "columns": [
                    "method",
                    "average rank",
                    "R̄ref − R̄",
                    f"verdict for {method_label(comparison.reference)}",
                ],
                "rows": [
                    [method_label(m), _fmt(r["average_rank"], 2), _fmt(r["diff"], 2), r["verdict"]]
                    for m, r in table.iterrows()
                ],
            }
        )
    holm = across["wilcoxon_holm"]
    if isinstance(holm, str):
        out.append({"title": "Wilcoxon–Holm", "text": holm})
    else:
        out.append(
            {
                "title": f"Wilcoxon signed-rank, Holm-corrected, {method_label(comparison.reference)} against each",
                "columns": [
                    "method",
                    "n",
                    "p",
                    "p (Holm)",
                    f"verdict for {method_label(comparison.reference)}",
                    "note",
                ],
                "rows": [
                    [method_label(m), int(r["n"]), _p(r["p_value"]), _p(r["p_holm"]), r["verdict"], r["note"]]
                    for m, r in holm.iterrows()
                ],
            }
        )
    bayes = across["bayesian"]
    if isinstance(bayes, str):
        out.append({"title": "Bayesian signed-rank", "text": bayes})
    else:
        out.append(
            {
                "title": f"Bayesian signed-rank (ROPE ± {bayes['rope']:g}, seed {bayes['seed']})",
                "columns": [
                    "method",
                    f"P({method_label(comparison.reference)} better)",
                    "P(equivalent)",
                    "P(worse)",
                    "verdict",
                ],
                "rows": [
                    [
                        method_label(m),
                        _fmt(r["p_better"]),
                        _fmt(r["p_equivalent"]),
                        _fmt(r["p_worse"]),
                        r["verdict"],
                    ]
                    for m, r in bayes["table"].iterrows()
                ],
            }
        )
    return out


def _figures(comparison, folder: Path, out: Path) -> list:
    """The Nemenyi and Bonferroni–Dunn diagrams and the Bayesian simplex of ``comparison``,
    written (PNG, SVG, PDF) and embedded; a test that does not apply draws nothing."""
    from mlgraph.evaluation.figures import TITLES, save_figure
    from mlgraph.reporting.html import embed_figure
    from mlgraph.reporting.plots import bonferroni_dunn_figure, nemenyi_figure, simplex_figure

    found = []
    title = TITLES.get(comparison.metric, comparison.metric)
    for name, draw, caption in (
        ("nemenyi", nemenyi_figure, f"{title}: Nemenyi critical-difference diagram"),
        ("bonferroni_dunn", bonferroni_dunn_figure, f"{title}: Bonferroni–Dunn against the reference"),
        ("bayesian", simplex_figure, f"{title}: Bayesian signed-rank posteriors"),
    ):
        fig = draw(comparison)
        if isinstance(fig, str):
            continue
        folder.mkdir(parents=True, exist_ok=True)
        paths = save_figure(fig, folder / f"{comparison.metric}_{name}")
        found.append(embed_figure(paths, caption, out))
    return found


def status_table(plan: BenchmarkPlan, how: dict) -> pd.DataFrame:
    """One row per (data set, method) of the plan: its protocol, how it ran (or why not), the
    scalable overrides, its runs, and its trials with their summed fit + predict seconds."""
    rows = []
    for pair in plan.pairs:
        ran = how.get((pair.dataset, pair.method))
        status = (
            ("scalable settings" if ran["scalable"] else "exact")
            if ran
            else ("cannot run" if pair.status == SKIPPED else "no run")
        )
        rows.append(
            {
                "dataset": pair.dataset,
                "method": pair.method,
                "protocol": pair.protocol,
                "status": status,
                "overrides": " ".join(pair.overrides),
                "needs_gb": pair.needs_gb if pair.needs_gb is not None else "",
                "why": pair.why,
                "runs": ",".join(ran["runs"]) if ran else "",
                "trials": ran["trials"] if ran else 0,
                "trial_seconds": round(ran["seconds"], 1) if ran else "",
            }
        )
    columns = ["dataset", "method", "protocol", "status", "overrides", "needs_gb", "why", "runs"]
    return pd.DataFrame(rows, columns=[*columns, "trials", "trial_seconds"])


def time_table(plan: BenchmarkPlan, status: pd.DataFrame) -> dict:
    """Data set × method: the trials' summed fit + predict time of each pair that ran (the time
    one core spent on it; jobs run side by side), or how it did not run."""
    from mlgraph.engine.sweep import duration
    from mlgraph.evaluation.figures import method_label

    cells = {(r.dataset, r.method): r for r in status.itertuples()}
    rows = []
    for dataset in dict.fromkeys(p.dataset for p in plan.pairs):
        row = [dataset]
        for method in plan.methods:
            r = cells.get((dataset, method))
            if r is None:
                row.append("")
            elif r.trials:
                row.append(f"{duration(float(r.trial_seconds))} ({r.trials})")
            else:
                row.append("cannot run" if r.status == "cannot run" else "not finished")
        rows.append(row)
    return {"columns": ["data set", *(method_label(m) for m in plan.methods)], "rows": rows}


PROTOCOL_WORDS = {
    "ssl": "labelling-rate holdout (a third for testing)",
    "fixed": "the published train/test split (one trial)",
    "halves": "random halves",
}


def write_report(
    plan: BenchmarkPlan,
    uri: str,
    out: Path,
    log_entries: list[dict],
    argv: Sequence[str],
    *,
    metrics: Sequence[str],
    alpha: float = 0.05,
    runner=None,
) -> Path:
    """Read the plan's finished runs and write ``out/report.html``, ``out/tables/`` (per table
    ``<rate>/<metric>.{tex,md,html,csv}``, ``status.csv``, ``scores.csv``) and the figures in
    ``out/figures/``; log them as a run ``report benchmark <suite>`` in the experiment; return
    the page's path. ``runner``: the plan as :func:`mlgraph.reporting.reproduce.run_plan` ran it
    (for the commands and their exit status)."""
    from mlgraph.evaluation.figures import method_label
    from mlgraph.reporting import tables
    from mlgraph.reporting.html import render
    from mlgraph.reporting.reproduce.page import commands, provenance
    from mlgraph.tracking.store import redact

    out.mkdir(parents=True, exist_ok=True)
    runs = finished_runs(uri, plan.experiment)
    scores, how = read_scores(plan, runs, metrics)
    blocks = compare_blocks(plan, scores, how, metrics, alpha)
    profile = next(
        iter(runs.get("params.profile.name", pd.Series(dtype=object)).dropna().unique()), "mlgraph"
    )
    tables_dir = out / "tables"
    tables_dir.mkdir(exist_ok=True)
    sections, verdicts = [], []
    for block in blocks:
        parts = []
        for i, (metric, comparison) in enumerate(block.comparisons.items()):
            tables.write_tables(comparison, tables_dir / block.slug, profile=profile)
            line = verdict(comparison)
            line["table"] = block.title
            line["anchor"] = f"{block.slug}-{metric}"
            verdicts.append(line)
            parts.append(
                {
                    "anchor": line["anchor"],
                    "title": line["metric"],
                    "table": tables.to_html(comparison, profile=profile),
                    "verdict": line["words"],
                    "tests": tests_context(comparison),
                    "figures": _figures(comparison, out / "figures" / block.slug, out) if i == 0 else [],
                }
            )
        sections.append({"title": block.title, "slug": block.slug, "parts": parts})
    status = status_table(plan, how)
    status.to_csv(tables_dir / "status.csv", index=False)
    scores.to_csv(tables_dir / "scores.csv", index=False)
    protocols = {}
    for dataset, protocol in plan.protocols.items():
        protocols.setdefault(protocol, []).append(dataset)
    skipped = status[status["status"] == "cannot run"]
    again = " ".join(["mlgraph benchmark", plan.suite.name, *(["--quick"] if plan.quick else [])])
    page = render(
        "benchmark.html.j2",
        suite=plan.suite,
        mode="--quick" if plan.quick else "full",
        made=f"{datetime.datetime.now():%Y-%m-%d %H:%M}",
        experiment=plan.experiment,
        uri=redact(uri),
        runs=len(runs),
        command=" ".join(["mlgraph benchmark", *argv]),
        again=again,
        missing=[m for m in plan.missing if m.why != LEFT_OUT],
        left_out=[m.dataset for m in plan.missing if m.why == LEFT_OUT],
        reference=method_label(plan.reference),
        methods=[method_label(m) for m in plan.methods],
        protocols=[(PROTOCOL_WORDS.get(p, f"protocol={p}"), ds) for p, ds in protocols.items()],
        rates=", ".join(rate_label(b.rate) for b in blocks),
        repeats=plan.repeats,
        means=means_table(plan, blocks, metrics[0]) if blocks else None,
        verdicts=verdicts,
        sections=sections,
        skipped=[[r.method, r.dataset, r.why] for r in skipped.itertuples()],
        times=time_table(plan, status),
        dagger=DAGGER,
        any_scalable=any(v["scalable"] for v in how.values()),
        commands=commands(runner, log_entries) if runner is not None else [],
        provenance=provenance(runs),
    )
    path = out / "report.html"
    path.write_text(page, encoding="utf-8")
    _log_report(plan, uri, out, runs)
    return path


def _log_report(plan: BenchmarkPlan, uri: str, out: Path, runs: pd.DataFrame) -> None:
    """The page, tables and figures as the artifacts of a run ``report benchmark <suite>``
    beside the runs."""
    import mlflow

    from mlgraph.tracking.store import log_batch, provenance_tags, setup_experiment

    experiment_id = setup_experiment(uri, plan.experiment)
    with mlflow.start_run(experiment_id=experiment_id, run_name=f"report benchmark {plan.suite.name}") as run:
        tags = {**provenance_tags(), "kind": "report", "benchmark": plan.suite.name}
        log_batch(run.info.run_id, tags={**tags, "source_runs": ",".join(runs.get("run_id", []))[:5000]})
        mlflow.log_artifacts(str(out))
