"""BP-MLL and RankSVM (paper 001's pairwise-ranking baselines): the factorised global error
against a double loop over pairs, gradients against finite differences, Frank–Wolfe's
feasibility, duality gap, monotone objective and iteration cap, the size threshold by hand,
and sanity on a small generated problem."""

import functools

import numpy as np
import pytest
from sklearn.datasets import make_multilabel_classification
from sklearn.metrics import f1_score, label_ranking_average_precision_score
from threadpoolctl import threadpool_limits

from mlgraph.methods.ranking import (
    BPMLL,
    RankSVM,
    bpmll_objective,
    fit_size_threshold,
    label_pairs,
    pairwise_exp_loss,
    size_threshold_targets,
)


@pytest.fixture(autouse=True)
def _one_blas_thread():
    with threadpool_limits(limits=1):  # tiny problems: threads only add contention
        yield


@functools.lru_cache(maxsize=1)
def _generated():
    X, Y = make_multilabel_classification(
        n_samples=300, n_features=20, n_classes=6, n_labels=2, allow_unlabeled=True, random_state=0
    )
    return X[:150], Y[:150].astype(np.int8), X[150:], Y[150:].astype(np.int8)


def _random_labels(rng, n, q):
    """Random 0/1 labels with one empty and one full row."""
    Y = (rng.rand(n, q) < 0.4).astype(np.int8)
    Y[0] = 0
    Y[1] = 1
    Y[2, :2] = (1, 0)  # at least one row with pairs
    return Y


# ---------------------------------------------------------------------------------------------
# Pairs and the BP-MLL global error
# ---------------------------------------------------------------------------------------------
def test_label_pairs_match_a_double_loop():
    Y = _random_labels(np.random.RandomState(0), 9, 5)
    expected = [(i, k, l) for i in range(9) for k in range(5) for l in range(5) if Y[i, k] and not Y[i, l]]
    rows, rel, irr = label_pairs(Y)
    assert list(zip(rows.tolist(), rel.tolist(), irr.tolist(), strict=True)) == expected
    assert 0 not in rows and 1 not in rows  # empty and full label sets give no pair


def test_pairwise_exp_loss_equals_brute_force_over_pairs():
    rng = np.random.RandomState(1)
    n, q = 8, 5
    C = rng.uniform(-1, 1, (n, q))
    Y = _random_labels(rng, n, q)
    loss, grad = pairwise_exp_loss(C, Y)
    brute, brute_grad = np.zeros(n), np.zeros((n, q))
    for i in range(n):
        rel, irr = np.flatnonzero(Y[i]), np.flatnonzero(Y[i] == 0)
        for k in rel:
            for l in irr:
                term = np.exp(-(C[i, k] - C[i, l])) / (rel.size * irr.size)
                brute[i] += term
                brute_grad[i, k] -= term
                brute_grad[i, l] += term
    np.testing.assert_allclose(loss, brute, rtol=1e-12)
    np.testing.assert_allclose(grad, brute_grad, rtol=1e-12, atol=1e-15)
    # empty and full label sets contribute nothing, whatever their outputs
    assert loss[0] == loss[1] == 0 and not grad[:2].any()


def _flat(params):
    return np.concatenate([p.ravel() for p in params])


def _unflat(theta, shapes):
    out, at = [], 0
    for s in shapes:
        size = int(np.prod(s))
        out.append(theta[at : at + size].reshape(s))
        at += size
    return out


def test_bpmll_gradient_matches_finite_differences():
    rng = np.random.RandomState(2)
    n, d, h, q, alpha = 7, 3, 2, 4, 0.3
    X = rng.randn(n, d)
    Y = _random_labels(rng, n, q)
    shapes = [(d, h), (h,), (h, q), (q,)]
    theta = rng.uniform(-0.8, 0.8, sum(int(np.prod(s)) for s in shapes))
    J, grads = bpmll_objective(_unflat(theta, shapes), X, Y, alpha)
    eps, numeric = 1e-6, np.empty_like(theta)
    for j in range(theta.size):
        e = np.zeros_like(theta)
        e[j] = eps
        numeric[j] = (
            bpmll_objective(_unflat(theta + e, shapes), X, Y, alpha)[0]
            - bpmll_objective(_unflat(theta - e, shapes), X, Y, alpha)[0]
        ) / (2 * eps)
    np.testing.assert_allclose(_flat(grads), numeric, rtol=1e-6, atol=1e-8)
    # J = Σ E_i + α/2 ‖w‖², E_i from the outputs of the network
    W1, b1, W2, b2 = _unflat(theta, shapes)
    outputs = np.tanh(np.tanh(X @ W1 + b1) @ W2 + b2)
    assert J == pytest.approx(pairwise_exp_loss(outputs, Y)[0].sum() + alpha / 2 * theta @ theta, rel=1e-12)


def test_bpmll_full_batch_loss_curve_decreases_and_online_learns():
    Xtr, Ytr, _, _ = _generated()
    full = BPMLL(batch_size=None, learning_rate=0.002, epochs=40).fit(Xtr, Ytr)
    assert full.loss_curve_.shape == (40,) and full.n_iter_ == 40
    assert np.all(np.diff(full.loss_curve_) <= 1e-10 * full.loss_curve_[0])
    assert full.loss_curve_[-1] < 0.9 * full.loss_curve_[0]
    online = BPMLL(epochs=10).fit(Xtr, Ytr)
    assert online.loss_curve_[-1] < online.loss_curve_[0]
    assert online.n_hidden_ == 4  # ⌈0.2 × 20⌉


def test_bpmll_ignores_rows_without_pairs_and_unlabelled_rows():
    Xtr, Ytr, _, _ = _generated()
    keep = (Ytr.sum(axis=1) > 0) & (Ytr.sum(axis=1) < Ytr.shape[1])
    assert not keep.all()  # the generated data has empty label sets
    params = dict(epochs=3, standardize=False)
    a = BPMLL(**params).fit(Xtr, Ytr)
    b = BPMLL(**params).fit(Xtr[keep], Ytr[keep])
    np.testing.assert_array_equal(a.coefs_[0], b.coefs_[0])
    np.testing.assert_array_equal(a.loss_curve_, b.loss_curve_)
    Y_semi = np.vstack([Ytr, -np.ones((5, Ytr.shape[1]), dtype=np.int8)])
    c = BPMLL(**params).fit(np.vstack([Xtr, np.zeros((5, Xtr.shape[1]))]), Y_semi)
    np.testing.assert_array_equal(a.threshold_coef_, c.threshold_coef_)


# ---------------------------------------------------------------------------------------------
# Size threshold by hand
#   row outputs          labels   sorted (labels)      candidates              errors       target
#   [0.1, 0.5, 0.9]      0 1 1    .1 .5 .9 (0 1 1)     0.0 .3 .7 1.0            1 0 1 2      0.3
#   [0.2, 0.8, 0.4]      1 0 0    .2 .4 .8 (1 0 0)     .1 .3 .6 .9              2 3 2 1      0.9
#   [0.3, 0.1, 0.2]      0 0 0    (empty)              ... .4                   3 2 1 0      0.4
#   [0.3, 0.1, 0.2]      1 1 1    (full)               0.0 ...                  0 1 2 3      0.0
#   [0.5, 0.5, 0.1]      1 1 0    .1 .5 .5 (0 1 1)     0.0 .3 .5 .6             1 0 1 2      0.3
# ---------------------------------------------------------------------------------------------
def test_size_threshold_targets_by_hand():
    outputs = np.array([[0.1, 0.5, 0.9], [0.2, 0.8, 0.4], [0.3, 0.1, 0.2], [0.3, 0.1, 0.2], [0.5, 0.5, 0.1]])
    Y = np.array([[0, 1, 1], [1, 0, 0], [0, 0, 0], [1, 1, 1], [1, 1, 0]])
    np.testing.assert_allclose(size_threshold_targets(outputs, Y), [0.3, 0.9, 0.4, 0.0, 0.3], atol=1e-12)
    # labels cut by a linear threshold of the outputs: the least-squares threshold recovers most of them
    rng = np.random.RandomState(3)
    C = rng.rand(40, 3)
    Yt = (C >= (C @ [0.2, 0.3, 0.1] + 0.05)[:, None]).astype(int)  # labels above a linear threshold
    v = fit_size_threshold(C, Yt)
    predicted = (C >= (C @ v[:-1] + v[-1])[:, None]).astype(int)
    assert (predicted == Yt).mean() >= 0.9


# ---------------------------------------------------------------------------------------------
# RankSVM: Frank–Wolfe on the dual
# ---------------------------------------------------------------------------------------------
def _pair_weights(est, Y):
    rows, rel, irr = est.pairs_
    size = Y.sum(axis=1) * (Y.shape[1] - Y.sum(axis=1))
    return rows, rel, irr, est.C / size[rows]


def test_ranksvm_dual_feasible_and_gap_is_the_duality_gap():
    Xtr, Ytr, _, _ = _generated()
    est = RankSVM(C=2.0, max_iter=30, standardize=False).fit(Xtr, Ytr)
    rows, rel, irr, upper = _pair_weights(est, Ytr)
    a, q = est.alpha_, Ytr.shape[1]
    assert a.min() >= -1e-12 and np.all(a <= upper * (1 + 1e-9))
    np.testing.assert_allclose(np.bincount(rel, a, q) - np.bincount(irr, a, q), 0, atol=1e-9)  # Σ_i β_ki = 0
    # primal P(w, b) from the fitted model, dual D(α) from α alone
    F = Xtr @ est.coef_ + est.intercept_
    hinge = upper @ np.maximum(0, 1 - (F[rows, rel] - F[rows, irr]))
    primal = 0.5 * np.sum(est.coef_**2) + hinge
    W = np.zeros_like(est.coef_)
    np.add.at(W.T, rel, a[:, None] * Xtr[rows])
    np.add.at(W.T, irr, -a[:, None] * Xtr[rows])
    dual = a.sum() - 0.5 * np.sum(W**2)
    np.testing.assert_allclose(W, est.coef_, atol=1e-9)
    assert primal == pytest.approx(est.primal_objective_, rel=1e-7)
    assert dual == pytest.approx(est.dual_objective_, rel=1e-9)
    assert est.duality_gap_ == pytest.approx(primal - dual, rel=1e-6, abs=1e-8) and primal >= dual
    # b minimises the weighted hinge loss for the fitted w
    rng = np.random.RandomState(0)
    for _ in range(50):
        Fb = F + 1e-3 * rng.randn(q)
        assert upper @ np.maximum(0, 1 - (Fb[rows, rel] - Fb[rows, irr])) >= hinge - 1e-9


def test_ranksvm_objective_never_increases_and_iteration_cap_holds():
    Xtr, Ytr, _, _ = _generated()
    est = RankSVM(max_iter=4, tol=0.0).fit(Xtr, Ytr)
    assert est.n_iter_ == 4 and est.objective_curve_.shape == (5,)
    est = RankSVM(C=5.0, max_iter=60, tol=0.0, kernel="rbf").fit(Xtr, Ytr)
    assert est.n_iter_ <= 60
    curve = est.objective_curve_
    assert curve[0] == 0 and curve[-1] < curve[1] < 0
    assert np.all(np.diff(curve) <= 1e-12 * abs(curve[-1]))


def test_ranksvm_separable_problem_satisfies_every_pair_constraint():
    rng = np.random.RandomState(0)
    centres = np.array([[4.0, 0.0], [-2.0, 3.5], [-2.0, -3.5]])
    cluster = np.repeat(np.arange(3), 8)
    X = centres[cluster] + 0.5 * rng.randn(24, 2)
    Y = np.eye(3, dtype=np.int8)[cluster]
    Y[:3, 1] = 1  # a few two-label rows
    est = RankSVM(C=1.0, max_iter=400, tol=1e-9, standardize=False).fit(X, Y)
    F = est.decision_function(X)
    rows, rel, irr = est.pairs_
    margins = F[rows, rel] - F[rows, irr]
    assert margins.min() >= 0.99  # ⟨w_k − w_l, x_i⟩ + b_k − b_l ≥ 1 up to Frank–Wolfe's accuracy
    assert est.duality_gap_ <= 0.05 * est.primal_objective_
    assert (est.predict(X) == Y).mean() >= 0.9  # the linear size threshold is coarser than the ranking


def test_ranksvm_rbf_scores_are_the_kernel_expansion():
    Xtr, Ytr, Xte, _ = _generated()
    est = RankSVM(kernel="rbf", max_iter=10).fit(Xtr, Ytr)
    Ste = (Xte - est.mean_) / est.scale_
    Str = (Xtr - est.mean_) / est.scale_
    assert est.gamma_ == pytest.approx(1.0 / (Xtr.shape[1] * Str.var()))
    sq = ((Ste[:, None, :] - est.support_vectors_[None, :, :]) ** 2).sum(axis=2)
    expected = np.exp(-est.gamma_ * sq) @ est.beta_ + est.intercept_
    np.testing.assert_allclose(est.decision_function(Xte), expected, rtol=1e-9, atol=1e-9)
    assert est.coef_ is None


# ---------------------------------------------------------------------------------------------
# Both: quality, parameter checks, determinism
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "make",
    [lambda: BPMLL(), lambda: RankSVM(), lambda: RankSVM(kernel="rbf")],
    ids=["bpmll", "ranksvm-linear", "ranksvm-rbf"],
)
def test_beats_the_label_prior(make):
    Xtr, Ytr, Xte, Yte = _generated()
    est = make().fit(Xtr, Ytr)
    prior = np.tile(Ytr.mean(axis=0), (Xte.shape[0], 1))
    ap_prior = label_ranking_average_precision_score(Yte, prior)
    ap = label_ranking_average_precision_score(Yte, est.decision_function(Xte))
    f1_prior = max(
        f1_score(Yte, (prior >= 0.5).astype(int), average="micro", zero_division=0),
        f1_score(Yte, np.ones_like(Yte), average="micro"),
    )
    pred = est.predict(Xte)
    assert pred.dtype == np.int8 and pred.shape == Yte.shape
    assert ap > ap_prior + 0.1
    assert f1_score(Yte, pred, average="micro") > f1_prior + 0.05


@pytest.mark.parametrize(
    "est, name",
    [
        (BPMLL(hidden=0), "hidden"),
        (BPMLL(hidden=-0.5), "hidden"),
        (BPMLL(hidden=True), "hidden"),
        (BPMLL(learning_rate=0), "learning_rate"),
        (BPMLL(epochs=2.5), "epochs"),
        (BPMLL(alpha=-1), "alpha"),
        (BPMLL(batch_size=0), "batch_size"),
        (BPMLL(random_state=-1), "random_state"),
        (BPMLL(standardize="yes"), "standardize"),
        (RankSVM(C=0), "C"),
        (RankSVM(kernel="poly"), "kernel"),
        (RankSVM(gamma=0), "gamma"),
        (RankSVM(max_iter=0), "max_iter"),
        (RankSVM(tol=-1e-3), "tol"),
        (RankSVM(random_state="a"), "random_state"),
        (RankSVM(standardize=1), "standardize"),
    ],
)
def test_bad_parameters_raise_value_error_naming_them(est, name):
    Xtr, Ytr, _, _ = _generated()
    with pytest.raises(ValueError, match=f"parameter {name}="):
        est.fit(Xtr, Ytr)


@pytest.mark.parametrize("cls", [BPMLL, RankSVM])
def test_no_pair_to_rank_is_an_error(cls):
    with pytest.raises(ValueError, match="no training row"):
        cls().fit(np.eye(3), np.array([[0, 0], [1, 1], [0, 0]]))


def test_deterministic_with_random_state():
    Xtr, Ytr, Xte, _ = _generated()
    a = BPMLL(epochs=5, random_state=3).fit(Xtr, Ytr).decision_function(Xte)
    b = BPMLL(epochs=5, random_state=3).fit(Xtr, Ytr).decision_function(Xte)
    c = BPMLL(epochs=5, random_state=4).fit(Xtr, Ytr).decision_function(Xte)
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, c)
    r1 = RankSVM(max_iter=10).fit(Xtr, Ytr)
    r2 = RankSVM(max_iter=10).fit(Xtr, Ytr)
    np.testing.assert_array_equal(r1.decision_function(Xte), r2.decision_function(Xte))
    np.testing.assert_array_equal(r1.predict(Xte), r2.predict(Xte))
