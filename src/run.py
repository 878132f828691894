"""Command-line entry: ``python -m run method=mlmrrw dataset=yeast`` (add ``-m`` for sweeps).

A thin Hydra layer over :func:`mlgraph.experiment.run_experiment`, which does the work.
"""

from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig

from mlgraph.experiment import run_experiment

CONFIG_DIR = str(Path(__file__).resolve().parent.parent / "conf")


@hydra.main(version_base="1.3", config_path=CONFIG_DIR, config_name="config")
def main(cfg: DictConfig) -> None:
    hc = HydraConfig.get()
    parallel = hc.mode == RunMode.MULTIRUN and "joblib" in hc.runtime.choices.get("hydra/launcher", "")
    run_experiment(cfg, in_parallel_launcher=parallel, output_dir=hc.runtime.output_dir)


if __name__ == "__main__":
    main()
