"""Evaluation protocols: how one dataset is cut into trials.

Every trial is reproducible from ``(seed, protocol, rate, repetition)`` alone: its random
generator is seeded with :class:`numpy.random.SeedSequence` on those integers, so two methods
run with the same seed see exactly the same splits (paired comparisons, Friedman tests), and a
trial can be re-run on its own.

Three kinds: :func:`labelling_rate_trials` (paper 000's holdout, and paper 002's halves),
:func:`cross_validation_trials` (papers 001 and 004) and :func:`fixed_split_trials` (the published
train/test files, evaluated as they are). The first two can stratify their splits
(``stratify="iterative"``: Sechidis, Tsoumakas & Vlahavas 2011, through ``iterative-stratification``);
the default ``"none"`` draws them uniformly, as before. A protocol function takes ``n_samples`` and
``seed`` and, where its signature names them, the label matrix ``Y`` and the split boundary
``n_train``; :func:`protocol_inputs` builds those arguments from a dataset.
"""

from __future__ import annotations

import inspect
import numbers
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from hydra.utils import get_method
from iterstrat.ml_stratifiers import MultilabelStratifiedKFold, MultilabelStratifiedShuffleSplit

STRATIFY = ("none", "iterative")


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


def _random_state(seed: int, *keys: int) -> np.random.RandomState:
    """A legacy RandomState (what iterative-stratification takes) seeded like :func:`_rng`."""
    return np.random.RandomState(np.random.MT19937(np.random.SeedSequence([int(seed), *map(int, keys)])))


def _check_repeats(repeats) -> int:
    if isinstance(repeats, bool) or not isinstance(repeats, numbers.Integral) or repeats < 1:
        raise ValueError(f"protocol.repeats={repeats!r} must be an integer of at least 1")
    return int(repeats)


def _check_rates(rates) -> list[float]:
    if isinstance(rates, (str, bytes)) or not isinstance(rates, Sequence) or not len(rates):
        raise ValueError(f"protocol.rates={rates!r} must be a non-empty list of fractions in (0, 1]")
    rates = [_check_fraction(rate, "rates") for rate in rates]
    steps = [rate_step(rate) for rate in rates]
    if len(set(steps)) != len(steps):
        raise ValueError(f"protocol.rates={list(rates)} must differ in percent (steps {steps})")
    return rates


def _check_fraction(value: float, name: str, *, allow_one: bool = True) -> float:
    value = float(value)
    upper_ok = value <= 1 if allow_one else value < 1
    if not (0 < value and upper_ok):
        bound = "(0, 1]" if allow_one else "(0, 1)"
        raise ValueError(f"protocol parameter {name}={value} must lie in {bound}")
    return value


def stratification_matrix(Y, n_samples: int) -> np.ndarray:
    """The n × c boolean matrix iterative stratification balances: ``Y`` itself when it is 0/1
    (multi-label data), else each column one-hot over its values (dual-set data: one class index
    per set). A single column is paired with its complement (the library needs two)."""
    Y = Y.toarray() if sp.issparse(Y) else np.asarray(Y)
    Y = Y.reshape(len(Y), -1)
    if Y.shape[0] != n_samples:
        raise ValueError(f"protocol: Y has {Y.shape[0]} rows but the dataset has {n_samples} instances")
    if np.isin(Y, (0, 1)).all():
        indicator = Y.astype(bool)
    else:
        indicator = np.hstack([column[:, None] == np.unique(column)[None, :] for column in Y.T])
    return np.hstack([indicator, ~indicator]) if indicator.shape[1] == 1 else indicator


def _stratification(stratify: str, Y, n_samples: int) -> np.ndarray | None:
    """None for ``stratify="none"``; the matrix to balance for ``"iterative"``."""
    if stratify not in STRATIFY:
        raise ValueError(f"protocol.stratify={stratify!r} must be one of {STRATIFY}")
    if stratify == "none":
        return None
    if Y is None:
        raise ValueError("protocol.stratify=iterative needs the label matrix: call the protocol with Y=...")
    return stratification_matrix(Y, n_samples)


def _stratified_pick(
    indicator: np.ndarray, pool: np.ndarray, size: int, random_state: np.random.RandomState
) -> tuple[np.ndarray, np.ndarray]:
    """(picked, rest), both sorted: about ``size`` rows of ``pool`` chosen by iterative
    stratification so that every column of ``indicator`` keeps its share in both parts (the
    sizes can differ from the requested ones by a few rows: the algorithm trades size for balance)."""
    if size >= len(pool):
        return np.sort(pool), np.empty(0, dtype=pool.dtype)
    splitter = MultilabelStratifiedShuffleSplit(n_splits=1, test_size=size, random_state=random_state)
    rest, picked = next(splitter.split(np.zeros(len(pool)), indicator[pool]))
    return np.sort(pool[picked]), np.sort(pool[rest])


def labelling_rate_trials(
    n_samples: int,
    rates: Sequence[float],
    repeats: int,
    seed: int = 0,
    test_size: float = 1 / 3,
    subsample: float | None = None,
    stratify: str = "none",
    Y=None,
) -> list[Trial]:
    """The semi-supervised holdout of paper 000 ("Experiment setup").

    For every labelling rate η and repetition: optionally draw a fraction ``subsample`` of the
    instances (paper 000 uses 10% of mediamill, redrawn per repetition), hold out
    ``test_size`` of them as out-of-sample test data (1/3 in the paper), and keep the labels of
    ``round(η · n_train)`` randomly chosen training instances; the rest of the training set is
    unlabelled. As in the paper, every (rate, repetition) resamples all three parts.

    ``stratify="iterative"`` draws the test part by iterative stratification of ``Y`` (every
    label keeps its share in train and test; sizes may differ from ``test_size`` by a few rows);
    the subsample and the labelled rows stay uniform draws.
    """
    repeats = _check_repeats(repeats)
    rates = _check_rates(rates)
    test_size = _check_fraction(test_size, "test_size", allow_one=False)
    if subsample is not None:
        subsample = _check_fraction(subsample, "subsample")
    strata = _stratification(stratify, Y, n_samples)
    trials = []
    for rate in rates:
        for rep in range(repeats):
            rng = _rng(seed, round(rate * 10_000), rep)
            pool = np.arange(n_samples)
            if subsample is not None and subsample < 1:
                pool = np.sort(rng.choice(n_samples, round(subsample * n_samples), replace=False))
            order = rng.permutation(pool)
            n_test = round(test_size * len(order))
            if n_test < 1:
                raise ValueError(f"protocol.test_size={test_size} leaves no test instance among {len(order)}")
            if strata is None:
                test, train = np.sort(order[:n_test]), np.sort(order[n_test:])
            else:
                test, train = _stratified_pick(
                    strata, pool, n_test, _random_state(seed, round(rate * 10_000), rep)
                )
            n_labelled = round(rate * len(train))
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
    stratify: str = "none",
    Y=None,
) -> list[Trial]:
    """Fully supervised trials (every training point labelled, ``rate`` = 1): shuffled
    ``folds``-fold cross-validation (paper 004), or, when ``train_size`` is set (paper 004 on
    mediamill and bibtex: 1,800), ``repeats`` random draws of ``train_size`` training and
    ``round(test_size · n)`` disjoint test instances. ``repetition`` numbers the fold or draw.

    ``stratify="iterative"`` makes the folds (or the test part, then the training part out of the
    rest) by iterative stratification of ``Y`` (``MultilabelStratifiedKFold`` and
    ``MultilabelStratifiedShuffleSplit``, shuffled with the seed): every label keeps its share in
    every part; fold and draw sizes may differ by a few rows from the unstratified ones.
    """
    strata = _stratification(stratify, Y, n_samples)
    trials = []
    if train_size is None:
        if isinstance(folds, bool) or not isinstance(folds, numbers.Integral) or not 2 <= folds <= n_samples:
            raise ValueError(f"protocol.folds={folds!r} must be an integer in [2, {n_samples}]")
        order = _rng(seed, 0).permutation(n_samples)
        if strata is None:
            parts = np.array_split(order, folds)
        else:
            splitter = MultilabelStratifiedKFold(
                n_splits=folds, shuffle=True, random_state=_random_state(seed, 0)
            )
            parts = [test for _, test in splitter.split(np.zeros(n_samples), strata)]
        for fold, test in enumerate(parts):
            if len(test) == 0:
                raise ValueError(
                    f"protocol.stratify=iterative left fold {fold} of {folds} empty "
                    f"({n_samples} instances); use fewer folds"
                )
            train = np.setdiff1d(order, test)
            trials.append(Trial(1.0, fold, train, np.sort(test), np.ones(len(train), dtype=bool)))
        return trials
    n_test = round(_check_fraction(test_size, "test_size", allow_one=False) * n_samples)
    if (
        isinstance(train_size, bool)
        or not isinstance(train_size, numbers.Integral)
        or not (1 <= train_size <= n_samples - n_test)
    ):
        raise ValueError(
            f"protocol.train_size={train_size!r} must be an integer in [1, {n_samples - n_test}] "
            f"({n_samples} instances, {n_test} for testing)"
        )
    for rep in range(_check_repeats(repeats)):
        if strata is None:
            order = _rng(seed, 1, rep).permutation(n_samples)
            test, train = np.sort(order[:n_test]), np.sort(order[n_test : n_test + train_size])
        else:
            random_state = _random_state(seed, 1, rep)
            test, rest = _stratified_pick(strata, np.arange(n_samples), n_test, random_state)
            train, _ = _stratified_pick(strata, rest, train_size, random_state)
        trials.append(Trial(1.0, rep, train, test, np.ones(len(train), dtype=bool)))
    return trials


def fixed_split_trials(
    n_samples: int,
    n_train: int | None = None,
    rates: Sequence[float] = (1.0,),
    repeats: int = 1,
    seed: int = 0,
) -> list[Trial]:
    """The published train/test split (MULAN's ``<name>-train`` / ``<name>-test`` files) as it is:
    rows ``[0, n_train)`` train and ``[n_train, n_samples)`` test in every trial (the dataset is
    the training file followed by the test file, see :mod:`mlgraph.data.splits`).

    Labelling rates apply to the training part only: at a rate η < 1 each repetition keeps the
    labels of ``round(η · n_train)`` training rows drawn from ``(seed, η, repetition)``, as in
    :func:`labelling_rate_trials`, while the test part never changes. At η = 1 every training row
    is labelled and there is one trial whatever ``repeats`` (its repetitions would be identical).
    """
    if n_train is None:
        raise ValueError(
            "protocol=fixed evaluates a dataset's published train/test split: the dataset "
            "config must name its test file (dataset.test_arff=..., and dataset.train_arff=... "
            "or dataset.arff=... for the training file); dual-set data have no such split"
        )
    if isinstance(n_train, bool) or not isinstance(n_train, numbers.Integral) or not 1 <= n_train < n_samples:
        raise ValueError(
            f"protocol=fixed: n_train={n_train!r} must be an integer in [1, {n_samples - 1}] "
            f"({n_samples} instances, the test file's rows last)"
        )
    repeats = _check_repeats(repeats)
    train, test = np.arange(n_train), np.arange(n_train, n_samples)
    trials = []
    for rate in _check_rates(rates):
        n_labelled = round(rate * n_train)
        if n_labelled < 1:
            raise ValueError(
                f"labelling rate {rate} leaves no labelled training instance "
                f"({n_train} training instances); raise protocol.rates"
            )
        for rep in range(1 if n_labelled == n_train else repeats):
            labelled = np.zeros(n_train, dtype=bool)
            labelled[_rng(seed, round(rate * 10_000), rep).choice(n_train, n_labelled, replace=False)] = True
            trials.append(Trial(rate, rep, train, test, labelled))
    return trials


def protocol_function(protocol: Mapping | Callable) -> Callable:
    """The function a protocol config (``_target_``) names, or the function itself."""
    return get_method(protocol["_target_"]) if isinstance(protocol, Mapping) else protocol


def uses_fixed_split(protocol: Mapping | Callable) -> bool:
    """Whether the protocol evaluates a published split (its function takes ``n_train``): the
    dataset is then loaded from its training and test files."""
    return "n_train" in inspect.signature(protocol_function(protocol)).parameters


def protocol_inputs(protocol: Mapping | Callable, data) -> dict:
    """The data-dependent arguments of a protocol call: ``n_samples``, and ``Y`` (the dataset's
    label matrix; class indices for dual-set data) and ``n_train`` (the training file's row count
    of a published split) where the protocol function's signature names them."""
    names = inspect.signature(protocol_function(protocol)).parameters
    available = {"Y": lambda: data.Y, "n_train": lambda: getattr(data, "n_train", None)}
    return {"n_samples": data.n_samples, **{k: get() for k, get in available.items() if k in names}}
