"""Where a composed config becomes objects: the dataset, the trials of its protocol, the
estimator of its method (feature selection and normalisation included) and the metrics that
score it, gathered in a :class:`Plan`; then, once the plan passed
:func:`~mlgraph.engine.checks.check_before_run`, how its trials run (:func:`schedule`). A value
that cannot be built is a :class:`~mlgraph.engine.checks.ConfigError` naming its config group.
"""

from __future__ import annotations

import dataclasses
import inspect
import logging
from dataclasses import dataclass, field

from hydra.utils import call, get_method, instantiate
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException
from sklearn.pipeline import Pipeline

from mlgraph.config.profiles import check_data
from mlgraph.data import load_dataset
from mlgraph.data.dual_set import DualSetDataset
from mlgraph.data.splits import SPLIT_KEYS, load_fixed_split
from mlgraph.engine.checks import ConfigError
from mlgraph.engine.runner import Parallelism, resolve_parallelism
from mlgraph.engine.tuning import NON_PARAMETER_KEYS, InnerSelection, TuningError, inner_selection
from mlgraph.evaluation.metrics import DUAL_SET_METRICS, METRICS
from mlgraph.evaluation.protocols import protocol_inputs, uses_fixed_split
from mlgraph.methods.dual_set import DualSetEstimator, DualSetFromMultiLabel
from mlgraph.methods.labelled_only import check_target, unlabelled_rows, with_unlabelled_rule
from mlgraph.methods.selection import Standardise

log = logging.getLogger("mlgraph.engine.experiment")  # a job's messages under one name, the task's


@dataclass
class Plan:
    """Everything a job needs, built and checked before its MLflow run opens."""

    data: object
    estimator: object
    trials: list
    metrics: list[str]
    evaluation: dict
    notes: tuple[str, ...] = ()  # what the profile does not reach, logged with the run
    parallelism: Parallelism | None = None  # trial processes and BLAS threads, set by schedule
    tuning: InnerSelection | None = None  # tuning=inner: each trial's nested selection
    tags: dict = field(default_factory=dict)  # how the estimator is run (unlabelled rows, tuning)


def load_from_config(dataset: DictConfig, protocol: DictConfig | None = None):
    """Load the dataset a ``dataset`` config group describes (protocol keys excluded): a MULAN
    multi-label dataset, or, with a ``_target_`` loader, any other kind (dual-set data). Under a
    protocol that evaluates the published split (``protocol=fixed``), a MULAN dataset's training
    and test files instead, stacked, with their boundary ``n_train``."""
    fields = OmegaConf.to_container(dataset, resolve=True, throw_on_missing=True)
    for protocol_key in ("subsample", "cv_train_size"):
        fields.pop(protocol_key, None)
    fixed = protocol is not None and uses_fixed_split(protocol)
    if "_target_" in fields:  # the config's `name` labels runs; a loader may or may not take it
        if fixed:
            raise ValueError(
                f"protocol=fixed evaluates a MULAN dataset's published train/test files; "
                f"dataset {fields.get('name')!r} has none (use protocol=cv5 or halves)"
            )
        loader = get_method(fields["_target_"])
        if "name" not in inspect.signature(loader).parameters:
            fields.pop("name", None)
        return instantiate(fields)
    if fixed:
        return load_fixed_split(**fields)
    for split_key in SPLIT_KEYS:
        fields.pop(split_key, None)
    return load_dataset(**fields)


def n_labels(data) -> int:
    """Labels of multi-label data; a dual-set table's one-hot columns."""
    return getattr(data, "n_labels", data.Y.shape[1])


def task_metrics(data) -> list[str]:
    """Dual-set data are scored by Definition 4 of paper 001; multi-label data by every metric."""
    return list(DUAL_SET_METRICS) if isinstance(data, DualSetDataset) else list(METRICS)


def _instantiate(group: DictConfig):
    # resolved in place first: an interpolation of a nested node (a base estimator's
    # ${oc.select:profile.distance,...}) then sees the whole config
    fields = OmegaConf.to_container(group, resolve=True) if isinstance(group, DictConfig) else dict(group)
    return instantiate({k: v for k, v in fields.items() if k not in NON_PARAMETER_KEYS}, _convert_="all")


def make_estimator(method: DictConfig, selector: DictConfig | None = None, normalise: bool = False):
    """Instantiate the estimator of a ``method`` config (its ``name`` is a label only). With a
    feature ``selector`` and/or ``normalise`` (paper 004's protocol), the pipeline
    normalise → select features → method, every step fitted on a trial's training part only."""
    estimator, _ = with_unlabelled_rule(_instantiate(method), method.get("semi_supervised", "auto"))
    steps = [("normalise", Standardise())] if normalise else []
    if selector is not None and selector.get("_target_") is not None:
        steps.append(("select", _instantiate(selector)))
    return Pipeline([*steps, ("classify", estimator)]) if steps else estimator


def _config_error(where: str, exc: BaseException) -> ConfigError:
    if isinstance(exc, OmegaConfBaseException) and "Missing mandatory value" in str(exc):
        key = getattr(exc, "full_key", "") or where
        return ConfigError(f"{key} is required and has no value: give it on the command line, e.g. {key}=...")
    text = str(exc).strip() or type(exc).__name__
    return ConfigError(f"{where}: {text}")


def plan_from_config(cfg: DictConfig) -> Plan:
    """Load the data, build the trials and the estimator (the profile applied to it) and choose
    the metrics, raising :class:`~mlgraph.engine.checks.ConfigError` (one paragraph) on the first
    value that cannot be built. The plan's keys are checked before
    (:func:`~mlgraph.engine.checks.check_run_keys`), its limits after
    (:func:`~mlgraph.engine.checks.check_before_run`)."""
    try:
        data = load_from_config(cfg.dataset, cfg.protocol)
    except (ValueError, TypeError, OSError, LookupError, OmegaConfBaseException) as exc:
        raise _config_error(f"dataset={cfg.dataset.get('name', '?')}", exc) from exc
    log.info(
        "dataset %s: %d instances, %d features, %d labels read from %s",
        data.name,
        data.n_samples,
        data.n_features,
        n_labels(data),
        data.source,
    )
    try:
        protocol = {k: v for k, v in cfg.protocol.items() if k != "normalise"}
        trials = call(protocol, seed=cfg.seed, **protocol_inputs(protocol, data))
    except Exception as exc:  # Hydra's `call` wraps the protocol's own error
        raise _config_error("protocol", exc.__cause__ or exc) from exc
    try:
        check_target(cfg.method.get("_target_"))
        estimator = make_estimator(cfg.method, cfg.get("selector"), cfg.protocol.get("normalise", False))
    except Exception as exc:  # Hydra wraps a constructor's error in InstantiationException
        raise _config_error("method", exc.__cause__ or exc) from exc
    if isinstance(data, DualSetDataset) and not isinstance(estimator, DualSetEstimator):
        estimator = DualSetFromMultiLabel(estimator)  # one-hot sets, best label within each
    try:  # the kNN steps learn the dataset's nominal attributes; a note where the profile stops
        notes = check_data(estimator, data, cfg.method.name, **(cfg.get("profile") or {}))
    except ValueError as exc:
        raise _config_error("profile", exc) from exc
    for note in notes:
        log.warning("%s", note)
    options = cfg.get("metrics") or {}
    evaluation = {
        "empty_rows": options.get("empty_rows", "mulan"),
        "ties": options.get("ties", "mulan"),
        "zero_division": options.get("zero_division", "warn"),
        "auc_single_class": options.get("auc_single_class", "skip"),
        "diagnostics": True,
    }
    if isinstance(data, DualSetDataset):
        evaluation = {}
    return Plan(data, estimator, trials, task_metrics(data), evaluation, tuple(notes))


def schedule(
    plan: Plan, cfg: DictConfig, in_parallel_launcher: bool = False, launcher_jobs: int | None = None
) -> Plan:
    """How a checked plan's trials run: ``tuning=inner``'s nested selection, its keys checked
    against the trials (:class:`~mlgraph.engine.checks.ConfigError`), and the trial processes
    and BLAS threads (:func:`~mlgraph.engine.runner.resolve_parallelism`)."""
    try:
        tuning = inner_selection(cfg, plan.estimator, plan.trials, plan.data.Y, plan.evaluation)
    except TuningError as exc:
        raise ConfigError(str(exc)) from exc
    parallelism = resolve_parallelism(
        cfg.n_jobs, in_parallel_launcher, n_trials=len(plan.trials), launcher_jobs=launcher_jobs
    )
    tags = {
        "unlabelled_rows": unlabelled_rows(plan.estimator),
        "tuning": tuning.describe() if tuning else "none",
    }
    return dataclasses.replace(plan, parallelism=parallelism, tuning=tuning, tags=tags)
