"""An Optuna (TPE) search through the real command: each trial one MLflow run under the sweep's
parent, the best value on the parent, and a stopped study continued by resume=true."""

import os
import subprocess
import sys
from pathlib import Path

import mlflow
import optuna
import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


def _sweep(out: Path, *extra: str):
    env = {**os.environ, "MLGRAPH_OUTPUT_DIR": str(out)}
    cmd = [
        sys.executable,
        "-m",
        "run",
        "-m",
        "experiment=mlmrrw_optuna",
        "dataset=emotions",
        "progress=false",
    ]
    return subprocess.run([*cmd, *extra], cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)


def test_eight_tpe_trials_of_ml_mrrw_land_eight_runs_and_resume(tmp_path):
    proc = _sweep(tmp_path, "hydra.sweeper.n_trials=5")  # a study stopped after 5 of its trials
    assert proc.returncode == 0, proc.stderr[-3000:]
    proc = _sweep(tmp_path, "hydra.sweeper.n_trials=8", "resume=true")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "5 of 8 trials done" in proc.stdout

    client = mlflow.MlflowClient(f"sqlite:///{tmp_path}/mlflow.db")
    experiment = client.get_experiment_by_name("optuna_search")
    runs = client.search_runs([experiment.experiment_id])
    (parent,) = [r for r in runs if r.data.tags.get("kind") == "sweep"]
    children = [r for r in runs if r.data.tags.get("mlflow.parentRunId") == parent.info.run_id]
    assert len(children) == 8 and all(r.info.status == "FINISHED" for r in children)
    assert {r.data.params["protocol.subsample"] for r in children} == {"0.3"}  # the explore protocol
    assert {r.data.params["seed"] for r in children} == {"1000"}
    values = [r.data.metrics["avg_precision_overall"] for r in children]
    assert (
        len({r.info.run_name for r in children}) == 8
    )  # eight settings: the resumed sampler proposes new ones
    tags = parent.data.tags
    assert parent.info.status == "FINISHED" and tags["jobs"] == "8"
    assert float(tags["best_value"]) == pytest.approx(max(values))
    assert float(tags["optuna_best_value"]) == pytest.approx(max(values), rel=1e-5)

    study = optuna.load_study(study_name=tags["optuna_study"], storage=f"sqlite:///{tmp_path}/optuna.db")
    assert len(study.trials) == 8 and study.best_value == pytest.approx(max(values))
    assert set(study.best_params) == {"method.gamma_A", "method.gamma_I", "method.sigma_scale", "method.nu2"}
