#!/usr/bin/env bash
# Members, groups and per-experiment permissions of the team MLflow server (its basic-auth app),
# done as its admin through MLflow's own client (mlflow.server.auth.client.AuthServiceClient):
#
#   scripts/server-user.sh add alice              # a member; the password is read from stdin (12+
#                                                 # characters), or made up and printed once
#   scripts/server-user.sh password alice         # a new password for alice, read or made up the same way
#   scripts/server-user.sh group lab alice bob    # group `lab` (an MLflow role), alice and bob in it
#   scripts/server-user.sh grant @lab reliance_weight EDIT   # the group may run into the experiment
#   scripts/server-user.sh grant carol reliance_weight READ  # carol may look, not log or delete
#   scripts/server-user.sh show alice             # what alice may do, experiment by experiment
#
# Permissions per experiment: READ (see runs and artifacts), EDIT (also create runs and log, i.e.
# run sweeps into it), MANAGE (also delete and grant; an experiment's creator has it). The admin
# may do everything. Admin credentials: MLFLOW_TRACKING_USERNAME/PASSWORD, or, on the server's
# machine, $MLGRAPH_SERVICES_DIR/mlflow/secrets/admin.pass. The server: MLFLOW_TRACKING_URI, or
# http://127.0.0.1:$MLGRAPH_SERVER_PORT (default 5000). A member changes their own password with
# `password` under their own credentials (the current one is MLFLOW_TRACKING_PASSWORD). Passwords
# travel by stdin and the environment, never on a command line.
source "$(dirname "$0")/lib.sh"

PYTHON=$REPO_DIR/.venv/bin/python
[ -x "$PYTHON" ] || die "$PYTHON missing: run 'make install' first"
[ $# -ge 1 ] || die "usage: $(basename "$0") add USER | password USER | group GROUP USER... | grant USER|@GROUP EXPERIMENT READ|EDIT|MANAGE | show USER"
export MLFLOW_TRACKING_URI=${MLFLOW_TRACKING_URI:-http://127.0.0.1:${MLGRAPH_SERVER_PORT:-5000}}
if [ -z "${MLFLOW_TRACKING_USERNAME:-}" ] && [ -r "$SERVICES_DIR/mlflow/secrets/admin.pass" ]; then
  export MLFLOW_TRACKING_USERNAME=admin
  MLFLOW_TRACKING_PASSWORD=$(cat "$SERVICES_DIR/mlflow/secrets/admin.pass")
  export MLFLOW_TRACKING_PASSWORD
fi

# The program comes by -c: stdin stays the caller's (a password piped to `add`).
read -r -d '' PROGRAM <<'PYEOF' || true
import os
import secrets
import sys

import mlflow
from mlflow.exceptions import MlflowException
from mlflow.server.auth.client import AuthServiceClient

uri = os.environ["MLFLOW_TRACKING_URI"]
auth, client = AuthServiceClient(uri), mlflow.MlflowClient(uri)
WORKSPACE = "default"  # roles live in a workspace; without workspaces enabled, the default one


def fail(message):
    sys.exit(f"[server-user.sh] error: {message}")


def experiment_id(name):
    found = client.get_experiment_by_name(name)
    return found.experiment_id if found else client.create_experiment(name)  # the admin creates it


def role(name):
    found = [r for r in auth.list_roles(WORKSPACE) if r.name == name]
    return found[0] if found else auth.create_role(WORKSPACE, name, f"group {name}")


def new_password():
    """(password, made up?): the password piped to stdin, or a random one."""
    password = sys.stdin.read().strip() if not sys.stdin.isatty() else ""
    if password and len(password) < 12:
        fail("a password has at least 12 characters")
    return (password, False) if password else (secrets.token_urlsafe(18), True)


def add(user):
    password, made_up = new_password()
    auth.create_user(user, password)
    print(f"member {user} created" + (f"; password (shown once): {password}" if made_up else ""))


def password(user):
    new, made_up = new_password()
    me = os.environ.get("MLFLOW_TRACKING_USERNAME")
    # Changing one's own password needs the current one; the admin changes anyone's without.
    current = os.environ.get("MLFLOW_TRACKING_PASSWORD") if user == me else None
    auth.update_user_password(user, new, current_password=current)
    print(f"password of {user} changed" + (f"; new password (shown once): {new}" if made_up else ""))


def group(name, *users):
    found = role(name)
    have = {a.username for a in auth.list_role_users(found.id)} if hasattr(auth, "list_role_users") else set()
    for user in users:
        if user not in have:
            auth.assign_role(user, found.id)
    print(f"group {name}: {', '.join(sorted(set(users) | have)) or 'no members'}")


def grant(who, experiment, permission):
    eid = experiment_id(experiment)
    if who.startswith("@"):
        found = role(who[1:])
        current = [p for p in auth.list_role_permissions(found.id) if p.resource_type == "experiment" and p.resource_pattern == eid]
        if current:
            auth.update_role_permission(current[0].id, permission)
        else:
            auth.add_role_permission(found.id, "experiment", eid, permission)
    else:
        try:
            auth.grant_user_permission(who, "experiment", eid, permission)
        except MlflowException as exc:  # a grant exists: replace it
            if "already exists" not in str(exc):
                raise
            auth.revoke_user_permission(who, "experiment", eid)
            auth.grant_user_permission(who, "experiment", eid, permission)
    print(f"{who} has {permission} on experiment {experiment} ({eid})")


def show(user):
    for experiment in client.search_experiments():
        held = auth.get_user_permission(user, "experiment", experiment.experiment_id).permission
        print(f"{experiment.name:40} {held}")


commands = {"add": (add, 1), "password": (password, 1), "group": (group, 1), "grant": (grant, 3), "show": (show, 1)}
command, *args = sys.argv[1:]
if command not in commands or len(args) < commands[command][1]:
    fail(f"unknown command or missing arguments: {' '.join(sys.argv[1:])}")
if command == "grant" and args[2] not in ("READ", "EDIT", "MANAGE"):
    fail(f"permission {args[2]!r}: READ, EDIT or MANAGE")
try:
    commands[command][0](*args)
except MlflowException as exc:
    fail(f"{uri}: {exc.message if hasattr(exc, 'message') else exc}")
PYEOF
exec "$PYTHON" -W ignore -c "$PROGRAM" "$@"
