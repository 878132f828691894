"""An independent, plain port of MULAN's ML-kNN with Weka's distance and search, for tests only.

Written from Weka's ``NormalizableDistance`` / ``EuclideanDistance`` / ``LinearNNSearch`` /
``NearestNeighbourSearch.MyHeap`` and MULAN's ``MLkNN``, ``IBk`` and measure classes, without
calling mlgraph: attributes are described by their ARFF kinds (one column per attribute, nominal
values as codes), distances are summed attribute by attribute in Weka's order, and the search
scans every training instance with a literal heap.
"""

from __future__ import annotations

import numpy as np


def weka_ranges(X: np.ndarray, nominal: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(min, width) of every attribute over the present values of X (NormalizableDistance)."""
    lo = np.array([np.nanmin(c) if not np.isnan(c).all() else 0.0 for c in X.T])
    hi = np.array([np.nanmax(c) if not np.isnan(c).all() else 0.0 for c in X.T])
    lo[nominal], hi[nominal] = 0.0, 0.0
    return lo, hi - lo


def weka_sq_distances(query: np.ndarray, X: np.ndarray, nominal: np.ndarray, lo, width) -> np.ndarray:
    """Squared distances of the rows of ``query`` to the rows of X: NormalizableDistance.difference
    for one attribute at a time, added as ``result += diff * diff`` in attribute order."""
    result = np.zeros((len(query), len(X)))
    for j in range(X.shape[1]):
        a, b = query[:, j, None], X[None, :, j]
        miss_a, miss_b = np.isnan(a), np.isnan(b)
        if nominal[j]:
            diff = np.where(miss_a | miss_b | (a != b), 1.0, 0.0)
        else:
            with np.errstate(invalid="ignore"):
                na = np.zeros_like(a) if width[j] == 0.0 else (a - lo[j]) / width[j]
                nb = np.zeros_like(b) if width[j] == 0.0 else (b - lo[j]) / width[j]
            na, nb = np.where(miss_a, np.nan, na), np.where(miss_b, np.nan, nb)
            diff = na - nb
            if miss_a.any() or miss_b.any():
                present = np.where(miss_a, nb, na)
                one = np.where(present < 0.5, 1.0 - present, present)
                diff = np.where(miss_a | miss_b, np.where(miss_a & miss_b, 1.0, one), diff)
        result += diff * diff
    return result


class MyHeap:
    """weka.core.neighboursearch.NearestNeighbourSearch.MyHeap, line by line."""

    def __init__(self, max_size: int):
        if max_size % 2 == 0:
            max_size += 1
        self.heap = [[0, 0.0] for _ in range(max_size + 1)]  # [index, distance]; heap[0][0] = size
        self.kth = []

    def size(self):
        return self.heap[0][0]

    def peek(self):
        return self.heap[1]

    def get(self):
        r = self.heap[1]
        self.heap[1] = self.heap[self.heap[0][0]]
        self.heap[0][0] -= 1
        self.downheap()
        return r

    def put(self, i, d):
        self.heap[0][0] += 1
        self.heap[self.heap[0][0]] = [i, d]
        self.upheap()

    def put_by_substitute(self, i, d):
        head = self.get()
        self.put(i, d)
        if head[1] == self.heap[1][1]:
            self.kth.append(head)
        elif head[1] > self.heap[1][1]:
            self.kth = []

    def upheap(self):
        i, h = self.heap[0][0], self.heap
        while i > 1 and h[i][1] > h[i // 2][1]:
            h[i], h[i // 2] = h[i // 2], h[i]
            i //= 2

    def downheap(self):
        i, h, n = 1, self.heap, self.heap[0][0]
        while (2 * i <= n and h[i][1] < h[2 * i][1]) or (2 * i + 1 <= n and h[i][1] < h[2 * i + 1][1]):
            if 2 * i + 1 <= n:
                j = 2 * i if h[2 * i][1] > h[2 * i + 1][1] else 2 * i + 1
            else:
                j = 2 * i
            h[i], h[j] = h[j], h[i]
            i = j


def k_nearest(dist: np.ndarray, k: int, skip: int | None = None) -> list[int]:
    """LinearNNSearch.kNearestNeighbours: the training indices in the order returned (the heap
    popped largest first into the front, the instances tied with the k-th at the end)."""
    heap, first = MyHeap(k), 0
    for i, d in enumerate(dist):
        if i == skip:
            continue
        if first < k:
            heap.put(i, d)
            first += 1
        elif d < heap.peek()[1]:
            heap.put_by_substitute(i, d)
        elif d == heap.peek()[1]:
            heap.kth.append([i, d])
    out = [h[0] for h in reversed(heap.kth)]
    while heap.size() > 0:
        out.append(heap.get()[0])
    return out[::-1]


def mulan_mlknn(X_train, Y_train, X_test, nominal, k=10, s=1.0):
    """MULAN's MLkNN (buildInternal, ComputePrior, ComputeCond, makePredictionInternal) with the
    Weka search: returns (confidences, predictions) of the test rows; predictions on an exact tie
    Prob_in = Prob_out are 0 here (MULAN draws them at random)."""
    m, q = Y_train.shape
    lo, width = weka_ranges(X_train, nominal)

    def counts(queries, self_skip):
        out = np.zeros((len(queries), q), dtype=int)
        for start in range(0, len(queries), 512):
            D = weka_sq_distances(queries[start : start + 512], X_train, nominal, lo, width)
            for r, dist in enumerate(D):
                near = k_nearest(dist, k, start + r if self_skip else None)[:k]
                out[start + r] = Y_train[near].sum(axis=0)
        return out

    prior = (s + Y_train.sum(axis=0)) / (s * 2 + m)
    C = counts(X_train, True)
    cond_true = np.zeros((q, k + 1))
    cond_false = np.zeros((q, k + 1))
    for label in range(q):
        c1 = np.bincount(C[Y_train[:, label] == 1, label], minlength=k + 1)
        c0 = np.bincount(C[Y_train[:, label] == 0, label], minlength=k + 1)
        cond_true[label] = (s + c1) / (s * (k + 1) + c1.sum())
        cond_false[label] = (s + c0) / (s * (k + 1) + c0.sum())
    T = counts(X_test, False)
    labels = np.arange(q)
    p_in = prior * cond_true[labels, T]
    p_out = (1 - prior) * cond_false[labels, T]
    return p_in / (p_in + p_out), (p_in > p_out).astype(int)


def mulan_measures(Y: np.ndarray, conf: np.ndarray, pred: np.ndarray) -> dict[str, float]:
    """MULAN's HammingLoss, OneError, Coverage, RankingLoss, AveragePrecision, MicroFMeasure,
    MacroFMeasure and MacroAUC (Weka's ThresholdCurve ROC area), literally, per instance."""
    n, q = Y.shape
    ham, one, cov, rl, ap = [], [], [], [], []
    for y, s, z in zip(Y.astype(bool), conf, pred.astype(bool), strict=True):
        order = sorted(range(q), key=lambda j: s[j])  # stable ascending, the last ranked 1
        rank = [0] * q
        for position, j in enumerate(order):
            rank[j] = q - position
        rel = [j for j in range(q) if y[j]]
        irr = [j for j in range(q) if not y[j]]
        ham.append(np.sum(y != z) / q)
        one.append(0.0 if y[rank.index(1)] else 1.0)
        cov.append(max((rank[j] for j in rel), default=1) - 1)
        rl.append(
            sum(rank[a] > rank[b] for a in rel for b in irr) / (len(rel) * len(irr)) if rel and irr else 0
        )
        if rel:
            ap.append(sum(sum(rank[r2] <= rank[r] for r2 in rel) / rank[r] for r in rel) / len(rel))

    def f_measure(tp, fp, fn):
        return 1.0 if tp + fp + fn == 0 else 2 * tp / (2 * tp + fn + fp)

    Yb, P = Y.astype(bool), pred.astype(bool)
    tp, fp, fn = (Yb & P).sum(0), (~Yb & P).sum(0), (Yb & ~P).sum(0)
    aucs = []
    for j in range(q):
        pos, neg = conf[Yb[:, j], j], conf[~Yb[:, j], j]
        if len(pos) == 0 or len(neg) == 0:
            aucs.append(float("nan"))
            continue
        wins = sum((p > neg).sum() + 0.5 * (p == neg).sum() for p in pos)
        aucs.append(wins / (len(pos) * len(neg)))
    return {
        "hamming_loss": float(np.mean(ham)),
        "one_error": float(np.mean(one)),
        "coverage": float(np.mean(cov)),
        "ranking_loss": float(np.mean(rl)),
        "avg_precision": float(np.mean(ap)),
        "micro_f1": f_measure(tp.sum(), fp.sum(), fn.sum()),
        "macro_f1": float(np.mean([f_measure(*c) for c in zip(tp, fp, fn, strict=True)])),
        "macro_auc": float(np.mean(aucs)),
    }


def weka_ibk_proba(X_train, y_train, X_test, nominal, k=3):
    """IBk -K k (IBk.distributionForInstance, makeDistribution) over the test rows in order, each
    first widening the distance's ranges (addInstanceInfo); y_train holds class indices."""
    m, n_classes = len(y_train), int(y_train.max()) + 1
    lo, width = weka_ranges(X_train, nominal)
    hi = lo + width
    out = []
    for row in X_test:
        for j in np.flatnonzero(~nominal & ~np.isnan(row)):
            if row[j] < lo[j]:
                lo[j], width[j] = row[j], hi[j] - row[j]
            if row[j] > hi[j]:
                hi[j], width[j] = row[j], row[j] - lo[j]
        dist = weka_sq_distances(row[None, :], X_train, nominal, lo, width)[0]
        distribution = np.full(n_classes, 1.0 / m)
        for i in k_nearest(dist, min(k, m)):
            distribution[y_train[i]] += 1.0
        out.append(distribution / distribution.sum())
    return np.array(out)
