"""Every key checked: keys declared by config files (found, not listed), the nearest valid key,
booleans, data-dependent limits before the run opens, and a benchmark's label count."""

from pathlib import Path

import numpy as np
import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

import mlgraph.config  # noqa: F401  (the abspath resolver of the configs)
from mlgraph.config.keys import declared, paragraph, problems
from mlgraph.data import load_dataset
from mlgraph.engine.checks import ConfigError
from mlgraph.engine.experiment import prepare

CONF = Path(__file__).resolve().parents[2] / "conf"


def _compose(*overrides, conf=CONF):
    with initialize_config_dir(version_base="1.3", config_dir=str(conf)):
        return compose("config", overrides=list(overrides))


@pytest.mark.parametrize(
    "override, message",
    [
        (
            "+graph.kk=3",
            "graph.kk is not a config key; did you mean graph.k? The keys of graph are: b, eps, k",
        ),
        (
            "+metrics.foo=1",
            "metrics.foo is not a config key. The keys of metrics are: auc_single_class, empty_rows",
        ),
        ("+foo=1", "foo is not a config key. The top-level keys are: dataset, graph,"),
        ("+progres=1", "progres is not a config key; did you mean progress?"),
        ("+k=3", "k is not a config key; did you mean graph.k?"),
        ("+method.nu3=1", "method.nu3 is not a config key; did you mean method.nu2?"),
        ("progress=maybe", "progress='maybe' is not a boolean: it must be true or false."),
        ("dataset.verify=1", "dataset.verify=1 is not a boolean"),
    ],
)
def test_unknown_keys_and_non_booleans_are_named_with_the_nearest_valid_key(override, message):
    text = paragraph(_compose("dataset=emotions", override))
    assert message in text
    assert ("`+key=value`" in text) == ("is not a config key" in text)


def test_every_shipped_preset_is_sound():
    """Group files declare their keys; presets only set keys, and must set declared ones."""
    with initialize_config_dir(version_base="1.3", config_dir=str(CONF)):
        assert not problems(compose("config"))
        for preset in sorted((CONF / "experiment").glob("*.yaml")):
            assert not problems(compose("config", overrides=[f"experiment={preset.stem}"])), preset.stem


def test_a_new_group_or_key_is_known_once_its_file_exists(tmp_path):
    (tmp_path / "tuning").mkdir()
    (tmp_path / "schema").mkdir()
    (tmp_path / "config.yaml").write_text("defaults:\n  - tuning: grid\n  - _self_\nseed: 0\nflag: true\n")
    (tmp_path / "tuning/grid.yaml").write_text("defaults:\n  - /schema/base@_here_\nfolds: 3\nsearch: {}\n")
    (tmp_path / "tuning/none.yaml").write_text(
        "# @package _global_\ntuning:\n  folds: null\nextra:\n  a: 1\n"
    )
    (tmp_path / "schema/base.yaml").write_text("inner: 5\n")
    found = declared((tmp_path,))
    assert {"seed", "flag", "tuning.folds", "tuning.search", "tuning.inner", "extra.a"} <= found.keys
    assert found.open == {"tuning.search"} and found.booleans == {"flag"}
    cfg = OmegaConf.create(
        {"seed": 0, "flag": "no", "tuning": {"folds": 3, "fold": 2, "search": {"nu": [1]}}}
    )
    assert problems(cfg, (tmp_path,)) == [
        "tuning.fold is not a config key; did you mean tuning.folds? The keys of tuning are: folds, search.",
        "flag='no' is not a boolean: it must be true or false.",
    ]


def test_a_targets_own_parameters_are_keys():
    cfg = OmegaConf.create({"seed": 0, "method": {"_target_": "mlgraph.methods.MLkNN", "k": 3, "s": 1.0}})
    assert not problems(cfg)
    cfg.method.smoothing = 1.0
    assert "method.smoothing is not a config key" in paragraph(cfg)


def test_data_dependent_limits_fail_before_the_run(tmp_path):
    with pytest.raises(ConfigError, match=r"graph.k=1000 is too large .* can be at most 394"):
        prepare(_compose("dataset=emotions", "protocol.rates=[0.5]", "protocol.repeats=1", "graph.k=1000"))
    with pytest.raises(ConfigError, match=r"method.k=500 is too large"):
        prepare(_compose("dataset=emotions", "method=mlknn", "protocol.rates=[0.5]", "method.k=500"))
    arff = (CONF.parent / "src/mlgraph/data/builtin/emotions.arff.gz").resolve()
    data = load_dataset("emotions")
    three = tmp_path / "three.arff"
    header = [line for line in _text(arff).splitlines() if not line[:1].isdigit()]
    rows = [",".join(f"{v:g}" for v in np.r_[x, y]) for x, y in zip(data.X[:3], data.Y[:3], strict=True)]
    three.write_text("\n".join([*header, *rows]) + "\n")
    xml = CONF.parent / "src/mlgraph/data/builtin/emotions.xml"
    custom = ("dataset=custom", f"dataset.arff={three}", f"dataset.xml={xml}", "protocol.rates=[0.5]")
    with pytest.raises(ConfigError, match=r"graph.k=10 is too large for dataset custom \(3 rows\)"):
        prepare(_compose(*custom))
    with pytest.raises(ConfigError, match="leaves no labelled training instance"):  # the protocol's own check
        prepare(_compose(*custom, "protocol.test_size=0.7", "graph.k=1"))


def _text(path):
    import gzip

    return gzip.decompress(path.read_bytes()).decode()


def test_a_benchmark_read_with_fewer_labels_names_both_counts(tmp_path):
    xml = tmp_path / "my-labels.xml"
    published = (CONF.parent / "src/mlgraph/data/builtin/emotions.xml").read_text()
    xml.write_text("\n".join(line for line in published.splitlines() if "amazed" not in line))
    with pytest.raises(ValueError, match="5 labels were read, but benchmark 'emotions' has 6"):
        load_dataset("emotions", xml=xml)
