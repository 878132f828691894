"""ML-kNN (Zhang & Zhou 2007) against hand-computed numbers, a brute-force loop implementation
and scikit-multilearn(-ng)."""

import numpy as np
import pytest
from sklearn.base import clone

from mlgraph.methods.mlknn import MLkNN

# ---------------------------------------------------------------------------------------------
# 1. A tiny 1-D example computed by hand (k=2, s=1, original rule: a point is not its own
#    neighbour).
#
#    index  0  1  2  3   4   5
#    x      0  1  2  10  11  12
#    y_A    1  1  0  0   0   1
#    y_B    0  0  0  1   1   0
#
#    N(x_i): 0→{1,2}  1→{0,2}  2→{0,1}  3→{4,5}  4→{3,5}  5→{3,4}   (1 and 4: ties at distance 1
#    on both sides, both neighbours kept since k=2)
#    Label A: C = (1, 1, 2, 1, 1, 0), y = (1, 1, 0, 0, 0, 1) → c = [1, 2, 0], c' = [0, 2, 1]
#      P(H1) = (1+3)/(2+6) = 1/2
#      P(E_j|H1) = (1+c)/(1·3+3) = [2/6, 3/6, 1/6];  P(E_j|H0) = (1+c')/(3+3) = [1/6, 3/6, 2/6]
#    Label B: C = (0, 0, 0, 1, 1, 2), y = (0, 0, 0, 1, 1, 0) → c = [0, 2, 0], c' = [3, 0, 1]
#      P(H1) = (1+2)/8 = 3/8
#      P(E_j|H1) = (1+c)/(3+2) = [1/5, 3/5, 1/5];  P(E_j|H0) = (1+c')/(3+4) = [4/7, 1/7, 2/7]
#
#    Test points:
#    t=0.9  → N={1,0}: C_A=2: 1/2·1/6 vs 1/2·2/6 → r=1/3, y=0;  C_B=0: 3/8·1/5=3/40 vs
#             5/8·4/7=5/14 → r=(3/40)/(3/40+5/14)=21/121, y=0
#    t=1.4  → N={1,2}: C_A=1: 1/2·3/6 = 1/2·3/6, an exact tie → r=1/2, y=0 (strict rule);
#             C_B=0 → r=21/121, y=0
#    t=11.0 → 4 at 0, then 3 and 5 both at 1: the tie goes to the lower index 3 → N={4,3}:
#             C_A=0: 1/2·2/6=1/6 vs 1/2·1/6=1/12 → r=2/3, y=1;
#             C_B=2: 3/8·1/5=3/40 vs 5/8·2/7=5/28 → r=(3/40)/(3/40+5/28)=21/71, y=0
#             (had 5 been taken: C_A=1 → r=1/2 and C_B=1 → r=(9/40)/(9/40+5/56)=63/88)
# ---------------------------------------------------------------------------------------------
X_HAND = np.array([[0.0], [1.0], [2.0], [10.0], [11.0], [12.0]])
Y_HAND = np.array([[1, 0], [1, 0], [0, 0], [0, 1], [0, 1], [1, 0]], dtype=np.int8)
T_HAND = np.array([[0.9], [1.4], [11.0]])


@pytest.mark.parametrize("standardize", [False, True])
def test_hand_computed_priors_posteriors_scores(standardize):
    est = MLkNN(k=2, s=1.0, standardize=standardize).fit(X_HAND, Y_HAND)
    np.testing.assert_allclose(est.prior_, [1 / 2, 3 / 8], rtol=1e-15)
    np.testing.assert_allclose(
        est.cond_prob_true_, [[2 / 6, 3 / 6, 1 / 6], [1 / 5, 3 / 5, 1 / 5]], rtol=1e-15
    )
    np.testing.assert_allclose(
        est.cond_prob_false_, [[1 / 6, 3 / 6, 2 / 6], [4 / 7, 1 / 7, 2 / 7]], rtol=1e-15
    )
    np.testing.assert_array_equal(est.counts_[..., 1], [[1, 2, 0], [0, 2, 0]])  # c
    np.testing.assert_array_equal(est.counts_[..., 0], [[0, 2, 1], [3, 0, 1]])  # c'
    expected = [[1 / 3, 21 / 121], [1 / 2, 21 / 121], [2 / 3, 21 / 71]]
    np.testing.assert_allclose(est.decision_function(T_HAND), expected, rtol=1e-14)
    pred = est.predict(T_HAND)
    assert pred.dtype == np.int8
    np.testing.assert_array_equal(pred, [[0, 0], [0, 0], [1, 0]])  # exact tie at t=1.4 → 0


# ---------------------------------------------------------------------------------------------
# 2. An independent brute-force implementation with plain Python loops.
# ---------------------------------------------------------------------------------------------
def _brute_mlknn(X, Y, T, k, s, self_neighbour, standardize):
    """ML-kNN straight from the paper's pseudo-code; exact difference-form distances, ties by
    the lower index. Returns priors, c/c' likelihood tables, test scores and predictions."""
    X, T = np.asarray(X, float).tolist(), np.asarray(T, float).tolist()
    Y = np.asarray(Y).tolist()
    m, q, d = len(X), len(Y[0]), len(X[0])
    if standardize:
        mean = [sum(x[f] for x in X) / m for f in range(d)]
        std = [(sum((x[f] - mean[f]) ** 2 for x in X) / m) ** 0.5 for f in range(d)]
        X = [[(x[f] - mean[f]) / std[f] for f in range(d)] for x in X]
        T = [[(t[f] - mean[f]) / std[f] for f in range(d)] for t in T]

    def neighbours(x, exclude, kk):
        dist = [(sum((x[f] - X[i][f]) ** 2 for f in range(d)), i) for i in range(m) if i != exclude]
        return [i for _, i in sorted(dist)[:kk]]

    prior = [(s + sum(Y[i][l] for i in range(m))) / (s * 2 + m) for l in range(q)]
    c = [[0] * (k + 1) for _ in range(q)]
    cn = [[0] * (k + 1) for _ in range(q)]
    for i in range(m):
        if self_neighbour:
            nb = [i] + neighbours(X[i], i, k - 1)
        else:
            nb = neighbours(X[i], i, k)
        for l in range(q):
            delta = sum(Y[a][l] for a in nb)
            if Y[i][l] == 1:
                c[l][delta] += 1
            else:
                cn[l][delta] += 1
    pt = [[(s + c[l][j]) / (s * (k + 1) + sum(c[l])) for j in range(k + 1)] for l in range(q)]
    pf = [[(s + cn[l][j]) / (s * (k + 1) + sum(cn[l])) for j in range(k + 1)] for l in range(q)]
    scores, preds = [], []
    for t in T:
        nb = neighbours(t, None, k)
        row_s, row_p = [], []
        for l in range(q):
            delta = sum(Y[a][l] for a in nb)
            p1, p0 = prior[l] * pt[l][delta], (1 - prior[l]) * pf[l][delta]
            row_s.append(p1 / (p1 + p0))
            row_p.append(int(p1 > p0))
        scores.append(row_s)
        preds.append(row_p)
    return np.array(prior), np.array(pt), np.array(pf), np.array(scores), np.array(preds)


def _random_problem(n=60, d=5, q=4, n_test=25, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * rng.uniform(0.5, 4.0, size=d) + rng.normal(size=d)
    W = rng.normal(size=(d, q))
    Y = (X @ W + rng.normal(size=(n, q)) > 0.3).astype(np.int8)
    T = rng.normal(size=(n_test, d)) * X.std(axis=0) + X.mean(axis=0)
    return X, Y, T


@pytest.mark.parametrize("self_neighbour", [False, True])
@pytest.mark.parametrize("standardize", [True, False])
def test_matches_brute_force(self_neighbour, standardize):
    X, Y, T = _random_problem(seed=1 + self_neighbour + 2 * standardize)
    k, s = 5, 0.7
    est = MLkNN(k=k, s=s, self_neighbour=self_neighbour, standardize=standardize).fit(X, Y)
    prior, pt, pf, scores, preds = _brute_mlknn(X, Y, T, k, s, self_neighbour, standardize)
    np.testing.assert_allclose(est.prior_, prior, rtol=1e-14)
    np.testing.assert_allclose(est.cond_prob_true_, pt, rtol=1e-14)
    np.testing.assert_allclose(est.cond_prob_false_, pf, rtol=1e-14)
    np.testing.assert_allclose(est.decision_function(T), scores, rtol=1e-12)
    np.testing.assert_array_equal(est.predict(T), preds)


@pytest.mark.parametrize("case", ["whole", "blocks", "double", "huge", "tiny"])
def test_neighbour_search_paths_match_brute_force(monkeypatch, case):
    """The screening in single precision with one self-Gram product (the default for small
    training sets) or by blocks of 7 query rows, in double precision (forced, or because the
    squared norms leave the single-precision range), all against the brute force."""
    import mlgraph.methods.mlknn as mlknn

    X, Y, T = _random_problem(seed=11)
    scale = {"huge": 1e20, "tiny": 1e-20}.get(case, 1.0)  # squared norms ~1e41 and ~1e-39
    if case == "blocks":
        monkeypatch.setattr(mlknn, "_WHOLE_GRAM", 0)
        monkeypatch.setattr(mlknn, "_BLOCK_ELEMENTS", 7 * len(X))
    if case == "double":
        monkeypatch.setattr(mlknn, "_SINGLE_RANGE", (np.inf, np.inf))
    for self_neighbour in (False, True):
        est = MLkNN(k=4, s=0.5, self_neighbour=self_neighbour, standardize=False).fit(X * scale, Y)
        _, pt, pf, scores, preds = _brute_mlknn(X * scale, Y, T * scale, 4, 0.5, self_neighbour, False)
        np.testing.assert_allclose(est.cond_prob_true_, pt, rtol=1e-14)
        np.testing.assert_allclose(est.cond_prob_false_, pf, rtol=1e-14)
        np.testing.assert_allclose(est.decision_function(T * scale), scores, rtol=1e-12)
        np.testing.assert_array_equal(est.predict(T * scale), preds)


def test_predict_from_scores_is_predict():
    """The runner's path (scores, then predict_from_scores) gives predict's labels."""
    X, Y, T = _random_problem(seed=4)
    est = MLkNN(k=5).fit(X, Y)
    scores = est.decision_function(T)
    pred = est.predict_from_scores(scores)
    assert pred.dtype == np.int8
    np.testing.assert_array_equal(pred, est.predict(T))
    np.testing.assert_array_equal(pred, scores > 0.5)


def test_self_neighbour_changes_the_tables():
    """The two rules count differently (guards against the switch being ignored)."""
    X, Y, _ = _random_problem(seed=7)
    a = MLkNN(k=5).fit(X, Y)
    b = MLkNN(k=5, self_neighbour=True).fit(X, Y)
    assert not np.array_equal(a.counts_, b.counts_)


# ---------------------------------------------------------------------------------------------
# 3. Unlabelled rows, parameter checks, ties with duplicate points.
# ---------------------------------------------------------------------------------------------
def test_unlabelled_rows_are_ignored():
    X, Y, T = _random_problem(n=80, seed=3)
    rng = np.random.default_rng(3)
    unlabelled = rng.permutation(80)[:25]
    Y_semi = Y.copy()
    Y_semi[unlabelled] = -1
    keep = np.setdiff1d(np.arange(80), unlabelled)
    a = MLkNN(k=6).fit(X, Y_semi)
    b = MLkNN(k=6).fit(X[keep], Y[keep])
    for name in ("prior_", "cond_prob_true_", "cond_prob_false_", "counts_", "mean_", "scale_", "X_fit_"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    np.testing.assert_array_equal(a.decision_function(T), b.decision_function(T))
    # and the unlabelled rows do matter if they are (wrongly) kept as labelled
    c = MLkNN(k=6).fit(X, Y)
    assert not np.array_equal(a.counts_, c.counts_)


@pytest.mark.parametrize(
    "name, value",
    [
        ("k", 0),
        ("k", 2.5),
        ("k", True),
        ("k", None),
        ("s", 0),
        ("s", -1.0),
        ("s", np.nan),
        ("s", "1"),
        ("standardize", 1),
        ("standardize", "yes"),
        ("self_neighbour", 0),
        ("self_neighbour", None),
    ],
)
def test_bad_parameters_name_the_parameter(name, value):
    X, Y, _ = _random_problem()
    with pytest.raises(ValueError, match=f"parameter {name}="):
        MLkNN(**{name: value}).fit(X, Y)


def test_k_bounded_by_labelled_rows():
    X, Y, T = _random_problem(n=12)
    Y = Y.copy()
    Y[:2] = -1  # 10 labelled rows
    with pytest.raises(ValueError, match="parameter k=10"):
        MLkNN(k=10).fit(X, Y)  # needs 10 other points
    MLkNN(k=9).fit(X, Y).predict(T)
    est = MLkNN(k=10, self_neighbour=True).fit(X, Y)  # itself + 9 others; tests: all 10
    *_, scores, preds = _brute_mlknn(X[2:], Y[2:], T, 10, 1.0, True, True)
    np.testing.assert_allclose(est.decision_function(T), scores, rtol=1e-12)
    np.testing.assert_array_equal(est.predict(T), preds)
    with pytest.raises(ValueError, match="parameter k=11"):
        MLkNN(k=11, self_neighbour=True).fit(X, Y)
    assert clone(MLkNN(k=3, s=0.5)).get_params()["k"] == 3


def test_duplicate_points_ties_go_to_lower_index():
    """Groups of exact duplicates (with different labels) cut by the k-th neighbour: the chosen
    points must be the lower indices, as in the brute force with exact distances, and the
    result must not depend on rounding of the Gram-formula distances."""
    rng = np.random.default_rng(5)
    base = rng.normal(size=(15, 8)) * 3.7 + 1.3
    X = np.repeat(base, 3, axis=0)[rng.permutation(45)]
    Y = rng.integers(0, 2, size=(45, 3)).astype(np.int8)
    T = np.vstack([base[:6], base[:4] + 1e-3])
    for self_neighbour in (False, True):
        for k in (2, 4):
            est = MLkNN(k=k, self_neighbour=self_neighbour).fit(X, Y)
            _, pt, pf, scores, preds = _brute_mlknn(X, Y, T, k, 1.0, self_neighbour, True)
            np.testing.assert_allclose(est.cond_prob_true_, pt, rtol=1e-14)
            np.testing.assert_allclose(est.cond_prob_false_, pf, rtol=1e-14)
            np.testing.assert_allclose(est.decision_function(T), scores, rtol=1e-12)
            np.testing.assert_array_equal(est.predict(T), preds)
            again = MLkNN(k=k, self_neighbour=self_neighbour).fit(X.copy(), Y.copy())
            np.testing.assert_array_equal(again.decision_function(T), est.decision_function(T))


def test_equidistant_neighbours_tie_to_lower_index():
    # query 0 is at distance 1 from both training points; k=1 takes index 0, whose label is 1
    X = np.array([[-1.0], [1.0], [5.0]])
    est = MLkNN(k=1, standardize=False).fit(X, np.array([[1], [0], [0]]))
    swapped = MLkNN(k=1, standardize=False).fit(X, np.array([[0], [1], [0]]))
    T = np.array([[0.0]])
    # C_t = 1 for the first model and 0 for the second, so the scores differ
    assert est.decision_function(T)[0, 0] != swapped.decision_function(T)[0, 0]
    lab1 = est.cond_prob_true_[0, 1] * est.prior_[0]
    lab0 = est.cond_prob_false_[0, 1] * (1 - est.prior_[0])
    assert est.decision_function(T)[0, 0] == pytest.approx(lab1 / (lab1 + lab0))


# ---------------------------------------------------------------------------------------------
# 4. Parity with scikit-multilearn(-ng) MLkNN.
# ---------------------------------------------------------------------------------------------
def test_parity_with_skmultilearn():
    skml = pytest.importorskip("skmultilearn.adapt")
    rng = np.random.default_rng(11)
    # correlated features with clusters, labels from a noisy linear model: "real-ish"
    centres = rng.normal(size=(6, 10)) * 3
    X = centres[rng.integers(0, 6, 220)] + rng.normal(size=(220, 10)) @ rng.normal(size=(10, 10))
    Y = (X @ rng.normal(size=(10, 6)) + 2 * rng.normal(size=(220, 6)) > 1.0).astype(np.int8)
    X_train, Y_train, X_test = X[:150], Y[:150], X[150:]

    ours = MLkNN(k=10, s=1.0, standardize=False, self_neighbour=True).fit(X_train, Y_train)
    ref = skml.MLkNN(k=10, s=1.0).fit(X_train, Y_train)
    np.testing.assert_allclose(ours.prior_, np.asarray(ref._prior_prob_true).ravel(), rtol=1e-15)
    np.testing.assert_allclose(ours.cond_prob_true_, ref._cond_prob_true.toarray(), rtol=1e-15)
    np.testing.assert_allclose(ours.cond_prob_false_, ref._cond_prob_false.toarray(), rtol=1e-15)
    np.testing.assert_allclose(
        ours.decision_function(X_test), ref.predict_proba(X_test).toarray(), rtol=1e-12, atol=1e-15
    )
    # scikit-multilearn predicts p_true >= p_false; ours is strict. They differ exactly on ties.
    scores, reference = ours.decision_function(X_test), ref.predict(X_test).toarray()
    np.testing.assert_array_equal(ours.predict(X_test) != reference, (scores == 0.5) & (reference == 1))
