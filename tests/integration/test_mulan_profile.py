"""``profile=mulan method=mlknn protocol=fixed`` on the official splits gives MULAN's ML-kNN: the
metrics the real command logs to MLflow equal those of the independent port of MULAN's ML-kNN,
Weka's search and MULAN's measures (tests/unit/weka_port.py) on the files read by scipy."""

import gzip
import io
import os
import subprocess
import sys
from pathlib import Path

import mlflow
import numpy as np
import pytest
from scipy.io import arff

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "unit"))
from shared_data import DATASETS, needs_datasets  # noqa: E402
from weka_port import mulan_measures, mulan_mlknn  # noqa: E402

MEASURES = ["hamming_loss", "one_error", "coverage", "ranking_loss", "avg_precision", "micro_f1"]


def read_split(name: str, drop=()):
    """(X_train, Y_train, X_test, Y_test, nominal) of a dense MULAN split: nominal values as
    codes of their declared lists, ``?`` as NaN, labels by name from the XML file."""
    xml = (DATASETS / f"{name}.xml").read_text()
    labels = [part.split('"')[0] for part in xml.split('name="')[1:]]

    def read(part):
        text = gzip.decompress((DATASETS / "splits" / f"{name}-{part}.arff.gz").read_bytes()).decode()
        data, meta = arff.loadarff(io.StringIO(text))
        features = [f for f in meta.names() if f not in labels and f not in drop]
        columns = []
        for f in features:
            kind, values = meta[f]
            if kind == "numeric":
                columns.append(data[f].astype(float))
            else:
                codes = [values.index(v.decode()) if v.decode() != "?" else np.nan for v in data[f]]
                columns.append(np.array(codes, dtype=float))
        nominal = np.array([meta[f][0] == "nominal" for f in features])
        Y = np.column_stack([[float(v) for v in data[label]] for label in labels]).astype(int)
        return np.column_stack(columns), Y, nominal

    X_train, Y_train, nominal = read("train")
    X_test, Y_test, _ = read("test")
    return X_train, Y_train, X_test, Y_test, nominal


def logged(out: Path) -> dict:
    """{(profile, dataset): metrics} of the FINISHED job runs."""
    client = mlflow.MlflowClient(f"sqlite:///{out}/mlflow.db")
    exp = client.get_experiment_by_name("mlgraph")
    runs = client.search_runs([exp.experiment_id])
    return {
        (r.data.params["profile.name"], r.data.params["dataset.name"]): r.data.metrics
        for r in runs
        if r.data.tags.get("kind") != "sweep" and r.info.status == "FINISHED"
    }


@needs_datasets
def test_profile_mulan_mlknn_is_mulans_on_the_official_splits(tmp_path):
    """emotions, scene, yeast, and genbase for nominal features (1,185 {YES,NO} attributes, the
    identifier dropped), each split as published (dataset.split_overlap=keep: genbase's files
    share an instance, which MULAN keeps)."""
    env = {**os.environ, "MLGRAPH_OUTPUT_DIR": str(tmp_path), "PYTHONUNBUFFERED": "1"}
    args = ["profile=mulan", "method=mlknn", "protocol=fixed", "dataset=emotions,scene,yeast,genbase"]
    proc = subprocess.run(
        [sys.executable, "-m", "run", "-m", *args, "dataset.split_overlap=keep", "progress=false"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    runs = logged(tmp_path)
    assert len(runs) == 4
    for name in ("emotions", "scene", "yeast", "genbase"):
        X_train, Y_train, X_test, Y_test, nominal = read_split(name, drop=("protein",))
        assert nominal.all() == (name == "genbase")
        conf, pred = mulan_mlknn(X_train, Y_train, X_test, nominal)
        expected = mulan_measures(Y_test, conf, pred)
        got = runs["mulan", name]
        for measure in [*MEASURES, "macro_f1", "macro_auc"]:
            if np.isnan(expected[measure]):  # genbase: labels absent from the test file make
                assert measure == "macro_auc" and measure not in got  # it NaN, which MLflow omits
            else:
                assert round(got[measure], 4) == round(expected[measure], 4), (name, measure)
    assert round(runs["mulan", "emotions"]["avg_precision"], 3) == 0.797
