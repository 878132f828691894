"""A job's place in its sweep: who it is (:class:`JobInfo`, from Hydra's runtime config), what
the sweep varies and how many jobs it plans, how many run at once, and the names of a job's
run (:func:`run_name`) and of the sweep's parent run (:func:`parent_name`). The sweep's
callback (:mod:`mlgraph.engine.sweep`) and the experiment read these; they import nothing of
the engine.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import joblib
import pandas as pd
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.errors import HydraException
from omegaconf import DictConfig, OmegaConf

from mlgraph.config.secrets import redact
from mlgraph.tracking.store import (
    canonical,
)

if TYPE_CHECKING:
    pass


ENV_PARENT, ENV_SWEEP, ENV_KEYS = "MLGRAPH_PARENT_RUN_ID", "MLGRAPH_SWEEP_ID", "MLGRAPH_SWEPT_KEYS"
ENV_JOBS = "MLGRAPH_SWEEP_JOBS"
# Launchers (hydra/launcher options) whose jobs share this machine's cores.
LOCAL_PARALLEL_LAUNCHERS = ("processes", "joblib", "submitit_local")
ENV_PROGRESS = "MLGRAPH_SWEEP_PROGRESS"  # the folder where each job leaves a note when it ends
HEADLINE = (
    "avg_precision_overall",
    "accuracy_all_overall",
    "micro_f1_overall",
    "macro_f1_overall",
    "hamming_loss_overall",
)
# Keys never shown in a run name: they are in its prefix, or change nothing that is computed.
_UNNAMED = {"method", "dataset", "selector", "progress", "n_jobs", "resume", "strict", "graph_cache"}


@dataclass(frozen=True)
class JobInfo:
    """Where a job sits: its overrides, the keys its sweep varies, the sweep and job number."""

    overrides: tuple[str, ...] = ()
    varied: tuple[str, ...] | None = None  # None: a single run, named after its overrides
    sweep_id: str | None = None
    job_num: int | None = None
    parent_run_id: str | None = None
    choices: dict = field(default_factory=dict)

    @classmethod
    def from_hydra(cls, hc) -> JobInfo:
        overrides = tuple(hc.overrides.task)
        choices = dict(hc.runtime.choices)
        if os.environ.get(ENV_PARENT) and hc.mode.name == "MULTIRUN":
            keys = tuple(k for k in os.environ.get(ENV_KEYS, "").split(",") if k)
            return cls(
                overrides, keys, os.environ.get(ENV_SWEEP), hc.job.num, os.environ[ENV_PARENT], choices
            )
        return cls(overrides, None, None, None, None, choices)

    def tags(self) -> dict[str, str]:
        tags = {"overrides": " ".join(self.overrides)[:5000]}
        if self.sweep_id:
            tags.update(sweep_id=self.sweep_id, job_num=str(self.job_num))
        return tags


def override_keys(overrides, sweeps_only: bool) -> list[str]:
    """The keys (or config groups) set by Hydra ``overrides``; with ``sweeps_only``, those that
    take several values (``a=1,2``, ``range(...)``, ``choice(...)``, globs)."""
    parsed = OverridesParser.create().parse_overrides(list(overrides))
    return [o.key_or_group for o in parsed if o.is_sweep_override() or not sweeps_only]


def sweeper_params(config: DictConfig) -> dict:
    params = config.hydra.sweeper.get("params")
    return OmegaConf.to_container(params, resolve=False) if params else {}


def swept_keys(config: DictConfig) -> list[str]:
    """What a multirun varies: sweep overrides on the command line and the sweeper's params
    (experiment presets put their grids there)."""
    params = sweeper_params(config)
    keys = override_keys(config.hydra.overrides.task, sweeps_only=True)
    keys += override_keys([f"{k}={v}" for k, v in params.items()], sweeps_only=True)
    return list(dict.fromkeys(keys))


def sweep_size(config: DictConfig) -> int | None:
    """How many jobs a multirun launches: the product of the swept keys' value counts (the
    sweeper's params, then the command line, as Hydra's basic sweeper combines them); None
    when a glob or an interval sweep makes it unknown here."""
    args = [f"{k}={v}" for k, v in sweeper_params(config).items()] + list(config.hydra.overrides.task)
    try:
        counts = {
            o.get_key_element(): len(list(o.sweep_string_iterator())) if o.is_sweep_override() else 1
            for o in OverridesParser.create().parse_overrides(args)
        }
    except HydraException:
        return None
    return math.prod(counts.values())


def planned_jobs(config: DictConfig) -> int | None:
    """How many jobs a sweep has in all: an Optuna search's ``n_trials``, else
    :func:`sweep_size`; None when not known."""
    return config.hydra.sweeper.get("n_trials") or sweep_size(config)


def resume_note(table: pd.DataFrame, planned: int | None) -> str:
    """What a resumed sweep has left: its jobs with a FINISHED run (:func:`sweep_table`) out of
    the ``planned`` ones, jobs that never started counted as left."""
    finished = int((table.status == "FINISHED").sum()) if len(table) else 0
    total = max(planned or 0, len(table))
    left = f"{total - finished} to run" if planned else "the others to run"
    return (
        f"{finished} of {total or '?'} jobs finished, {left} (finished jobs are skipped, interrupted "
        "ones continue their runs)"
    )


def concurrent_jobs(launcher: DictConfig) -> int | None:
    """How many jobs of this sweep run at once in a local parallel launcher (its ``n_jobs``, in
    joblib's meaning, at most the sweep's size, from the sweep's process), so that each can give
    its share of the cores to BLAS; None when not known."""
    size = os.environ.get(ENV_JOBS, "")
    if not size.isdigit():
        return None
    n_jobs = launcher.get("n_jobs")
    at_once = joblib.effective_n_jobs(n_jobs) if isinstance(n_jobs, int) else int(size)
    return max(1, min(int(size), at_once))


def run_name(cfg: DictConfig, job: JobInfo) -> str:
    """``<method>-<dataset>[-<selector>]``, then ``key=value`` for every varied key (the sweep's
    swept keys, or a single run's own overrides; the key shortened to its last part, a float to 4
    significant digits): ``mlmrrw-yeast nu2=0.1``. The params hold the full values."""
    selector = cfg.get("selector", {}).get("name", "none")
    groups = {"method": cfg.method.name, "dataset": cfg.dataset.name}
    if selector != "none":
        groups["selector"] = selector
    keys = job.varied if job.varied is not None else override_keys(job.overrides, sweeps_only=False)
    keys = [k.lstrip("+~") for k in keys]
    base = "-".join(groups.values())
    keys = [
        k for k in keys if k not in _UNNAMED and k not in groups and not k.startswith(("hydra", "tracking"))
    ]
    shorts = [k.split(".")[-1].split("/")[-1] for k in keys]
    parts = []
    for key, short in zip(keys, shorts, strict=True):
        label = short if shorts.count(short) == 1 else key
        value = job.choices.get(key)  # a config group is named by the option chosen
        if value is None:
            value = OmegaConf.select(cfg, key.replace("/", "."), default=None)
            value = OmegaConf.to_object(value) if OmegaConf.is_config(value) else value
        parts.append(f"{label}={_shown(value)}")
    return redact(" ".join([base, *parts]))


def _shown(value: Any) -> str:
    """A value as a run name shows it: floats to 4 significant digits."""
    if isinstance(value, float) and math.isfinite(value) and not value.is_integer():
        return f"{value:.4g}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_shown(v) for v in value) + "]"
    return canonical(value)


def parent_name(config: DictConfig, keys: list[str], sweep_id: str) -> str:
    """A sweep's parent run is named after its preset, else the keys it varies:
    ``ssl_comparison (sweep 20261128-…)``, ``method.nu2 (sweep 20261128-…)``."""
    preset = OmegaConf.select(config, "hydra.runtime.choices.experiment", default=None)
    return redact(f"{preset or ' '.join(keys) or 'sweep'} (sweep {sweep_id})")
