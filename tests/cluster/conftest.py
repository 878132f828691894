"""Real services for the cluster tests: a one-node SLURM cluster and a PostgreSQL-backed MLflow
server with members only (basic-auth), started and stopped by the repository's own scripts
(scripts/*-up.sh, *-down.sh).

They need root (apt-get, munged, PostgreSQL as `postgres`), so they run only when asked for:
``make test-cluster``, ``pytest -m cluster tests/cluster`` or ``MLGRAPH_CLUSTER_TESTS=1``.
Services already running before the session (a developer's ``make slurm-up``) are used and left
running; the ones the session starts are stopped at its end.
"""

import contextlib
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SERVICES = Path(os.environ.get("MLGRAPH_SERVICES_DIR", "/tmp/mlgraph-services")).resolve()
SERVER_PORT = int(os.environ.get("MLGRAPH_SERVER_PORT", "5000"))
TLS_PORT = int(os.environ.setdefault("MLGRAPH_SERVER_TLS_PORT", "5443"))  # server-up's nginx proxy
PG_PORT = int(os.environ.get("MLGRAPH_PG_PORT", "5433"))


def pytest_collection_modifyitems(config, items):
    asked = re.search(r"(?<!not )\bcluster\b", config.option.markexpr or "")
    if asked or os.environ.get("MLGRAPH_CLUSTER_TESTS") == "1":
        return
    skip = pytest.mark.skip(
        reason="starts real SLURM/PostgreSQL services as root: make test-cluster, or pytest -m cluster"
    )
    for item in items:
        if item.get_closest_marker("cluster"):
            item.add_marker(skip)


def _running(pidfile: Path) -> bool:
    try:
        os.kill(int(pidfile.read_text()), 0)
    except (OSError, ValueError):
        return False
    return True


@contextlib.contextmanager
def _service(name: str, pidfile: Path):
    """scripts/NAME-up.sh, and NAME-down.sh at the end if the service was not running before."""
    started = not _running(pidfile)
    up = subprocess.run(["bash", str(REPO / f"scripts/{name}-up.sh")], capture_output=True, text=True)
    assert up.returncode == 0, f"scripts/{name}-up.sh failed:\n{up.stdout}\n{up.stderr}"
    try:
        yield
    finally:
        if started:
            subprocess.run(["bash", str(REPO / f"scripts/{name}-down.sh")], check=True, capture_output=True)


@pytest.fixture(scope="session")
def slurm():
    """The SLURM cluster; yields its slurm.conf, exported as SLURM_CONF for sbatch and sacct."""
    conf = SERVICES / "slurm/etc/slurm.conf"
    previous = os.environ.get("SLURM_CONF")
    os.environ["SLURM_CONF"] = str(conf)
    try:
        with _service("slurm", SERVICES / "slurm/run/slurmctld.pid"):
            yield conf
    finally:
        os.environ.pop("SLURM_CONF")
        if previous is not None:
            os.environ["SLURM_CONF"] = previous


@pytest.fixture(scope="session")
def server():
    """The team MLflow server (PostgreSQL, basic-auth); yields its URI. The session's own client
    is its admin (MLFLOW_TRACKING_USERNAME/PASSWORD from the server's secret file), so that the
    commands the tests start log as a member who may do everything."""
    with _service("server", SERVICES / "mlflow/run/mlflow.pid"):
        admin = {
            "MLFLOW_TRACKING_USERNAME": "admin",
            "MLFLOW_TRACKING_PASSWORD": (SERVICES / "mlflow/secrets/admin.pass").read_text().strip(),
        }
        previous = {k: os.environ.get(k) for k in admin}
        os.environ.update(admin)
        try:
            yield f"http://127.0.0.1:{SERVER_PORT}"
        finally:
            for key, value in previous.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value


@pytest.fixture(scope="session")
def tls_uri(server):
    """The same server through its TLS proxy (nginx, self-signed certificate); yields
    (https URI, certificate path). Skipped when a server started without one is running."""
    certificate = SERVICES / "mlflow/tls/cert.pem"
    if not certificate.is_file():
        pytest.skip("the running server has no TLS proxy (start it with MLGRAPH_SERVER_TLS_PORT set)")
    return f"https://127.0.0.1:{TLS_PORT}", certificate


@pytest.fixture(scope="session")
def tracking_uri(slurm, server):
    """The team MLflow server with the SLURM cluster up too; yields its tracking URI."""
    return server


@pytest.fixture(scope="session")
def tracking_db(tracking_uri):
    """libpq URI of the PostgreSQL database behind the server (for checks of what it stored)."""
    password = (SERVICES / "postgres/mlflow.pass").read_text().strip()
    return f"postgresql://mlflow:{password}@127.0.0.1:{PG_PORT}/mlflow"


@pytest.fixture
def slurm_sweep(tracking_uri, tmp_path):
    """sweep(experiment, *overrides) -> (argv, kwargs): a multirun through SLURM into the server,
    in the MLflow experiment `experiment`, outputs under this test's tmp_path; run it with
    subprocess.run(argv, **kwargs) or Popen(argv, **kwargs)."""

    def sweep(experiment: str, *overrides: str):
        argv = [
            sys.executable,
            "-m",
            "run",
            "-m",
            "hydra/launcher=slurm",
            "tracking=server",
            f"tracking.uri={tracking_uri}",
            f"tracking.experiment={experiment}",
            "progress=false",
            *overrides,
        ]
        return argv, {"cwd": REPO, "env": {**os.environ, "MLGRAPH_OUTPUT_DIR": str(tmp_path)}}

    return sweep
