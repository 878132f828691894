"""Data notes of the loaders (mlgraph.data.DataWarning): a binary attribute among or next to the
labels that the MULAN XML file leaves out, and features constant over the rows read. Both are
warnings only: the returned data are those of a load with the warnings ignored."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from shared_data import local_dataset, needs_datasets

from mlgraph.data import (
    ConstantFeatureWarning,
    DataWarning,
    UnlistedLabelWarning,
    dataset_names,
    load_dataset,
    load_mulan,
)
from mlgraph.data.mulan import constant_features
from mlgraph.data.multilabel_csv import load_csv_dataset
from mlgraph.data.registry import BUILTIN_DIR, registry
from mlgraph.data.splits import load_fixed_split

NS = "http://mulan.sourceforge.net/labels"


def write_xml(path: Path, *labels: str) -> Path:
    path.write_text(f'<labels xmlns="{NS}">' + "".join(f'<label name="{n}"/>' for n in labels) + "</labels>")
    return path


def arff(path: Path, attributes: list[tuple[str, str]], rows: list[str]) -> Path:
    header = "".join(f"@attribute {name} {kind}\n" for name, kind in attributes)
    path.write_text(f"@relation r\n{header}@data\n" + "\n".join(rows) + "\n")
    return path


def load(*args, **kwargs):
    """load_mulan, with the DataWarnings it emits (every one, however often it was seen)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        data = load_mulan(*args, **kwargs)
    return data, [w for w in caught if issubclass(w.category, DataWarning)]


def quiet(*args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        return load_mulan(*args, **kwargs)


def of(caught, category) -> list[str]:
    return [str(w.message) for w in caught if issubclass(w.category, category)]


# Two numeric features, a far-away {0,1} feature, then six {0,1} labels (L1 {1,0}: any order),
# a numeric 0/1 label and a nominal {a,b} attribute after them. Rows vary every column.
ATTRIBUTES = [
    ("far", "{0,1}"),
    ("x", "numeric"),
    ("y", "numeric"),
    ("L1", "{1,0}"),
    ("L2", "{0,1}"),
    ("L3", "{0,1}"),
    ("L4", "{0,1}"),
    ("L5", "{0,1}"),
    ("L6", "{0,1}"),
    ("N7", "numeric"),
    ("tail", "{a,b}"),
]
ROWS = [
    "1,0.5,3,1,0,1,0,1,0,1,a",
    "0,1.5,4,0,1,1,0,0,1,0,b",
    "1,2.5,5,1,1,0,1,0,0,1,a",
    "0,3.5,6,0,0,0,1,1,1,0,b",
]
ALL_LABELS = ("L1", "L2", "L3", "L4", "L5", "L6", "N7")


@pytest.fixture
def data_file(tmp_path):
    return arff(tmp_path / "d.arff", ATTRIBUTES, ROWS)


@pytest.mark.parametrize(
    "omitted, named",
    [
        (["L4"], ["L4"]),  # inside the block of listed labels
        (["L1"], ["L1"]),  # right before the first listed label, a {1,0} one
        (["N7"], ["N7"]),  # right after the last: numeric, only 0 and 1
        (["L1", "L2"], ["L1", "L2"]),  # a run of two before the block
        (["L2", "L5"], ["L2", "L5"]),  # two gaps inside
        (["L1", "N7"], ["L1", "N7"]),  # one on each side
    ],
)
def test_an_unlisted_label_among_or_next_to_the_labels_is_named(tmp_path, data_file, omitted, named):
    xml = write_xml(tmp_path / "d.xml", *[n for n in ALL_LABELS if n not in omitted])
    data, caught = load(data_file, xml)
    [message] = of(caught, UnlistedLabelWarning)
    assert message.startswith(f"{data_file}: binary attribute")
    assert all(f"'{name}'" in message for name in named) and "'far'" not in message
    assert str(xml) in message and "read as" in message and "MULAN" in message and "<label name=" in message
    # still read as features, as MULAN does: the data are those of a quiet load
    assert set(named) <= set(data.feature_names) and not set(named) & set(data.label_names)
    same = quiet(data_file, xml)
    np.testing.assert_array_equal(data.X, same.X)
    np.testing.assert_array_equal(data.Y, same.Y)
    assert data.feature_names == same.feature_names and data.label_names == same.label_names


def test_the_omitted_label_keeps_its_values_as_a_feature_column(tmp_path, data_file):
    xml = write_xml(tmp_path / "d.xml", *ALL_LABELS[1:])
    data, _ = load(data_file, xml)
    assert data.feature_names == ("far", "x", "y", "L1", "tail")
    # L1 is declared {1,0}: as a feature it is its code (value 1 -> 0), as before
    np.testing.assert_array_equal(
        data.X, [[1, 0.5, 3, 0, 0], [0, 1.5, 4, 1, 1], [1, 2.5, 5, 0, 0], [0, 3.5, 6, 1, 1]]
    )
    np.testing.assert_array_equal(data.Y[:, 0], [0, 1, 1, 0])  # L2


@pytest.mark.parametrize(
    "listed, drop",
    [
        (ALL_LABELS, ()),  # every label listed
        (ALL_LABELS, ["far"]),
        (ALL_LABELS[::-1], ()),  # in another order than the ARFF file's
    ],
)
def test_no_warning_when_every_label_is_listed(tmp_path, data_file, listed, drop):
    _, caught = load(data_file, write_xml(tmp_path / "d.xml", *listed), drop=drop)
    assert of(caught, UnlistedLabelWarning) == []


def test_non_binary_and_far_away_attributes_are_not_named(tmp_path):
    # `y` (numeric 3..6) sits right before the labels, `tail` {a,b} right after, `far` {0,1}
    # two attributes away from them: none of them is a label left out of the XML.
    attributes = [("far", "{0,1}"), ("x", "numeric"), ("y", "numeric"), ("L1", "{0,1}"), ("L2", "{0,1}")]
    attributes += [("tail", "{a,b}")]
    rows = ["1,0.5,3,1,0,a", "0,1.5,4,0,1,b", "1,2.5,5,1,1,a"]
    path = arff(tmp_path / "n.arff", attributes, rows)
    _, caught = load(path, write_xml(tmp_path / "n.xml", "L1", "L2"))
    assert caught == []


def test_a_numeric_attribute_with_other_values_next_to_the_labels_is_not_named(tmp_path):
    path = arff(tmp_path / "v.arff", ATTRIBUTES, [row.replace(",1,a", ",2,a", 1) for row in ROWS])
    xml = write_xml(tmp_path / "v.xml", *ALL_LABELS[:-1])  # N7 left out, but it holds a 2
    _, caught = load(path, xml)
    assert of(caught, UnlistedLabelWarning) == []


def test_a_block_of_binary_features_before_the_labels_is_not_named(tmp_path):
    """bibtex's layout (binary words, then the labels) and flags' (five {0,1} features after
    numeric ones, then seven labels): a run longer than half the label list is features."""
    words = [(f"w{k}", "{0,1}") for k in range(12)]
    labels = [(f"L{k}", "{0,1}") for k in range(4)]
    rows = [",".join(str((r + k) % 2) for k in range(16)) for r in range(3)]
    bibtex = arff(tmp_path / "b.arff", words + labels, rows)
    _, caught = load(bibtex, write_xml(tmp_path / "b.xml", *(n for n, _ in labels)))
    assert caught == []

    flags = [("sunstars", "numeric")] + [(f"f{k}", "{0,1}") for k in range(5)]
    flags += [(f"c{k}", "{0,1}") for k in range(7)]
    rows = [f"{r + 2}," + ",".join(str((r + k) % 2) for k in range(12)) for r in range(3)]
    path = arff(tmp_path / "f.arff", flags, rows)
    _, caught = load(path, write_xml(tmp_path / "f.xml", *(f"c{k}" for k in range(7))))
    assert caught == []
    # one of its labels left out right after the block is still named
    _, caught = load(path, write_xml(tmp_path / "g.xml", *(f"c{k}" for k in range(6))))
    assert len(of(caught, UnlistedLabelWarning)) == 1 and "'c6'" in of(caught, UnlistedLabelWarning)[0]


def test_sparse_file_unlisted_label(tmp_path):
    text = (
        "@relation s\n@attribute x numeric\n@attribute A numeric\n@attribute B {0,1}\n"
        "@attribute C {0,1}\n@data\n{0 2,1 1,2 1}\n{0 3,3 1}\n{1 1,2 1,3 1}\n"
    )
    path = tmp_path / "s.arff"
    path.write_text(text)
    data, caught = load(path, write_xml(tmp_path / "s.xml", "B", "C"))
    assert len(of(caught, UnlistedLabelWarning)) == 1 and "'A'" in of(caught, UnlistedLabelWarning)[0]
    assert isinstance(data.X, sp.csr_matrix)
    np.testing.assert_array_equal(data.X.toarray(), [[2, 1], [3, 0], [0, 1]])
    # without an XML file the labels are positional: nothing can be left out
    _, caught = load(path, n_labels=2)
    assert of(caught, UnlistedLabelWarning) == []


# --------------------------------------------------------------------------------------------
# Constant features
# --------------------------------------------------------------------------------------------
DENSE = (
    "@relation c\n@attribute zero numeric\n@attribute five numeric\n@attribute x numeric\n"
    "@attribute f {YES,NO}\n@attribute g {YES,NO}\n@attribute L {0,1}\n@data\n"
    "0,5,1,YES,NO,1\n0,5,2,YES,YES,0\n0,5,3,YES,NO,1\n0,5,4,YES,NO,0\n"
)


def test_constant_features_dense(tmp_path):
    path = tmp_path / "c.arff"
    path.write_text(DENSE)
    data, caught = load(path, n_labels=1)
    [message] = of(caught, ConstantFeatureWarning)
    assert message.startswith(f"{path}: 3 of 5 features are constant over all 4 rows")
    assert "\n" not in message
    np.testing.assert_array_equal(
        data.X, [[0, 5, 1, 0, 1], [0, 5, 2, 0, 0], [0, 5, 3, 0, 1], [0, 5, 4, 0, 1]]
    )
    np.testing.assert_array_equal(constant_features(data.X), [True, True, False, True, False])


def test_constant_features_sparse(tmp_path):
    # column 0 never stored (all 0), 1 stored in every row with one value (all 7), 2 stored in
    # some rows only (7 and 0), 3 stored everywhere with two values, 4 all 0 but one row
    text = (
        "@relation s\n" + "".join(f"@attribute a{k} numeric\n" for k in range(5)) + "@attribute L {0,1}\n"
        "@data\n{1 7,2 7,3 1,5 1}\n{1 7,3 2}\n{1 7,2 7,3 1,4 -1}\n{1 7,3 1,5 1}\n"
    )
    path = tmp_path / "s.arff"
    path.write_text(text)
    data, caught = load(path, n_labels=1)
    assert isinstance(data.X, sp.csr_matrix)
    [message] = of(caught, ConstantFeatureWarning)
    assert message.startswith(f"{path}: 2 of 5 features are constant over all 4 rows")
    expected = [True, True, False, False, False]
    np.testing.assert_array_equal(constant_features(data.X), expected)
    np.testing.assert_array_equal(constant_features(data.X.tocsc()), expected)
    np.testing.assert_array_equal(constant_features(data.X.tocoo()), expected)
    np.testing.assert_array_equal(
        data.X.toarray(), [[0, 7, 7, 1, 0], [0, 7, 0, 2, 0], [0, 7, 7, 1, -1], [0, 7, 0, 1, 0]]
    )


def test_constant_features_agree_with_the_dense_range_on_random_sparse_data():
    rng = np.random.default_rng(3)
    for density in (0.0, 0.05, 0.5, 1.0):
        X = sp.random(40, 30, density=density, format="csr", rng=rng)
        X.data = np.round(X.data)  # many stored values equal, some explicit zeros
        X = sp.hstack([X, sp.csr_matrix(np.full((40, 1), 2.0))], format="csr")  # one nonzero value
        dense = X.toarray()
        expected = dense.max(axis=0) == dense.min(axis=0)
        for form in (X, X.tocsc(), X.tocoo(), dense):
            np.testing.assert_array_equal(constant_features(form), expected)


def test_constant_features_ignore_missing_values():
    X = np.array([[1.0, np.nan, 0.0], [1.0, np.nan, 1.0], [np.nan, np.nan, 2.0]])
    np.testing.assert_array_equal(constant_features(X), [True, True, False])
    np.testing.assert_array_equal(constant_features(sp.csr_matrix(X)), [True, True, False])


def test_no_constant_warning_when_every_feature_varies(tmp_path, data_file):
    _, caught = load(data_file, write_xml(tmp_path / "d.xml", *ALL_LABELS))
    assert caught == []


def test_csv_tables_are_checked_too(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("x,c,L\n1,3,0\n2,3,1\n")
    with pytest.warns(ConstantFeatureWarning, match=r"t\.csv: 1 of 2 features are constant over all 2 rows"):
        data = load_csv_dataset(path, ["L"])
    np.testing.assert_array_equal(data.X, [[1, 3], [2, 3]])


def test_one_warning_per_split_over_both_files(tmp_path):
    attributes = [("x", "numeric"), ("k", "numeric"), ("t", "numeric"), ("L1", "{0,1}"), ("L2", "{0,1}")]
    # k is 9 in both files (constant); t is 5 in training and 6 in test (constant in each file
    # alone, not over the split); L1 is not listed and named once, for the training file
    train = arff(tmp_path / "a-train.arff", attributes, ["1,9,5,0,1", "2,9,5,1,0"])
    test = arff(tmp_path / "a-test.arff", attributes, ["3,9,6,1,1"])
    xml = write_xml(tmp_path / "a.xml", "L2")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        data = load_fixed_split("a", arff=str(train), test_arff=str(test), xml=str(xml))
    [constant] = of(caught, ConstantFeatureWarning)
    assert constant.startswith(f"{train} + {test}: 1 of 4 features are constant over all 3 rows")
    [unlisted] = of(caught, UnlistedLabelWarning)
    assert unlisted.startswith(f"{train}: binary attribute 'L1'")
    np.testing.assert_array_equal(data.X, [[1, 9, 5, 0], [2, 9, 5, 1], [3, 9, 6, 1]])
    np.testing.assert_array_equal(data.Y, [[1], [0], [1]])


def test_data_warnings_are_user_warnings_and_filter_as_one():
    assert issubclass(DataWarning, UserWarning)
    assert issubclass(UnlistedLabelWarning, DataWarning) and issubclass(ConstantFeatureWarning, DataWarning)


def test_string_attributes_dropped_is_a_data_warning(tmp_path):
    text = "@relation s\n@attribute s string\n@attribute x numeric\n@attribute L {0,1}\n@data\na,1,0\nb,2,1\n"
    path = tmp_path / "s.arff"
    path.write_text(text)
    with pytest.warns(DataWarning, match="string/date attribute"):
        load_mulan(path, n_labels=1)


# --------------------------------------------------------------------------------------------
# Shipped and collected datasets
# --------------------------------------------------------------------------------------------
SHIPPED = sorted(
    name
    for name in dataset_names()
    if (BUILTIN_DIR / f"{name}.arff.gz").exists() and "xml" in registry()[name].roles
)


@pytest.mark.parametrize("name", SHIPPED)
def test_the_shipped_datasets_load_without_data_notes(name):
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataWarning)
        load_dataset(name)


# Features constant over all rows of each collected benchmark; the others have none.
CONSTANT = {"genbase": 1073, "langlog": 6}


@needs_datasets
@pytest.mark.parametrize("name", [n for n in dataset_names() if n != "mediamill"])
def test_data_notes_of_the_collected_benchmarks(name):
    local_dataset(name)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        data = load_dataset(name)
    notes = [str(w.message) for w in caught if issubclass(w.category, DataWarning)]
    expected = CONSTANT.get(name)
    assert len(notes) == (1 if expected else 0), notes
    if expected:
        assert re.search(rf": {expected} of {data.n_features} features are constant over all", notes[0])
