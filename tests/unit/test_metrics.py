"""Tests for mlgraph.metrics: scikit-learn parity, hand-worked values,
brute-force re-implementations and edge cases."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn import metrics as skm

from mlgraph import metrics as M

RANKING = [M.average_precision, M.one_error, M.coverage, M.ranking_loss]


# --------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------
def random_problem(seed: int, n: int = 200, q: int = 7, ties: bool = False):
    """Random labels with some empty / full rows, and scores (integer-valued when ties)."""
    rng = np.random.default_rng(seed)
    Y = (rng.random((n, q)) < rng.uniform(0.1, 0.6)).astype(int)
    Y[:5] = 0  # guaranteed empty rows
    Y[5:8] = 1  # guaranteed full rows
    scores = rng.integers(0, 4, (n, q)).astype(float) if ties else rng.normal(size=(n, q))
    return Y, scores


def rankable(Y, scores):
    """Drop rows with no or all relevant labels (scikit-learn scores them AP=1, RL=0)."""
    keep = (Y.sum(1) > 0) & (Y.sum(1) < Y.shape[1])
    return Y[keep], scores[keep]


def brute_average_precision(Y, scores):
    """Zhang & Zhou AP, written plainly; rank(j) = #labels with score >= s_j."""
    values = []
    for y, s in zip(Y, scores):
        rel = [j for j in range(len(y)) if y[j]]
        if len(rel) in (0, len(y)):
            continue
        rank = {j: sum(s[l] >= s[j] for l in range(len(y))) for j in range(len(y))}
        total = 0.0
        for j in rel:
            total += sum(rank[l] <= rank[j] for l in rel) / rank[j]
        values.append(total / len(rel))
    return float(np.mean(values))


def brute_ranking_loss(Y, scores):
    """Fraction of (relevant, irrelevant) pairs with s_rel <= s_irr, written plainly."""
    values = []
    for y, s in zip(Y, scores):
        rel = [j for j in range(len(y)) if y[j]]
        irr = [k for k in range(len(y)) if not y[k]]
        if not rel or not irr:
            continue
        bad = sum(1 for j in rel for k in irr if s[j] <= s[k])
        values.append(bad / (len(rel) * len(irr)))
    return float(np.mean(values))


# --------------------------------------------------------------------------
# Parity with scikit-learn
# --------------------------------------------------------------------------
@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_ranking_metrics_match_sklearn(seed, ties):
    Y, S = random_problem(seed, ties=ties)
    Yk, Sk = rankable(Y, S)
    assert M.average_precision(Y, S) == pytest.approx(
        skm.label_ranking_average_precision_score(Yk, Sk), rel=1e-12
    )
    assert M.coverage(Y, S) == pytest.approx(skm.coverage_error(Yk, Sk) - 1, rel=1e-12)
    assert M.coverage(Y, S, normalize=True) == pytest.approx(
        (skm.coverage_error(Yk, Sk) - 1) / Y.shape[1], rel=1e-12
    )
    assert M.ranking_loss(Y, S) == pytest.approx(skm.label_ranking_loss(Yk, Sk), rel=1e-12)


@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_macro_auc_matches_sklearn(seed, ties):
    Y, S = random_problem(seed, ties=ties)
    assert (Y.sum(0) > 0).all() and (Y.sum(0) < len(Y)).all()  # every column two-class
    assert M.macro_auc(Y, S) == pytest.approx(skm.roc_auc_score(Y, S, average="macro"), rel=1e-12)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_bipartition_metrics_match_sklearn(seed):
    Y, S = random_problem(seed)
    P = (S > 0.3).astype(int)
    assert (Y.sum(0) > 0).all()  # every label has a positive: no zero_division case
    assert M.hamming_loss(Y, P) == pytest.approx(skm.hamming_loss(Y, P), rel=1e-12)
    assert M.micro_f1(Y, P) == pytest.approx(skm.f1_score(Y, P, average="micro"), rel=1e-12)
    assert M.macro_f1(Y, P) == pytest.approx(skm.f1_score(Y, P, average="macro"), rel=1e-12)


# --------------------------------------------------------------------------
# Brute force
# --------------------------------------------------------------------------
@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize("seed", [3, 4])
def test_against_brute_force(seed, ties):
    Y, S = random_problem(seed, n=60, q=6, ties=ties)
    assert M.average_precision(Y, S) == pytest.approx(brute_average_precision(Y, S), rel=1e-12)
    assert M.ranking_loss(Y, S) == pytest.approx(brute_ranking_loss(Y, S), rel=1e-12)


# --------------------------------------------------------------------------
# Hand-worked examples (q = 4, labels 0..3)
# --------------------------------------------------------------------------
def test_hand_example_no_ties():
    # scores [0.8, 0.9, 0.5, 0.3], relevant {0, 2}
    # ranking: label1 (r1), label0 (r2), label2 (r3), label3 (r4)
    # AP: label0 at r2 -> 1 relevant in top 2 -> 1/2; label2 at r3 -> 2/3; mean 7/12
    # one-error: top label1 is irrelevant -> 1
    # coverage: worst relevant rank 3, minus 1 -> 2 (normalised 2/4)
    # ranking loss: pairs (0,1) bad, (0,3) ok, (2,1) bad, (2,3) ok -> 2/4
    Y = np.array([[1, 0, 1, 0]])
    S = np.array([[0.8, 0.9, 0.5, 0.3]])
    assert M.average_precision(Y, S) == pytest.approx(7 / 12)
    assert M.one_error(Y, S) == 1.0
    assert M.coverage(Y, S) == 2.0
    assert M.coverage(Y, S, normalize=True) == 0.5
    assert M.ranking_loss(Y, S) == 0.5


def test_hand_example_with_ties():
    # scores [0.7, 0.7, 0.9, 0.2], relevant {0, 2}
    # max ranks: label2 -> 1; labels 0, 1 tied -> both 3; label3 -> 4
    # AP: label2 at r1 -> 1/1; label0 at r3 -> relevant {2, 0} -> 2/3; mean 5/6
    # one-error: unique top label2 is relevant -> 0
    # coverage: worst relevant rank 3, minus 1 -> 2
    # ranking loss: (0,1) tie counts as bad, (0,3), (2,1), (2,3) ok -> 1/4
    Y = np.array([[1, 0, 1, 0]])
    S = np.array([[0.7, 0.7, 0.9, 0.2]])
    assert M.average_precision(Y, S) == pytest.approx(5 / 6)
    assert M.one_error(Y, S) == 0.0
    assert M.coverage(Y, S) == 2.0
    assert M.ranking_loss(Y, S) == 0.25


def test_one_error_ties_at_top_are_pessimistic():
    # labels 0 and 1 share the top score: an error unless both are relevant
    S = np.array([[0.9, 0.9, 0.1, 0.1]])
    assert M.one_error(np.array([[1, 0, 0, 0]]), S) == 1.0
    assert M.one_error(np.array([[1, 1, 0, 0]]), S) == 0.0


def test_hand_example_bipartition():
    # Y  = [[1,0,1],[0,1,0]];  P = [[1,1,0],[0,1,0]]
    # hamming: wrong entries (0,1), (0,2) -> 2/6
    # per label (TP, FP, FN): l0 (1,0,0) F1=1; l1 (1,1,0) F1=2/3; l2 (0,0,1) F1=0
    # macro-F1 = (1 + 2/3 + 0)/3 = 5/9;  micro: TP=2, FP=1, FN=1 -> 4/6
    Y = np.array([[1, 0, 1], [0, 1, 0]])
    P = np.array([[1, 1, 0], [0, 1, 0]])
    assert M.hamming_loss(Y, P) == pytest.approx(1 / 3)
    assert M.macro_f1(Y, P) == pytest.approx(5 / 9)
    assert M.micro_f1(Y, P) == pytest.approx(2 / 3)


def test_hand_example_auc():
    # label 0: y = [1,0,1,0], s = [0.9,0.9,0.3,0.1]
    # pos x neg pairs: (0,1) tie 1/2, (0,3) 1, (2,1) 0, (2,3) 1 -> 2.5/4 = 0.625
    # label 1: y = [0,1,1,0], s = [0.1,0.2,0.3,0.4]: pairs (1,0) 1, (1,3) 0, (2,0) 1, (2,3) 0 -> 0.5
    Y = np.array([[1, 0], [0, 1], [1, 1], [0, 0]])
    S = np.array([[0.9, 0.1], [0.9, 0.2], [0.3, 0.3], [0.1, 0.4]])
    assert M.macro_auc(Y, S) == pytest.approx((0.625 + 0.5) / 2)


# --------------------------------------------------------------------------
# Edge cases
# --------------------------------------------------------------------------
def test_empty_and_full_rows_are_excluded():
    # row 0 as in test_hand_example_no_ties; rows 1 (empty) and 2 (full) must not count
    Y = np.array([[1, 0, 1, 0], [0, 0, 0, 0], [1, 1, 1, 1]])
    S = np.array([[0.8, 0.9, 0.5, 0.3], [0.1, 0.2, 0.3, 0.4], [0.4, 0.3, 0.2, 0.1]])
    assert M.average_precision(Y, S) == pytest.approx(7 / 12)
    assert M.one_error(Y, S) == 1.0
    assert M.coverage(Y, S) == 2.0
    assert M.ranking_loss(Y, S) == 0.5
    # scikit-learn, by contrast, gives the empty/full rows AP = 1 and RL = 0
    assert skm.label_ranking_average_precision_score(Y, S) == pytest.approx((7 / 12 + 2) / 3)
    assert skm.label_ranking_loss(Y, S) == pytest.approx(0.5 / 3)


@pytest.mark.parametrize("fn", RANKING)
def test_ranking_metrics_nan_when_no_rankable_row(fn):
    Y = np.array([[0, 0, 0], [1, 1, 1]])
    assert math.isnan(fn(Y, np.random.default_rng(0).random(Y.shape)))


def test_macro_f1_zero_division():
    # label 2 has no positives and none predicted; labels 0, 1 are perfect
    Y = np.array([[1, 0, 0], [0, 1, 0]])
    assert M.macro_f1(Y, Y) == 1.0
    assert M.macro_f1(Y, Y, zero_division=0.0) == pytest.approx(2 / 3)
    assert M.macro_f1(Y, Y, zero_division=0.0) == pytest.approx(
        skm.f1_score(Y, Y, average="macro", zero_division=0.0)
    )
    assert M.macro_f1(Y, Y) == skm.f1_score(Y, Y, average="macro", zero_division=1.0)
    # a label with no positives but a false positive scores 0, not zero_division
    P = np.array([[1, 0, 1], [0, 1, 0]])
    assert M.macro_f1(Y, P) == pytest.approx(2 / 3)


def test_micro_f1_zero_division():
    Z = np.zeros((3, 2), dtype=int)
    assert M.micro_f1(Z, Z) == 1.0
    assert M.micro_f1(Z, Z, zero_division=0.0) == 0.0
    assert M.micro_f1(Z, np.ones_like(Z)) == 0.0


def test_macro_auc_skips_one_class_labels():
    # label 1 is all-negative and label 2 all-positive: only label 0 counts
    Y = np.array([[1, 0, 1], [0, 0, 1], [1, 0, 1], [0, 0, 1]])
    S = np.array([[0.9, 0.5, 0.1], [0.2, 0.1, 0.9], [0.8, 0.3, 0.2], [0.4, 0.2, 0.3]])
    assert M.macro_auc(Y, S) == 1.0
    assert math.isnan(M.macro_auc(Y[:, 1:], S[:, 1:]))


def test_sparse_and_bool_labels_accepted():
    Y, S = random_problem(5)
    expected = M.average_precision(Y, S)
    assert M.average_precision(sp.csr_matrix(Y), S) == expected
    assert M.average_precision(Y.astype(bool), S) == expected


def test_shape_and_value_errors():
    Y = np.array([[1, 0], [0, 1]])
    with pytest.raises(ValueError, match="scores"):
        M.average_precision(Y, np.zeros((2, 3)))
    with pytest.raises(ValueError, match="Y_pred"):
        M.hamming_loss(Y, np.zeros((3, 2)))
    with pytest.raises(ValueError, match="Y must be"):
        M.coverage(np.array([1, 0]), np.array([0.1, 0.2]))
    with pytest.raises(ValueError, match="0/1"):
        M.micro_f1(np.array([[2, 0]]), np.array([[1, 0]]))
    with pytest.raises(ValueError, match="finite"):
        M.ranking_loss(Y, np.array([[np.nan, 0.0], [0.1, 0.2]]))


def test_dual_set_accuracy():
    # set a right on instances 0, 1, 3; set b right on 0, 2, 3; both on 0, 3
    out = M.dual_set_accuracy(
        ya_true=[0, 1, 2, 1], ya_pred=[0, 1, 0, 1], yb_true=["x", "y", "x", "y"], yb_pred=["x", "x", "x", "y"]
    )
    assert out == {"accuracy_a": 0.75, "accuracy_b": 0.75, "accuracy_all": 0.5}
    with pytest.raises(ValueError, match="yb_pred"):
        M.dual_set_accuracy([0, 1], [0, 1], [0, 1], [0, 1, 1])
    with pytest.raises(ValueError, match="ya_true"):
        M.dual_set_accuracy([[0, 1]], [[0, 1]], [[0, 1]], [[0, 1]])


# --------------------------------------------------------------------------
# Registry and evaluate()
# --------------------------------------------------------------------------
def test_metrics_registry():
    assert set(M.METRICS) == {
        "avg_precision", "micro_f1", "macro_f1", "hamming_loss", "one_error",
        "coverage", "coverage_norm", "ranking_loss", "macro_auc",
    }  # fmt: skip
    for fn, kind, greater_is_better in M.METRICS.values():
        assert callable(fn) and kind in ("scores", "pred") and isinstance(greater_is_better, bool)
    assert [k for k, spec in M.METRICS.items() if spec.greater_is_better] == [
        "avg_precision", "micro_f1", "macro_f1", "macro_auc",
    ]  # fmt: skip


def test_evaluate_all_and_subset():
    Y, S = random_problem(6)
    P = (S > 0).astype(int)
    out = M.evaluate(Y, S, P)
    assert list(out) == list(M.METRICS)
    assert all(isinstance(v, float) for v in out.values())
    assert out["coverage_norm"] == pytest.approx(out["coverage"] / Y.shape[1])
    assert out["avg_precision"] == M.average_precision(Y, S)
    assert out["macro_f1"] == M.macro_f1(Y, P)
    assert M.evaluate(Y, S, None, metrics=["one_error"]) == {"one_error": M.one_error(Y, S)}


def test_evaluate_errors():
    Y, S = random_problem(7, n=20)
    P = (S > 0).astype(int)
    with pytest.raises(ValueError, match="scores"):
        M.evaluate(Y, S[:, :-1], P)
    with pytest.raises(ValueError, match="Y_pred"):
        M.evaluate(Y, S, P[:-1])
    with pytest.raises(ValueError, match="finite"):
        M.evaluate(Y, np.where(S > 1, np.inf, S), P)
    with pytest.raises(ValueError, match="unknown metrics"):
        M.evaluate(Y, S, P, metrics=["accuracy"])
    with pytest.raises(ValueError, match="Y_pred"):
        M.evaluate(Y, S, None, metrics=["micro_f1"])
