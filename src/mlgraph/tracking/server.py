"""The tracking server as a client sees it: whether it answers (:func:`check_reachable`), and, on a
team server with members (MLflow's basic-auth app), who the user is (:func:`current_user`) and
what they may do with an experiment (:func:`experiment_permission`).
"""

from __future__ import annotations

import os
import re
import time

from hydra.errors import CompactHydraException

from mlgraph.config.secrets import redact


class TrackingUnavailable(CompactHydraException):
    """The tracking store cannot be reached or opened; raised before any trial runs."""


def check_reachable(uri: str, wait_seconds: float = 10.0) -> None:
    """Fail fast, naming the URI, when an HTTP tracking server does not answer its health
    check within ``wait_seconds`` (MLflow's own client would retry for minutes per request)."""
    if not uri.startswith(("http://", "https://")):
        return
    deadline = time.monotonic() + wait_seconds
    while True:
        try:  # through MLflow's client: its TLS settings (MLFLOW_TRACKING_SERVER_CERT_PATH) apply
            answer = _auth_request(uri, "/health")
            if answer.status_code == 200:
                return
            reason = f"HTTP {answer.status_code}"
        except Exception as exc:  # MLflow wraps the connection error in its own exception
            if "CERTIFICATE_VERIFY_FAILED" in str(exc) or "certificate verify failed" in str(exc):
                raise TrackingUnavailable(
                    f"MLflow tracking server {redact(uri)} shows a TLS certificate this machine does not "
                    "trust; nothing was run. Set MLFLOW_TRACKING_SERVER_CERT_PATH to the certificate (or "
                    "the bundle of the authority that signed it)."
                ) from exc
            found = re.search(r"\[Errno[^\]]*\][^\"')]*", str(exc))
            reason = found.group(0).strip() if found else str(exc).splitlines()[0]
        if time.monotonic() >= deadline:
            raise TrackingUnavailable(
                f"MLflow tracking server {redact(uri)} does not answer ({reason}); nothing was run. "
                "Start it (`make server-up` starts one on PostgreSQL) or point tracking.uri (or "
                "MLFLOW_TRACKING_URI) at a running server."
            )
        time.sleep(1.0)


CREDENTIALS_FILE = "~/.mlflow/credentials"


def _credentials_source() -> str:
    """Where MLflow's client takes the user name from (it reads both, the environment first)."""
    from mlflow.utils.credentials import _read_mlflow_creds_from_file

    if os.environ.get("MLFLOW_TRACKING_USERNAME"):
        return "MLFLOW_TRACKING_USERNAME/MLFLOW_TRACKING_PASSWORD"
    if _read_mlflow_creds_from_file()[0]:
        return CREDENTIALS_FILE
    return ""


def _auth_request(uri: str, endpoint: str, **params):
    """One GET to the server with the credentials MLflow's client would send (no retries)."""
    from mlflow.utils.credentials import get_default_host_creds
    from mlflow.utils.rest_utils import http_request

    return http_request(
        get_default_host_creds(uri),
        endpoint,
        "GET",
        max_retries=0,
        timeout=10,
        raise_on_status=False,
        params=params,
    )


def current_user(uri: str) -> dict | None:
    """``{"username", "is_admin"}`` of the user the server's basic-auth app recognises from the
    credentials MLflow's client sends (``MLFLOW_TRACKING_USERNAME``/``MLFLOW_TRACKING_PASSWORD``,
    else ``~/.mlflow/credentials``); None for a store without users. Missing or refused
    credentials are a one-paragraph :class:`TrackingUnavailable`."""
    if not uri.startswith(("http://", "https://")):
        return None
    try:
        answer = _auth_request(uri, "/api/2.0/mlflow/users/current")
    except Exception as exc:  # the health check answered; a failure here is the server's
        raise TrackingUnavailable(f"MLflow tracking server {redact(uri)}: {exc}; nothing was run.") from exc
    if answer.status_code == 404:  # no basic-auth app: no users
        return None
    if answer.status_code == 401:
        source = _credentials_source()
        if not source:
            raise TrackingUnavailable(
                f"MLflow tracking server {redact(uri)} lets in its members only, and no user name and "
                "password were given; nothing was run. Set MLFLOW_TRACKING_USERNAME and "
                f"MLFLOW_TRACKING_PASSWORD, or write them into {CREDENTIALS_FILE} (mode 600): a "
                "section [mlflow] with mlflow_tracking_username = ... and mlflow_tracking_password = ... "
                "The server's admin creates members (scripts/server-user.sh)."
            )
        from mlflow.utils.credentials import read_mlflow_creds

        raise TrackingUnavailable(
            f"MLflow tracking server {redact(uri)} refused the password of user "
            f"{read_mlflow_creds().username!r} (from {source}); nothing was run. Check the user name "
            "and password, or ask the server's admin to reset them."
        )
    if answer.status_code != 200:
        raise TrackingUnavailable(
            f"MLflow tracking server {redact(uri)} answered HTTP {answer.status_code} when asked who "
            "you are; nothing was run."
        )
    return answer.json()["user"]


def experiment_permission(uri: str, username: str, experiment_id: str) -> str:
    """The permission ``username`` holds on an experiment (READ, USE, EDIT, MANAGE, or
    NO_PERMISSIONS), as the server resolves it from grants, groups (roles) and its default."""
    answer = _auth_request(
        uri,
        "/api/3.0/mlflow/users/permissions/get",
        username=username,
        resource_type="experiment",
        resource_id=experiment_id,
    )
    return (
        answer.json().get("permission", "NO_PERMISSIONS") if answer.status_code == 200 else "NO_PERMISSIONS"
    )


def _who(user: dict | None) -> str:
    return f"user {user['username']!r}" if user else "this user"


def _unseen_paragraph(uri: str, user: dict | None, experiment: str) -> str:
    """The same words whether the experiment is hidden from the user or cannot be created: they
    do not confirm that an experiment of that name exists."""
    who = _who(user)
    return (
        f"{who} cannot run into experiment {experiment!r} of MLflow tracking server {redact(uri)}: "
        f"it does not exist and cannot be created under that name, or {who} may not see it; nothing "
        "was run. Ask the server's admin for EDIT on it, or use another name (tracking.experiment=...)."
    )


def _permission_paragraph(uri: str, user: dict | None, experiment: str, permission: str) -> str:
    """For a user who can see the experiment (READ or USE) but not log to it."""
    who = _who(user)
    return (
        f"{who} has {permission} permission on experiment {experiment!r} of MLflow tracking server "
        f"{redact(uri)}, and running into it needs EDIT; nothing was run. Ask the experiment's "
        "manager (its creator) or the server's admin to grant you, or your group, EDIT on it, or use "
        "an experiment of your own (tracking.experiment=...)."
    )
