"""Estimators, one module per method family, scikit-learn style."""

from mlgraph.methods.base import MultiLabelClassifierMixin, labelled_scorer
from mlgraph.methods.dual_set import (
    DSML,
    CoOccurrenceDecomposition,
    DualSetFromMultiLabel,
    IndependentDecomposition,
    LabelStacking,
)
from mlgraph.methods.knn import KNNClassifier
from mlgraph.methods.label_manifold import ML2
from mlgraph.methods.manifold import MLMR, MLMRRW
from mlgraph.methods.mlknn import MLkNN
from mlgraph.methods.propagation import MLGFHF, MLLGC
from mlgraph.methods.ranking import BPMLL, RankSVM
from mlgraph.methods.rbf_network import MLRBF, RBFNetwork
from mlgraph.methods.spectral import MLFSKSC
from mlgraph.methods.transformation import (
    BinaryRelevance,
    CalibratedLabelRanking,
    EnsembleClassifierChains,
    RAkEL,
)
from mlgraph.methods.weak_label import SSWL

__all__ = [
    "BPMLL",
    "RankSVM",
    "DSML",
    "CoOccurrenceDecomposition",
    "DualSetFromMultiLabel",
    "IndependentDecomposition",
    "LabelStacking",
    "MLRBF",
    "RBFNetwork",
    "BinaryRelevance",
    "CalibratedLabelRanking",
    "EnsembleClassifierChains",
    "RAkEL",
    "KNNClassifier",
    "ML2",
    "MLFSKSC",
    "MLGFHF",
    "MLLGC",
    "MLMR",
    "MLMRRW",
    "MLkNN",
    "SSWL",
    "MultiLabelClassifierMixin",
    "labelled_scorer",
]
