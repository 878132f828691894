"""The labelling-rate holdout of paper 000."""

import numpy as np
import pytest

from mlgraph.evaluation.protocols import labelling_rate_trials


def test_sizes_disjointness_and_rates():
    trials = labelling_rate_trials(300, rates=[0.05, 0.5], repeats=3, seed=7)
    assert len(trials) == 6
    for t in trials:
        assert len(t.test) == 100 and len(t.train) == 200
        assert np.intersect1d(t.train, t.test).size == 0
        assert t.labelled.sum() == round(t.rate * 200)
    assert [t.step for t in trials] == [5, 5, 5, 50, 50, 50]


def test_deterministic_per_seed_rate_repetition():
    a = labelling_rate_trials(120, rates=[0.1, 0.2], repeats=2, seed=3)
    b = labelling_rate_trials(120, rates=[0.2], repeats=2, seed=3)  # same (seed, rate, rep)
    for x, y in zip(a[2:], b, strict=True):
        np.testing.assert_array_equal(x.train, y.train)
        np.testing.assert_array_equal(x.labelled, y.labelled)
    c = labelling_rate_trials(120, rates=[0.1], repeats=2, seed=4)
    assert not np.array_equal(a[0].test, c[0].test)
    assert not np.array_equal(a[0].test, a[1].test)  # repetitions resample


def test_subsample_redrawn_per_repetition():
    trials = labelling_rate_trials(1000, rates=[0.5], repeats=2, seed=0, subsample=0.1)
    sizes = {len(t.train) + len(t.test) for t in trials}
    assert sizes == {100}
    pools = [np.union1d(t.train, t.test) for t in trials]
    assert not np.array_equal(*pools)


def test_rate_without_labelled_instance_is_an_error():
    with pytest.raises(ValueError, match="no labelled"):
        labelling_rate_trials(12, rates=[0.05], repeats=1)


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"rates": [0.0]}, "rates"),
        ({"rates": [1.5]}, "rates"),
        ({"rates": []}, "rates"),
        ({"rates": 0.1}, "rates"),
        ({"rates": [0.051, 0.054]}, "differ in percent"),
        ({"repeats": 0}, "repeats"),
        ({"repeats": 2.5}, "repeats"),
        ({"test_size": 1.0}, "test_size"),
        ({"test_size": 1e-4}, "no test"),
        ({"subsample": 0.0}, "subsample"),
    ],
)
def test_bad_parameters(kwargs, name):
    args = {"rates": [0.5], "repeats": 1, **kwargs}
    with pytest.raises(ValueError, match=name):
        labelling_rate_trials(100, **args)


def test_targets_mark_unlabelled_rows():
    Y = np.ones((10, 2), dtype=np.int8)
    (trial,) = labelling_rate_trials(10, rates=[0.5], repeats=1, seed=0, test_size=0.2)
    targets = trial.targets(Y)
    assert targets.shape == (8, 2) and (targets[~trial.labelled] == -1).all()
    assert (targets[trial.labelled] == 1).all() and (Y == 1).all()


def test_cross_validation_folds_partition_the_data_and_are_reproducible():
    from mlgraph.evaluation.protocols import cross_validation_trials

    trials = cross_validation_trials(103, folds=10, seed=3)
    assert len(trials) == 10 and all(t.rate == 1.0 and t.labelled.all() for t in trials)
    tests = np.concatenate([t.test for t in trials])
    assert sorted(tests) == list(range(103))  # every instance tested exactly once
    assert all(
        len(np.intersect1d(t.train, t.test)) == 0 and len(t.train) + len(t.test) == 103 for t in trials
    )
    again = cross_validation_trials(103, folds=10, seed=3)
    assert all((a.test == b.test).all() for a, b in zip(trials, again, strict=True))
    assert not (cross_validation_trials(103, folds=10, seed=4)[0].test == trials[0].test).all()


def test_cross_validation_random_draws_for_large_sets():
    from mlgraph.evaluation.protocols import cross_validation_trials

    trials = cross_validation_trials(7395, seed=0, train_size=1800, test_size=0.1, repeats=10)
    assert len(trials) == 10
    assert all(len(t.train) == 1800 and len(t.test) == 740 for t in trials)
    assert all(len(np.intersect1d(t.train, t.test)) == 0 for t in trials)
    with pytest.raises(ValueError, match="train_size"):
        cross_validation_trials(100, train_size=95, test_size=0.1)
    with pytest.raises(ValueError, match="folds"):
        cross_validation_trials(5, folds=6)


# --------------------------------------------------------------- iterative stratification
from mlgraph.evaluation.protocols import (  # noqa: E402
    cross_validation_trials,
    fixed_split_trials,
    protocol_inputs,
    stratification_matrix,
    uses_fixed_split,
)


def _planted_labels(seed=0):
    """100 rows: label 0 on 20 rows, label 1 on 40 others, 40 rows without labels, shuffled.
    Exact stratification exists for 2, 4, 5 and 10 parts, and iterative stratification finds it."""
    Y = np.zeros((100, 2), dtype=np.int8)
    Y[:20, 0] = 1
    Y[20:60, 1] = 1
    return Y[np.random.default_rng(seed).permutation(100)]


def test_iterative_folds_hold_every_label_in_exact_proportion():
    Y = _planted_labels()
    trials = cross_validation_trials(100, folds=5, seed=1, stratify="iterative", Y=Y)
    assert sorted(np.concatenate([t.test for t in trials])) == list(range(100))
    for t in trials:
        assert Y[t.test].sum(axis=0).tolist() == [4, 8] and len(t.test) == 20
        assert len(np.intersect1d(t.train, t.test)) == 0 and len(t.train) == 80
    again = cross_validation_trials(100, folds=5, seed=1, stratify="iterative", Y=Y)
    assert all(np.array_equal(a.test, b.test) for a, b in zip(trials, again, strict=True))
    other = cross_validation_trials(100, folds=5, seed=2, stratify="iterative", Y=Y)
    assert not all(np.array_equal(a.test, b.test) for a, b in zip(trials, other, strict=True))
    # the uniform folds of the same seed are not stratified (the check above can fail)
    plain = cross_validation_trials(100, folds=5, seed=1, Y=Y)
    assert any(Y[t.test].sum(axis=0).tolist() != [4, 8] for t in plain)


def test_stratify_none_ignores_Y_and_keeps_the_old_splits():
    Y = _planted_labels()
    for a, b in zip(
        cross_validation_trials(100, folds=10, seed=3, Y=Y),
        cross_validation_trials(100, folds=10, seed=3),
        strict=True,
    ):
        np.testing.assert_array_equal(a.test, b.test)
    for a, b in zip(
        labelling_rate_trials(100, [0.5], 2, seed=3, Y=Y),
        labelling_rate_trials(100, [0.5], 2, seed=3),
        strict=True,
    ):
        np.testing.assert_array_equal(a.test, b.test)
        np.testing.assert_array_equal(a.labelled, b.labelled)


def test_iterative_halves_and_holdout_split_each_label_evenly():
    Y = _planted_labels()
    trials = labelling_rate_trials(
        100, rates=[1.0], repeats=3, seed=0, test_size=0.5, stratify="iterative", Y=Y
    )
    for t in trials:
        assert Y[t.test].sum(axis=0).tolist() == [10, 20] and Y[t.train].sum(axis=0).tolist() == [10, 20]
        assert len(np.intersect1d(t.train, t.test)) == 0 and len(t.train) + len(t.test) == 100
        assert t.labelled.all()
    assert not np.array_equal(trials[0].test, trials[1].test)  # repetitions resample
    (ssl,) = labelling_rate_trials(
        100, rates=[0.3], repeats=1, seed=0, test_size=0.2, stratify="iterative", Y=Y
    )
    assert Y[ssl.test].sum(axis=0).tolist() == [4, 8] and ssl.labelled.sum() == round(0.3 * len(ssl.train))


def test_iterative_random_draws_of_a_training_size():
    Y = _planted_labels()
    trials = cross_validation_trials(
        100, seed=0, train_size=50, test_size=0.2, repeats=3, stratify="iterative", Y=Y
    )
    for t in trials:
        assert Y[t.test].sum(axis=0).tolist() == [4, 8] and len(t.test) == 20
        assert Y[t.train].sum(axis=0).tolist() == [10, 20] and len(t.train) == 50
        assert len(np.intersect1d(t.train, t.test)) == 0


def test_stratification_matrix_one_hot_encodes_class_indices():
    y = np.array([[0, 1], [2, 0], [1, 1], [2, 1]])  # dual-set data: a class index per set
    expected = np.array([[1, 0, 0, 0, 1], [0, 0, 1, 1, 0], [0, 1, 0, 0, 1], [0, 0, 1, 0, 1]], dtype=bool)
    np.testing.assert_array_equal(stratification_matrix(y, 4), expected)
    Y = np.array([[0, 1], [1, 1]])
    np.testing.assert_array_equal(stratification_matrix(Y, 2), Y.astype(bool))  # 0/1: labels as they are
    np.testing.assert_array_equal(
        stratification_matrix(np.array([[1], [0]]), 2), [[True, False], [False, True]]
    )
    with pytest.raises(ValueError, match="3 rows"):
        stratification_matrix(np.zeros((3, 2)), 4)


def test_stratify_errors():
    with pytest.raises(ValueError, match="stratify='labels'"):
        cross_validation_trials(100, folds=5, stratify="labels", Y=_planted_labels())
    with pytest.raises(ValueError, match="needs the label matrix"):
        labelling_rate_trials(100, [0.5], 1, stratify="iterative")


# ----------------------------------------------------------------------- fixed split


def test_fixed_split_keeps_the_published_parts():
    (trial,) = fixed_split_trials(10, n_train=6, repeats=5)  # rate 1: one trial, not five copies
    np.testing.assert_array_equal(trial.train, np.arange(6))
    np.testing.assert_array_equal(trial.test, np.arange(6, 10))
    assert trial.labelled.all() and trial.rate == 1.0 and trial.step == 100


def test_fixed_split_labelling_rates_redraw_training_labels_only():
    trials = fixed_split_trials(100, n_train=60, rates=[0.1, 0.5], repeats=3, seed=4)
    assert [(t.step, t.repetition) for t in trials] == [(10, 0), (10, 1), (10, 2), (50, 0), (50, 1), (50, 2)]
    for t in trials:
        np.testing.assert_array_equal(t.train, np.arange(60))
        np.testing.assert_array_equal(t.test, np.arange(60, 100))
        assert t.labelled.sum() == round(t.rate * 60)
    assert not np.array_equal(trials[0].labelled, trials[1].labelled)
    again = fixed_split_trials(100, n_train=60, rates=[0.5], repeats=3, seed=4)
    assert all(np.array_equal(a.labelled, b.labelled) for a, b in zip(trials[3:], again, strict=True))


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({}, "test_arff"),
        ({"n_train": 10}, "n_train=10"),
        ({"n_train": 0}, "n_train=0"),
        ({"n_train": 5, "rates": [0.01]}, "no labelled"),
        ({"n_train": 5, "repeats": 0}, "repeats"),
    ],
)
def test_fixed_split_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        fixed_split_trials(10, **kwargs)


def test_protocol_inputs_follow_the_protocol_signature():
    class Data:
        n_samples, Y, n_train = 10, np.zeros((10, 2)), 6

    ssl = {"_target_": "mlgraph.evaluation.protocols.labelling_rate_trials"}
    fixed = {"_target_": "mlgraph.evaluation.protocols.fixed_split_trials"}
    assert set(protocol_inputs(ssl, Data())) == {"n_samples", "Y"}
    assert protocol_inputs(fixed, Data()) == {"n_samples": 10, "n_train": 6}
    assert uses_fixed_split(fixed) and not uses_fixed_split(ssl)
    assert protocol_inputs(lambda n_samples, seed=0: [], Data()) == {"n_samples": 10}
