"""The dataset registry: finding dataset files, verifying them, and downloading them on first use.

Every benchmark is described once, in ``datasets.toml`` next to this module (file names, label
count, official split files, and for every file a pinned public URL with its size and SHA-256):
``load_dataset("bibtex")`` and ``dataset=bibtex`` both read it.

Search order (:func:`data_dirs`): the files shipped in ``mlgraph/data/builtin``; every
directory of ``$MLGRAPH_DATA_DIR`` (``os.pathsep``-separated); the nearest
``shared/datasets`` found walking up from the working directory and from this package (the
layout ``<repo>/../shared/datasets``); the download cache ``$MLGRAPH_CACHE_DIR`` (default
``~/.cache/mlgraph``). A registered file is found as published or gzip-compressed
(``bibtex.arff`` or ``bibtex.arff.gz``); one found nowhere is downloaded into the cache.

Checksums are of the file as published; a gzip-compressed copy is checked by its decompressed
content (the digest of the .gz itself is accepted too), so a compressed mirror and a plain
download verify against the same registry entry.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import logging
import os
import sys
import tempfile
import urllib.parse
import urllib.request
import warnings
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Literal

from tqdm import tqdm

from mlgraph.data.decompress import decompression_limit
from mlgraph.data.mulan import MissingPolicy, MultiLabelDataset, load_mulan

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

BUILTIN_DIR = Path(__file__).resolve().parent / "builtin"
REGISTRY_PATH = Path(__file__).resolve().parent / "datasets.toml"
ROLES = ("arff", "xml", "train", "test", "csv")  # csv: a dual-set table

log = logging.getLogger(__name__)


class DatasetNotFoundError(FileNotFoundError):
    """A dataset file is in none of the searched directories (and could not be downloaded)."""


class ChecksumError(ValueError):
    """A dataset file does not have its published SHA-256 (or size)."""


@dataclass(frozen=True)
class RegisteredFile:
    """One published file: ``path`` inside a data directory (``splits/`` for split files), its
    ``url``, and the ``sha256``/``size`` of the file as published (of the decompressed content
    when the URL serves a .gz); ``also`` holds other accepted ``(sha256, size)`` pairs."""

    path: str
    url: str
    sha256: str
    size: int
    also: tuple[tuple[str, int], ...] = ()

    @property
    def accepted(self) -> tuple[tuple[str, int], ...]:
        return ((self.sha256, self.size), *self.also)

    def cache_path(self) -> Path:
        """Where a download goes: the cache, compressed as published when the URL serves a .gz."""
        return cache_dir() / (self.path + ".gz" if self.url.endswith(".gz") else self.path)


@dataclass(frozen=True)
class DatasetEntry:
    """A registered dataset: its files by role (``arff``, ``xml``, ``train``, ``test``), how its
    labels are found, and its published statistics (``stats``)."""

    name: str
    kind: str
    roles: Mapping[str, RegisteredFile]
    n_labels: int | None
    drop: tuple[str, ...]
    stats: Mapping[str, object]


# --------------------------------------------------------------------------------------------
# The registry file
# --------------------------------------------------------------------------------------------
@functools.cache
def registry() -> Mapping[str, DatasetEntry]:
    """Every dataset of ``datasets.toml``, by name."""
    with open(REGISTRY_PATH, "rb") as stream:
        table = tomllib.load(stream)
    return MappingProxyType({name: _entry(name, spec) for name, spec in table.items()})


def _entry(name: str, spec: dict) -> DatasetEntry:
    files = {
        path: RegisteredFile(
            path,
            f["url"],
            f["sha256"].lower(),
            int(f["size"]),
            tuple((a["sha256"].lower(), int(a["size"])) for a in f.get("also", ())),
        )
        for path, f in spec.get("files", {}).items()
    }
    roles = {}
    for role in ROLES:
        if role in spec:
            if spec[role] not in files:
                raise ValueError(
                    f"{REGISTRY_PATH}: [{name}] {role} = {spec[role]!r} has no "
                    f"[{name}.files.{spec[role]!r}] entry"
                )
            roles[role] = files[spec[role]]
    stats = {k: v for k, v in spec.items() if k not in {*ROLES, "files", "kind", "drop"}}
    return DatasetEntry(
        name,
        spec.get("kind", "mulan"),
        MappingProxyType(roles),
        None if "xml" in roles else spec.get("n_labels"),
        tuple(spec.get("drop", ())),
        MappingProxyType(stats),
    )


def dataset_names(kind: str = "mulan") -> list[str]:
    """The registered datasets of a kind (``mulan``: multi-label ARFF+XML; ``dual_set``)."""
    return [name for name, entry in registry().items() if entry.kind == kind]


def dataset_info(name: str) -> DatasetEntry:
    """The registry entry of ``name``; :class:`KeyError` naming the known datasets otherwise."""
    try:
        return registry()[name]
    except KeyError:
        raise KeyError(
            f"unknown dataset {name!r}; registered: {', '.join(registry())} (see {REGISTRY_PATH})"
        ) from None


def dataset_files(name: str) -> dict[str, RegisteredFile]:
    """The files of a registered dataset by role: ``arff``, ``xml``, and ``train``/``test`` (the
    publisher's official split) where they exist; ``csv`` for a dual-set table."""
    return dict(dataset_info(name).roles)


def dataset_path(
    name: str, role: str = "arff", data_dir: str | Path | None = None, verify: bool = True
) -> Path:
    """A local, verified copy of one file of a registered dataset (``role`` as in
    :func:`dataset_files`), downloaded into the cache on first use."""
    files = dataset_files(name)
    if role not in files:
        raise KeyError(f"dataset {name!r} has no {role!r} file; it has: {', '.join(files)}")
    return _locate(
        files[role].path,
        files[role],
        None,
        None,
        None,
        [data_dir] if data_dir else [],
        verify,
        f"the {role} file of {name}",
    )


def load_split(
    name: str, part: Literal["train", "test"], data_dir: str | Path | None = None, verify: bool = True
) -> MultiLabelDataset:
    """The publisher's official ``train`` or ``test`` part of a registered dataset, with the
    dataset's label file and dropped attributes (the file comes from :func:`dataset_path`)."""
    if part not in ("train", "test"):
        raise ValueError(f"part={part!r}: expected 'train' or 'test'")
    files = dataset_files(name)
    if part not in files:
        have = [n for n in dataset_names() if "train" in registry()[n].roles]
        raise KeyError(f"dataset {name!r} has no official train/test split; these have: {', '.join(have)}")
    return load_dataset(name, files[part].path, data_dir=data_dir, verify=verify)


# --------------------------------------------------------------------------------------------
# Searching
# --------------------------------------------------------------------------------------------
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


def find_file(
    filename: str | Path, extra_dirs: Iterable[str | Path] = (), alternatives: Iterable[str] = ()
) -> Path:
    """An existing path as it is, else the first ``dir/filename`` (or ``dir/alternative``) of
    ``extra_dirs`` then :func:`data_dirs`; :class:`DatasetNotFoundError` lists what was searched."""
    path = Path(filename).expanduser()
    if path.exists():
        return path
    if path.is_absolute():
        raise DatasetNotFoundError(f"dataset file {str(path)!r} does not exist")
    names = [path, *(Path(a) for a in alternatives)]
    searched = [Path(d).expanduser() for d in extra_dirs] + data_dirs()
    for directory in searched:
        for name in names:
            if (directory / name).is_file():
                return directory / name
    listing = "\n".join(f"  {d}" + ("" if d.is_dir() else "  (does not exist)") for d in searched)
    raise DatasetNotFoundError(
        f"dataset file {' or '.join(repr(str(n)) for n in names)} not found; searched, in order:\n"
        f"{listing}\nPut the file in one of these directories, set MLGRAPH_DATA_DIR to the "
        f"directory that holds it (several joined by {os.pathsep!r}), or pass data_dir=..."
    )


# --------------------------------------------------------------------------------------------
# Loading
# --------------------------------------------------------------------------------------------
def load_dataset(
    name: str,
    arff: str | Path | None = None,
    xml: str | Path | None = None,
    n_labels: int | None = None,
    label_location: Literal["first", "last"] = "last",
    drop: Iterable[str] | None = None,
    sha256: str | None = None,
    url: str | None = None,
    size: int | None = None,
    data_dir: str | Path | None = None,
    verify: bool = True,
    missing: MissingPolicy = "error",
) -> MultiLabelDataset:
    """Find (``data_dir`` first), verify and load a MULAN dataset; ``load_dataset("bibtex")``
    loads a registered benchmark by name, as ``dataset=bibtex`` does.

    For a registered ``name``, what is left ``None`` comes from the registry: the ARFF file,
    the label file (or ``n_labels``), ``drop``, and -- for the dataset's own files, under any
    directory or as .gz -- the checksums and download URL. A registered file found nowhere is
    downloaded into :func:`cache_dir` and verified.

    Your own files: ``arff`` (a path or a name searched in :func:`data_dirs`), ``xml`` or
    ``n_labels``; ``sha256``/``size`` are checked when given (:class:`ChecksumError`).
    ``url`` must be ``https://`` and needs a ``sha256`` unless ``verify=False``, which also
    skips the check of files found locally (a download with a known checksum is always checked).
    ``missing``: what a missing feature value becomes (:func:`mlgraph.data.load_mulan`).
    """
    entry = registry().get(name)
    if entry is not None and entry.kind != "mulan":
        raise ValueError(
            f"dataset {name!r} is a {entry.kind} table, not a MULAN dataset; "
            f"see dataset=frequency_gender and mlgraph.data.dual_set"
        )
    if arff is None:
        if entry is None:
            raise ValueError(
                f"dataset.arff is not set and {name!r} is not a registered dataset "
                f"({', '.join(dataset_names())}); set dataset.arff (arff=) to your ARFF file"
            )
        arff = entry.roles["arff"].path
    if entry is not None:
        if xml is None and n_labels is None:
            xml = entry.roles["xml"].path if "xml" in entry.roles else None
            n_labels = entry.n_labels
        drop = entry.drop if drop is None else drop
    _check_url(url, sha256, verify)
    extra = [data_dir] if data_dir else []
    try:
        arff_path = _locate(arff, _registered(entry, arff), sha256, size, url, extra, verify, "dataset.arff")
        xml_path = (
            _locate(xml, _registered(entry, xml), None, None, None, extra, verify, "dataset.xml")
            if xml
            else None
        )
    except DatasetNotFoundError as exc:
        if entry is None or _registered(entry, arff) is None or url is not None:
            raise  # the caller's own file: its own message says where it was looked for
        raise missing_dataset_error(name, extra, exc) from exc
    data = load_mulan(arff_path, xml_path, n_labels, label_location, drop or (), name=name, missing=missing)
    if entry is not None:
        check_label_count(entry, data, xml_path or arff_path)
    return data


def missing_files(name: str, extra_dirs: Iterable[str | Path] = ()) -> dict[str, RegisteredFile]:
    """The files of registered dataset ``name`` (by role) found in no data directory."""
    missing = {}
    for role, record in dataset_files(name).items():
        try:
            find_file(record.path, extra_dirs, [record.path + ".gz"])
        except DatasetNotFoundError:
            missing[role] = record
    return missing


def missing_dataset_error(
    name: str, extra_dirs: Iterable[str | Path], cause: BaseException
) -> DatasetNotFoundError:
    """One error for a registered dataset that could not be completed: every file it lacks, with
    its URL and the path a download goes to, and the one command that fetches them all."""
    missing = missing_files(name, extra_dirs)
    reason = cause.__cause__ or cause
    rows = "\n".join(
        f"  {role:5} {record.url}\n        -> {record.cache_path()}" for role, record in missing.items()
    )
    return DatasetNotFoundError(
        f"dataset {name!r}: {len(missing)} of its {len(dataset_files(name))} files are in no data directory "
        f"and could not be downloaded ({reason}):\n{rows}\n"
        f"Fetch them all with `python -m mlgraph.data {name} --fetch` where the network is reachable "
        f"(then copy {cache_dir()} here), or put the files in a directory of MLGRAPH_DATA_DIR; "
        f"`python -m mlgraph.data {name}` lists where each is looked for."
    )


def check_label_count(entry: DatasetEntry, data: MultiLabelDataset, source: str | Path) -> None:
    """A benchmark read with another label set (an XML file that leaves out one of its labels
    turns that label into a feature) is an error naming both counts."""
    expected = entry.stats.get("n_labels")
    if expected is not None and data.n_labels != expected:
        raise ValueError(
            f"{source}: {data.n_labels} labels were read, but benchmark {entry.name!r} has {expected} "
            f"(src/mlgraph/data/datasets.toml); a label left out of the XML file would be read as a "
            "feature. Use the published label file, or dataset=custom for your own label set."
        )


def _registered(entry: DatasetEntry | None, filename: str | Path) -> RegisteredFile | None:
    """The registry's record of one of ``entry``'s files named ``filename`` (any folder, .gz or not)."""
    if entry is None:
        return None
    base = Path(filename).name.removesuffix(".gz")
    return next((f for f in entry.roles.values() if Path(f.path).name == base), None)


def _check_url(url: str | None, sha256: str | None, verify: bool) -> None:
    """Only ``https://`` downloads, and only with a checksum unless the user opts out."""
    if url is None:
        return
    if urllib.parse.urlsplit(str(url)).scheme.lower() != "https":
        raise ValueError(f"dataset.url={url!r}: only https:// URLs are accepted")
    if not sha256:
        if verify:
            raise ValueError(
                f"dataset.url={url!r} is set but dataset.sha256 is not: a download must be checked. "
                f"Set dataset.sha256=<hex digest of the file> (and dataset.size), or "
                f"dataset.verify=false to download it unchecked"
            )
        warnings.warn(
            f"dataset.verify=false: {url} is downloaded without a checksum; "
            f"nothing guarantees what it contains",
            UserWarning,
            stacklevel=3,
        )


def _locate(
    filename: str | Path,
    known: RegisteredFile | None,
    sha256: str | None,
    size: int | None,
    url: str | None,
    extra_dirs: list,
    verify: bool,
    key: str,
) -> Path:
    """A verified local copy of ``filename``: found (a registered file also under its registry
    path and as .gz), else downloaded. The registry's checksums and URL apply unless the caller
    gives its own ``sha256``, ``size`` or ``url``."""
    own = sha256 is not None or size is not None or url is not None
    accepted = ((sha256, size),) if (sha256 or size) else () if own or not known else known.accepted
    url = url if own or not known else known.url
    alternatives = [known.path, known.path + ".gz"] if known else []
    try:
        path = find_file(filename, extra_dirs, alternatives)
    except DatasetNotFoundError:
        if url is None:
            raise
        dest = known.cache_path() if known and url == known.url else cache_dir() / Path(filename).name
        return _download(url, dest, accepted, key)
    if verify and accepted:
        _verify(path, accepted, key)
    return path


# --------------------------------------------------------------------------------------------
# Verifying
# --------------------------------------------------------------------------------------------
def _digests(path: Path, limit: int | None = None) -> list[tuple[str, int, str]]:
    """(SHA-256, size, what) of the file, and of its decompressed content when it is gzip; the
    content is read no further than ``limit`` bytes (the largest size that could match; default
    the reader's decompression bound), past which it matches nothing."""
    size = path.stat().st_size
    found = [(sha256_file(path), size, "file")]
    with open(path, "rb") as stream:
        compressed = stream.read(2) == b"\x1f\x8b"
    if compressed:
        limit = decompression_limit(size) if limit is None else limit
        digest, n_bytes = hashlib.sha256(), 0
        try:
            with gzip.open(path, "rb") as stream:
                while chunk := stream.read(1 << 20):
                    digest.update(chunk)
                    n_bytes += len(chunk)
                    if n_bytes > limit:
                        return found
        except (OSError, EOFError, zlib.error):  # corrupt or truncated: only the file's digest counts
            return found
        found.insert(0, (digest.hexdigest(), n_bytes, "decompressed content"))
    return found


def _integrity_problem(path: Path, accepted: Iterable[tuple[str | None, int | None]]) -> str:
    """What is wrong with the file ('' when it, or its decompressed content, matches one of the
    accepted (sha256, size) pairs; None in a pair accepts anything)."""
    accepted = [(sha.lower() if sha else None, size) for sha, size in accepted]
    sizes = [size for _, size in accepted]
    found = _digests(path, None if None in sizes else max(sizes))
    for sha, size in accepted:
        for actual_sha, actual_size, _ in found:
            if (sha is None or actual_sha == sha) and (size is None or actual_size == size):
                return ""
    have = "; ".join(f"{what}: SHA-256 {s}, {n} bytes" for s, n, what in found)
    want = " or ".join(f"SHA-256 {s or 'any'}, {n if n is not None else 'any'} bytes" for s, n in accepted)
    return f"{have}; expected {want}"


def _verify(path: Path, accepted: Iterable[tuple[str | None, int | None]], key: str) -> None:
    """Raise :class:`ChecksumError` unless the file matches one of the accepted checksums."""
    problem = _integrity_problem(path, accepted)
    if problem:
        cached = cache_dir().resolve() in path.resolve().parents
        raise ChecksumError(
            f"{path} ({key}): {problem}. The file is damaged or another version"
            + ("; delete it to download it again" if cached else "")
            + " (dataset.verify=false skips this check)"
        )


# --------------------------------------------------------------------------------------------
# Downloading
# --------------------------------------------------------------------------------------------
def _open_url(url: str):
    """The HTTP response for ``url`` (tests replace this to serve local bytes)."""
    return urllib.request.urlopen(url, timeout=60)


def _download(url: str, dest: Path, accepted: Iterable[tuple[str | None, int | None]], key: str) -> Path:
    """Fetch ``url`` to ``dest`` through a temporary file in the same folder, renamed only once
    verified: concurrent downloads of one file each write their own and the last rename wins."""
    if urllib.parse.urlsplit(url).scheme.lower() != "https":
        raise ValueError(f"dataset.url={url!r}: only https:// URLs are accepted")
    hint = f"Download {url} by other means and put it at {dest} (or in a folder of MLGRAPH_DATA_DIR)."
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".part")
    tmp = Path(tmp_name)
    try:
        log.info("downloading %s to %s", url, dest)
        try:
            _fetch(url, fd, dest.name)
        except (OSError, ValueError) as exc:  # URLError is an OSError, a malformed URL a ValueError
            raise DatasetNotFoundError(f"could not download {url} to {dest} ({exc}). {hint}") from exc
        problem = _integrity_problem(tmp, accepted) if accepted else ""
        if problem:
            raise ChecksumError(
                f"download of {url} ({key}) failed verification ({problem}); nothing saved to {dest}. {hint}"
            )
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)  # a failed or interrupted download leaves no partial file
    return dest


def _fetch(url: str, fd: int, label: str) -> None:
    """Stream ``url`` into the open file descriptor ``fd``, with a progress bar (on a terminal)."""
    with os.fdopen(fd, "wb") as out, _open_url(url) as response:
        total = response.headers.get("Content-Length")
        with tqdm(
            total=int(total) if total else None,
            unit="B",
            unit_scale=True,
            desc=f"downloading {label}",
            disable=None,
        ) as bar:
            while chunk := response.read(1 << 20):
                out.write(chunk)
                bar.update(len(chunk))
