"""Benchmark suites: ``conf/benchmark/<name>.yaml`` (shipped) and ``<dir>/benchmark/<name>.yaml``
in a ``--config-dir`` (a user's own, found first), each read into a :class:`Suite`.

A suite file holds the keys of :data:`KEYS` (the shipped ``ssl.yaml`` comments each); a missing
key takes the value in :data:`DEFAULTS`, an unknown key or a value of the wrong kind is a
:class:`BenchmarkError` paragraph naming the file and the key.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from mlgraph.config.app import CONFIG_DIR

GROUP = "benchmark"


class BenchmarkError(ValueError):
    """Bad input of ``mlgraph benchmark``, found before anything runs: one paragraph."""


@dataclass(frozen=True)
class Quick:
    """What ``--quick`` changes: the data sets, the protocol, the labelling rates and the
    repetitions (None: the suite's own)."""

    datasets: tuple[str, ...] | None = None
    protocol: str | None = None
    rates: tuple[float, ...] | None = None
    repeats: int | None = None


@dataclass(frozen=True)
class Suite:
    """One suite file, read."""

    name: str
    source: Path
    description: str
    methods: tuple[str, ...]
    reference: str
    protocol: str
    fallback_protocol: str | None
    rates: tuple[float, ...] | None
    repeats: int | None
    datasets: tuple[str, ...] | None  # None: every registered multi-label data set found here
    metrics: tuple[str, ...]
    scalable: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    overrides: tuple[str, ...] = ()
    quick: Quick = Quick()


KEYS = (
    "description",
    "methods",
    "reference",
    "protocol",
    "fallback_protocol",
    "rates",
    "repeats",
    "datasets",
    "metrics",
    "scalable",
    "overrides",
    "quick",
)
DEFAULTS = {
    "description": "",
    "fallback_protocol": None,
    "rates": None,
    "repeats": None,
    "datasets": "all",
    "metrics": ["avg_precision", "micro_f1", "macro_f1"],
    "scalable": {},
    "overrides": [],
    "quick": {},
}


def suite_dirs(config_dirs: Sequence[str | Path] = ()) -> list[Path]:
    """Where suite files are looked for, in order: each ``--config-dir``'s ``benchmark/``, then
    the package's ``conf/benchmark/``."""
    return [Path(d).expanduser().resolve() / GROUP for d in config_dirs] + [CONFIG_DIR / GROUP]


def suite_files(config_dirs: Sequence[str | Path] = ()) -> dict[str, Path]:
    """Every suite by name (a ``--config-dir``'s file wins over the shipped one of that name)."""
    found: dict[str, Path] = {}
    for folder in suite_dirs(config_dirs):
        for path in sorted(folder.glob("*.yaml")) if folder.is_dir() else ():
            found.setdefault(path.stem, path)
    return found


def _strings(value, key: str, source: Path) -> tuple[str, ...]:
    if (
        isinstance(value, str)
        or not isinstance(value, Sequence)
        or not all(isinstance(v, str) for v in value)
    ):
        raise BenchmarkError(f"{source}: {key} must be a list of names, got {value!r}.")
    return tuple(value)


def _rates(value, key: str, source: Path) -> tuple[float, ...] | None:
    if value is None:
        return None
    ok = isinstance(value, Sequence) and not isinstance(value, str) and len(value) > 0
    if not ok or not all(
        isinstance(r, int | float) and not isinstance(r, bool) and 0 < r <= 1 for r in value
    ):
        raise BenchmarkError(
            f"{source}: {key} must be null or a list of labelling rates in (0, 1], got {value!r}."
        )
    return tuple(float(r) for r in value)


def _repeats(value, key: str, source: Path) -> int | None:
    if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
        raise BenchmarkError(f"{source}: {key} must be null or a positive integer, got {value!r}.")
    return value


def _datasets(value, key: str, source: Path) -> tuple[str, ...] | None:
    if value is None or value == "all":
        return None
    return _strings(value, key, source)


def read_suite(path: Path) -> Suite:
    """The suite in ``path`` (see the module docstring)."""
    from omegaconf import OmegaConf

    try:
        raw = OmegaConf.to_container(OmegaConf.load(path), resolve=True)
    except Exception as exc:  # a YAML syntax error, an interpolation that does not resolve
        raise BenchmarkError(f"{path}: cannot be read as a suite file: {exc}") from exc
    if not isinstance(raw, dict):
        raise BenchmarkError(f"{path}: a suite file is a mapping of the keys {', '.join(KEYS)}.")
    unknown = sorted(set(raw) - set(KEYS))
    required = [k for k in KEYS if k not in DEFAULTS and k not in raw]
    if unknown or required:
        problem = (
            f"unknown key(s) {', '.join(unknown)}"
            if unknown
            else f"the key(s) {', '.join(required)} are required"
        )
        raise BenchmarkError(
            f"{path}: {problem}. A suite file holds {', '.join(KEYS)} (see "
            f"{CONFIG_DIR / GROUP / 'ssl.yaml'}, which comments each)."
        )
    spec = {**DEFAULTS, **raw}
    quick = spec["quick"] or {}
    if not isinstance(quick, dict) or set(quick) - {"datasets", "protocol", "rates", "repeats"}:
        raise BenchmarkError(
            f"{path}: quick holds datasets, protocol, rates and repeats only, got {quick!r}."
        )
    if quick.get("protocol") is not None and not isinstance(quick["protocol"], str):
        raise BenchmarkError(f"{path}: quick.protocol must be null or a protocol name.")
    scalable = spec["scalable"] or {}
    if not isinstance(scalable, dict):
        raise BenchmarkError(f"{path}: scalable maps a method to a list of overrides, got {scalable!r}.")
    for key in ("protocol", "reference"):
        if not isinstance(spec[key], str) or not spec[key]:
            raise BenchmarkError(f"{path}: {key} must be a name, got {spec[key]!r}.")
    if spec["fallback_protocol"] is not None and not isinstance(spec["fallback_protocol"], str):
        raise BenchmarkError(f"{path}: fallback_protocol must be null or a protocol name.")
    return Suite(
        name=path.stem,
        source=path,
        description=str(spec["description"]),
        methods=_strings(spec["methods"], "methods", path),
        reference=spec["reference"],
        protocol=spec["protocol"],
        fallback_protocol=spec["fallback_protocol"],
        rates=_rates(spec["rates"], "rates", path),
        repeats=_repeats(spec["repeats"], "repeats", path),
        datasets=_datasets(spec["datasets"], "datasets", path),
        metrics=_strings(spec["metrics"], "metrics", path),
        scalable={m: _strings(o, f"scalable.{m}", path) for m, o in scalable.items()},
        overrides=_strings(spec["overrides"], "overrides", path),
        quick=Quick(
            datasets=_datasets(quick["datasets"], "quick.datasets", path) if "datasets" in quick else None,
            protocol=quick.get("protocol"),
            rates=_rates(quick.get("rates"), "quick.rates", path),
            repeats=_repeats(quick.get("repeats"), "quick.repeats", path),
        ),
    )


def load_suite(name: str, config_dirs: Sequence[str | Path] = ()) -> Suite:
    """The suite called ``name``; :class:`BenchmarkError` listing the suites there are when
    there is none of that name."""
    files = suite_files(config_dirs)
    if name not in files:
        listing = "; ".join(f"{n} ({read_suite(p).description or p})" for n, p in files.items())
        where = ", ".join(str(d) for d in suite_dirs(config_dirs))
        raise BenchmarkError(
            f"mlgraph benchmark: there is no suite {name!r}. The suites are: {listing}. They are the "
            f"files <name>.yaml in {where}; add your own there (a folder given with --config-dir "
            f"holds them in its benchmark/ folder). Run e.g. `mlgraph benchmark ssl --quick`."
        )
    return read_suite(files[name])
