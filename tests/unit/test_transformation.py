"""Problem-transformation baselines of paper 002 (BR, CLR, ECC, RAkEL): hand-worked votes with
a deterministic stub learner, equality with independently fitted scikit-learn models, and
sanity on a small synthetic problem."""

import functools

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.special import expit
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.datasets import make_multilabel_classification
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import f1_score, label_ranking_average_precision_score
from sklearn.multioutput import ClassifierChain
from sklearn.svm import LinearSVC
from threadpoolctl import threadpool_limits

from mlgraph.methods.base import standardisation
from mlgraph.methods.transformation import (
    BinaryRelevance,
    CalibratedLabelRanking,
    EnsembleClassifierChains,
    RAkEL,
    default_base_estimator,
)

ALL = [BinaryRelevance, CalibratedLabelRanking, EnsembleClassifierChains, RAkEL]


@pytest.fixture(autouse=True)
def _one_blas_thread():
    with threadpool_limits(limits=1):  # tiny problems: threads only add contention
        yield


class SignMajority(ClassifierMixin, BaseEstimator):
    """Deterministic stub: looks only at the sign of column 0. In each half it predicts the most
    frequent training class (ties: the smaller), with the class frequencies as probabilities."""

    def fit(self, X, y):
        X = X.toarray() if sp.issparse(X) else np.asarray(X)
        self.classes_, codes = np.unique(np.asarray(y), return_inverse=True)
        pos = X[:, 0] > 0
        counts = np.array(
            [np.bincount(codes[pos == s], minlength=self.classes_.size) for s in (False, True)], dtype=float
        )
        counts[counts.sum(axis=1) == 0] = np.bincount(codes, minlength=self.classes_.size)
        self.freq_ = counts / counts.sum(axis=1, keepdims=True)
        return self

    def predict_proba(self, X):
        X = X.toarray() if sp.issparse(X) else np.asarray(X)
        return self.freq_[(X[:, 0] > 0).astype(int)]

    def predict(self, X):
        return self.classes_[self.predict_proba(X).argmax(axis=1)]


@functools.lru_cache(maxsize=1)
def _generated():
    return make_multilabel_classification(
        n_samples=300, n_features=20, n_classes=8, n_labels=2, allow_unlabeled=True, random_state=0
    )


def _synthetic(n=300, q=5):
    """(train X, train Y, test X, test Y): halves of the first n rows and q labels of one small
    generated problem (generated once: the generator is slow)."""
    X, Y = _generated()
    X, Y = X[:n], Y[:n, :q]
    X = X / X.max()  # counts → [0, 1], as bag-of-words features usually are
    half = n // 2
    return X[:half], Y[:half].astype(np.int8), X[half:], Y[half:].astype(np.int8)


# ---------------------------------------------------------------------------------------------
# 1. CLR by hand. Stub learner: majority class in each half x < 0 / x > 0. Label 3 copies label
#    2, so the pair (2, 3) has no row where exactly one is relevant and casts no vote.
#
#       row  x   l0 l1 l2 l3
#       a   -1   1  0  0  0
#       b   -1   1  0  0  0
#       c   -1   1  1  0  0
#       d   +1   0  0  0  0
#       e   +1   0  1  1  1
#       f   +1   0  0  1  1
#       g   +1   0  0  1  1
#
#    Calibration (BR) models, P(relevant) on x<0 | x>0:  l0 1 | 0,  l1 1/3 | 1/4,  l2 0 | 3/4,
#    l3 0 | 3/4  → hard decisions l0 1 | 0, l1 0 | 0, l2 0 | 1, l3 0 | 1.
#    Pairwise models (target "first label relevant"), rows where exactly one is relevant:
#      (0,1): a,b (t=1) | e (t=0)        → x<0 votes l0, x>0 votes l1
#      (0,2): a,b,c (1) | e,f,g (0)      → l0 | l2;   (0,3) likewise → l0 | l3
#      (1,2): c (1)     | f,g (0)        → l1 | l2;   (1,3) likewise → l1 | l3
#      (2,3): no row → skipped
#    Hard votes, x = −1: l0 = 1 + 3 = 4, l1 = 0 + 2 = 2, l2 = l3 = 0, virtual = 3 (l1, l2, l3
#      say "irrelevant") → predict {l0}.
#    Hard votes, x = +1: l0 = 0, l1 = 0 + 1 = 1, l2 = l3 = 1 + 2 = 3, virtual = 2 → {l2, l3}.
#    In each row the votes sum to q + #pairs = 4 + 5 = 9.
#    Soft votes (pairwise probabilities are 0/1 here, so only calibration changes):
#      x = −1: l0 = 1 + 3 = 4, l1 = 1/3 + 2 = 7/3, l2 = l3 = 0, virtual = 0 + 2/3 + 1 + 1 = 8/3
#      x = +1: l0 = 0, l1 = 1/4 + 1 = 5/4, l2 = l3 = 3/4 + 2 = 11/4, virtual = 1 + 3/4 + 1/4 + 1/4 = 9/4
# ---------------------------------------------------------------------------------------------
X_CLR = np.array([[-1.0], [-1.0], [-1.0], [1.0], [1.0], [1.0], [1.0]])
Y_CLR = np.array(
    [[1, 0, 0, 0], [1, 0, 0, 0], [1, 1, 0, 0], [0, 0, 0, 0], [0, 1, 1, 1], [0, 0, 1, 1], [0, 0, 1, 1]],
    dtype=np.int8,
)
T_STUB = np.array([[-1.0], [1.0]])


def test_clr_hand_worked_hard_votes_and_calibration():
    clr = CalibratedLabelRanking(base_estimator=SignMajority(), standardize=False).fit(X_CLR, Y_CLR)
    np.testing.assert_array_equal(clr.pairs_, [[0, 1], [0, 2], [0, 3], [1, 2], [1, 3]])  # (2,3) skipped
    votes, virtual = clr.vote_counts(T_STUB)
    np.testing.assert_array_equal(votes, [[4, 2, 0, 0], [0, 1, 3, 3]])
    np.testing.assert_array_equal(virtual, [3, 2])
    np.testing.assert_array_equal(votes.sum(axis=1) + virtual, [9, 9])
    np.testing.assert_array_equal(clr.decision_function(T_STUB), votes)
    pred = clr.predict(T_STUB)
    assert pred.dtype == np.int8
    np.testing.assert_array_equal(pred, [[1, 0, 0, 0], [0, 0, 1, 1]])


def test_clr_hand_worked_soft_votes():
    clr = CalibratedLabelRanking(base_estimator=SignMajority(), voting="soft", standardize=False)
    votes, virtual = clr.fit(X_CLR, Y_CLR).vote_counts(T_STUB)
    np.testing.assert_allclose(votes, [[4, 7 / 3, 0, 0], [0, 5 / 4, 11 / 4, 11 / 4]], rtol=1e-14)
    np.testing.assert_allclose(virtual, [8 / 3, 9 / 4], rtol=1e-14)
    np.testing.assert_array_equal(clr.predict(T_STUB), [[1, 0, 0, 0], [0, 0, 1, 1]])


def test_clr_tie_with_virtual_label_is_irrelevant():
    class Tied(CalibratedLabelRanking):
        def vote_counts(self, X):
            return np.array([[2.0, 3.0, 1.0]]), np.array([2.0])

    np.testing.assert_array_equal(Tied().predict(T_STUB[:1]), [[0, 1, 0]])  # 2 vs 2: irrelevant


# ---------------------------------------------------------------------------------------------
# 2. BR = q independent base learners; constant labels.
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("standardize", [False, True])
def test_br_equals_independent_base_learners(standardize):
    X, Y, T, _ = _synthetic()
    br = BinaryRelevance(standardize=standardize).fit(X, Y)
    scores, pred = br.decision_function(T), br.predict(T)
    if standardize:
        mean, scale = standardisation(X)
        X, T = (X - mean) / scale, (T - mean) / scale
    for j in range(Y.shape[1]):
        ref = default_base_estimator().fit(X, Y[:, j])
        np.testing.assert_allclose(scores[:, j], ref.predict_proba(T)[:, 1], rtol=1e-12)
        np.testing.assert_array_equal(pred[:, j], ref.predict(T))


def test_br_without_predict_proba_uses_sigmoid_of_decision_function():
    X, Y, T, _ = _synthetic()
    br = BinaryRelevance(base_estimator=LinearSVC(C=0.1), standardize=False).fit(X, Y)
    ref = LinearSVC(C=0.1).fit(X, Y[:, 0])
    np.testing.assert_allclose(br.decision_function(T)[:, 0], expit(ref.decision_function(T)), rtol=1e-12)
    np.testing.assert_array_equal(br.predict(T)[:, 0], ref.predict(T))


@pytest.mark.parametrize("cls", ALL)
def test_constant_labels_do_not_crash(cls):
    X, Y, T, _ = _synthetic(q=2)
    Y = np.column_stack([np.zeros(len(Y)), Y, np.ones(len(Y))]).astype(np.int8)  # l0 ≡ 0, l3 ≡ 1
    est = cls().fit(X, Y)
    scores, pred = est.decision_function(T), est.predict(T)
    assert np.isfinite(scores).all()
    np.testing.assert_array_equal(pred[:, 0], 0)
    np.testing.assert_array_equal(pred[:, 3], 1)
    if cls in (BinaryRelevance, EnsembleClassifierChains, RAkEL):  # probabilities / vote shares
        np.testing.assert_array_equal(scores[:, 0], 0.0)
        np.testing.assert_array_equal(scores[:, 3], 1.0)
    else:  # CLR: l3 wins every comparison, l0 none
        np.testing.assert_array_equal(scores[:, 0], 0.0)
        np.testing.assert_array_equal(scores[:, 3], Y.shape[1])


def test_unlabelled_rows_are_dropped():
    X, Y, T, _ = _synthetic()
    X2 = np.vstack([X, T[:20]])
    Y2 = np.vstack([Y, np.full((20, Y.shape[1]), -1, dtype=np.int8)])
    a = BinaryRelevance().fit(X, Y).decision_function(T)
    np.testing.assert_allclose(BinaryRelevance().fit(X2, Y2).decision_function(T), a, rtol=1e-12)


# ---------------------------------------------------------------------------------------------
# 3. ECC
# ---------------------------------------------------------------------------------------------
def test_ecc_is_deterministic_given_random_state():
    X, Y, T, _ = _synthetic()
    a = EnsembleClassifierChains(n_chains=3, random_state=7).fit(X, Y)
    b = EnsembleClassifierChains(n_chains=3, random_state=7).fit(X, Y)
    c = EnsembleClassifierChains(n_chains=3, random_state=8).fit(X, Y)
    np.testing.assert_array_equal(a.decision_function(T), b.decision_function(T))
    for order, rows in zip(a.orders_, a.samples_, strict=True):
        assert sorted(order) == list(range(Y.shape[1]))
        assert rows.shape == (X.shape[0],)  # bootstrap of size n
    assert any((o1 != o2).any() for o1, o2 in zip(a.orders_, c.orders_, strict=True))


def test_ecc_average_of_chains_each_equal_to_sklearn_classifier_chain():
    X, Y, T, _ = _synthetic()
    ecc = EnsembleClassifierChains(n_chains=3, random_state=0, standardize=False).fit(X, Y)
    per_chain = ecc.chain_scores(T)
    assert per_chain.shape == (3, T.shape[0], Y.shape[1])
    for c in range(3):
        rows = ecc.samples_[c]
        ref = ClassifierChain(default_base_estimator(), order=ecc.orders_[c]).fit(X[rows], Y[rows])
        np.testing.assert_allclose(per_chain[c], ref.predict_proba(T), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(ecc.decision_function(T), per_chain.mean(axis=0), rtol=1e-15)
    np.testing.assert_array_equal(ecc.predict(T), (per_chain.mean(axis=0) >= 0.5).astype(np.int8))


def test_ecc_single_chain_without_bootstrap_is_one_classifier_chain():
    X, Y, T, _ = _synthetic()
    ecc = EnsembleClassifierChains(n_chains=1, bootstrap=False, standardize=False).fit(X, Y)
    np.testing.assert_array_equal(ecc.samples_[0], np.arange(X.shape[0]))
    ref = ClassifierChain(default_base_estimator(), order=ecc.orders_[0]).fit(X, Y)
    np.testing.assert_allclose(ecc.decision_function(T), ref.predict_proba(T), rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(ecc.predict(T), ref.predict(T))


def test_ecc_subsampling_without_replacement():
    X, Y, _, _ = _synthetic()
    ecc = EnsembleClassifierChains(n_chains=2, bootstrap=False, max_samples=0.5).fit(X, Y)
    for rows in ecc.samples_:
        assert rows.size == X.shape[0] // 2 and np.unique(rows).size == rows.size


# ---------------------------------------------------------------------------------------------
# 4. RAkEL. Hand-worked with the stub, q = 3 and k = 2: m = 2q = 6 is capped at C(3, 2) = 3, so
#    the labelsets are {0,1}, {0,2}, {1,2} and every label is in 2 models.
#
#       row  x   l0 l1 l2        code of (la, lb) = la + 2·lb
#       a   -1   0  1  1         (0,1): a2 b3 c2 | d1 e0 f2 g2 → mode 2 | 2 → (0,1) | (0,1)
#       b   -1   1  1  0         (0,2): a2 b1 c2 | d3 e2 f0 g2 → mode 2 | 2 → (0,1) | (0,1)
#       c   -1   0  1  1         (1,2): a3 b1 c3 | d2 e2 f1 g3 → mode 3 | 2 → (1,1) | (0,1)
#       d   +1   1  0  1
#       e   +1   0  0  1       Hard vote shares, x = −1: l0 0/2, l1 2/2, l2 2/2 → predict {l1, l2}
#       f   +1   0  1  0                        x = +1: l0 0/2, l1 1/2, l2 2/2 → predict {l2}
#       g   +1   0  1  1       (1/2 is not more than half)
#    Soft: the stub's marginal is the label's frequency in the half, the same in every model:
#       x = −1: (1/3, 3/3, 2/3);  x = +1: (1/4, 2/4, 3/4) → predict {l1, l2} and {l2}.
# ---------------------------------------------------------------------------------------------
X_RAK = np.array([[-1.0], [-1.0], [-1.0], [1.0], [1.0], [1.0], [1.0]])
Y_RAK = np.array([[0, 1, 1], [1, 1, 0], [0, 1, 1], [1, 0, 1], [0, 0, 1], [0, 1, 0], [0, 1, 1]], dtype=np.int8)


def test_rakel_hand_worked_hard_votes():
    rak = RAkEL(base_estimator=SignMajority(), k=2, scores="votes", standardize=False).fit(X_RAK, Y_RAK)
    assert (rak.k_, rak.m_) == (2, 3)
    np.testing.assert_array_equal(sorted(map(tuple, rak.labelsets_)), [(0, 1), (0, 2), (1, 2)])
    np.testing.assert_array_equal(rak.coverage_, [2, 2, 2])
    np.testing.assert_array_equal(rak.decision_function(T_STUB), [[0, 1, 1], [0, 0.5, 1]])
    pred = rak.predict(T_STUB)
    assert pred.dtype == np.int8
    np.testing.assert_array_equal(pred, [[0, 1, 1], [0, 0, 1]])


def test_rakel_hand_worked_soft_votes():
    rak = RAkEL(base_estimator=SignMajority(), k=2, voting="soft", standardize=False).fit(X_RAK, Y_RAK)
    np.testing.assert_allclose(
        rak.decision_function(T_STUB), [[1 / 3, 1, 2 / 3], [1 / 4, 1 / 2, 3 / 4]], rtol=1e-14
    )
    np.testing.assert_array_equal(rak.predict(T_STUB), [[0, 1, 1], [0, 0, 1]])


def test_rakel_ranks_by_marginals_and_decides_by_votes():
    """Default MULAN-style split: hard votes decide, averaged marginals rank."""
    rak = RAkEL(base_estimator=SignMajority(), k=2, standardize=False).fit(X_RAK, Y_RAK)
    np.testing.assert_allclose(
        rak.decision_function(T_STUB), [[1 / 3, 1, 2 / 3], [1 / 4, 1 / 2, 3 / 4]], rtol=1e-14
    )
    np.testing.assert_array_equal(rak.predict(T_STUB), [[0, 1, 1], [0, 0, 1]])
    # the decisions are those of the vote shares
    hard = RAkEL(base_estimator=SignMajority(), k=2, scores="votes", standardize=False).fit(X_RAK, Y_RAK)
    np.testing.assert_array_equal(rak.predict(T_STUB), hard.predict(T_STUB))


def test_rakel_default_labelsets():
    X, Y, T, _ = _synthetic(q=8)
    rak = RAkEL(scores="votes", standardize=False).fit(X, Y)
    assert (rak.k_, rak.m_, len(rak.estimators_)) == (3, 16, 16)  # k = 3, m = 2q
    assert rak.labelsets_.shape == (16, 3)
    assert len(set(map(tuple, rak.labelsets_))) == 16  # distinct
    assert all(len(set(ls)) == 3 and list(ls) == sorted(ls) for ls in rak.labelsets_)
    np.testing.assert_array_equal(rak.coverage_, np.bincount(rak.labelsets_.ravel(), minlength=8))
    assert (rak.coverage_ > 0).all()  # not guaranteed in general; true for this seed
    np.testing.assert_array_equal(RAkEL(standardize=False).fit(X, Y).labelsets_, rak.labelsets_)  # seeded
    # the votes are averages over the models containing each label
    votes = np.zeros((T.shape[0], 8))
    for ls, model in zip(rak.labelsets_, rak.estimators_, strict=True):
        code = model.predict(T)
        votes[:, ls] += (code[:, None] >> np.arange(3)) & 1
    np.testing.assert_allclose(rak.decision_function(T), votes / rak.coverage_, rtol=1e-15)


def test_rakel_labelset_sampling_large_q_and_caps():
    rng = np.random.RandomState(0)
    sets = RAkEL._draw_labelsets(200, 3, 400, rng)  # C(200, 3) > enumeration limit: rejection
    assert sets.shape == (400, 3) and len(set(map(tuple, sets))) == 400
    assert (np.diff(sets, axis=1) > 0).all() and sets.max() < 200
    X, Y, _, _ = _synthetic(q=3)
    rak = RAkEL(k=5).fit(X, Y)  # k > q → one Label Powerset on all labels
    assert (rak.k_, rak.m_) == (3, 1)
    np.testing.assert_array_equal(rak.labelsets_, [[0, 1, 2]])


def test_rakel_uncovered_label_scores_zero():
    X, Y, T, _ = _synthetic(q=4)
    rak = RAkEL(k=2, m=1, voting="soft").fit(X, Y)
    uncovered = rak.coverage_ == 0
    assert uncovered.sum() == 2
    np.testing.assert_array_equal(rak.decision_function(T)[:, uncovered], 0.0)
    np.testing.assert_array_equal(rak.predict(T)[:, uncovered], 0)


# ---------------------------------------------------------------------------------------------
# 5. Better than the prior on synthetic data; sparse input; parameter checks.
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("cls", ALL)
def test_beats_label_prior(cls):
    X, Y, T, Yt = _synthetic()
    prior = Y.mean(axis=0)
    baseline_f1 = max(
        f1_score(Yt, np.ones_like(Yt), average="micro"),
        f1_score(Yt, np.tile(prior >= 0.5, (len(Yt), 1)).astype(int), average="micro"),
    )
    baseline_ap = label_ranking_average_precision_score(Yt, np.tile(prior, (len(Yt), 1)))
    est = cls().fit(X, Y)
    assert f1_score(Yt, est.predict(T), average="micro") > baseline_f1 + 0.05
    assert label_ranking_average_precision_score(Yt, est.decision_function(T)) > baseline_ap + 0.05


class SparseRecorder(LogisticRegression):
    """Logistic regression that records whether it was fitted on a sparse matrix."""

    def fit(self, X, y, sample_weight=None):
        self.saw_sparse_ = sp.issparse(X)
        return super().fit(X, y, sample_weight=sample_weight)


def _sub_models(est):
    if isinstance(est, CalibratedLabelRanking):
        return est.label_estimators_ + est.pair_estimators_
    if isinstance(est, EnsembleClassifierChains):
        return [m for chain in est.chains_ for m in chain]
    return est.estimators_


@pytest.mark.parametrize(
    "est",
    [
        BinaryRelevance(),
        CalibratedLabelRanking(voting="soft"),
        EnsembleClassifierChains(n_chains=2),
        RAkEL(voting="soft"),
    ],
    ids=lambda e: type(e).__name__,
)
def test_sparse_input_stays_sparse_and_matches_dense(est):
    X, Y, T, _ = _synthetic()
    est = clone(est).set_params(base_estimator=SparseRecorder(max_iter=1000))
    sparse = clone(est).fit(sp.csr_matrix(X), Y)
    assert all(m.saw_sparse_ for m in _sub_models(sparse) if hasattr(m, "saw_sparse_"))
    dense = clone(est).set_params(standardize=False).fit(X, Y)
    s_sparse, s_dense = sparse.decision_function(sp.csr_matrix(T)), dense.decision_function(T)
    np.testing.assert_allclose(s_sparse, s_dense, rtol=0, atol=1e-8)  # same optimisation problem
    np.testing.assert_array_equal(sparse.predict(sp.csr_matrix(T)), dense.predict(T))


BAD_PARAMS = [
    (BinaryRelevance, "base_estimator", "logreg"),
    (BinaryRelevance, "standardize", 1),
    (CalibratedLabelRanking, "voting", "majority"),
    (EnsembleClassifierChains, "n_chains", 0),
    (EnsembleClassifierChains, "n_chains", 2.5),
    (EnsembleClassifierChains, "max_samples", 0.0),
    (EnsembleClassifierChains, "max_samples", 1.5),
    (EnsembleClassifierChains, "bootstrap", "yes"),
    (EnsembleClassifierChains, "threshold", 1.0),
    (EnsembleClassifierChains, "random_state", -1),
    (RAkEL, "k", 0),
    (RAkEL, "m", 0),
    (RAkEL, "voting", "average"),
    (RAkEL, "scores", "probabilities"),
    (RAkEL, "threshold", 0.0),
]


@pytest.mark.parametrize("cls, name, value", BAD_PARAMS)
def test_bad_parameters_raise_naming_them(cls, name, value):
    X, Y, _, _ = _synthetic(n=20, q=3)
    with pytest.raises(ValueError, match=f"parameter {name}="):
        cls(**{name: value}).fit(X, Y)


def test_soft_rakel_needs_probabilities_and_shapes_are_checked():
    X, Y, T, _ = _synthetic(n=40, q=3)
    with pytest.raises(ValueError, match="voting='soft'"):
        RAkEL(base_estimator=LinearSVC(), voting="soft").fit(X, Y)
    with pytest.raises(ValueError, match="scores='marginals'"):
        RAkEL(base_estimator=LinearSVC()).fit(X, Y)
    assert RAkEL(base_estimator=LinearSVC(), scores="votes").fit(X, Y).decision_function(T).shape == T.shape[
        :1
    ] + (3,)
    with pytest.raises(ValueError, match="rows"):
        BinaryRelevance().fit(X, Y[:-1])
    with pytest.raises(ValueError, match="features"):
        BinaryRelevance().fit(X, Y).predict(T[:, :-1])
