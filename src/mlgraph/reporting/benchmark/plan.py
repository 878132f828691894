"""What a benchmark runs: its methods (each checked to apply to the suite), its data sets (each
found here, or listed with the command that fetches it), the protocol of each data set, and for
every (method, data set) whether the exact path fits, the documented scalable settings do, or
nothing does; then the ``mlgraph run -m`` sweeps that run them.

Every check of this module happens before any trial runs: bad input is one
:class:`~mlgraph.reporting.benchmark.suites.BenchmarkError` paragraph, and a (method, data set)
that cannot run becomes a cell that says why.
"""

from __future__ import annotations

import logging
import re
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from mlgraph.reporting.benchmark.suites import BenchmarkError, Suite
from mlgraph.reporting.reproduce import Missing, Paper, resolve_datasets

log = logging.getLogger(__name__)

# Overrides the benchmark reads itself; every other override goes to every run.
METHOD, DATASET, PROTOCOL = "method=", "dataset=", "protocol="
RATES, REPEATS = "protocol.rates=", "protocol.repeats="
# Options whose override needs an optional extra, and that extra (dropped from the scalable
# settings when it is not installed).
NEEDS_EXTRA = {"graph.search=approximate": "approximate"}

RUN, SCALABLE, SKIPPED = "run", "scalable settings", "cannot run"
LEFT_OUT = "left out by --quick (run without --quick to include it)"


@dataclass(frozen=True)
class Options:
    """What the command line asks beyond the suite: ``method=``, ``dataset=``, ``protocol=``,
    ``protocol.rates=``, ``protocol.repeats=``, ``report.reference=``; ``passthrough`` is every
    other override (for every run), ``report`` the ``report.*`` and ``tracking*`` ones (for the
    report's settings)."""

    methods: tuple[str, ...] | None = None
    datasets: tuple[str, ...] | None = None
    protocol: str | None = None
    rates: tuple[float, ...] | None = None
    repeats: int | None = None
    reference: str | None = None
    passthrough: tuple[str, ...] = ()
    settings: tuple[str, ...] = ()


def _names(value: str, key: str) -> tuple[str, ...]:
    names = tuple(v.strip() for v in value.strip("'\"").split(",") if v.strip())
    if not names:
        raise BenchmarkError(f"mlgraph benchmark: {key}= needs a name or a comma-separated list of names.")
    return names


def parse_overrides(overrides: Sequence[str]) -> Options:
    """Split the command line's overrides into the benchmark's own and the runs' (see
    :class:`Options`)."""
    found: dict = {"passthrough": [], "settings": []}
    for arg in overrides:
        if arg.startswith(METHOD):
            found["methods"] = _names(arg[len(METHOD) :], "method")
        elif arg.startswith(DATASET):
            found["datasets"] = _names(arg[len(DATASET) :], "dataset")
        elif arg.startswith(PROTOCOL):
            found["protocol"] = arg[len(PROTOCOL) :]
        elif arg.startswith(RATES):
            value = yaml.safe_load(arg[len(RATES) :].strip("'\""))
            value = [value] if isinstance(value, int | float) else value
            if (
                not isinstance(value, list)
                or not value
                or not all(
                    isinstance(r, int | float) and not isinstance(r, bool) and 0 < r <= 1 for r in value
                )
            ):
                raise BenchmarkError(
                    f"mlgraph benchmark: {arg} is not valid: protocol.rates takes a list of labelling "
                    "rates in (0, 1], e.g. protocol.rates=[0.1,0.5]."
                )
            found["rates"] = tuple(float(r) for r in value)
        elif arg.startswith(REPEATS):
            value = arg[len(REPEATS) :]
            if not value.isdigit() or int(value) < 1:
                raise BenchmarkError(
                    f"mlgraph benchmark: {arg} is not valid: protocol.repeats takes a positive integer."
                )
            found["repeats"] = int(value)
        elif arg.startswith("report.reference="):
            found["reference"] = arg.split("=", 1)[1].strip("'\"")
            found["settings"].append(arg)
        elif arg.lstrip("+~").startswith(("report.", "tracking")):
            found["settings"].append(arg)
            if arg.lstrip("+~").startswith("tracking"):
                found["passthrough"].append(arg)
        else:
            found["passthrough"].append(arg)
    found["passthrough"] = tuple(found["passthrough"])
    found["settings"] = tuple(found["settings"])
    return Options(**found)


# --- Methods ---------------------------------------------------------------------------------
def method_file(method: str, config_dirs: Sequence[str | Path] = ()) -> Path | None:
    """``method/<method>.yaml`` in a ``--config-dir`` or the package's configs (None: nowhere)."""
    from mlgraph.config.app import CONFIG_DIR

    for folder in [*(Path(d).expanduser() for d in config_dirs), CONFIG_DIR]:
        path = folder / "method" / f"{method}.yaml"
        if path.is_file():
            return path
    return None


def method_class(method: str, config_dirs: Sequence[str | Path] = ()) -> type:
    """The estimator class a method config's ``_target_`` names; :class:`BenchmarkError` when
    there is no such method or its target cannot be imported."""
    from mlgraph.config.app import CONFIG_DIR
    from mlgraph.methods.labelled_only import check_target

    path = method_file(method, config_dirs)
    if path is None:
        known = sorted(
            {
                p.stem
                for d in [*(Path(c).expanduser() for c in config_dirs), CONFIG_DIR]
                for p in (d / "method").glob("*.yaml")
            }
        )
        raise BenchmarkError(
            f"mlgraph benchmark: there is no method {method!r}: a method is a file method/<name>.yaml in "
            f"the package's configs or in a folder given with --config-dir. The methods are: {', '.join(known)}."
        )
    target = (yaml.safe_load(path.read_text()) or {}).get("_target_")
    try:
        return check_target(target, key=f"{path}: _target_")
    except ValueError as exc:
        raise BenchmarkError(f"mlgraph benchmark: method {method}: {exc}") from exc


def check_methods(suite: Suite, methods: Sequence[str], config_dirs: Sequence[str | Path] = ()) -> None:
    """Every method exists, applies to the suite's plain multi-label data (not a dual-set
    method) and has its optional extra installed; one paragraph naming those that do not."""
    from mlgraph.config.extras import installed, missing_paragraph
    from mlgraph.methods.dual_set import DualSetEstimator

    classes = {m: method_class(m, config_dirs) for m in methods}
    dual = [m for m, cls in classes.items() if issubclass(cls, DualSetEstimator)]
    if dual:
        applies = [m for m in classes if m not in dual]
        raise BenchmarkError(
            f"mlgraph benchmark {suite.name}: {', '.join(dual)} "
            f"{'does' if len(dual) == 1 else 'do'} not apply to this suite: "
            f"{'it is a dual-set method' if len(dual) == 1 else 'they are dual-set methods'} "
            f"({', '.join(classes[m].__name__ for m in dual)}), which learn{'s' if len(dual) == 1 else ''} "
            "the two label sets of a dual-set table (dataset=frequency_gender, under protocol=cv5), while the "
            "suite runs plain multi-label data sets. Leave it out of method=, or run it with "
            "`mlgraph run method=dsml dataset=frequency_gender`."
            + (f" The other methods given apply: {', '.join(applies)}." if applies else "")
        )
    for method, cls in classes.items():
        extra = getattr(cls, "extra", None)
        if extra and not installed(extra):
            raise BenchmarkError(f"mlgraph benchmark: method {method}: {missing_paragraph(extra)}")


def choose_reference(suite: Suite, methods: Sequence[str], asked: str | None) -> str:
    """``report.reference`` if given, else the first method given that the suite does not list
    (the user's own), else the suite's reference; :class:`BenchmarkError` when it is not among
    the methods that run."""
    own = [m for m in methods if m not in suite.methods]
    reference = asked or (own[0] if own else suite.reference)
    if reference not in methods:
        raise BenchmarkError(
            f"mlgraph benchmark {suite.name}: the reference method {reference!r} "
            f"({'report.reference' if asked else f'the suite {suite.source.name}'}) is not among the methods "
            f"that run ({', '.join(methods)}): every table tests the other methods against it. Add it to "
            f"method=, or name one of those with report.reference=<method>."
        )
    return reference


# --- Data sets -------------------------------------------------------------------------------
def registered_datasets() -> list[str]:
    """Every registered multi-label data set that has a config (``dataset=<name>``)."""
    from mlgraph.config.app import CONFIG_DIR
    from mlgraph.data.registry import dataset_names

    return [n for n in dataset_names("mulan") if (CONFIG_DIR / "dataset" / f"{n}.yaml").is_file()]


def has_split(dataset: str) -> bool:
    """Whether the registry lists a published train/test split of ``dataset``."""
    from mlgraph.data.registry import registry

    entry = registry().get(dataset)
    return entry is not None and {"train", "test"} <= set(entry.roles)


def _fetch(dataset: str) -> str:
    return f"python -m mlgraph.data {dataset} --fetch"


def resolve(suite: Suite, wanted: Sequence[str], protocol: str, fallback: str | None):
    """(data sets to run, their protocols, what is missing): each wanted registered data set
    found here (its split files too where its protocol is ``fixed``) with the suite's protocol,
    or ``fallback`` where the registry lists no published split; the others as
    :class:`~mlgraph.reporting.reproduce.Missing`, with the command that fetches them."""
    from mlgraph.data.registry import missing_files, registry

    lister = Paper(suite.name, suite.description, ())  # no stand-ins: a missing data set is missing
    use, protocols, missing = [], {}, []
    for dataset in wanted:
        entry = registry().get(dataset)
        if entry is not None and entry.kind != "mulan":
            raise BenchmarkError(
                f"mlgraph benchmark {suite.name}: dataset {dataset} is a {entry.kind} table; the suites "
                "run plain multi-label data sets (`python -m mlgraph.data` lists them)."
            )
        chosen = protocol if protocol != "fixed" or has_split(dataset) or entry is None else fallback
        if chosen is None:
            missing.append(Missing(dataset, f"has no published train/test split for protocol={protocol}"))
            continue
        if entry is None:  # a data set config of the user's own: its run says if its files are missing
            use.append(dataset)
            protocols[dataset] = chosen
            continue
        found, lost = resolve_datasets(lister, [dataset])
        if chosen == "fixed" and found:
            splits = [r.path for role, r in missing_files(dataset).items() if role in ("train", "test")]
            if splits:
                found = []
                lost = [
                    Missing(
                        dataset,
                        f"its published split is not available offline ({', '.join(splits)}); its cells have no run",
                        _fetch(dataset),
                    )
                ]
        missing += lost
        if found:
            use.append(dataset)
            protocols[dataset] = chosen
    return use, protocols, missing


# --- Each (method, data set): exact, scalable, or why not ------------------------------------
@dataclass(frozen=True)
class Pair:
    """One (method, data set): its protocol, ``status`` (:data:`RUN`, :data:`SCALABLE` or
    :data:`SKIPPED`), the overrides of its scalable settings, and ``why`` (the reason it needs
    them, or cannot run), with ``needs_gb`` where that is memory."""

    dataset: str
    method: str
    protocol: str
    status: str = RUN
    overrides: tuple[str, ...] = ()
    why: str = ""
    needs_gb: float | None = None


_NEEDS = re.compile(r"needs ~([0-9.,]+) GB")


def _needs_gb(message: str) -> float | None:
    match = _NEEDS.search(message)
    return float(match.group(1).replace(",", "")) if match else None


def scalable_settings(suite: Suite, method: str) -> tuple[tuple[str, ...], list[str]]:
    """(the suite's scalable overrides of ``method`` whose extras are installed, notes on the
    ones left out)."""
    from mlgraph.config.extras import installed

    kept, notes = [], []
    for override in suite.scalable.get(method, ()):
        extra = NEEDS_EXTRA.get(override)
        if extra and not installed(extra):
            notes.append(f"{override} left out: pip install 'mlgraph[{extra}]'")
        else:
            kept.append(override)
    return tuple(kept), notes


class Composer:
    """Composes a run's config as ``mlgraph run`` does (the package's configs, a ``--config-dir``
    on the search path) and checks it as a run would before its trials: every key, the data,
    the trials, the estimator (:func:`mlgraph.engine.experiment.prepare`) and its memory
    (:func:`mlgraph.engine.memory.check_memory`). A warning the checks raise (a data set's
    constant features, say) is shown once, not once per method that loads the data set."""

    def __init__(self, config_dir: str | None, budget: float):
        self.config_dir = config_dir
        self.budget = budget
        self._warned: set[tuple[type, str]] = set()

    def check(self, overrides: Sequence[str]) -> None:
        from hydra import compose, initialize_config_dir

        import mlgraph.config  # noqa: F401  (registers the abspath resolver)
        from mlgraph.config.app import CONFIG_DIR
        from mlgraph.engine.experiment import prepare
        from mlgraph.engine.memory import check_memory

        search = [f"hydra.searchpath=[file://{Path(self.config_dir).resolve()}]"] if self.config_dir else []
        with initialize_config_dir(version_base="1.3", config_dir=str(CONFIG_DIR)):
            cfg = compose("config", overrides=[*search, *overrides])
        quiet = logging.getLogger("mlgraph.engine.experiment")
        level = quiet.level
        quiet.setLevel(logging.WARNING)  # each check loads its data: no line per load
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                plan = prepare(cfg)
        finally:
            quiet.setLevel(level)
            for w in caught:
                if (w.category, str(w.message)) not in self._warned:
                    self._warned.add((w.category, str(w.message)))
                    warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        check_memory(cfg, plan, self.budget)


def decide(suite: Suite, dataset: str, method: str, protocol: str, base: Sequence[str], check) -> Pair:
    """The :class:`Pair` of ``(method, dataset)``: ``check(overrides)`` (a
    :meth:`Composer.check`) on the run's overrides; where it raises a ConfigError, again with
    the suite's scalable settings of the method; where that fails too (or there are none),
    :data:`SKIPPED` with the first error's paragraph (its "needs ~N GB" kept)."""
    from mlgraph.engine.checks import ConfigError

    run = [f"method={method}", f"dataset={dataset}", f"protocol={protocol}", *base]
    try:
        check(run)
        return Pair(dataset, method, protocol)
    except ConfigError as exc:
        first = " ".join(str(exc).split())
    settings, notes = scalable_settings(suite, method)
    if settings:
        try:
            check([*run, *settings])
            why = first + (f" ({'; '.join(notes)})" if notes else "")
            return Pair(dataset, method, protocol, SCALABLE, settings, why, _needs_gb(first))
        except ConfigError as exc:
            first += f" With its scalable settings ({' '.join(settings)}): {' '.join(str(exc).split())}"
    if notes:
        first += f" ({'; '.join(notes)})"
    return Pair(dataset, method, protocol, SKIPPED, (), first, _needs_gb(first))


# --- The plan --------------------------------------------------------------------------------
@dataclass
class BenchmarkPlan:
    """Everything ``mlgraph benchmark`` does, decided before it runs anything."""

    suite: Suite
    quick: bool
    experiment: str
    methods: list[str]
    reference: str
    datasets: list[str]
    protocols: dict[str, str]
    rates: tuple[float, ...] | None
    repeats: int | None
    missing: list[Missing]
    pairs: list[Pair] = field(default_factory=list)
    commands: list[tuple[str, list[str]]] = field(default_factory=list)
    passthrough: tuple[str, ...] = ()
    config_dir: str | None = None

    def pair(self, dataset: str, method: str) -> Pair | None:
        return next((p for p in self.pairs if p.dataset == dataset and p.method == method), None)


def experiment_name(suite: Suite, quick: bool) -> str:
    return f"benchmark-{suite.name}" + ("-quick" if quick else "")


def _protocol_overrides(rates, repeats) -> list[str]:
    out = []
    if rates is not None:
        out.append(f"protocol.rates=[{','.join(f'{r:g}' for r in rates)}]")
    if repeats is not None:
        out.append(f"protocol.repeats={repeats}")
    return out


def wanted_datasets(
    suite: Suite, options: Options, quick: bool, config_dirs: Sequence[str | Path] = ()
) -> tuple[str, ...]:
    """The data sets asked for: ``dataset=`` (each registered, or a ``dataset/<name>.yaml`` of a
    ``--config-dir``; :class:`BenchmarkError` otherwise), else the suite's (``--quick``'s), else
    every registered multi-label data set."""
    if options.datasets is None:
        chosen = suite.quick.datasets if quick and suite.quick.datasets is not None else suite.datasets
        return chosen or tuple(registered_datasets())
    known = set(registered_datasets())
    unknown = [
        d
        for d in options.datasets
        if d not in known and not any((Path(c) / "dataset" / f"{d}.yaml").is_file() for c in config_dirs)
    ]
    if unknown:
        raise BenchmarkError(
            f"mlgraph benchmark: there is no data set {', '.join(map(repr, unknown))}: a data set is a "
            f"registered one ({', '.join(sorted(known))}) or a file dataset/<name>.yaml in a folder given "
            "with --config-dir."
        )
    return tuple(options.datasets)


def make_plan(
    suite: Suite,
    options: Options,
    quick: bool = False,
    config_dir: str | None = None,
    check=None,
) -> BenchmarkPlan:
    """The plan of ``suite`` with the command line's ``options`` (see the module docstring).
    ``check``: the pre-run check of one run's overrides (a :meth:`Composer.check`); None
    decides nothing (every present pair is planned to run, as ``--report-only`` reads it)."""
    dirs = [config_dir] if config_dir else []
    methods = list(dict.fromkeys(options.methods or suite.methods))
    check_methods(suite, methods, dirs)
    reference = choose_reference(suite, methods, options.reference)
    wanted = wanted_datasets(suite, options, quick, dirs)
    extra_missing = []
    if options.datasets is None and quick:
        left = [d for d in (suite.datasets or registered_datasets()) if d not in wanted]
        extra_missing = [Missing(d, LEFT_OUT) for d in left]
    protocol = options.protocol or (
        suite.quick.protocol if quick and suite.quick.protocol else suite.protocol
    )
    fallback = None if options.protocol else suite.fallback_protocol
    datasets, protocols, missing = resolve(suite, wanted, protocol, fallback)
    rates = options.rates or (suite.quick.rates if quick and suite.quick.rates else suite.rates)
    repeats = options.repeats or (suite.quick.repeats if quick and suite.quick.repeats else suite.repeats)
    experiment = experiment_name(suite, quick)
    plan = BenchmarkPlan(
        suite,
        quick,
        experiment,
        methods,
        reference,
        datasets,
        protocols,
        rates,
        repeats,
        missing + extra_missing,
        passthrough=options.passthrough,
        config_dir=config_dir,
    )
    # Hydra's own settings (the launcher) shape how the runs are launched, not their configs
    base = [
        o
        for o in (*_protocol_overrides(rates, repeats), *suite.overrides, *options.passthrough)
        if not o.lstrip("+~").startswith("hydra")
    ]
    for dataset in datasets:
        for method in methods:
            if check is None:
                plan.pairs.append(Pair(dataset, method, protocols[dataset]))
            else:
                plan.pairs.append(decide(suite, dataset, method, protocols[dataset], base, check))
    plan.commands = commands(plan)
    return plan


def commands(plan: BenchmarkPlan) -> list[tuple[str, list[str]]]:
    """The ``mlgraph run -m`` sweeps of the plan's pairs that run: one per (protocol, scalable
    settings, set of methods), over the data sets that share them, each into the benchmark's
    experiment with ``resume=true``."""
    groups: dict[tuple, dict[str, list[str]]] = {}
    for pair in plan.pairs:
        if pair.status != SKIPPED:
            groups.setdefault((pair.protocol, pair.overrides), {}).setdefault(pair.dataset, []).append(
                pair.method
            )
    out = []
    for (protocol, settings), by_dataset in groups.items():
        by_methods: dict[tuple[str, ...], list[str]] = {}
        for dataset, methods in by_dataset.items():
            by_methods.setdefault(tuple(methods), []).append(dataset)
        for methods, datasets in by_methods.items():
            args = [
                "-m",
                *(["--config-dir", str(Path(plan.config_dir).resolve())] if plan.config_dir else []),
                f"method={','.join(methods)}",
                f"dataset={','.join(datasets)}",
                f"protocol={protocol}",
                *_protocol_overrides(plan.rates, plan.repeats),
                f"tracking.experiment={plan.experiment}",
                "resume=true",
                "progress=false",
                *plan.suite.overrides,
                *settings,
                *plan.passthrough,
            ]
            label = f"{protocol}{' + scalable settings' if settings else ''}: {', '.join(datasets)}"
            out.append((label, args))
    return out
