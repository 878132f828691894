"""ML² (paper 002): LLE weights (Eq. 2), the label-manifold QP (Eq. 3–4), the IRWLS regressor
(Eq. 5–12), the toy experiment and the estimator."""

import os

import numpy as np
import pytest
import scipy.linalg
import scipy.sparse as sp
import scipy.sparse.linalg
from scipy.optimize import minimize
from sklearn.base import clone
from threadpoolctl import threadpool_limits

import mlgraph.methods.label_manifold as label_manifold_module
from mlgraph.data import load_dataset
from mlgraph.engine.toy import plot_toy, toy_experiment
from mlgraph.evaluation.metrics import average_precision, hamming_loss
from mlgraph.evaluation.protocols import labelling_rate_trials
from mlgraph.graphs import squared_distances
from mlgraph.methods.label_manifold import ML2, label_manifold, lle_weights, sign_msvr, sign_msvr_objective


@pytest.fixture(autouse=True, scope="module")
def _one_blas_thread():
    """Small dense solves: BLAS threads only add contention on a shared machine."""
    with threadpool_limits(limits=1):
        yield


def _rbf(X, gamma=0.5):
    return np.exp(-gamma * squared_distances(X))


def _multilabel(n=120, d=5, q=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    Y = (X[:, :q] + 0.5 * X[:, 1 : q + 1] + 0.3 * rng.normal(size=(n, q)) > 0.3).astype(np.int8)
    return X, Y


# ---------------------------------------------------------------- Eq. 2: LLE weights
def test_lle_rows_sum_to_one_on_the_k_nearest_neighbours():
    X = np.random.default_rng(0).normal(size=(40, 4))
    W = lle_weights(X, 6)
    np.testing.assert_allclose(np.asarray(W.sum(axis=1)).ravel(), 1.0, atol=1e-12)
    assert W.diagonal().max() == 0
    D = squared_distances(X)
    np.fill_diagonal(D, np.inf)
    expected = np.sort(np.argsort(D, axis=1)[:, :6], axis=1)
    np.testing.assert_array_equal(W.indices.reshape(40, 6), expected)


def test_lle_reconstructs_a_point_in_the_affine_span_of_its_neighbours():
    rng = np.random.default_rng(1)
    plane = rng.normal(size=(30, 2)) @ rng.normal(size=(2, 5)) + rng.normal(size=5)  # 2-D affine plane in R^5
    W = lle_weights(plane, 3, reg=1e-12)
    assert np.abs(W @ plane - plane).max() < 1e-6
    # The ridge is what makes the Gram matrix (singular here) solvable; a large one blurs the fit.
    assert np.abs(lle_weights(plane, 3, reg=1.0) @ plane - plane).max() > 1e-2


def test_lle_gram_from_squared_distances_equals_the_direct_gram():
    """With sqdist the local Gram matrices come from ½(D_ij + D_ik − D_jk), not from Z Zᵀ."""
    X = np.random.default_rng(3).normal(size=(60, 8))
    W_direct, W_sqdist = lle_weights(X, 7), lle_weights(X, 7, sqdist=squared_distances(X))
    np.testing.assert_array_equal(W_direct.indices, W_sqdist.indices)
    np.testing.assert_allclose(W_sqdist.toarray(), W_direct.toarray(), rtol=0, atol=1e-12)


def test_lle_collinear_and_duplicate_neighbours_do_not_crash():
    t = np.linspace(0, 1, 12)[:, None]
    line = np.hstack([t, 2 * t, -t])  # collinear: G has rank 1 for K = 5
    X = np.vstack([line, line[:3]])  # and exact duplicates
    W = lle_weights(X, 5)
    assert np.isfinite(W.data).all()
    np.testing.assert_allclose(np.asarray(W.sum(axis=1)).ravel(), 1.0, atol=1e-12)
    assert np.abs(W @ X - X).max() < 1e-2
    with pytest.raises(ValueError, match="k must be"):
        lle_weights(X, len(X))


# ---------------------------------------------------------------- Eq. 3–4: the QP
def _qp_problem(n=40, q=3, k=4, seed=2):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    Y = (X @ rng.normal(size=(3, q)) + 0.5 * rng.normal(size=(n, q)) > 0).astype(np.int8)
    W = lle_weights(X, k)
    A = np.eye(n) - W.toarray()
    return W, Y, A.T @ A


@pytest.mark.parametrize(
    "dense_limit, solver, path",
    [
        (6000, "active-set", ["active-set", "L-BFGS-B+active-set"]),  # labels 0 and 2 cycle: fallback
        (6000, "lbfgsb", ["L-BFGS-B+active-set"]),
        (0, "active-set", ["L-BFGS-B+active-set"]),  # sparse M: the previous path
    ],
    ids=["active-set", "lbfgsb-dense-polish", "sparse-polish"],
)
def test_label_manifold_is_feasible_and_satisfies_kkt(monkeypatch, dense_limit, solver, path):
    monkeypatch.setattr(label_manifold_module, "_DENSE_QP_LIMIT", dense_limit)
    W, Y, M = _qp_problem()
    mu, info = label_manifold(W, Y, lam=1.0, solver=solver, return_info=True)
    assert {i["solver"] for i in info} == set(path)
    y = 2.0 * Y - 1
    assert (y * mu >= 1.0 - 1e-8).all()
    g = 2 * M @ mu
    scale = np.abs(g).max()
    active = y * mu <= 1.0 + 1e-9
    assert active.any(axis=0).all() and (~active).any(axis=0).all()  # a non-trivial case
    assert np.abs(g[~active]).max() < 1e-8 * scale  # stationary on free coordinates
    assert (y * g)[active].min() > -1e-8 * scale  # multipliers of active bounds ≥ 0


def _record_workers(monkeypatch) -> list:
    """Record each call of the label worker processes: (task, parts, processes)."""
    calls, original = [], label_manifold_module._in_workers

    def recording(qp, fn, parts, workers):
        calls.append((fn.__name__, len(parts), workers))
        return original(qp, fn, parts, workers)

    monkeypatch.setattr(label_manifold_module, "_in_workers", recording)
    return calls


def test_sparse_labels_in_worker_processes_equal_one_after_another(monkeypatch):
    """With a sparse M and spare BLAS threads the labels go to worker processes, which solve
    the caller's sparse QP: the same μ and solver path as one label after another under one
    thread, bit for bit."""
    from threadpoolctl import threadpool_limits

    monkeypatch.setattr(label_manifold_module, "_DENSE_QP_LIMIT", 0)
    calls = _record_workers(monkeypatch)
    W, Y, _ = _qp_problem()
    with threadpool_limits(1):
        mu, info = label_manifold(W, Y, return_info=True)
    assert calls == []
    with threadpool_limits(2):
        mu2, info2 = label_manifold(W, Y, return_info=True)
    assert calls == [("_solve_labels", min(4, Y.shape[1]), 2)]
    assert [i["solver"] for i in info2] == [i["solver"] for i in info] == ["L-BFGS-B+active-set"] * Y.shape[1]
    np.testing.assert_array_equal(mu2, mu)


def test_dense_labels_in_worker_processes_equal_all_at_once(monkeypatch):
    """With a dense M, enough work and spare BLAS threads the active-set iterations run on
    interleaved parts of the labels in worker processes (sharing the caller's M and lifted
    inverse): the same exact KKT points as all labels at once in the caller, and small problems
    stay there."""
    from threadpoolctl import threadpool_limits

    calls = _record_workers(monkeypatch)
    W, Y, _ = _qp_problem(n=80, q=5, k=8, seed=1)
    with threadpool_limits(2):
        mu, info = label_manifold(W, Y, return_info=True)  # 80 × 5 is below _SPLIT_WORK
        assert calls == []
        monkeypatch.setattr(label_manifold_module, "_SPLIT_WORK", 0)
        mu2, info2 = label_manifold(W, Y, return_info=True)
    assert calls == [("_pdas_labels", 2, 2)]
    assert [i["solver"] for i in info2] == [i["solver"] for i in info] == ["active-set"] * 5
    assert [i["active_set_iterations"] for i in info2] == [i["active_set_iterations"] for i in info]
    assert max(i["kkt"] for i in info2) < 1e-12
    np.testing.assert_allclose(mu2, mu, rtol=1e-12, atol=1e-12)  # |μ| up to ~20: rounding


def test_spawned_label_workers_receive_the_qp(monkeypatch):
    """Where fork is not used (macOS, Windows) the workers are spawned and receive the QP
    pickled: the same μ as the forked ones."""
    from threadpoolctl import threadpool_limits

    import mlgraph.processes.workers as workers_module

    monkeypatch.setattr(label_manifold_module, "_SPLIT_WORK", 0)
    W, Y, _ = _qp_problem(n=80, q=4, k=8, seed=3)
    with threadpool_limits(2):
        forked = label_manifold(W, Y)
        monkeypatch.setattr(workers_module, "FORK", False)
        spawned = label_manifold(W, Y)
    np.testing.assert_array_equal(spawned, forked)


def test_label_workers_die_with_an_interrupted_caller():
    """An exception in the caller while its label workers run (here SIGALRM's, standing for
    Ctrl-C or SIGTERM) kills them at once instead of waiting for their labels, and a worker
    that dies surfaces as an error, not a hang."""
    import multiprocessing
    import signal
    import time
    from concurrent.futures.process import BrokenProcessPool

    class Alarm(Exception):
        pass

    def ring(signum, frame):
        raise Alarm

    qp = label_manifold_module._QP(_qp_problem(n=30, q=2, k=4)[0], 1.0)
    previous = signal.signal(signal.SIGALRM, ring)
    start = time.monotonic()
    try:
        signal.alarm(2)
        with pytest.raises(Alarm):
            label_manifold_module._in_workers(qp, time.sleep, [120.0, 120.0], 2)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    assert time.monotonic() - start < 60 and multiprocessing.active_children() == []
    with pytest.raises(BrokenProcessPool):
        label_manifold_module._in_workers(qp, os._exit, [3], 1)


@pytest.mark.parametrize("seed", range(4))
def test_active_set_solver_equals_the_previous_path(seed):
    """The batched active-set iterations and the previous per-label path (L-BFGS-B, polish)
    reach the same optimum: μ equal to the tolerance of the KKT test, exact KKT points."""
    W, Y, _ = _qp_problem(n=80, q=5, k=8, seed=seed)
    mu, info = label_manifold(W, Y, return_info=True)
    ref, ref_info = label_manifold(W, Y, solver="lbfgsb", return_info=True)
    assert all(i["kkt"] < 1e-12 for i in info)
    # A near-degenerate label may cycle and take the fallback (seed 3's label 2 does on an AMD
    # EPYC's OpenBLAS kernels, not on the machine of earlier runs): the exception, never the rule.
    solved = [i for i in info if i["solver"] == "active-set"]
    assert len(solved) >= 4 and all(i["active_set_iterations"] >= 2 for i in solved)
    assert all(i["solver"] in ("active-set", "L-BFGS-B+active-set") for i in info)
    np.testing.assert_allclose(mu, ref, atol=1e-9)
    np.testing.assert_allclose([i["objective"] for i in info], [i["objective"] for i in ref_info], rtol=1e-10)


@pytest.mark.parametrize("seed", range(4))
def test_single_precision_first_iterations_reach_the_exact_optimum(monkeypatch, seed):
    """Cold-started iterations steer the active set in float32 first (forced here on small
    problems): the labels still end at exact KKT points, the optimum of the previous path."""
    monkeypatch.setattr(label_manifold_module, "_ROUGH_MIN", 0)
    monkeypatch.setattr(label_manifold_module, "_ROUGH_CHANGES", 0.0)  # as long as the set changes
    W, Y, _ = _qp_problem(n=80, q=5, k=8, seed=seed)
    y = 2.0 * Y - 1
    qp = label_manifold_module._QP(W, 1.0)
    solves = []
    solve_free = label_manifold_module._QP.solve_free
    monkeypatch.setattr(
        label_manifold_module._QP,
        "solve_free",
        lambda self, free, rhs, x0, rough=None: (
            solves.append(rough.copy()) or solve_free(self, free, rhs, x0, rough)
        ),
    )
    mu, _ = label_manifold_module._pdas(qp, y, y.copy(), cold=True)
    assert solves[0].all() and not solves[-1].any()  # float32 first, exact last
    assert {"Md", "P"} & set(qp._single)
    done = np.isfinite(mu).all(axis=0)
    assert done.sum() >= 4
    kkt = label_manifold_module._kkt_violation(qp.M, y[:, done], 1.0, mu[:, done])
    assert kkt.max() < 1e-12
    ref = label_manifold(W, Y, solver="lbfgsb")
    np.testing.assert_allclose(mu[:, done], ref[:, done], atol=1e-9)


def test_a_cycling_label_falls_back_to_the_previous_path():
    """Active-set iterations need not converge on a PSD M that is not an M-matrix: on this
    ill-conditioned problem (K = 4, λ_2(M) ≈ 2e-7) they revisit an active set for labels 0 and
    2; those labels are solved by L-BFGS-B and the polish instead, and end at KKT points."""
    W, Y, _ = _qp_problem()
    y = 2.0 * Y - 1
    qp = label_manifold_module._QP(W, 1.0)
    exact, _ = label_manifold_module._pdas(qp, y, y.copy())
    np.testing.assert_array_equal(np.isfinite(exact).all(axis=0), [False, True, False])
    mu, info = label_manifold(W, Y, return_info=True)
    assert [i["solver"] for i in info] == ["L-BFGS-B+active-set", "active-set", "L-BFGS-B+active-set"]
    assert max(i["kkt"] for i in info) < 1e-12
    np.testing.assert_allclose(mu[:, 1], exact[:, 1], rtol=0, atol=0)


def test_a_failed_factorisation_falls_back_to_the_previous_path(monkeypatch):
    """A P_AA that is not numerically positive definite: its labels leave the active-set
    iterations (and, as the polish fails the same way, end with the exact NNLS) at KKT points."""
    W, Y, _ = _qp_problem(n=80, q=3, k=8, seed=1)
    ref = label_manifold(W, Y)

    def fail(self, free, rhs, rough=False):
        raise np.linalg.LinAlgError("not positive definite")

    monkeypatch.setattr(label_manifold_module._QP, "_solve_free_schur", fail)
    mu, info = label_manifold(W, Y, return_info=True)
    assert all(i["solver"] == "NNLS" and i["kkt"] < 1e-12 for i in info)
    np.testing.assert_allclose(mu, ref, rtol=0, atol=1e-9)


@pytest.mark.parametrize("active_share", [0.2, 0.7], ids=["schur-through-inverse", "cholesky-of-M_FF"])
def test_free_block_solves_match_a_dense_solve(active_share):
    """Both branches of _QP.solve_free, several labels at once: few active points go through
    P = (M + c11ᵀ)⁻¹ and the block-inverse identity, many through a Cholesky of M_FF."""
    W, _, M = _qp_problem(n=90, k=6, seed=5)
    qp = label_manifold_module._QP(W, 1.0)
    P, c = qp.inverse()
    np.testing.assert_allclose(P @ (M + c), np.eye(90), atol=1e-8)
    rng = np.random.default_rng(0)
    free = rng.random((90, 3)) > active_share
    rhs = np.where(free, rng.normal(size=(90, 3)), 0.0)
    x, good = qp.solve_free(free, rhs, np.zeros_like(rhs))
    assert good.all()
    for k in range(3):
        f = free[:, k]
        Mff = M[np.ix_(f, f)]
        assert (
            np.abs(Mff @ x[f, k] - rhs[f, k]).max() < 1e-13 * np.abs(Mff).sum(axis=1).max() * np.abs(x).max()
        )
        np.testing.assert_allclose(x[f, k], np.linalg.solve(Mff, rhs[f, k]), rtol=1e-8)
        assert (x[~f, k] == 0).all()


def test_active_set_solver_on_a_yeast_half():
    """Real weights (yeast half, K = 15): the same μ as the previous path, every label exact."""
    data = load_dataset("yeast", "yeast.arff.gz", "yeast.xml")
    train = labelling_rate_trials(data.n_samples, rates=[1.0], repeats=1, seed=0, test_size=0.5)[0].train
    X = (data.X[train] - data.X[train].mean(axis=0)) / data.X[train].std(axis=0)
    W = lle_weights(X, data.n_labels + 1)
    Y = data.Y[train][:, :6]
    mu, info = label_manifold(W, Y, return_info=True)
    ref = label_manifold(W, Y, solver="lbfgsb")
    assert all(i["solver"] == "active-set" and i["kkt"] < 1e-12 for i in info)
    np.testing.assert_allclose(mu, ref, atol=1e-9)


@pytest.mark.parametrize("cg_maxiter", [5000, 1], ids=["cg", "lu-fallback"])
def test_sparse_polish_by_cg_or_its_lu_fallback_is_exact(monkeypatch, cg_maxiter):
    monkeypatch.setattr(label_manifold_module, "_DENSE_QP_LIMIT", 0)
    monkeypatch.setattr(label_manifold_module, "_CG_MAXITER", cg_maxiter)
    W, Y, M = _qp_problem(n=60, q=2, k=5, seed=4)
    free = np.arange(60) % 3 > 0
    rhs = np.random.default_rng(0).normal(size=free.sum())
    lu_calls = []
    splu = scipy.sparse.linalg.splu
    monkeypatch.setattr(scipy.sparse.linalg, "splu", lambda A: lu_calls.append(A.shape) or splu(A))
    At = sp.csr_matrix((sp.identity(60) - W).T)
    x = label_manifold_module._solve_free_sparse(At[free], rhs, np.zeros(free.sum()), atol=1e-12)
    assert np.allclose(x, np.linalg.solve(M[np.ix_(free, free)], rhs), rtol=1e-9, atol=1e-9)
    assert len(lu_calls) == (cg_maxiter == 1)  # one CG product cannot: the LU answers
    mu, info = label_manifold(W, Y, lam=1.0, return_info=True)
    assert all(i["kkt"] <= 1e-8 and i["solver"] == "L-BFGS-B+active-set" for i in info)


def test_label_manifold_matches_an_independent_dense_solver():
    W, Y, M = _qp_problem(n=14, q=2, k=3, seed=3)
    mu = label_manifold(W, Y)
    for j in range(Y.shape[1]):
        y = 2.0 * Y[:, j] - 1
        bounds = [(1.0, None) if s > 0 else (None, -1.0) for s in y]
        ref = minimize(
            lambda m: m @ M @ m,
            y,
            jac=lambda m: 2 * M @ m,
            method="SLSQP",
            bounds=bounds,
            options={"ftol": 1e-14, "maxiter": 1000},
        )
        assert ref.success
        ours, theirs = mu[:, j] @ M @ mu[:, j], ref.fun
        assert ours <= theirs + 1e-10
        assert theirs <= ours * (1 + 1e-6) + 1e-10
        np.testing.assert_allclose(mu[:, j], ref.x, atol=1e-4)


def test_label_manifold_rejects_an_unknown_solver():
    W, Y, _ = _qp_problem()
    with pytest.raises(ValueError, match="solver"):
        label_manifold(W, Y, solver="osqp")


def test_label_manifold_scales_with_lambda_and_handles_constant_labels():
    W, Y, _ = _qp_problem(seed=4)
    Y = np.column_stack([Y, np.ones(len(Y), np.int8), np.zeros(len(Y), np.int8)])
    mu1, mu3 = label_manifold(W, Y, lam=1.0), label_manifold(W, 2 * Y - 1, lam=3.0)  # 0/1 or ±1 labels
    np.testing.assert_allclose(mu3, 3 * mu1, rtol=1e-7, atol=1e-9)
    np.testing.assert_array_equal(mu1[:, -2:], np.column_stack([np.ones(len(Y)), -np.ones(len(Y))]))


# ---------------------------------------------------------------- Eq. 5–12: IRWLS
def test_irwls_objective_is_non_increasing_and_consistent():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(50, 4))
    Y = (X[:, :3] + 0.8 * rng.normal(size=(50, 3)) > 0).astype(np.int8)  # noisy: hinge is active
    U = (2.0 * Y - 1) * (1 + rng.exponential(size=Y.shape))
    K = _rbf(X)
    res = sign_msvr(K, U, Y, C1=1.0, C2=10.0, epsilon=2.0, tol=0.0, max_iter=40)
    assert res.n_iter >= 5 and len(res.objective) == res.n_iter + 1
    F = K @ res.coef + res.intercept
    assert (np.linalg.norm(U - F, axis=1) < 2.0).sum() >= 5  # points inside the ε-tube (β_N ≠ 0 rows)
    assert (np.diff(res.objective) <= 0).all()
    assert res.objective[-1] < 0.5 * res.objective[0]
    np.testing.assert_allclose(
        res.objective[-1], sign_msvr_objective(K, U, Y, res.coef, res.intercept, epsilon=2.0), rtol=1e-10
    )
    np.testing.assert_allclose(res.coef.sum(axis=0), 0.0, atol=1e-8)  # optimality in b (Eq. 12, 2nd row)


def test_irwls_reusing_a_factor_gives_the_iterates_of_a_factorisation_per_iteration(monkeypatch):
    """Iterations with the support vectors of the last factorisation solve Eq. 12 by CG
    preconditioned with that factor; the iterates equal those of a new Cholesky factorisation
    at every iteration (the previous code, ``_CG_MIN_STEPS`` out of reach) to 1e-12."""
    rng = np.random.default_rng(5)
    X = rng.normal(size=(400, 4))
    Y = (X[:, :2] + 0.8 * rng.normal(size=(400, 2)) > 0).astype(np.int8)
    U, K = (2.0 * Y - 1) * (1 + rng.exponential(size=Y.shape)), _rbf(X)
    factorisations = []
    cho_factor = scipy.linalg.cho_factor
    monkeypatch.setattr(
        scipy.linalg, "cho_factor", lambda *a, **k: factorisations.append(1) or cho_factor(*a, **k)
    )
    res = sign_msvr(K, U, Y, tol=1e-8)
    reused = res.n_iter - len(factorisations)
    monkeypatch.setattr(label_manifold_module, "_CG_MIN_STEPS", 10**9)
    ref = sign_msvr(K, U, Y, tol=1e-8)
    assert (
        res.n_iter == ref.n_iter > 50 and reused > res.n_iter // 3
    )  # measured: 84 iterations, 36 factorisations
    np.testing.assert_allclose(res.coef, ref.coef, rtol=0, atol=1e-12 * np.abs(ref.coef).max())
    np.testing.assert_allclose(res.intercept, ref.intercept, rtol=0, atol=1e-12)
    np.testing.assert_allclose(res.objective, ref.objective, rtol=1e-12)


def test_sparse_qp_path_runs_on_one_blas_thread(monkeypatch):
    """Sparse M (above the dense limit): the per-label solves run with one BLAS thread whatever
    the caller allows, in the caller's process (one thread) or in a worker (_solve_labels)."""
    from threadpoolctl import threadpool_info

    seen = []
    solve = label_manifold_module._QP.solve

    def recording(self, y):
        seen.append(max(lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"))
        return solve(self, y)

    monkeypatch.setattr(label_manifold_module._QP, "solve", recording)
    monkeypatch.setattr(label_manifold_module, "_DENSE_QP_LIMIT", 0)
    W, Y, _ = _qp_problem(n=60, q=2, k=5, seed=4)
    with threadpool_limits(limits=1):
        label_manifold(W, Y)
    monkeypatch.setattr(label_manifold_module, "_WORKER_QP", label_manifold_module._QP(W, 1.0, dense=False))
    with threadpool_limits(limits=2):
        label_manifold_module._solve_labels(2.0 * Y - 1.0)
    assert seen == [1, 1, 1, 1]


def test_irwls_is_at_least_as_good_as_a_generic_optimiser():
    """Eq. 5 minimised directly by L-BFGS-B over (β, b) with its (sub)gradient, from a small
    random start (at β = 0 every hinge sits on its kink): IRWLS must do as well."""
    rng = np.random.default_rng(10)
    X = rng.normal(size=(40, 3))
    Y = (X[:, :3] + 0.8 * rng.normal(size=(40, 3)) > 0).astype(np.int8)
    U, y = (2.0 * Y - 1) * (1 + rng.exponential(size=Y.shape)), 2.0 * Y - 1
    K, (n, q), eps, C2 = _rbf(X), Y.shape, 0.1, 10.0
    res = sign_msvr(K, U, Y, C1=1.0, C2=C2, epsilon=eps, tol=1e-10, max_iter=300)

    def objective(v):
        B, b = v[: n * q].reshape(n, q), v[n * q :]
        KB = K @ B
        F = KB + b
        E = U - F
        r = np.linalg.norm(E, axis=1)
        over = np.maximum(r - eps, 0)
        dF = -2 * (over / np.where(r > 0, r, 1))[:, None] * E - C2 * y * (y * F <= 0)
        value = 0.5 * (B * KB).sum() + over @ over + C2 * np.maximum(-y * F, 0).sum()
        return value, np.concatenate([(KB + K @ dF).ravel(), dF.sum(axis=0)])

    ref = minimize(
        objective,
        0.1 * rng.normal(size=n * q + q),
        jac=True,
        method="L-BFGS-B",
        options={"maxiter": 5000, "ftol": 1e-15, "gtol": 1e-12},
    )
    assert ref.nit > 50
    assert res.objective[-1] <= ref.fun * (1 + 1e-9)


def test_irwls_without_hinge_and_epsilon_is_kernel_ridge_with_bias():
    """C2 = 0 and ε = 0: L = ½ tr βᵀKβ + C1 Σ‖μ_i − f_i‖², minimised by
    (K + I/(2 C1)) β + 1 bᵀ = U, 1ᵀβ = 0."""
    rng = np.random.default_rng(6)
    X, U = rng.normal(size=(30, 3)), rng.normal(size=(30, 2))
    K, C1 = _rbf(X), 0.7
    res = sign_msvr(K, U, U > 0, C1=C1, C2=0.0, epsilon=0.0, tol=1e-12)
    n = len(X)
    A = np.block([[K + np.eye(n) / (2 * C1), np.ones((n, 1))], [np.ones((1, n)), np.zeros((1, 1))]])
    sol = np.linalg.solve(A, np.vstack([U, np.zeros((1, 2))]))
    np.testing.assert_allclose(res.coef, sol[:-1], atol=1e-9)
    np.testing.assert_allclose(res.intercept, sol[-1], atol=1e-9)


# ---------------------------------------------------------------- toy experiment (Fig. 3)
def test_toy_experiment_recovers_the_numerical_labels(tmp_path):
    result = toy_experiment()
    assert result.X.shape == (625, 3) and result.mu.shape == result.mu_true.shape == (625, 2)
    assert (result.correlation > 0.99).all()  # measured 0.99995 and 0.9984
    assert ((result.mu > 0) == (result.mu_true > 0)).all()
    plot_toy(result, tmp_path / "toy.png")
    assert (tmp_path / "toy.png").stat().st_size > 10_000


# ---------------------------------------------------------------- estimator
def test_ml2_beats_the_label_prior():
    X, Y = _multilabel(n=240, seed=7)
    Xtr, Ytr, Xte, Yte = X[:160], Y[:160], X[160:], Y[160:]
    est = ML2().fit(Xtr, Ytr)
    assert est.n_neighbors_ == Y.shape[1] + 1 and est.mu_.shape == Ytr.shape
    assert ((est.mu_ > 0) == Ytr.astype(bool)).all()
    scores, pred = est.decision_function(Xte), est.predict(Xte)
    assert pred.dtype == np.int8 and set(np.unique(pred)) <= {0, 1}
    prior = np.tile(Ytr.mean(axis=0), (len(Xte), 1))
    assert average_precision(Yte, scores) > average_precision(Yte, prior) + 0.1
    assert hamming_loss(Yte, pred) < hamming_loss(Yte, (prior > 0.5).astype(np.int8)) - 0.05


@pytest.mark.parametrize(
    "name, value",
    [
        ("n_neighbors", 0),
        ("lam", 0.0),
        ("C1", -1.0),
        ("C2", -1.0),
        ("epsilon", -0.1),
        ("kernel", "poly"),
        ("gamma", 0.0),
        ("gamma", "auto"),
        ("max_iter", 0),
        ("tol", -1e-3),
        ("reg", 0.0),
        ("lam", np.nan),
        ("n_neighbors", 30),
    ],
)
def test_bad_parameters_raise_naming_the_parameter(name, value):
    X, Y = _multilabel(n=30)
    with pytest.raises(ValueError, match=name):
        ML2(**{name: value}).fit(X, Y)


def test_ml2_is_deterministic_and_ignores_unlabelled_rows():
    X, Y = _multilabel(n=90, seed=8)
    Xte = np.random.default_rng(9).normal(size=(20, X.shape[1]))
    a = ML2(gamma="scale").fit(X[:60], Y[:60]).decision_function(Xte)
    b = clone(ML2(gamma="scale")).fit(X[:60], Y[:60]).decision_function(Xte)
    np.testing.assert_array_equal(a, b)
    Y_semi = Y.copy()
    Y_semi[60:] = -1
    c = ML2(gamma="scale").fit(X, Y_semi).decision_function(Xte)
    np.testing.assert_allclose(a, c, rtol=1e-12, atol=1e-12)
    lin = ML2(kernel="linear").fit(sp.csr_matrix(X[:60]), Y[:60])
    assert lin.gamma_ is None and np.isfinite(lin.decision_function(Xte)).all()
