"""Every config composes; tuned hparams are picked per (method, dataset) and lose to the CLI."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.utils import instantiate
from omegaconf import OmegaConf

import mlgraph.tracking.store  # noqa: F401  (registers the `abspath` resolver)
from mlgraph.engine.plan import make_estimator

CONF = Path(__file__).resolve().parents[2] / "conf"
DATASETS = sorted(p.stem for p in (CONF / "dataset").glob("*.yaml"))
EXPERIMENTS = sorted(p.stem for p in (CONF / "experiment").glob("*.yaml"))
METHODS = sorted(p.stem for p in (CONF / "method").glob("*.yaml"))


def _compose(*overrides):
    with initialize_config_dir(version_base="1.3", config_dir=str(CONF)):
        return compose("config", overrides=list(overrides), return_hydra_config=False)


@pytest.mark.parametrize("dataset", DATASETS)
def test_every_dataset_composes(dataset):
    cfg = _compose(f"dataset={dataset}")
    assert cfg.dataset.name == dataset or dataset == "custom"
    OmegaConf.to_container(cfg, resolve=dataset != "custom")


@pytest.mark.parametrize("experiment", EXPERIMENTS)
def test_every_experiment_preset_composes_and_documents_its_command(experiment):
    text = (CONF / "experiment" / f"{experiment}.yaml").read_text()
    assert text.startswith("# @package _global_") and "python -m run" in text
    OmegaConf.to_container(_compose(f"experiment={experiment}"), resolve=True)


@pytest.mark.parametrize("method", METHODS)
def test_every_method_instantiates(method):
    cfg = _compose(f"method={method}")
    est = make_estimator(cfg.method)
    assert cfg.method.name == method and hasattr(est, "fit") and hasattr(est, "get_params")


def test_hparams_chosen_per_method_and_dataset_and_cli_wins():
    for path in (CONF / "hparams").glob("*.yaml"):
        method, dataset = path.stem.split("_", 1)
        own = OmegaConf.load(path)
        tuned = (
            OmegaConf.load(CONF / "hparams" / f"{own.defaults[0]}.yaml").method
            if "defaults" in own
            else own.method
        )
        cfg = _compose(f"method={method}", f"dataset={dataset}")
        for key, value in tuned.items():
            assert cfg.method[key] == value
        key = next(iter(tuned))
        assert _compose(f"method={method}", f"dataset={dataset}", f"method.{key}=123").method[key] == 123


def test_protocol_is_callable_with_dataset_subsample():
    cfg = _compose("dataset=mediamill")
    assert cfg.protocol.subsample == 0.1
    trials = instantiate(cfg.protocol, n_samples=1000, seed=0, rates=[0.5], repeats=1)
    assert len(trials[0].train) + len(trials[0].test) == 100


@pytest.mark.parametrize("dataset", ["frequency_gender", "dual_set_csv"])
def test_dual_set_data_bring_the_cv5_protocol_and_the_cli_wins(dataset):
    assert _compose(f"dataset={dataset}", "method=dsml").protocol.folds == 5
    assert _compose(f"dataset={dataset}", "method=dsml", "protocol=halves").protocol.test_size == 0.5
    assert _compose("dataset=yeast").protocol.rates[0] == 0.05  # multi-label data keep `ssl`


def test_help_lists_only_the_groups_a_user_picks_and_the_data_variable(tmp_path):
    env = {**os.environ, "MLGRAPH_OUTPUT_DIR": str(tmp_path)}
    proc = subprocess.run(
        [sys.executable, "-m", "mlgraph", "run", "--help"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    listed = re.findall(r"^([a-z_/]+): ", proc.stdout, flags=re.M)  # Hydra's `group: options` lines
    assert {"dataset", "method", "graph", "protocol", "selector", "tracking"} <= set(listed)
    assert not [g for g in listed if "schema" in g or g.startswith("hydra")], listed
    assert "$MLGRAPH_DATA_DIR" in proc.stdout and not re.search(r"\$MLGRAPH_DATA\b(?!_DIR)", proc.stdout)
