"""Benchmark files beyond the shipped datasets, for the tests that compare with them.

``DATASETS`` is the benchmark collection (``shared/datasets`` above the repository) when there
is one. :func:`benchmark_file` finds a dataset file wherever mlgraph looks for data (the shipped
files, ``$MLGRAPH_DATA_DIR``, ``../shared/datasets``, the download cache), and otherwise skips
the test with one reason for them all, so that the summary of a clone without the collection
says in one line what did not run and how to get it. Tests never download.
"""

from pathlib import Path

import pytest

from mlgraph.data import DatasetNotFoundError, find_file

DATASETS = next(
    (
        p / "shared" / "datasets"
        for p in Path(__file__).resolve().parents
        if (p / "shared" / "datasets").is_dir()
    ),
    None,
)
NOT_SHIPPED = (
    "needs benchmark files that are not shipped: put the collection in ../shared/datasets or "
    "$MLGRAPH_DATA_DIR, or run `python -m mlgraph.data --fetch`"
)
needs_datasets = pytest.mark.skipif(
    DATASETS is None, reason="compares with the benchmark collection's own copies in ../shared/datasets"
)


def benchmark_file(name: str) -> Path:
    """A local copy of the dataset file ``name`` (e.g. ``"enron.arff.gz"``, ``"splits/yeast-test.arff.gz"``,
    also found decompressed), or skip the calling test."""
    plain = name.removesuffix(".gz")
    try:
        return find_file(plain, alternatives=[plain + ".gz"])
    except DatasetNotFoundError:
        pytest.skip(NOT_SHIPPED)


def have_benchmark(name: str) -> bool:
    """Whether :func:`benchmark_file` would find ``name`` (for code outside a test)."""
    plain = name.removesuffix(".gz")
    try:
        find_file(plain, alternatives=[plain + ".gz"])
    except DatasetNotFoundError:
        return False
    return True


def local_dataset(name: str, *roles: str) -> None:
    """Skip the calling test unless the registered dataset ``name`` has its files of ``roles``
    (default: the ARFF and label files) on this machine, so that nothing is downloaded."""
    from mlgraph.data.registry import missing_files

    wanted = set(roles or ("arff", "xml"))
    if wanted & set(missing_files(name)):
        pytest.skip(NOT_SHIPPED)


needs_shared_file = pytest.mark.skipif(DATASETS is None, reason=NOT_SHIPPED)
