"""Profiles: one switch for every rule that makes results comparable with another tool.

``mlgraph`` (the default) is this project's own choice of rules; ``mulan`` reproduces MULAN
(``mulan.evaluation.Evaluator`` with Weka's nearest-neighbour search) as far as it can be
reproduced. A :class:`Profile` carries the options of :func:`mlgraph.evaluation.metrics.evaluate`, the
distance of the kNN estimators and the loader's missing-value policy:

==================  =========================  ==================================================
setting             mlgraph                    mulan
==================  =========================  ==================================================
empty_rows, ties    mulan, mulan               mulan, mulan (MULAN's ranking rules in both)
zero_division       "warn" (an undefined F1    1.0 (``InformationRetrievalMeasures.fMeasure``:
                    scores 0, warned)          F1 = 1 when TP + FP + FN = 0)
auc_single_class    "skip" (such labels leave  "nan" (Weka's ROC area is NaN for them, and so
                    the macro-AUC mean)        is the mean)
distance            "euclidean": z-scored      "weka": Weka's EuclideanDistance and search
                    features, one-hot nominal  (min-max on training rows, nominal mismatch 0/1)
missing             "error"                    "keep" (NaN, for Weka's missing-value rules)
normalise           the protocol's             false (Weka's distance normalises by itself)
==================  =========================  ==================================================

From Python::

    from mlgraph.config.profiles import get_profile
    mulan = get_profile("mulan")
    data = load_fixed_split("emotions", missing=mulan.missing)
    model = mulan.configure(MLkNN(), data)  # metric="weka", the dataset's nominal groups
    model.fit(X_train, Y_train)
    evaluate(Y_test, scores, Y_pred, profile="mulan")  # or **mulan.metrics

The Hydra config group ``profile`` (``conf/profile/``) sets the same values (``profile=mulan``).
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np
import scipy.sparse as sp

__all__ = ["PROFILES", "Profile", "check_data", "configure", "get_profile"]


@dataclass(frozen=True)
class Profile:
    """One profile's settings (see the module docstring)."""

    name: str
    empty_rows: str
    ties: str
    zero_division: Any
    auc_single_class: str
    distance: str
    missing: str
    description: str

    @property
    def metrics(self) -> dict[str, Any]:
        """The keyword options of :func:`mlgraph.evaluation.metrics.evaluate`."""
        return {
            "empty_rows": self.empty_rows,
            "ties": self.ties,
            "zero_division": self.zero_division,
            "auc_single_class": self.auc_single_class,
        }

    def configure(self, estimator, data=None, name: str | None = None) -> Any:
        """Set this profile's distance on every kNN step of ``estimator`` (in place; returned);
        see :func:`configure`."""
        configure(estimator, self.distance, getattr(data, "nominal_groups", ()), name, self.name)
        return estimator


PROFILES = MappingProxyType(
    {
        "mlgraph": Profile(
            "mlgraph", "mulan", "mulan", "warn", "skip", "euclidean", "error", "mlgraph's own rules (default)"
        ),
        "mulan": Profile(
            "mulan", "mulan", "mulan", 1.0, "nan", "weka", "keep", "MULAN's rules and Weka's distance"
        ),
    }
)


def get_profile(name: str | Profile) -> Profile:
    """The profile called ``name``; a ValueError lists the known ones."""
    if isinstance(name, Profile):
        return name
    try:
        return PROFILES[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown profile {name!r}; known profiles: {', '.join(PROFILES)}") from None


def _distance_keys(estimator) -> list[str]:
    """The ``get_params`` keys of every ``metric`` that takes "weka", at any depth (pipeline
    steps, base estimators): the estimators with both a ``metric`` and a ``nominal_groups``
    parameter, as mlgraph's kNN estimators (:class:`~mlgraph.methods.mlknn.MLkNN`,
    :class:`~mlgraph.methods.knn.KNNClassifier`) have."""
    params = estimator.get_params(deep=True) if hasattr(estimator, "get_params") else {}
    found = [("", estimator)] + [(f"{key}__", value) for key, value in params.items()]
    return [f"{prefix}metric" for prefix, value in found if _takes_weka_distance(value)]


def _takes_weka_distance(value) -> bool:
    if isinstance(value, type) or not hasattr(value, "get_params"):
        return False
    return {"metric", "nominal_groups"} <= set(value.get_params(deep=False))


def _give_groups(estimator, nominal_groups, method: str, profile: str) -> list[str]:
    """Give the dataset's nominal groups to every kNN step whose metric is "weka" (None to the
    others); the ``metric`` keys of the Weka steps."""
    params = estimator.get_params(deep=True) if hasattr(estimator, "get_params") else {}
    weka = [
        key
        for key in _distance_keys(estimator)
        if (params.get(key) if key in params else estimator.metric) == "weka"
    ]
    groups = [list(g) for g in nominal_groups] or None
    for key in _distance_keys(estimator):
        estimator.set_params(
            **{key.removesuffix("metric") + "nominal_groups": groups if key in weka else None}
        )
    steps = getattr(estimator, "steps", None)
    if weka and groups and steps and len(steps) > 1:
        raise ValueError(
            f"profile={profile}: Weka's distance needs the dataset's columns to find its "
            f"{len(groups)} nominal attributes, but the steps {[s for s, _ in steps[:-1]]} before "
            f"{method} change the columns (set selector=none and protocol.normalise=false)"
        )
    return weka


def configure(
    estimator, distance: str, nominal_groups=(), name: str | None = None, profile: str = ""
) -> list[str]:
    """Give every kNN step of ``estimator`` (MLkNN, KNNClassifier, also inside pipelines and as
    base estimators) the ``distance`` and, for ``"weka"``, the dataset's ``nominal_groups``.

    Returns notes on what the profile does not reach: a method without such a step keeps its
    own distance and feature scaling (only the metric rules apply to it). Raises ValueError
    when Weka's distance would see columns other than the dataset's (a pipeline step before the
    method, e.g. a feature selector, changes them) while the dataset has nominal attributes."""
    keys = _distance_keys(estimator)
    if keys:
        estimator.set_params(**dict.fromkeys(keys, distance))
    _give_groups(estimator, nominal_groups, name or type(estimator).__name__, profile)
    return _notes(keys, distance, name or type(estimator).__name__, profile)


def _notes(keys, distance: str, method: str, profile: str) -> list[str]:
    if keys or distance != "weka":
        return []
    return [
        f"profile={profile}: method {method} has no Weka counterpart (no kNN step); the profile's "
        "metric rules apply to it, its distance and feature scaling are its own"
    ]


def check_data(
    estimator, data, method: str, name: str = "mlgraph", distance: str = "euclidean", missing: str = "error"
) -> list[str]:
    """Apply a run's profile keys (``profile.name``, ``.distance``, ``.missing``) to its
    estimator, whose kNN steps already have their ``metric`` from the config (a
    ``method.metric`` given on the command line wins over the profile): the steps with Weka's
    distance get the dataset's nominal groups; missing values (NaN kept by ``missing="keep"``)
    that no step can take are refused. Returns the notes of :func:`configure`."""
    weka = _give_groups(estimator, getattr(data, "nominal_groups", ()), method, name)
    X = getattr(data, "X", None)
    values = X.data if sp.issparse(X) else np.asarray(X if X is not None else [], dtype=float)
    n_missing = int(np.isnan(values).sum())
    if n_missing and (not weka or len(weka) < len(_distance_keys(estimator))):
        raise ValueError(
            f"dataset {getattr(data, 'name', '?')} has {n_missing} missing feature values, kept as "
            f"NaN (dataset.missing={missing}); method {method} cannot take them (only the kNN "
            "methods with Weka's distance can): set dataset.missing=zero or dataset.missing=mean"
        )
    return _notes(_distance_keys(estimator), distance, method, name)
