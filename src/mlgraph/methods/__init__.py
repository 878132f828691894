"""Estimators, one module per method family, scikit-learn style."""

from mlgraph.methods.manifold import MLMR, MLMRRW

__all__ = ["MLMR", "MLMRRW"]
