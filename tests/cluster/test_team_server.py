"""The team server lets in its members only: anonymous clients can neither read nor delete, a
member of a group with EDIT runs a sweep into the group's experiment, a reader cannot delete,
and a missing or wrong password is one paragraph before anything runs."""

import os
import secrets
import subprocess
import sys
import uuid
from pathlib import Path

import mlflow
import pytest
import requests
from mlflow.server.auth.client import AuthServiceClient

pytestmark = pytest.mark.cluster

REPO = Path(__file__).resolve().parents[2]


def command(uri, experiment, out, credentials, *overrides, multirun=False, **env_vars):
    """The real command as a user with ``credentials`` ((name, password) or None)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_TRACKING_")}
    env.update(MLGRAPH_OUTPUT_DIR=str(out), HOME=str(out), **env_vars)  # no ~/.mlflow/credentials here
    if credentials:
        env.update(MLFLOW_TRACKING_USERNAME=credentials[0], MLFLOW_TRACKING_PASSWORD=credentials[1])
    argv = [sys.executable, "-m", "run", *(["-m"] if multirun else []), "tracking=server"]
    argv += [f"tracking.uri={uri}", f"tracking.experiment={experiment}", "progress=false", *overrides]
    return subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def team(server):
    """An experiment with one run and an artifact, a member (in a group with EDIT on it) and a
    reader (READ), each with a password of their own; the admin made them all."""
    suffix = uuid.uuid4().hex[:6]
    admin, auth = mlflow.MlflowClient(server), AuthServiceClient(server)
    experiment = f"team-{suffix}"
    experiment_id = admin.create_experiment(experiment)
    run = admin.create_run(experiment_id)
    admin.log_text(run.info.run_id, "kept", "note.txt")
    users = {role: (f"{role}-{suffix}", secrets.token_urlsafe(16)) for role in ("member", "reader")}
    for name, password in users.values():
        auth.create_user(name, password)
    group = auth.create_role("default", f"lab-{suffix}", "the lab")
    auth.add_role_permission(group.id, "experiment", experiment_id, "EDIT")
    auth.assign_role(users["member"][0], group.id)
    auth.grant_user_permission(users["reader"][0], "experiment", experiment_id, "READ")
    artifact = (
        f"{server}/api/2.0/mlflow-artifacts/artifacts/{experiment_id}/{run.info.run_id}/artifacts/note.txt"
    )
    return {
        "experiment": experiment,
        "id": experiment_id,
        "run": run.info.run_id,
        "artifact": artifact,
        **users,
    }


def attempts(uri, team, credentials):
    """What a client with ``credentials`` (None: anonymous) may do: action -> allowed?"""
    auth = requests.auth.HTTPBasicAuth(*credentials) if credentials else None
    api = f"{uri}/api/2.0/mlflow"

    def ok(method, url, **kwargs):
        return requests.request(method, url, auth=auth, timeout=30, **kwargs).status_code == 200

    return {
        "read runs": ok("POST", f"{api}/runs/search", json={"experiment_ids": [team["id"]]}),
        "read artifact": ok("GET", team["artifact"]),
        "create run": ok("POST", f"{api}/runs/create", json={"experiment_id": team["id"]}),
        "overwrite artifact": ok("PUT", team["artifact"], data=b"changed"),
        "delete artifact": ok("DELETE", team["artifact"]),
        "delete run": ok("POST", f"{api}/runs/delete", json={"run_id": team["run"]}),
        "delete experiment": ok("POST", f"{api}/experiments/delete", json={"experiment_id": team["id"]}),
    }


def test_anonymous_clients_can_neither_read_nor_delete(server, team, tmp_path):
    assert attempts(server, team, None) == dict.fromkeys(
        (
            "read runs",
            "read artifact",
            "create run",
            "overwrite artifact",
            "delete artifact",
            "delete run",
            "delete experiment",
        ),
        False,
    )
    assert attempts(server, team, (team["member"][0], "not-the-password")) == attempts(server, team, None)
    admin = mlflow.MlflowClient(server)  # nothing was changed
    assert admin.get_run(team["run"]).info.lifecycle_stage == "active"
    assert Path(admin.download_artifacts(team["run"], "note.txt", str(tmp_path))).read_text() == "kept"


def test_a_reader_reads_but_cannot_write_or_delete(server, team):
    allowed = attempts(server, team, team["reader"])
    assert allowed == {
        "read runs": True,
        "read artifact": True,
        "create run": False,
        "overwrite artifact": False,
        "delete artifact": False,
        "delete run": False,
        "delete experiment": False,
    }


@pytest.mark.parametrize(
    "who, words",
    [
        (None, "lets in its members only, and no user name and password were given"),
        ("wrong", "refused the password of user"),
        ("reader", "has READ permission on experiment"),
    ],
)
def test_missing_wrong_or_read_only_credentials_are_one_paragraph_before_anything_runs(
    server, team, tmp_path, who, words
):
    credentials = {None: None, "wrong": (team["member"][0], "wrong-password"), "reader": team["reader"]}[who]
    done = command(server, team["experiment"], tmp_path, credentials, "dataset=emotions")
    assert done.returncode != 0 and words in done.stderr and "nothing was run" in done.stderr
    assert "Traceback" not in done.stderr
    assert not mlflow.MlflowClient(server).search_runs([team["id"]], "tags.overrides LIKE '%emotions%'")


def test_a_member_runs_a_sweep_into_the_groups_experiment(server, team, tmp_path):
    """(After the read-only tests: the member's runs and artifact overwrite change the experiment.)"""
    done = command(
        server,
        team["experiment"],
        tmp_path,
        team["member"],
        "dataset=emotions",
        "protocol.repeats=1",
        "protocol.rates=[0.5]",
        "method.nu2=0,1",
        multirun=True,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    runs = mlflow.MlflowClient(server).search_runs([team["id"]], "tags.overrides LIKE '%method.nu2%'")
    jobs = [r for r in runs if r.data.tags.get("kind") != "sweep"]
    assert sorted(r.data.params["method.nu2"] for r in jobs) == ["0", "1"]
    assert all(r.info.status == "FINISHED" for r in runs)
    allowed = attempts(server, team, team["member"])
    assert allowed["create run"] and allowed["overwrite artifact"]  # EDIT: log, not delete
    assert not allowed["delete run"] and not allowed["delete experiment"]


def test_tls_through_the_reverse_proxy(server, team, tls_uri, tmp_path):
    """https to nginx, which forwards to the server: a member's run lands; without the
    certificate the client says it does not trust it, before anything runs."""
    uri, certificate = tls_uri
    args = ("dataset=emotions", "protocol.repeats=1", "protocol.rates=[0.5]")
    done = command(uri, team["experiment"], tmp_path, team["member"], *args)
    assert "does not trust" in done.stderr and "nothing was run" in done.stderr and done.returncode != 0
    done = command(
        uri,
        team["experiment"],
        tmp_path,
        team["member"],
        *args,
        MLFLOW_TRACKING_SERVER_CERT_PATH=str(certificate),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    client = mlflow.MlflowClient(server)
    (run,) = client.search_runs([team["id"]], "tags.overrides LIKE '%tracking.uri=https%'")
    assert run.info.status == "FINISHED" and "trials.csv" in {
        a.path for a in client.list_artifacts(run.info.run_id)
    }
