"""The ``mlgraph`` command (also ``python -m mlgraph``): every task takes Hydra overrides.

    mlgraph run method=mlmrrw dataset=yeast        # = python -m run in a checkout; -m for a sweep
    mlgraph report experiment=ssl_comparison       # figures and tables of a tracked comparison
    mlgraph toy                                    # paper 002's ML² toy experiment
    mlgraph hparams hparam_search --dataset yeast  # pick tuned hyper-parameters from a sweep
    mlgraph reproduce 000 --quick                  # a paper's presets, then one HTML report

``run``, ``report`` and ``toy`` compose the same primary config (``conf/config.yaml``, inside the
package: ``src/mlgraph/conf`` links the checkout's ``conf/``, a wheel holds a copy), so ``--help``,
``--cfg job``, ``-m`` and ``-sc install=bash`` work alike for each.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from importlib import import_module

from mlgraph.config.app import CONFIG_DIR, hydra_main  # noqa: F401  (mlgraph.cli.CONFIG_DIR: the config folder)
from mlgraph.config.secrets import argv_problem, redact_messages, refuse

# name: (module:function taking the composed config, or module:main taking argv, one-line summary)
COMMANDS = {
    "run": ("mlgraph.engine.experiment:run_from_hydra", "one tracked experiment, or a sweep with -m"),
    "report": ("mlgraph.reporting.report:build_report", "figures and significance tables of a comparison"),
    "toy": ("mlgraph.engine.toy:run_toy", "paper 002's ML² toy experiment (Fig. 3), tracked"),
    "hparams": ("mlgraph.reporting.hparams:main", "pick tuned hyper-parameters from an exploration sweep"),
    "reproduce": (
        "mlgraph.reporting.reproduce:main",
        "run a paper's presets and write its HTML report (000 001 002 004)",
    ),
    "benchmark": (
        "mlgraph.reporting.benchmark:main",
        "run a suite of methods on every data set here and write its report (ssl supervised)",
    ),
}
HYDRA_COMMANDS = ("run", "report", "toy")
COMPLETION_FLAGS = ("-sc", "--shell-completion")
# 2^20 cycles (about 0.3 ms) of spinning for OpenBLAS's idle threads instead of its default 2^28
# (about 0.1 s): numpy and scipy each bundle an OpenBLAS with its own threads, and a job's BLAS
# work right after the other library's ran beside that library's spinning threads (ML-MRRW's
# float32 LU on yeast took 34 ms after numpy's distance products against 24 ms after a pause).
BLAS_THREAD_TIMEOUT = "20"


def settle_blas_threads() -> None:
    """Let OpenBLAS's idle threads sleep after :data:`BLAS_THREAD_TIMEOUT` instead of spinning,
    unless ``OPENBLAS_THREAD_TIMEOUT`` is set already. OpenBLAS reads it when it loads, so the
    commands call this before numpy is imported (their worker processes inherit it)."""
    os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", BLAS_THREAD_TIMEOUT)


def _load(target: str) -> Callable:
    module, name = target.split(":")
    return getattr(import_module(module), name)


def usage() -> str:
    rows = "\n".join(f"  {name:<10} {summary}" for name, (_, summary) in COMMANDS.items())
    return (
        f"usage: mlgraph COMMAND [ARGS...]   (or python -m mlgraph COMMAND ...)\n\ncommands:\n{rows}\n\n"
        "`mlgraph COMMAND --help` lists a command's config groups and options.\n"
        'Shell completion (bash): eval "$(mlgraph -sc install=bash)"'
    )


def complete(argv: list[str]) -> None:
    """Answer the shell-completion script Hydra installs (it calls ``mlgraph -sc query=bash``
    with the typed line in ``COMP_LINE``): command names first, then the command's Hydra
    completion on the line without the command word."""
    line = os.environ.get("COMP_LINE", "")
    words = line.split()
    if not any(a.startswith("query=") for a in argv):  # install=bash, uninstall=bash: Hydra's script
        return hydra_main(_load(COMMANDS["run"][0]), argv, "run")
    if len(words) < 2 or (len(words) == 2 and not line.endswith(" ")):
        typed = words[1] if len(words) == 2 else ""
        print(" ".join(c for c in COMMANDS if c.startswith(typed)))
    elif words[1] in HYDRA_COMMANDS:
        os.environ["COMP_LINE"] = line.replace(f" {words[1]}", "", 1)
        hydra_main(_load(COMMANDS[words[1]][0]), argv, words[1])


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``mlgraph`` console script."""
    settle_blas_threads()
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] in COMPLETION_FLAGS:
        return complete(argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(usage())
        return
    if argv[0] not in COMMANDS:
        sys.exit(f"mlgraph: unknown command {argv[0]!r}\n\n{usage()}")
    refuse(argv_problem(argv[1:]))  # before Hydra writes the job folder or logs the overrides
    redact_messages()  # here, so that the tracking process forked next does it too
    from mlgraph.tracking.process import start_tracking_process

    if argv[0] == "run":  # before the next imports, which it makes on its own
        start_tracking_process(argv[1:])
    from mlgraph.engine.runner import quick_exit
    from mlgraph.processes.signals import exit_conventionally

    name, rest = argv[0], argv[1:]
    with exit_conventionally(), quick_exit():
        if name in HYDRA_COMMANDS:
            hydra_main(_load(COMMANDS[name][0]), rest, name)
        else:
            code = _load(COMMANDS[name][0])(rest)
            if code:
                sys.exit(code)
