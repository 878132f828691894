"""An Optuna (TPE) search through the real command: each trial one MLflow run under the sweep's
parent, the best value on the parent, and a stopped study continued by resume=true; a search
space that no job can run, stopped before the study; a sweep whose every job failed."""

import os
import subprocess
import sys
from pathlib import Path

import mlflow
import optuna
import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


def _sweep(out: Path, *extra: str, preset: tuple[str, ...] = ("experiment=mlmrrw_optuna",)):
    env = {**os.environ, "MLGRAPH_OUTPUT_DIR": str(out)}
    cmd = [sys.executable, "-m", "run", "-m", *preset, "dataset=emotions", "progress=false"]
    return subprocess.run([*cmd, *extra], cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)


def _runs(out: Path, experiment: str):
    client = mlflow.MlflowClient(f"sqlite:///{out}/mlflow.db")
    runs = client.search_runs([client.get_experiment_by_name(experiment).experiment_id])
    (parent,) = [r for r in runs if r.data.tags.get("kind") == "sweep"]
    return parent, [r for r in runs if r.data.tags.get("kind") != "sweep"]


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
    assert parent.data.metrics["optuna_best_value"] == pytest.approx(max(values))  # sortable
    assert parent.data.metrics["optuna_trials_complete"] == 8 and tags["optuna_trials"] == "8"

    study = optuna.load_study(study_name=tags["optuna_study"], storage=f"sqlite:///{tmp_path}/optuna.db")
    assert len(study.trials) == 8 and study.best_value == pytest.approx(max(values))
    assert set(study.best_params) == {"method.gamma_A", "method.gamma_I", "method.sigma_scale", "method.nu2"}


MLKNN_SEARCH = ("hydra/sweeper=optuna", "method=mlknn", "protocol=explore", "hydra.sweeper.n_trials=2")


@pytest.mark.parametrize(
    ("override", "problem"),
    [
        ("method.s=interval(1.0, 0.1)", "the interval's low end 1.0 is not below its high end 0.1"),
        ("method.nosuch=interval(0.1, 1.0)", "MLkNN (method mlknn) has no parameter 'nosuch'"),
    ],
)
def test_a_search_space_no_job_can_run_stops_before_the_study(tmp_path, override, problem):
    proc = _sweep(tmp_path, override, preset=MLKNN_SEARCH)
    assert proc.returncode == 2, proc.stderr[-3000:]
    (paragraph,) = [line for line in proc.stderr.splitlines() if line.strip()]
    assert paragraph.startswith(f"{override}: {problem}") and "No Optuna trial was run" in paragraph
    parent, jobs = _runs(tmp_path, "mlgraph")
    assert jobs == [] and parent.info.status == "FAILED" and parent.data.tags["error"] == paragraph
    assert not (tmp_path / "optuna.db").exists() or not optuna.get_all_study_names(
        f"sqlite:///{tmp_path}/optuna.db"
    )


def test_a_setting_that_does_not_compose_stops_before_its_job(tmp_path):
    proc = _sweep(tmp_path, "+method.k=int(interval(3, 9))", preset=MLKNN_SEARCH)  # k exists: no +
    assert proc.returncode == 2, proc.stderr[-3000:]
    (paragraph,) = [line for line in proc.stderr.splitlines() if line.strip()]
    assert (
        paragraph.startswith("the Optuna search's setting +method.k=")
        and "already at 'method.k'" in paragraph
    )
    parent, jobs = _runs(tmp_path, "mlgraph")
    assert jobs == [] and parent.info.status == "FAILED" and parent.data.tags["error"] == paragraph


@pytest.mark.parametrize(
    "search",
    [
        (
            *MLKNN_SEARCH,
            "method.k=int(interval(300, 400))",
            "hydra.launcher.n_jobs=1",
        ),  # goes on past failures
        ("method=mlknn", "protocol=explore", "method.k=300,400", "hydra.launcher.n_jobs=1"),  # Hydra's own
    ],
    ids=["optuna", "basic"],
)
def test_a_sweep_whose_every_job_failed_exits_non_zero(tmp_path, search):
    """Each job's k exceeds the training rows of the explore protocol's trials (at most 118)."""
    proc = _sweep(tmp_path, preset=search)
    assert proc.returncode == 1, proc.stderr[-3000:]
    closing = proc.stderr.strip().splitlines()[-1]
    assert closing.startswith("sweep ") and "all 2 jobs failed; first error: method.k=" in closing
    assert "is too large for dataset emotions" in closing and "Traceback" not in proc.stderr
    parent, jobs = _runs(tmp_path, "mlgraph")
    assert parent.info.status == "FAILED" and [r.info.status for r in jobs] == ["FAILED", "FAILED"]
