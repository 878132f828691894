"""Selectors inside a semi-supervised trial: ranked on the labelled rows, in a coherent pipeline."""

import numpy as np
import pytest
from omegaconf import OmegaConf
from sklearn.base import clone

from mlgraph.data import load_dataset
from mlgraph.engine.plan import make_estimator
from mlgraph.engine.runner import run_trials
from mlgraph.evaluation.metrics import METRICS
from mlgraph.evaluation.protocols import labelling_rate_trials
from mlgraph.methods.selection import GMBA, MLFS, MLRF, SPEC


@pytest.fixture(scope="module")
def partly_labelled():
    """A planted problem (features 0-4 decide 4 labels) with 60 % of the rows unlabelled (−1)."""
    rng = np.random.default_rng(7)
    X = rng.standard_normal((200, 20))
    f = X[:, :5]
    Y = np.stack(
        [f[:, 0] + f[:, 1] > 0, f[:, 2] > 0.3, f[:, 3] - f[:, 4] > 0, f[:, 1] + f[:, 3] > 0.5], axis=1
    ).astype(np.int8)
    labelled = np.zeros(200, dtype=bool)
    labelled[rng.choice(200, 80, replace=False)] = True
    targets = np.where(labelled[:, None], Y, -1).astype(np.int8)
    return X, Y, targets, labelled


@pytest.mark.parametrize(
    "selector", [GMBA(random_state=0), MLFS(), MLRF(), SPEC()], ids=lambda s: type(s).__name__
)
def test_selector_ranks_on_the_labelled_rows_only(partly_labelled, selector):
    X, Y, targets, labelled = partly_labelled
    semi = clone(selector).fit(X, targets)
    own = clone(selector).fit(X[labelled], Y[labelled])
    np.testing.assert_array_equal(semi.scores_, own.scores_)
    np.testing.assert_array_equal(semi.ranking_, own.ranking_)
    assert semi.transform(X).shape == (200, 6)  # transform keeps every row, labelled or not
    everything = clone(selector).fit(X, Y)  # the labels of the other rows would change the scores
    assert not np.allclose(everything.scores_, semi.scores_)


def test_selector_refuses_malformed_unlabelled_rows(partly_labelled):
    X, Y, targets, _ = partly_labelled
    mixed = targets.copy()
    mixed[np.flatnonzero(mixed[:, 0] == -1)[0], 0] = 1
    with pytest.raises(ValueError, match="mixes −1 with 0/1"):
        MLFS().fit(X, mixed)
    with pytest.raises(ValueError, match="no labelled row"):
        MLFS().fit(X, np.full_like(targets, -1))
    one = np.full_like(targets, -1)
    one[0] = Y[0]
    with pytest.raises(ValueError, match="at least 2 labelled training rows, got 1"):
        MLFS().fit(X, one)
    with pytest.raises(ValueError, match="X has 200 rows but Y has 199"):
        MLFS().fit(X, targets[:-1])


def test_br_knn_with_gmba_under_the_ssl_protocol():
    """The command `method=br_knn selector=gmba` under the default `protocol=ssl`, on
    real data: normalise on every training row (no labels needed), rank on the labelled rows,
    3-NN Binary Relevance on the labelled rows (it drops −1 rows itself)."""
    data = load_dataset("emotions")
    method = OmegaConf.create(
        {
            "_target_": "mlgraph.methods.BinaryRelevance",
            "name": "br_knn",
            "standardize": False,
            "base_estimator": {"_target_": "sklearn.neighbors.KNeighborsClassifier", "n_neighbors": 3},
        }
    )
    selector = OmegaConf.create(
        {"_target_": "mlgraph.methods.selection.GMBA", "name": "gmba", "fraction": 0.3, "random_state": 0}
    )
    pipeline = make_estimator(method, selector, normalise=True)
    trials = labelling_rate_trials(data.n_samples, rates=[0.1, 0.3], repeats=1, seed=0)
    table = run_trials(pipeline, data.X, data.Y, trials, list(METRICS), progress=False)
    assert (table.status == "ok").all(), table.error.tolist()
    assert (table.avg_precision > 0.4).all()  # emotions: chance is about 0.4
    trial = trials[0]
    model = clone(pipeline).fit(data.X[trial.train], trial.targets(data.Y))
    np.testing.assert_allclose(model["normalise"].mean_, data.X[trial.train].mean(axis=0))
    lab = trial.labelled
    ranked_alone = clone(pipeline["select"]).fit(
        model["normalise"].transform(data.X[trial.train][lab]), data.Y[trial.train][lab]
    )
    np.testing.assert_array_equal(model["select"].ranking_, ranked_alone.ranking_)
    assert model["classify"].estimators_[0].n_samples_fit_ == lab.sum()
