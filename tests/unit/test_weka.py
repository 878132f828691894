"""Weka's distance and search (mlgraph.methods.weka), MLkNN(metric="weka") and the IBk base learner
against the independent port in weka_port.py, on synthetic data with ties, nominal attributes
and missing values, and on the official emotions split."""

from __future__ import annotations

import gzip
import io
from pathlib import Path

import numpy as np
import pytest
from scipy.io import arff
from shared_data import DATASETS, needs_datasets
from sklearn.neighbors import KNeighborsClassifier
from sklearn.utils.estimator_checks import parametrize_with_checks
from weka_port import (
    k_nearest,
    mulan_measures,
    mulan_mlknn,
    weka_ibk_proba,
    weka_ranges,
    weka_sq_distances,
)

from mlgraph.data import load_mulan
from mlgraph.evaluation import metrics as M
from mlgraph.methods import KNNClassifier, MLkNN
from mlgraph.methods.weka import WekaEuclidean, weka_neighbours


def flags_like(seed: int, n: int = 60, missing: float = 0.0):
    """A mixed table as flags has one (numeric attributes, a 4-valued and two 2-valued nominal
    ones), values rounded so that distances tie, three duplicate rows. Returns the attributes as
    Weka sees them (codes, NaN = missing), which are nominal, and the project's encoding (the
    4-valued attribute one-hot) with its nominal column groups."""
    rng = np.random.default_rng(seed)
    num = np.round(rng.normal(size=(n, 3)), 1)
    raw = np.column_stack([num[:, :1], rng.integers(0, 4, n), num[:, 1:], rng.integers(0, 2, (n, 2))]).astype(
        float
    )
    raw[5] = raw[7] = raw[3]
    raw[rng.random(raw.shape) < missing] = np.nan
    hot = np.zeros((n, 4))
    ok = ~np.isnan(raw[:, 1])
    hot[np.flatnonzero(ok), raw[ok, 1].astype(int)] = 1
    hot[~ok] = np.nan
    X = np.column_stack([raw[:, :1], hot, raw[:, 2:]])
    return raw, np.array([0, 1, 0, 0, 1, 1], dtype=bool), X, [[1, 2, 3, 4], [7], [8]]


@pytest.mark.parametrize("missing", [0.0, 0.15])
@pytest.mark.parametrize("seed", range(3))
def test_distances_are_wekas_bit_for_bit(seed, missing):
    raw, nominal, X, groups = flags_like(seed, missing=missing)
    lo, width = weka_ranges(raw[:40], nominal)
    metric = WekaEuclidean(groups).fit(X[:40])
    expected = weka_sq_distances(raw[40:], raw[:40], nominal, lo, width)
    assert np.array_equal(metric.exact_sq_distances(X[40:], X[:40]), expected)
    if not missing:  # the Gram formula is within its stated bound of the exact sums
        D, error = metric.sq_distances(X[40:], X[:40])
        assert (np.abs(D - expected) <= error[:, None]).all()


@pytest.mark.parametrize("missing", [0.0, 0.15])
@pytest.mark.parametrize("seed", range(4))
def test_neighbours_are_those_of_linear_nn_search(seed, missing):
    """Among tied instances, the heap's survivors (ML-kNN) and every tie of the k-th (IBk)."""
    raw, nominal, X, groups = flags_like(seed, missing=missing)
    lo, width = weka_ranges(raw[:40], nominal)
    metric = WekaEuclidean(groups).fit(X[:40])
    for train_rows in (True, False):
        rows = slice(0, 40) if train_rows else slice(40, 60)
        D = weka_sq_distances(raw[rows], raw[:40], nominal, lo, width)
        for k in (1, 4, 7):
            for ties in ("heap", "all"):
                found = weka_neighbours(metric, X[rows], X[:40], k, exclude_self=train_rows, ties=ties)
                for i, row in enumerate(found.toarray()):
                    search = k_nearest(D[i], k, skip=i if train_rows else None)
                    assert sorted(np.flatnonzero(row)) == sorted(search[:k] if ties == "heap" else search)


def test_ties_are_broken_by_the_heap_not_by_index():
    """Ten training points at distance 1 and k = 3: the heap keeps the first three scanned, and
    a nearer point evicts the top, here the first scanned (heap layout), not the last."""
    X = np.array([[0.0], [1.0], [-1.0], [1.0], [-1.0], [1.0], [0.5], [3.0]])
    metric = WekaEuclidean().fit(X[1:])  # norm = (x + 1) / 4
    found = weka_neighbours(metric, X[:1], X[1:], 3, ties="heap").toarray()[0]
    expected = k_nearest(
        weka_sq_distances(X[:1], X[1:], np.zeros(1, bool), *weka_ranges(X[1:], np.zeros(1, bool)))[0], 3
    )
    assert sorted(np.flatnonzero(found)) == sorted(expected[:3]) == [1, 2, 5]


def test_weka_rules_by_hand():
    """Min-max on the training rows, nominal mismatch 1, missing values (module docstring)."""
    train = np.array([[0.0, 0.0], [10.0, 1.0], [5.0, 1.0]])  # numeric, then a {0,1} nominal
    metric = WekaEuclidean([[1]]).fit(train)
    q = np.array([[2.0, 0.0], [np.nan, 1.0], [20.0, np.nan]])
    E = metric.exact_sq_distances(q, train)
    assert E[0].tolist() == pytest.approx([0.2**2, 0.8**2 + 1, 0.3**2 + 1])
    # missing numeric: 1 − v for v < 0.5, else v (v = the other's norm); nominal equal: 0
    assert E[1].tolist() == pytest.approx([1.0**2 + 1, 1.0**2, 0.5**2])
    # outside the range: norm 2; missing nominal: 1
    assert E[2].tolist() == pytest.approx([2.0**2 + 1, 1.0**2 + 1, 1.5**2 + 1])
    both_missing = WekaEuclidean().fit(np.array([[np.nan], [1.0], [3.0]]))
    assert both_missing.exact_sq_distances(np.array([[np.nan]]), np.array([[np.nan], [1.0]])).tolist() == [
        [1.0, 1.0]
    ]


def test_bad_groups_and_k_are_refused():
    X = np.zeros((5, 3))
    for groups, match in [([[0, 3]], "outside"), ([[0], [0, 1]], "shares"), ([[]], "distinct")]:
        with pytest.raises(ValueError, match=match):
            WekaEuclidean(groups).fit(X)
    metric = WekaEuclidean().fit(X)
    with pytest.raises(ValueError, match="k=5 must lie in 1..4"):
        weka_neighbours(metric, X, X, 5, exclude_self=True)


@pytest.mark.parametrize("missing", [0.0, 0.15])
def test_mlknn_weka_matches_mulans_on_nominal_data(tmp_path, missing):
    """A flags-like ARFF file (a 4-valued nominal attribute, two-valued ones, missing values) read
    by the loader (one-hot columns, nominal groups, NaN kept) and fitted by MLkNN(metric="weka")
    gives MULAN's ML-kNN (the port, on the file read by scipy) exactly."""
    raw, nominal, _, _ = flags_like(1, n=120, missing=missing)
    rng = np.random.default_rng(5)
    Y = (rng.random((120, 4)) < 0.35).astype(int)
    Y[raw[:, 1] == 2, 0] = 1  # labels that depend on the nominal values
    lines = ["@relation flags_like", "@attribute a0 numeric", "@attribute colour {red,green,blue,gold}"]
    lines += ["@attribute a2 numeric", "@attribute a3 numeric", "@attribute crescent {yes,no}"]
    lines += ["@attribute icon {0,1}"] + [f"@attribute L{j} {{0,1}}" for j in range(4)] + ["@data"]
    names = [None, ["red", "green", "blue", "gold"], None, None, ["yes", "no"], ["0", "1"]]

    def cell(v, values):
        return "?" if np.isnan(v) else (values[int(v)] if values else repr(float(v)))

    for row, y in zip(raw, Y, strict=True):
        lines.append(
            ",".join([cell(v, vals) for v, vals in zip(row, names, strict=True)] + [str(v) for v in y])
        )
    path = tmp_path / "flags_like.arff"
    path.write_text("\n".join(lines) + "\n")

    data, meta = arff.loadarff(str(path))
    table = np.column_stack(
        [
            data[name].astype(float)
            if meta[name][0] == "numeric"
            else np.array(
                [meta[name][1].index(v.decode()) if v.decode() != "?" else np.nan for v in data[name]]
            )
            for name in meta.names()[:6]
        ]
    )
    conf, pred = mulan_mlknn(table[:80], Y[:80], table[80:], nominal, k=7)
    expected = mulan_measures(Y[80:], conf, pred)

    ds = load_mulan(path, n_labels=4, missing="keep")
    assert ds.X.shape == (120, 9) and ds.nominal_groups == ((1, 2, 3, 4), (7,), (8,))
    model = MLkNN(k=7, metric="weka", nominal_groups=ds.nominal_groups).fit(ds.X[:80], ds.Y[:80])
    scores = model.decision_function(ds.X[80:])
    np.testing.assert_array_equal(scores, conf)
    got = M.evaluate(ds.Y[80:], scores, model.predict_from_scores(scores), profile="mulan")
    for name, value in expected.items():
        assert got[name] == pytest.approx(value, abs=5e-5, nan_ok=True), name


def read_split(path_train: Path, path_test: Path, xml: Path):
    """Features and labels of a dense MULAN split read by scipy (labels by name from the XML)."""
    labels = [line.split('"')[1] for line in xml.read_text().splitlines() if "<label " in line]

    def read(path):
        data, meta = arff.loadarff(io.StringIO(gzip.decompress(path.read_bytes()).decode()))
        features = [n for n in meta.names() if n not in labels]
        X = np.column_stack([data[f].astype(float) for f in features])
        Y = np.column_stack([[float(v) for v in data[label]] for label in labels]).astype(int)
        return X, Y

    return (*read(path_train), *read(path_test))


@needs_datasets
def test_mlknn_weka_matches_mulans_on_emotions():
    """The official emotions split, read by scipy for the port and by the loader for MLkNN: the
    scores are the port's bit for bit, the MULAN-profile metrics its measures."""
    from mlgraph.data.splits import load_fixed_split

    X_train, Y_train, X_test, Y_test = read_split(
        DATASETS / "splits/emotions-train.arff.gz",
        DATASETS / "splits/emotions-test.arff.gz",
        DATASETS / "emotions.xml",
    )
    conf, pred = mulan_mlknn(X_train, Y_train, X_test, np.zeros(X_train.shape[1], bool))
    ds = load_fixed_split("emotions", data_dir=str(DATASETS))
    n = ds.n_train
    model = MLkNN(metric="weka").fit(ds.X[:n], ds.Y[:n])
    scores = model.decision_function(ds.X[n:])
    np.testing.assert_array_equal(scores, conf)
    got = M.evaluate(ds.Y[n:], scores, model.predict_from_scores(scores), profile="mulan")
    expected = mulan_measures(Y_test, conf, pred)
    assert {k: round(got[k], 4) for k in expected} == {k: round(v, 4) for k, v in expected.items()}
    assert round(got["avg_precision"], 3) == 0.797  # MULAN's ML-kNN on this split
    default = MLkNN().fit(ds.X[:n], ds.Y[:n])  # z-scored Euclidean neighbours: another result
    assert round(M.average_precision(ds.Y[n:], default.decision_function(ds.X[n:])), 3) == 0.784


@pytest.mark.parametrize("missing", [0.0, 0.15])
def test_knn_classifier_weka_is_ibk(missing):
    raw, nominal, X, groups = flags_like(2, missing=missing)
    y = np.random.default_rng(2).integers(0, 2, 60)
    for k in (1, 3, 6):
        expected = weka_ibk_proba(raw[:40], y[:40], raw[40:], nominal, k)
        model = KNNClassifier(k, "weka", groups).fit(X[:40], y[:40])
        np.testing.assert_allclose(model.predict_proba(X[40:]), expected, rtol=0, atol=1e-15)
        # MULAN's BR/CC rule: class 1 unless class 0 is strictly more probable
        np.testing.assert_array_equal(model.predict(X[40:]), (expected[:, 0] <= expected[:, 1]).astype(int))


def test_knn_classifier_euclidean_is_sklearns():
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(50, 4)), rng.integers(0, 3, 50)
    ours = KNNClassifier(3).fit(X[:30], y[:30])
    theirs = KNeighborsClassifier(3).fit(X[:30], y[:30])
    np.testing.assert_array_equal(ours.predict_proba(X[30:]), theirs.predict_proba(X[30:]))
    np.testing.assert_array_equal(ours.predict(X[30:]), theirs.predict(X[30:]))
    with pytest.raises(ValueError, match="metric='cosine' must be euclidean or weka"):
        KNNClassifier(3, "cosine").fit(X, y)
    with pytest.raises(ValueError, match="contains NaN"):
        MLkNN().fit(np.where(X > 2, np.nan, X), (X[:, :2] > 0).astype(int))


@parametrize_with_checks([KNNClassifier(3), KNNClassifier(3, "weka")])
def test_knn_classifier_is_a_scikit_learn_classifier(estimator, check):
    check(estimator)
