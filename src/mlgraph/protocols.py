"""Evaluation protocols: how one dataset is cut into trials.

Every trial is reproducible from ``(seed, protocol, rate, repetition)`` alone: its random
generator is seeded with :class:`numpy.random.SeedSequence` on those integers, so two methods
run with the same seed see exactly the same splits (paired comparisons, Friedman tests), and a
trial can be re-run on its own.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import Sequence

import numpy as np


@dataclass(frozen=True)
class Trial:
    """One train/test split, with the labelled part of the training set.

    ``train`` and ``test`` index the dataset's rows; ``labelled`` is a boolean mask aligned
    with ``train`` (all True for fully supervised protocols).
    """

    rate: float
    repetition: int
    train: np.ndarray
    test: np.ndarray
    labelled: np.ndarray

    @property
    def step(self) -> int:
        """The labelling rate in percent, used as the MLflow ``step``."""
        return rate_step(self.rate)

    def targets(self, Y: np.ndarray) -> np.ndarray:
        """Training labels with unlabelled rows set to −1 (scikit-learn's semi-supervised mark)."""
        Y_train = Y[self.train].astype(np.int8)
        Y_train[~self.labelled] = -1
        return Y_train


def rate_step(rate: float) -> int:
    """A labelling rate in percent, the ``step`` of per-rate metrics."""
    return int(round(100 * rate))


def _rng(seed: int, *keys: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence([int(seed), *map(int, keys)]))


def _check_fraction(value: float, name: str, *, allow_one: bool = True) -> float:
    value = float(value)
    upper_ok = value <= 1 if allow_one else value < 1
    if not (0 < value and upper_ok):
        bound = "(0, 1]" if allow_one else "(0, 1)"
        raise ValueError(f"protocol parameter {name}={value} must lie in {bound}")
    return value


def labelling_rate_trials(
    n_samples: int,
    rates: Sequence[float],
    repeats: int,
    seed: int = 0,
    test_size: float = 1 / 3,
    subsample: float | None = None,
) -> list[Trial]:
    """The semi-supervised holdout of paper 000 ("Experiment setup").

    For every labelling rate η and repetition: optionally draw a fraction ``subsample`` of the
    instances (paper 000 uses 10% of mediamill, redrawn per repetition), hold out
    ``test_size`` of them as out-of-sample test data (1/3 in the paper), and keep the labels of
    ``round(η · n_train)`` randomly chosen training instances; the rest of the training set is
    unlabelled. As in the paper, every (rate, repetition) resamples all three parts.
    """
    if isinstance(repeats, bool) or not isinstance(repeats, numbers.Integral) or repeats < 1:
        raise ValueError(f"protocol.repeats={repeats!r} must be an integer of at least 1")
    if isinstance(rates, (str, bytes)) or not isinstance(rates, Sequence) or not len(rates):
        raise ValueError(f"protocol.rates={rates!r} must be a non-empty list of fractions in (0, 1]")
    steps = [rate_step(_check_fraction(rate, "rates")) for rate in rates]
    if len(set(steps)) != len(steps):
        raise ValueError(f"protocol.rates={list(rates)} must differ in percent (steps {steps})")
    test_size = _check_fraction(test_size, "test_size", allow_one=False)
    if subsample is not None:
        subsample = _check_fraction(subsample, "subsample")
    trials = []
    for rate in rates:
        rate = _check_fraction(rate, "rates")
        for rep in range(repeats):
            rng = _rng(seed, round(rate * 10_000), rep)
            pool = np.arange(n_samples)
            if subsample is not None and subsample < 1:
                pool = np.sort(rng.choice(n_samples, round(subsample * n_samples), replace=False))
            order = rng.permutation(pool)
            n_test = round(test_size * len(order))
            test, train = np.sort(order[:n_test]), np.sort(order[n_test:])
            n_labelled = round(rate * len(train))
            if n_test < 1:
                raise ValueError(f"protocol.test_size={test_size} leaves no test instance "
                                 f"among {len(order)}")
            if n_labelled < 1:
                raise ValueError(
                    f"labelling rate {rate} leaves no labelled training instance "
                    f"({len(train)} training instances of {n_samples}); "
                    "raise protocol.rates or dataset.subsample"
                )
            labelled = np.zeros(len(train), dtype=bool)
            labelled[rng.choice(len(train), n_labelled, replace=False)] = True
            trials.append(Trial(rate, rep, train, test, labelled))
    return trials


def cross_validation_trials(
    n_samples: int,
    folds: int = 10,
    seed: int = 0,
    train_size: int | None = None,
    test_size: float = 0.1,
    repeats: int = 10,
) -> list[Trial]:
    """Fully supervised trials (every training point labelled, ``rate`` = 1): shuffled
    ``folds``-fold cross-validation (paper 004), or, when ``train_size`` is set (paper 004 on
    mediamill and bibtex: 1,800), ``repeats`` random draws of ``train_size`` training and
    ``round(test_size · n)`` disjoint test instances. ``repetition`` numbers the fold or draw.
    """
    trials = []
    if train_size is None:
        if isinstance(folds, bool) or not isinstance(folds, numbers.Integral) or not 2 <= folds <= n_samples:
            raise ValueError(f"protocol.folds={folds!r} must be an integer in [2, {n_samples}]")
        order = _rng(seed, 0).permutation(n_samples)
        for fold, test in enumerate(np.array_split(order, folds)):
            train = np.setdiff1d(order, test)
            trials.append(Trial(1.0, fold, train, np.sort(test), np.ones(len(train), dtype=bool)))
        return trials
    n_test = round(_check_fraction(test_size, "test_size", allow_one=False) * n_samples)
    if isinstance(train_size, bool) or not isinstance(train_size, numbers.Integral) or not (
            1 <= train_size <= n_samples - n_test):
        raise ValueError(f"protocol.train_size={train_size!r} must be an integer in [1, {n_samples - n_test}] "
                         f"({n_samples} instances, {n_test} for testing)")
    if isinstance(repeats, bool) or not isinstance(repeats, numbers.Integral) or repeats < 1:
        raise ValueError(f"protocol.repeats={repeats!r} must be an integer of at least 1")
    for rep in range(repeats):
        order = _rng(seed, 1, rep).permutation(n_samples)
        test, train = np.sort(order[:n_test]), np.sort(order[n_test:n_test + train_size])
        trials.append(Trial(1.0, rep, train, test, np.ones(train_size, dtype=bool)))
    return trials
