"""Optional extras: what only an option needs is installed with ``pip install 'mlgraph[EXTRA]'``.

:func:`require` imports such a module or raises :class:`MissingExtra`, one paragraph that names
the option, the extra and the ``pip install`` command.
"""

from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType

# extra: (module it brings, the option that needs it, its pip package)
EXTRAS = {
    "approximate": ("faiss", "graph.search=approximate (HNSW neighbour search)", "faiss-cpu"),
    "joblib": ("hydra_plugins.hydra_joblib_launcher", "hydra/launcher=joblib", "hydra-joblib-launcher"),
    "optuna": ("optuna", "hydra/sweeper=optuna", "optuna"),
    "slurm": ("hydra_plugins.hydra_submitit_launcher", "hydra/launcher=slurm", "hydra-submitit-launcher"),
    "skmultilearn": (
        "skmultilearn",
        "method=skml_* (scikit-multilearn-ng's classifiers)",
        "scikit-multilearn-ng",
    ),
}


class MissingExtra(ImportError):
    """An optional extra that an option needs is not installed."""


def missing_paragraph(extra: str) -> str:
    module, option, package = EXTRAS[extra]
    return (
        f"{option} needs {package}, which mlgraph installs only with its optional extra "
        f"'{extra}': pip install 'mlgraph[{extra}]' (or, in a checkout, pip install -e '.[{extra}]'). "
        "Everything else runs without it."
    )


def installed(extra: str) -> bool:
    try:
        return importlib.util.find_spec(EXTRAS[extra][0]) is not None
    except ModuleNotFoundError:  # a missing parent package
        return False


# Hydra options on a command line that need an extra (Hydra itself would only say that it found
# no such option in the group).
_OPTIONS = {
    "hydra/launcher=joblib": "joblib",
    "hydra/launcher=slurm": "slurm",
    "hydra/sweeper=optuna": "optuna",
}


def missing_for(argv: list[str]) -> str | None:
    """The paragraph for the first option in ``argv`` whose extra is not installed, else None."""
    for arg in argv:
        extra = _OPTIONS.get(arg.lstrip("+~"))
        if extra is not None and not installed(extra):
            return missing_paragraph(extra)
    return None


def require(extra: str) -> ModuleType:
    """The module that ``extra`` brings, imported; :class:`MissingExtra` when it is absent."""
    try:
        return importlib.import_module(EXTRAS[extra][0])
    except ImportError as exc:
        raise MissingExtra(missing_paragraph(extra)) from exc
