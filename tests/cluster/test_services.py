"""A sweep through the real SLURM cluster into the PostgreSQL-backed MLflow server (issue 12)."""

import re
import subprocess
import uuid

import mlflow
import pandas as pd
import psycopg
import pytest

pytestmark = pytest.mark.cluster

NU2 = ["0", "0.01", "0.05", "0.1", "0.2", "0.5", "1", "2"]


def test_sweep_runs_through_slurm_into_the_server(slurm_sweep, tracking_uri, tracking_db, tmp_path):
    experiment = f"cluster-{uuid.uuid4().hex[:8]}"
    argv, kwargs = slurm_sweep(experiment, "method=mlmrrw", "dataset=emotions", f"method.nu2={','.join(NU2)}",
                            "protocol.repeats=1", "protocol.rates=[0.1]")
    done = subprocess.run(argv, **kwargs, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]

    # Every grid point ran as a task of one SLURM job array, which accounting saw complete.
    tasks = sorted(p.name for p in tmp_path.glob("multiruns/*/*/.submitit/*")
                   if re.fullmatch(r"\d+_\d+", p.name))
    assert len(tasks) == len(NU2)
    array = tasks[0].split("_")[0]
    sacct = subprocess.run(["sacct", "-n", "-X", "-P", "-j", array, "-o", "JobID,State"],
                           capture_output=True, text=True, check=True).stdout.split()
    assert sorted(sacct) == sorted(f"{t}|COMPLETED" for t in tasks)

    # The server holds one finished run per grid point, with its artifacts served back.
    client = mlflow.MlflowClient(tracking_uri)
    exp = client.get_experiment_by_name(experiment)
    runs = [r for r in client.search_runs([exp.experiment_id]) if "method.nu2" in r.data.params]
    assert sorted(float(r.data.params["method.nu2"]) for r in runs) == sorted(map(float, NU2))
    for run in runs:
        assert run.info.status == "FINISHED", run.info.run_name
        assert {"trials.csv", "config.yaml"} <= {a.path for a in client.list_artifacts(run.info.run_id)}
        trials = pd.read_csv(mlflow.artifacts.download_artifacts(
            run_id=run.info.run_id, artifact_path="trials.csv", dst_path=str(tmp_path / run.info.run_id),
            tracking_uri=tracking_uri))
        assert len(trials) == 1 and trials["avg_precision"].between(0, 1).all()

    # ... and those runs are rows of the PostgreSQL store behind it.
    with psycopg.connect(tracking_db) as db:
        statuses = db.execute("SELECT r.status FROM runs r JOIN experiments e USING (experiment_id) "
                              "WHERE e.name = %s", (experiment,)).fetchall()
    assert len(statuses) >= len(NU2) and {s for (s,) in statuses} == {"FINISHED"}
