"""Multi-label data from a CSV table: the label columns are named by the caller, every other
column (but the ``drop`` list) is a numeric feature.

The first line is the header. A label column holds 0/1 (``0``, ``1``, ``0.0``, ``true``, ...);
a feature value left empty or written ``?``, ``NA`` or ``NaN`` is missing and follows the
``missing`` policy of :func:`mlgraph.data.mulan.check_missing`. The file may be compressed (gzip,
bzip2, xz or zip, detected by its first bytes). The result is the :class:`MultiLabelDataset` an
ARFF file gives, with the SHA-256 of the file as stored. Errors are :class:`ArffError` naming the file, the line
and column; line numbers count one record per line (a quoted field spanning lines shifts them).
"""

from __future__ import annotations

import csv
import hashlib
import io
import re
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pandas as pd

from mlgraph.data.arff import raise_at, show
from mlgraph.data.decompress import ArffError, decode_text, read_bytes
from mlgraph.data.mulan import MissingPolicy, MultiLabelDataset, check_missing, warn_constant_features
from mlgraph.data.registry import ChecksumError, find_file

__all__ = ["load_csv_dataset"]

MISSING_MARKS = ("", "?", "NA", "NaN", "nan")
_LABEL_VALUES = {"0": 0, "1": 1, "0.0": 0, "1.0": 1, "false": 0, "true": 1}
_PANDAS_LINE = re.compile(r"line (\d+)")


def load_csv_dataset(
    path: str | Path,
    label_columns: Iterable[str] | str,
    name: str | None = None,
    drop: Iterable[str] | str = (),
    sep: str = ",",
    missing: MissingPolicy = "error",
    sha256: str | None = None,
    data_dir: str | Path | None = None,
) -> MultiLabelDataset:
    """Load a multi-label CSV table; ``path`` is searched like an ARFF file (``data_dir``
    first, then :func:`mlgraph.data.registry.data_dirs`), ``sha256`` checked when given."""
    labels = [label_columns] if isinstance(label_columns, str) else list(label_columns)
    drop = [drop] if isinstance(drop, str) else list(drop)
    found = find_file(path, [data_dir] if data_dir else [])
    source = str(found)
    raw = read_bytes(found)
    digest = hashlib.sha256(raw).hexdigest()
    if sha256 and digest != sha256.lower():
        raise ChecksumError(f"{source}: SHA-256 {digest}, expected {sha256.lower()}")
    text = decode_text(raw, source)
    table = _read_table(text, sep, source)
    features = _columns(table, labels, drop, source)
    if table.empty:
        raise ArffError("no data rows", source=source)

    def locate(row: int, column: str) -> tuple[int | None, int]:
        return _row_line(text, row), table.columns.get_loc(column) + 1

    Y = np.column_stack([_label(table, c, source, locate) for c in labels]).astype(np.int8)
    X = np.column_stack([_feature(table, c, source, locate) for c in features] or [np.empty((len(table), 0))])
    X = check_missing(X, features, missing, source, lambda row, k: locate(row, features[k]))
    warn_constant_features(X, source)
    return MultiLabelDataset(
        name=name or Path(source).name.removesuffix(".gz").removesuffix(".csv"),
        X=X,
        Y=Y,
        feature_names=tuple(features),
        label_names=tuple(labels),
        sha256=digest,
        source=source,
    )


def _read_table(text: str, sep: str, source: str) -> pd.DataFrame:
    """All cells as text; the header must name distinct columns and every row match it."""
    reader = csv.reader(io.StringIO(text), delimiter=sep)
    try:
        _check_fields(reader, source)
    except csv.Error as exc:  # "field larger than field limit": no content in it
        raise ArffError(f"cannot be read as a table ({exc})", source=source, line=reader.line_num) from None
    try:
        return pd.read_csv(io.StringIO(text), sep=sep, dtype=str, keep_default_na=False, na_filter=False)
    except (pd.errors.ParserError, ValueError) as exc:  # quoting that csv and pandas read apart
        line = _PANDAS_LINE.search(str(exc))  # "... in line 5 ...": the line, not the text
        raise ArffError(
            "cannot be read as a table", source=source, line=int(line.group(1)) if line else None
        ) from None


def _check_fields(reader, source: str) -> None:
    """The header names distinct columns and every row has as many fields (pandas would pad
    a short row with empty values)."""
    header = next(reader, [])
    if not any(h.strip() for h in header):
        raise ArffError("no header row", source=source, line=1)
    for k, name in enumerate(header, 1):
        if not name.strip():
            raise ArffError("empty column name in the header", source=source, line=1, column=k)
        if name in header[: k - 1]:
            raise ArffError(f"column {show(name)} appears twice", source=source, line=1, column=k)
    for row in reader:
        if row and len(row) != len(header):
            what = "more" if len(row) > len(header) else "fewer"
            raise ArffError(
                f"a row has {what} fields than the header ({len(row)}, not {len(header)})",
                source=source,
                line=reader.line_num,
            )


def _columns(table: pd.DataFrame, labels: list[str], drop: list[str], source: str) -> list[str]:
    """The feature columns; every label and dropped column must exist, none both."""
    if not labels:
        raise ValueError("label_columns is empty: name the label columns")
    absent = [c for c in labels + drop if c not in table.columns]
    if absent:
        raise ArffError("no such column(s): " + ", ".join(show(c) for c in absent[:20]), source=source)
    both = set(labels) & set(drop)
    if both or len(set(labels)) != len(labels):
        raise ValueError(f"label_columns {labels} repeat a column or share one with drop {drop}")
    return [c for c in table.columns if c not in set(labels) | set(drop)]


def _label(table: pd.DataFrame, column: str, source: str, locate) -> np.ndarray:
    """A 0/1 label column."""
    codes = table[column].str.strip().str.lower().map(_LABEL_VALUES)
    bad = np.flatnonzero(codes.isna().to_numpy())
    if len(bad):
        raise_at(
            f"label column {show(column)}: a value is missing or not 0/1", source, locate, int(bad[0]), column
        )
    return codes.to_numpy(np.int8)


def _feature(table: pd.DataFrame, column: str, source: str, locate) -> np.ndarray:
    """A numeric feature column; the missing marks become NaN."""
    text = table[column].str.strip()
    absent = text.isin(MISSING_MARKS).to_numpy()
    values = pd.to_numeric(text.where(~absent), errors="coerce").to_numpy(np.float64)
    bad = np.flatnonzero(np.isnan(values) & ~absent)
    if len(bad):
        raise_at(
            f"feature column {show(column)}: the value is not a number", source, locate, int(bad[0]), column
        )
    return values


def _row_line(text: str, row: int) -> int | None:
    """1-based line of data row ``row`` (0-based): blank lines are skipped, as pandas does."""
    for lineno, line in enumerate(text.split("\n")[1:], 2):
        if line.strip():
            row -= 1
            if row < 0:
                return lineno
    return None
