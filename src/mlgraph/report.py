"""Tables and figures: per run (from trial results) and per comparison (runs read back from MLflow).

    python -m mlgraph.report experiment=ssl_comparison      # or: make report
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

import matplotlib

matplotlib.use("Agg")  # figures are files and MLflow artifacts, never windows
import matplotlib.pyplot as plt  # noqa: E402
import mlflow  # noqa: E402
import pandas as pd  # noqa: E402

TITLES = {"avg_precision": "Average precision", "micro_f1": "Micro-F1", "macro_f1": "Macro-F1"}
FIG1_METRICS = ("avg_precision", "micro_f1", "macro_f1")
CONFIG_DIR = Path(__file__).resolve().parents[2] / "conf"


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


# --- Comparison report: runs read back from MLflow -------------------------------------------

# Paper 000's algorithm numbering (Tables 3, 7, 11, 15) and names; other methods follow.
PAPER000 = {"mlknn": "MLkNN", "gfhf": "ML-GFHF", "lgc": "ML-LGC", "fsksc": "ML-FSKSC", "sswl": "SSWL",
            "mlmr": "ML-MR", "mlmrrw": "ML-MRRW"}


def method_label(name: str) -> str:
    return PAPER000.get(name, name)


def latest_runs(uri: str, experiment: str) -> pd.DataFrame:
    """The latest FINISHED run of each (dataset, method, selector, fraction) of ``experiment``
    (report runs excluded)."""
    mlflow.set_tracking_uri(uri)
    runs = mlflow.search_runs(experiment_names=[experiment], filter_string="attributes.status = 'FINISHED'")
    if runs.empty or "tags.method" not in runs:
        raise LookupError(f"no finished run in MLflow experiment {experiment!r} at {uri}")
    runs = runs[runs["tags.method"].notna() & runs["tags.dataset"].notna()].copy()
    runs["tags.selector"] = runs.get("tags.selector", pd.Series(index=runs.index)).fillna("none")
    fraction = runs["params.selector.fraction"] if "params.selector.fraction" in runs else None
    runs["fraction"] = pd.to_numeric(pd.Series(fraction, index=runs.index), errors="coerce").fillna(1.0)
    runs.loc[runs["tags.selector"] == "none", "fraction"] = 1.0
    keys = ["tags.dataset", "tags.method", "tags.selector", "fraction"]
    runs = runs.sort_values("start_time").groupby(keys).tail(1)
    order = {name: i for i, name in enumerate(PAPER000)}
    runs = runs.assign(_order=runs["tags.method"].map(lambda m: order.get(m, len(order))))
    return runs.sort_values(["tags.dataset", "_order", "tags.method"], ignore_index=True)


def _artifact_table(run_id: str, name: str, **read) -> pd.DataFrame:
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
        columns = {label: t[t.status == "ok"].groupby(keys[blocks])[metric].mean()
                   for label, t in trials.items()}
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
    lines += ["| " + " | ".join([str(i)] + [cell(v) for v in row]) + " |"
              for i, row in zip(table.index, table.itertuples(index=False))]
    return "\n".join(lines)


def dataset_report(dataset: str, runs: pd.DataFrame, cfg, out: Path) -> list[str]:
    """Figure, Friedman table, rank-sum differences and CD diagrams of one dataset; returns the
    markdown section."""
    from mlgraph import stats

    out.mkdir(parents=True, exist_ok=True)
    summaries, trials = {}, {}
    for run_id, method in zip(runs.run_id, runs["tags.method"]):
        summaries[method_label(method)] = _artifact_table(run_id, "summary.csv", index_col=0)
        trials[method_label(method)] = _artifact_table(run_id, "trials.csv")
    metrics = list(cfg.metrics)
    fig = plot_metrics_vs_rate(summaries, metrics, title=f"{len(summaries)} methods on {dataset}")
    save_figure(fig, out / "metrics_vs_rate.png")
    means = pd.concat({label: s.set_index("step")[metrics] for label, s in summaries.items()}, axis=1)
    means.to_csv(out / "means.csv")
    section = [f"## {dataset}", "", f"![metrics vs rate]({dataset}/metrics_vs_rate.png)", ""]
    tables = score_tables(trials, metrics, cfg.blocks)
    reference = method_label(cfg.reference)
    friedman = stats.friedman_table(tables, alpha=cfg.alpha)
    friedman.to_csv(out / "friedman.csv")
    section += [f"Friedman test over blocks = {cfg.blocks} (Eq. 25; α = {cfg.alpha})", "",
                markdown(friedman), ""]
    if reference in summaries and len(summaries) > 1:
        posthoc = stats.posthoc_table(tables, reference=reference, alpha=cfg.alpha)
        posthoc.to_csv(out / "posthoc.csv")
        section += [f"Rank-sum differences D = R({reference}) − R(i) against the critical difference "
                    "of Eq. 26 (real N; the paper's printed CD uses N = 1)", "", markdown(posthoc), ""]
    for metric, table in tables.items():
        if table.shape[1] > 2 and len(table) > 1:
            save_figure(stats.cd_diagram(table, alpha=cfg.alpha, title=f"{dataset}: {metric}"),
                        out / f"cd_{metric}.png")
            section += [f"![CD diagram {metric}]({dataset}/cd_{metric}.png)"]
    return section + [""]


FS_METRICS = ("hamming_loss", "micro_f1", "macro_f1")  # paper 004, Figs. 3-6
TITLES.update(hamming_loss="Hamming loss")


def plot_fraction_curves(runs: pd.DataFrame, metrics: Sequence[str] = FS_METRICS, title: str = "") -> plt.Figure:
    """Paper 004, Figs. 3-6: each metric (mean ± std over folds) against the % of features kept,
    one line per selector, one row of panels per classifier; all features as a horizontal line."""
    methods = list(dict.fromkeys(runs["tags.method"]))
    fig, axes = plt.subplots(len(methods), len(metrics), figsize=(4.2 * len(metrics), 3.4 * len(methods)),
                             squeeze=False)
    for row, method in zip(axes, methods):
        mine = runs[runs["tags.method"] == method]
        for ax, metric in zip(row, metrics):
            for selector, group in mine[mine["tags.selector"] != "none"].groupby("tags.selector"):
                group = group.sort_values("fraction")
                ax.errorbar(100 * group["fraction"], group[f"metrics.{metric}"],
                            yerr=group[f"metrics.{metric}_std"], marker="o", markersize=3, capsize=2,
                            linewidth=1, label=selector.upper())
            for value in mine.loc[mine["tags.selector"] == "none", f"metrics.{metric}"]:
                ax.axhline(value, color="black", linestyle="--", linewidth=1, label="all features")
            ax.set_xlabel("Features kept (%)")
            ax.set_title(f"{method_label(method)}: {TITLES.get(metric, metric)}")
            ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=8)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig


def fraction_report(dataset: str, runs: pd.DataFrame, out: Path) -> list[str]:
    """Curves and the table (metric per selector and fraction) of one dataset's feature sweep."""
    out.mkdir(parents=True, exist_ok=True)
    save_figure(plot_fraction_curves(runs, title=f"Feature selection on {dataset}"), out / "fraction_curves.png")
    table = runs.pivot_table(index=["tags.method", "fraction"], columns="tags.selector",
                             values=[f"metrics.{m}" for m in FS_METRICS])
    table.columns = [f"{metric.removeprefix('metrics.')}[{sel}]" for metric, sel in table.columns]
    table.to_csv(out / "fraction_table.csv")
    section = [f"## {dataset}", "", f"![fraction curves]({dataset}/fraction_curves.png)", ""]
    for metric in FS_METRICS:
        wide = runs[runs["tags.selector"] != "none"].pivot_table(
            index=["tags.method", "fraction"], columns="tags.selector", values=f"metrics.{metric}")
        wide.index = [f"{m} {100 * f:.0f}%" for m, f in wide.index]
        for method, value in runs.loc[runs["tags.selector"] == "none", ["tags.method", f"metrics.{metric}"]].values:
            wide.loc[f"{method} all"] = value
        section += [f"{TITLES.get(metric, metric)} (mean over folds)", "", markdown(wide), ""]
    return section


def build_report(cfg) -> Path:
    """Read the runs of ``cfg.tracking.experiment`` back from MLflow, write the comparison under
    ``cfg.report.out/<experiment>/`` and log it as the artifacts of a ``report`` run."""
    from mlgraph.tracking import log_batch, provenance_tags, setup_from_config

    experiment = cfg.tracking.experiment
    experiment_id = setup_from_config(cfg.tracking)
    runs = latest_runs(cfg.tracking.uri, experiment)
    out = Path(cfg.report.out) / experiment
    sections = [f"# Comparison report: MLflow experiment `{experiment}`", "",
                f"{len(runs)} runs (latest finished per dataset and method) from {cfg.tracking.uri}.", ""]
    feature_sweep = (runs["tags.selector"] != "none").any()
    for dataset, group in runs.groupby("tags.dataset", sort=True):
        if feature_sweep:
            sections += fraction_report(dataset, group, out / dataset)
        else:
            sections += dataset_report(dataset, group, cfg.report, out / dataset)
    (out / "report.md").write_text("\n".join(sections))
    with mlflow.start_run(experiment_id=experiment_id, run_name="report") as run:
        log_batch(run.info.run_id, tags={**provenance_tags(), "kind": "report",
                                         "source_runs": ",".join(runs.run_id)[:5000]},
                  params={f"report.{k}": str(v) for k, v in cfg.report.items()})
        mlflow.log_artifacts(str(out))
    print(f"report: {out / 'report.md'} (MLflow run {run.info.run_id})")
    return out


def main(argv: list[str] | None = None) -> None:
    """``python -m mlgraph.report experiment=ssl_comparison [report.alpha=0.1 ...]``: the same
    config composition as ``python -m run`` (so the preset names the MLflow experiment)."""
    import sys

    from hydra import compose, initialize_config_dir

    import mlgraph.tracking  # noqa: F401  (registers the abspath resolver)

    overrides = sys.argv[1:] if argv is None else argv
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
        cfg = compose(config_name="config", overrides=overrides)
    build_report(cfg)


if __name__ == "__main__":
    main()
