"""Tests for mlgraph.data.registry: the registry file against the local copies of every published
file, search order, not-found messages, checksums, the shipped files, the Hydra configs, and
downloads -- through a replaced URL opener that serves local bytes (no network here), so the
streaming, progress bar, verification and atomic rename run for real."""

from __future__ import annotations

import csv
import gzip
import hashlib
import io
import os
import re
import threading
import urllib.error
import urllib.response
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from hydra import compose, initialize_config_dir
from shared_data import DATASETS, benchmark_file, local_dataset, needs_datasets, needs_shared_file

import mlgraph.data.registry as registry
from mlgraph.data import (
    ChecksumError,
    DatasetNotFoundError,
    data_dirs,
    dataset_files,
    dataset_info,
    dataset_names,
    dataset_path,
    find_file,
    load_dataset,
    load_mulan,
    load_split,
    sha256_file,
)
from mlgraph.data.__main__ import main as data_cli
from mlgraph.data.registry import BUILTIN_DIR, cache_dir
from mlgraph.engine.plan import load_from_config

CONF = Path(__file__).resolve().parents[2] / "conf"
TINY = "@relation tiny\n@attribute x numeric\n@attribute L {0,1}\n@data\n1,0\n2,1\n3,1\n"
TINY_SHA = hashlib.sha256(TINY.encode()).hexdigest()
URL = "https://example.org/data/download-me.arff"
MEDIAMILL_SHA256 = "ad7e629d599ac1c80dfabe32fb9f18be28accd8e902515a461497bc48760a72b"
PINNED = re.compile(r"https://raw\.githubusercontent\.com/([^/]+/[^/]+)/([0-9a-f]{40})/(.+)")


@pytest.fixture
def env(tmp_path, monkeypatch):
    """Isolated data and cache directories, working directory inside tmp_path."""
    data, cache = tmp_path / "data", tmp_path / "cache"
    data.mkdir()
    monkeypatch.setenv("MLGRAPH_DATA_DIR", str(data))
    monkeypatch.setenv("MLGRAPH_CACHE_DIR", str(cache))
    monkeypatch.chdir(tmp_path)
    return data, cache


@pytest.fixture
def bare(env, tmp_path, monkeypatch):
    """A fresh machine: nothing shipped, no ../shared/datasets -- only the (empty) cache."""
    empty = tmp_path / "no-builtin"
    empty.mkdir()
    monkeypatch.setattr(registry, "BUILTIN_DIR", empty)
    monkeypatch.setattr(registry, "_shared_datasets", list)
    return env[1]


@pytest.fixture
def served(monkeypatch):
    """The URL opener replaced: URLs in the returned dict are served from memory (with a
    Content-Length header), any other URL fails as offline; ``served.calls`` lists requests."""

    class Server(dict):
        calls: list[str] = []

    server = Server()
    server.calls = []

    def opener(url):
        server.calls.append(url)
        if url not in server:
            raise urllib.error.URLError("offline (test)")
        body = server[url]
        return urllib.response.addinfourl(io.BytesIO(body), {"Content-Length": str(len(body))}, url, 200)

    monkeypatch.setattr(registry, "_open_url", opener)
    return server


def _content(path: Path) -> bytes:
    raw = path.read_bytes()
    return gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw


def _same_data(a, b):
    assert (a.feature_names, a.label_names, a.name) == (b.feature_names, b.label_names, b.name)
    np.testing.assert_array_equal(a.Y, b.Y)
    X, Z = (m.toarray() if sp.issparse(m) else m for m in (a.X, b.X))
    np.testing.assert_array_equal(X, Z)


def _compose(*overrides):
    with initialize_config_dir(version_base="1.3", config_dir=str(CONF)):
        return compose("config", overrides=list(overrides))


# --------------------------------------------------------------------------------------------
# The registry file
# --------------------------------------------------------------------------------------------
def test_registry_entries_are_complete():
    names = dataset_names()
    assert {"emotions", "scene", "yeast", "bibtex", "mediamill", "mediamill-small"} <= set(names)
    assert set(names) | {"custom"} <= {p.stem for p in (CONF / "dataset").glob("*.yaml")}
    for name in names:
        files = dataset_files(name)
        assert "arff" in files and ("xml" in files or dataset_info(name).n_labels), name
        assert ("train" in files) == ("test" in files), name
        for record in files.values():
            assert record.url.startswith("https://") and re.fullmatch(r"[0-9a-f]{64}", record.sha256)
            assert record.size > 0 and Path(record.path).suffix in (".arff", ".xml"), record
    assert dataset_info("genbase").drop == ("protein",)
    assert dataset_info("rcv1subset1-500").n_labels == 101 and "xml" not in dataset_files("rcv1subset1-500")
    assert dataset_files("mediamill")["arff"].sha256 == MEDIAMILL_SHA256
    assert dataset_files("mediamill")["arff"].size == 55708920
    with pytest.raises(KeyError, match="unknown dataset 'nope'.*bibtex"):
        dataset_files("nope")


def _manifest():
    with open(DATASETS / "MANIFEST.tsv", newline="") as stream:
        for row in csv.DictReader(stream, delimiter="\t"):
            columns = [
                row[key].split(";") for key in ("files", "source_repo", "source_path", "source_commit")
            ]
            for item in zip(*columns, strict=True):
                yield (*item, row["name"])


@needs_datasets
def test_registry_matches_shared_copies():
    """Every registered file (XML and splits included) has, decompressed, the registered size and
    SHA-256, and its URL is the MANIFEST's source at the pinned commit; every MANIFEST file with
    a public source is registered."""
    registered = {(name, f.path): f for name in registry.registry() for f in dataset_files(name).values()}
    checked = set()
    for stored, repo, path, commit, name in _manifest():
        key = (name, stored.removesuffix(".gz"))
        if repo == "-":  # rcv1subset1-500.xml: written from the ARFF, not published
            assert key not in registered
            continue
        record = registered[key]
        assert PINNED.fullmatch(record.url).groups() == (repo, commit, path), record.url
        data = _content(DATASETS / stored)
        actual = (hashlib.sha256(data).hexdigest(), len(data))
        assert actual in record.accepted, (stored, actual)
        if actual != (record.sha256, record.size):  # slashdot: undo the documented header edit
            assert name == "slashdot"
            first, rest = data.split(b"\n", 1)
            published = first + b" %50\n" + rest
            assert (hashlib.sha256(published).hexdigest(), len(published)) == (record.sha256, record.size)
        checked.add(key)
    missing = set(registered) - checked
    assert missing == {("mediamill", "mediamill.arff"), ("mediamill", "mediamill.xml")}
    mm_xml = dataset_files("mediamill")["xml"]
    assert (sha256_file(BUILTIN_DIR / "mediamill.xml"), (BUILTIN_DIR / "mediamill.xml").stat().st_size) == (
        mm_xml.sha256,
        mm_xml.size,
    )


@pytest.mark.parametrize("name", [n for n in dataset_names() if n != "mediamill"])
def test_registered_statistics_are_those_of_the_loaded_data(name):
    local_dataset(name)
    info, data = dataset_info(name), load_dataset(name)
    stats = info.stats
    assert (data.n_samples, data.n_labels) == (stats["n_instances"], stats["n_labels"])
    assert data.n_features + len(info.drop) == stats["n_features"]
    assert round(data.cardinality, 4) == pytest.approx(stats["cardinality"], abs=1e-12)


def test_slashdot_as_published_loads_as_the_edited_copy(tmp_path):
    """A download gets the published header (with its ' %50' comment); the reader takes it."""
    local_dataset("slashdot")
    data = _content(benchmark_file("slashdot.arff.gz"))
    first, rest = data.split(b"\n", 1)
    published = tmp_path / "slashdot.arff"
    published.write_bytes(first + b" %50\n" + rest)
    _same_data(load_dataset("slashdot", published), load_dataset("slashdot"))


def test_rcv1_labels_without_xml_are_those_of_the_written_label_file():
    local_dataset("rcv1subset1-500", "arff")
    xml = benchmark_file("rcv1subset1-500.xml")  # written from the ARFF file, not published
    data = load_dataset("rcv1subset1-500")
    with_xml = load_mulan(data.source, xml, name="rcv1subset1-500")
    _same_data(data, with_xml)


def test_official_splits_load_with_the_dataset_labels():
    local_dataset("emotions", "train", "test")
    local_dataset("genbase", "arff", "xml", "test")
    local_dataset("bibtex", "train")
    train, test = load_split("emotions", "train"), load_split("emotions", "test")
    assert (train.n_samples, test.n_samples) == (391, 202)
    assert train.label_names == test.label_names == load_dataset("emotions").label_names
    assert load_split("genbase", "test").n_features == 1185  # `protein` dropped as in the full set
    assert dataset_path("bibtex", "train").name == "bibtex-train.arff.gz"
    with pytest.raises(KeyError, match="no official train/test split.*emotions"):
        load_split("cal500", "train")
    with pytest.raises(ValueError, match="part='valid'"):
        load_split("emotions", "valid")


def test_voice_is_registered_but_not_a_mulan_dataset():
    assert dataset_names("dual_set") == ["voice"] and "csv" in dataset_files("voice")
    with pytest.raises(ValueError, match="frequency_gender"):
        load_dataset("voice")


# --------------------------------------------------------------------------------------------
# Search order and messages
# --------------------------------------------------------------------------------------------
def test_sha256_file(tmp_path):
    path = tmp_path / "f.bin"
    path.write_bytes(os.urandom(3 << 20))  # several chunks
    assert sha256_file(path) == hashlib.sha256(path.read_bytes()).hexdigest()


def test_data_dirs_order(tmp_path, monkeypatch):
    first, second, cache = tmp_path / "a", tmp_path / "b", tmp_path / "cache"
    monkeypatch.setenv("MLGRAPH_DATA_DIR", os.pathsep.join([str(first), str(second)]))
    monkeypatch.setenv("MLGRAPH_CACHE_DIR", str(cache))
    (tmp_path / "repo").mkdir()
    (tmp_path / "shared" / "datasets").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "repo")  # <repo>/../shared/datasets
    dirs = data_dirs()
    assert dirs[:4] == [BUILTIN_DIR, first, second, tmp_path / "shared" / "datasets"]
    assert dirs[-1] == cache == cache_dir()
    if DATASETS is not None:  # also found from the package's own location
        assert DATASETS.resolve() in [d.resolve() for d in dirs]


def test_default_cache_dir(monkeypatch):
    monkeypatch.delenv("MLGRAPH_CACHE_DIR", raising=False)
    assert cache_dir() == Path.home() / ".cache" / "mlgraph"


def test_find_file_order_and_existing_paths(env, tmp_path):
    data, _ = env
    extra = tmp_path / "extra"
    extra.mkdir()
    for directory in (data, extra):
        (directory / "x.arff").write_text(TINY)
    assert find_file("x.arff") == data / "x.arff"
    assert find_file("x.arff", [extra]) == extra / "x.arff"
    assert find_file(str(extra / "x.arff")) == extra / "x.arff"
    assert find_file("scene.xml") == BUILTIN_DIR / "scene.xml"
    (data / "y.arff.gz").write_bytes(gzip.compress(TINY.encode()))
    assert find_file("y.arff", alternatives=["y.arff.gz"]) == data / "y.arff.gz"


def test_missing_file_message_lists_every_directory_searched(env, tmp_path):
    data, cache = env
    with pytest.raises(DatasetNotFoundError) as info:
        find_file("nowhere.arff", [tmp_path / "extra"])
    message = str(info.value)
    assert isinstance(info.value, FileNotFoundError)
    for directory in [tmp_path / "extra", BUILTIN_DIR, data, cache]:
        assert str(directory) in message
    assert "MLGRAPH_DATA_DIR" in message and "data_dir=" in message
    assert f"{cache}  (does not exist)" in message
    with pytest.raises(DatasetNotFoundError, match="does not exist"):
        find_file(tmp_path / "absent.arff")


def test_unknown_name_without_a_file_names_the_config_key():
    with pytest.raises(ValueError, match=r"dataset\.arff is not set and 'nope' is not a registered.*bibtex"):
        load_dataset("nope")


# --------------------------------------------------------------------------------------------
# Checksums
# --------------------------------------------------------------------------------------------
def test_load_dataset_from_data_dir_with_checksum(env, tmp_path):
    own = tmp_path / "own"
    own.mkdir()
    (own / "t.arff").write_text(TINY)
    ds = load_dataset("tiny", "t.arff", n_labels=1, sha256=TINY_SHA, size=len(TINY), data_dir=own)
    assert (ds.name, ds.n_samples, ds.n_features, ds.n_labels, ds.sha256) == ("tiny", 3, 1, 1, TINY_SHA)


def test_checksum_of_a_gzip_file_is_its_content_or_the_file(env):
    data, _ = env
    path = data / "t.arff.gz"
    path.write_bytes(gzip.compress(TINY.encode()))
    for sha, size in [(TINY_SHA, len(TINY)), (sha256_file(path), path.stat().st_size)]:
        assert load_dataset("tiny", "t.arff.gz", n_labels=1, sha256=sha, size=size).n_samples == 3
    with pytest.raises(ChecksumError):  # the content's digest with the .gz's size: no such file
        load_dataset("tiny", "t.arff.gz", n_labels=1, sha256=TINY_SHA, size=path.stat().st_size)


def test_checksum_mismatch_names_file_key_expected_and_actual(env):
    data, _ = env
    path = data / "t.arff"
    path.write_text(TINY)
    wrong = "0" * 64
    with pytest.raises(ChecksumError) as info:
        load_dataset("tiny", "t.arff", n_labels=1, sha256=wrong)
    message = str(info.value)
    assert str(path) in message and wrong in message and TINY_SHA in message
    assert "dataset.arff" in message and "dataset.verify=false" in message
    assert load_dataset("tiny", "t.arff", n_labels=1, sha256=wrong, verify=False).n_samples == 3
    with pytest.raises(ChecksumError, match=f"{len(TINY)} bytes; expected SHA-256 any, 1 bytes"):
        load_dataset("tiny", "t.arff", n_labels=1, size=1)


def test_builtin_datasets_load_and_verify():
    ds = load_dataset("emotions")
    assert (ds.n_samples, ds.n_features, ds.n_labels) == (593, 72, 6)
    assert Path(ds.source) == BUILTIN_DIR / "emotions.arff.gz"
    assert sorted(p.name for p in BUILTIN_DIR.iterdir() if not p.name.startswith(".")) == [
        "emotions.arff.gz",
        "emotions.xml",
        "mediamill.xml",
        "paper000_claims.toml",  # the papers' stated conclusions and tables: mlgraph reproduce
        "paper001_claims.toml",
        "paper001_tables.csv",
        "paper002_claims.toml",
        "paper002_tables.csv",  # paper 002's Tables 2/3, printed beside ours by the report
        "paper004_claims.toml",
        "reproduce_notes.toml",
        "scene.arff.gz",
        "scene.xml",
        "yeast.arff.gz",
        "yeast.xml",
    ]
    for name in ("emotions", "scene", "yeast"):  # verified against the registry's published content
        for role in ("arff", "xml"):
            assert dataset_path(name, role).parent == BUILTIN_DIR


def test_builtin_files_are_the_published_files():
    """The shipped files have the registry's published size and SHA-256 (of their content)."""
    for name in ("emotions", "scene", "yeast"):
        for role in ("arff", "xml"):
            record = dataset_files(name)[role]
            path = BUILTIN_DIR / (record.path + (".gz" if role == "arff" else ""))
            assert not registry._integrity_problem(path, record.accepted), path
    record = dataset_files("mediamill")["xml"]
    assert not registry._integrity_problem(BUILTIN_DIR / "mediamill.xml", record.accepted)


@needs_datasets
def test_builtin_files_are_exact_copies_of_the_collection():
    for name in [
        "emotions.arff.gz",
        "emotions.xml",
        "scene.arff.gz",
        "scene.xml",
        "yeast.arff.gz",
        "yeast.xml",
    ]:
        assert sha256_file(BUILTIN_DIR / name) == sha256_file(DATASETS / name), name
    assert sha256_file(BUILTIN_DIR / "mediamill.xml") == sha256_file(DATASETS / "mediamill-small.xml")


# --------------------------------------------------------------------------------------------
# The Hydra configs read the same registry
# --------------------------------------------------------------------------------------------
def test_own_checksum_for_a_registered_file_still_finds_its_gzip_copy():
    content = _content(BUILTIN_DIR / "emotions.arff.gz")
    sha = hashlib.sha256(content).hexdigest()
    assert load_dataset("emotions", "emotions.arff", sha256=sha).source == str(
        BUILTIN_DIR / "emotions.arff.gz"
    )
    with pytest.raises(ChecksumError, match="dataset.arff"):
        load_dataset("emotions", "emotions.arff", sha256="0" * 64)


def test_load_by_name_equals_the_hydra_config():
    cfg = _compose("dataset=emotions")
    assert set(cfg.dataset) >= {"arff", "xml", "sha256", "url", "verify"} and cfg.dataset.arff is None
    _same_data(load_dataset("emotions"), load_from_config(cfg.dataset))


@pytest.mark.parametrize("name", ["yeast", "bibtex", "genbase", "slashdot", "rcv1subset1-500"])
def test_benchmark_by_name_equals_the_hydra_config(name):
    local_dataset(name, "arff")
    _same_data(load_dataset(name), load_from_config(_compose(f"dataset={name}").dataset))


def test_config_override_of_the_file_is_verified_against_the_registry(env, tmp_path):
    plain = tmp_path / "mine" / "emotions.arff"
    plain.parent.mkdir()
    plain.write_bytes(_content(BUILTIN_DIR / "emotions.arff.gz"))  # a decompressed copy: same content
    data = load_from_config(_compose("dataset=emotions", f"dataset.arff={plain}").dataset)
    assert data.source == str(plain) and data.n_samples == 593
    plain.write_bytes(plain.read_bytes().replace(b"@data", b"% edited\n@data", 1))
    with pytest.raises(ChecksumError, match="dataset.arff.*dataset.verify=false"):
        load_from_config(_compose("dataset=emotions", f"dataset.arff={plain}").dataset)
    edited = _compose("dataset=emotions", f"dataset.arff={plain}", "dataset.verify=false").dataset
    assert load_from_config(edited).n_samples == 593


def test_custom_dataset_still_needs_its_file():
    with pytest.raises(ValueError, match=r"dataset\.arff is not set and 'custom' is not a registered"):
        load_from_config(_compose("dataset=custom").dataset)
    cfg = _compose("dataset=custom", f"dataset.arff={BUILTIN_DIR / 'scene.arff.gz'}", "dataset.n_labels=6")
    assert load_from_config(cfg.dataset).n_labels == 6


# --------------------------------------------------------------------------------------------
# Downloads
# --------------------------------------------------------------------------------------------
def test_fresh_machine_downloads_a_benchmark_once_then_works_offline(bare, served):
    cache = bare
    for role in ("arff", "xml"):
        record = dataset_files("emotions")[role]
        served[record.url] = _content(
            BUILTIN_DIR / Path(record.path + (".gz" if role == "arff" else "")).name
        )
    data = load_dataset("emotions")
    assert Path(data.source) == cache / "emotions.arff" and data.n_samples == 593
    assert sorted(p.name for p in cache.iterdir()) == ["emotions.arff", "emotions.xml"]
    assert len(served.calls) == 2
    served.clear()  # offline from now on
    assert load_dataset("emotions").source == data.source and len(served.calls) == 2


def test_a_gzip_publication_is_cached_compressed_and_verified_by_content(bare, served):
    record = dataset_files("scene")["arff"]
    assert record.url.endswith(".gz")
    served[record.url] = (BUILTIN_DIR / "scene.arff.gz").read_bytes()
    assert dataset_path("scene") == bare / "scene.arff.gz" == record.cache_path()


@needs_shared_file
def test_split_files_download_under_splits(bare, served):
    record = dataset_files("yeast")["test"]
    served[record.url] = _content(DATASETS / "splits" / "yeast-test.arff.gz")
    served[dataset_files("yeast")["xml"].url] = (DATASETS / "yeast.xml").read_bytes()
    assert load_split("yeast", "test").n_samples == 917
    assert (bare / "splits" / "yeast-test.arff").is_file()


def test_download_shows_progress_to_the_full_size(bare, served, monkeypatch):
    bars = []

    class Recording(registry.tqdm):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **{**kwargs, "disable": False, "file": io.StringIO()})
            bars.append(self)

    monkeypatch.setattr(registry, "tqdm", Recording)
    body = _content(BUILTIN_DIR / "yeast.arff.gz")  # > 1 MiB: several chunks
    served[dataset_files("yeast")["arff"].url] = body
    dataset_path("yeast")
    assert [(bar.n, bar.total) for bar in bars] == [(len(body), len(body))]


def test_a_corrupt_download_is_deleted_and_named(bare, served):
    record = dataset_files("emotions")["arff"]
    served[record.url] = _content(BUILTIN_DIR / "emotions.arff.gz")[:-10]
    with pytest.raises(ChecksumError) as info:
        dataset_path("emotions")
    message = str(info.value)
    assert record.url in message and str(bare / "emotions.arff") in message and "put it at" in message
    assert record.sha256 in message and list(bare.iterdir()) == []


def test_offline_error_names_the_url_and_where_to_put_the_file(bare, served):
    with pytest.raises(DatasetNotFoundError) as info:
        load_dataset("mediamill")
    message = str(info.value)
    assert dataset_files("mediamill")["arff"].url in message and "offline (test)" in message
    assert str(bare / "mediamill.arff") in message
    assert list(bare.iterdir()) == []


def test_offline_error_lists_every_missing_file_and_the_command_that_fetches_them(bare, served):
    """Not the ARFF file, then the XML file, then the splits: every missing file at once."""
    with pytest.raises(DatasetNotFoundError) as info:
        load_dataset("emotions")
    message = str(info.value)
    files = dataset_files("emotions")
    assert set(files) == {"arff", "xml", "train", "test"} and "4 of its 4 files" in message
    for record in files.values():
        assert record.url in message and str(record.cache_path()) in message
    assert "python -m mlgraph.data emotions --fetch" in message and "offline (test)" in message
    assert served.calls == [files["arff"].url]  # one failed download, not one per file
    own = bare.parent / "mine.arff"
    with pytest.raises(DatasetNotFoundError, match="mine.arff") as info:  # the caller's own file
        load_dataset("emotions", own)
    assert "--fetch" not in str(info.value)


def test_an_interrupted_download_leaves_no_partial_file(bare, monkeypatch):
    class Broken(io.BytesIO):
        headers = {"Content-Length": "999999"}

        def read(self, n=-1):
            if self.tell():
                raise ConnectionResetError("connection reset (test)")
            return super().read(100)

    monkeypatch.setattr(registry, "_open_url", lambda url: Broken(b"x" * 1000))
    with pytest.raises(DatasetNotFoundError, match="connection reset"):
        dataset_path("emotions")
    assert list(bare.iterdir()) == []


def test_a_damaged_cached_copy_says_to_delete_it(bare, served):
    bare.mkdir()
    (bare / "emotions.arff").write_text("not the data")
    with pytest.raises(ChecksumError, match="delete it to download it again"):
        dataset_path("emotions")
    assert served.calls == []


def test_two_processes_downloading_at_once_both_get_the_verified_file(bare, served, monkeypatch):
    """Both downloads are mid-stream at the same time (a barrier in the opener); each writes its
    own temporary file and renames it: the result is one complete file and no leftovers."""
    record = dataset_files("yeast")["arff"]
    served[record.url] = _content(BUILTIN_DIR / "yeast.arff.gz")
    barrier, serve = threading.Barrier(2, timeout=30), registry._open_url

    def opener(url):
        response = serve(url)
        first = response.read(1 << 16)
        barrier.wait()  # both requests have started writing their temporary files
        return urllib.response.addinfourl(io.BytesIO(first + response.read()), response.headers, url, 200)

    monkeypatch.setattr(registry, "_open_url", opener)
    results, errors = [], []

    def worker():
        try:
            results.append(dataset_path("yeast"))
        except Exception as exc:  # noqa: BLE001 -- reported by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == [] and results == [bare / "yeast.arff"] * 2
    assert [p.name for p in bare.iterdir()] == ["yeast.arff"]
    assert sha256_file(bare / "yeast.arff") == record.sha256


# --------------------------------------------------------------------------------------------
# Safe downloads of your own data (dataset.url)
# --------------------------------------------------------------------------------------------
def test_own_download_with_checksum(env, served):
    _, cache = env
    served[URL] = TINY.encode()
    ds = load_dataset("tiny", "download-me.arff", n_labels=1, sha256=TINY_SHA, size=len(TINY), url=URL)
    assert Path(ds.source) == cache / "download-me.arff"
    assert load_dataset("tiny", "download-me.arff", n_labels=1, sha256=TINY_SHA).source == ds.source


@pytest.mark.parametrize("bad", [{"sha256": "f" * 64}, {"size": 10}])
def test_failed_verification_leaves_no_file(env, served, bad):
    _, cache = env
    served[URL] = TINY.encode()
    with pytest.raises(ChecksumError) as info:
        load_dataset("tiny", "download-me.arff", n_labels=1, url=URL, **{"sha256": TINY_SHA, **bad})
    assert URL in str(info.value) and str(cache / "download-me.arff") in str(info.value)
    assert list(cache.iterdir()) == []


def test_a_url_without_checksum_is_refused_unless_verify_is_off(env, served):
    _, cache = env
    served[URL] = TINY.encode()
    with pytest.raises(ValueError, match=r"dataset\.url=.*dataset\.sha256 is not.*dataset\.verify=false"):
        load_dataset("tiny", "download-me.arff", n_labels=1, url=URL)
    assert served.calls == [] and not cache.exists()
    with pytest.warns(UserWarning, match="without a checksum"):
        ds = load_dataset("tiny", "download-me.arff", n_labels=1, url=URL, verify=False)
    assert Path(ds.source) == cache / "download-me.arff"


@pytest.mark.parametrize(
    "url", ["http://example.org/d.arff", "file:///etc/passwd", "ftp://example.org/d.arff"]
)
def test_only_https_urls(env, served, url):
    cfg = _compose(
        "dataset=custom",
        "dataset.arff=d.arff",
        "dataset.n_labels=1",
        f"dataset.url={url}",
        f"dataset.sha256={TINY_SHA}",
    )
    with pytest.raises(ValueError, match=r"dataset\.url=.*only https:// URLs are accepted"):
        load_from_config(cfg.dataset)
    assert served.calls == []


# --------------------------------------------------------------------------------------------
# python -m mlgraph.data
# --------------------------------------------------------------------------------------------
def test_cli_lists_then_fetches_missing_files(bare, served, capsys):
    record = dataset_files("emotions")["xml"]
    assert data_cli(["emotions"]) == 0
    assert (
        f"emotions         xml   missing: {record.url} -> {bare / 'emotions.xml'}" in capsys.readouterr().out
    )
    assert data_cli(["emotions", "--fetch"]) == 1  # offline: every file FAILED, named
    assert capsys.readouterr().out.count("FAILED: could not download") == 4  # arff, xml, train, test
    served[record.url] = (BUILTIN_DIR / "emotions.xml").read_bytes()
    served[dataset_files("emotions")["arff"].url] = _content(BUILTIN_DIR / "emotions.arff.gz")
    assert data_cli(["emotions", "--fetch"]) == 1  # the split files are still not served
    out = capsys.readouterr().out
    assert f"emotions         xml   {bare / 'emotions.xml'}\n" in out and out.count("FAILED") == 2
    assert data_cli(["emotions"]) == 0 and "arff  missing" not in capsys.readouterr().out
    with pytest.raises(SystemExit):
        data_cli(["nope"])
