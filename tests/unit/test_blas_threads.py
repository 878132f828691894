"""The commands set OpenBLAS's idle-thread timeout before numpy loads, and leave a user's own."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from mlgraph import cli

ROOT = Path(__file__).resolve().parents[2]
# In a fresh interpreter: OpenBLAS's timeout as the process holds it once numpy has loaded, and
# whether numpy had loaded before the module under test set it.
PROBE = """
import os, sys, builtins
seen = {}
real_import = builtins.__import__
def spy(name, *args, **kwargs):
    if name.split(".")[0] == "numpy" and "numpy" not in seen:
        seen["numpy"] = os.environ.get("OPENBLAS_THREAD_TIMEOUT")
    return real_import(name, *args, **kwargs)
builtins.__import__ = spy
import {module}
print(seen.get("numpy", "numpy not imported"), os.environ.get("OPENBLAS_THREAD_TIMEOUT"))
"""


def test_settle_blas_threads_sets_the_timeout_unless_it_is_set(monkeypatch):
    monkeypatch.delenv("OPENBLAS_THREAD_TIMEOUT", raising=False)
    cli.settle_blas_threads()
    assert os.environ["OPENBLAS_THREAD_TIMEOUT"] == cli.BLAS_THREAD_TIMEOUT == "20"
    monkeypatch.setenv("OPENBLAS_THREAD_TIMEOUT", "28")
    cli.settle_blas_threads()
    assert os.environ["OPENBLAS_THREAD_TIMEOUT"] == "28"


@pytest.mark.parametrize("module", ["run", "mlgraph.engine.experiment"])
def test_python_m_run_sets_it_before_numpy_loads_and_a_library_import_does_not(module):
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_THREAD_TIMEOUT"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), env.get("PYTHONPATH", "")])
    done = subprocess.run(
        [sys.executable, "-c", PROBE.replace("{module}", module)],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        check=True,
    )
    at_numpy, after = done.stdout.split()
    if module == "run":  # the command: set first, so the OpenBLAS that loads with numpy reads it
        assert (at_numpy, after) == ("20", "20")
    else:  # the library alone changes nothing in its user's process
        assert (at_numpy, after) == ("None", "None")


def test_the_mlgraph_command_sets_it_first(monkeypatch, capsys):
    monkeypatch.delenv("OPENBLAS_THREAD_TIMEOUT", raising=False)
    cli.main(["--help"])
    assert os.environ["OPENBLAS_THREAD_TIMEOUT"] == "20" and "reproduce" in capsys.readouterr().out
