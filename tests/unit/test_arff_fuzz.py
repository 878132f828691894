"""Fuzz test of the ARFF and MULAN XML readers.

Seeded mutations of slices of the shipped files (``mlgraph/data/builtin``: header plus the first
rows, dense, and a sparse rendering of the same rows): truncation, byte flips, wrong arity, bad
tokens, deleted and duplicated lines, corrupt gzip. Every case must either load, or raise
:class:`ArffError` whose message starts with the file's name and does not quote the injected
token; any other exception, or a parse slower than the time guard, fails. A case that loads is
compared with the original: identical, or (a valid but different file) the expected result
where the mutation allows one to be computed (deleted or duplicated data rows).
"""

from __future__ import annotations

import gzip
import signal
import warnings
from collections import Counter
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from mlgraph.data import ArffError, load_mulan, read_label_names
from mlgraph.data.arff import ArffData, parse_arff
from mlgraph.data.registry import BUILTIN_DIR

SEED = 16_14
ROWS = 8  # data rows kept per slice: small files keep a few thousand cases fast
CASES = 600  # per slice
TIME_GUARD_S = 5.0
MARK = "QZX"  # injected into bad tokens; an error message must never repeat it
BAD_TOKENS = [
    "", "?", "'", '"', "{", "}", "%", ",", "\\", "QZX", "'QZX", '"QZX"x', "1e999", "-inf", "nan",
    "1.5.5QZX", "0x1QZX", "\x00", "é", "\u2028", "@data", "{0 QZX}", "1 2", " ", "@attribute",
]  # fmt: skip


def builtin_slices() -> dict[str, str]:
    """name -> ARFF text: header and the first ROWS rows of each shipped file, plus a sparse
    rendering of the emotions rows."""
    slices = {}
    for path in sorted(BUILTIN_DIR.glob("*.arff.gz")):
        text = gzip.decompress(path.read_bytes()).decode()
        head, data = text.split("@data\n", 1)
        rows = [r for r in data.split("\n") if r.strip()][:ROWS]
        slices[path.name.removesuffix(".arff.gz")] = head + "@data\n" + "\n".join(rows) + "\n"
    head, data = slices["emotions"].split("@data\n", 1)
    sparse_rows = []
    for row in data.split("\n")[:-1]:
        entries = [f"{j} {v}" for j, v in enumerate(row.split(",")) if float(v) != 0]
        sparse_rows.append("{" + ",".join(entries) + "}")
    slices["emotions-sparse"] = head + "@data\n" + "\n".join(sparse_rows) + "\n"
    return slices


SLICES = builtin_slices()


# --------------------------------------------------------------------------------------------
# Mutators: (rng, text) -> (mutated bytes, expectation, injected token or None). What a
# mutant that still parses may differ in: ("rows", indices): exactly those original rows;
# ("prefix",): the first rows, the last one possibly cut short; ("local", k): at most k rows;
# ("same",): nothing (gzip's CRC must catch any change).
# --------------------------------------------------------------------------------------------
def data_lines(text: str) -> list[int]:
    lines = text.split("\n")
    start = lines.index("@data") + 1
    return [k for k in range(start, len(lines)) if lines[k].strip()]


def truncate(rng, text):
    raw = text.encode()
    return raw[: int(rng.integers(0, len(raw)))], ("prefix",), None


def flip_bytes(rng, text):
    raw = bytearray(text.encode())
    flips = int(rng.integers(1, 6))
    for pos in rng.integers(0, len(raw), size=flips):
        raw[pos] = int(rng.integers(0, 256))
    return bytes(raw), ("local", flips), None


def wrong_arity(rng, text):
    lines = text.split("\n")
    k = int(rng.choice(data_lines(text)))
    line = lines[k]
    if rng.random() < 0.5:  # drop a value (or a sparse entry)
        lines[k] = line.rsplit(",", 1)[0] + ("}" if line.endswith("}") else "")
    else:  # add one
        lines[k] = line[:-1] + ",1}" if line.endswith("}") else line + ",1"
    return "\n".join(lines).encode(), ("local", 1), None


def bad_token(rng, text):
    lines = text.split("\n")
    k = int(rng.integers(0, len(lines)))
    fields = lines[k].split(",")
    token = str(rng.choice(BAD_TOKENS))
    fields[int(rng.integers(0, len(fields)))] = token
    lines[k] = ",".join(fields)
    return "\n".join(lines).encode(), ("local", 1), token if MARK in token else None


def delete_lines(rng, text):
    lines = text.split("\n")
    pool = data_lines(text) if rng.random() < 0.5 else range(len(lines))
    k = int(rng.choice(list(pool)))
    mutated = "\n".join(lines[:k] + lines[k + 1 :])
    keep = [i for i, line in enumerate(data_lines(text)) if line != k]
    return mutated.encode(), ("rows", keep), None


def duplicate_lines(rng, text):
    lines = text.split("\n")
    k = int(rng.integers(0, len(lines)))
    mutated = "\n".join(lines[: k + 1] + [lines[k]] + lines[k + 1 :])
    rows = data_lines(text)
    i = rows.index(k) if k in rows else len(rows)
    return (
        mutated.encode(),
        ("rows", list(range(i + 1)) + list(range(i, len(rows)))[: len(rows) + (k in rows)]),
        None,
    )


def bad_gzip(rng, text):
    raw = bytearray(gzip.compress(text.encode(), mtime=0))
    if rng.random() < 0.5:
        return bytes(raw[: int(rng.integers(0, len(raw)))]), ("same",), None
    for pos in rng.integers(0, len(raw), size=int(rng.integers(1, 4))):
        raw[pos] ^= int(rng.integers(1, 256))
    return bytes(raw), ("same",), None


MUTATORS: list[Callable] = [
    truncate, flip_bytes, wrong_arity, bad_token, delete_lines, duplicate_lines, bad_gzip,
]  # fmt: skip


# --------------------------------------------------------------------------------------------
# Harness
# --------------------------------------------------------------------------------------------
@contextmanager
def time_guard(seconds: float):
    """Raise TimeoutError in the main thread if the block runs longer than ``seconds``."""

    def expire(signum, frame):
        raise TimeoutError(f"parse took longer than {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def matrix(d: ArffData) -> np.ndarray:
    return d.data.toarray() if sp.issparse(d.data) else d.data


def same(a: ArffData, b: ArffData) -> bool:
    return (
        a.relation == b.relation
        and a.attributes == b.attributes
        and a.sparse == b.sparse
        and np.array_equal(matrix(a), matrix(b), equal_nan=True)
    )


def classify(original: ArffData, mutated: bytes, expected: tuple, source: str) -> str:
    """One case: 'error' (a clear ArffError), 'identical', or 'different' (a valid mutant,
    within what the mutation allows); anything else raises."""
    try:
        with time_guard(TIME_GUARD_S):
            d = parse_arff(mutated, source)
    except ArffError as exc:
        message = str(exc)
        assert message.startswith(source), message
        assert MARK not in message, message
        return "error"
    if same(d, original):
        return "identical"
    ours, theirs, kind = matrix(d), matrix(original), expected[0]
    assert kind != "same", "a corrupt gzip stream was read as different data"
    assert ours.shape[1] == len(d.attributes) > 0
    if kind == "rows":
        np.testing.assert_array_equal(ours, theirs[expected[1]])
    elif kind == "prefix":
        assert d.attributes == original.attributes and len(ours) <= len(theirs)
        np.testing.assert_array_equal(ours[:-1], theirs[: len(ours) - 1])
    elif len(ours) == len(theirs) and len(d.attributes) == len(original.attributes):
        changed = ~((ours == theirs) | (np.isnan(ours) & np.isnan(theirs))).all(axis=1)
        assert changed.sum() <= expected[1], f"{changed.sum()} rows changed"
    return "different"


def load_dataset_mutant(path, xml) -> str:
    """A mutant that parses, loaded as a MULAN dataset: it loads or raises a clear ArffError."""
    try:
        with time_guard(TIME_GUARD_S), warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # an attribute mutated into a string
            load_mulan(path, xml)
    except ArffError as exc:
        assert str(exc).startswith((str(path), str(xml))), str(exc)
        assert MARK not in str(exc)
        return "dataset error"
    return "dataset loads"


@pytest.mark.parametrize("name", sorted(SLICES))
def test_mutated_files_load_identically_or_raise_arff_error(name, tmp_path):
    text = SLICES[name]
    source = str(tmp_path / f"{name}-mutant.arff")
    xml = BUILTIN_DIR / f"{name.removesuffix('-sparse')}.xml"
    original = parse_arff(text, source)
    assert original.data.shape[0] == ROWS
    rng = np.random.default_rng([SEED, sorted(SLICES).index(name)])
    counts: Counter = Counter()
    for case in range(CASES):
        mutate = MUTATORS[case % len(MUTATORS)]
        mutated, expected, _ = mutate(rng, text)
        try:
            outcome = classify(original, mutated, expected, source)
            counts[outcome] += 1
            if outcome != "error":  # the dataset level: labels, features, missing values
                Path(source).write_bytes(mutated)
                counts[load_dataset_mutant(source, xml)] += 1
        except Exception as exc:  # noqa: BLE001 - report the case, then fail
            counts["other"] += 1
            raise AssertionError(f"{mutate.__name__} case {case}: {exc!r}") from exc
    print(f"\n{name}: {CASES} cases, {dict(counts)}")
    assert counts["error"] + counts["identical"] + counts["different"] == CASES
    assert counts["other"] == 0
    assert counts["error"] > CASES // 4 and counts["identical"] + counts["different"] > 0


def test_mutated_label_files_give_the_labels_or_raise_arff_error(tmp_path):
    """The XML side: mutations of the shipped MULAN label files, read with the dataset."""
    rng = np.random.default_rng([SEED, 99])
    arff = tmp_path / "yeast.arff"
    arff.write_text(SLICES["yeast"])
    xml_text = (BUILTIN_DIR / "yeast.xml").read_text()
    reference = read_label_names(BUILTIN_DIR / "yeast.xml")
    counts: Counter = Counter()
    for case in range(300):
        mutate = MUTATORS[case % len(MUTATORS)]
        if mutate in (wrong_arity, bad_gzip, delete_lines, duplicate_lines):
            mutate = (truncate, flip_bytes, bad_token)[case % 3]
        mutated, _, _ = mutate(rng, xml_text)
        xml = tmp_path / f"m{case}.xml"
        xml.write_bytes(mutated)
        try:
            with time_guard(TIME_GUARD_S):
                ds = load_mulan(arff, xml)
        except ArffError as exc:
            assert str(exc).startswith((str(xml), str(arff))), str(exc)
            assert MARK not in str(exc)
            counts["error"] += 1
            continue
        # a label line lost to a bad token leaves a valid file with that label a feature
        changed = set(ds.label_names) ^ set(reference)
        assert len(changed) <= 5, changed
        counts["identical" if list(ds.label_names) == reference else "different"] += 1
    print(f"\nyeast.xml: 300 cases, {dict(counts)}")
    assert counts["error"] > 50 and sum(counts.values()) == 300
