"""Sweep jobs in worker processes of their own, so that a dead worker costs one job, not the sweep.

joblib's loky executor (hydra-joblib-launcher) breaks as a whole when one of its workers dies:
SIGKILL of one job's process, or the kernel's out-of-memory killer, ends every other job of the
sweep and leaves their runs RUNNING. Here each worker is a process with a pipe of its own; the
sweep's process sends it one job at a time and waits on every worker's pipe and process sentinel
at once. A worker that dies mid-job is noticed by its sentinel: its job's MLflow run is marked
KILLED with how it died (:func:`mlgraph.engine.sweep.close_dead_job`), a new worker takes the next job,
and once every job has ended the dead one is a failed job whose message says to resume.

Workers are reused from job to job (imports are paid once per worker, as with loky) and are
started by :func:`start_worker` (multiprocessing's ``spawn``: a fresh interpreter, no state
copied from the sweep's process). They ask to die with the sweep's process
(:func:`mlgraph.processes.signals.die_with_parent`) and end at once on SIGTERM/SIGINT between two jobs;
during a job the job's own handlers close its run first (:mod:`mlgraph.processes.signals`).
"""

from __future__ import annotations

import logging
import multiprocessing
import pickle
import signal
from collections import deque
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from pathlib import Path

import cloudpickle
import joblib
from hydra.core.hydra_config import HydraConfig
from hydra.core.singleton import Singleton
from hydra.core.utils import JobReturn, JobStatus, configure_log, filter_overrides, run_job, setup_globals
from hydra.errors import CompactHydraException
from omegaconf import open_dict

log = logging.getLogger(__name__)


class JobDied(CompactHydraException, RuntimeError):
    """A sweep job whose process died (SIGKILL, out of memory, a crash) before it returned."""


def execute_job(idx, overrides, hydra_context, config, task_function, singleton_state) -> JobReturn:
    """One Hydra job in this process (what hydra-joblib-launcher's workers run); overrides
    that do not compose make a failed job, not a dead worker."""
    setup_globals()
    Singleton.set_state(singleton_state)
    try:
        sweep_config = hydra_context.config_loader.load_sweep_config(config, list(overrides))
    except Exception as exc:  # Hydra's composition errors, as its sweepers would raise them
        ret = JobReturn(overrides=list(overrides), status=JobStatus.FAILED)
        ret.return_value = exc
        return ret
    with open_dict(sweep_config):
        sweep_config.hydra.job.id = f"{sweep_config.hydra.job.name}_{idx}"
        sweep_config.hydra.job.num = idx
    HydraConfig.instance().set_config(sweep_config)
    return run_job(
        hydra_context=hydra_context,
        config=sweep_config,
        task_function=task_function,
        job_dir_key="hydra.sweep.dir",
        job_subdir_key="hydra.sweep.subdir",
    )


def _serve(conn: Connection) -> None:
    """A worker's loop: receive a job, run it, send its JobReturn back; end when the pipe closes."""
    from mlgraph.engine.runner import quick_exit
    from mlgraph.processes.signals import die_with_parent

    for signum in (signal.SIGTERM, signal.SIGINT):  # between jobs a signal ends the worker
        signal.signal(signum, signal.SIG_DFL)
    die_with_parent()
    with quick_exit():  # at the end, no seconds of interpreter teardown while the sweep waits
        while True:
            try:
                job = pickle.loads(conn.recv_bytes())
            except (EOFError, OSError):
                return
            conn.send_bytes(_dumps(execute_job(*job)))


def _dumps(ret: JobReturn) -> bytes:
    """A JobReturn as bytes; a failed job's exception that cannot be pickled travels as its text."""
    try:
        return cloudpickle.dumps(ret)
    except Exception as exc:  # pickling raises whatever the object's reducer raises
        ret.return_value = RuntimeError(f"{ret._return_value} (could not be sent back: {exc})")
        ret.cfg = ret.hydra_cfg = None
        return cloudpickle.dumps(ret)


def start_worker(name: str) -> tuple[multiprocessing.Process, Connection]:
    """A new worker process and the sweep's end of its pipe."""
    context = multiprocessing.get_context("spawn")
    ours, theirs = context.Pipe()
    process = context.Process(
        target=_serve, args=(theirs,), name=name
    )  # not daemonic: it may start trial workers
    process.start()
    theirs.close()
    return process, ours


def death_cause(exitcode: int | None) -> str:
    """How a worker process ended, in words."""
    if exitcode is not None and exitcode < 0:
        name = signal.Signals(-exitcode).name
        if -exitcode == signal.SIGKILL:
            return f"{name} (kill -9, or the kernel's out-of-memory killer)"
        return name
    return f"exit status {exitcode}"


@dataclass
class _Worker:
    process: multiprocessing.Process
    conn: Connection
    job: tuple[int, list[str]] | None = None


@dataclass
class _Pool:
    """At most ``size`` workers, each running one job at a time."""

    size: int
    workers: list[_Worker] = field(default_factory=list)
    started: int = 0
    grace: float = 10.0  # seconds a busy worker has to end after an interruption

    def idle(self) -> _Worker | None:
        for worker in list(self.workers):
            if worker.job is None and not worker.process.is_alive():  # ended between two jobs
                worker.process.join()
                self.workers.remove(worker)
            elif worker.job is None:
                return worker
        if len(self.workers) < self.size:
            self.started += 1
            worker = _Worker(*start_worker(f"mlgraph-job-worker-{self.started}"))
            self.workers.append(worker)
            return worker
        return None

    def busy(self) -> list[_Worker]:
        return [w for w in self.workers if w.job is not None]

    def finished(self) -> list[tuple[_Worker, JobReturn | None]]:
        """Wait until some busy workers have a result or have died; (worker, result or None)."""
        busy = self.busy()
        ready = set(wait([w.conn for w in busy] + [w.process.sentinel for w in busy]))
        done = []
        for worker in busy:
            if worker.conn not in ready and worker.process.sentinel not in ready:
                continue
            try:
                done.append((worker, pickle.loads(worker.conn.recv_bytes())))
            except (EOFError, OSError):  # the pipe closed: the process is gone
                done.append((worker, None))
            if worker.process.sentinel in ready or done[-1][1] is None:
                worker.process.join()
                self.workers.remove(worker)
        return done

    def close(self) -> list[tuple[int, str]]:
        """End every worker: idle ones by closing their pipes, busy ones (after an interruption,
        once they were given the signal) by SIGKILL if they have not exited within ``grace`` (e.g.
        still inside a long BLAS call, where Python's signal handler has not run yet). Returns
        (job number, how its process ended) of each job still running, whose run its process
        may have left RUNNING."""
        for worker in self.workers:
            worker.conn.close()
        ended = []
        for worker in self.workers:
            worker.process.join(timeout=self.grace)
            if worker.process.is_alive():
                worker.process.kill()
                worker.process.join()
            if worker.job is not None:
                ended.append((worker.job[0], death_cause(worker.process.exitcode)))
        return ended


def _dead_job_return(overrides: list[str], message: str) -> JobReturn:
    ret = JobReturn(overrides=overrides, status=JobStatus.FAILED)
    ret.return_value = JobDied(message)
    return ret


def launch(launcher, job_overrides, initial_job_idx: int) -> list[JobReturn]:
    """Run every job of a batch, at most ``launcher.n_jobs`` at once (joblib's meaning: -1 is
    every core), each in a worker process; return their JobReturns in job order."""
    from mlgraph.engine.sweep import close_dead_job, close_left_running_job

    setup_globals()
    config = launcher.config
    configure_log(config.hydra.hydra_logging, config.hydra.verbose)
    sweep_dir = Path(str(config.hydra.sweep.dir))
    sweep_dir.mkdir(parents=True, exist_ok=True)
    size = max(1, min(len(job_overrides), joblib.effective_n_jobs(launcher.n_jobs)))
    log.info("Launching %d jobs, %d at once, sweep output dir: %s", len(job_overrides), size, sweep_dir)
    for idx, overrides in enumerate(job_overrides):
        log.info("\t#%d : %s", initial_job_idx + idx, " ".join(filter_overrides(overrides)))
    state = Singleton.get_state()
    todo = deque((initial_job_idx + i, list(o)) for i, o in enumerate(job_overrides))
    results: dict[int, JobReturn] = {}
    dead: list[tuple[int, list[str], str, str | None]] = []
    pool = _Pool(size)
    try:
        while todo or pool.busy():
            while todo and (worker := pool.idle()) is not None:
                worker.job = idx, overrides = todo.popleft()
                job = (idx, overrides, launcher.hydra_context, config, launcher.task_function, state)
                worker.conn.send_bytes(cloudpickle.dumps(job))  # a dead worker is found by its sentinel
            for worker, ret in pool.finished():
                idx, overrides = worker.job
                worker.job = None
                if ret is not None:
                    results[idx] = ret
                    continue
                cause = death_cause(worker.process.exitcode)
                run_id = close_dead_job(idx, overrides, cause)
                dead.append((idx, overrides, cause, run_id))
                log.error(
                    "job #%d (%s) died of %s%s; the other jobs go on",
                    idx,
                    " ".join(overrides),
                    cause,
                    f", its run {run_id} is KILLED" if run_id else "",
                )
    finally:
        for idx, cause in pool.close():  # a run its job could not close ends KILLED, not RUNNING
            close_left_running_job(idx, cause)
    if dead:
        message = _dead_message(dead, len(job_overrides))
        for idx, overrides, *_ in dead:
            results[idx] = _dead_job_return(overrides, message)
    return [results[initial_job_idx + i] for i in range(len(job_overrides))]


def _dead_message(dead: list[tuple[int, list[str], str, str | None]], n_jobs: int) -> str:
    jobs = "; ".join(
        f"#{idx} ({' '.join(overrides) or 'no overrides'}) of {cause}, "
        + (f"its run {run_id} is KILLED" if run_id else "before its run opened")
        for idx, overrides, cause, run_id in dead
    )
    return (
        f"{len(dead)} of {n_jobs} jobs died: {jobs}. The other jobs ran to the end. Run the same "
        "command again with resume=true to finish the sweep: finished jobs are skipped, a killed "
        "job resumes its run from the trials it saved."
    )
