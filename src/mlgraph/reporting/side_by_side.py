"""Two comparisons of the same methods and datasets side by side (``report.baseline``).

``mlgraph report experiment=ssl_comparison_inner report.baseline=ssl_comparison`` writes, beside
the report of the first MLflow experiment, per dataset and metric: each method's mean over all
trials in both experiments and the difference (this − baseline), and the conclusions of the
Friedman test and of Eq. 26's critical difference in both, with what changed: whether H0 is
rejected, and which pairs of methods differ significantly (|R_i − R_j| ≥ CD, blocks as in
``report.blocks``). Paper 000's comparison with ``tuning=inner`` against the explore-tuned one is
the use it was built for (docs/user_guide/tuning.md).
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pandas as pd

from mlgraph.evaluation import stats
from mlgraph.evaluation.figures import method_label
from mlgraph.evaluation.metrics import METRICS
from mlgraph.reporting.runs import artifact_table, latest_runs, markdown, score_tables


def _trials(runs: pd.DataFrame) -> dict[str, dict[str, pd.DataFrame]]:
    """dataset -> method label -> trials.csv of the run."""
    out: dict[str, dict[str, pd.DataFrame]] = {}
    for run_id, dataset, method in zip(runs.run_id, runs["tags.dataset"], runs["tags.method"], strict=True):
        out.setdefault(dataset, {})[method_label(method)] = artifact_table(run_id, "trials.csv")
    return out


def significant_pairs(scores: pd.DataFrame, metric: str, alpha: float) -> set[tuple[str, str]]:
    """(better, worse) pairs whose rank sums differ by at least Eq. 26's critical difference."""
    higher = METRICS[metric].greater_is_better if metric in METRICS else True
    rank_sums = stats.ranks(scores, higher).sum(axis=0)
    cd = stats.critical_difference(scores.shape[1], scores.shape[0], alpha)
    pairs = set()
    for a, b in itertools.combinations(scores.columns, 2):
        if abs(rank_sums[a] - rank_sums[b]) >= cd:
            pairs.add((a, b) if rank_sums[a] < rank_sums[b] else (b, a))  # rank 1 is best
    return pairs


def _pairs_text(pairs) -> str:
    return ", ".join(f"{a} > {b}" for a, b in sorted(pairs)) or "none"


def compare(
    trials_a: dict, trials_b: dict, metrics, blocks: str, alpha: float
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(means: one row per dataset, metric and method with both means and the difference;
    conclusions: one row per dataset and metric with both tests' outcomes and what changed)."""
    mean_rows, conclusion_rows = [], []
    for dataset in sorted(set(trials_a) & set(trials_b)):
        a, b = trials_a[dataset], trials_b[dataset]
        methods = [m for m in a if m in b]
        for metric in metrics:
            for method in methods:
                mean_a = a[method].loc[a[method].status == "ok", metric].mean()
                mean_b = b[method].loc[b[method].status == "ok", metric].mean()
                mean_rows.append(
                    {
                        "dataset": dataset,
                        "metric": metric,
                        "method": method,
                        "this": mean_a,
                        "baseline": mean_b,
                        "difference": mean_a - mean_b,
                    }
                )
            tables_a = score_tables({m: a[m] for m in methods}, [metric], blocks)[metric]
            tables_b = score_tables({m: b[m] for m in methods}, [metric], blocks)[metric]
            if min(tables_a.shape[1], tables_b.shape[1]) < 2 or min(len(tables_a), len(tables_b)) < 2:
                continue
            fa = stats.friedman_test(tables_a, alpha)
            fb = stats.friedman_test(tables_b, alpha)
            pa, pb = significant_pairs(tables_a, metric, alpha), significant_pairs(tables_b, metric, alpha)
            conclusion_rows.append(
                {
                    "dataset": dataset,
                    "metric": metric,
                    "F_R (this)": fa["F_R"],
                    "F_R (baseline)": fb["F_R"],
                    "H0 rejected (this / baseline)": f"{bool(fa['reject_H0'])} / {bool(fb['reject_H0'])}",
                    "significant pairs, this only": _pairs_text(pa - pb),
                    "significant pairs, baseline only": _pairs_text(pb - pa),
                    "significant pairs, both": len(pa & pb),
                    "conclusion changes": bool(pa != pb or bool(fa["reject_H0"]) != bool(fb["reject_H0"])),
                }
            )
    return pd.DataFrame(mean_rows), pd.DataFrame(conclusion_rows)


def side_by_side_section(cfg, experiment: str, out: Path) -> list[str]:
    """The report section for ``report.baseline`` (markdown lines), with ``side_by_side_means.csv``
    and ``side_by_side_conclusions.csv`` written into ``out``."""
    baseline = cfg.report.baseline
    trials_a = _trials(latest_runs(cfg.tracking.uri, experiment))
    trials_b = _trials(latest_runs(cfg.tracking.uri, baseline))
    metrics = list(cfg.report.metrics)
    means, conclusions = compare(trials_a, trials_b, metrics, cfg.report.blocks, cfg.report.alpha)
    out.mkdir(parents=True, exist_ok=True)
    means.to_csv(out / "side_by_side_means.csv", index=False)
    conclusions.to_csv(out / "side_by_side_conclusions.csv", index=False)
    section = [
        f"# Beside `{baseline}`",
        "",
        f"Mean over all trials in `{experiment}` (this) and `{baseline}` (baseline), and the "
        f"difference this − baseline; significance by Friedman (Eq. 25) and Eq. 26's critical "
        f"difference over blocks = {cfg.report.blocks}, α = {cfg.report.alpha}.",
        "",
    ]
    for metric in metrics:
        part = means[means.metric == metric]
        if part.empty:
            continue
        wide = part.pivot_table(index="method", columns="dataset", values="difference", sort=False)
        section += [f"## {metric}: this − baseline", "", markdown(wide, "{:+.4f}"), ""]
    if not conclusions.empty:
        section += ["## Conclusions", "", markdown(conclusions.set_index(["dataset", "metric"])), ""]
    return section
