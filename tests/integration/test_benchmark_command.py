"""``mlgraph benchmark`` as a user runs it from a checkout (``python -m mlgraph benchmark``), on
real data, cut to two methods, one data set, one labelling rate and two repetitions: the runs in
MLflow, the tables recomputed from the trials MLflow holds, a second call that runs nothing, and
``--report-only``."""

import os
import subprocess
import sys
from pathlib import Path

import mlflow
import pandas as pd
import pytest

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
ARGS = [
    "ssl",
    "--quick",
    "method=mlmrrw,mlknn",
    "dataset=emotions",
    "protocol.rates=[0.2]",
    "protocol.repeats=2",
]


def benchmark(out: Path, *args):
    env = {**os.environ, "MLGRAPH_OUTPUT_DIR": str(out)}
    return subprocess.run(
        [sys.executable, "-m", "mlgraph", "benchmark", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def _runs(out: Path):
    client = mlflow.MlflowClient(f"sqlite:///{out}/mlflow.db")
    experiment = client.get_experiment_by_name("benchmark-ssl-quick").experiment_id
    runs = client.search_runs([experiment])
    return client, [r for r in runs if "method" in r.data.tags and r.data.tags.get("kind") != "sweep"], runs


@pytest.fixture(scope="module")
def first(tmp_path_factory):
    out = tmp_path_factory.mktemp("benchmark")
    return out, benchmark(out, *ARGS)


def test_benchmark_runs_each_pair_into_one_experiment_and_tabulates_it(first):
    out, done = first
    assert done.returncode == 0, done.stderr[-3000:]
    client, runs, _ = _runs(out)
    assert sorted(r.data.tags["method"] for r in runs) == ["mlknn", "mlmrrw"]
    assert {r.info.status for r in runs} == {"FINISHED"}
    assert {r.data.params["protocol.repeats"] for r in runs} == {"2"}
    # the table's means, recomputed from the trials MLflow holds
    trials = {}
    for run in runs:
        path = mlflow.artifacts.download_artifacts(
            run_id=run.info.run_id, artifact_path="trials.csv", tracking_uri=f"sqlite:///{out}/mlflow.db"
        )
        trials[run.data.tags["method"]] = pd.read_csv(path)
    assert set(trials["mlmrrw"]["rate"]) == {0.2} and sorted(trials["mlmrrw"]["repetition"]) == [0, 1]
    folder = out / "reports" / "benchmark" / "ssl-quick"
    table = pd.read_csv(folder / "tables" / "rate_20" / "avg_precision.csv").set_index("method")
    for method, frame in trials.items():
        assert table.loc[method, "mean"] == pytest.approx(frame["avg_precision"].mean(), rel=1e-12)
        assert table.loc[method, "std"] == pytest.approx(frame["avg_precision"].std(ddof=1), rel=1e-9)
    assert table.loc["mlknn", "win_tie_loss"] in {"1/0/0", "0/1/0", "0/0/1"}
    for suffix in ("tex", "md", "html"):
        assert (folder / "tables" / "rate_20" / f"avg_precision.{suffix}").is_file()
    status = pd.read_csv(folder / "tables" / "status.csv")
    assert list(status["status"]) == ["exact", "exact"]
    for row in status.itertuples():  # each pair's time: its trials' fit + predict seconds
        frame = trials[row.method]
        assert row.trials == len(frame)
        assert row.trial_seconds == pytest.approx(
            (frame["fit_seconds"] + frame["predict_seconds"]).sum(), abs=0.06
        )
    page = (folder / "report.html").read_text()
    assert page.index('id="means"') < page.index('id="verdicts"') < page.index("<details")
    assert "ML-MRRW" in page and "benchmark-ssl-quick" in page
    assert "does without" not in page  # dataset= chose emotions alone: nothing is missing
    assert "mlgraph run -m method=mlmrrw,mlknn dataset=emotions protocol=ssl" in done.stdout
    assert "benchmark ssl (--quick): runs" in done.stdout and "pairs can run" in done.stdout


def test_a_second_call_skips_the_finished_runs(first):
    out, _ = first
    again = benchmark(out, *ARGS)
    assert again.returncode == 0, again.stderr[-3000:]
    assert (again.stdout + again.stderr).count("skipped, run") == 2
    _, runs, _ = _runs(out)
    assert len(runs) == 2


def test_report_only_runs_nothing_and_writes_the_report(first):
    out, _ = first
    _, before, every = _runs(out)
    (out / "reports" / "benchmark" / "ssl-quick" / "report.html").unlink()
    done = benchmark(out, *ARGS, "--report-only")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "mlgraph run" not in done.stdout
    client, after, every_after = _runs(out)
    assert [r.info.run_id for r in after] == [r.info.run_id for r in before]
    reports = [r for r in every_after if r.data.tags.get("kind") == "report"]
    assert len(reports) == len([r for r in every if r.data.tags.get("kind") == "report"]) + 1
    assert (out / "reports" / "benchmark" / "ssl-quick" / "report.html").is_file()
