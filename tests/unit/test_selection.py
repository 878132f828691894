"""Feature selectors of paper 004: GMBA (Eq. 2-16), MLFS, MLRF and SPEC (Eq. 17).

Each check compares with an independent computation: a hand-worked s_multi example and the
explicit clique expansion (Eq. 4-5), central finite differences of Eq. 13 written as plain
loops, a literal loop of Steps 1-3, scikit-learn's ANOVA F for single-label data, a
brute-force ReliefF, and Eq. 17 with the normalised Laplacian built densely.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.feature_selection import f_classif

from mlgraph.methods.selection import (
    GMBA,
    MLFS,
    MLRF,
    SPEC,
    _similarity_rows,
    gmba_loss_grad,
    label_graph,
    label_similarity,
)

SELECTORS = [GMBA, MLFS, MLRF, SPEC]


def make(cls, **params):
    if cls is GMBA:
        params.setdefault("random_state", 0)
    return cls(**params)


# ------------------------------------------------------------------------- s_multi


def test_label_similarity_hand_example():
    # Fig. 1 of paper 004: rows {l1}, {l2}, {l2}, {l1, l2}, {}, {}; n_1 = 2, n_2 = 3.
    Y = np.array([[1, 0], [0, 1], [0, 1], [1, 1], [0, 0], [0, 0]])
    # {l1} vs {l1,l2}: n_1 / (n_1 + n_2) = 2/5;  {l2} vs {l1,l2}: 3/5;  {l2} vs {l2}: 3/3 = 1;
    # {l1} vs {l2}: 0 / 5 = 0;  anything vs {}: 0 (for {} vs {} the union is empty: Eq. 2's 0).
    expected = np.array(
        [
            [1.0, 0.0, 0.0, 0.4, 0.0, 0.0],
            [0.0, 1.0, 1.0, 0.6, 0.0, 0.0],
            [0.0, 1.0, 1.0, 0.6, 0.0, 0.0],
            [0.4, 0.6, 0.6, 1.0, 0.0, 0.0],
            [0.0] * 6,
            [0.0] * 6,
        ]
    )
    S = label_similarity(Y)
    assert sp.issparse(S)
    np.testing.assert_allclose(S.toarray(), expected, atol=1e-15)
    A = label_graph(sp.csr_matrix(Y))  # Eq. 3: the same off the diagonal, 0 on it
    np.testing.assert_allclose(A.toarray(), expected - np.diag(np.diag(expected)), atol=1e-15)
    # a 3-label case with unequal weights: n = (3, 1, 2)
    Y3 = np.array([[1, 1, 0], [1, 0, 1], [1, 0, 0], [0, 0, 1]])
    S3 = label_similarity(Y3).toarray()
    assert S3[0, 1] == pytest.approx(3 / 6)  # share l1 (3); union l1,l2,l3 = 3+1+2
    assert S3[0, 2] == pytest.approx(3 / 4)  # share l1; union l1,l2 = 3+1
    assert S3[1, 3] == pytest.approx(2 / 5)  # share l3 (2); union l1,l3 = 3+2
    assert S3[0, 3] == 0.0


def clique_expansion(Y: np.ndarray) -> np.ndarray:
    """Eq. 4-5 by enumeration: hyperedge e_q = rows with label q, weight w(e_q) = |e_q|."""
    n, q = Y.shape
    edges = [np.flatnonzero(Y[:, c]) for c in range(q)]
    num = np.zeros((n, n))
    den = np.zeros((n, n))
    for e in edges:
        w = len(e)
        members = set(e.tolist())
        for i in range(n):
            for j in range(n):
                if i in members and j in members:
                    num[i, j] += w
                if i in members or j in members:
                    den[i, j] += w
    return np.divide(num, den, out=np.zeros_like(num), where=den > 0)


def test_label_similarity_matches_clique_expansion():
    rng = np.random.default_rng(1)
    Y = (rng.random((35, 5)) < 0.3).astype(int)
    Y[:3] = 0  # label-free rows
    expected = clique_expansion(Y)
    np.testing.assert_allclose(label_similarity(sp.csr_matrix(Y)).toarray(), expected, atol=1e-14)
    # the row blocks GMBA uses give the same numbers
    Yc = sp.csr_matrix(Y, dtype=float)
    Yw = sp.csr_matrix(Yc @ sp.diags(Y.sum(0).astype(float)))
    rows = np.array([5, 0, 20, 34])
    block = _similarity_rows(Yc, Yw, np.asarray(Yw.sum(1)).ravel(), rows)
    np.testing.assert_allclose(block, expected[rows], atol=1e-14)


# -------------------------------------------------------------------------- GMBA


def s_row(Y: np.ndarray, i: int) -> np.ndarray:
    return label_similarity(Y).toarray()[i]


def eq13_loop(X, s, i, hits, misses, margin, omega, lam=1.0) -> float:
    """Eq. 13-14 with plain loops (the finite-difference target)."""

    def dist(j):
        return float(sum((omega[d] * (X[i, d] - X[j, d])) ** 2 for d in range(X.shape[1])))

    loss = 0.0
    for h in hits:
        loss += s[h] * dist(h)
        for j in misses:
            loss += lam * (s[h] - s[j]) * max(0.0, margin + dist(h) - dist(j))
    return loss


def fd_grad(f, omega, h=1e-6):
    g = np.zeros_like(omega)
    for d in range(omega.size):
        e = np.zeros_like(omega)
        e[d] = h
        g[d] = (f(omega + e) - f(omega - e)) / (2 * h)
    return g


def plain_sets(X, Y, i, k=3):
    """Steps 2(a)-(d) in the input metric, written independently (s_min = 1)."""
    same = (Y == Y[i]).all(axis=1) & (Y[i].sum() > 0)
    same[i] = False
    others = np.arange(len(Y)) != i
    dist = ((X - X[i]) ** 2).sum(axis=1)
    sim = np.flatnonzero(same)
    dis = np.flatnonzero(~same & others)
    hits = sim[np.lexsort((sim, dist[sim]))][:k]
    nm = dis[np.lexsort((dis, dist[dis]))][0]
    return hits, dis, abs(dist[hits[0]] - dist[nm]), dist


def hinge_args(dist, hits, misses, margin):
    return margin + dist[hits][:, None] - dist[misses][None, :]


@pytest.fixture(scope="module")
def small_problem():
    rng = np.random.default_rng(3)
    X = rng.standard_normal((30, 4))
    Y = (rng.random((30, 2)) < 0.5).astype(int)
    return X, Y


def test_gmba_step_matches_finite_difference_of_eq13(small_problem):
    X, Y = small_problem
    # a first pick where Eq. 13 is differentiable at w = 1 (no hinge at its kink)
    for seed in range(200):
        est = GMBA(n_iter=1, random_state=seed).fit(X, Y)
        i = int(est.visit_order_[0])
        if Y[i].sum() == 0 or (Y == Y[i]).all(axis=1).sum() < 2:
            continue
        hits, misses, margin, dist = plain_sets(X, Y, i)
        if np.abs(hinge_args(dist, hits, misses, margin)).min() > 1e-3:
            break
    else:
        pytest.fail("no differentiable first pick found")
    s = s_row(Y, i)
    ones = np.ones(X.shape[1])

    def f(w):
        return eq13_loop(X, s, i, hits, misses, margin, w)

    g_fd = fd_grad(f, ones)
    loss, g = gmba_loss_grad(X, s, i, hits, misses, margin, ones)
    assert loss == pytest.approx(f(ones), rel=1e-10)
    np.testing.assert_allclose(g, g_fd, rtol=1e-6, atol=1e-6)
    # Step 2(f): w = 1 - beta grad / ||grad|| with beta = 0.9
    np.testing.assert_allclose(est.weights_, ones - 0.9 * g_fd / np.linalg.norm(g_fd), atol=1e-6)
    assert est.n_updates_ == 1
    # the gradient at another w (hinges in the w-metric) against FD as well
    w = np.random.default_rng(0).uniform(0.5, 1.5, X.shape[1])
    dw = ((w * (X - X[i])) ** 2).sum(axis=1)
    assert np.abs(hinge_args(dw, hits, misses, margin)).min() > 1e-4
    np.testing.assert_allclose(
        gmba_loss_grad(X, s, i, hits, misses, margin, w)[1], fd_grad(f, w), rtol=1e-6, atol=1e-6
    )


def gmba_reference(X, Y, order, k=3, lam=1.0, beta=0.9):
    """Steps 1-3 of paper 004 literally, one instance and one pair at a time."""
    n, D = X.shape
    S = label_similarity(Y).toarray()
    w = np.ones(D)
    for i in order:
        sim = [j for j in range(n) if j != i and S[i, j] >= 1.0]
        dis = [j for j in range(n) if j != i and S[i, j] < 1.0]
        if not sim or not dis:
            continue
        dist = {j: float(((X[i] - X[j]) ** 2).sum()) for j in range(n)}
        nb = sorted(sim, key=lambda j: (dist[j], j))[:k]
        nm = min(dis, key=lambda j: (dist[j], j))
        m = abs(dist[nb[0]] - dist[nm])
        grad = np.zeros(D)
        for h in nb:
            grad += 2 * w * S[i, h] * (X[i] - X[h]) ** 2
            for j in dis:
                if not (m + dist[h] < dist[j] - 1e-9):  # Eq. 15
                    grad += lam * 2 * w * (S[i, h] - S[i, j]) * ((X[i] - X[h]) ** 2 - (X[i] - X[j]) ** 2)
        w = w - beta * grad / np.linalg.norm(grad)
    return w


def test_gmba_fit_matches_literal_loop(small_problem):
    X, Y = small_problem
    Y = Y.copy()
    Y[:2] = 0  # label-free rows have no hit: no update
    est = GMBA(random_state=7).fit(X, Y)
    assert est.visit_order_.shape == (30,) and set(est.visit_order_) == set(range(30))
    expected = gmba_reference(X, Y, est.visit_order_)
    np.testing.assert_allclose(est.weights_, expected, rtol=1e-9, atol=1e-9)
    assert est.n_updates_ < 30
    # sparse input: same weights
    est_sp = GMBA(random_state=7).fit(sp.csr_matrix(X), sp.csr_matrix(Y))
    np.testing.assert_allclose(est_sp.weights_, est.weights_, rtol=1e-9, atol=1e-9)
    # I = 2n chains two permutations
    assert GMBA(n_iter=60, random_state=7).fit(X, Y).visit_order_.shape == (60,)


# ------------------------------------------------------------------ planted problem


@pytest.fixture(scope="module")
def planted():
    """5 informative features (0-4) determine 4 labels; 45 noise features; n = 300."""
    rng = np.random.default_rng(100)
    X = rng.standard_normal((300, 50))
    f = X[:, :5]
    Y = np.stack(
        [f[:, 0] + f[:, 1] > 0, f[:, 2] > 0.3, f[:, 3] - f[:, 4] > 0, f[:, 1] + f[:, 3] > 0.5], axis=1
    ).astype(int)
    return X, Y


@pytest.mark.parametrize(
    "est, top",
    [
        (GMBA(random_state=0), 5),
        (MLFS(), 5),
        (MLRF(), 5),
        (SPEC(), 5),
        (SPEC(variant="phi2"), 5),
    ],
)
def test_planted_informative_features_rank_first(planted, est, top):
    X, Y = planted
    est = clone(est).fit(X, Y)
    assert set(est.ranking_[:top]) == set(range(5)), est.ranking_[:10]
    assert est.get_support().sum() == 15  # default fraction 0.3 of 50
    assert set(np.flatnonzero(est.get_support())) >= set(range(5))


def test_gmba_adaptive_metric_runs(planted):
    X, Y = planted
    est = GMBA(adaptive_metric=True, random_state=0, n_iter=50).fit(X, Y)
    assert est.n_updates_ > 0 and np.isfinite(est.weights_).all()


# --------------------------------------------------------------------- MLFS, MLRF


def test_mlfs_single_label_is_anova_f():
    rng = np.random.default_rng(4)
    y = rng.integers(0, 3, 60)
    X = rng.standard_normal((60, 6)) + y[:, None] * np.array([1.0, 0.5, 0, 0, 0.2, 0])
    Y = np.eye(3, dtype=int)[y]
    F, _ = f_classif(X, y)
    est = MLFS().fit(X, Y)
    np.testing.assert_allclose(est.scores_, F, rtol=1e-10)
    np.testing.assert_allclose(MLFS().fit(sp.csr_matrix(X), Y).scores_, F, rtol=1e-8)


def relieff_reference(X, y, k):
    """Kononenko's ReliefF with all n instances, k hits, k misses per other class."""
    n, D = X.shape
    span = X.max(0) - X.min(0)
    prior = {c: np.mean(y == c) for c in np.unique(y)}
    W = np.zeros(D)
    for i in range(n):
        dist = ((X - X[i]) ** 2).sum(1)
        for c in prior:
            idx = [j for j in np.lexsort((np.arange(n), dist)) if j != i and y[j] == c][:k]
            diff = sum(np.abs(X[i] - X[j]) / span for j in idx) / (n * k)
            W += -diff if c == y[i] else prior[c] / (1 - prior[y[i]]) * diff
    return W


def test_mlrf_single_label_is_relieff():
    rng = np.random.default_rng(5)
    y = rng.integers(0, 3, 40)
    X = rng.standard_normal((40, 4)) + y[:, None] * np.array([1.0, 0, 0.4, 0])
    Y = np.eye(3, dtype=int)[y]
    expected = relieff_reference(X, y, k=3)
    np.testing.assert_allclose(MLRF(n_neighbors=3).fit(X, Y).scores_, expected, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(
        MLRF(n_neighbors=3).fit(sp.csr_matrix(X), Y).scores_, expected, rtol=1e-8, atol=1e-10
    )


def test_mlrf_never_uses_self_as_neighbour():
    # two rows per label set: each row's only hit is its twin, far away on feature 0 only;
    # counting a row as its own (distance 0) hit would halve the hit penalty of feature 0.
    X = np.array([[0.0, 0.0], [10.0, 0.1], [0.0, 5.0], [10.0, 5.1]])
    Y = np.array([[1, 0], [1, 0], [0, 1], [0, 1]])
    est = MLRF(n_neighbors=1).fit(X, Y)
    # row 0: hit 1 (diff 1, 0.02), miss: nearest with l2 = row 2 (diff 0, 0.98); the same for
    # every row by symmetry -> scores = miss - hit = (0 - 1, 5/5.1 - 0.1/5.1)
    np.testing.assert_allclose(est.scores_, [-1.0, 4.9 / 5.1], atol=1e-12)


# -------------------------------------------------------------------------- SPEC


def spec_reference(X, A, variant):
    d = A.sum(1)
    L = np.eye(len(d)) - A / np.sqrt(np.outer(d, d))  # D^-1/2 (D - A) D^-1/2
    xi = np.sqrt(d) / np.linalg.norm(np.sqrt(d))
    out = []
    for x in X.T:
        xh = np.sqrt(d) * x / np.linalg.norm(np.sqrt(d) * x)
        phi = xh @ L @ xh
        out.append(phi / (1 - (xh @ xi) ** 2) if variant == "phi2" else phi)
    return np.array(out)


@pytest.mark.parametrize("variant", ["phi1", "phi2"])
def test_spec_smooth_feature_ranks_first(variant):
    # three clusters of 10 rows: label sets {l1}, {l2}, {l1, l2} (a connected graph)
    Y = np.repeat(np.array([[1, 0], [0, 1], [1, 1]]), 10, axis=0)
    cluster = np.repeat([0, 1, 2], 10)
    rng = np.random.default_rng(6)
    smooth = np.array([1.0, -1.0, 0.3])[cluster]  # constant within clusters
    X = np.column_stack(
        [rng.standard_normal(30), smooth, rng.standard_normal(30) * 3, smooth + 0.5 * rng.standard_normal(30)]
    )
    est = SPEC(variant=variant).fit(X, Y)
    assert list(est.ranking_[:2]) == [1, 3]  # smooth, then smooth + noise
    assert est.phi_[1] < est.phi_[3] < min(est.phi_[0], est.phi_[2])  # lower phi is better
    np.testing.assert_allclose(est.scores_, -est.phi_)
    np.testing.assert_allclose(est.phi_, spec_reference(X, label_graph(Y).toarray(), variant), rtol=1e-9)
    np.testing.assert_allclose(SPEC(variant=variant).fit(sp.csr_matrix(X), Y).phi_, est.phi_, rtol=1e-9)


# ---------------------------------------------------------------- sklearn contract


@pytest.mark.parametrize("cls", SELECTORS)
def test_transform_counts_sparse_and_refit_free_sweep(planted, cls):
    X, Y = planted
    Xs = sp.csr_matrix(X)
    est = make(cls, fraction=0.1).fit(Xs, Y)
    assert est.n_selected(50) == 5 and est.transform(Xs).shape == (300, 5)
    assert sp.issparse(est.transform(Xs))
    np.testing.assert_array_equal(est.transform(X), X[:, np.sort(est.ranking_[:5])])
    for fraction, kept in [(0.3, 15), (0.25, 13), (0.01, 1), (1.0, 50)]:  # ceil(fraction * d)
        est.set_params(fraction=fraction)  # no refit needed
        assert est.get_support().sum() == kept
    est.set_params(fraction=None, k=7)
    assert est.get_support().sum() == 7
    assert make(cls).fit_transform(X, Y).shape == (300, 15)  # default fraction 0.3
    assert len(est.ranking_) == 50 and sorted(est.ranking_) == list(range(50))


@pytest.mark.parametrize("cls", SELECTORS)
@pytest.mark.parametrize(
    "name, value", [("fraction", 0.0), ("fraction", 1.5), ("k", 0), ("k", 2.5), ("k", 51)]
)
def test_bad_size_params_raise_naming_them(planted, cls, name, value):
    X, Y = planted
    with pytest.raises(ValueError, match=name):
        make(cls, **{name: value}).fit(X, Y)


@pytest.mark.parametrize(
    "est, name",
    [
        (GMBA(n_neighbors=0), "n_neighbors"),
        (GMBA(s_min=0.0), "s_min"),
        (GMBA(lam=-1.0), "lam"),
        (GMBA(beta=0.0), "beta"),
        (GMBA(n_iter=0), "n_iter"),
        (MLRF(n_neighbors=1.5), "n_neighbors"),
        (SPEC(variant="phi3"), "variant"),
        (MLFS(fraction=0.2, k=3), "fraction"),
    ],
)
def test_bad_method_params_raise_naming_them(planted, est, name):
    X, Y = planted
    with pytest.raises(ValueError, match=name):
        est.fit(X, Y)


def test_bad_labels_raise(planted):
    X, Y = planted
    with pytest.raises(ValueError, match="0/1"):
        MLFS().fit(X, Y * 2)
    with pytest.raises(ValueError, match="rows"):
        MLFS().fit(X, Y[:-1])
    with pytest.raises(ValueError, match="Y"):
        MLFS().fit(X)


def test_fixed_random_state_is_deterministic(planted):
    X, Y = planted
    a = GMBA(random_state=3).fit(X, Y)
    b = GMBA(random_state=3).fit(X, Y)
    np.testing.assert_array_equal(a.weights_, b.weights_)
    np.testing.assert_array_equal(a.ranking_, b.ranking_)
    c = GMBA(random_state=4).fit(X, Y)
    assert not np.array_equal(a.visit_order_, c.visit_order_)


@pytest.mark.parametrize("cls", SELECTORS)
def test_constant_features_rank_last_without_nan(planted, cls):
    X, Y = planted
    X = X[:, :8].copy()
    X[:, 2] = 0.0
    X[:, 5] = 3.0
    for data in (X, sp.csr_matrix(X)):
        est = make(cls).fit(data, Y)
        assert not np.isnan(est.scores_).any()
        assert set(est.ranking_[-2:]) == {2, 5}
        np.testing.assert_array_equal(np.flatnonzero(est.constant_features_), [2, 5])
        assert np.isneginf(est.scores_[[2, 5]]).all()


def test_ranking_cache_serves_every_fraction(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(80, 12))
    Y = (X[:, :3] + 0.3 * rng.normal(size=(80, 3)) > 0).astype(int)
    plain = GMBA(fraction=0.5, random_state=0).fit(X, Y)
    cached = [GMBA(fraction=f, random_state=0, memory=str(tmp_path)).fit(X, Y) for f in (0.2, 0.5, 0.9)]
    entries = list(tmp_path.rglob("*.npz"))
    assert len(entries) == 1  # one ranking computed, two loaded
    for model in cached:
        np.testing.assert_array_equal(model.ranking_, plain.ranking_)
        np.testing.assert_array_equal(model.weights_, plain.weights_)
    assert cached[1].get_support().sum() == plain.get_support().sum() == 6
