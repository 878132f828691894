"""The API reference (docs/api/index.rst) lists every module of the package, so a new module's
docstrings reach the documentation site (and references to it resolve in the strict build)."""

import pkgutil
import re
from pathlib import Path

import mlgraph

INDEX = Path(__file__).resolve().parents[2] / "docs" / "api" / "index.rst"


def test_every_module_is_in_the_api_reference():
    modules = {m.name for m in pkgutil.walk_packages(mlgraph.__path__, "mlgraph.")}
    modules = {m for m in modules if not m.endswith("__main__")}
    listed = set(re.findall(r"^\s+(mlgraph[\w.]*)\s*$", INDEX.read_text(), flags=re.M))
    assert modules - listed == set()
