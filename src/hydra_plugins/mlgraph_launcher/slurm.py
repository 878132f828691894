"""``hydra/launcher=slurm``: hydra-submitit-launcher's SLURM launcher with a time limit that works.

SLURM signals a job ``signal_delay_s`` before its time limit (``--signal=USR2@...``; up to 60 s
earlier still, its timers being coarse), and submitit then requeues it, where it resumes its run.
A delay that is not well below the limit leaves each requeued slot no time to work, so the delay
is kept to at most a quarter of the limit (:func:`mlgraph.engine.sweep.signal_delay`), with a warning.
Once a job's work is done, the signal is ignored (:meth:`SlurmLauncher.__call__`).
"""

from __future__ import annotations

import signal
from typing import Any

try:  # the `slurm` extra
    from hydra_plugins.hydra_submitit_launcher.submitit_launcher import SlurmLauncher as _SubmititSlurm
except ImportError:  # pragma: no cover - without the extra there is no SLURM launcher
    _SubmititSlurm = None

if _SubmititSlurm is not None:

    class SlurmLauncher(_SubmititSlurm):
        """The SLURM launcher, its ``signal_delay_s`` checked against ``timeout_min``."""

        def __init__(self, **params: Any) -> None:
            from mlgraph.engine.sweep import signal_delay

            if "timeout_min" in params and "signal_delay_s" in params:
                params["signal_delay_s"] = signal_delay(params["timeout_min"], params["signal_delay_s"])
            super().__init__(**params)

        def __call__(self, *args: Any, **kwargs: Any) -> Any:
            """Run one job on its node; from its return on, SLURM's warning signal is ignored.

            A job that ends as its signal arrives has nothing left to save. submitit's handler
            would requeue it, and once the interpreter has dropped that handler on its way out
            the signal's default action kills the process, so that SLURM records a job whose
            result is written as FAILED."""
            from submitit.slurm.slurm import SlurmJobEnvironment

            returned = super().__call__(*args, **kwargs)
            signal.signal(SlurmJobEnvironment._usr_sig(), signal.SIG_IGN)
            return returned
