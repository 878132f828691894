"""RBF networks (paper 001's base learner and ML-RBF): closed forms, widths, weights, capacity."""

import math

import numpy as np
import pytest
from scipy.spatial.distance import pdist

from mlgraph.methods.rbf_network import MLRBF, RBFNetwork, rbf_design, weighted_least_squares


def xor_blobs(n_per=40, seed=0):
    rng = np.random.default_rng(seed)
    centres = np.array([[1, 1], [-1, -1], [1, -1], [-1, 1]], dtype=float)
    X = np.vstack([c + 0.25 * rng.standard_normal((n_per, 2)) for c in centres])
    y = np.repeat([0, 0, 1, 1], n_per)
    return X, y


def test_fits_xor_which_no_linear_model_can():
    X, y = xor_blobs()
    Xt, yt = xor_blobs(seed=1)
    net = RBFNetwork(n_centres=8, width_factor=0.5).fit(X, y)
    assert net.score(X, y) >= 0.97
    assert net.score(Xt, yt) >= 0.95
    # The same output layer on the raw features (one centre far away ~ a constant unit) cannot.
    lin = weighted_least_squares(np.hstack([np.ones((len(X), 1)), X]), np.eye(2)[y])
    assert np.mean((np.hstack([np.ones((len(X), 1)), X]) @ lin).argmax(1) == y) < 0.7


def test_weighted_least_squares_matches_the_normal_equations():
    rng = np.random.default_rng(0)
    Phi = np.hstack([np.ones((30, 1)), rng.random((30, 6))])
    T = rng.standard_normal((30, 3))
    w = rng.random(30) * 3
    ridge = 0.05
    W = weighted_least_squares(Phi, T, w, ridge)
    n = len(w)
    D = np.diag(w * n / w.sum())
    J = np.eye(7)
    J[0, 0] = 0.0  # the bias is not penalised
    expected = np.linalg.solve(Phi.T @ D @ Phi + ridge * n * J, Phi.T @ D @ T)
    np.testing.assert_allclose(W, expected, rtol=1e-9, atol=1e-10)
    # scaling the weights changes nothing
    np.testing.assert_allclose(weighted_least_squares(Phi, T, 7 * w, ridge), W, rtol=1e-9, atol=1e-12)


def test_fitted_network_is_the_closed_form_on_its_own_hidden_layer():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((60, 3)) * [1, 10, 100] + 5
    y = rng.integers(0, 3, 60)
    w = rng.random(60) + 0.1
    net = RBFNetwork(n_centres=7, width_factor=0.7, ridge=1e-3).fit(X, y, sample_weight=w)
    assert net.centres_.shape == (7, 3)
    # σ = width_factor × mean inter-centre distance
    assert net.sigma_ == pytest.approx(0.7 * pdist(net.centres_).mean(), rel=1e-12)
    # weighted standardisation
    mean = np.average(X, axis=0, weights=w)
    np.testing.assert_allclose(net.mean_, mean)
    np.testing.assert_allclose(net.scale_, np.sqrt(np.average((X - mean) ** 2, axis=0, weights=w)))
    Xs = (X - mean) / net.scale_
    G = np.exp(-((Xs[:, None, :] - net.centres_[None]) ** 2).sum(-1) / (2 * net.sigma_**2))
    Phi = np.hstack([np.ones((60, 1)), G])
    np.testing.assert_allclose(rbf_design(Xs, net.centres_, net.sigma_), Phi, atol=1e-12)
    D = np.diag(w * 60 / w.sum())
    J = np.eye(8)
    J[0, 0] = 0
    T = np.eye(3)[y]
    coef = np.linalg.solve(Phi.T @ D @ Phi + 1e-3 * 60 * J, Phi.T @ D @ T)
    np.testing.assert_allclose(net.coef_, coef, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(net.decision_function(X), Phi @ coef, rtol=1e-7, atol=1e-9)
    np.testing.assert_array_equal(net.predict(X), (Phi @ coef).argmax(1))


def test_sample_weight_zero_rows_are_removed_and_scale_is_irrelevant():
    rng = np.random.default_rng(2)
    X = rng.standard_normal((80, 2))
    y = (X[:, 0] * X[:, 1] > 0).astype(int)
    w = np.where(np.arange(80) < 50, 1.0, 0.0)
    a = RBFNetwork(n_centres=6).fit(X, y, sample_weight=w)
    b = RBFNetwork(n_centres=6).fit(X[:50], y[:50])
    c = RBFNetwork(n_centres=6).fit(X, y, sample_weight=3.5 * w)
    for other in (b, c):
        np.testing.assert_allclose(a.centres_, other.centres_)
        np.testing.assert_allclose(a.coef_, other.coef_, rtol=1e-8, atol=1e-10)
    # weights change the model
    d = RBFNetwork(n_centres=6).fit(X, y, sample_weight=np.linspace(0.1, 2, 80))
    assert not np.allclose(d.coef_, b.coef_)


def test_centre_count_fraction_and_cap_at_distinct_rows():
    rng = np.random.default_rng(3)
    X = rng.standard_normal((50, 2))
    y = np.arange(50) % 2
    assert RBFNetwork(n_centres=0.2).fit(X, y).centres_.shape[0] == 10
    Xdup = np.repeat(X[:4], 10, axis=0)  # 40 rows, 4 distinct (a resample has duplicates)
    assert RBFNetwork(n_centres=30).fit(Xdup, np.arange(40) % 2).centres_.shape[0] == 4


def test_string_classes_outputs_and_parameter_checks():
    X, y = xor_blobs(n_per=10)
    labels = np.array(["no", "yes"])[y]
    net = RBFNetwork(n_centres=4).fit(X, labels)
    assert list(net.classes_) == ["no", "yes"]
    assert net.decision_function(X).shape == (40, 2)
    assert set(net.predict(X)) <= {"no", "yes"}
    with pytest.raises(ValueError, match="n_centres"):
        RBFNetwork(n_centres=1.5).fit(X, y)
    with pytest.raises(ValueError, match="width_factor"):
        RBFNetwork(width_factor=0).fit(X, y)
    with pytest.raises(ValueError, match="features"):
        net.predict(np.ones((2, 3)))


def test_mlrbf_centres_per_label_width_and_pseudo_inverse_outputs():
    rng = np.random.default_rng(4)
    X = rng.standard_normal((120, 3))
    Y = np.column_stack([X[:, 0] > 0, X[:, 1] > 0.5, X[:, 0] + X[:, 2] > 0]).astype(np.int8)
    est = MLRBF(alpha=0.05, mu=1.0).fit(X, Y)
    expected_counts = [math.ceil(0.05 * Y[:, j].sum()) for j in range(3)]
    np.testing.assert_array_equal(est.centres_per_label_, expected_counts)
    assert est.centres_.shape[0] == sum(expected_counts)
    assert est.sigma_ == pytest.approx(pdist(est.centres_).mean(), rel=1e-12)
    Xs = (X - X.mean(0)) / X.std(0)
    Phi = rbf_design(Xs, est.centres_, est.sigma_)
    np.testing.assert_allclose(est.coef_, np.linalg.pinv(Phi) @ np.where(Y, 1.0, -1.0), rtol=1e-6, atol=1e-8)
    assert (est.predict(X) == Y).mean() > 0.85


def test_mlrbf_drops_unlabelled_rows_and_labels_without_positives():
    rng = np.random.default_rng(5)
    X = rng.standard_normal((60, 2))
    Y = np.column_stack([X[:, 0] > 0, np.zeros(60)]).astype(np.int8)
    a = MLRBF(alpha=0.1).fit(X, Y)
    assert list(a.centres_per_label_) == [math.ceil(0.1 * Y[:, 0].sum()), 0]
    Xu = np.vstack([X, rng.standard_normal((5, 2))])
    Yu = np.vstack([Y, -np.ones((5, 2), dtype=np.int8)])
    b = MLRBF(alpha=0.1).fit(Xu, Yu)
    np.testing.assert_allclose(a.coef_, b.coef_)
    with pytest.raises(ValueError, match="no label has a positive"):
        MLRBF().fit(X, np.zeros((60, 2), dtype=np.int8))
