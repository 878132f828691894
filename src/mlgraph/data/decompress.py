"""Bounded reading of dataset files: a file's bytes, plain or compressed (gzip, bzip2, xz, zip).

Compressed input is decompressed in steps and refused once it exceeds 50 times the compressed
file's size (at least 64 MB; ``MLGRAPH_MAX_DECOMPRESSED_MB`` sets another bound), so that a
small file cannot expand to exhaust the memory of a shared node. Unreadable or corrupt input is
an :class:`ArffError` naming the file, never quoting its content.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import os
import re
import zipfile
import zlib
from pathlib import Path
from typing import BinaryIO


class ArffError(ValueError):
    """Malformed or unreadable dataset input (ARFF, MULAN XML, multi-label CSV).

    The message starts with the file and, where known, the 1-based line and column
    (``data.arff, line 7, column 2: ...``); ``path`` (alias ``source``), ``line`` and ``column``
    carry them. Messages name attributes but never quote values or lines of the file.
    """

    def __init__(
        self,
        message: str,
        *,
        source: str | None = None,
        line: int | None = None,
        column: int | None = None,
    ):
        where = [str(source) if source is not None else "<input>"]
        where += [f"line {line}"] if line else []
        where += [f"column {column}"] if column else []
        super().__init__(", ".join(where) + ": " + message)
        self.source = self.path = None if source is None else str(source)
        self.line = line
        self.column = column


def read_bytes(path: str | Path) -> bytes:
    """The bytes of a file; a missing, unreadable or directory path is an :class:`ArffError`."""
    try:
        return Path(path).read_bytes()
    except OSError as exc:  # IsADirectoryError, FileNotFoundError, PermissionError, ...
        reason = exc.strerror or type(exc).__name__  # "Is a directory": no file content
        raise ArffError(f"cannot read the file ({reason})", source=str(path)) from None


# Decompressed input is bounded, so that a small compressed file cannot exhaust a node's memory
# (a "gzip bomb"): at most DECOMPRESSION_RATIO times the compressed size, and never less than
# DECOMPRESSION_FLOOR; the environment variable MLGRAPH_MAX_DECOMPRESSED_MB sets another bound.
DECOMPRESSION_RATIO = 50
DECOMPRESSION_FLOOR = 64_000_000
DECOMPRESSION_ENV = "MLGRAPH_MAX_DECOMPRESSED_MB"  # megabytes of 10^6 bytes


def decompression_limit(compressed_size: int) -> int:
    """The most bytes a compressed input of ``compressed_size`` bytes may expand to."""
    given = os.environ.get(DECOMPRESSION_ENV, "").strip()
    if given:
        try:
            return int(float(given) * 1e6)
        except ValueError:
            raise ValueError(f"{DECOMPRESSION_ENV}={given!r} must be a number of megabytes") from None
    return max(DECOMPRESSION_FLOOR, DECOMPRESSION_RATIO * compressed_size)


def _only_member(raw: BinaryIO, source: str) -> BinaryIO:
    archive = zipfile.ZipFile(raw)
    names = [info.filename for info in archive.infolist() if not info.is_dir()]
    if len(names) != 1:
        raise ArffError(f"a zip archive must hold one file, this one holds {len(names)}", source=source)
    return archive.open(names[0])


# Compressions read with the bound: name → (magic bytes, opener(binary stream, source)). bzip2's
# magic includes its block size and first block's (or end's) signature, so that no text is taken
# for it.
_COMPRESSIONS = {
    "gzip": (re.compile(b"\x1f\x8b"), lambda raw, _: gzip.GzipFile(fileobj=raw)),
    "bzip2": (
        re.compile(b"BZh[1-9](\x31\x41\x59\x26\x53\x59|\x17\x72\x45\x38\x50\x90)"),
        lambda raw, _: bz2.BZ2File(raw),
    ),
    "xz": (re.compile(b"\xfd7zXZ\x00"), lambda raw, _: lzma.LZMAFile(raw)),
    "zip": (re.compile(b"PK\x03\x04"), _only_member),
}
_ZSTD = b"\x28\xb5\x2f\xfd"  # not read: it needs a package of its own


def compression(content: bytes, source: str) -> str | None:
    """``"gzip"``, ``"bzip2"``, ``"xz"`` or ``"zip"`` when ``content`` starts with that
    format's magic bytes, else None (plain data); zstd data is an :class:`ArffError`."""
    for name, (magic, _) in _COMPRESSIONS.items():
        if magic.match(content[:16]):
            return name
    if content[: len(_ZSTD)] == _ZSTD:
        raise ArffError(
            "zstd-compressed data is not read; decompress it, or use gzip, bzip2, xz or zip", source=source
        )
    return None


def decompress(content: bytes, source: str, limit: int | None = None) -> bytes | bytearray:
    """``content`` decompressed when it is gzip, bzip2, xz or zip data (every member or stream of
    the first three; a zip archive must hold one file), as it is when plain (:func:`compression`).
    The decompressed bytes are refused as soon as they exceed ``limit`` (default
    :func:`decompression_limit`). A first pass only counts the bytes, in 1 MiB steps, so that a
    bomb is refused holding one step; a second pass reads into a buffer of the counted size (one
    copy of the data, never a growing one)."""
    name = compression(content, source)
    if name is None:
        return content
    opener = _COMPRESSIONS[name][1]
    limit = decompression_limit(len(content)) if limit is None else limit
    try:
        size = 0
        with opener(io.BytesIO(content), source) as stream:
            while chunk := stream.read(1 << 20):
                size += len(chunk)
                if size > limit:
                    raise ArffError(
                        f"the {name} data expands to more than {limit / 1e6:,.0f} MB, over "
                        f"{size // max(len(content), 1)} times its {len(content):,} bytes, and is refused (a "
                        f"decompression bomb?); if the file is genuine, set {DECOMPRESSION_ENV} to a larger "
                        "number of megabytes",
                        source=source,
                    )
        data = bytearray(size)
        with opener(io.BytesIO(content), source) as stream, memoryview(data) as view:
            done = 0
            while done < size and (n := stream.readinto(view[done:])):
                done += n
    except (OSError, EOFError, zlib.error, lzma.LZMAError, zipfile.BadZipFile) as exc:
        # the libraries' messages name the fault ("invalid distance"), never the data
        raise ArffError(f"corrupt {name} data ({exc})", source=source) from None
    return data


def decode_text(content: str | bytes, source: str) -> str:
    """Text with ``\\n`` line ends: decompressed (bounded, :func:`decompress`) when it is gzip,
    bzip2, xz or zip, UTF-8 with a Latin-1 fallback."""
    if isinstance(content, (bytes, bytearray)):
        content = decompress(content, source)
        try:
            content = content.decode("utf-8-sig")
        except UnicodeDecodeError:
            content = content.decode("latin-1")
    if "\r" in content:
        content = content.replace("\r\n", "\n").replace("\r", "\n")
    return content
