"""Bounded reading: compressed input may expand only so far, so a gzip bomb fails fast with
bounded memory (measured in a subprocess of its own)."""

import gzip
import json
import subprocess
import sys
import textwrap
import zlib

import pytest

from mlgraph.data.arff import ArffError, decompression_limit, gunzip, parse_arff


def test_every_gzip_member_is_read_within_the_limit():
    parts = [b"@relation r\n@attribute a numeric\n", b"@data\n1\n2\n"]
    content = b"".join(gzip.compress(p) for p in parts)
    assert bytes(gunzip(content, "two.arff.gz")) == b"".join(parts)
    assert parse_arff(content, "two.arff.gz").data.ravel().tolist() == [1.0, 2.0]
    with pytest.raises(ArffError, match=r"two.arff.gz: the gzip data expands to more than 0 MB"):
        gunzip(content, "two.arff.gz", limit=10)


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
        gunzip(content[:-30] + b"\0" * 30, "bad.arff.gz")


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
