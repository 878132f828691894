"""Multi-label feature selectors of paper 004 (GMBA) and the baselines it is compared with.

Every selector is a scikit-learn transformer (``SelectorMixin, BaseEstimator``): ``fit(X, Y)``
ranks the features on the training rows, ``transform`` keeps the best ones, ``get_support()``
says which. ``X`` is dense or ``scipy.sparse`` (kept sparse wherever the algorithm allows),
``Y`` an n x q 0/1 matrix (dense or sparse); a dense ``Y`` may hold unlabelled rows (−1 in
every column, as a semi-supervised protocol passes them), which ``fit`` leaves out: features
are ranked on the labelled rows only. Standardisation is *not* done here: the
protocol z-scores every training fold before ranking. Fitted attributes shared by all:

``ranking_``
    feature indices, best first (ties: lower index first);
``scores_``
    one score per feature, **higher is better** for every selector (SPEC stores ``-phi``;
    its raw Eq. 17 values, lower is better, are in ``phi_``);
``constant_features_``
    mask of features constant on the training rows; they carry no information, get score
    ``-inf`` and are ranked last (never NaN).

The number kept is ``k`` or ``ceil(fraction * n_features)`` (at least 1); with neither
given, ``fraction = 0.3``. ``fraction``/``k`` may be changed after ``fit`` (``set_params``)
without refitting, so one ranking serves a whole sweep of 10 %, ..., 90 %.

The selectors stay one module because GMBA and its baselines share the label graph of Eqs. 2-7
and the fitted attributes above, so their equations are read and checked together.

Paper 004, equations implemented
--------------------------------
* Eq. 2  ``s_multi(i, i') = sum_q n_q [y_iq = y_i'q = 1] / sum_q n_q [y_iq = 1 or y_i'q = 1]``
  (0 when the denominator is 0), ``n_q`` the number of training rows with label q:
  :func:`label_similarity`, a sparse product ``Y diag(n) Y^T`` with the union from the
  weighted label degrees; no loop over pairs. Eq. 3 (zero diagonal): :func:`label_graph`.
  Eqs. 4-5 (clique expansion of the hypergraph whose hyperedge e_q holds the rows with
  label q, weight ``w(e_q) = n_q``) give the same numbers; the tests check both forms.
* Eqs. 6-7 ``sim(i) = {i' != i : s >= s_min}``, ``dissim(i) = {i' != i : s < s_min}``.
* Eqs. 8-14 the margin loss; Eq. 10 ``m(i) = | ||x_i - x_nh||^2 - ||x_i - x_nm||^2 |``;
  Eq. 13 per picked instance, with ``||z||_w^2 = sum_d (w_d z_d)^2``::

      Loss(w, i) = sum_{h in N(i)} s(i,h) ||x_i - x_h||_w^2
                 + lam sum_{h in N(i)} sum_{j in dissim(i)} (s(i,h) - s(i,j))
                       * max(0, m(i) + ||x_i - x_h||_w^2 - ||x_i - x_j||_w^2)

  Step 2(e) / Eqs. 15-16 gradient ``grad_d = 2 w_d G_d``, ``G_d = sum_j c_j (x_id - x_jd)^2``
  with one coefficient ``c_j`` per instance (:func:`gmba_loss_grad`), whatever the number
  of active hinge pairs. Under assumption 3 only the factor ``w`` depends on earlier
  steps, so the G of 256 picks at a time come from matrix products (distances, Eq. 2
  rows, G); the loop over the I picks only applies Step 2(f)
  ``w <- w - beta grad / ||grad||``. Step 3 ranks by w, greater is better.
  Reference used to settle readings: the authors' code, github.com/pysleepy/ECML2016-GMBA.
* Eq. 17 SPEC ``phi(F) = x^T L_norm x`` for the normalised feature ``D^(1/2) x /
  ||D^(1/2) x||``, computed as the Rayleigh quotient ``x^T L x / x^T D x`` on the graph
  ``A_G`` of Eq. 3 (Zhao & Liu 2007's phi_1; the smaller, the better).

Assumptions (what paper 004 leaves open)
----------------------------------------
1. Label weights ``n_q`` are counted on the rows given to ``fit`` (the training fold).
   Two label-free rows have ``s = 0`` (Eq. 2's second branch), so with ``s_min > 0`` a
   label-free row has no similar instance; ``s_min = 1`` makes hits exactly the rows with
   the identical, non-empty label set (``s >= s_min - 1e-12``).
2. Eq. 13's second sum has a free index i': it is read as a double sum over the k
   neighbours ``N(i)`` and every dissimilar instance (LMNN style), as in the authors' code.
3. Distances. Eq. 10 (the margin), Eq. 15's activity test and Steps 2(b)-(c) (neighbours
   "in feature space") are printed with the plain ``||.||^2``; only the loss Eq. 14 uses
   ``||.||_w``. So, as in the authors' code, ``N(i)``, ``nh(i)``, ``nm(i)``, ``m(i)`` and the
   set of active hinges are taken in the input metric (squared Euclidean on the given
   features) for each picked instance, and the step is Eqs. 15-16: ``2 w_d`` times the
   per-feature squared differences weighted by those fixed coefficients. At ``w = 1`` this
   is exactly the gradient of Eq. 13 (:func:`gmba_loss_grad` evaluates Eq. 13 and its
   gradient at any ``w``). ``adaptive_metric=True`` instead redoes all of it in the current
   ``w``-metric at every step (the exact gradient of Eq. 13 at the current w, m(i) held
   fixed); with beta = 0.9 that variant oscillates and ranks a planted problem far worse.
   A hinge counts as active when ``m + d(i,h) - d(i,j) >= 0`` (Eq. 15's "otherwise"
   branch includes equality, which (nh, nm) always meets when nm is the farther one; a
   relative 1e-12 tolerance absorbs the rounding of that identity).
4. ``N(i)`` = the ``min(k, |sim(i)|)`` nearest hits; ``nh(i)`` is the nearest of them,
   ``nm(i)`` the nearest dissimilar instance. An instance with no hit or no miss makes no
   update but still counts as one of the I picks (``n_updates_`` reports the real steps).
5. beta (called a "decay factor") is the fixed length of the normalised step of Step
   2(f) as printed and as in the authors' code (no momentum, no schedule); a zero
   gradient makes no step. I = n picks visit the rows in a random
   permutation (``random_state``); I > n chains fresh permutations.
6. Ranking by signed w (Step 3: greater is better). Ties in any ranking or neighbour
   search are broken by the lower index.
7. MLFS is Kong et al. (2012)'s multi-label F-statistic, read as the pooled one-way ANOVA
   of the label decomposition (each row counted once per label it carries):
   ``F = (N-K)/(K-1) * sum_k n_k (m_k - m)^2 / sum_k sum_{i: y_ik=1} (x_i - m_k)^2`` with
   ``N = sum_k n_k``, ``m`` the occurrence-weighted grand mean, labels with ``n_k = 0``
   dropped. (The authors' released script divides by the unweighted sum of per-label
   variances instead; the ANOVA form is the one cited.) ``S_w = 0 < S_b`` gives ``+inf``.
8. MLRF is ReliefF (Kononenko) on the label decomposition of Kong et al.: for every row i
   with labels, and each of its labels a, the k nearest other rows carrying a are hits
   (weight ``1/|Y_i|``); for each label c that i lacks, the k nearest rows carrying c are
   misses with the prior weight ``n_c / sum_{c' not in Y_i} n_c'`` (= ReliefF's
   ``P(C) / (1 - P(class))``). score = weighted mean diff to misses minus to hits
   (each averaged over its k neighbours, then over the ``n_used`` rows with labels),
   ``diff = |x_id - x_jd| / (max_d - min_d)``; neighbours by Euclidean distance on the
   given features; a row is never its own neighbour; all n rows are used (deterministic);
   label-free rows are skipped; fewer than k candidates -> all of them. With one label per
   row this is exactly multi-class ReliefF.
9. SPEC uses ``A_G`` of Eq. 3; isolated vertices (degree 0) drop out of both terms of the
   Rayleigh quotient; ``phi = inf`` when ``x^T D x = 0``. ``variant="phi2"`` divides by
   ``1 - (x_hat^T xi_1)^2`` (Zhao & Liu's phi_2; a feature constant on the graph scores inf).
10. Selected count: ``ceil(fraction * d)`` with ``fraction * d`` rounded to 9 decimals
    first (so 0.3 * 10 keeps 3), at least 1; ``k > d`` is an error at ``fit``.
"""

from __future__ import annotations

import math
import warnings
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, TransformerMixin, clone
from sklearn.feature_selection import SelectorMixin
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_array, check_is_fitted, validate_data

from mlgraph.graphs.cache import cached
from mlgraph.methods.base import check_features, standardisation

__all__ = [
    "DEFAULT_FRACTION",
    "GMBA",
    "MLFS",
    "MLRF",
    "SPEC",
    "gmba_loss_grad",
    "label_graph",
    "label_similarity",
]

DEFAULT_FRACTION = 0.3
_S_TOL = 1e-12  # s >= s_min - _S_TOL counts as similar (identical label sets give exactly 1)
_CHUNK = 1 << 22  # elements of a dense temporary per block (32 MiB of float64)


# --------------------------------------------------------------------------- labels


def _label_matrix(Y) -> sp.csr_matrix:
    """Y as CSR float64 0/1 after validation (no -1 rows: selectors need every label)."""
    if sp.issparse(Y):
        Y = sp.csr_matrix(Y)
        values = Y.data
    else:
        Y = check_array(Y, dtype=None, ensure_2d=True, input_name="Y")
        values = Y
    if not np.isin(values, (0, 1)).all():
        raise ValueError("Y must be a 0/1 matrix (n_samples x n_labels)")
    Y = sp.csr_matrix(Y, dtype=np.float64)
    Y.eliminate_zeros()
    return Y


def _labelled_part(X, Y):
    """(X, Y as CSR 0/1) restricted to the labelled rows: a dense ``Y`` may mark unlabelled rows
    with −1 in every column (scikit-learn's semi-supervised convention, ``Trial.targets``)."""
    if not sp.issparse(Y):
        Y = check_array(Y, dtype=None, ensure_2d=True, input_name="Y")
    if Y.shape[0] != X.shape[0]:
        raise ValueError(f"X has {X.shape[0]} rows but Y has {Y.shape[0]}")
    if not sp.issparse(Y):
        unlabelled = (Y == -1).all(axis=1)
        if (Y[~unlabelled] == -1).any():
            raise ValueError("Y mixes −1 with 0/1 in a row: an unlabelled row must be −1 in every column")
        if unlabelled.all():
            raise ValueError("Y has no labelled row (all −1): features are ranked on labelled rows")
        X, Y = X[~unlabelled], Y[~unlabelled]
    return X, _label_matrix(Y)


def _check_label_weights(Y: sp.csr_matrix, label_weights) -> np.ndarray:
    if label_weights is None:
        return np.asarray(Y.sum(axis=0)).ravel()
    w = np.asarray(label_weights, dtype=np.float64).ravel()
    if w.shape != (Y.shape[1],) or not np.all(np.isfinite(w)) or np.any(w < 0):
        raise ValueError(f"label_weights must be {Y.shape[1]} finite non-negative numbers")
    return w


def label_similarity(Y, label_weights=None) -> sp.csr_matrix:
    """s_multi of Eq. 2 for every pair of rows of Y, as a sparse symmetric n x n matrix.

    ``label_weights`` are the ``n_q`` (default: column sums of Y). Pairs sharing no
    weighted label are structural zeros; the diagonal holds ``s(i, i)`` (1 for a row with a
    label, 0 for a label-free row). One sparse product, no loop over pairs.
    """
    Y = _label_matrix(Y)
    w = _check_label_weights(Y, label_weights)
    Yw = Y @ sp.diags(w)
    degree = np.asarray(Yw.sum(axis=1)).ravel()  # sum_q n_q y_iq
    inter = sp.csr_matrix(Yw @ Y.T)  # sum_q n_q [y_iq = y_jq = 1]
    inter.sum_duplicates()
    inter.eliminate_zeros()
    rows = np.repeat(np.arange(inter.shape[0]), np.diff(inter.indptr))
    union = degree[rows] + degree[inter.indices] - inter.data  # > 0 wherever inter > 0
    inter.data = inter.data / union
    return inter


def label_graph(Y, label_weights=None) -> sp.csr_matrix:
    """Adjacency ``A_G`` of Eq. 3: :func:`label_similarity` with a zero diagonal."""
    A = label_similarity(Y, label_weights).tolil()
    A.setdiag(0.0)
    A = A.tocsr()
    A.eliminate_zeros()
    return A


def _similarity_rows(Y: sp.csr_matrix, Yw: sp.csr_matrix, degree: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Rows ``rows`` of Eq. 2 against every row, dense (len(rows) x n); ``Yw = Y diag(n)``,
    ``degree`` its row sums. The same numbers as :func:`label_similarity`, in row blocks."""
    inter = (Y[rows] @ Yw.T).toarray()
    union = degree[rows, None] + degree[None, :] - inter
    out = np.zeros_like(inter)
    np.divide(inter, union, out=out, where=inter > 0)
    return out


# ----------------------------------------------------------------------- features


def _constant_features(X) -> np.ndarray:
    if sp.issparse(X):
        hi = X.max(axis=0).toarray().ravel()
        lo = X.min(axis=0).toarray().ravel()
        return hi == lo
    return np.ptp(X, axis=0) == 0


def _squares(X):
    return X.multiply(X).tocsr() if sp.issparse(X) else X * X


def _row(X, i: int) -> np.ndarray:
    return X[i].toarray().ravel() if sp.issparse(X) else X[i]


def _sq_dists_from(X, X2, x_i: np.ndarray, w2: np.ndarray) -> np.ndarray:
    """``||x_i - x_j||_w^2`` for every row j (``w2`` = w**2), clipped at 0."""
    d = X2 @ w2 - 2.0 * (X @ (w2 * x_i)) + float((x_i * x_i) @ w2)
    return np.maximum(np.asarray(d).ravel(), 0.0)


def _sq_dists_block(X, sqnorm: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Plain squared Euclidean distances from ``X[rows]`` to every row (len(rows) x n)."""
    gram = X[rows] @ X.T
    gram = gram.toarray() if sp.issparse(gram) else np.asarray(gram)
    return np.maximum(sqnorm[rows, None] + sqnorm[None, :] - 2.0 * gram, 0.0)


def _weighted_sq_diff_rows(X, X2, rows: np.ndarray, C: np.ndarray) -> np.ndarray:
    """``G[r, d] = sum_j C[r, j] (x_{rows[r], d} - x_{j, d})^2``: three BLAS-3 products."""
    if sp.issparse(X):
        Xb = X[rows].toarray()
        lin = np.asarray(X.T @ C.T).T
        quad = np.asarray(X2.T @ C.T).T
    else:
        Xb = X[rows]
        lin = C @ X
        quad = C @ X2
    return Xb * Xb * C.sum(axis=1)[:, None] - 2.0 * Xb * lin + quad


# ------------------------------------------------------------------------- GMBA core


def _gmba_coefficients(d, s, hits, misses, margin, lam, out=None):
    """Loss of Eq. 13 and the per-instance coefficients c of its gradient (Eqs. 15-16).

    ``d``: squared distances from x_i to every row; ``s``: row i of Eq. 2. The gradient is
    ``2 w * sum_j c_j (x_i - x_j)^2``; ``c`` is written into ``out`` when given.
    """
    c = np.zeros(d.shape[0]) if out is None else out
    s_h, d_h = s[hits], d[hits]
    s_m, d_m = s[misses], d[misses]
    arg = margin + d_h[:, None] - d_m[None, :]  # k x |dissim|
    gap = s_h[:, None] - s_m[None, :]
    active = arg >= -1e-12 * (margin + d_h[:, None] + d_m[None, :])  # equality is active (Eq. 15)
    loss = float(s_h @ d_h + lam * (gap * np.maximum(arg, 0.0)).sum())
    g_act = np.where(active, gap, 0.0)
    c[hits] += s_h + lam * g_act.sum(axis=1)
    c[misses] -= lam * g_act.sum(axis=0)
    return loss, c


def _gmba_sets(d, s, i, n_neighbors, threshold):
    """Steps 2(a)-(d): (N(i), dissim(i), m(i)) from distances ``d`` and Eq. 2 row ``s``;
    None when i has no similar or no dissimilar instance."""
    similar = s >= threshold
    similar[i] = False
    sim = np.flatnonzero(similar)
    similar[i] = True  # i is in neither set
    dissim = np.flatnonzero(~similar)
    if sim.size == 0 or dissim.size == 0:
        return None
    hits = sim[np.argsort(d[sim], kind="stable")[:n_neighbors]]
    nearest_miss = dissim[np.argmin(d[dissim])]
    return hits, dissim, abs(d[hits[0]] - d[nearest_miss])


def gmba_loss_grad(X, s, i, hits, misses, margin, omega, lam=1.0):
    """Eq. 13 for picked instance ``i`` and its gradient in ``omega`` (Step 2(e), Eqs. 15-16).

    ``s`` is row i of Eq. 2, ``hits`` the neighbour set N(i) (indices into X), ``misses``
    dissim(i), ``margin`` m(i); all are held fixed, the hinges are evaluated in the
    ``omega``-metric (so this is the exact gradient wherever no hinge sits at its kink).
    Returns (loss, grad).
    """
    X = sp.csr_matrix(X, dtype=np.float64) if sp.issparse(X) else np.asarray(X, dtype=np.float64)
    omega = np.asarray(omega, dtype=np.float64)
    X2 = _squares(X)
    d = _sq_dists_from(X, X2, _row(X, i), omega * omega)
    loss, c = _gmba_coefficients(
        d, np.asarray(s, dtype=np.float64), np.asarray(hits), np.asarray(misses), float(margin), lam
    )
    return loss, 2.0 * omega * _weighted_sq_diff_rows(X, X2, np.array([i]), c[None, :])[0]


# -------------------------------------------------------------------- base selector


def _is_real(v) -> bool:
    return isinstance(v, Real) and not isinstance(v, bool) and bool(np.isfinite(v))


def _is_int(v) -> bool:
    return isinstance(v, Integral) and not isinstance(v, bool)


def _scores(selector, X, Y, constant) -> dict:
    """``scores``: the feature scores of ``selector``, with the fitted attributes its ranking set
    (arrays and numbers: the result cached by ``memory``)."""
    scores = selector._score(X, Y, constant)
    fitted = {k: v for k, v in vars(selector).items() if k.endswith("_") and not k.startswith("_")}
    return {"scores": scores, **fitted}


class _RankingSelector(SelectorMixin, BaseEstimator):
    """Ranks features in ``fit`` (subclasses implement ``_score``) and keeps the best.

    ``memory`` (a folder, or a joblib Memory whose ``location`` is the folder) caches the ranking
    (:mod:`mlgraph.graphs.cache`) by the content of the training part, every parameter but
    ``fraction``/``k`` and the source of this module and its imports, so a fraction sweep
    ranks once per fold."""

    def _fail(self, name: str, text: str):
        raise ValueError(f"{type(self).__name__}: parameter {name}={getattr(self, name)!r} must be {text}")

    def _check_size_params(self) -> None:
        if self.fraction is not None and self.k is not None:
            raise ValueError(
                f"{type(self).__name__}: give either fraction or k, not both "
                f"(fraction={self.fraction!r}, k={self.k!r})"
            )
        if self.fraction is not None and not (_is_real(self.fraction) and 0 < self.fraction <= 1):
            self._fail("fraction", "a number in (0, 1]")
        if self.k is not None and not (_is_int(self.k) and self.k >= 1):
            self._fail("k", "a positive integer")

    def _check_params(self) -> None:  # subclasses add their own
        self._check_size_params()

    def n_selected(self, n_features: int) -> int:
        """How many of ``n_features`` are kept under the current ``fraction``/``k``."""
        self._check_size_params()
        if self.k is not None:
            if self.k > n_features:
                self._fail("k", f"at most the number of features ({n_features})")
            return int(self.k)
        fraction = DEFAULT_FRACTION if self.fraction is None else self.fraction
        return max(1, math.ceil(round(fraction * n_features, 9)))

    def fit(self, X, Y=None):
        """Rank the features of ``X`` (n x d, dense or sparse) against labels ``Y`` (n x q) on
        the labelled rows: rows of ``Y`` that are all −1 (unlabelled, under a semi-supervised
        protocol) are left out, since every score needs the labels of the rows it uses."""
        self._check_params()
        if Y is None:
            raise ValueError(f"{type(self).__name__} is supervised: fit(X, Y) needs the label matrix Y")
        X = validate_data(self, X, accept_sparse="csr", dtype=np.float64, reset=True)
        X, Yc = _labelled_part(X, Y)
        if X.shape[0] < 2:
            raise ValueError(
                f"{type(self).__name__} needs at least 2 labelled training rows, got {X.shape[0]}"
            )
        self.n_selected(X.shape[1])  # k <= d
        constant = _constant_features(X)
        if self.memory is None:
            scores = self._score(X, Yc, constant)
        else:  # one ranking per training part serves every fraction of a sweep, across jobs
            ranker = clone(self).set_params(fraction=None, k=None, memory=None)
            fitted = cached(
                self.memory,
                "rankings",
                lambda: _scores(ranker, X, Yc, constant),
                inputs={"X": X, "Y": Yc, "constant": constant},
                module="mlgraph.methods.selection",
                params={"selector": type(self).__name__, **ranker.get_params()},
            )
            scores = fitted.pop("scores")
            for name, value in fitted.items():
                setattr(self, name, value)
        scores = np.asarray(scores, dtype=np.float64)
        scores = np.where(constant, -np.inf, scores)
        if np.isnan(scores).any():  # a bug, not a data problem
            raise RuntimeError(f"{type(self).__name__} produced NaN scores")
        self.constant_features_ = constant
        self.scores_ = scores
        self.ranking_ = np.argsort(-scores, kind="stable")
        return self

    def fit_transform(self, X, Y=None, **fit_params):
        return self.fit(X, Y, **fit_params).transform(X)

    def _get_support_mask(self) -> np.ndarray:
        check_is_fitted(self, "ranking_")
        d = self.ranking_.shape[0]
        mask = np.zeros(d, dtype=bool)
        mask[self.ranking_[: self.n_selected(d)]] = True
        return mask

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        tags.input_tags.sparse = True
        return tags


# ------------------------------------------------------------------------ selectors


class GMBA(_RankingSelector):
    """Graph-margin based multi-label feature selection (paper 004, Eqs. 2-16).

    Parameters: ``n_neighbors`` k of N(i) (3), ``s_min`` (1.0), ``lam`` lambda (1.0),
    ``n_iter`` I (None: n), ``beta`` the normalised step length (0.9), ``adaptive_metric``
    (False: assumption 3), ``random_state`` (order of the picked instances);
    ``fraction``/``k`` as for every selector.

    Fitted: ``weights_`` (w), ``scores_`` (w, constant features -inf), ``ranking_``,
    ``visit_order_`` (the I picked rows), ``n_updates_`` (steps that changed w),
    ``constant_features_``. Cost O(I n d) flops in blocks of 256 picks (matrix products;
    O(I nnz(X) + I n) for sparse X); memory O(256 (n + d)) beyond X.
    """

    def __init__(
        self,
        fraction=None,
        k=None,
        n_neighbors=3,
        s_min=1.0,
        lam=1.0,
        n_iter=None,
        beta=0.9,
        adaptive_metric=False,
        random_state=None,
        memory=None,
    ):
        self.fraction = fraction
        self.k = k
        self.memory = memory
        self.n_neighbors = n_neighbors
        self.s_min = s_min
        self.lam = lam
        self.n_iter = n_iter
        self.beta = beta
        self.adaptive_metric = adaptive_metric
        self.random_state = random_state

    def _check_params(self) -> None:
        super()._check_params()
        if not (_is_int(self.n_neighbors) and self.n_neighbors >= 1):
            self._fail("n_neighbors", "a positive integer")
        if not (_is_real(self.s_min) and 0 < self.s_min <= 1):
            self._fail("s_min", "a number in (0, 1]")
        if not (_is_real(self.lam) and self.lam >= 0):
            self._fail("lam", "a non-negative number")
        if self.n_iter is not None and not (_is_int(self.n_iter) and self.n_iter >= 1):
            self._fail("n_iter", "None or a positive integer")
        if not (_is_real(self.beta) and self.beta > 0):
            self._fail("beta", "a positive number")
        if not isinstance(self.adaptive_metric, (bool, np.bool_)):
            self._fail("adaptive_metric", "True or False")

    def _score(self, X, Y, constant):
        n, n_features = X.shape
        rng = check_random_state(self.random_state)
        n_iter = n if self.n_iter is None else int(self.n_iter)
        order = np.concatenate([rng.permutation(n) for _ in range(-(-n_iter // n))])[:n_iter]
        label_w = np.asarray(Y.sum(axis=0)).ravel()
        Yw = sp.csr_matrix(Y @ sp.diags(label_w))
        degree = np.asarray(Yw.sum(axis=1)).ravel()
        X2 = _squares(X)
        sqnorm = np.asarray(X2.sum(axis=1)).ravel()
        omega = np.ones(n_features)
        threshold = self.s_min - _S_TOL
        k, lam, beta = self.n_neighbors, self.lam, self.beta
        updates = 0
        # Default: every set, margin and hinge of a step lives in the input metric
        # (assumption 3), so only the 2 w factor depends on the past: the per-instance
        # G_i = sum_j c_ij (x_i - x_j)^2 are computed for blocks of picks with BLAS-3.
        block = 1 if self.adaptive_metric else max(1, min(256, _CHUNK // max(n, n_features, 1)))
        for start in range(0, n_iter, block):
            rows = order[start : start + block]
            S = _similarity_rows(Y, Yw, degree, rows)
            if self.adaptive_metric:
                D = _sq_dists_from(X, X2, _row(X, rows[0]), omega * omega)[None, :]
            else:
                D = _sq_dists_block(X, sqnorm, rows)
            C = np.zeros((rows.size, n))
            stepped = np.zeros(rows.size, dtype=bool)
            for r, i in enumerate(rows):
                found = _gmba_sets(D[r], S[r], i, k, threshold)
                if found is not None:
                    _gmba_coefficients(D[r], S[r], *found, lam, out=C[r])
                    stepped[r] = True
            if not stepped.any():
                continue
            G = _weighted_sq_diff_rows(X, X2, rows[stepped], C[stepped])
            for g in G:
                grad = 2.0 * omega * g
                norm = np.linalg.norm(grad)
                if norm > 0 and np.isfinite(norm):
                    omega = omega - beta * grad / norm
                    updates += 1
        if updates == 0:
            warnings.warn(
                "GMBA made no update: no picked instance had both a similar and a "
                "dissimilar instance (check s_min and the label sets)",
                UserWarning,
                stacklevel=3,
            )
        self.weights_ = omega
        self.visit_order_ = order
        self.n_updates_ = updates
        return omega


class MLFS(_RankingSelector):
    """Multi-label F-statistic (Kong et al. 2012, cited by paper 004; assumption 7).

    Fitted: ``scores_`` (F, higher is better), ``ranking_``, ``constant_features_``.
    One pass of sparse products ``Y^T X`` and ``Y^T X^2``.
    """

    def __init__(self, fraction=None, k=None, memory=None):
        self.fraction = fraction
        self.k = k
        self.memory = memory

    def _score(self, X, Y, constant):
        n_k = np.asarray(Y.sum(axis=0)).ravel()
        keep = n_k > 0
        if not keep.any():
            raise ValueError("MLFS needs at least one label carried by some training row")
        Y, n_k = Y[:, keep], n_k[keep]
        K, N = n_k.size, n_k.sum()
        if not sp.issparse(X):  # shift by the grand mean: less cancellation below
            X = X - (Y.T @ X).sum(axis=0) / N
        S1 = Y.T @ X
        S2 = Y.T @ _squares(X)
        S1 = S1.toarray() if sp.issparse(S1) else np.asarray(S1)
        S2 = S2.toarray() if sp.issparse(S2) else np.asarray(S2)
        means = S1 / n_k[:, None]
        grand = S1.sum(axis=0) / N
        between = (n_k[:, None] * (means - grand) ** 2).sum(axis=0)
        total_sq = S2.sum(axis=0)
        within = total_sq - (n_k[:, None] * means**2).sum(axis=0)
        within = np.where(within <= 1e-12 * total_sq, 0.0, within)
        factor = max(N - K, 1) / max(K - 1, 1)
        F = np.zeros_like(between)
        np.divide(factor * between, within, out=F, where=within > 0)
        F[(within == 0) & (between > 1e-12 * np.maximum(total_sq, 1e-300))] = np.inf
        return F


class MLRF(_RankingSelector):
    """Multi-label ReliefF (Kong et al. 2012, cited by paper 004; assumption 8).

    ``n_neighbors`` k (3, as in paper 004). Fitted: ``scores_`` (ReliefF weights, higher is
    better), ``ranking_``, ``constant_features_``. Distances in row blocks (no n x n
    matrix kept); cost O(n^2 d + n nnz(Y) log n + n q k d).
    """

    def __init__(self, fraction=None, k=None, n_neighbors=3, memory=None):
        self.fraction = fraction
        self.k = k
        self.memory = memory
        self.n_neighbors = n_neighbors

    def _check_params(self) -> None:
        super()._check_params()
        if not (_is_int(self.n_neighbors) and self.n_neighbors >= 1):
            self._fail("n_neighbors", "a positive integer")

    def _score(self, X, Y, constant):
        n, n_features = X.shape
        k = self.n_neighbors
        Yd = Y.toarray().astype(bool)
        n_c = Yd.sum(axis=0).astype(np.float64)
        card = Yd.sum(axis=1)
        used = card > 0
        if not used.any():
            raise ValueError("MLRF needs at least one training row with a label")
        n_used = int(used.sum())
        miss_mass = n_c.sum() - Yd.astype(np.float64) @ n_c  # sum_{c not in Y_i} n_c
        members = [np.flatnonzero(Yd[:, c]) for c in range(Yd.shape[1])]
        sqnorm = np.asarray(_squares(X).sum(axis=1)).ravel()
        block = max(1, min(n, _CHUNK // max(n, 1)))
        rows, cols, vals = [], [], []
        for start in range(0, n, block):
            stop = min(n, start + block)
            b = np.arange(start, stop)
            gram = X[start:stop] @ X.T
            gram = gram.toarray() if sp.issparse(gram) else gram
            dist = sqnorm[b, None] + sqnorm[None, :] - 2.0 * gram
            dist[np.arange(b.size), b] = np.inf  # never one's own neighbour
            for c, mem in enumerate(members):
                if mem.size == 0:
                    continue
                sub = dist[:, mem]
                kk = min(k, mem.size)
                order = np.argsort(sub, axis=1, kind="stable")[:, :kk]
                nb = mem[order]
                valid = np.isfinite(np.take_along_axis(sub, order, axis=1))
                n_valid = valid.sum(axis=1)
                has_c = Yd[b, c]
                ok = used[b] & (n_valid > 0)
                with np.errstate(divide="ignore", invalid="ignore"):
                    hit_w = -1.0 / (card[b] * n_valid)
                    miss_w = n_c[c] / (miss_mass[b] * n_valid)
                weight = np.where(has_c, hit_w, miss_w)
                weight = np.where(ok & np.isfinite(weight), weight, 0.0)
                w_full = np.where(valid, weight[:, None], 0.0)
                sel = w_full != 0
                rows.append(np.broadcast_to(b[:, None], nb.shape)[sel])
                cols.append(nb[sel])
                vals.append(w_full[sel])
        W = sp.coo_matrix(
            (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(n, n)
        ).tocsr()
        W.sum_duplicates()
        spread = (
            X.max(axis=0).toarray().ravel() - X.min(axis=0).toarray().ravel()
            if sp.issparse(X)
            else np.ptp(X, axis=0)
        )
        spread = np.where(spread > 0, spread, 1.0)
        pi = np.repeat(np.arange(n), np.diff(W.indptr))
        pj, pw = W.indices, W.data
        total = np.zeros(n_features)
        step = max(1, _CHUNK // max(n_features, 1))
        for start in range(0, pw.size, step):
            sl = slice(start, start + step)
            delta = X[pi[sl]] - X[pj[sl]]
            if sp.issparse(delta):
                total += np.asarray(abs(delta).T @ pw[sl]).ravel()
            else:
                total += pw[sl] @ np.abs(delta)
        return total / spread / n_used


class SPEC(_RankingSelector):
    """SPEC (Zhao & Liu 2007) on the label graph of Eq. 3, as adapted in paper 004 (Eq. 17).

    ``variant``: ``"phi1"`` (Eq. 17, default) or ``"phi2"`` (phi_1 / (1 - (x_hat^T xi_1)^2)).
    Both: the smaller phi, the better. Fitted: ``phi_`` (raw phi), ``scores_ = -phi_``,
    ``ranking_`` (ascending phi), ``constant_features_``. Memory: the sparse n x n graph.
    """

    VARIANTS = ("phi1", "phi2")

    def __init__(self, fraction=None, k=None, variant="phi1", memory=None):
        self.fraction = fraction
        self.k = k
        self.memory = memory
        self.variant = variant

    def _check_params(self) -> None:
        super()._check_params()
        if self.variant not in self.VARIANTS:
            self._fail("variant", f"one of {self.VARIANTS}")

    def _score(self, X, Y, constant):
        A = label_graph(Y)
        if A.nnz == 0:
            raise ValueError("SPEC: the label graph of Eq. 3 has no edge (no two rows share a label)")
        degree = np.asarray(A.sum(axis=1)).ravel()
        AX = A @ X
        if sp.issparse(X):
            xAx = np.asarray(X.multiply(AX).sum(axis=0)).ravel()
            xDx = np.asarray(X.multiply(X).T @ degree).ravel()
            xD1 = np.asarray(X.T @ degree).ravel()
        else:
            xAx = np.einsum("ij,ij->j", X, np.asarray(AX))
            xDx = degree @ (X * X)
            xD1 = degree @ X
        num = np.maximum(xDx - xAx, 0.0)  # x^T L x
        phi = np.full(X.shape[1], np.inf)
        ok = xDx > 0
        phi[ok] = num[ok] / xDx[ok]
        if self.variant == "phi2":
            cos2 = np.zeros_like(phi)
            cos2[ok] = xD1[ok] ** 2 / (xDx[ok] * degree.sum())
            denom = 1.0 - cos2
            flat = ok & (denom <= 1e-12)
            phi[ok & ~flat] = phi[ok & ~flat] / denom[ok & ~flat]
            phi[flat] = np.inf
        phi[constant] = np.inf
        self.phi_ = phi
        return -phi


class Standardise(TransformerMixin, BaseEstimator):
    """Paper 004's normalisation, fitted on the training part of a trial: features constant on
    it are removed and the others z-scored with its mean and standard deviation. Sparse input
    is densified (z-scoring does not keep zeros)."""

    def fit(self, X, Y=None):
        X = check_features(X)
        mean, scale = standardisation(X)
        self.keep_ = np.isfinite(scale)
        self.mean_, self.scale_ = mean[self.keep_], scale[self.keep_]
        self.n_features_in_ = X.shape[1]
        return self

    def transform(self, X):
        check_is_fitted(self, "keep_")
        X = check_features(X, self.n_features_in_)
        return (X[:, self.keep_] - self.mean_) / self.scale_
