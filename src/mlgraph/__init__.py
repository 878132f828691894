"""mlgraph: run, sweep and compare graph- and manifold-based multi-label learning methods on the
MULAN benchmarks, every run tracked in MLflow.

The package is cut into layers, each importing only those below it (``make lint`` holds this):
:mod:`mlgraph.cli`; :mod:`mlgraph.reporting`; :mod:`mlgraph.engine`; :mod:`mlgraph.tracking`;
:mod:`mlgraph.methods`; :mod:`mlgraph.graphs` and :mod:`mlgraph.evaluation`; :mod:`mlgraph.data`;
:mod:`mlgraph.config` and :mod:`mlgraph.processes`. The estimators are in :mod:`mlgraph.methods`,
the data readers and the dataset registry in :mod:`mlgraph.data`, the experiment behind
``python -m run`` / ``mlgraph run`` in :mod:`mlgraph.engine.experiment`.

The modules' earlier flat names (``mlgraph.metrics``, ``mlgraph.selection``, ``mlgraph.report``,
...) still import, as the very same module objects, so that scripts, configs' ``_target_`` paths,
saved models and ``python -m mlgraph.report`` keep working.
"""

import importlib
import importlib.abc
import importlib.util
import sys
from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("mlgraph")
except PackageNotFoundError:  # a source tree on sys.path without an installation
    __version__ = "0+unknown"

__all__ = ["__version__"]

FLAT_NAMES = {  # a module's flat name -> where it lives
    "config_keys": "config.keys",
    "profiles": "config.profiles",
    "signals": "processes.signals",
    "workers": "processes.workers",
    "cache": "graphs.cache",
    "selection": "methods.selection",
    "metrics": "evaluation.metrics",
    "protocols": "evaluation.protocols",
    "stats": "evaluation.stats",
    "tracking_process": "tracking.process",
    "experiment": "engine.experiment",
    "runner": "engine.runner",
    "launcher": "engine.launcher",
    "sweep": "engine.sweep",
    "tuning": "engine.tuning",
    "optuna_search": "engine.optuna_search",
    "toy": "engine.toy",
    "report": "reporting.report",
    "side_by_side": "reporting.side_by_side",
    "reproduce": "reporting.reproduce",
    "html": "reporting.html",
    "hparams": "reporting.hparams",
}


class _FlatNames(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports ``mlgraph.<flat name>`` as the module it names (one object under both names), and
    hands ``python -m mlgraph.<flat name>`` that module's code."""

    @staticmethod
    def _target(name: str) -> str | None:
        package, _, flat = name.rpartition(".")
        return f"{__name__}.{FLAT_NAMES[flat]}" if package == __name__ and flat in FLAT_NAMES else None

    def find_spec(self, name, path=None, target=None):
        real = self._target(name)
        if real is None:
            return None
        return importlib.util.spec_from_loader(name, self, origin=importlib.util.find_spec(real).origin)

    def create_module(self, spec):
        module = importlib.import_module(self._target(spec.name))
        spec.loader_state = module.__spec__
        return module

    def exec_module(self, module):
        module.__spec__ = module.__spec__.loader_state  # its own spec again, not the alias's

    def get_code(self, name):
        real = self._target(name)
        return importlib.util.find_spec(real).loader.get_code(real)


if not any(isinstance(finder, _FlatNames) for finder in sys.meta_path):
    sys.meta_path.append(_FlatNames())
