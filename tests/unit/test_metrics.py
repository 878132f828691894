"""Tests for mlgraph.evaluation.metrics: hand-worked values for every convention, a literal port of
MULAN's measures, scikit-learn parity where the definitions coincide, and edge cases."""

from __future__ import annotations

import inspect
import math
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn import metrics as skm
from sklearn.exceptions import UndefinedMetricWarning

from mlgraph.evaluation import metrics as M

RANKING = [M.average_precision, M.one_error, M.coverage, M.ranking_loss]
EXAMPLE_BASED = [M.subset_accuracy, M.example_precision, M.example_recall, M.example_f1, M.jaccard]


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


def random_predictions(Y, scores):
    """Thresholded scores with empty and full predicted sets on empty, full and mixed rows."""
    P = (scores > 0.3).astype(int)
    P[[0, 5, 10, 11]] = 0  # empty prediction on an empty row, a full row, two mixed rows
    P[[1, 6, 12]] = 1  # full prediction on an empty row, a full row, a mixed row
    return P


def rankable(Y, scores):
    """Drop rows with no or all relevant labels."""
    keep = (Y.sum(1) > 0) & (Y.sum(1) < Y.shape[1])
    return Y[keep], scores[keep]


def brute_average_precision(Y, scores):
    """Zhang & Zhou AP, written plainly; rank(j) = #labels with score >= s_j; rankable rows."""
    values = []
    for y, s in zip(Y, scores, strict=True):
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
    """Fraction of (relevant, irrelevant) pairs with s_rel <= s_irr, written plainly; rankable rows."""
    values = []
    for y, s in zip(Y, scores, strict=True):
        rel = [j for j in range(len(y)) if y[j]]
        irr = [k for k in range(len(y)) if not y[k]]
        if not rel or not irr:
            continue
        bad = sum(1 for j in rel for k in irr if s[j] <= s[k])
        values.append(bad / (len(rel) * len(irr)))
    return float(np.mean(values))


def mulan_ranks(s):
    """MultiLabelOutput.ranksFromValues: a stable ascending sort, the last position ranked 1."""
    q = len(s)
    ranks = [0] * q
    for position, j in enumerate(sorted(range(q), key=lambda j: s[j])):
        ranks[j] = q - position
    return ranks


def mulan_measures(Y, scores):
    """Literal port of MULAN's AveragePrecision, OneError, Coverage and RankingLoss (the
    updateRanking / computeLoss loops of mulan.evaluation), averaged as Evaluator does."""
    sums = {"ap": [], "one_error": [], "coverage": [], "ranking_loss": []}
    for y, s in zip(Y, scores, strict=True):
        q, ranking = len(y), mulan_ranks(s)
        relevant = [j for j in range(q) if y[j]]
        irrelevant = [j for j in range(q) if not y[j]]
        if relevant:  # AveragePrecision skips rows with no relevant label
            sums["ap"].append(
                sum(sum(ranking[rr] <= ranking[r] for rr in relevant) / ranking[r] for r in relevant)
                / len(relevant)
            )
        top = ranking.index(1)
        sums["one_error"].append(0.0 if y[top] else 1.0)
        how_deep = 0
        for rank in range(q, 0, -1):
            if y[ranking.index(rank)]:
                how_deep = rank - 1
                break
        sums["coverage"].append(how_deep)
        if relevant and irrelevant:
            bad = sum(ranking[k] > ranking[l] for k in relevant for l in irrelevant)
            sums["ranking_loss"].append(bad / (len(relevant) * len(irrelevant)))
        else:
            sums["ranking_loss"].append(0.0)
    return {k: float(np.mean(v)) for k, v in sums.items()}


# --------------------------------------------------------------------------
# MULAN's rules (the defaults)
# --------------------------------------------------------------------------
@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize("seed", [0, 1])
def test_defaults_match_a_port_of_mulan(seed, ties):
    Y, S = random_problem(seed, n=80, q=6, ties=ties)
    expected = mulan_measures(Y, S)
    assert M.average_precision(Y, S) == pytest.approx(expected["ap"], rel=1e-12)
    assert M.one_error(Y, S) == pytest.approx(expected["one_error"], rel=1e-12)
    assert M.coverage(Y, S) == pytest.approx(expected["coverage"], rel=1e-12)
    assert M.ranking_loss(Y, S) == pytest.approx(expected["ranking_loss"], rel=1e-12)


def mulan_f_measure(tp, fp, fn):
    """InformationRetrievalMeasures.fMeasure with beta = 1."""
    if tp + fp + fn == 0:
        return 1.0
    return (2 * tp) / (2 * tp + fn + fp)


def mulan_precision(tp, fp, fn):
    """InformationRetrievalMeasures.precision."""
    return 1.0 if tp + fp + fn == 0 else (0.0 if tp + fp == 0 else tp / (tp + fp))


def mulan_recall(tp, fp, fn):
    """InformationRetrievalMeasures.recall."""
    return 1.0 if tp + fp + fn == 0 else (0.0 if tp + fn == 0 else tp / (tp + fn))


def weka_roc_area(actual, probs):
    """weka.classifiers.evaluation.ThresholdCurve: getCurve(predictions, 1) then getROCArea,
    line by line (NaN when a class is absent: 0/0)."""
    n = len(probs)
    tot_pos = float(sum(actual))
    tot_neg = n - tot_pos
    order = sorted(range(n), key=lambda i: probs[i])
    tp, fp, fn, tn = tot_pos, tot_neg, 0.0, 0.0
    points, threshold, cum_pos, cum_neg = [], 0.0, 0.0, 0.0
    for i, idx in enumerate(order):
        if i == 0 or probs[idx] > threshold:
            tp, fn, fp, tn = tp - cum_pos, fn + cum_pos, fp - cum_neg, tn + cum_neg
            threshold = probs[idx]
            points.append((tp, fp))
            cum_pos = cum_neg = 0.0
            if i == n - 1:
                break
        if actual[idx]:
            cum_pos += 1
        else:
            cum_neg += 1
    if fn != tot_pos or tn != tot_neg:
        points.append((0.0, 0.0))
    area, cum = 0.0, 0.0
    for i, (tp_i, fp_i) in enumerate(points):
        cip, cin = (tp_i - points[i + 1][0], fp_i - points[i + 1][1]) if i < len(points) - 1 else (tp_i, fp_i)
        area += cip * (cum + 0.5 * cin)
        cum += cin
    total = points[0][0] * points[0][1]
    return area / total if total else float("nan")


def mulan_bipartition_measures(Y, P, S):
    """MULAN's HammingLoss, SubsetAccuracy, ExampleBasedPrecision/Recall/FMeasure,
    MicroFMeasure, MacroFMeasure, MacroAUC and MicroAUC, per instance and label as the
    measure classes accumulate them."""
    Yb, Pb = Y.astype(bool), P.astype(bool)
    rows = []
    for y, z in zip(Yb, Pb, strict=True):
        tp, fp, fn = float((y & z).sum()), float((~y & z).sum()), float((y & ~z).sum())
        rows.append((mulan_precision(tp, fp, fn), mulan_recall(tp, fp, fn), mulan_f_measure(tp, fp, fn)))
    tp, fp, fn = (Yb & Pb).sum(0), (~Yb & Pb).sum(0), (Yb & ~Pb).sum(0)
    label_auc = [weka_roc_area(Yb[:, j], S[:, j]) for j in range(Y.shape[1])]
    return {
        "hamming_loss": float(np.mean([(y != z).sum() / len(y) for y, z in zip(Yb, Pb, strict=True)])),
        "subset_accuracy": float(np.mean([(y == z).all() for y, z in zip(Yb, Pb, strict=True)])),
        "example_precision": float(np.mean([r[0] for r in rows])),
        "example_recall": float(np.mean([r[1] for r in rows])),
        "example_f1": float(np.mean([r[2] for r in rows])),
        "micro_f1": mulan_f_measure(tp.sum(), fp.sum(), fn.sum()),
        "macro_f1": float(np.mean([mulan_f_measure(*c) for c in zip(tp, fp, fn, strict=True)])),
        "macro_auc": float(np.mean(label_auc)),  # Utils.mean: NaN if any label's area is NaN
        "micro_auc": weka_roc_area(Yb.ravel(), S.ravel()),
    }


@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_profile_mulan_matches_a_port_of_every_mulan_measure(seed, ties):
    """Every measure under profile="mulan" is MULAN's, with labels that are never positive (F1
    with TP = FP = FN = 0, macro-AUC of a one-class label) and empty and full rows; the default
    profile differs exactly there."""
    Y, S = random_problem(seed, n=60, q=6, ties=ties)
    P = random_predictions(Y, S)
    Y[:, 5], P[:, 5] = 0, 0  # never positive, never predicted: F1 undefined, no AUC
    Y[:, 4], P[:, 4] = 0, (S[:, 4] > 1.5).astype(int)  # never positive, predicted: F1 = 0
    expected = {**mulan_measures(Y, S), **mulan_bipartition_measures(Y, P, S)}
    expected["avg_precision"] = expected.pop("ap")
    got = M.evaluate(Y, S, P, profile="mulan")
    for name, value in expected.items():
        assert got[name] == pytest.approx(value, rel=1e-12, nan_ok=True), name
    assert np.isnan(got["macro_auc"])
    with pytest.warns(M.DegenerateLabelWarning):
        default = M.evaluate(Y, S, P)
    differ = {"macro_f1", "macro_auc"}
    for name in set(expected) - differ:
        assert default[name] == pytest.approx(got[name], rel=1e-12), name
    assert default["macro_f1"] == pytest.approx(got["macro_f1"] - 1 / 6)  # label 5: 0 instead of 1
    two_class = [j for j in range(6) if 0 < Y[:, j].sum() < len(Y)]
    assert default["macro_auc"] == pytest.approx(
        np.mean([weka_roc_area(Y[:, j], S[:, j]) for j in two_class])
    )
    assert default["macro_auc"] == pytest.approx(skm.roc_auc_score(Y[:, two_class], S[:, two_class]))


def test_micro_f1_when_nothing_is_positive():
    """MULAN scores F1 = 1 when nothing is positive nor predicted; the default 0 (warned)."""
    Z = np.zeros((4, 3), dtype=int)
    assert M.evaluate(Z, None, Z, ["micro_f1", "macro_f1"], profile="mulan") == {
        "micro_f1": 1.0,
        "macro_f1": 1.0,
    }
    with pytest.warns(M.DegenerateLabelWarning):
        assert M.evaluate(Z, None, Z, ["micro_f1", "macro_f1"]) == {"micro_f1": 0.0, "macro_f1": 0.0}


def test_macro_auc_single_class_rule():
    Y = np.array([[1, 0], [0, 0], [1, 0], [0, 0]])
    S = np.array([[0.9, 0.1], [0.2, 0.3], [0.6, 0.2], [0.7, 0.4]])
    assert M.macro_auc(Y, S) == pytest.approx(weka_roc_area(Y[:, 0], S[:, 0])) == 0.75
    assert np.isnan(M.macro_auc(Y, S, auc_single_class="nan"))
    assert M.macro_auc(Y[:, :1], S[:, :1], auc_single_class="nan") == 0.75
    with pytest.warns(UndefinedMetricWarning, match="Only one class"):  # scikit-learn 1.9: NaN too
        assert np.isnan(skm.roc_auc_score(Y, S, average="macro"))
    with pytest.raises(ValueError, match="auc_single_class"):
        M.macro_auc(Y, S, auc_single_class="zero")


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_coverage_and_sklearn_coverage_error(seed):
    """With ties="max": coverage = coverage_error − 1 + n_empty / n (scikit-learn scores an
    empty row 0, not 1, before the −1); exactly coverage_error − 1 without empty rows."""
    Y, S = random_problem(seed, ties=True)
    n_empty = (Y.sum(1) == 0).sum()
    assert n_empty >= 5
    assert M.coverage(Y, S, ties="max") == pytest.approx(skm.coverage_error(Y, S) - 1 + n_empty / len(Y))
    keep = Y.sum(1) > 0
    assert M.coverage(Y[keep], S[keep], ties="max") == pytest.approx(skm.coverage_error(Y[keep], S[keep]) - 1)
    # a small case: one empty row of three, 4/3 here and 1 by coverage_error − 1
    Y3 = np.array([[1, 0, 0], [0, 0, 0], [1, 0, 0]])
    S3 = np.array([[0.1, 0.5, 0.9], [0.3, 0.2, 0.1], [0.1, 0.2, 0.3]])
    assert M.coverage(Y3, S3, ties="max") == pytest.approx(4 / 3)
    assert skm.coverage_error(Y3, S3) - 1 == pytest.approx(1.0)


def test_empty_and_full_rows_hand_example():
    # row 0: scores [0.8, 0.9, 0.5, 0.3], relevant {0, 2} (see test_hand_example_no_ties):
    #        AP 7/12, one-error 1, coverage 2, ranking loss 1/2
    # row 1: empty.  MULAN: AP skipped, one-error 1 (top label irrelevant), coverage 0, RL 0
    # row 2: full.   MULAN: AP 1, one-error 0, coverage 4 - 1 = 3, RL 0
    Y = np.array([[1, 0, 1, 0], [0, 0, 0, 0], [1, 1, 1, 1]])
    S = np.array([[0.8, 0.9, 0.5, 0.3], [0.1, 0.2, 0.3, 0.4], [0.4, 0.3, 0.2, 0.1]])
    for ties in ("mulan", "max"):  # no tie in these rows
        assert M.average_precision(Y, S, ties=ties) == pytest.approx((7 / 12 + 1) / 2)
        assert M.one_error(Y, S, ties=ties) == pytest.approx(2 / 3)
        assert M.coverage(Y, S, ties=ties) == pytest.approx(5 / 3)
        assert M.coverage(Y, S, normalize=True, ties=ties) == pytest.approx(5 / 12)
        assert M.ranking_loss(Y, S, ties=ties) == pytest.approx(1 / 6)
        # exclude: rows 1 and 2 do not count at all
        assert M.average_precision(Y, S, "exclude", ties) == pytest.approx(7 / 12)
        assert M.one_error(Y, S, "exclude", ties) == 1.0
        assert M.coverage(Y, S, empty_rows="exclude", ties=ties) == 2.0
        assert M.ranking_loss(Y, S, "exclude", ties) == 0.5


def test_only_empty_or_only_full_rows():
    S = np.random.default_rng(0).random((2, 3))
    empty, full = np.zeros((2, 3), int), np.ones((2, 3), int)
    assert math.isnan(M.average_precision(empty, S))  # no relevant label to average over
    assert (M.one_error(empty, S), M.coverage(empty, S), M.ranking_loss(empty, S)) == (1.0, 0.0, 0.0)
    assert (M.average_precision(full, S), M.one_error(full, S)) == (1.0, 0.0)
    assert (M.coverage(full, S), M.ranking_loss(full, S)) == (2.0, 0.0)
    for fn in RANKING:
        assert math.isnan(fn(np.vstack([empty, full]), np.vstack([S, S]), empty_rows="exclude"))


def test_ties_hand_example():
    # scores [0.7, 0.7, 0.9, 0.2], relevant {1, 2}
    # ties="mulan": label2 r1; tied labels 0, 1 -> the higher index first: label1 r2, label0 r3;
    #   AP: label2 1/1, label1 2/2 -> 1; coverage 2 - 1 = 1; pairs (1,0),(1,3),(2,0),(2,3) all right -> 0
    # ties="max": labels 0, 1 both rank 3; AP: label2 1/1, label1 2/3 -> 5/6; coverage 3 - 1 = 2;
    #   the tied pair (1,0) counts as wrong -> 1/4
    Y = np.array([[0, 1, 1, 0]])
    S = np.array([[0.7, 0.7, 0.9, 0.2]])
    assert M.average_precision(Y, S) == 1.0
    assert M.coverage(Y, S) == 1.0
    assert M.ranking_loss(Y, S) == 0.0
    assert M.average_precision(Y, S, ties="max") == pytest.approx(5 / 6)
    assert M.coverage(Y, S, ties="max") == 2.0
    assert M.ranking_loss(Y, S, ties="max") == 0.25
    # relevant {0, 2}: MULAN ranks the irrelevant label 1 above label 0 -> same values as max
    Y = np.array([[1, 0, 1, 0]])
    for ties in ("mulan", "max"):
        assert M.average_precision(Y, S, ties=ties) == pytest.approx(5 / 6)
        assert M.one_error(Y, S, ties=ties) == 0.0
        assert M.coverage(Y, S, ties=ties) == 2.0
        assert M.ranking_loss(Y, S, ties=ties) == 0.25


def test_one_error_ties_at_the_top():
    # labels 0 and 1 share the top score
    S = np.array([[0.9, 0.9, 0.1, 0.1]])
    # MULAN: label 1 (the higher index) is ranked first
    assert M.one_error(np.array([[1, 0, 0, 0]]), S) == 1.0
    assert M.one_error(np.array([[0, 1, 0, 0]]), S) == 0.0
    # max: an error unless both tied labels are relevant
    assert M.one_error(np.array([[1, 0, 0, 0]]), S, ties="max") == 1.0
    assert M.one_error(np.array([[0, 1, 0, 0]]), S, ties="max") == 1.0
    assert M.one_error(np.array([[1, 1, 0, 0]]), S, ties="max") == 0.0


@pytest.mark.parametrize("seed", [0, 1])
def test_max_ties_do_not_depend_on_label_order(seed):
    Y, S = random_problem(seed, ties=True)
    perm = np.random.default_rng(seed).permutation(Y.shape[1])
    for fn in RANKING:
        assert fn(Y[:, perm], S[:, perm], ties="max") == pytest.approx(fn(Y, S, ties="max"), rel=1e-12)
    # MULAN's tie-break follows the label index: reversing the labels changes the values here
    assert M.one_error(Y[:, ::-1], S[:, ::-1]) != M.one_error(Y, S)


# --------------------------------------------------------------------------
# Parity with scikit-learn (ties="max" is scikit-learn's rule)
# --------------------------------------------------------------------------
@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_ranking_metrics_match_sklearn(seed, ties):
    Y, S = random_problem(seed, ties=ties)
    nonempty = Y.sum(1) > 0
    # MULAN's row rules: AP skips empty rows only (scikit-learn scores a full row 1, as MULAN)
    assert M.average_precision(Y, S, ties="max") == pytest.approx(
        skm.label_ranking_average_precision_score(Y[nonempty], S[nonempty]), rel=1e-12
    )
    # scikit-learn's coverage_error scores an empty row 0, as MULAN; others are ours + 1
    assert M.coverage(Y, S, ties="max") == pytest.approx(
        skm.coverage_error(Y, S) - nonempty.mean(), rel=1e-12
    )
    assert M.ranking_loss(Y, S, ties="max") == pytest.approx(skm.label_ranking_loss(Y, S), rel=1e-12)
    # exclude: the same formulas on the rankable rows
    Yk, Sk = rankable(Y, S)
    assert M.average_precision(Y, S, "exclude", "max") == pytest.approx(
        skm.label_ranking_average_precision_score(Yk, Sk), rel=1e-12
    )
    assert M.coverage(Y, S, empty_rows="exclude", ties="max") == pytest.approx(
        skm.coverage_error(Yk, Sk) - 1, rel=1e-12
    )
    assert M.coverage(Y, S, normalize=True, empty_rows="exclude", ties="max") == pytest.approx(
        (skm.coverage_error(Yk, Sk) - 1) / Y.shape[1], rel=1e-12
    )
    assert M.ranking_loss(Y, S, "exclude", "max") == pytest.approx(skm.label_ranking_loss(Yk, Sk), rel=1e-12)


@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize("seed", [3, 4])
def test_exclude_max_against_brute_force(seed, ties):
    Y, S = random_problem(seed, n=60, q=6, ties=ties)
    assert M.average_precision(Y, S, "exclude", "max") == pytest.approx(
        brute_average_precision(Y, S), rel=1e-12
    )
    assert M.ranking_loss(Y, S, "exclude", "max") == pytest.approx(brute_ranking_loss(Y, S), rel=1e-12)


@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_auc_matches_sklearn(seed, ties):
    Y, S = random_problem(seed, ties=ties)
    assert (Y.sum(0) > 0).all() and (Y.sum(0) < len(Y)).all()  # every column two-class
    assert M.macro_auc(Y, S) == pytest.approx(skm.roc_auc_score(Y, S, average="macro"), rel=1e-12)
    assert M.micro_auc(Y, S) == pytest.approx(skm.roc_auc_score(Y, S, average="micro"), rel=1e-12)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_bipartition_metrics_match_sklearn(seed):
    Y, S = random_problem(seed)
    P = random_predictions(Y, S)
    assert M.hamming_loss(Y, P) == pytest.approx(skm.hamming_loss(Y, P), rel=1e-12)
    assert M.subset_accuracy(Y, P) == pytest.approx(skm.accuracy_score(Y, P), rel=1e-12)
    # rows with both sets empty score 1 in MULAN, zero_division in scikit-learn
    assert M.jaccard(Y, P) == pytest.approx(skm.jaccard_score(Y, P, average="samples", zero_division=1.0))
    assert M.example_f1(Y, P) == pytest.approx(skm.f1_score(Y, P, average="samples", zero_division=1.0))
    # MULAN scores precision 0 where only the predicted set is empty (recall: only the true
    # set), scikit-learn zero_division (here 1): the difference is the share of such rows
    only_pred_empty = (P.sum(1) == 0) & (Y.sum(1) > 0)
    only_true_empty = (Y.sum(1) == 0) & (P.sum(1) > 0)
    assert only_pred_empty.any() and only_true_empty.any()
    assert M.example_precision(Y, P) == pytest.approx(
        skm.precision_score(Y, P, average="samples", zero_division=1.0) - only_pred_empty.mean()
    )
    assert M.example_recall(Y, P) == pytest.approx(
        skm.recall_score(Y, P, average="samples", zero_division=1.0) - only_true_empty.mean()
    )


@pytest.mark.parametrize("zero_division", ["warn", 0.0, 1.0, np.nan])
@pytest.mark.parametrize("seed", [0, 1])
def test_f1_matches_sklearn_with_degenerate_labels(seed, zero_division):
    Y, S = random_problem(seed)
    P = random_predictions(Y, S)
    Y[:, [0, 3]] = 0  # labels with no positive ...
    P[:, 0] = 0  # ... label 0 never predicted (F1 undefined), label 3 predicted somewhere
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for average, fn in (("micro", M.micro_f1), ("macro", M.macro_f1)):
            expected = skm.f1_score(Y, P, average=average, zero_division=zero_division)
            assert fn(Y, P, zero_division=zero_division) == pytest.approx(expected, rel=1e-12)


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
    for empty_rows in ("mulan", "exclude"):
        for ties in ("mulan", "max"):
            options = {"empty_rows": empty_rows, "ties": ties}
            assert M.average_precision(Y, S, **options) == pytest.approx(7 / 12)
            assert M.one_error(Y, S, **options) == 1.0
            assert M.coverage(Y, S, **options) == 2.0
            assert M.coverage(Y, S, normalize=True, **options) == 0.5
            assert M.ranking_loss(Y, S, **options) == 0.5


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


def test_hand_example_example_based():
    # row  Y        P        |P&Z| |Z| |P| |P|Z|   precision recall F1   Jaccard subset
    # 0    [1,1,0]  [1,0,0]   1     1   2   2      1         1/2    2/3  1/2     0
    # 1    [0,0,0]  [0,0,0]   0     0   0   0      1         1      1    1       1   (both empty)
    # 2    [1,0,0]  [0,0,0]   0     0   1   1      0         0      0    0       0   (Z empty)
    # 3    [0,0,0]  [0,1,0]   0     1   0   1      0         0      0    0       0   (P empty)
    # 4    [1,1,1]  [1,1,1]   3     3   3   3      1         1      1    1       1
    Y = np.array([[1, 1, 0], [0, 0, 0], [1, 0, 0], [0, 0, 0], [1, 1, 1]])
    P = np.array([[1, 0, 0], [0, 0, 0], [0, 0, 0], [0, 1, 0], [1, 1, 1]])
    assert M.example_precision(Y, P) == pytest.approx(3 / 5)
    assert M.example_recall(Y, P) == pytest.approx((1 / 2 + 2) / 5)
    assert M.example_f1(Y, P) == pytest.approx((2 / 3 + 2) / 5)
    assert M.jaccard(Y, P) == pytest.approx((1 / 2 + 2) / 5)
    assert M.subset_accuracy(Y, P) == pytest.approx(2 / 5)


def test_hand_example_auc():
    # label 0: y = [1,0,1,0], s = [0.9,0.9,0.3,0.1]
    # pos x neg pairs: (0,1) tie 1/2, (0,3) 1, (2,1) 0, (2,3) 1 -> 2.5/4 = 0.625
    # label 1: y = [0,1,1,0], s = [0.1,0.2,0.3,0.4]: pairs (1,0) 1, (1,3) 0, (2,0) 1, (2,3) 0 -> 0.5
    # micro: positives {0.9, 0.3, 0.2, 0.3} vs negatives {0.9, 0.1, 0.1, 0.4}: of the 16 pairs,
    #   0.9 beats 3 and ties 1 (3.5), each 0.3 beats 2 (2+2), 0.2 beats 2 (2) -> 9.5/16
    Y = np.array([[1, 0], [0, 1], [1, 1], [0, 0]])
    S = np.array([[0.9, 0.1], [0.9, 0.2], [0.3, 0.3], [0.1, 0.4]])
    assert M.macro_auc(Y, S) == pytest.approx((0.625 + 0.5) / 2)
    assert M.micro_auc(Y, S) == pytest.approx(9.5 / 16)


# --------------------------------------------------------------------------
# zero_division, degenerate labels and diagnostics
# --------------------------------------------------------------------------
def test_macro_f1_zero_division():
    # label 2 has no positive and none predicted; labels 0, 1 are perfect
    Y = np.array([[1, 0, 0], [0, 1, 0]])
    with pytest.warns(M.DegenerateLabelWarning, match="macro_f1: 1 of 3"):
        assert M.macro_f1(Y, Y) == pytest.approx(2 / 3)  # "warn": 0.0 for label 2
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an explicit choice is silent
        assert M.macro_f1(Y, Y, zero_division=0.0) == pytest.approx(2 / 3)
        assert M.macro_f1(Y, Y, zero_division=1.0) == 1.0
        assert M.macro_f1(Y, Y, zero_division=np.nan) == 1.0  # label 2 left out of the mean
        # a label with no positive but a false positive scores 0: defined, no warning
        assert M.macro_f1(Y, np.array([[1, 0, 1], [0, 1, 0]])) == pytest.approx(2 / 3)
    assert math.isnan(M.macro_f1(np.zeros((2, 3), int), np.zeros((2, 3), int), zero_division=np.nan))


def test_micro_f1_zero_division():
    Z = np.zeros((3, 2), dtype=int)
    with pytest.warns(M.DegenerateLabelWarning, match="micro_f1"):
        assert M.micro_f1(Z, Z) == 0.0
    assert M.micro_f1(Z, Z, zero_division=1.0) == 1.0
    assert math.isnan(M.micro_f1(Z, Z, zero_division=np.nan))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert M.micro_f1(Z, np.ones_like(Z)) == 0.0  # false positives: defined
    assert issubclass(M.DegenerateLabelWarning, UserWarning)


@pytest.mark.parametrize("bad", [0.5, "ignore", True, None, -1])
def test_zero_division_is_validated(bad):
    Y = np.array([[1, 0], [0, 1]])
    calls = [lambda: M.micro_f1(Y, Y, zero_division=bad), lambda: M.macro_f1(Y, Y, zero_division=bad)]
    if bad is not None:  # evaluate's None means "the profile's"
        calls.append(lambda: M.evaluate(Y, None, Y, ["hamming_loss"], zero_division=bad))
    for call in calls:
        with pytest.raises(ValueError, match="zero_division"):
            call()


def test_label_diagnostics():
    # columns: 0 all positive, 1 mixed, 2 all negative -> 2 degenerate labels
    # rows: [1,0,0] mixed, [1,1,0] mixed, [1,0,0] mixed -> none empty, none full
    Y = np.array([[1, 0, 0], [1, 1, 0], [1, 0, 0]])
    assert M.label_diagnostics(Y) == {"n_degenerate_labels": 2, "n_empty_rows": 0, "n_full_rows": 0}
    # rows: empty, full, mixed; columns: [0,1,1], [0,1,0] mixed -> none degenerate
    Y = np.array([[0, 0], [1, 1], [1, 0]])
    expected = {"n_degenerate_labels": 0, "n_empty_rows": 1, "n_full_rows": 1}
    assert M.label_diagnostics(sp.csr_matrix(Y)) == expected


# --------------------------------------------------------------------------
# Edge cases and validation
# --------------------------------------------------------------------------
def test_auc_undefined_cases():
    # label 1 is all-negative and label 2 all-positive: only label 0 counts for macro AUC
    Y = np.array([[1, 0, 1], [0, 0, 1], [1, 0, 1], [0, 0, 1]])
    S = np.array([[0.9, 0.5, 0.1], [0.2, 0.1, 0.9], [0.8, 0.3, 0.2], [0.4, 0.2, 0.3]])
    assert M.macro_auc(Y, S) == 1.0
    assert math.isnan(M.macro_auc(Y[:, 1:], S[:, 1:]))
    # micro AUC pools every entry: undefined only when Y holds a single class
    assert not math.isnan(M.micro_auc(Y[:, 1:], S[:, 1:]))
    assert math.isnan(M.micro_auc(Y[:, 1:2], S[:, 1:2]))
    assert math.isnan(M.micro_auc(Y[:, 2:], S[:, 2:]))


def test_sparse_and_bool_labels_accepted():
    Y, S = random_problem(5)
    expected = M.average_precision(Y, S)
    assert M.average_precision(sp.csr_matrix(Y), S) == expected
    assert M.average_precision(Y.astype(bool), S) == expected
    assert M.jaccard(sp.csr_matrix(Y), Y.astype(bool)) == 1.0


def test_shape_and_value_errors():
    Y = np.array([[1, 0], [0, 1]])
    with pytest.raises(ValueError, match="scores"):
        M.average_precision(Y, np.zeros((2, 3)))
    with pytest.raises(ValueError, match="scores"):
        M.micro_auc(Y, np.zeros((2, 3)))
    with pytest.raises(ValueError, match="Y_pred"):
        M.hamming_loss(Y, np.zeros((3, 2)))
    with pytest.raises(ValueError, match="Y_pred"):
        M.example_recall(Y, np.zeros((3, 2)))
    with pytest.raises(ValueError, match="Y must be"):
        M.coverage(np.array([1, 0]), np.array([0.1, 0.2]))
    with pytest.raises(ValueError, match="0/1"):
        M.micro_f1(np.array([[2, 0]]), np.array([[1, 0]]))
    with pytest.raises(ValueError, match="finite"):
        M.ranking_loss(Y, np.array([[np.nan, 0.0], [0.1, 0.2]]))


@pytest.mark.parametrize("fn", RANKING)
def test_ranking_options_are_validated(fn):
    Y, S = np.array([[1, 0], [0, 1]]), np.array([[0.2, 0.1], [0.3, 0.4]])
    with pytest.raises(ValueError, match="empty_rows"):
        fn(Y, S, empty_rows="MULAN")
    with pytest.raises(ValueError, match="ties"):
        fn(Y, S, ties="min")


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
        "micro_auc", "subset_accuracy", "example_precision", "example_recall", "example_f1", "jaccard",
    }  # fmt: skip
    for name, spec in M.METRICS.items():
        assert callable(spec.function) and isinstance(spec.greater_is_better, bool)
        assert spec.kind == (
            "scores"
            if name
            in (
                "avg_precision",
                "one_error",
                "coverage",
                "coverage_norm",
                "ranking_loss",
                "macro_auc",
                "micro_auc",
            )
            else "pred"
        )
        assert set(spec.options) <= set(inspect.signature(spec.function).parameters), name
    assert [k for k, spec in M.METRICS.items() if not spec.greater_is_better] == [
        "hamming_loss", "one_error", "coverage", "coverage_norm", "ranking_loss",
    ]  # fmt: skip
    assert not {"n_degenerate_labels", "n_empty_rows", "n_full_rows"} & set(M.METRICS)


def test_evaluate_all_and_subset():
    Y, S = random_problem(6)
    P = (S > 0).astype(int)
    out = M.evaluate(Y, S, P)
    assert list(out) == list(M.METRICS)
    assert all(isinstance(v, float) for v in out.values())
    assert out["coverage_norm"] == pytest.approx(out["coverage"] / Y.shape[1])
    assert out["avg_precision"] == M.average_precision(Y, S)
    assert out["macro_f1"] == M.macro_f1(Y, P)
    assert out["jaccard"] == M.jaccard(Y, P)
    assert M.evaluate(Y, S, None, metrics=["one_error"]) == {"one_error": M.one_error(Y, S)}


def test_evaluate_passes_options_and_diagnostics():
    Y, S = random_problem(7, n=40, ties=True)
    P = (S > 1).astype(int)
    Y[:, 0], P[:, 0] = 0, 0  # a degenerate label with an undefined F1
    options = {"empty_rows": "exclude", "ties": "max", "zero_division": 1.0}
    out = M.evaluate(Y, S, P, diagnostics=True, **options)
    for name in ("avg_precision", "one_error", "coverage", "ranking_loss"):
        fn = M.METRICS[name].function
        assert out[name] == fn(Y, S, empty_rows="exclude", ties="max")
        assert out[name] != fn(Y, S)  # the options make a difference on these data
    assert out["macro_f1"] == M.macro_f1(Y, P, zero_division=1.0) != M.macro_f1(Y, P, zero_division=0.0)
    counts = M.label_diagnostics(Y)
    assert {k: out[k] for k in counts} == counts
    assert "n_empty_rows" not in M.evaluate(Y, S, P, zero_division=0.0)
    with pytest.warns(M.DegenerateLabelWarning):
        M.evaluate(Y, None, P, ["macro_f1"])


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
    with pytest.raises(ValueError, match="empty_rows"):
        M.evaluate(Y, S, P, empty_rows="drop")
    with pytest.raises(ValueError, match="ties"):
        M.evaluate(Y, S, P, ties="min")
    with pytest.raises(ValueError, match="auc_single_class"):
        M.evaluate(Y, S, P, auc_single_class="drop")
    with pytest.raises(ValueError, match="unknown profile 'weka'; known profiles: mlgraph, mulan"):
        M.evaluate(Y, S, P, profile="weka")


def test_only_exactly_equal_scores_tie():
    """Scores 1e-9 apart are not tied (Weka's 1e-6 tolerance is not reproduced): the higher
    one ranks first under both tie rules."""
    Y = np.array([[1, 0]])
    S = np.array([[0.5, 0.5 + 1e-9]])
    for ties in ("mulan", "max"):
        assert M.one_error(Y, S, ties=ties) == 1.0 and M.coverage(Y, S, ties=ties) == 1.0
    assert M.one_error(Y, np.array([[0.5, 0.5]]), ties="max") == 1.0  # tied at the top: an error
    assert M.one_error(Y, np.array([[0.5, 0.5]]), ties="mulan") == 1.0  # label 1 (higher index) first
    assert M.one_error(Y[:, ::-1], np.array([[0.5, 0.5]]), ties="mulan") == 0.0


def _random_scores(rng, trial: int):
    """Scores with no ties, with ties (a few integer levels), and all tied at ±0."""
    n, q = int(rng.integers(1, 60)), int(rng.integers(1, 12))
    if trial % 3 == 0:
        S = rng.normal(size=(n, q))
    elif trial % 3 == 1:
        S = rng.integers(0, int(rng.integers(1, 5)), size=(n, q)).astype(float)
    else:
        S = np.full((n, q), -0.0)
        S[0, 0] = 0.0
    return S, rng.random((n, q)) < 0.4


def test_strict_ranks_are_scipys_ordinal_ranks_of_the_reversed_columns():
    """The ranks of ties="mulan" from one unstable sort per row (a stable one for rows with
    ties) are scipy's ordinal ranks of the reversed columns, and the ranks among the relevant
    labels scipy's max ranks with the irrelevant ones pushed to the bottom: same values and types."""
    from scipy.stats import rankdata

    rng = np.random.default_rng(1)
    for trial in range(300):
        S, Y = _random_scores(rng, trial)
        rank = rankdata(-S[:, ::-1], method="ordinal", axis=1)[:, ::-1].astype(np.float64)
        rank_rel = rankdata(np.where(Y, rank, np.inf), method="max", axis=1)
        ours, ours_rel = M._strict_ranks(Y, S)
        np.testing.assert_array_equal(ours, rank)
        np.testing.assert_array_equal(ours_rel, rank_rel)
        assert (ours.dtype, ours_rel.dtype) == (rank.dtype, rank_rel.dtype)


def test_positive_rank_sums_are_sums_of_scipys_average_ranks():
    """The AUCs' rank sums from binary searches in the sorted columns equal the sums of
    scipy's average ranks exactly, with and without ties, per column and pooled."""
    from scipy.stats import rankdata

    rng = np.random.default_rng(2)
    for trial in range(300):
        S, Y = _random_scores(rng, trial)
        for s, y in ((S, Y), (S.reshape(-1, 1), Y.reshape(-1, 1))):
            expected = np.where(y, rankdata(s, method="average", axis=0), 0.0).sum(axis=0)
            np.testing.assert_array_equal(M._positive_rank_sums(y, s), expected)


def test_evaluate_ranks_once_and_matches_each_metric_on_its_own(monkeypatch):
    """evaluate computes the ranks once for every ranking metric; each value equals the metric
    function called alone, under both tie rules and both empty-row rules."""
    calls = []
    ranking = M._ranking
    monkeypatch.setattr(M, "_ranking", lambda *a: calls.append(1) or ranking(*a))
    M.evaluate(np.eye(3, dtype=int), np.eye(3), np.eye(3))
    assert len(calls) == 1
    rng = np.random.default_rng(4)
    Y = (rng.random((80, 7)) < 0.3).astype(int)
    Y[0] = 0  # an empty row
    Y[1] = 1  # a full row
    S = np.round(rng.normal(size=Y.shape), 1)  # ties
    for ties in ("mulan", "max"):
        for empty_rows in ("mulan", "exclude"):
            got = M.evaluate(Y, S, S > 0, ties=ties, empty_rows=empty_rows)
            for name, spec in M.METRICS.items():
                if spec.ranked is not None:
                    alone = spec.function(Y, S, ties=ties, empty_rows=empty_rows)
                    assert got[name] == alone, (name, ties, empty_rows)
