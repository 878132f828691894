"""ML-MR / ML-MRRW (paper 000, Eq. 19–20) against closed forms and independent computations."""

import numpy as np
import pytest
import scipy.linalg
from scipy.sparse.csgraph import connected_components
from sklearn.base import clone
from sklearn.kernel_ridge import KernelRidge

import mlgraph.methods.manifold as manifold
from mlgraph.graphs import build_graph, laplacian
from mlgraph.methods import MLMR, MLMRRW


def _problem(n=60, d=5, q=3, n_labelled=20, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    Y = (X[:, :q] + 0.3 * rng.normal(size=(n, q)) > 0).astype(np.int8)
    Y_semi = Y.copy()
    Y_semi[n_labelled:] = -1
    X_test = rng.normal(size=(15, d))
    return X, Y_semi, X_test


def _standardise(est, X):
    return (X - est.mean_) / est.scale_


def test_gamma_I_zero_is_kernel_ridge_on_labelled_points():
    X, Y, X_test = _problem()
    est = MLMRRW(gamma_A=0.05, gamma_I=0.0, nu1=0.8, nu2=0.3, sigma=2.0).fit(X, Y)
    lab = (Y != -1).all(axis=1)
    l = lab.sum()
    # Θ_u = 0 and (ν1 K_ll + l γ_A I) Θ_l = Y_l: kernel ridge with alpha = l γ_A / ν1.
    krr = KernelRidge(alpha=l * 0.05 / 0.8, kernel="rbf", gamma=1 / (2 * est.sigma_**2))
    krr.fit(_standardise(est, X)[lab], 2.0 * Y[lab] - 1)
    np.testing.assert_allclose(
        est.decision_function(X_test), krr.predict(_standardise(est, X_test)), rtol=1e-8, atol=1e-10
    )


def test_unit_reliance_weights_are_ml_mr():
    X, Y, X_test = _problem(seed=1)
    a = MLMR(gamma_A=0.01, gamma_I=2.0, sigma=1.5).fit(X, Y)
    b = MLMRRW(gamma_A=0.01, gamma_I=2.0, sigma=1.5, nu1=1.0, nu2=1.0).fit(X, Y)
    np.testing.assert_allclose(a.decision_function(X_test), b.decision_function(X_test), rtol=1e-10)


def test_ml_mr_takes_cholesky_from_its_size_rule_and_agrees_with_lu(monkeypatch):
    """ML-MR's symmetric form (Cholesky) is used from ``_CHOLESKY_MIN_ROWS`` training rows, LU
    below; both give the same coefficients to 1e-12."""
    X, Y, X_test = _problem(seed=5)
    fits = {}
    for rows in (len(X) + 1, len(X)):
        monkeypatch.setattr(manifold, "_CHOLESKY_MIN_ROWS", rows)
        est = MLMR(gamma_A=0.03, gamma_I=10.0, sigma=2.2, k=6).fit(X, Y)
        fits[est.solver_report_["factorisation"]] = est.decision_function(X_test)
    assert set(fits) == {"lu", "cholesky"}
    np.testing.assert_allclose(fits["cholesky"], fits["lu"], rtol=0, atol=1e-12 * np.abs(fits["lu"]).max())


def test_ml_mr_is_stationary_point_of_laprls_objective():
    """With Ξ = I, Θ* zeroes the gradient of Eq. 11:
    (1/l) K Ψ (Ψ K Θ − Y) + γ_A K Θ + (γ_I/n²) K L K Θ = 0."""
    X, Y, _ = _problem(seed=2)
    gA, gI = 0.02, 5.0
    est = MLMR(gamma_A=gA, gamma_I=gI, sigma=1.7).fit(X, Y)
    Xs = _standardise(est, X)
    K = np.exp(-((Xs[:, None, :] - Xs[None, :, :]) ** 2).sum(-1) / (2 * est.sigma_**2))
    L = laplacian(est.graph_).toarray()
    lab = (Y != -1).all(axis=1)
    Psi = np.diag(lab.astype(float))
    T = np.where(lab[:, None], 2.0 * Y - 1, 0.0)
    theta = est.dual_coef_
    n, l = len(X), lab.sum()
    grad = K @ Psi @ (Psi @ K @ theta - T) / l + gA * K @ theta + gI / n**2 * K @ L @ K @ theta
    assert np.abs(grad).max() < 1e-8


@pytest.mark.parametrize(
    "graph",
    [
        {"graph": "knn", "k": 6},
        {"graph": "epsilon", "eps": 0.9},
        {"graph": "bmatching", "b": 4, "weights": "heat"},
    ],
)
@pytest.mark.parametrize("nu", [(1.0, 0.1), (1.0, 1.0), (0.7, 0.0)])
def test_ml_mrrw_matches_eq19_assembled_densely(graph, nu, monkeypatch):
    """The in-place, transposed LU path and the symmetric form's Cholesky (made to apply from 0
    rows) against a plain scipy.linalg.solve of Eq. 19, 1e-10."""
    monkeypatch.setattr(manifold, "_CHOLESKY_MIN_ROWS", 0)
    X, Y, X_test = _problem(seed=3)
    est = MLMRRW(gamma_A=0.03, gamma_I=10.0, nu1=nu[0], nu2=nu[1], sigma=2.2, **graph).fit(X, Y)
    Xs, Xt = _standardise(est, X), _standardise(est, X_test)
    sq = lambda A, B: ((A[:, None, :] - B[None, :, :]) ** 2).sum(-1)
    K = np.exp(-sq(Xs, Xs) / (2 * est.sigma_**2))
    Ke = np.exp(-sq(Xt, Xs) / (2 * est.sigma_**2))
    kind = graph["graph"]
    W = build_graph(
        Xs, kind=kind, sigma=est.sigma_, **{k: v for k, v in graph.items() if k != "graph"}
    ).toarray()
    assert W.any()
    L = np.diag(W.sum(1)) - W
    lab = (Y != -1).all(axis=1)
    n, l = len(X), lab.sum()
    Xi = np.diag(np.where(lab, nu[0], nu[1]))
    Psi = np.diag(lab.astype(float))
    A = Psi @ K @ Xi + l * 0.03 * np.eye(n) + l * 10.0 / n**2 * L @ K @ Xi
    theta = scipy.linalg.solve(A, np.where(lab[:, None], 2.0 * Y - 1, 0.0))
    np.testing.assert_allclose(est.dual_coef_, Xi @ theta, rtol=1e-10, atol=1e-10 * np.abs(theta).max())
    scores = Ke @ Xi @ theta
    np.testing.assert_allclose(
        est.decision_function(X_test), scores, rtol=1e-10, atol=1e-10 * np.abs(scores).max()
    )
    np.testing.assert_array_equal(est.predict(X_test), (scores > 0).astype(np.int8))
    assert est.solver_report_["solver"] == "exact" and est.solver_report_["residual"] < 1e-12
    # Cholesky of ν M K M + λ M needs Ξ = νI and every graph component to hold a labelled point.
    _, comp = connected_components(W > 0)
    spd = nu[0] == nu[1] and set(comp) == set(comp[lab])
    assert est.solver_report_["factorisation"] == ("cholesky" if spd else "lu")
    assert est.solver_report_["precision"] == "mixed"  # the float32 factorisation converged
    if (kind, nu) in {("knn", (1.0, 1.0)), ("epsilon", (1.0, 1.0))}:
        assert spd == (kind == "knn")  # both paths are exercised


@pytest.mark.parametrize("threads", [1, 3])
def test_assembled_systems_and_their_norms_equal_dense_products(monkeypatch, threads):
    """Eq. 19's A = M K Ξ + λI and the symmetric S = ν M K M + λM, panel by panel in threads
    (n not a multiple of the panel height), with ‖·‖∞ = the largest absolute row sum."""
    import scipy.sparse as sp

    import mlgraph.graphs.kernels as kernels
    from mlgraph.methods.manifold import _eq19, _kernel_times_m, _symmetric_matrix

    monkeypatch.setattr(kernels, "blas_threads", lambda: threads)
    rng = np.random.default_rng(0)
    n = 1100
    B = rng.normal(size=(n, n))
    K = B @ B.T / n
    W = sp.random(n, n, density=0.01, random_state=1)
    M = (sp.diags(rng.random(n)) + 0.1 * (W + W.T)).tocsr()
    xi, lam, nu = rng.random(n) + 0.5, 0.3, 0.7
    built, norm = _eq19(K, M, xi, lam)
    A = M @ K @ np.diag(xi) + lam * np.eye(n)
    assert built.flags.c_contiguous
    np.testing.assert_allclose(built, A, rtol=1e-12, atol=1e-12)
    assert norm == pytest.approx(np.abs(A).sum(axis=1).max(), rel=1e-12)
    S, norm = _symmetric_matrix(_kernel_times_m(K.copy(), M), M, nu, lam)
    dense = nu * M @ K @ M + lam * M.toarray()
    np.testing.assert_allclose(S, dense, rtol=1e-12, atol=1e-12)
    assert norm == pytest.approx(np.abs(dense).sum(axis=1).max(), rel=1e-12)


@pytest.mark.parametrize("nu", [(1.0, 0.1), (1.0, 1.0)])
def test_ill_conditioned_system_falls_back_to_double_precision(nu, monkeypatch):
    """With γ_A tiny and σ wide, cond(Eq. 19) ≫ 1/ε₃₂: the float32 LU's refinement does not
    converge (30 steps) or the float32 Cholesky (made to apply from 0 rows) fails, and the
    float64 factorisation then gives precision="double"'s solution."""
    monkeypatch.setattr(manifold, "_CHOLESKY_MIN_ROWS", 0)
    X, Y, X_test = _problem(seed=5)
    params = dict(gamma_A=1e-13, gamma_I=1.0, nu1=nu[0], nu2=nu[1], sigma=20.0)
    mixed, double = MLMRRW(**params).fit(X, Y), MLMRRW(precision="double", **params).fit(X, Y)
    assert mixed.solver_report_["precision"] == "double"
    assert (mixed.solver_report_["refinement_steps"] > 0) == (
        nu[0] != nu[1]
    )  # no float32 Cholesky when ν1 = ν2
    assert double.solver_report_["precision"] == "double" and double.solver_report_["refinement_steps"] == 0
    np.testing.assert_array_equal(mixed.dual_coef_, double.dual_coef_)


@pytest.mark.parametrize("nu2", [0.1, 1.0])
def test_mixed_precision_is_as_accurate_as_double_on_an_ill_conditioned_system(nu2, monkeypatch):
    """cond(Eq. 19) ≈ 1e9 (γ_A = 1e-9): refinement takes several corrections, and the result is
    as close to the true solution (float64 LU refined with residuals in extended precision) as
    the float64 factorisation's, within a factor 10, for the LU and the Cholesky path alike
    (ν2 = 1, made to apply from 0 rows)."""
    monkeypatch.setattr(manifold, "_CHOLESKY_MIN_ROWS", 0)
    X, Y, _ = _problem(seed=5)
    params = dict(gamma_A=1e-9, gamma_I=1.0, nu1=1.0, nu2=nu2, sigma=5.0)
    mixed, double = MLMRRW(**params).fit(X, Y), MLMRRW(precision="double", **params).fit(X, Y)
    assert mixed.solver_report_["precision"] == "mixed" and mixed.solver_report_["refinement_steps"] > 2
    Xs = _standardise(mixed, X)
    K = np.exp(-((Xs[:, None] - Xs[None]) ** 2).sum(-1) / (2 * mixed.sigma_**2))
    lab = (Y != -1).all(axis=1)
    n, l = len(X), lab.sum()
    xi = np.where(lab, 1.0, nu2)
    L = laplacian(mixed.graph_).toarray()
    A = (np.diag(lab * 1.0) + l / n**2 * L) @ K * xi + l * 1e-9 * np.eye(n)
    b = np.where(lab[:, None], 2.0 * Y - 1, 0.0)
    assert np.linalg.cond(A) > 1e8
    lu = scipy.linalg.lu_factor(A)
    x = scipy.linalg.lu_solve(lu, b)
    for _ in range(10):
        r = b.astype(np.longdouble) - A.astype(np.longdouble) @ x.astype(np.longdouble)
        x = x + scipy.linalg.lu_solve(lu, r.astype(np.float64))
    truth = xi[:, None] * x
    error = lambda est: np.abs(est.dual_coef_ - truth).max() / np.abs(truth).max()
    assert error(mixed) <= 10 * error(double) + 1e-14


def test_test_kernel_in_blocks_equals_one_block(monkeypatch):
    X, Y, X_test = _problem(seed=7)
    est = MLMRRW(sigma=2.0).fit(X, Y)
    whole = est.decision_function(X_test)
    monkeypatch.setattr(manifold, "_KERNEL_BLOCK", 2 * len(X))  # two test rows per block
    np.testing.assert_allclose(est.decision_function(X_test), whole, rtol=1e-13, atol=1e-15)


def test_nystrom_with_every_point_a_landmark_is_exact():
    """K̃ = K when the landmarks are all n points and K has full numerical rank (narrow σ):
    the Woodbury solve must then reproduce the LU solution."""
    X, Y, X_test = _problem(n=80, seed=8)
    params = dict(gamma_A=0.02, gamma_I=5.0, nu1=1.0, nu2=0.2, sigma=1.0)
    exact = MLMRRW(**params).fit(X, Y)
    nys = MLMRRW(solver="nystrom", n_landmarks=500, **params).fit(X, Y)
    assert nys.solver_report_["n_landmarks"] == 80 and nys.solver_report_["rank"] == 80
    assert abs(nys.solver_report_["kernel_trace_error"]) < 1e-10
    assert nys.solver_report_["residual"] < 1e-8
    np.testing.assert_allclose(
        nys.decision_function(X_test), exact.decision_function(X_test), rtol=1e-7, atol=1e-9
    )


@pytest.mark.parametrize("landmarks", ["kmeans", "random"])
def test_nystrom_is_the_exact_solution_for_the_nystrom_kernel(landmarks):
    """With m < n landmarks the model is Eq. 19–20 with K̃ = K_nm K_mm⁻¹ K_mn in place of K,
    solved here densely by scipy (no Woodbury), and K̃_e = K_em K_mm⁻¹ K_mn for test points."""
    X, Y, X_test = _problem(n=90, seed=9)
    est = MLMRRW(
        gamma_A=0.02,
        gamma_I=5.0,
        nu1=1.0,
        nu2=0.3,
        sigma=3.0,
        solver="nystrom",
        n_landmarks=30,
        random_state=4,
        landmarks=landmarks,
    ).fit(X, Y)
    Xs, Xt, P = _standardise(est, X), _standardise(est, X_test), est.X_fit_
    assert len(P) == 30
    k = lambda A, B: np.exp(-((A[:, None, :] - B[None, :, :]) ** 2).sum(-1) / (2 * est.sigma_**2))
    Kmm_pinv = np.linalg.pinv(k(P, P), rcond=1e-10, hermitian=True)
    K, Ke = k(Xs, P) @ Kmm_pinv @ k(P, Xs), k(Xt, P) @ Kmm_pinv @ k(P, Xs)
    L = laplacian(est.graph_).toarray()
    lab = (Y != -1).all(axis=1)
    n, l = len(X), lab.sum()
    Xi = np.diag(np.where(lab, 1.0, 0.3))
    A = np.diag(lab * 1.0) @ K @ Xi + l * 0.02 * np.eye(n) + l * 5.0 / n**2 * L @ K @ Xi
    theta = scipy.linalg.solve(A, np.where(lab[:, None], 2.0 * Y - 1, 0.0))
    np.testing.assert_allclose(est.decision_function(X_test), Ke @ Xi @ theta, rtol=1e-6, atol=1e-8)
    assert 0 < est.solver_report_["kernel_trace_error"] < 1


def test_nystrom_landmarks_are_kmeans_centres_or_training_points():
    """``landmarks="kmeans"``: the centres of scikit-learn's k-means of the standardised training
    points from k-means++ seeds (same seed, same centres); ``"random"``: distinct training
    points."""
    from sklearn.cluster import KMeans, kmeans_plusplus

    X, Y, _ = _problem(n=90, seed=10)
    params = dict(solver="nystrom", n_landmarks=12, random_state=3)
    est = MLMRRW(**params).fit(X, Y)
    Xs = _standardise(est, X)
    seeds, _ = kmeans_plusplus(Xs, 12, n_local_trials=1, random_state=3)
    centres = KMeans(12, init=seeds, n_init=1, max_iter=manifold._KMEANS_ITER).fit(Xs).cluster_centers_
    np.testing.assert_array_equal(est.X_fit_, centres)
    drawn = MLMRRW(**params, landmarks="random").fit(X, Y).X_fit_
    assert len(np.unique(drawn, axis=0)) == 12
    assert (np.abs(Xs[:, None, :] - drawn[None]).max(axis=2) == 0).any(axis=0).all()


def test_kmeans_landmarks_approximate_a_clustered_kernel_better_than_random_points():
    """Five tight clusters and five landmarks: the k-means centres cover every cluster (D²
    seeding), where a random draw of five points leaves some cluster without one (kernel trace
    error)."""
    rng = np.random.default_rng(0)
    centres = 10.0 * rng.normal(size=(5, 4))
    X = np.repeat(centres, 40, axis=0) + 0.1 * rng.normal(size=(200, 4))
    Y = (X[:, :2] > 0).astype(np.int8)
    Y[::2] = -1
    errors = {
        rule: MLMRRW(solver="nystrom", n_landmarks=5, sigma=1.0, landmarks=rule)
        .fit(X, Y)
        .solver_report_["kernel_trace_error"]
        for rule in ("kmeans", "random")
    }
    assert errors["kmeans"] < 0.05 < errors["random"]


def test_median_heuristic_sigma_and_scale():
    X, Y, _ = _problem(seed=4)
    base = MLMRRW().fit(X, Y).sigma_
    assert base > 0
    assert MLMRRW(sigma_scale=2.0).fit(X, Y).sigma_ == pytest.approx(2 * base)


def test_same_seed_same_numbers_and_clone():
    X, Y, X_test = _problem(seed=5)
    est = MLMRRW(graph="bmatching", b=4)
    a = clone(est).fit(X, Y).decision_function(X_test)
    b = clone(est).fit(X, Y).decision_function(X_test)
    np.testing.assert_array_equal(a, b)
    assert clone(est).get_params()["nu2"] == 0.1


@pytest.mark.parametrize(
    "params, name",
    [
        ({"nu2": -0.1}, "nu2"),
        ({"nu1": 0.0}, "nu1"),
        ({"sigma": 0.0}, "sigma"),
        ({"sigma": -1.0}, "sigma"),
        ({"gamma_A": 0.0}, "gamma_A"),
        ({"gamma_I": -1.0}, "gamma_I"),
        ({"graph": "full"}, "graph"),
        ({"weights": "cosine"}, "weights"),
        ({"solver": "cg"}, "solver"),
        ({"n_landmarks": 0}, "n_landmarks"),
        ({"landmarks": "grid"}, "landmarks"),
    ],
)
def test_bad_parameters_are_named(params, name):
    X, Y, _ = _problem()
    with pytest.raises(ValueError, match=name):
        MLMRRW(**params).fit(X, Y)


def test_k_not_below_n_is_rejected():
    X, Y, _ = _problem(n=30)
    with pytest.raises(ValueError, match="k"):
        MLMRRW(k=30).fit(X, Y)


def test_bad_inputs():
    X, Y, _ = _problem()
    with pytest.raises(ValueError, match="no labelled"):
        MLMRRW().fit(X, np.full_like(Y, -1))
    X_nan = X.copy()
    X_nan[3, 1] = np.nan
    with pytest.raises(ValueError, match="NaN|infinity"):
        MLMRRW().fit(X_nan, Y)
    with pytest.raises(ValueError, match="0/1"):
        MLMRRW().fit(X, np.where(Y == 1, 2, Y))


def test_sparse_features_equal_dense_and_constant_features_drop_out():
    import scipy.sparse as sp

    X, Y, X_test = _problem(seed=6)
    X = np.hstack([X, np.ones((len(X), 1))])  # constant on the training set
    X_test = np.hstack([X_test, np.arange(len(X_test))[:, None]])  # varies on test points
    dense = MLMRRW(sigma=2.0).fit(X, Y)
    sparse = MLMRRW(sigma=2.0).fit(sp.csr_matrix(X), Y)
    np.testing.assert_allclose(
        dense.decision_function(X_test), sparse.decision_function(sp.csr_matrix(X_test)), rtol=1e-12
    )
    reduced = MLMRRW(sigma=2.0).fit(X[:, :-1], Y)
    np.testing.assert_allclose(
        dense.decision_function(X_test), reduced.decision_function(X_test[:, :-1]), rtol=1e-10
    )


def test_label_values_are_checked_before_casting():
    X, Y, _ = _problem()
    with pytest.raises(ValueError, match="0/1|Unknown label type"):
        MLMRRW().fit(X, np.where(Y == 1, 0.5, Y))


def test_kept_buffers_give_the_same_fits_and_are_reused():
    """Within kernels.kept_buffers (a job's trials) the n×n buffers of one fit serve the next of
    the same size: the same numbers as fresh buffers, and a new buffer for a new size."""
    from mlgraph.graphs import kernels

    (X, Y, X_test), (X2, Y2, X2_test) = _problem(n=80, seed=11), _problem(n=60, seed=12)
    fresh = [MLMRRW().fit(X, Y).decision_function(X_test), MLMRRW().fit(X2, Y2).decision_function(X2_test)]
    with kernels.kept_buffers():
        first = MLMRRW().fit(X, Y).decision_function(X_test)
        kept = kernels._kept["kernel"], kernels._kept["system"]
        again = MLMRRW().fit(X, Y).decision_function(X_test)
        assert kernels._kept["kernel"] is kept[0] and kernels._kept["system"] is kept[1]
        other = MLMRRW().fit(X2, Y2).decision_function(X2_test)
        assert kernels._kept["kernel"].shape == (60, 60)
    assert kernels._kept is None
    for scores in (first, again):
        np.testing.assert_array_equal(scores, fresh[0])
    np.testing.assert_array_equal(other, fresh[1])
