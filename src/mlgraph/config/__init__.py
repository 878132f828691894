"""Configuration, the lowest layer (it imports no other part of mlgraph): the checks of a composed
config's keys (:mod:`~mlgraph.config.keys`), the metric and distance profiles
(:mod:`~mlgraph.config.profiles`) and the package's primary config as a Hydra app
(:mod:`~mlgraph.config.app`).

Importing it registers the ``abspath`` resolver with which ``tracking.uri`` in ``conf/`` makes
``outputs/`` an absolute path (SQLite needs one).
"""

from pathlib import Path

from omegaconf import OmegaConf

OmegaConf.register_new_resolver("abspath", lambda p: str(Path(p).expanduser().resolve()), replace=True)
