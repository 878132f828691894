"""ML-FSKSC (mlgraph.methods.spectral) against independent computations of its primal problem,
the Nyström map and the Rényi entropy search."""

import numpy as np
import pytest
from scipy.spatial.distance import cdist
from sklearn.base import clone
from sklearn.datasets import make_blobs, make_moons

from mlgraph.methods.spectral import (
    MLFSKSC,
    nystrom_degrees,
    nystrom_map,
    renyi_entropy,
    select_prototypes,
    solve_primal,
)


def _rbf(A, B, sigma):
    return np.exp(-cdist(A, B, "sqeuclidean") / (2.0 * sigma**2))


def _objective(w, b, Phi, d, c, a, gamma1, gamma2):
    """The primal cost of MSS-KSC for one output, written directly from its definition."""
    e = Phi @ w + b
    return 0.5 * w @ w - 0.5 * gamma1 * np.sum(e**2 / d) + 0.5 * gamma2 * np.sum(a * (e - c) ** 2)


def _numerical_gradient(f, x, h=1e-4):
    steps = np.eye(x.size) * h
    return np.array([(f(x + s) - f(x - s)) / (2 * h) for s in steps])  # exact for a quadratic


def _semi(Y, n_labelled, seed):
    Ys = Y.copy()
    Ys[np.random.default_rng(seed).permutation(len(Y))[n_labelled:]] = -1
    return Ys


def _stationarity_residual(Phi, d, C, labelled, W, b, gamma1, gamma2):
    a = labelled.astype(float)
    worst = 0.0
    for j in range(C.shape[1]):

        def f(x, c=C[:, j]):
            return _objective(x[:-1], x[-1], Phi, d, np.where(labelled, c, 0.0), a, gamma1, gamma2)

        x = np.append(W[:, j], b[j])
        worst = max(worst, np.abs(_numerical_gradient(f, x)).max() / max(1.0, np.abs(x).max()))
    return worst


@pytest.mark.parametrize("gamma1", [0.0, 0.7, 3.0])  # 3.0: indefinite system, still stationary
def test_primal_solve_is_a_stationary_point_of_the_primal_cost(gamma1):
    rng = np.random.default_rng(0)
    n, r, q = 60, 7, 3
    Phi = rng.normal(size=(n, r))
    d = rng.uniform(1.0, 5.0, size=n)
    labelled = rng.random(n) < 0.3
    C = np.where(rng.random((n, q)) < 0.5, 1.0, -1.0)
    W, b = solve_primal(Phi, d, C, labelled, gamma1, 2.5)
    assert _stationarity_residual(Phi, d, C, labelled, W, b, gamma1, 2.5) < 1e-6


def test_primal_solve_matches_the_dual_linear_system():
    # Lagrangian dual of (P): w = Φᵀα, α = γ2 A c − R e, 1ᵀα = 0, e = Ωα + b1, with Ω = ΦΦᵀ.
    rng = np.random.default_rng(1)
    n, r = 40, 6
    Phi = rng.normal(size=(n, r))
    d = rng.uniform(1.0, 3.0, size=n)
    labelled = rng.random(n) < 0.4
    c = np.where(labelled, np.sign(rng.normal(size=n)), 0.0)
    g1, g2 = 0.6, 4.0
    R = np.diag(g2 * labelled - g1 / d)
    top = np.hstack([np.eye(n) + R @ Phi @ Phi.T, (R @ np.ones(n))[:, None]])
    dual = np.vstack([top, np.append(np.ones(n), 0.0)[None, :]])
    sol = np.linalg.solve(dual, np.append(g2 * c, 0.0))
    alpha, b_dual = sol[:n], sol[n]
    W, b = solve_primal(Phi, d, c[:, None], labelled, g1, g2)
    np.testing.assert_allclose(W[:, 0], Phi.T @ alpha, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(b[0], b_dual, rtol=1e-8, atol=1e-10)


def test_fitted_model_is_stationary_with_its_own_features_and_degrees():
    X, y = make_blobs(120, centers=3, n_features=4, random_state=0)
    Y = _semi(np.c_[y == 0, y == 1, y != 2].astype(np.int8), 20, 0)
    est = MLFSKSC(gamma1=0.8, gamma2=3.0, n_prototypes=40, entropy_iterations=300).fit(X, Y)
    Phi = est.transform(X)
    d = np.maximum((Phi @ Phi.T).sum(axis=1), 1.0)  # degrees of all n training points
    np.testing.assert_allclose(est.degrees_, d, rtol=1e-10)
    labelled = (Y != -1).all(axis=1)
    C = 2.0 * Y - 1.0
    assert _stationarity_residual(Phi, d, C, labelled, est.coef_, est.intercept_, 0.8, 3.0) < 1e-6
    np.testing.assert_allclose(est.decision_function(X), Phi @ est.coef_ + est.intercept_)


def test_nystrom_features_reproduce_the_kernel():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(30, 5))
    sigma = 0.8  # well-conditioned K: no eigenvalue falls below the cut-off
    est = MLFSKSC(sigma=sigma, n_prototypes=100).fit(X, (X[:, :2] > 0).astype(np.int8))
    assert est.prototype_indices_.size == 30  # m capped at n: all points
    Xs = (X - est.mean_) / est.scale_
    K = _rbf(Xs, Xs, sigma)
    Phi = est.transform(X)
    np.testing.assert_allclose(Phi @ Phi.T, K, atol=1e-8)  # exact when m = n

    X = rng.normal(size=(80, 3))
    est = MLFSKSC(sigma=0.7, n_prototypes=15, entropy_iterations=200).fit(X, (X[:, :2] > 0).astype(np.int8))
    Xs = (X - est.mean_) / est.scale_
    P = Xs[est.prototype_indices_]
    Phi_p = est.transform(X[est.prototype_indices_])
    np.testing.assert_allclose(Phi_p @ Phi_p.T, _rbf(P, P, 0.7), atol=1e-8)  # K_mm on prototypes
    Phi = est.transform(X)
    nystrom = _rbf(Xs, P, 0.7) @ np.linalg.solve(_rbf(P, P, 0.7), _rbf(P, Xs, 0.7))
    np.testing.assert_allclose(Phi @ Phi.T, nystrom, atol=1e-7)  # K_nm K_mm⁻¹ K_mn elsewhere


def test_eigenvalue_cutoff_drops_null_directions():
    K = _rbf(np.r_[np.zeros((2, 2)), np.ones((3, 2))], np.r_[np.zeros((2, 2)), np.ones((3, 2))], 1.0)
    M = nystrom_map(K)  # rank 2: duplicated points
    assert M.shape == (5, 2)
    np.testing.assert_allclose(K @ M @ M.T @ K, K, atol=1e-12)


def test_degrees_are_row_sums_of_the_nystrom_kernel_clipped_at_one():
    X = np.r_[np.zeros((5, 2)), [[40.0, 40.0]]]  # an isolated last point
    P = X[[0, 5]] + [[0.5, 0.0], [30.0, 30.0]]  # no prototype near it
    Phi = _rbf(X, P, 1.0) @ nystrom_map(_rbf(P, P, 1.0))
    raw = (Phi @ Phi.T).sum(axis=1)
    assert raw[-1] < 1e-6 and raw[0] > 1.0
    np.testing.assert_allclose(nystrom_degrees(Phi), np.maximum(raw, 1.0), rtol=1e-12)


def _naive_search(X, m, sigma, n_iter, seed):
    """The documented swap protocol with the entropy recomputed from scratch at every trial."""
    rng = np.random.default_rng(seed)
    perm = rng.permutation(len(X))
    out_slot, in_slot = rng.integers(m, size=n_iter), rng.integers(m, len(X), size=n_iter)
    for a, j in zip(out_slot, in_slot, strict=True):
        trial = perm.copy()
        trial[a], trial[j] = trial[j], trial[a]
        if renyi_entropy(_rbf(X[trial[:m]], X[trial[:m]], sigma)) > renyi_entropy(
            _rbf(X[perm[:m]], X[perm[:m]], sigma)
        ):
            perm = trial
    return np.sort(perm[:m])


def test_renyi_entropy_search():
    X, _ = make_blobs(150, centers=[[0, 0], [6, 0]], cluster_std=[0.5, 3.0], random_state=3)
    m, sigma = 12, 1.0
    K = _rbf(X[:m], X[:m], sigma)
    assert renyi_entropy(K) == pytest.approx(-np.log(K.sum() / m**2), rel=1e-12)

    initial = select_prototypes(X, m, sigma, 0, random_state=5)
    final = select_prototypes(X, m, sigma, 400, random_state=5)

    def H(idx):
        return -np.log(np.mean(_rbf(X[idx], X[idx], sigma)))

    assert H(final) > H(initial) + 0.1
    np.testing.assert_array_equal(final, select_prototypes(X, m, sigma, 400, random_state=5))
    assert not np.array_equal(final, select_prototypes(X, m, sigma, 400, random_state=6))
    # The O(m) bookkeeping of the kernel sum takes the same decisions as a full recomputation.
    np.testing.assert_array_equal(final, _naive_search(X, m, sigma, 400, seed=5))

    est = MLFSKSC(sigma=sigma, n_prototypes=m, entropy_iterations=400, random_state=5)
    est.fit(X, (X > 0).astype(np.int8))
    Xs = (X - est.mean_) / est.scale_
    assert est.entropy_ == pytest.approx(
        H_s := -np.log(np.mean(_rbf(Xs[est.prototype_indices_], Xs[est.prototype_indices_], sigma)))
    )
    assert H_s > -np.log(np.mean(_rbf(Xs[initial], Xs[initial], sigma)))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_swap_search_batches_take_the_naive_decisions(seed):
    """Few non-prototype slots (n − m = 10 against batches of 64 trials): kept swaps often refill
    a slot that later trials of the same batch draw from, and their kernel rows must be redone."""
    X, _ = make_blobs(30, centers=3, cluster_std=2.0, n_features=4, random_state=seed)
    np.testing.assert_array_equal(
        select_prototypes(X, 20, 1.5, 300, random_state=seed), _naive_search(X, 20, 1.5, 300, seed=seed)
    )


def test_two_blobs_with_ten_percent_labels():
    X, y = make_blobs(400, centers=2, cluster_std=1.5, n_features=3, random_state=4)
    Y = np.c_[y, 1 - y].astype(np.int8)
    Xtr, Ytr, Xte, Yte = X[:300], Y[:300], X[300:], Y[300:]
    Ys = _semi(Ytr, 30, seed=0)
    est = MLFSKSC(n_prototypes=60, entropy_iterations=600).fit(Xtr, Ys)
    unlab = (Ys == -1).all(axis=1)
    assert (est.predict(Xtr[unlab]) == Ytr[unlab]).mean() > 0.9
    assert (est.predict(Xte) == Yte).mean() > 0.9
    assert est.decision_function(Xte).shape == (100, 2)


def test_unlabelled_points_carry_the_cluster_structure():
    # Two moons, 10 labelled points: the KSC term (γ1 > 0) lets the labels follow the manifolds.
    X, y = make_moons(400, noise=0.08, random_state=0)
    Y = np.c_[y, 1 - y].astype(np.int8)
    Ys = _semi(Y, 10, seed=1)
    acc = {
        g1: (
            MLFSKSC(gamma1=g1, sigma_scale=0.1, n_prototypes=150, entropy_iterations=600)
            .fit(X, Ys)
            .predict(X)
            == Y
        ).mean()
        for g1 in (0.0, 0.95)
    }
    assert acc[0.95] > 0.9
    assert acc[0.95] > acc[0.0] + 0.1


def test_unlabelled_features_are_used_but_not_their_codes():
    rng = np.random.default_rng(7)
    X = rng.normal(size=(90, 4))
    Y = _semi((X[:, :2] > 0).astype(np.int8), 25, seed=2)
    unlab = (Y == -1).all(axis=1)
    kw = dict(sigma=2.0, n_prototypes=30, entropy_iterations=100)
    base = MLFSKSC(**kw).fit(X, Y)
    X2 = X.copy()
    X2[np.flatnonzero(unlab)[:20]] += 3.0
    moved = MLFSKSC(**kw).fit(X2, Y)
    X_test = rng.normal(size=(10, 4))
    assert not np.allclose(base.decision_function(X_test), moved.decision_function(X_test))
    # Codes on unlabelled rows are ignored by the solve (A zeroes them).
    Phi, d = base.transform(X), base.degrees_
    C = np.where(unlab[:, None], 0.0, 2.0 * Y - 1.0)
    garbage = np.where(unlab[:, None], rng.normal(size=C.shape) * 5, C)
    for a, b in zip(
        solve_primal(Phi, d, C, ~unlab, 0.9, 1.0),
        solve_primal(Phi, d, garbage, ~unlab, 0.9, 1.0),
        strict=True,
    ):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(base.coef_, solve_primal(Phi, d, C, ~unlab, 0.9, 1.0)[0])


@pytest.mark.parametrize(
    "name,value",
    [
        ("gamma1", -0.1),
        ("gamma2", 0.0),
        ("sigma", -1.0),
        ("sigma_scale", 0),
        ("n_prototypes", 0),
        ("n_prototypes", 2.5),
        ("entropy_iterations", -1),
        ("entropy_iterations", True),
        ("eig_tol", 1.0),
    ],
)
def test_bad_parameters_are_named(name, value):
    X = np.random.default_rng(0).normal(size=(20, 3))
    with pytest.raises(ValueError, match=f"parameter {name}="):
        MLFSKSC(**{name: value}).fit(X, (X[:, :2] > 0).astype(np.int8))


def test_clone_and_feature_count_check():
    X = np.random.default_rng(0).normal(size=(30, 3))
    est = clone(MLFSKSC(n_prototypes=10)).fit(X, (X[:, :2] > 0).astype(np.int8))
    assert est.coef_.shape[1] == 2 and est.prototypes_.shape == (10, 3)
    with pytest.raises(ValueError, match="features"):
        est.predict(X[:, :2])
