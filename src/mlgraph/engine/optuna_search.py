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
categories; a plain value is fixed. The space is checked before the study starts
(:func:`check_search`): every range is a range (low < high, low > 0 on a log scale, a stepped one
not empty), and every key is a parameter of the method's estimator (``method.<param>``,
``method.<step>.<param>`` for a nested one) whose declared rules its values meet, a config group
with its options, or a key of the config. A space that fails is one paragraph, exit status 2, no
job run (the sweep's parent run, opened before the sweeper starts, is FAILED with the reason).

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
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import mlflow
import pandas as pd
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import Override, Transformer
from hydra.core.plugins import Plugins
from hydra.core.utils import JobStatus
from hydra.errors import CompactHydraException, HydraException
from hydra.types import HydraContext, TaskFunction
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf

from mlgraph.config.secrets import redact

log = logging.getLogger(__name__)


class SearchError(CompactHydraException, ValueError):
    """A search space no job can run, found before the study starts."""


class SearchStopped(CompactHydraException, RuntimeError):
    """More trials failed than ``hydra.sweeper.max_failure_rate`` allows."""


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
    fixed value of a plain one; :class:`SearchError` naming the override when its range is
    empty, reversed or, on a log scale, not positive."""
    import optuna.distributions as d

    if not override.is_sweep_override():
        return override.get_value_element_as_str()
    value, line = override.value(), override.input_line
    if override.is_choice_sweep() or (override.is_range_sweep() and value.shuffle):
        return d.CategoricalDistribution(list(override.sweep_iterator(transformer=Transformer.encode)))
    if override.is_range_sweep():  # Hydra's range excludes its stop
        values = list(override.sweep_iterator())
        if not values:
            raise SearchError(
                f"{line}: range({value.start}, {value.stop}, {value.step}) holds no value (its stop is "
                "excluded, and a positive step needs start < stop); write range(start, stop, step) "
                "with start < stop and step > 0."
            )
        if any(isinstance(v, float) for v in (value.start, value.stop, value.step)):
            return d.FloatDistribution(values[0], values[-1], step=value.step)
        return d.IntDistribution(int(values[0]), int(values[-1]), step=int(value.step))
    if override.is_interval_sweep():
        log_scale = "log" in value.tags
        if not value.start < value.end:
            raise SearchError(
                f"{line}: the interval's low end {value.start} is not below its high end {value.end}; "
                "write interval(low, high) with low < high (a fixed value is written key=value)."
            )
        if log_scale and value.start <= 0:
            raise SearchError(
                f"{line}: a log scale needs a positive low end, and this one is {value.start}; write "
                "tag(log, interval(low, high)) with 0 < low < high, or drop the log tag."
            )
        if isinstance(value.start, int) and isinstance(value.end, int):
            return d.IntDistribution(value.start, value.end, log=log_scale)
        return d.FloatDistribution(float(value.start), float(value.end), log=log_scale)
    raise SearchError(f"{line}: this sweep is not supported by the Optuna sweeper")


def _parse(arguments: Sequence[str]) -> list[Override]:
    try:
        return OverridesParser.create().parse_overrides(list(arguments))
    except HydraException as exc:
        text = "; ".join(line.strip() for line in str(exc).splitlines() if line.strip())
        raise SearchError(f"the Optuna search space cannot be read: {text}.") from exc


def search_space(arguments: Sequence[str]) -> tuple[dict, dict]:
    """(distributions, fixed values) of the sweeper's params and the command line's overrides."""
    space, fixed = {}, {}
    for override in _parse(arguments):
        value = distribution(override)
        key = override.get_key_element()
        (fixed if isinstance(value, str) else space)[key] = value
    return space, fixed


def _drawn(override: Override) -> list:
    """The values a search may give ``override``'s key: a range's ends, or every choice."""
    value = override.value()
    if override.is_interval_sweep():
        return [value.start, value.end]
    values = list(override.sweep_iterator())
    return values if override.is_choice_sweep() or value.shuffle else [values[0], values[-1]]


def _method_estimator(config: DictConfig):
    """The estimator the method config builds (a plain class as its
    :class:`~mlgraph.methods.labelled_only.PlainEstimator`); None when it cannot be built before
    the search gives its values (a mandatory value, say); :class:`SearchError` when no job could
    build it (``method._target_`` not an estimator)."""
    from mlgraph.engine.tuning import NON_PARAMETER_KEYS
    from mlgraph.methods.labelled_only import check_target, cloneable

    try:
        fields = OmegaConf.to_container(config.method, resolve=True, throw_on_missing=True)
    except Exception:
        return None
    try:
        check_target(fields.get("_target_"))
        estimator = instantiate(
            {k: v for k, v in fields.items() if k not in NON_PARAMETER_KEYS}, _convert_="all"
        )
        return cloneable(estimator)
    except ValueError as exc:
        raise SearchError(str(exc)) from exc
    except Exception:  # the search's own values may be what the constructor needs
        return None


def _parameter_problem(estimator, method: str, line: str, name: str, drawn: list) -> str | None:
    """Why ``method.<name>`` (``a.b`` for the nested parameter ``a__b``) cannot take the values
    a search draws for it, or None."""
    param = name.replace(".", "__")
    params = estimator.get_params(deep=True)
    if param not in params:
        own = sorted(p for p in estimator.get_params(deep=False) if p != "estimator_class")
        cls = getattr(estimator, "estimator_class", type(estimator))  # a plain class's own name
        return (
            f"{line}: {cls.__name__} (method {method}) has no parameter {param!r}; a "
            f"search may vary method.<param> for its parameters ({', '.join(own) or 'none'}), "
            "method.<param>.<nested> for a nested estimator's, or any key of the config"
        )
    *path, last = param.split("__")
    owner = estimator
    for part in path:
        owner = owner.get_params(deep=False)[part]
    rule = getattr(owner, "_rules", {}).get(last)
    if rule is not None:
        ok, text = rule
        refused = [v for v in drawn if not ok(v)]
        if refused:
            return (
                f"{line}: this search can give {last}={refused[0]!r}, but {type(owner).__name__}'s "
                f"{last} (method {method}) must be {text}"
                + ("; search an integer as int(interval(a, b))" if isinstance(refused[0], float) else "")
            )
    return None


def check_search(arguments: Sequence[str], config: DictConfig, group_options=None) -> None:
    """Check an Optuna search space (the sweeper's params and the command line's overrides)
    against the composed config before any trial: its ranges (:func:`distribution`), then each
    swept key: a config group's choices are options of that group (``group_options(group)``
    lists them, when given); ``method.<param>`` names a parameter of the method's estimator,
    declared in the method's config unless appended with ``+``, and every value the search may
    draw meets the estimator's declared rules for it (``_rules``); any other key is a key of the
    config. :class:`SearchError` in one paragraph on the first problem."""
    from mlgraph.engine.tuning import NON_PARAMETER_KEYS

    overrides = [o for o in _parse(arguments) if o.is_sweep_override()]
    for override in overrides:
        distribution(override)
    choices = OmegaConf.select(config, "hydra.runtime.choices", default=None) or {}
    groups = {o.key_or_group for o in overrides if o.key_or_group in choices}
    absent = object()
    estimator = absent
    method = config.method.get("name", "?") if "method" in config else "?"
    for override in overrides:
        key, line = override.key_or_group, override.input_line
        appended = (override.get_key_element() or "").startswith("+")
        if key in choices:
            if not override.is_choice_sweep():
                raise SearchError(f"{line}: {key} is a config group; search its options with choice(...).")
            known = group_options(key) if group_options is not None else None
            unknown = [v for v in _drawn(override) if known is not None and str(v) not in known]
            if unknown:
                raise SearchError(
                    f"{line}: {unknown[0]!r} is not an option of config group {key} "
                    f"({', '.join(sorted(known))})."
                )
            continue
        declared = OmegaConf.select(config, key, default=absent, throw_on_missing=False) is not absent
        if key.startswith("method.") and "method" not in groups and key != "method._target_":
            name = key.removeprefix("method.")
            if name in NON_PARAMETER_KEYS:
                continue
            if estimator is absent:
                estimator = _method_estimator(config)
            if estimator is not None:
                problem = _parameter_problem(estimator, method, line, name, _drawn(override))
                if problem:
                    raise SearchError(problem + ".")
            if not declared and not appended:
                raise SearchError(
                    f"{line}: method {method}'s config does not declare {name}; add it to the "
                    f"method's YAML, or append it to the config: +{key}=..."
                )
        elif not declared and not appended:
            raise SearchError(
                f"{line}: {key} is not a key of the config (python -m run --cfg job lists them), "
                "nor a parameter of the method (searched as method.<param>)."
            )


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
        self.config_loader = hydra_context.config_loader
        self.launcher = Plugins.instance().instantiate_launcher(
            hydra_context=hydra_context, task_function=task_function, config=config
        )

    def _study(self):
        import optuna

        from mlgraph.engine.jobs import ENV_SWEEP

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
        try:
            space, fixed = search_space(params)
            if not space:
                raise SearchError(
                    "hydra/sweeper=optuna needs a search space: hydra.sweeper.params (a preset) or "
                    "sweep overrides such as 'method.gamma_A=tag(log, interval(1e-4, 1e-1))'."
                )
            check_search(params, self.config, self.config_loader.get_group_options)
        except SearchError as exc:
            self._refuse(str(exc))
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
            self._compose(study, batch, overrides)
            returns = self.launcher.launch(overrides, initial_job_idx=self.job_idx)
            self.job_idx += len(returns)
            for trial, ret in zip(batch, returns, strict=True):
                try:
                    if ret.status == JobStatus.FAILED:  # its error, without Hydra's print of it
                        raise ret._return_value
                    value = objective_value(ret.return_value, self.objective)
                    if value is None:  # skipped: this config already has a FINISHED run
                        value = self._known_value(study, trial.params)
                    study.tell(trial, value)
                except Exception as exc:  # a failed job is a failed trial; the search goes on
                    study.tell(trial, state=TrialState.FAIL)
                    first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
                    log.warning("Optuna trial %d failed: %s", trial.number, first)
                    failures += 1
            launched += len(batch)
            done += len(batch)
            if failures / launched > self.max_failure_rate:
                raise SearchStopped(
                    f"{failures} of {launched} Optuna trials failed, more than "
                    f"hydra.sweeper.max_failure_rate={self.max_failure_rate}; the study is kept "
                    "(resume=true continues it)."
                )
        self._finish(study)

    def _compose(self, study, batch, overrides) -> None:
        """Compose each job's config here before launching it, as Hydra's own sweeper does: a
        setting that does not compose is a config error of the search (its trials are failed)."""
        from optuna.trial import TrialState

        for trial_overrides in overrides:
            try:
                self.config_loader.load_sweep_config(self.config, list(trial_overrides))
            except HydraException as exc:
                for trial in batch:
                    study.tell(trial, state=TrialState.FAIL)
                text = " ".join(str(exc).split())
                self._refuse(
                    f"the Optuna search's setting {' '.join(trial_overrides)} gives no config: {text}.",
                    stopped="The search stops before launching it",
                )

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
        failed = study.get_trials(deepcopy=False, states=(TrialState.FAIL,))
        results = {"name": "optuna", "study": study.study_name, "n_complete": len(complete)}
        # trials an interrupt left RUNNING were asked again: only finished ones count
        counts = {"optuna_trials_complete": len(complete), "optuna_trials_failed": len(failed)}
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
                    "optuna_trials": str(len(complete) + len(failed)),
                }
            )
            counts["optuna_best_value"] = float(best.value)  # a metric: sortable in the runs table
            log.info("Optuna best %s = %.4f with %s", self.objective, best.value, best.params)
        self._log_parent_metrics(counts)
        folder = Path(self.config.hydra.sweep.dir)
        folder.mkdir(parents=True, exist_ok=True)
        OmegaConf.save(OmegaConf.create(results), folder / "optimization_results.yaml")

    def _refuse(self, problem: str, stopped: str = "No Optuna trial was run") -> None:
        """End the sweep on a config error of the search: the problem on stderr and on the
        sweep's parent run (tag ``error``; the sweep callback ends it FAILED), exit status 2."""
        from mlgraph.engine.jobs import ENV_PARENT

        parent = os.environ.get(ENV_PARENT)
        text = f"{problem} {stopped}" + (
            f"; the sweep's parent run {parent} is FAILED with this reason." if parent else "."
        )
        try:
            self._tag_parent({"error": text})
        except Exception as exc:  # the paragraph still goes out
            log.warning("could not tag the sweep's parent run: %s", exc)
        print(text, file=sys.stderr)
        raise SystemExit(2)

    def _tag_parent(self, tags: dict[str, str]) -> None:
        from mlgraph.engine.jobs import ENV_PARENT

        parent = os.environ.get(ENV_PARENT)
        if parent:
            client = mlflow.MlflowClient(self.config.tracking.uri)
            for key, value in tags.items():
                client.set_tag(parent, key, redact(value[:5000]))

    def _log_parent_metrics(self, metrics: dict[str, float]) -> None:
        from mlgraph.engine.jobs import ENV_PARENT

        parent = os.environ.get(ENV_PARENT)
        if parent:
            client = mlflow.MlflowClient(self.config.tracking.uri)
            for key, value in metrics.items():
                client.log_metric(parent, key, value)
