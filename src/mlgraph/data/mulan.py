"""MULAN multi-label datasets: an ARFF file plus an XML file that names the label attributes.

Labels are found BY NAME and kept in the order of the XML file, wherever they sit in the
ARFF file (slashdot has them first, yeast and enron list them in another order). All other
attributes are features, except the ``drop`` list (identifiers such as genbase's
``protein``) and string attributes (dropped with a warning).

Feature encoding: numeric and date attributes as they are; nominal attributes with at most
two values as their 0-based code in the declared list (genbase ``{YES,NO}``: YES=0, NO=1);
nominal attributes with more values as one-hot columns named ``attr=value`` -- dense files
only, a sparse file with such an attribute must drop it.
"""

from __future__ import annotations

import hashlib
import itertools
import warnings
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
import scipy.sparse as sp

from mlgraph.data.arff import ArffData, Attribute, parse_arff

LABELS_NAMESPACE = "http://mulan.sourceforge.net/labels"
_LABEL_TAGS = (f"{{{LABELS_NAMESPACE}}}label", "label")
_ROOT_TAGS = (f"{{{LABELS_NAMESPACE}}}labels", "labels")


@dataclass(frozen=True, eq=False)
class MultiLabelDataset:
    """Features ``X`` (n x d; dense ndarray or CSR, float64) and labels ``Y`` (n x q int8, 0/1).

    ``sha256`` is the digest of the ARFF file exactly as stored (e.g. the .gz), ``source``
    its path. Arrays make value equality meaningless, hence ``eq=False``.
    """

    name: str
    X: np.ndarray | sp.csr_matrix
    Y: np.ndarray
    feature_names: tuple[str, ...]
    label_names: tuple[str, ...]
    sha256: str
    source: str

    @property
    def n_samples(self) -> int:
        return int(self.Y.shape[0])

    @property
    def n_features(self) -> int:
        return int(self.X.shape[1])

    @property
    def n_labels(self) -> int:
        return int(self.Y.shape[1])

    @property
    def cardinality(self) -> float:
        """Mean number of relevant labels per instance."""
        return float(self.Y.sum(axis=1, dtype=np.int64).mean()) if self.n_samples else 0.0


def read_label_names(xml_path: str | Path) -> list[str]:
    """Label names of a MULAN XML file, in document order (a label hierarchy is flattened)."""
    try:
        root = ET.parse(xml_path).getroot()
    except ET.ParseError as exc:
        raise ValueError(f"{xml_path}: not a well-formed MULAN label file ({exc})") from None
    if root.tag not in _ROOT_TAGS:
        raise ValueError(
            f"{xml_path}: root element is <{root.tag}>, "
            f'expected <labels xmlns="{LABELS_NAMESPACE}">'
        )
    names = []
    for element in root.iter():
        if element.tag in _LABEL_TAGS:
            if "name" not in element.attrib:
                raise ValueError(f"{xml_path}: a <label> element has no name attribute")
            names.append(element.attrib["name"])
    if not names:
        raise ValueError(f"{xml_path}: no <label> elements")
    repeated = [name for name, count in Counter(names).items() if count > 1]
    if repeated:
        raise ValueError(f"{xml_path}: label(s) listed more than once: {repeated}")
    return names


def load_mulan(
    arff_path: str | Path,
    xml_path: str | Path | None = None,
    n_labels: int | None = None,
    label_location: Literal["first", "last"] = "last",
    drop: Iterable[str] = (),
    name: str | None = None,
    missing: Literal["error", "mean"] = "error",
) -> MultiLabelDataset:
    """Load a MULAN dataset.

    Labels are the attributes named in ``xml_path`` (XML order), or without XML the
    ``n_labels`` attributes at ``label_location``. Label attributes must be nominal {0,1}
    or numeric 0/1 and are converted by value. ``drop`` names attributes to leave out.
    A missing feature value (``?``) is an error, or with ``missing="mean"`` replaced by the
    mean of its feature over ALL rows (test rows included: use it for exploration only); an
    infinite feature value is always an error.
    """
    if missing not in ("error", "mean"):
        raise ValueError(f"missing={missing!r}: expected 'error' or 'mean'")
    arff_path = Path(arff_path)
    raw = arff_path.read_bytes()
    parsed = parse_arff(raw, str(arff_path))
    label_idx = _label_indices(parsed, arff_path, xml_path, n_labels, label_location)
    feature_idx = _feature_indices(
        parsed, arff_path, label_idx, [drop] if isinstance(drop, str) else list(drop)
    )
    X, feature_names = _features(parsed, arff_path, feature_idx)
    X = _check_finite(X, feature_names, arff_path, missing)
    return MultiLabelDataset(
        name=name or _stem(arff_path),
        X=X,
        Y=_labels(parsed, arff_path, label_idx),
        feature_names=tuple(feature_names),
        label_names=tuple(parsed.attributes[j].name for j in label_idx),
        sha256=hashlib.sha256(raw).hexdigest(),
        source=str(arff_path),
    )


def _stem(path: Path) -> str:
    """``scene.arff.gz`` -> ``scene``."""
    return path.name.removesuffix(".gz").removesuffix(".arff")


def _label_indices(
    parsed: ArffData,
    arff_path: Path,
    xml_path: str | Path | None,
    n_labels: int | None,
    label_location: str,
) -> list[int]:
    """Attribute indices of the labels, in label order."""
    n_attributes = len(parsed.attributes)
    if xml_path is not None:
        labels = read_label_names(xml_path)
        position = {a.name: j for j, a in enumerate(parsed.attributes)}
        absent = [label for label in labels if label not in position]
        if absent:
            raise ValueError(
                f"{len(absent)} label(s) of {xml_path} are not attributes of {arff_path}: "
                f"{absent[:20]}" + (" ..." if len(absent) > 20 else "")
            )
        if n_labels is not None and n_labels != len(labels):
            raise ValueError(f"n_labels={n_labels} but {xml_path} names {len(labels)} labels")
        return [position[label] for label in labels]
    if n_labels is None:
        raise ValueError(f"{arff_path}: give the MULAN XML file or n_labels to identify the labels")
    if not 0 < n_labels < n_attributes:
        raise ValueError(f"{arff_path}: n_labels={n_labels} must lie in 1..{n_attributes - 1}")
    if label_location == "first":
        return list(range(n_labels))
    if label_location == "last":
        return list(range(n_attributes - n_labels, n_attributes))
    raise ValueError(f"label_location={label_location!r}: expected 'first' or 'last'")


def _feature_indices(
    parsed: ArffData, arff_path: Path, label_idx: list[int], drop: list[str]
) -> list[int]:
    """Attribute indices of the features: not labels, not dropped, not strings."""
    position = {a.name: j for j, a in enumerate(parsed.attributes)}
    unknown = [d for d in drop if d not in position]
    if unknown:
        raise ValueError(f"{arff_path}: cannot drop {unknown}: no such attribute")
    labels = set(label_idx)
    dropped_labels = [d for d in drop if position[d] in labels]
    if dropped_labels:
        raise ValueError(f"{arff_path}: cannot drop label attribute(s) {dropped_labels}")
    excluded = labels | {position[d] for d in drop}
    candidates = [j for j in range(len(parsed.attributes)) if j not in excluded]
    strings = [
        parsed.attributes[j].name for j in candidates if parsed.attributes[j].kind == "string"
    ]
    if strings:
        warnings.warn(
            f"{arff_path}: string attribute(s) {strings} are not features; dropped", stacklevel=3
        )
    return [j for j in candidates if parsed.attributes[j].kind != "string"]


def _labels(parsed: ArffData, arff_path: Path, label_idx: list[int]) -> np.ndarray:
    """The n x q 0/1 label matrix; nominal labels are converted by value, not by code."""
    block = parsed.data[:, label_idx]
    block = block.toarray() if sp.issparse(block) else block
    Y = np.empty(block.shape, dtype=np.int8)
    for k, j in enumerate(label_idx):
        attribute = parsed.attributes[j]
        column = block[:, k]
        missing = np.flatnonzero(np.isnan(column))
        if len(missing):
            raise ValueError(
                f"{arff_path}: label {attribute.name!r} is missing (?) "
                f"at row {missing[0]} (0-based)"
            )
        if attribute.kind == "nominal":
            column = _binary_values(attribute, arff_path)[column.astype(np.int64)]
        elif attribute.kind != "numeric":
            raise ValueError(
                f"{arff_path}: label {attribute.name!r} is a {attribute.kind} attribute; "
                "labels must be nominal {0,1} or numeric 0/1"
            )
        bad = np.flatnonzero((column != 0) & (column != 1))
        if len(bad):
            raise ValueError(
                f"{arff_path}: label {attribute.name!r} has value {column[bad[0]]:g} "
                f"at row {bad[0]} (0-based); labels must be 0 or 1"
            )
        Y[:, k] = column
    return Y


def _binary_values(attribute: Attribute, arff_path: Path) -> np.ndarray:
    """The numeric value (0 or 1) of each declared value of a nominal label."""
    try:
        values = np.array([float(v) for v in attribute.values])
    except ValueError:
        values = np.array([np.nan])
    if np.isin(values, (0.0, 1.0)).all():
        return values
    raise ValueError(
        f"{arff_path}: label {attribute.name!r} declares {{{','.join(attribute.values)}}}; "
        "labels must be nominal {0,1} or numeric 0/1"
    )


def _features(
    parsed: ArffData, arff_path: Path, feature_idx: list[int]
) -> tuple[np.ndarray | sp.csr_matrix, list[str]]:
    """The feature matrix and its column names, nominal attributes with >2 values one-hot."""
    attributes = parsed.attributes

    def is_one_hot(j: int) -> bool:
        return attributes[j].kind == "nominal" and len(attributes[j].values) > 2

    one_hot = [attributes[j].name for j in feature_idx if is_one_hot(j)]
    if parsed.sparse:
        if one_hot:
            raise ValueError(
                f"{arff_path}: nominal feature(s) {one_hot[:10]} have more than two values; "
                "one-hot encoding is done for dense data only, so drop them (drop=[...])"
            )
        X = sp.csr_matrix(parsed.data[:, feature_idx])
        X.sort_indices()
        return X, [attributes[j].name for j in feature_idx]
    blocks, names = [], []
    for expand, group in itertools.groupby(feature_idx, key=is_one_hot):
        group = list(group)
        if not expand:
            blocks.append(parsed.data[:, group])
            names += [attributes[j].name for j in group]
            continue
        for j in group:
            blocks.append(_one_hot(parsed.data[:, j], len(attributes[j].values)))
            names += [f"{attributes[j].name}={value}" for value in attributes[j].values]
    X = np.hstack(blocks) if blocks else np.empty((parsed.data.shape[0], 0))
    return X, names


def _one_hot(codes: np.ndarray, n_values: int) -> np.ndarray:
    """n x n_values indicator columns of nominal codes; a missing code gives a NaN row."""
    out = np.zeros((len(codes), n_values))
    present = ~np.isnan(codes)
    out[np.flatnonzero(present), codes[present].astype(np.int64)] = 1.0
    out[~present] = np.nan
    return out


def _check_finite(
    X: np.ndarray | sp.csr_matrix, names: list[str], arff_path: Path, missing: str
) -> np.ndarray | sp.csr_matrix:
    """Refuse infinite values, and NaN unless ``missing="mean"`` (then impute the feature mean)."""
    values = X.data if sp.issparse(X) else X
    nan = np.isnan(values)
    fatal = np.isinf(values) | (nan if missing == "error" else False)
    if fatal.any():
        row, col = _first_position(X, fatal)
        what = "missing (?)" if np.isnan(X[row, col]) else "infinite"
        raise ValueError(f"{arff_path}: {what} value of feature {names[col]!r} at row {row} (0-based)")
    if not nan.any():
        return X
    return _impute_mean(X, nan, names, arff_path)


def _first_position(X: np.ndarray | sp.csr_matrix, mask: np.ndarray) -> tuple[int, int]:
    """(row, column) of the first True of ``mask`` in row-major order; ``mask`` is over X,
    or over X.data when X is sparse."""
    if not sp.issparse(X):
        row, col = np.argwhere(mask)[0]
        return int(row), int(col)
    pos = int(np.flatnonzero(mask)[0])
    return int(np.searchsorted(X.indptr, pos, side="right") - 1), int(X.indices[pos])


def _impute_mean(
    X: np.ndarray | sp.csr_matrix, nan: np.ndarray, names: list[str], arff_path: Path
) -> np.ndarray | sp.csr_matrix:
    """Replace NaN by the mean of the observed values of its feature (sparse zeros count)."""
    if sp.issparse(X):
        values, cols = X.data, X.indices[nan]
        observed = np.bincount(X.indices[~nan], weights=values[~nan], minlength=X.shape[1])
        n_observed = X.shape[0] - np.bincount(cols, minlength=X.shape[1])
    else:
        values, cols = X, np.nonzero(nan)[1]
        observed = np.where(nan, 0.0, X).sum(axis=0)
        n_observed = X.shape[0] - nan.sum(axis=0)
    empty = np.flatnonzero(n_observed == 0)
    if len(empty):
        raise ValueError(
            f"{arff_path}: feature {names[empty[0]]!r} has no observed value to impute from"
        )
    values[nan] = (observed / n_observed)[cols]
    return X
