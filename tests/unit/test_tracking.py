"""Tracking helpers and the hyper-parameter selection rule, on a throwaway SQLite store."""

import os
import subprocess

import mlflow
import pandas as pd
import pytest
from omegaconf import OmegaConf

from mlgraph.reporting.hparams import hparams_yaml, select
from mlgraph.tracking.store import _git, config_params, flatten, log_batch, log_dataset, setup_experiment


@pytest.fixture
def store(tmp_path):
    uri = f"sqlite:///{tmp_path}/nested/mlflow.db"  # parent folder created on demand
    experiment_id = setup_experiment(uri, "t", artifact_location=str(tmp_path / "art"))
    assert setup_experiment(uri, "t") == experiment_id  # idempotent
    yield uri, experiment_id
    mlflow.set_tracking_uri(None)


def test_log_batch_chunks_beyond_mlflow_limits(store):
    uri, experiment_id = store
    client = mlflow.MlflowClient(uri)
    run = client.create_run(experiment_id)
    metrics = [("m", float(i), i) for i in range(2500)]  # MLflow takes 1000 per request
    params = {f"p{i}": str(i) for i in range(250)}  # and 100 params
    log_batch(run.info.run_id, metrics=metrics, params=params, tags={"t": 1})
    history = client.get_metric_history(run.info.run_id, "m")
    assert sorted(m.step for m in history) == list(range(2500))
    data = client.get_run(run.info.run_id).data
    assert len(data.params) == 250 and data.tags["t"] == "1"


def _dataset():
    from mlflow.entities import Dataset, DatasetInput

    return DatasetInput(Dataset("d", "0123abcd", "local", '{"uri": "d.arff"}'), [])


def test_log_dataset_retries_a_concurrent_insert_of_the_same_row(store, monkeypatch):
    uri, experiment_id = store
    client = mlflow.MlflowClient(uri)
    run = client.create_run(experiment_id)
    real, calls = mlflow.MlflowClient.log_inputs, []

    def racing(self, run_id, datasets):  # another job's insert wins the first time
        calls.append(run_id)
        if len(calls) == 1:
            raise mlflow.exceptions.MlflowException(
                'duplicate key value violates unique constraint "dataset_pk"'
            )
        return real(self, run_id, datasets)

    monkeypatch.setattr(mlflow.MlflowClient, "log_inputs", racing)
    log_dataset(run.info.run_id, _dataset())
    assert len(calls) == 2
    assert [d.dataset.name for d in client.get_run(run.info.run_id).inputs.dataset_inputs] == ["d"]


def test_log_dataset_raises_other_errors_at_once(store, monkeypatch):
    calls = []

    def failing(self, run_id, datasets):
        calls.append(run_id)
        raise mlflow.exceptions.MlflowException("run r not found")

    monkeypatch.setattr(mlflow.MlflowClient, "log_inputs", failing)
    with pytest.raises(mlflow.exceptions.MlflowException, match="not found"):
        log_dataset("r", _dataset())
    assert calls == ["r"]


def test_flatten_and_config_params():
    assert flatten({"a": {"b": 1, "c": {"d": 2}}, "e": {}}) == {"a.b": 1, "a.c.d": 2, "e": {}}
    cfg = OmegaConf.create({"x": {"y": "${z}"}, "z": 3, "hydra": {"skip": 1}})
    assert config_params(cfg) == {"x.y": "3", "z": "3"}
    with pytest.raises(Exception, match="dataset.arff"):
        config_params(OmegaConf.create({"dataset": {"arff": "???"}}))


def test_selection_rule_prefers_largest_gamma_I_within_tolerance():
    ranked = pd.DataFrame(
        {
            "params.method.gamma_A": ["0.1", "0.01", "0.01"],
            "params.method.gamma_I": ["0", "10", "1000"],
            "params.method.sigma_scale": ["1", "0.5", "0.5"],
            "metrics.avg_precision_overall": [0.800, 0.7995, 0.790],
        }
    )
    chosen = select(ranked, "avg_precision_overall", tolerance=0.001, prefer_max="gamma_I")
    assert chosen["params.method.gamma_I"] == "10"
    assert select(ranked, "avg_precision_overall", 0.0, prefer_max="gamma_I")["params.method.gamma_I"] == "0"
    assert select(ranked, "avg_precision_overall", tolerance=0.001)["params.method.gamma_I"] == "0"  # best
    text = hparams_yaml(chosen, ("method.gamma_A", "method.gamma_I"), "a test")
    assert OmegaConf.create(text).method == {"gamma_A": 0.01, "gamma_I": 10}
    assert text.startswith("# @package _global_")


def test_experiments_open_in_the_model_training_view(tmp_path):
    """MLflow 3's UI opens an experiment without ``mlflow.experimentKind`` in its GenAI view."""
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = mlflow.MlflowClient(uri)
    made = setup_experiment(uri, "made_here")
    assert client.get_experiment(made).tags["mlflow.experimentKind"] == "custom_model_development"
    setup_experiment(uri, "made_here")  # a second set-up leaves it as it is
    older = client.create_experiment("made_by_mlflow")  # one made before mlgraph tagged them
    assert "mlflow.experimentKind" not in client.get_experiment(older).tags
    setup_experiment(uri, "made_by_mlflow")
    assert client.get_experiment(older).tags["mlflow.experimentKind"] == "custom_model_development"


def test_provenance_reads_git_without_writing_its_index(tmp_path):
    """A stale index makes a plain ``git status`` rewrite it under ``.git/index.lock``; the
    run's provenance must not, as a git killed with its job would leave the lock behind."""
    git = ["git", "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    (tmp_path / "f").write_text("a\n")
    subprocess.run([*git, "add", "f"], cwd=tmp_path, check=True)
    subprocess.run([*git, "commit", "-qm", "x"], cwd=tmp_path, check=True)
    os.utime(tmp_path / "f", (1_577_836_800, 1_577_836_800))  # stat data no longer matches the index
    index = tmp_path / ".git" / "index"
    os.utime(index, (1_600_000_000, 1_600_000_000))
    assert _git("status", "--porcelain", cwd=tmp_path) == ""
    assert index.stat().st_mtime == 1_600_000_000
    subprocess.run(["git", "status", "--porcelain"], cwd=tmp_path, check=True, capture_output=True)
    assert index.stat().st_mtime != 1_600_000_000  # the case guarded against: plain status rewrites it
