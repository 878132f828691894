"""Command-line entry: ``python -m run method=mlmrrw dataset=yeast`` (add ``-m`` for sweeps).

A thin Hydra layer over :func:`mlgraph.engine.experiment.run_from_hydra`, which does the work.
"""

import sys
from pathlib import Path

from mlgraph.cli import settle_blas_threads
from mlgraph.config.secrets import argv_problem, redact_messages, refuse
from mlgraph.tracking.process import start_tracking_process

settle_blas_threads()  # before numpy loads
if __name__ == "__main__":
    refuse(argv_problem(sys.argv[1:]))  # before Hydra writes the job folder or logs the overrides
    redact_messages()  # before the fork: the tracking process redacts its log records too
    start_tracking_process(sys.argv[1:])  # MLflow's imports, in a process of their own, beside the next ones

import hydra  # noqa: E402
from omegaconf import DictConfig  # noqa: E402

from mlgraph.engine.experiment import run_from_hydra  # noqa: E402
from mlgraph.engine.runner import quick_exit  # noqa: E402
from mlgraph.processes.signals import exit_conventionally  # noqa: E402

CONFIG_DIR = str(Path(__file__).resolve().parent.parent / "conf")


@hydra.main(version_base="1.3", config_path=CONFIG_DIR, config_name="config")
def main(cfg: DictConfig):
    # the summary, which a sweeper (hydra/sweeper=optuna) reads back; None when resume=true
    # skipped the job (the sweep's progress counts it)
    return run_from_hydra(cfg)


if __name__ == "__main__":
    with exit_conventionally(), quick_exit():
        main()
