"""Sparse graphs from the kernel distance H: epsilon-neighbours (Eq. 7) and kNN (Eq. 8).

Representation
--------------
A sparsifier returns a :class:`Graph` holding three CSR matrices with *identical*
sparsity structure (same ``indptr`` and ``indices``, sorted, no duplicates):

* ``B`` - the binary edge matrix of the paper, ``1.0`` on every edge;
* ``H`` - the kernel distance of Eq. 6 on those edges;
* ``U`` - the Gaussian kernel of Eq. 5 on those edges.

``H`` is exactly 0 for duplicate points, so ``H`` may hold explicit zeros; ``B`` is the
authority on which edges exist (never infer the edge set from ``H.nnz`` after an
operation that prunes zeros).  Because the ``.data`` arrays are aligned, Eq. 10 is simply
``H`` (``W = H o B``) and the heat alternative is ``U`` (``W = U o B``); see
:meth:`Graph.weights`.  All matrices are symmetric with an empty diagonal.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
from sklearn.neighbors import NearestNeighbors

from .kernels import as_float_matrix, check_sigma, kernel_distance, row_blocks, squared_distances
from .search import approximate_neighbours, check_search, knn_recall

__all__ = ["Graph", "WEIGHTS", "epsilon_graph", "knn_graph"]

WEIGHTS = ("distance", "heat")

# Rows x features handled per chunk when computing per-edge distances (bounds memory).
_CHUNK_ELEMENTS = 1 << 22
# Entries of a given distance matrix selected per block: 4 MB, so the selection's passes over a
# block find it in cache (1.2x faster than 32 MB blocks at 4,000 and 8,000 rows, the same at 1,600).
_SELECT_ELEMENTS = 1 << 19
# Edges x features per chunk of pair_sqdist: small enough (2 MB) for the gathered
# differences to stay in cache between the subtraction and the sum (3× faster than 32 MB).
_PAIR_CHUNK_ELEMENTS = 1 << 18


@dataclass(frozen=True)
class Graph:
    """Symmetric sparse graph: edge set ``B`` with aligned ``H`` (Eq. 6) and ``U`` (Eq. 5).

    ``info`` carries solver diagnostics (e.g. the b-matching objective and bound).
    """

    B: sp.csr_matrix
    H: sp.csr_matrix
    U: sp.csr_matrix
    info: Mapping[str, float] = field(default_factory=dict)

    @property
    def n(self) -> int:
        """Number of vertices."""
        return self.B.shape[0]

    def degrees(self) -> np.ndarray:
        """Number of neighbours of each vertex (row sums of ``B``)."""
        return np.diff(self.B.indptr)

    def weights(self, kind: str = "distance") -> sp.csr_matrix:
        """Weight matrix ``W``: ``"distance"`` gives Eq. 10 as printed (``W = H o B``, a
        distance used as a weight), ``"heat"`` gives ``W = U o B``.  A copy is returned;
        with ``"distance"`` duplicate-point edges are explicit zeros."""
        if kind == "distance":
            return self.H.copy()
        if kind == "heat":
            return self.U.copy()
        raise ValueError(f"weights must be one of {WEIGHTS}, got {kind!r}")


def check_X(X: np.ndarray) -> np.ndarray:
    """Return X as a finite 2-D float64 array with at least 2 rows, or raise ValueError."""
    X = as_float_matrix(X, "X")
    if X.shape[0] < 2:
        raise ValueError(f"X must have at least 2 rows, got shape {X.shape}")
    return X


def check_k(k: int, n: int) -> int:
    """Validate a neighbour count: an integer with ``1 <= k <= n - 1``."""
    if isinstance(k, bool) or not isinstance(k, numbers.Integral) or not 1 <= k <= n - 1:
        raise ValueError(f"k must be an integer with 1 <= k <= n - 1 = {n - 1} (n={n}), got k={k!r}")
    return int(k)


def pair_sqdist(X: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """Exact ``||x_r - x_c||^2`` for each listed pair (difference form, chunked).

    The difference form is used on edges, rather than the Gram trick, so that duplicate
    points give exactly 0 and ``(i, j)`` and ``(j, i)`` give bitwise-equal values.
    """
    out = np.empty(rows.shape[0], dtype=np.float64)
    step = max(1, _PAIR_CHUNK_ELEMENTS // max(1, X.shape[1]))

    def chunks(block: slice) -> None:  # gathers and einsum release the GIL
        for start in range(block.start, block.stop, step):
            part = slice(start, min(block.stop, start + step))
            diff = X[rows[part]] - X[cols[part]]
            out[part] = np.einsum("ij,ij->i", diff, diff)

    row_blocks(rows.shape[0], chunks, X.shape[1])
    return out


def unique_pairs(n: int, rows: np.ndarray, cols: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Undirected pairs ``(i, j)``, ``i < j``, from directed ones; sorted, self-pairs dropped.

    Taking the union of both directions is the ``B = max(B, B^T)`` symmetrisation.
    """
    lo, hi = np.minimum(rows, cols), np.maximum(rows, cols)
    # sorted, then each key that differs from the one before: np.unique's result, 4× faster
    # than its hash-based path (numpy ≥ 2.3) at these sizes
    keys = np.sort(lo[lo != hi].astype(np.int64) * n + hi[lo != hi])
    first = np.ones(keys.shape, dtype=bool)
    np.not_equal(keys[1:], keys[:-1], out=first[1:])
    keys = keys[first]
    return keys // n, keys % n


def graph_from_pairs(
    X: np.ndarray,
    sigma: float,
    rows: np.ndarray,
    cols: np.ndarray,
    info: Mapping[str, float] | None = None,
) -> Graph:
    """Build a :class:`Graph` from undirected pairs ``rows[e] < cols[e]`` (unique)."""
    n = X.shape[0]
    sqd = pair_sqdist(X, rows, cols)
    r = np.concatenate([rows, cols])
    c = np.concatenate([cols, rows])
    order = np.argsort(r.astype(np.int64) * n + c)  # by row, then column (keys unique: 3× lexsort)
    indices = c[order].astype(np.int32)
    indptr = np.concatenate([[0], np.cumsum(np.bincount(r, minlength=n))]).astype(np.int32)
    sqd = np.concatenate([sqd, sqd])[order]

    def csr(data: np.ndarray) -> sp.csr_matrix:
        # Built from (data, indices, indptr) so that explicit zeros are kept.
        return sp.csr_matrix((data, indices.copy(), indptr.copy()), shape=(n, n))

    return Graph(
        B=csr(np.ones_like(sqd)),
        H=csr(kernel_distance(sqd, sigma)),
        U=csr(np.exp(-sqd / (2.0 * sigma**2))),
        info=dict(info or {}),
    )


def knn_pairs(X: np.ndarray, k: int, sqdist: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Undirected pairs of the max-symmetrised kNN graph (self excluded).

    Neighbours are read from ``sqdist`` (the full squared-distance matrix of X, which kernel
    methods compute anyway) or, without it, from row blocks of squared distances; both paths
    select with :func:`nearest_columns`, so they give the same graph. Given ``sqdist``, row
    blocks are selected in :func:`row_blocks`' threads (the selection releases the GIL).
    """
    n = X.shape[0]
    step = max(1, (_CHUNK_ELEMENTS if sqdist is None else _SELECT_ELEMENTS) // n)
    found = []  # (rows, cols) in any order

    def select(block: slice) -> None:
        size = block.stop - block.start
        parts = max(1, -(-size // step))
        rows = -(-size // parts)  # equal parts of at most ``step`` rows
        for start in range(block.start, block.stop, rows):
            part = slice(start, min(block.stop, start + rows))
            D = sqdist[part] if sqdist is not None else squared_distances(X[part], X)
            r, c = nearest_columns(D, k, start)
            found.append((r + start, c))

    if sqdist is not None:
        sqdist = check_sqdist(sqdist, n)
        row_blocks(n, select, n)
    else:
        select(slice(0, n))
    return unique_pairs(n, np.concatenate([r for r, _ in found]), np.concatenate([c for _, c in found]))


def knn_neighbours(X: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(neighbours, unsure): each row's k nearest rows of X (self excluded), chosen as
    :func:`knn_pairs` chooses them, as an n × k array; and the rows whose choice could depend
    on the order of the rows or on rounding: those whose k-th and (k+1)-th smallest squared
    distances lie within ``1e-6 d_k + 1e-10 (‖x_i‖² + max_j ‖x_j‖²)`` of each other (ties, as
    between duplicate points, included), a margin far above the rounding error of the Gram
    formula and of a standardisation summed in another order. The other rows have the same k
    nearest rows in any order of the rows of X (:func:`knn_pairs_from`)."""
    X = as_float_matrix(X, "X")
    n = X.shape[0]
    k = check_k(k, n)
    step = max(1, _CHUNK_ELEMENTS // n)
    sq = np.einsum("ij,ij->i", X, X)
    neighbours = np.empty((n, k), dtype=np.int64)
    unsure = np.zeros(n, dtype=bool)
    for start in range(0, n, step):
        part = slice(start, min(n, start + step))
        D = squared_distances(X[part], X)
        neighbours[part] = nearest_columns(D, k, start)[1].reshape(-1, k)  # row-major, k per row
        if k < n - 1:  # else every other row is a neighbour, whatever the order
            D[np.arange(D.shape[0]), np.arange(part.start, part.stop)] = np.inf
            smallest = row_smallest(D, k + 1)  # the (k+1)-th last, the k before it unordered
            kth, next_ = smallest[:, :k].max(axis=1), smallest[:, k]
            unsure[part] = next_ - kth <= 1e-6 * kth + 1e-10 * (sq[part] + sq.max())
    return neighbours, unsure


def knn_pairs_from(
    X: np.ndarray, k: int, neighbours: np.ndarray, unsure: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`knn_pairs` ``(X, k)`` from :func:`knn_neighbours` of the same rows in another order
    (or with rounding-level differences), its indices mapped to X's rows: the unsure rows are
    chosen again here, from their own distances in this order; the other rows' neighbours are
    the same in every order. The same pairs as :func:`knn_pairs` ``(X, k)``."""
    n = X.shape[0]
    rows, cols = np.repeat(np.arange(n), k), np.asarray(neighbours).ravel()
    redo = np.flatnonzero(unsure)
    if redo.size:
        keep = ~np.repeat(np.asarray(unsure, dtype=bool), k)
        r, c = nearest_columns(squared_distances(X[redo], X), k, redo)
        rows, cols = np.concatenate([rows[keep], redo[r]]), np.concatenate([cols[keep], c])
    return unique_pairs(n, rows, cols)


def _row_candidates(
    D: np.ndarray, j: int, rtol: float = 0.0
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The entries of each row of D at or below an upper bound of the row's j-th smallest value
    (widened by ``rtol`` as :func:`nearest_columns` widens a tie), without partitioning whole
    rows: ``(rows, cols, values)`` in row-major order, and the j smallest values of each row,
    the j-th last (those of ``np.partition(D, j - 1, axis=1)[:, :j]``).

    A strided sample of about √(2.5 j n) columns bounds each row's j-th smallest from above (the
    sample holds j values at or below its own j-th); only the entries at or below the bound
    (about √(j n / 2.5) per row) are gathered and partitioned. Float rounding is monotone, so
    every entry within ``rtol`` of the row's j-th smallest is at or below the widened bound.
    """
    m, n = D.shape
    stride = int(n // np.sqrt(2.5 * j * n))
    sample = D[:, ::stride] if stride >= 2 else D
    bound = np.partition(sample, j - 1, axis=1)[:, j - 1 : j]
    with np.errstate(invalid="ignore"):  # 0 × inf: no widening
        limit = np.where(np.isfinite(bound), bound + (rtol * bound + 1e-300), bound)
    flat = np.flatnonzero(D <= limit)
    rows, cols = np.divmod(flat, n)
    values = D.reshape(-1)[flat] if D.flags.c_contiguous else D[rows, cols]
    counts = np.bincount(rows, minlength=m)
    gathered = np.full((m, counts.max(initial=j)), np.inf, dtype=D.dtype)
    gathered[rows, np.arange(len(rows)) - (np.cumsum(counts) - counts)[rows]] = values
    return rows, cols, values, np.partition(gathered, j - 1, axis=1)[:, :j]


def row_smallest(D: np.ndarray, j: int) -> np.ndarray:
    """The j smallest entries of each row of D, the j-th last: the values of
    ``np.partition(D, j - 1, axis=1)[:, :j]``, 3–4× faster at n ≥ 1,000 (:func:`_row_candidates`)."""
    return _row_candidates(D, j)[3]


def nearest_columns(
    D: np.ndarray, k: int, offset: int | np.ndarray | None, rtol: float = 1e-9
) -> tuple[np.ndarray, np.ndarray]:
    """The k smallest entries of each row of a block of squared distances.

    Row i of the block is point ``offset + i`` (or ``offset[i]`` for an array: rows that are not
    consecutive points), which is excluded (its entry is set to inf while selecting and then
    restored); ``offset=None`` excludes nothing (queries that are not columns of ``D``, e.g.
    test points against training points). Distances equal within ``rtol`` (rounding noise of
    the Gram-matrix formula) are ties, broken by the lower column index, so that duplicate and
    equidistant points give a deterministic graph. Each row gets exactly k columns; the result
    is in row-major order (``np.nonzero``). Only the candidates of :func:`_row_candidates` are
    compared with the k-th distance, never whole rows.
    """
    m = D.shape[0]
    self_entries = None
    if offset is not None:
        own = offset + np.arange(m) if np.isscalar(offset) else np.asarray(offset)
        self_entries = (np.arange(m), own)
        saved = D[self_entries]
        D[self_entries] = np.inf
    try:
        rows, cols, values, smallest = _row_candidates(D, k, rtol)
    finally:
        if self_entries is not None:
            D[self_entries] = saved
    kth = smallest[:, k - 1]
    tol = rtol * kth + 1e-300
    less = values < (kth - tol)[rows]
    within = values <= (kth + tol)[rows]  # less, or tied with the k-th
    n_less = np.bincount(rows[less], minlength=m)
    over = np.bincount(rows[within], minlength=m) > k  # more ties than places left
    if over.any():
        tied = within & ~less
        rank = np.cumsum(tied)  # rank of a tie within its row:
        first = np.searchsorted(rows, np.arange(m))  # candidates are row-major
        rank -= (rank - tied)[first][rows]
        within = less | (tied & ((rank <= (k - n_less)[rows]) | ~over[rows]))
    return rows[within], cols[within]


def check_sqdist(sqdist: np.ndarray, n: int) -> np.ndarray:
    """A precomputed n x n squared-distance matrix, or ValueError."""
    sqdist = np.asarray(sqdist, dtype=np.float64)
    if sqdist.shape != (n, n):
        raise ValueError(f"sqdist must have shape ({n}, {n}), got {sqdist.shape}")
    return sqdist


def knn_graph(
    X: np.ndarray,
    sigma: float,
    k: int,
    sqdist: np.ndarray | None = None,
    search: str = "exact",
    random_state: int | None = 0,
    pairs: tuple[np.ndarray, np.ndarray] | None = None,
) -> Graph:
    """kNN graph of Eq. 8, symmetrised by ``B = max(B, B^T)``.

    Each row first keeps its ``k`` smallest ``H_ij``, ``j != i`` (the minimiser of Eq. 8);
    since H is increasing in the Euclidean distance these are the k Euclidean nearest
    neighbours (:func:`nearest_columns`).  Every degree is therefore ``>= k``.  Duplicate
    points are each other's neighbours (``H = 0``), and the edge is kept in ``B``.
    Deterministic: ties at the k-th distance go to the lower index.
    ``sqdist``: optional precomputed squared distances of X (see :func:`knn_pairs`).
    ``search="approximate"``: the neighbours of :func:`mlgraph.graphs.search.approximate_neighbours`
    instead (about n log n instead of n²; ``sqdist`` is then not used), and ``info["knn_recall"]``
    their recall on rows drawn with ``random_state`` (:func:`mlgraph.graphs.search.knn_recall`).
    ``pairs``: the exact search's undirected pairs, when the caller has them (:func:`knn_pairs_from`).
    """
    X = check_X(X)
    sigma = check_sigma(sigma)
    k = check_k(k, X.shape[0])
    if check_search(search) == "approximate":
        neighbours = approximate_neighbours(X, k)
        rows, cols = unique_pairs(X.shape[0], np.repeat(np.arange(X.shape[0]), k), neighbours.ravel())
        info = {"knn_recall": knn_recall(X, neighbours, random_state)}
        return graph_from_pairs(X, sigma, rows, cols, info)
    rows, cols = knn_pairs(X, k, sqdist) if pairs is None else pairs
    return graph_from_pairs(X, sigma, rows, cols)


def epsilon_radius(eps: float, sigma: float) -> float:
    """Euclidean radius equivalent to ``H <= eps`` (``inf`` when ``eps >= sqrt(2)``).

    ``sqrt(2 - 2 exp(-d^2 / (2 sigma^2))) <= eps``  iff  ``d <= sigma sqrt(-2 log(1 - eps^2 / 2))``.
    """
    if eps * eps >= 2.0:
        return np.inf
    return sigma * np.sqrt(-2.0 * np.log1p(-0.5 * eps * eps))


def epsilon_graph(X: np.ndarray, sigma: float, eps: float) -> Graph:
    """epsilon-neighbour graph: ``B_ij = 1`` iff ``H_ij <= eps`` and ``i != j``.

    Deviation from the paper: Eq. 7 prints ``1 - H_ij <= eps``, which connects *distant*
    pairs (H is a distance); we implement the evident intent ``H_ij <= eps``.  Since
    ``H < sqrt(2)`` always, ``eps >= sqrt(2)`` gives the complete graph.  Candidates come
    from ``radius_neighbors`` at a slightly enlarged Euclidean radius, and the test
    ``H_ij <= eps`` is then applied to exactly recomputed distances, so the result does
    not depend on rounding in the neighbour search.
    """
    X = check_X(X)
    sigma = check_sigma(sigma)
    if isinstance(eps, bool) or not isinstance(eps, numbers.Real) or not np.isfinite(eps) or eps <= 0:
        raise ValueError(f"eps must be a positive finite number, got {eps!r}")
    radius = epsilon_radius(float(eps), sigma)
    nn = NearestNeighbors(radius=radius * (1.0 + 1e-9) + 1e-12, algorithm="brute").fit(X)
    G = nn.radius_neighbors_graph(mode="connectivity").tocoo()
    rows, cols = unique_pairs(X.shape[0], G.row, G.col)
    keep = kernel_distance(pair_sqdist(X, rows, cols), sigma) <= eps
    return graph_from_pairs(X, sigma, rows[keep], cols[keep])
