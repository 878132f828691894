"""Authentication of the team MLflow server: MLflow's basic-auth password check, plus two rules.

Plugged into MLflow's basic-auth app as its ``authorization_function``
(``authorization_function = mlgraph_server_auth:authenticate`` in the auth config, with this
folder on the server's ``PYTHONPATH``); scripts/server-up.sh sets both. MLflow calls it for every
request that needs a user, on its Flask routes and its native ones (artifacts) alike.

* **Failed logins are limited per client.** A request whose user name and password do not match
  costs its client one attempt; a client has ``failed_login_burst`` attempts, and gets one back
  every ``failed_login_interval_seconds``. A client with none left is answered 429 (with
  ``Retry-After``) before its password is checked, whatever it sends, until it has one again.
  Requests with a valid password never cost anything, so members and their sweeps are never
  throttled. The counts live in the SQLite file ``failed_login_state`` (shared by all server
  workers; without it each worker counts on its own). The client is the request's peer address
  (an IPv6 client: its /64), or, for a request from the TLS proxy (which sends
  ``X-Mlgraph-Proxy: <proxy_key>``), the address the proxy names in ``X-Real-IP``.
* **Users and groups are the admin's business.** The list of users (which says who is admin),
  the list of groups (roles) and their members and permissions answer 403 to anyone but an
  admin. MLflow already answers 403 when a member asks about another user by name.

Settings: section ``[mlgraph]`` of the auth config (``MLFLOW_AUTH_CONFIG_PATH``), each optional::

    [mlgraph]
    failed_login_burst = 10
    failed_login_interval_seconds = 10
    failed_login_state = /srv/mlflow/run/failed_logins.sqlite
    proxy_key = ...        # a random secret shared with the TLS proxy; the file is mode 600
"""

from __future__ import annotations

import configparser
import hmac
import ipaddress
import math
import os
import sqlite3
import threading
import time

from flask import Response, g, make_response, request
from mlflow.server import auth as basic_auth
from mlflow.server.auth import routes

PROXY_HEADER = "X-Mlgraph-Proxy"

# The routes that list users (with their admin flag), groups (roles), a group's members and a
# group's permissions; both the REST path and the UI's.
ADMIN_ONLY_PATHS = frozenset(
    getattr(routes, name)
    for name in (
        "LIST_USERS",
        "AJAX_LIST_USERS",
        "LIST_ROLES",
        "AJAX_LIST_ROLES",
        "GET_ROLE",
        "AJAX_GET_ROLE",
        "LIST_ROLE_USERS",
        "AJAX_LIST_ROLE_USERS",
        "LIST_ROLE_PERMISSIONS",
        "AJAX_LIST_ROLE_PERMISSIONS",
    )
    if hasattr(routes, name)
)


def _settings() -> configparser.SectionProxy:
    config = configparser.ConfigParser(interpolation=None)
    path = os.environ.get("MLFLOW_AUTH_CONFIG_PATH")
    if path:
        config.read(path)
    if not config.has_section("mlgraph"):
        config.add_section("mlgraph")
    return config["mlgraph"]


class FailedLogins:
    """A token bucket of failed logins per client: ``burst`` attempts, one more back every
    ``interval`` seconds. A client may go below zero (attempts made at the same moment all
    count), and then waits the longer for its next one. Kept in the SQLite file ``path``
    (shared by every process of the server), or in this process's memory when ``path`` is
    empty."""

    def __init__(self, burst: int, interval: float, path: str = ""):
        self.burst, self.interval, self.path = burst, interval, path
        self._local = threading.local()
        self._memory: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def _db(self) -> sqlite3.Connection:
        db = getattr(self._local, "db", None)
        if db is None:
            db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute(
                "CREATE TABLE IF NOT EXISTS failed_logins "
                "(client TEXT PRIMARY KEY, tokens REAL NOT NULL, stamp REAL NOT NULL)"
            )
            self._local.db = db
        return db

    def _tokens(self, row, now: float) -> float:
        if row is None:
            return float(self.burst)
        tokens, stamp = row
        return min(float(self.burst), tokens + max(0.0, now - stamp) / self.interval)

    def _row(self, client: str):
        if not self.path:
            return self._memory.get(client)
        return self._db().execute(
            "SELECT tokens, stamp FROM failed_logins WHERE client = ?", (client,)
        ).fetchone()

    def wait(self, client: str) -> float:
        """Seconds until ``client`` may try a password again; 0 if it may now."""
        tokens = self._tokens(self._row(client), time.time())
        return 0.0 if tokens >= 1 else (1 - tokens) * self.interval

    def failed(self, client: str) -> None:
        """``client`` sent a user name and password that do not match."""
        now = time.time()
        if not self.path:
            with self._lock:
                self._memory[client] = (self._tokens(self._memory.get(client), now) - 1, now)
            return
        db = self._db()
        db.execute("BEGIN IMMEDIATE")
        try:
            tokens = self._tokens(self._row(client), now) - 1
            db.execute("INSERT OR REPLACE INTO failed_logins VALUES (?, ?, ?)", (client, tokens, now))
            # Forget the clients whose attempts are all back.
            db.execute(
                "DELETE FROM failed_logins WHERE tokens + (? - stamp) / ? >= ?",
                (now, self.interval, self.burst),
            )
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise


_SETTINGS = _settings()
PROXY_KEY = _SETTINGS.get("proxy_key", "").strip()
LIMIT = FailedLogins(
    burst=max(1, _SETTINGS.getint("failed_login_burst", fallback=10)),
    interval=max(0.001, _SETTINGS.getfloat("failed_login_interval_seconds", fallback=10.0)),
    path=_SETTINGS.get("failed_login_state", "").strip(),
)


def client_address() -> str:
    """The client a request is counted against (see the module's notes)."""
    address = request.remote_addr or ""
    if PROXY_KEY and hmac.compare_digest(request.headers.get(PROXY_HEADER, ""), PROXY_KEY):
        address = request.headers.get("X-Real-IP", address)
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return address
    if ip.version == 6:
        if ip.ipv4_mapped:
            return str(ip.ipv4_mapped)
        return str(ipaddress.ip_network(f"{ip}/64", strict=False))
    return str(ip)


def _too_many(wait: float) -> Response:
    seconds = max(1, math.ceil(wait))
    response = make_response(f"Too many failed logins from this address; try again in {seconds} s.\n")
    response.status_code = 429
    response.headers["Retry-After"] = str(seconds)
    return response


def _authenticate():
    client = client_address()
    wait = LIMIT.wait(client)
    if wait > 0:
        return _too_many(wait)
    result = basic_auth.authenticate_request_basic_auth()
    if isinstance(result, Response):
        if request.authorization is not None:  # a user name and password that do not match
            LIMIT.failed(client)
        return result
    if request.path in ADMIN_ONLY_PATHS and not basic_auth.store.get_user(result.username).is_admin:
        return basic_auth.make_forbidden_response()
    return result


def authenticate():
    """The ``authorization_function``: the request's ``Authorization`` when its user and password
    match and the rules let it through, else the response that refuses it (401, 403 or 429).
    MLflow may call it several times for one request; the request is judged (and counted) once."""
    if "mlgraph_authentication" not in g:
        g.mlgraph_authentication = _authenticate()
    return g.mlgraph_authentication
