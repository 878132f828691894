"""Estimators from outside mlgraph: the supervised-only wrapper, the adapter of a plain class, and
the checks of a ``_target_``.

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

A class with ``fit`` and ``predict`` but no ``get_params`` (not derived from scikit-learn's
``BaseEstimator``) cannot be copied by :func:`sklearn.base.clone`, which every trial does. Such a
class is run through :class:`PlainEstimator`, whose parameters are the class's constructor
parameters: it is accepted when its ``__init__`` takes named parameters only and stores each as
an attribute of the same name, so that the instance the config built can be made again from
them (:func:`cloneable` checks that it is).
"""

from __future__ import annotations

import importlib
import inspect

import joblib
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


def constructor_parameters(cls: type) -> dict[str, object]:
    """The named parameters of ``cls.__init__`` and their defaults (``inspect.Parameter.empty``
    for a required one); ValueError when it also takes ``*args`` or ``**kwargs``, whose names
    cannot be known."""
    init = cls.__init__
    if init is object.__init__:
        return {}
    found = {}
    for name, parameter in list(inspect.signature(init).parameters.items())[1:]:
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            raise ValueError(
                f"{cls.__module__}.{cls.__qualname__}.__init__ takes {parameter}, so its parameters "
                "cannot be listed"
            )
        found[name] = parameter.default
    return found


def _class_has(name: str):
    return lambda self: hasattr(self.estimator_class, name)


class PlainEstimator(ClassifierMixin, BaseEstimator):
    """A class with ``fit`` and ``predict`` but no ``get_params`` as a scikit-learn estimator:
    its parameters are ``estimator_class``'s constructor parameters, so that
    :func:`~sklearn.base.clone` makes a fresh copy for each trial and ``set_params`` (nested
    tuning) sets them. ``fit`` builds ``estimator_class(**parameters)`` and fits it; ``predict``,
    ``decision_function`` and ``predict_proba`` (when the class has them) are the fitted
    instance's, and so are ``classes_``, ``label_scores_`` and ``transduction_`` (a
    transductive class, ``transductive = True``)."""

    def __init__(self, estimator_class, **parameters):
        self.estimator_class = estimator_class
        for name, value in parameters.items():
            setattr(self, name, value)

    def get_params(self, deep: bool = True) -> dict:
        params = {"estimator_class": self.estimator_class}
        for name, default in constructor_parameters(self.estimator_class).items():
            params[name] = getattr(self, name, default)
        if deep:
            for name, value in list(params.items()):
                if hasattr(value, "get_params") and not isinstance(value, type):
                    params.update({f"{name}__{k}": v for k, v in value.get_params(deep=True).items()})
        return params

    @property
    def transductive(self) -> bool:
        return getattr(self.estimator_class, "transductive", False) is True

    def fit(self, X, Y, **fit_params):
        params = self.get_params(deep=False)
        self.estimator_ = params.pop("estimator_class")(**params)
        self.estimator_.fit(X, Y, **fit_params)  # a plain fit may return None
        for name in ("classes_", "n_features_in_", "label_scores_", "transduction_"):
            if hasattr(self.estimator_, name):
                setattr(self, name, getattr(self.estimator_, name))
        return self

    def predict(self, X):
        return self.estimator_.predict(X)

    @available_if(_class_has("decision_function"))
    def decision_function(self, X):
        return self.estimator_.decision_function(X)

    @available_if(_class_has("predict_proba"))
    def predict_proba(self, X):
        return self.estimator_.predict_proba(X)


def _state(instance):
    """What makes ``instance`` what it is: its attributes (a class with ``__slots__``: itself)."""
    try:
        return vars(instance)
    except TypeError:
        return instance


def cloneable(estimator, key: str = "method._target_"):
    """``estimator`` itself when scikit-learn can clone it (it has ``get_params``); else a
    :class:`PlainEstimator` with its class and the values of its constructor parameters, read
    from the attributes of the same name. ValueError in one paragraph when that would not give
    the same estimator: a parameter not stored under its name, or an ``__init__`` that does more
    than store its parameters (the instance made again from them differs)."""
    if hasattr(estimator, "get_params"):
        return estimator
    cls = type(estimator)
    path = f"{cls.__module__}.{cls.__qualname__}"
    how = (
        "mlgraph copies an estimator for every trial; a class without get_params is copied by "
        "making it again from its constructor parameters, so its __init__ must store each one as an "
        "attribute of the same name (self.<name> = <name>) and do nothing else; or derive the class "
        "from sklearn.base.BaseEstimator"
    )
    names = constructor_parameters(cls)
    missing = [n for n in names if not hasattr(estimator, n)]
    if missing:
        raise ValueError(
            f"{key}={path} has no get_params, and its instance has no attribute "
            f"{', '.join(missing)} for its constructor parameter{'s' * (len(missing) > 1)} of "
            f"that name: {how}."
        )
    values = {n: getattr(estimator, n) for n in names}
    try:
        same = joblib.hash(_state(cls(**values))) == joblib.hash(_state(estimator))
    except Exception as exc:  # pickling raises whatever an attribute's reducer raises
        raise ValueError(
            f"{key}={path} has no get_params, and its instance cannot be compared with one made "
            f"again from its parameters ({type(exc).__name__}: {exc}): {how}."
        ) from exc
    if not same:
        raise ValueError(
            f"{key}={path} has no get_params, and making it again from its parameters "
            f"({', '.join(f'{k}={v!r}' for k, v in values.items()) or 'none'}) gives an instance with "
            f"other attributes: {how}."
        )
    return PlainEstimator(cls, **values)


def takes_unlabelled_rows(estimator) -> bool:
    """``semi_supervised: auto``: whether ``estimator`` takes rows of −1 in ``Y`` (module notes)."""
    final = estimator.steps[-1][1] if hasattr(estimator, "steps") else estimator
    if isinstance(final, PlainEstimator):  # a plain class declares it by its class attribute
        return getattr(final.estimator_class, "semi_supervised", False) is True
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
            f"dropped: {_class_name(final.estimator)} is supervised-only and is fitted on the "
            "labelled training rows by mlgraph.methods.labelled_only.LabelledOnly"
        )
    return f"passed: {_class_name(final)} takes rows of −1 in Y"


def _class_name(estimator) -> str:
    """The name of the user's class, also behind a :class:`PlainEstimator`."""
    if isinstance(estimator, PlainEstimator):
        return estimator.estimator_class.__name__
    return type(estimator).__name__


def with_unlabelled_rule(estimator, declared) -> tuple[object, str]:
    """(the estimator to run, the value of the ``unlabelled_rows`` tag) for the method config's
    ``semi_supervised`` key (``auto``, true or false; see the module notes). A plain class
    without ``get_params`` is first made a :class:`PlainEstimator` (:func:`cloneable`)."""
    if declared not in SEMI_SUPERVISED:
        raise ValueError(
            f"method.semi_supervised={declared!r} is not valid: it must be auto (mlgraph's own "
            "estimators take −1 rows, others are fitted on the labelled rows), true (the estimator "
            "takes rows of −1 in Y) or false (fit on the labelled rows only)."
        )
    estimator = cloneable(estimator)
    uses = takes_unlabelled_rows(estimator) if declared == "auto" else declared
    run = estimator if uses else LabelledOnly(estimator)
    return run, unlabelled_rows(run)


def check_target(target, key: str = "method._target_") -> type:
    """The class a config's ``_target_`` names, or ValueError in one paragraph: it must be a
    dotted path ``package.module.Class`` importable from the Python path (a folder on
    ``PYTHONPATH``, or an installed package) and name a scikit-learn style estimator (a class
    with ``fit`` and ``predict``). A class without ``get_params`` will run as a
    :class:`PlainEstimator`, which needs the names of its constructor parameters: its
    ``__init__`` may not take ``*args`` or ``**kwargs``."""
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
    if not hasattr(found, "get_params"):
        plain = (
            "a class without get_params runs through mlgraph.methods.labelled_only.PlainEstimator, "
            "which makes it again for every trial from its named constructor parameters; name "
            "each parameter in __init__, or derive the class from sklearn.base.BaseEstimator"
        )
        try:
            names = constructor_parameters(found)
        except ValueError as exc:
            raise ValueError(f"{key}={target}: {exc}: {plain}.") from exc
        if "estimator_class" in names:
            raise ValueError(
                f"{key}={target}: its constructor parameter estimator_class is the name "
                f"PlainEstimator gives the class itself: {plain}, and rename that one."
            )
    return found
