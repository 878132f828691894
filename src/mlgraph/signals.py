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

_PR_SET_PDEATHSIG = 1
_armed = False


class Interrupted(BaseException):
    """A handled SIGTERM or SIGINT."""

    def __init__(self, signum: int):
        super().__init__(f"interrupted by {signal.Signals(signum).name}")
        self.signum = signum


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
    per process. A parent already gone (reparented to init) ends the worker now."""
    global _armed
    if _armed or multiprocessing.parent_process() is None or not sys.platform.startswith("linux"):
        return
    parent = multiprocessing.parent_process().pid
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    _armed = True
    if os.getppid() != parent:
        os.kill(os.getpid(), signal.SIGTERM)


@contextlib.contextmanager
def exit_conventionally():
    """Around a command's entry point: an :class:`Interrupted` that reaches it ends the process
    by its signal instead of a traceback."""
    try:
        yield
    except Interrupted as exc:
        die_of(exc.signum)


def stop_workers() -> None:
    """Kill joblib's reusable worker processes now (after an interruption, not waiting for
    running trials)."""
    from joblib.externals.loky import reusable_executor

    executor = reusable_executor._executor  # None when no worker was ever started
    if executor is not None:
        with contextlib.suppress(Exception):
            executor.shutdown(wait=False, kill_workers=True)
