"""The team server lets in its members only: anonymous clients can neither read nor delete, a
member of a group with EDIT runs a sweep into the group's experiment, a reader cannot delete,
and a missing or wrong password is one paragraph before anything runs. Only admins see the users
and who is admin, artifacts are readable by the server's user only, failed logins are limited per
client address, and every unauthorised attempt of a long list is refused."""

import configparser
import itertools
import os
import random
import secrets
import stat
import subprocess
import sys
import time
import uuid
from pathlib import Path

import mlflow
import pytest
import requests
from mlflow.server.auth.client import AuthServiceClient
from requests.adapters import HTTPAdapter

pytestmark = pytest.mark.cluster

REPO = Path(__file__).resolve().parents[2]
SERVICES = Path(os.environ.get("MLGRAPH_SERVICES_DIR", "/tmp/mlgraph-services")).resolve()
SEARCH = "/api/2.0/mlflow/experiments/search?max_results=1"

# Loopback addresses of their own (all of 127/8 is this machine), so that the failed logins the
# tests make count against clients of their own, not against 127.0.0.1.
_ADDRESSES = (f"127.{random.randint(64, 250)}.{i // 250}.{i % 250 + 1}" for i in itertools.count())


class _FromAddress(HTTPAdapter):
    def __init__(self, address, **kwargs):
        self.address = address
        super().__init__(**kwargs)

    def init_poolmanager(self, *args, **kwargs):
        kwargs["source_address"] = (self.address, 0)
        return super().init_poolmanager(*args, **kwargs)


def client(address=None) -> requests.Session:
    """A requests session that connects from ``address`` (default: a new loopback address)."""
    session = requests.Session()
    adapter = _FromAddress(address or next(_ADDRESSES))
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    return session


def login_limit() -> tuple[int, float]:
    """(failed logins a client may make in a row, seconds until it may make one more)."""
    config = configparser.ConfigParser(interpolation=None)
    config.read(SERVICES / "mlflow/secrets/basic_auth.ini")
    return config.getint("mlgraph", "failed_login_burst"), config.getfloat(
        "mlgraph", "failed_login_interval_seconds"
    )


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
    users = {
        role: (f"{role}-{suffix}", secrets.token_urlsafe(16))
        for role in ("member", "reader", "outsider", "victim")
    }
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
        "group": group.id,
        **users,
    }


def attempts(uri, team, credentials, session=requests):
    """What a client with ``credentials`` (None: anonymous) may do: action -> allowed?"""
    auth = requests.auth.HTTPBasicAuth(*credentials) if credentials else None
    api = f"{uri}/api/2.0/mlflow"

    def ok(method, url, **kwargs):
        return session.request(method, url, auth=auth, timeout=30, **kwargs).status_code == 200

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
    wrong = (team["member"][0], "not-the-password")
    assert attempts(server, team, wrong, client()) == attempts(server, team, None)
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
        # the same words as for a name that cannot be created: the experiment's existence is not told
        ("outsider", "it does not exist and cannot be created under that name, or user"),
    ],
)
def test_missing_wrong_or_read_only_credentials_are_one_paragraph_before_anything_runs(
    server, team, tmp_path, who, words
):
    credentials = {
        None: None,
        "wrong": (team["member"][0], "wrong-password"),
        "reader": team["reader"],
        "outsider": team["outsider"],
    }[who]
    done = command(server, team["experiment"], tmp_path, credentials, "dataset=emotions")
    assert done.returncode != 0 and words in done.stderr and "nothing was run" in done.stderr
    assert "Traceback" not in done.stderr
    if who == "outsider":  # nothing that would tell a hidden experiment from a missing one
        assert "manager" not in done.stderr and "permission on experiment" not in done.stderr
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


def test_artifacts_are_readable_by_the_servers_user_only(server, team):
    """(After the sweep: its runs logged artifacts through the server too.)"""
    root = SERVICES / "mlflow/artifacts"
    note = root / team["id"] / team["run"] / "artifacts/note.txt"
    assert note.is_file(), f"the admin's artifact is not at {note}"
    paths = [root, *root.rglob("*")]
    assert len(paths) > 5
    modes = {str(p.relative_to(root)): stat.S_IMODE(p.stat().st_mode) for p in paths}
    loose = {p: oct(m) for p, m in modes.items() if m & 0o077}
    assert not loose, f"artifacts readable by others: {loose}"
    assert modes[str(note.relative_to(root))] == 0o600 and modes[str(note.parent.relative_to(root))] == 0o700


USER_LISTS = [
    "/api/2.0/mlflow/users/list",
    "/ajax-api/2.0/mlflow/users/list",
    "/api/3.0/mlflow/roles/list?workspace=default",
    "/ajax-api/3.0/mlflow/roles/list?workspace=default",
]


def test_only_admins_see_the_users_and_who_is_admin(server, team):
    admin = (os.environ["MLFLOW_TRACKING_USERNAME"], os.environ["MLFLOW_TRACKING_PASSWORD"])
    member = team["member"]

    def get(path, who):
        return requests.get(f"{server}{path}", auth=who, timeout=30)

    for path in USER_LISTS:
        assert get(path, member).status_code == 403, path
        assert get(path, admin).status_code == 200, path
    users = {u["username"]: u["is_admin"] for u in get("/api/2.0/mlflow/users/list", admin).json()["users"]}
    assert users["admin"] is True and users[member[0]] is False
    # Whether another user is admin, or exists at all: the same refusal either way.
    for about in ("admin", team["reader"][0], f"nobody-{uuid.uuid4().hex[:6]}"):
        for path in (
            f"/api/2.0/mlflow/users/get?username={about}",
            f"/api/3.0/mlflow/users/permissions/list?username={about}",
            f"/api/3.0/mlflow/users/roles/list?username={about}",
            f"/api/3.0/mlflow/users/permissions/get?username={about}&resource_type=experiment&resource_id={team['id']}",
        ):
            answer = get(path, member)
            assert answer.status_code == 403 and "admin" not in answer.text.lower(), (path, answer.text)
    for path in (
        f"/api/3.0/mlflow/roles/get?role_id={team['group']}",
        f"/api/3.0/mlflow/roles/users/list?role_id={team['group']}",
    ):
        assert get(path, member).status_code == 403, path
        assert get(path, admin).status_code == 200, path
    # What a member learns about itself: its own name, that it is no admin, and its own grants.
    me = get("/api/2.0/mlflow/users/current", member).json()["user"]
    assert me["username"] == member[0] and me["is_admin"] is False
    assert get(f"/api/3.0/mlflow/users/roles/list?username={member[0]}", member).status_code == 200


def unauthorised_actions(uri, team, who):
    """name -> (method, url, request keywords, allowed(response)) for what a client logged in as
    ``who`` (a user name) might try."""
    api, api3 = f"{uri}/api/2.0/mlflow", f"{uri}/api/3.0/mlflow"
    other = team["reader"][0] if who == team["member"][0] else team["member"][0]
    victim = team["victim"][0]

    def has_run(answer):
        return answer.status_code == 200 and bool(answer.json().get("runs"))

    def has_experiment(answer):
        return answer.status_code == 200 and any(
            e["experiment_id"] == team["id"] for e in answer.json().get("experiments", [])
        )

    experiment = {
        "search its runs": (
            "POST",
            f"{api}/runs/search",
            {"json": {"experiment_ids": [team["id"]]}},
            has_run,
        ),
        "find it in a search": (
            "POST",
            f"{api}/experiments/search",
            {"json": {"max_results": 1000}},
            has_experiment,
        ),
        "get it by name": (
            "GET",
            f"{api}/experiments/get-by-name",
            {"params": {"experiment_name": team["experiment"]}},
            None,
        ),
        "get a run": ("GET", f"{api}/runs/get", {"params": {"run_id": team["run"]}}, None),
        "list a run's artifacts": ("GET", f"{api}/artifacts/list", {"params": {"run_id": team["run"]}}, None),
        "read an artifact": ("GET", team["artifact"], {}, None),
        "create a run": ("POST", f"{api}/runs/create", {"json": {"experiment_id": team["id"]}}, None),
        "log a metric": (
            "POST",
            f"{api}/runs/log-metric",
            {"json": {"run_id": team["run"], "key": "probe", "value": 1, "timestamp": 0, "step": 0}},
            None,
        ),
        "overwrite an artifact": ("PUT", team["artifact"], {"data": b"changed"}, None),
        "delete an artifact": ("DELETE", team["artifact"], {}, None),
        "delete a run": ("POST", f"{api}/runs/delete", {"json": {"run_id": team["run"]}}, None),
        "delete the experiment": (
            "POST",
            f"{api}/experiments/delete",
            {"json": {"experiment_id": team["id"]}},
            None,
        ),
        "grant itself MANAGE": (
            "POST",
            f"{api3}/users/permissions/grant",
            {
                "json": {
                    "username": who,
                    "resource_type": "experiment",
                    "resource_id": team["id"],
                    "permission": "MANAGE",
                }
            },
            None,
        ),
    }
    admin = {
        "list the users": ("GET", f"{api}/users/list", {}, None),
        "ask whether admin is admin": ("GET", f"{api}/users/get", {"params": {"username": "admin"}}, None),
        "list admin's permissions": (
            "GET",
            f"{api3}/users/permissions/list",
            {"params": {"username": "admin"}},
            None,
        ),
        "list another's groups": ("GET", f"{api3}/users/roles/list", {"params": {"username": other}}, None),
        "read another's permission": (
            "GET",
            f"{api3}/users/permissions/get",
            {"params": {"username": other, "resource_type": "experiment", "resource_id": team["id"]}},
            None,
        ),
        "list the groups": ("GET", f"{api3}/roles/list", {"params": {"workspace": "default"}}, None),
        "list a group's members": (
            "GET",
            f"{api3}/roles/users/list",
            {"params": {"role_id": team["group"]}},
            None,
        ),
        "create a user": (
            "POST",
            f"{api}/users/create",
            {"json": {"username": f"intruder-{uuid.uuid4().hex[:6]}", "password": secrets.token_urlsafe(16)}},
            None,
        ),
        "change another's password": (
            "PATCH",
            f"{api}/users/update-password",
            {"json": {"username": victim, "password": secrets.token_urlsafe(16)}},
            None,
        ),
        "make a user admin": (
            "PATCH",
            f"{api}/users/update-admin",
            {"json": {"username": victim, "is_admin": True}},
            None,
        ),
        "delete a user": ("DELETE", f"{api}/users/delete", {"json": {"username": victim}}, None),
        "create a group": (
            "POST",
            f"{api3}/roles/create",
            {"json": {"workspace": "default", "name": f"intruders-{uuid.uuid4().hex[:6]}"}},
            None,
        ),
        "join the lab's group": (
            "POST",
            f"{api3}/roles/assign",
            {"json": {"username": victim, "role_id": team["group"]}},
            None,
        ),
    }
    return experiment, admin


def try_action(action, credentials):
    """(allowed?, HTTP status) of one attempt, from a client address of its own."""
    method, url, kwargs, allowed = action
    answer = client().request(method, url, auth=credentials, timeout=60, **kwargs)
    return (allowed(answer) if allowed else answer.status_code == 200), answer.status_code


def test_every_unauthorised_attempt_is_refused(server, team):
    """Anonymous clients, MLflow's old default admin password, wrong passwords and unknown users
    try everything; a reader, a member and an outsider (a user with no grant) try what their
    permission does not allow. Each attempt comes from a client address of its own, so that each
    answer is the server's decision, not the failed-login limit. (After the member's sweep: this
    member logs into the experiment and overwrites its artifact.)"""
    bad = {
        "anonymous": None,
        "admin, MLflow's old default password": ("admin", "password1234"),
        "admin, a wrong password": ("admin", secrets.token_urlsafe(16)),
        "member, a wrong password": (team["member"][0], secrets.token_urlsafe(16)),
        "unknown user": (f"nobody-{uuid.uuid4().hex[:6]}", secrets.token_urlsafe(16)),
    }
    may = {
        "reader": {
            "search its runs",
            "find it in a search",
            "get it by name",
            "get a run",
            "list a run's artifacts",
            "read an artifact",
        },
        "outsider": set(),
    }
    may["member"] = may["reader"] | {"create a run", "log a metric", "overwrite an artifact"}
    refused, total, wrong = 0, 0, []
    matrices = {}
    for who, credentials in [
        *bad.items(),
        *((role, team[role]) for role in ("reader", "member", "outsider")),
    ]:
        experiment, admin = unauthorised_actions(server, team, credentials[0] if credentials else "")
        for name, action in {**experiment, **admin}.items():
            allowed, status = try_action(action, credentials)
            if who in may:
                matrices.setdefault(who, {})[name] = (
                    f"allowed ({status})" if allowed else f"refused ({status})"
                )
                if name in may[who]:
                    if not allowed:
                        wrong.append(f"{who} may {name}, but got {status}")
                    continue
            total += 1
            if allowed:
                wrong.append(f"{who} could {name} ({status})")
            elif status in (401, 403) or (status == 200 and action[3] is not None):  # 200 with nothing in it
                refused += 1
            else:
                wrong.append(f"{who}: {name} answered {status}, not a refusal")
    print(f"\nrefused {refused} of {total} unauthorised attempts")
    for who in ("member", "reader", "outsider"):
        print(f"\n{who}:\n" + "\n".join(f"  {name:28} {verdict}" for name, verdict in matrices[who].items()))
    assert not wrong, "\n".join(wrong)
    assert refused == total >= 84


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


def wrong_logins(session, uri, name, n, **kwargs):
    return [
        session.get(
            f"{uri}{SEARCH}", auth=(name, secrets.token_urlsafe(12)), timeout=30, **kwargs
        ).status_code
        for _ in range(n)
    ]


def test_failed_logins_are_limited_per_client_address(server, team):
    """A client that keeps sending wrong passwords is answered 429 after the limit, even with the
    right password; another client is not affected, and members with valid passwords never count."""
    burst, interval = login_limit()
    guesser, member = client(), team["member"]
    assert wrong_logins(guesser, server, member[0], burst + 5) == [401] * burst + [429] * 5
    assert guesser.get(f"{server}{SEARCH}", auth=member, timeout=30).status_code == 429
    answer = guesser.get(f"{server}{SEARCH}", timeout=30)
    assert answer.status_code == 429 and int(answer.headers["Retry-After"]) <= interval
    neighbour = client()
    assert [
        neighbour.get(f"{server}{SEARCH}", auth=member, timeout=30).status_code for _ in range(3 * burst)
    ] == [200] * (3 * burst)


def test_failed_logins_through_the_tls_proxy_are_limited_by_the_clients_address(server, team, tls_uri):
    """Through the proxy, the limit counts the client's own address (not the proxy's): after the
    limit, a guesser gets one answer every interval, and the guessing rate is measured."""
    uri, certificate = tls_uri
    burst, interval = login_limit()
    guesser = client()
    assert (
        wrong_logins(guesser, uri, team["member"][0], burst + 5, verify=certificate)
        == [401] * burst + [429] * 5
    )
    assert (
        client().get(f"{uri}{SEARCH}", auth=team["member"], verify=certificate, timeout=30).status_code == 200
    )
    # A client address or proxy key forged by the client changes nothing, through the proxy or
    # straight to the server.
    forged = {"X-Real-IP": next(_ADDRESSES), "X-Forwarded-For": next(_ADDRESSES), "X-Mlgraph-Proxy": "guess"}
    assert guesser.get(f"{uri}{SEARCH}", headers=forged, verify=certificate, timeout=30).status_code == 429
    assert guesser.get(f"{server}{SEARCH}", headers=forged, timeout=30).status_code == 429
    window, answered, sent, start = 2.5 * interval, 0, 0, time.monotonic()
    while time.monotonic() - start < window:
        answered += wrong_logins(guesser, uri, team["member"][0], 1, verify=certificate) != [429]
        sent += 1
        time.sleep(0.05)
    rate = answered / (time.monotonic() - start)
    print(
        f"\nafter {burst} failed logins: {answered} of {sent} guesses answered in {window:.0f} s: "
        f"{rate:.3f} guesses/s ({rate * 86400:.0f} a day) per client address"
    )
    assert answered <= window / interval + 1
