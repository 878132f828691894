"""The Optuna sweeper's pieces: the override grammar, the objective, interrupted trials, and the
checks of a search space against the config and the method's estimator."""

import math

import optuna
import pandas as pd
import pytest
from hydra.core.override_parser.overrides_parser import OverridesParser
from omegaconf import OmegaConf
from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution
from optuna.trial import TrialState

from mlgraph.engine.optuna_search import (
    OptunaSearch,
    SearchError,
    check_search,
    distribution,
    objective_value,
    search_space,
)


def _one(text):
    return distribution(OverridesParser.create().parse_overrides([text])[0])


def test_the_override_grammar_of_hydras_optuna_plugin():
    assert _one("a=interval(0.1, 2.0)") == FloatDistribution(0.1, 2.0)
    assert _one("a=tag(log, interval(0.0001, 1.0))") == FloatDistribution(0.0001, 1.0, log=True)
    assert _one("a=int(interval(2, 9))") == IntDistribution(2, 9)
    assert _one("a=range(1, 10, 3)") == IntDistribution(1, 7, step=3)  # 1, 4, 7
    assert _one("a=choice(knn, epsilon)") == CategoricalDistribution(["knn", "epsilon"])
    assert _one("a=5") == "5"
    space, fixed = search_space(["method.k=int(interval(3, 20))", "dataset=yeast"])
    assert list(space) == ["method.k"] and fixed == {"dataset": "yeast"}


def test_objective_is_the_mean_over_successful_trials():
    summary = pd.DataFrame({"avg_precision": [0.6, 0.9, math.nan], "n_ok": [2, 1, 0]})
    assert objective_value(summary, "avg_precision") == pytest.approx(0.7)
    assert objective_value(None, "avg_precision") is None
    with pytest.raises(ValueError, match="no summary with 'macro_auc'"):
        objective_value(summary, "macro_auc")


def test_bad_sweeper_options_are_named():
    with pytest.raises(ValueError, match="hydra.sweeper.objective='accuracy' is not valid"):
        OptunaSearch(objective="accuracy")
    with pytest.raises(ValueError, match="hydra.sweeper.n_trials=0 is not valid"):
        OptunaSearch(n_trials=0)
    assert OptunaSearch(objective="ranking_loss").direction == "minimize"


def test_trials_left_running_by_a_killed_sweep_are_asked_again(tmp_path):
    storage = f"sqlite:///{tmp_path}/optuna.db"
    study = optuna.create_study(study_name="s", storage=storage)
    space = {"x": FloatDistribution(0, 1)}
    done = study.ask(space)
    study.tell(done, 0.5)
    killed = study.ask(space)  # never told: its sweep was killed
    study = optuna.load_study(study_name="s", storage=storage)
    assert OptunaSearch._requeue_interrupted(study) == 1
    assert study.trials[killed.number].state == TrialState.FAIL
    again = study.ask(space)
    assert again.params == killed.params


@pytest.mark.parametrize(
    ("override", "expected"),
    [
        ("method.s=interval(1.0, 0.1)", "the interval's low end 1.0 is not below its high end 0.1"),
        ("method.s=interval(0.5, 0.5)", "the interval's low end 0.5 is not below its high end 0.5"),
        ("method.s=tag(log, interval(0, 1))", "a log scale needs a positive low end, and this one is 0.0"),
        ("method.k=int(interval(9, 2))", "the interval's low end 9 is not below its high end 2"),
        ("method.k=range(5, 1)", "range(5, 1, 1) holds no value"),
        ("method.k=choice()", "empty choice is not legal"),
    ],
)
def test_a_range_that_is_not_one_is_named(override, expected):
    with pytest.raises(SearchError) as err:
        search_space([override])
    text = str(err.value)
    assert expected in text and override.split("=")[0] in text and "\n" not in text


GROUPS = {"graph": ["bmatching", "epsilon", "knn"]}


def _config(method: dict, **choices):
    """A composed config as the sweeper sees it: a method, the graph group and Hydra's choices."""
    return OmegaConf.create(
        {
            "method": method,
            "graph": {"kind": "knn", "k": 10},
            "seed": 0,
            "hydra": {"runtime": {"choices": {"method": method["name"], "graph": "knn", **choices}}},
        }
    )


MLKNN = {"_target_": "mlgraph.methods.MLkNN", "name": "mlknn", "k": 10, "s": 1.0, "standardize": True}
BR_KNN = {
    "_target_": "mlgraph.methods.BinaryRelevance",
    "name": "br_knn",
    "base_estimator": {"_target_": "mlgraph.methods.KNNClassifier", "n_neighbors": 3},
}


def _problem(overrides, config=None):
    with pytest.raises(SearchError) as err:
        check_search(overrides, config or _config(MLKNN), GROUPS.get)
    return str(err.value)


def test_a_search_over_real_parameters_and_keys_passes():
    check_search(
        ["method.k=int(interval(3, 30))", "method.s=tag(log, interval(0.1, 3.0))", "seed=choice(0, 1)"]
        + ["graph=choice(knn, epsilon)", "dataset=emotions"],
        _config(MLKNN),
        GROUPS.get,
    )
    check_search(["method.base_estimator.n_neighbors=int(interval(1, 9))"], _config(BR_KNN), GROUPS.get)


def test_a_key_the_estimator_lacks_is_named_with_its_parameters():
    text = _problem(["method.nosuch=interval(0.1, 1.0)"])
    assert text.startswith("method.nosuch=interval(0.1, 1.0): MLkNN (method mlknn) has no parameter 'nosuch'")
    assert "(k, metric, nominal_groups, s, self_neighbour, standardize)" in text
    text = _problem(["method.base_estimator.k=int(interval(1, 9))"], _config(BR_KNN))
    assert "BinaryRelevance (method br_knn) has no parameter 'base_estimator__k'" in text


def test_a_parameter_the_yaml_does_not_declare_must_be_appended():
    text = _problem(["method.self_neighbour=choice(true, false)"])
    assert (
        "method mlknn's config does not declare self_neighbour" in text and "+method.self_neighbour" in text
    )
    check_search(["+method.self_neighbour=choice(true, false)"], _config(MLKNN), GROUPS.get)


def test_values_the_estimators_rules_refuse_are_named():
    text = _problem(["method.k=interval(3, 30)"])  # floats for an integer
    assert "this search can give k=3.0, but MLkNN's k (method mlknn) must be a positive integer" in text
    assert "int(interval(a, b))" in text
    text = _problem(["method.base_estimator.n_neighbors=choice(3, 0)"], _config(BR_KNN))
    assert "n_neighbors=0, but KNNClassifier's n_neighbors (method br_knn) must be a positive integer" in text


def test_other_keys_must_be_in_the_config_and_groups_take_their_options():
    assert "graph.nosuch is not a key of the config" in _problem(["graph.nosuch=choice(1, 2)"])
    text = _problem(["graph=choice(knn, nope)"])
    assert "'nope' is not an option of config group graph (bmatching, epsilon, knn)" in text
    assert "graph is a config group" in _problem(["graph=interval(0, 1)"])


def test_a_target_that_is_no_estimator_stops_the_search():
    text = _problem(
        ["method.k=int(interval(3, 9))"], _config({**MLKNN, "_target_": "collections.OrderedDict"})
    )
    assert "method._target_=collections.OrderedDict is not an estimator" in text


@pytest.mark.slow  # composes every preset and builds its estimator (their imports: seconds)
def test_every_optuna_preset_passes_its_checks():
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    from mlgraph.config.app import CONFIG_DIR

    presets = sorted(p.stem for p in (CONFIG_DIR / "experiment").glob("*_optuna.yaml"))
    assert len(presets) >= 8
    with initialize_config_dir(str(CONFIG_DIR), version_base="1.3"):
        options = GlobalHydra.instance().config_loader().get_group_options
        for preset in presets:
            config = compose("config", [f"experiment={preset}", "dataset=emotions"], return_hydra_config=True)
            params = [f"{k}={v}" for k, v in config.hydra.sweeper.params.items()]
            check_search(params, config, options)
