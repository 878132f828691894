"""Dual-set data (paper 001): a table with two categorical targets, one label from each set.

:func:`load_dual_set` reads a CSV table with a header row (plain, or compressed with gzip, bzip2,
xz or zip: found by its first bytes, and decompressed with the bound of
:func:`mlgraph.data.decompress.decompress`) or a multi-target ARFF file (``.arff``, ``.arff.gz``;
read by :func:`mlgraph.data.arff.read_arff`, dense or sparse): two columns, chosen by name, are
the targets a and b, the ``drop`` columns are left out, every other column is a feature.  Each
target's classes are its distinct values: text sorted as text, numbers sorted as numbers and
named compactly (an ARFF target declared numeric with values −1/0/1 has classes ``-1``, ``0``,
``1``), an ARFF nominal target's values in declared order (declared values that never occur are
not classes).  ``y_a`` and ``y_b`` hold class indices into ``classes_a`` and ``classes_b``.
ARFF features: numeric and date attributes as numbers; nominal ones as the MULAN loader encodes
them, the 0-based code when at most two values are declared, else one 0/1 column ``attr=value``
per declared value; string attributes only in ``drop`` (the reader keeps codes, not text).
Problems (missing file, missing column, text or missing values in a feature) raise errors that
name the file and the column.

:func:`frequency_gender` derives the paper's adapted Frequency-Gender data from the public
"Gender Recognition by Voice" table (``voice.csv.gz``, 3,168 rows, 20 features, ``label``):

1. drop the exact duplicate rows (2 rows repeat earlier ones)            -> 3,166 rows;
2. drop the duplicated column: ``centroid`` equals ``meanfreq`` in every row (found by comparing
   all feature columns; the later one of an identical pair is dropped)   -> 19 distinct features;
3. target b = gender, the ``label`` column: classes (female, male), 1,583 each;
4. target a = 5 frequency classes, the quintiles of ``meanfreq`` over the 3,166 rows: edges
   ``numpy.quantile(meanfreq, [.2, .4, .6, .8])`` (linear interpolation), class
   ``Q{k}`` = number of edges ≤ meanfreq, plus one.  The 3,166 values are distinct and each edge
   is a data value (the order statistics 633, 1266, 1899, 2532, 0-based), which goes to the upper
   class, so Q1..Q5 hold 633, 633, 633, 633, 634 rows;
5. ``meanfreq`` itself is removed from the features (``keep_frequency_feature=False``, default):
   class a is a step function of it, so keeping it would make set a a one-feature threshold
   problem and leak the target.  The remaining 18 features still carry the information
   (``median``, ``Q25``, ``Q75`` correlate strongly with it), so the task is learnable, not trivial.

Result: 3,166 × 18 features, 5 × 2 classes (the paper reports 3,157 × 19; the 9 rows it has fewer
cannot be identified from the table, and its 19 features match ``keep_frequency_feature=True``).
Everything is deterministic: no randomness is involved.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

import numpy as np
import pandas as pd

from mlgraph.data.arff import read_arff
from mlgraph.data.decompress import decompress, read_bytes
from mlgraph.data.registry import ChecksumError, find_file, sha256_file

__all__ = ["VOICE_SHA256", "DualSetDataset", "frequency_gender", "load_dual_set"]

#: SHA-256 of ``voice.csv.gz`` as published in ``shared/datasets/MANIFEST.tsv``.
VOICE_SHA256 = "1ffaef47c5c80fd038db5d8c6fae49acd4d88bb947bb9b17535ab7e60b52736c"


@dataclass(frozen=True, eq=False)
class DualSetDataset:
    """Features ``X`` (n × d float64) and class indices ``y_a``, ``y_b`` (n, int64) into
    ``classes_a``, ``classes_b`` (the sorted distinct target values, as strings).

    ``sha256`` is the digest of the file as stored (e.g. the .gz), ``source`` its path; ``info``
    records what the loader removed or derived (duplicate rows and columns, class edges).
    """

    name: str
    X: np.ndarray
    y_a: np.ndarray
    y_b: np.ndarray
    feature_names: tuple[str, ...]
    classes_a: tuple[str, ...]
    classes_b: tuple[str, ...]
    sha256: str
    source: str
    info: Mapping = field(default_factory=lambda: MappingProxyType({}))

    @property
    def Y(self) -> np.ndarray:
        """n × 2 class indices, column 0 for set a and column 1 for set b (the DSML convention)."""
        return np.column_stack([self.y_a, self.y_b])

    @property
    def n_samples(self) -> int:
        return int(self.X.shape[0])

    @property
    def n_features(self) -> int:
        return int(self.X.shape[1])

    @property
    def n_classes(self) -> tuple[int, int]:
        return len(self.classes_a), len(self.classes_b)

    def class_counts(self) -> pd.DataFrame:
        """Contingency table of the two targets (rows: classes_a, columns: classes_b)."""
        table = np.zeros(self.n_classes, dtype=np.int64)
        np.add.at(table, (self.y_a, self.y_b), 1)
        return pd.DataFrame(table, index=list(self.classes_a), columns=list(self.classes_b))


def _read_csv(path: Path) -> pd.DataFrame:
    content = decompress(read_bytes(path), str(path))  # bounded
    try:
        df = pd.read_csv(io.BytesIO(content), compression=None)
    except Exception as exc:  # pandas raises parser, unicode, gzip and OS errors
        raise ValueError(f"{path}: cannot be read as a CSV table with a header row ({exc})") from exc
    if df.shape[1] == 0:
        raise ValueError(f"{path}: the table has no column")
    return df


FORMATS = ("auto", "csv", "arff")


def _file_format(path: Path, file_format: str) -> str:
    """``csv`` or ``arff``: as given, or (``auto``) ``arff`` for ``*.arff`` and ``*.arff.gz``."""
    if file_format not in FORMATS:
        raise ValueError(f"file_format={file_format!r} must be one of {FORMATS}")
    if file_format != "auto":
        return file_format
    return "arff" if path.name.lower().removesuffix(".gz").endswith(".arff") else "csv"


def _read_arff(path: Path, strings_allowed: Iterable[str]) -> pd.DataFrame:
    """One column per attribute: numeric and date attributes as float64, nominal ones as a
    pandas Categorical of the declared values (``?`` missing), string ones (allowed only in
    ``strings_allowed``, i.e. dropped) as their codes."""
    parsed = read_arff(path)
    data = parsed.data.toarray() if parsed.sparse else parsed.data
    columns = {}
    for j, attribute in enumerate(parsed.attributes):
        values = data[:, j]
        if attribute.kind == "nominal":
            codes = np.where(np.isnan(values), -1, values).astype(np.int64)
            columns[attribute.name] = pd.Categorical.from_codes(codes, categories=list(attribute.values))
        elif attribute.kind == "string" and attribute.name not in strings_allowed:
            raise ValueError(
                f"{path}: attribute {attribute.name!r} is an ARFF string attribute, which "
                "the reader keeps as codes, not text: declare it nominal, or list it in drop=..."
            )
        else:
            columns[attribute.name] = values
    return pd.DataFrame(columns)


def _nominal_features(df: pd.DataFrame, features: list[str]) -> tuple[pd.DataFrame, list[str]]:
    """ARFF nominal features as numbers (:mod:`mlgraph.data.mulan`'s encoding): the code when at
    most two values are declared, else one 0/1 column ``attr=value`` per declared value."""
    out, names = {}, []
    for column in features:
        series = df[column]
        if not isinstance(series.dtype, pd.CategoricalDtype):
            out[column] = series
            names.append(column)
            continue
        codes = series.cat.codes.to_numpy().astype(np.float64)
        codes[codes < 0] = np.nan  # missing stays missing: _features names it
        if len(series.cat.categories) <= 2:
            out[column] = codes
            names.append(column)
            continue
        for k, value in enumerate(series.cat.categories):
            out[f"{column}={value}"] = np.where(np.isnan(codes), np.nan, codes == k)
            names.append(f"{column}={value}")
    return pd.DataFrame(out, index=df.index), names


def _duplicate_columns(df: pd.DataFrame, candidates: Iterable[str]) -> dict[str, str]:
    """{later column: earlier column it equals in every row}, over ``candidates`` in order."""
    found: dict[str, str] = {}
    kept: list[str] = []
    for column in candidates:
        twin = next((k for k in kept if df[column].equals(df[k])), None)
        if twin is None:
            kept.append(column)
        else:
            found[column] = twin
    return found


def _encode_target(df: pd.DataFrame, column: str, role: str, path: Path) -> tuple[np.ndarray, tuple]:
    values = df[column]
    if values.isna().any():
        rows = np.flatnonzero(values.isna().to_numpy())[:5].tolist()
        raise ValueError(
            f"{path}: target column {column!r} ({role}) has {int(values.isna().sum())} "
            f"missing value(s), first at data rows {rows}"
        )
    if isinstance(values.dtype, pd.CategoricalDtype):  # ARFF nominal: declared order
        values = values.cat.remove_unused_categories()
        return values.cat.codes.to_numpy().astype(np.int64), tuple(str(c) for c in values.cat.categories)
    if pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values):
        classes, codes = np.unique(values.to_numpy(dtype=np.float64), return_inverse=True)
        return codes.astype(np.int64), tuple(np.format_float_positional(c, trim="-") for c in classes)
    classes, codes = np.unique(values.astype(str).to_numpy(), return_inverse=True)
    return codes.astype(np.int64), tuple(str(c) for c in classes)


def _features(df: pd.DataFrame, columns: list[str], path: Path) -> np.ndarray:
    for column in columns:
        series = df[column]
        if not (pd.api.types.is_numeric_dtype(series) or pd.api.types.is_bool_dtype(series)):
            bad = pd.to_numeric(series, errors="coerce").isna() & series.notna()
            row = int(np.flatnonzero(bad.to_numpy())[0]) if bad.any() else 0
            raise ValueError(
                f"{path}: feature column {column!r} is not numeric (value {series.iloc[row]!r} "
                f"in data row {row}); list it in drop=... or encode it first"
            )
        if series.isna().any():
            raise ValueError(
                f"{path}: feature column {column!r} has {int(series.isna().sum())} missing "
                f"value(s); impute or drop them first"
            )
    X = df[columns].to_numpy(dtype=np.float64)
    if not np.isfinite(X).all():
        bad = columns[int(np.flatnonzero(~np.isfinite(X).all(axis=0))[0])]
        raise ValueError(f"{path}: feature column {bad!r} has infinite values")
    return X


def load_dual_set(
    path: str | Path,
    target_a: str,
    target_b: str,
    drop: Iterable[str] = (),
    derive: Callable[[pd.DataFrame], pd.DataFrame] | None = None,
    *,
    name: str | None = None,
    drop_duplicate_rows: bool = False,
    drop_duplicate_columns: bool = False,
    sha256: str | None = None,
    data_dir: str | Path | None = None,
    file_format: str = "auto",
) -> DualSetDataset:
    """Load a dual-set dataset from a CSV file with a header row or a multi-target ARFF file
    (``file_format``: ``auto`` reads ``*.arff``/``*.arff.gz`` as ARFF, anything else as CSV).

    ``path`` is a file or a name found by :func:`mlgraph.data.registry.find_file` (``data_dir``
    first, then ``$MLGRAPH_DATA_DIR`` and ``shared/datasets``).  Steps, in order: read; drop exact
    duplicate rows (``drop_duplicate_rows``, the first occurrence kept); ``derive(df)`` -> df (may
    add or replace columns, e.g. a derived target; a column it adds is a feature unless it is a
    target or in ``drop``); drop columns equal in every row to an earlier non-target column,
    dropped ones included (``drop_duplicate_columns``); encode the targets; the rest, minus
    ``drop``, are the features, in file order (ARFF nominal ones encoded as in the module
    docstring).  ``sha256`` (if given) must match the file, else :class:`ChecksumError`.
    """
    path = find_file(path, [data_dir] if data_dir else [])
    digest = sha256_file(path)
    if sha256 and digest != sha256.lower():
        raise ChecksumError(f"{path}: SHA-256 {digest}, expected {sha256.lower()}")
    drop = tuple(drop)
    if _file_format(Path(path), file_format) == "arff":
        df = _read_arff(Path(path), strings_allowed=drop)
    else:
        df = _read_csv(path)
    info: dict = {"n_rows_read": int(df.shape[0])}
    if drop_duplicate_rows:
        duplicated = df.duplicated(keep="first")
        info["duplicate_rows"] = tuple(int(i) for i in np.flatnonzero(duplicated.to_numpy()))
        df = df.loc[~duplicated].reset_index(drop=True)
    if derive is not None:
        df = derive(df)
        if not isinstance(df, pd.DataFrame):
            raise TypeError(f"{path}: derive must return a pandas DataFrame, got {type(df).__name__}")
    if target_a == target_b:
        raise ValueError(f"{path}: target_a and target_b are the same column {target_a!r}")
    for column, role in [(target_a, "target_a"), (target_b, "target_b")] + [(c, "drop") for c in drop]:
        if column not in df.columns:
            raise ValueError(f"{path}: no column {column!r} ({role}); the columns are {list(df.columns)}")
    features = [c for c in df.columns if c not in {target_a, target_b, *drop}]
    if drop_duplicate_columns:
        # Compare with the dropped columns too: a copy of a dropped column must go as well.
        twins = _duplicate_columns(df, [c for c in df.columns if c not in {target_a, target_b}])
        info["duplicate_columns"] = dict(twins)
        features = [c for c in features if c not in twins]
    if not features:
        raise ValueError(f"{path}: no feature column is left after removing the targets and drop={drop}")
    y_a, classes_a = _encode_target(df, target_a, "target_a", path)
    y_b, classes_b = _encode_target(df, target_b, "target_b", path)
    df, features = _nominal_features(df, features)
    X = _features(df, features, path)
    return DualSetDataset(
        name=name or Path(path).name.split(".")[0],
        X=X,
        y_a=y_a,
        y_b=y_b,
        feature_names=tuple(str(c) for c in features),
        classes_a=classes_a,
        classes_b=classes_b,
        sha256=digest,
        source=str(path),
        info=MappingProxyType(info),
    )


def frequency_classes(values: np.ndarray, n_classes: int = 5) -> tuple[np.ndarray, np.ndarray]:
    """(class index 0..n_classes−1, inner edges): equal-frequency bins of ``values``; edges are
    ``numpy.quantile(values, k / n_classes)``, k = 1..n_classes−1; class = #edges ≤ value."""
    values = np.asarray(values, dtype=np.float64)
    edges = np.quantile(values, np.arange(1, n_classes) / n_classes)
    return np.searchsorted(edges, values, side="right").astype(np.int64), edges


def frequency_gender(
    path: str | Path = "voice.csv.gz",
    n_frequency_classes: int = 5,
    frequency_column: str = "meanfreq",
    keep_frequency_feature: bool = False,
    *,
    data_dir: str | Path | None = None,
    verify: bool = True,
) -> DualSetDataset:
    """Frequency-Gender (paper 001, Table 1) from the voice table; see the module docstring.

    Set a: ``n_frequency_classes`` equal-frequency classes of ``frequency_column`` (quintiles by
    default), named ``Q1`` (lowest) … ``Q5``; set b: gender.  ``verify`` checks the published
    SHA-256 when the file is the published one (name ``voice.csv.gz``).
    """
    if not (isinstance(n_frequency_classes, int) and n_frequency_classes >= 2):
        raise ValueError(f"n_frequency_classes={n_frequency_classes!r} must be an int >= 2")
    edges_box: list[np.ndarray] = []

    def derive(df: pd.DataFrame) -> pd.DataFrame:
        if frequency_column not in df.columns:
            raise ValueError(
                f"{path}: no column {frequency_column!r} (frequency_column); "
                f"the columns are {list(df.columns)}"
            )
        codes, edges = frequency_classes(df[frequency_column].to_numpy(), n_frequency_classes)
        edges_box.append(edges)
        width = len(str(n_frequency_classes))
        return df.assign(frequency_class=[f"Q{c + 1:0{width}d}" for c in codes])

    published = Path(path).name == "voice.csv.gz"
    data = load_dual_set(
        path,
        "frequency_class",
        "label",
        drop=() if keep_frequency_feature else (frequency_column,),
        derive=derive,
        name="frequency_gender",
        drop_duplicate_rows=True,
        drop_duplicate_columns=True,
        sha256=VOICE_SHA256 if (verify and published) else None,
        data_dir=data_dir,
    )
    info = dict(data.info)
    info["frequency_edges"] = tuple(float(e) for e in edges_box[0])
    info["frequency_column"] = frequency_column
    return DualSetDataset(**{**data.__dict__, "info": MappingProxyType(info)})
