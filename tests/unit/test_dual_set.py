"""DSML (paper 001, Algorithm 1), the dual-set baselines, and the dual-set data loaders."""

import bz2
import gzip
import lzma
import math
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from shared_data import benchmark_file
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.ensemble import AdaBoostClassifier
from sklearn.tree import DecisionTreeClassifier

from mlgraph.data.dual_set import DualSetDataset, frequency_gender, load_dual_set
from mlgraph.data.registry import DatasetNotFoundError
from mlgraph.evaluation.metrics import dual_set_accuracy
from mlgraph.methods.dual_set import (
    DSML,
    CoOccurrenceDecomposition,
    DualSetFromMultiLabel,
    IndependentDecomposition,
    LabelStacking,
)
from mlgraph.methods.rbf_network import RBFNetwork


# --------------------------------------------------------------------------
# Deterministic stubs
# --------------------------------------------------------------------------
class ColumnStub(ClassifierMixin, BaseEstimator):
    """Ignores the targets: predicts the integer in one column of X, chosen by the width of X
    (DSML's three models see d, d + L_b and d + L_a columns)."""

    def __init__(self, column_by_width=None):
        self.column_by_width = column_by_width

    def fit(self, X, y, sample_weight=None):
        self.classes_ = np.unique(y)
        self.column_ = self.column_by_width[X.shape[1]]
        return self

    def predict(self, X):
        return X[:, self.column_].astype(int)


class ThresholdStub(ClassifierMixin, BaseEstimator):
    def __init__(self, theta=0.0):
        self.theta = theta

    def predict(self, X):
        return (X[:, 0] > self.theta).astype(int)


class ReuseStub(ClassifierMixin, BaseEstimator):
    """Reads the reused one-hot columns: predicts (argmax of Z[:, 1:] + offset) mod L."""

    def __init__(self, offset=0, n_classes=2):
        self.offset = offset
        self.n_classes = n_classes

    def predict(self, X):
        return (X[:, 1:].argmax(axis=1) + self.offset) % self.n_classes


# Hand example: m = 5, L_a = 3, L_b = 2; column 0 holds h^a's output, column 1 that of h^raw/h^b.
Y_HAND = np.array([[0, 0], [1, 1], [2, 0], [0, 1], [1, 0]])
X_HAND = np.array([[1, 0], [1, 0], [2, 0], [0, 1], [1, 0]], dtype=float)  # a wrong on 0, b wrong on 1
HAND_STUB = ColumnStub({2: 1, 4: 0, 5: 1})  # raw: 2 columns, h^a: 2 + L_b, h^b: 2 + L_a


# --------------------------------------------------------------------------
# One boosting round by hand (Eq. 4–9)
# --------------------------------------------------------------------------
@pytest.mark.parametrize("resample", [True, False])
def test_two_rounds_of_weights_and_model_weights_by_hand(resample):
    est = DSML(T=2, B=1.05, base_learner=HAND_STUB, resample=resample).fit(X_HAND, Y_HAND)
    assert est.raw_set_ == 1 and est.n_rounds_ == 2 and not est.stopped_early_
    # Round 1: uniform weights, one error of five in each set.
    np.testing.assert_allclose(est.errors_[0], [0.2, 0.2])
    # α^a = (1/3)(log 4 + log 2) = log 2;  α^b = (1/2)(log 4 + log 1) = log 2
    np.testing.assert_allclose(est.alphas_[0], [math.log(2), math.log(2)])
    # w^a ∝ [e^α, B, 1, 1, 1] (x_1 is wrong on b), w^b ∝ [B, e^α, 1, 1, 1]
    np.testing.assert_allclose(est.distributions_[1, 0], np.array([2, 1.05, 1, 1, 1]) / 6.05)
    np.testing.assert_allclose(est.distributions_[1, 1], np.array([1.05, 2, 1, 1, 1]) / 6.05)
    # Round 2: ε = 2/6.05, (1 − ε)/ε = 2.025
    np.testing.assert_allclose(est.errors_[1], [2 / 6.05, 2 / 6.05])
    np.testing.assert_allclose(est.alphas_[1], [math.log(2.025 * 2) / 3, math.log(2.025) / 2])
    wa = np.array([2 * 4.05 ** (1 / 3), 1.05**2, 1, 1, 1])
    wb = np.array([1.05**2, 2 * 2.025**0.5, 1, 1, 1])
    np.testing.assert_allclose(est.distributions_[2, 0], wa / wa.sum())
    np.testing.assert_allclose(est.distributions_[2, 1], wb / wb.sum())


def test_without_distribution_adjusting_the_other_set_is_ignored():
    est = DSML(T=1, B=1.05, distribution_adjusting=False, base_learner=HAND_STUB).fit(X_HAND, Y_HAND)
    np.testing.assert_allclose(est.distributions_[1, 0], np.array([2, 1, 1, 1, 1]) / 6)
    np.testing.assert_allclose(est.distributions_[1, 1], np.array([1, 2, 1, 1, 1]) / 6)


def test_stop_rule_discards_the_round_that_is_worse_than_chance():
    # b wrong on x_0 and x_1, a wrong on x_0: with B = 3, round 2's ε^b = 0.62 > 1/2.
    X = np.array([[1, 1], [1, 0], [2, 0], [0, 1], [1, 0]], dtype=float)
    est = DSML(T=5, B=3.0, base_learner=HAND_STUB).fit(X, Y_HAND)
    assert est.n_rounds_ == 1 and est.stopped_early_
    e = 0.4
    assert est.alphas_[0, 1] == pytest.approx(0.5 * math.log((1 - e) / e))
    wb = np.array([3 * 1.5**0.5, 1.5**0.5, 1, 1, 1])
    assert (wb[:2].sum() / wb.sum()) > 0.5  # why round 2 was refused
    # A first round worse than chance is kept alone with weight 1.
    bad = np.array([[1, 1], [1, 0], [2, 1], [0, 0], [1, 1]], dtype=float)  # b wrong everywhere
    with pytest.warns(UserWarning, match="first round"):
        est = DSML(T=5, base_learner=HAND_STUB).fit(bad, Y_HAND)
    assert est.n_rounds_ == 1 and est.stopped_early_
    np.testing.assert_allclose(est.alphas_, [[1.0, 1.0]])


# --------------------------------------------------------------------------
# B = 1 and no model reuse = SAMME on each set
# --------------------------------------------------------------------------
def dual_data(n=240, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 4))
    ya = np.digitize(X[:, 0] + 0.5 * X[:, 1] + 0.8 * rng.standard_normal(n), [-0.6, 0.6])
    yb = (X[:, 2] - X[:, 0] + 0.8 * rng.standard_normal(n) > 0).astype(int)
    return X, np.column_stack([ya, yb])


def test_weighted_dsml_without_reuse_and_adjusting_is_sklearn_samme():
    X, Y = dual_data()
    tree = DecisionTreeClassifier(max_depth=2, random_state=0)
    T = 6
    est = DSML(T=T, B=1.0, model_reuse=False, resample=False, base_learner=tree).fit(X, Y)
    assert est.n_rounds_ == T
    for j, L in enumerate(est.n_classes_):
        ada = AdaBoostClassifier(estimator=tree, n_estimators=T, learning_rate=1 / L, random_state=0)
        ada.fit(X, Y[:, j])
        assert len(ada.estimators_) == T
        np.testing.assert_allclose(est.alphas_[:, j], ada.estimator_weights_, rtol=1e-10)
        np.testing.assert_allclose(est.errors_[:, j], ada.estimator_errors_, rtol=1e-10)
        np.testing.assert_array_equal(est.predict(X)[:, j], ada.predict(X))
    # learning_rate=1.0 gives the plain SAMME weights
    est1 = DSML(T=T, B=1.0, model_reuse=False, resample=False, base_learner=tree, learning_rate=1.0).fit(X, Y)
    ada = AdaBoostClassifier(estimator=tree, n_estimators=T, random_state=0).fit(X, Y[:, 0])
    np.testing.assert_allclose(est1.alphas_[:, 0], ada.estimator_weights_[: est1.n_rounds_], rtol=1e-10)


def samme_by_resampling(X, Y, T, seed, make):
    """SAMME with 1/L learning rate and weighted resampling, one set after the other per round,
    drawing from one generator in DSML's documented order (set a, then set b)."""
    rng = np.random.default_rng(seed)
    m = len(X)
    L = [len(np.unique(Y[:, j])) for j in (0, 1)]
    w = [np.full(m, 1 / m), np.full(m, 1 / m)]
    votes = [np.zeros((m, L[0])), np.zeros((m, L[1]))]
    alphas = []
    for _ in range(T):
        idx = [rng.choice(m, size=m, p=w[j]) for j in (0, 1)]
        round_alpha = []
        for j in (0, 1):
            h = make().fit(X[idx[j]], Y[idx[j], j])
            wrong = h.predict(X) != Y[:, j]
            eps = w[j][wrong].sum()
            alpha = (math.log((1 - eps) / eps) + math.log(L[j] - 1)) / L[j]
            w[j] = w[j] * np.exp(alpha * wrong)
            w[j] /= w[j].sum()
            votes[j][np.arange(m), h.predict(X)] += alpha
            round_alpha.append(alpha)
        alphas.append(round_alpha)
    return np.array(alphas), np.column_stack([votes[0].argmax(1), votes[1].argmax(1)])


def test_resampled_dsml_without_reuse_and_adjusting_is_an_independent_samme_loop():
    X, Y = dual_data(seed=1)

    def make():
        return DecisionTreeClassifier(max_depth=3, random_state=0)

    est = DSML(T=5, B=1.0, model_reuse=False, base_learner=make(), random_state=7).fit(X, Y)
    alphas, pred = samme_by_resampling(X, Y, 5, 7, make)
    assert est.n_rounds_ == 5
    np.testing.assert_allclose(est.alphas_, alphas, rtol=1e-10)
    np.testing.assert_array_equal(est.predict(X), pred)
    # B > 1 couples the sets: the distributions differ from the independent loop
    coupled = DSML(T=5, B=1.5, model_reuse=False, base_learner=make(), random_state=7).fit(X, Y)
    assert not np.allclose(coupled.alphas_[1:], alphas[1:])


# --------------------------------------------------------------------------
# Prediction rule (Eq. 10/11)
# --------------------------------------------------------------------------
def hand_fitted_dsml():
    est = DSML()
    est.classes_ = [np.array([0, 1, 2]), np.array([0, 1])]
    est.n_classes_ = (3, 2)
    est.n_features_in_ = 1
    est.raw_set_ = 1
    est.estimators_ = [
        {"raw": ThresholdStub(0), "a": ReuseStub(0, 3), "b": ReuseStub(0, 2)},
        {"raw": ThresholdStub(10), "a": ReuseStub(1, 3), "b": ReuseStub(1, 2)},
        {"raw": ThresholdStub(0), "a": ReuseStub(2, 3), "b": ReuseStub(0, 2)},
    ]
    est.alphas_ = np.array([[0.5, 0.2], [0.3, 0.3], [0.4, 0.4]])
    return est


def test_prediction_follows_eq_10_and_11_round_by_round_chains():
    est = hand_fitted_dsml()
    X = np.array([[5.0], [-5.0]])
    # x = 5: raw_t = 1, 0, 1; h^a_t = 1, 1, 0; h^b_t (reads h^a_t's one-hot) = 1, 0, 0.
    #   votes a: class 1 = .5 + .3, class 0 = .4 -> 1;  votes b: class 0 = .3 + .4, class 1 = .2 -> 0
    # x = −5: raw_t = 0, 0, 0; h^a_t = 0, 1, 2; h^b_t = 0, 0, 0 -> a: 0 (.5 vs .3, .4), b: 0
    np.testing.assert_array_equal(est.predict(X), [[1, 0], [0, 0]])
    staged = list(est.staged_predict(X))
    np.testing.assert_array_equal(staged[0], [[1, 1], [0, 0]])
    np.testing.assert_array_equal(staged[1], [[1, 0], [0, 0]])
    np.testing.assert_array_equal(staged[2], est.predict(X))
    Va, Vb = est.predict_votes(X)
    np.testing.assert_allclose(Va[0], np.array([0.4, 0.8, 0.0]) / 1.2)
    np.testing.assert_allclose(Vb[0], np.array([0.7, 0.2]) / 0.9)


# --------------------------------------------------------------------------
# End to end with the RBF base learner, and the baselines
# --------------------------------------------------------------------------
def test_dsml_end_to_end_labels_staging_and_determinism():
    X, Y = dual_data(n=150, seed=2)
    labels = np.column_stack([np.array(["lo", "mid", "hi"])[Y[:, 0]], np.array(["f", "m"])[Y[:, 1]]])
    base = RBFNetwork(n_centres=0.1)
    a = DSML(T=3, base_learner=base, random_state=3).fit(X, labels)
    b = DSML(T=3, base_learner=base, random_state=3).fit(X, labels)
    P = a.predict(X)
    assert P.shape == (150, 2) and set(P[:, 0]) <= {"lo", "mid", "hi"} and set(P[:, 1]) <= {"f", "m"}
    np.testing.assert_array_equal(P, b.predict(X))
    np.testing.assert_allclose(a.alphas_, b.alphas_)
    staged = list(a.staged_predict(X))
    assert len(staged) == a.n_rounds_
    np.testing.assert_array_equal(staged[-1], P)
    assert (
        a.score(X, labels) == dual_set_accuracy(labels[:, 0], P[:, 0], labels[:, 1], P[:, 1])["accuracy_all"]
    )
    assert a.score(X, labels) > 0.5
    # h^a sees d + L_b columns, h^b sees d + L_a columns (model reuse, one-hot)
    assert a.estimators_[0]["a"].n_features_in_ == 6 and a.estimators_[0]["b"].n_features_in_ == 7
    assert a.estimators_[0]["raw"].n_features_in_ == 4
    scores = DSML(T=2, base_learner=base, reuse="scores").fit(X, Y)
    assert scores.predict(X).shape == (150, 2)
    with pytest.raises(ValueError, match="shape"):
        DSML().fit(X, Y[:, 0])
    with pytest.raises(ValueError, match="parameter B"):
        DSML(B=0.9).fit(X, Y)


def test_decomposition_baselines():
    X, Y = dual_data(n=150, seed=3)
    tree = DecisionTreeClassifier(max_depth=3, random_state=0)
    ind = IndependentDecomposition(tree).fit(X, Y)
    for j in (0, 1):
        np.testing.assert_array_equal(
            ind.predict(X)[:, j],
            DecisionTreeClassifier(max_depth=3, random_state=0).fit(X, Y[:, j]).predict(X),
        )
    Ysub = Y.copy()
    Ysub[(Y[:, 0] == 2) & (Y[:, 1] == 1), 1] = 0  # the pair (2, 1) never occurs in training
    co = CoOccurrenceDecomposition(DecisionTreeClassifier(random_state=0)).fit(X, Ysub)
    assert co.n_pairs_ == 5
    pairs = {tuple(p) for p in co.predict(np.random.default_rng(0).standard_normal((300, 4)))}
    assert (2, 1) not in pairs
    np.testing.assert_array_equal(co.predict(X), Ysub)  # an unpruned tree fits its training pairs
    st = LabelStacking(tree, cv=3).fit(X, Y)
    assert st.first_ == 1  # b has fewer classes
    assert st.estimators_[1].n_features_in_ == 4 + 2
    assert st.predict(X).shape == (150, 2)


class FixedScores(BaseEstimator):
    def fit(self, X, Y):
        self.q_ = Y.shape[1]
        return self

    def decision_function(self, X):
        return np.tile([0.1, 0.9, 0.3, 0.2, -1.0], (len(X), 1))[:, : self.q_]


def test_dual_set_from_multilabel_predicts_the_top_label_within_each_set():
    X, Y = dual_data(n=60, seed=4)
    est = DualSetFromMultiLabel(FixedScores()).fit(X, Y)
    assert est.estimator_.q_ == 5  # 3 labels of set a, then 2 of set b
    np.testing.assert_array_equal(est.predict(X[:2]), [[1, 0], [1, 0]])
    ml = DualSetFromMultiLabel().fit(X, Y)  # ML-RBF
    assert ml.decision_function(X).shape == (60, 5)
    assert ml.predict(X).shape == (60, 2)


# --------------------------------------------------------------------------
# Data
# --------------------------------------------------------------------------
def test_frequency_gender_derivation_is_deterministic_with_the_documented_shape():
    voice = benchmark_file("voice.csv.gz")
    d = frequency_gender(voice)
    again = frequency_gender(voice)
    np.testing.assert_array_equal(d.X, again.X)
    np.testing.assert_array_equal(d.Y, again.Y)
    assert d.X.shape == (3166, 18) and d.X.dtype == np.float64
    assert d.classes_a == ("Q1", "Q2", "Q3", "Q4", "Q5") and d.classes_b == ("female", "male")
    np.testing.assert_array_equal(np.bincount(d.y_a), [633, 633, 633, 633, 634])
    np.testing.assert_array_equal(np.bincount(d.y_b), [1583, 1583])
    assert "meanfreq" not in d.feature_names and "centroid" not in d.feature_names
    assert dict(d.info["duplicate_columns"]) == {"centroid": "meanfreq"}
    assert d.info["duplicate_rows"] == (298, 2403)
    # The classes are the quintiles of meanfreq: ordered, and meanfreq separates them.
    raw = pd.read_csv(voice).drop_duplicates()
    meanfreq = raw["meanfreq"].to_numpy()
    for k in range(4):
        assert meanfreq[d.y_a == k].max() < meanfreq[d.y_a == k + 1].min()
    kept = frequency_gender(voice, keep_frequency_feature=True)
    assert kept.X.shape == (3166, 19) and kept.feature_names[0] == "meanfreq"
    np.testing.assert_array_equal(kept.X[:, 0], meanfreq)
    assert d.sha256 == "1ffaef47c5c80fd038db5d8c6fae49acd4d88bb947bb9b17535ab7e60b52736c"


def write_csv(path, text):
    if str(path).endswith(".gz"):
        with gzip.open(path, "wt") as f:
            f.write(text)
    else:
        path.write_text(text)
    return path


def test_load_dual_set_reads_gzip_derives_and_drops(tmp_path):
    csv = write_csv(
        tmp_path / "t.csv.gz",
        "id,x1,x2,x3,colour,size,x4\n"
        "1,0.5,7,0.5,red,S,1\n2,1.5,8,1.5,blue,L,2\n3,2.5,9,2.5,red,L,3\n3,2.5,9,2.5,red,L,3\n",
    )
    d = load_dual_set(
        csv, "colour", "size", drop=["id"], drop_duplicate_rows=True, drop_duplicate_columns=True
    )
    assert d.feature_names == ("x1", "x2") and d.X.shape == (3, 2)
    assert d.classes_a == ("blue", "red") and d.classes_b == ("L", "S")
    np.testing.assert_array_equal(d.Y, [[1, 1], [0, 0], [1, 0]])
    # x3 copies x1; x4 copies the dropped id, and goes too
    assert d.info["duplicate_columns"] == {"x3": "x1", "x4": "id"} and d.info["duplicate_rows"] == (3,)
    assert d.class_counts().loc["red", "L"] == 1
    big = load_dual_set(
        csv, "big", "size", drop=["id", "colour"], derive=lambda df: df.assign(big=df["x1"] > 1)
    )
    assert big.classes_a == ("False", "True") and "big" not in big.feature_names


def test_load_dual_set_errors_name_the_file_and_the_column(tmp_path):
    csv = write_csv(tmp_path / "t.csv", "x1,x2,colour,size\n0.5,a,red,S\n1.5,b,blue,L\n")
    with pytest.raises(ValueError, match=r"t\.csv.*'shape' \(target_b\)"):
        load_dual_set(csv, "colour", "shape")
    with pytest.raises(ValueError, match=r"t\.csv.*feature column 'x2' is not numeric"):
        load_dual_set(csv, "colour", "size")
    with pytest.raises(ValueError, match=r"t\.csv.*'nope' \(drop\)"):
        load_dual_set(csv, "colour", "size", drop=["nope"])
    gaps = write_csv(tmp_path / "gaps.csv", "x1,colour,size\n0.5,red,S\n,blue,L\n1,,L\n")
    with pytest.raises(ValueError, match=r"gaps\.csv.*'colour' \(target_a\) has 1 missing"):
        load_dual_set(gaps, "colour", "size")
    with pytest.raises(ValueError, match=r"gaps\.csv.*feature column 'x1' has 1 missing"):
        load_dual_set(gaps, "size", "colour", derive=lambda df: df.fillna({"colour": "none"}))
    with pytest.raises(DatasetNotFoundError, match="missing.csv"):
        load_dual_set(tmp_path / "missing.csv", "a", "b")


def test_no_warning_on_a_clean_fit():
    X, Y = dual_data(n=80, seed=5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        DSML(T=2, base_learner=DecisionTreeClassifier(max_depth=2, random_state=0)).fit(X, Y)


# ------------------------------------------------------------------ multi-target ARFF

FIXTURE = Path(__file__).parent / "data" / "two_targets.arff"


def test_multi_target_arff_with_numeric_three_class_targets():
    """MULAN's multi-target shape: the last two attributes are targets declared numeric, −1/0/1."""
    d = load_dual_set(FIXTURE, "trend a", "trend_b", drop=["id"])
    assert d.classes_a == ("-1", "0", "1") and d.classes_b == ("-1", "0", "1")
    np.testing.assert_array_equal(d.y_a, [0, 1, 2, 0, 2, 1, 2, 0])  # index of the value in (-1, 0, 1)
    np.testing.assert_array_equal(d.y_b, [2, 0, 1, 1, 2, 0, 0, 2])
    # nominal features as the MULAN loader encodes them: 3 values one-hot, 2 values by code (no=0)
    assert d.feature_names == ("f1", "f2", "colour=red", "colour=green", "colour=blue", "flag")
    np.testing.assert_array_equal(d.X[:3], [[0.5, 1, 1, 0, 0, 0], [1.5, 2, 0, 1, 0, 1], [2.5, 3, 0, 0, 1, 0]])
    assert d.name == "two_targets" and d.n_classes == (3, 3)


@pytest.mark.parametrize("suffix, pack", [(".bz2", bz2.compress), (".xz", lzma.compress)])
def test_a_csv_table_in_bzip2_or_xz_is_read_and_bounded(tmp_path, monkeypatch, suffix, pack):
    text = "colour,size,x1\nred,S,0.5\nblue,L,1.5\nred,L,2.5\n"
    path = tmp_path / f"t.csv{suffix}"
    path.write_bytes(pack(text.encode()))
    assert load_dual_set(path, "colour", "size").X.ravel().tolist() == [0.5, 1.5, 2.5]
    path.write_bytes(pack(text.encode() + b"\n" * 3_000_000))
    monkeypatch.setenv("MLGRAPH_MAX_DECOMPRESSED_MB", "1")
    with pytest.raises(ValueError, match="data expands to more than 1 MB"):
        load_dual_set(path, "colour", "size")


def test_arff_nominal_targets_sparse_gzip_and_explicit_format(tmp_path):
    text = (
        "@relation r\n@attribute x numeric\n@attribute y numeric\n"
        "@attribute size {S,M,L,XL}\n@attribute kind {cat,dog}\n@data\n"
        "{0 1.5,2 L,3 dog}\n{1 2}\n{0 3,2 S}\n{1 1,3 dog}\n"
    )  # sparse: omitted nominal = first value
    (tmp_path / "t.arff.gz").write_bytes(gzip.compress(text.encode()))
    d = load_dual_set(tmp_path / "t.arff.gz", "size", "kind")
    assert d.classes_a == ("S", "L") and d.classes_b == ("cat", "dog")  # declared order, unused left out
    np.testing.assert_array_equal(d.y_a, [1, 0, 0, 0])
    np.testing.assert_array_equal(d.y_b, [1, 0, 0, 1])
    np.testing.assert_array_equal(d.X, [[1.5, 0], [0, 2], [3, 0], [0, 1]])
    (tmp_path / "t.txt").write_text(text)
    assert load_dual_set(tmp_path / "t.txt", "size", "kind", file_format="arff").classes_a == ("S", "L")
    with pytest.raises(ValueError, match="file_format='xls'"):
        load_dual_set(tmp_path / "t.txt", "size", "kind", file_format="xls")


def test_arff_problems_name_the_file_and_the_attribute(tmp_path):
    with pytest.raises(ValueError, match=r"two_targets.arff: attribute 'id' is an ARFF string attribute"):
        load_dual_set(FIXTURE, "trend a", "trend_b")
    missing = tmp_path / "m.arff"
    missing.write_text(
        "@relation r\n@attribute x numeric\n@attribute a {u,v}\n@attribute b numeric\n@data\n1,u,0\n2,?,1\n"
    )
    with pytest.raises(ValueError, match=r"m.arff: target column 'a' \(target_a\) has 1 missing"):
        load_dual_set(missing, "a", "b")
    with pytest.raises(ValueError, match=r"m.arff: no column 'c' \(target_b\)"):
        load_dual_set(missing, "a", "c")


def test_numeric_csv_targets_are_ordered_as_numbers(tmp_path):
    path = tmp_path / "n.csv"
    pd.DataFrame({"x": [1.0, 2, 3, 4], "a": [10, 2, 1, 2], "b": [0.5, -1, 0.5, -1]}).to_csv(path, index=False)
    d = load_dual_set(path, "a", "b")
    assert d.classes_a == ("1", "2", "10") and d.classes_b == ("-1", "0.5")
    np.testing.assert_array_equal(d.y_a, [2, 1, 0, 1])


def test_dual_set_arff_config_loads_the_fixture():
    from omegaconf import OmegaConf

    from mlgraph.engine.plan import load_from_config

    cfg = OmegaConf.load(Path(__file__).parents[2] / "conf" / "dataset" / "dual_set_arff.yaml")
    cfg.pop("defaults")
    cfg.update(path=str(FIXTURE), target_a="trend a", target_b="trend_b", drop=["id"])
    d = load_from_config(cfg)
    assert isinstance(d, DualSetDataset) and d.name == "dual_set_arff" and d.Y.shape == (8, 2)
