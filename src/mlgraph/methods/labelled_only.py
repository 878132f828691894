"""Estimators from outside mlgraph: the supervised-only wrapper and the checks of a ``_target_``.

Under a labelling-rate protocol (paper 000) a trial's training rows include unlabelled ones,
marked by rows of −1 in ``Y`` (scikit-learn's semi-supervised convention). mlgraph's own
estimators handle them (the semi-supervised ones learn from them, the supervised ones drop
them). An estimator from elsewhere (scikit-learn's ``KNeighborsClassifier``,
``MultiOutputClassifier``, a user's class) would read −1 as a third class. Which estimators take
the −1 rows is declared by the method config's ``semi_supervised`` key:

- ``auto`` (default): mlgraph's estimators, subclasses of
  :class:`~mlgraph.methods.base.MultiLabelClassifierMixin`, and estimators whose
  ``__sklearn_tags__()`` or class attribute ``semi_supervised`` says so receive every training
  row; any other estimator is treated as supervised-only and wrapped in :class:`LabelledOnly`;
- ``true``: the estimator receives every training row, −1 rows included;
- ``false``: the estimator is wrapped in :class:`LabelledOnly` and sees the labelled rows only.

The decision is logged with every run (tag ``unlabelled_rows``) and said once on the console.
"""

from __future__ import annotations

import importlib

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, MetaEstimatorMixin, clone
from sklearn.utils import _safe_indexing
from sklearn.utils.metaestimators import available_if

from mlgraph.methods.base import MultiLabelClassifierMixin

SEMI_SUPERVISED = ("auto", True, False)


def _final_has(name: str):
    return lambda self: hasattr(self.estimator_ if hasattr(self, "estimator_") else self.estimator, name)


class LabelledOnly(MetaEstimatorMixin, ClassifierMixin, BaseEstimator):
    """Fit ``estimator`` on the labelled rows only: rows of ``Y`` that are −1 everywhere are
    dropped before ``fit``; prediction is the wrapped estimator's (``decision_function`` and
    ``predict_proba`` exist when it has them). With no −1 row it is a plain fit."""

    def __init__(self, estimator):
        self.estimator = estimator

    def fit(self, X, Y, **fit_params):
        Y = np.asarray(Y)
        labelled = ~(Y == -1).all(axis=1) if Y.ndim == 2 else Y != -1
        if not labelled.any():
            raise ValueError("LabelledOnly: Y has no labelled row (every row is −1)")
        self.n_labelled_ = int(labelled.sum())
        self.estimator_ = clone(self.estimator).fit(_safe_indexing(X, labelled), Y[labelled], **fit_params)
        for name in ("classes_", "n_features_in_", "feature_names_in_"):
            if hasattr(self.estimator_, name):
                setattr(self, name, getattr(self.estimator_, name))
        return self

    def predict(self, X):
        return self.estimator_.predict(X)

    @available_if(_final_has("decision_function"))
    def decision_function(self, X):
        return self.estimator_.decision_function(X)

    @available_if(_final_has("predict_proba"))
    def predict_proba(self, X):
        return self.estimator_.predict_proba(X)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        inner = self.estimator.__sklearn_tags__()
        tags.target_tags = inner.target_tags
        tags.classifier_tags = inner.classifier_tags
        tags.input_tags = inner.input_tags
        return tags


def takes_unlabelled_rows(estimator) -> bool:
    """``semi_supervised: auto``: whether ``estimator`` takes rows of −1 in ``Y`` (module notes)."""
    final = estimator.steps[-1][1] if hasattr(estimator, "steps") else estimator
    own = type(final).__module__.split(".")[0] == "mlgraph"  # each handles −1 rows (README)
    if (
        own
        or isinstance(final, MultiLabelClassifierMixin)
        or getattr(final, "semi_supervised", False) is True
    ):
        return True
    try:
        return bool(getattr(final.__sklearn_tags__(), "semi_supervised", False))
    except AttributeError:
        return False


def unlabelled_rows(estimator) -> str:
    """The run's ``unlabelled_rows`` tag: whether the −1 rows reach the estimator or are dropped."""
    final = estimator.steps[-1][1] if hasattr(estimator, "steps") else estimator
    if isinstance(final, LabelledOnly):
        return (
            f"dropped: {type(final.estimator).__name__} is supervised-only and is fitted on the "
            "labelled training rows by mlgraph.methods.labelled_only.LabelledOnly"
        )
    return f"passed: {type(final).__name__} takes rows of −1 in Y"


def with_unlabelled_rule(estimator, declared) -> tuple[object, str]:
    """(the estimator to run, the value of the ``unlabelled_rows`` tag) for the method config's
    ``semi_supervised`` key (``auto``, true or false; see the module notes)."""
    if declared not in SEMI_SUPERVISED:
        raise ValueError(
            f"method.semi_supervised={declared!r} is not valid: it must be auto (mlgraph's own "
            "estimators take −1 rows, others are fitted on the labelled rows), true (the estimator "
            "takes rows of −1 in Y) or false (fit on the labelled rows only)."
        )
    uses = takes_unlabelled_rows(estimator) if declared == "auto" else declared
    run = estimator if uses else LabelledOnly(estimator)
    return run, unlabelled_rows(run)


def check_target(target, key: str = "method._target_") -> type:
    """The class a config's ``_target_`` names, or ValueError in one paragraph: it must be a
    dotted path ``package.module.Class`` importable from the Python path (a folder on
    ``PYTHONPATH``, or an installed package) and name a scikit-learn style estimator (a class
    with ``fit`` and ``predict``)."""
    allowed = (
        "it must be the dotted path of an estimator class, package.module.Class, importable from "
        "the Python path (put the folder holding your package on PYTHONPATH, or pip-install it), "
        "whose instances have fit(X, Y) and predict(X)"
    )
    if not isinstance(target, str) or "." not in target:
        raise ValueError(f"{key}={target!r} is not valid: {allowed}.")
    module_name, _, attr = target.rpartition(".")
    try:
        found = getattr(importlib.import_module(module_name), attr)
    except ImportError as exc:
        raise ValueError(
            f"{key}={target} cannot be imported ({type(exc).__name__}: {exc}): {allowed}."
        ) from exc
    except AttributeError as exc:
        raise ValueError(
            f"{key}={target}: module {module_name} has no attribute {attr!r}: {allowed}."
        ) from exc
    if not isinstance(found, type) or not all(callable(getattr(found, m, None)) for m in ("fit", "predict")):
        what = type(found).__name__ if not isinstance(found, type) else "a class without fit/predict"
        raise ValueError(f"{key}={target} is not an estimator (it is {what}): {allowed}.")
    return found
