"""Signal handling of launcher worker processes (mlgraph.processes.signals)."""

import os
import signal

import pytest
from joblib.externals.loky import ProcessPoolExecutor
from joblib.externals.loky.process_executor import TerminatedWorkerError

from mlgraph.processes import signals


def _job(signum: int, between_jobs: bool) -> None:
    """A launcher job in a loky worker: set the worker's handlers as a multirun job does
    (``between_jobs``), then receive ``signum`` outside the job's own handlers. The worker
    starts with Python's Ctrl-C handler, as under a sweep started from a terminal (one started
    in the background inherits an ignored SIGINT)."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    if between_jobs:
        signals.end_worker_between_jobs()
    os.kill(os.getpid(), signum)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_between_jobs_ends_the_launcher_worker(signum):
    """Ctrl-C or SIGTERM outside a job's handlers ends the worker: it does not go on to run the
    next job of an interrupted sweep (which its executor would then kill, the run RUNNING)."""
    pool = ProcessPoolExecutor(max_workers=1)
    try:
        pool.submit(_job, signum, True).result()
    except TerminatedWorkerError:
        pass
    except BaseException as exc:  # noqa: BLE001 (a KeyboardInterrupt must fail this test, not stop the session)
        pytest.fail(f"the worker survived the signal: {exc!r}")
    else:
        pytest.fail("the worker survived the signal")
    finally:
        pool.shutdown(wait=True)


def test_without_it_loky_serves_the_next_job_after_ctrl_c():
    """What end_worker_between_jobs prevents: loky returns the job's KeyboardInterrupt as its
    result and the same worker runs the next job."""
    pool = ProcessPoolExecutor(max_workers=1)
    try:
        worker = pool.submit(os.getpid).result()
        with pytest.raises(KeyboardInterrupt):
            pool.submit(_job, signal.SIGINT, False).result()
        assert pool.submit(os.getpid).result() == worker
    finally:
        pool.shutdown(wait=True)


def test_the_sweeps_own_process_keeps_its_handlers():
    """Where jobs run in the sweep's own process (the basic launcher), its handlers stay."""
    handler = signal.getsignal(signal.SIGINT)
    signals.end_worker_between_jobs()
    assert signal.getsignal(signal.SIGINT) is handler


def _armed_child(queue) -> None:
    signals.die_with_parent()
    queue.put((os.getpid(), os.getppid()))


@pytest.mark.parametrize("method", ["spawn", "forkserver"])
def test_a_worker_started_by_a_fork_server_is_not_taken_for_an_orphan(method):
    """die_with_parent in a process whose OS parent is a fork server (not the process that
    started it) arms the kernel's signal and lives on."""
    import multiprocessing

    context = multiprocessing.get_context(method)
    queue = context.Queue()
    child = context.Process(target=_armed_child, args=(queue,))
    child.start()
    pid, os_parent = queue.get(timeout=60)
    child.join(timeout=60)
    assert child.exitcode == 0  # not killed by its own SIGTERM
    assert (os_parent == os.getpid()) == (method == "spawn")
