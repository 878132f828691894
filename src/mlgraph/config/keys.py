"""Every key of a composed config is one that some config file declares.

Hydra lets ``+graph.kk=3`` add a key nobody reads, and code that reads a group with ``.get``
would run with its default. Here the keys a config may hold are read from the config files
themselves, so a new config group, a new key of a group, a ``search:`` block in a method file
is known the moment its file exists: every key that a file of a group declares (``conf/<group>/
*.yaml``, placed at the group's package, or at the one its ``# @package`` header names), the
keys of the primary config, and those a file pulls in with ``defaults: [/<group>/<option>@_here_]``.
Experiment presets (the ``experiment`` group) and Hydra's own node set keys, they declare none.

A key declared with an empty mapping (``{}``) accepts any key below it. A key of a node with a
``_target_`` (an estimator, a protocol, a loader) may also be any parameter of that target,
which Hydra passes to it. A key that every file declaring it gives a boolean (``true``/``false``)
must hold a boolean.
"""

from __future__ import annotations

import difflib
import functools
import inspect
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import yaml
from omegaconf import DictConfig, OmegaConf

# Groups whose files set keys rather than declare them.
SETTING_GROUPS = ("experiment", "hydra", "benchmark")
PRIMARY = "config.yaml"  # the primary config; conf/<other>.yaml declares keys where it is included
_PACKAGE = re.compile(r"^#\s*@package\s+(\S+)", re.MULTILINE)
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclass(frozen=True)
class Declared:
    """What the config files declare: dotted keys, keys open below them, boolean keys."""

    keys: frozenset[str]
    open: frozenset[str]
    booleans: frozenset[str]


def package_conf_dir() -> Path:
    """The configs shipped with the package (``src/mlgraph/conf`` links the checkout's ``conf/``)."""
    return Path(__file__).resolve().parents[1] / "conf"


def conf_dirs() -> tuple[Path, ...]:
    """The package's configs and, in a Hydra app, every config folder on its search path
    (``--config-dir``, ``hydra.searchpath``)."""
    dirs = [package_conf_dir().resolve()]
    try:
        from hydra.core.hydra_config import HydraConfig

        sources = HydraConfig.get().runtime.config_sources
    except ValueError:  # not inside a Hydra app
        sources = []
    for source in sources:
        if source.schema == "file" and Path(source.path).is_dir():
            dirs.append(Path(source.path).resolve())
    return tuple(dict.fromkeys(dirs))


def _header_package(text: str) -> str | None:
    head = "\n".join(line for line in text.splitlines()[:20] if line.startswith("#"))
    match = _PACKAGE.search(head)
    return match.group(1) if match else None


def _absolute(package: str, group: str, parent: str = "") -> str:
    """A Hydra package name as a dotted path from the root ('' is the root)."""
    package = package.replace("_group_", group.replace("/", "."))
    if package == "_here_":
        return parent
    if package.startswith("_global_"):
        return package[len("_global_") :].lstrip(".")
    return f"{parent}.{package}" if parent else package


def _walk(node: Mapping, prefix: str, out: dict[str, list[object]], open_keys: set[str]) -> None:
    for key, value in node.items():
        if not isinstance(key, str) or key == "defaults":
            continue
        name = f"{prefix}.{key}" if prefix else key
        out.setdefault(name, []).append(value)
        if isinstance(value, Mapping):
            if value:
                _walk(value, name, out, open_keys)
            else:
                open_keys.add(name)


def _load(path: Path) -> tuple[dict, str | None]:
    text = path.read_text(encoding="utf-8")
    return (yaml.load(text, Loader=_Loader) or {}), _header_package(text)


def _file_keys(conf: Path, path: Path, package: str, out: dict, open_keys: set[str], depth: int = 0) -> None:
    """Declare the keys of ``path`` at ``package``, and those of the files its defaults list
    places at the same package (``/<group>/<option>@_here_``)."""
    data, _ = _load(path)
    if not isinstance(data, Mapping):
        return
    _walk(data, package, out, open_keys)
    for entry in data.get("defaults") or ():
        if depth > 5 or not isinstance(entry, str) or "@" not in entry or not entry.startswith("/"):
            continue
        target, _, at = entry[1:].partition("@")
        included = conf / f"{target}.yaml"
        if included.is_file():
            group = str(Path(target).parent)
            _file_keys(conf, included, _absolute(at, group, package), out, open_keys, depth + 1)


@functools.cache
def declared(conf_dirs: tuple[Path, ...]) -> Declared:
    """Every key the config files under ``conf_dirs`` declare (see the module docstring)."""
    values: dict[str, list[object]] = {}
    open_keys: set[str] = set()
    for conf in conf_dirs:
        for path in sorted(conf.rglob("*.yaml")):
            rel = path.relative_to(conf)
            group = rel.parent.as_posix()
            if group.split("/")[0] in SETTING_GROUPS or (group == "." and rel.name != PRIMARY):
                continue  # other top-level files count where a defaults list places them
            _, header = _load(path)
            default = "" if group == "." else group.replace("/", ".")
            package = _absolute(header, group) if header else default
            _file_keys(conf, path, package, values, open_keys)
    booleans = {
        key
        for key, vals in values.items()
        if (given := [v for v in vals if v is not None]) and all(isinstance(v, bool) for v in given)
    }
    return Declared(frozenset(values), frozenset(open_keys), frozenset(booleans))


def _leaves(node, prefix: str = "") -> Iterable[str]:
    """Dotted keys of a plain nested mapping: its leaves and its empty mappings."""
    for key, value in node.items():
        name = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(value, Mapping) and value:
            yield from _leaves(value, name)
        else:
            yield name


def nearest(key: str, known: Iterable[str]) -> str | None:
    """The key in ``known`` whose last part is closest to ``key``'s, among its siblings first,
    then anywhere (``+k=3`` meant ``graph.k``)."""
    parent, _, last = key.rpartition(".")
    by_last: dict[str, list[str]] = {}
    for k in sorted(known):
        by_last.setdefault(k.rpartition(".")[2], []).append(k)
    siblings = [k.rpartition(".")[2] for k in known if k.rpartition(".")[0] == parent]
    found = difflib.get_close_matches(last, siblings, n=1, cutoff=0.6)
    if found:
        return f"{parent}.{found[0]}" if parent else found[0]
    found = difflib.get_close_matches(last, list(by_last), n=1, cutoff=0.8)
    return by_last[found[0]][0] if found else None


@functools.cache
def target_parameters(target: str) -> frozenset[str] | None:
    """The keyword parameters of a ``_target_`` (None: it cannot be imported here, or it takes
    ``**kwargs``)."""
    from hydra.utils import get_object

    try:
        signature = inspect.signature(get_object(target))
    except Exception:  # not importable or no signature: instantiating it will say why
        return None
    if any(p.kind == p.VAR_KEYWORD for p in signature.parameters.values()):
        return None
    return frozenset(signature.parameters)


def _node(plain: Mapping, dotted: str):
    for part in dotted.split(".") if dotted else ():
        plain = plain.get(part) if isinstance(plain, Mapping) else None
    return plain


# Keys below these name any parameter of a method, checked against the estimator by the module
# that reads them (mlgraph.engine.tuning: a grid over a parameter the method's file gives no grid for).
CHECKED_ELSEWHERE = ("method.search.",)


def _accepts(key: str, found: Declared, parents: set[str], plain: Mapping) -> bool:
    """Whether ``key`` is declared, is a parameter of its node's ``_target_``, lies below a key
    declared open (``{}``) or declared as a leaf (a mapping given to a key whose files give it a
    scalar: its reader checks it), or below :data:`CHECKED_ELSEWHERE`."""
    if key in found.keys or key.startswith(CHECKED_ELSEWHERE):
        return True
    parent, _, name = key.rpartition(".")
    target = _node(plain, parent).get("_target_") if isinstance(_node(plain, parent), Mapping) else None
    if isinstance(target, str):
        params = target_parameters(target)
        if params is None or name in params:
            return True
    ancestor = parent
    while ancestor and ancestor not in found.keys:
        ancestor = ancestor.rpartition(".")[0]
    return bool(ancestor) and (ancestor in found.open or ancestor not in parents)


def _children(keys: Iterable[str], parent: str) -> list[str]:
    prefix = f"{parent}." if parent else ""
    return sorted({k[len(prefix) :].split(".")[0] for k in keys if k.startswith(prefix)})


def problems(cfg: DictConfig, dirs: Iterable[Path] | None = None) -> list[str]:
    """One sentence per undeclared key (with the nearest valid key and the keys this config has
    beside it) and per boolean key that holds something else; empty when the config is sound.
    ``hydra`` is Hydra's to check. ``dirs``: the config folders (default :func:`conf_dirs`)."""
    found = declared(tuple(dirs) if dirs is not None else conf_dirs())
    parents = {k.rpartition(".")[0] for k in found.keys}
    plain = OmegaConf.to_container(cfg, resolve=False)
    plain.pop("hydra", None)
    keys = list(_leaves(plain))
    valid = [k for k in keys if _accepts(k, found, parents, plain)]
    messages = []
    for key in (k for k in keys if k not in set(valid)):
        parent = key.rpartition(".")[0]
        beside = _children(valid, parent)
        prefix = f"{parent}." if parent else ""
        guess = nearest(key, [prefix + k for k in beside]) or nearest(key, found.keys)
        where = f"The keys of {parent}" if parent else "The top-level keys"
        messages.append(
            f"{key} is not a config key"
            + (f"; did you mean {guess}?" if guess else ".")
            + (f" {where} are: {', '.join(beside)}." if beside else "")
        )
    for key in sorted(found.booleans):
        value = OmegaConf.select(cfg, key, default=None, throw_on_missing=False)
        if value is not None and not isinstance(value, bool):
            messages.append(f"{key}={value!r} is not a boolean: it must be true or false.")
    return messages


def paragraph(cfg: DictConfig, dirs: Iterable[Path] | None = None) -> str | None:
    """:func:`problems` as one paragraph for the user (None when there are none)."""
    found = problems(cfg, dirs)
    if not found:
        return None
    hint = (
        " (A `+key=value` override adds a key to the config; an existing key is set without `+`;"
        " `--cfg job` prints the config.)"
    )
    return " ".join(found) + (hint if any("is not a config key" in f for f in found) else "")


def is_result_neutral(key: str, cfg: DictConfig) -> bool:
    """Whether flattened config key ``key`` cannot change a run's numbers: with ``tuning=none``
    the search space and the tuning options are never read."""
    tuning = cfg.get("tuning") or {}
    if tuning.get("kind", "none") != "none":
        return False
    return key.startswith(("method.search.", "tuning.")) or key == "method.search"
