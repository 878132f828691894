"""Tests for mlgraph.data.registry: search order, not-found messages, checksums, the shipped
files, and downloads (through file:// URLs: no network here)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest
from shared_data import DATASETS, needs_datasets

from mlgraph.data import (
    ChecksumError,
    DatasetNotFoundError,
    data_dirs,
    find_file,
    load_dataset,
    sha256_file,
)
from mlgraph.data.registry import BUILTIN_DIR, cache_dir

TINY = "@relation tiny\n@attribute x numeric\n@attribute L {0,1}\n@data\n1,0\n2,1\n3,1\n"
MEDIAMILL_SHA256 = "ad7e629d599ac1c80dfabe32fb9f18be28accd8e902515a461497bc48760a72b"


@pytest.fixture
def env(tmp_path, monkeypatch):
    """Isolated data and cache directories, working directory inside tmp_path."""
    data, cache = tmp_path / "data", tmp_path / "cache"
    data.mkdir()
    monkeypatch.setenv("MLGRAPH_DATA_DIR", str(data))
    monkeypatch.setenv("MLGRAPH_CACHE_DIR", str(cache))
    monkeypatch.chdir(tmp_path)
    return data, cache


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


def test_load_dataset_from_data_dir_with_checksum(env, tmp_path):
    own = tmp_path / "own"
    own.mkdir()
    (own / "t.arff").write_text(TINY)
    sha = sha256_file(own / "t.arff")
    ds = load_dataset("tiny", "t.arff", n_labels=1, sha256=sha, size=len(TINY), data_dir=own)
    assert (ds.name, ds.n_samples, ds.n_features, ds.n_labels, ds.sha256) == ("tiny", 3, 1, 1, sha)


def test_checksum_mismatch_names_file_expected_and_actual(env):
    data, _ = env
    path = data / "t.arff"
    path.write_text(TINY)
    wrong = "0" * 64
    with pytest.raises(ChecksumError) as info:
        load_dataset("tiny", "t.arff", n_labels=1, sha256=wrong)
    message = str(info.value)
    assert str(path) in message and wrong in message and sha256_file(path) in message
    assert load_dataset("tiny", "t.arff", n_labels=1, sha256=wrong, verify=False).n_samples == 3
    with pytest.raises(ChecksumError, match="size"):
        load_dataset("tiny", "t.arff", n_labels=1, size=1)


def test_builtin_datasets_load_and_verify():
    ds = load_dataset(
        "emotions",
        "emotions.arff.gz",
        "emotions.xml",
        sha256="162592ef5baa548599285ee392269ab3128cd552714696e8a126d7fde68a1015",
    )
    assert (ds.n_samples, ds.n_features, ds.n_labels) == (593, 72, 6)
    assert sorted(p.name for p in BUILTIN_DIR.iterdir() if not p.name.startswith(".")) == [
        "emotions.arff.gz",
        "emotions.xml",
        "mediamill.xml",
        "paper002_tables.csv",  # paper 002's Tables 2/3, printed beside ours by the report
        "scene.arff.gz",
        "scene.xml",
        "yeast.arff.gz",
        "yeast.xml",
    ]


@needs_datasets
def test_builtin_files_are_exact_copies():
    for name in [
        "emotions.arff.gz",
        "emotions.xml",
        "scene.arff.gz",
        "scene.xml",
        "yeast.arff.gz",
        "yeast.xml",
    ]:
        assert sha256_file(BUILTIN_DIR / name) == sha256_file(DATASETS / name), name
    assert sha256_file(BUILTIN_DIR / "mediamill.xml") == sha256_file(
        DATASETS / "mediamill-small.xml"
    )


# --------------------------------------------------------------------------------------------
# Downloads
# --------------------------------------------------------------------------------------------
@pytest.fixture
def remote(tmp_path):
    """A small ARFF file served through a file:// URL, with its SHA-256."""
    source = tmp_path / "remote" / "download-me.arff"
    source.parent.mkdir()
    source.write_text(TINY)
    return source.as_uri(), sha256_file(source)


def test_download_into_the_cache(env, remote):
    _, cache = env
    url, sha = remote
    ds = load_dataset("tiny", "download-me.arff", n_labels=1, sha256=sha, size=len(TINY), url=url)
    assert ds.n_samples == 3 and Path(ds.source) == cache / "download-me.arff"
    assert sorted(p.name for p in cache.iterdir()) == ["download-me.arff"]
    # The cached copy is found next time, without the URL.
    assert load_dataset("tiny", "download-me.arff", n_labels=1, sha256=sha).source == ds.source


@pytest.mark.parametrize("bad", [{"sha256": "f" * 64}, {"size": 10}])
def test_failed_verification_leaves_no_file(env, remote, bad):
    _, cache = env
    url, sha = remote
    kwargs = {"sha256": sha, **bad}
    with pytest.raises(ChecksumError) as info:
        load_dataset("tiny", "download-me.arff", n_labels=1, url=url, **kwargs)
    message = str(info.value)
    assert (
        url in message
        and str(cache / "download-me.arff") in message
        and "place the file" in message
    )
    assert list(cache.iterdir()) == []


def test_unreachable_url_leaves_no_file(env, tmp_path):
    _, cache = env
    url = (tmp_path / "no-such-file.arff").as_uri()
    with pytest.raises(DatasetNotFoundError) as info:
        load_dataset("tiny", "download-me.arff", n_labels=1, url=url)
    assert url in str(info.value) and str(cache / "download-me.arff") in str(info.value)
    assert list(cache.iterdir()) == []


def test_mediamill_is_downloadable_with_the_builtin_label_file(env, tmp_path):
    """Without network, the full mediamill fails with a message saying where to put it."""
    url = (tmp_path / "offline" / "mediamill.arff").as_uri()
    with pytest.raises(DatasetNotFoundError, match="place the file at") as info:
        load_dataset(
            "mediamill",
            "mediamill.arff",
            "mediamill.xml",
            sha256=MEDIAMILL_SHA256,
            size=55708920,
            url=url,
        )
    assert str(env[1] / "mediamill.arff") in str(info.value)
    assert find_file("mediamill.xml") == BUILTIN_DIR / "mediamill.xml"
