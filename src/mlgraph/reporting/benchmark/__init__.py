"""``mlgraph benchmark SUITE [--quick] [--report-only]``: a suite of methods on every registered
data set found here, one MLflow experiment, one report.

    mlgraph benchmark ssl --quick                   # paper 000's seven methods, the shipped data sets
    mlgraph benchmark supervised                    # the multi-label classifiers, published splits or halves
    mlgraph benchmark ssl method=mlmrrw,mine --config-dir ./myconf   # your method beside ML-MRRW
    mlgraph benchmark ssl --report-only             # the report of the runs already there

A suite is a file ``conf/benchmark/<name>.yaml`` (:mod:`~mlgraph.reporting.benchmark.suites`;
your own in ``<config-dir>/benchmark/``). Before anything runs, :mod:`~mlgraph.reporting.benchmark.plan`
checks the methods, lists the data sets that are not here with the command that fetches them,
and checks every (method, data set) as its run would (keys, data, trials, memory): one that does
not fit runs under the suite's scalable settings (Nyström solver, approximate neighbour search),
one where nothing fits becomes a cell that says why ("needs ~N GB"). The runs are ``mlgraph run
-m`` sweeps into the MLflow experiment ``benchmark-<suite>[-quick]`` with ``resume=true`` (a
second call runs only what is missing) on any launcher (``hydra/launcher=slurm`` passes through);
:mod:`~mlgraph.reporting.benchmark.report` writes ``<report.out>/benchmark/<suite>[-quick]/``:
``report.html`` and ``tables/``.
"""

from mlgraph.reporting.benchmark.command import main
from mlgraph.reporting.benchmark.plan import (
    BenchmarkPlan,
    Options,
    Pair,
    decide,
    make_plan,
    parse_overrides,
)
from mlgraph.reporting.benchmark.report import write_report
from mlgraph.reporting.benchmark.suites import BenchmarkError, Suite, load_suite, read_suite, suite_files

__all__ = [
    "BenchmarkError",
    "BenchmarkPlan",
    "Options",
    "Pair",
    "Suite",
    "decide",
    "load_suite",
    "main",
    "make_plan",
    "parse_overrides",
    "read_suite",
    "suite_files",
    "write_report",
]
