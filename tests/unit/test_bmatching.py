"""b-matching graph of paper 000, Eq. 9.

The production solver is an LP-based heuristic with a certified bound (see
``mlgraph.graphs.bmatching``).  What it guarantees, and what is asserted on every case:
every degree exactly b, symmetric, zero diagonal, and
``lower_bound <= exact optimum <= objective`` with ``objective = sum_ij B_ij H_ij``.
Beyond that, on a fixed set of seeded instances it is asserted to hit the exact optimum
in the large majority of cases and to stay within 1% of it in all (an empirical
regression check, not a theorem).  The exact MILP reference is itself checked against
exhaustive enumeration.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import scipy.sparse as sp

import mlgraph.graphs.bmatching as bmatching_module
from mlgraph.graphs import bmatching_graph, exact_bmatching, kernel_distance, median_sigma, squared_distances
from mlgraph.graphs.sparsify import Graph


def dense_H(X: np.ndarray, sigma: float) -> np.ndarray:
    return kernel_distance(squared_distances(X), sigma)


def assert_b_regular(g: Graph, b: int) -> None:
    B = g.B.toarray()
    assert np.array_equal(B, B.T)
    assert not np.diag(B).any()
    assert set(np.unique(B)) <= {0.0, 1.0}
    assert np.all(B.sum(axis=1) == b)
    assert np.array_equal(g.H.indices, g.B.indices) and np.array_equal(g.H.indptr, g.B.indptr)


def random_case(seed: int) -> tuple[np.ndarray, int]:
    rng = np.random.default_rng(seed)
    n, b, d = int(rng.integers(10, 31)), int(rng.integers(2, 5)), int(rng.integers(2, 6))
    n += (n * b) % 2
    return rng.standard_normal((n, d)), b


def brute_force_optimum(H: np.ndarray, b: int) -> float:
    """Minimum of Eq. 9 by enumerating every edge subset (tiny n only)."""
    n = len(H)
    pairs = np.array(list(itertools.combinations(range(n), 2)))
    subsets = (np.arange(2 ** len(pairs))[:, None] >> np.arange(len(pairs))) & 1
    incidence = np.zeros((len(pairs), n))
    incidence[np.arange(len(pairs)), pairs[:, 0]] = 1
    incidence[np.arange(len(pairs)), pairs[:, 1]] = 1
    feasible = np.all(subsets @ incidence == b, axis=1)
    return 2.0 * (subsets[feasible] @ H[pairs[:, 0], pairs[:, 1]]).min()


@pytest.mark.parametrize(("n", "b"), [(5, 2), (6, 1), (6, 2), (6, 3)])
def test_exact_bmatching_matches_enumeration(n: int, b: int) -> None:
    X = np.random.default_rng(n * 10 + b).standard_normal((n, 2))
    H = dense_H(X, 1.0)
    B = exact_bmatching(H, b)
    assert np.array_equal(B, B.T) and not np.diag(B).any() and np.all(B.sum(1) == b)
    assert (B * H).sum() == pytest.approx(brute_force_optimum(H, b), abs=1e-9)


def test_bmatching_matches_exact_on_small_cases() -> None:
    excess = []
    for seed in range(40):
        X, b = random_case(seed)
        sigma = median_sigma(X)
        g = bmatching_graph(X, sigma, b)
        assert_b_regular(g, b)
        optimum = (exact_bmatching(dense_H(X, sigma), b) * dense_H(X, sigma)).sum()
        objective = g.H.sum()
        assert objective == pytest.approx(g.info["objective"], abs=1e-9)
        # The certificate: the LP bound is below the optimum, the result above it.
        assert g.info["lower_bound"] <= optimum + 1e-9
        assert objective >= optimum - 1e-9
        excess.append(objective / optimum - 1.0)
    excess = np.array(excess)
    assert np.mean(excess < 1e-9) >= 0.9
    assert excess.max() <= 1e-2


def test_bmatching_separated_odd_clusters() -> None:
    # Odd-sized, far-apart clusters with odd b: no b-regular graph lives inside a cluster,
    # so the solver must grow the candidate set and use edges between clusters.
    rng = np.random.default_rng(7)
    sizes = (11, 13, 16)
    X = np.vstack([rng.standard_normal((m, 2)) * 0.1 + 10.0 * i for i, m in enumerate(sizes)])
    sigma = 3.0
    g = bmatching_graph(X, sigma, 3)
    assert_b_regular(g, 3)
    assert g.info["k_candidates"] > 6  # the initial 2b candidates were infeasible
    H = dense_H(X, sigma)
    optimum = (exact_bmatching(H, 3) * H).sum()
    assert g.info["lower_bound"] <= optimum + 1e-9 <= g.H.sum() + 2e-9
    assert g.H.sum() <= optimum * (1 + 1e-2)


def test_bmatching_medium_size_against_independent_lp_bound() -> None:
    """The LP relaxation over ALL pairs (solved here, independently of the solver's own
    candidate pricing) bounds the optimum from below; the result must be within 0.1 %."""
    from scipy.optimize import linprog

    n, b = 200, 5
    X = np.random.default_rng(11).standard_normal((n, 20))
    sigma = median_sigma(X)
    g = bmatching_graph(X, sigma, b)
    assert_b_regular(g, b)
    i, j = np.triu_indices(n, 1)
    H = dense_H(X, sigma)[i, j]
    edges = np.arange(len(i))
    incidence = sp.csr_matrix((np.ones(2 * len(i)), (np.r_[i, j], np.r_[edges, edges])), shape=(n, len(i)))
    lp = linprog(H, A_eq=incidence, b_eq=np.full(n, b), bounds=(0, 1), method="highs")
    assert lp.status == 0
    objective = g.H.sum() / 2  # each undirected edge once, as in the LP
    assert lp.fun - 1e-9 <= objective <= lp.fun * (1 + 1e-3)
    assert g.info["gap"] <= 1e-3


def test_bmatching_duplicate_points() -> None:
    X = np.random.default_rng(4).standard_normal((20, 3))
    X[1] = X[0]
    X[2] = X[0]
    g = bmatching_graph(X, 1.0, 3)
    assert_b_regular(g, 3)
    assert g.B.nnz == 20 * 3
    assert g.B[0, 1] == 1.0 and g.H[0, 1] == 0.0  # a zero-distance edge stays in B


@pytest.mark.parametrize(("n", "b"), [(2, 1), (5, 4), (8, 7), (9, 2)])
def test_bmatching_extremes(n: int, b: int) -> None:
    X = np.random.default_rng(n).standard_normal((n, 2))
    assert_b_regular(bmatching_graph(X, 1.0, b), b)


def test_bmatching_fallback_to_exact_milp(monkeypatch: pytest.MonkeyPatch) -> None:
    # If the trail repair never succeeds, the solver ends with the exact MILP.
    monkeypatch.setattr(bmatching_module, "_best_trail", lambda *args: None)
    X, b = random_case(52)
    sigma = median_sigma(X)
    g = bmatching_graph(X, sigma, b)
    assert_b_regular(g, b)
    H = dense_H(X, sigma)
    assert g.H.sum() == pytest.approx((exact_bmatching(H, b) * H).sum(), abs=1e-9)
    assert g.info["gap"] == 0.0
    assert g.info["n_candidate_edges"] == len(X) * (len(X) - 1) / 2  # the complete graph was used


@pytest.mark.parametrize(("n", "b"), [(9, 3), (9, 9), (9, 12), (10, 0), (10, -2)])
def test_infeasible_b_raises(n: int, b: int) -> None:
    X = np.random.default_rng(0).standard_normal((n, 2))
    with pytest.raises(ValueError, match=rf"b={b}, n={n}"):
        bmatching_graph(X, 1.0, b)
    with pytest.raises(ValueError, match=rf"b={b}, n={n}"):
        exact_bmatching(dense_H(X, 1.0), b)


@pytest.mark.parametrize("b", [2.0, "2", True])
def test_non_integer_b_raises(b: object) -> None:
    with pytest.raises(ValueError, match="b"):
        bmatching_graph(np.zeros((6, 2)) + np.arange(6)[:, None], 1.0, b)


@pytest.mark.parametrize("k_candidates", [1, 10, 2.5])
def test_bad_k_candidates(k_candidates: object) -> None:
    X = np.random.default_rng(0).standard_normal((10, 2))
    with pytest.raises(ValueError, match="k_candidates"):
        bmatching_graph(X, 1.0, 2, k_candidates=k_candidates)


def test_exact_bmatching_rejects_asymmetric_H() -> None:
    with pytest.raises(ValueError, match="symmetric"):
        exact_bmatching(np.arange(16.0).reshape(4, 4), 1)
