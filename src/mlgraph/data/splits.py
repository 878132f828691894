"""Published train/test splits: MULAN's ``<name>-train.arff`` and ``<name>-test.arff`` as one dataset.

:func:`load_fixed_split` reads both files as :func:`mlgraph.data.registry.load_dataset` reads one
(labels by name from the XML, the same ``drop`` list); :func:`combine_split` checks that they
describe the same data (every attribute but the dropped identifiers declared alike: name, type
and nominal values, so that codes mean the same in both) and stacks them, training rows first:
``n_train`` is the boundary that ``protocol=fixed`` (:func:`mlgraph.evaluation.protocols.fixed_split_trials`)
evaluates.

Identifier overlap. A dataset with an identifier attribute (one in ``drop``, e.g. genbase's
``protein``) names its instances, so an instance present in both files can be recognised: the
published genbase split has one (``Q9XEL8`` is in both files, while ``O88658`` is in neither; see
``shared/datasets/README.md``). ``split_overlap="drop"`` (default) removes such instances from the
training part and warns, so the test file is evaluated as published without a test instance
seen in training; ``"keep"`` uses the files exactly as published; ``"error"`` refuses. Without an
identifier, rows equal in both files are genuine duplicates of the full dataset (scene, enron,
tmc2007-500 have some) and are kept. String identifiers cannot be compared (the ARFF reader keeps
only their codes) and are not checked.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Literal

import numpy as np
import scipy.sparse as sp

from mlgraph.data.arff import ArffData, DataWarning, read_arff
from mlgraph.data.mulan import (
    ConstantFeatureWarning,
    MissingPolicy,
    MultiLabelDataset,
    UnlistedLabelWarning,
    warn_constant_features,
)
from mlgraph.data.registry import dataset_path, find_file, load_dataset, registry

__all__ = ["SPLIT_KEYS", "SplitDataset", "combine_split", "load_fixed_split"]

OVERLAP = ("drop", "keep", "error")
#: Dataset config keys that only ``protocol=fixed`` reads (other protocols load the full file).
SPLIT_KEYS = ("train_arff", "test_arff", "split_overlap")


@dataclass(frozen=True, eq=False)
class SplitDataset(MultiLabelDataset):
    """A :class:`MultiLabelDataset` whose first ``n_train`` rows are the training file and the rest
    the test file. ``sha256`` and ``source`` list both files (``train;test``); ``info`` records
    the identifiers found in both files (``overlap``) and how many training rows were removed
    (``n_removed_from_train``)."""

    n_train: int = 0
    info: Mapping = field(default_factory=lambda: MappingProxyType({}))


def _check_same_attributes(
    train: ArffData, test: ArffData, train_path: Path, test_path: Path, identifiers: set[str]
) -> None:
    if len(train.attributes) != len(test.attributes):
        raise ValueError(
            f"{test_path}: {len(test.attributes)} attributes, but the training file "
            f"{train_path} has {len(train.attributes)}"
        )
    for a, b in zip(train.attributes, test.attributes, strict=True):
        if a.name != b.name:
            raise ValueError(
                f"{test_path}: attribute {b.name!r} where the training file {train_path} "
                f"has {a.name!r}: the files do not share a feature and label space"
            )
        if a.name not in identifiers and a != b:
            raise ValueError(
                f"{test_path}: attribute {b.name!r} is declared {b.kind} {b.values or ''} "
                f"but {a.kind} {a.values or ''} in the training file {train_path}"
            )


def _identifier_values(parsed: ArffData, names: Iterable[str]) -> list | None:
    """The identifier of every row (a nominal one by its declared value; a tuple when there are
    several identifier attributes), or None when the file has no comparable identifier."""
    columns = []
    for j, attribute in enumerate(parsed.attributes):
        if attribute.name not in names or attribute.kind not in ("nominal", "numeric"):
            continue
        codes = parsed.data[:, j]
        codes = codes.toarray().ravel() if sp.issparse(codes) else np.asarray(codes)
        values = attribute.values
        columns.append([values[int(c)] if values is not None and c == c else c for c in codes])
    if not columns:
        return None
    return columns[0] if len(columns) == 1 else list(zip(*columns, strict=True))


def _stack(first, second):
    if sp.issparse(first) or sp.issparse(second):
        return sp.vstack([sp.csr_matrix(first), sp.csr_matrix(second)], format="csr")
    return np.vstack([first, second])


def combine_split(
    train: MultiLabelDataset,
    test: MultiLabelDataset,
    train_path: str | Path,
    test_path: str | Path,
    identifiers: Iterable[str] = (),
    split_overlap: Literal["drop", "keep", "error"] = "drop",
) -> SplitDataset:
    """Stack the loaded training and test parts (training rows first) after checking, on the
    files, that they share one attribute space; ``identifiers`` (the dropped attributes) find
    instances present in both files, handled as ``split_overlap`` says (module docstring)."""
    if split_overlap not in OVERLAP:
        raise ValueError(f"dataset.split_overlap={split_overlap!r} must be one of {OVERLAP}")
    paths = [Path(train_path), Path(test_path)]
    identifiers = {identifiers} if isinstance(identifiers, str) else set(identifiers)
    parsed = [read_arff(path) for path in paths]
    _check_same_attributes(*parsed, *paths, identifiers)
    ids_train, ids_test = (_identifier_values(p, identifiers) for p in parsed)
    shared = set(ids_train) & set(ids_test) if ids_train else set()
    listed = ", ".join(map(str, sorted(shared, key=str)[:5]))
    if shared and split_overlap == "error":
        raise ValueError(
            f"{paths[1]}: {len(shared)} instance(s) also in the training file {paths[0]} "
            f"({listed}); dataset.split_overlap=drop removes them from training"
        )
    keep = np.ones(train.n_samples, dtype=bool)
    if shared and split_overlap == "drop":
        keep = np.array([v not in shared for v in ids_train])
        warnings.warn(
            f"{train.name}: {len(shared)} instance(s) of the published test file are also in "
            f"the training file ({listed}); removed from the training part "
            "(dataset.split_overlap=keep uses the files as published)",
            DataWarning,
            stacklevel=2,
        )
    info = {"overlap": tuple(sorted(shared, key=str)), "n_removed_from_train": int((~keep).sum())}
    return SplitDataset(
        **{
            **vars(train),
            "X": _stack(train.X[keep], test.X),
            "Y": np.vstack([train.Y[keep], test.Y]),
            "sha256": f"{train.sha256};{test.sha256}",
            "source": f"{train.source};{test.source}",
        },
        n_train=int(keep.sum()),
        info=MappingProxyType(info),
    )


def load_fixed_split(
    name: str,
    arff: str | Path | None = None,
    test_arff: str | Path | None = None,
    train_arff: str | Path | None = None,
    xml: str | Path | None = None,
    n_labels: int | None = None,
    label_location: Literal["first", "last"] = "last",
    drop: Iterable[str] | None = None,
    data_dir: str | Path | None = None,
    verify: bool = True,
    split_overlap: Literal["drop", "keep", "error"] = "drop",
    missing: MissingPolicy = "error",
    **full_file_keys,
) -> SplitDataset:
    """The published split of a dataset config's fields (``protocol=fixed``).

    A registered benchmark with an official split (``datasets.toml``: ``train``/``test``) needs
    nothing more: its split files are found, verified and downloaded like its full file. Your own
    data: ``test_arff`` and ``train_arff`` (or ``arff`` as the training file), with ``xml`` or
    ``n_labels``. The full file's ``sha256``/``size``/``url`` do not apply to the split files and
    are ignored. Each file is read by :func:`mlgraph.data.registry.load_dataset`; then
    :func:`combine_split`.
    """
    entry = registry().get(name)
    extra = [data_dir] if data_dir else []
    if test_arff is None:
        if entry is None or "test" not in entry.roles:
            have = [n for n, e in registry().items() if "test" in e.roles]
            raise ValueError(
                f"protocol=fixed: dataset {name!r} has no registered train/test split "
                f"(registered splits: {', '.join(have)}); for your own files set "
                "dataset.test_arff=... and dataset.train_arff=... (or dataset.arff=...)"
            )
        paths = [dataset_path(name, role, data_dir, verify) for role in ("train", "test")]
    else:
        train_file = train_arff if train_arff is not None else arff
        if train_file is None:
            raise ValueError(
                f"protocol=fixed: dataset {name!r} sets test_arff but no training file "
                "(dataset.train_arff=... or dataset.arff=...)"
            )
        paths = [find_file(train_file, extra), find_file(test_arff, extra)]
    if drop is None:
        drop = entry.drop if entry is not None else ()

    def load(path: Path) -> MultiLabelDataset:
        return load_dataset(
            name,
            str(path),
            xml,
            n_labels,
            label_location,
            drop,
            data_dir=data_dir,
            verify=verify,
            missing=missing,
        )

    # Data notes once per split: constant features over both files together, unlisted labels
    # from the training file (the test file declares the same attributes).
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConstantFeatureWarning)
        train = load(paths[0])
        warnings.simplefilter("ignore", UnlistedLabelWarning)
        test = load(paths[1])
    data = combine_split(train, test, *paths, identifiers=drop, split_overlap=split_overlap)
    warn_constant_features(data.X, f"{paths[0]} + {paths[1]}")
    return data
