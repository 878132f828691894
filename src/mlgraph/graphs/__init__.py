"""Graph construction of paper 000 (Eq. 5-10): kernels, sparsifiers, weights, Laplacian.

:func:`build_graph` is the entry point used by the estimators; the building blocks are
re-exported for direct use and testing.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .bmatching import bmatching_graph, exact_bmatching
from .kernels import check_sigma, gaussian_kernel, kernel_distance, median_sigma, squared_distances
from .laplacian import laplacian
from .search import SEARCHES, check_search, knn_recall
from .sparsify import WEIGHTS, Graph, check_X, epsilon_graph, knn_graph

__all__ = [
    "KINDS",
    "SEARCHES",
    "WEIGHTS",
    "Graph",
    "bmatching_graph",
    "build_graph",
    "epsilon_graph",
    "exact_bmatching",
    "gaussian_kernel",
    "kernel_distance",
    "knn_graph",
    "knn_recall",
    "laplacian",
    "median_sigma",
    "squared_distances",
]

KINDS = ("knn", "epsilon", "bmatching")


def build_graph(
    X: np.ndarray,
    kind: str = "knn",
    sigma: float | None = None,
    weights: str = "distance",
    k: int = 10,
    eps: float | None = None,
    b: int | None = None,
    random_state: int | None = 0,
    sqdist: np.ndarray | None = None,
    search: str = "exact",
    return_info: bool = False,
    pairs: tuple[np.ndarray, np.ndarray] | None = None,
) -> sp.csr_matrix | tuple[sp.csr_matrix, dict]:
    """Sparse symmetric weight matrix W (zero diagonal) of paper 000, Eq. 5-10.

    Parameters
    ----------
    kind : ``"knn"`` (Eq. 8, uses ``k``), ``"epsilon"`` (Eq. 7 read as ``H_ij <= eps``,
        uses ``eps``) or ``"bmatching"`` (Eq. 9, uses ``b``).
    sigma : bandwidth of Eq. 5; ``None`` -> :func:`median_sigma` ``(X, random_state=...)``.
    weights : ``"distance"`` is Eq. 10 as printed, ``W = H o B`` (a distance used as a
        weight; duplicate points get weight 0 and are stored as explicit zeros);
        ``"heat"`` is ``W = U o B``.

    sqdist : optional full squared-distance matrix of X; kernel methods have it already,
        and the kNN graph then reads its neighbours from it instead of searching again.
    search : ``"exact"`` or, for ``kind="knn"``, ``"approximate"`` (an HNSW search, about
        n log n, :mod:`mlgraph.graphs.search`; its recall is measured on a sample of rows).
    pairs : for ``kind="knn"`` with the exact search, the graph's undirected pairs when the
        caller has them (:func:`~mlgraph.graphs.sparsify.knn_pairs_from`): no search then.
    return_info : also return the graph's diagnostics, ``{"knn_recall": ...}`` for an
        approximate search (``{}`` otherwise; b-matching's objective and bound).

    Notes
    -----
    Never forms a dense n x n matrix (b-matching prices pairs in bounded row blocks; only
    its never-observed last resort, an exact MILP on the complete graph, is quadratic).
    Use :func:`laplacian` for ``L = D - W``.
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    if weights not in WEIGHTS:
        raise ValueError(f"weights must be one of {WEIGHTS}, got {weights!r}")
    check_search(search, kind)
    X = check_X(X)
    sigma = median_sigma(X, random_state=random_state) if sigma is None else check_sigma(sigma)
    if kind == "knn":
        graph = knn_graph(X, sigma, k, sqdist, search, random_state, pairs)
    elif kind == "epsilon":
        if eps is None:
            raise ValueError("eps must be given for kind='epsilon'")
        graph = epsilon_graph(X, sigma, eps)
    else:
        if b is None:
            raise ValueError("b must be given for kind='bmatching'")
        graph = bmatching_graph(X, sigma, b)
    W = graph.weights(weights)
    return (W, dict(graph.info)) if return_info else W
