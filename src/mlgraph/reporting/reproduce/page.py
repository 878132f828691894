"""The report page: ``report.html`` from the templates ``reproduce_*.html.j2``, with
``cells.csv``, ``conclusions.csv`` and the figures beside it, logged as a run's artifacts.

The page opens with the verdicts counted per table or figure of the paper, then each method's
mean scores, then one collapsible section per table or figure (open where something does not
hold), the notes on the gaps, the commands and the provenance.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from mlgraph.reporting.reproduce.claims import HELD, NO_DATA, NOT_HELD, Verdict
from mlgraph.reporting.reproduce.papers import SECTIONS, VERDICT_CSS, Part, note_links
from mlgraph.reporting.reproduce.presets import Plan, shown_command
from mlgraph.reporting.reproduce.scores import finished_runs, notes

NOT_RUN = (NO_DATA, "not available")  # verdicts of a number or conclusion our runs do not reach


def plain(quote: str) -> str:
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


def _anchor(key: str) -> str:
    return "part-" + re.sub(r"[^a-z0-9]+", "-", key.lower()).strip("-")


def _counts(verdicts: Sequence[str], good: str, bad: str) -> dict:
    return {
        "good": sum(v == good for v in verdicts),
        "bad": sum(v == bad for v in verdicts),
        "none": sum(v in NOT_RUN for v in verdicts),
    }


def conclusion_rows(verdicts: Sequence[Verdict]) -> list[dict]:
    """The conclusions table of a part: a claim's place and words on its first row only."""
    rows = []
    for i, v in enumerate(verdicts):
        new = i == 0 or v.claim is not verdicts[i - 1].claim
        note = v.claim.get("note") if v.verdict == NOT_HELD else None
        rows.append(
            {
                "where": v.claim["where"] if new else "",
                "quote": f"“{plain(v.claim['quote'])}”" if new else "″",
                "check": v.check,
                "evidence": v.evidence,
                "verdict": v.verdict,
                "css": VERDICT_CSS.get(v.verdict, "na"),
                "notes": note_links([note]) if note else [],
                "paper": v.paper,
                "extra": v.extra,
            }
        )
    return rows


def part_context(part: Part) -> dict:
    """A part as ``reproduce_part.html.j2`` takes it, with its verdicts counted."""
    cells = list(part.cells["verdict"]) if len(part.cells) else []
    claims = [v.verdict for v in part.verdicts]
    numbers, conclusions = _counts(cells, "reproduced", "not reproduced"), _counts(claims, HELD, NOT_HELD)
    return {
        "key": part.key,
        "anchor": _anchor(part.key),
        "title": part.title,
        "about": part.about,
        "blocks": part.blocks,
        "cells": len(cells),
        "numbers": numbers,
        "conclusions": conclusions,
        "rows": conclusion_rows(part.verdicts),
        "paper_column": any(v.paper for v in part.verdicts),
        "extra_column": any(v.extra for v in part.verdicts),
        "open": bool(numbers["bad"] or conclusions["bad"]),
    }


def provenance(runs: pd.DataFrame) -> dict:
    """Git commit, package versions and dataset checksums the runs recorded, and this report's."""
    from mlgraph.tracking.store import provenance_tags

    here = provenance_tags()
    versions = [  # package, the runs' versions, this report's
        [
            key.removeprefix("version."),
            ", ".join(runs.get(f"tags.{key}", pd.Series(dtype=object)).dropna().unique()) or "—",
            here[key],
        ]
        for key in sorted(k for k in here if k.startswith("version."))
    ]
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
    return {
        "commits": list(runs.get("tags.git_commit", pd.Series(dtype=object)).dropna().unique()),
        "dirty": bool(runs.get("tags.git_dirty", pd.Series(dtype=object)).eq("true").any()),
        "here": here,
        "versions": versions,
        "datasets": {"columns": list(data.columns), "rows": data.astype(str).to_numpy().tolist()},
    }


def commands(plan: Plan, log: list[dict]) -> list[str]:
    """Each ``mlgraph run`` of the plan, with its exit status and wall time where it ran."""
    ran = {entry["command"]: entry for entry in log}
    lines = []
    for _, args in plan.commands:
        command = shown_command(args)
        entry = ran.get(command)
        lines.append(
            command + ("" if entry is None else f"   # exit {entry['exit']}, {entry['seconds'] / 60:.1f} min")
        )
    return lines


def write_report(plan: Plan, uri: str, out: Path, log_entries: list[dict], argv: Sequence[str]) -> Path:
    """Read the finished runs of the plan's experiment and write ``out/report.html`` (with
    figures in ``out/figures/`` and ``cells.csv`` / ``conclusions.csv``); return its path."""
    from mlgraph.reporting.html import render
    from mlgraph.tracking.store import redact

    out.mkdir(parents=True, exist_ok=True)
    runs = finished_runs(uri, plan.experiment)
    section = SECTIONS[plan.paper.id](runs, plan, out / "figures")
    cells, verdicts = section.cells, section.verdicts
    parts = [part_context(p) for p in section.parts]
    total = {
        "numbers": _counts(list(cells["verdict"]) if len(cells) else [], "reproduced", "not reproduced"),
        "conclusions": _counts([v.verdict for v in verdicts], HELD, NOT_HELD),
    }
    linked = set()
    if len(cells):
        linked |= {
            i for ids in cells.loc[cells.verdict == "not reproduced", "notes"] for i in ids.split(",") if i
        }
    linked |= {v.claim["note"] for v in verdicts if v.claim.get("note") and v.verdict == NOT_HELD}
    linked |= {m.stand_in for m in plan.missing if m.stand_in in notes()}
    page = render(
        "reproduce_page.html.j2",
        paper=plan.paper,
        mode="--quick" if plan.quick else "the paper's protocol",
        made=f"{datetime.datetime.now():%Y-%m-%d %H:%M}",
        experiment=plan.experiment,
        uri=redact(uri),
        runs=len(runs),
        command=" ".join(["mlgraph reproduce", *argv]),
        again=" ".join(["mlgraph reproduce", plan.paper.id, *(["--quick"] if plan.quick else [])]),
        missing=plan.missing,
        has_cells=bool(len(cells)),
        parts=parts,
        total=total,
        means=section.means,
        notes=[(i, notes()[i]) for i in sorted(linked & set(notes()))],
        commands=commands(plan, log_entries),
        provenance=provenance(runs),
    )
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
    path.write_text(page)
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
