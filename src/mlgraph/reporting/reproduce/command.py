"""``mlgraph reproduce PAPER [--quick] [--report-only] [--out DIR] [OVERRIDE ...]``: the command line."""

from __future__ import annotations

import argparse
import logging
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from mlgraph.reporting.reproduce.page import summary_line, write_report
from mlgraph.reporting.reproduce.presets import PAPERS, UnknownPaper, make_plan, paper_spec, run_plan


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
