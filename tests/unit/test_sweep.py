"""Run naming, canonical params, config hashes, swept keys, and how a job ends: failed trials,
strict mode, config errors (in-process, real data, a throwaway SQLite store)."""

from pathlib import Path

import joblib
import mlflow
import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from mlgraph.engine.checks import ConfigError
from mlgraph.engine.experiment import run_experiment
from mlgraph.engine.jobs import (
    ENV_JOBS,
    JobInfo,
    concurrent_jobs,
    parent_name,
    run_name,
    sweep_size,
    swept_keys,
)
from mlgraph.engine.results import AllTrialsFailed
from mlgraph.engine.runner import Parallelism, resolve_parallelism
from mlgraph.engine.sweep import SweepProgress, record_job_end
from mlgraph.tracking.store import canonical, config_hash

CONF = Path(__file__).resolve().parents[2] / "conf"


def _compose(*overrides):
    with initialize_config_dir(version_base="1.3", config_dir=str(CONF)):
        return compose("config", overrides=list(overrides), return_hydra_config=False)


@pytest.mark.parametrize(
    "value, text",
    [
        (1.0, "1"),
        (1, "1"),
        (0.1, "0.1"),
        (1e-05, "1e-05"),
        (2.5e20, "2.5e+20"),
        (-3.0, "-3"),
        ([0.1, 1.0], "[0.1, 1]"),
        (None, "null"),
        ("knn", "knn"),
        (True, "True"),
        (float("inf"), "inf"),
    ],
)
def test_canonical_numbers_match_what_a_user_types(value, text):
    assert canonical(value) == text


def test_config_hash_ignores_how_a_job_runs_but_not_what_it_computes():
    base = config_hash(_compose("dataset=emotions"))
    assert config_hash(_compose("dataset=emotions", "n_jobs=1", "progress=false", "resume=true")) == base
    assert config_hash(_compose("dataset=emotions", "method.nu2=1.0")) == config_hash(
        _compose("dataset=emotions", "method.nu2=1")
    )
    assert config_hash(_compose("dataset=emotions", "method.nu2=0.2")) != base
    assert config_hash(_compose("dataset=emotions", "seed=1")) != base


def test_run_names_start_with_method_and_dataset_then_what_varies():
    cfg = _compose("dataset=yeast", "method.nu1=1.0", "method.nu2=0.1")
    assert run_name(cfg, JobInfo(varied=("method.nu1", "method.nu2"))) == "mlmrrw-yeast nu1=1 nu2=0.1"
    single = JobInfo(overrides=("method=mlmrrw", "dataset=yeast", "method.nu2=0.1", "progress=false"))
    assert run_name(cfg, single) == "mlmrrw-yeast nu2=0.1"
    assert run_name(cfg, JobInfo(varied=("dataset",))) == "mlmrrw-yeast"  # a sweep over datasets
    assert run_name(cfg, JobInfo(varied=("method", "dataset"))) == "mlmrrw-yeast"
    cfg = _compose("method=br_knn", "selector=gmba", "dataset=emotions", "selector.fraction=0.3")
    job = JobInfo(varied=("selector", "selector.fraction"), choices={"selector": "gmba"})
    assert run_name(cfg, job) == "br_knn-emotions-gmba fraction=0.3"


def test_run_names_show_floats_to_four_significant_digits():
    cfg = _compose("dataset=yeast", "method.gamma_A=0.0016180339887", "method.nu2=12345.678")
    job = JobInfo(varied=("method.gamma_A", "method.nu2"))
    assert run_name(cfg, job) == "mlmrrw-yeast gamma_A=0.001618 nu2=1.235e+04"
    assert run_name(_compose("dataset=yeast", "method.nu2=2.0"), JobInfo(varied=("method.nu2",))) == (
        "mlmrrw-yeast nu2=2"
    )


def test_sweep_parents_are_named_after_their_preset_or_the_varied_keys():
    preset = OmegaConf.create({"hydra": {"runtime": {"choices": {"experiment": "ssl_comparison"}}}})
    assert parent_name(preset, ["method", "dataset"], "20261128-1") == "ssl_comparison (sweep 20261128-1)"
    plain = OmegaConf.create({"hydra": {"runtime": {"choices": {"experiment": None}}}})
    assert parent_name(plain, ["method.nu2"], "20261128-1") == "method.nu2 (sweep 20261128-1)"


def test_sweep_progress_counts_job_notes_and_estimates_the_time_left(tmp_path, capsys):
    progress = SweepProgress(tmp_path, total=4, every=3600)
    progress.started -= 30  # the sweep began 30 s ago
    record_job_end(tmp_path, 0, "COMPLETED", skipped=True, seconds=0.1)
    progress.poll()
    assert progress.seconds_left() is None  # a skipped job says nothing about the time per job
    record_job_end(tmp_path, 1, "COMPLETED", skipped=False, seconds=20)
    record_job_end(tmp_path, 2, "FAILED", skipped=False, seconds=5)
    progress.poll()
    assert (progress.done, progress.failed, progress.skipped) == (3, 1, 1)
    assert progress.seconds_left() == pytest.approx(1 * 30 / 2, abs=1)
    progress.poll()  # nothing new: no second count, no new line
    lines = capsys.readouterr().out.splitlines()
    assert lines[-1].startswith("[sweep] 3/4 jobs done (1 failed, 1 skipped), 30 s elapsed, about 15 s left")
    assert len(lines) == 2 and progress.done == 3


def test_swept_keys_come_from_the_command_line_and_the_preset():
    config = OmegaConf.create(
        {
            "hydra": {
                "overrides": {"task": ["dataset=yeast", "method.nu2=0,1"]},
                "sweeper": {"params": {"method.nu1": "1,2", "seed": "0"}},
            }
        }
    )
    assert swept_keys(config) == ["method.nu2", "method.nu1"]


def test_sweep_size_multiplies_the_swept_values_as_hydras_basic_sweeper():
    def config(task, params=None):
        return OmegaConf.create({"hydra": {"overrides": {"task": task}, "sweeper": {"params": params or {}}}})

    assert sweep_size(config(["dataset=yeast,scene", "method.nu2=range(0,1,0.25)"])) == 8
    assert sweep_size(config(["seed=1,2"], {"method.nu1": "1,2,3", "seed": "0"})) == 6  # command line wins
    assert sweep_size(config(["dataset=yeast"])) == 1
    assert sweep_size(config(["dataset=glob(*)"])) is None
    assert sweep_size(config(["method.nu2=interval(0,1)"])) is None


def test_a_sweeps_jobs_share_the_cores(monkeypatch):
    launcher = OmegaConf.create({"n_jobs": -1})
    monkeypatch.delenv(ENV_JOBS, raising=False)
    assert concurrent_jobs(launcher) is None
    monkeypatch.setenv(ENV_JOBS, "3")
    assert concurrent_jobs(launcher) == min(3, joblib.cpu_count())
    assert concurrent_jobs(OmegaConf.create({"n_jobs": 1})) == 1
    monkeypatch.setenv(ENV_JOBS, "")
    assert concurrent_jobs(launcher) is None


def test_spare_cores_become_blas_threads():
    assert resolve_parallelism("auto", False, cores=2, n_trials=1) == Parallelism(1, 2)
    assert resolve_parallelism("auto", False, cores=4, n_trials=2) == Parallelism(2, 2)
    assert resolve_parallelism("auto", False, cores=2, n_trials=100) == Parallelism(2, 1)
    assert resolve_parallelism("auto", True, cores=2, n_trials=1) == Parallelism(1, 1)
    # a sweep's jobs share the cores: 3 jobs at once on 16 cores get 5 BLAS threads each
    assert resolve_parallelism("auto", True, cores=16, n_trials=100, launcher_jobs=3) == Parallelism(1, 5)
    assert resolve_parallelism("auto", True, cores=2, n_trials=100, launcher_jobs=2) == Parallelism(1, 1)


def _job(tmp_path, *overrides):
    cfg = _compose(
        "dataset=emotions",
        "protocol.repeats=2",
        "protocol.rates=[0.05,0.5]",
        "progress=false",
        f"tracking.uri=sqlite:///{tmp_path}/mlflow.db",
        f"tracking.artifact_location={tmp_path}/art",
        "n_jobs=1",
        *overrides,
    )
    OmegaConf.set_struct(cfg, False)
    cfg.method = {"_target_": "test_runner.ColumnMeans", "name": "freq", "fail_below_labelled": 30}
    return cfg


def _runs(tmp_path):
    """The runs of experiment ``mlgraph`` (none when a config error left the store unopened)."""
    client = mlflow.MlflowClient(f"sqlite:///{tmp_path}/mlflow.db")
    experiment = client.get_experiment_by_name("mlgraph")
    return [] if experiment is None else client.search_runs([experiment.experiment_id])


def test_failed_trials_are_named_in_the_overall_metrics(tmp_path):
    run_experiment(_job(tmp_path))  # 5 % of 395 training rows = 20 labelled: those trials fail
    (run,) = _runs(tmp_path)
    assert run.info.status == "FINISHED" and run.data.tags["trials_failed"] == "2 of 4"
    assert (
        "avg_precision_overall_ok_only" in run.data.metrics
        and "avg_precision_overall" not in run.data.metrics
    )
    assert "successful trials only" in run.data.tags["notes"]


def test_strict_fails_the_run_on_any_failed_trial(tmp_path):
    with pytest.raises(AllTrialsFailed, match="2 of 4 trials failed"):
        run_experiment(_job(tmp_path, "strict=true"))
    (run,) = _runs(tmp_path)
    assert run.info.status == "FAILED" and "only 20 labelled" in run.data.tags["error"]


def test_degenerate_labels_are_counted_and_explained(tmp_path):
    run_experiment(_job(tmp_path, "protocol.rates=[0.5]", "protocol.test_size=0.005"))  # 3 test rows
    (run,) = _runs(tmp_path)
    assert run.data.metrics["run/n_degenerate_labels"] >= 1
    assert "no positive or no negative" in run.data.tags["notes"]


def test_config_errors_open_no_run(tmp_path):
    with pytest.raises(ConfigError, match=r"seed=-1 is not valid: it must be a non-negative integer"):
        run_experiment(_job(tmp_path, "seed=-1"))
    with pytest.raises(ConfigError, match="graph.k=0"):
        run_experiment(_job(tmp_path, "graph.k=0"))
    assert _runs(tmp_path) == []
