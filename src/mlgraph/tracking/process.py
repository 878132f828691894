"""The process that writes a job's run to MLflow, beside the process that runs its trials.

MLflow, its SQLAlchemy store and their table models take about 2 s of CPU to import; imported in
the job's own process while the trials run, they take that CPU from the trials. The commands
that run one job (``python -m run``, ``mlgraph run``) instead fork this process first thing: it
imports them on the core that the command's own imports and config composition leave idle, then
carries out each tracking step the job hands it (open the run, copy the checkpoint, log the
results, end the run). A step is a function of :mod:`mlgraph.tracking.store` and its arguments,
pickled, and run in the job's working directory with the job's environment variables; its
result or its exception (with its chain of causes) comes back.

Where no such process runs (a sweep's jobs, tests, a library user calling
:func:`mlgraph.engine.experiment.run_experiment`), :func:`tracked` runs the same functions in the
caller's process. Every step of one run goes to one process, so MLflow's active run is always
where the steps run.

The process ignores Ctrl-C and SIGTERM: the job catches them and closes the run through it. It
ends when the job says so, or when the job's end of the pipe closes without a word (the job's
process died: SIGKILL, the out-of-memory killer, a crash): it then copies the job's local
checkpoint to the run and ends the run KILLED, which ``resume=true`` continues. Processes forked
from the job later (its trial workers) drop the pipe.

When this process dies (SIGKILL, the out-of-memory killer), the job notices at its next step
(the pipe closed, or the process reaped): it says so in one paragraph and carries out that step
and every later one itself, with MLflow's own connection, the run the process had opened made
MLflow's active run here first (a step's ``take_over``). A step the process was carrying out when
it died runs again here (its ``redo``, when it has one, else the step itself), so every step is
one that may run twice: the run is ended, not left RUNNING, and no checkpoint is lost (each
copies the whole local file).
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import pickle
import signal
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection, Pipe
from typing import Any

__all__ = ["start_tracking_process", "stop_tracking_process", "tracked"]

_SIGNALS = {signal.SIGINT, signal.SIGTERM}
log = logging.getLogger(__name__)


class _TrackingProcess:
    """The job's side: the pipe to the process, the number of the last request, and what a
    take-over needs (the ``take_over`` hook of each step done, with its result and arguments)."""

    def __init__(self, pid: int, connection: Connection):
        self.pid, self.connection, self.sent = pid, connection, 0
        self.done: list[tuple[Callable, Any, tuple, dict]] = []
        self.death: str | None = None  # how it ended, once reaped

    def call(self, function: Callable, args: tuple, kwargs: dict) -> Any:
        """``function(*args, **kwargs)`` in the process. Sending and receiving a message hold
        SIGINT and SIGTERM back (a message cut in half would garble the next one); while the
        process works, a signal interrupts the wait as usual, and the late answer is skipped by
        its number when the next call reads the pipe. A process found dead is taken over
        (:func:`_take_over`)."""
        if self.ended():
            return _take_over(self, function, args, kwargs, sent_at=None)
        self.sent += 1
        here = (os.getcwd(), dict(os.environ))  # e.g. hydra.job.chdir, hydra.job.env_set
        message = pickle.dumps((*here, function, args, kwargs), protocol=pickle.HIGHEST_PROTOCOL)
        sent_at = time.time()
        try:
            with _signals_held():
                self.connection.send((self.sent, message))
            while True:
                self.connection.poll(None)  # a signal's handler may raise here
                with _signals_held():
                    number, ok, value = self.connection.recv()
                if number == self.sent:
                    break
        except (EOFError, OSError):  # the pipe closed: the process died
            return _take_over(self, function, args, kwargs, sent_at=sent_at)
        if not ok:
            raise _rebuilt(*value)
        if (take_over := getattr(function, "take_over", None)) is not None:
            self.done.append((take_over, value, args, kwargs))
        return value

    def ended(self, wait_seconds: float = 0.0) -> bool:
        """Whether the process has ended, within ``wait_seconds`` (reaped here, :attr:`death`
        saying how)."""
        deadline = time.monotonic() + wait_seconds
        while self.death is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:  # reaped elsewhere
                pid, status = self.pid, None
            if pid:
                self.death = _how(status)
            elif time.monotonic() >= deadline:
                return False
            else:
                time.sleep(0.01)
        return True


def _how(status: int | None) -> str:
    """A wait status in words."""
    if status is None:
        return "(reaped elsewhere)"
    if os.WIFSIGNALED(status):
        return f"of {signal.Signals(os.WTERMSIG(status)).name}"
    return f"with exit status {os.waitstatus_to_exitcode(status)}"


def _take_over(
    process: _TrackingProcess, function: Callable, args: tuple, kwargs: dict, sent_at: float | None
) -> Any:
    """The tracking process died: from now on every step runs in this process. Make the state
    the steps it did left there (MLflow's active run) this process's own, say so once, then
    carry out ``function``: again by its ``redo(sent_at, ...)`` when the process may have
    carried out part of it (``sent_at`` is when it was sent), else as it is."""
    global _process
    _process = None
    if not process.ended(wait_seconds=5.0):  # its end of the pipe closed as it died; else it hangs
        with contextlib.suppress(ProcessLookupError):
            os.kill(process.pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(process.pid, 0)
        process.death = "of SIGKILL (sent by the job: the pipe to it had broken)"
    process.connection.close()
    step = function.__name__
    log.warning(
        "the tracking process (pid %d) died %s %s %s; the job carries out that step and the run's "
        "later MLflow steps in its own process, through a connection of its own, and ends the run there.",
        process.pid,
        process.death,
        "while it carried out" if sent_at is not None else "before",
        step,
    )
    for take_over, result, done_args, done_kwargs in process.done:
        take_over(result, *done_args, **done_kwargs)
    redo = getattr(function, "redo", None) if sent_at is not None else None
    return redo(sent_at, *args, **kwargs) if redo is not None else function(*args, **kwargs)


_process: _TrackingProcess | None = None


@contextlib.contextmanager
def _signals_held():
    """SIGINT and SIGTERM blocked within the block; one that came is handled after it."""
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, _SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def tracked(function: Callable, *args, **kwargs) -> Any:
    """``function(*args, **kwargs)``, in the tracking process when this process started one,
    else here. ``function`` must be importable by name (a module-level function); when the
    process dies, its attributes ``take_over(result, *args, **kwargs)`` (makes the state a step
    done there left behind this process's own) and ``redo(sent_at, *args, **kwargs)`` (carries
    out a step the process may have done in part) are used, where a step has them."""
    if _process is None:
        return function(*args, **kwargs)
    return _process.call(function, args, kwargs)


def start_tracking_process(argv: Sequence[str]) -> None:
    """Fork the tracking process, on Linux, for a command line that runs one job: Hydra
    overrides only (a flag such as ``-m``, ``--cfg`` or ``--help`` runs a sweep or no job).
    Call it before the heavy imports, which the process makes on its own."""
    global _process
    if _process is not None or not sys.platform.startswith("linux") or any(a.startswith("-") for a in argv):
        return
    ours, theirs = Pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    with _signals_held():  # the child ignores them before it takes any
        pid = os.fork()
        if pid == 0:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if pid == 0:
        ours.close()
        _serve(theirs)  # never returns
    theirs.close()
    _process = _TrackingProcess(pid, ours)
    atexit.register(stop_tracking_process)


def stop_tracking_process() -> None:
    """End the tracking process (after its last step) and wait for it; one that was never
    sent a step (the job stopped before its trials) may still be importing: it is killed."""
    global _process
    process, _process = _process, None
    if process is None:
        return
    if process.sent == 0:
        os.kill(process.pid, signal.SIGKILL)
    with contextlib.suppress(OSError):
        with _signals_held():
            process.connection.send(None)
        process.connection.close()
    with contextlib.suppress(ChildProcessError):
        os.waitpid(process.pid, 0)


def _forget() -> None:
    """In a process forked from the job (a trial worker): not ours to talk to."""
    global _process
    if _process is not None:
        _process.connection.close()
        _process = None


os.register_at_fork(after_in_child=_forget)


def _serve(connection: Connection) -> None:
    """The tracking process: import MLflow and its store, then run each step it is sent."""
    try:
        with contextlib.suppress(Exception):  # else the first step that needs it says why
            _warm()
        while True:
            request = connection.recv()
            if request is None:
                break
            number, message = request
            try:
                cwd, environ, function, args, kwargs = pickle.loads(message)
                if cwd != os.getcwd():
                    os.chdir(cwd)
                if environ.items() - os.environ.items():
                    os.environ.update(environ)
                answer = (number, True, function(*args, **kwargs))
            except BaseException as exc:  # the job decides what an error means
                answer = (number, False, _portable(exc))
            try:
                connection.send(answer)
            except (pickle.PicklingError, TypeError, AttributeError) as exc:  # a result that cannot travel
                connection.send((number, False, _portable(exc)))
    except (EOFError, OSError):  # the job's process died without a word
        _on_store("close_abandoned_run")
    except KeyboardInterrupt:
        pass
    finally:
        _on_store("close_unclosed")
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)


def _on_store(name: str) -> None:
    """Call :mod:`mlgraph.tracking.store`'s ``name()`` when a step has loaded it (else no run was
    opened here); an error is this process's last word, not the job's."""
    store = sys.modules.get("mlgraph.tracking.store")
    if store is not None:
        try:
            getattr(store, name)()
        except Exception as exc:
            print(f"tracking process: {name}: {type(exc).__name__}: {exc}", file=sys.stderr)


def _warm() -> None:
    """What every run needs before its first step, imported before the job asks."""
    import mlflow  # noqa: F401
    import mlflow.store.tracking.sqlalchemy_store  # noqa: F401

    import mlgraph.tracking.store  # noqa: F401


def _portable(exc: BaseException) -> tuple[list[BaseException], str]:
    """``exc`` and its causes, each as itself if it survives pickling, else as a RuntimeError
    with its type and message; and where it was raised (its traceback)."""
    where = "".join(traceback.format_tb(exc.__traceback__)).rstrip()
    chain: list[BaseException] = []
    while exc is not None and len(chain) < 16:
        try:
            item = pickle.loads(pickle.dumps(exc))
        except Exception:
            item = RuntimeError(f"{type(exc).__name__}: {exc}")
        chain.append(item)
        exc = exc.__cause__ or exc.__context__
    return chain, f"raised in the tracking process (pid {os.getpid()}):\n{where}"


def _rebuilt(chain: list[BaseException], where: str) -> BaseException:
    """The exception :func:`_portable` sent, its causes linked again, with a note of where."""
    for outer, inner in zip(chain, chain[1:], strict=False):
        outer.__cause__ = inner
    chain[0].add_note(where)
    return chain[0]
