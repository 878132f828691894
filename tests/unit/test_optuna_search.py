"""The Optuna sweeper's pieces: the override grammar, the objective, interrupted trials."""

import math

import optuna
import pandas as pd
import pytest
from hydra.core.override_parser.overrides_parser import OverridesParser
from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution
from optuna.trial import TrialState

from mlgraph.engine.optuna_search import OptunaSearch, distribution, objective_value, search_space


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
