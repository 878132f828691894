"""``hydra/launcher=processes``: sweep jobs in worker processes of their own (mlgraph.engine.launcher).

Kept light: Hydra imports every module of ``hydra_plugins`` when it starts.
"""

from __future__ import annotations

from collections.abc import Sequence

from hydra.core.utils import JobReturn
from hydra.plugins.launcher import Launcher
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig


class ProcessLauncher(Launcher):
    """Runs a sweep's jobs in reusable worker processes, ``n_jobs`` at once (-1: one per core);
    a worker that dies costs its own job only (see :mod:`mlgraph.engine.launcher`)."""

    def __init__(self, n_jobs: int = -1) -> None:
        self.n_jobs = n_jobs
        self.config: DictConfig | None = None
        self.task_function: TaskFunction | None = None
        self.hydra_context: HydraContext | None = None

    def setup(self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig) -> None:
        self.config, self.task_function, self.hydra_context = config, task_function, hydra_context

    def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Sequence[JobReturn]:
        from mlgraph.engine.launcher import launch

        return launch(self, job_overrides, initial_job_idx)
