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
  r_t(l) > 1/2, i.e. P(H_1) P(E|H_1) > P(H_0) P(E|H_0), so a tie (r_t(l) = 1/2) predicts 0
  (scikit-multilearn predicts 1 on a tie, ``>=``); ``predict_from_scores`` applies that rule to
  scores already computed (the runner's path: the test neighbours are searched once).
- ``metric="weka"``: the neighbours of MULAN's ML-kNN (``mulan.classifier.lazy.MLkNN``), which
  searches them with Weka's ``LinearNNSearch`` and ``EuclideanDistance``: features min–max
  normalised over the training rows, a nominal attribute (``nominal_groups``: its columns)
  counting 0 when equal and 1 otherwise, Weka's rules for missing values (NaN is accepted), and
  Weka's choice among tied neighbours (the instances left in its heap); see
  :mod:`mlgraph.methods.weka`. ``standardize`` does not apply (the distance normalises). The
  rest of the method is MULAN's too (its priors, counts and posteriors are the formulas above),
  except that MULAN draws an exact tie P(H_1)P(E|H_1) = P(H_0)P(E|H_0) at random where this
  class predicts 0.
- ``metric="euclidean"`` (default): neighbours are Euclidean, on features z-scored with
  training statistics by default (``standardize=True``; constant features get scale inf and
  drop out). Distances equal within a
  relative 1e-9 are ties, broken by the lower training index; distances below the rounding
  level of the Gram formula are recomputed as ‖a − b‖², so duplicate points are exactly tied
  (the rule of :func:`mlgraph.graphs.sparsify.nearest_columns` on double-precision Gram-formula
  distances).
- The search is a brute force by Gram products, screened in single precision (twice the speed):
  a query whose k-th and (k+1)-th distances are apart by more than a tie plus a bound on the
  rounding errors has the same K nearest as in exact arithmetic (:func:`_screen`); the others
  (ties, duplicates, near-ties within the bound: about 0.1 % of the rows of yeast, 4 % of
  scene) take the exact rule above (:func:`_exact_nearest`). The result is that of the exact
  rule, whatever the precision of the screening.
- While counting during ``fit``, N(x_i) excludes x_i itself (the original rule). With
  ``self_neighbour=True`` x_i counts as its own first neighbour, N(x_i) = {x_i} ∪ its K − 1
  nearest other points, which is what scikit-multilearn's MLkNN (and its fork
  scikit-multilearn-ng) does by querying ``kneighbors(X_train, K)``. Test points use their K
  nearest training points in both cases. Hence k ≤ m − 1 (k ≤ m with ``self_neighbour``).
- Parity with scikit-multilearn(-ng) 0.0.8 ``MLkNN(k, s)``: with ``self_neighbour=True`` and
  ``standardize=False`` the priors, tables and scores are bitwise equal and predictions equal
  except (i) ties r_t(l) = 1/2 (P(H_1)P(E|H_1) = P(H_0)P(E|H_0)), where it predicts 1 and we 0,
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

from mlgraph.graphs.kernels import one_blas_thread, squared_distances
from mlgraph.graphs.sparsify import nearest_columns, row_smallest
from mlgraph.methods.base import (
    MultiLabelClassifierMixin,
    ScoreThresholdMixin,
    check_params,
    positive,
    positive_int,
    standardisation,
)
from mlgraph.methods.weka import WekaEuclidean, weka_neighbours

__all__ = ["MLkNN"]

# The neighbours are screened with single-precision Gram products (twice the speed of double),
# for features whose squared norms lie in this range (no overflow; underflow negligible).
_SINGLE_RANGE = (1e-30, 1e36)
# A training set of up to 2048 points gets its self-Gram matrix in one symmetric (syrk) product;
# larger ones, and test points, go by blocks of query rows of about 2**17 entries (in cache for
# the passes that follow the product).
_WHOLE_GRAM = 1 << 22
_BLOCK_ELEMENTS = 1 << 17
# Gram-formula distances at most this fraction of ‖a‖² + max‖b‖² are recomputed exactly.
_ROUNDING = 1e-10
# Relative width of a distance tie (that of :func:`nearest_columns`).
_TIE_RTOL = 1e-9


def _is_bool(v) -> bool:
    return isinstance(v, (bool, np.bool_))


METRICS = ("euclidean", "weka")


def _groups(v) -> bool:
    """None, or a sequence of non-empty sequences of column indices (checked against X in fit)."""
    try:
        return v is None or all(len(g) > 0 and all(int(c) == c for c in g) for g in v)
    except TypeError:
        return False


def _screen(key: np.ndarray, sq_a: np.ndarray, top_b: float, d: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The k nearest training points of a block of query rows (d features, squared norms
    ``sq_a``, training norms at most ``top_b``) from key = ‖b‖² − 2 a·b, the squared distance
    less its row constant ‖a‖², in the precision of the screening (excluded entries inf).
    Returns the columns (m, k) and the rows whose answer is not certain ("hard").

    :func:`row_smallest` gives the k + 1 smallest keys of a row. When its k-th and (k+1)-th squared
    distances are apart by more than a tie (relative ``_TIE_RTOL``) plus the rounding errors of
    the key and of the double-precision Gram formula (together at most (d + 8)/2 u (‖a‖ +
    max‖b‖)², u the unit roundoff of the key's precision: γ_d of the dot product, the rounding of
    the inputs and of the sums), and the k-th is above that formula's rounding level, the k
    nearest (the keys up to the k-th) are the same as in exact arithmetic, whatever the rule
    for ties. The other rows (distance ties, duplicate points) are hard, and left to the caller."""
    m, n = key.shape
    nearest = np.empty((m, k), dtype=np.intp)
    if k >= n:  # every (finite) column is a neighbour
        return nearest, np.arange(m)
    top = row_smallest(key, k + 1)
    kth_key = top[:, :k].max(axis=1)
    kth, after = kth_key + sq_a, top[:, k] + sq_a
    error = (d + 8) / 4 * np.finfo(key.dtype).eps * (np.sqrt(sq_a) + np.sqrt(top_b)) ** 2
    tiny = _ROUNDING * (sq_a + top_b)
    hard = (after - kth <= _TIE_RTOL * kth + 2 * error) | (kth <= 4 * tiny + error)
    kth_key[hard] = -np.inf  # exactly k keys up to the k-th in the other rows, none here
    nearest[~hard] = np.flatnonzero(key <= kth_key[:, None]).reshape(-1, k) % n
    return nearest, np.flatnonzero(hard)


def _exact_nearest(A: np.ndarray, B: np.ndarray, k: int, excluded: np.ndarray | None) -> np.ndarray:
    """The k nearest rows of B to each row of A (row i not a neighbour of itself:
    ``excluded[i]``), by the exact rule: double-precision Gram-formula distances
    (:func:`squared_distances`), entries at its rounding level recomputed in difference form
    (duplicate points at exactly 0), then :func:`nearest_columns` (ties to the lower index).
    The product, a few rows by scipy's BLAS between the screening's products by numpy's, runs
    on one thread: with two, it contended with numpy's spinning threads and the next screening
    product with scipy's, and a whole fit + scores on scene took 64–75 ms instead of 37."""
    with one_blas_thread():
        D = squared_distances(A, B)
    if excluded is not None:
        D[np.arange(len(A)), excluded] = np.inf
    tiny = _ROUNDING * (np.einsum("ij,ij->i", A, A) + np.einsum("ij,ij->i", B, B).max(initial=0.0))
    r, cols = np.divmod(np.flatnonzero(D <= tiny[:, None]), B.shape[0])
    diff = A[r] - B[cols]
    D[r, cols] = np.einsum("ij,ij->i", diff, diff)
    return nearest_columns(D, k, None)[1].reshape(len(A), k)


class MLkNN(ScoreThresholdMixin, MultiLabelClassifierMixin, BaseEstimator):
    """ML-kNN of Zhang & Zhou (2007); see the module docstring for the formulas and rules.

    Parameters
    ----------
    k : number of neighbours K.
    s : smoothing parameter (s = 1 is Laplace smoothing, the paper's choice).
    standardize : z-score the features with training statistics before the neighbour search.
    self_neighbour : count each training point as its own first neighbour during ``fit``
        (scikit-multilearn's rule) instead of excluding it (the original rule).
    metric : "euclidean" (z-scored with ``standardize``) or "weka" (Weka's EuclideanDistance
        and search, as MULAN's ML-kNN; missing values as NaN allowed).
    nominal_groups : for ``metric="weka"``, the columns of each nominal attribute (a list of
        lists; a dataset's ``nominal_groups``); None: every column numeric.

    Notes
    -----
    Fitted attributes: ``prior_`` (q,) P(H_1^l); ``cond_prob_true_`` and ``cond_prob_false_``
    (q, k+1) P(E_j^l | H_1^l) and P(E_j^l | H_0^l); ``counts_`` (q, k+1, 2) the frequency tables
    c' (``[..., 0]``) and c (``[..., 1]``); ``X_fit_`` and ``Y_fit_`` the (standardised) labelled
    training rows and their labels; ``mean_``, ``scale_`` (None without standardisation);
    ``distance_`` the fitted :class:`~mlgraph.methods.weka.WekaEuclidean` (None for euclidean).
    """

    _rules = {
        "k": (positive_int, "a positive integer (number of neighbours K)"),
        "s": (positive, "a positive number (smoothing s)"),
        "standardize": (_is_bool, "True or False"),
        "self_neighbour": (_is_bool, "True or False"),
        "metric": (lambda v: v in METRICS, " or ".join(METRICS)),
        "nominal_groups": (_groups, "None or a list of lists of column indices"),
    }

    def __init__(
        self, k=10, s=1.0, standardize=True, self_neighbour=False, metric="euclidean", nominal_groups=None
    ):
        self.k = k
        self.s = s
        self.standardize = standardize
        self.self_neighbour = self_neighbour
        self.metric = metric
        self.nominal_groups = nominal_groups

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = self.metric == "weka"
        return tags

    def _transform(self, X: np.ndarray) -> np.ndarray:
        return X if self.mean_ is None else (X - self.mean_) / self.scale_

    def _neighbour_counts(self, Q: np.ndarray, k: int, exclude_self: bool) -> np.ndarray:
        """C_x(l) for every query row: labels summed over its k nearest training points
        (query row i is training point i, and excluded, when ``exclude_self``): screened by
        :func:`_screen`, the hard rows by :func:`_exact_nearest`."""
        Xf, Yf = self.X_fit_, self.Y_fit_
        n = Xf.shape[0]
        if k == 0:
            return np.zeros((Q.shape[0], Yf.shape[1]), dtype=np.int32)
        if self.distance_ is not None:
            return weka_neighbours(self.distance_, Q, Xf, k, exclude_self=exclude_self) @ Yf
        sq_b, sq_q = np.einsum("ij,ij->i", Xf, Xf), np.einsum("ij,ij->i", Q, Q)
        top_b = sq_b.max(initial=0.0)
        low, high = _SINGLE_RANGE
        dtype = np.float32 if low < top_b and max(top_b, sq_q.max(initial=0.0)) < high else np.float64
        B, sq_key = Xf.astype(dtype), sq_b.astype(dtype)
        gram = B @ B.T if exclude_self and n * n <= _WHOLE_GRAM else None
        nearest = np.empty((Q.shape[0], k), dtype=np.intp)
        hard = []
        step = max(1, _BLOCK_ELEMENTS // n)
        for start in range(0, Q.shape[0], step):
            stop = min(Q.shape[0], start + step)
            key = gram[start:stop] if gram is not None else Q[start:stop].astype(dtype) @ B.T
            key *= -2
            key += sq_key
            if exclude_self:
                key[np.arange(stop - start), np.arange(start, stop)] = np.inf
            nearest[start:stop], rows = _screen(key, sq_q[start:stop], top_b, Q.shape[1], k)
            hard.append(start + rows)
        hard = np.concatenate(hard)
        if len(hard):
            nearest[hard] = _exact_nearest(Q[hard], Xf, k, hard if exclude_self else None)
        indicator = sp.csr_array(
            (np.ones(nearest.size, dtype=np.int32), nearest.ravel(), np.arange(0, nearest.size + 1, k)),
            shape=(Q.shape[0], n),
        )
        return indicator @ Yf  # int32 sums of the int8 labels

    def fit(self, X, Y):
        """Fit on the labelled rows of ``(X, Y)``; rows of ``Y`` equal to −1 are dropped."""
        check_params(self, self._rules)
        weka = self.metric == "weka"
        X, Y, labelled = self._check_fit_data(X, Y, allow_nan=weka)
        X, Y = X[labelled], Y[labelled]
        m, q = Y.shape
        k, s = int(self.k), float(self.s)
        limit = m if self.self_neighbour else m - 1
        if k > limit:
            raise ValueError(
                f"MLkNN: parameter k={self.k!r} must be <= {limit} (the number of labelled "
                f"rows{'' if self.self_neighbour else ' − 1'}, self_neighbour="
                f"{self.self_neighbour})"
            )
        self.distance_ = WekaEuclidean(self.nominal_groups or ()).fit(X) if weka else None
        if self.standardize and not weka:
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
        self.prior_ = (s + Y.sum(axis=0, dtype=np.int64)) / (s * 2 + m)  # step (2)
        c_false, c_true = counts[..., 0], counts[..., 1]
        self.cond_prob_true_ = (s + c_true) / (s * (k + 1) + c_true.sum(axis=1, keepdims=True))
        self.cond_prob_false_ = (s + c_false) / (s * (k + 1) + c_false.sum(axis=1, keepdims=True))
        return self

    def decision_function(self, X) -> np.ndarray:
        """Posterior probabilities r_t(l) = P(H_1^l | E^l_{C_t(l)}), higher = more relevant."""
        check_is_fitted(self, "cond_prob_true_")
        X = self._check_predict_data(X, allow_nan=self.distance_ is not None)
        C = self._neighbour_counts(self._transform(X), int(self.k), exclude_self=False)
        labels = np.arange(C.shape[1])
        p_true = self.prior_ * self.cond_prob_true_[labels, C]
        p_false = (1 - self.prior_) * self.cond_prob_false_[labels, C]
        return p_true / (p_true + p_false)

    def predict_from_scores(self, scores) -> np.ndarray:
        """The MAP rule on the scores of :meth:`decision_function`: 1 where r_t(l) > 1/2, i.e.
        P(H_1)P(E|H_1) > P(H_0)P(E|H_0); a tie (r_t(l) = 1/2) predicts 0."""
        return (np.asarray(scores) > 0.5).astype(np.int8)
