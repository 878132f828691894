"""Profiles: the Hydra group and the Python objects agree, reach every kNN step, and say where
they stop."""

from pathlib import Path

import numpy as np
import pytest
from hydra import compose, initialize_config_dir
from hydra.errors import MissingConfigException
from omegaconf import OmegaConf
from sklearn.pipeline import Pipeline

import mlgraph.tracking.store  # noqa: F401  (registers the `abspath` resolver)
from mlgraph.config.profiles import PROFILES, check_data, configure, get_profile
from mlgraph.data import MultiLabelDataset
from mlgraph.engine.checks import ConfigError
from mlgraph.engine.experiment import prepare
from mlgraph.engine.plan import make_estimator
from mlgraph.evaluation import metrics as M
from mlgraph.methods import MLMR, BinaryRelevance, KNNClassifier, MLkNN

CONF = Path(__file__).resolve().parents[2] / "conf"


def _compose(*overrides):
    with initialize_config_dir(version_base="1.3", config_dir=str(CONF)):
        return compose("config", overrides=list(overrides), return_hydra_config=False)


def _data(X, groups=()):
    Y = (np.arange(len(X))[:, None] % np.array([2, 3]) == 0).astype(np.int8)
    return MultiLabelDataset("toy", X, Y, (), ("a", "b"), "0" * 64, "toy", nominal_groups=groups)


@pytest.mark.parametrize("name", list(PROFILES))
def test_hydra_group_and_python_profile_agree(name):
    cfg = _compose(f"profile={name}", "method=mlknn", "dataset=emotions")
    profile = get_profile(name)
    assert OmegaConf.to_container(cfg.metrics) == profile.metrics
    assert (cfg.profile.name, cfg.profile.distance, cfg.profile.missing) == (
        name,
        profile.distance,
        profile.missing,
    )
    assert cfg.dataset.missing == profile.missing and cfg.method.metric == profile.distance
    for method in ("br_knn", "cc_knn"):
        assert (
            _compose(f"profile={name}", f"method={method}").method.base_estimator.metric == profile.distance
        )


def test_default_profile_is_mlgraph_and_mulan_turns_off_normalisation():
    cfg = _compose("method=br_knn", "protocol=cv10")
    assert cfg.profile.name == "mlgraph" and cfg.protocol.normalise is True
    assert _compose("profile=mulan", "method=br_knn", "protocol=cv10").protocol.normalise is False
    # a key given on the command line beats the profile
    assert _compose("profile=mulan", "metrics.auc_single_class=skip").metrics.auc_single_class == "skip"


def test_unknown_profile_lists_the_known_ones():
    with pytest.raises(MissingConfigException, match=r"(?s)Could not find 'profile/weka'.*mlgraph.*mulan"):
        _compose("profile=weka")
    with pytest.raises(ValueError, match="unknown profile 'weka'; known profiles: mlgraph, mulan"):
        get_profile("weka")


def test_evaluate_with_a_profile_is_evaluate_with_its_options():
    rng = np.random.default_rng(0)
    Y = (rng.random((40, 5)) < 0.3).astype(int)
    Y[:, 4] = 0  # a label never positive: its F1 and AUC are undefined
    S = rng.random((40, 5))
    P = (S > 0.6).astype(int)
    P[:, 4] = 0
    for name, profile in PROFILES.items():
        assert M.evaluate(Y, S, P, profile=name) == pytest.approx(
            M.evaluate(Y, S, P, **profile.metrics), nan_ok=True
        )
    mulan, default = M.evaluate(Y, S, P, profile="mulan"), M.evaluate(Y, S, P)
    assert np.isnan(mulan["macro_auc"]) and not np.isnan(default["macro_auc"])
    assert mulan["macro_f1"] == pytest.approx(default["macro_f1"] + 1 / 5)  # label 4 scores 1, not 0


def test_configure_reaches_every_knn_step():
    groups = ((1, 2, 3), (5,))
    for estimator, key in [
        (MLkNN(), "metric"),
        (Pipeline([("classify", MLkNN())]), "classify__metric"),
        (BinaryRelevance(KNNClassifier()), "base_estimator__metric"),
    ]:
        assert get_profile("mulan").configure(estimator, _data(np.zeros((4, 6)), groups)) is estimator
        params = estimator.get_params()
        assert params[key] == "weka"
        assert params[key.replace("metric", "nominal_groups")] == [[1, 2, 3], [5]]
        configure(estimator, "euclidean", groups)
        assert estimator.get_params()[key] == "euclidean"


def test_profile_notes_what_it_does_not_reach_and_refuses_what_cannot_work():
    notes = configure(MLMR(), "weka", (), "mlmr", "mulan")
    assert len(notes) == 1 and "mlmr has no Weka counterpart" in notes[0] and "metric rules apply" in notes[0]
    assert configure(MLMR(), "euclidean", ()) == []
    selected = Pipeline([("select", None), ("classify", MLkNN())])
    with pytest.raises(ValueError, match=r"nominal attributes.*\['select'\].*selector=none"):
        configure(selected, "weka", ((0,),), "mlknn", "mulan")
    X = np.ones((6, 2))
    X[0, 0] = np.nan
    with pytest.raises(
        ValueError, match="1 missing feature values.*method mlmr cannot take them.*dataset.missing=zero"
    ):
        check_data(MLMR(), _data(X), "mlmr", "mulan", "weka", "keep")
    with pytest.raises(ValueError, match="method mlknn cannot take them"):  # method.metric=euclidean
        check_data(MLkNN(), _data(X), "mlknn", "mulan", "weka", "keep")
    weka = MLkNN(metric="weka")
    assert check_data(weka, _data(X, ((1,),)), "mlknn", "mulan", "weka", "keep") == []
    assert weka.nominal_groups == [[1]]


def test_run_config_with_profile_mulan(tmp_path):
    """prepare() gives the kNN step the dataset's groups and the evaluation MULAN's options; a
    method without kNN gets a note, a selector on nominal data a config error."""
    base = ["profile=mulan", "protocol=fixed", f"tracking.uri=sqlite:///{tmp_path}/m.db"]
    plan = prepare(_compose(*base, "method=mlknn", "dataset=emotions"))
    assert plan.estimator.metric == "weka" and plan.notes == ()
    assert plan.evaluation["zero_division"] == 1 and plan.evaluation["auc_single_class"] == "nan"
    plan = prepare(_compose(*base, "method=mlmr", "dataset=emotions"))
    assert any("no Weka counterpart" in note for note in plan.notes)
    cfg = _compose(*base, "method=mlknn", "dataset=emotions")
    cfg.profile.distance = "manhattan"
    with pytest.raises(ConfigError, match="profile.distance='manhattan'"):
        prepare(cfg)
    estimator = make_estimator(_compose(*base, "method=br_knn").method)
    assert estimator.base_estimator.metric == "weka"
