"""Trial runner: parallel execution, failed trials kept as data, summaries."""

import numpy as np
import pandas as pd
import pytest
from sklearn.base import BaseEstimator

from mlgraph.engine.runner import Parallelism, resolve_parallelism, run_trials, summarise
from mlgraph.evaluation.protocols import labelling_rate_trials


class ColumnMeans(BaseEstimator):
    """Scores every test point with the labelled label frequencies; fails on request."""

    def __init__(self, fail_below_labelled=0):
        self.fail_below_labelled = fail_below_labelled

    def fit(self, X, Y):
        lab = (Y != -1).all(axis=1)
        if lab.sum() < self.fail_below_labelled:
            raise RuntimeError(f"only {lab.sum()} labelled")
        self.freq_ = Y[lab].mean(axis=0)
        return self

    def decision_function(self, X):
        return np.tile(self.freq_, (X.shape[0], 1)) + 1e-3 * X[:, :1]

    def predict(self, X):
        return (self.decision_function(X) > 0.5).astype(np.int8)


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(90, 3))
    Y = (rng.random((90, 4)) < 0.4).astype(np.int8)
    return X, Y


def test_failed_trials_are_recorded_while_others_finish(data):
    X, Y = data
    trials = labelling_rate_trials(len(X), rates=[0.05, 0.5], repeats=3, seed=0)
    table = run_trials(
        ColumnMeans(fail_below_labelled=10),
        X,
        Y,
        trials,
        ["avg_precision"],
        Parallelism(2, 1),
        progress=False,
    )
    assert len(table) == 6
    failed = table[table.status == "failed"]
    assert set(failed.rate) == {0.05} and failed.error.str.contains("labelled").all()
    assert table[table.status == "ok"].avg_precision.notna().all()
    summary = summarise(table, ["avg_precision"])
    assert summary.loc[0.05, "n_failed"] == 3 and summary.loc[0.5, "n_ok"] == 3
    assert np.isnan(summary.loc[0.05, "avg_precision"])


def test_parallel_equals_sequential(data):
    X, Y = data
    trials = labelling_rate_trials(len(X), rates=[0.3], repeats=4, seed=1)
    a = run_trials(
        ColumnMeans(), X, Y, trials, ["micro_f1", "ranking_loss"], Parallelism(1, 1), progress=False
    )
    b = run_trials(
        ColumnMeans(), X, Y, trials, ["micro_f1", "ranking_loss"], Parallelism(2, 1), progress=False
    )
    pd.testing.assert_frame_equal(
        a.drop(columns=["fit_seconds", "predict_seconds"]), b.drop(columns=["fit_seconds", "predict_seconds"])
    )


def test_summary_mean_and_std():
    table = pd.DataFrame({"rate": [0.1, 0.1, 0.2], "status": ["ok", "ok", "ok"], "m": [1.0, 3.0, 5.0]})
    s = summarise(table, ["m"])
    assert s.loc[0.1, "m"] == 2.0 and s.loc[0.1, "m_std"] == pytest.approx(np.sqrt(2))
    assert s.loc[0.2, "m_std"] == 0.0 and list(s.step) == [10, 20]


def test_resolve_parallelism():
    assert resolve_parallelism("auto", False, cores=2) == Parallelism(2, 1)
    assert resolve_parallelism("auto", True, cores=2) == Parallelism(1, 1)
    assert resolve_parallelism(1, False, cores=4) == Parallelism(1, 4)
    with pytest.raises(ValueError, match="n_jobs"):
        resolve_parallelism(0, False)


class ScoresOnce(ColumnMeans):
    """Predictions derive from the scores: the runner must not ask for them again."""

    def predict(self, X):
        raise AssertionError("predict called although predict_from_scores exists")

    def predict_from_scores(self, scores):
        return (scores > 0.5).astype(np.int8)


def test_predictions_come_from_the_scores_when_the_estimator_can(data):
    X, Y = data
    trials = labelling_rate_trials(len(X), rates=[0.5], repeats=2, seed=0)
    a = run_trials(ScoresOnce(), X, Y, trials, ["micro_f1", "avg_precision"], progress=False)
    b = run_trials(ColumnMeans(), X, Y, trials, ["micro_f1", "avg_precision"], progress=False)
    assert (a.status == "ok").all()
    pd.testing.assert_series_equal(a.micro_f1, b.micro_f1)


def test_forked_workers_start_the_trials_before_on_start_and_give_every_row(data):
    """Parallel one-thread trials run in forked workers; ``on_start`` runs once, while they run,
    before any row is handed to ``on_row``."""
    X, Y = data
    trials = labelling_rate_trials(len(X), rates=[0.1, 0.5], repeats=3, seed=0)
    events = []
    table = run_trials(
        ColumnMeans(),
        X,
        Y,
        trials,
        ["avg_precision"],
        Parallelism(2, 1),
        progress=False,
        on_row=lambda row: events.append("row"),
        on_start=lambda: events.append("start"),
    )
    assert events == ["start"] + ["row"] * 6 and len(table) == 6
    sequential = run_trials(ColumnMeans(), X, Y, trials, ["avg_precision"], Parallelism(1, 1), progress=False)
    pd.testing.assert_series_equal(table.avg_precision, sequential.avg_precision)
