"""Label-wise graph propagation baselines of paper 000: ML-GFHF and ML-LGC (Zha et al. 2009).

Both are transductive: they score the nodes of a graph built on every row given to ``fit``,
labelled (``Y`` rows of 0/1) and unlabelled (``Y`` rows of −1) alike, and each of the q labels
is propagated on that one graph independently, all q as right-hand sides of one solve.
W is the sparse symmetric weight matrix of :func:`mlgraph.graphs.build_graph` (Eq. 5–10 of
paper 000) on standardised features, D = diag(W 1) its degrees, l the labelled and u the
unlabelled nodes.

ML-GFHF, Gaussian fields and harmonic functions (Zhu, Ghahramani & Lafferty 2003, Eq. 5), with
Y_l ∈ {0, 1}: labelled nodes are clamped to their labels and the unlabelled scores are the
harmonic solution

    f_u = (D_uu − W_uu)⁻¹ W_ul Y_l,

so every unlabelled score is the W-weighted mean of its neighbours' scores and lies in [0, 1].
Label j is predicted where f_j > 0.5 (the class-mass normalisation of Zhu et al. is not used).

ML-LGC, local and global consistency (Zhou et al. 2004, Sec. 2: the closed form F* = (I − αS)⁻¹Y
of their iteration), with S = D^{-1/2} W D^{-1/2} and Y holding +1 for a labelled positive, −1 for a
labelled negative and 0 for an unlabelled entry:

    F = (I − αS)⁻¹ Y,    0 < α < 1.

This is two-class LGC per label (columns "positive" and "negative") collapsed to
F_pos − F_neg; Zhou's iteration converges to (1 − α)F, and the constant factor changes neither
the sign nor any ranking. Label j is predicted where F_j > 0. Labelled nodes are not clamped:
their scores are those of the solve (their own label dominates through the identity term).

Solving: closed forms whose matrices (D_uu − W_uu for GFHF, I − αS for LGC) are sparse,
symmetric and positive definite, solved for all q labels at once by conjugate gradients
(diagonally preconditioned for GFHF) down to a relative residual of 1e-15 in every column, the
rounding floor of a direct solve: on scene and yeast that takes 30–65 iterations of one sparse
product, 10–20× less time than a sparse LU, whose fill on kNN graphs of a few thousand nodes is
nearly dense, and the scores agree with it to about 1e-15. I − αS has condition number at most
(1 + α)/(1 − α), so LGC's iterations are bounded whatever the graph. Where CG does not get there
(within 500 iterations, or with a residual that fails LAPACK's backward-error test), the system is
factorised by SuperLU (``scipy.sparse.linalg.splu`` on CSC, minimum-degree ordering of the
symmetric pattern) as before. No dense inverse, no dense n×n matrix (σ comes from a subsample,
the kNN graph from row blocks).

Neighbour search: ``knn_search="approximate"`` builds the kNN graph from an HNSW search
(:mod:`mlgraph.graphs.search`, about n log n instead of n²) and records its recall in
``graph_report_`` (``{}`` for the exact search). With a cache folder (``memory``), the exact
search runs once for a set of rows and k: the runner's trials fit the same training + test rows
in a new order each time, and read each row's neighbours back, only the rows with a tie at the
k-th neighbour being chosen again in their order (:func:`mlgraph.methods.base.order_free_knn_pairs`),
so the graph is the one the search gives.

Components: the connected components of the graph are found with
``scipy.sparse.csgraph.connected_components`` on the edges of positive weight. The systems are
solved only on the components that hold a labelled node (for GFHF the restricted D_uu − W_uu is
then a nonsingular M-matrix; for LGC I − αS is nonsingular anyway and the other components would
get F = 0). Unlabelled nodes of the other components, isolated nodes (degree 0) included, get
the fallback of the labelled label frequencies p_j = mean of Y_l[:, j]: GFHF scores p_j, LGC
scores 2p_j − 1 (unscaled). Both thresholds then predict the majority value of each label, and
the order of the labels within a fallback row follows p_j; the LGC fallback magnitudes are not
on the scale of the propagated scores, which matters only for label-wise rankings that mix
fallback rows with propagated rows. In LGC a degree-0 node gets d^{-1/2} = 0 (no division by
zero): a labelled isolated node keeps F = ±1.

Scoring rule for test points: the runner fits on training plus test rows with every test row −1
(``transductive = True``) and reads ``label_scores_`` / ``transduction_`` of the test rows.
``decision_function(X_new)`` / ``predict(X_new)`` apply the same rule: X_new joins the stored
training rows as unlabelled nodes and everything (standardisation, median σ, graph, solve) is
done again, so a call costs a full fit and returns exactly the rows that fitting on
[training; X_new] would give.

Assumptions:
- Zha et al. (2009) also add a label-correlation term coupling the q propagation problems; the
  baselines here are label-wise without it (the comparison of paper 000 defines them so).
- Transductive methods see the features (never the labels) of every node they score: the
  standardisation statistics and the median-heuristic σ are computed on all rows given to
  ``fit``, test rows included.
- Default weights are heat weights, W = U∘B (Gaussian kernel on the edges): Eq. 10 of paper 000
  as printed weights edges by a distance, so far neighbours would propagate most;
  ``weights="distance"`` stays available.
- Fallback scores for nodes that no labelled node reaches, as described above.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components
from scipy.sparse.linalg import splu
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from mlgraph.graphs import KINDS, SEARCHES, WEIGHTS
from mlgraph.methods.base import (
    MultiLabelClassifierMixin,
    ScoreThresholdMixin,
    cached_graph,
    check_params,
    in_open_unit,
    order_free_knn_pairs,
    positive,
    positive_int,
    shared_median_sigma,
    standardisation,
)

__all__ = [
    "MLGFHF",
    "MLLGC",
    "conjugate_gradients",
    "harmonic_scores",
    "lgc_scores",
    "reached_nodes",
    "solve_spd",
]

# Both system matrices are symmetric: minimum degree on AᵀA+A keeps SuperLU's fill about 3× lower
# than the default COLAMD on kNN graphs (measured on n = 20 000, k = 10).
_ORDERING = "MMD_AT_PLUS_A"
# Relative residual ‖b − Ax‖₂ ≤ _CG_RTOL ‖b‖₂ at which conjugate gradients stop (per column),
# and the most iterations before SuperLU takes over (30–65 suffice on the benchmark sets; 500
# bound a failed attempt to a few factorisations' time).
_CG_RTOL = 1e-15
_CG_MAXITER = 500


def solve_spd(A: sp.spmatrix, B: np.ndarray, diagonal: np.ndarray | None = None) -> np.ndarray:
    """X = A⁻¹B for a sparse symmetric positive definite A by :func:`conjugate_gradients` (Jacobi
    preconditioner ``diagonal`` = diag(A) if given). The result is accepted if its true residual
    passes LAPACK's backward-error test (that of ``dsgesv``: ‖b − Ax‖∞ ≤ √n ε ‖A‖∞ ‖x‖∞ per
    column), else A is factorised by SuperLU."""
    A = sp.csr_matrix(A)
    n = A.shape[0]
    X = np.zeros_like(B)
    nonzero = np.flatnonzero(np.abs(B).max(axis=0) > 0)  # a zero column's solution is zero
    if nonzero.size:
        X[:, nonzero] = conjugate_gradients(A, B[:, nonzero], diagonal)
    norm = abs(A).sum(axis=1).max()
    tol = np.sqrt(n) * np.finfo(np.float64).eps * norm * np.abs(X).max(axis=0)
    if (np.abs(B - A @ X).max(axis=0) <= tol).all():
        return X
    return splu(A.tocsc(), permc_spec=_ORDERING).solve(B)


def conjugate_gradients(A: sp.csr_matrix, B: np.ndarray, diagonal: np.ndarray | None = None) -> np.ndarray:
    """Conjugate gradients on every column of B at once, each column with its own step sizes,
    until ‖b − Ax‖₂ ≤ ``_CG_RTOL`` ‖b‖₂, for at most ``_CG_MAXITER`` iterations. Columns leave
    the iteration as they converge (in batches of a quarter of those left, so that few copies
    are made): with many labels, rare ones converge first."""
    inverse = None if diagonal is None else (1.0 / diagonal)[:, None]
    X = np.zeros_like(B)
    cols = np.arange(B.shape[1])  # the columns still iterating, and their state below
    Xa, R = np.zeros_like(B), B.copy()
    Z = R if inverse is None else inverse * R
    P = Z.copy()
    rz = np.einsum("ij,ij->j", R, Z)
    bound = (_CG_RTOL * np.linalg.norm(B, axis=0)) ** 2
    for _ in range(min(A.shape[0], _CG_MAXITER)):
        AP = A @ P
        curvature = np.einsum("ij,ij->j", P, AP)
        step = np.divide(rz, curvature, out=np.zeros_like(rz), where=curvature > 0)
        Xa += step * P
        AP *= step  # in place: the same numbers as R -= step * AP, one temporary less
        R -= AP
        done = np.einsum("ij,ij->j", R, R) <= bound
        if done.all():
            break
        if 4 * done.sum() >= len(cols):
            X[:, cols[done]] = Xa[:, done]
            cols, Xa, R, P, rz, bound = (a[..., ~done] for a in (cols, Xa, R, P, rz, bound))
        Z = R if inverse is None else np.multiply(inverse, R, out=AP[:, : R.shape[1]])
        rz_next = np.einsum("ij,ij->j", R, Z)
        P *= np.divide(rz_next, rz, out=np.zeros_like(rz), where=rz > 0)
        P += Z  # P = Z + βP, in place
        rz = rz_next
    X[:, cols] = Xa
    return X


def _check_inputs(W, Y, labelled) -> tuple[sp.csr_matrix, np.ndarray, np.ndarray]:
    W = sp.csr_matrix(W, dtype=np.float64)
    labelled = np.asarray(labelled, dtype=bool)
    Y = np.asarray(Y, dtype=np.float64)
    n = W.shape[0]
    if W.shape != (n, n) or Y.ndim != 2 or Y.shape[0] != n or labelled.shape != (n,):
        raise ValueError(
            f"W must be n×n, Y n×q and labelled of length n; got {W.shape}, {Y.shape}, {labelled.shape}"
        )
    if not labelled.any():
        raise ValueError("no labelled node")
    return W, Y, labelled


def reached_nodes(W, labelled) -> np.ndarray:
    """Boolean mask of the nodes whose connected component (edges of positive weight) holds a
    labelled node; the others, isolated unlabelled nodes included, get the fallback scores."""
    A = sp.csr_matrix(W, copy=True)
    A.data = (A.data > 0).astype(np.float64)  # explicit zeros (duplicate points) are no edges
    A.eliminate_zeros()
    _, component = connected_components(A, directed=False)
    return np.isin(component, np.unique(component[np.asarray(labelled, dtype=bool)]))


def harmonic_scores(W, Y, labelled) -> np.ndarray:
    """ML-GFHF scores (n×q, in [0, 1]) of all nodes: labelled rows are ``Y`` (0/1, clamped),
    unlabelled rows reached by a labelled node are f_u = (D_uu − W_uu)⁻¹ W_ul Y_l, the others
    the labelled label frequencies p_j. Values of ``Y`` on unlabelled rows are ignored."""
    W, Y, labelled = _check_inputs(W, Y, labelled)
    Yl = Y[labelled]
    scores = np.tile(Yl.mean(axis=0), (W.shape[0], 1))  # fallback p_j
    scores[labelled] = Yl
    solve = reached_nodes(W, labelled) & ~labelled
    if solve.any():
        degree = np.asarray(W.sum(axis=1)).ravel()
        Wu = W[solve]
        A = sp.diags(degree[solve]) - Wu[:, solve]
        scores[solve] = solve_spd(A, np.asarray(Wu[:, labelled] @ Yl), degree[solve])
    return scores


def lgc_scores(W, Y, labelled, alpha: float = 0.7) -> np.ndarray:
    """ML-LGC scores (n×q): F = (I − αS)⁻¹ Y with S = D^{-1/2} W D^{-1/2} and Y = ±1 on labelled
    rows (from 0/1), 0 on unlabelled rows, solved on the nodes reached by a labelled node; the
    others get 2p_j − 1. Values of ``Y`` on unlabelled rows are ignored."""
    if not in_open_unit(alpha):
        raise ValueError(f"alpha={alpha!r} must lie in (0, 1)")
    W, Y, labelled = _check_inputs(W, Y, labelled)
    Yl = Y[labelled]
    scores = np.tile(2.0 * Yl.mean(axis=0) - 1.0, (W.shape[0], 1))  # fallback 2 p_j − 1
    degree = np.asarray(W.sum(axis=1)).ravel()
    reached = reached_nodes(W, labelled)
    isolated = reached & (degree == 0)  # a labelled node alone: its S row is 0, so F = Y
    scores[isolated] = 2.0 * Y[isolated] - 1.0
    solve = reached & ~isolated
    d = sp.diags(1.0 / np.sqrt(degree[solve]))
    S = d @ W[solve][:, solve] @ d
    A = sp.identity(S.shape[0], format="csr") - alpha * S
    target = np.where(labelled[solve, None], 2.0 * Y[solve] - 1.0, 0.0)
    if solve.any():
        scores[solve] = solve_spd(A, target)
    return scores


class _GraphPropagation(ScoreThresholdMixin, MultiLabelClassifierMixin, BaseEstimator):
    """Shared transductive fit: standardise all rows, build W, then :meth:`_scores`."""

    transductive = True
    threshold = 0.0

    _rules = {
        "sigma": (lambda v: v is None or positive(v), "None (median heuristic) or > 0"),
        "sigma_scale": (positive, "a positive number"),
        "graph": (lambda v: v in KINDS, f"one of {KINDS}"),
        "k": (positive_int, "a positive integer (neighbours of the kNN graph, Eq. 8)"),
        "weights": (lambda v: v in WEIGHTS, f"one of {WEIGHTS} (Eq. 10 as printed, or U∘B)"),
        "knn_search": (lambda v: v in SEARCHES, f"one of {SEARCHES} (the kNN graph's neighbour search)"),
    }

    def __init__(
        self,
        sigma=None,
        sigma_scale=1.0,
        graph="knn",
        k=10,
        eps=None,
        b=None,
        weights="heat",
        random_state=0,
        memory=None,
        knn_search="exact",
    ):
        self.sigma = sigma
        self.sigma_scale = sigma_scale
        self.graph = graph
        self.k = k
        self.eps = eps
        self.b = b
        self.weights = weights
        self.random_state = random_state
        self.memory = memory
        self.knn_search = knn_search

    def _scores(self, W, Y, labelled) -> np.ndarray:
        raise NotImplementedError

    def _transduce(self, X: np.ndarray, Y: np.ndarray, labelled: np.ndarray):
        """(scores of every row, W, σ, the graph's diagnostics) for validated X, Y; features
        standardised on all rows."""
        mean, scale = standardisation(X)
        Xs = (X - mean) / scale
        if self.sigma is None:
            base_sigma = shared_median_sigma(self.memory, Xs, self.random_state)
        else:
            base_sigma = self.sigma
        sigma = float(base_sigma) * self.sigma_scale
        W, info = cached_graph(
            self.memory,
            Xs,
            kind=self.graph,
            sigma=sigma,
            weights=self.weights,
            k=self.k,
            eps=self.eps,
            b=self.b,
            random_state=self.random_state,
            sqdist=None,
            search=self.knn_search,
            pairs=order_free_knn_pairs(self.memory, X, Xs, self.k)
            if self.graph == "knn" and self.knn_search == "exact"
            else None,
        )
        return self._scores(W, Y, labelled), W, sigma, info

    def fit(self, X, Y):
        """Propagate the labels of ``Y`` over the graph of all rows of ``X``; rows of ``Y`` equal
        to −1 are unlabelled (the test rows, in the runner). Scores of every row are stored in
        ``label_scores_`` and thresholded in ``transduction_``."""
        check_params(self, self._rules)
        X, Y, labelled = self._check_fit_data(X, Y)
        scores, self.graph_, self.sigma_, self.graph_report_ = self._transduce(X, Y, labelled)
        self.label_scores_ = scores
        self.transduction_ = (scores > self.threshold).astype(np.int8)
        self.X_fit_, self.Y_fit_ = X, Y
        self.n_labelled_ = int(labelled.sum())
        return self

    def decision_function(self, X) -> np.ndarray:
        """Scores of new points by the transductive rule: the rows of ``X`` join the stored
        training rows as unlabelled nodes and everything is solved again (each call costs a fit);
        equal to ``label_scores_[n_train:]`` of a fit on [training; X] with X's rows −1."""
        check_is_fitted(self, "label_scores_")
        X = self._check_predict_data(X)
        X_all = np.vstack([self.X_fit_, X])
        Y_all = np.vstack([self.Y_fit_, np.full((X.shape[0], self.Y_fit_.shape[1]), -1, np.int8)])
        labelled = np.concatenate([(self.Y_fit_ != -1).all(axis=1), np.zeros(X.shape[0], bool)])
        scores = self._transduce(X_all, Y_all, labelled)[0]
        return scores[self.X_fit_.shape[0] :]

    def predict_from_scores(self, scores) -> np.ndarray:
        """Labels whose score exceeds ``threshold``."""
        return (np.asarray(scores) > self.threshold).astype(np.int8)


class MLGFHF(_GraphPropagation):
    """ML-GFHF: label-wise harmonic function (Zhu et al. 2003), labelled nodes clamped; scores in
    [0, 1], label j predicted where f_j > 0.5."""

    threshold = 0.5

    def _scores(self, W, Y, labelled) -> np.ndarray:
        return harmonic_scores(W, Y, labelled)


class MLLGC(_GraphPropagation):
    """ML-LGC: label-wise local and global consistency (Zhou et al. 2004), F = (I − αS)⁻¹Y with
    Y = ±1 / 0; label j predicted where F_j > 0.

    ``alpha`` defaults to 0.7, the value the exploration protocol chose on emotions, scene and
    yeast (0.9 on mediamill-small). Zhou et al.'s α = 0.99 propagates so far on these kNN graphs
    that nearly every node gets the same sign: micro-F1 0.16 (emotions), 0.48 (yeast) and 0.00
    (scene), mean of 10 % and 50 % labelled, against 0.62, 0.60 and 0.62 with α = 0.7."""

    _rules = {
        **_GraphPropagation._rules,
        "alpha": (in_open_unit, "in the open interval (0, 1) (α of Zhou et al. 2004)"),
    }

    def __init__(
        self,
        sigma=None,
        sigma_scale=1.0,
        graph="knn",
        k=10,
        eps=None,
        b=None,
        weights="heat",
        random_state=0,
        memory=None,
        knn_search="exact",
        alpha=0.7,
    ):
        super().__init__(
            sigma=sigma,
            sigma_scale=sigma_scale,
            graph=graph,
            k=k,
            eps=eps,
            b=b,
            weights=weights,
            random_state=random_state,
            memory=memory,
            knn_search=knn_search,
        )
        self.alpha = alpha

    def _scores(self, W, Y, labelled) -> np.ndarray:
        return lgc_scores(W, Y, labelled, alpha=self.alpha)
