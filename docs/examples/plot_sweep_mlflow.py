"""
A sweep, read back from MLflow
==============================

A Hydra multirun (``-m``) runs one job per combination of the swept values, in parallel, each
job one MLflow run nested under a parent run for the sweep. Here ML-MRRW's reliance weight
``method.nu2`` on emotions (the paper's sweep is ``python -m run -m experiment=reliance_weight``):

.. code-block:: bash

    mlgraph run -m method=mlmrrw dataset=emotions method.nu2=0,0.1,1 protocol.repeats=2 \\
        'protocol.rates=[0.1,0.5]'

The sweep's parent run holds ``sweep.csv`` (one row per job) and the best job as tags; each job's
run is named after what it varies. Everything is read back with MLflow's own client.
"""

# %%
import os
import subprocess
import sys
import tempfile

os.environ.setdefault("MLGRAPH_OUTPUT_DIR", tempfile.mkdtemp(prefix="mlgraph-example-"))
out = os.environ["MLGRAPH_OUTPUT_DIR"]

command = [
    sys.executable, "-m", "mlgraph", "run", "-m",
    "method=mlmrrw", "dataset=emotions", "method.nu2=0,0.1,1",
    "protocol.repeats=2", "protocol.rates=[0.1,0.5]",
    "tracking.experiment=gallery_sweep", "progress=false",
]  # fmt: skip
done = subprocess.run(command, capture_output=True, text=True)
print(*(done.stderr if done.returncode else done.stdout).splitlines()[-12:], sep="\n")
done.check_returncode()

# %%
# The sweep's parent run and its jobs
# -----------------------------------
import mlflow
import pandas as pd

client = mlflow.MlflowClient(f"sqlite:///{out}/mlflow.db")
experiment = client.get_experiment_by_name("gallery_sweep")
parent = client.search_runs([experiment.experiment_id], "tags.kind = 'sweep'")[0]
print(parent.info.run_name, parent.info.status, "best:", parent.data.tags["best_run"])
jobs = client.search_runs([experiment.experiment_id], f"tags.mlflow.parentRunId = '{parent.info.run_id}'")
table = pd.DataFrame(
    {
        "run": r.info.run_name,
        "nu2": float(r.data.params["method.nu2"]),
        "avg_precision": r.data.metrics["avg_precision_overall"],
        "micro_f1": r.data.metrics["micro_f1_overall"],
    }
    for r in jobs
).sort_values("nu2")
table.round(4)

# %%
# The same table as an artifact of the parent run:
path = mlflow.artifacts.download_artifacts(
    run_id=parent.info.run_id, artifact_path="sweep.csv", tracking_uri=client.tracking_uri
)
pd.read_csv(path).iloc[:, :6]

# %%
# Average precision against the labelling rate, one curve per job
# ---------------------------------------------------------------
import matplotlib.pyplot as plt

fig, ax = plt.subplots(figsize=(5, 3.2))
for r in sorted(jobs, key=lambda r: float(r.data.params["method.nu2"])):
    history = client.get_metric_history(r.info.run_id, "avg_precision")
    ax.plot(
        [m.step for m in history],
        [m.value for m in history],
        marker="o",
        label=f"ν2 = {r.data.params['method.nu2']}",
    )
ax.set(xlabel="labelling rate (%)", ylabel="average precision", title="ML-MRRW on emotions")
ax.legend()
fig.tight_layout()
