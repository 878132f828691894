"""What a run carries for whoever reads it later: its dataset as an MLflow input (the UI's
Datasets column), its metric keys by what their step means, and, with
``tracking.log_model=true``, a model that both MLflow loaders reload with the same predictions
(in-process, real data, a throwaway SQLite store)."""

from pathlib import Path

import mlflow
import numpy as np
import pytest
from hydra import compose, initialize_config_dir

from mlgraph.data import load_dataset
from mlgraph.engine.experiment import run_experiment
from mlgraph.engine.jobs import JobInfo
from mlgraph.engine.lineage import DIGEST_LENGTH, model_trial
from mlgraph.evaluation.metrics import METRICS
from mlgraph.evaluation.protocols import fixed_split_trials, labelling_rate_trials

pytestmark = pytest.mark.integration
CONF = Path(__file__).resolve().parents[2] / "conf"


def _run(tmp_path, *overrides, job=None):
    with initialize_config_dir(version_base="1.3", config_dir=str(CONF)):
        cfg = compose(
            "config",
            overrides=[
                "progress=false",
                "n_jobs=1",
                f"tracking.uri=sqlite:///{tmp_path}/mlflow.db",
                f"tracking.artifact_location={tmp_path}/art",
                *overrides,
            ],
        )
    run_experiment(cfg, job=job)
    client = mlflow.MlflowClient(cfg.tracking.uri)
    (run,) = client.search_runs([client.get_experiment_by_name("mlgraph").experiment_id])
    return client, run


def test_dataset_input_and_metric_sections(tmp_path):
    job = JobInfo(choices={"protocol": "ssl"})
    overrides = ["method=mlknn", "dataset=emotions", "protocol.repeats=2", "protocol.rates=[0.1,0.5]"]
    client, run = _run(tmp_path, *overrides, job=job)
    (given,) = run.inputs.dataset_inputs
    data = load_dataset("emotions")
    assert given.dataset.name == "emotions" and given.dataset.digest == data.sha256[:DIGEST_LENGTH]
    assert run.data.tags["dataset_sha256"].startswith(given.dataset.digest)
    assert data.sha256 in given.dataset.profile and '"features_shape": [593, 72]' in given.dataset.profile
    assert [(t.key, t.value) for t in given.tags] == [("mlflow.data.context", "ssl")]
    assert str(data.source) in given.dataset.source
    # at the top level the summaries and the per-rate series (step = rate in %); any other
    # series under the prefix that says what its step is
    keys = set(run.data.metrics)
    assert {"avg_precision_overall", "n_trials", "n_failed"} <= keys
    per_rate = set(METRICS) | {f"{m}_std" for m in METRICS}
    assert not [
        k
        for k in keys
        if "/" not in k
        and not k.endswith("_overall")
        and k not in ("n_trials", "n_failed")
        and k not in per_rate
    ]
    steps = [m.step for m in client.get_metric_history(run.info.run_id, "avg_precision")]
    assert sorted(steps) == [10, 50]  # the labelling rates in percent
    assert "avg_precision_std" in keys and "run/fit_seconds_mean" in keys
    assert "model" not in {a.path for a in client.list_artifacts(run.info.run_id)}  # off by default


@pytest.mark.parametrize(
    "method, protocol",
    [("mlknn", ["protocol=fixed"]), ("gfhf", ["protocol.repeats=1", "protocol.rates=[0.2,0.5]"])],
)
def test_logged_model_reloads_in_both_flavours_with_the_same_predictions(tmp_path, method, protocol):
    _, run = _run(tmp_path, f"method={method}", "dataset=emotions", "tracking.log_model=true", *protocol)
    uri = f"runs:/{run.info.run_id}/model"
    X = load_dataset("emotions").X[:40]
    sklearn_model = mlflow.sklearn.load_model(uri)
    predicted = sklearn_model.predict(X)
    assert np.array_equal(predicted, mlflow.pyfunc.load_model(uri).predict(X))
    assert predicted.shape == (40, 6) and set(np.unique(predicted)) <= {0, 1}
    info = mlflow.models.get_model_info(uri)
    assert info.signature is not None and info.saved_input_example_info is not None
    assert info.flavors["sklearn"]["serialization_format"] == "skops"
    # fitted on the training part of the documented trial: the published split, or the top rate
    assert run.data.tags["model_trial"] == (
        "rate=1 repetition=0" if method == "mlknn" else "rate=0.5 repetition=0"
    )
    n_train = 391 if method == "mlknn" else 395
    assert run.data.tags["model_training_rows"] == str(n_train)
    if method == "gfhf":  # a transductive method: its graph holds the training rows only, no test row
        assert sklearn_model.label_scores_.shape[0] == n_train


def test_model_trial_is_the_published_split_or_the_first_repetition_at_the_top_rate():
    ssl = labelling_rate_trials(60, rates=[0.1, 0.5], repeats=3, seed=0)
    chosen = model_trial(ssl)
    assert (chosen.rate, chosen.repetition) == (0.5, 0)
    (fixed,) = fixed_split_trials(60, n_train=40)
    assert model_trial([fixed]) is fixed
