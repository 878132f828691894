"""Credentials stay out of everything a command writes, with the real commands on emotions: a
tracking URI with a password is refused before anything is written, whichever way it comes (the
command line of each command, a sweep, a config file, MLFLOW_TRACKING_URI); credential-shaped
values that do reach a run are masked in the store's bytes, the artifacts, the job folders and
the console."""

import os
import subprocess
import sys
from pathlib import Path

import mlflow
import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
FEW = ["dataset=emotions", "protocol.repeats=1", "protocol.rates=[0.1,0.5]"]
PW = "Pw-4f9c2e17"


def command(module: str, args, out: Path, env=None):
    env = {**os.environ, "MLGRAPH_OUTPUT_DIR": str(out), "PYTHONUNBUFFERED": "1", **(env or {})}
    cmd = [sys.executable, "-m", module, *args]
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)


def team_config(folder: Path, uri: str) -> Path:
    """A config folder for ``--config-dir`` with a tracking option ``team`` at ``uri``."""
    (folder / "tracking").mkdir(parents=True)
    (folder / "tracking" / "team.yaml").write_text(
        f"uri: {uri}\nartifact_location: null\nexperiment: mlgraph\ncheckpoint_seconds: 30\nlog_model: false\n"
    )
    return folder


HTTP = f"http://alice:{PW}@127.0.0.1:9"
MLFLOW_VARS = "MLFLOW_TRACKING_USERNAME and MLFLOW_TRACKING_PASSWORD"
REFUSED = {  # name: (module, arguments ({config} is a --config-dir folder), environment, shown, advice)
    "python -m run": ("run", [f"tracking.uri={HTTP}", *FEW], {}, "http://alice:***@127.0.0.1:9", MLFLOW_VARS),
    "a sweep over stores": (
        "mlgraph",
        [
            "run",
            "-m",
            f"tracking.uri=postgresql://alice@127.0.0.1:9/mlflow?password={PW},sqlite:////tmp/x.db",
        ],
        {},
        "postgresql://alice@127.0.0.1:9/mlflow?password=***",
        "PGPASSWORD",
    ),
    "mlgraph report, a config file": (
        "mlgraph",
        ["report", "--config-dir", "{config}", "tracking=team"],
        {},
        "http://alice:***@127.0.0.1:9, set by a config file (tracking=team)",
        MLFLOW_VARS,
    ),
    "a sweep, a config file": (
        "run",
        ["-m", "--config-dir", "{config}", "tracking=team", "seed=0,1", *FEW],
        {},
        "http://alice:***@127.0.0.1:9, set by a config file (tracking=team)",
        MLFLOW_VARS,
    ),
    "mlgraph toy, MLFLOW_TRACKING_URI": (
        "mlgraph",
        ["toy", "tracking=server"],
        {"MLFLOW_TRACKING_URI": HTTP},
        "http://alice:***@127.0.0.1:9, from the environment variable MLFLOW_TRACKING_URI",
        MLFLOW_VARS,
    ),
    "mlgraph reproduce": (
        "mlgraph",
        ["reproduce", "000", "--quick", f"tracking.uri={HTTP}"],
        {},
        "http://alice:***@127.0.0.1:9",
        MLFLOW_VARS,
    ),
}


@pytest.mark.parametrize("case", REFUSED)
def test_a_tracking_uri_with_a_password_is_refused_before_anything_is_written(case, tmp_path):
    module, args, env, shown, advice = REFUSED[case]
    config = team_config(tmp_path / "conf", HTTP)
    out = tmp_path / "out"
    proc = command(module, [a.replace("{config}", str(config)) for a in args], out, env)
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert PW not in proc.stdout + proc.stderr
    paragraph = proc.stderr.strip()
    assert "holds a password (" + shown in paragraph and "nothing was run" in paragraph, paragraph
    assert advice in paragraph and "Traceback" not in paragraph and "\n" not in paragraph
    assert not out.exists()  # no job or sweep folder, no .hydra/, no run.log, no store


def _where(secret: str, out: Path, proc_outputs: list[str]) -> dict[str, int]:
    """Occurrences of ``secret`` in each place a command leaves something: the store's database
    (its bytes), the artifacts, the job and sweep folders (.hydra/, run.log, tables), the rest of
    the output folder, and the console."""
    found = {"store": 0, "artifacts": 0, "job folders": 0, "other files": 0}
    found["console"] = sum(text.count(secret) for text in proc_outputs)
    for path in out.rglob("*"):
        if not path.is_file():
            continue
        part = path.relative_to(out).parts[0]
        place = (
            "store"
            if part.startswith("mlflow.db")
            else "artifacts"
            if part == "mlartifacts"
            else "job folders"
            if part in ("runs", "multiruns")
            else "other files"
        )
        found[place] += path.read_bytes().count(secret.encode())
    return found


def test_credentials_that_reach_a_run_are_masked_everywhere(tmp_path):
    """A download address with a user's password and a token (``dataset.url``; found locally,
    so nothing is downloaded) reaches the run, and MLFLOW_TRACKING_PASSWORD is set for a SQLite
    store: one run (through the tracking process) and a two-job sweep (its parent run, the
    launcher's log lines, multirun.yaml) leave neither anywhere."""
    url_password, token, env_password = "Url-8d1e55aa", "Tok-3b7c90ff", "Env-61f0c2d4"
    url = f"https://alice:{url_password}@mirror.example.org/emotions.arff?token={token}"
    args = [*FEW, f"dataset.url='{url}'", "dataset.verify=false"]
    env = {"MLFLOW_TRACKING_PASSWORD": env_password}
    out = tmp_path / "out"
    single = command("run", args, out, env)
    assert single.returncode == 0, single.stderr[-3000:]
    sweep = command("run", ["-m", "hydra/launcher=basic", "seed=0,1", *args], out, env)
    assert sweep.returncode == 0, sweep.stderr[-3000:]

    client = mlflow.MlflowClient(f"sqlite:///{out}/mlflow.db")
    runs = client.search_runs([client.get_experiment_by_name("mlgraph").experiment_id])
    jobs = [r for r in runs if r.data.tags.get("kind") != "sweep"]
    assert len(jobs) == 3 and len(runs) == 4
    masked = "https://alice:***@mirror.example.org/emotions.arff?token=***"
    assert all(r.data.params["dataset.url"] == masked for r in jobs)  # it reached the runs, masked
    assert all(f"dataset.url='{masked}'" in r.data.tags["overrides"] for r in runs)
    assert (out / "mlflow.db").stat().st_size > 0 and any((out / "mlartifacts").rglob("config.yaml"))
    assert len(list((out / "multiruns").rglob("multirun.yaml"))) == 1
    assert len(list(out.rglob(".hydra/config.yaml"))) == 3 and len(list(out.rglob("run.log"))) == 3

    consoles = [single.stdout, single.stderr, sweep.stdout, sweep.stderr]
    nowhere = {"store": 0, "artifacts": 0, "job folders": 0, "other files": 0, "console": 0}
    for secret in (url_password, token, env_password):
        assert _where(secret, out, consoles) == nowhere, secret
