"""Which presets a paper runs, on which of its data sets, and running them.

A :class:`Paper` lists its :class:`Preset` sweeps (``experiments/<name>.yaml``); :func:`make_plan`
turns one into the ``mlgraph run`` commands of a :class:`Plan`, on the data sets available here
(an offline stand-in where the paper's is missing, :func:`resolve_datasets`), and
:func:`run_plan` runs them one after the other.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field


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


# --- Which data sets are here
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


# --- The plan: which commands, into which experiment
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


def run_plan(plan: Plan, label: str | None = None) -> list[dict]:
    """Run each preset as ``python -m mlgraph run ...`` (a fresh process per sweep, as Hydra
    wants), streaming its output; a failing preset is recorded and the next one still runs.
    Each command is announced under ``label`` (default: the paper)."""
    done = []
    label = label or f"paper {plan.paper.id}"
    for preset, args in plan.commands:
        print(f"\n=== {label}: {shown_command(args)}", flush=True)
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
