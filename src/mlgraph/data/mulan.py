"""MULAN multi-label datasets: an ARFF file plus an XML file that names the label attributes.

Labels are found BY NAME and kept in the order of the XML file, wherever they sit in the
ARFF file (slashdot has them first, yeast and enron list them in another order). All other
attributes are features, except the ``drop`` list (identifiers such as genbase's
``protein``) and string and date attributes (dropped with a warning: free text and time
stamps are no features for these methods).

Feature encoding: numeric attributes as they are; nominal attributes with at most
two values as their 0-based code in the declared list (genbase ``{YES,NO}``: YES=0, NO=1);
nominal attributes with more values as one-hot columns named ``attr=value`` -- dense files
only, a sparse file with such an attribute must drop it.

Without an XML file and without ``n_labels``, a MEKA header gives the labels: MEKA writes the
label count into the relation name, ``@relation 'SLASHDOT-F: -C 22'``: the first 22 attributes
are the labels (``-C -22``: the last 22). Weka appends every filter run on the file to that name
(``...: -C 75-weka.filters.unsupervised.attribute.Reorder-R76-last,first-75``); instance filters
leave the attributes alone, ``Reorder`` is followed, any other attribute filter is an error
(the count would no longer say where the labels are).

Nominal feature attributes are recorded in ``nominal_groups``: for each, the columns that encode
it (one column of codes, or its one-hot columns), so that a distance can treat the attribute as
one (Weka's: 0 when equal, 1 otherwise; see :mod:`mlgraph.methods.weka`).

Missing feature values (``?``) are an error naming the file, line and attribute, imputed on
request (``missing="zero"`` or ``"mean"``), or kept as NaN (``missing="keep"``, for methods with
rules of their own, e.g. Weka's distance); a missing label is always an error. Every problem is
an :class:`~mlgraph.data.decompress.ArffError` that names the file and never quotes its content.

Notes that leave the data as read are warnings of class :class:`~mlgraph.data.arff.DataWarning`,
one line each, at most one of a kind per load:

- :class:`UnlistedLabelWarning`: an attribute the XML file does not list is a feature (as in
  MULAN), but a binary one (nominal ``{0,1}``, or numeric with only 0 and 1) that sits between two
  listed labels in the ARFF order, or next to the first or last of them, is likely a label left
  out of the XML. Next to the labels, a run of such attributes is named when it is at most half
  as long as the list of labels (at least one attribute): a longer run is taken for a block of
  binary features (bibtex's 1836 words, flags' five {0,1} features before its seven labels).
- :class:`ConstantFeatureWarning`: how many features have one value over all rows read (they
  are kept; they carry no information).
"""

from __future__ import annotations

import hashlib
import itertools
import re
import warnings
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from xml.parsers import expat

import numpy as np
import scipy.sparse as sp

from mlgraph.data.arff import (
    ArffData,
    ArffError,
    Attribute,
    DataWarning,
    data_row_line,
    parse_arff,
    raise_at,
    read_bytes,
    show,
)

MissingPolicy = Literal["error", "zero", "mean", "keep"]
MISSING_POLICIES = ("error", "zero", "mean", "keep")
# MEKA's label count in the relation name: `NAME: ... -C n ...` (n < 0: the last |n|).
_MEKA_COUNT = re.compile(r"(?:^|\s)-C\s*(-?\d+)")
_WEKA_FILTER = "-weka.filters."

LABELS_NAMESPACE = "http://mulan.sourceforge.net/labels"
_LABEL_TAGS = (f"{{{LABELS_NAMESPACE}}}label", "label")
_ROOT_TAGS = (f"{{{LABELS_NAMESPACE}}}labels", "labels")


class UnlistedLabelWarning(DataWarning):
    """Binary attributes among or next to the labels of a MULAN XML file are not listed in it and
    are read as features (see the module docstring)."""


class ConstantFeatureWarning(DataWarning):
    """Some features have one value over every row read."""


@dataclass(frozen=True, eq=False)
class MultiLabelDataset:
    """Features ``X`` (n x d; dense ndarray or CSR, float64) and labels ``Y`` (n x q int8, 0/1).

    ``sha256`` is the digest of the ARFF file exactly as stored (e.g. the .gz), ``source``
    its path. ``nominal_groups`` lists, per nominal feature attribute, the columns of X that
    encode it (empty: every feature numeric). Arrays make value equality meaningless, hence
    ``eq=False``.
    """

    name: str
    X: np.ndarray | sp.csr_matrix
    Y: np.ndarray
    feature_names: tuple[str, ...]
    label_names: tuple[str, ...]
    sha256: str
    source: str
    nominal_groups: tuple[tuple[int, ...], ...] = ()

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
    source = str(xml_path)
    try:
        root = ET.fromstring(read_bytes(xml_path))
    except ET.ParseError as exc:
        line, column = exc.position
        raise ArffError(
            f"not a well-formed MULAN label file ({expat.ErrorString(exc.code)})",
            source=source,
            line=line,
            column=column + 1,
        ) from None
    if root.tag not in _ROOT_TAGS:
        raise ArffError(f'the root element is not <labels xmlns="{LABELS_NAMESPACE}">', source=source)
    names = []
    for element in root.iter():
        if element.tag in _LABEL_TAGS:
            if "name" not in element.attrib:
                raise ArffError("a <label> element has no name attribute", source=source)
            names.append(element.attrib["name"])
    if not names:
        raise ArffError("no <label> elements", source=source)
    repeated = [name for name, count in Counter(names).items() if count > 1]
    if repeated:
        raise ArffError(f"label(s) listed more than once: {_names(repeated)}", source=source)
    return names


def load_mulan(
    arff_path: str | Path,
    xml_path: str | Path | None = None,
    n_labels: int | None = None,
    label_location: Literal["first", "last"] = "last",
    drop: Iterable[str] = (),
    name: str | None = None,
    missing: MissingPolicy = "error",
) -> MultiLabelDataset:
    """Load a MULAN dataset.

    Labels are the attributes named in ``xml_path`` (XML order); without XML the ``n_labels``
    attributes at ``label_location``; without either, those of the MEKA header (``-C n`` in
    the relation name, see the module docstring). Label attributes must be nominal {0,1} or
    numeric 0/1 and are converted by value. ``drop`` names attributes to leave out.
    ``missing``: a missing feature value (``?``) is an error (``"error"``), 0 (``"zero"``),
    the mean of its feature over ALL rows (``"mean"``, test rows included: use it for
    exploration only), or NaN (``"keep"``); an infinite feature value is always an error.
    """
    _check_policy(missing)
    arff_path = Path(arff_path)
    source = str(arff_path)
    raw = read_bytes(arff_path)
    parsed = parse_arff(raw, source)
    if parsed.data.shape[0] == 0:
        raise ArffError("no data rows (the @data section is empty)", source=source)
    label_idx = _label_indices(parsed, source, xml_path, n_labels, label_location)
    feature_idx = _feature_indices(parsed, source, label_idx, [drop] if isinstance(drop, str) else list(drop))

    def locate(row: int, attribute: int) -> tuple[int | None, int]:
        return data_row_line(raw, row, source), attribute + 1

    X, feature_names, feature_attribute = _features(parsed, source, feature_idx)
    X = check_missing(X, feature_names, missing, source, lambda row, col: locate(row, feature_attribute[col]))
    Y = _labels(parsed, source, label_idx, locate)
    # notes on a dataset that loads (one of each kind at most)
    if xml_path is not None:
        warn_unlisted_labels(parsed, source, xml_path, label_idx, feature_idx)
    warn_constant_features(X, source)
    return MultiLabelDataset(
        name=name or _stem(arff_path),
        X=X,
        Y=Y,
        feature_names=tuple(feature_names),
        label_names=tuple(parsed.attributes[j].name for j in label_idx),
        sha256=hashlib.sha256(raw).hexdigest(),
        source=source,
        nominal_groups=nominal_groups(parsed, feature_attribute),
    )


def nominal_groups(parsed: ArffData, column_attribute: list[int]) -> tuple[tuple[int, ...], ...]:
    """For each nominal attribute among the feature columns, its columns (in column order)."""
    groups: dict[int, list[int]] = {}
    for column, j in enumerate(column_attribute):
        if parsed.attributes[j].kind == "nominal":
            groups.setdefault(j, []).append(column)
    return tuple(tuple(cols) for cols in groups.values())


def _check_policy(missing: str) -> None:
    if missing not in MISSING_POLICIES:
        raise ValueError(f"missing={missing!r}: expected one of {', '.join(MISSING_POLICIES)}")


def _stem(path: Path) -> str:
    """``scene.arff.gz`` -> ``scene``."""
    return path.name.removesuffix(".gz").removesuffix(".arff")


def _names(names: list[str], limit: int = 20) -> str:
    """A few names for a message."""
    return ", ".join(show(n) for n in names[:limit]) + (" ..." if len(names) > limit else "")


def _label_indices(
    parsed: ArffData,
    source: str,
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
            raise ArffError(
                f"{len(absent)} label(s) of {xml_path} are not attributes of this file: " + _names(absent),
                source=source,
            )
        if n_labels is not None and n_labels != len(labels):
            raise ValueError(f"n_labels={n_labels} but {xml_path} names {len(labels)} labels")
        return [position[label] for label in labels]
    if n_labels is None:
        from_header = meka_label_indices(parsed.relation, n_attributes, source)
        if from_header is None:
            raise ArffError(
                "give the MULAN XML file or n_labels to identify the labels (the relation "
                "name has no MEKA '-C n' option)",
                source=source,
            )
        return from_header
    if not 0 < n_labels < n_attributes:
        raise ArffError(f"n_labels={n_labels} must lie in 1..{n_attributes - 1}", source=source)
    if label_location == "first":
        return list(range(n_labels))
    if label_location == "last":
        return list(range(n_attributes - n_labels, n_attributes))
    raise ValueError(f"label_location={label_location!r}: expected 'first' or 'last'")


def meka_label_indices(relation: str, n_attributes: int, source: str = "<string>") -> list[int] | None:
    """Label attribute indices from a MEKA relation name ``'NAME: -C n ...'`` (None: no ``-C``).

    ``n > 0``: the first n attributes, ``n < 0``: the last -n, as MEKA wrote the file; the
    Weka filters appended to the name since then are followed: instance filters keep the
    attributes, ``Reorder -R range`` permutes them, any other filter is an error.
    """
    _, colon, options = relation.partition(":")
    match = _MEKA_COUNT.search(options) if colon else None
    if match is None:
        return None
    count = int(match.group(1))
    if not 0 < abs(count) < n_attributes:
        raise ArffError(
            f"the MEKA header gives -C {count}, the file has {n_attributes} attributes",
            source=source,
        )
    labels = list(range(count)) if count > 0 else list(range(n_attributes + count, n_attributes))
    order = list(range(n_attributes))  # position -> attribute as MEKA wrote the file
    for applied in options[match.end() :].split(_WEKA_FILTER)[1:]:
        name, _, opts = applied.partition("-")
        if ".instance." in f".{name}":
            continue
        if name != "unsupervised.attribute.Reorder" or not opts.startswith("R"):
            raise ArffError(
                f"the MEKA header's -C {count} precedes an attribute filter other than "
                "Reorder, which may have moved the labels; give the MULAN XML file or n_labels",
                source=source,
            )
        order = _reorder(order, opts[1:], source)
    where = {attribute: position for position, attribute in enumerate(order)}
    return [where[label] for label in labels]


def _reorder(order: list[int], spec: str, source: str) -> list[int]:
    """Weka's Reorder: the new attributes are the old ones at the 1-based ``spec`` positions
    (``76-last,first-75``; ``a-b`` with a > b runs backwards); all must be kept, once each."""
    n = len(order)

    def index(token: str) -> int:
        value = {"first": 1, "last": n}.get(token.strip().lower())
        if value is None and token.strip().isdigit():
            value = int(token)
        if value is None or not 1 <= value <= n:
            raise ArffError("the MEKA header's Reorder range is not understood", source=source)
        return value - 1

    positions: list[int] = []
    for part in spec.split(","):
        ends = part.split("-")
        if len(ends) > 2:
            raise ArffError("the MEKA header's Reorder range is not understood", source=source)
        lo, hi = index(ends[0]), index(ends[-1])
        positions += range(lo, hi + 1) if hi >= lo else range(lo, hi - 1, -1)
    if sorted(positions) != list(range(n)):
        raise ArffError(
            "the MEKA header's Reorder drops or repeats attributes; give the MULAN XML file or n_labels",
            source=source,
        )
    return [order[k] for k in positions]


def _feature_indices(parsed: ArffData, source: str, label_idx: list[int], drop: list[str]) -> list[int]:
    """Attribute indices of the features: not labels, not dropped, not strings or dates."""
    position = {a.name: j for j, a in enumerate(parsed.attributes)}
    unknown = [d for d in drop if d not in position]
    if unknown:
        raise ArffError(f"cannot drop {_names(unknown)}: no such attribute", source=source)
    labels = set(label_idx)
    dropped_labels = [d for d in drop if position[d] in labels]
    if dropped_labels:
        raise ArffError(f"cannot drop label attribute(s) {_names(dropped_labels)}", source=source)
    excluded = labels | {position[d] for d in drop}
    candidates = [j for j in range(len(parsed.attributes)) if j not in excluded]
    unusable = [j for j in candidates if parsed.attributes[j].kind in ("string", "date")]
    if unusable:
        names = _names([parsed.attributes[j].name for j in unusable])
        warnings.warn(
            f"{source}: string/date attribute(s) {names} are not features; dropped", DataWarning, stacklevel=3
        )
    return [j for j in candidates if j not in set(unusable)]


Locate = Callable[[int, int], tuple[int | None, int | None]]


def _labels(parsed: ArffData, source: str, label_idx: list[int], locate: Locate) -> np.ndarray:
    """The n x q 0/1 label matrix; nominal labels are converted by value, not by code."""
    block = parsed.data[:, label_idx]
    block = block.toarray() if sp.issparse(block) else block
    Y = np.empty(block.shape, dtype=np.int8)
    for k, j in enumerate(label_idx):
        attribute = parsed.attributes[j]
        column = block[:, k]
        missing = np.flatnonzero(np.isnan(column))
        if len(missing):
            raise_at(
                f"label {show(attribute.name)} is missing (?); labels must be 0 or 1",
                source,
                locate,
                int(missing[0]),
                j,
            )
        if attribute.kind == "nominal":
            column = _binary_values(attribute, source)[column.astype(np.int64)]
        elif attribute.kind != "numeric":
            raise ArffError(
                f"label {show(attribute.name)} is a {attribute.kind} attribute; "
                "labels must be nominal {0,1} or numeric 0/1",
                source=source,
            )
        bad = np.flatnonzero((column != 0) & (column != 1))
        if len(bad):
            raise_at(
                f"label {show(attribute.name)} has a value other than 0 or 1", source, locate, int(bad[0]), j
            )
        Y[:, k] = column
    return Y


def _binary_values(attribute: Attribute, source: str) -> np.ndarray:
    """The numeric value (0 or 1) of each declared value of a nominal label."""
    try:
        values = np.array([float(v) for v in attribute.values])
    except ValueError:
        values = np.array([np.nan])
    if np.isin(values, (0.0, 1.0)).all():
        return values
    raise ArffError(
        f"label {show(attribute.name)} declares values other than 0 and 1; "
        "labels must be nominal {0,1} or numeric 0/1",
        source=source,
    )


def unlisted_labels(parsed: ArffData, label_idx: list[int], feature_idx: list[int]) -> list[int]:
    """Feature attributes (ARFF order) that look like labels left out of the label list: binary
    ones (nominal ``{0,1}``, numeric with only 0 and 1) between the first and last label in the
    ARFF order, and each run of binary features directly before or after them that is at most
    ``max(1, len(label_idx) // 2)`` long (a longer run is a block of binary features)."""
    features = set(feature_idx)
    lo, hi = min(label_idx), max(label_idx)
    limit = max(1, len(label_idx) // 2)
    inside = [j for j in range(lo + 1, hi) if j in features]
    # one past the limit on each side: a run that long is not reported
    before = list(range(lo - 1, max(lo - limit - 2, -1), -1))
    after = list(range(hi + 1, min(hi + limit + 2, len(parsed.attributes))))
    binary = _binary_attributes(parsed, [j for j in inside + before + after if j in features])
    found = [j for j in inside if j in binary]
    for side in (before, after):
        run = list(itertools.takewhile(binary.__contains__, side))
        if len(run) <= limit:
            found += run
    return sorted(found)


def _binary_attributes(parsed: ArffData, attributes: list[int]) -> set[int]:
    """Those of ``attributes`` that are nominal ``{0,1}`` (in any order) or numeric with every
    value 0 or 1 (vectorised over the data: a dense block, or a sparse one's stored values)."""
    binary = set()
    numeric = []
    for j in attributes:
        attribute = parsed.attributes[j]
        if attribute.kind == "numeric":
            numeric.append(j)
        elif attribute.kind == "nominal" and sorted(_numbers(attribute.values)) == [0.0, 1.0]:
            binary.add(j)
    if numeric:
        block = parsed.data[:, numeric]
        if sp.issparse(block):
            block = sp.csr_matrix(block)
            other = (block.data != 0) & (block.data != 1)  # NaN (missing) too
            is_binary = np.bincount(block.indices[other], minlength=len(numeric)) == 0
        else:
            is_binary = ((block == 0) | (block == 1)).all(axis=0)
        binary.update(j for j, ok in zip(numeric, is_binary, strict=True) if ok)
    return binary


def _numbers(values: tuple[str, ...] | None) -> list[float]:
    """Declared nominal values as numbers ([] when one is not a number)."""
    try:
        return [float(v) for v in values or ()]
    except ValueError:
        return []


def warn_unlisted_labels(
    parsed: ArffData,
    source: str,
    xml_path: str | Path,
    label_idx: list[int],
    feature_idx: list[int],
    stacklevel: int = 2,
) -> None:
    """One :class:`UnlistedLabelWarning` naming the attributes of :func:`unlisted_labels`."""
    unlisted = unlisted_labels(parsed, label_idx, feature_idx)
    if unlisted:
        names = _names([parsed.attributes[j].name for j in unlisted])
        if len(unlisted) == 1:
            what = f"binary attribute {names} sits", "is", "it is read as a feature", "it a label", "it"
        else:
            what = f"binary attributes {names} sit", "are", "they are read as features", "them labels", "each"
        warnings.warn(
            f"{source}: {what[0]} among or next to the labels of {xml_path} but {what[1]} not listed "
            f'there, so {what[2]}, as MULAN does; to make {what[3]}, add <label name="..."/> for '
            f"{what[4]} to {xml_path}",
            UnlistedLabelWarning,
            stacklevel=stacklevel + 1,
        )


def constant_features(X: np.ndarray | sp.spmatrix) -> np.ndarray:
    """Boolean mask of the columns of X with one value over all rows (NaN ignored; a column with
    no value but NaN counts as constant). Sparse X is read through its stored entries (one pass
    over them, no dense copy): a column with fewer entries than rows also holds 0."""
    n, d = X.shape
    if sp.issparse(X):
        X = X if X.format in ("csr", "csc", "coo") else X.tocsr()
        data = X.data
        columns = X.indices if X.format == "csr" else X.col if X.format == "coo" else None
        if columns is None:  # CSC: the column of each entry from indptr
            columns = np.repeat(np.arange(d), np.diff(X.indptr))
        hi, lo = np.full(d, -np.inf), np.full(d, np.inf)
        np.fmax.at(hi, columns, data)
        np.fmin.at(lo, columns, data)
        zeros = np.bincount(columns, minlength=d) < n  # implicit zeros
        hi[zeros], lo[zeros] = np.fmax(hi[zeros], 0.0), np.fmin(lo[zeros], 0.0)
    else:
        X = np.asarray(X)
        if n == 0:
            return np.ones(d, dtype=bool)
        hi, lo = np.fmax.reduce(X, axis=0), np.fmin.reduce(X, axis=0)
        hi, lo = np.where(np.isnan(hi), -np.inf, hi), np.where(np.isnan(lo), np.inf, lo)
    return (hi == lo) | (hi < lo)  # hi < lo: no value but NaN


def warn_constant_features(X: np.ndarray | sp.spmatrix, where: str, stacklevel: int = 2) -> None:
    """One :class:`ConstantFeatureWarning` when features of X are constant over its rows;
    ``where`` names the file(s) read."""
    n_constant = int(constant_features(X).sum()) if X.shape[1] else 0
    if n_constant:
        warnings.warn(
            f"{where}: {n_constant} of {X.shape[1]} features are constant over all {X.shape[0]} rows; "
            "they are kept but carry no information (selectors rank them last, standardisation "
            "gives them no weight)",
            ConstantFeatureWarning,
            stacklevel=stacklevel + 1,
        )


def _features(
    parsed: ArffData, source: str, feature_idx: list[int]
) -> tuple[np.ndarray | sp.csr_matrix, list[str], list[int]]:
    """The feature matrix, its column names and each column's attribute index; nominal
    attributes with more than two values become one-hot columns."""
    attributes = parsed.attributes

    def is_one_hot(j: int) -> bool:
        return attributes[j].kind == "nominal" and len(attributes[j].values) > 2

    one_hot = [attributes[j].name for j in feature_idx if is_one_hot(j)]
    if parsed.sparse:
        if one_hot:
            raise ArffError(
                f"nominal feature(s) {_names(one_hot, 10)} have more than two values; "
                "one-hot encoding is done for dense data only, so drop them (drop=[...])",
                source=source,
            )
        X = sp.csr_matrix(parsed.data[:, feature_idx])
        X.sort_indices()
        return X, [attributes[j].name for j in feature_idx], list(feature_idx)
    blocks, names, of = [], [], []
    for expand, group in itertools.groupby(feature_idx, key=is_one_hot):
        group = list(group)
        if not expand:
            blocks.append(parsed.data[:, group])
            names += [attributes[j].name for j in group]
            of += group
            continue
        for j in group:
            blocks.append(_one_hot(parsed.data[:, j], len(attributes[j].values)))
            names += [f"{attributes[j].name}={value}" for value in attributes[j].values]
            of += [j] * len(attributes[j].values)
    X = np.hstack(blocks) if blocks else np.empty((parsed.data.shape[0], 0))
    return X, names, of


def _one_hot(codes: np.ndarray, n_values: int) -> np.ndarray:
    """n x n_values indicator columns of nominal codes; a missing code gives a NaN row."""
    out = np.zeros((len(codes), n_values))
    present = ~np.isnan(codes)
    out[np.flatnonzero(present), codes[present].astype(np.int64)] = 1.0
    out[~present] = np.nan
    return out


def check_missing(
    X: np.ndarray | sp.csr_matrix,
    names: list[str],
    missing: MissingPolicy,
    source: str,
    locate: Locate,
) -> np.ndarray | sp.csr_matrix:
    """Apply the ``missing`` policy to the NaN of a feature matrix (in place): ``"error"``
    refuses them, ``"zero"`` puts 0, ``"mean"`` the mean of the feature's observed values
    (sparse zeros count), ``"keep"`` leaves them. An infinite value is always refused. ``locate(row, column)`` gives
    the (line, column) of a value in the file for the error."""
    _check_policy(missing)
    values = X.data if sp.issparse(X) else X
    nan = np.isnan(values)
    fatal = np.isinf(values) | (nan if missing == "error" else False)
    if fatal.any():
        row, col = _first_position(X, fatal)
        if np.isnan(X[row, col]):
            what = f"missing value (?) of feature {show(names[col])}; missing='zero' or 'mean' imputes"
        else:
            what = f"infinite value of feature {show(names[col])}"
        line, column = locate(row, col)
        raise ArffError(what, source=source, line=line, column=column)
    if not nan.any() or missing == "keep":
        return X
    if missing == "zero":
        values[nan] = 0.0
        if sp.issparse(X):
            X.eliminate_zeros()
        return X
    return _impute_mean(X, nan, names, source)


def _first_position(X: np.ndarray | sp.csr_matrix, mask: np.ndarray) -> tuple[int, int]:
    """(row, column) of the first True of ``mask`` in row-major order; ``mask`` is over X,
    or over X.data when X is sparse."""
    if not sp.issparse(X):
        row, col = np.argwhere(mask)[0]
        return int(row), int(col)
    pos = int(np.flatnonzero(mask)[0])
    return int(np.searchsorted(X.indptr, pos, side="right") - 1), int(X.indices[pos])


def _impute_mean(
    X: np.ndarray | sp.csr_matrix, nan: np.ndarray, names: list[str], source: str
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
        raise ArffError(
            f"feature {show(names[empty[0]])} has no observed value to impute from", source=source
        )
    values[nan] = (observed / n_observed)[cols]
    return X
