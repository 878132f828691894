"""``python -m mlgraph.data [NAME ...] [--fetch]``: where each file of the named registered
datasets (default: all) is found, or the URL it comes from and the cache path it goes to; with
``--fetch``, download and verify what is missing (e.g. on a login node, for offline compute nodes)."""

from __future__ import annotations

import argparse

from mlgraph.data.registry import (
    ChecksumError,
    DatasetNotFoundError,
    dataset_files,
    dataset_path,
    find_file,
    registry,
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mlgraph.data", description=__doc__)
    parser.add_argument("names", nargs="*", metavar="NAME", help=f"registered: {', '.join(registry())}")
    parser.add_argument("--fetch", action="store_true", help="download and verify the missing files")
    args = parser.parse_args(argv)
    unknown = [name for name in args.names if name not in registry()]
    if unknown:
        parser.error(f"unknown dataset(s) {', '.join(unknown)}; registered: {', '.join(registry())}")
    failed = 0
    for name in args.names or list(registry()):
        for role, record in dataset_files(name).items():
            try:
                where = (
                    dataset_path(name, role)
                    if args.fetch
                    else find_file(record.path, alternatives=[record.path + ".gz"])
                )
            except (ChecksumError, DatasetNotFoundError) as exc:
                failed += args.fetch
                where = f"FAILED: {exc}" if args.fetch else f"missing: {record.url} -> {record.cache_path()}"
            print(f"{name:16} {role:5} {where}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
