"""Published train/test splits (protocol=fixed): loading, checks, genbase's overlap."""

import warnings
from pathlib import Path

import numpy as np
import pytest
from omegaconf import OmegaConf
from shared_data import benchmark_file, local_dataset

from mlgraph.data.mulan import load_mulan
from mlgraph.data.splits import SplitDataset, combine_split, load_fixed_split


def _rows(X, Y):
    X = X.toarray() if hasattr(X, "toarray") else X
    return sorted(map(bytes, np.ascontiguousarray(np.hstack([X, Y]), dtype=np.float64)))


def test_registered_split_is_train_then_test_and_covers_the_full_file():
    local_dataset("emotions", "train", "test")
    data = load_fixed_split("emotions")
    assert isinstance(data, SplitDataset) and (data.n_samples, data.n_train) == (593, 391)
    train = load_mulan(benchmark_file("splits/emotions-train.arff.gz"), benchmark_file("emotions.xml"))
    np.testing.assert_array_equal(data.X[:391], train.X)
    np.testing.assert_array_equal(data.Y[:391], train.Y)
    full = load_mulan(benchmark_file("emotions.arff.gz"), benchmark_file("emotions.xml"))
    assert _rows(data.X, data.Y) == _rows(full.X, full.Y)  # the two files hold the full dataset
    assert data.label_names == full.label_names and data.sha256.count(";") == 1


def test_own_files_and_sparse_data():
    data = load_fixed_split(
        "mine",
        arff=str(benchmark_file("splits/medical-train.arff.gz")),
        test_arff=str(benchmark_file("splits/medical-test.arff.gz")),
        xml=str(benchmark_file("medical.xml")),
    )
    assert data.n_train == 333 and data.n_samples == 978 and data.X.format == "csr"
    assert data.source.endswith("medical-test.arff.gz")


@pytest.mark.parametrize("policy, n_train", [("drop", 462), ("keep", 463)])
def test_genbase_instance_in_both_files(policy, n_train):
    local_dataset("genbase", "xml", "train", "test")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        data = load_fixed_split("genbase", split_overlap=policy)
    assert data.n_train == n_train and data.n_samples - data.n_train == 199  # the test file as published
    assert data.info["overlap"] == ("Q9XEL8",) and data.info["n_removed_from_train"] == 463 - n_train
    assert any("Q9XEL8" in str(w.message) for w in caught) == (policy == "drop")
    with pytest.raises(ValueError, match="Q9XEL8"):
        load_fixed_split("genbase", split_overlap="error")


def _arff(path, declaration, rows):
    path.write_text(
        f"@relation t\n@attribute f1 numeric\n@attribute f2 {declaration}\n"
        "@attribute l1 {0,1}\n@attribute l2 {0,1}\n@data\n" + "\n".join(rows) + "\n"
    )
    return path


def test_files_must_share_their_attributes(tmp_path):
    train = _arff(tmp_path / "a-train.arff", "{YES,NO}", ["1,YES,0,1", "2,NO,1,0"])
    test = _arff(tmp_path / "a-test.arff", "{NO,YES}", ["3,YES,1,1"])
    with pytest.raises(ValueError, match=r"a-test.arff: attribute 'f2' is declared nominal"):
        load_fixed_split("a", arff=str(train), test_arff=str(test), n_labels=2)
    other = tmp_path / "b-test.arff"
    other.write_text(_arff(other, "{YES,NO}", ["3,YES,1,1"]).read_text().replace("f2", "g2"))
    with pytest.raises(ValueError, match="attribute 'g2' where the training file .* has 'f2'"):
        load_fixed_split("a", arff=str(train), test_arff=str(other), n_labels=2)
    same = _arff(tmp_path / "c-test.arff", "{YES,NO}", ["3,YES,1,1"])
    data = load_fixed_split("a", train_arff=str(train), test_arff=str(same), n_labels=2)
    np.testing.assert_array_equal(data.X, [[1, 0], [2, 1], [3, 0]])
    np.testing.assert_array_equal(data.Y, [[0, 1], [1, 0], [1, 1]])
    assert data.n_train == 2


def test_missing_files_are_named(tmp_path):
    with pytest.raises(ValueError, match="no registered train/test split"):
        load_fixed_split("not-registered", arff="x.arff")
    with pytest.raises(ValueError, match="no training file"):
        load_fixed_split("mine", test_arff=str(tmp_path / "t.arff"))
    with pytest.raises(ValueError, match="split_overlap='both'"):
        combine_split(None, None, "a", "b", split_overlap="both")


def test_fixed_protocol_refuses_dual_set_data():
    from mlgraph.engine.plan import load_from_config

    dataset = OmegaConf.create({"_target_": "mlgraph.data.dual_set.frequency_gender", "name": "fg"})
    with pytest.raises(ValueError, match="protocol=fixed"):
        load_from_config(
            dataset, OmegaConf.create({"_target_": "mlgraph.evaluation.protocols.fixed_split_trials"})
        )


@pytest.mark.parametrize(
    "overrides, n_trials, sizes",
    [
        (["dataset=emotions", "protocol=fixed"], 1, (391, 202)),
        (
            ["dataset=emotions", "protocol=fixed", "protocol.rates=[0.1,0.2]", "protocol.repeats=2"],
            4,
            (391, 202),
        ),
        (["dataset=emotions", "protocol=cv10", "protocol.stratify=iterative"], 10, None),
    ],
)
def test_protocols_from_the_composed_config(overrides, n_trials, sizes):
    from hydra import compose, initialize_config_dir
    from hydra.utils import call

    import mlgraph.tracking.store  # noqa: F401  (the `abspath` resolver)
    from mlgraph.engine.plan import load_from_config
    from mlgraph.evaluation.protocols import protocol_inputs

    if "protocol=fixed" in overrides:
        local_dataset("emotions", "train", "test")
    conf = Path(__file__).resolve().parents[2] / "conf"
    with initialize_config_dir(version_base="1.3", config_dir=str(conf)):
        cfg = compose("config", overrides=overrides)
    data = load_from_config(cfg.dataset, cfg.protocol)
    protocol = {k: v for k, v in cfg.protocol.items() if k != "normalise"}
    trials = call(protocol, seed=cfg.seed, **protocol_inputs(protocol, data))
    assert len(trials) == n_trials and data.n_samples == 593
    if sizes:
        assert all((len(t.train), len(t.test)) == sizes for t in trials)
