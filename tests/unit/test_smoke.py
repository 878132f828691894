"""The test fit of an estimator from outside mlgraph before its run opens: what it refuses, in one
paragraph; what it lets through (a handful of rows too few for a working estimator); and that
mlgraph's own methods skip it."""

from types import SimpleNamespace

import numpy as np
import pytest
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.neighbors import KNeighborsClassifier

from mlgraph.engine.checks import ConfigError
from mlgraph.engine.smoke import few_rows, fit_problem, own_class, smoke_fit
from mlgraph.evaluation.protocols import Trial
from mlgraph.methods import MLkNN
from mlgraph.methods.labelled_only import PlainEstimator, with_unlabelled_rule


def _data(n=120, q=3, seed=0):
    rng = np.random.default_rng(seed)
    Y = (rng.random((n, q)) < 0.4).astype(np.int8)
    Y[np.arange(n), rng.integers(0, q, n)] = 1
    X = Y @ rng.normal(size=(q, 5)) * 2 + rng.normal(size=(n, 5))
    return SimpleNamespace(X=X, Y=Y, name="toy")


def _trial(n=120, n_train=80, labelled=30):
    mask = np.zeros(n_train, bool)
    mask[::2][:labelled] = True  # labelled and unlabelled rows interleaved
    return Trial(0.3, 0, np.arange(n_train), np.arange(n_train, n), mask)


class Frequent(ClassifierMixin, BaseEstimator):
    """Predicts the labels relevant to most training rows; no scores."""

    def fit(self, X, Y):
        self.freq_ = np.asarray(Y).mean(axis=0)
        return self

    def predict(self, X):
        return np.tile(self.freq_ > 0.5, (len(X), 1)).astype(int)


class Means(Frequent):
    """Scores every row by the labels' training frequencies."""

    def decision_function(self, X):
        return np.tile(self.freq_, (len(X), 1))


class Raises(Means):
    def fit(self, X, Y):
        raise ValueError("boom")


class NaNScores(Means):
    def decision_function(self, X):
        return np.full((len(X), len(self.freq_)), np.nan)


class WideScores(Means):
    def decision_function(self, X):
        return np.zeros((len(X), len(self.freq_) + 1))


class CountsLabels(Means):
    def predict(self, X):
        return np.full((len(X), len(self.freq_)), 2)


class OneColumn(Means):
    def predict(self, X):
        return np.zeros(len(X), int)


class ProbaRaises(Frequent):
    def predict_proba(self, X):
        raise RuntimeError("no probabilities")


class Transductive(Means):
    transductive = True
    semi_supervised = True  # fitted on training and test rows, the test rows −1

    def fit(self, X, Y):
        self.label_scores_ = np.full(np.shape(Y), np.inf)
        self.transduction_ = np.zeros(np.shape(Y), int)
        return self


@pytest.mark.parametrize(
    ("estimator", "problem"),
    [
        (Raises(), "fit raised ValueError: boom"),
        (NaNScores(), "decision_function gave 120 NaN or infinite scores of 120; every score must be finite"),
        (WideScores(), "decision_function gave scores of shape (40, 4) for 40 test rows and 3 labels"),
        (CountsLabels(), "predict gave values other than 0 and 1 (e.g. 2)"),
        (
            OneColumn(),
            "predict gave an array of shape (40,) for 40 test rows; it must give 0/1 labels, shape (40, 3)",
        ),
        (ProbaRaises(), "predict_proba raised RuntimeError: no probabilities"),
        (Transductive(), "label_scores_ gave 120 NaN or infinite scores of 120"),
    ],
)
def test_what_a_trial_would_fail_on_is_one_paragraph_before_the_run(estimator, problem):
    cls = type(estimator)
    estimator, _ = with_unlabelled_rule(estimator, "auto")
    with pytest.raises(ConfigError) as err:
        smoke_fit(estimator, _data(), _trial(), method="mine")
    text = str(err.value)
    assert text.startswith(f"method mine ({__name__}.{cls.__name__}) failed its test fit on dataset toy")
    assert problem in text and "\n" not in text
    # the paragraph describes the whole trial, where the problem was confirmed
    assert "80 training rows (30 labelled, the others −1), scored on 40 test rows" in text


def test_a_handful_too_few_for_a_working_estimator_is_not_an_error():
    data, trial = _data(), _trial()
    knn, _ = with_unlabelled_rule(KNeighborsClassifier(n_neighbors=15), "auto")
    assert "n_neighbors = 15, n_samples_fit = 10" in fit_problem(knn, data, few_rows(trial))
    assert fit_problem(knn, data, trial) is None
    smoke_fit(knn, data, trial, method="knn")


def test_mlgraphs_own_methods_skip_the_test_fit():
    data, trial = _data(), _trial()
    broken = MLkNN(k=500)  # more neighbours than rows: its trials would fail
    assert fit_problem(broken, data, trial) is not None
    assert own_class(broken) is None
    smoke_fit(broken, data, trial, method="mlknn")  # not fitted: no error
    assert own_class(with_unlabelled_rule(KNeighborsClassifier(), "auto")[0]) is KNeighborsClassifier


def test_a_plain_class_is_tested_as_itself():
    class Plain:
        def fit(self, X, Y):
            raise RuntimeError("plain fit broken")

        def predict(self, X):
            return np.zeros((len(X), 3), int)

    estimator, _ = with_unlabelled_rule(Plain(), "auto")
    assert isinstance(estimator.estimator, PlainEstimator) and own_class(estimator) is Plain
    with pytest.raises(
        ConfigError, match=r"\(test_smoke\.test_a_plain_class_is_tested_as_itself\.<locals>\.Plain\)"
    ):
        smoke_fit(estimator, _data(), _trial(), method="plain")


def test_the_handful_is_the_first_labelled_and_unlabelled_training_rows_and_test_rows():
    trial = _trial()
    small = few_rows(trial, n=4)
    labelled_rows = trial.train[trial.labelled][:4]
    unlabelled_rows = trial.train[~trial.labelled][:4]
    assert list(small.train) == sorted([*labelled_rows, *unlabelled_rows])
    assert set(small.train[small.labelled]) == set(labelled_rows)
    assert list(small.test) == list(trial.test[:4]) and small.rate == trial.rate
    assert few_rows(small, n=4) is small
