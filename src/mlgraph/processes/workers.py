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

Every worker ignores Ctrl-C (the parent handles it and kills its workers), takes SIGTERM's
default action, and dies with its parent (:func:`mlgraph.processes.signals.die_with_parent`).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import signal
import sys
import warnings
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor

from mlgraph.processes.signals import die_with_parent

__all__ = ["FORK", "forked"]

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
