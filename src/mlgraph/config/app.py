"""The package's primary config (``conf/config.yaml``; ``src/mlgraph/conf`` links the checkout's
``conf/``, a wheel holds a copy) as a Hydra app: every command that composes it (``run``,
``report``, ``toy``) starts through :func:`hydra_main`."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

CONFIG_DIR = Path(__file__).resolve().parents[1] / "conf"


def hydra_main(task: Callable, argv: list[str], name: str) -> None:
    """Run ``task(cfg)`` as a Hydra app on the package's primary config with ``argv`` as its
    command line; its job (log file, ``--help`` text in ``conf/hydra/help/<name>.yaml``) is
    called ``name`` whatever module ``task`` lives in."""
    import hydra

    # a preset may put `run` into MULTIRUN mode; the other commands read one config, once
    single = (
        ["hydra.mode=RUN"]
        if name != "run" and not any(a.startswith(("-sc", "--shell")) for a in argv)
        else []
    )
    sys.argv = [sys.argv[0], *argv, f"hydra.job.name={name}", f"hydra/help={name}", *single]
    hydra.main(version_base="1.3", config_path=str(CONFIG_DIR), config_name="config")(task)()
