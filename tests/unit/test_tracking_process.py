"""The tracking process: steps run there and answer with their result or their exception (its
causes included), a signal that interrupts a step's wait loses no later answer, and the
process ignores the signals the job handles."""

import json
import os
import pickle
import signal
import threading
import time

import pytest

from mlgraph.tracking import process as tracking_process
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
