"""Multi-label benchmark data: a fast ARFF reader, MULAN datasets and where to find them."""

from mlgraph.data.arff import ArffError, read_arff
from mlgraph.data.mulan import MultiLabelDataset, load_mulan, read_label_names
from mlgraph.data.registry import (
    ChecksumError,
    DatasetNotFoundError,
    data_dirs,
    find_file,
    load_dataset,
    sha256_file,
)

__all__ = [
    "ArffError",
    "ChecksumError",
    "DatasetNotFoundError",
    "MultiLabelDataset",
    "data_dirs",
    "find_file",
    "load_dataset",
    "load_mulan",
    "read_arff",
    "read_label_names",
    "sha256_file",
]
