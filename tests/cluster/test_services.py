"""A sweep through the real SLURM cluster into the PostgreSQL-backed MLflow server."""

import re
import subprocess
import time
import uuid

import mlflow
import pandas as pd
import psycopg
import pytest

pytestmark = pytest.mark.cluster

ACTIVE = ("|PENDING", "|RUNNING", "|COMPLETING")
NU2 = ["0", "0.01", "0.05", "0.1", "0.2", "0.5", "1", "2"]


def settled_states(array, tasks, timeout=60.0):
    """``JobID|State`` of each task of a job array once accounting lists all ``tasks`` of them
    and has seen them all end.

    submitit collects a task's result as soon as the task writes it, a moment before the task
    exits, so slurmctld may still report that task RUNNING (or COMPLETING), or accounting not list
    it yet, when the sweep returns."""
    deadline = time.monotonic() + timeout
    while True:
        states = subprocess.run(
            ["sacct", "-n", "-X", "-P", "-j", array, "-o", "JobID,State"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        settled = len(states) >= tasks and not any(s.endswith(ACTIVE) for s in states)
        if time.monotonic() > deadline or settled:
            return states
        time.sleep(1)


def test_sweep_runs_through_slurm_into_the_server(slurm_sweep, tracking_uri, tracking_db, tmp_path):
    experiment = f"cluster-{uuid.uuid4().hex[:8]}"
    argv, kwargs = slurm_sweep(
        experiment,
        "method=mlmrrw",
        "dataset=emotions",
        f"method.nu2={','.join(NU2)}",
        "protocol.repeats=1",
        "protocol.rates=[0.1]",
    )
    done = subprocess.run(argv, **kwargs, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]

    # Every grid point ran as a task of one SLURM job array, which accounting saw complete.
    tasks = sorted(
        p.name for p in tmp_path.glob("multiruns/*/*/.submitit/*") if re.fullmatch(r"\d+_\d+", p.name)
    )
    assert len(tasks) == len(NU2)
    array = tasks[0].split("_")[0]
    assert sorted(settled_states(array, len(tasks))) == sorted(f"{t}|COMPLETED" for t in tasks)

    # The server holds one finished run per grid point, with its artifacts served back.
    client = mlflow.MlflowClient(tracking_uri)
    exp = client.get_experiment_by_name(experiment)
    runs = [r for r in client.search_runs([exp.experiment_id]) if "method.nu2" in r.data.params]
    assert sorted(float(r.data.params["method.nu2"]) for r in runs) == sorted(map(float, NU2))
    for run in runs:
        assert run.info.status == "FINISHED", run.info.run_name
        assert {"trials.csv", "config.yaml"} <= {a.path for a in client.list_artifacts(run.info.run_id)}
        trials = pd.read_csv(
            mlflow.artifacts.download_artifacts(
                run_id=run.info.run_id,
                artifact_path="trials.csv",
                dst_path=str(tmp_path / run.info.run_id),
                tracking_uri=tracking_uri,
            )
        )
        assert len(trials) == 1 and trials["avg_precision"].between(0, 1).all()

    # ... and those runs are rows of the PostgreSQL store behind it.
    with psycopg.connect(tracking_db) as db:
        statuses = db.execute(
            "SELECT r.status FROM runs r JOIN experiments e USING (experiment_id) WHERE e.name = %s",
            (experiment,),
        ).fetchall()
    assert len(statuses) >= len(NU2) and {s for (s,) in statuses} == {"FINISHED"}


def test_killed_slurm_sweep_resumes_to_one_finished_run_per_job(slurm_sweep, tracking_uri, tmp_path):
    """Cancel a sweep's SLURM jobs half-way (what a time limit or pre-emption without requeue
    does), run the same command with resume=true: one FINISHED run per job, none RUNNING."""
    import os
    import signal

    experiment = f"resume-{uuid.uuid4().hex[:8]}"
    grid = ["0", "0.1", "0.5", "1", "2", "5", "10", "20"]
    args = [
        "method=mlmrrw",
        "dataset=yeast",
        f"method.nu2={','.join(grid)}",
        "protocol.repeats=12",
        "protocol.rates=[0.5]",
        "tracking.checkpoint_seconds=0",
    ]
    argv, kwargs = slurm_sweep(experiment, *args)
    sweep = subprocess.Popen(
        argv, **kwargs, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    client = mlflow.MlflowClient(tracking_uri)

    def runs():
        exp = client.get_experiment_by_name(experiment)
        found = (
            client.search_runs([exp.experiment_id], run_view_type=mlflow.entities.ViewType.ALL) if exp else []
        )
        return [r for r in found if r.data.tags.get("kind") != "sweep"]

    deadline = time.monotonic() + 400
    while time.monotonic() < deadline and not any(r.info.status == "FINISHED" for r in runs()):
        time.sleep(2)
    arrays = {
        p.name.split("_")[0]
        for p in tmp_path.glob("multiruns/*/*/.submitit/*")
        if re.fullmatch(r"\d+_\d+", p.name)
    }
    subprocess.run(["scancel", *arrays], check=True)  # every job still queued or running ends now
    os.killpg(sweep.pid, signal.SIGINT)
    sweep.communicate(timeout=300)
    deadline = time.monotonic() + 60  # cancelled jobs close their runs within SLURM's KillWait
    while time.monotonic() < deadline and any(r.info.status == "RUNNING" for r in runs()):
        time.sleep(2)
    before = runs()
    assert not [r for r in before if r.info.status == "RUNNING"], "a run was left RUNNING"
    finished_before = {r.info.run_id for r in before if r.info.status == "FINISHED"}
    assert 0 < len(finished_before) < len(grid)

    argv, kwargs = slurm_sweep(experiment, *args, "resume=true")
    done = subprocess.run(argv, **kwargs, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    after = runs()
    assert len(after) == len(grid) and all(r.info.status == "FINISHED" for r in after)
    assert sorted(float(r.data.params["method.nu2"]) for r in after) == sorted(map(float, grid))
    assert finished_before <= {r.info.run_id for r in after}  # finished jobs were skipped, not redone
    assert all(r.data.metrics["n_trials"] == 12 for r in after)


def test_a_job_longer_than_its_time_limit_finishes_through_requeues(slurm_sweep, tracking_uri, tmp_path):
    """A 2-minute limit with the default signal_delay_s=120, which is cut to 30 s with a warning
    (SLURM would otherwise signal every slot at once, and up to 60 s early), and a job of 1,000
    trials, some two minutes of work on one CPU here (three slots of about 60 s, 30 s apart), so
    that a machine a third faster still outlasts its first slot (signalled 30 to 90 s after it
    starts): SLURM signals it, it saves
    its trials and is requeued, and the requeued job reopens its run and computes only the trials
    it had not finished. The last slot may find every trial done (its predecessor was signalled
    while it logged the run) and only log it."""
    experiment = f"requeue-{uuid.uuid4().hex[:8]}"
    argv, kwargs = slurm_sweep(
        experiment,
        "hydra.launcher.timeout_min=2",
        "hydra.launcher.max_num_timeout=12",  # a slow machine needs more slots; each one resumes
        "dataset=yeast",
        "protocol.rates=[0.5]",
        "protocol.repeats=1000",
        "method.nu2=0.1",
    )
    done = subprocess.run(argv, **kwargs, capture_output=True, text=True, timeout=1500)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "signal_delay_s=120 is not well below timeout_min=2" in done.stdout + done.stderr

    (job,) = {p.name for p in tmp_path.glob("multiruns/*/*/.submitit/*") if re.fullmatch(r"\d+(_0)?", p.name)}
    deadline = time.monotonic() + 60  # the task writes its result a moment before it exits
    while True:
        states = subprocess.run(
            ["sacct", "-n", "-X", "-D", "-P", "-j", job.split("_")[0], "-o", "State"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        if states[-1] == "COMPLETED" or time.monotonic() > deadline:
            break
        time.sleep(1)
    assert "REQUEUED" in states and states[-1] == "COMPLETED", states

    client = mlflow.MlflowClient(tracking_uri)
    runs = client.search_runs([client.get_experiment_by_name(experiment).experiment_id])
    (run,) = [r for r in runs if r.data.tags.get("kind") != "sweep"]  # one run, reopened by each slot
    assert run.info.status == "FINISHED" and run.data.metrics["n_trials"] == 1000
    assert 0 < int(run.data.tags["resumed_trials"]) <= 1000
    trials = pd.read_csv(client.download_artifacts(run.info.run_id, "trials.csv", str(tmp_path)))
    assert len(trials) == 1000 and not trials.duplicated(["rate", "repetition"]).any()  # each once
    assert "interrupted" not in run.data.tags and run.data.tags["resumed_after"]  # how it was stopped


def test_a_refused_slurm_submission_is_one_paragraph_before_any_job(slurm_sweep, tracking_uri):
    experiment = f"refused-{uuid.uuid4().hex[:8]}"
    argv, kwargs = slurm_sweep(
        experiment, "hydra.launcher.partition=nope", "dataset=emotions", "method.nu2=0,1"
    )
    done = subprocess.run(argv, **kwargs, capture_output=True, text=True, timeout=300)
    assert done.returncode == 2 and "SLURM refuses the sweep's jobs: `sbatch --test-only" in done.stderr
    assert "--partition=nope" in done.stderr and "Traceback" not in done.stderr
    assert mlflow.MlflowClient(tracking_uri).get_experiment_by_name(experiment) is None  # nothing ran
