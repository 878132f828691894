"""Optional extras: a missing one is named with its pip command, never a bare ImportError."""

import sys

import numpy as np
import pytest

from mlgraph.config import extras
from mlgraph.config.extras import MissingExtra, missing_for, require
from mlgraph.graphs.search import approximate_neighbours


def test_a_missing_extra_names_the_option_the_extra_and_the_pip_command(monkeypatch):
    monkeypatch.setitem(sys.modules, "faiss", None)  # import faiss now raises ImportError
    with pytest.raises(MissingExtra) as caught:
        require("approximate")
    message = str(caught.value)
    assert "graph.search=approximate" in message and "faiss-cpu" in message
    assert "pip install 'mlgraph[approximate]'" in message


def test_approximate_search_without_faiss_says_which_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "faiss", None)
    with pytest.raises(MissingExtra, match=r"mlgraph\[approximate\]"):
        approximate_neighbours(np.zeros((10, 2)), 3)


def test_a_hydra_option_on_the_command_line_is_checked_against_its_extra(monkeypatch):
    monkeypatch.setitem(extras.EXTRAS, "joblib", ("no_such_module_here.plugin", "hydra/launcher=joblib", "x"))
    assert "pip install 'mlgraph[joblib]'" in missing_for(["dataset=yeast", "hydra/launcher=joblib"])
    assert missing_for(["dataset=yeast", "hydra/launcher=processes"]) is None


def test_installed_extras_import():
    assert require("approximate").__name__ == "faiss"  # the test extra installs every option
    assert missing_for(["hydra/launcher=joblib", "hydra/sweeper=optuna", "hydra/launcher=slurm"]) is None
