"""How a job ends and resumes: the launcher's account of a dead worker, the per-trial checkpoint
and what a resume reads back (a throwaway SQLite store), what a resumed sweep has left, the SLURM
signal delay, and a SLURM job's last moments (in a subprocess)."""

import logging
import signal
import subprocess
import sys

import mlflow
import numpy as np
import pandas as pd
from omegaconf import OmegaConf

from mlgraph.engine.checkpoint import Checkpoint, finished_trials
from mlgraph.engine.jobs import planned_jobs, resume_note
from mlgraph.engine.launcher import _dead_message, death_cause
from mlgraph.engine.sweep import signal_delay
from mlgraph.tracking.store import close_left_running, setup_experiment


def test_a_dead_worker_is_named_with_how_it_died_and_what_to_run():
    assert death_cause(-signal.SIGKILL) == "SIGKILL (kill -9, or the kernel's out-of-memory killer)"
    assert death_cause(-signal.SIGSEGV) == "SIGSEGV" and death_cause(3) == "exit status 3"
    text = _dead_message([(2, ["method.nu2=0.5"], "SIGKILL", "abc"), (3, [], "SIGTERM", None)], 4)
    assert text.startswith("2 of 4 jobs died: #2 (method.nu2=0.5) of SIGKILL, its run abc is KILLED; ")
    assert "#3 (no overrides) of SIGTERM, before its run opened" in text and "resume=true" in text


def test_signal_delay_is_at_most_a_quarter_of_the_limit(caplog):
    with caplog.at_level(logging.WARNING):
        assert signal_delay(60, 120) == 120 and not caplog.records
        assert signal_delay(2, 120) == 30 and signal_delay(1, 120) == 15
    assert "signal_delay_s=120 is not well below timeout_min=2 (120 s)" in caplog.records[0].getMessage()


def _run(tmp_path):
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    experiment = setup_experiment(uri, "checkpoints")
    return mlflow.MlflowClient(uri).create_run(experiment).info.run_id


def _row(repetition, status="ok", **extra):
    return {
        "rate": 0.5,
        "repetition": repetition,
        "status": status,
        "error": "",
        "avg_precision": 0.5,
        **extra,
    }


def test_each_trial_reaches_the_local_file_at_once_and_mlflow_at_most_every_interval(tmp_path):
    run_id = _run(tmp_path)
    checkpoint = Checkpoint(run_id, tmp_path / "job", every=3600, done=pd.DataFrame([_row(0)]))
    for repetition in (1, 2):
        checkpoint.add(_row(repetition))
        assert len(pd.read_csv(checkpoint.path)) == repetition + 1  # done rows and every new one
    checkpoint.add(_row(3, "failed", traceback="Traceback ...\n  line"))  # a new column: rewritten
    table = pd.read_csv(checkpoint.path)
    assert list(table.repetition) == [0, 1, 2, 3] and table.traceback.notna().sum() == 1
    assert not mlflow.MlflowClient().list_artifacts(run_id)  # the copy waits for its interval
    checkpoint.flush()
    assert [a.path for a in mlflow.MlflowClient().list_artifacts(run_id)] == [Checkpoint.NAME]


def test_an_appended_row_is_the_line_pandas_writes(tmp_path):
    # each appended line is the one pandas writes for that row alone
    run_id = _run(tmp_path)
    checkpoint = Checkpoint(run_id, tmp_path / "job", every=3600, done=pd.DataFrame())
    checkpoint.add(_row(0, fit_seconds=0.1, n_train=3, flag=True, note="x"))
    rows = [
        _row(1, fit_seconds=np.float32(0.1), n_train=np.int64(7), flag=np.bool_(False), note='a, "b"\nc'),
        _row(2, fit_seconds=float("nan"), n_train=None, flag=False, note=None),
        _row(3, fit_seconds=np.float64(1 / 3), n_train=-1, flag=True, note=np.str_("y")),
        _row(4, fit_seconds=float("inf"), avg_precision=-0.0, n_train=pd.NA, note=pd.NaT),
        _row(5, fit_seconds=1e-320, avg_precision=1e300),
    ]
    for row in rows:
        checkpoint.add(row)
    columns = checkpoint.columns
    expected = (
        ",".join(columns)
        + "\n"
        + "".join(
            pd.DataFrame([row], columns=columns).to_csv(header=False, index=False, lineterminator="\n")
            for row in checkpoint.rows
        )
    )
    assert checkpoint.path.read_text() == expected


def test_a_resume_reads_the_newer_local_file_and_drops_a_line_cut_by_a_kill(tmp_path):
    run_id = _run(tmp_path)
    checkpoint = Checkpoint(run_id, tmp_path / "job", every=0, done=pd.DataFrame())
    checkpoint.add(_row(0))  # copied to MLflow at once (every=0)
    checkpoint.every = 3600
    checkpoint.add(_row(1))
    checkpoint.add(_row(2))  # only in the local file
    mlflow.MlflowClient().set_tag(run_id, Checkpoint.TAG, str(checkpoint.path))
    with open(checkpoint.path, "a") as out:
        out.write("0.5,3,ok,,0.")  # a kill in the middle of writing a row
    assert sorted(finished_trials(run_id).repetition) == [0, 1, 2]
    checkpoint.path.unlink()  # another machine: only the MLflow copy
    assert sorted(finished_trials(run_id).repetition) == [0]


LATE_SIGNAL = """
import os, signal, sys, types
from hydra_plugins.mlgraph_launcher import slurm

slurm._SubmititSlurm.__call__ = lambda self, *args, **kwargs: "the job's return"
# what submitit installs before it runs the job: requeue and exit
signal.signal(signal.SIGUSR2, lambda *args: os._exit(3))
print(slurm.SlurmLauncher.__new__(slurm.SlurmLauncher)("overrides"), flush=True)
os.kill(os.getpid(), signal.SIGUSR2)  # as the result is written


class Late:
    def __del__(self):  # after the interpreter has dropped the Python handlers
        os.kill(os.getpid(), signal.SIGUSR2)


sys.modules["late"] = types.ModuleType("late")
sys.modules["late"].late = Late()
"""


def test_a_slurm_job_that_has_returned_ignores_its_time_limit_signal():
    """The signal that comes as a job ends neither requeues it nor, in the interpreter's last
    moments, kills it: it exits 0 with its result."""
    done = subprocess.run([sys.executable, "-c", LATE_SIGNAL], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout) == (0, "the job's return\n"), done.stderr


def test_a_resumed_sweep_counts_its_jobs_out_of_all_it_plans():
    """A sweep killed with 2 of its 4 jobs started, one finished: 1 of 4, not 1 of 2."""
    table = pd.DataFrame({"status": ["FINISHED", "KILLED"]})
    assert resume_note(table, 4).startswith("1 of 4 jobs finished, 3 to run")
    assert resume_note(table.iloc[:0], 4).startswith("0 of 4 jobs finished, 4 to run")
    assert resume_note(table, None).startswith("1 of 2 jobs finished, the others to run")
    grid = {"overrides": {"task": ["method.nu2=0,0.1,0.5,1", "dataset=yeast,emotions"]}, "sweeper": {}}
    assert planned_jobs(OmegaConf.create({"hydra": grid})) == 8
    optuna = {"overrides": {"task": ["method.nu2=interval(0,1)"]}, "sweeper": {"n_trials": 20}}
    assert planned_jobs(OmegaConf.create({"hydra": optuna})) == 20


def test_a_resume_ends_the_runs_of_its_config_left_running_but_the_one_it_reopens(tmp_path):
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    experiment = setup_experiment(uri, "left")
    client = mlflow.MlflowClient(uri)
    runs = {
        name: client.create_run(experiment, run_name=name, tags={"config_hash": chash}).info.run_id
        for name, chash in (("finished", "h"), ("left", "h"), ("reopened", "h"), ("other", "g"))
    }
    client.set_terminated(runs["finished"], "FINISHED")
    assert close_left_running(experiment, "h", keep=runs["reopened"]) == [runs["left"]]
    status = {name: client.get_run(run_id).info.status for name, run_id in runs.items()}
    assert status == {"finished": "FINISHED", "left": "FAILED", "reopened": "RUNNING", "other": "RUNNING"}
    assert client.get_run(runs["left"]).data.tags["interrupted"].startswith("left RUNNING")
