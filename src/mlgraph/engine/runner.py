"""Run the trials of one job in parallel and gather them into tables.

Each trial fits a fresh clone of the estimator on its training split (unlabelled rows of ``Y``
set to −1) and scores its test split. Transductive estimators (class attribute
``transductive = True``: ML-GFHF, ML-LGC) score only the nodes of their graph, so their test
points join the graph as unlabelled nodes: they are fitted once on training plus test rows, with
every test row −1, and their scores on the test rows (``label_scores_``, ``transduction_``) are
evaluated. Test labels are never seen, and every transductive method follows this one rule.
Trials run in parallel workers (forked from the job where that is safe, else spawned:
:mod:`mlgraph.processes.workers`) with BLAS threads capped so that ``n_jobs × blas_threads`` never
exceeds the cores given; a trial that raises, or whose worker dies twice, is kept as a row with
``status="failed"`` and its error, while the others finish. Each finished row is handed to
``on_row`` as it completes (the job checkpoints them to MLflow), and trials already done in an
interrupted run can be passed back in and are not run again.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import os
import time
import traceback
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import joblib
import numpy as np
import pandas as pd
import scipy.sparse as sp
from sklearn.base import clone
from tqdm.auto import tqdm

from mlgraph.evaluation.metrics import DUAL_SET_METRICS, METRICS, evaluate, evaluate_dual_set
from mlgraph.evaluation.protocols import Trial, rate_step
from mlgraph.graphs.kernels import kept_buffers, thread_pools
from mlgraph.processes.signals import die_with_parent, stop_workers
from mlgraph.processes.workers import FORK, WorkerDied, each_in_workers

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Parallelism:
    """Trial-level processes and BLAS threads per process."""

    n_jobs: int
    blas_threads: int


@contextlib.contextmanager
def quick_exit():
    """Around a command's entry point, for a process about to end: afterwards, kill joblib's
    idle workers, if anything started them (loky would wait while each tears its interpreter
    down, about a second), and freeze the garbage collector, so that the interpreter's shutdown
    does not traverse every object the imports made (seconds with MLflow loaded). Exit handlers
    still run."""
    try:
        yield
    finally:
        stop_workers()
        gc.freeze()


def available_cores() -> int:
    """The CPUs this job may use: SLURM's allocation (``SLURM_CPUS_PER_TASK``, which its
    ``task/none`` plugin does not enforce by affinity), else joblib's count (affinity, cgroups)."""
    slurm = os.environ.get("SLURM_CPUS_PER_TASK", "")
    return int(slurm) if slurm.isdigit() and int(slurm) > 0 else joblib.cpu_count()


def resolve_parallelism(
    n_jobs: int | str,
    in_parallel_launcher: bool,
    cores: int | None = None,
    n_trials: int | None = None,
    launcher_jobs: int | None = None,
) -> Parallelism:
    """``n_jobs="auto"`` uses every core: one trial process per core, or, with fewer pending
    trials than cores, one process per trial and the spare cores as BLAS threads (one large
    trial gets them all). Inside a parallel Hydra launcher, whose jobs share the cores, one
    process with this job's share as BLAS threads: cores ÷ ``launcher_jobs`` (the jobs running
    at once, :func:`mlgraph.engine.jobs.concurrent_jobs`), or one thread when that is not known."""
    cores = cores or available_cores()
    if n_jobs == "auto":
        n_jobs = 1 if in_parallel_launcher else min(cores, n_trials or cores)
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, int) or n_jobs < 1:
        raise ValueError(f"n_jobs={n_jobs!r} must be a positive integer or 'auto'")
    if in_parallel_launcher:
        cores = cores // launcher_jobs if launcher_jobs else 1
    return Parallelism(n_jobs, max(1, cores // n_jobs))


def _staged_accuracies(model, X_test, Y_test) -> dict:
    """Paper 001, Fig. 3: the dual-set accuracies after each boosting round t (``<metric>@t``)."""
    return {
        f"{k}@{t}": v
        for t, Y_t in enumerate(model.staged_predict(X_test), start=1)
        for k, v in evaluate_dual_set(Y_test, Y_t).items()
    }


def _needs_scores(metrics) -> bool:
    """Ranking metrics need real-valued scores; dual-set accuracies need predictions only."""
    return metrics is None or any(METRICS[m].kind == "scores" for m in metrics if m in METRICS)


def _transduce(model, X, Y, trial: Trial):
    """Fit on training + test rows with the test rows unlabelled; return the test rows' scores
    and predictions (all the time counts as fitting)."""
    rows = np.concatenate([trial.train, trial.test])
    targets = np.vstack([trial.targets(Y), np.full((len(trial.test), Y.shape[1]), -1, dtype=np.int8)])
    start = time.perf_counter()
    model.fit(X[rows], targets)
    fit_seconds = time.perf_counter() - start
    n_train = len(trial.train)
    return model.label_scores_[n_train:], model.transduction_[n_train:], fit_seconds, 0.0


def _solver_report(model) -> dict:
    """The numeric parts of an estimator's ``solver_report_`` (e.g. the residual of an
    approximate solver) and ``graph_report_`` (e.g. the recall of an approximate neighbour
    search), as ``solver_<key>`` and ``graph_<key>`` columns of the trial's row."""
    final = model.steps[-1][1] if hasattr(model, "steps") else model
    return {
        f"{prefix}_{k}": float(v)
        for prefix in ("solver", "graph")
        for k, v in (getattr(final, f"{prefix}_report_", None) or {}).items()
        if isinstance(v, (int, float, np.number)) and not isinstance(v, bool)
    }


def _probability_of_one(proba, classes) -> np.ndarray:
    """P(label = 1) from one output of ``predict_proba``: the column of class 1, or 0 / 1 where
    the training part held a single class (scikit-learn then gives one column)."""
    proba, classes = np.asarray(proba), list(np.asarray(classes).ravel())
    if 1 in classes:
        return proba[:, classes.index(1)]
    return np.zeros(proba.shape[0])


def label_scores(model, X) -> tuple[np.ndarray | None, str]:
    """(n × q real-valued scores, where they came from) for the ranking metrics:
    ``decision_function``, else ``predict_proba`` in either of scikit-learn's multi-label shapes
    (a list of q (n, 2) arrays, as ``KNeighborsClassifier`` and ``MultiOutputClassifier`` give,
    with ``classes_`` a list of q arrays; or one (n, q) array of P(label = 1)), else
    ``(None, "none")``: the ranking metrics are then unavailable (NaN) for this estimator."""
    if hasattr(model, "decision_function"):
        return np.asarray(model.decision_function(X), dtype=np.float64), "decision_function"
    if not hasattr(model, "predict_proba"):
        return None, "none"
    proba = model.predict_proba(X)
    if isinstance(proba, list):  # one (n, k) array per label
        classes = getattr(model, "classes_", None) or [[0, 1]] * len(proba)
        columns = [_probability_of_one(p, c) for p, c in zip(proba, classes, strict=True)]
        return np.column_stack(columns).astype(np.float64), "predict_proba"
    return np.asarray(proba, dtype=np.float64), "predict_proba"


def evaluate_scores(Y, scores, Y_pred, metrics, evaluation: dict) -> dict:
    """:func:`mlgraph.evaluation.metrics.evaluate`; without scores the ranking metrics are NaN (unavailable
    for an estimator with neither ``decision_function`` nor ``predict_proba``)."""
    if scores is not None or not _needs_scores(metrics):
        return evaluate(Y, scores, Y_pred, metrics, **evaluation)
    names = list(METRICS) if metrics is None else list(metrics)
    ranking = [m for m in names if m in METRICS and METRICS[m].kind == "scores"]
    row = evaluate(Y, None, Y_pred, [m for m in names if m not in ranking], **evaluation)
    return {**row, **dict.fromkeys(ranking, float("nan"))}


def unavailable_scores_note(table: pd.DataFrame, metrics) -> str | None:
    """The run's note when its estimator gave no scores (see :func:`label_scores`)."""
    if "scores_from" not in table or not (table.scores_from == "none").any():
        return None
    ranking = [m for m in metrics if m in METRICS and METRICS[m].kind == "scores"]
    return (
        f"the ranking metrics ({', '.join(ranking)}) are unavailable (NaN) for this estimator: it "
        "has neither decision_function nor predict_proba, so its labels cannot be ranked; "
        "the trials themselves succeeded and every other metric is computed."
    )


def _trial_row(trial: Trial) -> dict:
    """The columns every trial's row starts with."""
    return {
        "rate": trial.rate,
        "step": trial.step,
        "repetition": trial.repetition,
        "n_train": len(trial.train),
        "n_labelled": int(trial.labelled.sum()),
        "n_test": len(trial.test),
        "status": "ok",
        "error": "",
    }


def _died_row(trial: Trial, died: WorkerDied) -> dict:
    """A trial whose workers died each time it ran (SIGKILL, out of memory, a crash): a failed
    trial, not the end of the run."""
    return {**_trial_row(trial), "status": "failed", "error": str(died)}


def _say_retry(trial: Trial, died: WorkerDied) -> None:
    log.warning(
        "trial rate=%g repetition=%d: its %s; it runs again in a new worker",
        trial.rate,
        trial.repetition,
        died,
    )


def _run_one(
    estimator, X, Y, trial: Trial, metrics, blas_threads: int, evaluation: dict, tuning=None
) -> dict:
    die_with_parent()  # a worker whose job is killed, even by SIGKILL, goes with it
    row = _trial_row(trial)
    try:
        # undefined F1 terms are counted per trial (n_degenerate_labels) and warned once per run
        with thread_pools().limit(limits=blas_threads), warnings.catch_warnings():
            warnings.filterwarnings("ignore", module="mlgraph.evaluation.metrics")
            model = clone(estimator)
            if tuning is not None:  # nested selection on the training part (mlgraph.engine.tuning)
                model, chosen = tuning.select(model, X[trial.train], trial.targets(Y), trial)
                row.update(chosen)
            if getattr(model, "transductive", False):
                scores, Y_pred, row["fit_seconds"], row["predict_seconds"] = _transduce(model, X, Y, trial)
                row["scores_from"] = "label_scores_"
            else:
                start = time.perf_counter()
                model.fit(X[trial.train], trial.targets(Y))
                row["fit_seconds"] = time.perf_counter() - start
                start = time.perf_counter()
                X_test = X[trial.test]
                scores, row["scores_from"] = (
                    label_scores(model, X_test) if _needs_scores(metrics) else (None, "")
                )
                from_scores = getattr(model, "predict_from_scores", None)  # one test kernel, not two
                Y_pred = from_scores(scores) if scores is not None and from_scores else model.predict(X_test)
                Y_pred = np.asarray(Y_pred.toarray() if sp.issparse(Y_pred) else Y_pred)
                row["predict_seconds"] = time.perf_counter() - start
            row.update(evaluate_scores(Y[trial.test], scores, Y_pred, metrics, evaluation))
            row.update(_solver_report(model))
            if hasattr(model, "staged_predict") and set(metrics or ()) <= set(DUAL_SET_METRICS):
                row.update(_staged_accuracies(model, X_test, Y[trial.test]))
    except Exception as exc:  # a failed trial is data, not a crash of the job
        row.update(
            status="failed", error=f"{type(exc).__name__}: {exc}", traceback=traceback.format_exc(limit=8)
        )
    return row


_JOB: tuple = ()  # a trial worker's (estimator, X, Y, metrics, blas_threads, evaluation, tuning)
_WORKER = contextlib.ExitStack()  # what a trial worker keeps until it ends


def _adopt_job(*job) -> None:
    """A trial worker's start: keep the job, and the n×n buffers from trial to trial."""
    global _JOB
    _JOB = job
    _WORKER.enter_context(kept_buffers())


def _run_forked(trial: Trial) -> dict:
    """:func:`_run_one` in a trial worker, on the job it was given (:func:`_adopt_job`)."""
    estimator, X, Y, *rest = _JOB
    return _run_one(estimator, X, Y, trial, *rest)


class _TrialBar(tqdm):
    """The trials' progress bar, refreshed as each trial ends (at most every ``mininterval``),
    without tqdm's monitor thread, which only corrects bars that skip updates: it would outlive
    the bar, and a process with a thread of its own besides does not fork (figures)."""

    monitor_interval = 0


def run_trials(
    estimator,
    X,
    Y,
    trials: list[Trial],
    metrics=None,
    parallelism: Parallelism = Parallelism(1, 1),
    progress: bool = True,
    description: str = "trials",
    evaluation: dict | None = None,
    done: pd.DataFrame | None = None,
    on_row: Callable[[dict], None] | None = None,
    on_start: Callable[[], None] | None = None,
    tuning=None,
) -> pd.DataFrame:
    """Run every trial not already in ``done`` (rows of an interrupted run, matched by
    (rate, repetition)); return one row per trial, sorted by (rate, repetition). ``evaluation``
    holds the keyword options of :func:`mlgraph.evaluation.metrics.evaluate`; ``tuning`` (an
    :class:`mlgraph.engine.tuning.InnerSelection`) chooses each trial's hyper-parameters on its
    training part before the fit. ``on_start()`` is called once the trials are running (in
    parallel workers: while they run), before the first row.

    Parallel trials on one BLAS thread each run in workers forked from this process, which
    start at once with its imports and share its arrays; with more threads per trial (a forked
    worker may not run multithreaded OpenMP), in spawned workers
    (:func:`mlgraph.processes.workers.each_in_workers`). A trial whose worker dies runs again in a
    new one (with a warning); when that one dies too, the trial is a failed row (``worker died
    (signal 9) in each of 2 attempts``) and the run goes on."""
    if sp.issparse(X):
        X = X.tocsr()
    done = done if done is not None and len(done) else pd.DataFrame(columns=["rate", "repetition"])
    finished = set(zip(done["rate"].astype(float).round(10), done["repetition"].astype(int), strict=True))
    pending = [t for t in trials if (round(t.rate, 10), t.repetition) not in finished]
    n_jobs = min(parallelism.n_jobs, max(1, len(pending)))
    job = (estimator, X, Y, metrics, parallelism.blas_threads, evaluation or {}, tuning)
    rows = []
    with contextlib.ExitStack() as stack:
        if n_jobs == 1:  # trials in this process: its n×n buffers kept from one to the next
            stack.enter_context(kept_buffers())
            results = (_run_one(estimator, X, Y, t, *job[3:]) for t in pending)
        else:
            fork = parallelism.blas_threads == 1 and FORK
            ended = stack.enter_context(
                each_in_workers(
                    _run_forked,
                    pending,
                    n_jobs,
                    _adopt_job,
                    job,
                    fork,
                    on_retry=lambda i, died: _say_retry(pending[i], died),
                )
            )
            results = (
                _died_row(pending[i], value) if isinstance(value, WorkerDied) else value for i, value in ended
            )
        if on_start is not None:
            on_start()
        for row in _TrialBar(
            results,
            total=len(pending),
            desc=description,
            disable=not progress,
            mininterval=1.0,
            miniters=1,
            dynamic_ncols=True,
        ):
            rows.append(row)
            if on_row is not None:
                on_row(row)
    table = pd.concat([done, pd.DataFrame(rows)], ignore_index=True) if len(done) else pd.DataFrame(rows)
    return table.sort_values(["rate", "repetition"], ignore_index=True)


def summarise(table: pd.DataFrame, metrics: list[str]) -> pd.DataFrame:
    """Mean and standard deviation (ddof = 1; 0 with one repetition) of each metric per rate,
    over the successful trials, with the count of trials used and failed."""
    ok = table[table.status == "ok"]
    grouped = ok.groupby("rate")[metrics]
    summary = pd.concat([grouped.mean(), grouped.std(ddof=1).fillna(0.0).add_suffix("_std")], axis=1)
    summary["n_ok"] = ok.groupby("rate").size()
    summary = summary.reindex(sorted(table.rate.unique()))
    summary["n_ok"] = summary["n_ok"].fillna(0).astype(int)
    summary["n_failed"] = (
        table[table.status != "ok"].groupby("rate").size().reindex(summary.index, fill_value=0).astype(int)
    )
    summary.insert(0, "step", [rate_step(r) for r in summary.index])
    return summary
