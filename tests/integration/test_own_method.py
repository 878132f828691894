"""A user's own estimator and dataset from a config folder outside the repository, through the
real commands (``python -m run --config-dir``, ``mlgraph run``/``mlgraph report``), ranked beside
built-in methods; ``tuning=inner`` on real data, read back from MLflow; a plain class without
get_params; and an estimator whose fit raises, stopped before any run."""

import gzip
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import mlflow
import pandas as pd
import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
BUILTIN = ROOT / "src" / "mlgraph" / "data" / "builtin"

ESTIMATOR = '''
"""A user's multi-label estimator: supervised only, scores by predict_proba as an (n, q) array."""
import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin


class CentroidScorer(ClassifierMixin, BaseEstimator):
    def __init__(self, shrink=0.0):
        self.shrink = shrink

    def fit(self, X, Y):
        X, Y = np.asarray(X, float), np.asarray(Y)
        if (Y == -1).any():
            raise ValueError("supervised only: Y must be 0/1")
        self.mean_, self.std_ = X.mean(0), X.std(0) + 1e-12
        Z = (X - self.mean_) / self.std_
        self.pos_ = (1 - self.shrink) * (Y.T @ Z) / np.maximum(Y.sum(0), 1)[:, None]
        self.neg_ = (1 - self.shrink) * ((1 - Y).T @ Z) / np.maximum((1 - Y).sum(0), 1)[:, None]
        return self

    def predict_proba(self, X):
        Z = (np.asarray(X, float) - self.mean_) / self.std_
        gap = ((Z[:, None] - self.pos_[None]) ** 2).sum(-1) - ((Z[:, None] - self.neg_[None]) ** 2).sum(-1)
        return 1 / (1 + np.exp(gap / Z.shape[1]))

    def predict(self, X):
        return (self.predict_proba(X) > 0.5).astype(int)


class PlainCentroid:
    """No scikit-learn base class, no get_params: fit returns nothing."""

    def __init__(self, shrink=0.0):
        self.shrink = shrink

    def fit(self, X, Y):
        self.model = CentroidScorer(self.shrink).fit(X, Y)

    def decision_function(self, X):
        return self.model.predict_proba(X)

    def predict(self, X):
        return self.model.predict(X)


class BrokenFit(CentroidScorer):
    def fit(self, X, Y):
        raise RuntimeError("my fit is broken")
'''


@pytest.fixture
def user(tmp_path):
    """(environment, config folder): a package `mypkg` on PYTHONPATH, and a config folder with
    one method and one dataset (the emotions files copied out of the package)."""
    (tmp_path / "pkg" / "mypkg").mkdir(parents=True)
    (tmp_path / "pkg" / "mypkg" / "__init__.py").write_text(ESTIMATOR)
    conf = tmp_path / "myconf"
    (conf / "method").mkdir(parents=True)
    (conf / "dataset").mkdir()
    (conf / "method" / "mine.yaml").write_text(
        textwrap.dedent(
            """\
            _target_: mypkg.CentroidScorer
            name: mine
            shrink: 0.0
            search:
              shrink: [0.0, 0.5]
            """
        )
    )
    (conf / "method" / "plain.yaml").write_text(
        "_target_: mypkg.PlainCentroid\nname: plain\nshrink: 0.0\nsearch:\n  shrink: [0.0, 0.5]\n"
    )
    (conf / "method" / "broken.yaml").write_text("_target_: mypkg.BrokenFit\nname: broken\nshrink: 0.0\n")
    data = tmp_path / "data"
    data.mkdir()
    with gzip.open(BUILTIN / "emotions.arff.gz") as src, open(data / "songs.arff", "wb") as dst:
        shutil.copyfileobj(src, dst)
    shutil.copy(BUILTIN / "emotions.xml", data / "songs.xml")
    (conf / "dataset" / "songs.yaml").write_text(
        textwrap.dedent(
            f"""\
            defaults:
              - /dataset_keys@_here_
              - _self_
            name: songs
            arff: {data / "songs.arff"}
            xml: {data / "songs.xml"}
            """
        )
    )
    env = {
        **os.environ,
        "MLGRAPH_OUTPUT_DIR": str(tmp_path / "out"),
        "PYTHONPATH": os.pathsep.join([str(tmp_path / "pkg"), os.environ.get("PYTHONPATH", "")]),
    }
    return env, conf, tmp_path


def _call(args, env, cwd):
    return subprocess.run(
        [sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
    )


def _runs(out: Path, experiment: str):
    client = mlflow.MlflowClient(f"sqlite:///{out}/mlflow.db")
    runs = client.search_runs([client.get_experiment_by_name(experiment).experiment_id])
    return client, [r for r in runs if r.data.tags.get("kind") not in ("sweep", "report")]


def test_own_method_and_data_in_a_comparison_ranked_by_the_report(user):
    env, conf, tmp = user
    few = ["protocol.repeats=1", "protocol.rates=[0.1,0.3,0.5]", "progress=false"]
    proc = _call(
        ["-m", "mlgraph", "run", "--config-dir", str(conf), "experiment=ssl_comparison"]
        + ["method=mine,mlknn,mlmr", "dataset=songs", *few],
        env,
        tmp,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    client, runs = _runs(tmp / "out", "ssl_comparison")
    by_method = {r.data.tags["method"]: r for r in runs}
    assert sorted(by_method) == ["mine", "mlknn", "mlmr"]
    assert all(r.info.status == "FINISHED" and r.data.tags["trials_failed"] == "0 of 3" for r in runs)
    mine = by_method["mine"]
    assert (
        mine.data.tags["dataset"] == "songs" and mine.data.params["method._target_"] == "mypkg.CentroidScorer"
    )
    assert mine.data.tags["unlabelled_rows"].startswith("dropped: CentroidScorer is supervised-only")
    assert by_method["mlmr"].data.tags["unlabelled_rows"].startswith("passed: MLMR")
    trials = pd.read_csv(client.download_artifacts(mine.info.run_id, "trials.csv", str(tmp)))
    assert set(trials.scores_from) == {"predict_proba"}
    assert 0.5 < mine.data.metrics["avg_precision_overall"] <= 1

    proc = _call(["-m", "mlgraph", "report", "experiment=ssl_comparison", "report.reference=mine"], env, tmp)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = tmp / "out" / "reports" / "ssl_comparison"
    assert "## songs" in (report / "report.md").read_text()
    friedman = pd.read_csv(report / "songs" / "friedman.csv")
    assert len(friedman) == 3  # avg_precision, micro_f1, macro_f1 over three methods
    posthoc = (report / "songs" / "posthoc.csv").read_text()
    assert "MLkNN" in posthoc and "ML-MR" in posthoc and "R(mine)" in (report / "report.md").read_text()


def test_tuning_inner_on_own_method_logs_choices(user):
    """``python -m run --config-dir``: the user's YAML declares a search space; tuning=inner
    sets it through the LabelledOnly wrapper, and the choices reach trials.csv and the run."""
    env, conf, tmp = user
    args = ["-m", "run", "--config-dir", str(conf), "method=mine", "dataset=songs", "tuning=inner"]
    proc = _call(args + ["protocol.repeats=2", "protocol.rates=[0.2,0.5]", "progress=false"], env, ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    client, (run,) = _runs(tmp / "out", "mlgraph")
    assert run.data.tags["tuning"].startswith("inner 3-fold selection over 2 grid points (shrink: 2)")
    assert run.data.params["tuning.kind"] == "inner" and run.data.params["method.search.shrink"]
    table = pd.read_csv(client.download_artifacts(run.info.run_id, "trials.csv", str(tmp)))
    assert len(table) == 4 and set(table.tuned_shrink) <= {0.0, 0.5} and (table.tuning_fits == 6).all()
    counts = sum(int(part.split("×")[1]) for part in run.data.tags["tuned.shrink"].split())
    assert counts == 4
    artifacts = {a.path for a in client.list_artifacts(run.info.run_id)}
    assert {"tuned_values.csv", "tuned_values.png"} <= artifacts


def test_a_plain_class_without_get_params_runs_and_is_tuned(user):
    """A class with fit/predict only (no BaseEstimator) runs through its adapter: every trial
    succeeds, nested tuning sets its parameter, the run names the class."""
    env, conf, tmp = user
    args = ["-m", "run", "--config-dir", str(conf), "method=plain", "dataset=songs", "tuning=inner"]
    proc = _call(args + ["protocol.repeats=1", "protocol.rates=[0.2,0.5]", "progress=false"], env, ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    client, (run,) = _runs(tmp / "out", "mlgraph")
    assert run.info.status == "FINISHED" and run.data.tags["trials_failed"] == "0 of 2"
    assert run.data.tags["unlabelled_rows"].startswith("dropped: PlainCentroid is supervised-only")
    table = pd.read_csv(client.download_artifacts(run.info.run_id, "trials.csv", str(tmp)))
    assert set(table.scores_from) == {"decision_function"} and set(table.tuned_shrink) <= {0.0, 0.5}
    assert 0.4 < run.data.metrics["avg_precision_overall"] <= 1


def test_an_own_estimator_whose_fit_raises_stops_before_any_run(user):
    env, conf, tmp = user
    args = ["-m", "run", "--config-dir", str(conf), "method=broken", "dataset=songs"]
    proc = _call(args + ["protocol.repeats=1", "protocol.rates=[0.2,0.5]", "progress=false"], env, ROOT)
    assert proc.returncode != 0
    assert (
        "method broken (mypkg.BrokenFit) failed its test fit on dataset songs, before any MLflow run"
        in proc.stderr
    )
    assert "fit raised RuntimeError: my fit is broken" in proc.stderr and "Traceback" not in proc.stderr
    store = tmp / "out" / "mlflow.db"
    if store.exists():  # the store may be opened; no run may be in it
        client = mlflow.MlflowClient(f"sqlite:///{store}")
        assert not [r for e in client.search_experiments() for r in client.search_runs([e.experiment_id])]
