"""Tests for mlgraph.data.arff: hand-written files parsed to exact arrays, both parsers
(vectorised and line-by-line) agreeing, error messages, and parity with liac-arff."""

from __future__ import annotations

import gzip
import io
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from shared_data import benchmark_file

from mlgraph.data import ArffError, read_arff
from mlgraph.data.arff import Attribute, data_row_line, parse_arff

NAN = np.nan


def parse(text: str):
    return parse_arff(text, "toy.arff")


def dense(data) -> np.ndarray:
    return data.toarray() if sp.issparse(data) else data


# --------------------------------------------------------------------------------------------
# Header
# --------------------------------------------------------------------------------------------
HEADER_FILE = """% a comment before everything

@RELATION 'birds: \\'x\\''
% comment between declarations
@attribute 'Swainson\\'s Thrush' NUMERIC
@Attribute "a \\"b\\"" real
@ATTRIBUTE count integer
@attribute colour { red , 'dark blue', "x,y" }   % a trailing comment
@attribute note string
@attribute when date "yyyy-MM-dd"

@data
1,2,3,red,n,2020-01-02
"""


def test_header_kinds_names_and_values():
    d = parse(HEADER_FILE)
    assert d.relation == "birds: 'x'"
    assert d.attributes == (
        Attribute("Swainson's Thrush", "numeric"),
        Attribute('a "b"', "numeric"),
        Attribute("count", "numeric"),
        Attribute("colour", "nominal", ("red", "dark blue", "x,y")),
        Attribute("note", "string"),
        Attribute("when", "date"),
    )
    assert not d.sparse
    np.testing.assert_array_equal(d.data, [[1, 2, 3, 0, 0, 1577923200.0]])


# --------------------------------------------------------------------------------------------
# Dense data
# --------------------------------------------------------------------------------------------
def test_dense_numeric_and_nominal_codes():
    d = parse(
        "@relation r\n@attribute x numeric\n@attribute f {YES,NO}\n"
        "@attribute g {1,0}\n@attribute y {0,1}\n"
        "@data\n0.5,NO,1,1\n-2e3, YES, 0, 0\n7,NO,0,1\n"
    )
    assert d.data.dtype == np.float64
    # Nominal values are coded by their index in the declared list: YES=0 NO=1, and {1,0}: 1->0.
    np.testing.assert_array_equal(d.data, [[0.5, 1, 0, 1], [-2000, 0, 1, 0], [7, 1, 1, 1]])


def test_dense_missing_values_are_nan():
    d = parse("@relation r\n@attribute x numeric\n@attribute f {a,b}\n@data\n?,b\n1,?\n")
    np.testing.assert_array_equal(d.data, [[NAN, 1], [1, NAN]])


def test_dense_quoted_values_and_escapes():
    d = parse(
        "@relation r\n@attribute c {'dark blue', \"x,y\", 'it\\'s'}\n@attribute x numeric\n"
        "@data\n'x,y',1\n\"dark blue\",2\n'it\\'s',3\n"
    )
    np.testing.assert_array_equal(d.data, [[1, 1], [0, 2], [2, 3]])


def test_string_attributes_coded_by_first_appearance():
    d = parse("@relation r\n@attribute id string\n@attribute x numeric\n@data\nb,1\na,2\nb,3\n'c d',4\n?,5\n")
    np.testing.assert_array_equal(d.data[:, 0], [0, 1, 0, 2, NAN])


def test_numeric_nominal_values_match_by_number():
    d = parse("@relation r\n@attribute y {0,1,2}\n@attribute z {10,20}\n@data\n1.0,20\n2,1e1\n0,10\n")
    np.testing.assert_array_equal(d.data, [[1, 1], [2, 0], [0, 0]])


def test_empty_data_section():
    d = parse("@relation r\n@attribute x numeric\n@attribute y {0,1}\n@data\n\n% nothing\n")
    assert d.data.shape == (0, 2) and not d.sparse


def test_crlf_line_endings():
    d = parse("@relation r\r\n@attribute x numeric\r\n@attribute y {a,b}\r\n@data\r\n1,b\r\n2,a\r\n")
    np.testing.assert_array_equal(d.data, [[1, 1], [2, 0]])


# --------------------------------------------------------------------------------------------
# Sparse data
# --------------------------------------------------------------------------------------------
SPARSE_FILE = """@relation s
@attribute x numeric
@attribute f {YES,NO}
@attribute g {0,1}
@attribute h numeric
@data
{0 0.25,3 1001}
{}
{ 1 NO , 2 1 }
{0 ?,1 YES}
"""


def test_sparse_exact_matrix():
    d = parse(SPARSE_FILE)
    assert d.sparse and isinstance(d.data, sp.csr_matrix) and d.data.dtype == np.float64
    # An omitted nominal entry is its first declared value (code 0), like an explicit YES.
    np.testing.assert_array_equal(
        d.data.toarray(), [[0.25, 0, 0, 1001], [0, 0, 0, 0], [0, 1, 1, 0], [NAN, 0, 0, 0]]
    )
    assert d.data.nnz == 5  # explicit zeros (the YES of the last row) are not stored
    assert d.data.has_sorted_indices


def test_sparse_with_quoted_nominal_values():
    d = parse("@relation s\n@attribute x numeric\n@attribute c {'a b',c}\n@data\n{1 'a b'}\n{0 2,1 c}\n")
    np.testing.assert_array_equal(d.data.toarray(), [[0, 0], [2, 1]])


# --------------------------------------------------------------------------------------------
# The vectorised parser and the line parser agree
# --------------------------------------------------------------------------------------------
AGREEMENT_CASES = [
    "@relation r\n@attribute x numeric\n@attribute f {YES,NO}\n@attribute y {0,1}\n"
    "@data\n1.5, NO,1\n?,YES,0\n",
    "@relation r\n@attribute s string\n@attribute x numeric\n@data\nb,1\na,?\nb,3\n",
    SPARSE_FILE,
]


@pytest.mark.parametrize("text", AGREEMENT_CASES)
def test_comment_lines_in_data_give_the_same_result(text):
    """Comment lines in the data section change nothing; one holding a quote sends the rows
    through the line parser, which must agree with the vectorised one."""
    head, rows = text.split("@data\n")
    lines = rows.splitlines()
    fast = parse(text)
    for comment in ("% c", "% it's"):
        commented = head + f"@data\n{comment}\n" + f"\n{comment}\n\n".join(lines) + "\n"
        other = parse(commented)
        np.testing.assert_array_equal(dense(fast.data), dense(other.data))
        assert fast.sparse == other.sparse


# --------------------------------------------------------------------------------------------
# Sources: paths, gzip, file objects
# --------------------------------------------------------------------------------------------
def test_read_plain_gzip_and_file_objects(tmp_path):
    text = "@relation r\n@attribute x numeric\n@data\n1\n2\n"
    (tmp_path / "a.arff").write_text(text)
    (tmp_path / "a.arff.gz").write_bytes(gzip.compress(text.encode()))
    (tmp_path / "gz-without-suffix.arff").write_bytes(gzip.compress(text.encode()))
    sources = [
        tmp_path / "a.arff",
        str(tmp_path / "a.arff.gz"),
        tmp_path / "gz-without-suffix.arff",
        io.BytesIO(gzip.compress(text.encode())),
        io.StringIO(text),
    ]
    for source in sources:
        np.testing.assert_array_equal(read_arff(source).data, [[1], [2]])


def test_corrupt_gzip(tmp_path):
    path = tmp_path / "bad.arff.gz"
    path.write_bytes(gzip.compress(b"@relation r\n" * 100)[:30])
    with pytest.raises(ArffError, match=r"bad\.arff\.gz.*gzip"):
        read_arff(path)


# --------------------------------------------------------------------------------------------
# Errors name the file, the line and the problem
# --------------------------------------------------------------------------------------------
HEAD = "@relation r\n@attribute x numeric\n@attribute c {a,b}\n@data\n"  # data starts on line 5
SPARSE_HEAD = "@relation r\n@attribute x numeric\n@attribute c {0,1}\n@data\n"

# (file, line, column or None, what the message says). Every offending token contains
# "zz", which the message must not repeat: errors never copy the file's content.
ERRORS = [
    ("@relation r\n@attribute x numerizz\n@data\n", 2, None, "attribute 'x': the type is unknown"),
    ("@relation r\n@attribute x numeric\n", 2, None, "missing @data"),
    (
        "@relation r\n@attribute x numeric\n@attribute x real\n@data\n",
        3,
        None,
        "duplicate attribute name 'x' (first declared on line 2)",
    ),
    ("@relation r\n@attribute c {a,b\n@data\n", 2, None, "missing closing brace"),
    ("@relation r\n@attribute c {a,'zz}\n@data\n", 2, None, "declared value 2 is badly quoted"),
    ("@relation r\n@attribute c {a,zz,b,zz}\n@data\n", 2, None, "value 4 repeats value 2"),
    ("@relation r\n@attribute c {a,,b}\n@data\n", 2, None, "declared value 2 is empty"),
    ("@relation r\n@attribute 'x numeric zz\n@data\n", 2, None, "badly quoted attribute name"),
    ("@relation r\n@attribute x numeric zz\n@data\n", 2, None, "unexpected text after the type"),
    ("@relation r\nhello zz\n@data\n", 2, None, "expected @relation, @attribute or @data"),
    ("root:zz:0:0\n@data\n", 1, None, "expected @relation, @attribute or @data"),
    ("@attribute x numeric\n@data\n", 1, None, "before @relation"),
    ("@relation r\n@attribute x relational\n@data\n", 2, None, "relational is not supported"),
    (HEAD + "1,a\n2,zz\n", 6, 2, "nominal attribute 'c': the value is not one of its 2 declared"),
    (HEAD + "1,a\n2\n", 6, None, "expected 2 values, found 1"),
    # every row one value too many: pandas only warns and cuts them (the fast path must not)
    (HEAD + "1,a,zz\n2,b,zz\n", 5, None, "expected 2 values, found 3"),
    ("@relation r\n@attribute x numeric\n@data\n1,2\n3,4\n", 4, None, "expected 1 values, found 2"),
    (HEAD + "1,a\n\n2,a,3\n", 7, None, "expected 2 values, found 3"),
    (HEAD + "1,a\nzz,b\n", 6, 1, "numeric attribute 'x': the value is not a number"),
    (HEAD + "1,a\n,b\n", 6, 1, "attribute 'x': empty value"),
    (HEAD + "1,a\n1,'zz\n", 6, 2, "bad quoting"),
    (SPARSE_HEAD + "{0 1}\n{2 1}\n", 6, None, "sparse entry 1: index 2 is out of range"),
    (SPARSE_HEAD + "{0 1}\n{-1 1}\n", 6, None, "index -1 is out of range"),
    (SPARSE_HEAD + "{0 1}\n{zz 1}\n", 6, None, "sparse entry 1: the index is not an integer"),
    (SPARSE_HEAD + "{1 1,0 1}\n", 5, None, "sparse entry 2: index 0 does not increase"),
    (SPARSE_HEAD + "{0 1}\n{1 zz}\n", 6, 2, "nominal attribute 'c': the value is not one"),
    (SPARSE_HEAD + "{0 1}\n{0 1,1}\n", 6, None, "sparse entry 2 is not 'index value'"),
    (SPARSE_HEAD + "{0 1}\n{0 1 zz}\n", 6, None, "sparse entry 1 is not 'index value'"),
    (SPARSE_HEAD + "{0 1}\n{0 1,,1 1}\n", 6, None, "sparse entry 2 is empty"),
    (SPARSE_HEAD + "{0 1}\n{0 zz}\n", 6, 1, "numeric attribute 'x': the value is not a number"),
    (SPARSE_HEAD + "{0 1}\n1,1\n", 6, None, "expected a sparse row"),
    ("@relation r\n@attribute s string\n@data\n{0 x}\n", 4, None, "not supported in sparse"),
]


@pytest.mark.parametrize("text, line, column, what", ERRORS)
def test_error_names_file_line_column_and_problem(text, line, column, what):
    with pytest.raises(ArffError) as info:
        parse(text)
    message = str(info.value)
    where = f"toy.arff, line {line}" + (f", column {column}" if column else "")
    assert message.startswith(where + ": "), message
    assert what in message
    assert "zz" not in message, message
    error = info.value
    assert (error.path, error.source, error.line, error.column) == ("toy.arff", "toy.arff", line, column)


def test_error_names_the_path_of_a_file(tmp_path):
    path = tmp_path / "broken.arff"
    path.write_text(HEAD + "1,a\n2,a\n3,q\n")
    with pytest.raises(ValueError, match=rf"{path}, line 7, column 2: nominal attribute 'c'"):
        read_arff(path)


# --------------------------------------------------------------------------------------------
# Parity with liac-arff on real benchmark files
# --------------------------------------------------------------------------------------------
def liac_matrix(text: str, shape: tuple[int, int], sparse: bool) -> np.ndarray:
    """liac-arff's reading of the file as a dense float matrix (None -> NaN)."""
    arff = pytest.importorskip("arff")
    ref = arff.loads(text, encode_nominal=True, return_type=arff.COO if sparse else arff.DENSE)
    if not sparse:
        return np.array([[NAN if v is None else v for v in row] for row in ref["data"]], dtype=float)
    values, rows, cols = ref["data"]
    out = np.zeros(shape)
    out[rows, cols] = [NAN if v is None else v for v in values]
    return out


@pytest.mark.parametrize("name", ["emotions", "scene", "medical", "genbase", "slashdot"])
def test_same_matrix_as_liac_arff(name):
    path = benchmark_file(f"{name}.arff.gz")
    d = read_arff(path)
    raw = path.read_bytes()
    text = (gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw).decode()
    np.testing.assert_array_equal(dense(d.data), liac_matrix(text, d.data.shape, d.sparse))
    assert d.sparse == (name in ("medical", "slashdot"))


@pytest.mark.parametrize("lead", ["", "% a quote (it's) forces the line parser\n"])
def test_fast_and_line_parsers_agree_on_odd_sparse_entries(lead):
    header = "@relation r\n@attribute a numeric\n@attribute b numeric\n@attribute c numeric\n@data\n"
    with pytest.raises(ArffError, match=r"line \d+: sparse entry 1 is not 'index value'"):
        parse_arff(header + lead + "{0 1 5,1 2}\n")
    # An integral decimal index is read the same way by both parsers.
    np.testing.assert_array_equal(parse_arff(header + lead + "{1.0 3}\n").data.toarray(), [[0, 3, 0]])


# --------------------------------------------------------------------------------------------
# Grammar corpus (tests/unit/arff_corpus): every file, LF and CRLF, value by value against
# liac-arff, which reads all of them but comments_everywhere.arff (trailing comments).
# --------------------------------------------------------------------------------------------
CORPUS = Path(__file__).parent / "arff_corpus"
LIAC_CORPUS = sorted(p.name for p in CORPUS.glob("*.arff") if p.name != "comments_everywhere.arff")


def liac_reading(text: str, sparse: bool) -> tuple[list[str], np.ndarray]:
    """liac-arff's attribute names and dense float matrix; string columns coded by first
    appearance and None as NaN, the conventions of read_arff."""
    arff = pytest.importorskip("arff")
    ref = arff.loads(text, encode_nominal=True, return_type=arff.COO if sparse else arff.DENSE)
    names = [name for name, _ in ref["attributes"]]
    if sparse:
        values, rows, cols = ref["data"]
        out = np.zeros((max(rows, default=-1) + 1, len(names)))
        out[rows, cols] = [NAN if v is None else v for v in values]
        return names, out
    table = np.empty((len(ref["data"]), len(names)))
    for j, (_, kind) in enumerate(ref["attributes"]):
        column = [row[j] for row in ref["data"]]
        if kind == "STRING":
            codes: dict[str, int] = {}
            column = [None if v is None else codes.setdefault(v, len(codes)) for v in column]
        table[:, j] = [NAN if v is None else v for v in column]
    return names, table


@pytest.mark.parametrize("line_end", ["\n", "\r\n"], ids=["LF", "CRLF"])
@pytest.mark.parametrize("name", LIAC_CORPUS)
def test_corpus_matches_liac_arff_value_by_value(name, line_end):
    text = (CORPUS / name).read_text().replace("\n", line_end)
    ours = parse_arff(text.encode(), name)
    names, reference = liac_reading(text, ours.sparse)
    assert [a.name for a in ours.attributes] == names
    np.testing.assert_array_equal(dense(ours.data), reference)
    assert ours.data.shape[0] == reference.shape[0] > 0


def test_bare_names_keep_their_backslashes():
    d = read_arff(CORPUS / "escaped_bare_names.arff")
    assert [a.name for a in d.attributes] == ["word_a", "TAG_m\\'usica", "TAG_dise\\~no"]
    assert d.attributes[1] == Attribute("TAG_m\\'usica", "nominal", ("0", "1"))


def test_comments_anywhere_outside_quotes():
    for line_end in ("\n", "\r\n"):
        text = (CORPUS / "comments_everywhere.arff").read_text().replace("\n", line_end)
        d = parse(text)
        assert d.relation == "comments"
        assert d.attributes == (Attribute("x", "numeric"), Attribute("c", "nominal", ("a", "b", "c%d")))
        np.testing.assert_array_equal(d.data, [[1, 0], [2, 2], [3, 1]])


@pytest.mark.parametrize(
    "rows, expected",
    [
        ("1,a % one\n2,b%two\n", [[1, 0], [2, 1]]),  # no quotes: the vectorised parser
        ("1,'a' % it's\n2,b%two\n", [[1, 0], [2, 1]]),  # quotes: the line parser
    ],
)
def test_trailing_comments_on_data_rows(rows, expected):
    np.testing.assert_array_equal(parse(HEAD + rows).data, expected)


def test_trailing_comments_on_sparse_rows():
    d = parse(SPARSE_HEAD + "{0 1.5} % one\n{1 1}%two\n")
    np.testing.assert_array_equal(d.data.toarray(), [[1.5, 0], [0, 1]])


def test_bare_values_may_hold_quotes_after_their_first_character():
    d = parse("@relation r\n@attribute c {m\\'usica,b}\n@attribute x numeric\n@data\nm\\'usica,1\nb,2\n")
    assert d.attributes[0].values == ("m\\'usica", "b")
    np.testing.assert_array_equal(d.data, [[0, 1], [1, 2]])


def test_data_row_line_counts_only_rows():
    text = HEAD + "% c\n1,a\n\n2,b % c\n   \n3,a\n"
    assert [data_row_line(text, r) for r in range(4)] == [6, 8, 10, None]


def test_unreadable_paths_are_arff_errors(tmp_path):
    for path, what in [(tmp_path, "Is a directory"), (tmp_path / "nope.arff", "No such file")]:
        with pytest.raises(ArffError, match=rf"^{path}: cannot read the file \({what}") as info:
            read_arff(path)
        assert info.value.path == str(path) and info.value.line is None
