"""mlgraph: run, sweep and compare graph- and manifold-based multi-label learning methods on the
MULAN benchmarks, every run tracked in MLflow.

The estimators are in :mod:`mlgraph.methods`, the data readers and the dataset registry in
:mod:`mlgraph.data`, the experiment behind ``python -m run`` / ``mlgraph run`` in
:mod:`mlgraph.experiment`.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("mlgraph")
except PackageNotFoundError:  # a source tree on sys.path without an installation
    __version__ = "0+unknown"

__all__ = ["__version__"]
