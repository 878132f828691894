"""Finding dataset files, verifying them, and downloading the ones too big to ship.

Search order (:func:`data_dirs`): the files shipped in ``mlgraph/data/builtin``; every
directory of ``$MLGRAPH_DATA_DIR`` (``os.pathsep``-separated); the nearest
``shared/datasets`` found walking up from the working directory and from this package (the
layout ``<repo>/../shared/datasets``); the download cache ``$MLGRAPH_CACHE_DIR`` (default
``~/.cache/mlgraph``).
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
import urllib.request
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

from mlgraph.data.mulan import MultiLabelDataset, load_mulan

BUILTIN_DIR = Path(__file__).resolve().parent / "builtin"

log = logging.getLogger(__name__)


class DatasetNotFoundError(FileNotFoundError):
    """A dataset file is in none of the searched directories (and could not be downloaded)."""


class ChecksumError(ValueError):
    """A dataset file does not have its published SHA-256 (or size)."""


def sha256_file(path: str | Path, chunk_size: int = 1 << 20) -> str:
    """Hex SHA-256 of a file, read in chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        while chunk := stream.read(chunk_size):
            digest.update(chunk)
    return digest.hexdigest()


def cache_dir() -> Path:
    """Where downloads go: ``$MLGRAPH_CACHE_DIR`` or ``~/.cache/mlgraph``."""
    return Path(os.environ.get("MLGRAPH_CACHE_DIR") or "~/.cache/mlgraph").expanduser()


def data_dirs() -> list[Path]:
    """The directories searched for dataset files, in order (see the module docstring)."""
    env = os.environ.get("MLGRAPH_DATA_DIR", "")
    candidates = [BUILTIN_DIR]
    candidates += [Path(entry).expanduser() for entry in env.split(os.pathsep) if entry.strip()]
    candidates += _shared_datasets()
    candidates.append(cache_dir())
    unique: dict[Path, Path] = {}
    for directory in candidates:
        unique.setdefault(directory.resolve(), directory)
    return list(unique.values())


def _shared_datasets() -> list[Path]:
    """The nearest ``shared/datasets`` above the working directory and above this package."""
    found = []
    for start in (Path.cwd(), Path(__file__).resolve().parent):
        for directory in (start, *start.parents):
            if (directory / "shared" / "datasets").is_dir():
                found.append(directory / "shared" / "datasets")
                break
    return found


def find_file(filename: str | Path, extra_dirs: Iterable[str | Path] = ()) -> Path:
    """An existing path as it is, else the first ``dir/filename`` of ``extra_dirs`` then
    :func:`data_dirs`; :class:`DatasetNotFoundError` lists what was searched."""
    path = Path(filename).expanduser()
    if path.exists():
        return path
    if path.is_absolute():
        raise DatasetNotFoundError(f"dataset file {str(path)!r} does not exist")
    searched = [Path(d).expanduser() for d in extra_dirs] + data_dirs()
    for directory in searched:
        if (directory / path).is_file():
            return directory / path
    listing = "\n".join(f"  {d}" + ("" if d.is_dir() else "  (does not exist)") for d in searched)
    raise DatasetNotFoundError(
        f"dataset file {str(path)!r} not found; searched, in order:\n{listing}\n"
        f"Put the file in one of these directories, set MLGRAPH_DATA_DIR to the directory that "
        f"holds it (several joined by {os.pathsep!r}), or pass data_dir=..."
    )


def load_dataset(
    name: str,
    arff: str | Path,
    xml: str | Path | None = None,
    n_labels: int | None = None,
    label_location: Literal["first", "last"] = "last",
    drop: Iterable[str] = (),
    sha256: str | None = None,
    url: str | None = None,
    size: int | None = None,
    data_dir: str | Path | None = None,
    verify: bool = True,
) -> MultiLabelDataset:
    """Find (``data_dir`` first), verify and load a MULAN dataset.

    With ``verify`` the ARFF file must have the given ``sha256`` and ``size``
    (:class:`ChecksumError` otherwise). An ARFF file found nowhere is downloaded from ``url``
    into :func:`cache_dir` when one is given; a download is always verified.
    """
    extra = [data_dir] if data_dir else []
    try:
        arff_path = find_file(arff, extra)
    except DatasetNotFoundError:
        if url is None:
            raise
        arff_path = _download(url, cache_dir() / Path(arff).name, sha256, size)
    else:
        if verify:
            _verify(arff_path, sha256, size)
    xml_path = find_file(xml, extra) if xml else None
    return load_mulan(arff_path, xml_path, n_labels, label_location, drop, name=name)


def _verify(path: Path, sha256: str | None, size: int | None) -> None:
    """Raise :class:`ChecksumError` unless the file has the expected size and SHA-256."""
    problem = _integrity_problem(
        path.stat().st_size, sha256_file(path) if sha256 else None, size, sha256
    )
    if problem:
        raise ChecksumError(
            f"{path}: {problem}; the file is damaged or another version (verify=False skips this)"
        )


def _integrity_problem(
    actual_size: int, actual_sha256: str | None, size: int | None, sha256: str | None
) -> str:
    """What is wrong with a file of this size and digest ('' when it matches what is expected)."""
    if size is not None and actual_size != size:
        return f"size {actual_size} bytes, expected {size}"
    if sha256 and actual_sha256 != sha256.lower():
        return f"SHA-256 {actual_sha256}, expected {sha256.lower()}"
    return ""


def _download(url: str, dest: Path, sha256: str | None, size: int | None) -> Path:
    """Fetch ``url`` to ``dest`` through a temporary file renamed only once verified."""
    hint = f"Download {url} by other means and place the file at {dest}."
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".part")
    tmp = Path(tmp_name)
    try:
        log.info("downloading %s to %s", url, dest)
        try:
            digest, n_bytes = _fetch(url, fd)
        except (OSError, ValueError) as exc:  # URLError is an OSError, a malformed URL a ValueError
            raise DatasetNotFoundError(
                f"could not download {url} to {dest} ({exc}). {hint}"
            ) from exc
        problem = _integrity_problem(n_bytes, digest, size, sha256)
        if problem:
            raise ChecksumError(
                f"download of {url} failed verification ({problem}); "
                f"nothing saved to {dest}. {hint}"
            )
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)  # a failed or interrupted download leaves no partial file
    return dest


def _fetch(url: str, fd: int) -> tuple[str, int]:
    """Stream ``url`` into the open file descriptor ``fd``: (hex SHA-256, byte count)."""
    digest, n_bytes = hashlib.sha256(), 0
    with os.fdopen(fd, "wb") as out, urllib.request.urlopen(url, timeout=60) as response:
        while chunk := response.read(1 << 20):
            out.write(chunk)
            digest.update(chunk)
            n_bytes += len(chunk)
    return digest.hexdigest(), n_bytes
