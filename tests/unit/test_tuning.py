"""Nested selection inside a trial (mlgraph.engine.tuning): folds on labelled training rows only, the
validation labels hidden, test rows never seen, the right grid point, bad input before trials."""

import logging
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hydra import compose, initialize_config_dir
from sklearn.base import BaseEstimator, ClassifierMixin

from mlgraph.engine.checks import ConfigError
from mlgraph.engine.experiment import prepare
from mlgraph.engine.runner import _run_one
from mlgraph.engine.tuning import InnerSelection, choice_counts, log_choices
from mlgraph.evaluation.protocols import Trial
from mlgraph.graphs.cache import SharedWork
from mlgraph.methods import MLMRRW
from mlgraph.tracking.store import config_hash

CONF = Path(__file__).resolve().parents[2] / "conf"
SEEN: list = []  # what each fit of Spy received: (row ids, Y)


class Spy(ClassifierMixin, BaseEstimator):
    """Scores by distance to each label's positive centroid of the labelled rows; ``flip``
    reverses them (a bad grid point). Records what it is fitted on; X's first column is the
    row id."""

    semi_supervised = True

    def __init__(self, flip=False, memory=None):
        self.flip = flip
        self.memory = memory

    def fit(self, X, Y):
        SEEN.append((X[:, 0].astype(int).copy(), np.asarray(Y).copy()))
        Y = np.asarray(Y)
        lab = ~(Y == -1).all(axis=1)
        Z, Yl = X[lab, 1:], Y[lab]
        self.centres_ = (Yl.T @ Z) / np.maximum(Yl.sum(0), 1)[:, None]
        return self

    def decision_function(self, X):
        d = -((X[:, None, 1:] - self.centres_[None]) ** 2).sum(-1)
        return -d if self.flip else d

    def predict(self, X):
        s = self.decision_function(X)
        return (s >= np.median(s, axis=1, keepdims=True)).astype(int)


def _data(n=120, q=3, seed=0):
    rng = np.random.default_rng(seed)
    Y = (rng.random((n, q)) < 0.4).astype(np.int8)
    Y[np.arange(n), rng.integers(0, q, n)] = 1
    X = np.column_stack([np.arange(n), Y @ rng.normal(size=(q, 4)) * 2 + rng.normal(size=(n, 4))])
    return X, Y


def _trial(n=120, n_test=40, labelled=40):
    train, test = np.arange(n_test, n), np.arange(n_test)
    mask = np.zeros(len(train), bool)
    mask[:labelled] = True
    return Trial(0.5, 0, train, test, mask)


def _selection(**kw):
    return InnerSelection(space={"flip": (True, False)}, keys={"flip": "flip"}, **kw)


def test_inner_folds_partition_the_labelled_training_rows():
    X, Y = _data()
    trial = _trial()
    Y_train = trial.targets(Y)
    folds = _selection().inner_folds(Y_train, trial.rate, trial.repetition)
    labelled = np.flatnonzero(trial.labelled)
    assert len(folds) == 3
    assert np.array_equal(np.sort(np.concatenate([f.test for f in folds])), labelled)
    for f in folds:
        assert np.array_equal(np.sort(np.concatenate([f.train, f.test])), labelled)
    again = _selection().inner_folds(Y_train, trial.rate, trial.repetition)
    assert all(np.array_equal(a.test, b.test) for a, b in zip(folds, again, strict=True))


def test_inner_fits_hide_the_fold_and_never_see_test_rows():
    X, Y = _data()
    trial = _trial()
    SEEN.clear()
    row = _run_one(Spy(), X, Y, trial, ["avg_precision"], 1, {}, _selection())
    assert row["status"] == "ok", row.get("error")
    *inner, refit = SEEN
    assert len(inner) == 2 * 3 and row["tuning_fits"] == 6
    test_ids = set(trial.test)
    for ids, Y_fit in inner:
        assert not test_ids & set(ids)  # test rows are never part of an inner fit
        assert np.array_equal(ids, trial.train)  # every training row, the unlabelled ones too
        hidden = (Y_fit == -1).all(axis=1)
        # 40 unlabelled training rows, and the fold's third of the 40 labelled ones hidden
        assert 40 + 10 <= hidden.sum() <= 40 + 16
    assert np.array_equal(refit[0], trial.train)
    assert np.array_equal(refit[1], trial.targets(Y))  # the refit sees every labelled row


@pytest.mark.parametrize("metric", ["avg_precision", "ranking_loss"])
def test_the_better_grid_point_wins_whatever_the_metric_direction(metric):
    X, Y = _data()
    row = _run_one(Spy(), X, Y, _trial(), [metric], 1, {}, _selection(metric=metric))
    assert row["tuned_flip"] is False and row["tuning_fallback"] == 0
    assert row[metric] == pytest.approx(row[metric])  # finite


def test_shared_work_reaches_the_inner_fits_and_the_refit():
    X, Y = _data()
    SEEN.clear()
    selection = _selection(memory_key="memory")
    model, row = selection.select(
        Spy(memory="unused-folder"), X[_trial().train], _trial().targets(Y), _trial()
    )
    assert isinstance(model.memory, SharedWork) and model.memory.folder == "unused-folder"


def test_shared_work_gives_the_same_ml_mrrw_and_computes_once():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(150, 6))
    Y = (X[:, :3] + rng.normal(size=(150, 3)) > 0).astype(np.int8)
    Y[::2] = -1
    store = SharedWork()
    plain = MLMRRW(sigma_scale=0.5).fit(X, Y).decision_function(X[:20])
    first = MLMRRW(sigma_scale=0.5, memory=store).fit(X, Y).decision_function(X[:20])
    second = MLMRRW(sigma_scale=0.5, gamma_A=0.1, memory=store).fit(X, Y)
    assert np.array_equal(plain, first)
    assert store.misses == 4 and store.hits == 4  # distances, σ, graph, kernel: once
    assert np.array_equal(
        second.decision_function(X[:20]),
        MLMRRW(sigma_scale=0.5, gamma_A=0.1).fit(X, Y).decision_function(X[:20]),
    )


def _prepare(*overrides):
    with initialize_config_dir(version_base="1.3", config_dir=str(CONF)):
        cfg = compose("config", overrides=["dataset=emotions", "graph_cache=null", *overrides])
    return cfg, prepare(cfg)


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        (["method.search.nu3=[1,2]"], "method.search.nu3: MLMRRW (method mlmrrw) has no parameter 'nu3'"),
        (["method.search.gamma_A=[]"], "method.search.gamma_A=[] is an empty grid"),
        (["method.search.gamma_A=0.1"], "method.search.gamma_A=0.1 is not valid"),
        (["method=ecc"], "tuning=inner needs a search space: method ecc has no method.search"),
        (["tuning.folds=1"], "tuning.folds=1 is not valid"),
        (["tuning.metric=accuracy"], "tuning.metric='accuracy' is not valid"),
        (
            ["protocol.rates=[0.01]", "tuning.folds=10"],
            "tuning.folds=10 needs at least 10 labelled training rows",
        ),
    ],
)
def test_bad_tuning_input_is_one_paragraph_before_any_trial(overrides, expected):
    with pytest.raises(ConfigError) as err:
        _prepare("tuning=inner", "+method.search.nu3=[1]" if "nu3" in overrides[0] else "seed=0", *overrides)
    assert expected in str(err.value) and "\n" not in str(err.value)


def test_plan_carries_the_selection_and_describes_it():
    _, plan = _prepare("tuning=inner", "method=lgc")
    assert plan.tuning is not None and len(plan.tuning.points) == 36
    assert plan.tuning.memory_key == "memory"
    assert plan.tags["tuning"].startswith("inner 3-fold selection over 36 grid points")
    _, plain = _prepare("method=lgc")
    assert plain.tuning is None and plain.tags["tuning"] == "none"


def test_degenerate_inner_folds_warn_once_with_the_rule(caplog):
    with caplog.at_level(logging.WARNING, logger="mlgraph.engine.tuning"):
        _prepare("tuning=inner", "method=mlknn", "protocol.rates=[0.01]", "protocol.repeats=3")
    warnings = [r for r in caplog.records if "inner fold" in r.getMessage()]
    assert len(warnings) == 1
    assert "3 of 3 trials" in warnings[0].getMessage()
    assert "Rule: the fold is used as it is" in warnings[0].getMessage()


def test_search_space_changes_the_config_hash_only_when_tuning():
    base, _ = _prepare("method=mlknn")
    wider, _ = _prepare("method=mlknn", "method.search.k=[3,5]")
    assert config_hash(base) == config_hash(wider)
    inner, _ = _prepare("method=mlknn", "tuning=inner")
    inner_wider, _ = _prepare("method=mlknn", "tuning=inner", "method.search.k=[3,5]")
    assert len({config_hash(base), config_hash(inner), config_hash(inner_wider)}) == 3


def test_choices_are_counted_per_rate_and_logged(tmp_path):
    table = pd.DataFrame(
        {
            "rate": [0.1, 0.1, 0.5, 0.5],
            "status": ["ok"] * 4,
            "tuned_k": [5, 10, 10, 10],
            "tuning_fallback": [0] * 4,
        }
    )
    counts = choice_counts(table)
    overall = counts[counts.rate == "all"].set_index("value")["count"].to_dict()
    assert overall == {"10": 3, "5": 1} and set(counts.parameter) == {"k"}
    files, tags = log_choices(table, tmp_path, "t")
    assert [f.name for f in files] == [
        f"tuned_values.{x}" for x in ("csv", "png", "svg", "pdf")
    ] and tags == {"tuned.k": "10×3 5×1"}
    assert (tmp_path / "tuned_values.png").stat().st_size > 1000
    assert log_choices(table.drop(columns=["tuned_k"]), tmp_path, "t") == ([], {})


class FailsWhenFlipped(Spy):
    def fit(self, X, Y):
        if self.flip:
            raise ValueError("infeasible on this fold")
        return super().fit(X, Y)


def test_a_grid_point_that_cannot_be_fitted_is_skipped_not_the_trial():
    X, Y = _data()
    row = _run_one(FailsWhenFlipped(), X, Y, _trial(), ["avg_precision"], 1, {}, _selection())
    assert row["status"] == "ok" and row["tuned_flip"] is False
    assert row["tuning_failed_fits"] == 3 and "infeasible on this fold" in row["tuning_first_failure"]
