"""Multi-label benchmark data: a fast ARFF reader, MULAN datasets, and the dataset registry
(``load_dataset("bibtex")``: every benchmark by name, found locally or downloaded and verified)."""

from mlgraph.data.arff import ArffError, DataWarning, read_arff
from mlgraph.data.mulan import (
    ConstantFeatureWarning,
    MultiLabelDataset,
    UnlistedLabelWarning,
    load_mulan,
    read_label_names,
)
from mlgraph.data.registry import (
    ChecksumError,
    DatasetNotFoundError,
    RegisteredFile,
    cache_dir,
    data_dirs,
    dataset_files,
    dataset_info,
    dataset_names,
    dataset_path,
    find_file,
    load_dataset,
    load_split,
    sha256_file,
)

__all__ = [
    "ArffError",
    "ChecksumError",
    "ConstantFeatureWarning",
    "DataWarning",
    "DatasetNotFoundError",
    "MultiLabelDataset",
    "RegisteredFile",
    "UnlistedLabelWarning",
    "cache_dir",
    "data_dirs",
    "dataset_files",
    "dataset_info",
    "dataset_names",
    "dataset_path",
    "find_file",
    "load_dataset",
    "load_mulan",
    "load_split",
    "read_arff",
    "read_label_names",
    "sha256_file",
]
