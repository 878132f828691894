"""Tracking: the MLflow store and a run's steps (:mod:`~mlgraph.tracking.store`), a team server's
users and permissions (:mod:`~mlgraph.tracking.server`), storage errors in one paragraph
(:mod:`~mlgraph.tracking.storage`), and the process that carries a run's steps out for a
command's one job (:mod:`~mlgraph.tracking.process`).

``from mlgraph.tracking import setup_experiment`` (any public name of the store) works as well.
"""

import importlib


def __getattr__(name: str):
    # lazily, so that importing mlgraph.tracking.process (forked first thing) stays cheap
    if name.startswith("_") or name in (
        "store",
        "process",
        "storage",
        "server",
    ):  # submodules: the import system's
        raise AttributeError(name)
    return getattr(importlib.import_module(f"{__name__}.store"), name)
