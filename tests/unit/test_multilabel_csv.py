"""Tests for mlgraph.data.multilabel_csv: a CSV table with named label columns gives the
dataset an ARFF file gives; errors name file, line and column without quoting values."""

from __future__ import annotations

import gzip
import hashlib

import numpy as np
import pytest
from hydra import compose, initialize_config_dir

from mlgraph.data import ArffError, ChecksumError, MultiLabelDataset, load_mulan
from mlgraph.data.multilabel_csv import load_csv_dataset
from mlgraph.engine.plan import load_from_config

TABLE = "id,x,L1,y,L2\np1,0.5,1,2,0\np2,1.5,0,?,1\n\np3,-2,true,4e1,False\n"


@pytest.fixture
def table(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text(TABLE)
    return path


def test_labels_features_names_and_digest(table):
    ds = load_csv_dataset(table, ["L2", "L1"], drop=["id"], missing="mean")
    assert isinstance(ds, MultiLabelDataset)
    assert ds.label_names == ("L2", "L1") and ds.feature_names == ("x", "y")
    np.testing.assert_array_equal(ds.Y, [[0, 1], [1, 0], [0, 1]])
    assert ds.Y.dtype == np.int8
    np.testing.assert_array_equal(ds.X, [[0.5, 2], [1.5, 21], [-2, 40]])
    assert ds.name == "t" and ds.source == str(table)
    assert ds.sha256 == hashlib.sha256(table.read_bytes()).hexdigest()


def test_same_dataset_as_the_arff_file(tmp_path):
    arff = tmp_path / "d.arff"
    arff.write_text(
        "@relation d\n@attribute x numeric\n@attribute y numeric\n@attribute L1 {0,1}\n"
        "@attribute L2 {0,1}\n@data\n0.5,2,1,0\n1.5,3,0,1\n"
    )
    csv = tmp_path / "d.csv.gz"
    csv.write_bytes(gzip.compress(b"x,y,L1,L2\n0.5,2,1,0\n1.5,3,0,1\n"))
    a = load_mulan(arff, n_labels=2)
    c = load_csv_dataset(csv, ["L1", "L2"])
    assert (a.feature_names, a.label_names, a.name) == (c.feature_names, c.label_names, c.name)
    np.testing.assert_array_equal(a.X, c.X)
    np.testing.assert_array_equal(a.Y, c.Y)


@pytest.mark.parametrize(
    "text, kwargs, match",
    [
        (TABLE, {}, r"line 3, column 4: missing value \(\?\) of feature 'y'"),
        (TABLE.replace("0.5", "zz"), {"missing": "zero"}, "line 2, column 2: feature column 'x'"),
        (TABLE.replace("true", "zz"), {}, "line 5, column 3: label column 'L1'"),
        (TABLE.replace("p2,1.5,0", "p2,1.5,"), {}, "line 3, column 3: label column 'L1'"),
        (TABLE + "p4,1,1,1,1,zz\n", {}, "line 6: a row has more fields"),
        (TABLE + "p4,1,zz\n", {}, "line 6: a row has fewer fields"),
        ("id,x,L1,x,L2\n1,2,3,4,5\n", {}, "line 1, column 4: column 'x' appears twice"),
        ("id,x,L1,y,L2\n", {}, "no data rows"),
        (TABLE, {"drop": ["nope", "id"]}, r"no such column\(s\): 'nope'"),
    ],
)
def test_errors_name_file_line_and_column(tmp_path, text, kwargs, match):
    path = tmp_path / "bad.csv"
    path.write_text(text)
    kwargs = {"drop": ["id"], **kwargs}
    with pytest.raises(ArffError, match=match) as info:
        load_csv_dataset(path, ["L1", "L2"], **kwargs)
    assert str(info.value).startswith(str(path)) and "zz" not in str(info.value).split(": ", 1)[1]


def test_checksum_and_missing_file(table):
    with pytest.raises(ChecksumError, match="expected 00"):
        load_csv_dataset(table, ["L1"], drop=["id"], sha256="00" * 32)
    with pytest.raises(FileNotFoundError):
        load_csv_dataset(table.parent / "none.csv", ["L1"])


def test_dataset_config_csv(table):
    """conf/dataset/csv.yaml reaches the loader through its _target_."""
    from pathlib import Path

    conf = Path(__file__).resolve().parents[2] / "conf"
    with initialize_config_dir(str(conf), version_base=None):
        cfg = compose(
            "config",
            overrides=[
                "dataset=csv",
                f"dataset.path={table}",
                "dataset.label_columns=[L1,L2]",
                "dataset.drop=[id]",
                "dataset.missing=zero",
            ],
        )
    ds = load_from_config(cfg.dataset)
    assert ds.label_names == ("L1", "L2") and ds.name == "csv"
    np.testing.assert_array_equal(ds.X[:, 1], [2, 0, 40])
