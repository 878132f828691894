"""Optuna searches as a Hydra sweeper: ``python -m run -m hydra/sweeper=optuna ...``.

The sweeper asks an Optuna study (TPE by default) for ``n_jobs`` parameter settings at a time,
runs each as one Hydra job through the configured launcher (``processes`` on one
machine, SLURM on a cluster), so that each is one MLflow run nested under the sweep's parent run
(:class:`mlgraph.engine.sweep.SweepCallback`), and tells the study each job's objective: the mean of a
metric over the job's successful trials (``avg_precision`` by default, its direction known), the
run's ``<metric>_overall``. Presets run it on the ``explore`` protocol (a 30 % subsample, seed
1000), so the search never reads the evaluation seeds' test rows.

Search spaces use the override grammar of Hydra's Optuna sweeper plugin (``hydra.sweeper.params``
or the command line): ``interval(a, b)`` a float in [a, b], ``tag(log, interval(a, b))`` on a log
scale, ``int(interval(a, b))`` an integer, ``range(a, b, step)`` a stepped one, ``choice(...)``
categories; a plain value is fixed.

The study is stored beside the tracking store (``sqlite:///<outputs>/optuna.db`` by default) under
the name ``<experiment>-<sweep id>``. Run the same command again with ``resume=true`` and the sweep
reopens its parent run and its study: finished trials count towards ``n_trials``, trials that were
running when the sweep was killed are marked failed and asked again with the same values (their
jobs resume their own MLflow runs), and only the rest is run.

Why not the ``hydra-optuna-sweeper`` package: its only release line (1.2/1.3) requires
``optuna>=2.10,<3``, and Optuna 2.10's relational storage does not work with SQLAlchemy 2 (its
schema check fails on a fresh SQLite store), which MLflow 3 and the PostgreSQL driver (psycopg 3)
need. This sweeper keeps that plugin's configuration keys (``sampler``, ``direction``,
``storage``, ``study_name``, ``n_trials``, ``n_jobs``, ``max_failure_rate``, ``params``) and
override grammar, on Optuna ≥ 4.
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import mlflow
import pandas as pd
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import Override, Transformer
from hydra.core.plugins import Plugins
from hydra.types import HydraContext, TaskFunction
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf

log = logging.getLogger(__name__)


def objective_value(summary, metric: str) -> float | None:
    """The mean of ``metric`` over a job's successful trials, from the summary table the job
    returns (per rate: mean and ``n_ok``); None for a job that was skipped (it returns None)."""
    if summary is None:
        return None
    if not isinstance(summary, pd.DataFrame) or metric not in summary or "n_ok" not in summary:
        raise ValueError(f"the job returned no summary with {metric!r} (got {type(summary).__name__})")
    used = summary[summary.n_ok > 0]
    value = float((used[metric] * used.n_ok).sum() / used.n_ok.sum()) if len(used) else math.nan
    if not math.isfinite(value):
        raise ValueError(f"{metric} is undefined for this job (no successful trial scored it)")
    return value


def distribution(override: Override):
    """The Optuna distribution of a sweep override (the Hydra Optuna plugin's grammar), or the
    fixed value of a plain one."""
    import optuna.distributions as d

    if not override.is_sweep_override():
        return override.get_value_element_as_str()
    value = override.value()
    if override.is_choice_sweep() or (override.is_range_sweep() and value.shuffle):
        return d.CategoricalDistribution(list(override.sweep_iterator(transformer=Transformer.encode)))
    if override.is_range_sweep():  # Hydra's range excludes its stop
        values = list(override.sweep_iterator())
        if any(isinstance(v, float) for v in (value.start, value.stop, value.step)):
            return d.FloatDistribution(values[0], values[-1], step=value.step)
        return d.IntDistribution(int(values[0]), int(values[-1]), step=int(value.step))
    if override.is_interval_sweep():
        log_scale = "log" in value.tags
        if isinstance(value.start, int) and isinstance(value.end, int):
            return d.IntDistribution(value.start, value.end, log=log_scale)
        return d.FloatDistribution(float(value.start), float(value.end), log=log_scale)
    raise ValueError(f"{override.input_line}: this sweep is not supported by the Optuna sweeper")


def search_space(arguments: Sequence[str]) -> tuple[dict, dict]:
    """(distributions, fixed values) of the sweeper's params and the command line's overrides."""
    space, fixed = {}, {}
    for override in OverridesParser.create().parse_overrides(list(arguments)):
        value = distribution(override)
        key = override.get_key_element()
        (fixed if isinstance(value, str) else space)[key] = value
    return space, fixed


class OptunaSearch:
    """The sweeper's work (the Hydra plugin class in ``hydra_plugins.mlgraph_optuna_sweeper``
    only delegates here)."""

    def __init__(
        self,
        sampler: Any = None,
        direction: str | None = None,
        storage: str | None = None,
        study_name: str | None = None,
        n_trials: int = 20,
        n_jobs: int = 2,
        max_failure_rate: float = 1.0,
        objective: str = "avg_precision",
        params: Mapping | None = None,
    ) -> None:
        from mlgraph.evaluation.metrics import METRICS

        if objective not in METRICS:
            raise ValueError(
                f"hydra.sweeper.objective={objective!r} is not valid: it must be a metric of "
                f"mlgraph.evaluation.metrics ({', '.join(METRICS)})."
            )
        if direction not in (None, "maximize", "minimize"):
            raise ValueError(
                f"hydra.sweeper.direction={direction!r} is not valid: maximize, minimize or null."
            )
        for key, value in (("n_trials", n_trials), ("n_jobs", n_jobs)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(
                    f"hydra.sweeper.{key}={value!r} is not valid: it must be a positive integer."
                )
        if not 0.0 <= max_failure_rate <= 1.0:
            raise ValueError(f"hydra.sweeper.max_failure_rate={max_failure_rate!r} must lie in [0, 1].")
        greater = METRICS[objective].greater_is_better
        self.direction = direction or ("maximize" if greater else "minimize")
        self.sampler, self.storage, self.study_name = sampler, storage, study_name
        self.n_trials, self.n_jobs, self.max_failure_rate = n_trials, n_jobs, max_failure_rate
        self.objective, self.params = objective, params

    def setup(self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig) -> None:
        self.config, self.job_idx = config, 0
        self.launcher = Plugins.instance().instantiate_launcher(
            hydra_context=hydra_context, task_function=task_function, config=config
        )

    def _study(self):
        import optuna

        from mlgraph.engine.sweep import ENV_SWEEP

        name = self.study_name or f"{self.config.tracking.experiment}-{os.environ.get(ENV_SWEEP, 'sweep')}"
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        study = optuna.create_study(
            study_name=name, storage=self.storage, direction=self.direction, load_if_exists=True
        )
        study.sampler = self._sampler(len(study.trials))
        return study

    def _sampler(self, n_existing: int):
        """The configured sampler; a resumed study's seeded sampler is seeded ``seed + trials so
        far``, so that its random start does not propose the settings it proposed before."""
        import optuna

        config = self.sampler
        if config is None:
            return optuna.samplers.TPESampler()
        if not (isinstance(config, Mapping) or OmegaConf.is_config(config)):
            return config
        config = OmegaConf.create(OmegaConf.to_container(OmegaConf.create(config), resolve=True))
        if n_existing and config.get("seed") is not None:
            config.seed = int(config.seed) + n_existing
        return instantiate(config)

    @staticmethod
    def _requeue_interrupted(study) -> int:
        """Trials left RUNNING by a killed sweep: failed, and asked again with their values."""
        from optuna.trial import TrialState

        stale = study.get_trials(deepcopy=False, states=(TrialState.RUNNING, TrialState.WAITING))
        for trial in stale:
            if trial.state == TrialState.RUNNING:
                study.tell(trial.number, state=TrialState.FAIL)
                study.enqueue_trial(trial.params, skip_if_exists=False)
        return sum(t.state == TrialState.RUNNING for t in stale)

    def sweep(self, arguments: list[str]) -> None:
        from optuna.trial import TrialState

        params = [f"{k}={v}" for k, v in (self.params or {}).items()] + list(arguments)
        space, fixed = search_space(params)
        if not space:
            raise ValueError(
                "hydra/sweeper=optuna needs a search space: hydra.sweeper.params (a preset) or "
                "sweep overrides such as 'method.gamma_A=tag(log, interval(1e-4, 1e-1))'."
            )
        study = self._study()
        requeued = self._requeue_interrupted(study)
        done = len(study.get_trials(deepcopy=False, states=(TrialState.COMPLETE, TrialState.FAIL))) - requeued
        log.info(
            "Optuna study %s in %s: %s %s, %d of %d trials done%s",
            study.study_name,
            self.storage,
            self.direction,
            self.objective,
            done,
            self.n_trials,
            f", {requeued} interrupted ones asked again" if requeued else "",
        )
        self._tag_parent({"optuna_study": study.study_name, "optuna_storage": str(self.storage)})
        failures, launched = 0, 0
        while done < self.n_trials:
            batch = [study.ask(space) for _ in range(min(self.n_jobs, self.n_trials - done))]
            overrides = [tuple(f"{k}={v}" for k, v in {**t.params, **fixed}.items()) for t in batch]
            returns = self.launcher.launch(overrides, initial_job_idx=self.job_idx)
            self.job_idx += len(returns)
            for trial, ret in zip(batch, returns, strict=True):
                try:
                    value = objective_value(ret.return_value, self.objective)
                    if value is None:  # skipped: this config already has a FINISHED run
                        value = self._known_value(study, trial.params)
                    study.tell(trial, value)
                except Exception as exc:  # a failed job is a failed trial; the search goes on
                    study.tell(trial, state=TrialState.FAIL)
                    log.warning("Optuna trial %d failed: %s", trial.number, exc)
                    failures += 1
            launched += len(batch)
            done += len(batch)
            if failures / launched > self.max_failure_rate:
                raise RuntimeError(
                    f"{failures} of {launched} Optuna trials failed, more than "
                    f"hydra.sweeper.max_failure_rate={self.max_failure_rate}; the study is kept "
                    "(resume=true continues it)."
                )
        self._finish(study)

    @staticmethod
    def _known_value(study, params: dict) -> float:
        from optuna.trial import TrialState

        for earlier in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)):
            if earlier.params == params:
                return float(earlier.value)
        raise ValueError(
            "the job was skipped (a FINISHED run has its config) and the study has no value for it"
        )

    def _finish(self, study) -> None:
        from optuna.trial import TrialState

        complete = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
        results = {"name": "optuna", "study": study.study_name, "n_complete": len(complete)}
        if complete:
            best = study.best_trial
            results.update(best_params=dict(best.params), best_value=float(best.value))
            self._tag_parent(
                {
                    "optuna_best_value": f"{best.value:.6g}",
                    "optuna_best_params": " ".join(
                        f"{k}={v:.6g}" if isinstance(v, float) else f"{k}={v}" for k, v in best.params.items()
                    ),
                    "optuna_best_trial": str(best.number),
                    "optuna_trials": str(len(study.trials)),
                }
            )
            log.info("Optuna best %s = %.4f with %s", self.objective, best.value, best.params)
        folder = Path(self.config.hydra.sweep.dir)
        folder.mkdir(parents=True, exist_ok=True)
        OmegaConf.save(OmegaConf.create(results), folder / "optimization_results.yaml")

    def _tag_parent(self, tags: dict[str, str]) -> None:
        from mlgraph.engine.sweep import ENV_PARENT

        parent = os.environ.get(ENV_PARENT)
        if parent:
            client = mlflow.MlflowClient(self.config.tracking.uri)
            for key, value in tags.items():
                client.set_tag(parent, key, value[:5000])
