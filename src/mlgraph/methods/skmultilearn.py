"""scikit-multilearn-ng's classifiers as mlgraph estimators, to set beside mlgraph's own.

Each class wraps one classifier of `scikit-multilearn-ng <https://pypi.org/project/scikit-multilearn-ng/>`_
(the optional extra ``skmultilearn``: ``pip install 'mlgraph[skmultilearn]'``), imported when
``fit`` first needs it; without the extra ``fit`` raises
:class:`~mlgraph.config.extras.MissingExtra`, one paragraph naming the ``pip install`` command.
Construction imports nothing, so configs and ``clone`` work everywhere.

The wrappers follow scikit-learn's conventions as mlgraph's estimators do
(:class:`~mlgraph.methods.base.MultiLabelClassifierMixin`): ``__init__`` stores parameters,
``fit(X, Y)`` takes the n × q 0/1 label matrix (rows of −1 are unlabelled), ``predict`` gives
0/1 labels (int8, dense) and ``decision_function`` n × q scores for the ranking metrics. What
each library classifier computes is left as it is; the wrapper adds only:

- **Features.** Features constant on the training rows are dropped (they change no distance and
  make SMiLE's and MLTSVM's systems singular once scaled), then ``scale`` applies training
  statistics to training and test rows alike: ``"zscore"`` (mean 0, unit variance), ``"minmax"``
  (each feature into [0, 1], test rows clipped to it) or ``"none"``. MLARAM needs [0, 1]: its
  library code rescales whatever batch it is given by that batch's own global minimum and maximum,
  so that a test row's prediction would depend on the other test rows; ``"minmax"`` (its default)
  makes that rescaling a no-op.
- **Unlabelled rows.** The supervised classifiers (MLkNN, BRkNN, MLARAM, MLTSVM) are fitted on the
  labelled rows. SMiLE is semi-supervised and takes every row: an unlabelled row becomes a row of
  zeros, which is how SMiLE marks a row without labels (so a labelled row with no positive label
  counts as unlabelled for it too, as in the library).
- **Scores.** MLkNN: the posterior P(label | neighbours) of ``predict_proba``; BRkNN: the share of
  the k neighbours that have the label; MLARAM: its ``predict_proba`` ranks; MLTSVM: the margin
  ``threshold − distance`` of the library's decision rule (positive where it predicts the label);
  SMiLE: its real-valued outputs ``Pᵀx + b``, which its rule thresholds at 0.5.

Known behaviour of the library (version 0.0.8) kept as it is: MLTSVM takes the negative rows of
every label from label 1's column (``_get_x_noclass_instances``), so its models of the other
labels are trained against the wrong negatives; and with its own default ``c_k = 0`` every weight
is 0 (the configs set ``c_k``). SMiLE's k-means draws from NumPy's global generator: ``fit``
seeds it from ``random_state`` for the call and restores it afterwards.
"""

from __future__ import annotations

import importlib
import warnings
from contextlib import contextmanager
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from mlgraph.config.extras import require
from mlgraph.methods.base import MultiLabelClassifierMixin, check_params, nonneg, positive, positive_int

EXTRA = "skmultilearn"
SCALES = ("zscore", "minmax", "none")


def _library(module: str):
    """``skmultilearn.<module>``, or :class:`~mlgraph.config.extras.MissingExtra`."""
    require(EXTRA)
    return importlib.import_module(f"skmultilearn.{module}")


def _seed(v) -> bool:
    return v is None or (isinstance(v, Integral) and not isinstance(v, bool) and v >= 0)


@contextmanager
def _quiet():
    """The library's own DeprecationWarnings silenced (it uses NumPy names NumPy deprecated;
    nothing a user of mlgraph can change)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=DeprecationWarning, module="skmultilearn")
        yield


@contextmanager
def _global_numpy_seed(seed):
    """NumPy's global generator seeded with ``seed`` inside the block, its state restored after
    (for library code that draws from it); ``None`` leaves it alone."""
    if seed is None:
        yield
        return
    state = np.random.get_state()
    np.random.seed(seed)
    try:
        yield
    finally:
        np.random.set_state(state)


class _SkmlClassifier(MultiLabelClassifierMixin, BaseEstimator):
    """What the wrappers share: feature selection and scaling, unlabelled rows, dense outputs.
    Subclasses set :attr:`semi_supervised` and implement ``_make`` (the library classifier),
    ``_fit`` and ``_scores``; ``predict`` is the library's own decision."""

    semi_supervised = False
    extra = EXTRA  # the optional extra the benchmark checks before it runs anything
    _rules = {"scale": (lambda v: v in SCALES, " or ".join(SCALES))}

    def _prepare_fit(self, X, Y):
        check_params(self, self._rules)
        X, Y, labelled = self._check_fit_data(X, Y)
        if not self.semi_supervised:
            X, Y = X[labelled], Y[labelled]
        else:
            Y = np.where(labelled[:, None], Y, 0)
        low, high = X.min(axis=0), X.max(axis=0)
        self.features_ = np.flatnonzero(high > low)
        X = X[:, self.features_]
        if self.scale == "zscore":
            self.offset_, self.divisor_ = X.mean(axis=0), X.std(axis=0)
        elif self.scale == "minmax":
            self.offset_, self.divisor_ = low[self.features_], (high - low)[self.features_]
        else:
            self.offset_, self.divisor_ = np.zeros(X.shape[1]), np.ones(X.shape[1])
        # a copy in int64: the library sums labels in Y's dtype, and MLARAM adds to Y's rows in place
        return self._transform(X, clip=False), Y.astype(np.int64)

    def _transform(self, X, clip: bool = True) -> np.ndarray:
        X = (X - self.offset_) / self.divisor_
        return np.clip(X, 0.0, 1.0) if clip and self.scale == "minmax" else X

    def _features(self, X) -> np.ndarray:
        check_is_fitted(self, "estimator_")
        X = self._check_predict_data(X)
        return self._transform(X[:, self.features_])

    def fit(self, X, Y):
        """Fit the library's classifier on the scaled features (labelled rows only, except for
        a semi-supervised classifier)."""
        X, Y = self._prepare_fit(X, Y)
        with _quiet():
            self.estimator_ = self._fit(self._make(), X, Y)
        return self

    def _fit(self, estimator, X, Y):
        estimator.fit(X, Y)
        return estimator

    def predict(self, X) -> np.ndarray:
        """The library's 0/1 decisions as a dense int8 n × q matrix."""
        X = self._features(X)
        with _quiet():
            Y = self.estimator_.predict(X)
        return np.asarray(Y.toarray() if sp.issparse(Y) else Y).astype(np.int8)

    def decision_function(self, X) -> np.ndarray:
        """n × q scores (see the module docstring for what each classifier's are)."""
        X = self._features(X)
        with _quiet():
            scores = self._scores(X)
        return np.asarray(scores.toarray() if sp.issparse(scores) else scores, dtype=np.float64)


class SkmlMLkNN(_SkmlClassifier):
    """scikit-multilearn-ng's ``skmultilearn.adapt.MLkNN`` (Zhang & Zhou 2007).

    Parameters
    ----------
    k : number of neighbours.
    s : smoothing of the prior and posterior counts (1: Laplace).
    ignore_first_neighbours : neighbours skipped at the front of each list (the library counts a
        training row as its own first neighbour in ``fit``; 1 skips it, at prediction too).
    scale : "zscore", "minmax" or "none" (module docstring).
    """

    _rules = {
        **_SkmlClassifier._rules,
        "k": (positive_int, "a positive integer (number of neighbours)"),
        "s": (positive, "a positive number (smoothing)"),
        "ignore_first_neighbours": (
            lambda v: isinstance(v, Integral) and not isinstance(v, bool) and v >= 0,
            "a non-negative integer",
        ),
    }

    def __init__(self, k=10, s=1.0, ignore_first_neighbours=0, scale="zscore"):
        self.k = k
        self.s = s
        self.ignore_first_neighbours = ignore_first_neighbours
        self.scale = scale

    def _make(self):
        return _library("adapt").MLkNN(
            k=self.k, s=self.s, ignore_first_neighbours=self.ignore_first_neighbours
        )

    def _scores(self, X):
        return self.estimator_.predict_proba(X)


class SkmlBRkNN(_SkmlClassifier):
    """scikit-multilearn-ng's ``BRkNNaClassifier`` / ``BRkNNbClassifier`` (Spyromitros,
    Tsoumakas & Vlahavas 2008): binary relevance with a kNN per label sharing one neighbour search.

    Parameters
    ----------
    k : number of neighbours.
    variant : "a" (a label where at least half the neighbours have it) or "b" (the m labels most
        frequent among the neighbours, m their average label count).
    scale : "zscore", "minmax" or "none" (module docstring).
    """

    _rules = {
        **_SkmlClassifier._rules,
        "k": (positive_int, "a positive integer (number of neighbours)"),
        "variant": (lambda v: v in ("a", "b"), "a or b"),
    }

    def __init__(self, k=10, variant="a", scale="zscore"):
        self.k = k
        self.variant = variant
        self.scale = scale

    def _make(self):
        adapt = _library("adapt")
        return (adapt.BRkNNaClassifier if self.variant == "a" else adapt.BRkNNbClassifier)(k=self.k)

    def _scores(self, X):
        self.estimator_.predict(X)  # the library keeps the neighbours' label shares of its last call
        return np.asarray(self.estimator_.confidences_)


class SkmlMLARAM(_SkmlClassifier):
    """scikit-multilearn-ng's ``skmultilearn.adapt.MLARAM`` (Benites & Sapozhnikova 2015,
    hierarchical ARAM network). A fresh network per ``fit`` (the library's instance keeps its
    neurons from one ``fit`` to the next).

    Parameters
    ----------
    vigilance : the ART vigilance ρ in (0, 1]: how alike a row and a neuron must be to share it.
    threshold : the share of the highest activation above which a label is predicted.
    scale : "minmax" (default: the network needs [0, 1]), "zscore" or "none" (module docstring).
    """

    _rules = {
        **_SkmlClassifier._rules,
        "vigilance": (lambda v: positive(v) and v <= 1, "a number in (0, 1]"),
        "threshold": (nonneg, "a number >= 0"),
    }

    def __init__(self, vigilance=0.9, threshold=0.02, scale="minmax"):
        self.vigilance = vigilance
        self.threshold = threshold
        self.scale = scale

    def _make(self):
        return _library("adapt").MLARAM(vigilance=self.vigilance, threshold=self.threshold)

    def _scores(self, X):
        return self.estimator_.predict_proba(X)


class SkmlMLTSVM(_SkmlClassifier):
    """scikit-multilearn-ng's ``skmultilearn.adapt.MLTSVM`` (Chen, Shao, Li & Deng 2016, twin
    multi-label SVM, linear, solved by successive over-relaxation). See the module docstring
    for the library's choice of negative rows.

    Parameters
    ----------
    c_k : the empirical-risk penalty (the box of the dual variables; 0 gives all-zero weights).
    sor_omega : the over-relaxation factor.
    threshold : the stopping tolerance of the over-relaxation.
    lambda_param : the ridge regularisation.
    max_iteration : the most over-relaxation sweeps per label.
    scale : "zscore", "minmax" or "none" (module docstring).
    """

    _rules = {
        **_SkmlClassifier._rules,
        "c_k": (positive, "a positive number (0 makes every weight 0)"),
        "sor_omega": (lambda v: positive(v) and v < 2, "a number in (0, 2)"),
        "threshold": (positive, "a positive number"),
        "lambda_param": (positive, "a positive number"),
        "max_iteration": (positive_int, "a positive integer"),
    }

    def __init__(
        self, c_k=0.125, sor_omega=1.0, threshold=1e-6, lambda_param=1.0, max_iteration=500, scale="zscore"
    ):
        self.c_k = c_k
        self.sor_omega = sor_omega
        self.threshold = threshold
        self.lambda_param = lambda_param
        self.max_iteration = max_iteration
        self.scale = scale

    def _make(self):
        return _library("adapt").MLTSVM(
            c_k=self.c_k,
            sor_omega=self.sor_omega,
            threshold=self.threshold,
            lambda_param=self.lambda_param,
            max_iteration=self.max_iteration,
        )

    def _scores(self, X):
        model = self.estimator_
        bias = np.hstack([X, np.ones((X.shape[0], 1))])
        distances = -(bias @ model.wk_bk.T) / model.wk_norms[np.newaxis, :]
        return model.treshold - distances  # the library predicts where distance < treshold


class SkmlSMiLE(_SkmlClassifier):
    """scikit-multilearn-ng's ``skmultilearn.missing.SMiLE`` (Tan, Yu, Yu & Wang 2017,
    semi-supervised multi-label learning with incomplete labels): a linear model on a k-means
    instance graph with label correlations. Semi-supervised: unlabelled rows take part (module
    docstring). It forms several n × n matrices (n training rows) in Python loops, so it suits
    data sets of a few thousand rows.

    Parameters
    ----------
    s : the smoothing of the label-correlation estimate.
    alpha : the weight of the graph (smoothness) term.
    k : the number of k-means clusters whose members the graph links.
    random_state : seed of the k-means (None: NumPy's global generator as it is).
    scale : "zscore", "minmax" or "none" (module docstring).
    """

    semi_supervised = True
    _rules = {
        **_SkmlClassifier._rules,
        "s": (nonneg, "a number >= 0"),
        "alpha": (lambda v: isinstance(v, Real) and nonneg(v), "a number >= 0"),
        "k": (positive_int, "a positive integer (number of clusters)"),
        "random_state": (_seed, "None or a non-negative integer"),
    }

    def __init__(self, s=0.5, alpha=0.35, k=5, random_state=None, scale="zscore"):
        self.s = s
        self.alpha = alpha
        self.k = k
        self.random_state = random_state
        self.scale = scale

    def _make(self):
        return _library("missing").SMiLE(s=self.s, alpha=self.alpha, k=self.k)

    def _fit(self, estimator, X, Y):
        with _global_numpy_seed(self.random_state):
            estimator.fit(X, Y)
        return estimator

    def _scores(self, X):
        return X @ self.estimator_.P + self.estimator_.b.T

    def predict(self, X) -> np.ndarray:
        """The library's rule, a label where its output exceeds 0.5, on :meth:`decision_function`
        (the library's own ``predict`` fails on NumPy 2: it stores 1-element arrays as scalars)."""
        return (self.decision_function(X) > 0.5).astype(np.int8)
