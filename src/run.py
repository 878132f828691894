"""Command-line entry: ``python -m run method=mlmrrw dataset=yeast`` (add ``-m`` for sweeps).

A thin Hydra layer over :func:`mlgraph.experiment.run_from_hydra`, which does the work.
"""

from pathlib import Path

from mlgraph.cli import settle_blas_threads

settle_blas_threads()  # before numpy loads

import hydra  # noqa: E402
from omegaconf import DictConfig  # noqa: E402

from mlgraph.experiment import run_from_hydra  # noqa: E402
from mlgraph.runner import quick_exit  # noqa: E402
from mlgraph.signals import exit_conventionally  # noqa: E402

CONFIG_DIR = str(Path(__file__).resolve().parent.parent / "conf")


@hydra.main(version_base="1.3", config_path=CONFIG_DIR, config_name="config")
def main(cfg: DictConfig):
    # the summary, which a sweeper (hydra/sweeper=optuna) reads back; None when resume=true
    # skipped the job (the sweep's progress counts it)
    return run_from_hydra(cfg)


if __name__ == "__main__":
    with exit_conventionally(), quick_exit():
        main()
