"""Every check of a job before anything runs, each failure one :class:`ConfigError` paragraph
naming the key and what is allowed: :func:`check_run_keys` on the composed config, before any
data is read, and :func:`check_before_run` on the built :class:`~mlgraph.engine.plan.Plan`,
before the MLflow run opens."""

from __future__ import annotations

import numbers
import re
from pathlib import Path

from hydra.errors import CompactHydraException
from omegaconf import DictConfig, OmegaConf
from sklearn.pipeline import Pipeline

from mlgraph.config import keys as config_keys
from mlgraph.config.profiles import PROFILES
from mlgraph.graphs import KINDS, SEARCHES, WEIGHTS
from mlgraph.methods.base import check_params, nonneg, positive, positive_int


class ConfigError(CompactHydraException, ValueError):
    """A bad config value or input file, found before any trial runs and before an MLflow run
    opens. Hydra prints it as one paragraph (``HYDRA_FULL_ERROR=1`` shows the traceback)."""


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


def check_before_run(cfg: DictConfig, plan) -> None:
    """The checks of a built :class:`~mlgraph.engine.plan.Plan` (its data, trials and
    estimator), the last step before its trials start and its MLflow run opens: the estimator's
    parameters (:func:`check_estimator_params`), then the data's limits
    (:func:`check_data_limits`). Every check a job passes before it runs is called from here or
    from :func:`check_run_keys`."""
    check_estimator_params(plan.estimator)
    check_data_limits(cfg, plan.data, plan.trials, plan.estimator)


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
