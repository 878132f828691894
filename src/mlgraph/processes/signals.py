"""Clean shutdown: signals end a run as KILLED, and no worker outlives its parent.

SIGTERM (``kill``, ``timeout``, SLURM at a time limit or on pre-emption) and SIGINT (Ctrl-C) are
turned into :class:`Interrupted`, a ``BaseException`` so that no ``except Exception`` swallows
it; the job marks its run KILLED, keeps the trials it has, stops its workers and then dies of
the same signal (exit status 128 + signal number), as a program killed by it would.

SIGKILL cannot be caught, so every worker process (Hydra launcher jobs, trial workers) asks the
kernel to send it SIGTERM when its parent dies (``PR_SET_PDEATHSIG``): killing a sweep's main
process ends its jobs, which mark their runs KILLED, whose trial workers follow.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import multiprocessing
import os
import signal
import sys
import threading
import time
from pathlib import Path

_PR_SET_PDEATHSIG = 1
_armed = False
_os_parent: int | None = None  # the process that forked this one, when die_with_parent armed it


class Interrupted(BaseException):
    """A handled SIGTERM or SIGINT."""

    def __init__(self, signum: int):
        self.signum, self.name = signum, signal.Signals(signum).name
        super().__init__(f"interrupted by {self.name}")


def _raise(signum, frame):
    raise Interrupted(signum)


@contextlib.contextmanager
def interrupts_raise():
    """Within the block, SIGTERM and SIGINT raise :class:`Interrupted` in the main thread
    (elsewhere, signals cannot be handled and the block changes nothing)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.signal(s, _raise) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


@contextlib.contextmanager
def deferred():
    """Within the block, SIGTERM and SIGINT wait: a run being created, or being closed after a
    first signal, is not left half-done (RUNNING) by a second one (e.g. the SIGTERM a worker
    gets when its parent dies just after Ctrl-C reached both). Yields the list of signals that
    came, for the caller to act on where it can (:func:`raise_pending`)."""
    pending: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield pending
        return
    previous = {
        s: signal.signal(s, lambda signum, frame: pending.append(signum))
        for s in (signal.SIGTERM, signal.SIGINT)
    }
    try:
        yield pending
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def raise_pending(pending: list[int]) -> None:
    if pending:
        raise Interrupted(pending[0])


def die_of(signum: int) -> None:
    """End this process as the default action of ``signum`` would (the conventional status),
    after the exit handlers (which close a sweep's parent run)."""
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)
    os._exit(128 + signum)  # not reached unless the signal is blocked


def die_with_parent() -> None:
    """In a worker process, have the kernel send SIGTERM when the parent dies (Linux); once
    per process. A parent already gone ends the worker now. The kernel watches the process that
    forked this one: the parent itself (fork, spawn), or a fork server, which exits with the
    parent that started it, so that its children follow."""
    global _armed, _os_parent
    if _armed or multiprocessing.parent_process() is None or not sys.platform.startswith("linux"):
        return
    parent = multiprocessing.parent_process().pid
    _os_parent = os.getppid()
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    _armed = True
    if _gone(parent) or _gone(_os_parent):  # it died before the kernel was asked to tell us
        os.kill(os.getpid(), signal.SIGTERM)


def _gone(pid: int) -> bool:
    stat = _stat(pid)
    return stat is None or stat[0] in "ZX"


def end_worker_between_jobs() -> None:
    """In a launcher's worker process (which runs one job after another: the processes
    launcher's workers, joblib's loky workers):
    SIGTERM and SIGINT end the process at once, by their default actions, wherever a job's own
    handlers (:func:`interrupts_raise`) are not set. loky turns an exception of a job, Ctrl-C's
    KeyboardInterrupt included, into that job's result and serves the next job: a worker hit
    by Ctrl-C between two jobs could go on to start a run of the interrupted sweep, which the
    executor's teardown could then kill RUNNING. Not in a sweep's own process (the basic launcher runs its
    jobs there), whose handlers close the sweep."""
    if multiprocessing.parent_process() is None or threading.current_thread() is not threading.main_thread():
        return
    for s in (signal.SIGTERM, signal.SIGINT):
        signal.signal(s, signal.SIG_DFL)


@contextlib.contextmanager
def exit_conventionally():
    """Around a command's entry point: an :class:`Interrupted` that reaches it ends the process
    by its signal instead of a traceback."""
    try:
        yield
    except Interrupted as exc:
        die_of(exc.signum)


def _stat(pid: int | str) -> tuple[str, int] | None:
    """(state, parent pid) of a process from /proc, or None when it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return fields[0], int(fields[1])


def _children(pid: int) -> list[int]:
    """The live child processes of ``pid``, loky's resource tracker excluded."""
    found = []
    for entry in Path("/proc").iterdir():
        stat = _stat(entry.name) if entry.name.isdigit() else None
        if stat is None or stat[1] != pid or stat[0] == "Z":
            continue
        try:
            if b"resource_tracker" not in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def process_gone(pid: int, wait_seconds: float) -> bool:
    """Whether process ``pid`` is dead or dying (zombie) within ``wait_seconds``: a SIGKILL
    takes its threads down one by one, and the kernel signals a child when the thread that
    started it exits, before the process itself is reaped."""
    deadline = time.monotonic() + wait_seconds
    while True:
        reparented = pid == (_os_parent or os.getppid()) and os.getppid() != pid  # our own parent died
        if _gone(pid) or reparented:
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.1)


def forward_and_wait(signum: int, timeout: float = 60.0) -> None:
    """Send ``signum`` to this process's children (a sweep's launcher workers) and wait for
    them to exit, so that each closes its own run (KILLED) before the parent's executor would
    kill them without a word."""
    children = _children(os.getpid())
    for pid in children:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signum)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(pid in _children(os.getpid()) for pid in children):
        time.sleep(0.2)


def stop_workers() -> None:
    """Kill joblib's reusable worker processes now (after an interruption, not waiting for
    running trials)."""
    from joblib.externals.loky import reusable_executor

    executor = reusable_executor._executor  # None when no worker was ever started
    if executor is not None:
        with contextlib.suppress(Exception):
            executor.shutdown(wait=False, kill_workers=True)
