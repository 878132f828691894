r"""Dual-set multi-label learning (paper 001): DSML (Algorithm 1) and the compared methods.

Every instance has exactly one label from set a (L_a classes) and one from set b (L_b classes).
All estimators here share one convention: ``fit(X, Y)`` with ``Y`` the n × 2 array of class
labels (column 0: set a, column 1: set b; any hashable values, e.g. the class indices of
:class:`mlgraph.data.dual_set.DualSetDataset`, whose ``Y`` property is this array);
``predict(X)`` returns the n × 2 array of predicted labels; ``score(X, Y)`` is Accuracy-all of
Definition 4 (:func:`mlgraph.evaluation.metrics.dual_set_accuracy` gives all three accuracies).

DSML (Algorithm 1)
------------------
Two distributions w^a, w^b over the m training instances start uniform (line 1).  Round t:

* lines 3–4: draw m indices from w^a, then m from w^b, with replacement, from one
  ``numpy.random.Generator`` seeded by ``random_state`` (``resample=False`` instead passes the
  weights to the base learner as ``sample_weight``);
* Eq. 1–3, model reuse: with b the *raw set* (the set with fewer classes, as in the paper;
  ``raw_set`` overrides),
  h^raw ← A(X_s^b, y_s^b);  h^a ← A([X_s^a, Ŷ^b], y_s^a) with Ŷ^b = h^raw(X_s^a);
  h^b ← A([X_s^b, Ŷ^a], y_s^b) with Ŷ^a = h^a([X_s^b, h^raw(X_s^b)]).
  Ŷ is the 0/1 one-hot matrix of the predicted labels (the paper), or with ``reuse="scores"``
  the base learner's ``decision_function`` columns;
* Eq. 4–5: ε^j = Σ_i w^j_i · I[ŷ^j_i ≠ y^j_i], the error under the current distribution, with
  ŷ^a_i = h^a([x_i, h^raw(x_i)]) and ŷ^b_i = h^b([x_i, Ŷ^a(x_i)]) on all m training instances (the
  prediction chain of Eq. 10–11);
* line 7: stop if ε^a > (L_a − 1)/L_a or ε^b > (L_b − 1)/L_b (the round is discarded);
* Eq. 6–7: α^j = (1/L_j) [log((1 − ε^j)/ε^j) + log(L_j − 1)]  (``learning_rate="1/L"``; a number
  replaces the 1/L factor, 1.0 gives the SAMME weights of Zhu et al. 2006);
* Eq. 8–9 and line 12: w^a_i ← w^a_i · exp(α^a I[ŷ^a_i ≠ y^a_i]) · B^{I[ŷ^b_i ≠ y^b_i]} and
  symmetrically for w^b, then each is normalised to sum 1.
* Eq. 10–11: f^a(x) = argmax_l Σ_t α^a_t I[h^a_t([x, h^raw_t(x)]) = l] and
  f^b(x) = argmax_l Σ_t α^b_t I[h^b_t([x, h^a_t([x, h^raw_t(x)])]) = l].

Typos fixed, with their evident intent:
- Eq. 8/9 print ``exp(α·I[…]) (B·I[…])``, which zeroes the weight of every instance that set b
  gets right; the text ("B ≥ 1 … to increase the weight of an instance … misclassified on the
  other label set") means the factor ``B^{I[…]}``.
- Eq. 4/5 print an unweighted count over the resample; the stop rule ε > (L − 1)/L and Eq. 6/7
  need a rate in [0, 1], the boosting error under the current distribution (SAMME).
- Eq. 3's text feeds ``[X_s^b, Y_s^b]`` (true labels) to h^a, which was trained on predicted
  labels; Eq. 11 and Fig. 2 use h^raw's predictions, as here.

Assumptions
-----------
- Eq. 4/5 are evaluated on all m training instances (the instances whose weights Eq. 8/9
  update), not on the resample; under resampling this is the expected resample error.
- A round whose error breaks the rule at t = 1 is kept with α = 1 (there is no earlier model
  to fall back on) and a warning is issued; at t > 1 it is discarded and training stops.
- ε is clipped below at 1e-10, so a perfect round gets a large finite weight.
- Without model reuse (``model_reuse=False``) no h^raw is trained: h^a and h^b learn from X
  alone (h^b is then what h^raw would be).
- Vote ties in Eq. 10/11 go to the first class in sorted order.
- ``distribution_adjusting=False`` is B = 1.
- The default base learner is ``RBFNetwork()`` (k-means centres for 10 % of the training rows,
  σ = 0.5 × mean centre distance, ridge 1e-6, k-means seed 0), cloned with the same parameters
  every round and for every baseline ("same hyper-parameters" for all four methods; the paper
  gives no values).

Baselines (paper 001, "Benchmark Approaches")
---------------------------------------------
- :class:`IndependentDecomposition`: one multi-class base learner per set.
- :class:`CoOccurrenceDecomposition`: one multi-class learner whose classes are the (a, b) pairs
  observed in training; it never predicts an unseen pair.
- :class:`LabelStacking`: a learner for the first set (the set with fewer classes by default,
  like DSML's raw set), and one for the other set on [X, one-hot of the first set's labels].  At
  training time those labels are out-of-fold predictions (``sklearn.model_selection.
  cross_val_predict``, ``cv`` folds, stratified, not shuffled), so the second level sees labels
  as noisy as at test time, where the first level is refitted on all training rows.
- :class:`DualSetFromMultiLabel`: a multi-label estimator (default :class:`MLRBF`) on the
  L_a + L_b one-hot labels; the label with the largest ``decision_function`` output within each
  set is predicted ("choosing the label with the highest probability within each set").
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from numbers import Real

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.model_selection import cross_val_predict
from sklearn.utils.validation import check_array, check_is_fitted, has_fit_parameter

from mlgraph.evaluation.metrics import dual_set_accuracy
from mlgraph.methods.base import check_params, fitted_data, fitted_features, positive, positive_int
from mlgraph.methods.rbf_network import MLRBF, RBFNetwork

__all__ = [
    "DSML",
    "CoOccurrenceDecomposition",
    "DualSetFromMultiLabel",
    "IndependentDecomposition",
    "LabelStacking",
]

_EPS_FLOOR = 1e-10


def _is_bool(v) -> bool:
    return isinstance(v, bool)


def _one_hot(idx: np.ndarray, n_classes: int) -> np.ndarray:
    out = np.zeros((idx.shape[0], n_classes))
    out[np.arange(idx.shape[0]), idx] = 1.0
    return out


def _fewer_first(n_classes: tuple[int, int], choice: str) -> int:
    """Index (0 = a, 1 = b) of the set learned first: ``"a"``, ``"b"`` or ``"auto"`` (fewer
    classes; b on ties, as the paper numbers the sets so that L_a ≥ L_b)."""
    if choice == "auto":
        return 0 if n_classes[0] < n_classes[1] else 1
    return {"a": 0, "b": 1}[choice]


class DualSetEstimator(ClassifierMixin, BaseEstimator):
    """fit(X, Y) with Y n × 2, predict -> n × 2 labels, score -> Accuracy-all (Definition 4).

    To scikit-learn a classifier with two multi-class outputs ("multiclass-multioutput"):
    ``classes_`` holds the classes of each set, ``n_features_in_`` is checked at prediction.
    """

    def _validate_fit(self, X, Y) -> tuple[np.ndarray, list[np.ndarray]]:
        X, Y = fitted_data(self, X, Y)
        Y = check_array(Y, dtype=None, ensure_2d=True, input_name="Y")
        if Y.shape != (X.shape[0], 2):
            raise ValueError(
                f"Y must have shape (n_samples, 2) = ({X.shape[0]}, 2): column 0 holds the "
                f"set-a labels, column 1 the set-b labels; got {Y.shape}"
            )
        self.classes_ = []
        codes = []
        for j, name in enumerate("ab"):
            classes, idx = np.unique(Y[:, j], return_inverse=True)
            if classes.size < 2:
                raise ValueError(f"label set {name} (column {j} of Y) has a single class {classes[0]!r}")
            self.classes_.append(classes)
            codes.append(idx.astype(np.int64))
        self.n_classes_ = (self.classes_[0].size, self.classes_[1].size)
        return X, codes

    def _default_base(self):
        return RBFNetwork() if self.base_learner is None else self.base_learner

    def _predict_codes(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        raise NotImplementedError

    def _labels(self, codes: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
        return np.column_stack([self.classes_[0][codes[0]], self.classes_[1][codes[1]]])

    def predict(self, X) -> np.ndarray:
        """n × 2 predicted labels (column 0: set a, column 1: set b)."""
        check_is_fitted(self, "classes_")
        return self._labels(self._predict_codes(fitted_features(self, X, reset=False)))

    def score(self, X, Y, sample_weight=None) -> float:
        """Accuracy-all (Definition 4): the fraction of rows with both labels right."""
        Y = np.asarray(Y)
        P = self.predict(X)
        return dual_set_accuracy(Y[:, 0], P[:, 0], Y[:, 1], P[:, 1])["accuracy_all"]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        tags.target_tags.multi_output = True
        tags.target_tags.single_output = False  # Y is n × 2, one column per label set
        tags.input_tags.sparse = True  # CSR is accepted (densified)
        return tags


# --------------------------------------------------------------------------
# DSML
# --------------------------------------------------------------------------
class DSML(DualSetEstimator):
    """Dual-set multi-label boosting with model reuse and distribution adjusting (Algorithm 1).

    Parameters
    ----------
    T : int, default 10
        Boosting rounds (fewer if the stop rule of line 7 fires).
    B : float >= 1, default 1.05
        Distribution adjusting parameter of Eq. 8/9 (the paper's setting).
    model_reuse : bool, default True
        Eq. 1–3 (and 10–11); False trains h^a and h^b on X alone.
    distribution_adjusting : bool, default True
        False is B = 1.
    base_learner : classifier or None
        Cloned for every model; None is ``RBFNetwork()``.
    learning_rate : "1/L" or float > 0, default "1/L"
        Factor in front of the SAMME weight (Eq. 6/7 use 1/L_j).
    resample : bool, default True
        Lines 3–4: weighted resampling; False fits the base learner with ``sample_weight``.
    reuse : {"onehot", "scores"}, default "onehot"
        Pseudo-label features Ŷ: one-hot predictions (the paper) or decision_function outputs.
    raw_set : {"auto", "a", "b"}, default "auto"
        The set learned by h^raw and reused first; "auto" = the set with fewer classes, b on ties.
    random_state : int, Generator or None, default 0
        Seed of the resampling (``numpy.random.default_rng``).

    Notes
    -----
    Fitted attributes: ``classes_`` ([classes of a, classes of b]), ``n_classes_``,
    ``estimators_`` (one dict per round with keys "raw", "a", "b"), ``alphas_`` and ``errors_``
    (n_rounds × 2, column 0 for set a), ``n_rounds_``, ``stopped_early_``, ``raw_set_`` (0 or 1),
    ``distributions_`` (k × 2 × m: w^a, w^b at the start of each round and after the last
    update).
    """

    _rules = {
        "T": (positive_int, "a positive int"),
        "B": (
            lambda v: isinstance(v, Real) and not isinstance(v, bool) and np.isfinite(v) and v >= 1,
            "a number >= 1",
        ),
        "model_reuse": (_is_bool, "True or False"),
        "distribution_adjusting": (_is_bool, "True or False"),
        "learning_rate": (lambda v: v == "1/L" or positive(v), '"1/L" or a positive number'),
        "resample": (_is_bool, "True or False"),
        "reuse": (lambda v: v in ("onehot", "scores"), '"onehot" or "scores"'),
        "raw_set": (lambda v: v in ("auto", "a", "b"), '"auto", "a" or "b"'),
    }

    def __init__(
        self,
        T=10,
        B=1.05,
        model_reuse=True,
        distribution_adjusting=True,
        base_learner=None,
        learning_rate="1/L",
        resample=True,
        reuse="onehot",
        raw_set="auto",
        random_state=0,
    ):
        self.T = T
        self.B = B
        self.model_reuse = model_reuse
        self.distribution_adjusting = distribution_adjusting
        self.base_learner = base_learner
        self.learning_rate = learning_rate
        self.resample = resample
        self.reuse = reuse
        self.raw_set = raw_set
        self.random_state = random_state

    # -- pieces of one round ------------------------------------------------
    def _fit_base(self, X: np.ndarray, y: np.ndarray, w: np.ndarray | None):
        model = clone(self._default_base())
        return model.fit(X, y) if w is None else model.fit(X, y, sample_weight=w)

    def _pseudo(self, model, Z: np.ndarray, n_classes: int) -> tuple[np.ndarray, np.ndarray]:
        """(predicted class indices, reuse features Ŷ) of ``model`` on ``Z``."""
        pred = np.asarray(model.predict(Z), dtype=np.int64)
        if self.reuse == "onehot":
            return pred, _one_hot(pred, n_classes)
        scores = np.asarray(model.decision_function(Z), dtype=np.float64)
        if scores.ndim == 1:  # scikit-learn's binary convention: one column, positive = classes_[1]
            scores = np.column_stack([-scores, scores])
        feats = np.zeros((Z.shape[0], n_classes))
        feats[:, np.asarray(model.classes_, dtype=np.int64)] = scores
        return pred, feats

    def _round_predict(self, models: dict, X: np.ndarray) -> list[np.ndarray]:
        """[ŷ^a, ŷ^b] of one round by the chain of Eq. 10/11."""
        r = self.raw_set_
        o = 1 - r
        L = self.n_classes_
        pred: list[np.ndarray] = [None, None]
        if not self.model_reuse:
            pred[o] = np.asarray(models["ab"[o]].predict(X), dtype=np.int64)
            pred[r] = np.asarray(models["ab"[r]].predict(X), dtype=np.int64)
            return pred
        _, y_raw = self._pseudo(models["raw"], X, L[r])
        pred[o], y_other = self._pseudo(models["ab"[o]], np.hstack([X, y_raw]), L[o])
        pred[r] = np.asarray(models["ab"[r]].predict(np.hstack([X, y_other])), dtype=np.int64)
        return pred

    def _fit_round(self, X: np.ndarray, codes: list[np.ndarray], samples: list[tuple]) -> dict:
        """Eq. 1–3: ``samples[j]`` = (rows, sample_weight or None) of set j's training data."""
        r = self.raw_set_
        o = 1 - r
        L = self.n_classes_
        (rows_o, w_o), (rows_r, w_r) = samples[o], samples[r]
        X_o, X_r = X[rows_o], X[rows_r]
        if not self.model_reuse:
            return {
                "raw": None,
                "ab"[o]: self._fit_base(X_o, codes[o][rows_o], w_o),
                "ab"[r]: self._fit_base(X_r, codes[r][rows_r], w_r),
            }
        raw = self._fit_base(X_r, codes[r][rows_r], w_r)  # Eq. 1
        _, y_raw_o = self._pseudo(raw, X_o, L[r])
        h_o = self._fit_base(np.hstack([X_o, y_raw_o]), codes[o][rows_o], w_o)  # Eq. 2
        _, y_raw_r = self._pseudo(raw, X_r, L[r])
        _, y_o_r = self._pseudo(h_o, np.hstack([X_r, y_raw_r]), L[o])
        h_r = self._fit_base(np.hstack([X_r, y_o_r]), codes[r][rows_r], w_r)  # Eq. 3
        return {"raw": raw, "ab"[o]: h_o, "ab"[r]: h_r}

    # -- Algorithm 1 ----------------------------------------------------------
    def fit(self, X, Y):
        """Algorithm 1 on (X, Y), Y the n × 2 labels (column 0: set a, column 1: set b)."""
        check_params(self, self._rules)
        X, codes = self._validate_fit(X, Y)
        if not self.resample and not has_fit_parameter(self._default_base(), "sample_weight"):
            raise ValueError(
                f"resample=False needs a base learner whose fit takes sample_weight; "
                f"{type(self._default_base()).__name__} does not"
            )
        self.raw_set_ = _fewer_first(self.n_classes_, self.raw_set)
        rng = np.random.default_rng(self.random_state)
        m = X.shape[0]
        L = np.asarray(self.n_classes_, dtype=np.float64)
        rate = 1.0 / L if self.learning_rate == "1/L" else np.full(2, float(self.learning_rate))
        B = float(self.B) if self.distribution_adjusting else 1.0
        w = np.full((2, m), 1.0 / m)  # line 1
        history, self.estimators_, alphas, errors = [w.copy()], [], [], []
        self.stopped_early_ = False
        for t in range(self.T):
            if self.resample:  # lines 3–4
                samples = [(rng.choice(m, size=m, p=w[j]), None) for j in (0, 1)]
            else:
                samples = [(np.arange(m), w[j]) for j in (0, 1)]
            models = self._fit_round(X, codes, samples)  # line 5
            wrong = np.array([p != c for p, c in zip(self._round_predict(models, X), codes, strict=True)])
            eps = (w * wrong).sum(axis=1)  # Eq. 4–5
            if (eps > (L - 1) / L).any():  # line 7
                self.stopped_early_ = True
                if t > 0:
                    break
                warnings.warn(
                    f"DSML: the first round is worse than chance (errors {eps.round(4)}); "
                    f"it is kept alone with weight 1",
                    stacklevel=2,
                )
                alpha = np.ones(2)
            else:
                e = np.clip(eps, _EPS_FLOOR, None)
                alpha = rate * (np.log((1 - e) / e) + np.log(L - 1))  # Eq. 6–7
            self.estimators_.append(models)
            alphas.append(alpha)
            errors.append(eps)
            if self.stopped_early_:
                break
            w = w * np.exp(alpha[:, None] * wrong) * B ** wrong[::-1]  # Eq. 8–9
            w /= w.sum(axis=1, keepdims=True)  # line 12
            history.append(w.copy())
        self.alphas_ = np.array(alphas)
        self.errors_ = np.array(errors)
        self.n_rounds_ = len(self.estimators_)
        self.distributions_ = np.array(history)
        return self

    # -- prediction -------------------------------------------------------------
    def _staged_votes(self, X: np.ndarray) -> Iterator[list[np.ndarray]]:
        votes = [np.zeros((X.shape[0], k)) for k in self.n_classes_]
        rows = np.arange(X.shape[0])
        for models, alpha in zip(self.estimators_, self.alphas_, strict=True):
            for j, pred in enumerate(self._round_predict(models, X)):
                votes[j][rows, pred] += alpha[j]  # Eq. 10–11
            yield votes

    def _predict_codes(self, X):
        *_, votes = self._staged_votes(X)  # the votes after the last round
        return votes[0].argmax(axis=1), votes[1].argmax(axis=1)

    def staged_predict(self, X) -> Iterator[np.ndarray]:
        """n × 2 predictions after rounds 1, 2, …, n_rounds_ (the T study of Fig. 3)."""
        check_is_fitted(self, "estimators_")
        X = fitted_features(self, X, reset=False)
        for votes in self._staged_votes(X):
            yield self._labels((votes[0].argmax(axis=1), votes[1].argmax(axis=1)))

    def predict_votes(self, X) -> tuple[np.ndarray, np.ndarray]:
        """(V^a, V^b): the α-weighted votes of Eq. 10/11 divided by Σ_t α_t, n × L_a and n × L_b."""
        check_is_fitted(self, "estimators_")
        X = fitted_features(self, X, reset=False)
        *_, votes = self._staged_votes(X)
        return votes[0] / self.alphas_[:, 0].sum(), votes[1] / self.alphas_[:, 1].sum()


# --------------------------------------------------------------------------
# Baselines
# --------------------------------------------------------------------------
class IndependentDecomposition(DualSetEstimator):
    """One multi-class base learner per label set (``estimators_`` = [h^a, h^b])."""

    def __init__(self, base_learner=None):
        self.base_learner = base_learner

    def fit(self, X, Y):
        X, codes = self._validate_fit(X, Y)
        self.estimators_ = [clone(self._default_base()).fit(X, c) for c in codes]
        return self

    def _predict_codes(self, X):
        return tuple(np.asarray(h.predict(X), dtype=np.int64) for h in self.estimators_)


class CoOccurrenceDecomposition(DualSetEstimator):
    """One multi-class learner on the observed (a, b) pairs, class code = i_a · L_b + i_b."""

    def __init__(self, base_learner=None):
        self.base_learner = base_learner

    def fit(self, X, Y):
        X, codes = self._validate_fit(X, Y)
        pairs = codes[0] * self.n_classes_[1] + codes[1]
        self.estimator_ = clone(self._default_base()).fit(X, pairs)
        self.n_pairs_ = int(np.unique(pairs).size)
        return self

    def _predict_codes(self, X):
        pairs = np.asarray(self.estimator_.predict(X), dtype=np.int64)
        return pairs // self.n_classes_[1], pairs % self.n_classes_[1]


class LabelStacking(DualSetEstimator):
    """First set from X; second set from [X, one-hot first-set labels] (out-of-fold in training).

    ``first``: "auto" (the set with fewer classes, b on ties), "a" or "b"; ``cv``: folds (int or
    a scikit-learn splitter) of ``cross_val_predict`` for the second level's training features.
    Fitted: ``first_`` (0 or 1), ``estimators_`` = [first-level, second-level].
    """

    _rules = {
        "first": (lambda v: v in ("auto", "a", "b"), '"auto", "a" or "b"'),
        "cv": (
            lambda v: not isinstance(v, int) or (not isinstance(v, bool) and v >= 2),
            "an int >= 2 or a splitter",
        ),
    }

    def __init__(self, base_learner=None, first="auto", cv=5):
        self.base_learner = base_learner
        self.first = first
        self.cv = cv

    def fit(self, X, Y):
        check_params(self, self._rules)
        X, codes = self._validate_fit(X, Y)
        f = self.first_ = _fewer_first(self.n_classes_, self.first)
        base = self._default_base()
        oof = np.asarray(cross_val_predict(clone(base), X, codes[f], cv=self.cv), dtype=np.int64)
        first = clone(base).fit(X, codes[f])
        second = clone(base).fit(np.hstack([X, _one_hot(oof, self.n_classes_[f])]), codes[1 - f])
        self.estimators_ = [first, second]
        return self

    def _predict_codes(self, X):
        f = self.first_
        pred_f = np.asarray(self.estimators_[0].predict(X), dtype=np.int64)
        pred_s = np.asarray(
            self.estimators_[1].predict(np.hstack([X, _one_hot(pred_f, self.n_classes_[f])])), dtype=np.int64
        )
        return (pred_f, pred_s) if f == 0 else (pred_s, pred_f)


class DualSetFromMultiLabel(DualSetEstimator):
    """A multi-label estimator on the L_a + L_b one-hot labels; argmax of its scores per set.

    ``estimator`` needs ``fit(X, Y)`` with Y n × q 0/1 and ``decision_function`` (or
    ``predict_proba`` returning an n × q array); None is ``MLRBF()`` (Zhang 2009).
    """

    def __init__(self, estimator=None):
        self.estimator = estimator

    def fit(self, X, Y):
        X, codes = self._validate_fit(X, Y)
        Y_ml = np.hstack([_one_hot(c, k) for c, k in zip(codes, self.n_classes_, strict=True)]).astype(
            np.int8
        )
        self.estimator_ = clone(MLRBF() if self.estimator is None else self.estimator).fit(X, Y_ml)
        return self

    def decision_function(self, X) -> np.ndarray:
        """The wrapped estimator's n × (L_a + L_b) scores, set a's labels first."""
        check_is_fitted(self, "estimator_")
        X = fitted_features(self, X, reset=False)
        est = self.estimator_
        S = est.decision_function(X) if hasattr(est, "decision_function") else est.predict_proba(X)
        S = np.asarray(S.toarray() if hasattr(S, "toarray") else S, dtype=np.float64)
        if S.shape != (X.shape[0], sum(self.n_classes_)):
            raise ValueError(
                f"{type(est).__name__} returned scores of shape {S.shape}, expected "
                f"({X.shape[0]}, {sum(self.n_classes_)})"
            )
        return S

    def _predict_codes(self, X):
        S = self.decision_function(X)
        La = self.n_classes_[0]
        return S[:, :La].argmax(axis=1), S[:, La:].argmax(axis=1)
