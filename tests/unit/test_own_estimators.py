"""Estimators from outside mlgraph: scores from decision_function, predict_proba (both of
scikit-learn's multi-label shapes) or none; supervised-only ones fitted on the labelled rows;
a plain class (no get_params) through its adapter; a ``_target_`` that cannot be imported or is
not an estimator is one clear paragraph."""

import math

import numpy as np
import pandas as pd
import pytest
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.linear_model import LogisticRegression
from sklearn.multioutput import MultiOutputClassifier
from sklearn.neighbors import KNeighborsClassifier

from mlgraph.engine.runner import _run_one, label_scores, unavailable_scores_note
from mlgraph.evaluation.metrics import average_precision
from mlgraph.evaluation.protocols import Trial
from mlgraph.methods import MLMR, MLkNN
from mlgraph.methods.labelled_only import (
    LabelledOnly,
    PlainEstimator,
    check_target,
    cloneable,
    with_unlabelled_rule,
)


def _data(n=90, q=3, seed=0):
    rng = np.random.default_rng(seed)
    Y = (rng.random((n, q)) < 0.4).astype(np.int8)
    Y[np.arange(n), rng.integers(0, q, n)] = 1
    X = Y @ rng.normal(size=(q, 5)) * 2 + rng.normal(size=(n, 5))
    return X, Y


class PredictOnly(ClassifierMixin, BaseEstimator):
    """No decision_function, no predict_proba."""

    def fit(self, X, Y):
        self.prior_ = np.asarray(Y).mean(axis=0) > 0.5
        return self

    def predict(self, X):
        return np.tile(self.prior_, (len(X), 1)).astype(int)


def test_scores_from_predict_proba_as_a_list_of_two_column_arrays():
    X, Y = _data()
    knn = KNeighborsClassifier(5).fit(X, Y)
    scores, source = label_scores(knn, X)
    expected = np.column_stack([p[:, 1] for p in knn.predict_proba(X)])
    assert source == "predict_proba" and np.array_equal(scores, expected)


def test_a_label_with_one_class_in_training_scores_its_constant():
    X, Y = _data()
    Y[:, 1] = 0
    model = MultiOutputClassifier(KNeighborsClassifier(3)).fit(X, Y)
    scores, _ = label_scores(model, X)
    assert scores.shape == Y.shape and (scores[:, 1] == 0).all()


def test_scores_from_an_n_by_q_predict_proba_and_from_decision_function():
    X, Y = _data()

    class Matrix(PredictOnly):
        def predict_proba(self, X):
            return np.tile(self.prior_ * 0.8 + 0.1, (len(X), 1))

    scores, source = label_scores(Matrix().fit(X, Y), X)
    assert source == "predict_proba" and scores.shape == Y.shape
    mlmr = MLMR().fit(X, Y)
    scores, source = label_scores(mlmr, X)
    assert source == "decision_function" and np.array_equal(scores, mlmr.decision_function(X))


def _trial(n=90, labelled=30):
    mask = np.zeros(60, bool)
    mask[:labelled] = True
    return Trial(0.5, 0, np.arange(30, n), np.arange(30), mask)


def test_an_estimator_without_scores_succeeds_with_ranking_metrics_unavailable():
    X, Y = _data()
    row = _run_one(LabelledOnly(PredictOnly()), X, Y, _trial(), None, 1, {})
    assert row["status"] == "ok" and row["scores_from"] == "none"
    assert math.isnan(row["avg_precision"]) and math.isnan(row["ranking_loss"])
    assert 0 <= row["micro_f1"] <= 1 and 0 <= row["hamming_loss"] <= 1
    note = unavailable_scores_note(pd.DataFrame([row]), ["avg_precision", "micro_f1"])
    assert "unavailable (NaN)" in note and "avg_precision" in note and "micro_f1" not in note


def test_knn_trial_through_the_runner_is_scored_by_its_probabilities():
    X, Y = _data()
    estimator, tag = with_unlabelled_rule(KNeighborsClassifier(5), "auto")
    assert isinstance(estimator, LabelledOnly) and tag.startswith("dropped: KNeighborsClassifier")
    trial = _trial()
    row = _run_one(estimator, X, Y, trial, ["avg_precision", "micro_f1"], 1, {})
    assert row["status"] == "ok" and row["scores_from"] == "predict_proba"
    labelled = trial.train[trial.labelled]
    knn = KNeighborsClassifier(5).fit(X[labelled], Y[labelled])  # fitted on the labelled rows only
    scores = np.column_stack([p[:, 1] for p in knn.predict_proba(X[trial.test])])
    assert row["avg_precision"] == pytest.approx(average_precision(Y[trial.test], scores))


def test_labelled_only_drops_unlabelled_rows_and_keeps_the_interface():
    X, Y = _data()
    Y_ssl = Y.copy()
    Y_ssl[::3] = -1
    wrapped = LabelledOnly(LogisticRegression()).fit(X, Y_ssl[:, 0])
    assert wrapped.n_labelled_ == 60 and hasattr(wrapped, "decision_function")
    reference = LogisticRegression().fit(X[Y_ssl[:, 0] != -1], Y[Y_ssl[:, 0] != -1, 0])
    assert np.allclose(wrapped.decision_function(X), reference.decision_function(X))
    assert not hasattr(LabelledOnly(PredictOnly()).fit(X, Y), "predict_proba")
    with pytest.raises(ValueError, match="no labelled row"):
        LabelledOnly(PredictOnly()).fit(X, np.full_like(Y, -1))


def test_the_semi_supervised_rule():
    assert with_unlabelled_rule(MLMR(), "auto")[0].__class__ is MLMR  # mlgraph's own take −1 rows
    assert with_unlabelled_rule(MLkNN(), "auto")[0].__class__ is MLkNN  # drops them itself
    assert with_unlabelled_rule(KNeighborsClassifier(), True)[1].startswith("passed")
    assert isinstance(with_unlabelled_rule(MLMR(), False)[0], LabelledOnly)

    class Declares(PredictOnly):
        semi_supervised = True

    assert with_unlabelled_rule(Declares(), "auto")[0].__class__ is Declares
    with pytest.raises(ValueError, match="method.semi_supervised='yes' is not valid"):
        with_unlabelled_rule(MLMR(), "yes")


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        (
            "nowhere_pkg.Estimator",
            "method._target_=nowhere_pkg.Estimator cannot be imported (ModuleNotFoundError",
        ),
        ("sklearn.neighbors.NoSuchThing", "module sklearn.neighbors has no attribute 'NoSuchThing'"),
        ("numpy.pi", "method._target_=numpy.pi is not an estimator (it is float)"),
        ("collections.OrderedDict", "is not an estimator (it is a class without fit/predict)"),
        ("Estimator", "method._target_='Estimator' is not valid"),
    ],
)
def test_a_bad_target_is_named_with_what_is_allowed(target, expected):
    with pytest.raises(ValueError) as err:
        check_target(target)
    assert expected in str(err.value) and "PYTHONPATH" in str(err.value)


def test_a_good_target_is_its_class():
    assert check_target("sklearn.neighbors.KNeighborsClassifier") is KNeighborsClassifier


class Plain:
    """A user's class without scikit-learn: nearest centroid per label, scores by distance."""

    def __init__(self, shrink=0.0, power=2):
        self.shrink = shrink
        self.power = power

    def fit(self, X, Y):  # returns None, as plain code often does
        X, Y = np.asarray(X, float), np.asarray(Y)
        self.pos = (Y.T @ X) / np.maximum(Y.sum(0), 1)[:, None] * (1 - self.shrink)
        self.neg = ((1 - Y).T @ X) / np.maximum((1 - Y).sum(0), 1)[:, None] * (1 - self.shrink)

    def decision_function(self, X):
        X = np.asarray(X, float)
        distance = lambda C: (np.abs(X[:, None] - C[None]) ** self.power).sum(-1)  # noqa: E731
        return distance(self.neg) - distance(self.pos)

    def predict(self, X):
        return (self.decision_function(X) > 0).astype(int)


def test_a_plain_class_is_cloned_and_tuned_through_its_adapter():
    adapter = cloneable(Plain(shrink=0.25))
    assert isinstance(adapter, PlainEstimator)
    assert adapter.get_params() == {"estimator_class": Plain, "shrink": 0.25, "power": 2}
    copy = clone(adapter)
    assert copy is not adapter and copy.get_params() == adapter.get_params()
    copy.set_params(power=1)
    assert copy.get_params()["power"] == 1 and adapter.power == 2
    with pytest.raises(ValueError, match="Invalid parameter 'nosuch'"):
        copy.set_params(nosuch=1)
    wrapped = LabelledOnly(adapter)  # as tuning=inner sets it: estimator__<param>
    assert clone(wrapped).set_params(estimator__shrink=0.5).estimator.shrink == 0.5


def test_the_adapter_fits_and_predicts_as_the_class_itself():
    X, Y = _data()
    adapter = clone(cloneable(Plain(shrink=0.25, power=1))).fit(X, Y)
    direct = Plain(shrink=0.25, power=1)
    direct.fit(X, Y)
    assert np.array_equal(adapter.decision_function(X), direct.decision_function(X))
    assert np.array_equal(adapter.predict(X), direct.predict(X))
    assert not hasattr(adapter, "predict_proba") and not adapter.transductive
    scores, source = label_scores(adapter, X)
    assert source == "decision_function" and np.array_equal(scores, direct.decision_function(X))


def test_a_plain_class_through_the_unlabelled_rule_and_a_trial():
    X, Y = _data()
    estimator, tag = with_unlabelled_rule(Plain(), "auto")
    assert isinstance(estimator, LabelledOnly) and isinstance(estimator.estimator, PlainEstimator)
    assert tag.startswith("dropped: Plain is supervised-only")
    trial = _trial()
    row = _run_one(estimator, X, Y, trial, ["avg_precision", "micro_f1"], 1, {})
    labelled = trial.train[trial.labelled]
    direct = Plain()
    direct.fit(X[labelled], Y[labelled])
    assert row["status"] == "ok"
    assert row["avg_precision"] == pytest.approx(
        average_precision(Y[trial.test], direct.decision_function(X[trial.test]))
    )

    class Declares(Plain):
        semi_supervised = True

    estimator, tag = with_unlabelled_rule(Declares(), "auto")
    assert isinstance(estimator, PlainEstimator) and tag == "passed: Declares takes rows of −1 in Y"


class StoresElsewhere(Plain):
    def __init__(self, shrink=0.0):
        self._shrink = shrink


class BuildsState(Plain):
    def __init__(self, shrink=0.0):
        self.shrink = shrink
        self.rng = np.random.default_rng()  # a new generator each time: not made again the same


class TakesKwargs(Plain):
    def __init__(self, **options):
        self.options = options


def test_a_plain_class_the_adapter_cannot_copy_is_one_paragraph():
    with pytest.raises(ValueError) as err:
        cloneable(StoresElsewhere())
    assert "has no attribute shrink for its constructor parameter of that name" in str(err.value)
    with pytest.raises(ValueError) as err:
        cloneable(BuildsState())
    assert "gives an instance with other attributes" in str(err.value) and "shrink=0.0" in str(err.value)
    with pytest.raises(ValueError) as err:
        check_target(f"{__name__}.TakesKwargs")
    assert "__init__ takes **options, so its parameters cannot be listed" in str(err.value)
    assert check_target(f"{__name__}.Plain") is Plain
