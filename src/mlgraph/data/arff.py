"""A fast reader for Weka ARFF files, dense and sparse, plain or compressed (gzip, bzip2, xz, zip).

Compressed input is decompressed in steps and refused once it exceeds 50 times the compressed
file's size (at least 64 MB; ``MLGRAPH_MAX_DECOMPRESSED_MB`` sets another bound), so that a
small file cannot expand to exhaust the memory of a shared node (:mod:`mlgraph.data.decompress`).

Every value becomes a float64: numbers as they are, nominal values as the 0-based index of
the value in the declared list (``{YES,NO}``: YES=0, NO=1), string values as a code in order
of first appearance, dates as POSIX seconds (UTC), and ``?`` as NaN. In sparse rows
(``{3 0.25,1001 1}``) an omitted entry is 0, which for a nominal attribute is its FIRST
declared value.

A nominal attribute whose declared values are all plain numbers (``{0,1}``) matches data
values by number, so ``1.0`` is accepted for ``1``; other nominal values must match exactly.
String and date attributes are supported in dense data only, dates in ISO-8601 only (the
declared Java date format is not interpreted).

Grammar (Weka's): keywords and type names in any case (``@ATTRIBUTE x REAL``); names and
values quoted with ``'`` or ``"`` (backslash escapes undone) or bare. A bare name runs to the
next blank, ``{``, ``}`` or ``%``, a bare value to the next ``,`` (blanks around it dropped);
both are kept verbatim, quotes and backslashes after the first character included:
``@attribute TAG_m\\'usica {0,1}`` declares ``TAG_m\\'usica``, as the MULAN XML spells it.
``%`` starts a comment anywhere outside quotes; CRLF and CR line ends are accepted.

Errors are :class:`ArffError` naming the file, line and, for a data value, its column and
attribute; they never quote the file's content, since messages are stored in shared tracking
servers (a path to a private file must not copy the file into an error tag).

Speed: the data section is parsed by the C engine of :func:`pandas.read_csv` (dense rows
as a table, sparse rows as one ``index value`` line per entry) and then encoded with
vectorised numpy. Anything that path cannot take (quoted values, malformed rows) goes
through a line-by-line parser, which is the reference: it
either returns the same result or raises :class:`ArffError` with the file and line.
"""

from __future__ import annotations

import csv
import io
import re
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Literal, TextIO

import numpy as np
import pandas as pd
import scipy.sparse as sp

from mlgraph.data.decompress import (
    ArffError,
    decode_text,
    read_bytes,
)

AttributeKind = Literal["numeric", "nominal", "string", "date"]

_TYPES: dict[str, AttributeKind] = {
    "numeric": "numeric",
    "real": "numeric",
    "integer": "numeric",
    "string": "string",
    "date": "date",
}
_KEYWORD = re.compile(r"@(relation|attribute|data)(?=\s|$)", re.IGNORECASE)
_QUOTED = r"""'(?P<sq>(?:[^'\\]|\\.)*)'|"(?P<dq>(?:[^"\\]|\\.)*)\""""
# A bare name may hold quotes and backslashes after its first character (kept verbatim).
_NAME = re.compile(rf"""{_QUOTED}|(?P<bare>[^\s{{}}'"%][^\s{{}}%]*)""", re.DOTALL)
# One comma-separated field: quoted, or bare up to the next comma (blanks around are not part
# of it); the lookahead makes text glued to a closing quote a syntax error.
_FIELD = re.compile(rf"""[ \t]*(?:{_QUOTED}|(?P<bare>(?:[^,'"\s][^,]*?)?))[ \t]*(?=,|$)""", re.DOTALL)
# One sparse entry: `index value`, the value quoted or bare.
_ENTRY = re.compile(
    rf"""[ \t]*(?P<index>[^\s,'"]+)[ \t]+(?:{_QUOTED}|(?P<bare>[^\s,'"][^\s,]*))[ \t]*(?=,|$)""",
    re.DOTALL,
)
# A quoted token (opening where a token may start) or a comment start: the first `%` match
# outside quotes begins the comment.
_COMMENT = re.compile(r"""(?<![^\s,{])(?:'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*")|(?P<comment>%)""")
_ESCAPE = re.compile(r"\\(.)", re.DOTALL)
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r"}
_PLAIN_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
_FIRST_ROW = re.compile(r"^[ \t]*([^\s%])", re.MULTILINE)


class DataWarning(UserWarning):
    """A note on a dataset as read: the data are used as they are, but something in them is
    worth knowing (an attribute dropped, a feature without information, an attribute that looks
    like an unlisted label). ``warnings.simplefilter("ignore", DataWarning)`` silences them all."""


def raise_at(message: str, source, locate, row: int, column) -> None:
    """Raise :class:`ArffError` at the file line and column of a data ``row`` and attribute or
    column, as the reader's ``locate(row, column)`` finds them."""
    line, col = locate(row, column)
    raise ArffError(message, source=source, line=line, column=col)


class _ValueProblem(ValueError):
    """A bad data value; ``column`` is its 1-based position in the row (attribute index + 1)."""

    def __init__(self, message: str, column: int | None = None):
        super().__init__(message)
        self.column = column


@dataclass(frozen=True)
class Attribute:
    """One ``@attribute`` declaration; ``values`` is the declared list of a nominal one."""

    name: str
    kind: AttributeKind
    values: tuple[str, ...] | None = None


@dataclass(frozen=True, eq=False)
class ArffData:
    """A parsed ARFF file: one float64 column per attribute (see the module docstring)."""

    relation: str
    attributes: tuple[Attribute, ...]
    data: np.ndarray | sp.csr_matrix
    sparse: bool


class _FastPathFailed(Exception):
    """The vectorised parser met input it does not handle; the line parser takes over."""


# ---------------------------------------------------------------------------------------------
# Entry points
# ---------------------------------------------------------------------------------------------
def read_arff(source: str | Path | BinaryIO | TextIO) -> ArffData:
    """Read an ARFF file given by path or open file object (compression detected by magic bytes)."""
    if hasattr(source, "read"):
        return parse_arff(source.read(), str(getattr(source, "name", "<stream>")))
    return parse_arff(read_bytes(source), str(source))


def parse_arff(content: str | bytes, source: str = "<string>") -> ArffData:
    """Parse ARFF text or raw (possibly compressed) bytes; ``source`` names the input in errors."""
    text = decode_text(content, source)
    relation, attributes, data_start, data_line = _parse_header(text, source)
    data = text[data_start:]
    first = _FIRST_ROW.search(data)
    sparse = first is not None and first.group(1) == "{"
    columns = _Columns(attributes)
    if sparse:
        unsupported = [a.name for a in attributes if a.kind in ("string", "date")]
        if unsupported:
            raise ArffError(
                "string/date attributes are not supported in sparse data: "
                + ", ".join(show(name) for name in unsupported[:5]),
                source=source,
                line=data_line + data.count("\n", 0, first.start()),
            )
    try:
        matrix = _sparse_fast(data, columns) if sparse else _dense_fast(data, columns)
    except (_FastPathFailed, ValueError, TypeError, OverflowError):
        # The line parser is the reference: it locates the problem or parses what the
        # vectorised path could not (quotes, comment lines in the data section, ...).
        matrix = _parse_lines(data, data_line, columns, sparse, source)
    return ArffData(relation, tuple(attributes), matrix, sparse)


def data_row_line(content: str | bytes, row: int, source: str = "<string>") -> int | None:
    """1-based line of data row ``row`` (0-based), for error messages (None: no such row)."""
    text = decode_text(content, source)
    _, _, data_start, data_line = _parse_header(text, source)
    for offset, line in enumerate(text[data_start:].split("\n")):
        if _strip_comment(line).strip():
            row -= 1
            if row < 0:
                return data_line + offset
    return None


def _strip_comment(line: str) -> str:
    """``line`` up to its first ``%`` outside quotes."""
    if "%" not in line:
        return line
    for match in _COMMENT.finditer(line):
        if match.group("comment"):
            return line[: match.start()]
    return line


# ---------------------------------------------------------------------------------------------
# Header
# ---------------------------------------------------------------------------------------------
def _parse_header(text: str, source: str) -> tuple[str, list[Attribute], int, int]:
    """Parse up to ``@data``: (relation, attributes, offset of the data, its first line number)."""
    relation: str | None = None
    attributes: list[Attribute] = []
    declared_on: dict[str, int] = {}
    pos, lineno = 0, 0
    while pos < len(text):
        end = text.find("\n", pos)
        end = len(text) if end < 0 else end
        line, lineno = _strip_comment(text[pos:end]).strip(), lineno + 1
        pos = end + 1
        if not line:
            continue
        keyword = _KEYWORD.match(line)
        try:
            if keyword is None:
                raise ValueError("expected @relation, @attribute or @data at the line's start")
            rest = line[keyword.end() :]
            kind = keyword.group(1).lower()
            if kind == "relation":
                relation = _parse_relation(rest)
            elif relation is None:
                raise ValueError(f"@{kind} before @relation")
            elif kind == "attribute":
                attribute = _parse_attribute(rest)
                if attribute.name in declared_on:
                    raise ValueError(
                        f"duplicate attribute name {show(attribute.name)} "
                        f"(first declared on line {declared_on[attribute.name]})"
                    )
                declared_on[attribute.name] = lineno
                attributes.append(attribute)
            else:
                _check_trailing(rest, "@data")
                if not attributes:
                    raise ValueError("@data before any @attribute")
                return relation, attributes, pos, lineno + 1
        except ValueError as exc:
            raise ArffError(str(exc), source=source, line=lineno) from None
    raise ArffError("missing @data section", source=source, line=lineno)


def _parse_relation(rest: str) -> str:
    """The relation name (quoted or bare) of an ``@relation`` line."""
    name, tail = _read_name(rest, "relation")
    _check_trailing(tail, "the relation name")
    return name


def _parse_attribute(rest: str) -> Attribute:
    """An ``@attribute name type`` declaration (type: numeric/real/integer, {..}, string, date)."""
    name, tail = _read_name(rest, "attribute")
    tail = tail.strip()
    if tail.startswith("{"):
        close = tail.rfind("}")
        if close < 0:
            raise ValueError(f"nominal attribute {show(name)}: missing closing brace")
        _check_trailing(tail[close + 1 :], "the nominal values")
        try:
            fields = _split_fields(tail[1:close])
        except _ValueProblem as exc:
            raise ValueError(
                f"nominal attribute {show(name)}: declared value {exc.column} is badly quoted"
            ) from None
        values = tuple(_nominal_value(k, *field, name) for k, field in enumerate(fields, 1))
        if len(set(values)) != len(values):
            first, again = _first_repeat(values)
            raise ValueError(f"nominal attribute {show(name)}: declared value {again} repeats value {first}")
        return Attribute(name, "nominal", values)
    if not tail:
        raise ValueError(f"attribute {show(name)} has no type")
    type_name, extra = [*tail.split(None, 1), ""][:2]
    kind = _TYPES.get(type_name.lower())
    if kind is None:
        if type_name.lower() == "relational":
            raise ValueError(f"attribute {show(name)}: type relational is not supported")
        raise ValueError(
            f"attribute {show(name)}: the type is unknown (expected numeric, real, integer, "
            "string, date or {values}; a bare name ends at a blank)"
        )
    if kind == "date" and extra.strip():
        _, extra = _read_name(extra, "date format")  # the format is read past, not used
    _check_trailing(extra, f"the type of attribute {show(name)}")
    return Attribute(name, kind)


def _nominal_value(position: int, text: str, quoted: bool, attribute: str) -> str:
    """One declared nominal value; only a quoted one may be empty."""
    if not text and not quoted:
        raise ValueError(f"nominal attribute {show(attribute)}: declared value {position} is empty")
    return text


def _first_repeat(values: tuple[str, ...]) -> tuple[int, int]:
    """1-based positions (first, repeat) of the first value declared twice."""
    seen: dict[str, int] = {}
    for k, value in enumerate(values, 1):
        if value in seen:
            return seen[value], k
        seen[value] = k
    raise AssertionError("no repeated value")


def _read_name(text: str, what: str) -> tuple[str, str]:
    """A quoted or bare name at the start of ``text``, unescaped, and the text after it."""
    stripped = text.lstrip()
    match = _NAME.match(stripped)
    if match is None:
        raise ValueError(f"missing or badly quoted {what} name")
    bare = match.group("bare")
    name = bare if bare is not None else _unescape(match.group("sq") or match.group("dq") or "")
    return name, stripped[match.end() :]


def _check_trailing(text: str, after: str) -> None:
    """Only blanks may follow a complete declaration (comments are already stripped)."""
    if text.strip():
        raise ValueError(f"unexpected text after {after}")


def show(name: str, limit: int = 60) -> str:
    """An attribute or label name for a message: quoted, cut to ``limit`` characters."""
    return repr(name if len(name) <= limit else name[:limit] + "...")


def _unescape(text: str) -> str:
    r"""Undo backslash escapes (\' \" \\ \n \t \r; any other \c is c)."""
    if "\\" not in text:
        return text
    return _ESCAPE.sub(lambda m: _ESCAPES.get(m.group(1), m.group(1)), text)


def _split_fields(text: str) -> list[tuple[str, bool]]:
    """Split a comma-separated list into (unescaped value, was quoted) pairs."""
    fields, pos = [], 0
    while True:
        match = _FIELD.match(text, pos)
        if match is None:
            raise _ValueProblem("bad quoting", column=len(fields) + 1)
        fields.append(_field_value(match))
        pos = match.end() + 1  # past the comma
        if match.end() >= len(text):
            return fields


def _field_value(match: re.Match) -> tuple[str, bool]:
    """(value, was quoted) of a match of ``_FIELD`` or ``_ENTRY``."""
    if match.group("bare") is not None:
        return match.group("bare"), False
    quoted = match.group("sq") if match.group("sq") is not None else match.group("dq")
    return _unescape(quoted), True


# ---------------------------------------------------------------------------------------------
# Value encoding, shared by both parsers
# ---------------------------------------------------------------------------------------------
class _Columns:
    """Per-attribute encoders: nominal lookup tables and first-appearance string codes."""

    def __init__(self, attributes: list[Attribute]):
        self.attributes = attributes
        self.kinds = np.array([a.kind for a in attributes])
        self.by_text = [
            {v: i for i, v in enumerate(a.values)} if a.kind == "nominal" else None for a in attributes
        ]
        self.by_number = [_numeric_values(a) for a in attributes]
        self.n_values = np.array([len(a.values) if a.values else 0 for a in attributes])
        self.identity = np.array([_numbers_are_codes(t) for t in self.by_number], dtype=bool)
        self.strings: dict[int, dict[str, int]] = {}

    def reads_as_number(self, j: int) -> bool:
        """Whether column ``j`` can be read as a float column (numbers, numeric nominals)."""
        return self.kinds[j] == "numeric" or self.by_number[j] is not None

    def nominal_code(self, j: int, value: str | float) -> int | None:
        """Index of ``value`` in the declared list of nominal attribute ``j`` (None: absent)."""
        if isinstance(value, str):
            code = self.by_text[j].get(value)
            if code is not None or self.by_number[j] is None:
                return code
            if not _PLAIN_NUMBER.fullmatch(value.strip()):
                return None
            value = float(value)
        return None if self.by_number[j] is None else self.by_number[j].get(float(value))

    def cell(self, j: int, text: str, quoted: bool) -> float:
        """Encode one data value of attribute ``j`` (line parser); _ValueProblem says what is
        wrong without quoting the value."""
        attribute = self.attributes[j]
        if text == "?" and not quoted:
            return np.nan
        if attribute.kind == "numeric":
            try:
                return float(text)
            except ValueError:
                raise _ValueProblem(
                    f"numeric attribute {show(attribute.name)}: the value is not a number", j + 1
                ) from None
        if attribute.kind == "nominal":
            code = self.nominal_code(j, text)
            if code is None:
                raise _ValueProblem(
                    f"nominal attribute {show(attribute.name)}: the value is not one of its "
                    f"{len(attribute.values)} declared values",
                    j + 1,
                )
            return float(code)
        if attribute.kind == "string":
            codes = self.strings.setdefault(j, {})
            return float(codes.setdefault(text, len(codes)))
        try:
            return float(_date_seconds(np.array([text], dtype=object))[0])
        except (ValueError, OverflowError):
            raise _ValueProblem(
                f"date attribute {show(attribute.name)}: the value is not an ISO-8601 date", j + 1
            ) from None

    def encode_nominal(self, raw: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """Vectorised codes of the values ``raw[k]`` (str or float, NaN = missing) of the
        nominal attributes ``cols[k]``; raises _FastPathFailed on an undeclared value."""
        codes = np.full(len(raw), np.nan)
        rest = np.arange(len(raw))
        if raw.dtype.kind == "f":
            # Shortcut for the common {0,1,..,k-1}: the number is the code; NaN stays missing.
            direct = np.isnan(raw) | (
                self.identity[cols] & (raw >= 0) & (raw < self.n_values[cols]) & (raw == np.floor(raw))
            )
            codes[direct] = raw[direct]
            rest = np.flatnonzero(~direct)
        codes[rest] = self._lookup(raw[rest], cols[rest])
        return codes

    def _lookup(self, raw: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """General case of :meth:`encode_nominal`: a dictionary look-up per distinct pair."""
        inverse, uniques = pd.factorize(raw)  # missing -> -1
        codes = np.full(len(raw), np.nan)
        present = inverse >= 0
        # Look up each distinct (attribute, value) pair once, however many cells share it.
        pairs = cols[present].astype(np.int64) * len(uniques) + inverse[present]
        pair_inverse, pair_uniques = pd.factorize(pairs)
        table = np.array(
            [self._code_or_nan(int(p // len(uniques)), uniques[p % len(uniques)]) for p in pair_uniques],
            dtype=np.float64,
        )
        codes[present] = table[pair_inverse]
        if np.isnan(codes[present]).any():
            raise _FastPathFailed("undeclared nominal value")
        return codes

    def encode_nominal_block(self, block: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """:meth:`encode_nominal` of an n x m block whose column k holds attribute ``cols[k]``."""
        codes = self.encode_nominal(block.ravel(order="F"), np.repeat(cols, block.shape[0]))
        return codes.reshape(block.shape, order="F")

    def _code_or_nan(self, j: int, value: str | float) -> float:
        """Code of a bare data value, NaN if undeclared (an empty bare value never matches)."""
        code = None if value == "" else self.nominal_code(j, value)
        return np.nan if code is None else float(code)


def _numeric_values(attribute: Attribute) -> dict[float, int] | None:
    """For a nominal attribute declared with distinct plain numbers: number -> code."""
    if attribute.kind != "nominal" or not all(_PLAIN_NUMBER.fullmatch(v.strip()) for v in attribute.values):
        return None
    table = {float(v): i for i, v in enumerate(attribute.values)}
    return table if len(table) == len(attribute.values) else None


def _numbers_are_codes(table: dict[float, int] | None) -> bool:
    """Whether the declared numbers are 0, 1, ..., k-1 in this order (each its own code)."""
    return table is not None and all(table.get(float(i)) == i for i in range(len(table)))


def _date_seconds(values: np.ndarray) -> np.ndarray:
    """ISO-8601 date strings (NaN = missing) to POSIX seconds, naive times taken as UTC."""
    stamps = pd.to_datetime(pd.Series(values, dtype=object), format="ISO8601", utc=True)
    return ((stamps - pd.Timestamp(0, tz="UTC")) / pd.Timedelta(seconds=1)).to_numpy(np.float64)


def _string_codes(values: np.ndarray) -> np.ndarray:
    """Codes of bare strings in order of first appearance (NaN = missing stays NaN)."""
    codes, uniques = pd.factorize(values)
    if "" in set(uniques):
        raise _FastPathFailed("empty value")
    codes = codes.astype(np.float64)
    codes[codes < 0] = np.nan
    return codes


# ---------------------------------------------------------------------------------------------
# Vectorised parsers
# ---------------------------------------------------------------------------------------------
def _read_table(text: str, **kwargs) -> pd.DataFrame:
    """pandas' C parser with ARFF conventions: no quoting, only ``?`` is missing, ``%`` starts
    a comment. pandas only warns, and drops the extra values, when rows have more fields than
    names (every dense row too long; a sparse entry '0 1 5'): the line parser locates it."""
    # errstate: a bad integer ('1e999' as a sparse index) makes numpy warn inside pandas before
    # pandas raises; the raise is what counts.
    with warnings.catch_warnings(), np.errstate(invalid="ignore"):
        warnings.simplefilter("error", pd.errors.ParserWarning)
        try:
            return pd.read_csv(
                io.BytesIO(text.encode("utf-8")),  # bytes parse faster than a text stream
                encoding="utf-8",
                header=None,
                na_values=["?"],
                keep_default_na=False,
                quoting=csv.QUOTE_NONE,
                comment="%",
                engine="c",
                index_col=False,
                **kwargs,
            )
        except pd.errors.ParserWarning as exc:
            raise _FastPathFailed("more values than names") from exc


def _dense_fast(data: str, columns: _Columns) -> np.ndarray:
    """Parse dense rows as a table: float columns for numbers, object columns for text."""
    if "'" in data or '"' in data:
        raise _FastPathFailed("quoted values")
    n_attributes = len(columns.attributes)
    is_float = np.array([columns.reads_as_number(j) for j in range(n_attributes)], dtype=bool)
    # Too many values in a row is a ParserError; too few leaves '' fields, which fail the
    # float conversion or the checks below. Float parsing skips blanks by itself.
    if is_float.all():
        table = _read_table(data, names=range(n_attributes), dtype=np.float64)
        out = table.to_numpy(np.float64, copy=True)
    else:
        dtypes = {j: (np.float64 if is_float[j] else object) for j in range(n_attributes)}
        table = _read_table(data, names=range(n_attributes), dtype=dtypes, skipinitialspace=True)
        out = np.empty(table.shape, dtype=np.float64)
        float_cols = np.flatnonzero(is_float)
        out[:, float_cols] = table.iloc[:, float_cols].to_numpy(np.float64)
    nominal = columns.kinds == "nominal"
    numeric_nominal = np.flatnonzero(is_float & nominal)
    if len(numeric_nominal):
        out[:, numeric_nominal] = columns.encode_nominal_block(out[:, numeric_nominal], numeric_nominal)
    text_cols = np.flatnonzero(~is_float)
    if len(text_cols) == 0:
        return out
    text = table.iloc[:, text_cols].to_numpy(dtype=object)
    text_nominal = np.flatnonzero(nominal[text_cols])
    if len(text_nominal):
        out[:, text_cols[text_nominal]] = columns.encode_nominal_block(
            text[:, text_nominal], text_cols[text_nominal]
        )
    for k, j in enumerate(text_cols):
        if columns.kinds[j] == "string":
            out[:, j] = _string_codes(text[:, k])
        elif columns.kinds[j] == "date":
            out[:, j] = _date_seconds(text[:, k])
    return out


def _sparse_fast(data: str, columns: _Columns) -> sp.csr_matrix:
    """Parse sparse rows: all entries go, one ``index value`` per line, through one read_csv."""
    if "'" in data or '"' in data:
        raise _FastPathFailed("quoted values")
    if "%" in data:
        data = re.sub(r"%[^\n]*", "", data)  # without quotes every % starts a comment
    rows = [s for line in data.split("\n") if (s := line.strip())]
    if not all(row[0] == "{" and row[-1] == "}" for row in rows):
        raise _FastPathFailed("comment line or non-sparse row")
    inners = [row[1:-1] for row in rows]
    counts = np.array([s.count(",") + 1 if s.strip() else 0 for s in inners], dtype=np.int64)
    n_attributes = len(columns.attributes)
    all_numbers = all(columns.reads_as_number(j) for j in range(n_attributes))
    entries = _read_table(
        "\n".join(inners).replace(",", "\n"),
        names=["index", "value"],
        sep=r"\s+",
        dtype={"index": np.int64, "value": np.float64 if all_numbers else object},
    )
    if len(entries) != counts.sum():
        raise _FastPathFailed("empty sparse entry")
    index = entries["index"].to_numpy()
    if len(index) and (index.min() < 0 or index.max() >= n_attributes):
        raise _FastPathFailed("sparse index out of range")
    row_of = np.repeat(np.arange(len(rows)), counts)
    if np.any((np.diff(index) <= 0) & (np.diff(row_of) == 0)):
        raise _FastPathFailed("sparse indices not increasing")
    raw = entries["value"].to_numpy()
    values = np.empty(len(raw), dtype=np.float64)
    nominal = (columns.kinds == "nominal")[index]
    values[~nominal] = pd.to_numeric(raw[~nominal]) if not all_numbers else raw[~nominal]
    values[nominal] = columns.encode_nominal(raw[nominal], index[nominal])
    return _csr(values, index, counts, n_attributes)


def _csr(values: np.ndarray, index: np.ndarray, counts: np.ndarray, n_attributes: int) -> sp.csr_matrix:
    """CSR matrix from the entries of consecutive rows; explicit zeros are dropped."""
    indptr = np.concatenate([[0], np.cumsum(counts, dtype=np.int64)])
    matrix = sp.csr_matrix((values, index, indptr), shape=(len(counts), n_attributes), dtype=np.float64)
    matrix.eliminate_zeros()
    return matrix


# ---------------------------------------------------------------------------------------------
# Line-by-line reference parser
# ---------------------------------------------------------------------------------------------
def _parse_lines(
    data: str, first_line: int, columns: _Columns, sparse: bool, source: str
) -> np.ndarray | sp.csr_matrix:
    """Parse the data section one line at a time; errors carry the 1-based line number."""
    parse_row = _sparse_row if sparse else _dense_row
    rows = []
    for offset, line in enumerate(data.split("\n")):
        line = _strip_comment(line).strip()
        if not line:
            continue
        try:
            rows.append(parse_row(line, columns))
        except ValueError as exc:
            column = getattr(exc, "column", None)
            raise ArffError(str(exc), source=source, line=first_line + offset, column=column) from None
    n_attributes = len(columns.attributes)
    if not sparse:
        return np.array(rows, dtype=np.float64).reshape(len(rows), n_attributes)
    index = np.array([i for row_index, _ in rows for i in row_index], dtype=np.int64)
    values = np.array([v for _, row_values in rows for v in row_values], dtype=np.float64)
    counts = np.array([len(row_index) for row_index, _ in rows], dtype=np.int64)
    return _csr(values, index, counts, n_attributes)


def _dense_row(line: str, columns: _Columns) -> list[float]:
    """One comma-separated row, encoded."""
    if line.startswith("{"):
        raise ValueError("sparse row in dense data (the first data row sets the format)")
    fields = _split_fields(line)
    n_attributes = len(columns.attributes)
    if len(fields) != n_attributes:
        raise ValueError(f"expected {n_attributes} values, found {len(fields)}")
    return [_checked_cell(columns, j, text, quoted) for j, (text, quoted) in enumerate(fields)]


def _sparse_row(line: str, columns: _Columns) -> tuple[list[int], list[float]]:
    """One ``{index value, ...}`` row: (attribute indices, encoded values)."""
    if not (line.startswith("{") and line.endswith("}")):
        raise ValueError("expected a sparse row {index value, ...} (the first data row sets the format)")
    inner = line[1:-1]
    indices: list[int] = []
    values: list[float] = []
    if not inner.strip():
        return indices, values
    pos = 0
    while True:
        match = _ENTRY.match(inner, pos)
        entry = len(indices) + 1
        if match is None:
            what = "is empty" if not inner[pos:].split(",")[0].strip() else "is not 'index value'"
            raise ValueError(f"sparse entry {entry} {what}")
        j = _sparse_index(match.group("index"), indices, len(columns.attributes), entry)
        indices.append(j)
        values.append(_checked_cell(columns, j, *_field_value(match)))
        if match.end() >= len(inner):
            return indices, values
        pos = match.end() + 1  # past the comma


def _sparse_index(token: str, previous: list[int], n_attributes: int, entry: int) -> int:
    """Validate a 0-based sparse index: an integer in range, above the row's previous one."""
    try:
        j = int(token)
    except ValueError:
        # An integral decimal ('1.0') is accepted, as pandas does on the vectorised path.
        try:
            as_float = float(token)
        except ValueError:
            as_float = float("nan")
        if not as_float.is_integer():
            raise ValueError(f"sparse entry {entry}: the index is not an integer") from None
        j = int(as_float)
    if not 0 <= j < n_attributes:
        raise ValueError(
            f"sparse entry {entry}: index {j} is out of range, the file declares "
            f"{n_attributes} attributes (0..{n_attributes - 1})"
        )
    if previous and j <= previous[-1]:
        raise ValueError(f"sparse entry {entry}: index {j} does not increase (after {previous[-1]})")
    return j


def _checked_cell(columns: _Columns, j: int, text: str, quoted: bool) -> float:
    """:meth:`_Columns.cell`, refusing an empty unquoted value (``?`` marks a missing one)."""
    if not text and not quoted:
        raise _ValueProblem(
            f"attribute {show(columns.attributes[j].name)}: empty value (use ? for missing)", j + 1
        )
    return columns.cell(j, text, quoted)
