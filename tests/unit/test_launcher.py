"""The processes launcher: overrides that do not compose make a failed job (its worker serves the
next one), not a dead worker; after an interruption no job's run is left RUNNING."""

import multiprocessing
import time
from types import SimpleNamespace

import mlflow
from hydra.core.singleton import Singleton
from hydra.core.utils import JobStatus
from hydra.errors import ConfigCompositionException

from mlgraph.engine.jobs import ENV_PARENT, ENV_SWEEP
from mlgraph.engine.launcher import _Pool, _Worker, execute_job
from mlgraph.engine.sweep import close_left_running_job


def test_overrides_that_do_not_compose_are_a_failed_job():
    error = ConfigCompositionException("Could not override 'method.nosuch'.")

    def load_sweep_config(config, overrides):
        raise error

    context = SimpleNamespace(config_loader=SimpleNamespace(load_sweep_config=load_sweep_config))
    ret = execute_job(3, ["method.nosuch=1"], context, None, None, Singleton.get_state())
    assert ret.status == JobStatus.FAILED and ret._return_value is error
    assert ret.overrides == ["method.nosuch=1"]


def test_a_job_whose_process_could_not_close_its_run_after_an_interruption_ends_it_killed(
    tmp_path, monkeypatch
):
    """After an interruption the sweep ends its workers; a busy one that does not exit in time is
    killed, and a run that a job's process left RUNNING (it died before closing it) is marked
    KILLED by the sweep's process, while a run its job closed keeps its status."""
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path}/mlflow.db")
    mlflow.set_tracking_uri(None)  # the store of the environment, as in the sweep's process
    client = mlflow.MlflowClient()
    experiment = client.create_experiment("sweep")
    parent = client.create_run(experiment).info.run_id
    monkeypatch.setenv(ENV_PARENT, parent)
    monkeypatch.setenv(ENV_SWEEP, "s1")
    runs = {}
    for job, status in ((0, "RUNNING"), (1, "RUNNING"), (2, "KILLED")):
        runs[job] = client.create_run(experiment, tags={"sweep_id": "s1", "job_num": str(job)}).info.run_id
        if status != "RUNNING":
            client.set_terminated(runs[job], status)

    context = multiprocessing.get_context("spawn")
    pool = _Pool(size=3, grace=0.5)
    for job, seconds in ((0, 60), (1, 0), (2, 0)):  # job 0 still busy, 1 and 2 ended on their own
        ours, theirs = context.Pipe()
        process = context.Process(target=time.sleep, args=(seconds,))
        process.start()
        pool.workers.append(_Worker(process, ours, job=(job, [f"x={job}"])))
    pool.workers.append(_Worker(context.Process(target=time.sleep, args=(0,)), context.Pipe()[0]))  # idle
    pool.workers[-1].process.start()
    time.sleep(0.5)

    ended = pool.close()
    assert ended == [
        (0, "SIGKILL (kill -9, or the kernel's out-of-memory killer)"),
        (1, "exit status 0"),
        (2, "exit status 0"),
    ]
    for job, cause in ended:
        close_left_running_job(job, cause)
    assert [client.get_run(runs[j]).info.status for j in range(3)] == ["KILLED"] * 3
    assert client.get_run(runs[0]).data.tags["interrupted"].startswith("process died of SIGKILL")
    assert client.get_run(runs[1]).data.tags["interrupted"] == "process died of exit status 0"
    assert "interrupted" not in client.get_run(runs[2]).data.tags  # closed by its job: untouched
