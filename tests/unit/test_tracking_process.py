"""The tracking process: steps run there and answer with their result or their exception (its
causes included), a signal that interrupts a step's wait loses no later answer, the process
ignores the signals the job handles; when it dies the job takes its steps over, and when the job
dies it ends the run KILLED."""

import json
import logging
import os
import pickle
import signal
import subprocess
import sys
import threading
import time

import mlflow
import pytest

from mlgraph.tracking import process as tracking_process
from mlgraph.tracking import store
from mlgraph.tracking.process import start_tracking_process, stop_tracking_process, tracked
from mlgraph.tracking.store import TrackingUnavailable, setup_experiment


@pytest.fixture
def process():
    start_tracking_process([])
    assert tracking_process._process is not None
    yield tracking_process._process
    stop_tracking_process()
    assert tracking_process._process is None


def test_without_a_process_a_step_runs_here():
    assert tracking_process._process is None
    assert tracked(os.getpid) == os.getpid()


def test_a_step_runs_in_the_process_and_returns_its_result(process):
    assert tracked(os.getpid) == process.pid != os.getpid()
    assert tracked(divmod, 7, 2) == (3, 1)
    assert tracked(int, "ff", base=16) == 255


def test_an_error_comes_back_with_its_causes_and_where_it_was_raised(process, tmp_path):
    with pytest.raises(json.JSONDecodeError) as caught:
        tracked(json.loads, "{")
    assert any("raised in the tracking process" in note for note in caught.value.__notes__)
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(TrackingUnavailable, match="cannot open the MLflow store") as caught:
        tracked(setup_experiment, f"sqlite:///{blocker}/mlflow.db", "e")
    assert caught.value.__cause__ is not None  # the store's own error, for storage_problem to read


def test_a_signal_during_a_step_leaves_the_next_answer_to_the_next_step(process):
    def interrupt(signum, frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, interrupt)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.2)
        with pytest.raises(KeyboardInterrupt):
            tracked(time.sleep, 0.6)  # its answer comes after the next request went out
    finally:
        signal.signal(signal.SIGALRM, previous)
    assert tracked(divmod, 9, 4) == (2, 1)
    assert tracked(os.getpid) == process.pid


def test_the_process_ignores_the_signals_the_job_handles_and_ends_with_it(process):
    for signum in (signal.SIGINT, signal.SIGTERM):
        os.kill(process.pid, signum)
    time.sleep(0.2)
    assert tracked(os.getpid) == process.pid
    pid = process.pid
    stop_tracking_process()
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)  # reaped: it ended


@pytest.mark.parametrize("argv", [["-m", "dataset=yeast"], ["--cfg", "job"], ["--help"]])
def test_no_process_for_a_sweep_or_a_command_that_runs_no_job(argv):
    start_tracking_process(argv)
    assert tracking_process._process is None


def test_a_step_sees_the_jobs_folder_and_environment(process, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MLGRAPH_TEST_STEP", "set after the fork")
    assert tracked(os.getcwd) == str(tmp_path)
    assert tracked(os.getenv, "MLGRAPH_TEST_STEP") == "set after the fork"


def test_a_result_that_cannot_travel_comes_back_as_an_error(process):
    with pytest.raises((TypeError, AttributeError, pickle.PicklingError)):
        tracked(threading.Lock)
    assert tracked(os.getpid) == process.pid  # and the process serves on


@pytest.mark.parametrize("steps", [0, 1])
def test_a_process_never_sent_a_step_is_killed_not_waited_for(steps, monkeypatch):
    """A job that stops before its trials (a config error) does not wait for MLflow's imports;
    after a step, the process has nothing left but to end, and is asked to."""
    kills, real_kill = [], os.kill
    monkeypatch.setattr(
        tracking_process.os, "kill", lambda pid, sig: kills.append(sig) or real_kill(pid, sig)
    )
    start_tracking_process([])
    pid = tracking_process._process.pid
    for _ in range(steps):
        assert tracked(os.getpid) == pid
    stop_tracking_process()
    assert kills == ([signal.SIGKILL] if steps == 0 else [])
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def _kill(pid: int) -> None:
    os.kill(pid, signal.SIGKILL)
    while os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT | os.WNOHANG) is None:  # dead, not reaped
        time.sleep(0.01)


def test_a_dead_process_is_taken_over_and_every_later_step_runs_here(process, caplog):
    _kill(process.pid)
    with caplog.at_level(logging.WARNING):
        assert tracked(os.getpid) == os.getpid()  # the step after the death, here
    assert tracking_process._process is None and tracked(divmod, 7, 2) == (3, 1)
    assert f"the tracking process (pid {process.pid}) died of SIGKILL before getpid" in caplog.text
    with pytest.raises(ChildProcessError):
        os.waitpid(process.pid, os.WNOHANG)  # reaped


def _die_there(job: int) -> str:
    """A step that kills the tracking process it runs in (and returns where it ran otherwise)."""
    if os.getpid() != job:
        os.kill(os.getpid(), signal.SIGKILL)
    return "here"


def _redo_die_there(sent_at: float, job: int) -> tuple:
    return "redone", sent_at


_die_there.redo = _redo_die_there


def _first_step(x: int) -> int:
    return x + 1


TAKEN_OVER = []
_first_step.take_over = lambda result, x: TAKEN_OVER.append((result, x))


def test_a_step_the_process_died_in_runs_again_here_after_the_steps_state_is_taken_over(process, caplog):
    assert tracked(_first_step, 41) == 42 and not TAKEN_OVER  # done there: nothing to take over yet
    before = time.time()
    with caplog.at_level(logging.WARNING):
        again, sent_at = tracked(_die_there, os.getpid())
    assert again == "redone" and before <= sent_at <= time.time()
    assert TAKEN_OVER == [(42, 41)]  # the first step's state made this process's own, once
    assert "died of SIGKILL while it carried out _die_there" in caplog.text
    assert tracked(_die_there, os.getpid()) == "here" and TAKEN_OVER == [(42, 41)]


@pytest.mark.slow  # MLflow's imports and a store, or a new interpreter
def test_a_run_the_dead_process_held_is_ended_here(process, tmp_path):
    """The run a killed tracking process opened becomes this process's active run, through its
    own connection, and is tagged and ended FINISHED."""
    tracking = {"uri": f"sqlite:///{tmp_path}/mlflow.db", "experiment": "take-over"}
    run_id = tracked(store.open_run, tracking, None, None, "run", None, {"config_hash": "abc"})
    _kill(process.pid)
    tracked(store.set_tags, {"after": "the death"})
    tracked(store.end_run, "FINISHED")
    assert mlflow.active_run() is None
    client = mlflow.MlflowClient(tracking["uri"])
    run = client.get_run(run_id)
    assert run.info.status == "FINISHED" and run.data.tags["after"] == "the death"
    assert len(client.search_runs([run.info.experiment_id])) == 1


def _open_then_die(*args):
    """open_run in the tracking process, which then dies before it answers."""
    store.open_run(*args)
    os.kill(os.getpid(), signal.SIGKILL)


_open_then_die.redo = store._open_run_again


def test_a_run_created_by_a_process_that_died_before_it_answered_is_not_doubled(process, tmp_path):
    tracking = {"uri": f"sqlite:///{tmp_path}/mlflow.db", "experiment": "take-over"}
    run_id = tracked(_open_then_die, tracking, None, None, "run", None, {"config_hash": "abc"})
    tracked(store.end_run, "KILLED")
    client = mlflow.MlflowClient(tracking["uri"])
    (run,) = client.search_runs([client.get_experiment_by_name("take-over").experiment_id])
    assert run.info.run_id == run_id and run.info.status == "KILLED"


JOB_DIES = """
import os, signal, sys
from pathlib import Path
from mlgraph.tracking.process import start_tracking_process, tracked
start_tracking_process([])
from mlgraph.tracking import process, store
folder = Path(sys.argv[1])
tracking = {"uri": f"sqlite:///{folder}/mlflow.db", "experiment": "job-dies"}
checkpoint = folder / "trials_partial.csv"
checkpoint.write_text("rate,repetition,status\\n0.5,0,ok\\n")
run_id = tracked(store.open_run, tracking, None, None, "run", None, {"checkpoint_file": str(checkpoint)})
print(process._process.pid, run_id, flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


@pytest.mark.slow  # MLflow's imports and a store, or a new interpreter
def test_when_the_job_dies_the_process_saves_its_checkpoint_and_ends_the_run_killed(tmp_path):
    job = subprocess.run(
        [sys.executable, "-c", JOB_DIES, str(tmp_path)], capture_output=True, text=True, timeout=120
    )
    assert job.returncode == -signal.SIGKILL, job.stderr
    pid, run_id = job.stdout.split()
    deadline = time.monotonic() + 60
    while os.path.exists(f"/proc/{pid}") and time.monotonic() < deadline:  # it closes the run, then ends
        time.sleep(0.1)
    client = mlflow.MlflowClient(f"sqlite:///{tmp_path}/mlflow.db")
    run = client.get_run(run_id)
    assert run.info.status == "KILLED" and "the job's process died" in run.data.tags["interrupted"]
    copy = client.download_artifacts(run_id, "trials_partial.csv", str(tmp_path / "copy"))
    assert open(copy).read() == (tmp_path / "trials_partial.csv").read_text()
