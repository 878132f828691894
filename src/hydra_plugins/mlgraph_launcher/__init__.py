"""mlgraph's Hydra launchers (Hydra finds launcher plugins in the ``hydra_plugins`` namespace)."""
