"""Tests for mlgraph.data.arff: hand-written files parsed to exact arrays, both parsers
(vectorised and line-by-line) agreeing, error messages, and parity with liac-arff."""

from __future__ import annotations

import gzip
import io

import numpy as np
import pytest
import scipy.sparse as sp
from shared_data import DATASETS, needs_datasets

from mlgraph.data import ArffError, read_arff
from mlgraph.data.arff import Attribute, parse_arff

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
    d = parse(
        "@relation r\n@attribute id string\n@attribute x numeric\n"
        "@data\nb,1\na,2\nb,3\n'c d',4\n?,5\n"
    )
    np.testing.assert_array_equal(d.data[:, 0], [0, 1, 0, 2, NAN])


def test_numeric_nominal_values_match_by_number():
    d = parse(
        "@relation r\n@attribute y {0,1,2}\n@attribute z {10,20}\n@data\n1.0,20\n2,1e1\n0,10\n"
    )
    np.testing.assert_array_equal(d.data, [[1, 1], [2, 0], [0, 0]])


def test_empty_data_section():
    d = parse("@relation r\n@attribute x numeric\n@attribute y {0,1}\n@data\n\n% nothing\n")
    assert d.data.shape == (0, 2) and not d.sparse


def test_crlf_line_endings():
    d = parse(
        "@relation r\r\n@attribute x numeric\r\n@attribute y {a,b}\r\n@data\r\n1,b\r\n2,a\r\n"
    )
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
    d = parse(
        "@relation s\n@attribute x numeric\n@attribute c {'a b',c}\n@data\n{1 'a b'}\n{0 2,1 c}\n"
    )
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
    """A comment line inside the data section sends the file through the line parser."""
    head, rows = text.split("@data\n")
    lines = rows.splitlines()
    commented = head + "@data\n% c\n" + "\n% c\n\n".join(lines) + "\n"
    fast, slow = parse(text), parse(commented)
    np.testing.assert_array_equal(dense(fast.data), dense(slow.data))
    assert fast.sparse == slow.sparse


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

ERRORS = [
    ("@relation r\n@attribute x numerix\n@data\n", 2, "type 'numerix' is unknown"),
    ("@relation r\n@attribute x numeric\n", 2, "missing @data"),
    (
        "@relation r\n@attribute x numeric\n@attribute x real\n@data\n",
        3,
        "duplicate attribute name 'x'",
    ),
    ("@relation r\n@attribute c {a,b\n@data\n", 2, "missing closing brace"),
    ("@relation r\n@attribute 'x numeric\n@data\n", 2, "badly quoted"),
    ("@relation r\nhello\n@data\n", 2, "expected @relation, @attribute or @data"),
    ("@attribute x numeric\n@data\n", 1, "before @relation"),
    ("@relation r\n@attribute x relational\n@data\n", 2, "'relational' is not supported"),
    (HEAD + "1,a\n2,z\n", 6, "value 'z' is not declared for nominal attribute 'c'"),
    (HEAD + "1,a\n2\n", 6, "expected 2 values, found 1"),
    (HEAD + "1,a\n\n2,a,3\n", 7, "expected 2 values, found 3"),
    (HEAD + "1,a\nabc,b\n", 6, "non-numeric value 'abc' for numeric attribute 'x'"),
    (HEAD + "1,a\n,b\n", 6, "empty value"),
    (HEAD + "1,a\n1,'a\n", 6, "bad quoting"),
    (SPARSE_HEAD + "{0 1}\n{2 1}\n", 6, "bad sparse index 2"),
    (SPARSE_HEAD + "{0 1}\n{-1 1}\n", 6, "bad sparse index -1"),
    (SPARSE_HEAD + "{0 1}\n{x 1}\n", 6, "bad sparse index 'x'"),
    (SPARSE_HEAD + "{1 1,0 1}\n", 5, "indices must increase"),
    (SPARSE_HEAD + "{0 1}\n{1 2}\n", 6, "value '2' is not declared"),
    (SPARSE_HEAD + "{0 1}\n{1}\n", 6, "bad sparse entry '1'"),
    (SPARSE_HEAD + "{0 1}\n{0 1 1}\n", 6, "bad sparse entry '0 1 1'"),
    (SPARSE_HEAD + "{0 1}\n{0 z}\n", 6, "non-numeric value 'z'"),
    (SPARSE_HEAD + "{0 1}\n1,1\n", 6, "expected a sparse row"),
    ("@relation r\n@attribute s string\n@data\n{0 x}\n", 4, "not supported in sparse data"),
]


@pytest.mark.parametrize("text, line, what", ERRORS)
def test_error_names_file_line_and_problem(text, line, what):
    with pytest.raises(ArffError) as info:
        parse(text)
    message = str(info.value)
    assert message.startswith(f"toy.arff, line {line}: "), message
    assert what in message
    assert info.value.line == line and info.value.source == "toy.arff"


def test_error_names_the_path_of_a_file(tmp_path):
    path = tmp_path / "broken.arff"
    path.write_text(HEAD + "1,a\n2,a\n3,q\n")
    with pytest.raises(ValueError, match=rf"{path}, line 7: value 'q'"):
        read_arff(path)


# --------------------------------------------------------------------------------------------
# Parity with liac-arff on real benchmark files
# --------------------------------------------------------------------------------------------
def liac_matrix(text: str, shape: tuple[int, int], sparse: bool) -> np.ndarray:
    """liac-arff's reading of the file as a dense float matrix (None -> NaN)."""
    arff = pytest.importorskip("arff")
    ref = arff.loads(text, encode_nominal=True, return_type=arff.COO if sparse else arff.DENSE)
    if not sparse:
        return np.array(
            [[NAN if v is None else v for v in row] for row in ref["data"]], dtype=float
        )
    values, rows, cols = ref["data"]
    out = np.zeros(shape)
    out[rows, cols] = [NAN if v is None else v for v in values]
    return out


@needs_datasets
@pytest.mark.parametrize("name", ["emotions", "scene", "medical", "genbase", "slashdot"])
def test_same_matrix_as_liac_arff(name):
    path = DATASETS / f"{name}.arff.gz"
    d = read_arff(path)
    text = gzip.decompress(path.read_bytes()).decode()
    np.testing.assert_array_equal(dense(d.data), liac_matrix(text, d.data.shape, d.sparse))
    assert d.sparse == (name in ("medical", "slashdot"))


@pytest.mark.parametrize("lead", ["", "% a comment forces the line parser\n"])
def test_fast_and_line_parsers_agree_on_odd_sparse_entries(lead):
    header = "@relation r\n@attribute a numeric\n@attribute b numeric\n@attribute c numeric\n@data\n"
    with pytest.raises(ArffError, match=r"line \d+: bad sparse entry '0 1 5'"):
        parse_arff(header + lead + "{0 1 5,1 2}\n")
    # An integral decimal index is read the same way by both parsers.
    np.testing.assert_array_equal(parse_arff(header + lead + "{1.0 3}\n").data.toarray(), [[0, 3, 0]])
