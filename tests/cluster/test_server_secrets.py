"""The team server's scripts keep their secrets off every command line: while a fresh server
starts (PostgreSQL, MLflow, the TLS proxy), while members are added and passwords changed with
scripts/server-user.sh, and while it stops, every process's command line is read every few
milliseconds, and none holds a password or key. Also: artifacts left readable by others are made
the server's user's only when it starts."""

import base64
import os
import shutil
import socket
import stat
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.cluster

REPO = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class CommandLines:
    """Every distinct command line of every process, read from /proc/*/cmdline every ~2 ms
    while the ``with`` block runs."""

    def __init__(self):
        self.seen: set[str] = set()
        self.sweeps = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def _poll(self):
        while not self._stop.is_set():
            for pid in os.listdir("/proc"):
                if not pid.isdigit():
                    continue
                try:
                    with open(f"/proc/{pid}/cmdline", "rb") as f:
                        line = f.read()
                except OSError:  # gone already
                    continue
                if line:
                    self.seen.add(line.replace(b"\0", b" ").decode(errors="replace"))
            self.sweeps += 1
            time.sleep(0.002)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def test_no_secret_is_ever_on_a_command_line(tmp_path):
    services = Path(tempfile.mkdtemp(prefix="mlgraph-secrets-", dir="/tmp"))
    services.chmod(0o755)  # PostgreSQL runs as `postgres` below it
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_TRACKING_")}
    port = free_port()
    env.update(
        MLGRAPH_SERVICES_DIR=str(services),
        MLGRAPH_PG_PORT=str(free_port()),
        MLGRAPH_SERVER_PORT=str(port),
        MLGRAPH_SERVER_TLS_PORT=str(free_port()),
        MLGRAPH_SERVER_WORKERS="1",
    )
    # An artifact store from before, readable by everyone.
    old = services / "mlflow/artifacts/0/abc/artifacts"
    old.mkdir(parents=True, mode=0o755)
    (old / "old.txt").write_text("old")
    for path in (services / "mlflow", services / "mlflow/artifacts", old, old / "old.txt"):
        path.chmod(0o755 if path.is_dir() else 0o644)

    def script(name, *args, stdin=None, **extra):
        done = subprocess.run(
            ["bash", str(REPO / "scripts" / name), *args],
            input=stdin,
            stdin=None if stdin is not None else subprocess.DEVNULL,
            env={**env, **extra},
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert done.returncode == 0, f"{name} {' '.join(args)}:\n{done.stdout}\n{done.stderr}"
        return done.stdout

    passwords = [
        f"first-{os.urandom(9).hex()}",
        f"second-{os.urandom(9).hex()}",
        f"third-{os.urandom(9).hex()}",
    ]
    try:
        with CommandLines() as lines:
            script("server-up.sh")
            script("server-user.sh", "add", "alice", stdin=passwords[0] + "\n")
            made_up = script("server-user.sh", "add", "bob").rsplit("(shown once): ", 1)[1].strip()
            script("server-user.sh", "password", "alice", stdin=passwords[1] + "\n")  # by the admin
            script(  # by alice herself
                "server-user.sh",
                "password",
                "alice",
                stdin=passwords[2] + "\n",
                MLFLOW_TRACKING_USERNAME="alice",
                MLFLOW_TRACKING_PASSWORD=passwords[1],
                MLFLOW_TRACKING_URI=f"http://127.0.0.1:{port}",
            )
            artifacts = {
                path: stat.S_IMODE(path.stat().st_mode)
                for path in [services / "mlflow/artifacts", *(services / "mlflow/artifacts").rglob("*")]
            }
            secrets = {
                name: (services / name).read_text().strip()
                for name in (
                    "postgres/mlflow.pass",
                    "mlflow/secrets/admin.pass",
                    "mlflow/secrets/flask.key",
                    "mlflow/secrets/proxy.key",
                )
            }
            script("server-down.sh")
    finally:
        subprocess.run(["bash", str(REPO / "scripts/server-down.sh")], env=env, capture_output=True)
        shutil.rmtree(services, ignore_errors=True)

    secrets.update({f"password {i + 1} of alice": p for i, p in enumerate(passwords)})
    secrets["bob's made-up password"] = made_up
    for user, name in (("admin", "mlflow/secrets/admin.pass"), ("alice", "password 3 of alice")):
        secrets[f"{user}'s Authorization header"] = base64.b64encode(
            f"{user}:{secrets[name]}".encode()
        ).decode()
    # The poller saw the short-lived processes, not only the daemons.
    seen = "\n".join(lines.seen)
    assert lines.sweeps > 100 and all(
        word in seen for word in ("psql", "pg_ctl", "uvicorn", "nginx", "AuthServiceClient")
    )
    leaks = [
        f"{name} in: {line[:200]}" for line in lines.seen for name, value in secrets.items() if value in line
    ]
    assert not leaks, "\n".join(leaks)
    print(
        f"\n{len(lines.seen)} command lines in {lines.sweeps} reads of /proc; none holds any of {len(secrets)} secrets"
    )
    assert all(mode & 0o077 == 0 for mode in artifacts.values()), {
        str(p): oct(m) for p, m in artifacts.items()
    }
