"""Worker processes that start warm: forked from the process that needs them.

A forked worker shares its parent's imports and arrays (copy-on-write) and starts in
milliseconds; a spawned one (joblib's loky, or any platform without ``fork``) starts a new
interpreter and imports numpy, scipy, scikit-learn and mlgraph again (1.2–2.5 s each on a
2-core machine) and receives its arrays pickled.

Forking is safe here only because a worker never runs more than one OpenMP thread: GNU OpenMP
(scikit-learn's) keeps the thread pool of a parent that has run a parallel region in a state
that hangs a forked child's next multithreaded region, but a one-thread region does not use
it. OpenBLAS stops and restarts its own threads around a fork. So callers fork only workers
limited to one thread (:func:`forked` takes care of the rest) and spawn the others.

:func:`each_in_workers` gives each worker a pipe of its own and one item at a time, so that a
worker that dies (SIGKILL, the out-of-memory killer, a crash) costs its own item one more attempt
and nothing else; :func:`forked`'s ``ProcessPoolExecutor`` breaks as a whole instead.

Every worker ignores Ctrl-C (the parent handles it and kills its workers), takes SIGTERM's
default action, and dies with its parent (:func:`mlgraph.processes.signals.die_with_parent`).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import pickle
import signal
import sys
import warnings
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from typing import Any

from mlgraph.processes.signals import die_with_parent

__all__ = ["FORK", "WorkerDied", "each_in_workers", "forked"]

FORK = sys.platform.startswith("linux")  # elsewhere fork is unsafe (macOS) or missing (Windows)


def _start(initializer: Callable | None, initargs: tuple) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    die_with_parent()
    if initializer is not None:
        initializer(*initargs)


@contextlib.contextmanager
def forked(
    workers: int, initializer: Callable | None = None, initargs: tuple = ()
) -> Iterator[ProcessPoolExecutor]:
    """A ``ProcessPoolExecutor`` of ``workers`` processes, forked on Linux (spawned elsewhere,
    ``initargs`` then pickled), each running ``initializer(*initargs)`` first. Leaving the block
    waits for the submitted calls; an exception or a signal inside it kills the workers at once.
    The calls must run at most one OpenMP thread (see the module notes)."""
    context = multiprocessing.get_context("fork" if FORK else "spawn")
    pool = ProcessPoolExecutor(
        workers, mp_context=context, initializer=_start, initargs=(initializer, initargs)
    )
    try:
        with warnings.catch_warnings():  # Python ≥ 3.12 warns of any thread at a fork: OpenBLAS stops its own
            warnings.filterwarnings("ignore", r".*multi-threaded, use of fork\(\)", DeprecationWarning)
            yield pool
    except BaseException:
        for process in list(pool._processes.values()):  # no public way before Python 3.14
            process.kill()
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


class WorkerDied(Exception):
    """What an item gets when every worker that took it died: how the last one ended."""

    def __init__(self, exitcode: int | None, attempts: int):
        self.exitcode, self.attempts = exitcode, attempts
        how = f"signal {-exitcode}" if exitcode is not None and exitcode < 0 else f"exit status {exitcode}"
        super().__init__(
            f"worker died ({how})" + (f" in each of {attempts} attempts" if attempts > 1 else "")
        )


@dataclass(eq=False)
class _Worker:
    process: multiprocessing.process.BaseProcess
    conn: Connection
    index: int | None = None  # the item it is working on


def _work(conn: Connection, function: Callable, initializer: Callable | None, initargs: tuple) -> None:
    """A worker of :func:`each_in_workers`: ``(index, item)`` in, ``(index, ok, result)`` out, one at a
    time, until it is sent None (a forked worker holds a copy of the parent's end of its pipe, so
    the pipe never closes while it lives) or its parent dies."""
    _start(initializer, initargs)
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            return
        if message is None:
            return
        index, item = message
        try:
            answer = (index, True, function(item))
        except Exception as exc:  # the caller decides what it means
            answer = (index, False, exc)
        try:
            conn.send(answer)
        except (pickle.PicklingError, TypeError, AttributeError) as exc:  # a result that cannot travel
            conn.send((index, False, RuntimeError(f"{type(exc).__name__}: {exc}")))


class _Pool:
    """The workers of one :func:`each_in_workers` call, each with a pipe of its own."""

    def __init__(self, context, size: int, target_args: tuple):
        self.context, self.size, self.target_args = context, size, target_args
        self.workers: list[_Worker] = []

    def _start(self) -> _Worker:
        ours, theirs = self.context.Pipe()
        # not daemonic: a trial's estimator may start workers of its own (forked)
        process = self.context.Process(target=_work, args=(theirs, *self.target_args))
        process.start()
        theirs.close()
        worker = _Worker(process, ours)
        self.workers.append(worker)
        return worker

    def _drop(self, worker: _Worker) -> int | None:
        """Forget a worker that died (or is to die) and reap it; its exit code."""
        self.workers.remove(worker)
        worker.conn.close()
        worker.process.join()
        return worker.process.exitcode

    def _give(self, index: int, item) -> None:
        """Send an item to an idle worker, or to a new one; an idle worker found dead (it died
        between two items) is replaced, and the item is not charged for it."""
        while True:
            idle = [w for w in self.workers if w.index is None]
            worker = idle[0] if idle else self._start()
            try:
                worker.conn.send((index, item))
            except OSError:
                self._drop(worker)
                continue
            worker.index = index
            return

    def results(
        self, items: list, attempts: int, on_retry: Callable[[int, WorkerDied], None] | None
    ) -> Iterator[tuple[int, Any]]:
        todo = deque(range(len(items)))
        tries = [0] * len(items)
        ended: list[tuple[int, Any]] = []
        while True:
            while todo and sum(w.index is not None for w in self.workers) < self.size:
                self._give(index := todo.popleft(), items[index])
            yield from ended  # once the next items are out: the workers go on meanwhile
            busy = [w for w in self.workers if w.index is not None]
            if not busy:
                return
            ready = set(wait([w.conn for w in busy] + [w.process.sentinel for w in busy]))
            ended = []
            for worker in busy:
                if worker.conn not in ready and worker.process.sentinel not in ready:
                    continue
                index, worker.index = worker.index, None
                try:
                    number, ok, value = worker.conn.recv()  # an answer sent just before dying counts
                except (EOFError, OSError):
                    exitcode = self._drop(worker)
                    tries[index] += 1
                    if tries[index] >= attempts:
                        ended.append((index, WorkerDied(exitcode, tries[index])))
                        continue
                    todo.appendleft(index)  # next, in a new worker
                    if on_retry is not None:
                        on_retry(index, WorkerDied(exitcode, tries[index]))
                    continue
                if not ok:
                    raise value
                ended.append((number, value))

    def close(self, kill: bool) -> None:
        """End every worker: idle ones by telling them; all of them at once by SIGKILL when
        ``kill`` (an exception or a signal in the caller)."""
        for worker in self.workers:
            if kill:
                worker.process.kill()
            else:
                with contextlib.suppress(OSError):
                    worker.conn.send(None)
            worker.conn.close()
        for worker in self.workers:
            worker.process.join()
        self.workers.clear()


@contextlib.contextmanager
def each_in_workers(
    function: Callable,
    items: Sequence,
    workers: int,
    initializer: Callable | None = None,
    initargs: tuple = (),
    fork: bool = FORK,
    attempts: int = 2,
    on_retry: Callable[[int, WorkerDied], None] | None = None,
) -> Iterator[Iterator[tuple[int, Any]]]:
    """``function(item)`` for each item in at most ``workers`` processes, each running
    ``initializer(*initargs)`` first: yields an iterator of ``(index, result)`` in the order the
    items finish. Workers are forked when ``fork`` (they must then run at most one OpenMP
    thread, see the module notes), else spawned (``function`` and ``initargs`` are then pickled,
    once per worker).

    A worker that dies (SIGKILL, the out-of-memory killer, a crash) costs its own item only:
    the item goes to a new worker (``on_retry(index, died)`` is told), up to ``attempts`` workers
    in all, after which its result is a :class:`WorkerDied` saying how the last one ended; the
    other workers go on. An exception ``function`` raises is raised here. Leaving the block early,
    by an exception or a signal, kills the workers at once."""
    context = multiprocessing.get_context("fork" if fork else "spawn")
    pool = _Pool(context, max(1, workers), (function, initializer, initargs))
    try:
        with warnings.catch_warnings():  # Python ≥ 3.12 warns of any thread at a fork: OpenBLAS stops its own
            warnings.filterwarnings("ignore", r".*multi-threaded, use of fork\(\)", DeprecationWarning)
            yield pool.results(list(items), attempts, on_retry)
    except BaseException:
        pool.close(kill=True)
        raise
    pool.close(kill=False)
