"""The task behind ``python -m run``: one config in, one tracked MLflow run out.

Data flows one way: dataset → protocol (trials) → method (fit/score per trial, in parallel)
→ metrics → tracking and report. Everything is a plain function of the composed config, so
tests call :func:`run_experiment` without Hydra.
"""

from __future__ import annotations

import contextlib
import csv
import importlib.metadata
import inspect
import io
import json
import logging
import numbers
import os
import re
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.sparse as sp
from hydra.errors import CompactHydraException
from hydra.utils import call, get_method, instantiate
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException
from sklearn.base import clone
from sklearn.pipeline import Pipeline

from mlgraph.config import keys as config_keys
from mlgraph.config.profiles import PROFILES, check_data
from mlgraph.data import load_dataset
from mlgraph.data.dual_set import DualSetDataset
from mlgraph.data.splits import SPLIT_KEYS, load_fixed_split
from mlgraph.engine.runner import (
    Parallelism,
    resolve_parallelism,
    run_trials,
    summarise,
    unavailable_scores_note,
)
from mlgraph.engine.sweep import (
    LOCAL_PARALLEL_LAUNCHERS,
    JobInfo,
    close_orphaned_sweep,
    concurrent_jobs,
    record_skipped,
    run_name,
)
from mlgraph.engine.tuning import (
    NON_PARAMETER_KEYS,
    InnerSelection,
    TuningError,
    inner_selection,
    log_choices,
)
from mlgraph.evaluation.figures import (
    FIG1_METRICS,
    format_summary,
    plot_metrics_vs_rate,
    plot_rounds,
    pyplot,
    save_figure,
)
from mlgraph.evaluation.metrics import DUAL_SET_METRICS, METRICS
from mlgraph.evaluation.protocols import protocol_inputs, uses_fixed_split
from mlgraph.graphs import KINDS, SEARCHES, WEIGHTS
from mlgraph.methods.base import check_params, nonneg, positive, positive_int
from mlgraph.methods.dual_set import DualSetEstimator, DualSetFromMultiLabel
from mlgraph.methods.labelled_only import check_target, unlabelled_rows, with_unlabelled_rule
from mlgraph.methods.selection import Standardise
from mlgraph.processes.signals import (
    Interrupted,
    deferred,
    die_of,
    die_with_parent,
    end_worker_between_jobs,
    interrupts_raise,
    raise_pending,
    stop_workers,
)
from mlgraph.tracking.process import tracked
from mlgraph.tracking.store import (
    config_hash,
    config_params,
    describe_run,
    end_run,
    log_artifact,
    log_artifacts,
    log_batch,
    log_sklearn_model,
    open_run,
    set_tags,
    setup_from_config,
    storage_problem,
)

log = logging.getLogger(__name__)


@contextlib.contextmanager
def _timed(totals: dict[str, float], key: str):
    started = time.perf_counter()
    try:
        yield
    finally:
        totals[key] += time.perf_counter() - started


@contextlib.contextmanager
def _artifact_dir(output_dir: str | os.PathLike | None):
    """Hydra's job folder when there is one, else a temporary folder removed afterwards."""
    if output_dir:
        yield Path(output_dir)
    else:
        with tempfile.TemporaryDirectory(prefix="mlgraph-") as tmp:
            yield Path(tmp)


class ConfigError(CompactHydraException, ValueError):
    """A bad config value or input file, found before any trial runs and before an MLflow run
    opens. Hydra prints it as one paragraph (``HYDRA_FULL_ERROR=1`` shows the traceback)."""


class AllTrialsFailed(CompactHydraException, RuntimeError):
    """Every trial of a job failed (or, with ``strict=true``, any): the run is FAILED."""


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


def _n_labels(data) -> int:
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


def shown_metrics(metrics: list[str]) -> list[str]:
    """The console summary's columns: paper 000's three metrics, or the task's own."""
    return [m for m in FIG1_METRICS if m in metrics] or metrics


def round_curves(table: pd.DataFrame) -> pd.DataFrame:
    """Mean and std over trials of the per-round accuracies (``<metric>@t`` columns), one row per
    round t (paper 001, Fig. 3); empty for methods without rounds."""
    ok = table[table.status == "ok"]
    columns = [c for c in ok.columns if "@" in c]
    if not columns:
        return pd.DataFrame()
    long = (
        ok[columns]
        .melt(var_name="key")
        .assign(
            metric=lambda d: d.key.str.split("@").str[0],
            round=lambda d: d.key.str.split("@").str[1].astype(int),
        )
    )
    stats = long.groupby(["round", "metric"]).value.agg(["mean", "std"]).unstack("metric")
    stats.columns = [m if s == "mean" else f"{m}_std" for s, m in stats.columns]
    return stats


# MLflow metric keys. A run's summary numbers (``<metric>_overall``, ``n_trials``, ``n_failed``)
# and its per-rate series sit at the top level: each metric ``<metric>`` and ``<metric>_std``
# once per labelling rate, step = the rate in percent (100: all labelled), the keys every
# comparison reads. The other series are grouped under what their step means, so that the UI's
# "Step" axis is explained by the section's name.
PER_FOLD = "per_fold/"  # cross-validation folds and random splits, step = fold (split) number
PER_ROUND = "per_round/"  # paper 001, Fig. 3: step = boosting round t
DIAGNOSTICS = "run/"  # degenerate labels, approximate solvers, time spent (after per_* in the UI)


def _metric_rows(summary: pd.DataFrame, table: pd.DataFrame, metrics: list[str]):
    """(key, value, step): the summary over all trials, then the series by prefix (above)."""
    ok = table[table.status == "ok"]
    overall = "_overall" if len(ok) == len(table) else "_overall_ok_only"  # says it skips failures
    for metric in metrics:
        if ok[metric].notna().any():
            yield f"{metric}{overall}", ok[metric].mean(), 0
    yield "n_trials", len(table), 0
    yield "n_failed", int((table.status != "ok").sum()), 0
    for _, row in summary.iterrows():
        for metric in metrics:
            if pd.notna(row[metric]):
                yield metric, row[metric], row["step"]
                yield f"{metric}_std", row[f"{metric}_std"], row["step"]
    if len(summary) == 1:  # cross-validation and halves: each fold or split, step = its number
        for repetition, values in zip(ok["repetition"], ok[metrics].itertuples(index=False), strict=True):
            for metric, value in zip(metrics, values, strict=True):
                if pd.notna(value):
                    yield f"{PER_FOLD}{metric}", value, repetition
    for t, row in round_curves(table).iterrows():  # paper 001, Fig. 3: step = boosting round
        for metric in metrics:
            if metric in row and pd.notna(row[metric]):
                yield f"{PER_ROUND}{metric}", row[metric], t
    if "n_degenerate_labels" in ok and len(ok):
        yield f"{DIAGNOSTICS}n_degenerate_labels", ok["n_degenerate_labels"].max(), 0
        yield f"{DIAGNOSTICS}n_trials_with_degenerate_labels", int(ok["n_degenerate_labels"].gt(0).sum()), 0
    for column in (c for c in ok.columns if c.startswith("solver_")):  # how far an approximation is
        yield f"{DIAGNOSTICS}{column}_max", ok[column].max(), 0
    for column in (c for c in ok.columns if c.startswith("graph_")):  # e.g. an approximate search's recall
        yield f"{DIAGNOSTICS}{column}_min", ok[column].min(), 0
    if len(ok):
        yield f"{DIAGNOSTICS}fit_seconds_mean", ok["fit_seconds"].mean(), 0


def _log_artifacts(
    run_dir: Path, cfg: DictConfig, table: pd.DataFrame, summary: pd.DataFrame, title: str
) -> None:
    run_dir.mkdir(parents=True, exist_ok=True)
    table.to_csv(run_dir / "trials.csv", index=False)
    summary.to_csv(run_dir / "summary.csv")
    (run_dir / "config.yaml").write_text(OmegaConf.to_yaml(cfg, resolve=True))
    paths = [run_dir / "trials.csv", run_dir / "summary.csv", run_dir / "config.yaml"]
    if summary["n_ok"].sum() and len(summary) > 1:  # a curve needs several labelling rates
        fig = plot_metrics_vs_rate({cfg.method.name: summary}, FIG1_METRICS, title=title)
        paths += save_figure(fig, run_dir / "metrics_vs_rate.png")
    rounds = round_curves(table)
    if not rounds.empty:
        rounds.to_csv(run_dir / "rounds.csv")
        paths += [
            run_dir / "rounds.csv",
            *save_figure(plot_rounds({cfg.method.name: rounds}, title=title), run_dir / "rounds.png"),
        ]
    tuned_files, tuned_tags = log_choices(table, run_dir, title=f"values chosen by tuning=inner: {title}")
    tracked(log_artifacts, [str(p) for p in paths + tuned_files], tuned_tags)


# MLflow stores a dataset digest in at most 36 characters; the full SHA-256 is in the dataset's
# profile and in the run's tag ``dataset_sha256``.
DIGEST_LENGTH = 16


def protocol_name(cfg: DictConfig, job: JobInfo) -> str:
    """The protocol option a job ran (``ssl``, ``halves``, ``cv10``, ...), else its function."""
    return job.choices.get("protocol") or str(cfg.protocol.get("_target_", "protocol")).rsplit(".", 1)[-1]


def dataset_fields(data, context: str) -> dict[str, str]:
    """The run's dataset as the fields of an MLflow dataset input
    (:func:`mlgraph.tracking.store.dataset_input`): name, digest = the SHA-256 of the file as stored
    (its first :data:`DIGEST_LENGTH` hex digits; of a published train/test split, the first half
    of each file's, joined by ``-``), source = that file, the shapes of features and labels as
    schema and profile (with the full SHA-256), and the protocol as context."""
    X, Y = data.X, data.Y
    n_labels = getattr(data, "n_labels", Y.shape[1])
    spec = lambda dtype, width: json.dumps(  # noqa: E731
        [{"type": "tensor", "tensor-spec": {"dtype": str(dtype), "shape": [-1, width]}}]
    )
    parts = data.sha256.split(";")  # a published split: the training file's, then the test file's
    return dict(
        name=data.name,
        digest="-".join(p[: DIGEST_LENGTH // len(parts)] for p in parts),
        source=json.dumps({"uri": str(data.source)}),
        schema=json.dumps(
            {
                "mlflow_tensorspec": {
                    "features": spec(X.dtype, X.shape[1]),
                    "targets": spec(Y.dtype, Y.shape[1]),
                }
            }
        ),
        profile=json.dumps(
            {
                "features_shape": [int(X.shape[0]), int(X.shape[1])],
                "targets_shape": [int(Y.shape[0]), int(n_labels)],
                "sha256": data.sha256,
            }
        ),
        context=context,
    )


def model_trial(trials: list) -> object:
    """The trial whose training part the logged model is fitted on: with ``protocol=fixed`` the
    one published split; otherwise the first repetition at the highest labelling rate (the
    first fold under cross-validation, the first split under halves), so that the model has
    the most labels any trial gave it."""
    top = max(t.rate for t in trials)
    return min((t for t in trials if t.rate == top), key=lambda t: t.repetition)


def log_model(plan: Plan) -> None:
    """``tracking.log_model=true``: refit the estimator on :func:`model_trial`'s training part
    (its unlabelled rows marked −1; a transductive method on those rows alone, without the test
    rows the trial joined to its graph) and log it in MLflow's scikit-learn flavour as
    ``model``, with a signature and an input example of five training rows. No test row reaches
    the model, the example or the signature.

    The model is serialised by skops (MLflow's default format), which rebuilds only the types it
    is told to trust: mlgraph's own estimators and scipy's sparse matrices (see
    :func:`trusted_types`), never arbitrary pickled code. Kernel and neighbour methods keep their
    training rows inside the model, so a logged model carries training data.
    """
    trial = model_trial(plan.trials)
    X, Y = plan.data.X, plan.data.Y
    X_train = X[trial.train]
    model = clone(plan.estimator).fit(X_train, trial.targets(Y))
    example = X_train[:5]
    example = example.toarray() if sp.issparse(example) else np.asarray(example)
    tracked(
        log_sklearn_model,
        model,
        example,
        model.predict(example),
        trusted_types(model),
        [f"{p}=={importlib.metadata.version(p)}" for p in MODEL_REQUIREMENTS],
        {
            "model_trial": f"rate={trial.rate:g} repetition={trial.repetition}",
            "model_training_rows": str(len(trial.train)),
        },
    )


# What a logged model needs to load (mlgraph itself, since the estimators are its classes).
MODEL_REQUIREMENTS = ("mlgraph", "numpy", "scipy", "scikit-learn", "skops")
TRUSTED_MODULES = ("mlgraph.", "scipy.sparse.")


def trusted_types(model) -> list[str]:
    """The types skops does not trust by default that ``model`` holds, when all of them are
    mlgraph's estimators or scipy's sparse matrices; any other type is refused by name."""
    import skops.io

    found = skops.io.get_untrusted_types(data=skops.io.dumps(model))
    foreign = [t for t in found if not t.startswith(TRUSTED_MODULES)]
    if foreign:
        raise ValueError(
            f"the model holds types outside mlgraph and scipy.sparse ({', '.join(foreign)}), which "
            "a logged model does not trust; log it yourself with mlflow.sklearn.log_model"
        )
    return found


def run_from_hydra(cfg: DictConfig) -> pd.DataFrame | None:
    """The body of every Hydra entry point (``python -m run``, ``mlgraph run``): reads the
    launcher, job folder and sweep position from Hydra's runtime config and calls
    :func:`run_experiment`; a signal ends the process by that signal once the run is KILLED."""
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    hc = HydraConfig.get()
    launcher = hc.runtime.choices.get("hydra/launcher", "")
    multirun = hc.mode == RunMode.MULTIRUN
    if multirun:
        die_with_parent()  # a launcher's worker process ends with the sweep's main process
        end_worker_between_jobs()
    parallel = multirun and launcher in LOCAL_PARALLEL_LAUNCHERS
    try:
        with interrupts_raise():  # from the job's first step: none of it may turn a signal into a result
            return run_experiment(
                cfg,
                in_parallel_launcher=parallel,
                output_dir=hc.runtime.output_dir,
                launcher_jobs=concurrent_jobs(hc.launcher) if parallel else None,
                job=JobInfo.from_hydra(hc),
            )
    except Exception as exc:  # a full disk, a read-only folder: one paragraph naming the path
        problem = storage_problem(exc, cfg.tracking.get("uri"))
        if problem is None:
            raise
        raise problem from exc
    except Interrupted as exc:
        if multirun:
            with deferred():
                try:
                    close_orphaned_sweep()
                except Exception as err:  # the store may be gone too; the job still ends
                    log.warning("could not close the sweep's parent run: %s", err)
        die_of(exc.signum)


def _optional(check):
    return lambda v: v is None or check(v)


def _one_of(*allowed):
    return lambda v: v in allowed


def _count(v) -> bool:
    return isinstance(v, numbers.Integral) and nonneg(v)


# Keys outside the estimator's own parameters: (check, what is allowed).
_RUN_KEYS = {
    "seed": (_count, "a non-negative integer"),
    "n_jobs": (lambda v: v == "auto" or positive_int(v), "a positive integer or 'auto'"),
    "progress": (_one_of(True, False), "true or false"),
    "resume": (_one_of(True, False), "true or false"),
    "strict": (_one_of(True, False), "true or false"),
    "graph_cache": (
        _optional(lambda v: isinstance(v, str) and not Path(v).is_file()),
        "null or a folder path (not a file)",
    ),
    "tracking.checkpoint_seconds": (nonneg, "a number of seconds >= 0"),
    "tracking.log_model": (_one_of(True, False), "true or false"),
    "metrics.empty_rows": (_one_of("mulan", "exclude"), "mulan or exclude"),
    "metrics.ties": (_one_of("mulan", "max"), "mulan or max"),
    "metrics.zero_division": (_one_of("warn", 0, 1), "warn, 0 or 1"),
    "metrics.auc_single_class": (_one_of("skip", "nan"), "skip or nan"),
    "profile.name": (_one_of(*PROFILES), " or ".join(PROFILES)),
    "profile.distance": (_one_of("euclidean", "weka"), "euclidean or weka"),
    "dataset.n_labels": (_optional(positive_int), "null or a positive integer"),
    "dataset.subsample": (_optional(lambda v: positive(v) and v <= 1), "null or a fraction in (0, 1]"),
    "dataset.cv_train_size": (_optional(positive_int), "null or a positive integer"),
    "graph.kind": (_one_of(*KINDS), " or ".join(KINDS)),
    "graph.k": (_optional(positive_int), "null or a positive integer (neighbours per point)"),
    "graph.b": (_optional(positive_int), "null or a positive integer (the degree of every node)"),
    "graph.eps": (_optional(positive), "null or a positive number"),
    "graph.weights": (_one_of(*WEIGHTS), " or ".join(WEIGHTS)),
    "graph.search": (_one_of(*SEARCHES), " or ".join(SEARCHES)),
}


def check_config_keys(cfg: DictConfig) -> None:
    """Every key of the config is declared by some config file, and every boolean key holds a
    boolean (:mod:`mlgraph.config.keys`); one paragraph naming each key that is not."""
    problem = config_keys.paragraph(cfg)
    if problem:
        raise ConfigError(problem)


def check_run_keys(cfg: DictConfig) -> None:
    """Check that every key is known (:func:`check_config_keys`), then validate the keys of
    :data:`_RUN_KEYS` that the config has, naming the key, its value and what is allowed."""
    check_config_keys(cfg)
    absent = object()
    for key, (ok, allowed) in _RUN_KEYS.items():
        value = OmegaConf.select(cfg, key, default=absent, throw_on_missing=False)
        if value is not absent and not ok(value):
            raise ConfigError(f"{key}={value!r} is not valid: it must be {allowed}.")


def check_estimator_params(estimator) -> None:
    """Run each step's declarative parameter checks (``_rules``) once, before any trial, and
    name the failing config key (``method.<param>`` or ``selector.<param>``)."""
    steps = estimator.steps if isinstance(estimator, Pipeline) else [("classify", estimator)]
    groups = {"classify": "method", "select": "selector"}
    for step, est in steps:
        inner = getattr(est, "estimator", None)  # DualSetFromMultiLabel wraps a multi-label method
        for candidate in (est, inner):
            if candidate is None or not hasattr(candidate, "_rules"):
                continue
            try:
                check_params(candidate, candidate._rules)
            except ValueError as exc:
                match = re.search(r"parameter (\w+)=(.*?) must be (.*)$", str(exc))
                if not match:
                    raise ConfigError(f"{groups.get(step, step)}: {exc}") from exc
                name, value, allowed = match.groups()
                raise ConfigError(
                    f"{groups.get(step, step)}.{name}={value} is not valid for "
                    f"{type(candidate).__name__}: it must be {allowed}."
                ) from exc


def _reads_graph(cfg: DictConfig, key: str) -> bool:
    """Whether the method takes ``graph.<key>`` (its config interpolates it)."""
    method = OmegaConf.to_container(cfg.get("method") or OmegaConf.create(), resolve=False)
    return f"${{graph.{key}}}" in method.values()


# Neighbour counts, bounded by the points they are searched among (each point's own excluded):
# config key -> whether the config uses it.
_NEIGHBOUR_COUNTS = {
    "graph.k": lambda cfg: cfg.graph.get("kind") == "knn" and _reads_graph(cfg, "k"),
    "graph.b": lambda cfg: cfg.graph.get("kind") == "bmatching" and _reads_graph(cfg, "b"),
    "method.k": lambda cfg: cfg.method.get("name") in ("mlknn", "sswl"),  # MLkNN's and SSWL's kNN
    "method.n_neighbors": lambda cfg: True,  # ML²'s K (Eq. 2)
    "method.base_estimator.n_neighbors": lambda cfg: True,  # a kNN classifier per label (paper 004)
    "selector.n_neighbors": lambda cfg: (cfg.get("selector") or {}).get("_target_") is not None,
}


def check_data_limits(cfg: DictConfig, data, trials: list, estimator) -> None:
    """Data-dependent limits, before the run opens: every trial has rows to fit and to score,
    and no neighbour count reaches the number of points it is searched among in the smallest
    trial (its training rows; a transductive method's graph also holds its test rows)."""
    if not trials:
        raise ConfigError(f"the protocol made no trials from dataset {cfg.dataset.get('name')}.")
    smallest = min(trials, key=lambda t: len(t.train))
    n_rows = getattr(data, "n_samples", None)
    where = f"dataset {cfg.dataset.get('name')} ({n_rows} rows) under this protocol"
    if len(smallest.train) < 2 or min(len(t.test) for t in trials) < 1 or not smallest.labelled.any():
        raise ConfigError(
            f"{where} gives a trial with {len(smallest.train)} training rows "
            f"({int(smallest.labelled.sum())} labelled) and {min(len(t.test) for t in trials)} test rows: "
            "a trial needs at least 2 training rows, 1 of them labelled, and 1 test row. Use more data "
            "or another protocol (protocol.test_size, protocol.rates, protocol.folds)."
        )
    final = estimator.steps[-1][1] if isinstance(estimator, Pipeline) else estimator
    final = getattr(final, "estimator", final)  # DualSetFromMultiLabel wraps a multi-label method
    transductive = getattr(final, "transductive", False)
    for key, applies in _NEIGHBOUR_COUNTS.items():
        value = OmegaConf.select(cfg, key, default=None, throw_on_missing=False)
        if not isinstance(value, int) or isinstance(value, bool) or not applies(cfg):
            continue
        graph_test = transductive and key.startswith("graph.")
        points = len(smallest.train) + (len(smallest.test) if graph_test else 0)
        if value > points - 1:
            searched = "training and test rows" if graph_test else "training rows"
            raise ConfigError(
                f"{key}={value} is too large for {where}: its smallest trial has {points} {searched} "
                f"to search, so {key} can be at most {points - 1}."
            )


@dataclass
class Plan:
    """Everything a job needs, built and checked before its MLflow run opens."""

    data: object
    estimator: object
    trials: list
    metrics: list[str]
    parallelism: Parallelism
    evaluation: dict
    notes: tuple[str, ...] = ()  # what the profile does not reach, logged with the run
    tuning: InnerSelection | None = None  # tuning=inner: each trial's nested selection
    tags: dict = field(default_factory=dict)  # how the estimator is run (unlabelled rows, tuning)


def _config_error(where: str, exc: BaseException) -> ConfigError:
    if isinstance(exc, OmegaConfBaseException) and "Missing mandatory value" in str(exc):
        key = getattr(exc, "full_key", "") or where
        return ConfigError(f"{key} is required and has no value: give it on the command line, e.g. {key}=...")
    text = str(exc).strip() or type(exc).__name__
    return ConfigError(f"{where}: {text}")


def prepare(cfg: DictConfig, in_parallel_launcher: bool = False, launcher_jobs: int | None = None) -> Plan:
    """Validate every key, load the data, build the trials and check the estimator, raising
    :class:`ConfigError` (one paragraph) on the first problem."""
    check_run_keys(cfg)
    try:
        data = load_from_config(cfg.dataset, cfg.protocol)
    except (ValueError, TypeError, OSError, LookupError, OmegaConfBaseException) as exc:
        raise _config_error(f"dataset={cfg.dataset.get('name', '?')}", exc) from exc
    log.info(
        "dataset %s: %d instances, %d features, %d labels read from %s",
        data.name,
        data.n_samples,
        data.n_features,
        _n_labels(data),
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
    check_estimator_params(estimator)
    check_data_limits(cfg, data, trials, estimator)
    options = cfg.get("metrics") or {}
    evaluation = {
        "empty_rows": options.get("empty_rows", "mulan"),
        "ties": options.get("ties", "mulan"),
        "zero_division": options.get("zero_division", "warn"),
        "auc_single_class": options.get("auc_single_class", "skip"),
        "diagnostics": True,
    }
    metrics = task_metrics(data)
    if isinstance(data, DualSetDataset):
        evaluation = {}
    try:
        tuning = inner_selection(cfg, estimator, trials, data.Y, evaluation)
    except TuningError as exc:
        raise ConfigError(str(exc)) from exc
    parallelism = resolve_parallelism(
        cfg.n_jobs, in_parallel_launcher, n_trials=len(trials), launcher_jobs=launcher_jobs
    )
    tags = {"unlabelled_rows": unlabelled_rows(estimator), "tuning": tuning.describe() if tuning else "none"}
    return Plan(data, estimator, trials, metrics, parallelism, evaluation, tuple(notes), tuning, tags)


class Checkpoint:
    """Finished trials, saved as they complete, so that an interrupted run resumes where it
    stopped: each row is appended to ``trials_partial.csv`` in the job folder at once (written
    through to the operating system, so that even SIGKILL of the job loses no finished trial),
    and that file is copied to the MLflow run at most every ``every`` seconds and when the run
    stops. The run's tag ``checkpoint_file`` names the local file, which a resume reads too
    (:func:`finished_trials`) when the machine resuming sees it."""

    NAME = "trials_partial.csv"
    TAG = "checkpoint_file"

    def __init__(self, run_id: str, folder: Path, every: float, done: pd.DataFrame):
        self.run_id, self.every = run_id, every
        self.path = folder / self.NAME
        self.rows = done.to_dict("records")
        self.columns: list[str] = []  # of the local file; none written yet
        self.uploaded, self.last = len(self.rows), time.monotonic()

    def add(self, row: dict) -> None:
        self.rows.append(row)
        if self.columns and set(row) <= set(self.columns):
            with open(self.path, "a", newline="") as out:
                csv.writer(out, lineterminator="\n").writerow([_csv_cell(row.get(c)) for c in self.columns])
        else:  # the first row, or one with new columns (a first failed trial's traceback)
            self.columns = list(dict.fromkeys(c for r in self.rows for c in r))
            self._rewrite()
        if time.monotonic() - self.last >= self.every:
            self.flush()

    def _rewrite(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f".{self.NAME}.tmp")
        pd.DataFrame(self.rows, columns=self.columns).to_csv(tmp, index=False, lineterminator="\n")
        os.replace(tmp, self.path)  # a reader never sees half a header

    def flush(self) -> None:
        """Copy the local checkpoint to the MLflow run, if it has rows the run has not."""
        if len(self.rows) == self.uploaded:
            return
        tracked(log_artifact, self.run_id, str(self.path))
        self.uploaded, self.last = len(self.rows), time.monotonic()


def _csv_cell(value) -> str:
    """``value`` as ``DataFrame.to_csv`` writes it in a row (missing and NaN empty, floats in
    their shortest round-trip form), without building a one-row DataFrame per finished trial."""
    if value is None or value is pd.NA or value is pd.NaT:
        return ""
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Real):
        if value != value:  # NaN
            return ""
        return str(value) if isinstance(value, np.floating) else repr(float(value))
    return str(value)


def _read_checkpoint(path: str | Path) -> pd.DataFrame:
    """A checkpoint's rows; a last line cut short by a kill mid-write is left out."""
    text = Path(path).read_text()
    complete = text[: text.rfind("\n") + 1]
    if not complete.strip():
        return pd.DataFrame()
    return pd.read_csv(io.StringIO(complete), keep_default_na=False, na_values=[""])


def finished_trials(run_id: str) -> pd.DataFrame:
    """The successful trials an interrupted run saved: the rows of its MLflow copy and of its
    local checkpoint (when this machine sees it; it is newer after a hard kill), each trial once."""
    import mlflow

    client = mlflow.MlflowClient()
    tables = []
    local = client.get_run(run_id).data.tags.get(Checkpoint.TAG)
    if local and Path(local).is_file():
        with contextlib.suppress(OSError, ValueError, pd.errors.ParserError):
            tables.append(_read_checkpoint(local))
    with tempfile.TemporaryDirectory(prefix="mlgraph-resume-") as tmp:
        with contextlib.suppress(Exception):  # no copy was saved before it stopped
            tables.append(_read_checkpoint(client.download_artifacts(run_id, Checkpoint.NAME, tmp)))
    tables = [t for t in tables if len(t) and {"status", "rate", "repetition"} <= set(t.columns)]
    if not tables:
        return pd.DataFrame()
    table = pd.concat(tables, ignore_index=True)
    table = table[table.status == "ok"]
    return table.drop_duplicates(["rate", "repetition"]).reset_index(drop=True)


def find_previous(experiment_id: str, chash: str):
    """The latest FINISHED run with config hash ``chash``, else the latest unfinished one."""
    import mlflow

    runs = mlflow.MlflowClient().search_runs(
        [experiment_id],
        f"tags.config_hash = '{chash}'",
        order_by=["attributes.start_time DESC"],
        max_results=100,
    )
    finished = [r for r in runs if r.info.status == "FINISHED"]
    return (finished or runs or [None])[0]


def _record_config_error(
    cfg: DictConfig, experiment_id: str, name: str, job: JobInfo, exc: ConfigError
) -> None:
    """A sweep job whose config is invalid still appears in the sweep, as a FAILED run with
    its params (as far as they resolve) and the error."""
    import mlflow

    client = mlflow.MlflowClient()
    tags = {**job.tags(), "error": str(exc)[:5000]}
    if job.parent_run_id:
        tags["mlflow.parentRunId"] = job.parent_run_id
    run = client.create_run(experiment_id, run_name=name, tags=tags)
    with contextlib.suppress(Exception):  # a missing mandatory value leaves nothing to log
        log_batch(run.info.run_id, params=config_params(cfg))
    client.set_terminated(run.info.run_id, "FAILED")


def run_experiment(
    cfg: DictConfig,
    in_parallel_launcher: bool = False,
    output_dir: str | os.PathLike | None = None,
    job: JobInfo | None = None,
    launcher_jobs: int | None = None,
) -> pd.DataFrame | None:
    """Run every trial of ``cfg`` and track them as one MLflow run; return the summary table.

    Config and data are checked first (:class:`ConfigError`, no run opened, except that a sweep
    job records its failure); the store is opened and the run created while the first trials
    run (a store that cannot be opened stops them). With ``resume=true`` the store is read first:
    a job whose config hash already has a FINISHED run is skipped (returns None), and an
    interrupted one is reopened and runs only the trials it had not finished. A failing trial is
    logged as failed and the others go on; if all fail (or any, with ``strict=true``) the run is
    FAILED and :class:`AllTrialsFailed` is raised. SIGTERM/SIGINT end the run KILLED with its
    finished trials saved.
    """
    job = job or JobInfo()
    name = run_name(cfg, job)
    try:
        plan = prepare(cfg, in_parallel_launcher, launcher_jobs)
    except ConfigError as exc:
        if job.sweep_id:
            _record_config_error(cfg, setup_from_config(cfg.tracking), name, job, exc)
        raise
    chash = config_hash(cfg)
    requeued = os.environ.get("SLURM_RESTART_COUNT", "0") not in ("", "0")  # SLURM runs it again
    experiment_id = previous = None
    if cfg.get("resume", False) or requeued:
        experiment_id = setup_from_config(cfg.tracking)
        previous = find_previous(experiment_id, chash)
    if previous is not None and previous.info.status == "FINISHED":
        log.info(
            "%s: skipped, run %s (%s) is FINISHED with the same resolved config (config_hash %s, "
            "the config without %s)",
            name,
            previous.info.run_name,
            previous.info.run_id,
            chash,
            "progress, n_jobs, graph_cache, tracking, resume, strict, report",
        )
        record_skipped(job, previous.info.run_id)
        return None
    done = finished_trials(previous.info.run_id) if previous is not None else pd.DataFrame()
    with interrupts_raise(), _artifact_dir(output_dir) as out:
        return _tracked(cfg, plan, name, job, experiment_id, chash, previous, done, out)


def _tracked(
    cfg,
    plan: Plan,
    name: str,
    job: JobInfo,
    experiment_id: str | None,
    chash: str,
    previous,
    done: pd.DataFrame,
    out: Path,
) -> pd.DataFrame:
    """The trials and their MLflow run, which :func:`mlgraph.tracking.store.open_run` opens (the store
    too, unless ``experiment_id`` is known) once the trials are running, in the tracking process
    when the command started one (:mod:`mlgraph.tracking.process`); rows finished before are
    kept and checkpointed then."""
    spent = {"logging": 0.0, "trials": 0.0}  # tracking overhead, reported by `make bench`
    data, parallelism = plan.data, plan.parallelism
    # the tags that identify the job go in with the run, so that even a run killed at once is
    # found and reopened by a resume
    identity = {**job.tags(), "config_hash": chash}
    run: dict = {}  # run id and checkpoint, once the run exists
    early: list[dict] = []  # rows finished before

    def start_tracking() -> None:
        started = time.perf_counter()
        with deferred() as pending:  # a run exists only once it is ours to close
            run["id"] = tracked(
                open_run,
                OmegaConf.to_container(cfg.tracking, resolve=True),
                experiment_id,
                previous.info.run_id if previous is not None else None,
                name,
                job.parent_run_id,
                identity,
            )
            run["checkpoint"] = Checkpoint(
                run["id"], out, float(cfg.tracking.get("checkpoint_seconds", 30)), done
            )
        raise_pending(pending)
        checkpoint = run["checkpoint"]
        tags = {
            **identity,
            "method": cfg.method.name,
            "dataset": cfg.dataset.name,
            "selector": cfg.get("selector", {}).get("name", "none"),
            "n_jobs": parallelism.n_jobs,
            "blas_threads": parallelism.blas_threads,
            "dataset_sha256": data.sha256,
            "dataset_source": data.source,
            "dataset_shape": f"{data.n_samples}x{data.n_features}x{_n_labels(data)}",
            "dataset_n_instances": data.n_samples,
            "dataset_n_features": data.n_features,
            "dataset_n_labels": _n_labels(data),
            Checkpoint.TAG: str(checkpoint.path.resolve()),
            **plan.tags,
        }
        if plan.notes:
            tags["profile_notes"] = " ".join(plan.notes)[:5000]
        reopened = previous is not None and "interrupted" in previous.data.tags
        if previous is not None:
            tags["resumed_trials"] = str(len(done))
            if reopened:  # a reopened run is no longer interrupted
                tags["resumed_after"] = previous.data.tags["interrupted"]
            log.info(
                "%s: resuming run %s, %d of %d trials already done",
                name,
                run["id"],
                len(done),
                len(plan.trials),
            )
        params = None if previous is not None else config_params(cfg)
        tracked(
            describe_run, run["id"], params, tags, dataset_fields(data, protocol_name(cfg, job)), reopened
        )
        for row in early:
            checkpoint.add(row)
        if len({t.rate for t in plan.trials}) > 1:  # the run's figure: import its library now
            pyplot()
        spent["logging"] += time.perf_counter() - started

    def add_row(row: dict) -> None:
        (run["checkpoint"].add if "checkpoint" in run else early.append)(row)

    try:
        with _timed(spent, "trials"):
            table = run_trials(
                plan.estimator,
                data.X,
                data.Y,
                plan.trials,
                plan.metrics,
                parallelism,
                progress=cfg.get("progress", True),
                description=name,
                evaluation=plan.evaluation,
                done=done,
                on_row=add_row,
                on_start=start_tracking,
                tuning=plan.tuning,
            )
        spent["trials"] -= spent["logging"]  # the run was opened while they ran
        _finish(cfg, plan, table, name, job, run["id"], out, spent)
        tracked(end_run, "FINISHED")
    except (Interrupted, SystemExit) as exc:  # submitit exits after requeueing a pre-empted job
        if "checkpoint" not in run:  # no run yet: nothing to close
            stop_workers()
            raise
        why = exc.name if isinstance(exc, Interrupted) else "requeued by SLURM (pre-emption or time limit)"
        with deferred():
            _close_run("KILLED", {"interrupted": why}, run["checkpoint"])
        log.warning(
            "%s: %s; run %s KILLED with %d finished trials saved (resume with resume=true)",
            name,
            why,
            run["id"],
            len(run["checkpoint"].rows),
        )
        raise
    except BaseException as exc:
        if "checkpoint" not in run:
            stop_workers()
            raise
        with deferred():
            _close_run("FAILED", {"error": f"{type(exc).__name__}: {exc}"[:5000]}, run["checkpoint"])
        raise
    return summarise(table, plan.metrics)


def _close_run(status: str, tags: dict, checkpoint: Checkpoint) -> None:
    """End the active run as ``status`` after an interruption or an error: each step is tried
    on its own, so that a full disk that stops the checkpoint's copy does not also leave the
    run RUNNING (a store that can no longer be written leaves it RUNNING; resume=true
    continues it)."""
    steps = (
        stop_workers,
        checkpoint.flush,
        lambda: tracked(set_tags, tags),
        lambda: tracked(end_run, status),
    )
    for step in steps:
        try:
            step()
        except Exception as exc:
            log.warning(
                "while ending the run %s: %s: %s", status, type(exc).__name__, str(exc).splitlines()[0]
            )


def _finish(
    cfg, plan: Plan, table: pd.DataFrame, name: str, job: JobInfo, run_id: str, out: Path, spent: dict
) -> None:
    """Log the run's metrics, tables and figures, say what is degenerate, and fail the run when
    every trial failed, or any with ``strict=true``."""
    metrics = plan.metrics
    for metric in metrics:  # a metric column exists even if every trial failed
        table[metric] = table.get(metric, float("nan"))
    summary = summarise(table, metrics)
    failed = table[table.status != "ok"]
    notes = _edge_case_notes(table, metrics, cfg)
    with _timed(spent, "logging"):
        tracked(
            log_batch,
            run_id,
            metrics=list(_metric_rows(summary, table, metrics)),
            tags={
                "trials_failed": f"{len(failed)} of {len(table)}",
                **({"notes": " ".join(notes)[:5000]} if notes else {}),
            },
        )
        _log_artifacts(out, cfg, table, summary, title=f"{cfg.method.name} on {plan.data.name}")
        if cfg.tracking.get("log_model", False) and len(failed) < len(table):
            try:
                log_model(plan)
            except Exception as exc:  # the run's results stand; say why there is no model
                log.warning("%s: the model could not be logged: %s: %s", name, type(exc).__name__, exc)
                tracked(set_tags, {"log_model_error": f"{type(exc).__name__}: {exc}"[:5000]})
    tracked(log_batch, run_id, metrics=[(f"{DIAGNOSTICS}{k}_seconds", v, 0) for k, v in spent.items()])
    overrides = f"overrides: {' '.join(job.overrides)}\n" if job.overrides else ""
    log.info(
        "%s: %d trials, MLflow run %s\n%s%s",
        name,
        len(table),
        run_id,
        overrides,
        format_summary(summary, shown_metrics(metrics)),
    )
    for note in notes:
        log.warning("%s", note)
    if len(failed):
        log.warning(
            "%d of %d trials failed (see trials.csv); first error: %s",
            len(failed),
            len(table),
            failed.error.iloc[0],
        )
    if len(failed) == len(table) or (len(failed) and cfg.get("strict", False)):
        tracked(set_tags, {"error": failed.error.iloc[0][:5000]})
        which = "all" if len(failed) == len(table) else f"{len(failed)} of"
        raise AllTrialsFailed(
            f"{name}: {which} {len(table)} trials failed (run {run_id} is FAILED); "
            f"first error: {failed.error.iloc[0]}"
        )


def _edge_case_notes(table: pd.DataFrame, metrics: list[str], cfg) -> list[str]:
    """Warnings, once per run, for what the numbers hide: labels with one class in a test part,
    undefined ranking metrics, failed trials left out of the averages."""
    ok = table[table.status == "ok"]
    notes = []
    if "n_degenerate_labels" in ok and ok.n_degenerate_labels.gt(0).any():
        hit = ok.n_degenerate_labels.gt(0)
        options = cfg.get("metrics") or {}
        zero_division = options.get("zero_division", "warn")
        auc = options.get("auc_single_class", "skip")
        notes.append(
            f"{int(hit.sum())} of {len(ok)} trials have labels with no positive or no negative "
            f"test instance (up to {int(ok.n_degenerate_labels.max())} labels): their F1 terms are "
            f"undefined and count as metrics.zero_division={zero_division} "
            f"({'0' if zero_division == 'warn' else zero_division}); macro_auc "
            + (
                "leaves them out (metrics.auc_single_class=skip; MULAN's is NaN)."
                if auc == "skip"
                else "is NaN (metrics.auc_single_class=nan, MULAN's rule)."
            )
        )
    unavailable = unavailable_scores_note(ok, metrics)
    notes += [unavailable] if unavailable else []
    scored = ok[ok.scores_from != "none"] if "scores_from" in ok else ok  # NaN by absence is said above
    for metric in metrics:
        undefined = scored[metric].isna() if metric in scored else pd.Series(dtype=bool)
        if undefined.any():
            notes.append(
                f"{metric} is undefined (NaN) in {int(undefined.sum())} of {len(scored)} trials: their "
                "test parts have no row it can score (e.g. every row with no relevant label, or a "
                "label with a single class)."
            )
    if len(ok) < len(table) and len(ok):
        notes.append(
            f"*_overall metrics cover the {len(ok)} successful trials only and are logged as "
            f"*_overall_ok_only; {len(table) - len(ok)} trials failed."
        )
    return notes
