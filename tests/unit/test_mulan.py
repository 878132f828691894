"""Tests for mlgraph.data.mulan: labels by name in XML order, label and feature encoding,
missing values, error messages, and every real benchmark file against MANIFEST.tsv."""

from __future__ import annotations

import csv
import gzip
import hashlib
import re
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from shared_data import DATASETS, benchmark_file, needs_datasets

from mlgraph.data import ArffError, MultiLabelDataset, load_mulan, read_arff, read_label_names

NS = "http://mulan.sourceforge.net/labels"


def write_xml(path: Path, *labels: str) -> Path:
    path.write_text(
        f'<?xml version="1.0" encoding="utf-8"?>\n<labels xmlns="{NS}">\n'
        + "".join(f'<label name="{label}"></label>\n' for label in labels)
        + "</labels>\n"
    )
    return path


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


# Labels in the middle and out of order, a {1,0} label, a numeric 0/1 label, a YES/NO feature,
# an identifier, a string attribute and a 3-valued nominal feature.
TOY = """@relation toy
@attribute id {p1,p2,p3}
@attribute x numeric
@attribute L2 {0,1}
@attribute f {YES,NO}
@attribute L1 {1,0}
@attribute note string
@attribute colour {red,green,blue}
@attribute L3 numeric
@data
p1,0.5,1,NO,1,hello,blue,0
p2,1.5,0,YES,0,world,red,1
p3,2.5,1,YES,1,again,green,1
"""


@pytest.fixture
def toy(tmp_path):
    return write(tmp_path / "toy.arff", TOY), write_xml(tmp_path / "toy.xml", "L1", "L2", "L3")


def test_labels_by_name_in_xml_order_and_feature_encoding(toy):
    arff, xml = toy
    with pytest.warns(UserWarning, match="string/date attribute.*note"):
        ds = load_mulan(arff, xml, drop=["id"])
    assert isinstance(ds, MultiLabelDataset)
    assert ds.label_names == ("L1", "L2", "L3")
    # L1 is declared {1,0}: converted by value, so code 0 means label 1.
    np.testing.assert_array_equal(ds.Y, [[1, 1, 0], [0, 0, 1], [1, 1, 1]])
    assert ds.Y.dtype == np.int8
    assert ds.feature_names == ("x", "f", "colour=red", "colour=green", "colour=blue")
    np.testing.assert_array_equal(ds.X, [[0.5, 1, 0, 0, 1], [1.5, 0, 1, 0, 0], [2.5, 0, 0, 1, 0]])
    assert (ds.n_samples, ds.n_features, ds.n_labels) == (3, 5, 3)
    assert ds.cardinality == pytest.approx(2.0)
    assert ds.name == "toy" and ds.source == str(arff)
    assert ds.sha256 == hashlib.sha256(arff.read_bytes()).hexdigest()


def test_n_labels_first_and_last(tmp_path):
    text = "@relation r\n@attribute a {0,1}\n@attribute x numeric\n@attribute b {0,1}\n@data\n1,5,0\n0,6,1\n"
    arff = write(tmp_path / "r.arff", text)
    first = load_mulan(arff, n_labels=1, label_location="first", name="custom")
    assert first.name == "custom" and first.label_names == ("a",) and first.feature_names == ("x", "b")
    np.testing.assert_array_equal(first.Y, [[1], [0]])
    last = load_mulan(arff, n_labels=1)
    assert last.label_names == ("b",) and last.feature_names == ("a", "x")
    with pytest.raises(ValueError, match="XML file or n_labels"):
        load_mulan(arff)


def test_sparse_dataset_keeps_csr_and_omitted_nominal_labels(tmp_path):
    # Label L declared {1,0}: an omitted sparse entry is code 0, i.e. the value 1.
    text = (
        "@relation s\n@attribute L {1,0}\n@attribute x numeric\n@attribute y numeric\n"
        "@data\n{1 3}\n{0 0,2 4}\n"
    )
    arff = write(tmp_path / "s.arff", text)
    ds = load_mulan(arff, write_xml(tmp_path / "s.xml", "L"))
    assert isinstance(ds.X, sp.csr_matrix) and ds.X.dtype == np.float64
    np.testing.assert_array_equal(ds.X.toarray(), [[3, 0], [0, 4]])
    np.testing.assert_array_equal(ds.Y, [[1], [0]])


def test_labels_missing_from_the_arff_name_both_files(toy):
    arff, _ = toy
    xml = write_xml(arff.parent / "more.xml", "L1", "L9", "L8")
    with pytest.raises(ValueError) as info:
        load_mulan(arff, xml, drop=["id", "note"])
    message = str(info.value)
    assert "'L9'" in message and "'L8'" in message and str(xml) in message and str(arff) in message


@pytest.mark.parametrize(
    "declaration, values, match",
    [
        ("{0,1}", ("1", "?"), r"line 6, column 2: label 'L' is missing"),
        ("{a,b}", ("a", "b"), "label 'L' declares values other than 0 and 1"),
        ("numeric", ("1", "2"), "line 6, column 2: label 'L' has a value other than 0 or 1"),
        ("string", ("x", "y"), "string attribute"),
    ],
)
def test_bad_label_values(tmp_path, declaration, values, match):
    text = (
        f"@relation r\n@attribute x numeric\n@attribute L {declaration}\n"
        f"@data\n1,{values[0]}\n2,{values[1]}\n"
    )
    arff = write(tmp_path / "r.arff", text)
    with pytest.raises(ValueError, match=match) as info:
        load_mulan(arff, n_labels=1)
    assert str(arff) in str(info.value)


def test_drop_unknown_or_label_attribute(toy):
    arff, xml = toy
    with pytest.raises(ValueError, match=r"cannot drop.*'nope'"):
        load_mulan(arff, xml, drop=["nope"])
    with pytest.raises(ValueError, match="cannot drop label"):
        load_mulan(arff, xml, drop=["L1"])


def test_one_hot_needs_dense_data(tmp_path):
    text = "@relation s\n@attribute c {a,b,c}\n@attribute L {0,1}\n@data\n{0 b,1 1}\n{}\n"
    arff = write(tmp_path / "s.arff", text)
    with pytest.raises(ValueError, match=r"more than two values.*drop"):
        load_mulan(arff, n_labels=1)
    assert load_mulan(arff, n_labels=1, drop=["c"]).n_features == 0


MISSING = (
    "@relation m\n@attribute x numeric\n@attribute y numeric\n@attribute L {0,1}\n"
    "@data\n1,2,0\n3,?,1\n?,8,1\n"
)


def test_missing_feature_value_is_an_error_naming_attribute_and_row(tmp_path):
    arff = write(tmp_path / "m.arff", MISSING)
    with pytest.raises(ArffError, match=rf"^{arff}, line 7, column 2: missing value \(\?\) of feature 'y'"):
        load_mulan(arff, n_labels=1)


def test_missing_feature_values_mean_imputed(tmp_path):
    arff = write(tmp_path / "m.arff", MISSING)
    ds = load_mulan(arff, n_labels=1, missing="mean")
    np.testing.assert_array_equal(ds.X, [[1, 2], [3, 5], [2, 8]])


def test_missing_sparse_values_mean_imputed_counting_zeros(tmp_path):
    text = "@relation m\n@attribute x numeric\n@attribute L {0,1}\n@data\n{0 6}\n{0 ?}\n{1 1}\n"
    arff = write(tmp_path / "m.arff", text)
    with pytest.raises(ArffError, match="line 6, column 1: missing value .* feature 'x'"):
        load_mulan(arff, n_labels=1)
    np.testing.assert_array_equal(load_mulan(arff, n_labels=1, missing="mean").X.toarray(), [[6], [3], [0]])


def test_infinite_feature_value_is_always_an_error(tmp_path):
    arff = write(
        tmp_path / "i.arff",
        "@relation i\n@attribute x numeric\n@attribute L {0,1}\n@data\n1,0\ninf,1\n",
    )
    with pytest.raises(ArffError, match="line 6, column 1: infinite value of feature 'x'"):
        load_mulan(arff, n_labels=1, missing="mean")


# --------------------------------------------------------------------------------------------
# Label files
# --------------------------------------------------------------------------------------------
def test_read_label_names_flattens_a_hierarchy_in_document_order(tmp_path):
    xml = write(
        tmp_path / "h.xml",
        f'<labels xmlns="{NS}"><label name="B"><label name="B1"/><label name="B2"/></label>'
        '<label name="A"/></labels>',
    )
    assert read_label_names(xml) == ["B", "B1", "B2", "A"]


@pytest.mark.parametrize(
    "content, match",
    [
        ("<labels><label name='a'>", "not a well-formed"),
        (f'<labels xmlns="{NS}"></labels>', "no <label>"),
        (f'<labels xmlns="{NS}"><label name="a"/><label name="a"/></labels>', "more than once"),
        ("<classes/>", "root element"),
    ],
)
def test_bad_label_files_name_the_file(tmp_path, content, match):
    xml = write(tmp_path / "bad.xml", content)
    with pytest.raises(ValueError, match=match) as info:
        read_label_names(xml)
    assert str(xml) in str(info.value)


# --------------------------------------------------------------------------------------------
# Real benchmark files
# --------------------------------------------------------------------------------------------
def manifest_rows() -> list:
    if DATASETS is None:
        return [pytest.param({"name": "collection"}, marks=needs_datasets)]
    with open(DATASETS / "MANIFEST.tsv", newline="") as f:
        return [
            row
            for row in csv.DictReader(f, delimiter="\t")
            if row["files"].split(";")[0].endswith(".arff.gz")
        ]


@needs_datasets
@pytest.mark.parametrize("row", manifest_rows(), ids=lambda row: row["name"])
def test_real_dataset_matches_the_manifest(row):
    name = row["name"]
    drop = ["protein"] if name == "genbase" else []
    ds = load_mulan(DATASETS / f"{name}.arff.gz", DATASETS / f"{name}.xml", drop=drop)
    n_features = int(row["n_features"]) - len(drop)  # genbase: 1186 published, 1185 real
    assert (ds.n_samples, ds.n_features, ds.n_labels) == (
        int(row["n_instances"]),
        n_features,
        int(row["n_labels"]),
    )
    assert round(ds.cardinality, 4) == pytest.approx(float(row["label_cardinality"]))
    assert ds.sha256 == row["sha256"].split(";")[0]
    assert sp.issparse(ds.X) == (row["format"] == "sparse")
    assert ds.label_names == tuple(read_label_names(DATASETS / f"{name}.xml"))


@pytest.mark.parametrize("name", ["yeast", "enron"])
def test_labels_follow_the_xml_not_the_arff_order(name):
    arff, xml = benchmark_file(f"{name}.arff.gz"), benchmark_file(f"{name}.xml")
    ds = load_mulan(arff, xml)
    raw = read_arff(arff)
    names = [a.name for a in raw.attributes]
    in_arff_order = [n for n in names if n in set(ds.label_names)]
    assert list(ds.label_names) == read_label_names(xml) != in_arff_order
    data = raw.data.toarray() if raw.sparse else raw.data
    for k, label in enumerate(ds.label_names):
        np.testing.assert_array_equal(ds.Y[:, k], data[:, names.index(label)])


def test_slashdot_labels_are_the_first_attributes():
    ds = load_mulan(benchmark_file("slashdot.arff.gz"), benchmark_file("slashdot.xml"))
    names = [a.name for a in read_arff(benchmark_file("slashdot.arff.gz")).attributes]
    assert set(names[:22]) == set(ds.label_names)
    assert ds.feature_names == tuple(names[22:])
    never = [label for label, count in zip(ds.label_names, ds.Y.sum(axis=0), strict=True) if count == 0]
    assert sorted(never) == ["Main", "Meta"]


def test_genbase_features_are_yes_no_codes():
    ds = load_mulan(benchmark_file("genbase.arff.gz"), benchmark_file("genbase.xml"), drop=["protein"])
    assert "protein" not in ds.feature_names
    assert set(np.unique(ds.X)) == {0.0, 1.0}  # YES=0, NO=1 (index in the declared list)
    raw = benchmark_file("genbase.arff.gz").read_bytes()
    text = (gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw).decode()
    assert "@attribute PS00010 {YES, NO}" in text


# --------------------------------------------------------------------------------------------
# MEKA headers: the label count in the relation name
# --------------------------------------------------------------------------------------------
CORPUS = Path(__file__).parent / "arff_corpus"


def test_meka_header_gives_the_first_labels():
    ds = load_mulan(CORPUS / "meka_first.arff")
    assert ds.label_names == ("A", "B") and ds.feature_names == ("x", "y")
    np.testing.assert_array_equal(ds.Y, [[1, 0], [0, 1], [1, 1]])
    np.testing.assert_array_equal(ds.X, [[0.5, 1], [1.5, 2], [2.5, 3]])


def binary(relation: str) -> str:
    """Four {0,1} attributes A, B, C, D and one row, under the given relation name."""
    attributes = "".join(f"@attribute {a} {{0,1}}\n" for a in "ABCD")
    return f"@relation {relation}\n{attributes}@data\n1,0,1,1\n"


@pytest.mark.parametrize(
    "relation, labels",
    [
        ("'T: -C -2'", ("C", "D")),  # negative: the last two
        ("'T: -C 1 -split-number 4'", ("A",)),
        # Reorder moved MEKA's first two attributes (the labels) behind the other two;
        # an instance filter changes nothing
        (
            "'T: -C 2-weka.filters.unsupervised.attribute.Reorder-R3-last,first-2"
            "-weka.filters.unsupervised.instance.SparseToNonSparse'",
            ("C", "D"),
        ),
        # reversed: MEKA's first label is now the last attribute; labels keep MEKA's order
        ("'T: -C 2-weka.filters.unsupervised.attribute.Reorder-Rlast-first'", ("D", "C")),
    ],
)
def test_meka_header_count_and_filters(tmp_path, relation, labels):
    ds = load_mulan(write(tmp_path / "t.arff", binary(relation)))
    assert ds.label_names == labels
    assert set(ds.feature_names) == set("ABCD") - set(labels)


@pytest.mark.parametrize(
    "relation, match",
    [
        ("'T: -C 4'", "-C 4, the file has 4 attributes"),
        ("'T: -C 2-weka.filters.unsupervised.attribute.Remove-R1'", "attribute filter"),
        ("'T: -C 2-weka.filters.unsupervised.attribute.Reorder-R1,2'", "drops or repeats"),
        ("'T: -C 2-weka.filters.unsupervised.attribute.Reorder-R1-zz'", "not understood"),
        ("'no options'", "give the MULAN XML file or n_labels"),
    ],
)
def test_meka_header_errors(tmp_path, relation, match):
    text = (CORPUS / "meka_first.arff").read_text()
    arff = write(tmp_path / "t.arff", text.replace("'TOY-F: -C 2 -split-number 3'", relation))
    with pytest.raises(ArffError, match=match) as info:
        load_mulan(arff)
    assert str(info.value).startswith(str(arff)) and "zz" not in str(info.value)


def test_explicit_n_labels_wins_over_the_meka_header(tmp_path):
    ds = load_mulan(write(tmp_path / "t.arff", binary("'T: -C 2'")), n_labels=1)
    assert ds.label_names == ("D",)


@pytest.mark.parametrize("name", ["slashdot", "langlog"])
def test_meka_header_of_real_files_agrees_with_the_xml(name):
    """slashdot: '-C 22' (first 22); langlog: '-C 75' then Reorder-R76-last,first-75 (last 75)."""
    arff = benchmark_file(f"{name}.arff.gz")
    by_header = load_mulan(arff)
    by_xml = load_mulan(arff, benchmark_file(f"{name}.xml"))
    assert sorted(by_header.label_names) == sorted(by_xml.label_names)
    order = [by_header.label_names.index(label) for label in by_xml.label_names]
    np.testing.assert_array_equal(by_header.Y[:, order], by_xml.Y)
    assert by_header.feature_names == by_xml.feature_names


# --------------------------------------------------------------------------------------------
# Missing values, empty files, unreadable paths
# --------------------------------------------------------------------------------------------
def test_missing_zero_policy_dense_and_sparse(tmp_path):
    dense = load_mulan(write(tmp_path / "m.arff", MISSING), n_labels=1, missing="zero")
    np.testing.assert_array_equal(dense.X, [[1, 2], [3, 0], [0, 8]])
    text = "@relation m\n@attribute x numeric\n@attribute L {0,1}\n@data\n{0 6}\n{0 ?}\n{1 1}\n"
    sparse = load_mulan(write(tmp_path / "s.arff", text), n_labels=1, missing="zero")
    np.testing.assert_array_equal(sparse.X.toarray(), [[6], [0], [0]])
    assert sparse.X.nnz == 1
    with pytest.raises(ValueError, match="missing='drop'"):
        load_mulan(tmp_path / "s.arff", n_labels=1, missing="drop")


def test_missing_one_hot_feature_names_its_attribute_column(tmp_path):
    text = "@relation m\n@attribute c {a,b,c}\n@attribute L {0,1}\n@data\na,0\n\n% c\n?,1\n"
    with pytest.raises(ArffError, match=r"line 8, column 1: missing value \(\?\) of feature 'c=a'"):
        load_mulan(write(tmp_path / "m.arff", text), n_labels=1)


def test_header_without_data_rows(tmp_path):
    arff = write(tmp_path / "h.arff", "@relation h\n@attribute x numeric\n@attribute L {0,1}\n@data\n")
    with pytest.raises(ArffError, match=rf"^{arff}: no data rows"):
        load_mulan(arff, n_labels=1)


def test_directories_and_bad_gzip_are_clear_errors(tmp_path, toy):
    arff, xml = toy
    with pytest.raises(ArffError, match=rf"^{tmp_path}: cannot read the file \(Is a directory\)"):
        load_mulan(tmp_path, xml)
    with pytest.raises(ArffError, match=rf"^{tmp_path}: cannot read the file \(Is a directory\)"):
        load_mulan(arff, tmp_path, drop=["id"])
    bad = tmp_path / "bad.arff.gz"
    bad.write_bytes(gzip.compress(arff.read_bytes())[:-12])
    with pytest.raises(ArffError, match=rf"^{bad}: corrupt gzip data"):
        load_mulan(bad, xml)


def test_xml_errors_name_line_and_column_not_content(tmp_path):
    xml = write(tmp_path / "s.xml", "root:$6$zzsecret:19000:0:99999:7:::\n")
    with pytest.raises(ArffError) as info:
        read_label_names(xml)
    assert re.match(rf"{xml}, line 1, column \d+: not a well-formed", str(info.value))
    assert "zz" not in str(info.value)


def test_escaped_label_names_match_the_xml(tmp_path):
    text = (
        "@relation r\n@attribute x numeric\n@attribute TAG_m\\'usica {0,1}\n"
        "@attribute TAG_dise\\~no {0,1}\n@data\n1,1,0\n2,0,1\n"
    )
    arff = write(tmp_path / "r.arff", text)
    xml = write(
        tmp_path / "r.xml",
        f'<labels xmlns="{NS}"><label name="TAG_m\\\'usica"/><label name="TAG_dise\\~no"/></labels>',
    )
    ds = load_mulan(arff, xml)
    assert ds.label_names == ("TAG_m\\'usica", "TAG_dise\\~no")
    np.testing.assert_array_equal(ds.Y, [[1, 0], [0, 1]])


def test_date_attributes_are_dropped_like_strings(tmp_path):
    text = (
        "@relation d\n@attribute when date 'yyyy-MM-dd'\n@attribute x numeric\n"
        "@attribute L {0,1}\n@data\n2020-01-02,1,0\n2021-03-04,2,1\n"
    )
    with pytest.warns(UserWarning, match="string/date attribute.*'when'.*dropped"):
        ds = load_mulan(write(tmp_path / "d.arff", text), n_labels=1)
    assert ds.feature_names == ("x",)
