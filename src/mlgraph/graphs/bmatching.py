"""Minimum-weight b-matching graph (paper 000, Eq. 9).

Eq. 9 asks for a symmetric 0/1 matrix B with zero diagonal and every degree exactly b
minimising ``sum_ij B_ij H_ij`` (each edge counted twice, as printed).  Such a B exists
iff ``1 <= b <= n - 1`` and ``n b`` is even (e.g. a circulant graph).

Production solver (:func:`bmatching_graph`)
-------------------------------------------
A generic MILP (HiGHS branch and bound) on kNN candidates is fast when b is even but
ran for minutes on yeast (n = 2417, b = 5, 10 or 20 candidate neighbours): the LP
relaxation of b-matching has half-integral vertices whose 1/2 edges form odd cycles,
and branch and bound without blossom cuts closes that parity gap slowly.  The solver
therefore works as a primal-dual heuristic with a certificate:

1. Candidate edges: the max-symmetrised kNN graph with ``k_candidates`` neighbours.
2. LP relaxation of Eq. 9 on the candidates (HiGHS dual simplex: a vertex solution and
   degree duals ``y``).  Column generation over *all* pairs, in row blocks: pairs with
   negative reduced cost ``H_ij - y_i - y_j`` are added and the LP re-solved until
   the total negative reduced cost is below 1e-6 of the LP value.  LP value minus that
   remainder is, by weak duality, a certified lower bound on the optimum of Eq. 9 over
   the complete graph (``info["lower_bound"]``).
3. Rounding: keep the edges at 1, then add fractional (odd-cycle) edges greedily while
   both endpoints have spare degree.
4. Repair: while a vertex lacks degree, apply the cheapest alternating trail
   (add, remove, ..., add) between two deficient vertices, found by Dijkstra on the
   parity-doubled candidate graph with the LP reduced costs as arc lengths (they are
   non-negative at the LP optimum, which is why the duals are used).
5. If the LP is infeasible on the candidates, or no valid trail exists, ``k_candidates``
   is doubled (up to the complete graph).  On the complete graph the exact MILP is the
   last resort, so the result always has every degree exactly b; this is verified.

The returned ``Graph.info`` reports ``objective`` (Eq. 9 value), ``lower_bound`` and the
certified relative ``gap = objective / lower_bound - 1`` (up to LP solver tolerances):
the result is within that gap of the true optimum, though not guaranteed optimal.  The
bound is the LP relaxation, so the gap can overstate the true excess where the LP is
weak (e.g. far-apart clusters of odd size with odd b).  :func:`exact_bmatching` is the
exact MILP over all ``n(n-1)/2`` pairs, used as the reference on small n.
"""

from __future__ import annotations

import numbers

import numpy as np
import scipy.sparse as sp
from scipy.optimize import Bounds, LinearConstraint, linprog, milp
from scipy.sparse.csgraph import dijkstra

from .kernels import check_sigma, kernel_distance, squared_distances
from .sparsify import Graph, check_X, graph_from_pairs, knn_pairs, pair_sqdist, unique_pairs

__all__ = ["bmatching_graph", "check_b", "exact_bmatching"]

_INT_TOL = 1e-7  # LP values within this of 0/1 are integral
_PRICE_TOL = 1e-9  # reduced costs below -_PRICE_TOL enter the LP
_BLOCK_ELEMENTS = 1 << 22  # pricing works on row blocks of about this many pairs
_PRICE_PER_ROW = 10  # pricing adds at most this many times b new pairs per vertex
_BOUND_RTOL = 1e-6  # column generation stops when the bound is this close (relative)
_MAX_BANS = 20  # re-searches per endpoint pair when a shortest walk reuses an edge
_MAX_PAIRS = 50  # endpoint pairs tried per augmentation before the candidate set grows

Solution = tuple[np.ndarray, np.ndarray, dict[str, float]]  # chosen pairs i < j, info


def check_b(b: int, n: int) -> int:
    """Validate b: an integer with ``1 <= b <= n - 1`` and ``n * b`` even (feasibility)."""
    if isinstance(b, bool) or not isinstance(b, numbers.Integral):
        raise ValueError(f"b must be an integer, got b={b!r}")
    if not 1 <= b <= n - 1:
        raise ValueError(f"b-matching needs 1 <= b <= n - 1; got b={b}, n={n}")
    if (n * b) % 2:
        raise ValueError(f"b-matching is infeasible when n * b is odd; got b={b}, n={n}")
    return int(b)


def _incidence(n: int, rows: np.ndarray, cols: np.ndarray) -> sp.csr_matrix:
    """Vertex-edge incidence matrix (n x m): degree of vertex i is ``(A @ x)[i]``."""
    m = rows.shape[0]
    edge = np.arange(m)
    ends = np.concatenate([rows, cols])
    return sp.csr_matrix((np.ones(2 * m), (ends, np.concatenate([edge, edge]))), shape=(n, m))


def _degrees(n: int, rows: np.ndarray, cols: np.ndarray, chosen: np.ndarray) -> np.ndarray:
    return np.bincount(rows[chosen], minlength=n) + np.bincount(cols[chosen], minlength=n)


def _milp(n: int, rows: np.ndarray, cols: np.ndarray, cost: np.ndarray, b: int) -> np.ndarray | None:
    """Exact min-cost b-matching on the listed edges; chosen-edge mask, None if infeasible."""
    res = milp(
        cost,
        integrality=np.ones_like(cost),
        bounds=Bounds(0.0, 1.0),
        constraints=LinearConstraint(_incidence(n, rows, cols), b, b),
        options={"mip_rel_gap": 0.0},
    )
    if res.status == 2:
        return None
    if res.status != 0:
        raise RuntimeError(f"MILP b-matching failed: {res.message}")
    return res.x > 0.5


def _solve_lp(
    n: int, rows: np.ndarray, cols: np.ndarray, cost: np.ndarray, b: int
) -> tuple[np.ndarray, np.ndarray, float] | None:
    """LP relaxation of Eq. 9 on the listed edges: ``(x, y, value)`` or None if infeasible."""
    res = linprog(
        cost, A_eq=_incidence(n, rows, cols), b_eq=np.full(n, float(b)), bounds=(0.0, 1.0), method="highs-ds"
    )
    if res.status == 2:
        return None
    if res.status != 0:
        raise RuntimeError(f"LP relaxation of the b-matching failed: {res.message}")
    return res.x, res.eqlin.marginals, res.fun


def _price(
    X: np.ndarray, sigma: float, y: np.ndarray, rows: np.ndarray, cols: np.ndarray, per_row: int
) -> tuple[np.ndarray, np.ndarray, float]:
    """Pricing over all pairs outside the candidate set, in row blocks.

    Returns the pairs ``i < j`` with reduced cost ``H_ij - y_i - y_j < 0`` (at most the
    ``per_row`` most negative per vertex: adding every violator at once can multiply the
    LP size for little gain) and the total violation ``-sum min(0, H_ij - y_i - y_j)``
    over all such pairs.  By weak LP duality, LP value minus violation is a lower bound
    on the LP (hence integer) optimum over the complete graph.
    """
    n = X.shape[0]
    both = (np.concatenate([rows, cols]), np.concatenate([cols, rows]))
    present = sp.csr_matrix((np.ones(2 * rows.size, dtype=bool), both), shape=(n, n))
    step = max(1, _BLOCK_ELEMENTS // n)
    new_rows, new_cols, violation = [], [], 0.0
    for start in range(0, n, step):
        block = np.arange(start, min(n, start + step))
        reduced = kernel_distance(squared_distances(X[block], X), sigma) - y[block, None] - y[None, :]
        reduced[present[block].toarray()] = np.inf
        reduced[np.arange(block.size), block] = np.inf
        violation -= np.minimum(reduced, 0.0).sum()
        reduced[reduced >= -_PRICE_TOL] = np.inf
        best = np.argpartition(reduced, min(per_row, n - 1), axis=1)[:, :per_row]
        r, c = np.nonzero(np.isfinite(np.take_along_axis(reduced, best, axis=1)))
        new_rows.append(block[r])
        new_cols.append(best[r, c])
    rows_new, cols_new = unique_pairs(n, np.concatenate(new_rows), np.concatenate(new_cols))
    return rows_new, cols_new, 0.5 * violation  # each pair was seen from both ends


def _round(
    n: int, rows: np.ndarray, cols: np.ndarray, x: np.ndarray, reduced: np.ndarray, b: int
) -> np.ndarray:
    """Integral LP edges plus a greedy choice among the (few) fractional ones."""
    chosen = x > 1.0 - _INT_TOL
    deg = _degrees(n, rows, cols, chosen)
    frac = np.flatnonzero((x > _INT_TOL) & ~chosen)
    # Sequential by nature; runs over the LP's fractional edges only (odd cycles, tens).
    for e in frac[np.lexsort((reduced[frac], -x[frac]))]:
        if deg[rows[e]] < b and deg[cols[e]] < b:
            chosen[e] = True
            deg[rows[e]] += 1
            deg[cols[e]] += 1
    return chosen


def _doubled_graph(
    n: int, rows: np.ndarray, cols: np.ndarray, reduced: np.ndarray, chosen: np.ndarray, allowed: np.ndarray
) -> sp.csr_matrix:
    """Directed alternating graph on 2n nodes over the ``allowed`` edges.

    Node ``v`` means "at v, the next edge is added", node ``n + v`` "at v, the next edge
    is removed"; a walk ``u -> n + v`` raises the degree of u and of v by one and leaves
    every other degree unchanged.  Arc lengths are the LP reduced costs of the flip
    (non-negative at the LP optimum; clipped at 0 once augmentations have moved away
    from it); a tiny constant keeps every arc present and prefers short trails.
    """
    e = np.flatnonzero(allowed)
    add = ~chosen[e]
    r, c = rows[e], cols[e]
    length = np.clip(np.where(add, reduced[e], -reduced[e]), 0.0, None) + 1e-12
    tails = np.concatenate([np.where(add, r, n + r), np.where(add, c, n + c)])
    heads = np.concatenate([np.where(add, n + c, c), np.where(add, n + r, r)])
    return sp.csr_matrix((np.concatenate([length, length]), (tails, heads)), shape=(2 * n, 2 * n))


def _walk_edges(pred: np.ndarray, source: int, target: int, n: int, keys: np.ndarray) -> np.ndarray:
    """Edge indices of the Dijkstra walk ``source -> target`` (predecessor row ``pred``)."""
    path = [target]
    while path[-1] != source:
        path.append(pred[path[-1]])
    verts = np.array(path[::-1]) % n
    a, c = verts[:-1], verts[1:]
    return np.searchsorted(keys, np.minimum(a, c).astype(np.int64) * n + np.maximum(a, c))


def _best_trail(
    n: int,
    rows: np.ndarray,
    cols: np.ndarray,
    reduced: np.ndarray,
    y: np.ndarray,
    chosen: np.ndarray,
    deficit: np.ndarray,
) -> np.ndarray | None:
    """Edges of a cheap valid alternating trail joining deficient vertices, or None.

    Pairs ``(u, v)`` are tried by Dijkstra length plus ``y_u + y_v`` (the true change of
    the objective in terms of the LP duals).  A shortest walk may reuse an edge (it runs
    around an odd cycle, the blossom case) and is then not a valid flip; the reused
    edges are banned and the search from u repeated, a bounded number of times.
    """
    keys = rows.astype(np.int64) * n + cols
    everything = np.ones(rows.shape[0], dtype=bool)
    ends = np.flatnonzero(deficit > 0)
    graph = _doubled_graph(n, rows, cols, reduced, chosen, everything)
    dist, pred = dijkstra(graph, indices=ends, return_predecessors=True)
    score = dist[:, n + ends] + y[ends][:, None] + y[ends][None, :]
    # A closed trail u -> u raises deg(u) by 2: allowed only where 2 units are missing.
    single = np.flatnonzero(deficit[ends] < 2)
    score[single, single] = np.inf
    for flat in np.argsort(score, axis=None)[:_MAX_PAIRS]:
        s, t = np.unravel_index(flat, score.shape)
        if not np.isfinite(score[s, t]):
            return None
        edges = _walk_edges(pred[s], ends[s], n + ends[t], n, keys)
        allowed = everything.copy()
        for _ in range(_MAX_BANS):
            unique, counts = np.unique(edges, return_counts=True)
            if counts.max() == 1:
                return edges
            allowed[unique[counts > 1]] = False
            graph = _doubled_graph(n, rows, cols, reduced, chosen, allowed)
            d, p = dijkstra(graph, indices=ends[s], return_predecessors=True)
            if not np.isfinite(d[n + ends[t]]):
                break
            edges = _walk_edges(p, ends[s], n + ends[t], n, keys)
    return None


def _repair(
    n: int, rows: np.ndarray, cols: np.ndarray, reduced: np.ndarray, y: np.ndarray, chosen: np.ndarray, b: int
) -> np.ndarray | None:
    """Augment along alternating trails until every degree is b; None if stuck."""
    chosen = chosen.copy()
    while (deficit := b - _degrees(n, rows, cols, chosen)).any():
        trail = _best_trail(n, rows, cols, reduced, y, chosen, deficit)
        if trail is None:
            return None
        chosen[trail] = ~chosen[trail]
    return chosen


def _info(objective: float, lower_bound: float, k: int, n_edges: int) -> dict[str, float]:
    """Diagnostics stored in ``Graph.info`` (objective and bound on the Eq. 9 scale)."""
    gap = max(0.0, objective / lower_bound - 1.0) if lower_bound > 0 else 0.0
    return {
        "objective": objective,
        "lower_bound": lower_bound,
        "gap": gap,
        "k_candidates": float(k),
        "n_candidate_edges": float(n_edges),
    }


def _solve_on_candidates(X: np.ndarray, sigma: float, b: int, k: int) -> Solution | None:
    """Steps 1-4 of the module docstring; ``(rows, cols, info)`` or None if it must grow."""
    n = X.shape[0]
    rows, cols = knn_pairs(X, k)
    while True:  # column generation: a few rounds in practice
        cost = kernel_distance(pair_sqdist(X, rows, cols), sigma)
        lp = _solve_lp(n, rows, cols, cost, b)
        if lp is None:
            return None
        x, y, value = lp
        new_rows, new_cols, violation = _price(X, sigma, y, rows, cols, _PRICE_PER_ROW * b)
        # Stop once the remaining violation cannot move the bound by more than _BOUND_RTOL.
        if new_rows.size == 0 or violation <= _BOUND_RTOL * abs(value):
            break
        rows, cols = unique_pairs(n, np.concatenate([rows, new_rows]), np.concatenate([cols, new_cols]))
    reduced = cost - y[rows] - y[cols]
    chosen = _repair(n, rows, cols, reduced, y, _round(n, rows, cols, x, reduced, b), b)
    if chosen is None:
        return None
    info = _info(2.0 * float(cost[chosen].sum()), 2.0 * (value - violation), k, rows.size)
    return rows[chosen], cols[chosen], info


def _solve_exact_complete(X: np.ndarray, sigma: float, b: int) -> Solution:
    """Last resort (repair stuck on the complete graph): exact MILP, always feasible."""
    n = X.shape[0]
    rows, cols = np.triu_indices(n, 1)
    cost = kernel_distance(pair_sqdist(X, rows, cols), sigma)
    chosen = _milp(n, rows, cols, cost, b)
    if chosen is None:
        raise RuntimeError(f"exact b-matching reported infeasible for feasible b={b}, n={n}")
    objective = 2.0 * float(cost[chosen].sum())
    return rows[chosen], cols[chosen], _info(objective, objective, n - 1, rows.size)


def _check_k_candidates(k: int, b: int, n: int) -> int:
    if isinstance(k, bool) or not isinstance(k, numbers.Integral) or not b <= k <= n - 1:
        raise ValueError(f"k_candidates must be an integer in [b, n - 1] = [{b}, {n - 1}], got {k!r}")
    return int(k)


def _verify(graph: Graph, b: int) -> None:
    B = graph.B
    if (B - B.T).count_nonzero() or B.diagonal().any() or np.any(graph.degrees() != b):
        raise RuntimeError(f"b-matching result is not a symmetric graph with every degree equal to b={b}")


def bmatching_graph(X: np.ndarray, sigma: float, b: int, *, k_candidates: int | None = None) -> Graph:
    """b-matching graph of Eq. 9: symmetric, zero diagonal, every degree exactly ``b``.

    Parameters
    ----------
    X : (n, d) float array.
    sigma : Gaussian bandwidth of Eq. 5.
    b : degree; ``1 <= b <= n - 1`` and ``n * b`` even, else ``ValueError``.
    k_candidates : initial kNN candidate degree (default ``min(n - 1, 2 b)``); doubled
        automatically when too small.

    Returns
    -------
    Graph
        ``info`` holds ``objective`` (``sum_ij B_ij H_ij``), ``lower_bound`` (certified, LP
        over all pairs) and ``gap``.  See the module docstring for the algorithm and its
        guarantees.
    """
    X = check_X(X)
    sigma = check_sigma(sigma)
    n = X.shape[0]
    b = check_b(b, n)
    k = min(n - 1, 2 * b) if k_candidates is None else _check_k_candidates(k_candidates, b, n)
    while (result := _solve_on_candidates(X, sigma, b, k)) is None and k < n - 1:
        k = min(n - 1, 2 * k)
    if result is None:
        result = _solve_exact_complete(X, sigma, b)
    graph = graph_from_pairs(X, sigma, *result)
    _verify(graph, b)
    return graph


def exact_bmatching(H: np.ndarray, b: int) -> np.ndarray:
    """Exact solution of Eq. 9 on the complete graph: dense 0/1 ``B`` (float64, n x n).

    MILP (HiGHS, zero relative gap) over all ``n(n-1)/2`` pairs with degree equalities;
    meant as a test reference for small n (n <= 40 or so).  ``H`` must be a symmetric
    square matrix of edge costs; its diagonal is ignored.
    """
    H = np.asarray(H, dtype=np.float64)
    if H.ndim != 2 or H.shape[0] != H.shape[1] or not np.allclose(H, H.T):
        raise ValueError(f"H must be a symmetric square matrix, got shape {H.shape}")
    n = H.shape[0]
    b = check_b(b, n)
    rows, cols = np.triu_indices(n, 1)
    chosen = _milp(n, rows, cols, H[rows, cols], b)
    if chosen is None:
        raise RuntimeError(f"exact b-matching reported infeasible for feasible b={b}, n={n}")
    B = np.zeros((n, n))
    B[rows[chosen], cols[chosen]] = 1.0
    return B + B.T
