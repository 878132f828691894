"""The wheel works outside the checkout: built from the sources, installed into a fresh virtual
environment, run by its ``mlgraph`` command from an empty folder.

The fresh environment borrows the project environment's third-party packages through one
``.pth`` line (its ``.pth`` files, among them the editable install's link to ``src/``, are not
read), so nothing is downloaded but the build backend of ``pip wheel``; mlgraph itself must come
from the wheel, and its configs and presets from inside the installed package.
"""

import importlib.metadata
import os
import shutil
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import mlflow
import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
FEW = ["dataset=emotions", "protocol.repeats=1", "protocol.rates=[0.5]", "progress=false"]


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(bin folder, site-packages) of a fresh venv holding the wheel built from the sources."""
    base = tmp_path_factory.mktemp("wheel")
    src = base / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    for name in ("src", "conf", "experiments"):  # src/mlgraph/conf -> ../../conf must keep resolving
        shutil.copytree(
            ROOT / name, src / name, symlinks=True, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info")
        )
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(base / "dist"), str(src)],
        check=True,
        capture_output=True,
        text=True,
        timeout=600,
    )
    (wheel,) = (base / "dist").glob("mlgraph-*.whl")
    env_dir = base / "venv"
    venv.EnvBuilder(with_pip=False, system_site_packages=False).create(env_dir)
    python = env_dir / "bin" / "python"
    site = Path(
        subprocess.check_output(
            [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], text=True
        ).strip()
    )
    (site / "project_packages.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "-q", str(wheel)],
        check=True,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return env_dir / "bin", site


def mlgraph(bin_dir: Path, args, cwd: Path):
    env = {
        **os.environ,
        "MLGRAPH_OUTPUT_DIR": str(cwd / "out"),
        "PYTHONUNBUFFERED": "1",
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
    }
    env.pop("PYTHONPATH", None)
    return subprocess.run(
        [str(bin_dir / "mlgraph"), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
    )


def test_wheel_holds_package_and_configs_but_no_run_module(installed):
    bin_dir, site = installed
    code = (
        "import mlgraph, mlgraph.cli as c; print(mlgraph.__file__); print(c.CONFIG_DIR); "
        "print(mlgraph.__version__)"
    )
    out = subprocess.check_output([bin_dir / "python", "-c", code], cwd=site.parent, text=True).split("\n")
    assert Path(out[0]).is_relative_to(site), out[0]  # the wheel's copy, not the checkout's src/
    conf = Path(out[1])
    assert conf.is_relative_to(site) and not conf.is_symlink()
    assert (conf / "config.yaml").is_file() and (conf / "experiment" / "reliance_weight.yaml").is_file()
    assert (conf / "hydra" / "help" / "run.yaml").is_file() and (conf / "dataset_keys.yaml").is_file()
    assert not (site / "run.py").exists()  # no top-level `run` module shadowing a user's own
    package = Path(out[0]).parent
    assert (package / "py.typed").is_file()  # type hints are part of the API (PEP 561)
    assert not list(site.glob("**/bench.py")) and not (site / "benchmarks").exists()  # benchmarks stay out
    assert out[2] == importlib.metadata.version("mlgraph")


def test_run_and_a_sweep_preset_from_an_empty_folder(installed, tmp_path):
    bin_dir, _ = installed
    proc = mlgraph(bin_dir, ["run", "method=mlmrrw", *FEW], tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "avg_precision" in proc.stdout
    proc = mlgraph(
        bin_dir,
        ["run", "-m", "experiment=reliance_weight", "method.nu1=1.0", "method.nu2=0,1", *FEW],
        tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    client = mlflow.MlflowClient(f"sqlite:///{tmp_path / 'out' / 'mlflow.db'}")
    (single,) = client.search_runs([client.get_experiment_by_name("mlgraph").experiment_id])
    assert single.info.status == "FINISHED" and single.data.params["dataset.name"] == "emotions"
    sweep = client.search_runs([client.get_experiment_by_name("reliance_weight").experiment_id])
    jobs = [r for r in sweep if "method.nu2" in r.data.params]
    assert sorted(r.data.params["method.nu2"] for r in jobs) == ["0", "1"]
    assert all(r.info.status == "FINISHED" and float(r.data.params["method.nu1"]) == 1 for r in jobs)
    assert list((tmp_path / "out" / "runs").glob("*/*/run.log"))  # the job folder is under the output dir


def test_report_and_toy_from_an_empty_folder(installed, tmp_path):
    bin_dir, _ = installed
    few = ["protocol.repeats=1", "protocol.rates=[0.1,0.5]", "progress=false"]
    proc = mlgraph(
        bin_dir,
        [
            "run",
            "experiment=ssl_comparison",
            "hydra.sweeper.params.dataset=emotions",
            "method=mlknn,mlmrrw",
            *few,
        ],
        tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    proc = mlgraph(bin_dir, ["report", "experiment=ssl_comparison"], tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "ML-MRRW" in (tmp_path / "out" / "reports" / "ssl_comparison" / "report.md").read_text()
    proc = mlgraph(bin_dir, ["toy"], tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    client = mlflow.MlflowClient(f"sqlite:///{tmp_path / 'out' / 'mlflow.db'}")
    (toy,) = client.search_runs([client.get_experiment_by_name("toy").experiment_id])
    assert toy.info.status == "FINISHED" and toy.data.metrics["correlation_label1"] > 0.99


@pytest.mark.parametrize("command", ["run", "report", "toy", "hparams"])
def test_every_command_answers_help(installed, tmp_path, command):
    proc = mlgraph(installed[0], [command, "--help"], tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert f"mlgraph {command}" in proc.stdout
    if command != "hparams":
        assert "tracking" in proc.stdout and "Traceback" not in proc.stderr
    assert not (tmp_path / "out").exists()  # --help runs nothing


def test_bash_completion_of_commands_and_overrides(installed, tmp_path):
    """Hydra's bash completion script, installed for the console script, completes the command
    word, then the chosen command's config groups and options."""
    script = 'eval "$(mlgraph -sc install=bash)"\n' + "".join(
        f'COMP_LINE="{line}"; COMP_WORDS=({line}); COMP_CWORD={len(line.split()) - 1}; COMP_POINT={len(line)}\n'
        'hydra_bash_completion; echo "${COMPREPLY[@]}"\n'
        for line in ("mlgraph ru", "mlgraph run method=mlm", "mlgraph report experiment=ssl")
    )
    env = {**os.environ, "PATH": f"{installed[0]}{os.pathsep}{os.environ['PATH']}"}
    proc = subprocess.run(
        ["bash", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.stdout.splitlines() == [
        "run",
        "method=mlmr method=mlmrrw",
        "experiment=ssl_comparison experiment=ssl_comparison_inner experiment=ssl_comparison_mediamill",
    ]
