"""``mlgraph reproduce PAPER [--quick]``: reproduce a paper into one self-contained HTML report.

    mlgraph reproduce 000 --quick        # or, in a checkout: python -m mlgraph reproduce 000 --quick
    mlgraph reproduce 002                # the paper's protocol (hours on 2 cores)
    mlgraph reproduce 004 --report-only  # only the report, from the runs already in the store

It runs every preset the paper needs (``experiments/*.yaml``) as ``mlgraph run`` sweeps into one
MLflow experiment (``reproduce-<paper>`` or ``reproduce-<paper>-quick``) with ``resume=true``, so
a second call runs only what is missing, then reads the finished runs back and writes
``<report.out>/reproduce/paper<id>[-quick]/report.html``: the verdicts counted per table or
figure of the paper, each method's mean scores, then one section per table or figure with the
paper's numbers beside ours and a verdict per cell (:func:`cell_verdict`), the paper's stated
conclusions about it with a verdict each (the claims in ``data/builtin/paper<id>_claims.toml``,
:data:`CLAIM_KINDS`), its significance tests and figures (embedded; PNG, SVG and PDF beside
it), and the provenance (commands, git commit, package versions, dataset checksums). Data sets
that cannot be had offline are listed at the top with the command that fetches them, and the
rest of the report is built without them. Extra arguments are Hydra overrides for every run
(e.g. ``tracking=server tracking.uri=http://host:5000``).

The modules: :mod:`~mlgraph.reporting.reproduce.presets` (which presets a paper runs, and
running them), :mod:`~mlgraph.reporting.reproduce.scores` (the runs read back, the papers'
tables, claims and notes), :mod:`~mlgraph.reporting.reproduce.claims` (the verdicts),
:mod:`~mlgraph.reporting.reproduce.papers` (each paper's tables, figures and tests),
:mod:`~mlgraph.reporting.reproduce.page` (the HTML page) and
:mod:`~mlgraph.reporting.reproduce.command` (the command line).
"""

from mlgraph.reporting.reproduce.claims import (
    CLAIM_KINDS,
    HELD,
    NO_DATA,
    NOT_HELD,
    Verdict,
    cell_verdict,
    check_case,
    check_friedman,
    check_order,
    check_posthoc,
    check_share,
    check_significant,
    check_similar,
    check_suits,
    compare_cells,
    decisive_decimals,
    describe,
    evaluate_claims,
    share_of_wins,
)
from mlgraph.reporting.reproduce.command import main
from mlgraph.reporting.reproduce.page import summary_line, write_report
from mlgraph.reporting.reproduce.papers import SECTIONS, Part, Section, place
from mlgraph.reporting.reproduce.presets import (
    PAPERS,
    Missing,
    Paper,
    Plan,
    Preset,
    UnknownPaper,
    make_plan,
    paper_spec,
    resolve_datasets,
    run_plan,
    shown_command,
)
from mlgraph.reporting.reproduce.scores import (
    cell_notes,
    finished_runs,
    notes,
    paper_claims,
    paper_table,
    scores_frame,
)

__all__ = [
    "CLAIM_KINDS",
    "HELD",
    "NOT_HELD",
    "NO_DATA",
    "PAPERS",
    "SECTIONS",
    "Missing",
    "Paper",
    "Part",
    "Plan",
    "Preset",
    "Section",
    "UnknownPaper",
    "Verdict",
    "cell_notes",
    "cell_verdict",
    "check_case",
    "check_friedman",
    "check_order",
    "check_posthoc",
    "check_share",
    "check_significant",
    "check_similar",
    "check_suits",
    "compare_cells",
    "decisive_decimals",
    "describe",
    "evaluate_claims",
    "finished_runs",
    "main",
    "make_plan",
    "notes",
    "paper_claims",
    "paper_spec",
    "paper_table",
    "place",
    "resolve_datasets",
    "run_plan",
    "scores_frame",
    "share_of_wins",
    "shown_command",
    "summary_line",
    "write_report",
]
