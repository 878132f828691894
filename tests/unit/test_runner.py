"""Trial runner: parallel execution, failed trials kept as data, dead workers' trials run again,
summaries."""

import logging
import multiprocessing
import os
import signal
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.base import BaseEstimator

from mlgraph.engine.runner import Parallelism, resolve_parallelism, run_trials, summarise
from mlgraph.evaluation.protocols import labelling_rate_trials
from mlgraph.processes.workers import WorkerDied, each_in_workers


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


def _square_or_die(item):
    """``x * x``; the item's worker dies of SIGKILL on every attempt whose marker file is
    missing (each attempt leaves its marker, so ``deaths`` files mean that many deaths)."""
    x, folder, deaths = item
    if x == 3:
        for attempt in range(deaths):
            marker = folder / f"died-{attempt}"
            if not marker.exists():
                marker.touch()
                os.kill(os.getpid(), signal.SIGKILL)
    return x * x


@pytest.mark.parametrize("deaths", [1, 2])
def test_a_dead_worker_costs_its_item_one_more_attempt_and_no_other(tmp_path, deaths):
    retried = []
    items = [(x, tmp_path, deaths) for x in range(6)]
    with each_in_workers(
        _square_or_die, items, 2, on_retry=lambda i, died: retried.append((i, str(died)))
    ) as ended:
        results = dict(ended)
    assert retried == [(3, "worker died (signal 9)")]
    assert {i: r for i, r in results.items() if i != 3} == {i: i * i for i in range(6) if i != 3}
    if deaths == 1:  # the second worker that took it finished it
        assert results[3] == 9
    else:
        assert isinstance(results[3], WorkerDied) and results[3].exitcode == -signal.SIGKILL
        assert str(results[3]) == "worker died (signal 9) in each of 2 attempts"
    assert not multiprocessing.active_children()


def _fail(x):
    raise ValueError(f"bad item {x}")


def test_an_error_of_the_function_is_raised_and_the_workers_end():
    with pytest.raises(ValueError, match="bad item"), each_in_workers(_fail, [1, 2, 3], 2) as ended:
        list(ended)
    assert not multiprocessing.active_children()


class DiesOnce(ColumnMeans):
    """Kills the process that fits it when half its training rows are labelled (the 0.5 rate's
    trials), as long as ``folder`` holds fewer than ``deaths`` markers (one per death)."""

    fail_below_labelled = 0

    def __init__(self, folder=None, deaths=1):
        self.folder, self.deaths = folder, deaths

    def fit(self, X, Y):
        if (Y != -1).all(axis=1).mean() == 0.5 and len(list(Path(self.folder).iterdir())) < self.deaths:
            (Path(self.folder) / f"died-{os.getpid()}").touch()
            os.kill(os.getpid(), signal.SIGKILL)
        return super().fit(X, Y)


@pytest.mark.parametrize("deaths", [1, 2])
def test_a_trial_whose_worker_dies_runs_again_once_then_is_a_failed_row(data, tmp_path, caplog, deaths):
    X, Y = data
    trials = labelling_rate_trials(len(X), rates=[0.3, 0.5], repeats=2, seed=0)
    trials = [t for t in trials if t.rate == 0.3 or t.repetition == 0]  # one trial of 45 training rows
    with caplog.at_level(logging.WARNING):
        table = run_trials(
            DiesOnce(tmp_path, deaths), X, Y, trials, ["avg_precision"], Parallelism(2, 1), progress=False
        )
    assert len(table) == 3 and len(list(tmp_path.iterdir())) == deaths
    assert (
        "trial rate=0.5 repetition=0: its worker died (signal 9); it runs again in a new worker"
        in caplog.text
    )
    dying = table[table.rate == 0.5].iloc[0]
    if deaths == 1:
        assert (table.status == "ok").all()
    else:
        assert dying.status == "failed" and dying.error == "worker died (signal 9) in each of 2 attempts"
        assert (table[table.rate == 0.3].status == "ok").all()
    expected = run_trials(ColumnMeans(), X, Y, trials, ["avg_precision"], Parallelism(1, 1), progress=False)
    ok = table.status == "ok"
    np.testing.assert_allclose(table.avg_precision[ok], expected.avg_precision[ok])


@pytest.mark.slow
def test_trials_on_several_blas_threads_run_in_spawned_workers(data, tmp_path):
    """Spawned workers (a forked one may not run multithreaded OpenMP): same rows, and a dead
    worker's trial runs again there too (a few seconds: each worker imports mlgraph)."""
    X, Y = data
    trials = [
        t for t in labelling_rate_trials(len(X), rates=[0.3, 0.5], repeats=2, seed=0) if t.repetition == 0
    ]
    table = run_trials(
        DiesOnce(tmp_path, 1), X, Y, trials, ["avg_precision"], Parallelism(2, 2), progress=False
    )
    expected = run_trials(ColumnMeans(), X, Y, trials, ["avg_precision"], Parallelism(1, 1), progress=False)
    assert len(list(tmp_path.iterdir())) == 1 and (table.status == "ok").all()
    pd.testing.assert_series_equal(table.avg_precision, expected.avg_precision)
