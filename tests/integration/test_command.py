"""The real command on real data, few repetitions, fresh stores; results read back from MLflow."""

import math
import os
import subprocess
import sys
from pathlib import Path

import mlflow
import pytest

from mlgraph.data import DatasetNotFoundError, find_file

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
FEW = ["protocol.repeats=1", "protocol.rates=[0.1,0.5]", "progress=false"]


NOT_SHIPPED = (
    "needs benchmark files that are not shipped: put the collection in ../shared/datasets or "
    "$MLGRAPH_DATA_DIR, or run `python -m mlgraph.data --fetch`"
)


def _local(name: str) -> bool:
    """Whether the dataset file ``name`` (or its .gz) is on this machine, where mlgraph looks."""
    try:
        find_file(name, alternatives=[name + ".gz"])
    except DatasetNotFoundError:
        return False
    return True


def run(args, out: Path, multirun=False):
    env = {**os.environ, "MLGRAPH_OUTPUT_DIR": str(out), "PYTHONUNBUFFERED": "1"}
    cmd = [sys.executable, "-m", "run", *(["-m"] if multirun else []), *args]
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)


def runs_of(out: Path, experiment="mlgraph"):
    """The job runs of ``experiment`` (a sweep's parent run, tagged kind=sweep, left out)."""
    client = mlflow.MlflowClient(f"sqlite:///{out}/mlflow.db")
    exp = client.get_experiment_by_name(experiment)
    assert exp is not None, f"experiment {experiment} missing"
    runs = client.search_runs([exp.experiment_id], run_view_type=mlflow.entities.ViewType.ALL)
    return client, [r for r in runs if r.data.tags.get("kind") != "sweep"]


@pytest.mark.quick
def test_main_command_tracks_everything(tmp_path):
    proc = run(["method=mlmrrw", "dataset=emotions", *FEW], tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "avg_precision" in proc.stdout and "±" in proc.stdout
    client, runs = runs_of(tmp_path)
    assert len(runs) == 1
    r = runs[0]
    assert r.info.status == "FINISHED"
    assert r.data.params["method.nu2"] == "0.1" and r.data.params["dataset.name"] == "emotions"
    assert r.data.params["seed"] == "0"
    assert len(r.data.tags["git_commit"]) in (7, 40) or r.data.tags["git_commit"] == "unknown"
    assert len(r.data.tags["dataset_sha256"]) == 64 and "version.mlflow" in r.data.tags
    history = client.get_metric_history(r.info.run_id, "avg_precision")
    assert sorted(m.step for m in history) == [10, 50]
    assert all(math.isfinite(m.value) and 0 < m.value <= 1 for m in history)
    assert math.isfinite(r.data.metrics["macro_f1_overall"])
    artifacts = {a.path for a in client.list_artifacts(r.info.run_id)}
    assert {"trials.csv", "summary.csv", "config.yaml", "metrics_vs_rate.png"} <= artifacts


def test_nystrom_solver_is_chosen_by_config_and_reports_its_accuracy(tmp_path):
    """``method.solver=nystrom`` on real data: the run records the solver options, and each
    trial's accuracy report (landmarks, rank, kernel trace error, Eq. 19's residual) reaches
    trials.csv and the run's ``solver_*_max`` metrics."""
    import pandas as pd

    proc = run(
        ["method=mlmrrw", "dataset=yeast", "method.solver=nystrom", "method.n_landmarks=300", *FEW], tmp_path
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    client, (r,) = runs_of(tmp_path)
    assert r.info.status == "FINISHED"
    assert (r.data.params["method.solver"], r.data.params["method.landmarks"]) == ("nystrom", "kmeans")
    table = pd.read_csv(client.download_artifacts(r.info.run_id, "trials.csv", str(tmp_path)))
    assert len(table) == 2 and set(table.status) == {"ok"}
    assert (table.solver_n_landmarks == 300).all() and (table.solver_rank <= 300).all()
    assert table.solver_kernel_trace_error.between(0, 1).all() and (table.solver_residual > 0).all()
    metrics = r.data.metrics
    assert metrics["run/solver_residual_max"] == table.solver_residual.max()
    assert 0.5 < metrics["avg_precision_overall"] <= 1


def test_multirun_on_fresh_store_loses_no_job(tmp_path):
    proc = run(["method=mlmrrw", "dataset=emotions", "method.nu2=0,0.1,1", *FEW], tmp_path, multirun=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    _, runs = runs_of(tmp_path)
    assert len(runs) == 3
    assert sorted(r.data.params["method.nu2"] for r in runs) == ["0", "0.1", "1"]
    assert all(r.info.status == "FINISHED" for r in runs)
    assert all(r.data.tags["n_jobs"] == "1" for r in runs)  # inner trials serial inside the launcher


def test_a_sweep_with_fewer_jobs_than_cores_gives_them_the_spare_cores(tmp_path):
    """One job in the joblib launcher: its one trial process gets every core as BLAS threads."""
    import joblib

    proc = run(["method=mlmrrw", "dataset=emotions", "method.nu2=0.1", *FEW], tmp_path, multirun=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    _, runs = runs_of(tmp_path)
    assert [(r.data.tags["n_jobs"], r.data.tags["blas_threads"]) for r in runs] == [
        ("1", str(joblib.cpu_count()))
    ]


def test_bad_parameter_fails_clearly_and_the_sweep_goes_on(tmp_path):
    proc = run(["dataset=emotions", "method.nu2=-0.5,0.1", *FEW], tmp_path, multirun=True)
    assert proc.returncode != 0
    assert "method.nu2=-0.5 is not valid for MLMRRW: it must be >= 0" in proc.stderr
    _, runs = runs_of(tmp_path)
    status = {r.data.params["method.nu2"]: r for r in runs}
    assert status["0.1"].info.status == "FINISHED"
    assert status["-0.5"].info.status == "FAILED" and "nu2" in status["-0.5"].data.tags["error"]


def test_unknown_dataset_and_option_are_clear_errors(tmp_path):
    proc = run(["dataset=nope"], tmp_path)
    assert proc.returncode != 0 and "dataset/nope" in proc.stderr
    proc = run(["method.gamma=1"], tmp_path)
    assert proc.returncode != 0 and "Could not override 'method.gamma'" in proc.stderr
    proc = run(["dataset=custom", *FEW], tmp_path)
    assert proc.returncode != 0 and "dataset.arff" in proc.stderr


@pytest.mark.skipif(not _local("medical.arff") or not _local("medical.xml"), reason=NOT_SHIPPED)
def test_sparse_dataset_from_the_shared_directory(tmp_path):
    proc = run(["dataset=medical", "protocol.rates=[0.5]", "protocol.repeats=1", "progress=false"], tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    _, runs = runs_of(tmp_path)
    assert runs[0].data.tags["dataset_shape"] == "978x1449x45"


@pytest.fixture
def mlflow_server(tmp_path):
    """A real `mlflow server` on loopback, as a team store would be (SQLite behind it here)."""
    import socket
    import time
    import urllib.request

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    store = tmp_path / "server"
    store.mkdir()
    proc = subprocess.Popen(
        [
            str(Path(sys.executable).parent / "mlflow"),
            "server",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--backend-store-uri",
            f"sqlite:///{store}/mlflow.db",
            "--artifacts-destination",
            str(store / "art"),
            "--workers",
            "1",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(120):
            try:
                urllib.request.urlopen(f"{url}/health", timeout=1)
                break
            except OSError:
                time.sleep(0.5)
        else:
            pytest.fail("mlflow server did not start")
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_team_store_through_mlflow_server(tmp_path, mlflow_server):
    proc = run(["tracking=server", f"tracking.uri={mlflow_server}", "dataset=emotions", *FEW], tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    client = mlflow.MlflowClient(mlflow_server)
    exp = client.get_experiment_by_name("mlgraph")
    (r,) = client.search_runs([exp.experiment_id])
    assert r.info.status == "FINISHED"
    assert "trials.csv" in {a.path for a in client.list_artifacts(r.info.run_id)}


def test_comparison_preset_and_report_from_mlflow(tmp_path):
    few = ["protocol.repeats=2", "protocol.rates=[0.1,0.5]", "progress=false"]
    proc = run(["experiment=ssl_comparison", "hydra.sweeper.params.dataset=emotions", *few], tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    client, runs = runs_of(tmp_path, "ssl_comparison")
    assert sorted(r.data.tags["method"] for r in runs) == sorted(
        ["mlknn", "gfhf", "lgc", "fsksc", "sswl", "mlmr", "mlmrrw"]
    )
    assert all(r.info.status == "FINISHED" and r.data.tags["trials_failed"] == "0 of 4" for r in runs)

    env = {**os.environ, "MLGRAPH_OUTPUT_DIR": str(tmp_path)}
    proc = subprocess.run(
        [sys.executable, "-m", "mlgraph.reporting.report", "experiment=ssl_comparison"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = tmp_path / "reports" / "ssl_comparison"
    text = (out / "report.md").read_text()
    assert "## emotions" in text and "F_R" in text and "ML-MRRW" in text
    posthoc = (out / "emotions" / "posthoc.csv").read_text()
    assert all(name in posthoc for name in ("MLkNN", "ML-GFHF", "ML-LGC", "ML-FSKSC", "SSWL", "ML-MR"))
    assert (out / "emotions" / "metrics_vs_rate.png").stat().st_size > 10_000
    _, runs = runs_of(tmp_path, "ssl_comparison")
    report = [r for r in runs if r.data.tags.get("kind") == "report"]
    assert len(report) == 1
    artifacts = {a.path for a in client.list_artifacts(report[0].info.run_id, "emotions")}
    assert {"emotions/friedman.csv", "emotions/posthoc.csv", "emotions/metrics_vs_rate.png"} <= artifacts


def test_feature_fraction_sweep_and_report(tmp_path):
    few = ["dataset=emotions", "method=br_knn", "protocol.folds=3", "progress=false"]
    proc = run(
        ["experiment=feature_fraction", "selector=gmba,mlfs", "selector.fraction=0.2,0.5", *few], tmp_path
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    proc = run(["experiment=feature_fraction_all", *few], tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    client, runs = runs_of(tmp_path, "feature_fraction")
    assert len(runs) == 5 and all(r.info.status == "FINISHED" for r in runs)
    kept = {(r.data.tags["selector"], r.data.params.get("selector.fraction")): r for r in runs}
    assert set(kept) == {("gmba", "0.2"), ("gmba", "0.5"), ("mlfs", "0.2"), ("mlfs", "0.5"), ("none", None)}
    assert all(0 <= r.data.metrics["hamming_loss"] < 0.5 for r in runs)
    # one ranking per (selector, fold) served both fractions: 2 × 3 cache entries, not 12
    assert len(list((tmp_path / "cache").rglob("*.npz"))) == 6

    env = {**os.environ, "MLGRAPH_OUTPUT_DIR": str(tmp_path)}
    proc = subprocess.run(
        [sys.executable, "-m", "mlgraph.reporting.report", "experiment=feature_fraction"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = tmp_path / "reports" / "feature_fraction"
    text = (out / "report.md").read_text()
    assert "Hamming loss" in text and "br_knn 20%" in text and "br_knn all" in text
    assert (out / "emotions" / "fraction_curves.png").stat().st_size > 10_000


def test_ml2_halves_protocol_and_toy_experiment(tmp_path):
    proc = run(
        ["method=ml2", "dataset=emotions", "protocol=halves", "protocol.repeats=2", "progress=false"],
        tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    client, runs = runs_of(tmp_path)
    metrics = runs[0].data.metrics
    for key in ("hamming_loss", "one_error", "coverage_norm", "ranking_loss", "avg_precision", "macro_auc"):
        assert math.isfinite(metrics[f"{key}"]) and 0 <= metrics[f"{key}"] <= 1
    assert [m.step for m in client.get_metric_history(runs[0].info.run_id, "avg_precision")] == [100]

    env = {**os.environ, "MLGRAPH_OUTPUT_DIR": str(tmp_path)}
    proc = subprocess.run(
        [sys.executable, "-m", "mlgraph.engine.toy"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    client, runs = runs_of(tmp_path, "toy")
    assert all(runs[0].data.metrics[f"correlation_label{j}"] > 0.99 for j in (1, 2))
    artifacts = {a.path for a in client.list_artifacts(runs[0].info.run_id)}
    assert artifacts == {"toy_fig3.png", "toy_fig3.svg", "toy_fig3.pdf"}


@pytest.mark.skipif(not _local("voice.csv"), reason=NOT_SHIPPED)
def test_dual_set_command_comparison_and_report(tmp_path):
    # the documented command: a dual-set dataset brings paper 001's 5-fold protocol with it
    proc = run(["method=dsml", "dataset=frequency_gender", "method.T=3", "progress=false"], tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    client, runs = runs_of(tmp_path)
    r = runs[0]
    assert r.data.params["protocol.folds"] == "5" and r.data.tags["trials_failed"] == "0 of 5"
    folds = client.get_metric_history(r.info.run_id, "per_fold/accuracy_all")
    assert sorted(m.step for m in folds) == [0, 1, 2, 3, 4]
    mean = sum(m.value for m in folds) / 5
    metrics = r.data.metrics
    assert metrics["accuracy_all"] == pytest.approx(mean, abs=1e-12) and 0.5 < mean < 1
    assert metrics["accuracy_all_overall"] == pytest.approx(mean, abs=1e-12)
    assert all(metrics["accuracy_all"] <= metrics[f"{k}"] for k in ("accuracy_a", "accuracy_b"))
    assert [m.step for m in client.get_metric_history(r.info.run_id, "per_round/accuracy_all")] == [1, 2, 3]

    proc = run(["experiment=dsml_comparison", "method=dsml,independent,mlknn", "progress=false"], tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    client, runs = runs_of(tmp_path, "dsml_comparison")
    assert sorted(r.data.tags["method"] for r in runs) == ["dsml", "independent", "mlknn"]
    env = {**os.environ, "MLGRAPH_OUTPUT_DIR": str(tmp_path)}
    proc = subprocess.run(
        [sys.executable, "-m", "mlgraph.reporting.report", "experiment=dsml_comparison"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    text = (tmp_path / "reports" / "dsml_comparison" / "report.md").read_text()
    assert "(paper 0.8220)" in text and "Ind. Dec." in text and "MLkNN" in text
    assert (
        tmp_path / "reports" / "dsml_comparison" / "frequency_gender" / "rounds.png"
    ).stat().st_size > 10_000
