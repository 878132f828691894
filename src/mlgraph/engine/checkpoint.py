"""Finished trials kept through an interruption: the :class:`Checkpoint` a run writes as its
trials finish, and what a resume reads back: the run to continue or to skip
(:func:`find_previous`) and the trials it had finished (:func:`finished_trials`)."""

from __future__ import annotations

import contextlib
import csv
import io
import numbers
import os
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from mlgraph.tracking.process import tracked
from mlgraph.tracking.store import log_artifact


class Checkpoint:
    """Finished trials, saved as they complete, so that an interrupted run resumes where it
    stopped: each row is appended to ``trials_partial.csv`` in the job folder at once (written
    through to the operating system, so that even SIGKILL of the job loses no finished trial),
    and that file is copied to the MLflow run at most every ``every`` seconds and when the run
    stops. The run's tag ``checkpoint_file`` names the local file, which a resume reads too
    (:func:`finished_trials`) when the machine resuming sees it."""

    NAME = "trials_partial.csv"
    TAG = "checkpoint_file"

    def __init__(self, run_id: str, folder: Path, every: float, done: pd.DataFrame):
        self.run_id, self.every = run_id, every
        self.path = folder / self.NAME
        self.rows = done.to_dict("records")
        self.columns: list[str] = []  # of the local file; none written yet
        self.uploaded, self.last = len(self.rows), time.monotonic()

    def add(self, row: dict) -> None:
        self.rows.append(row)
        if self.columns and set(row) <= set(self.columns):
            with open(self.path, "a", newline="") as out:
                csv.writer(out, lineterminator="\n").writerow([_csv_cell(row.get(c)) for c in self.columns])
        else:  # the first row, or one with new columns (a first failed trial's traceback)
            self.columns = list(dict.fromkeys(c for r in self.rows for c in r))
            self._rewrite()
        if time.monotonic() - self.last >= self.every:
            self.flush()

    def _rewrite(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f".{self.NAME}.tmp")
        pd.DataFrame(self.rows, columns=self.columns).to_csv(tmp, index=False, lineterminator="\n")
        os.replace(tmp, self.path)  # a reader never sees half a header

    def flush(self) -> None:
        """Copy the local checkpoint to the MLflow run, if it has rows the run has not."""
        if len(self.rows) == self.uploaded:
            return
        tracked(log_artifact, self.run_id, str(self.path))
        self.uploaded, self.last = len(self.rows), time.monotonic()


def _csv_cell(value) -> str:
    """``value`` as ``DataFrame.to_csv`` writes it in a row (missing and NaN empty, floats in
    their shortest round-trip form), without building a one-row DataFrame per finished trial."""
    if value is None or value is pd.NA or value is pd.NaT:
        return ""
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Real):
        if value != value:  # NaN
            return ""
        return str(value) if isinstance(value, np.floating) else repr(float(value))
    return str(value)


def _read_checkpoint(path: str | Path) -> pd.DataFrame:
    """A checkpoint's rows; a last line cut short by a kill mid-write is left out."""
    text = Path(path).read_text()
    complete = text[: text.rfind("\n") + 1]
    if not complete.strip():
        return pd.DataFrame()
    return pd.read_csv(io.StringIO(complete), keep_default_na=False, na_values=[""])


def finished_trials(run_id: str) -> pd.DataFrame:
    """The successful trials an interrupted run saved: the rows of its MLflow copy and of its
    local checkpoint (when this machine sees it; it is newer after a hard kill), each trial once."""
    import mlflow

    client = mlflow.MlflowClient()
    tables = []
    local = client.get_run(run_id).data.tags.get(Checkpoint.TAG)
    if local and Path(local).is_file():
        with contextlib.suppress(OSError, ValueError, pd.errors.ParserError):
            tables.append(_read_checkpoint(local))
    with tempfile.TemporaryDirectory(prefix="mlgraph-resume-") as tmp:
        with contextlib.suppress(Exception):  # no copy was saved before it stopped
            tables.append(_read_checkpoint(client.download_artifacts(run_id, Checkpoint.NAME, tmp)))
    tables = [t for t in tables if len(t) and {"status", "rate", "repetition"} <= set(t.columns)]
    if not tables:
        return pd.DataFrame()
    table = pd.concat(tables, ignore_index=True)
    table = table[table.status == "ok"]
    return table.drop_duplicates(["rate", "repetition"]).reset_index(drop=True)


def find_previous(experiment_id: str, chash: str):
    """The latest FINISHED run with config hash ``chash``, else the latest unfinished one."""
    import mlflow

    runs = mlflow.MlflowClient().search_runs(
        [experiment_id],
        f"tags.config_hash = '{chash}'",
        order_by=["attributes.start_time DESC"],
        max_results=100,
    )
    finished = [r for r in runs if r.info.status == "FINISHED"]
    return (finished or runs or [None])[0]
