"""The labelling-rate holdout of paper 000."""

import numpy as np
import pytest

from mlgraph.protocols import labelling_rate_trials


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
    for x, y in zip(a[2:], b):
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


@pytest.mark.parametrize("kwargs, name", [({"rates": [0.0]}, "rates"), ({"rates": [1.5]}, "rates"),
                                          ({"rates": []}, "rates"), ({"rates": 0.1}, "rates"),
                                          ({"rates": [0.051, 0.054]}, "differ in percent"),
                                          ({"repeats": 0}, "repeats"), ({"repeats": 2.5}, "repeats"),
                                          ({"test_size": 1.0}, "test_size"), ({"test_size": 1e-4}, "no test"),
                                          ({"subsample": 0.0}, "subsample")])
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
    from mlgraph.protocols import cross_validation_trials

    trials = cross_validation_trials(103, folds=10, seed=3)
    assert len(trials) == 10 and all(t.rate == 1.0 and t.labelled.all() for t in trials)
    tests = np.concatenate([t.test for t in trials])
    assert sorted(tests) == list(range(103))  # every instance tested exactly once
    assert all(len(np.intersect1d(t.train, t.test)) == 0 and len(t.train) + len(t.test) == 103 for t in trials)
    again = cross_validation_trials(103, folds=10, seed=3)
    assert all((a.test == b.test).all() for a, b in zip(trials, again))
    assert not (cross_validation_trials(103, folds=10, seed=4)[0].test == trials[0].test).all()


def test_cross_validation_random_draws_for_large_sets():
    from mlgraph.protocols import cross_validation_trials

    trials = cross_validation_trials(7395, seed=0, train_size=1800, test_size=0.1, repeats=10)
    assert len(trials) == 10
    assert all(len(t.train) == 1800 and len(t.test) == 740 for t in trials)
    assert all(len(np.intersect1d(t.train, t.test)) == 0 for t in trials)
    with pytest.raises(ValueError, match="train_size"):
        cross_validation_trials(100, train_size=95, test_size=0.1)
    with pytest.raises(ValueError, match="folds"):
        cross_validation_trials(5, folds=6)
