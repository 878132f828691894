"""Pick tuned hyper-parameters from a tracked exploration sweep.

    python -m mlgraph.reporting.hparams hparam_search --dataset yeast --method mlmrrw

reads the runs of an MLflow experiment (e.g. the one filled by
``experiments/<method>_hparam_search.yaml``), ranks those of one dataset and method by a metric
averaged over their trials, prints the leaders, and prints the ``conf/hparams`` file that
would select the chosen run; ``--write`` writes it. The tuned keys are the ``method.*``
parameters that vary between those runs.

Selection rule: the best metric. With ``--prefer-max P`` (default ``gamma_I`` when it was
swept), among the runs within ``--tolerance`` (default 0.001, well inside the noise of a small
exploration) of the best, take the one with the largest P, then the best metric. Without it,
ML-MR's exploration on yeast picks γ_I = 0 by a margin of 0.0002, i.e. kernel ridge regression,
and the manifold term and the reliance weights would not be exercised at all; the γ_I = 0
ablation stays available as an explicit comparison row.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import mlflow
import pandas as pd
from omegaconf import OmegaConf

CONF = (
    Path(__file__).resolve().parents[1] / "conf" / "hparams"
)  # the checkout's conf/hparams (src/mlgraph/conf links it)


def ranked_runs(
    experiment: str, dataset: str, method: str, metric: str = "avg_precision_overall", uri: str | None = None
) -> tuple[pd.DataFrame, tuple[str, ...]]:
    """Finished runs of ``experiment`` on ``dataset`` with ``method``, best ``metric`` first, and
    the ``method.*`` parameters that vary between them."""
    if uri:
        mlflow.set_tracking_uri(uri)
    runs = mlflow.search_runs(
        experiment_names=[experiment],
        filter_string=f"tags.dataset = '{dataset}' and tags.method = '{method}' "
        "and attributes.status = 'FINISHED'",
    )
    if runs.empty:
        raise LookupError(f"no finished {method} run on {dataset} in experiment {experiment!r}")
    keys = tuple(
        c.removeprefix("params.")
        for c in runs.columns
        if c.startswith("params.method.") and runs[c].nunique(dropna=False) > 1
    )
    if not keys:
        raise LookupError(
            f"no method parameter varies between the {len(runs)} finished {method} runs on "
            f"{dataset}: nothing to choose"
        )
    columns = [f"params.{k}" for k in keys] + [f"metrics.{metric}", "run_id"]
    return runs[columns].sort_values(f"metrics.{metric}", ascending=False, ignore_index=True), keys


def select(ranked: pd.DataFrame, metric: str, tolerance: float, prefer_max: str | None = None) -> pd.Series:
    """The best run, or the one with the largest ``prefer_max`` among those within
    ``tolerance`` of the best ``metric``."""
    if not prefer_max:
        return ranked.iloc[0]
    close = ranked[ranked[f"metrics.{metric}"] >= ranked[f"metrics.{metric}"].iloc[0] - tolerance]
    preferred = close[f"params.method.{prefer_max}"].astype(float)
    return close[preferred == preferred.max()].iloc[0]


def hparams_yaml(best: pd.Series, keys: tuple[str, ...], source: str, defaults: list[str] = ()) -> str:
    """A ``# @package _global_`` file setting ``keys`` to the values of one ranked run, after
    the hparams files in ``defaults`` (e.g. ML-LGC on top of ML-GFHF's graph settings)."""
    lines = ["# @package _global_", f"# Chosen by {source}"]
    if defaults:
        lines += ["defaults:", *[f"  - {d}" for d in defaults], "  - _self_"]
    lines += ["method:"]
    lines += [f"  {k.split('.', 1)[1]}: {best[f'params.{k}']}" for k in keys if k.startswith("method.")]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="mlgraph hparams",
        description=__doc__.split("\n\n")[0],
        epilog="Selection rule and example: see `pydoc mlgraph.reporting.hparams`.",
    )
    parser.add_argument("experiment")
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--method", default="mlmrrw")
    parser.add_argument("--metric", default="avg_precision_overall")
    outputs = Path(os.environ.get("MLGRAPH_OUTPUT_DIR", "outputs")).resolve()
    parser.add_argument("--uri", default=f"sqlite:///{outputs}/mlflow.db", help="MLflow tracking URI")
    parser.add_argument("--top", type=int, default=5)
    parser.add_argument("--tolerance", type=float, default=0.001)
    parser.add_argument(
        "--prefer-max",
        default=None,
        help="among runs within --tolerance of the best, take the largest value of this "
        "method parameter (default: gamma_I when it was swept)",
    )
    parser.add_argument("--write", action="store_true", help="write conf/hparams/<method>_<dataset>.yaml")
    args = parser.parse_args(argv)
    ranked, keys = ranked_runs(args.experiment, args.dataset, args.method, args.metric, args.uri)
    print(ranked.head(args.top).to_string(index=False))
    prefer = args.prefer_max or ("gamma_I" if "method.gamma_I" in keys else None)
    chosen = select(ranked, args.metric, args.tolerance, prefer)
    rule = f"largest {prefer} within {args.tolerance}" if prefer else "best"
    source = (
        f"python -m mlgraph.reporting.hparams {args.experiment} --dataset {args.dataset} --method "
        f"{args.method}\n# ({args.metric} = {chosen[f'metrics.{args.metric}']:.4f}; best of "
        f"{len(ranked)} runs = {ranked[f'metrics.{args.metric}'].iloc[0]:.4f}; rule: {rule})"
    )
    path = CONF / f"{args.method}_{args.dataset}.yaml"
    kept = [d for d in (OmegaConf.load(path).get("defaults", []) if path.exists() else []) if d != "_self_"]
    text = hparams_yaml(chosen, keys, source, kept)  # an existing file's defaults list is kept
    print(f"\n{text}")
    if args.write:
        path.write_text(text)


if __name__ == "__main__":
    main()
