"""Runs that survive signals, restarts and concurrent starts: the real command, real processes,
a real SQLite store; every status read back from MLflow."""

import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import mlflow
import pandas as pd
import pytest
from mlflow.entities import ViewType

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


def start(args, out: Path, multirun=False):
    env = {**os.environ, "MLGRAPH_OUTPUT_DIR": str(out), "PYTHONUNBUFFERED": "1"}
    cmd = [sys.executable, "-m", "run", *(["-m"] if multirun else []), *args]
    return subprocess.Popen(
        cmd,
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def run(args, out: Path, multirun=False, timeout=600):
    proc = start(args, out, multirun)
    stdout, stderr = proc.communicate(timeout=timeout)
    return proc.returncode, stdout, stderr


def all_runs(out: Path, experiment="mlgraph"):
    client = mlflow.MlflowClient(f"sqlite:///{out}/mlflow.db")
    exp = client.get_experiment_by_name(experiment)
    return client, client.search_runs([exp.experiment_id], run_view_type=ViewType.ALL, max_results=1000)


def job_runs(out: Path, status: str = "FINISHED", described: bool = False) -> int:
    """How many of a sweep's job runs the store shows with ``status`` (and, if ``described``,
    with their params logged, which follows the run's opening); 0 before the store exists.
    (A job's trials.csv is written before its run ends, and its checkpoint before its run opens,
    so files prove neither.)"""
    if not (out / "mlflow.db").exists():
        return 0
    try:
        _, runs = all_runs(out)
    except Exception:  # the sweep is still creating the store or the experiment
        return 0
    return sum(
        r.info.status == status
        and r.data.tags.get("kind") != "sweep"
        and (bool(r.data.params) or not described)
        for r in runs
    )


def descendants(pid: int) -> set[int]:
    """Every live process below ``pid`` (from /proc)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    found, stack = set(), [pid]
    while stack:
        for child in children.get(stack.pop(), []):
            found.add(child)
            stack.append(child)
    return found


def alive(pids) -> set[int]:
    living = set()
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            living.add(pid)
    return living


def wait_for(predicate, timeout=300, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.5)
    pytest.fail(f"timed out waiting for {what}")


def partials(out: Path) -> list[Path]:
    """The job folders' checkpoints (not their copies in the artifact store)."""
    return [p for p in out.rglob("trials_partial.csv") if "mlartifacts" not in p.parts]


def partial_rows(out: Path) -> int:
    files = partials(out)
    return max((len(pd.read_csv(f)) for f in files), default=0)


SLOW = [
    "dataset=yeast",
    "protocol.repeats=40",
    "protocol.rates=[0.5]",
    "progress=false",
    "tracking.checkpoint_seconds=0",
]


def test_sigterm_ends_the_run_killed_and_resume_finishes_it_once(tmp_path):
    proc = start([*SLOW, "n_jobs=2"], tmp_path)
    wait_for(lambda: partial_rows(tmp_path) >= 2 or proc.poll() is not None, what="two finished trials")
    workers = descendants(proc.pid)
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == -signal.SIGTERM, stderr[-2000:]  # died of the signal, as `timeout` expects
    time.sleep(2)
    assert not alive(workers), "trial workers outlived their job"
    client, runs = all_runs(tmp_path)
    (killed,) = runs
    assert killed.info.status == "KILLED" and killed.data.tags["interrupted"] == "SIGTERM"
    saved = partial_rows(tmp_path)

    code, stdout, stderr = run([*SLOW, "resume=true"], tmp_path)
    assert code == 0, stderr[-3000:]
    assert f"{saved} of 40 trials already done" in stdout
    _, runs = all_runs(tmp_path)
    (resumed,) = runs  # the same run, reopened: no duplicate
    assert resumed.info.run_id == killed.info.run_id and resumed.info.status == "FINISHED"
    assert resumed.data.tags["resumed_trials"] == str(saved) and resumed.data.metrics["n_trials"] == 40
    assert "interrupted" not in resumed.data.tags and resumed.data.tags["resumed_after"] == "SIGTERM"
    trials = pd.read_csv(client.download_artifacts(resumed.info.run_id, "trials.csv", str(tmp_path)))
    assert sorted(trials.repetition) == list(range(40)) and (trials.status == "ok").all()

    code, stdout, _ = run([*SLOW, "resume=true"], tmp_path)
    assert code == 0 and "skipped" in stdout and "config_hash" in stdout
    assert len(all_runs(tmp_path)[1]) == 1


def test_interrupted_sweep_resumes_with_every_job_finished_once(tmp_path):
    sweep = [
        "dataset=emotions",
        "protocol.repeats=30",
        "protocol.rates=[0.5]",
        "progress=false",
        "tracking.checkpoint_seconds=0",
        "method.nu2=0,0.1,0.5,1",
    ]
    proc = start(sweep, tmp_path, multirun=True)
    wait_for(lambda: job_runs(tmp_path) or proc.poll() is not None, what="one finished job")
    os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C reaches the whole process group
    stdout, _ = proc.communicate(timeout=120)
    client, before = all_runs(tmp_path)
    jobs = [r for r in before if r.data.tags.get("kind") != "sweep"]
    assert not [r for r in before if r.info.status == "RUNNING"], "a run was left RUNNING"
    finished_before = {r.info.run_id for r in jobs if r.info.status == "FINISHED"}
    assert finished_before and len(finished_before) < 4
    assert f"{len(finished_before)} of 4 jobs finished" in stdout  # of all 4, not of those started
    (parent,) = [r for r in before if r.data.tags.get("kind") == "sweep"]
    assert parent.info.status == "KILLED"

    code, stdout, stderr = run([*sweep, "resume=true"], tmp_path, multirun=True)
    assert code == 0, stderr[-3000:]
    _, after = all_runs(tmp_path)
    jobs = [r for r in after if r.data.tags.get("kind") != "sweep"]
    assert not [r for r in after if r.info.status == "RUNNING"]
    assert len(jobs) == 4 and all(r.info.status == "FINISHED" for r in jobs)  # one run per job
    assert len({r.data.tags["config_hash"] for r in jobs}) == 4
    assert stdout.count(": skipped, run") == len(finished_before)  # finished jobs were not run again
    assert finished_before <= {r.info.run_id for r in jobs}
    (parent,) = [r for r in after if r.data.tags.get("kind") == "sweep"]
    assert parent.info.status == "FINISHED" and parent.data.tags["jobs_finished"] == "4"
    table = pd.read_csv(client.download_artifacts(parent.info.run_id, "sweep.csv", str(tmp_path)))
    assert len(table) == 4 and set(table.status) == {"FINISHED"}
    assert sorted(table.run_name) == sorted(f"mlmrrw-emotions nu2={v}" for v in ("0", "0.1", "0.5", "1"))
    assert parent.data.tags["best_run"] in set(table.run_name)


def test_a_run_reopened_by_another_sweep_counts_in_that_sweep(tmp_path):
    """A job interrupted in one sweep and finished by a resume within a different sweep (more
    values, as `mlgraph benchmark` with another dataset= list) is that sweep's child and counts
    among its finished jobs."""
    common = [
        "dataset=emotions",
        "protocol.repeats=30",
        "protocol.rates=[0.5]",
        "progress=false",
        "tracking.checkpoint_seconds=0",
    ]
    proc = start([*common, "method.nu2=0"], tmp_path, multirun=True)
    wait_for(
        lambda: job_runs(tmp_path, "RUNNING", described=True) or proc.poll() is not None, what="the job's run"
    )
    os.killpg(proc.pid, signal.SIGINT)
    proc.communicate(timeout=120)
    (killed,) = [r for r in all_runs(tmp_path)[1] if r.data.tags.get("kind") != "sweep"]
    assert killed.info.status == "KILLED"

    code, stdout, stderr = run([*common, "method.nu2=0,0.1", "resume=true"], tmp_path, multirun=True)
    assert code == 0, stderr[-3000:]
    assert "2 of 2 jobs finished" in stdout
    _, runs = all_runs(tmp_path)
    parents = sorted((r for r in runs if r.data.tags.get("kind") == "sweep"), key=lambda r: r.info.start_time)
    assert [p.info.status for p in parents] == ["KILLED", "FINISHED"]
    assert parents[1].data.tags["jobs_finished"] == "2"
    reopened = [r for r in runs if r.info.run_id == killed.info.run_id][0]
    assert reopened.info.status == "FINISHED"
    assert reopened.data.tags["mlflow.parentRunId"] == parents[1].info.run_id


def test_sigkill_of_a_sweeps_main_process_leaves_no_orphan_and_no_running_run(tmp_path):
    sweep = [
        "dataset=yeast",
        "protocol.repeats=200",
        "protocol.rates=[0.5]",
        "progress=false",
        "tracking.checkpoint_seconds=0",
        "method.nu2=0,1",
    ]
    proc = start(sweep, tmp_path, multirun=True)
    wait_for(lambda: job_runs(tmp_path, "RUNNING") >= 2 or proc.poll() is not None, what="both job runs open")
    family = descendants(proc.pid)
    assert family, "the sweep had no worker processes"
    proc.send_signal(signal.SIGKILL)
    _, stderr = proc.communicate(timeout=60)
    wait_for(lambda: not alive(family), timeout=60, what="the workers to exit")
    _, runs = all_runs(tmp_path)
    jobs = [r for r in runs if r.data.tags.get("kind") != "sweep"]
    seen = [(r.info.status, r.data.tags.get("interrupted"), r.data.tags.get("error")) for r in jobs]
    logs = "".join(p.read_text() for p in tmp_path.rglob("*.log"))
    assert len(jobs) == 2 and all(r.info.status == "KILLED" for r in jobs), (
        seen,
        stderr[-3000:],
        logs[-5000:],
    )
    (parent,) = [r for r in runs if r.data.tags.get("kind") == "sweep"]
    assert parent.info.status == "KILLED"  # closed by its jobs, as the main process could not


def test_a_resume_after_sigkill_of_a_sweep_counts_all_its_jobs(tmp_path):
    """SIGKILL of a 4-job sweep's main process while its second batch runs: its jobs end their runs
    KILLED; resume=true says how many of the 4 finished and how many it runs, and finishes them."""
    sweep = [
        "dataset=emotions",
        "protocol.repeats=30",
        "protocol.rates=[0.5]",
        "progress=false",
        "tracking.checkpoint_seconds=0",
        "method.nu2=0,0.1,0.5,1",
    ]
    proc = start(sweep, tmp_path, multirun=True)
    wait_for(
        lambda: (job_runs(tmp_path) and job_runs(tmp_path, "RUNNING")) or proc.poll() is not None,
        what="a finished job and a running one",
    )
    family = descendants(proc.pid)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=60)
    wait_for(lambda: not alive(family), timeout=60, what="the jobs to end")
    finished = job_runs(tmp_path)
    assert 1 <= finished < 4 and not job_runs(tmp_path, "RUNNING")

    code, stdout, stderr = run([*sweep, "resume=true"], tmp_path, multirun=True)
    assert code == 0, stderr[-3000:]
    assert f"{finished} of 4 jobs finished, {4 - finished} to run" in stdout
    assert stdout.count(": skipped, run") == finished
    assert f"4 of 4 jobs finished ({finished} of 4 already finished)" in stdout
    _, runs = all_runs(tmp_path)
    assert not [r for r in runs if r.info.status == "RUNNING"]
    assert job_runs(tmp_path) == 4


def tracking_process(pid: int) -> int:
    """The job's tracking process: its child that ignores both SIGINT and SIGTERM."""
    for child in descendants(pid):
        try:
            status = Path(f"/proc/{child}/status").read_text()
        except OSError:
            continue
        ignored = int(re.search(r"SigIgn:\s*(\w+)", status).group(1), 16)
        if ignored >> (signal.SIGINT - 1) & 1 and ignored >> (signal.SIGTERM - 1) & 1:
            return child
    pytest.fail("the job has no tracking process")


def trial_worker_at_work(pid: int) -> int | None:
    """A trial worker (a child of the job that takes SIGTERM) running a trial (state R)."""
    for child in descendants(pid):
        try:
            status = Path(f"/proc/{child}/status").read_text()
        except OSError:
            continue
        ignored = int(re.search(r"SigIgn:\s*(\w+)", status).group(1), 16)
        if not ignored >> (signal.SIGTERM - 1) & 1 and re.search(r"State:\s*R", status):
            return child
    return None


SHORT = ["dataset=yeast", "protocol.repeats=12", "protocol.rates=[0.5]", "progress=false"]


def test_a_killed_tracking_process_is_taken_over_and_the_run_finishes(tmp_path):
    proc = start([*SHORT, "n_jobs=2", "tracking.checkpoint_seconds=0"], tmp_path)
    # a checkpoint row is written once the run is opened and described
    wait_for(lambda: partial_rows(tmp_path) or proc.poll() is not None, what="the run described")
    tracker = tracking_process(proc.pid)
    os.kill(tracker, signal.SIGKILL)
    stdout, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 0, stderr[-3000:]
    assert "Traceback" not in stdout + stderr
    assert (stdout + stderr).count(f"the tracking process (pid {tracker}) died of SIGKILL") == 1
    client, (finished,) = all_runs(tmp_path)
    assert finished.info.status == "FINISHED" and finished.data.metrics["n_trials"] == 12
    trials = pd.read_csv(client.download_artifacts(finished.info.run_id, "trials.csv", str(tmp_path)))
    assert sorted(trials.repetition) == list(range(12)) and (trials.status == "ok").all()
    saved = pd.read_csv(client.download_artifacts(finished.info.run_id, "trials_partial.csv", str(tmp_path)))
    assert sorted(saved.repetition) == list(range(12))  # every checkpoint, before and after the death


def test_a_killed_trial_worker_costs_its_trial_one_more_run(tmp_path):
    proc = start([*SHORT, "n_jobs=2", "tracking.checkpoint_seconds=0"], tmp_path)
    victim = None

    def at_work():
        nonlocal victim
        victim = trial_worker_at_work(proc.pid)
        return victim is not None or proc.poll() is not None

    wait_for(at_work, what="a trial worker at work")
    os.kill(victim, signal.SIGKILL)
    stdout, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 0, stderr[-3000:]
    assert "Traceback" not in stdout + stderr
    assert stdout.count("its worker died (signal 9); it runs again in a new worker") == 1
    client, (finished,) = all_runs(tmp_path)
    assert finished.info.status == "FINISHED" and finished.data.metrics["n_trials"] == 12
    trials = pd.read_csv(client.download_artifacts(finished.info.run_id, "trials.csv", str(tmp_path)))
    assert sorted(trials.repetition) == list(range(12)) and (trials.status == "ok").all()


def test_sigkill_of_the_job_alone_ends_its_run_killed_and_resume_finishes_it(tmp_path):
    """The OOM killer's way: the job's process dies, its tracking process lives on, copies the
    checkpoint to the run and ends it KILLED."""
    args = [*SHORT, "n_jobs=1", "tracking.checkpoint_seconds=3600"]
    proc = start(args, tmp_path)
    wait_for(lambda: partial_rows(tmp_path) >= 2 or proc.poll() is not None, what="two finished trials")
    tracker = tracking_process(proc.pid)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=60)
    wait_for(lambda: not alive([tracker]), timeout=60, what="the tracking process to end")
    saved = partial_rows(tmp_path)
    client, (killed,) = all_runs(tmp_path)
    assert killed.info.status == "KILLED" and "the job's process died" in killed.data.tags["interrupted"]
    copy = pd.read_csv(client.download_artifacts(killed.info.run_id, "trials_partial.csv", str(tmp_path)))
    assert len(copy) == saved

    code, stdout, stderr = run([*args, "resume=true"], tmp_path)
    assert code == 0, stderr[-3000:]
    _, (resumed,) = all_runs(tmp_path)
    assert resumed.info.run_id == killed.info.run_id and resumed.info.status == "FINISHED"
    assert resumed.data.tags["resumed_trials"] == str(saved) and resumed.data.metrics["n_trials"] == 12


def launcher_workers(pid: int) -> list[int]:
    """The sweep's job worker processes: its children that multiprocessing's spawn started."""
    found = []
    for child in descendants(pid):
        try:
            parent = int(Path(f"/proc/{child}/stat").read_text().rsplit(")", 1)[1].split()[1])
            if parent == pid and b"spawn_main" in Path(f"/proc/{child}/cmdline").read_bytes():
                found.append(child)
        except (OSError, IndexError, ValueError):
            continue
    return found


def test_a_dead_worker_costs_one_job_and_resume_finishes_it(tmp_path):
    """SIGKILL of one job's process (what the OOM killer does): that run ends KILLED with a note,
    the other jobs finish, the command says which job to resume; resume=true finishes it, and a
    second resume (a new sweep, every job already done) ends its parent FINISHED."""
    sweep = [  # jobs of a few seconds: still running once both their runs are seen open
        "dataset=emotions",
        "protocol.repeats=300",
        "protocol.rates=[0.5]",
        "progress=false",
        "tracking.checkpoint_seconds=0",
        "method.nu2=0,0.1,0.5,1",
    ]
    proc = start(sweep, tmp_path, multirun=True)
    # Both jobs' MLflow runs open with their params (a job's checkpoint exists before its run does).
    wait_for(
        lambda: job_runs(tmp_path, "RUNNING", described=True) >= 2 or proc.poll() is not None,
        what="two job runs open",
    )
    workers = launcher_workers(proc.pid)
    assert len(workers) == 2, workers
    os.kill(workers[0], signal.SIGKILL)
    stdout, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 1, stderr[-3000:]
    assert "1 of 4 jobs died" in stderr and "SIGKILL" in stderr and "resume=true" in stderr
    assert "Traceback" not in stderr and "3 of 4 jobs finished, 1 died" in stdout
    client, runs = all_runs(tmp_path)
    jobs = [r for r in runs if r.data.tags.get("kind") != "sweep"]
    assert sorted(r.info.status for r in jobs) == ["FINISHED"] * 3 + ["KILLED"]
    (killed,) = [r for r in jobs if r.info.status == "KILLED"]
    assert (
        "SIGKILL" in killed.data.tags["interrupted"]
        and "resume=true" in killed.data.tags["mlflow.note.content"]
    )
    (parent,) = [r for r in runs if r.data.tags.get("kind") == "sweep"]
    assert parent.info.status == "FAILED" and parent.data.tags["jobs_died"] == "1"
    assert f"method.nu2={killed.data.params['method.nu2']}" in parent.data.tags["dead_jobs"]

    code, stdout, stderr = run([*sweep, "resume=true"], tmp_path, multirun=True)
    assert code == 0, stderr[-3000:]
    assert "4 of 4 jobs finished (3 of 4 already finished)" in stdout
    _, runs = all_runs(tmp_path)
    jobs = [r for r in runs if r.data.tags.get("kind") != "sweep"]
    assert len(jobs) == 4 and all(r.info.status == "FINISHED" for r in jobs)  # the killed run, reopened
    assert killed.info.run_id in {r.info.run_id for r in jobs}
    assert not [r for r in runs if r.info.status == "RUNNING"]

    # n_jobs changes no number: the same jobs, all skipped, under a new parent that FINISHES
    code, stdout, stderr = run([*sweep, "resume=true", "n_jobs=1"], tmp_path, multirun=True)
    assert code == 0, stderr[-3000:]
    assert "4 of 4 jobs finished (4 of 4 already finished)" in stdout
    _, runs = all_runs(tmp_path)
    parents = sorted((r for r in runs if r.data.tags.get("kind") == "sweep"), key=lambda r: r.info.start_time)
    assert len(parents) == 2 and parents[-1].info.status == "FINISHED"
    assert parents[-1].data.tags["jobs_skipped"] == "4"


def test_sigkill_right_after_a_trial_ends_reruns_no_finished_trial(tmp_path):
    """The local checkpoint holds each trial as soon as it finishes, although the copy to MLflow
    is rate-limited (here: never before the kill); a resume reads it."""
    args = ["dataset=yeast", "protocol.repeats=10", "protocol.rates=[0.5]", "progress=false"]
    proc = start([*args, "n_jobs=1", "tracking.checkpoint_seconds=3600"], tmp_path)
    wait_for(lambda: partial_rows(tmp_path) >= 3 or proc.poll() is not None, what="three finished trials")
    seen = partial_rows(tmp_path)
    deadline = time.monotonic() + 60
    while partial_rows(tmp_path) == seen and time.monotonic() < deadline:  # the next trial's end
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=60)
    saved = partial_rows(tmp_path)
    assert saved > seen
    client, (killed,) = all_runs(tmp_path)
    assert (
        killed.info.status == "RUNNING"
    )  # SIGKILL of the job and its tracking process: nothing could close it
    assert not client.list_artifacts(killed.info.run_id)  # no MLflow copy: the local file is all there is

    code, stdout, stderr = run([*args, "resume=true"], tmp_path)
    assert code == 0, stderr[-3000:]
    _, (resumed,) = all_runs(tmp_path)
    assert resumed.info.run_id == killed.info.run_id and resumed.info.status == "FINISHED"
    assert resumed.data.tags["resumed_after"].startswith("left RUNNING")
    assert resumed.data.tags["resumed_trials"] == str(saved)  # every trial that had ended: none re-run
    assert resumed.data.metrics["n_trials"] == 10


RACER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    import mlflow
    from mlgraph.tracking.store import setup_experiment
    folder, tries, me = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    for t in range(tries):
        while not (folder / f"go{t}").exists():
            time.sleep(0.005)
        uri = f"sqlite:///{folder}/store{t}/mlflow.db"
        experiment = setup_experiment(uri, "race")
        run = mlflow.MlflowClient(uri).create_run(experiment, run_name=me)
        mlflow.MlflowClient(uri).set_terminated(run.info.run_id)
        (folder / f"done{t}-{me}").touch()
""")


def test_processes_starting_together_on_a_fresh_store_all_land(tmp_path):
    processes, tries = 8, 10
    script = tmp_path / "racer.py"
    script.write_text(RACER)
    procs = [
        subprocess.Popen(
            [sys.executable, str(script), str(tmp_path), str(tries), f"p{i}"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(processes)
    ]
    for t in range(tries):
        (tmp_path / f"go{t}").touch()  # every process starts this try at the same instant
        wait_for(
            lambda t=t: (
                len(list(tmp_path.glob(f"done{t}-*"))) == processes
                or any(p.poll() not in (None, 0) for p in procs)
            ),
            timeout=240,
            what=f"try {t}",
        )
    errors = [p.communicate(timeout=60)[1] for p in procs]
    assert all(p.returncode == 0 for p in procs), "\n".join(errors)[-3000:]
    for t in range(tries):
        client = mlflow.MlflowClient(f"sqlite:///{tmp_path}/store{t}/mlflow.db")
        (exp,) = [e for e in client.search_experiments() if e.name == "race"]
        runs = client.search_runs([exp.experiment_id])
        assert sorted(r.info.run_name for r in runs) == sorted(f"p{i}" for i in range(processes))
        assert all(r.info.status == "FINISHED" for r in runs)
        assert not list((tmp_path / f"store{t}").glob(".*.tmp"))


@pytest.mark.parametrize(
    "args, named",
    [
        (["seed=-1"], "seed=-1"),
        (["seed=abc"], "seed='abc'"),
        (["n_jobs=many"], "n_jobs='many'"),
        (["method.nu1=-1"], "method.nu1=-1"),
        (["graph.k=0"], "graph.k=0"),
        (["dataset=custom"], "dataset.arff"),
        (["metrics.empty_rows=drop"], "metrics.empty_rows"),
    ],
)
def test_config_errors_are_one_paragraph_before_any_run(tmp_path, args, named):
    code, _, stderr = run(["dataset=emotions", *args] if args[0] != "dataset=custom" else args, tmp_path)
    assert code != 0 and named in stderr
    assert "Traceback" not in stderr
    client = mlflow.MlflowClient(f"sqlite:///{tmp_path}/mlflow.db")
    assert all(not client.search_runs([e.experiment_id]) for e in client.search_experiments())


@pytest.fixture
def small_disk(tmp_path):
    """mount(fs: str, options: str) -> a folder on a 2 MB tmpfs (root with CAP_SYS_ADMIN only);
    unmounted afterwards."""
    mounted = []

    def mount(name: str, options: str = "") -> Path:
        folder = tmp_path / name
        folder.mkdir()
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size=2m{options}", "tmpfs", str(folder)], capture_output=True
        )
        if done.returncode != 0:
            pytest.skip("mounting a small file system needs root with CAP_SYS_ADMIN")
        mounted.append(folder)
        return folder

    yield mount
    for folder in mounted:
        subprocess.run(["umount", "-l", str(folder)], check=False)


def test_unwritable_non_folder_and_full_outputs_are_one_paragraph(tmp_path, small_disk):
    args = ["dataset=emotions", "protocol.repeats=3", "protocol.rates=[0.5]", "progress=false"]
    blocker = tmp_path / "file"
    blocker.write_text("a file, not a folder")
    cases = [
        (blocker, False, "a part of the path is a file"),
        (blocker, True, "a part of the path is a file"),
        (small_disk("ro", ",ro"), False, "the file system is read-only"),
    ]
    for out, multirun, words in cases:
        code, _, stderr = run(args, out, multirun=multirun)
        assert code == 2 and f"cannot write to the {'sweep' if multirun else 'run'} folder {out}/" in stderr
        assert words in stderr and "Traceback" not in stderr

    full = small_disk("full")
    code, _, stderr = run(args, full)  # a first run fits, then the disk is filled up
    assert code == 0, stderr[-2000:]
    subprocess.run(["dd", "if=/dev/zero", f"of={full}/filler", "bs=1k", "count=2000"], capture_output=True)
    (full / "filler").unlink()
    subprocess.run(["dd", "if=/dev/zero", f"of={full}/filler", "bs=1k", "count=880"], capture_output=True)
    code, _, stderr = run(args, full)
    assert code != 0 and "Traceback" not in stderr, stderr[-3000:]
    # the run folder's probe, or a write during the run, finds the disk full
    assert any(f"cannot write {where}{full}" in stderr for where in ("", "to the run folder ", "sqlite:///"))
    client, runs = all_runs(full)  # the store is intact: the first run is still there, FINISHED
    assert "FINISHED" in {r.info.status for r in runs}
    import sqlite3

    with sqlite3.connect(full / "mlflow.db") as db:
        assert db.execute("PRAGMA integrity_check").fetchall() == [("ok",)]


def test_unreachable_tracking_server_is_named_before_anything_runs(tmp_path):
    started = time.monotonic()
    code, _, stderr = run(
        ["tracking=server", "tracking.uri=http://127.0.0.1:9", "dataset=emotions"], tmp_path
    )
    assert code != 0 and "http://127.0.0.1:9" in stderr and "nothing was run" in stderr
    assert "Traceback" not in stderr and time.monotonic() - started < 120


def lines_said(stderr: str) -> list[str]:
    """What the command said on stderr, without MLflow's notes of a store it creates."""
    return [line for line in stderr.splitlines() if line.strip() and " INFO mlflow." not in line]


def fill(folder: Path) -> None:
    subprocess.run(["dd", "if=/dev/zero", f"of={folder}/filler", "bs=1k", "count=4000"], capture_output=True)


def test_a_full_disk_ends_a_job_in_one_paragraph_and_no_run_stays_running(tmp_path, small_disk):
    """The store's disk fills during a job: one paragraph, exit status 2, the run left RUNNING
    while the store cannot be written, and continued by resume=true once there is room. The
    outputs' disk fills: the run ends FAILED at once. 16 KB free at the start: nothing runs."""
    store = small_disk("store")
    args = [
        *SHORT,
        "protocol.repeats=40",
        "tracking.checkpoint_seconds=0",
        f"tracking.uri=sqlite:///{store}/mlflow.db",
        f"tracking.artifact_location={store}/mlartifacts",
    ]
    proc = start(args, tmp_path / "out")
    wait_for(lambda: described_in(store) or proc.poll() is not None, what="the run described")
    fill(store)
    stdout, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 2, stderr[-3000:]
    assert "Traceback" not in stdout + stderr and "while ending the run" not in stdout
    (said,) = lines_said(stderr)
    assert said.startswith(f"cannot write {store}/mlartifacts/") and "the disk is full" in said
    client = mlflow.MlflowClient(f"sqlite:///{store}/mlflow.db")
    (left,) = client.search_runs([client.get_experiment_by_name("mlgraph").experiment_id])
    assert left.info.status == "RUNNING"  # the store took no more writes, not even the last try's
    (store / "filler").unlink()
    code, _, stderr = run([*args, "resume=true"], tmp_path / "out")
    assert code == 0, stderr[-3000:]
    (resumed,) = client.search_runs([left.info.experiment_id])
    assert resumed.info.run_id == left.info.run_id and resumed.info.status == "FINISHED"
    assert resumed.data.tags["resumed_after"].startswith("left RUNNING")

    outputs = small_disk("outputs")
    args = [
        *SHORT,
        "protocol.repeats=40",
        f"tracking.uri=sqlite:///{tmp_path}/elsewhere/mlflow.db",
        f"tracking.artifact_location={tmp_path}/elsewhere/mlartifacts",
    ]
    proc = start(args, outputs)
    wait_for(
        lambda: described_in(tmp_path / "elsewhere") or proc.poll() is not None, what="the run described"
    )
    fill(outputs)
    stdout, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 2 and "Traceback" not in stdout + stderr, stderr[-3000:]
    assert any(line.startswith("cannot write") and "the disk is full" in line for line in lines_said(stderr))
    client = mlflow.MlflowClient(f"sqlite:///{tmp_path}/elsewhere/mlflow.db")
    (failed,) = client.search_runs([client.get_experiment_by_name("mlgraph").experiment_id])
    assert failed.info.status == "FAILED"

    for leftover in outputs.iterdir():  # 16 KB left free
        shutil.rmtree(leftover) if leftover.is_dir() else leftover.unlink()
    count = shutil.disk_usage(outputs).free // 1024 - 16
    subprocess.run(
        ["dd", "if=/dev/zero", f"of={outputs}/filler", "bs=1k", f"count={count}"], capture_output=True
    )
    code, stdout, stderr = run(SHORT, outputs)
    assert code == 2 and "Traceback" not in stdout + stderr, stderr[-3000:]
    (said,) = lines_said(stderr)
    assert said.startswith(f"cannot write to the run folder {outputs}/runs/")
    assert "the disk is full (16 KB free, a job needs 1 MB to start); nothing was run." in said


def described_in(folder: Path) -> bool:
    """Whether the store in ``folder`` holds a run with its tags."""
    if not (folder / "mlflow.db").exists():
        return False
    try:
        client = mlflow.MlflowClient(f"sqlite:///{folder}/mlflow.db")
        experiment = client.get_experiment_by_name("mlgraph")
        runs = client.search_runs([experiment.experiment_id]) if experiment else []
    except Exception:
        return False
    return any("dataset_sha256" in r.data.tags for r in runs)
