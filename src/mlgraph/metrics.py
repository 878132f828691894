r"""Evaluation metrics for multi-label learning, all in one place.

Notation: ``Y`` is the n x q binary ground truth, ``scores`` the real-valued
n x q predictions (higher = more relevant), ``Y_pred`` the binary n x q
predicted label sets.  For instance i, ``P_i`` is its set of relevant labels
and ``N_i`` its irrelevant ones.

Ranks and ties
--------------
Labels are ranked by decreasing score with the *max* rank for ties, exactly
as scikit-learn does::

    rank_i(j) = |{l : s_il >= s_ij}|        (1 = top)

so a label tied with others is placed behind all of them (pessimistic: ties
never help a ranking metric).  Results are independent of label order.

Ranking metrics (input ``scores``)
----------------------------------
average precision (paper 000, Eq. 21; Zhang & Zhou), greater is better::

    AP = mean_i 1/|P_i| sum_{j in P_i} |{l in P_i : rank_i(l) <= rank_i(j)}| / rank_i(j)

one-error, smaller is better: fraction of instances whose top-ranked label
is irrelevant.  With ties at the top score the instance counts as an error
unless *every* label sharing the top score is relevant (the max-rank
convention: no label is ranked first on its own).

coverage, smaller is better::

    coverage = mean_i max_{j in P_i} rank_i(j) - 1

i.e. how far down the ranking one must go to cover all relevant labels.
``normalize=True`` divides by q (paper 002 reports values in [0, 1]).
Equals ``sklearn.metrics.coverage_error - 1``.

ranking loss, smaller is better: fraction of (relevant, irrelevant) pairs
that are mis-ordered, a tie counting as mis-ordered::

    RL = mean_i |{(j, k) in P_i x N_i : s_ij <= s_ik}| / (|P_i| |N_i|)

macro AUC, greater is better: mean over labels of the ROC AUC of that
label's score column (ties get half credit, as in the Mann-Whitney U).

Bipartition metrics (input ``Y_pred``)
--------------------------------------
Hamming loss, smaller is better: fraction of the n*q entries where
``Y_pred != Y``.

micro-F1 (paper 000, Eq. 23), greater is better, counts pooled over all
labels: ``2 TP / (2 TP + FP + FN)``.

macro-F1 (paper 000, Eq. 24), greater is better: mean over labels of the
per-label ``2 TP_j / (2 TP_j + FP_j + FN_j)``.

Edge cases
----------
* Instances with no relevant label, or with every label relevant, have no
  meaningful ranking and are *excluded* from average precision, one-error,
  coverage and ranking loss (MULAN convention); the mean is over the
  remaining instances, NaN if none remains.  scikit-learn instead scores
  such rows AP = 1 and ranking loss = 0 (and coverage_error 0 for empty
  rows), so comparisons with it must drop those rows first.
* F1 with an empty denominator (TP = FP = FN = 0: no positives and none
  predicted) is ``zero_division`` (default 1.0: nothing to find, nothing
  wrongly found), per label for macro-F1 and globally for micro-F1.
* Macro AUC skips labels whose column of ``Y`` holds a single class; NaN if
  no label remains.

Dual-set accuracies (paper 001, Definition 4)
---------------------------------------------
:func:`dual_set_accuracy` takes 1-D class labels for the two label sets a
and b and returns the fraction of instances with set a right, set b right,
and both right.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import partial
from typing import Literal, NamedTuple

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike, NDArray
from scipy.stats import rankdata

__all__ = [
    "METRICS",
    "MetricSpec",
    "average_precision",
    "coverage",
    "dual_set_accuracy",
    "evaluate",
    "hamming_loss",
    "macro_auc",
    "macro_f1",
    "micro_f1",
    "one_error",
    "ranking_loss",
]


# --------------------------------------------------------------------------
# Input validation
# --------------------------------------------------------------------------
def _as_binary(M: ArrayLike, name: str) -> NDArray[np.bool_]:
    """Validate a binary n x q label matrix (dense or sparse) and return it as bool."""
    M = M.toarray() if sp.issparse(M) else np.asarray(M)
    if M.ndim != 2 or M.shape[0] == 0 or M.shape[1] == 0:
        raise ValueError(f"{name} must be a non-empty 2-D (n x q) array, got shape {M.shape}")
    if not np.isin(M, (0, 1)).all():
        raise ValueError(f"{name} must contain only 0/1 values")
    return M.astype(bool)


def _as_scores(scores: ArrayLike, shape: tuple[int, int], name: str = "scores") -> NDArray[np.float64]:
    """Validate a finite real score matrix of the given shape."""
    S = np.asarray(scores, dtype=np.float64)
    if S.shape != shape:
        raise ValueError(f"{name} has shape {S.shape}, expected {shape} (the shape of Y)")
    if not np.isfinite(S).all():
        raise ValueError(f"{name} must be finite (found NaN or inf)")
    return S


def _as_pred(Y_pred: ArrayLike, shape: tuple[int, int], name: str = "Y_pred") -> NDArray[np.bool_]:
    """Validate a binary prediction matrix of the given shape."""
    P = _as_binary(Y_pred, name)
    if P.shape != shape:
        raise ValueError(f"{name} has shape {P.shape}, expected {shape} (the shape of Y)")
    return P


# --------------------------------------------------------------------------
# Ranking metrics
# --------------------------------------------------------------------------
class _Ranking(NamedTuple):
    """Per-instance rank statistics of the rankable instances (see module docstring)."""

    Y: NDArray[np.bool_]  # rows kept: 0 < |P_i| < q
    S: NDArray[np.float64]
    rank: NDArray[np.float64]  # rank_i(j) = |{l : s_il >= s_ij}|
    rank_rel: NDArray[np.float64]  # |{l in P_i : s_il >= s_ij}|, meaningful for j in P_i
    n_rel: NDArray[np.int64]


def _ranking(Y: ArrayLike, scores: ArrayLike) -> _Ranking:
    Yb = _as_binary(Y, "Y")
    S = _as_scores(scores, Yb.shape)
    n_rel = Yb.sum(axis=1)
    keep = (n_rel > 0) & (n_rel < Yb.shape[1])  # MULAN: no ranking to judge otherwise
    Yb, S, n_rel = Yb[keep], S[keep], n_rel[keep]
    rank = rankdata(-S, method="max", axis=1)
    # Irrelevant labels pushed to the bottom so they never precede a relevant one.
    rank_rel = rankdata(np.where(Yb, -S, np.inf), method="max", axis=1)
    return _Ranking(Yb, S, rank, rank_rel, n_rel)


def _mean_or_nan(values: NDArray[np.floating]) -> float:
    return float(values.mean()) if values.size else float("nan")


def average_precision(Y: ArrayLike, scores: ArrayLike) -> float:
    """Ranking-based average precision (paper 000, Eq. 21), greater is better.

    For each relevant label, the fraction of labels ranked at or above it
    that are relevant; averaged over relevant labels, then instances.  Max
    rank for ties (identical to ``sklearn.metrics.label_ranking_average_precision_score``
    on rankable rows).  Instances with no or all labels relevant are
    excluded; NaN if none remains.
    """
    r = _ranking(Y, scores)
    precision = np.where(r.Y, r.rank_rel / r.rank, 0.0)
    return _mean_or_nan(precision.sum(axis=1) / r.n_rel)


def one_error(Y: ArrayLike, scores: ArrayLike) -> float:
    """Fraction of instances whose top-ranked label is irrelevant, smaller is better.

    Ties at the top score count as an error unless all tied labels are
    relevant.  Instances with no or all labels relevant are excluded; NaN if
    none remains.
    """
    r = _ranking(Y, scores)
    at_top = r.S == r.S.max(axis=1, keepdims=True)
    return _mean_or_nan((at_top & ~r.Y).any(axis=1).astype(float))


def coverage(Y: ArrayLike, scores: ArrayLike, normalize: bool = False) -> float:
    """Mean of (max rank of a relevant label) - 1, smaller is better.

    Max rank for ties; equals ``sklearn.metrics.coverage_error - 1`` on
    rankable rows.  ``normalize=True`` divides by q.  Instances with no or
    all labels relevant are excluded; NaN if none remains.
    """
    r = _ranking(Y, scores)
    worst_rank = np.where(r.Y, r.rank, 0.0).max(axis=1)
    value = _mean_or_nan(worst_rank - 1.0)
    return value / r.Y.shape[1] if normalize else value


def ranking_loss(Y: ArrayLike, scores: ArrayLike) -> float:
    """Fraction of (relevant, irrelevant) label pairs with s_rel <= s_irr, smaller is better.

    Ties count as mis-ordered, as in ``sklearn.metrics.label_ranking_loss``.
    Instances with no or all labels relevant are excluded; NaN if none remains.
    """
    r = _ranking(Y, scores)
    # For relevant j, rank - rank_rel = number of irrelevant labels scored >= s_j.
    bad_pairs = np.where(r.Y, r.rank - r.rank_rel, 0.0).sum(axis=1)
    n_irr = r.Y.shape[1] - r.n_rel
    return _mean_or_nan(bad_pairs / (r.n_rel * n_irr))


def macro_auc(Y: ArrayLike, scores: ArrayLike) -> float:
    """Mean over labels of the ROC AUC, greater is better.

    AUC via the Mann-Whitney statistic with average ranks (ties get half
    credit, identical to ``sklearn.metrics.roc_auc_score``).  Labels whose
    column of Y has a single class are skipped; NaN if none remains.
    """
    Yb = _as_binary(Y, "Y")
    S = _as_scores(scores, Yb.shape)
    n_pos = Yb.sum(axis=0)
    n_neg = Yb.shape[0] - n_pos
    keep = (n_pos > 0) & (n_neg > 0)
    if not keep.any():
        return float("nan")
    Yb, S, n_pos, n_neg = Yb[:, keep], S[:, keep], n_pos[keep], n_neg[keep]
    rank_sum_pos = np.where(Yb, rankdata(S, method="average", axis=0), 0.0).sum(axis=0)
    auc = (rank_sum_pos - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg)
    return float(auc.mean())


# --------------------------------------------------------------------------
# Bipartition metrics
# --------------------------------------------------------------------------
def _confusion(Y: ArrayLike, Y_pred: ArrayLike) -> tuple[NDArray[np.int64], ...]:
    """Per-label TP, FP, FN counts."""
    Yb = _as_binary(Y, "Y")
    P = _as_pred(Y_pred, Yb.shape)
    tp = (Yb & P).sum(axis=0)
    fp = (~Yb & P).sum(axis=0)
    fn = (Yb & ~P).sum(axis=0)
    return tp, fp, fn


def hamming_loss(Y: ArrayLike, Y_pred: ArrayLike) -> float:
    """Fraction of wrongly predicted (instance, label) entries, smaller is better."""
    Yb = _as_binary(Y, "Y")
    return float((Yb != _as_pred(Y_pred, Yb.shape)).mean())


def micro_f1(Y: ArrayLike, Y_pred: ArrayLike, zero_division: float = 1.0) -> float:
    """2 TP / (2 TP + FP + FN) pooled over all labels (paper 000, Eq. 23), greater is better.

    Returns ``zero_division`` when there are no positives and no predictions.
    """
    tp, fp, fn = (c.sum() for c in _confusion(Y, Y_pred))
    denom = 2 * tp + fp + fn
    return float(2 * tp / denom) if denom else float(zero_division)


def macro_f1(Y: ArrayLike, Y_pred: ArrayLike, zero_division: float = 1.0) -> float:
    """Mean over labels of 2 TP_j / (2 TP_j + FP_j + FN_j) (paper 000, Eq. 24), greater is better.

    A label with TP = FP = FN = 0 (no positives, none predicted) scores
    ``zero_division``.
    """
    tp, fp, fn = _confusion(Y, Y_pred)
    denom = 2 * tp + fp + fn
    f1 = np.full(tp.shape, float(zero_division))
    np.divide(2 * tp, denom, out=f1, where=denom > 0)
    return float(f1.mean())


# --------------------------------------------------------------------------
# Dual-set accuracies (DSML)
# --------------------------------------------------------------------------
def dual_set_accuracy(
    ya_true: ArrayLike, ya_pred: ArrayLike, yb_true: ArrayLike, yb_pred: ArrayLike
) -> dict[str, float]:
    """Accuracies of dual-set multi-label learning (paper 001, Definition 4).

    Inputs are 1-D class labels of the same length n for label sets a and b.
    Returns ``accuracy_a`` (set-a label right), ``accuracy_b`` (set-b label
    right) and ``accuracy_all`` (both right), each a fraction of the n
    instances; greater is better.
    """
    arrays = {"ya_true": ya_true, "ya_pred": ya_pred, "yb_true": yb_true, "yb_pred": yb_pred}
    arrays = {name: np.asarray(a) for name, a in arrays.items()}
    for name, a in arrays.items():
        if a.ndim != 1 or a.size == 0:
            raise ValueError(f"{name} must be a non-empty 1-D array, got shape {a.shape}")
        if a.shape != arrays["ya_true"].shape:
            raise ValueError(f"{name} has length {a.size}, expected {arrays['ya_true'].size}")
    right_a = arrays["ya_true"] == arrays["ya_pred"]
    right_b = arrays["yb_true"] == arrays["yb_pred"]
    return {
        "accuracy_a": float(right_a.mean()),
        "accuracy_b": float(right_b.mean()),
        "accuracy_all": float((right_a & right_b).mean()),
    }


# --------------------------------------------------------------------------
# Registry and one-call evaluation
# --------------------------------------------------------------------------
class MetricSpec(NamedTuple):
    """How to compute one metric: ``function(Y, <input>)`` with input kind "scores" or "pred"."""

    function: Callable[[ArrayLike, ArrayLike], float]
    kind: Literal["scores", "pred"]
    greater_is_better: bool


# Names are logged to MLflow by other code: do not rename.
METRICS: dict[str, MetricSpec] = {
    "avg_precision": MetricSpec(average_precision, "scores", True),
    "micro_f1": MetricSpec(micro_f1, "pred", True),
    "macro_f1": MetricSpec(macro_f1, "pred", True),
    "hamming_loss": MetricSpec(hamming_loss, "pred", False),
    "one_error": MetricSpec(one_error, "scores", False),
    "coverage": MetricSpec(coverage, "scores", False),
    "coverage_norm": MetricSpec(partial(coverage, normalize=True), "scores", False),
    "ranking_loss": MetricSpec(ranking_loss, "scores", False),
    "macro_auc": MetricSpec(macro_auc, "scores", True),
}


# Dual-set learning (paper 001): Y holds two columns of class indices, one per label set.
DUAL_SET_METRICS = ("accuracy_a", "accuracy_b", "accuracy_all")


def evaluate_dual_set(Y: ArrayLike, Y_pred: ArrayLike) -> dict[str, float]:
    """Definition 4 of paper 001 on n×2 arrays of class indices (set a, set b)."""
    Y, Y_pred = np.asarray(Y), np.asarray(Y_pred)
    if Y.ndim != 2 or Y.shape[1] != 2 or Y_pred.shape != Y.shape:
        raise ValueError(f"dual-set Y and Y_pred must both be n×2, got {Y.shape} and {Y_pred.shape}")
    return dual_set_accuracy(Y[:, 0], Y_pred[:, 0], Y[:, 1], Y_pred[:, 1])


def evaluate(
    Y: ArrayLike,
    scores: ArrayLike | None,
    Y_pred: ArrayLike | None,
    metrics: Iterable[str] | None = None,
) -> dict[str, float]:
    """Compute the named metrics (default: all of :data:`METRICS`).

    ``scores`` (finite) and ``Y_pred`` (binary) must have the shape of ``Y``;
    either may be None when no requested metric needs it.  Raises ValueError
    naming the offending argument or an unknown metric.
    """
    names = list(METRICS) if metrics is None else list(metrics)
    if names and set(names) <= set(DUAL_SET_METRICS):
        return {k: v for k, v in evaluate_dual_set(Y, Y_pred).items() if k in names}
    unknown = [m for m in names if m not in METRICS]
    if unknown:
        raise ValueError(f"unknown metrics {unknown}; available: {sorted(METRICS)}")
    Yb = _as_binary(Y, "Y")
    inputs: dict[str, NDArray | None] = {
        "scores": None if scores is None else _as_scores(scores, Yb.shape),
        "pred": None if Y_pred is None else _as_pred(Y_pred, Yb.shape),
    }
    results: dict[str, float] = {}
    for name in names:
        spec = METRICS[name]
        data = inputs[spec.kind]
        if data is None:
            arg = "scores" if spec.kind == "scores" else "Y_pred"
            raise ValueError(f"metric {name!r} needs {arg}, which is None")
        results[name] = spec.function(Yb, data)
    return results
