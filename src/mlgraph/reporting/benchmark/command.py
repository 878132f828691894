"""``mlgraph benchmark SUITE [--quick] [--report-only] [--fetch] [--out DIR] [--config-dir DIR]
[--memory-gb N] [OVERRIDE ...]``: the command line."""

from __future__ import annotations

import argparse
import logging
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import yaml

from mlgraph.reporting.benchmark.plan import (
    SCALABLE,
    SKIPPED,
    BenchmarkPlan,
    Composer,
    make_plan,
    parse_overrides,
    wanted_datasets,
)
from mlgraph.reporting.benchmark.report import write_report
from mlgraph.reporting.benchmark.suites import BenchmarkError, load_suite, suite_files


def _settings(settings: Sequence[str], config_dir: str | None, experiment: str):
    """The composed config's ``tracking`` and ``report`` groups with the command line's
    ``tracking…``/``report…`` overrides, as ``mlgraph run`` composes them."""
    from hydra import compose, initialize_config_dir

    import mlgraph.config  # noqa: F401  (registers the abspath resolver)
    from mlgraph.config.app import CONFIG_DIR

    search = [f"hydra.searchpath=[file://{Path(config_dir).resolve()}]"] if config_dir else []
    with initialize_config_dir(version_base="1.3", config_dir=str(CONFIG_DIR)):
        cfg = compose("config", overrides=[*search, *settings, f"tracking.experiment={experiment}"])
    return cfg.tracking, cfg.report


def _value(overrides: Sequence[str], key: str):
    """The value an override ``key=value`` gives (YAML), or None."""
    for arg in overrides:
        if arg.lstrip("+").startswith(f"{key}="):
            return yaml.safe_load(arg.split("=", 1)[1])
    return None


def memory_budget(args_gb: float | None, overrides: Sequence[str]) -> float:
    """Bytes one job may use: ``--memory-gb``; else under ``hydra/launcher=slurm`` its
    ``hydra.launcher.mem_gb`` (given, or the launcher config's); else this machine's memory
    shared by the jobs that run at once (``hydra.launcher.n_jobs``, default one per core)."""
    import joblib

    from mlgraph.config.app import CONFIG_DIR
    from mlgraph.engine.memory import GB, machine_budget

    if args_gb is not None:
        return args_gb * GB
    if "hydra/launcher=slurm" in [o.lstrip("+") for o in overrides]:
        given = _value(overrides, "hydra.launcher.mem_gb")
        default = yaml.safe_load((CONFIG_DIR / "hydra" / "launcher" / "slurm.yaml").read_text())["mem_gb"]
        return float(given if given is not None else default) * GB
    n_jobs = _value(overrides, "hydra.launcher.n_jobs")
    return machine_budget(joblib.effective_n_jobs(n_jobs if isinstance(n_jobs, int) else -1))


def _fetch(names: Sequence[str]) -> int:
    """Download and verify the registered data sets ``names`` (``python -m mlgraph.data NAME --fetch``)."""
    from mlgraph.data.__main__ import main as fetch
    from mlgraph.data.registry import registry

    names = [n for n in names if n in registry()]
    return fetch([*names, "--fetch"]) if names else 0


def _say(plan: BenchmarkPlan) -> None:
    name = f"benchmark {plan.suite.name}"
    for m in plan.missing:
        print(
            f"{name}: {m.dataset}: {m.why}" + (f"; get it with `{m.fetch}`" if m.fetch else ""),
            file=sys.stderr,
        )
    for p in plan.pairs:
        if p.status == SCALABLE:
            print(
                f"{name}: {p.method} on {p.dataset} runs under its scalable settings ({' '.join(p.overrides)}): {p.why}"
            )
        elif p.status == SKIPPED:
            print(f"{name}: {p.method} on {p.dataset} cannot run: {p.why}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    """``mlgraph benchmark SUITE ...`` (see the module docstring of :mod:`mlgraph.reporting.benchmark`)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = argparse.ArgumentParser(
        prog="mlgraph benchmark",
        description="Run a suite of methods on every registered data set found here (resumable), then "
        "write one report with the tables and the statistics of the comparison.",
        epilog="Suites: " + ", ".join(suite_files()) + ". Overrides: method=a,b (the methods), dataset=a,b "
        "(the data sets), protocol.rates=[..], protocol.repeats=N, report.reference=M, any run key "
        "(e.g. hydra/launcher=slurm, tracking=server).",
    )
    parser.add_argument("suite", help="the suite: a file benchmark/<suite>.yaml (conf/ or --config-dir)")
    parser.add_argument(
        "--quick", action="store_true", help="the shipped data sets, few rates and repetitions"
    )
    parser.add_argument(
        "--report-only", action="store_true", help="run nothing; the report of the runs there are"
    )
    parser.add_argument(
        "--fetch", action="store_true", help="download the suite's registered data sets missing here"
    )
    parser.add_argument(
        "--out", type=Path, help="the report's folder (default <report.out>/benchmark/<suite>[-quick])"
    )
    parser.add_argument(
        "--config-dir", "-cd", help="a folder of your own configs: method/, dataset/, benchmark/"
    )
    parser.add_argument(
        "--memory-gb", type=float, help="memory one job may use (default: the machine's, or SLURM's mem_gb)"
    )
    parser.add_argument("overrides", nargs="*", help="overrides (see below)")
    args = parser.parse_intermixed_args(argv)
    dirs = [args.config_dir] if args.config_dir else []
    if args.config_dir and not Path(args.config_dir).is_dir():
        print(f"mlgraph benchmark: --config-dir {args.config_dir} is not a folder.", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    try:
        suite = load_suite(args.suite, dirs)
        options = parse_overrides(args.overrides)
        if args.fetch and not args.report_only and _fetch(wanted_datasets(suite, options, args.quick)):
            print("mlgraph benchmark: some data sets could not be fetched (see above).", file=sys.stderr)
        budget = memory_budget(args.memory_gb, options.passthrough)
        plan = make_plan(suite, options, args.quick, args.config_dir, Composer(args.config_dir, budget).check)
    except BenchmarkError as exc:
        print(exc, file=sys.stderr)
        return 2
    tracking, report = _settings(options.settings, args.config_dir, plan.experiment)
    metrics = _value(options.settings, "report.metrics") or list(suite.metrics)
    out = args.out or Path(report.out) / "benchmark" / plan.experiment.removeprefix("benchmark-")
    _say(plan)
    from mlgraph.reporting.reproduce import Paper, Plan, run_plan

    runner = Plan(
        Paper(f"benchmark {suite.name}", suite.description, ()),
        args.quick,
        plan.experiment,
        plan.commands,
        plan.missing,
        {},
        list(options.passthrough),
    )
    started = time.perf_counter()
    entries = []
    if not args.report_only:
        try:
            entries = run_plan(runner, label=runner.paper.id)
        except KeyboardInterrupt:
            print(
                f"\nbenchmark {suite.name}: stopped; run the same command again to finish what is missing",
                file=sys.stderr,
            )
            return 130
    ran = time.perf_counter() - started
    path = write_report(
        plan, tracking.uri, out, entries, argv, metrics=metrics, alpha=float(report.alpha), runner=runner
    )
    cells = sum(p.status != SKIPPED for p in plan.pairs)
    runs = "report only" if args.report_only else f"runs {ran / 60:.1f} min"
    print(
        f"\nbenchmark {suite.name}{' (--quick)' if args.quick else ''}: {runs}, report "
        f"{time.perf_counter() - started - ran:.0f} s; {cells} of {len(plan.pairs)} (method, data set) pairs "
        f"can run, {len(plan.missing)} data sets left out\nreport: {path}",
        flush=True,
    )
    return 1 if any(e["exit"] != 0 for e in entries) else 0
