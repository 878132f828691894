"""ML-GFHF / ML-LGC (label-wise harmonic functions and local-global consistency) against dense
closed forms, the harmonic property, the component fallback, the transductive scoring rule and
the shared graph cache."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone

from mlgraph.graphs import build_graph, median_sigma
from mlgraph.methods import propagation
from mlgraph.methods.propagation import MLGFHF, MLLGC, harmonic_scores, lgc_scores, reached_nodes, solve_spd


def _problem(n=60, d=5, q=3, n_labelled=20, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    Y = (X[:, :q] + 0.3 * rng.normal(size=(n, q)) > 0).astype(np.int8)
    Y_semi = Y.copy()
    Y_semi[n_labelled:] = -1
    return X, Y_semi


def _connected_graph(n, seed, density=0.15):
    """Random symmetric positive weights, zero diagonal, a ring keeps it connected."""
    rng = np.random.default_rng(seed)
    A = np.where(rng.random((n, n)) < density, rng.uniform(0.1, 2.0, (n, n)), 0.0)
    ring = np.roll(np.eye(n), 1, axis=1) * rng.uniform(0.1, 2.0, n)[:, None]
    A = np.triu(A + ring, 1)
    return A + A.T


def _dense_harmonic(W, Y, lab):
    D = np.diag(W.sum(axis=1))
    u = ~lab
    f = Y.astype(float).copy()
    f[u] = np.linalg.solve((D - W)[np.ix_(u, u)], W[np.ix_(u, lab)] @ Y[lab])
    return f


def _dense_lgc(W, Y, lab, alpha):
    d = W.sum(axis=1)
    S = W / np.sqrt(np.outer(d, d))
    T = np.where(lab[:, None], 2.0 * Y - 1.0, 0.0)
    return np.linalg.solve(np.eye(len(W)) - alpha * S, T)


def _labels(n, q, n_labelled, seed):
    rng = np.random.default_rng(seed)
    Y = rng.integers(0, 2, (n, q)).astype(np.int8)
    lab = np.zeros(n, bool)
    lab[rng.choice(n, n_labelled, replace=False)] = True
    Y[~lab] = -1
    return Y, lab


def _own_graph(est, X):
    """W built independently: standardise on all rows, median σ, build_graph."""
    Xs = (X - X.mean(axis=0)) / X.std(axis=0)
    sigma = median_sigma(Xs, random_state=est.random_state) * est.sigma_scale
    return build_graph(Xs, kind=est.graph, sigma=sigma, weights=est.weights, k=est.k).toarray()


def test_harmonic_scores_match_dense_closed_form():
    W = _connected_graph(40, seed=1)
    Y, lab = _labels(40, 4, 12, seed=2)
    f = harmonic_scores(sp.csr_matrix(W), Y, lab)
    np.testing.assert_allclose(f, _dense_harmonic(W, Y, lab), rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(f[lab], Y[lab])  # clamped
    assert f.min() >= 0 and f.max() <= 1


def test_lgc_scores_match_dense_inverse():
    W = _connected_graph(40, seed=3)
    Y, lab = _labels(40, 4, 12, seed=4)
    F = lgc_scores(sp.csr_matrix(W), Y, lab, alpha=0.9)
    np.testing.assert_allclose(F, _dense_lgc(W, Y, lab, 0.9), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("cls", [MLGFHF, MLLGC])
def test_estimator_solves_closed_form_on_standardised_graph(cls):
    X, Y = _problem(seed=5)
    X[:, 0] = 100.0 * X[:, 0] + 7.0  # standardisation matters for the graph
    est = cls(k=6).fit(X, Y)
    W = _own_graph(est, X)
    np.testing.assert_allclose(est.graph_.toarray(), W, rtol=1e-12)
    lab = (Y != -1).all(axis=1)
    if cls is MLGFHF:
        expected, threshold = _dense_harmonic(W, Y, lab), 0.5
    else:
        expected, threshold = _dense_lgc(W, Y, lab, est.alpha), 0.0
    np.testing.assert_allclose(est.label_scores_, expected, rtol=1e-8, atol=1e-10)
    np.testing.assert_array_equal(est.transduction_, (expected > threshold).astype(np.int8))
    assert est.transduction_.dtype == np.int8 and est.n_features_in_ == X.shape[1]


def test_gfhf_scores_are_harmonic_on_unlabelled_nodes():
    X, Y = _problem(n=80, seed=6)
    est = MLGFHF(k=5).fit(X, Y)
    W = est.graph_.toarray()
    lab = (Y != -1).all(axis=1)
    assert reached_nodes(est.graph_, lab).all()
    f = est.label_scores_
    neighbour_mean = (W @ f) / W.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(f[~lab], neighbour_mean[~lab], rtol=1e-10, atol=1e-12)
    assert not np.allclose(f[lab], neighbour_mean[lab])  # labelled nodes are clamped instead


def test_unreached_component_and_isolated_nodes_get_label_frequencies():
    # Nodes 0..29: connected, labelled and unlabelled; 30..33: an unlabelled component;
    # 34: isolated unlabelled; 35: isolated labelled; 36: only an explicit zero-weight edge.
    n, q, main = 37, 3, 30
    W = np.zeros((n, n))
    W[:main, :main] = _connected_graph(main, seed=7)
    W[30:34, 30:34] = _connected_graph(4, seed=8)
    Y, lab = _labels(n, q, 0, seed=9)
    lab[[0, 3, 8, 15, 21, 27, 35]] = True
    Y[lab] = np.random.default_rng(10).integers(0, 2, (lab.sum(), q))
    rows, cols = np.nonzero(W)
    Ws = sp.csr_matrix(
        (np.r_[W[rows, cols], 0.0, 0.0], (np.r_[rows, 36, 0], np.r_[cols, 0, 36])), shape=(n, n)
    )  # with two stored explicit zeros
    assert Ws[36, 0] == 0 and Ws.nnz == np.count_nonzero(W) + 2
    p = Y[lab].mean(axis=0)
    assert np.array_equal(reached_nodes(Ws, lab), np.r_[np.ones(main, bool), [False] * 5, True, False])
    unreached = [30, 31, 32, 33, 34, 36]

    f = harmonic_scores(Ws, Y, lab)
    F = lgc_scores(Ws, Y, lab, alpha=0.95)
    assert np.isfinite(f).all() and np.isfinite(F).all()
    np.testing.assert_allclose(f[unreached], np.tile(p, (6, 1)))
    np.testing.assert_allclose(F[unreached], np.tile(2 * p - 1, (6, 1)))
    np.testing.assert_array_equal(f[35], Y[35])
    np.testing.assert_array_equal(F[35], 2.0 * Y[35] - 1)  # degree 0: S row is 0, F = Y
    sub = np.arange(main)
    Wm, Ym, lm = W[np.ix_(sub, sub)], Y[sub], lab[sub]
    np.testing.assert_allclose(f[sub], _dense_harmonic(Wm, Ym, lm), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(F[sub], _dense_lgc(Wm, Ym, lm, 0.95), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("cls", [MLGFHF, MLLGC])
def test_out_of_sample_scores_equal_joined_transductive_fit(cls):
    X, Y = _problem(n=70, seed=11)
    n_train = 50
    est = cls(k=6)
    joined = clone(est).fit(X, np.vstack([Y[:n_train], np.full((20, 3), -1, np.int8)]))
    alone = clone(est).fit(X[:n_train], Y[:n_train])
    scores = alone.decision_function(X[n_train:])
    np.testing.assert_allclose(scores, joined.label_scores_[n_train:], rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(alone.predict(X[n_train:]), joined.transduction_[n_train:])
    assert alone.label_scores_.shape == (n_train, 3)
    # the new points changed the graph: scores differ from the training-only fit on shared rows
    assert not np.allclose(alone.label_scores_, joined.label_scores_[:n_train])
    assert cls.transductive is True


def test_gfhf_and_lgc_share_one_cached_graph(tmp_path):
    X, Y = _problem(seed=12)

    def entries():
        return len(list(tmp_path.glob("graphs/*.npz")))

    folder = tmp_path
    a = MLGFHF(k=7, memory=folder).fit(X, Y)
    b = MLLGC(k=7, memory=folder).fit(X, Y)
    assert entries() == 1
    assert (a.graph_ != b.graph_).nnz == 0
    MLLGC(k=8, memory=folder).fit(X, Y)
    assert entries() == 2


@pytest.mark.parametrize("cls", [MLGFHF, MLLGC])
def test_fits_of_the_same_rows_in_another_order_reuse_their_neighbours(cls, tmp_path):
    """The runner's transductive fits see training + test rows in a new order every trial: the
    neighbours are searched once (one cache entry) and the scores are those of a fit without a
    cache, duplicate rows (ties at the k-th neighbour) included."""
    X, Y = _problem(n=80, seed=4)
    X[60:70] = X[:10]  # duplicates
    for seed in range(3):
        order = np.random.default_rng(seed).permutation(len(X))
        cached = cls(k=5, memory=tmp_path).fit(X[order], Y[order])
        fresh = cls(k=5).fit(X[order], Y[order])
        assert np.array_equal(cached.label_scores_, fresh.label_scores_)
        assert (cached.graph_ != fresh.graph_).nnz == 0
    assert len(list(tmp_path.glob("knn_neighbours/*.npz"))) == 1
    assert len(list(tmp_path.glob("graphs/*.npz"))) == 3


@pytest.mark.parametrize(
    "est, name",
    [
        (MLLGC(alpha=1.0), "alpha"),
        (MLLGC(alpha=0.0), "alpha"),
        (MLLGC(alpha=-0.5), "alpha"),
        (MLGFHF(graph="full"), "graph"),
        (MLLGC(graph="complete"), "graph"),
        (MLGFHF(weights="binary"), "weights"),
        (MLGFHF(k=0), "k"),
        (MLLGC(sigma=-1.0), "sigma"),
    ],
)
def test_bad_parameters_raise_naming_them(est, name):
    X, Y = _problem(n=20)
    with pytest.raises(ValueError, match=f"parameter {name}="):
        est.fit(X, Y)


@pytest.mark.parametrize("preconditioned", [False, True])
def test_solve_spd_matches_a_dense_solve_to_rounding(preconditioned):
    W = _connected_graph(300, seed=3, density=0.03)
    A = np.diag(W.sum(axis=1) + 0.05) - W  # a Laplacian plus a shift: sparse, SPD
    B = np.random.default_rng(0).normal(size=(300, 4))
    B[:, 2] = 0.0  # a column with nothing to solve stays zero
    if not preconditioned:  # eigenvectors converge in one step and leave the iteration first
        B = np.hstack([B, np.linalg.eigh(A)[1][:, :4]])
    X = solve_spd(sp.csr_matrix(A), B, np.diag(A).copy() if preconditioned else None)
    expected = np.linalg.solve(A, B)
    assert (np.abs(X - expected).max(axis=0) <= 1e-12 * np.abs(expected).max(axis=0)).all()
    assert not X[:, 2].any()


def test_solve_spd_falls_back_to_the_sparse_lu_when_cg_fails(monkeypatch):
    calls = []
    real = propagation.splu

    def spy(A, **kw):
        calls.append(A.shape)
        return real(A, **kw)

    monkeypatch.setattr(propagation, "splu", spy)
    A = sp.csr_matrix(np.diag([1.0, -1.0]))  # not positive definite: CG makes no progress
    X = solve_spd(A, np.array([[1.0], [1.0]]))
    np.testing.assert_array_equal(X, [[1.0], [-1.0]])
    assert calls == [(2, 2)]
    calls.clear()
    solve_spd(sp.csr_matrix(np.diag([1.0, 2.0])), np.array([[1.0], [1.0]]))
    assert calls == []  # an SPD system never reaches the LU
