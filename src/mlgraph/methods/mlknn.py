"""ML-kNN (Zhang & Zhou 2007, "ML-KNN: a lazy learning approach to multi-label learning",
Pattern Recognition 40(7)), the pseudo-code of the paper's Fig. 1, vectorised over samples.

With m training points, K = ``k`` neighbours and smoothing s, for every label l:

- priors, steps (1)–(2): P(H_1^l) = (s + Σ_i y_i(l)) / (2s + m), P(H_0^l) = 1 − P(H_1^l);
- membership counts, step (8): C_x(l) = Σ_{a ∈ N(x)} y_a(l) ∈ {0, …, K}, N(x) the K nearest
  training points of x;
- frequency tables, steps (9)–(10): c[l, j] = #{i : y_i(l) = 1, C_{x_i}(l) = j} and
  c'[l, j] = #{i : y_i(l) = 0, C_{x_i}(l) = j};
- likelihoods, steps (12)–(13): P(E_j^l | H_1^l) = (s + c[l, j]) / (s(K+1) + Σ_p c[l, p]),
  and the same with c' for H_0^l;
- for a test point t (steps (14) onward), with j = C_t(l): the MAP rule
  y_t(l) = argmax_b P(H_b^l) P(E_j^l | H_b^l) and the rank
  r_t(l) = P(H_1^l | E_j^l) = P(H_1^l) P(E_j^l | H_1^l) / Σ_b P(H_b^l) P(E_j^l | H_b^l).

Notes on the implementation:
- ``decision_function`` returns r_t(l) (a posterior probability); ``predict`` gives 1 where
  P(H_1) P(E|H_1) > P(H_0) P(E|H_0) strictly, so an exact tie predicts 0
  (scikit-multilearn predicts 1 on a tie, ``>=``).
- Neighbours are Euclidean, on features z-scored with training statistics by default
  (``standardize=True``; constant features get scale inf and drop out). Distances equal within a
  relative 1e-9 are ties, broken by the lower training index; distances below the rounding
  level of the Gram formula are recomputed as ‖a − b‖², so duplicate points are exactly tied.
- While counting during ``fit``, N(x_i) excludes x_i itself (the original rule). With
  ``self_neighbour=True`` x_i counts as its own first neighbour, N(x_i) = {x_i} ∪ its K − 1
  nearest other points, which is what scikit-multilearn's MLkNN (and its fork
  scikit-multilearn-ng) does by querying ``kneighbors(X_train, K)``. Test points use their K
  nearest training points in both cases. Hence k ≤ m − 1 (k ≤ m with ``self_neighbour``).
- Parity with scikit-multilearn(-ng) 0.0.8 ``MLkNN(k, s)``: with ``self_neighbour=True`` and
  ``standardize=False`` the priors, tables and scores are bitwise equal and predictions equal
  except (i) exact ties P(H_1)P(E|H_1) = P(H_0)P(E|H_0), where it predicts 1 and we predict 0,
  and (ii) tied distances: it keeps sklearn ``NearestNeighbors`` order (not the lower index),
  and among duplicate training points it may return another copy in place of the point itself.
- ML-kNN is supervised: rows of ``Y`` filled with −1 (unlabelled) are dropped before fitting.
- Everything is computed in blocks of query rows (bounded memory), without loops over samples.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from mlgraph.graphs.kernels import squared_distances
from mlgraph.graphs.sparsify import nearest_columns
from mlgraph.methods.base import (
    MultiLabelClassifierMixin,
    check_params,
    positive,
    positive_int,
    standardisation,
)

__all__ = ["MLkNN"]

# Query rows × training rows per block of squared distances (32 MiB of float64), at most 1024 rows.
_BLOCK_ELEMENTS = 1 << 22
_MAX_BLOCK_ROWS = 1024
# Gram-formula distances at most this fraction of ‖a‖² + max‖b‖² are recomputed exactly.
_ROUNDING = 1e-10


def _is_bool(v) -> bool:
    return isinstance(v, (bool, np.bool_))


def _block_sqdist(A: np.ndarray, B: np.ndarray, sq_b: np.ndarray, offset: int | None) -> np.ndarray:
    """Squared distances of the rows of A to the rows of B (Gram formula); with ``offset``,
    row i of A is row ``offset + i`` of B and that entry is set to inf (it is excluded anyway).
    Entries at the formula's rounding level are recomputed in difference form, so duplicate
    points are at distance exactly 0 (only rows whose minimum is that small are scanned)."""
    D = squared_distances(A, B)
    if offset is not None:
        D[np.arange(len(A)), offset + np.arange(len(A))] = np.inf
    tiny = _ROUNDING * (np.einsum("ij,ij->i", A, A) + sq_b.max(initial=0.0))
    near = np.flatnonzero(D.min(axis=1) <= tiny)
    if len(near):
        r, cols = np.divmod(np.flatnonzero(D[near] <= tiny[near, None]), D.shape[1])
        rows = near[r]
        diff = A[rows] - B[cols]
        D[rows, cols] = np.einsum("ij,ij->i", diff, diff)
    return D


class MLkNN(MultiLabelClassifierMixin, BaseEstimator):
    """ML-kNN of Zhang & Zhou (2007); see the module docstring for the formulas and rules.

    Parameters
    ----------
    k : number of neighbours K.
    s : smoothing parameter (s = 1 is Laplace smoothing, the paper's choice).
    standardize : z-score the features with training statistics before the neighbour search.
    self_neighbour : count each training point as its own first neighbour during ``fit``
        (scikit-multilearn's rule) instead of excluding it (the original rule).

    Fitted attributes: ``prior_`` (q,) P(H_1^l); ``cond_prob_true_`` and ``cond_prob_false_``
    (q, k+1) P(E_j^l | H_1^l) and P(E_j^l | H_0^l); ``counts_`` (q, k+1, 2) the frequency tables
    c' (``[..., 0]``) and c (``[..., 1]``); ``X_fit_`` and ``Y_fit_`` the (standardised) labelled
    training rows and their labels; ``mean_``, ``scale_`` (None without standardisation).
    """

    _rules = {
        "k": (positive_int, "a positive integer (number of neighbours K)"),
        "s": (positive, "a positive number (smoothing s)"),
        "standardize": (_is_bool, "True or False"),
        "self_neighbour": (_is_bool, "True or False"),
    }

    def __init__(self, k=10, s=1.0, standardize=True, self_neighbour=False):
        self.k = k
        self.s = s
        self.standardize = standardize
        self.self_neighbour = self_neighbour

    def _transform(self, X: np.ndarray) -> np.ndarray:
        return X if self.mean_ is None else (X - self.mean_) / self.scale_

    def _neighbour_counts(self, Q: np.ndarray, k: int, exclude_self: bool) -> np.ndarray:
        """C_x(l) for every query row: labels summed over its k nearest training points
        (query row i is training point i, and excluded, when ``exclude_self``)."""
        Xf, Yf = self.X_fit_, self.Y_fit_  # int8; the sparse product below sums in int32
        n = Xf.shape[0]
        out = np.zeros((Q.shape[0], Yf.shape[1]), dtype=np.int32)
        if k == 0:
            return out
        sq_b = np.einsum("ij,ij->i", Xf, Xf)
        step = max(1, min(_MAX_BLOCK_ROWS, _BLOCK_ELEMENTS // n))
        for start in range(0, Q.shape[0], step):
            stop = min(Q.shape[0], start + step)
            offset = start if exclude_self else None
            D = _block_sqdist(Q[start:stop], Xf, sq_b, offset)
            rows, cols = nearest_columns(D, k, offset)
            indicator = sp.csr_matrix((np.ones(len(cols), dtype=np.int32), (rows, cols)),
                                      shape=(stop - start, n))
            out[start:stop] = indicator @ Yf
        return out

    def fit(self, X, Y):
        """Fit on the labelled rows of ``(X, Y)``; rows of ``Y`` equal to −1 are dropped."""
        check_params(self, self._rules)
        X, Y, labelled = self._check_fit_data(X, Y)
        X, Y = X[labelled], Y[labelled]
        m, q = Y.shape
        k, s = int(self.k), float(self.s)
        limit = m if self.self_neighbour else m - 1
        if k > limit:
            raise ValueError(f"MLkNN: parameter k={self.k!r} must be <= {limit} (the number of labelled "
                             f"rows{'' if self.self_neighbour else ' − 1'}, self_neighbour="
                             f"{self.self_neighbour})")
        if self.standardize:
            self.mean_, self.scale_ = standardisation(X)
        else:
            self.mean_ = self.scale_ = None
        self.X_fit_ = self._transform(X)
        self.Y_fit_ = Y

        if self.self_neighbour:  # x_i itself plus its k − 1 nearest other points
            C = Y + self._neighbour_counts(self.X_fit_, k - 1, exclude_self=True)
        else:
            C = self._neighbour_counts(self.X_fit_, k, exclude_self=True)
        # Steps (9)–(10): one bincount over (label, count, y) triples for c' and c together.
        index = (np.arange(q) * (k + 1) + C) * 2 + Y
        counts = np.bincount(index.ravel(), minlength=q * (k + 1) * 2).reshape(q, k + 1, 2)
        self.counts_ = counts
        self.prior_ = (s + Y.sum(axis=0, dtype=np.int64)) / (s * 2 + m)              # step (2)
        c_false, c_true = counts[..., 0], counts[..., 1]
        self.cond_prob_true_ = (s + c_true) / (s * (k + 1) + c_true.sum(axis=1, keepdims=True))
        self.cond_prob_false_ = (s + c_false) / (s * (k + 1) + c_false.sum(axis=1, keepdims=True))
        return self

    def _joint(self, X) -> tuple[np.ndarray, np.ndarray]:
        """P(H_1) P(E_j|H_1) and P(H_0) P(E_j|H_0) at j = C_t(l), for every test row and label."""
        check_is_fitted(self, "cond_prob_true_")
        X = self._check_predict_data(X)
        C = self._neighbour_counts(self._transform(X), int(self.k), exclude_self=False)
        labels = np.arange(C.shape[1])
        p_true = self.prior_ * self.cond_prob_true_[labels, C]
        p_false = (1 - self.prior_) * self.cond_prob_false_[labels, C]
        return p_true, p_false

    def decision_function(self, X) -> np.ndarray:
        """Posterior probabilities r_t(l) = P(H_1^l | E^l_{C_t(l)}), higher = more relevant."""
        p_true, p_false = self._joint(X)
        return p_true / (p_true + p_false)

    def predict(self, X) -> np.ndarray:
        """Binary label matrix of the MAP rule: 1 where P(H_1)P(E|H_1) > P(H_0)P(E|H_0) strictly."""
        p_true, p_false = self._joint(X)
        return (p_true > p_false).astype(np.int8)
