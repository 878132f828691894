"""mlgraph's Optuna sweeper for Hydra (``hydra/sweeper=optuna``); see :mod:`mlgraph.engine.optuna_search`."""
