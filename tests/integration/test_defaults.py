"""Every multi-label estimator with its constructor defaults is a reasonable model on its own:
on emotions at 50 % labelled (paper 000's protocol, one split) it beats the label-prior baseline,
each label's training frequency as its score, in average precision."""

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

import mlgraph.methods as methods
from mlgraph.data import load_dataset
from mlgraph.engine.runner import label_scores
from mlgraph.evaluation.metrics import average_precision
from mlgraph.evaluation.protocols import labelling_rate_trials
from mlgraph.methods.base import MultiLabelClassifierMixin

pytestmark = pytest.mark.integration

ESTIMATORS = sorted(
    name
    for name in methods.__all__
    if isinstance(getattr(methods, name), type)
    and issubclass(getattr(methods, name), MultiLabelClassifierMixin)
    and getattr(methods, name) is not MultiLabelClassifierMixin
)


@pytest.fixture(scope="module")
def split():
    data = load_dataset("emotions")
    (trial,) = labelling_rate_trials(data.n_samples, rates=[0.5], repeats=1, seed=0)
    return data, trial


def test_every_multi_label_estimator_is_covered():
    assert len(ESTIMATORS) == 15 and {"MLLGC", "MLMRRW", "ML2", "RankSVM"} <= set(ESTIMATORS)


@pytest.mark.parametrize("name", ESTIMATORS)
def test_defaults_beat_the_label_prior(name, split):
    data, trial = split
    model, Y_train = getattr(methods, name)(), trial.targets(data.Y)
    with threadpool_limits(
        1
    ):  # as the runner's parallel trials (two BLAS threads crawl on a busy 2-core machine)
        scores = _test_scores(model, data, trial, Y_train)
    prior = Y_train[trial.labelled].mean(axis=0)
    baseline = average_precision(data.Y[trial.test], np.tile(prior, (len(trial.test), 1)))
    ours = average_precision(data.Y[trial.test], scores)
    assert ours > baseline + 0.1, f"{name}: {ours:.4f} against the label prior's {baseline:.4f}"


def _test_scores(model, data, trial, Y_train):
    if getattr(model, "transductive", False):  # the runner's rule: test rows join as unlabelled
        rows = np.concatenate([trial.train, trial.test])
        unlabelled = np.full((len(trial.test), data.Y.shape[1]), -1, dtype=np.int8)
        model.fit(data.X[rows], np.vstack([Y_train, unlabelled]))
        return model.label_scores_[len(trial.train) :]
    return label_scores(model.fit(data.X[trial.train], Y_train), data.X[trial.test])[0]
