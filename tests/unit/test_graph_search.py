"""The approximate neighbour search (graph.search=approximate) and its recall."""

from __future__ import annotations

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from mlgraph.graphs import build_graph, knn_graph, knn_recall
from mlgraph.graphs.search import approximate_neighbours, check_search
from mlgraph.methods import MLGFHF, MLMRRW, SSWL


def _clusters(n: int, d: int = 8, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return (3.0 * rng.normal(size=(10, d)))[rng.integers(0, 10, n)] + rng.normal(size=(n, d))


def _exact_neighbours(X: np.ndarray, k: int) -> np.ndarray:
    D = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)
    np.fill_diagonal(D, np.inf)
    return np.argsort(D, axis=1, kind="stable")[:, :k]


def test_approximate_neighbours_find_the_exact_ones_and_not_the_point_itself():
    X = _clusters(600)
    found = approximate_neighbours(X, 7)
    exact = _exact_neighbours(X, 7)
    assert found.shape == (600, 7)
    assert not (found == np.arange(600)[:, None]).any()
    assert all(len(set(row)) == 7 for row in found)
    agree = np.mean([len(set(a) & set(b)) / 7 for a, b in zip(found, exact, strict=True)])
    assert agree >= 0.99


def test_approximate_neighbours_are_the_same_on_one_thread_and_on_two():
    """faiss's multithreaded insertion is not deterministic; each half is built on one thread."""
    X = _clusters(3000, d=16, seed=1)
    with threadpool_limits(1):
        one = approximate_neighbours(X, 10)
    with threadpool_limits(2):
        two = approximate_neighbours(X, 10)
        again = approximate_neighbours(X, 10)
    np.testing.assert_array_equal(one, two)
    np.testing.assert_array_equal(two, again)


def test_recall_counts_the_listed_neighbours_within_the_exact_kth_distance():
    X = _clusters(150, d=4, seed=2)
    exact = _exact_neighbours(X, 5)
    assert knn_recall(X, exact) == 1.0
    wrong = exact.copy()
    D = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)
    np.fill_diagonal(D, -np.inf)
    wrong[:, -1] = np.argmax(D, axis=1)  # the farthest point instead of the 5th nearest
    assert knn_recall(X, wrong) == pytest.approx(0.8)


def test_recall_counts_a_tie_at_the_kth_distance_as_found():
    X = np.array([[0.0], [1.0], [-1.0], [5.0], [9.0]])
    listed = np.array([[2], [0], [0], [1], [3]])  # point 0: -1 and 1 tie, either is right
    assert knn_recall(X, listed) == 1.0


def test_approximate_knn_graph_reports_its_recall_and_equals_the_exact_graph_when_it_finds_all():
    X = _clusters(400, d=2, seed=3)
    W, info = build_graph(X, k=6, search="approximate", return_info=True)
    assert info == {"knn_recall": 1.0}
    exact = build_graph(X, k=6)
    assert (W != exact).nnz == 0
    assert knn_graph(X, 1.0, 6, search="approximate").info["knn_recall"] == 1.0


@pytest.mark.parametrize("kind", ["epsilon", "bmatching"])
def test_approximate_search_is_for_knn_graphs_only(kind):
    with pytest.raises(ValueError, match="kNN graphs only"):
        build_graph(_clusters(40), kind=kind, eps=0.5, b=3, search="approximate")
    with pytest.raises(ValueError, match="search must be one of"):
        check_search("fast")


@pytest.mark.parametrize(
    "estimator",
    [
        MLMRRW(knn_search="approximate"),
        MLMRRW(knn_search="approximate", solver="nystrom", n_landmarks=40),
        MLGFHF(knn_search="approximate"),
        SSWL(knn_search="approximate", max_iter=3),
    ],
    ids=["mlmrrw", "mlmrrw-nystrom", "gfhf", "sswl"],
)
def test_graph_based_estimators_search_approximately_and_report_the_recall(estimator):
    X = _clusters(200, d=2, seed=4)
    rng = np.random.default_rng(4)
    Y = (X @ rng.normal(size=(2, 3)) + rng.normal(size=(200, 3)) > 0).astype(np.int8)
    Y[rng.random(200) < 0.5] = -1
    approximate = estimator.fit(X, Y)
    assert approximate.graph_report_ == {"knn_recall": 1.0}
    exact = estimator.__class__(**{**estimator.get_params(), "knn_search": "exact"}).fit(X, Y)
    assert exact.graph_report_ == {}
    np.testing.assert_allclose(
        approximate.decision_function(X), exact.decision_function(X), rtol=1e-9, atol=1e-12
    )


def test_the_recall_reaches_the_trials_table_and_the_run_metrics():
    """runner rows take ``graph_report_`` as graph_<key> columns; a run logs their minimum."""
    from mlgraph.engine.results import _metric_rows
    from mlgraph.engine.runner import Parallelism, run_trials, summarise
    from mlgraph.evaluation.protocols import labelling_rate_trials

    X = _clusters(120, d=2, seed=5)
    Y = (X @ np.array([[1.0, -1.0], [0.5, 2.0]]) > 0).astype(np.int8)
    trials = labelling_rate_trials(len(X), rates=[0.5], repeats=2, seed=0)
    table = run_trials(
        MLGFHF(knn_search="approximate", k=5), X, Y, trials, ["avg_precision"], Parallelism(1, 1), False
    )
    assert (table.graph_knn_recall == 1.0).all()
    logged = {
        key: value
        for key, value, _ in _metric_rows(summarise(table, ["avg_precision"]), table, ["avg_precision"])
    }
    assert logged["run/graph_knn_recall_min"] == 1.0
