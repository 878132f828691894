"""Bounded reading: compressed input may expand only so far, so a gzip bomb fails fast with
bounded memory (measured in a subprocess of its own)."""

import bz2
import gzip
import io
import json
import lzma
import subprocess
import sys
import textwrap
import zipfile
import zlib

import pytest

from mlgraph.data.arff import ArffError, parse_arff
from mlgraph.data.decompress import compression, decompress, decompression_limit


def test_every_gzip_member_is_read_within_the_limit():
    parts = [b"@relation r\n@attribute a numeric\n", b"@data\n1\n2\n"]
    content = b"".join(gzip.compress(p) for p in parts)
    assert bytes(decompress(content, "two.arff.gz")) == b"".join(parts)
    assert parse_arff(content, "two.arff.gz").data.ravel().tolist() == [1.0, 2.0]
    with pytest.raises(ArffError, match=r"two.arff.gz: the gzip data expands to more than 0 MB"):
        decompress(content, "two.arff.gz", limit=10)


def _zip(*files: tuple[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files:
            archive.writestr(name, data)
    return buffer.getvalue()


PACKERS = {
    "gzip": gzip.compress,
    "bzip2": bz2.compress,
    "xz": lzma.compress,
    "zip": lambda data: _zip(("data.arff", data)),
}


@pytest.mark.parametrize("name", PACKERS)
def test_each_compression_is_found_by_its_magic_and_read_within_the_limit(name):
    text = b"@relation r\n@attribute a numeric\n@data\n1\n2\n"
    packed = PACKERS[name](text)
    assert compression(packed, "f") == name and bytes(decompress(packed, "f")) == text
    assert parse_arff(packed, "f").data.ravel().tolist() == [1.0, 2.0]
    bomb = PACKERS[name](b"\n" * 200_000)
    with pytest.raises(ArffError, match=rf"^f: the {name} data expands to more than 0 MB"):
        decompress(bomb, "f", limit=100_000)
    with pytest.raises(ArffError, match=rf"^f: corrupt {name} data"):
        decompress(packed[: len(packed) // 2], "f")


def test_plain_text_is_not_taken_for_compressed_and_zstd_or_a_many_file_zip_is_refused():
    assert compression(b"BZheight,label\n1,0\n", "t.csv") is None  # bzip2's magic is longer
    assert (
        compression(b"@relation r\n", "r.arff") is None
        and decompress(b"@relation r\n", "r") == b"@relation r\n"
    )
    with pytest.raises(ArffError, match="^z.csv: zstd-compressed data is not read"):
        compression(b"\x28\xb5\x2f\xfd" + b"\0" * 10, "z.csv")
    with pytest.raises(ArffError, match="^two.zip: a zip archive must hold one file, this one holds 2"):
        decompress(_zip(("a", b"1"), ("b", b"2")), "two.zip")


def test_the_limit_is_fifty_times_the_file_with_a_floor_and_can_be_set(monkeypatch):
    assert decompression_limit(1000) == 64_000_000
    assert decompression_limit(4_000_000) == 200_000_000
    monkeypatch.setenv("MLGRAPH_MAX_DECOMPRESSED_MB", "1.5")
    assert decompression_limit(4_000_000) == 1_500_000
    monkeypatch.setenv("MLGRAPH_MAX_DECOMPRESSED_MB", "lots")
    with pytest.raises(ValueError, match="MLGRAPH_MAX_DECOMPRESSED_MB='lots' must be a number of megabytes"):
        decompression_limit(1)


def test_corrupt_gzip_is_one_error_naming_the_file():
    content = gzip.compress(b"@relation r\n" * 100)
    with pytest.raises(ArffError, match="bad.arff.gz: corrupt gzip data"):
        decompress(content[:-30] + b"\0" * 30, "bad.arff.gz")


READ = textwrap.dedent("""
    import json, resource, sys, time
    from mlgraph.data.mulan import load_mulan
    def peak_mb():  # this process's peak (getrusage's ru_maxrss keeps the parent's across exec)
        status = open("/proc/self/status").read()
        return int(status.split("VmHWM:")[1].split()[0]) / 1024
    def cpu():
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return usage.ru_utime + usage.ru_stime
    started, cpu_started = time.perf_counter(), cpu()
    try:
        load_mulan(sys.argv[1], n_labels=1)
        error = None
    except Exception as exc:
        error = f"{type(exc).__name__}: {exc}"
    print(json.dumps({"seconds": time.perf_counter() - started, "cpu_seconds": cpu() - cpu_started,
                      "error": error, "peak_mb": peak_mb()}))
""")


@pytest.mark.slow
def test_a_4_mb_gzip_bomb_fails_in_seconds_with_bounded_memory(tmp_path):
    """A valid header, then 4 GiB of blank lines in 64 gzip members: 4.2 MB on disk."""
    bomb = tmp_path / "bomb.arff.gz"
    header = b"@relation bomb\n@attribute a numeric\n@attribute l {0,1}\n@data\n1,0\n"
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    member = packer.compress(b"\n" * (64 << 20)) + packer.flush()
    bomb.write_bytes(gzip.compress(header) + member * 64)
    assert 4_000_000 < bomb.stat().st_size < 4_500_000
    script = tmp_path / "read.py"
    script.write_text(READ)
    done = subprocess.run(
        [sys.executable, str(script), str(bomb)], capture_output=True, text=True, timeout=120
    )
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["error"].startswith(f"ArffError: {bomb}: the gzip data expands to more than 209 MB")
    # the time the reader spends (CPU seconds, which other load on the machine does not inflate
    # the way it inflates wall time; 1.8 s of wall time on 2 busy cores)
    assert result["cpu_seconds"] < 10 and result["peak_mb"] < 300, result
