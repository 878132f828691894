"""Problem-transformation baselines of paper 002 (ML²): BR, CLR, ECC and RAkEL.

Each turns the multi-label problem into ordinary classification problems solved by clones of
one configurable scikit-learn base learner:

- :class:`BinaryRelevance` (BR; Boutell et al. 2004, "Learning multi-label scene
  classification", Pattern Recognition 37(9)): one binary classifier per label.
- :class:`CalibratedLabelRanking` (CLR; Fürnkranz, Hüllermeier, Loza Mencía & Brinker 2008,
  "Multilabel classification via calibrated label ranking", Machine Learning 73(2)): one
  classifier per label pair plus a virtual calibration label; labels are ranked by votes.
- :class:`EnsembleClassifierChains` (ECC; Read, Pfahringer, Holmes & Frank 2011, "Classifier
  chains for multi-label classification", Machine Learning 85(3)): chains of binary
  classifiers, each fed the predictions of the labels before it, averaged over random orders
  and resampled training sets.
- :class:`RAkEL` (RAkEL-o; Tsoumakas, Katakis & Vlahavas 2011, "Random k-labelsets for
  multilabel classification", IEEE TKDE 23(7)): Label Powerset classifiers on random distinct
  k-labelsets, combined by averaging their votes per label.

Paper 002 names these four baselines and fixes only RAkEL's settings (k = 3, 2q models); it
does not name a base learner (experiments of this kind usually run MULAN with LIBSVM or Weka
learners).

Assumptions (defaults and choices not fixed by paper 002):

- Base learner: ``base_estimator=None`` means ``LogisticRegression(C=1.0, solver="lbfgs",
  max_iter=1000)``, L2-regularised. Reasons: it is fast, accepts sparse input, and gives
  probabilities, which ECC averages and the soft voting of CLR and RAkEL use. ``LinearSVC`` gives
  no probabilities. ``SVC(probability=True)`` fits 5 extra cross-validated models for Platt
  scaling per sub-problem, depends on a random seed, and its ``predict`` may disagree with its
  probabilities. ``lbfgs`` is used rather than ``liblinear`` because the installed scikit-learn (1.9)
  refuses ``liblinear`` on the multi-class problems of RAkEL's Label Powerset. Any classifier with
  ``fit``/``predict`` and either ``predict_proba`` or ``decision_function`` can be used instead,
  a ``Pipeline`` included. Clones keep the learner's own ``random_state``.
- Score of a binary sub-model: the probability of class 1 from ``predict_proba``. If there is no
  ``predict_proba``, the logistic sigmoid of ``decision_function`` is used, so that 0.5 still
  sits at the decision boundary. Hard decisions always come from the sub-model's ``predict``.
- Constant targets: a sub-problem whose training target takes one value (a label that is
  constant in the training set or in a bootstrap sample, a one-sided label pair, a labelset
  with a single observed combination) is not fitted. It always predicts that value, with score
  (probability) 1 for it and 0 for any other value.
- Features: ``standardize=True`` (default) z-scores dense features with training statistics
  (constant features become 0, as in :func:`mlgraph.methods.base.standardisation`). Sparse X
  stays sparse and unscaled: centring would make it dense, and dividing by the standard
  deviation would blow up rare bag-of-words terms. The fitted sub-models receive CSR matrices.
- Supervised only: rows of ``Y`` filled with −1 (unlabelled) are dropped before fitting.
- BR: ``decision_function`` gives the per-label probabilities and ``predict`` the base
  learner's decisions.
- CLR: the calibration label's classifiers are the BR classifiers. Label i gets a vote when its
  BR classifier says "relevant", and the virtual label gets one when it says "irrelevant". The
  pairwise classifier (i, j), i < j, is trained on the rows where exactly one of i and j is
  relevant, with target "i is relevant". It votes for i or for j. Default ``voting="hard"``
  counts votes, as in Fürnkranz et al. ``voting="soft"`` splits each vote by probability, p to
  one side and 1 − p to the other. A pair with no such training row casts no vote. Scores
  (``decision_function``) are the vote counts of the labels, between 0 and q. Label i is
  predicted relevant iff its votes exceed the virtual label's votes strictly, so a tie gives
  "irrelevant". With q labels there are q(q−1)/2 pairwise models, e.g. 12 561 for bibtex's
  159 labels and 69 751 for corel5k's 374. Fitting time and memory grow as q².
- ECC: ``n_chains=10`` chains. Each has its own random label order and its own training sample:
  ``bootstrap=True`` draws ``max_samples·n`` rows with replacement, the ``max_samples=1.0``
  default being the bagging of Read et al. and MULAN's default. ``bootstrap=False`` draws that
  many rows without replacement, or takes every row when ``max_samples=1.0``. The orders and
  samples come from ``random_state``. Chains are trained on the true values of the earlier
  labels and fed their predicted 0/1 values at prediction time, as scikit-learn's
  ``ClassifierChain`` does. Scores are the per-label probabilities averaged over chains. Label j
  is predicted where the average is ≥ ``threshold=0.5``, as MULAN does with confidences.
- RAkEL: ``k=3`` and ``m=None`` for 2q models. If k > q, k is set to q, which gives one Label
  Powerset. If m exceeds C(q, k), m is set to C(q, k). The labelsets are m distinct k-subsets
  drawn uniformly from ``random_state``. Coverage of every label is not guaranteed, just as in
  the original. An uncovered label, which is rare for m = 2q (about q·e^{−2k} of them for large
  q), gets score 0 and is never predicted. Each model is a multi-class classifier on the label
  combinations of its k labels observed in training. ``voting="hard"`` (default, the original)
  scores label j by the fraction of the models containing j whose predicted combination contains
  j. ``voting="soft"`` averages the marginal probabilities P(j ∈ combination) instead, and needs
  ``predict_proba``. Label j is predicted where the average is > ``threshold=0.5`` (strictly,
  "more than half" as in Tsoumakas et al.). The ranking scores (``decision_function``) are
  chosen apart from the decisions by ``scores``: ``"marginals"`` (default) averages the
  marginal probabilities, as MULAN's RAkEL averages its Label Powerset confidences, which is how
  paper 002's ranking metrics were presumably obtained; ``"votes"`` uses the vote shares, which
  take only k·(models)+1 values and tie most labels at 0, so that ranking loss and one-error
  degrade to near chance (on cal500, one-error 0.985 with votes).
- Loops run over sub-models only (fitting and predicting them is inherent). Voting and averaging
  are matrix operations over all samples at once.
"""

from __future__ import annotations

import itertools
import math
from numbers import Integral

import numpy as np
import scipy.sparse as sp
from scipy.special import expit
from sklearn.base import BaseEstimator, clone
from sklearn.linear_model import LogisticRegression
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from mlgraph.methods.base import (
    MultiLabelClassifierMixin,
    ScoreThresholdMixin,
    check_params,
    in_open_unit,
    positive_int,
    standardisation,
)

__all__ = [
    "BinaryRelevance",
    "CalibratedLabelRanking",
    "EnsembleClassifierChains",
    "RAkEL",
    "default_base_estimator",
]

# Bound on the (samples × pairwise models) block of votes that CLR holds at once (float64).
_BLOCK_ELEMENTS = 1 << 22
# Up to this many k-subsets, RAkEL enumerates them all and samples without replacement.
_ENUMERATE_LIMIT = 200_000


def default_base_estimator() -> LogisticRegression:
    """The default base learner: L2 logistic regression, C = 1, lbfgs, 1000 iterations."""
    return LogisticRegression(C=1.0, solver="lbfgs", max_iter=1000)


def _valid_base(v) -> bool:
    return v is None or (
        hasattr(v, "fit")
        and hasattr(v, "predict")
        and (hasattr(v, "predict_proba") or hasattr(v, "decision_function"))
    )


def _valid_seed(v) -> bool:
    return (
        v is None
        or isinstance(v, np.random.RandomState)
        or (isinstance(v, Integral) and not isinstance(v, bool) and v >= 0)
    )


def _in_unit_closed(v) -> bool:
    return in_open_unit(v) or (v == 1 and not isinstance(v, bool))


class _Constant:
    """Stand-in for a sub-model whose training target took a single value."""

    def __init__(self, value):
        self.classes_ = np.array([value])

    def predict(self, X):
        return np.full(X.shape[0], self.classes_[0])

    def predict_proba(self, X):
        return np.ones((X.shape[0], 1))


def _fit_one(estimator, X, y):
    """A clone of ``estimator`` fitted on (X, y), or a :class:`_Constant` when y is constant."""
    values = np.unique(y)
    if values.size == 1:
        return _Constant(values[0])
    return clone(estimator).fit(X, y)


def _positive_score(model, X) -> np.ndarray:
    """Score of class 1: its probability, or the sigmoid of ``decision_function`` as a fallback."""
    if hasattr(model, "predict_proba"):
        classes = list(model.classes_)
        if 1 not in classes:
            return np.zeros(X.shape[0])
        return np.asarray(model.predict_proba(X), dtype=np.float64)[:, classes.index(1)]
    return expit(np.asarray(model.decision_function(X), dtype=np.float64).ravel())


def _hard(model, X) -> np.ndarray:
    return np.asarray(model.predict(X)).ravel()


class _Transformation(MultiLabelClassifierMixin, BaseEstimator):
    """Shared input handling: validation, optional standardisation, labelled rows only."""

    _rules = {
        "base_estimator": (
            _valid_base,
            "None (logistic regression) or a classifier with fit, "
            "predict and predict_proba or decision_function",
        ),
        "standardize": (lambda v: isinstance(v, bool), "True or False"),
    }

    def _base(self):
        return default_base_estimator() if self.base_estimator is None else self.base_estimator

    def _validate_fit(self, X, Y):
        check_params(self, self._rules)
        X, Y, labelled = self._check_fit_data(X, Y, densify=False)
        X, Y = X[labelled], Y[labelled]
        self.n_labels_ = Y.shape[1]
        if self.standardize and not sp.issparse(X):
            self.mean_, self.scale_ = standardisation(X)
        else:
            self.mean_ = self.scale_ = None
        return self._transform(X), Y

    def _transform(self, X):
        if self.mean_ is None:
            return X
        if sp.issparse(X):
            X = X.toarray()
        return (X - self.mean_) / self.scale_

    def _validate_predict(self, X, attribute: str):
        check_is_fitted(self, attribute)
        return self._transform(self._check_predict_data(X, densify=False))


class BinaryRelevance(_Transformation):
    """BR: one clone of ``base_estimator`` per label (Boutell et al. 2004).

    ``decision_function`` gives the per-label probability of relevance (a sigmoid of the
    decision value for learners without ``predict_proba``). ``predict`` gives the learners'
    own decisions. A label constant in training is always predicted as that value, with score
    0 or 1.
    """

    def __init__(self, base_estimator=None, standardize=True):
        self.base_estimator = base_estimator
        self.standardize = standardize

    def fit(self, X, Y):
        """Fit one binary model per label on the labelled rows (rows of −1 are dropped)."""
        X, Y = self._validate_fit(X, Y)
        base = self._base()
        self.estimators_ = [_fit_one(base, X, Y[:, j]) for j in range(Y.shape[1])]
        return self

    def decision_function(self, X) -> np.ndarray:
        """Per-label probability of relevance, shape (n, q)."""
        X = self._validate_predict(X, "estimators_")
        return np.column_stack([_positive_score(m, X) for m in self.estimators_])

    def predict(self, X) -> np.ndarray:
        """Binary label matrix (int8): each label's base-learner decision."""
        X = self._validate_predict(X, "estimators_")
        return np.column_stack([_hard(m, X) for m in self.estimators_]).astype(np.int8)


class CalibratedLabelRanking(_Transformation):
    """CLR: pairwise comparison plus a virtual calibration label (Fürnkranz et al. 2008).

    Pair (i, j), i < j, is learnt from the rows where exactly one of the two labels is relevant
    (target: i is relevant). Label i versus the virtual label is the BR classifier of i. For
    each instance, every classifier gives one vote to the label it prefers (``voting="hard"``),
    or splits it by probability (``voting="soft"``). Pairs with no training row do not vote.
    ``decision_function`` gives the label votes. ``predict`` marks label i relevant when its
    votes exceed the virtual label's votes strictly.

    Warning: this fits q(q−1)/2 + q models and stores all of them, which is slow and
    memory-hungry for large q: 12 561 models for q = 159 (bibtex) and 69 751 for q = 374
    (corel5k).
    """

    _rules = {
        **_Transformation._rules,
        "voting": (lambda v: v in ("hard", "soft"), "'hard' (vote counts) or 'soft' (probabilities)"),
    }

    def __init__(self, base_estimator=None, voting="hard", standardize=True):
        self.base_estimator = base_estimator
        self.voting = voting
        self.standardize = standardize

    def fit(self, X, Y):
        """Fit the q calibration (BR) models and the q(q−1)/2 pairwise models."""
        X, Y = self._validate_fit(X, Y)
        base, q = self._base(), Y.shape[1]
        self.label_estimators_ = [_fit_one(base, X, Y[:, j]) for j in range(q)]
        pairs, models = [], []
        for i, j in itertools.combinations(range(q), 2):
            rows = np.flatnonzero(Y[:, i] != Y[:, j])
            if rows.size == 0:
                continue  # no evidence about this pair: it does not vote
            pairs.append((i, j))
            models.append(_fit_one(base, X[rows], Y[rows, i]))
        self.pairs_ = np.array(pairs, dtype=np.intp).reshape(-1, 2)
        self.pair_estimators_ = models
        return self

    def _preference(self, model, X) -> np.ndarray:
        """Share of the vote going to the first label (to the label, for calibration models)."""
        if self.voting == "soft":
            return _positive_score(model, X)
        return (_hard(model, X) == 1).astype(np.float64)

    def vote_counts(self, X) -> tuple[np.ndarray, np.ndarray]:
        """(votes of the labels, shape (n, q); votes of the virtual label, shape (n,))."""
        X = self._validate_predict(X, "pair_estimators_")
        n, q = X.shape[0], self.n_labels_
        calib = np.column_stack([self._preference(m, X) for m in self.label_estimators_])
        votes = calib.copy()
        virtual = (1.0 - calib).sum(axis=1)
        block = max(1, _BLOCK_ELEMENTS // max(n, 1))
        for start in range(0, len(self.pair_estimators_), block):
            stop = min(start + block, len(self.pair_estimators_))
            P = np.column_stack([self._preference(m, X) for m in self.pair_estimators_[start:stop]])
            first, second = self.pairs_[start:stop, 0], self.pairs_[start:stop, 1]
            cols = np.arange(stop - start)
            to_first = sp.csr_matrix((np.ones(cols.size), (cols, first)), shape=(cols.size, q))
            to_second = sp.csr_matrix((np.ones(cols.size), (cols, second)), shape=(cols.size, q))
            votes += np.asarray((to_first.T @ P.T).T) + np.asarray((to_second.T @ (1.0 - P).T).T)
        return votes, virtual

    def decision_function(self, X) -> np.ndarray:
        """Votes of each label (pairwise plus calibration), shape (n, q)."""
        return self.vote_counts(X)[0]

    def predict(self, X) -> np.ndarray:
        """Binary label matrix (int8): labels with more votes than the virtual label."""
        votes, virtual = self.vote_counts(X)
        return (votes > virtual[:, None]).astype(np.int8)


class EnsembleClassifierChains(ScoreThresholdMixin, _Transformation):
    """ECC: ``n_chains`` classifier chains on resampled data and random label orders (Read et al.
    2011).

    Chain c is fitted on rows ``samples_[c]``. It learns label ``orders_[c][t]`` from the
    features plus the true values of labels ``orders_[c][:t]``. At prediction time it is fed
    the predicted 0/1 values of those labels instead. ``decision_function`` averages the
    chains' per-label probabilities. ``predict`` marks labels whose average is ≥ ``threshold``.
    """

    _rules = {
        **_Transformation._rules,
        "n_chains": (positive_int, "a positive integer"),
        "bootstrap": (lambda v: isinstance(v, bool), "True or False"),
        "max_samples": (_in_unit_closed, "a fraction in (0, 1] of the training rows per chain"),
        "threshold": (in_open_unit, "in (0, 1)"),
        "random_state": (_valid_seed, "None, a non-negative integer or a numpy RandomState"),
    }

    def __init__(
        self,
        base_estimator=None,
        n_chains=10,
        bootstrap=True,
        max_samples=1.0,
        threshold=0.5,
        random_state=0,
        standardize=True,
    ):
        self.base_estimator = base_estimator
        self.n_chains = n_chains
        self.bootstrap = bootstrap
        self.max_samples = max_samples
        self.threshold = threshold
        self.random_state = random_state
        self.standardize = standardize

    def fit(self, X, Y):
        """Draw each chain's label order and training rows, then fit its q binary models."""
        X, Y = self._validate_fit(X, Y)
        base, (n, q) = self._base(), Y.shape
        rng = check_random_state(self.random_state)
        size = max(1, int(round(self.max_samples * n)))
        self.orders_, self.samples_, self.chains_ = [], [], []
        for _ in range(self.n_chains):
            order = rng.permutation(q)
            if self.bootstrap:
                rows = rng.randint(0, n, size)
            elif size < n:
                rows = np.sort(rng.choice(n, size, replace=False))
            else:
                rows = np.arange(n)
            Xc, Yc = X[rows], Y[rows][:, order]  # Yc: targets in chain order
            Yf = Yc.astype(np.float64)  # the same values as extra features
            Xaug = (
                sp.hstack([Xc, sp.csr_matrix(Yf)], format="csr") if sp.issparse(Xc) else np.hstack([Xc, Yf])
            )
            d = Xc.shape[1]
            self.chains_.append([_fit_one(base, Xaug[:, : d + t], Yc[:, t]) for t in range(q)])
            self.orders_.append(order)
            self.samples_.append(rows)
        return self

    def chain_scores(self, X) -> np.ndarray:
        """Per-chain label probabilities in the original label order, shape (n_chains, n, q)."""
        X = self._validate_predict(X, "chains_")
        n, q, d = X.shape[0], self.n_labels_, X.shape[1]
        out = np.empty((len(self.chains_), n, q))
        for c, (order, models) in enumerate(zip(self.orders_, self.chains_, strict=True)):
            if sp.issparse(X):
                previous = np.zeros((n, q))
                for t, model in enumerate(models):
                    Xt = sp.hstack([X, sp.csr_matrix(previous[:, :t])], format="csr")
                    out[c, :, order[t]] = _positive_score(model, Xt)
                    previous[:, t] = _hard(model, Xt)
            else:
                Xaug = np.hstack([X, np.zeros((n, q))])
                for t, model in enumerate(models):
                    Xt = Xaug[:, : d + t]
                    out[c, :, order[t]] = _positive_score(model, Xt)
                    Xaug[:, d + t] = _hard(model, Xt)
        return out

    def decision_function(self, X) -> np.ndarray:
        """Per-label probability averaged over the chains, shape (n, q)."""
        return self.chain_scores(X).mean(axis=0)

    def predict_from_scores(self, scores) -> np.ndarray:
        """Binary label matrix (int8): average probability ≥ ``threshold``."""
        return (np.asarray(scores) >= self.threshold).astype(np.int8)


class RAkEL(_Transformation):
    """RAkEL-o: Label Powerset models on ``m`` random distinct k-labelsets (Tsoumakas et al.
    2011).

    ``labelsets_`` (m × k, each row sorted) holds the labelsets. Model r is a multi-class
    classifier whose classes are the observed 0/1 combinations of labels ``labelsets_[r]``,
    coded as integers with bit b for label ``labelsets_[r, b]``. A label's score is the average
    over the models containing it of their vote (``voting="hard"``) or of their marginal
    probability (``voting="soft"``). Labels scoring more than ``threshold`` are predicted.
    ``coverage_[j]`` counts the models containing label j. Uncovered labels score 0.
    """

    _rules = {
        **_Transformation._rules,
        "k": (positive_int, "a positive integer (labelset size)"),
        "m": (lambda v: v is None or positive_int(v), "None (2q models) or a positive integer"),
        "voting": (lambda v: v in ("hard", "soft"), "'hard' (votes) or 'soft' (probabilities)"),
        "scores": (lambda v: v in ("marginals", "votes"), "'marginals' or 'votes'"),
        "threshold": (in_open_unit, "in (0, 1)"),
        "random_state": (_valid_seed, "None, a non-negative integer or a numpy RandomState"),
    }

    def __init__(
        self,
        base_estimator=None,
        k=3,
        m=None,
        voting="hard",
        scores="marginals",
        threshold=0.5,
        random_state=0,
        standardize=True,
    ):
        self.base_estimator = base_estimator
        self.k = k
        self.m = m
        self.voting = voting
        self.scores = scores
        self.threshold = threshold
        self.random_state = random_state
        self.standardize = standardize

    @staticmethod
    def _draw_labelsets(q: int, k: int, m: int, rng: np.random.RandomState) -> np.ndarray:
        """m distinct k-subsets of range(q), uniformly at random, each sorted."""
        total = math.comb(q, k)
        if total <= _ENUMERATE_LIMIT:
            chosen = np.sort(rng.choice(total, m, replace=False))
            subsets = itertools.combinations(range(q), k)
            picked, want = [], iter(chosen)
            target = next(want)
            for index, subset in enumerate(subsets):
                if index == target:
                    picked.append(subset)
                    target = next(want, None)
                    if target is None:
                        break
            return np.array(picked, dtype=np.intp)
        seen, picked = set(), []
        while len(picked) < m:  # m ≪ C(q, k) here, so rejections are rare
            subset = tuple(sorted(rng.choice(q, k, replace=False).tolist()))
            if subset not in seen:
                seen.add(subset)
                picked.append(subset)
        return np.array(picked, dtype=np.intp)

    def fit(self, X, Y):
        """Draw the labelsets and fit one Label Powerset model on each."""
        X, Y = self._validate_fit(X, Y)
        base, q = self._base(), Y.shape[1]
        needs_proba = self.voting == "soft" or self.scores == "marginals"
        if needs_proba and not hasattr(base, "predict_proba"):
            raise ValueError(
                "RAkEL: parameters voting='soft' and scores='marginals' need a base_estimator "
                "with predict_proba (set scores='votes' for this base learner)"
            )
        self.k_ = min(self.k, q)
        self.m_ = min(2 * q if self.m is None else self.m, math.comb(q, self.k_))
        rng = check_random_state(self.random_state)
        self.labelsets_ = self._draw_labelsets(q, self.k_, self.m_, rng)
        weights = 1 << np.arange(self.k_)
        self.estimators_ = [_fit_one(base, X, Y[:, ls].astype(np.int64) @ weights) for ls in self.labelsets_]
        self.coverage_ = np.bincount(self.labelsets_.ravel(), minlength=q)
        return self

    def _bits(self, codes) -> np.ndarray:
        """0/1 matrix (len(codes), k): bit b of each code."""
        return (np.asarray(codes, dtype=np.int64)[:, None] >> np.arange(self.k_)) & 1

    def _model_votes(self, model, X, soft: bool) -> np.ndarray:
        if soft:
            return np.asarray(model.predict_proba(X), dtype=np.float64) @ self._bits(model.classes_)
        return self._bits(_hard(model, X)).astype(np.float64)

    def _average(self, X, soft: bool) -> np.ndarray:
        """Per label, the mean over the models containing it of their vote or marginal."""
        X = self._validate_predict(X, "estimators_")
        n, q = X.shape[0], self.n_labels_
        V = np.empty((n, self.m_ * self.k_))  # column r·k + b: model r's output for its bit b
        for r, model in enumerate(self.estimators_):
            V[:, r * self.k_ : (r + 1) * self.k_] = self._model_votes(model, X, soft)
        S = sp.csr_matrix(
            (np.ones(V.shape[1]), (np.arange(V.shape[1]), self.labelsets_.ravel())), shape=(V.shape[1], q)
        )
        sums = np.asarray((S.T @ V.T).T)
        return np.divide(sums, self.coverage_, out=np.zeros((n, q)), where=self.coverage_ > 0)

    def decision_function(self, X) -> np.ndarray:
        """Ranking scores: mean marginal probability (``scores="marginals"``) or vote share."""
        return self._average(X, soft=self.scores == "marginals")

    def predict(self, X) -> np.ndarray:
        """Binary label matrix (int8): mean vote (or marginal, ``voting="soft"``) > ``threshold``."""
        return (self._average(X, soft=self.voting == "soft") > self.threshold).astype(np.int8)
