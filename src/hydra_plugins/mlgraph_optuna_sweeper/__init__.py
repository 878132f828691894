"""mlgraph's Optuna sweeper for Hydra (``hydra/sweeper=optuna``); see :mod:`mlgraph.optuna_search`."""
