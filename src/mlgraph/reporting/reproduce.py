"""``mlgraph reproduce PAPER [--quick]``: reproduce a paper into one self-contained HTML report.

    mlgraph reproduce 000 --quick        # or, in a checkout: python -m mlgraph reproduce 000 --quick
    mlgraph reproduce 002                # the paper's protocol (hours on 2 cores)
    mlgraph reproduce 004 --report-only  # only the report, from the runs already in the store

It runs every preset the paper needs (``experiments/*.yaml``) as ``mlgraph run`` sweeps into one
MLflow experiment (``reproduce-<paper>`` or ``reproduce-<paper>-quick``) with ``resume=true``, so
a second call runs only what is missing, then reads the finished runs back and writes
``<report.out>/reproduce/paper<id>[-quick]/report.html``: the paper's numbers beside ours with a
verdict per cell (:func:`cell_verdict`), the paper's stated conclusions with a verdict each (the
claims in ``data/builtin/paper<id>_claims.toml``, :data:`CLAIM_KINDS`), the significance tests,
the figures (embedded; PNG, SVG and PDF beside it) and the provenance (commands, git commit, package
versions, dataset checksums). Data sets that cannot be had offline are listed at the top with the
command that fetches them, and the rest of the report is built without them. Extra arguments
are Hydra overrides for every run (e.g. ``tracking=server tracking.uri=http://host:5000``).
"""

from __future__ import annotations

import argparse
import datetime
import functools
import logging
import math
import re
import shlex
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

log = logging.getLogger(__name__)
BUILTIN = Path(__file__).resolve().parents[1] / "data" / "builtin"


# --- What each paper needs -------------------------------------------------------------------
@dataclass(frozen=True)
class Preset:
    """One ``experiments/<name>.yaml`` sweep; ``datasets`` are the paper's data sets it sweeps
    (``hydra.sweeper.params.dataset``; empty: the preset's own), ``quick_datasets`` the part
    ``--quick`` runs, ``quick``/``full`` the overrides of each mode."""

    name: str
    datasets: tuple[str, ...] = ()
    quick_datasets: tuple[str, ...] | None = None
    quick: tuple[str, ...] = ()
    full: tuple[str, ...] = ()


@dataclass(frozen=True)
class Paper:
    id: str
    title: str
    presets: tuple[Preset, ...]
    needs: tuple[str, ...] = ()  # data sets the presets load without sweeping them
    stand_ins: Mapping[str, str] = field(default_factory=dict)  # paper's data set → offline stand-in
    not_public: Mapping[str, str] = field(default_factory=dict)  # paper's data sets nobody can fetch


FS_DATASETS = ("bibtex", "emotions", "enron", "genbase", "mediamill", "medical", "scene", "yeast")
FS_QUICK = ("emotions", "genbase", "scene", "yeast")  # medical's 1,449 features cost 6× a job of these
PAPERS = {
    "000": Paper(
        "000",
        "ML-MR and ML-MRRW: semi-supervised multi-label manifold regularization with reliance weights",
        (
            Preset(
                "ssl_comparison",
                ("emotions", "scene", "yeast"),
                None,
                ("protocol.repeats=2",),
                ("protocol.repeats=100",),
            ),
            Preset(
                "ssl_comparison_mediamill",
                ("mediamill",),
                None,
                ("protocol.repeats=2",),
                ("protocol.repeats=100",),
            ),
        ),
        stand_ins={"mediamill": "mediamill-small"},
    ),
    "001": Paper(
        "001",
        "DSML: dual set multi-label learning",
        (Preset("dsml_comparison"), Preset("dsml_b_sweep"), Preset("dsml_rounds")),
        needs=("frequency_gender",),
        not_public={
            "calligrapher_font": "Calligrapher-Font was collected by the paper's authors and is not published",
            "brand_type": "Brand-Type was collected by the paper's authors and is not published",
        },
    ),
    "002": Paper(
        "002",
        "ML²: multi-label learning by exploiting the label manifold",
        (
            Preset(
                "ml2_comparison",
                (
                    "cal500",
                    "langlog",
                    "enron",
                    "scene",
                    "yeast",
                    "slashdot",
                    "corel5k",
                    "rcv1subset1-500",
                    "bibtex",
                    "tmc2007-500",
                ),
                ("cal500", "langlog", "enron", "scene", "yeast", "slashdot"),
                ("protocol.repeats=2",),
            ),
        ),
        not_public={
            "image": "image (2,000 × 294 × 5) is not in the MULAN collection this package registers",
            "rcv1-s2": "rcv1subset2 with 944 features is not in the collection (rcv1subset1-500 is)",
            "corel16k-s1": "corel16k (subsets 1 and 2) is not in the collection",
            "corel16k-s2": "corel16k (subsets 1 and 2) is not in the collection",
        },
    ),
    "004": Paper(
        "004",
        "GMBA: graph-margin based multi-label feature selection",
        (
            Preset(
                "feature_fraction",
                FS_DATASETS,
                FS_QUICK,
                ("selector.fraction=0.1,0.3,0.5,0.7,0.9",),  # replaces the preset's nine fractions
            ),
            Preset("feature_fraction_all", FS_DATASETS, FS_QUICK),
        ),
        stand_ins={"mediamill": "mediamill-small"},
    ),
}
REGISTRY_NAMES = {"frequency_gender": "voice"}  # config name → registry name, where they differ


class UnknownPaper(ValueError):
    pass


def paper_spec(paper_id: str) -> Paper:
    """The paper with id ``paper_id`` (``0``, ``00`` and ``000`` all name paper 000)."""
    key = paper_id.strip().zfill(3)
    if key not in PAPERS:
        papers = "; ".join(f"{p.id}: {p.title}" for p in PAPERS.values())
        raise UnknownPaper(
            f"mlgraph reproduce: there is no paper {paper_id!r} to reproduce. The papers this project "
            f"reproduces are {papers}. Paper 003 is not part of the project. Run e.g. "
            "`mlgraph reproduce 000 --quick`."
        )
    return PAPERS[key]


# --- Which data sets are here ----------------------------------------------------------------
@dataclass(frozen=True)
class Missing:
    """A data set of the paper that this run leaves out or replaces, and how to get it."""

    dataset: str
    why: str
    fetch: str | None = None  # the command that fetches it
    stand_in: str | None = None


def missing_files(dataset: str) -> list[str]:
    """The files of a registered data set that are neither shipped, nor in a data directory,
    nor in the download cache (nothing is downloaded here)."""
    from mlgraph.data.registry import DatasetNotFoundError, dataset_files, find_file

    missing = []
    for role, record in dataset_files(REGISTRY_NAMES.get(dataset, dataset)).items():
        if role in ("train", "test"):
            continue  # the official split files serve protocol=fixed only
        try:
            find_file(record.path, alternatives=[record.path + ".gz"])
        except DatasetNotFoundError:
            missing.append(record.path)
    return missing


def resolve_datasets(paper: Paper, wanted: Sequence[str]) -> tuple[list[str], list[Missing]]:
    """The data sets to run (each wanted one, or its offline stand-in) and what is missing."""
    use, missing = [], []
    for dataset in wanted:
        files = missing_files(dataset)
        if not files:
            use.append(dataset)
            continue
        fetch = f"python -m mlgraph.data {REGISTRY_NAMES.get(dataset, dataset)} --fetch"
        stand_in = paper.stand_ins.get(dataset)
        if stand_in and not missing_files(stand_in):
            use.append(stand_in)
            why = f"not available offline ({', '.join(files)}); {stand_in} stands in for it"
        else:
            stand_in = None
            why = f"not available offline ({', '.join(files)}); its cells have no run"
        missing.append(Missing(dataset, why, fetch, stand_in))
    return use, missing


# --- The plan: which commands, into which experiment -----------------------------------------
@dataclass
class Plan:
    paper: Paper
    quick: bool
    experiment: str
    commands: list[tuple[str, list[str]]]  # (preset, the `mlgraph run` arguments)
    missing: list[Missing]
    used: dict[str, str]  # paper's data set → the data set run for it
    overrides: list[str]


def experiment_name(paper: Paper, quick: bool) -> str:
    return f"reproduce-{paper.id}" + ("-quick" if quick else "")


DATASET_SWEEP = "hydra.sweeper.params.dataset="


def make_plan(paper: Paper, quick: bool, overrides: Sequence[str] = ()) -> Plan:
    """The ``mlgraph run`` commands of ``paper``'s presets, each into the reproduction's MLflow
    experiment with ``resume=true``, on the data sets available here (a stand-in where the
    paper's is missing), and what is missing. An override ``hydra.sweeper.params.dataset='a,b'``
    keeps only those data sets (the paper's names or their stand-ins); other overrides go to
    every run, after the preset's (so they win)."""
    experiment = experiment_name(paper, quick)
    only = next(
        (o[len(DATASET_SWEEP) :].strip("'\"").split(",") for o in overrides if o.startswith(DATASET_SWEEP)),
        None,
    )
    overrides = [o for o in overrides if not o.startswith(DATASET_SWEEP)]
    missing = [Missing(name, why) for name, why in paper.not_public.items()]
    used: dict[str, str] = {}
    for dataset in paper.needs:
        run, lost = resolve_datasets(paper, [dataset])
        missing += lost
        used.update({dataset: run[0]} if run else {})
    commands = []
    for preset in paper.presets:
        args = [
            f"experiment={preset.name}",
            f"tracking.experiment={experiment}",
            "resume=true",
            "progress=false",
        ]
        if preset.datasets:
            wanted = preset.quick_datasets if quick and preset.quick_datasets is not None else preset.datasets
            if only is not None:
                wanted = [d for d in wanted if d in only or paper.stand_ins.get(d) in only]
            run, lost = resolve_datasets(paper, wanted)
            missing += [m for m in lost if m not in missing]
            used.update({m.dataset: m.stand_in for m in lost if m.stand_in})
            used.update({d: d for d in wanted if d in run})
            if not run:
                continue
            args.append(f"{DATASET_SWEEP}'{','.join(run)}'")  # quoted: a value for the sweeper
        elif any(d not in used for d in paper.needs):
            continue  # the preset's own data set is missing: nothing of it can run
        args += [*(preset.quick if quick else preset.full), *overrides]
        commands.append((preset.name, args))
    if quick:
        for preset in paper.presets:
            for dataset in preset.datasets:
                if dataset not in used and all(m.dataset != dataset for m in missing) and only is None:
                    missing.append(
                        Missing(dataset, "left out by --quick (run without --quick to include it)")
                    )
    return Plan(paper, quick, experiment, commands, missing, used, list(overrides))


def shown_command(args: Sequence[str]) -> str:
    """The ``mlgraph run`` command line as a shell takes it (``"key='a,b'"`` for sweeper values)."""

    def quoted(arg: str) -> str:
        if "'" in arg and not any(c in arg for c in '"$`\\'):
            return f'"{arg}"'
        return shlex.quote(arg)

    return "mlgraph run " + " ".join(map(quoted, args))


def run_plan(plan: Plan) -> list[dict]:
    """Run each preset as ``python -m mlgraph run ...`` (a fresh process per sweep, as Hydra
    wants), streaming its output; a failing preset is recorded and the next one still runs."""
    done = []
    for preset, args in plan.commands:
        print(f"\n=== paper {plan.paper.id}: {shown_command(args)}", flush=True)
        started = time.perf_counter()
        code = subprocess.call([sys.executable, "-m", "mlgraph", "run", *args])
        done.append(
            {
                "preset": preset,
                "command": shown_command(args),
                "exit": code,
                "seconds": time.perf_counter() - started,
            }
        )
        if code in (130, 143):  # the user stopped it: stop here too, what finished is kept
            raise KeyboardInterrupt
    return done


# --- Reading the runs back -------------------------------------------------------------------
def finished_runs(uri: str, experiment: str) -> pd.DataFrame:
    """The latest finished run per configuration of ``experiment`` (empty when it has none)."""
    from mlgraph.reporting.runs import latest_runs

    try:
        return latest_runs(uri, experiment)
    except LookupError:  # no such experiment, or no finished run in it
        return pd.DataFrame(columns=["run_id", "tags.dataset", "tags.method", "tags.selector", "fraction"])


def _artifact(run_id: str, name: str, **read) -> pd.DataFrame | None:
    import mlflow

    try:
        path = mlflow.artifacts.download_artifacts(run_id=run_id, artifact_path=name)
    except Exception:  # the run has no such artifact (a method without rounds, say)
        return None
    return pd.read_csv(path, **read)


def _param(runs: pd.DataFrame, key: str, default=None) -> pd.Series:
    column = f"params.{key}"
    return runs[column] if column in runs else pd.Series(default, index=runs.index, dtype=object)


def _paper_dataset(dataset: str, used: Mapping[str, str]) -> str:
    """The paper's name of a data set we ran (``mediamill-small`` → ``mediamill`` where it
    stood in)."""
    return next((paper for paper, ours in used.items() if ours == dataset), dataset)


def scores_000(runs: pd.DataFrame, used: Mapping[str, str]) -> tuple[pd.DataFrame, dict]:
    """Paper 000: the mean and std per labelling rate of every run (x = rate in %), and the
    per-(rate, repetition) trial tables by dataset for the Friedman and post hoc tests."""
    rows, trials = [], {}
    for _, run in runs.iterrows():
        summary = _artifact(run["run_id"], "summary.csv", index_col=0)
        table = _artifact(run["run_id"], "trials.csv")
        if summary is None or table is None:
            continue
        dataset = _paper_dataset(run["tags.dataset"], used)
        trials.setdefault(dataset, {})[run["tags.method"]] = table
        for metric in ("avg_precision", "micro_f1", "macro_f1"):
            for _, row in summary.iterrows():
                rows.append(
                    (
                        dataset,
                        "",
                        run["tags.method"],
                        metric,
                        float(row["step"]),
                        row[metric],
                        row[f"{metric}_std"],
                    )
                )
    return _frame(rows), trials


def _frame(rows) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["dataset", "group", "method", "metric", "x", "mean", "std"])


def _dsml_runs(runs: pd.DataFrame) -> pd.DataFrame:
    dsml = runs[runs["tags.method"] == "dsml"].copy()
    dsml["B"] = pd.to_numeric(_param(dsml, "method.B"), errors="coerce").round(2)
    dsml["reuse"] = _param(dsml, "method.model_reuse", "True").astype(str) == "True"
    dsml["adjusting"] = _param(dsml, "method.distribution_adjusting", "True").astype(str) == "True"
    return dsml[dsml["adjusting"] & (pd.to_numeric(_param(dsml, "method.T", 10), errors="coerce") == 10)]


def scores_001(runs: pd.DataFrame) -> tuple[pd.DataFrame, dict]:
    """Paper 001: group ``table2`` (each method; DSML with B = 1.05 and model reuse),
    ``table3`` (DSML by B, methods ``B=1.00`` …) and ``B=<b>`` (DSML with/without reuse after
    each round, x = t); plus the per-fold tables of the Table 2 methods."""
    from mlgraph.reporting.report import DUAL_METRICS

    rows, folds = [], {}
    dsml = _dsml_runs(runs)
    table2 = [*(r for _, r in runs[runs["tags.method"] != "dsml"].iterrows())]
    table2 += [r for _, r in dsml[(dsml.B == 1.05) & dsml.reuse].iterrows()]
    for run in table2:
        for metric in DUAL_METRICS:
            rows.append(
                (
                    run["tags.dataset"],
                    "table2",
                    run["tags.method"],
                    metric,
                    np.nan,
                    run[f"metrics.{metric}"],
                    run[f"metrics.{metric}_std"],
                )
            )
        table = _artifact(run["run_id"], "trials.csv")
        if table is not None:
            folds[run["tags.method"]] = table
    for _, run in dsml[dsml.reuse].iterrows():
        for metric in DUAL_METRICS:
            rows.append(
                (
                    run["tags.dataset"],
                    "table3",
                    f"B={run.B:.2f}",
                    metric,
                    np.nan,
                    run[f"metrics.{metric}"],
                    run[f"metrics.{metric}_std"],
                )
            )
    for _, run in dsml.iterrows():
        curve = _artifact(run["run_id"], "rounds.csv", index_col=0)
        if curve is None:
            continue
        for t, row in curve.iterrows():
            for metric in DUAL_METRICS:
                rows.append(
                    (
                        run["tags.dataset"],
                        f"B={run.B:.2f}",
                        "reuse" if run.reuse else "no reuse",
                        metric,
                        float(t),
                        row[metric],
                        row[f"{metric}_std"],
                    )
                )
    return _frame(rows), folds


def paper_scores_001() -> pd.DataFrame:
    """The paper's own Frequency-Gender numbers in the same layout (for its claims)."""
    table = paper_table("001")
    table = table[table.dataset == "frequency_gender"]
    rows = []
    for _, row in table.iterrows():
        if row["table"] == 2:
            rows.append((row.dataset, "table2", row.method, row.metric, np.nan, row["mean"], row["std"]))
        else:
            rows.append(
                (row.dataset, "table3", f"B={float(row.B):.2f}", row.metric, np.nan, row["mean"], row["std"])
            )
    return _frame(rows)


def scores_tabular(runs: pd.DataFrame, metrics: Sequence[str]) -> pd.DataFrame:
    """Paper 002: one mean and std per (dataset, method, metric); the std is NaN for one split."""
    rows = []
    single = _param(runs, "protocol.repeats").astype(str) == "1"
    for (_, run), one in zip(runs.iterrows(), single, strict=True):
        for metric in metrics:
            mean = run.get(f"metrics.{metric}", np.nan)
            std = np.nan if one else run.get(f"metrics.{metric}_std", np.nan)
            rows.append((run["tags.dataset"], "", run["tags.method"], metric, np.nan, mean, std))
    return _frame(rows)


def paper_scores_002() -> pd.DataFrame:
    table = paper_table("002")
    return _frame(
        (r.dataset, "", r.method, r.metric, np.nan, r["mean"], r["std"]) for _, r in table.iterrows()
    )


def scores_004(runs: pd.DataFrame, used: Mapping[str, str]) -> pd.DataFrame:
    """Paper 004: each selector (method) per classifier (group) at each kept fraction (x, in %),
    and the all-features run as method ``none`` at every fraction."""
    from mlgraph.evaluation.figures import FS_METRICS

    rows = []
    fractions = sorted(runs.loc[runs["tags.selector"] != "none", "fraction"].unique())
    for _, run in runs.iterrows():
        selector = run["tags.selector"]
        xs = [run["fraction"]] if selector != "none" else fractions
        for x in xs:
            for metric in FS_METRICS:
                rows.append(
                    (
                        _paper_dataset(run["tags.dataset"], used),
                        run["tags.method"],
                        selector,
                        metric,
                        round(100 * x),
                        run.get(f"metrics.{metric}", np.nan),
                        run.get(f"metrics.{metric}_std", np.nan),
                    )
                )
    return _frame(rows)


# --- The paper's tables and claims -----------------------------------------------------------
def paper_table(paper_id: str) -> pd.DataFrame:
    """A paper's transcribed table (``data/builtin/paper<id>_tables.csv``), empty if it has none."""
    path = BUILTIN / f"paper{paper_id}_tables.csv"
    return pd.read_csv(path, dtype={"B": str}) if path.exists() else pd.DataFrame()


def _toml(path: Path) -> dict:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib
    with open(path, "rb") as stream:
        return tomllib.load(stream)


def paper_claims(paper_id: str) -> dict:
    """A paper's stated conclusions and how each is checked (``paper<id>_claims.toml``)."""
    return _toml(BUILTIN / f"paper{paper_id}_claims.toml")


@functools.cache
def notes() -> dict:
    """The method notes that explain gaps (``reproduce_notes.toml``), by id."""
    return _toml(BUILTIN / "reproduce_notes.toml")


def cell_notes(paper_id: str, dataset: str, method: str, metric: str) -> list[str]:
    """The ids of the notes about a cell: those of its paper that name its data set, method or
    metric (a field a note does not give matches anything)."""
    method = "dsml" if method.startswith("B=") else method  # paper 001's Table 3: DSML by B
    found = []
    for note_id, note in notes().items():
        if note.get("paper") != paper_id or not any(k in note for k in ("datasets", "methods", "metrics")):
            continue
        if all(
            value in note.get(key, [value])
            for key, value in (("datasets", dataset), ("methods", method), ("metrics", metric))
        ):
            found.append(note_id)
    return found


# --- Verdicts per cell -----------------------------------------------------------------------
def _decimals(text: str) -> int:
    return len(text.split(".")[1]) if "." in text else 0


def cell_verdict(
    ours: float, ours_std: float, paper: float, paper_std: float, decimals: int
) -> tuple[str, float]:
    """Whether one of our numbers reproduces the paper's, and the tolerance used.

    Reproduced when ``|ours − paper| ≤ √(s_ours² + s_paper²)``: the standard deviation of the
    difference between one of our repetitions (folds, splits) and one of the paper's, each
    ``s`` the standard deviation over repetitions (a side without one counts 0), and never
    less than half a unit of the paper's last printed digit (its rounding). A gap within it is
    one a single repetition of either side could show; a systematic gap larger than the
    repetitions' spread is not reproduced. Returns ("reproduced" | "not reproduced" | "no
    run", tolerance)."""
    if ours is None or not np.isfinite(ours):
        return "no run", np.nan
    spread = math.sqrt(sum(s * s for s in (ours_std, paper_std) if s is not None and np.isfinite(s)))
    tolerance = max(spread, 0.5 * 10.0**-decimals)
    return ("reproduced" if abs(ours - paper) <= tolerance + 1e-12 else "not reproduced"), tolerance


def compare_cells(
    paper_id: str, ours: pd.DataFrame, paper: pd.DataFrame, keys: Sequence[str], decimals_of
) -> pd.DataFrame:
    """One row per paper cell: the paper's mean ± std, ours, the difference, the verdict and
    the notes that explain a gap."""
    merged = paper.merge(ours, on=list(keys), how="left", suffixes=("_paper", "_ours"))
    rows = []
    for _, row in merged.iterrows():
        verdict, tolerance = cell_verdict(
            row["mean_ours"], row["std_ours"], row["mean_paper"], row["std_paper"], decimals_of(row)
        )
        rows.append(
            {
                **{k: row[k] for k in keys},
                "paper_mean": row["mean_paper"],
                "paper_std": row["std_paper"],
                "ours_mean": row["mean_ours"],
                "ours_std": row["std_ours"],
                "difference": row["mean_ours"] - row["mean_paper"],
                "tolerance": tolerance,
                "verdict": verdict,
                "notes": ",".join(
                    cell_notes(paper_id, row.get("dataset", ""), row.get("method", ""), row["metric"])
                ),
            }
        )
    return pd.DataFrame(rows)


# --- Verdicts per stated conclusion ----------------------------------------------------------
HELD, NOT_HELD, NO_DATA = "holds", "does not hold", "no run"


def _higher(metric: str) -> bool:
    from mlgraph.evaluation.metrics import METRICS

    return METRICS[metric].greater_is_better if metric in METRICS else True


def _listed(value, everything: Sequence[str]) -> list[str]:
    if value in (None, "all"):
        return list(everything)
    return [value] if isinstance(value, str) else list(value)


def _at(xs: Sequence[float], at) -> list[float]:
    if at in (None, "all"):
        return list(xs)
    if isinstance(at, str) and at.startswith(">="):
        return [x for x in xs if x >= float(at[2:])]
    return [x for x in xs if x in set(map(float, at))]


@dataclass
class Verdict:
    claim: dict
    check: str  # what was checked, in words
    verdict: str
    evidence: str
    paper: str = ""  # the same check on the paper's own numbers, where it prints them
    extra: str = ""  # e.g. the verdict with the paper's N = 1 critical difference


def _name(method: str) -> str:
    from mlgraph.evaluation.figures import method_label

    return method_label(method)


def _fmt(value: float) -> str:
    return "—" if value is None or not np.isfinite(value) else f"{value:.3f}"


def _where(x: float, unit: str = "%") -> str:
    if not np.isfinite(x) or x < 0:
        return ""
    return f"{x:g} %: " if unit == "%" else f"{unit} {x:g}: "


def check_order(case: pd.DataFrame, metric: str, claim: dict) -> tuple[str, str]:
    """``kind = "order"`` on one (dataset, group, metric) case: see paper000_claims.toml."""
    table = case.pivot_table(index=case["x"].fillna(-1.0), columns="method", values="mean")
    methods = list(table.columns)
    winners = _listed(claim["winners"], methods)
    losers = _listed(claim["losers"], methods)
    if claim["winners"] == "others":
        winners = [m for m in methods if m not in losers]
    if claim["losers"] == "others":
        losers = [m for m in methods if m not in winners]
    absent = [m for m in {*winners, *losers} if m not in methods]
    if absent or not winners or not losers:
        return NO_DATA, f"no run of {', '.join(map(_name, absent)) or 'the methods compared'}"
    xs = _at(list(table.index), claim.get("at"))
    if not xs:
        return NO_DATA, "no run at the labelling rates the claim names"
    sign = 1.0 if _higher(metric) else -1.0
    W, L = sign * table.loc[xs, winners], sign * table.loc[xs, losers]
    how = claim.get("how", "every")
    if how == "mean":
        W, L = W.mean().to_frame().T, L.mean().to_frame().T
    best_w = W.max(axis=1) if claim.get("any") else W.min(axis=1)
    wins = best_w > L.max(axis=1)
    holds = bool(wins.all()) if how in ("every", "mean") else bool(wins.mean() > 0.5)

    def who(frame, x, pick):
        method = frame.loc[x].idxmax() if pick == "max" else frame.loc[x].idxmin()
        return f"{_name(method)} {_fmt(sign * frame.loc[x, method])}"

    weakest = "max" if claim.get("any") else "min"
    unit = claim.get("x", "%")
    if how == "mean":
        evidence = f"mean over rates: {who(W, W.index[0], weakest)} vs {who(L, L.index[0], 'max')}"
        if not np.isfinite(xs[0]) or xs == [-1.0]:
            evidence = f"{who(W, W.index[0], weakest)} vs {who(L, L.index[0], 'max')}"
    elif len(xs) == 1:
        x = xs[0]
        evidence = f"{_where(x, unit)}{who(W, x, weakest)} vs {who(L, x, 'max')}"
    else:
        worst = (best_w - L.max(axis=1)).idxmin()
        points = "rates" if unit == "%" else f"{unit}s"
        evidence = (
            f"at {int(wins.sum())} of {len(xs)} {points}; closest at {_where(worst, unit)}"
            f"{who(W, worst, weakest)} vs {who(L, worst, 'max')}"
        )
    return (HELD if holds else NOT_HELD), evidence


def check_similar(case: pd.DataFrame, claim: dict) -> tuple[str, str]:
    """``kind = "similar"``: the methods' means differ by at most the root mean square of their
    standard deviations at every selected rate (or, with fractions, in the mean over them)."""
    methods = _listed(claim.get("methods"), sorted(case["method"].unique()))
    methods = [m for m in methods if m != "none"]
    part = case[case["method"].isin(methods)]
    if part["method"].nunique() < len(methods) or part.empty:
        return NO_DATA, "no run of the methods compared"
    x = part["x"].fillna(-1.0)
    if claim.get("at") is None and part["x"].notna().any() and claim.get("methods") == "all":
        part = part.groupby("method")[["mean", "std"]].mean().reset_index().assign(x=-1.0)
        x = part["x"]
    xs = _at(sorted(x.unique()), claim.get("at"))
    held, worst = True, (-np.inf, "")
    for at in xs:
        here = part[x == at]
        spread = here["mean"].max() - here["mean"].min()
        tolerance = float(np.sqrt((here["std"].fillna(0) ** 2).mean()))
        held &= spread <= tolerance + 1e-12
        if spread - tolerance > worst[0]:
            worst = (
                spread - tolerance,
                f"{_where(at) if at >= 0 else ''}range {spread:.3f} vs std {tolerance:.3f}",
            )
    return (HELD if held else NOT_HELD), worst[1]


def check_increases(case: pd.DataFrame, claim: dict) -> tuple[str, str]:
    series = case[case["method"] == claim["method"]].set_index("x")["mean"].sort_index()
    if len(series) < 2:
        return NO_DATA, "no per-round curve"
    first, last = series.iloc[0], series.iloc[-1]
    return (
        HELD if last > first else NOT_HELD
    ), f"round {series.index[0]:g}: {first:.3f}, round {series.index[-1]:g}: {last:.3f}"


def _case_scores(case: pd.DataFrame) -> pd.DataFrame:
    """Mean and std per method over the case's x values (fractions), or as they are."""
    return case.groupby("method")[["mean", "std"]].mean()


def share_of_wins(
    scores: pd.DataFrame, claim: dict, datasets: Sequence[str], decimals: int | None
) -> tuple[int, int]:
    """(cases the winner wins, cases) over the (dataset, group, metric) cases of ``datasets``;
    with ``decimals``, ties at that precision count as wins (the paper's bold)."""
    wins = cases = 0
    winner = claim["winner"]
    for (_dataset, _, metric), case in scores[scores["dataset"].isin(datasets)].groupby(
        ["dataset", "group", "metric"]
    ):
        table = _case_scores(case[case["method"] != "none"])["mean"].dropna()
        losers = [m for m in _listed(claim.get("losers", "others"), table.index) if m != winner]
        if claim.get("losers", "others") == "others":
            losers = [m for m in table.index if m != winner]
        if winner not in table or not losers or any(m not in table for m in losers):
            continue
        sign = 1.0 if _higher(metric) else -1.0
        values = sign * (table.round(decimals) if decimals is not None else table)
        cases += 1
        wins += bool(
            values[winner] >= values[losers].max()
            if decimals is not None
            else values[winner] > values[losers].max()
        )
    return wins, cases


def check_share(scores, claim, paper_scores, decimals) -> tuple[str, str, str]:
    datasets = _listed(claim.get("dataset"), sorted(scores["dataset"].unique()))
    wins, cases = share_of_wins(scores, claim, datasets, decimals)
    if not cases:
        return NO_DATA, "no case with every method run", ""
    holds = wins / cases > claim.get("share", 0.5)
    evidence = f"{_name(claim['winner'])} ahead in {wins} of {cases} cases ({100 * wins / cases:.0f} %)"
    paper = ""
    if paper_scores is not None:
        ours_cases = scores[scores["dataset"].isin(datasets)]["dataset"].unique()
        pw, pc = share_of_wins(paper_scores, claim, list(ours_cases), decimals)
        if pc:
            paper = f"on the same data sets, the paper's table: {pw} of {pc} ({100 * pw / pc:.0f} %)"
    return (HELD if holds else NOT_HELD), evidence, paper


def check_suits(scores: pd.DataFrame, claim: dict) -> tuple[str, str]:
    """``kind = "suits"``: see paper004_claims.toml."""
    counts: dict[str, int] = {}
    for _dataset, part in scores.groupby("dataset"):
        hits: dict[str, list[bool]] = {}
        for (_, metric), case in part.groupby(["group", "metric"]):
            table = _case_scores(case[case["method"] != "none"])
            sign = 1.0 if _higher(metric) else -1.0
            best = (sign * table["mean"]).max()
            for method, row in table.iterrows():
                hits.setdefault(method, []).append(bool(best - sign * row["mean"] <= row["std"] + 1e-12))
        for method, flags in hits.items():
            counts[method] = counts.get(method, 0) + (np.mean(flags) > 0.5)
    if not counts or any(m not in counts for m in [*claim["winners"], *claim["losers"]]):
        return NO_DATA, "no run of the selectors compared"
    holds = all(counts[w] > counts[lo] for w in claim["winners"] for lo in claim["losers"])
    evidence = "data sets suited: " + ", ".join(
        f"{_name(m)} {counts[m]}" for m in [*claim["winners"], *claim["losers"]]
    )
    return (HELD if holds else NOT_HELD), evidence


def check_friedman(tables: Mapping[str, pd.DataFrame], dataset: str, metric: str) -> tuple[str, str]:
    from mlgraph.evaluation import stats

    table = tables.get(metric)
    if table is None or table.shape[1] < 3 or len(table) < 2:
        return NO_DATA, f"no complete set of runs on {dataset}"
    result = stats.friedman_test(table, higher_is_better=_higher(metric))
    return (
        (HELD if result["reject_H0"] else NOT_HELD),
        f"F_R = {result['F_R']:.2f} vs χ² = {result['chi2_critical']:.2f} (N = {result['N']}, K = {result['K']})",
    )


def check_posthoc(tables, dataset, metric, claim) -> list[tuple[str, str, str, str]]:
    """(other method, verdict, evidence, verdict with the paper's N = 1 CD) per method named."""
    from mlgraph.evaluation import stats

    table = tables.get(metric)
    reference = claim.get("reference", "mlmrrw")
    out = []
    for other in [*claim.get("better", []), *claim.get("not_better", [])]:
        expected = other in claim.get("better", [])
        if table is None or reference not in table or other not in table or len(table) < 2:
            out.append((other, NO_DATA, "no run", ""))
            continue
        diffs = stats.rank_sum_differences(table, reference, higher_is_better=_higher(metric))
        row = diffs.loc[other]
        better = row["verdict"] == stats.VERDICT_BETTER
        better_n1 = row["verdict_paper_N1"] == stats.VERDICT_BETTER
        verdict = HELD if better == expected else NOT_HELD
        evidence = f"{row['label']} = {row['D']:+.1f}, CD = {row['CD']:.2f}"
        n1 = (HELD if better_n1 == expected else NOT_HELD) + f" (CD = {row['CD_paper_N1']:.2f})"
        out.append((other, verdict, evidence, n1))
    return out


def check_significant(
    folds: Mapping[str, pd.DataFrame], metric: str, claim: dict
) -> list[tuple[str, str, str]]:
    from mlgraph.evaluation import stats

    table = pd.DataFrame(
        {m: t[t.status == "ok"].set_index("repetition")[metric] for m, t in folds.items()}
    ).dropna()
    control = claim["control"]
    if control not in table or table.shape[1] < 3:
        return [("others", NO_DATA, "no complete set of runs")]
    result = stats.bonferroni_dunn(table, control, higher_is_better=_higher(metric))
    out = []
    for other, row in result["table"].iterrows():
        out.append(
            (
                other,
                HELD if row["verdict"] == stats.VERDICT_BETTER else NOT_HELD,
                f"mean rank difference {row['diff']:+.2f}, CD = {result['CD']:.2f} (N = {result['N']} folds)",
            )
        )
    return out


def evaluate_claims(
    paper_id: str, scores: pd.DataFrame, *, tables=None, folds=None, paper_scores=None
) -> list[Verdict]:
    """Every stated conclusion of ``paper<id>_claims.toml``, one verdict per (claim, dataset,
    group, metric) or, for the tests, per method compared."""
    spec = paper_claims(paper_id)
    verdicts = []
    for claim in spec["claim"]:
        kind = claim["kind"]
        metrics = claim.get("metrics", spec["metrics"])
        if kind == "share":
            verdict, evidence, paper = check_share(
                scores, claim, paper_scores, 3 if paper_id == "002" else None
            )
            losers = claim.get("losers", "others")
            against = "every other method" if losers == "others" else ", ".join(map(_name, losers))
            scope = "every case" if claim.get("dataset") == "all" else "the table's data sets × metrics"
            check = f"{_name(claim['winner'])} ahead of {against} in most of {scope}"
            verdicts.append(Verdict(claim, check, verdict, evidence, paper))
            continue
        if kind == "suits":
            verdict, evidence = check_suits(scores, claim)
            verdicts.append(Verdict(claim, "selectors suited to the most data sets", verdict, evidence))
            continue
        datasets = _listed(claim.get("dataset"), sorted(scores["dataset"].unique()))
        for dataset in datasets:
            found = sorted(scores.loc[scores["dataset"] == dataset, "group"].unique())
            groups = (
                _listed(claim["group"], []) if "group" in claim else (found or [""])
            )  # 004: each classifier
            for group in groups:
                for metric in metrics:
                    shown = {"table2": "Table 2", "table3": "Table 3"}.get(group, group)
                    where = ", ".join(filter(None, [dataset, shown, _metric_words(metric)]))
                    case = scores[
                        (scores["dataset"] == dataset)
                        & (scores["group"] == group)
                        & (scores["metric"] == metric)
                    ]
                    if kind == "friedman":
                        verdict, evidence = check_friedman((tables or {}).get(dataset, {}), dataset, metric)
                        verdicts.append(Verdict(claim, f"{where}: Friedman rejects H0", verdict, evidence))
                    elif kind == "posthoc":
                        for other, verdict, evidence, n1 in check_posthoc(
                            (tables or {}).get(dataset, {}), dataset, metric, claim
                        ):
                            expect = (
                                "better than"
                                if other in claim.get("better", [])
                                else "not significantly better than"
                            )
                            verdicts.append(
                                Verdict(
                                    claim,
                                    f"{where}: ML-MRRW {expect} {_name(other)}",
                                    verdict,
                                    evidence,
                                    extra=n1,
                                )
                            )
                    elif kind == "significant":
                        for other, verdict, evidence in check_significant(folds or {}, metric, claim):
                            verdicts.append(
                                Verdict(
                                    claim,
                                    f"{where}: {_name(claim['control'])} significantly better than {_name(other)}",
                                    verdict,
                                    evidence,
                                )
                            )
                    else:
                        verdict, evidence = check_case(kind, case, metric, claim)
                        paper = ""
                        if paper_scores is not None and kind != "increases":
                            theirs = paper_scores[
                                (paper_scores["dataset"] == dataset)
                                & (paper_scores["group"] == group)
                                & (paper_scores["metric"] == metric)
                            ]
                            if not theirs.empty:
                                paper = ": ".join(check_case(kind, theirs, metric, claim))
                        verdicts.append(
                            Verdict(claim, f"{where}: {describe(claim)}", verdict, evidence, paper)
                        )
    return verdicts


def check_case(kind: str, case: pd.DataFrame, metric: str, claim: dict) -> tuple[str, str]:
    """A claim of kind order, similar or increases on one (dataset, group, metric) case."""
    if case.empty:
        return NO_DATA, "no run"
    if kind == "order":
        return check_order(case, metric, claim)
    if kind == "similar":
        return check_similar(case, claim)
    return check_increases(case, claim)


def _metric_words(metric: str) -> str:
    from mlgraph.evaluation.figures import metric_words

    return metric_words(metric)


def describe(claim: dict) -> str:
    """A claim's check in words (``ML-MRRW above every other method at most rates``)."""
    kind = claim["kind"]
    if kind == "similar":
        return (
            " ≈ ".join(map(_name, claim["methods"]))
            if claim["methods"] != "all"
            else "all selectors within their spread"
        )
    if kind == "increases":
        return f"{_name(claim['method'])}: last round above the first"
    names = lambda v: v if isinstance(v, str) else ", ".join(map(_name, v))  # noqa: E731
    winners = ("the best of " if claim.get("any") else "") + names(claim["winners"])
    at = claim.get("at", "all")
    rates = (
        ""
        if at == "all"
        else (
            f" at {', '.join(f'{a} %' for a in at)}"
            if isinstance(at, list)
            else f" at rates {at[:2]} {at[2:]} %"
        )
    )
    how = {"every": " everywhere", "most": " at most rates", "mean": " on average"}.get(
        claim.get("how", "every"), ""
    )
    if claim.get("group") in ("table2", "table3"):
        how = ""
    return f"{winners} above {names(claim['losers'])}{rates}{how}"


# --- The report: one section per paper ------------------------------------------------------
VERDICT_CSS = {"reproduced": "ok", HELD: "ok", "not reproduced": "bad", NOT_HELD: "bad"}


@dataclass
class Section:
    """What one paper's analysis gives the report."""

    cells: pd.DataFrame = field(default_factory=pd.DataFrame)  # see compare_cells
    verdicts: list[Verdict] = field(default_factory=list)
    parts: list[str] = field(default_factory=list)  # HTML: tables, tests, figures


def _note_links(ids: str | Sequence[str]) -> str:
    from mlgraph.reporting.html import esc

    ids = [i for i in (ids.split(",") if isinstance(ids, str) else ids) if i]
    titles = notes()
    return " ".join(
        f"<a href='#note-{esc(i)}' title='{esc(titles[i]['title'])}'>note</a>" for i in ids if i in titles
    )


def _value(mean, std, decimals=3) -> str:
    if mean is None or not np.isfinite(mean):
        return "—"
    return f"{mean:.{decimals}f}" + (f" ± {std:.{decimals}f}" if std is not None and np.isfinite(std) else "")


def cell_html(row: pd.Series, decimals: int = 3) -> str:
    """Ours, the paper's, the difference and the verdict of one cell, for a table layout."""
    from mlgraph.reporting.html import esc

    if row is None:
        return "<span class='small'>—</span>"
    diff = "" if not np.isfinite(row["difference"]) else f"Δ {row['difference']:+.{decimals}f} · "
    return (
        f"<div class='cell'>{_value(row['ours_mean'], row['ours_std'], decimals)}"
        f"<small>paper {_value(row['paper_mean'], row['paper_std'], decimals)}</small>"
        f"<small>{diff}{esc(row['verdict'])} {_note_links(row['notes']) if row['verdict'] == 'not reproduced' else ''}</small></div>"
    )


def layout(
    cells: pd.DataFrame, rows: str, columns: str, row_order, column_order, decimals=3, label=None
) -> str:
    """Cells as a table of ``rows`` × ``columns`` (the paper's layout), coloured by verdict."""
    from mlgraph.evaluation.figures import method_label

    header = "".join(f"<th>{(label or method_label)(c)}</th>" for c in column_order)
    body = []
    for r in row_order:
        tds = []
        for c in column_order:
            hit = cells[(cells[rows] == r) & (cells[columns] == c)]
            row = hit.iloc[0] if len(hit) else None
            css = "na" if row is None else VERDICT_CSS.get(row["verdict"], "na")
            tds.append(f"<td class='{css}'>{cell_html(row, decimals)}</td>")
        body.append(f"<tr><th>{(label or method_label)(r)}</th>{''.join(tds)}</tr>")
    return f"<div class='scroll'><table><thead><tr><th></th>{header}</tr></thead><tbody>{''.join(body)}</tbody></table></div>"


def _fig(fig, name: str, figdir: Path, caption: str) -> str:
    from mlgraph.evaluation.figures import save_figure
    from mlgraph.reporting.html import figure

    figdir.mkdir(parents=True, exist_ok=True)
    return figure(save_figure(fig, figdir / f"{name}.png"), caption, figdir.parent)


def _row(figures) -> str:
    """Small figures side by side."""
    return "<div class='row'>" + "".join(figures) + "</div>"


def _plain(quote: str) -> str:
    """A quote's LaTeX and Markdown as plain text (``\\(F_{R}\\)`` → F_R, ``*Brand-Type*`` → Brand-Type)."""
    for old, new in (
        ("\\(", ""),
        ("\\)", ""),
        ("$", ""),
        ("\\%", "%"),
        ("\\chi", "χ"),
        ("\\alpha", "α"),
        ("^2", "²"),
        ("*", ""),
    ):
        quote = quote.replace(old, new)
    return re.sub(r"\s*_\{\s*([^}]*?)\s*\}", r"_\1", re.sub(r"\{\s*([^{}_]*?)\s*\}", r"\1", quote)).replace(
        " _", "_"
    )


def _tests_html(frame: pd.DataFrame, index_name: str) -> str:
    from mlgraph.evaluation.figures import TITLES
    from mlgraph.reporting.html import table

    shown = frame.rename(index=lambda i: TITLES.get(i, i), columns=lambda c: TITLES.get(c, c))
    for column in shown.columns:
        if shown[column].dtype.kind == "f":
            shown[column] = shown[column].map(
                lambda v: "" if not np.isfinite(v) else (f"{v:.2e}" if 0 < abs(v) < 1e-3 else f"{v:.3f}")
            )
    shown.index.name = index_name
    return table(shown, index=True)


def _labelled(table: pd.DataFrame) -> pd.DataFrame:
    from mlgraph.evaluation.figures import method_label

    return table.rename(columns=method_label)


def section_000(runs: pd.DataFrame, plan: Plan, figdir: Path) -> Section:
    from mlgraph.evaluation import stats
    from mlgraph.evaluation.figures import PAPER000, TITLES, cd_figure, method_label, plot_metrics_vs_rate
    from mlgraph.reporting.runs import score_tables

    metrics = ["avg_precision", "micro_f1", "macro_f1"]
    scores, trials = scores_000(runs, plan.used)
    tables = {d: score_tables(t, metrics, "rates") for d, t in trials.items()}
    verdicts = evaluate_claims("000", scores, tables=tables)
    parts = []
    for number, dataset in enumerate(("emotions", "scene", "yeast", "mediamill"), start=1):
        ran = plan.used.get(dataset, dataset)
        parts.append(
            f"<h3>Fig. {number} and its tests: {dataset}"
            + (f" (run on {ran})" if ran != dataset else "")
            + "</h3>"
        )
        part = scores[scores.dataset == dataset]
        if part.empty:
            parts.append("<p class='na'>No finished run on this data set.</p>")
            continue
        order = [m for m in PAPER000 if m in set(part.method)]
        summaries = {}
        for method in order:
            mine = part[part.method == method].pivot_table(
                index="x", columns="metric", values=["mean", "std"]
            )
            summary = pd.DataFrame({"step": mine.index})
            for metric in metrics:
                summary[metric] = mine[("mean", metric)].to_numpy()
                summary[f"{metric}_std"] = mine[("std", metric)].to_numpy()
            summaries[method_label(method)] = summary
        parts.append(
            _fig(
                plot_metrics_vs_rate(summaries, metrics, title=f"{len(order)} methods on {ran}"),
                f"fig{number}_{dataset}",
                figdir,
                f"Fig. {number}: average precision, micro-F1 and macro-F1 against the labelling rate on {ran}, mean ± std over repetitions",
            )
        )
        if all(t.shape[1] >= 3 and len(t) >= 2 for t in tables[dataset].values()):
            labelled = {m: _labelled(t) for m, t in tables[dataset].items()}
            parts.append(
                f"<p>Friedman test (Eq. 25), blocks = the {len(next(iter(labelled.values())))} labelling rates (mean over repetitions), α = 0.05:</p>"
            )
            parts.append(_tests_html(stats.friedman_table(labelled), "metric"))
            if "ML-MRRW" in next(iter(labelled.values())):
                parts.append(
                    "<p>Rank-sum differences D = R(ML-MRRW) − R(i) against Eq. 26's critical difference with the real N, and with the paper's N = 1:</p>"
                )
                parts.append(_tests_html(stats.posthoc_table(labelled, "ML-MRRW"), "D"))
            for metric, table in labelled.items():
                parts.append(
                    _fig(
                        cd_figure(table, 0.05, f"{ran}: {TITLES[metric]}"),
                        f"cd_{dataset}_{metric}",
                        figdir,
                        f"Critical-difference diagram (Nemenyi) of {TITLES[metric].lower()} on {ran}",
                    )
                )
    return Section(verdicts=verdicts, parts=parts)


def section_001(runs: pd.DataFrame, plan: Plan, figdir: Path) -> Section:
    from mlgraph.evaluation import stats
    from mlgraph.evaluation.figures import PAPER001, TITLES, cd_figure, plot_rounds
    from mlgraph.reporting.report import DUAL_METRICS

    scores, folds = scores_001(runs)
    theirs = paper_scores_001()
    cells = compare_cells(
        "001",
        scores.drop(columns="x"),
        theirs.drop(columns="x"),
        ["dataset", "group", "method", "metric"],
        lambda row: 4,
    )
    verdicts = evaluate_claims("001", scores, folds=folds, paper_scores=theirs)
    words = lambda m: TITLES.get(m, m)  # noqa: E731
    parts = ["<h3>Table 2: Frequency-Gender, five-fold cross-validation (B = 1.05, T = 10)</h3>"]
    methods = ["dsml", "independent", "cooccurrence", "stacking", "mlknn", "mlrbf", "bpmll", "ranksvm"]
    parts.append(
        layout(
            cells[cells.group == "table2"],
            "method",
            "metric",
            methods,
            DUAL_METRICS,
            4,
            label=lambda v: words(v) if v in TITLES else PAPER001.get(v, "ML-kNN" if v == "mlknn" else v),
        )
    )
    parts.append("<h3>Table 3: DSML on Frequency-Gender as B grows (T = 10)</h3>")
    bs = sorted(set(cells.loc[cells.group == "table3", "method"]))
    parts.append(
        layout(
            cells[cells.group == "table3"], "method", "metric", bs, DUAL_METRICS, 4, label=lambda v: words(v)
        )
    )
    curves, panels = {}, {}
    for group, part in scores[scores.group.str.startswith("B=")].groupby("group"):
        if part["method"].nunique() < 2:
            continue  # Fig. 3 draws each B with and without reuse (Table 3's other B have one)
        for variant, mine in part.groupby("method"):
            wide = mine.pivot_table(index="x", columns="metric", values=["mean", "std"])
            curve = pd.DataFrame(index=wide.index.astype(int))
            for metric in DUAL_METRICS:
                curve[metric] = wide[("mean", metric)].to_numpy()
                curve[f"{metric}_std"] = wide[("std", metric)].to_numpy()
            label = f"DSML {group}" + (" model_reuse=False" if variant == "no reuse" else "")
            curves[label], panels[label] = curve, group
    if curves:
        parts.append(
            "<h3>Fig. 3: accuracies after each boosting round, with (solid) and without (dotted) model reuse</h3>"
        )
        parts.append(
            _fig(
                plot_rounds(curves, title="DSML on Frequency-Gender", panels=panels),
                "fig3_rounds",
                figdir,
                "Fig. 3: Accuracy-a, -b and -all after each round t, mean ± std over the five folds, one row per B",
            )
        )
    table = {
        m: pd.DataFrame(
            {k: t[t.status == "ok"].set_index("repetition")[m] for k, t in folds.items()}
        ).dropna()
        for m in DUAL_METRICS
    }
    if folds and all(t.shape[1] >= 3 and len(t) >= 2 for t in table.values()):
        labelled = {m: _labelled(t) for m, t in table.items()}
        parts.append("<h3>Significance over the five folds</h3><p>Friedman test, blocks = folds:</p>")
        parts.append(_tests_html(stats.friedman_table(labelled), "metric"))
        result = stats.bonferroni_dunn(labelled["accuracy_all"], "DSML")
        parts.append(
            f"<p>Bonferroni-Dunn test of Accuracy-all against DSML (CD = {result['CD']:.2f} on average ranks):</p>"
        )
        parts.append(_tests_html(result["table"], "method"))
        parts.append(
            _fig(
                cd_figure(labelled["accuracy_all"], 0.05, "Frequency-Gender: Accuracy-all"),
                "cd_accuracy_all",
                figdir,
                "Critical-difference diagram (Nemenyi) of Accuracy-all over the five folds",
            )
        )
    return Section(cells, verdicts, parts)


def section_002(runs: pd.DataFrame, plan: Plan, figdir: Path) -> Section:
    from mlgraph.evaluation import stats
    from mlgraph.evaluation.figures import PAPER002, TITLES, cd_figure
    from mlgraph.reporting.report import COMPARABLE, PAPER002_DATASETS, PAPER002_NAMES, TABLE_METRICS

    ours = scores_tabular(runs, TABLE_METRICS)
    theirs = paper_scores_002()
    cells = compare_cells(
        "002",
        ours.drop(columns=["x", "group"]),
        theirs.drop(columns=["x", "group"]),
        ["dataset", "method", "metric"],
        lambda row: 3,
    )
    cells.loc[cells.dataset.isin(plan.paper.not_public) & (cells.verdict == "no run"), "verdict"] = (
        "not available"
    )
    verdicts = evaluate_claims("002", ours, paper_scores=theirs)
    unclear = [d for d, (v, _) in COMPARABLE.items() if v == "unclear"]
    parts = [
        f"<p>Comparability of the data sets: {', '.join(unclear)} are unclear (fewer features than the paper's; see the notes); the others we have are the paper's.</p>"
    ]
    name = lambda d: PAPER002_NAMES.get(d, d)  # noqa: E731
    datasets = [d for d in PAPER002_DATASETS if d in set(ours.dataset) or d in plan.paper.not_public]
    for metric in TABLE_METRICS:
        arrow = "↑" if _higher(metric) else "↓"
        parts.append(f"<h3>{TITLES[metric]} {arrow}</h3>")
        parts.append(
            layout(
                cells[cells.metric == metric],
                "method",
                "dataset",
                list(PAPER002),
                datasets,
                3,
                label=lambda v: PAPER002.get(v, name(v)),
            )
        )
    blocks = {
        m: ours[ours.metric == m].pivot_table(index="dataset", columns="method", values="mean").dropna()
        for m in TABLE_METRICS
    }
    blocks = {m: _labelled(t) for m, t in blocks.items() if t.shape[1] >= 3 and len(t) >= 2}
    if blocks:
        n = len(next(iter(blocks.values())))
        parts.append(
            f"<h3>Significance over the data sets</h3><p>Friedman test (Demšar 2006), blocks = the {n} data sets every method ran on:</p>"
        )
        parts.append(_tests_html(stats.friedman_table(blocks), "metric"))
        for metric, table in blocks.items():
            parts.append(
                _fig(
                    cd_figure(
                        table, 0.05, f"{TITLES[metric]} over {n} data sets", higher_is_better=_higher(metric)
                    ),
                    f"cd_{metric}",
                    figdir,
                    f"Critical-difference diagram (Nemenyi) of {TITLES[metric].lower()} over {n} data sets",
                )
            )
    return Section(cells, verdicts, parts)


def section_004(runs: pd.DataFrame, plan: Plan, figdir: Path) -> Section:
    from mlgraph.evaluation import stats
    from mlgraph.evaluation.figures import FS_METRICS, TITLES, cd_figure, method_label, plot_fraction_curves

    scores = scores_004(runs, plan.used)
    verdicts = evaluate_claims("004", scores)
    parts = []
    if not scores.empty:
        mean = (
            scores[scores.method != "none"]
            .groupby(["dataset", "group", "metric", "method"])["mean"]
            .mean()
            .unstack("method")
        )
        mean.columns = [method_label(c) for c in mean.columns]
        mean.index = [f"{d}, {method_label(g)}, {TITLES[m].lower()}" for d, g, m in mean.index]
        parts.append(
            "<h3>Each selector's score averaged over the kept fractions (the cases of the conclusions)</h3>"
        )
        parts.append(_tests_html(mean, "dataset, classifier, metric"))
        blocks = {}
        for metric in FS_METRICS:
            wide = (
                scores[(scores.metric == metric) & (scores.method != "none")]
                .pivot_table(index=["dataset", "group", "x"], columns="method", values="mean")
                .dropna()
            )
            if wide.shape[1] >= 3 and len(wide) >= 2:
                blocks[metric] = _labelled(wide)
        if blocks:
            parts.append(
                "<h3>Significance</h3><p>Friedman test, blocks = every (data set, classifier, kept fraction):</p>"
            )
            parts.append(_tests_html(stats.friedman_table(blocks), "metric"))
            for metric, table in blocks.items():
                parts.append(
                    _fig(
                        cd_figure(table, 0.05, TITLES[metric], higher_is_better=_higher(metric)),
                        f"cd_{metric}",
                        figdir,
                        f"Critical-difference diagram (Nemenyi) of {TITLES[metric].lower()} over {len(table)} blocks",
                    )
                )
    for dataset, group in runs.groupby("tags.dataset"):
        shown = _paper_dataset(dataset, plan.used)
        title = f"Feature selection on {dataset}" + (
            f" (for the paper's {shown})" if shown != dataset else ""
        )
        parts.append(f"<h3>Figs. 3-6 on {dataset}</h3>")
        parts.append(
            _fig(
                plot_fraction_curves(group, title=title),
                f"fractions_{dataset}",
                figdir,
                f"{title}: Hamming loss, micro-F1 and macro-F1 against the % of features kept, mean ± std over folds; all features dashed",
            )
        )
    return Section(verdicts=verdicts, parts=parts)


SECTIONS = {"000": section_000, "001": section_001, "002": section_002, "004": section_004}


# --- Provenance ----------------------------------------------------------------------------
def provenance(runs: pd.DataFrame) -> list[str]:
    """Git commit, package versions and dataset checksums the runs recorded, and this report's."""
    from mlgraph.reporting.html import esc, table
    from mlgraph.tracking.store import provenance_tags

    here = provenance_tags()
    parts = ["<h2 id='provenance'>Provenance</h2>"]
    commits = runs.get("tags.git_commit", pd.Series(dtype=object)).dropna().unique()
    dirty = runs.get("tags.git_dirty", pd.Series(dtype=object)).eq("true").any()
    parts.append(
        f"<p>Runs made at git commit {', '.join(f'<code>{esc(c)}</code>' for c in commits) or '—'}"
        + (" (with uncommitted changes in some)" if dirty else "")
        + f"; this report at <code>{esc(here['git_commit'])}</code>"
        + (" (uncommitted changes)" if here["git_dirty"] == "true" else "")
        + f", Python {esc(here['python_version'])}.</p>"
    )
    rows = []
    for key in sorted(k for k in here if k.startswith("version.")):
        seen = runs.get(f"tags.{key}", pd.Series(dtype=object)).dropna().unique()
        rows.append(
            {
                "package": key.removeprefix("version."),
                "runs": ", ".join(seen) or "—",
                "this report": here[key],
            }
        )
    parts.append(table(pd.DataFrame(rows)))
    if len(runs):
        columns = {
            "tags.dataset": "data set",
            "tags.dataset_sha256": "SHA-256",
            "tags.dataset_shape": "instances × features × labels",
            "tags.dataset_source": "file",
        }
        data = runs[[c for c in columns if c in runs]].drop_duplicates().rename(columns=columns)
        if "file" in data:
            data["file"] = data["file"].map(
                lambda p: Path(str(p).split(";")[0]).name + (" + test file" if ";" in str(p) else "")
            )
        parts.append("<p>Data sets (SHA-256 of each file as stored):</p>" + table(data))
    return parts


def _command_list(plan: Plan, log: list[dict]) -> str:
    from mlgraph.reporting.html import esc

    ran = {entry["command"]: entry for entry in log}
    lines = []
    for _, args in plan.commands:
        command = shown_command(args)
        entry = ran.get(command)
        status = "" if entry is None else f"   # exit {entry['exit']}, {entry['seconds'] / 60:.1f} min"
        lines.append(esc(command + status))
    return (
        "<pre>" + "\n".join(lines) + "</pre>"
        if lines
        else "<p>No preset can run: every data set it needs is missing.</p>"
    )


def write_report(plan: Plan, uri: str, out: Path, log_entries: list[dict], argv: Sequence[str]) -> Path:
    """Read the finished runs of the plan's experiment and write ``out/report.html`` (with
    figures in ``out/figures/`` and ``cells.csv`` / ``conclusions.csv``); return its path."""
    from mlgraph.reporting.html import badge, esc, page, table
    from mlgraph.tracking.store import redact

    out.mkdir(parents=True, exist_ok=True)
    runs = finished_runs(uri, plan.experiment)
    section = SECTIONS[plan.paper.id](runs, plan, out / "figures")
    cells, verdicts = section.cells, section.verdicts
    mode = "--quick" if plan.quick else "the paper's protocol"
    body = [
        f"<h1>Paper {plan.paper.id}: {esc(plan.paper.title)}</h1>",
        f"<p>Reproduction report ({esc(mode)}), {datetime.datetime.now():%Y-%m-%d %H:%M}, from the MLflow "
        f"experiment <code>{esc(plan.experiment)}</code> at <code>{esc(redact(uri))}</code> ({len(runs)} finished runs). "
        f"Made by <code>{esc(' '.join(['mlgraph reproduce', *argv]))}</code>.</p>",
    ]
    if plan.missing:
        items = "".join(
            f"<li><b>{esc(m.dataset)}</b>: {esc(m.why)}"
            + (f"; get it with <code>{esc(m.fetch)}</code>" if m.fetch else "")
            + "</li>"
            for m in plan.missing
        )
        body.append(
            f"<div class='box'><b>Data sets this report does without.</b><ul>{items}</ul>Run the same command again after fetching them: finished runs are kept and only the missing ones run.</div>"
        )
    if not len(runs):
        again = " ".join(["mlgraph reproduce", plan.paper.id, *(["--quick"] if plan.quick else [])])
        body.append(
            f"<div class='box'><b>No finished run of paper {plan.paper.id} in this store.</b> The experiment <code>{esc(plan.experiment)}</code> at <code>{esc(redact(uri))}</code> has no finished run, so there is nothing to compare yet. Run <code>{esc(again)}</code> (without --report-only) to make them; the sections below list what the paper states.</div>"
        )
    counts = []
    if len(cells):
        for verdict in ("reproduced", "not reproduced", "no run", "not available"):
            n = int((cells.verdict == verdict).sum())
            if n:
                counts.append(
                    {
                        "what": "numbers of the paper's tables",
                        "verdict": verdict,
                        "count": n,
                        "_class": VERDICT_CSS.get(verdict, "na"),
                    }
                )
    for verdict in (HELD, NOT_HELD, NO_DATA):
        n = sum(v.verdict == verdict for v in verdicts)
        if n:
            counts.append(
                {
                    "what": "stated conclusions",
                    "verdict": verdict,
                    "count": n,
                    "_class": VERDICT_CSS.get(verdict, "na"),
                }
            )
    if counts:
        body.append("<h2>Summary</h2>" + table(pd.DataFrame(counts), numeric=["count"]))
    body.append(
        "<div class='box info'><b>How to read the verdicts.</b> A number of the paper is "
        "<i>reproduced</i> when |ours − paper| ≤ √(s<sub>ours</sub>² + s<sub>paper</sub>²), s being each side's "
        "standard deviation over repetitions (folds, splits); that is the spread of the difference between one "
        "of our repetitions and one of the paper's, so a gap within it is one a single repetition could show. The "
        "tolerance is never below half a unit of the paper's last printed digit; a side without a standard deviation "
        "(one repetition) counts 0. A stated conclusion <i>holds</i> when our runs show what the paper says, checked "
        "as written beside it (rates in %; 'at most rates' = more than half of them; 'on average' = the mean over the "
        "rates; ties go against the claim). Significance uses α = 0.05, and Eq. 26 of paper 000 with the real number of "
        "blocks N (the paper's N = 1 beside it). Where a gap has a known cause, 'note' links to it.</div>"
    )
    if len(cells) or verdicts:
        body.append("<h2>The paper's stated conclusions</h2>")
        first = [i == 0 or v.claim is not verdicts[i - 1].claim for i, v in enumerate(verdicts)]
        rows = [
            {
                "where": v.claim["where"] if new else "",
                "the paper says": f"“{_plain(v.claim['quote'])}”" if new else "″",
                "checked": v.check,
                "ours": v.evidence,
                "verdict": badge(v.verdict, VERDICT_CSS.get(v.verdict, "na"))
                + (
                    " " + _note_links([v.claim["note"]])
                    if v.verdict == NOT_HELD and v.claim.get("note")
                    else ""
                ),
                **({"the paper's own numbers": v.paper} if any(x.paper for x in verdicts) else {}),
                **({"with the paper's N = 1": v.extra} if any(x.extra for x in verdicts) else {}),
                "_class": VERDICT_CSS.get(v.verdict, "na"),
            }
            for v, new in zip(verdicts, first, strict=True)
        ]
        body.append(table(pd.DataFrame(rows), raw=["verdict"]))
    if section.parts:
        body.append("<h2>Tables, figures and significance tests</h2>")
        body += section.parts
    linked = set()
    if len(cells):
        linked |= {
            i for ids in cells.loc[cells.verdict == "not reproduced", "notes"] for i in ids.split(",") if i
        }
    linked |= {v.claim["note"] for v in verdicts if v.claim.get("note") and v.verdict == NOT_HELD}
    linked |= {s for m in plan.missing if m.stand_in for s in [m.stand_in] if s in notes()}
    all_notes = notes()
    if linked:
        body.append("<h2>Notes on the gaps</h2>")
        for note_id in sorted(linked & set(all_notes)):
            note = all_notes[note_id]
            body.append(
                f"<h3 id='note-{esc(note_id)}'>{esc(note['title'])}</h3><p>{esc(' '.join(note['text'].split()))}</p>"
            )
        body.append(
            "<p class='small'>All method notes: the documentation's <i>Method notes and deviations from the papers</i>.</p>"
        )
    body.append("<h2>Commands</h2>" + _command_list(plan, log_entries))
    body += provenance(runs)
    if len(cells):
        cells.to_csv(out / "cells.csv", index=False)
    pd.DataFrame(
        [
            {
                "where": v.claim["where"],
                "quote": v.claim["quote"],
                "checked": v.check,
                "ours": v.evidence,
                "verdict": v.verdict,
                "paper": v.paper,
                "paper_N1": v.extra,
            }
            for v in verdicts
        ]
    ).to_csv(out / "conclusions.csv", index=False)
    path = out / "report.html"
    path.write_text(page(f"Paper {plan.paper.id} reproduced", body))
    _log_report(plan, uri, out, runs)
    return path


def _log_report(plan: Plan, uri: str, out: Path, runs: pd.DataFrame) -> None:
    """The report, its figures and tables as the artifacts of a ``report`` run beside the runs."""
    import mlflow

    from mlgraph.tracking.store import log_batch, provenance_tags, setup_experiment

    experiment_id = setup_experiment(uri, plan.experiment)
    with mlflow.start_run(experiment_id=experiment_id, run_name=f"report paper {plan.paper.id}") as run:
        tags = {**provenance_tags(), "kind": "report", "paper": plan.paper.id}
        log_batch(run.info.run_id, tags={**tags, "source_runs": ",".join(runs.get("run_id", []))[:5000]})
        mlflow.log_artifacts(str(out))


def summary_line(path: Path) -> str:
    """'cells: 20 reproduced, 26 not reproduced; conclusions: 40 hold, 39 do not' for a report."""
    parts = []
    cells = path.parent / "cells.csv"
    if cells.exists():
        counts = pd.read_csv(cells)["verdict"].value_counts()
        parts.append("cells: " + ", ".join(f"{n} {v}" for v, n in counts.items()))
    claims = pd.read_csv(path.parent / "conclusions.csv")
    if len(claims):
        counts = claims["verdict"].value_counts()
        parts.append("conclusions: " + ", ".join(f"{n} {v}" for v, n in counts.items()))
    return "; ".join(parts) or "nothing to compare yet"


# --- The command ---------------------------------------------------------------------------
def _settings(overrides: Sequence[str], experiment: str) -> tuple[str, Path]:
    """The tracking URI and the report folder, composed from the project's config as every
    ``mlgraph`` command composes it, with the overrides that concern them (``tracking…``,
    ``report…``; sweeps over other keys are not a single config)."""
    from hydra import compose, initialize_config_dir

    import mlgraph.config  # noqa: F401  (registers the abspath resolver)
    from mlgraph.config.app import CONFIG_DIR

    mine = [o for o in overrides if o.lstrip("+~").startswith(("tracking", "report"))]
    with initialize_config_dir(version_base="1.3", config_dir=str(CONFIG_DIR)):
        cfg = compose("config", overrides=[*mine, f"tracking.experiment={experiment}"])
    return cfg.tracking.uri, Path(cfg.report.out)


def main(argv: list[str] | None = None) -> int:
    """``mlgraph reproduce PAPER [--quick] [--report-only] [--out DIR] [OVERRIDE ...]``."""
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = argparse.ArgumentParser(
        prog="mlgraph reproduce",
        description="Run every preset a paper needs (resumable) and write one self-contained HTML report beside the paper's numbers.",
        epilog="Papers: " + "; ".join(f"{p.id}: {p.title}" for p in PAPERS.values()),
    )
    parser.add_argument("paper", help="the paper's id: 000, 001, 002 or 004")
    parser.add_argument(
        "--quick",
        action="store_true",
        help="few repetitions (and, for 002 and 004, the faster data sets): minutes, not hours",
    )
    parser.add_argument(
        "--report-only",
        action="store_true",
        help="run nothing; build the report from the runs already in the store",
    )
    parser.add_argument(
        "--out", type=Path, help="the report's folder (default: <report.out>/reproduce/paper<id>[-quick])"
    )
    parser.add_argument(
        "overrides",
        nargs="*",
        help="Hydra overrides for every run, e.g. tracking=server tracking.uri=http://host:5000",
    )
    args = parser.parse_intermixed_args(argv)
    try:
        paper = paper_spec(args.paper)
    except UnknownPaper as exc:
        print(exc, file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    plan = make_plan(paper, args.quick, args.overrides)
    uri, reports = _settings(args.overrides, plan.experiment)
    out = args.out or reports / "reproduce" / f"paper{paper.id}{'-quick' if args.quick else ''}"
    for missing in plan.missing:
        print(
            f"paper {paper.id}: {missing.dataset}: {missing.why}"
            + (f"; get it with `{missing.fetch}`" if missing.fetch else ""),
            file=sys.stderr,
        )
    started = time.perf_counter()
    entries = []
    if not args.report_only:
        try:
            entries = run_plan(plan)
        except KeyboardInterrupt:
            print(
                f"\npaper {paper.id}: stopped; run the same command again to finish what is missing",
                file=sys.stderr,
            )
            return 130
    ran = time.perf_counter() - started
    path = write_report(plan, uri, out, entries, argv)
    print(
        f"\npaper {paper.id}{' (--quick)' if args.quick else ''}: runs {ran / 60:.1f} min, report "
        f"{(time.perf_counter() - started - ran):.0f} s; {summary_line(path)}\nreport: {path}",
        flush=True,
    )
    failed = [e for e in entries if e["exit"] != 0]
    return 1 if failed else 0
