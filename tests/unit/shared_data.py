"""Where the benchmark collection lies (``shared/datasets`` above the repository), if at all."""

from pathlib import Path

import pytest

DATASETS = next(
    (
        p / "shared" / "datasets"
        for p in Path(__file__).resolve().parents
        if (p / "shared" / "datasets").is_dir()
    ),
    None,
)
needs_datasets = pytest.mark.skipif(DATASETS is None, reason="shared/datasets not found")
