"""Credentials stay out of runs, logs and job folders.

Every config value is recorded: as a param of the run, in its ``overrides`` tag and its
``config.yaml``, and by Hydra in the job folder (``.hydra/``, ``run.log``), where anyone who may
read the experiment or the folder reads it. So a tracking URI that carries a password
(``http://alice:PW@host``, ``postgresql://alice:PW@host/db``, ``...?password=PW``) is refused
before anything runs (:func:`argv_problem` on the command line, :func:`tracking_problem` on the
composed config), in one paragraph that shows the URI redacted and says where the password goes
instead: for an MLflow server the variables ``MLFLOW_TRACKING_USERNAME`` and
``MLFLOW_TRACKING_PASSWORD`` or MLflow's credentials file ``~/.mlflow/credentials``; for a
PostgreSQL store ``PGPASSWORD`` or ``~/.pgpass``.

Anything else that looks like a credential and still reaches a param, a tag, an artifact or a log
line is masked (:func:`redact`): the password of a URI, query parameters and ``key=value`` or
``key: value`` pairs whose key names a credential (password, passwd, pwd, secret, token,
api_key, access_key, private_key, credentials, auth), the credential of an ``Authorization``
header, and the values of such environment variables (``MLFLOW_TRACKING_PASSWORD``, ...) wherever
they appear. :func:`redact_messages` applies it to every log record and warning of the process.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import re
import sys
import tempfile
import warnings
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

MASK = "***"
ENV_URI = "MLFLOW_TRACKING_URI"
CREDENTIALS_FILE = "~/.mlflow/credentials"

# A word of a key or variable name that names a credential (``api_token``, ``PGPASSWORD``,
# ``dataset.credentials.user``, ``Authorization``), not ``max_tokens`` or ``exclude_keys``.
_NAMES = (
    r"passw(?:or)?d|secret"
    r"|(?<![a-z0-9])(?:pwd|token|credentials?|auth|authorization)(?![a-z])"
    r"|(?:api|access|private|session|auth)[_-]?key"
)
_SECRET_NAME = re.compile(_NAMES, re.IGNORECASE)
# scheme://user:password@host: the password runs to the last @ before the path (a raw @ in it too)
_USERINFO = re.compile(
    r"(?P<head>\b(?P<scheme>[a-z][a-z0-9+.\-]*)://[^\s/?#@:'\"]*):(?P<secret>[^\s/?#'\"]*)@", re.IGNORECASE
)
_QUERY = re.compile(r"(?P<lead>[?&;])(?P<name>[^=&;#\s'\"?]+)=(?P<value>[^&;#\s'\"]*)")
# key=value, key: value, "key": "value", Authorization: Bearer value: the key and separator are
# matched, the value only looked at, so that a pair inside another's value is found too
_PAIR = re.compile(
    r"(?<![\w.\-])(?P<key>[\w.\-]+)(?P<sep>['\"]?[ \t]*[:=][ \t]*)"
    r"(?=(?P<scheme>(?:bearer|basic|token|digest|negotiate)[ \t]+)?"
    r"(?P<value>\"[^\"\n]*\"|'[^'\n]*'|[^\s,;&'\"\]}]+))",
    re.IGNORECASE,
)
_EMPTY = {"", "null", "none", "~", MASK, f"'{MASK}'", f'"{MASK}"'}
TEXT_SUFFIXES = (".yaml", ".yml", ".csv", ".tsv", ".txt", ".json", ".log", ".md", ".html")


@functools.lru_cache(maxsize=4096)
def is_secret_key(key: str) -> bool:
    """Whether a (dotted) key or variable name names a credential."""
    return bool(_SECRET_NAME.search(key))


def _env_secrets() -> list[str]:
    """Values of this process's environment variables named like credentials (longest first),
    paths to a credentials file and values too short to be a password left out."""
    found = {
        value
        for name, value in os.environ.items()
        if len(value) >= 6 and value[0] not in "/~." and is_secret_key(name)
    }
    return sorted(found, key=len, reverse=True)


def _pairs(text: str) -> str:
    """``text`` with the value of every ``key=value`` or ``key: value`` whose key names a
    credential masked."""
    parts, done = [], 0
    for match in _PAIR.finditer(text):
        value = match["value"]
        if match.start() < done or not is_secret_key(match["key"]) or value.lower() in _EMPTY:
            continue
        quote = value[0] if value[0] in "'\"" else ""
        parts += [text[done : match.start("value")], f"{quote}{MASK}{quote}"]
        done = match.end("value")
    return "".join(parts) + text[done:] if parts else text


def _query(match: re.Match) -> str:
    if not match["value"] or not is_secret_key(match["name"]):
        return match[0]
    return f"{match['lead']}{match['name']}={MASK}"


def redact(text: str, env_secrets: Sequence[str] | None = None) -> str:
    """``text`` with every credential in it replaced by ``***``: the password of a URI
    (``http://alice:***@host``), secret query parameters (``?password=***``), the value of a
    ``key=value`` or ``key: value`` whose key names a credential, the credential of an
    ``Authorization`` header, and the value of any environment variable named like a credential
    (``env_secrets``: those values, when the caller has them already)."""
    text = str(text)
    if "://" in text:
        text = _USERINFO.sub(lambda m: f"{m['head']}:{MASK}@", text)
    text = _pairs(_QUERY.sub(_query, text))
    for secret in _env_secrets() if env_secrets is None else env_secrets:
        text = text.replace(secret, MASK)
    return text


def _masked_value(key: str, value: Any, env_secrets: Sequence[str]) -> Any:
    if is_secret_key(key) and value is not None and str(value).lower() not in _EMPTY:
        return MASK
    return redact(value, env_secrets) if isinstance(value, str) else value


def redact_mapping(mapping: Mapping[str, Any]) -> dict[str, str]:
    """A flat mapping (MLflow params or tags) as texts, redacted: the whole value of a key that
    names a credential, and whatever :func:`redact` finds in every other value."""
    env = _env_secrets()
    return {key: str(_masked_value(key, str(value), env)) for key, value in mapping.items()}


def redact_tree(value: Any) -> Any:
    """Nested mappings and sequences (a config as plain containers) redacted as
    :func:`redact_mapping` does, each leaf judged by its dotted key (everything below
    ``credentials:`` is masked)."""
    env = _env_secrets()

    def walk(value: Any, key: str) -> Any:
        if isinstance(value, Mapping):
            return {k: walk(v, f"{key}.{k}" if key else str(k)) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [walk(v, key) for v in value]
        return _masked_value(key, value, env)

    return walk(value, "")


def _redacted_text(path: Path, text: str) -> str:
    """A file's text redacted: YAML through its structure (keys above a value count), then as
    text (its comments)."""
    if path.suffix in (".yaml", ".yml"):
        import yaml

        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError:
            data = None
        if isinstance(data, (dict, list)):
            masked = redact_tree(data)
            if masked != data:
                text = yaml.safe_dump(masked, sort_keys=False, allow_unicode=True, default_flow_style=False)
    return redact(text)


def redact_file(path: str | os.PathLike) -> bool:
    """Redact a text file (:data:`TEXT_SUFFIXES`) in place, replacing it at once so that a reader
    never sees half of it; whether anything changed. Other files are left as they are."""
    path = Path(path)
    if path.suffix.lower() not in TEXT_SUFFIXES:
        return False
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    masked = _redacted_text(path, text)
    if masked == text:
        return False
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(masked)
        os.chmod(tmp, path.stat().st_mode & 0o7777)
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
    return True


@contextlib.contextmanager
def redacted_copy(path: str | os.PathLike) -> Iterator[str]:
    """The path of a redacted copy of a text file, of the same name in a temporary folder (the
    file itself, when nothing in it needs masking), for a file that another writer may still be
    appending to."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8") if path.suffix.lower() in TEXT_SUFFIXES else None
    except (OSError, UnicodeDecodeError):
        text = None
    masked = None if text is None else _redacted_text(path, text)
    if masked is None or masked == text:
        yield str(path)
        return
    with tempfile.TemporaryDirectory(prefix="mlgraph-redacted-") as folder:
        copy = Path(folder) / path.name
        copy.write_text(masked, encoding="utf-8")
        yield str(copy)


# --------------------------------------------------------------------------------------------
# Log records
# --------------------------------------------------------------------------------------------
def _redact_record(record: logging.LogRecord) -> None:
    try:
        message = record.getMessage()
    except Exception:  # a bad format string: logging reports it when the record is emitted
        return
    masked = redact(message)
    if masked != message:
        record.msg, record.args = masked, None
    if record.exc_info and not record.exc_text:
        record.exc_text = redact(logging.Formatter().formatException(record.exc_info))
    if record.stack_info:
        record.stack_info = redact(record.stack_info)


def redact_messages() -> None:
    """From now on, every log record this process makes is redacted as it is made (:func:`redact`
    on its message and traceback), whichever logger makes it and whichever handlers Hydra, a
    launcher or MLflow set up later; and so is every warning as it is printed. Idempotent."""
    make = logging.getLogRecordFactory()
    if not getattr(make, "redacts", False):

        def redacting(*args, **kwargs) -> logging.LogRecord:
            record = make(*args, **kwargs)
            _redact_record(record)
            return record

        redacting.redacts = True
        logging.setLogRecordFactory(redacting)
    show = warnings.formatwarning
    if not getattr(show, "redacts", False):

        def formatwarning(message, category, filename, lineno, line=None) -> str:
            return redact(show(message, category, filename, lineno, line))

        formatwarning.redacts = True
        warnings.formatwarning = formatwarning


# --------------------------------------------------------------------------------------------
# Tracking URIs that carry a password
# --------------------------------------------------------------------------------------------
def has_password(text: str) -> bool:
    """Whether ``text`` holds a URI with a password (``scheme://user:password@host``) or a
    query parameter named like a credential (``?password=...``, ``&token=...``)."""
    text = str(text)
    return any(m["secret"] for m in _USERINFO.finditer(text)) or any(
        m["value"] and is_secret_key(m["name"]) for m in _QUERY.finditer(text)
    )


def _without_password(text: str) -> str:
    """``text`` with the passwords left out: an HTTP URI loses its whole user part (MLflow's
    client sends the user name), a database URI keeps its user; secret query parameters go."""

    def userinfo(match: re.Match) -> str:
        if match["scheme"].lower() in ("http", "https"):
            return f"{match['scheme']}://"
        return f"{match['head']}@"

    def query(match: re.Match) -> str:
        if not match["value"] or not is_secret_key(match["name"]):
            return match[0]
        return "?" if match["lead"] == "?" else ""

    text = _QUERY.sub(query, _USERINFO.sub(userinfo, text))
    return re.sub(r"\?(?=[\s,'\"#]|$)", "", text.replace("?&", "?"))


def _where_it_goes(text: str) -> str:
    """Whom to give the password of the store at ``text`` instead, for its kind of store."""
    schemes = {m.lower().split("+")[0] for m in re.findall(r"\b([a-z][a-z0-9+.\-]*)://", text, re.I)}
    if schemes & {"postgresql", "postgres"}:
        return (
            "the password to PostgreSQL's client library: the environment variable PGPASSWORD, or a "
            "line host:port:database:user:password in ~/.pgpass (mode 600)"
        )
    if schemes & {"http", "https"} or not schemes:
        return (
            "the user name and password to MLflow's client, which sends them to the server: the "
            "environment variables MLFLOW_TRACKING_USERNAME and MLFLOW_TRACKING_PASSWORD, or a section "
            "[mlflow] with mlflow_tracking_username = ... and mlflow_tracking_password = ... in "
            f"{CREDENTIALS_FILE} (mode 600)"
        )
    return "the password to the store's own client, by its environment variables or credentials file"


def uri_paragraph(key: str, value: str, source: str, give: str | None = None) -> str:
    """The one paragraph that refuses ``key`` holding a password: the URI redacted, never the
    password; what to set (``give``, default ``key``) instead, and where the password goes."""
    return (
        f"{key} holds a password ({redact(value)}, {source}); nothing was run. A tracking URI is "
        "kept where others read it: with the run (its params, its overrides tag, its config.yaml), "
        "in the job folder, and, given on a command line, in the process list and the shell's "
        f"history. Give {give or key}={_without_password(value)}, and {_where_it_goes(value)}."
    )


def _tracking_key(key: str) -> bool:
    """Whether an override's key may set where runs are tracked."""
    key = key.lstrip("+~").lower()
    return key.split(".")[0] == "tracking" or key.endswith(("tracking.uri", "tracking_uri"))


def argv_problem(argv: Sequence[str]) -> str | None:
    """The paragraph refusing a command line that gives a tracking URI with a password (an
    override of ``tracking`` or ``tracking.*``, a sweep over them, ``--uri``), or None. It looks
    at the words only, so it runs before Hydra writes anything."""
    for i, arg in enumerate(argv):
        if arg == "--uri" and i + 1 < len(argv):
            key, value = arg, argv[i + 1]
        elif arg.startswith("--uri="):
            key, value = arg.split("=", 1)
        elif "=" in arg and not arg.startswith("-") and _tracking_key(arg.split("=", 1)[0]):
            key, value = arg.split("=", 1)
            key = key.lstrip("+~")
        else:
            continue
        if has_password(value):
            return uri_paragraph(key, value, "on the command line")
    return None


def _source(cfg, value: str) -> str:
    """Where a password in the config came from, in words."""
    from hydra.core.hydra_config import HydraConfig
    from omegaconf import OmegaConf

    if os.environ.get(ENV_URI) == value:
        return f"from the environment variable {ENV_URI}"
    # a job's own config has no `hydra` node: Hydra's runtime config has it then
    hydra = cfg.get("hydra") or (HydraConfig.get() if HydraConfig.initialized() else None)
    if hydra is None:
        return "set by a config file or on the command line"
    if any(has_password(o) for o in OmegaConf.select(hydra, "overrides.task", default=None) or []):
        return "on the command line"
    choices = OmegaConf.select(hydra, "runtime.choices", default=None) or {}
    chosen = [f"{g}={choices[g]}" for g in ("tracking", "experiment") if choices.get(g)]
    return f"set by a config file{' (' + ', '.join(chosen) + ')' if chosen else ''}"


def tracking_problem(cfg) -> str | None:
    """The paragraph refusing a composed config whose ``tracking`` group holds a password in
    any value (``tracking.uri``, ``tracking.artifact_location``), resolved as the run would
    resolve it (``MLFLOW_TRACKING_URI`` included), or None. A value that does not resolve is
    left to the checks that report it."""
    from omegaconf import DictConfig

    tracking = cfg.get("tracking") if isinstance(cfg, DictConfig) else None
    if not isinstance(tracking, DictConfig):
        return None
    for name in tracking:
        try:
            value = tracking[name]
        except Exception:  # an unresolvable interpolation: not a password
            continue
        if isinstance(value, str) and has_password(value):
            give = ENV_URI if os.environ.get(ENV_URI) == value else None
            return uri_paragraph(f"tracking.{name}", value, _source(cfg, value), give)
    return None


def refuse(problem: str | None) -> None:
    """Print ``problem`` (a paragraph of :func:`argv_problem` or :func:`tracking_problem`) and
    exit with status 2, the status of a config that cannot run; nothing when it is None."""
    if problem:
        print(problem, file=sys.stderr)
        raise SystemExit(2)
