"""``hydra/launcher=slurm``: hydra-submitit-launcher's SLURM launcher with a time limit that works.

SLURM signals a job ``signal_delay_s`` before its time limit (``--signal=USR1@...``; up to 60 s
earlier still, its timers being coarse), and submitit then requeues it, where it resumes its run.
A delay that is not well below the limit leaves each requeued slot no time to work, so the delay
is kept to at most a quarter of the limit (:func:`mlgraph.sweep.signal_delay`), with a warning.
"""

from __future__ import annotations

from typing import Any

try:  # the `slurm` extra
    from hydra_plugins.hydra_submitit_launcher.submitit_launcher import SlurmLauncher as _SubmititSlurm
except ImportError:  # pragma: no cover - without the extra there is no SLURM launcher
    _SubmititSlurm = None

if _SubmititSlurm is not None:

    class SlurmLauncher(_SubmititSlurm):
        """The SLURM launcher, its ``signal_delay_s`` checked against ``timeout_min``."""

        def __init__(self, **params: Any) -> None:
            from mlgraph.sweep import signal_delay

            if "timeout_min" in params and "signal_delay_s" in params:
                params["signal_delay_s"] = signal_delay(params["timeout_min"], params["signal_delay_s"])
            super().__init__(**params)
