"""SSWL (Dong, Li & Zhou 2018): exact block updates (``solver="tight"``), the authors' 1e-6
block solves from 0 (``solver="authors"``), BCD monotonicity, a synthetic sanity check, the
weak-label mapping, parameter checks and determinism. The objective, its gradients and the
block normal equations are written out here independently of the estimator's whitened,
preconditioned solves."""

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.metrics import f1_score, roc_auc_score

from mlgraph.methods import weak_label
from mlgraph.methods.weak_label import SSWL, weak_label_masks


def _problem(n=240, d=6, q=4, frac=0.2, n_test=200, seed=0):
    """Linear-threshold labels; ``frac`` of the training rows labelled, the rest −1."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n + n_test, d))
    Y = (X @ rng.normal(size=(d, q)) + 0.3 * rng.normal(size=(n + n_test, q)) > 0.5).astype(np.int8)
    Y_semi = Y[:n].copy()
    Y_semi[rng.permutation(n)[int(frac * n) :]] = -1
    return X[:n], Y_semi, X[n:], Y[n:]


def _pieces(est, X, Y):
    """Design [X_s, 1], masks and dense S, built here from the fitted preprocessing."""
    A = np.hstack([(X - est.mean_) / est.scale_, np.ones((len(X), 1))])
    lab = (Y != -1).all(axis=1)
    P = np.where(lab[:, None] & (Y == 1), 1.0, 0.0)
    return A, P, 1.0 - P, est.graph_.toarray()


def _objective(A, P, U, S, W, Ws, L, a, b, z):
    F, G = A @ W, A @ Ws
    O = P * F + U * G
    return (
        np.sum((P * F - P) ** 2)
        + a * np.sum((O - S @ O @ L) ** 2)
        + b * np.sum((U * (F - G)) ** 2)
        + z * np.sum((U * G + U) ** 2)
    )


def _gradients(A, P, U, S, W, Ws, L, a, b, z):
    F, G = A @ W, A @ Ws
    O = P * F + U * G
    R = O - S @ O @ L
    back = R - S.T @ R @ L.T
    gW = 2 * A.T @ (P * (F - 1) + a * P * back + b * U * (F - G))
    gWs = 2 * A.T @ (a * U * back - b * U * (F - G) + z * U * (G + 1))
    gL = -2 * a * (S @ O).T @ R
    return gW, gWs, gL


@pytest.mark.parametrize("label_similarity", ["free", "symmetric"])
def test_each_block_update_is_the_exact_block_minimiser(label_similarity):
    X, Y, _, _ = _problem(n=120, d=4, q=3, seed=3)
    a, b, z = 1.3, 0.2, 0.15
    est = SSWL(alpha=a, beta=b, zeta=z, label_similarity=label_similarity, solver="tight")
    prob = est._problem(X, Y)
    A, P, U, S = _pieces(est, X, Y)
    rng = np.random.default_rng(0)
    p, m = A.shape[1], P.shape[1]
    W, Ws, L = rng.normal(size=(p, m)), rng.normal(size=(p, m)), np.eye(m) + 0.3 * rng.normal(size=(m, m))
    if label_similarity == "symmetric":
        L = 0.5 * (L + L.T)
    J = lambda W_, Ws_, L_: _objective(A, P, U, S, W_, Ws_, L_, a, b, z)  # noqa: E731

    Ws0, L0 = Ws, L
    W = prob.update_W(Ws0, L0)  # one sweep, in the estimator's order
    Ws = prob.update_Wstar(W, L0)
    L = prob.update_L(W, Ws, L0)
    gW = _gradients(A, P, U, S, W, Ws0, L0, a, b, z)[0]
    gWs = _gradients(A, P, U, S, W, Ws, L0, a, b, z)[1]
    gL = _gradients(A, P, U, S, W, Ws, L, a, b, z)[2]
    if label_similarity == "symmetric":
        np.testing.assert_array_equal(L, L.T)
        gL = 0.5 * (gL + gL.T)  # the gradient within the symmetric matrices
    scale = J(W, Ws0, L0)
    for g in (gW, gWs, gL):
        assert np.abs(g).max() < 1e-8 * scale

    # No perturbation of the updated block lowers the objective (the block problems are convex).
    for _ in range(5):
        dW, dL = 1e-3 * rng.normal(size=W.shape), 1e-3 * rng.normal(size=L.shape)
        if label_similarity == "symmetric":
            dL = 0.5 * (dL + dL.T)
        assert J(W + dW, Ws0, L0) > J(W, Ws0, L0)
        assert J(W, Ws + dW, L0) > J(W, Ws, L0)
        assert J(W, Ws, L + dL) > J(W, Ws, L)
    assert J(W, Ws, L) <= J(W, Ws, L0) <= J(W, Ws0, L0)


@pytest.mark.parametrize("solver, slack", [("tight", 1e-10), ("authors", 1e-8)])
def test_objective_history_is_non_increasing_and_matches_the_fitted_point(solver, slack):
    """Exact block steps never increase J (up to rounding); the authors' 1e-6 steps may miss
    each block minimiser by (residual)ᵀH⁻¹(residual), far below ``slack``."""
    X, Y, _, _ = _problem(seed=1)
    est = SSWL(tol=0.0, max_iter=15, solver=solver).fit(X, Y)
    obj = est.objective_
    assert est.n_iter_ == 15 and len(obj) == 16
    assert np.all(np.diff(obj) <= slack * obj[:-1])
    assert obj[-1] < 0.5 * obj[0]
    A, P, U, S = _pieces(est, X, Y)
    final = _objective(
        A, P, U, S, est.coef_, est.coef_star_, est.label_similarity_, est.alpha, est.beta, est.zeta
    )
    assert final == pytest.approx(obj[-1], rel=1e-10)
    # Stopping rule: with the default tol the loop ends at a small relative decrease.
    est2 = SSWL(tol=1e-3).fit(X, Y)
    assert est2.n_iter_ < 15
    assert (est2.objective_[-2] - est2.objective_[-1]) <= 1e-3 * est2.objective_[-2]


def test_beats_label_prior_baseline_with_20_percent_labelled():
    X, Y, X_test, Y_test = _problem(seed=2)
    est = SSWL().fit(X, Y)
    pred = est.predict(X_test)
    assert pred.dtype == np.int8 and set(np.unique(pred)) <= {0, 1}
    f1 = f1_score(Y_test, pred, average="micro")
    prior = (Y[(Y != -1).all(axis=1)]).mean(axis=0)
    baseline = max(
        f1_score(Y_test, np.ones_like(Y_test), average="micro"),  # all positive
        f1_score(Y_test, np.broadcast_to(prior > 0.5, Y_test.shape).astype(int), average="micro"),
        float(Y_test.mean()),  # expected F1 of sampling the prior
    )
    assert f1 > baseline + 0.08
    assert roc_auc_score(Y_test, est.decision_function(X_test), average="macro") > 0.8


def test_graph_and_label_similarity_properties():
    X, Y, _, _ = _problem(seed=4)
    est = SSWL(label_similarity="symmetric").fit(X, Y)
    S = est.graph_
    np.testing.assert_allclose(np.asarray(S.sum(axis=1)).ravel(), 1.0)  # row-stochastic
    assert S.diagonal().max() == 0 and S.min() >= 0
    assert np.diff(S.indptr).min() >= est.k  # kNN degrees
    L = est.label_similarity_
    np.testing.assert_array_equal(L, L.T)
    off = np.abs(L - np.diag(np.diag(L))).sum(axis=1)
    assert np.all(np.diag(L) > off)  # each label is mostly its own neighbour
    free = SSWL().fit(X, Y).label_similarity_  # SSWL.m: unconstrained, not symmetric
    assert np.all(np.isfinite(free)) and not np.allclose(free, free.T)


def test_weak_label_mapping_unlabelled_rows_equal_rows_without_positives():
    X, Y, X_test, _ = _problem(seed=5)
    unl = (Y == -1).all(axis=1)
    P, U = weak_label_masks(Y, ~unl)
    assert P[unl].sum() == 0 and np.all(U[unl] == 1)
    np.testing.assert_array_equal(P[~unl], Y[~unl])
    # An unlabelled row carries the same weak-label information as a row with no positives.
    Y_zero = Y.copy()
    Y_zero[unl] = 0
    a = SSWL().fit(X, Y)
    b = SSWL().fit(X, Y_zero)
    np.testing.assert_allclose(a.decision_function(X_test), b.decision_function(X_test), rtol=1e-12)


@pytest.mark.parametrize(
    "name, value",
    [
        ("alpha", -1.0),
        ("beta", 0.0),
        ("zeta", -0.1),
        ("k", 0),
        ("k", 2.5),
        ("k", 240),
        ("sigma", 0.0),
        ("max_iter", 0),
        ("tol", -1e-3),
        ("label_similarity", "sym"),
        ("solver", "loose"),
    ],
)
def test_bad_parameters_raise_naming_the_parameter(name, value):
    X, Y, _, _ = _problem(n=240)
    with pytest.raises(ValueError, match=f"parameter {name}="):
        SSWL(**{name: value}).fit(X, Y)


def test_deterministic_for_fixed_random_state():
    X, Y, X_test, _ = _problem(seed=6)
    a = SSWL(random_state=3).fit(X, Y)
    b = clone(a).fit(X, Y)
    np.testing.assert_array_equal(a.decision_function(X_test), b.decision_function(X_test))
    np.testing.assert_array_equal(a.objective_, b.objective_)
    np.testing.assert_array_equal(a.label_similarity_, b.label_similarity_)


def _dense_block_system(A, P, U, S, W_other, L, a, b, z, block):
    """(H, rhs) of the W (``block="W"``, other = W*) or W* normal equations in A's coordinates,
    assembled in the n·m space with Kronecker products: vec(AW) = (I⊗A) vec(W) and
    vec(X − S X L) = (I − Lᵀ⊗S) vec(X)."""
    vec = lambda X: X.T.ravel()  # noqa: E731 (column-wise)
    n, m = P.shape
    AI = np.kron(np.eye(m), A)
    N = np.eye(n * m) - np.kron(L.T, S)
    other = A @ W_other
    if block == "W":
        M, D, t = P, P + b * U, vec(P + b * U * other)
        fixed = vec(U * other)
    else:
        M, D, t = U, (b + z) * U, vec(-z * U + b * U * other)
        fixed = vec(P * other)
    DM = np.diag(vec(M))
    H = AI.T @ (np.diag(vec(D)) + a * DM @ N.T @ N @ DM) @ AI
    return H, AI.T @ (t - a * DM @ N.T @ N @ fixed)


def _dense_block_solution(A, P, *args):
    """Minimum-norm solution (pinv) of :func:`_dense_block_system`, p × m."""
    H, rhs = _dense_block_system(A, P, *args)
    return (np.linalg.pinv(H, rcond=1e-12) @ rhs).reshape(P.shape[1], -1).T


@pytest.mark.parametrize("woodbury", [False, True])
@pytest.mark.parametrize("case", ["regular", "duplicate_feature", "label_positive_everywhere"])
def test_block_solves_match_an_independent_dense_solve(case, woodbury, monkeypatch):
    """With ``solver="tight"`` the whitened, float32-preconditioned CG solves agree with a dense
    solve of the same normal equations to 1e-10 relative, with the W system preconditioned by its Cholesky factor or by
    Woodbury's identity; a duplicated feature (rank-deficient design) and a label that is
    positive on every row (singular W* system, dense fallback) give the minimum-norm solution."""
    monkeypatch.setattr(weak_label, "WOODBURY_SHARE", np.inf if woodbury else 0.0)
    X, Y, _, _ = _problem(n=90, d=4, q=3, seed=7)
    if case == "duplicate_feature":
        X = np.hstack([X, X[:, :1]])
    if case == "label_positive_everywhere":
        Y = np.where(Y == -1, 0, Y)  # every row labelled …
        Y[:, 0] = 1  # … and positive for label 0: U_0 = 0
    a, b, z = 1.3, 0.2, 0.15
    est = SSWL(alpha=a, beta=b, zeta=z, solver="tight")
    prob = est._problem(X, Y)
    assert (prob._woodbury is not None) == woodbury
    A = np.hstack([((X - est.mean_) / est.scale_)[:, est.active_], np.ones((len(X), 1))])
    _, P, U, S = _pieces(est, X, Y)
    rng = np.random.default_rng(1)
    p, m = A.shape[1], P.shape[1]
    L = np.eye(m) + 0.4 * rng.normal(size=(m, m))
    for _ in range(2):  # the second sweep is warm-started
        Ws = rng.normal(size=(p, m))
        W = prob.update_W(Ws, L)
        ref = _dense_block_solution(A, P, U, S, Ws, L, a, b, z, "W")
        assert np.abs(W - ref).max() <= 1e-10 * np.abs(ref).max()
        Wstar = prob.update_Wstar(W, L)
        ref = _dense_block_solution(A, P, U, S, W, L, a, b, z, "W*")
        assert np.abs(Wstar - ref).max() <= 1e-10 * np.abs(ref).max()
        L = L + 0.1 * rng.normal(size=(m, m))
    assert ("U" in prob._dense) == (case == "label_positive_everywhere")  # dense fallback used
    assert "P" not in prob._dense


@pytest.mark.parametrize("woodbury", [False, True])
@pytest.mark.parametrize("case", ["regular", "duplicate_feature", "label_positive_everywhere"])
def test_authors_block_solves_reach_a_relative_residual_of_1e_6(case, woodbury, monkeypatch):
    """``solver="authors"`` (SSWL.m's ``pcg(G, b, 1e-6, …)``): the returned W, W* and L leave a
    residual ‖b − Hx‖ ≤ 1e-6 ‖b‖ in the normal equations as assembled here independently (A's
    coordinates; L's (TᵀT) L = TᵀO with T = SO), and not the 1e-12 of the tight setting."""
    monkeypatch.setattr(weak_label, "WOODBURY_SHARE", np.inf if woodbury else 0.0)
    X, Y, _, _ = _problem(n=90, d=4, q=3, seed=7)
    if case == "duplicate_feature":
        X = np.hstack([X, X[:, :1]])
    if case == "label_positive_everywhere":
        Y = np.where(Y == -1, 0, Y)
        Y[:, 0] = 1
    a, b, z = 1.3, 0.2, 0.15
    est = SSWL(alpha=a, beta=b, zeta=z)
    prob = est._problem(X, Y)
    A = np.hstack([((X - est.mean_) / est.scale_)[:, est.active_], np.ones((len(X), 1))])
    _, P, U, S = _pieces(est, X, Y)
    rng = np.random.default_rng(1)
    p, m = A.shape[1], P.shape[1]
    L = np.eye(m) + 0.4 * rng.normal(size=(m, m))
    relative = []
    for _ in range(3):
        Ws = rng.normal(size=(p, m))
        W = prob.update_W(Ws, L)
        Wstar = prob.update_Wstar(W, L)
        for x, other, block in ((W, Ws, "W"), (Wstar, W, "W*")):
            H, rhs = _dense_block_system(A, P, U, S, other, L, a, b, z, block)
            relative.append(np.linalg.norm(rhs - H @ x.T.ravel()) / np.linalg.norm(rhs))
        L_new = prob.update_L(W, Wstar, L)
        T = S @ (P * (A @ W) + U * (A @ Wstar))
        O = P * (A @ W) + U * (A @ Wstar)
        relative.append(np.linalg.norm(T.T @ O - T.T @ T @ L_new) / np.linalg.norm(T.T @ O))
        L = L_new + 0.2 * rng.normal(size=(m, m))
    assert max(relative) <= 1e-6
    assert max(relative) > 1e-10  # stopped at the loose tolerance, not solved exactly


@pytest.mark.parametrize("solver", ["authors", "tight"])
def test_authors_solves_start_from_zero_tight_ones_from_the_previous_sweep(solver):
    """A W solve after another sweep equals the same solve on a fresh problem bit for bit with
    ``solver="authors"`` (CG from 0, as SSWL.m's pcg without an initial guess); with "tight"
    it starts from the previous solution, so only agrees to its 1e-12 tolerance."""
    X, Y, _, _ = _problem(n=90, d=4, q=3, seed=7)
    est = SSWL(alpha=1.3, beta=0.2, zeta=0.15, solver=solver)
    rng = np.random.default_rng(3)
    before, fresh = est._problem(X, Y), est._problem(X, Y)
    p, m = before.p, before.m
    Ws1, Ws2 = rng.normal(size=(p, m)), rng.normal(size=(p, m))
    L1 = np.eye(m)
    L2 = L1 + 0.5 * rng.normal(size=(m, m))  # far enough for a new preconditioner
    before.update_W(Ws1, L1)
    after_sweep, first = before.update_W(Ws2, L2), fresh.update_W(Ws2, L2)
    if solver == "authors":
        np.testing.assert_array_equal(after_sweep, first)
    else:
        assert not np.array_equal(after_sweep, first)
        np.testing.assert_allclose(after_sweep, first, rtol=0, atol=1e-10 * np.abs(first).max())


def test_label_step_cg_from_zero_matches_closed_forms():
    """The L step of ``solver="authors"``: CG from 0 on (TᵀT) L = TᵀO, all columns as one
    vector as Matlab's ``pcg(kron(I, TᵀT), …)``. On a singular H with the right-hand side in
    its range it stays in that range (the minimum-norm solution, to the tolerance); stopped
    after one iteration it is one steepest-descent step, X = (‖B‖² / ⟨B, HB⟩) B."""
    rng = np.random.default_rng(0)
    basis = np.linalg.qr(rng.normal(size=(6, 4)))[0]
    H = basis @ np.diag([1.0, 2.0, 5.0, 10.0]) @ basis.T  # rank 4 of 6
    B = H @ rng.normal(size=(6, 6))
    X = weak_label._cg_from_zero(H, B, 1e-6, 5000)
    assert np.linalg.norm(B - H @ X) <= 1e-6 * np.linalg.norm(B)
    exact = np.linalg.pinv(H) @ B
    assert np.linalg.norm(X - exact) <= 1e-5 * np.linalg.norm(exact)
    assert np.linalg.norm(X - basis @ (basis.T @ X)) <= 1e-12 * np.linalg.norm(X)  # null space
    one = weak_label._cg_from_zero(H, B, 1e-6, 1)
    np.testing.assert_allclose(one, np.vdot(B, B) / np.vdot(B, H @ B) * B, rtol=1e-12)
    np.testing.assert_array_equal(weak_label._cg_from_zero(H, 0 * B, 1e-6, 5000), 0 * B)


@pytest.mark.parametrize("columns", [None, 3])
def test_dense_fallback_survives_an_svd_that_does_not_converge(columns, monkeypatch):
    """A singular PSD system whose ``gelsd`` fails (as on genbase, with a finite H) still gets
    the minimum-norm least-squares solution, here against an independent ``pinv``; the
    eigenvalues at rounding level (H's null space) are cut as ``gelsd`` would."""
    rng = np.random.default_rng(1)
    basis = np.linalg.qr(rng.normal(size=(7, 4)))[0]
    H = basis @ np.diag([1e-3, 1.0, 4.0, 9.0]) @ basis.T  # rank 4 of 7
    b = rng.normal(size=7 if columns is None else (7, columns))

    def no_convergence(*args, **kwargs):
        raise np.linalg.LinAlgError("SVD did not converge in Linear Least Squares")

    monkeypatch.setattr(weak_label.scipy.linalg, "lstsq", no_convergence)
    x = weak_label._solve_spd(H, b)
    np.testing.assert_allclose(x, np.linalg.pinv(H, rcond=1e-10) @ b, rtol=1e-9, atol=1e-12)
    assert x.shape == b.shape


# objective_ of SSWL(alpha=6.4, tol=0, max_iter=8) on _problem(n=150, d=5, q=4, frac=0.1,
# seed=8), fitted with the block solves before ``solver`` existed (now solver="tight").
TIGHT_OBJECTIVE = [
    253.8461011441023,
    54.438992660633645,
    53.15083329638381,
    52.69433870215842,
    52.477462522993406,
    52.34756352485851,
    52.26144072846452,
    52.19971836966916,
    52.150904005820166,
]


def test_tight_solver_reproduces_the_exact_block_solves_objective_history():
    X, Y, _, _ = _problem(n=150, d=5, q=4, frac=0.1, seed=8)
    tight = SSWL(alpha=6.4, tol=0.0, max_iter=8, solver="tight").fit(X, Y).objective_
    np.testing.assert_allclose(tight, TIGHT_OBJECTIVE, rtol=1e-10)
    authors = SSWL(alpha=6.4, tol=0.0, max_iter=8).fit(X, Y).objective_
    assert np.abs(authors / TIGHT_OBJECTIVE - 1).max() > 1e-9  # the fixture tells them apart


@pytest.mark.parametrize("frac", [0.05, 0.2, 0.9])
def test_woodbury_is_chosen_while_known_positives_are_few(frac):
    X, Y, _, _ = _problem(n=300, d=60, q=5, frac=frac, seed=4)
    prob = SSWL()._problem(X, Y)
    few = prob.P.sum() <= weak_label.WOODBURY_SHARE * prob.m * prob.r
    assert few == (frac < 0.5)
    assert (prob._woodbury is not None) == few
    assert ("P" in prob._parts) != few  # H_P is formed only for its Cholesky factor


@pytest.mark.parametrize("frac", [0.05, 0.2])
def test_woodbury_preconditioner_is_the_inverse_of_the_w_system(frac):
    """Woodbury's H_P⁻¹ (float32) applied to residuals equals a float64 solve with the dense
    whitened H_P to float32 precision (a label without known positives included)."""
    X, Y, _, _ = _problem(n=300, d=60, q=5, frac=frac, seed=4)
    Y[:, 2] = np.where(Y[:, 2] == 1, 0, Y[:, 2])  # label 2: no known positive
    prob = SSWL(alpha=2.0, beta=0.1, zeta=0.2)._problem(X, Y)
    assert prob._woodbury is not None
    rng = np.random.default_rng(2)
    L = np.eye(prob.m) + 0.3 * rng.normal(size=(prob.m, prob.m))
    H = prob._system("P", L)
    prec = prob._preconditioner("P", L)
    R = rng.normal(size=(prob.r, prob.m))
    exact = np.linalg.solve(H, R.T.ravel()).reshape(prob.m, prob.r).T
    assert np.abs(prec(R) - exact).max() <= 1e-4 * np.abs(exact).max()
