"""The config layer's Hydra callback, first of ``hydra.callbacks`` in ``conf/config.yaml``.

Hydra calls ``on_run_start`` and ``on_multirun_start`` with the composed config before it creates
the job or sweep folder and before it logs anything, and ``on_job_start`` just after it has
written the job's ``.hydra/`` files and set up its logging: :class:`SecretsCallback` refuses
there a config whose tracking URI holds a password, and redacts what Hydra wrote from a config
whose credentials it cannot refuse (:mod:`mlgraph.config.secrets`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from hydra.types import RunMode
from omegaconf import DictConfig

from mlgraph.config.secrets import redact, redact_file, redact_messages, refuse, tracking_problem

HYDRA_FILES = ("config.yaml", "hydra.yaml", "overrides.yaml")  # what Hydra writes to .hydra/


class SecretsCallback(Callback):
    """Keeps credentials out of what a command writes: a tracking URI with a password (given on
    the command line, in a preset or config file, or by ``MLFLOW_TRACKING_URI``) stops a run or a
    sweep before Hydra writes its folder (exit status 2); every log record is redacted; a job's
    ``.hydra/`` files and the sweep's ``multirun.yaml`` are redacted once Hydra has written them
    (a sweep over config groups composes each job's config only in the job)."""

    # Hydra turns a callback's exception into a warning and goes on: a refusal exits instead
    def on_run_start(self, config: DictConfig, **kwargs: Any) -> None:
        refuse(tracking_problem(config))
        redact_messages()

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        refuse(tracking_problem(config))
        redact_messages()

    def on_job_start(self, config: DictConfig, **kwargs: Any) -> None:
        redact_messages()  # a launcher's worker process: a fresh interpreter
        hydra = config.hydra
        written = []
        if hydra.get("output_subdir") is not None:
            written += [Path(hydra.runtime.output_dir, hydra.output_subdir, name) for name in HYDRA_FILES]
        if hydra.get("mode") == RunMode.MULTIRUN:
            written.append(Path(str(hydra.sweep.dir), "multirun.yaml"))
        for path in written:
            redact_file(path)

    def on_job_end(self, config: DictConfig, job_return: Any, **kwargs: Any) -> None:
        """What Hydra prints of a failed job after the callbacks, on stderr rather than through
        logging: its overrides and its error's message (with the message of its cause)."""
        job_return.overrides = [redact(o) for o in job_return.overrides or []]
        error = job_return._return_value if isinstance(job_return._return_value, BaseException) else None
        seen = set()
        while error is not None and id(error) not in seen:
            seen.add(id(error))
            error.args = tuple(redact(a) if isinstance(a, str) else a for a in error.args)
            error = error.__cause__ or error.__context__
