"""Graph construction of paper 000 (Eq. 5-10): kernels, kNN / epsilon graphs, weights, Laplacian.

Each result is checked against an independent computation: scipy's cdist, scikit-learn's
rbf_kernel, and dense brute-force sparsifiers.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.spatial.distance import cdist, pdist
from sklearn.metrics.pairwise import rbf_kernel

from mlgraph.graphs import (
    Graph,
    build_graph,
    epsilon_graph,
    gaussian_kernel,
    kernel_distance,
    knn_graph,
    laplacian,
    median_sigma,
    squared_distances,
)
from mlgraph.graphs.sparsify import (
    knn_neighbours,
    knn_pairs,
    knn_pairs_from,
    nearest_columns,
    row_smallest,
    unique_pairs,
)


@pytest.fixture
def X() -> np.ndarray:
    return np.random.default_rng(0).standard_normal((60, 5))


def dense_H(X: np.ndarray, sigma: float) -> np.ndarray:
    """Eq. 6 by its printed formula, from scikit-learn's kernel (independent path)."""
    U = rbf_kernel(X, gamma=1.0 / (2.0 * sigma**2))
    d = np.diag(U)
    return np.sqrt(np.clip(d[:, None] + d[None, :] - 2.0 * U, 0.0, None))


def brute_knn(H: np.ndarray, k: int) -> np.ndarray:
    """Eq. 8 row by row (self excluded), then B = max(B, B^T)."""
    H = H.copy()
    np.fill_diagonal(H, np.inf)
    B = np.zeros_like(H)
    np.put_along_axis(B, np.argsort(H, axis=1, kind="stable")[:, :k], 1.0, axis=1)
    return np.maximum(B, B.T)


def assert_well_formed(g: Graph) -> None:
    """Symmetric, empty diagonal, and B/H/U share one sorted sparsity structure."""
    for M in (g.B, g.H, g.U):
        assert isinstance(M, sp.csr_matrix) and M.dtype == np.float64
        assert np.array_equal(M.indptr, g.B.indptr) and np.array_equal(M.indices, g.B.indices)
        assert (M != M.T).nnz == 0
    assert np.all(g.B.data == 1.0)
    assert not g.B.diagonal().any()


# --- kernels (Eq. 5-6) ------------------------------------------------------------------


def test_squared_distances_match_cdist(X: np.ndarray) -> None:
    Z = np.random.default_rng(1).standard_normal((7, 5))
    np.testing.assert_allclose(squared_distances(X, Z), cdist(X, Z, "sqeuclidean"), rtol=1e-10, atol=1e-10)
    D = squared_distances(X)
    np.testing.assert_allclose(D, cdist(X, X, "sqeuclidean"), rtol=1e-10, atol=1e-10)
    assert np.array_equal(D, D.T) and np.all(np.diag(D) == 0.0) and np.all(D >= 0.0)


def test_squared_distances_rejects_mismatched_columns(X: np.ndarray) -> None:
    with pytest.raises(ValueError, match="columns"):
        squared_distances(X, X[:, :3])


def test_median_sigma_is_median_of_distinct_pairs(X: np.ndarray) -> None:
    assert median_sigma(X) == pytest.approx(np.median(pdist(X)), rel=1e-12)
    big = np.random.default_rng(2).standard_normal((300, 3))
    rows = np.sort(np.random.default_rng(5).choice(300, size=50, replace=False))
    sigma = median_sigma(big, max_samples=50, random_state=5)
    assert sigma == pytest.approx(np.median(pdist(big[rows])))
    assert sigma == median_sigma(big, max_samples=50, random_state=5)


def test_median_sigma_zero_raises() -> None:
    with pytest.raises(ValueError, match="sigma"):
        median_sigma(np.ones((5, 2)))


def test_gaussian_kernel_matches_rbf_kernel(X: np.ndarray) -> None:
    sigma = 1.7
    Z = X[:9] + 0.1
    expected = rbf_kernel(X, Z, gamma=1 / (2 * sigma**2))
    np.testing.assert_allclose(gaussian_kernel(X, Z, sigma), expected, rtol=1e-12)
    U = gaussian_kernel(X, sigma=sigma)
    np.testing.assert_allclose(U, rbf_kernel(X, gamma=1 / (2 * sigma**2)), rtol=1e-12)
    assert np.all(np.diag(U) == 1.0)


@pytest.mark.parametrize("sigma", [0.0, -1.0, np.nan, np.inf, None, "1"])
def test_gaussian_kernel_bad_sigma(X: np.ndarray, sigma: object) -> None:
    with pytest.raises(ValueError, match="sigma"):
        gaussian_kernel(X, sigma=sigma)


def test_kernel_distance_closed_forms(X: np.ndarray) -> None:
    sigma = 2.0
    H = kernel_distance(squared_distances(X), sigma)
    U = gaussian_kernel(X, sigma=sigma)
    np.testing.assert_allclose(H, np.sqrt(np.clip(2.0 - 2.0 * U, 0.0, None)), atol=1e-7)
    np.testing.assert_allclose(H, dense_H(X, sigma), atol=1e-7)
    assert np.all(np.diag(H) == 0.0) and H.max() < np.sqrt(2.0)
    # Elementwise on the .data of a sparse matrix of squared distances.
    S = sp.csr_matrix(np.triu(squared_distances(X)))
    np.testing.assert_allclose(kernel_distance(S.data, sigma), H[S.nonzero()], rtol=1e-12)
    with pytest.raises(ValueError, match="sigma"):
        kernel_distance(S.data, 0.0)


# --- kNN graph (Eq. 8) ------------------------------------------------------------------


@pytest.mark.parametrize("k", [1, 3, 7])
def test_knn_graph_matches_brute_force(X: np.ndarray, k: int) -> None:
    sigma = median_sigma(X)
    g = knn_graph(X, sigma, k)
    H = dense_H(X, sigma)
    B = brute_knn(H, k)
    assert_well_formed(g)
    assert np.array_equal(g.B.toarray(), B)
    np.testing.assert_allclose(g.H.toarray(), H * B, atol=1e-7)
    np.testing.assert_allclose(g.U.toarray(), gaussian_kernel(X, sigma=sigma) * B, rtol=1e-12)
    assert np.all(g.degrees() >= k)
    assert np.all(g.degrees() == B.sum(1))


@pytest.mark.parametrize("k", [1, 4])
def test_knn_graph_from_precomputed_sqdist_is_the_same_graph(X: np.ndarray, k: int) -> None:
    sigma = median_sigma(X)
    a, b = knn_graph(X, sigma, k), knn_graph(X, sigma, k, sqdist=squared_distances(X))
    assert_well_formed(b)
    assert (a.B != b.B).nnz == 0 and np.array_equal(a.H.data, b.H.data)


def test_knn_ties_go_to_the_lower_index_on_both_paths() -> None:
    """Binary features tie a lot: both paths must pick the same, lowest-index neighbours."""
    Xb = (np.random.default_rng(1).random((120, 6)) < 0.4).astype(float)
    for Xs in (Xb, (Xb - Xb.mean(0)) / Xb.std(0)):  # standardised: Gram-formula ties are inexact
        # The difference form sums the same terms for tied pairs: exact ties, and a stable
        # argsort breaks them by index.
        B = brute_knn(cdist(Xs, Xs, "sqeuclidean"), 3)
        sigma = median_sigma(Xs)
        a, b = knn_graph(Xs, sigma, 3), knn_graph(Xs, sigma, 3, sqdist=squared_distances(Xs))
        assert np.array_equal(a.B.toarray(), B) and np.array_equal(b.B.toarray(), B)


def _distance_block(kind: str, shape: tuple[int, int]) -> np.ndarray:
    D = np.random.default_rng(5).random(shape)
    if kind == "ties":  # many exact ties at the k-th smallest
        D = np.round(D * 30) / 30
    elif kind == "sorted":  # increasing rows: the strided sample sees the large end too
        D = np.sort(D, axis=1)
    D[:, 7] = D[:, 3] * (1 + 1e-12)  # tied within the relative tolerance, not exactly
    return D


@pytest.mark.parametrize("kind", ["continuous", "ties", "sorted"])
@pytest.mark.parametrize("shape", [(300, 1000), (25, 40)])  # sampled bound / whole rows
def test_nearest_columns_follow_the_row_by_row_rule(kind: str, shape: tuple[int, int]) -> None:
    """The k smallest of each row, ties within 1e-9 relative to the lower column, the row's own
    point (column offset + i) excluded; D itself is left unchanged."""
    D, k, offset = _distance_block(kind, shape), 10, 12
    before = D.copy()
    rows, cols = nearest_columns(D, k, offset)
    expected = []
    for i, row in enumerate(before.copy()):
        row[offset + i] = np.inf
        kth = np.sort(row)[k - 1]
        tol = 1e-9 * kth + 1e-300
        less = np.flatnonzero(row < kth - tol)
        tied = np.flatnonzero((row >= kth - tol) & (row <= kth + tol))
        expected.append(np.sort(np.concatenate([less, tied[: k - len(less)]])))
    assert np.array_equal(D, before)
    assert np.array_equal(rows, np.repeat(np.arange(D.shape[0]), k))
    assert np.array_equal(cols, np.concatenate(expected))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("kind", ["continuous", "ties", "sorted"])
def test_row_smallest_gives_the_values_of_a_partition(kind: str, dtype) -> None:
    D = _distance_block(kind, (200, 1500)).astype(dtype) - 0.5  # negative keys too (MLkNN)
    D[np.arange(200), np.arange(200)] = np.inf
    ours, theirs = row_smallest(D, 11), np.partition(D, 10, axis=1)[:, :11]
    assert ours.dtype == dtype
    assert np.array_equal(ours[:, 10], theirs[:, 10])
    assert np.array_equal(np.sort(ours, axis=1), np.sort(theirs, axis=1))


def test_median_sigma_from_precomputed_sqdist() -> None:
    X = np.random.default_rng(3).standard_normal((1300, 4))  # above max_samples: a subsample
    assert median_sigma(X, sqdist=squared_distances(X)) == pytest.approx(median_sigma(X), rel=1e-12)


@pytest.mark.parametrize("k", [0, 60, 100, 2.5, True])
def test_knn_graph_bad_k(X: np.ndarray, k: object) -> None:
    with pytest.raises(ValueError, match=r"k.*n=60"):
        knn_graph(X, 1.0, k)


# --- epsilon graph (Eq. 7, read as H <= eps) ------------------------------------------------


@pytest.mark.parametrize("eps", [0.3, 0.6, 1.0])
def test_epsilon_graph_matches_brute_force(X: np.ndarray, eps: float) -> None:
    sigma = median_sigma(X)
    g = epsilon_graph(X, sigma, eps)
    H = dense_H(X, sigma)
    B = (H <= eps).astype(float)
    np.fill_diagonal(B, 0.0)
    assert 0 < B.sum() < B.size - len(B)  # a genuinely partial graph
    assert_well_formed(g)
    assert np.array_equal(g.B.toarray(), B)
    assert g.H.max() <= eps
    np.testing.assert_allclose(g.H.toarray(), H * B, atol=1e-7)


def test_epsilon_graph_large_eps_is_complete(X: np.ndarray) -> None:
    g = epsilon_graph(X, 1.0, np.sqrt(2.0))
    assert g.B.nnz == len(X) * (len(X) - 1)


@pytest.mark.parametrize("eps", [0.0, -0.1, np.nan, np.inf])
def test_epsilon_graph_bad_eps(X: np.ndarray, eps: float) -> None:
    with pytest.raises(ValueError, match="eps"):
        epsilon_graph(X, 1.0, eps)


# --- duplicate points: H = 0 must remain an edge ---------------------------------------------


def test_duplicate_points_keep_their_edge() -> None:
    X = np.random.default_rng(3).standard_normal((12, 3))
    X[5] = X[2]
    sigma = median_sigma(X)
    for g in (knn_graph(X, sigma, 1), epsilon_graph(X, sigma, 1e-3)):
        assert g.B[2, 5] == 1.0 and g.B[5, 2] == 1.0
        assert g.H[2, 5] == 0.0 and g.U[2, 5] == 1.0
        assert g.H.nnz == g.B.nnz  # the zero is stored explicitly
    W = build_graph(X, kind="knn", k=1, weights="distance")
    assert W.nnz == knn_graph(X, sigma, 1).B.nnz
    assert build_graph(X, kind="knn", k=1, weights="heat")[2, 5] == 1.0


# --- weights (Eq. 10) and build_graph -----------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "params"), [("knn", {"k": 5}), ("epsilon", {"eps": 0.8}), ("bmatching", {"b": 4})]
)
def test_build_graph_heat_vs_distance(X: np.ndarray, kind: str, params: dict) -> None:
    Wd = build_graph(X, kind=kind, weights="distance", **params)
    Wh = build_graph(X, kind=kind, weights="heat", **params)
    for W in (Wd, Wh):
        assert isinstance(W, sp.csr_matrix) and W.shape == (60, 60)
        assert (W != W.T).nnz == 0 and not W.diagonal().any()
    assert np.array_equal(Wd.indices, Wh.indices) and np.array_equal(Wd.indptr, Wh.indptr)
    # Eq. 10 as printed uses H = sqrt(2 - 2U) as the weight; heat uses U itself.
    np.testing.assert_allclose(Wd.data, np.sqrt(2.0 - 2.0 * Wh.data), atol=1e-7)
    H = dense_H(X, median_sigma(X))
    np.testing.assert_allclose(Wd.toarray(), H * (Wh.toarray() > 0), atol=1e-7)


def test_build_graph_default_sigma_and_explicit_sigma(X: np.ndarray) -> None:
    sigma = median_sigma(X, random_state=0)
    W = build_graph(X, k=4, weights="heat")
    assert (W != build_graph(X, k=4, weights="heat", sigma=sigma)).nnz == 0
    assert (W != knn_graph(X, sigma, 4).U).nnz == 0
    Wb = build_graph(X, kind="bmatching", b=6)
    assert np.all(np.diff(Wb.indptr) == 6)


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"kind": "full"}, "kind"),
        ({"weights": "gaussian"}, "weights"),
        ({"sigma": -1.0}, "sigma"),
        ({"k": 0}, "k"),
        ({"k": 60}, "k"),
        ({"kind": "epsilon"}, "eps"),
        ({"kind": "epsilon", "eps": -1.0}, "eps"),
        ({"kind": "bmatching"}, "b"),
        ({"kind": "bmatching", "b": 60}, "b"),
    ],
)
def test_build_graph_parameter_errors(X: np.ndarray, kwargs: dict, name: str) -> None:
    with pytest.raises(ValueError, match=name):
        build_graph(X, **kwargs)


def test_build_graph_rejects_bad_X() -> None:
    with pytest.raises(ValueError, match="X"):
        build_graph(np.ones(5))
    with pytest.raises(ValueError, match="X"):
        build_graph(np.array([[0.0, np.nan], [1.0, 2.0], [3.0, 4.0]]))


# --- Laplacian ------------------------------------------------------------------------------


@pytest.mark.parametrize("weights", ["distance", "heat"])
def test_laplacian_row_sums_psd(X: np.ndarray, weights: str) -> None:
    W = build_graph(X, k=5, weights=weights)
    L = laplacian(W)
    assert isinstance(L, sp.csr_matrix)
    Ld = L.toarray()
    np.testing.assert_allclose(Ld, np.diag(W.toarray().sum(1)) - W.toarray(), atol=1e-14)
    np.testing.assert_allclose(Ld.sum(1), 0.0, atol=1e-12)
    assert np.linalg.eigvalsh(Ld).min() >= -1e-10


def test_laplacian_input_errors() -> None:
    with pytest.raises(ValueError, match="square"):
        laplacian(sp.csr_matrix(np.ones((2, 3))))
    with pytest.raises(ValueError, match="symmetric"):
        laplacian(np.array([[0.0, 1.0], [0.0, 0.0]]))


@pytest.mark.parametrize("d", [3, 70, 150])
def test_median_sigma_is_bitwise_the_median_of_the_sampled_distances(d):
    """Both paths of median_sigma (pdist's distances, or a given sqdist's) take the median
    without computing or square-rooting every pair, and give the plain formula's number."""
    from scipy.spatial.distance import pdist

    rng = np.random.default_rng(d)
    for n in (2, 3, 41, 1200):
        X = rng.normal(size=(n, d)) * rng.uniform(0.1, 10, d)
        X[rng.integers(0, n, n // 4)] = X[0]  # duplicates: zero distances and ties
        rows = np.arange(n) if n <= 1000 else np.sort(np.random.default_rng(0).choice(n, 1000, replace=False))
        D = squared_distances(X)
        if np.median(pdist(X[rows])) == 0:
            continue
        assert median_sigma(X) == float(np.median(pdist(X[rows])))
        sub = D[np.ix_(rows, rows)][np.triu_indices(len(rows), 1)]
        assert median_sigma(X, sqdist=D) == float(np.median(np.sqrt(sub)))


def test_middle_values_are_the_partitions_middle_order_statistics():
    """The bracketed selection gives np.partition's two middle values exactly: random data,
    heavy ties, sorted and reversed order, a strided sample unlike the whole (the bracket
    misses and the whole array is partitioned), and sizes too small to sample."""
    from mlgraph.graphs.kernels import middle_values

    rng = np.random.default_rng(3)
    n = 500_000
    skewed = rng.normal(size=n)
    skewed[:: n // 4096] = 1e9  # every sampled value is the largest: the bracket misses
    cases = {
        "normal": rng.normal(size=n),
        "odd": rng.exponential(size=n + 1),
        "ties": rng.integers(0, 5, n).astype(float),
        "sorted": np.sort(rng.uniform(size=n)),
        "reversed": np.sort(rng.uniform(size=n))[::-1].copy(),
        "skewed sample": skewed,
        "small": rng.normal(size=7),
        "one": np.array([2.5]),
    }
    for name, values in cases.items():
        places = [(len(values) - 1) // 2, len(values) // 2]
        expected = np.partition(values, places)[places]
        np.testing.assert_array_equal(middle_values(values), expected, err_msg=name)


@pytest.mark.parametrize("n, size", [(1, 0), (5, 40), (300, 3000)])
def test_unique_pairs_are_the_sorted_undirected_pairs_once_without_self_pairs(n, size):
    rng = np.random.default_rng(n)
    rows, cols = rng.integers(0, n, size), rng.integers(0, n, size)  # both directions, repeats, i = j
    expected = sorted(
        {(min(i, j), max(i, j)) for i, j in zip(rows.tolist(), cols.tolist(), strict=True) if i != j}
    )
    lo, hi = unique_pairs(n, rows, cols)
    assert list(zip(lo.tolist(), hi.tolist(), strict=True)) == expected


def _tied_rows(seed: int) -> np.ndarray:
    """Rows with duplicates and many equidistant points (a coarse integer grid), plus
    continuous rows: ties at the k-th neighbour and rows without any."""
    rng = np.random.default_rng(seed)
    grid = rng.integers(0, 3, size=(60, 4)).astype(float)
    return np.vstack([grid, grid[:10], rng.normal(size=(80, 4))])


@pytest.mark.parametrize("k", [1, 3, 7])
def test_knn_pairs_from_the_neighbours_of_another_order_are_knn_pairs(k: int) -> None:
    """Neighbours found once for the rows in one order serve the same rows in any order, mapped:
    the pairs are knn_pairs' in that order, ties at the k-th neighbour (chosen again) included."""
    X = _tied_rows(k)
    neighbours, unsure = knn_neighbours(X, k)
    D = cdist(X, X, "sqeuclidean")
    np.fill_diagonal(D, np.inf)
    d = np.sort(D, axis=1)
    tied = np.isclose(d[:, k], d[:, k - 1], rtol=1e-6, atol=1e-9)
    assert tied.any() and not tied.all()
    assert np.array_equal(unsure, tied)  # ties at the k-th neighbour, and only those
    # standardised in one order and then in another: rounding-level differences
    n0, u0 = knn_neighbours((X - X.mean(0)) / X.std(0), k)
    for seed in range(4):
        order = np.random.default_rng(seed).permutation(len(X))  # row i of Xp is row order[i] of X
        position = np.argsort(order)
        Xp = X[order]
        mapped = position[neighbours[order]]
        Xs = (Xp - Xp.mean(0)) / Xp.std(0)
        for found, flags, data in ((mapped, unsure[order], Xp), (position[n0[order]], u0[order], Xs)):
            lo, hi = knn_pairs_from(data, k, found, flags)
            expected = knn_pairs(data, k)
            assert np.array_equal(lo, expected[0]) and np.array_equal(hi, expected[1])


def test_knn_neighbours_flag_a_tie_at_the_kth_neighbour_only() -> None:
    """Point 0 has two points at distance 1 and one at 2: with k = 1 it is unsure (a tie at the
    first neighbour), with k = 2 it is not (both tied points are chosen, the next is far)."""
    X = np.array([[0.0, 0.0], [1.0, 0.0], [-1.0, 0.0], [0.0, 2.0], [5.0, 5.0]])
    assert knn_neighbours(X, 1)[1][0]
    neighbours, unsure = knn_neighbours(X, 2)
    assert not unsure[0] and sorted(neighbours[0]) == [1, 2]
    assert not knn_neighbours(X, 4)[1].any()  # every other point: nothing to choose
