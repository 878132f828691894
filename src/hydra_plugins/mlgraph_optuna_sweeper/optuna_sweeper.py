"""The Hydra plugin class of ``hydra/sweeper=optuna`` (Hydra instantiates sweepers only from the
``hydra_plugins`` package); the work is :class:`mlgraph.engine.optuna_search.OptunaSearch`."""

from __future__ import annotations

from typing import Any

from hydra.plugins.sweeper import Sweeper
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig


class OptunaSweeper(Sweeper):
    """Optuna (TPE by default) over Hydra jobs, each an MLflow run under the sweep's parent."""

    def __init__(self, **options: Any) -> None:
        from mlgraph.engine.optuna_search import OptunaSearch

        self.search = OptunaSearch(**options)

    def setup(self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig) -> None:
        self.search.setup(hydra_context=hydra_context, task_function=task_function, config=config)

    def sweep(self, arguments: list[str]) -> Any:
        return self.search.sweep(arguments)
