"""Credentials: the masker, the refusal of a tracking URI with a password, the Hydra callback, and
what the tracking store records."""

import io
import logging
import os
import stat
import sys
import warnings

import mlflow
import pytest
import yaml
from hydra.core.utils import JobReturn, JobStatus
from hydra.types import RunMode
from omegaconf import OmegaConf

from mlgraph.config.callbacks import SecretsCallback
from mlgraph.config.secrets import (
    argv_problem,
    has_password,
    is_secret_key,
    redact,
    redact_file,
    redact_mapping,
    redact_messages,
    redact_tree,
    redacted_copy,
    tracking_problem,
)
from mlgraph.tracking import store

PW = "s3cr3t-Pw"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("http://alice:s3cr3t-Pw@host:5000", "http://alice:***@host:5000"),
        ("postgresql+psycopg://u:s3cr3t-Pw@db:5433/mlflow", "postgresql+psycopg://u:***@db:5433/mlflow"),
        # a raw @ in the password; an @ later in the path or query is not part of it
        ("http://a:p@ss@h/x?mail=me@example.org", "http://a:***@h/x?mail=me@example.org"),
        ("uri=http://a:one@h1,http://b:two@h2", "uri=http://a:***@h1,http://b:***@h2"),
        (
            "postgresql://u@h/db?sslmode=require&password=s3cr3t-Pw",
            "postgresql://u@h/db?sslmode=require&password=***",
        ),
        ("https://h/f.arff?access_token=abc&x=1", "https://h/f.arff?access_token=***&x=1"),
        ("+extra.api_token=abc dataset=yeast", "+extra.api_token=*** dataset=yeast"),
        ("MLFLOW_TRACKING_PASSWORD=abc PGPASSWORD='a b'", "MLFLOW_TRACKING_PASSWORD=*** PGPASSWORD='***'"),
        ('{"client_secret": "abc", "n": 3}', '{"client_secret": "***", "n": 3}'),
        ("Authorization: Bearer eyJ.abc", "Authorization: Bearer ***"),
        ("X-Auth-Token: abc123", "X-Auth-Token: ***"),
        # a pair inside another pair's value (Hydra's override_dirname)
        ("override_dirname: db.password=x,seed=1", "override_dirname: db.password=***,seed=1"),
        (
            "password: null\nmax_tokens: 3\nexclude_keys: [a]",
            "password: null\nmax_tokens: 3\nexclude_keys: [a]",
        ),
        # no password: a user alone, a port and a path with @, a SQLite path with @
        ("http://alice@host:5000 https://host:8080/a@b", "http://alice@host:5000 https://host:8080/a@b"),
        ("sqlite:////tmp/a@b/mlflow.db", "sqlite:////tmp/a@b/mlflow.db"),
    ],
)
def test_redact(text, expected):
    assert redact(text) == expected


def test_redact_masks_the_values_of_secret_environment_variables(monkeypatch):
    monkeypatch.setenv("MLFLOW_TRACKING_PASSWORD", PW)
    monkeypatch.setenv("SOME_TOKEN", "short")  # too short to be masked everywhere
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", "/home/me/key.json")  # a path, not a secret
    assert redact(f"login with {PW} failed; short; /home/me/key.json") == (
        "login with *** failed; short; /home/me/key.json"
    )


@pytest.mark.parametrize(
    ("key", "secret"),
    [
        ("tracking.password", True),
        ("PGPASSWORD", True),
        ("db.passwd", True),
        ("MYSQL_PWD", True),
        ("client_secret", True),
        ("api_token", True),
        ("apiKey", True),
        ("aws.access_key", True),
        ("credentials.user", True),
        ("Authorization", True),
        ("max_tokens", False),
        ("exclude_keys", False),
        ("method.gamma_A", False),
        ("dataset.url", False),
        ("oauth_flow", False),
    ],
)
def test_secret_key_names(key, secret):
    assert is_secret_key(key) is secret


def test_redact_mapping_and_tree():
    params = {"dataset.url": "https://u:pw@h/f", "db.password": "x", "db.token": "null", "seed": "0"}
    assert redact_mapping(params) == {
        "dataset.url": "https://u:***@h/f",
        "db.password": "***",
        "db.token": "null",
        "seed": "0",
    }
    tree = {"credentials": {"user": "alice", "n": None}, "uris": ["http://a:pw@h"], "k": 3}
    assert redact_tree(tree) == {
        "credentials": {"user": "***", "n": None},
        "uris": ["http://a:***@h"],
        "k": 3,
    }


@pytest.mark.parametrize(
    ("uri", "password"),
    [
        ("http://alice:pw@host", True),
        ("postgresql://u@h/db?password=pw", True),
        ("mysql://u@h/db?sslmode=x&passwd=pw", True),
        ("http://alice@host", False),
        ("http://alice:@host", False),  # an empty password
        ("postgresql://u@h/db?password=", False),
        ("https://host:8080/path@x", False),
        ("sqlite:////a/b.db", False),
    ],
)
def test_has_password(uri, password):
    assert has_password(uri) is password


def _assert_refusal(problem: str, key: str, shown: str, names: str) -> None:
    assert problem is not None and PW not in problem
    assert problem.startswith(f"{key} holds a password ({shown}") and "nothing was run" in problem
    assert names in problem and "\n" not in problem


def test_argv_problem():
    http = "MLFLOW_TRACKING_USERNAME and MLFLOW_TRACKING_PASSWORD"
    _assert_refusal(
        argv_problem([f"tracking.uri=http://alice:{PW}@h:5000"]), "tracking.uri", "http://alice:***@h", http
    )
    _assert_refusal(
        argv_problem(["-m", f"+tracking.uri=https://a:{PW}@h,sqlite:///x"]),
        "tracking.uri",
        "https://a:***",
        http,
    )
    _assert_refusal(
        argv_problem([f"tracking={{uri:'http://a:{PW}@h'}}"]), "tracking", "{uri:'http://a:***@h'}", http
    )
    pg = "PGPASSWORD, or a line host:port:database:user:password in ~/.pgpass"
    _assert_refusal(
        argv_problem(["x", "--uri", f"postgresql://u:{PW}@h/db"]), "--uri", "postgresql://u:***@h/db", pg
    )
    _assert_refusal(
        argv_problem([f"--uri=postgresql://u@h/db?password={PW}"]),
        "--uri",
        "postgresql://u@h/db?password=***",
        pg,
    )
    problem = argv_problem([f"tracking.uri=http://alice:{PW}@h:5000"])
    assert "Give tracking.uri=http://h:5000," in problem  # MLflow's client sends the user name
    assert "Give --uri=postgresql://u@h/db," in argv_problem([f"--uri=postgresql://u@h/db?password={PW}"])
    # other keys are masked where they are recorded, not refused; a user name alone is no password
    assert argv_problem([f"dataset.url=https://a:{PW}@h/f.arff", "tracking.uri=http://alice@h"]) is None


def _config(uri: str, overrides=(), choices=None):
    return OmegaConf.create(
        {
            "tracking": {"uri": uri, "experiment": "mlgraph", "artifact_location": None},
            "hydra": {"overrides": {"task": list(overrides)}, "runtime": {"choices": choices or {}}},
        }
    )


def test_tracking_problem_names_where_the_password_came_from(monkeypatch):
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    assert tracking_problem(_config("sqlite:////tmp/m.db")) is None
    assert tracking_problem(_config("${oc.env:NOT_SET_ANYWHERE}")) is None  # left to the other checks
    yaml_file = _config(f"http://a:{PW}@h", ["tracking=team"], {"tracking": "team", "experiment": None})
    _assert_refusal(
        tracking_problem(yaml_file),
        "tracking.uri",
        "http://a:***@h, set by a config file (tracking=team)",
        "~/.mlflow/credentials",
    )
    argv = _config(f"http://a:{PW}@h", [f"tracking.uri=http://a:{PW}@h"])
    assert "on the command line" in tracking_problem(argv)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"https://a:{PW}@h")
    env = tracking_problem(_config("${oc.env:MLFLOW_TRACKING_URI,http://127.0.0.1:5000}"))
    _assert_refusal(
        env,
        "tracking.uri",
        "https://a:***@h, from the environment variable MLFLOW_TRACKING_URI",
        "MLFLOW_TRACKING_PASSWORD",
    )
    assert "Give MLFLOW_TRACKING_URI=https://h," in env
    art = OmegaConf.create(
        {"tracking": {"uri": "sqlite:////m.db", "artifact_location": f"s3://k:{PW}@bucket/x"}}
    )
    assert tracking_problem(art).startswith(
        "tracking.artifact_location holds a password (s3://k:***@bucket/x, set by a config file or on the command line)"
    )


def test_redact_file(tmp_path):
    config = tmp_path / "config.yaml"
    config.write_text(
        "dataset:\n  url: https://u:pw@h/f.arff\ncredentials:\n  user: alice\n  n: 3\nseed: 0\n"
    )
    config.chmod(0o640)
    assert redact_file(config) is True
    assert yaml.safe_load(config.read_text()) == {
        "dataset": {"url": "https://u:***@h/f.arff"},
        "credentials": {"user": "***", "n": "***"},
        "seed": 0,
    }
    commented = tmp_path / "hydra.yaml"
    commented.write_text("# token=abc\nseed: 0\n")  # nothing to mask in the structure: as text
    assert redact_file(commented) and commented.read_text() == "# token=***\nseed: 0\n"
    assert stat.S_IMODE(config.stat().st_mode) == 0o640 and len(list(tmp_path.iterdir())) == 2
    table = tmp_path / "trials.csv"
    table.write_text("rate,error\n0.1,could not read https://u:pw@h/f\n")
    assert redact_file(table) and table.read_text() == "rate,error\n0.1,could not read https://u:***@h/f\n"
    clean = tmp_path / "summary.csv"
    clean.write_text("rate,n\n0.1,3\n")
    inode = clean.stat().st_ino
    assert redact_file(clean) is False and clean.stat().st_ino == inode  # not rewritten
    picture = tmp_path / "figure.png"
    picture.write_bytes(b"http://u:pw@h")
    assert redact_file(picture) is False and picture.read_bytes() == b"http://u:pw@h"


def test_redacted_copy_leaves_the_file_alone(tmp_path):
    partial = tmp_path / "trials_partial.csv"
    partial.write_text("error\nhttp://u:pw@h\n")
    with redacted_copy(partial) as copy:
        assert copy != str(partial) and os.path.basename(copy) == partial.name
        assert open(copy).read() == "error\nhttp://u:***@h\n"
    assert partial.read_text() == "error\nhttp://u:pw@h\n" and not os.path.exists(copy)
    clean = tmp_path / "clean.csv"
    clean.write_text("a\n1\n")
    with redacted_copy(clean) as copy:
        assert copy == str(clean)


@pytest.fixture
def messages_redacted():
    factory, formatwarning = logging.getLogRecordFactory(), warnings.formatwarning
    redact_messages()
    redact_messages()  # idempotent: one layer
    yield
    logging.setLogRecordFactory(factory)
    warnings.formatwarning = formatwarning


def test_log_records_and_warnings_are_redacted(messages_redacted):
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    logger = logging.getLogger("mlgraph.test_secrets")
    logger.addHandler(handler)
    try:
        logger.warning("overrides: %s", f"tracking.uri=http://a:{PW}@h")
        try:
            raise RuntimeError(f"cannot open postgresql://u:{PW}@h/db")
        except RuntimeError:
            logger.exception("failed")
    finally:
        logger.removeHandler(handler)
    logged = stream.getvalue()
    assert (
        "tracking.uri=http://a:***@h" in logged and "postgresql://u:***@h/db" in logged and PW not in logged
    )
    shown = warnings.formatwarning(UserWarning(f"downloading https://a:{PW}@h"), UserWarning, "f.py", 1)
    assert "https://a:***@h" in shown and PW not in shown
    assert logging.getLogRecordFactory()("n", 20, "f", 1, "x", (), None).getMessage() == "x"


def test_callback_refuses_before_anything_is_written(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    config = _config(f"http://a:{PW}@h", ["experiment=team"], {"experiment": "team"})
    for start in (SecretsCallback().on_run_start, SecretsCallback().on_multirun_start):
        with pytest.raises(SystemExit) as stopped:
            start(config=config)
        assert stopped.value.code == 2
        err = capsys.readouterr().err
        assert "tracking.uri holds a password (http://a:***@h, set by a config file (experiment=team))" in err
        assert PW not in err


def test_callback_redacts_what_hydra_wrote_and_prints(tmp_path, messages_redacted):
    job = tmp_path / "sweep" / "0"
    (job / ".hydra").mkdir(parents=True)
    (job / ".hydra" / "overrides.yaml").write_text(f"- dataset.url='https://a:{PW}@h/f'\n- seed=1\n")
    (job / ".hydra" / "config.yaml").write_text(f"tracking:\n  uri: http://a:{PW}@h\nseed: 1\n")
    (tmp_path / "sweep" / "multirun.yaml").write_text(
        f"hydra:\n  overrides:\n    task:\n    - x.api_key={PW}\n"
    )
    config = OmegaConf.create(
        {
            "hydra": {
                "runtime": {"output_dir": str(job)},
                "output_subdir": ".hydra",
                "mode": RunMode.MULTIRUN,
                "sweep": {"dir": str(tmp_path / "sweep")},
            }
        }
    )
    SecretsCallback().on_job_start(config=config, task_function=None)
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert len(written) == 3 and all(PW not in p.read_text() for p in written)
    assert yaml.safe_load((job / ".hydra" / "config.yaml").read_text()) == {
        "tracking": {"uri": "http://a:***@h"},
        "seed": 1,
    }

    error = ValueError(f"dataset.url='https://a:{PW}@h/f' is set but dataset.sha256 is not")
    error.__cause__ = OSError(f"GET https://a:{PW}@h/f")
    ret = JobReturn(overrides=[f"dataset.url='https://a:{PW}@h/f'", "seed=1"], status=JobStatus.FAILED)
    ret.return_value = error
    SecretsCallback().on_job_end(config=config, job_return=ret)
    assert ret.overrides == ["dataset.url='https://a:***@h/f'", "seed=1"]
    assert str(error).startswith("dataset.url='https://a:***@h/f'") and PW not in str(error.__cause__)


@pytest.fixture
def tracking_store(tmp_path):
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    experiment_id = store.setup_experiment(uri, "t", artifact_location=str(tmp_path / "art"))
    yield uri, experiment_id
    if mlflow.active_run() is not None:
        mlflow.end_run()
    mlflow.set_tracking_uri(None)


def test_the_store_records_no_credential(tracking_store, tmp_path, monkeypatch):
    uri, experiment_id = tracking_store
    monkeypatch.setenv("MLFLOW_TRACKING_PASSWORD", PW)
    run_id = store.open_run(
        {"uri": uri}, experiment_id, None, f"url=https://a:{PW}@h/f", None, {"overrides": f"x.api_token={PW}"}
    )
    store.log_batch(
        run_id, params={"dataset.url": f"https://a:{PW}@h/f", "db.password": "p"}, tags={"note": PW}
    )
    store.set_tags({"error": f"could not open http://a:{PW}@h"})
    config = tmp_path / "config.yaml"
    config.write_text(f"dataset:\n  url: https://a:{PW}@h/f\n")
    partial = tmp_path / "trials_partial.csv"
    partial.write_text(f"error\nhttps://a:{PW}@h/f\n")
    store.log_artifacts([str(config)], {})
    store.log_artifact(run_id, str(partial))
    store.end_run("FINISHED")
    run = mlflow.MlflowClient(uri).get_run(run_id)
    assert run.info.run_name == "url=https://a:***@h/f"
    assert run.data.params == {"dataset.url": "https://a:***@h/f", "db.password": "***"}
    assert run.data.tags["overrides"] == "x.api_token=***" and run.data.tags["note"] == "***"
    assert run.data.tags["error"] == "could not open http://a:***@h"
    assert PW not in config.read_text() and PW in partial.read_text()  # the job still appends to it
    stored = [p for p in (tmp_path / "art").rglob("*") if p.is_file()]
    assert sorted(p.name for p in stored) == ["config.yaml", "trials_partial.csv"]
    assert all(PW not in p.read_text() for p in stored)
    assert PW.encode() not in (tmp_path / "mlflow.db").read_bytes()


def test_the_command_refuses_a_password_on_its_command_line(tmp_path):
    """``mlgraph`` exits 2 with the paragraph, before Hydra writes anything."""
    import subprocess

    env = {**os.environ, "MLGRAPH_OUTPUT_DIR": str(tmp_path / "out")}
    code = "import sys; from mlgraph.cli import main; main(sys.argv[1:])"
    done = subprocess.run(
        [sys.executable, "-c", code, "run", "dataset=emotions", f"tracking.uri=http://a:{PW}@127.0.0.1:9"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith(
        "tracking.uri holds a password (http://a:***@127.0.0.1:9, on the command line)"
    )
    assert PW not in done.stderr and not (tmp_path / "out").exists()
