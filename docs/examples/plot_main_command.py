"""
The main command, from Python
=============================

``python -m run method=mlmrrw dataset=yeast`` (``mlgraph run ...`` once installed) runs ML-MRRW
on yeast under paper 000's protocol and records one MLflow run. The same experiment can be
started from Python: compose the config with Hydra's compose API, with the overrides you would
type, and hand it to :func:`mlgraph.engine.experiment.run_experiment`. Here with two repetitions at
three labelling rates instead of ten at ten, so that it takes seconds.
"""

# %%
# Where the results go
# --------------------
# Runs land in ``$MLGRAPH_OUTPUT_DIR`` (default ``./outputs``): the SQLite store ``mlflow.db``,
# artifacts, the graph cache. This example writes into a temporary folder.
import os
import tempfile

os.environ.setdefault("MLGRAPH_OUTPUT_DIR", tempfile.mkdtemp(prefix="mlgraph-example-"))

# %%
# Compose the config
# ------------------
# ``mlgraph.cli.CONFIG_DIR`` is the package's config folder (``conf/`` of a checkout).
# Every override is a ``key=value`` string, exactly as on the command line.
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from mlgraph.config.app import CONFIG_DIR
from mlgraph.engine.experiment import run_experiment

overrides = [
    "method=mlmrrw",
    "dataset=yeast",
    "protocol.repeats=2",
    "protocol.rates=[0.05,0.2,0.5]",
    "progress=false",
    "tracking.experiment=gallery_main",
]
with initialize_config_dir(version_base="1.3", config_dir=str(CONFIG_DIR)):
    cfg = compose("config", overrides=overrides)
print(OmegaConf.to_yaml(cfg.method, resolve=True))  # with the tuned values of conf/hparams/mlmrrw_yeast.yaml
print(cfg.tracking.uri)

# %%
# Run it
# ------
# One MLflow run: the resolved config as params, every metric per labelling rate, the per-trial
# table and the figure as artifacts, the git commit, the dataset's SHA-256 and the package
# versions as tags. The returned table is the summary the command prints.
summary = run_experiment(cfg)
summary[["avg_precision", "avg_precision_std", "micro_f1", "macro_f1"]].round(3)

# %%
# Read the run back from MLflow
# -----------------------------
# A metric logged per labelling rate has the rate in percent as its ``step``.
import matplotlib.pyplot as plt
import mlflow

client = mlflow.MlflowClient(cfg.tracking.uri)
experiment = client.get_experiment_by_name("gallery_main")
run = client.search_runs([experiment.experiment_id], order_by=["start_time DESC"], max_results=1)[0]
print(run.info.run_name, run.info.status)
print("dataset SHA-256:", run.data.tags["dataset_sha256"][:16], "...")
print("artifacts:", sorted(a.path for a in client.list_artifacts(run.info.run_id)))

history = client.get_metric_history(run.info.run_id, "avg_precision")
fig, ax = plt.subplots(figsize=(5, 3.2))
ax.plot([m.step for m in history], [m.value for m in history], marker="o")
ax.set(xlabel="labelling rate (%)", ylabel="average precision", title="ML-MRRW on yeast, read from MLflow")
fig.tight_layout()
