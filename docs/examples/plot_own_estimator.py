"""
Your own estimator beside a built-in method
===========================================

A research group's own multi-label method, in its own package, named by a YAML file in its own
config folder, runs under paper 000's labelling-rate protocol beside ML-MRRW, with one command:

.. code-block:: bash

    mlgraph run -m --config-dir ./myconf experiment=ssl_comparison method=mine,mlmrrw dataset=emotions

This example writes such a package and config folder into a temporary directory, runs that
command with one repetition at three labelling rates (the paper's protocol has ten of each), and
reads both runs back from MLflow. The estimator is supervised-only, so mlgraph fits it on the
labelled training rows through its ``LabelledOnly`` wrapper and says so in the run's tags; it
has no ``decision_function``, so its label scores come from ``predict_proba``.
"""

# %%
# The user's package and config folder
# ------------------------------------
# A nearest-centroid scorer: each label's score is how much closer a point is to the label's
# positive centroid than to its negative one, as a probability. Nothing in it knows mlgraph.
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

root = Path(tempfile.mkdtemp(prefix="mlgraph-own-"))
(root / "mypkg").mkdir()
(root / "mypkg" / "__init__.py").write_text(
    textwrap.dedent(
        """
        import numpy as np
        from sklearn.base import BaseEstimator, ClassifierMixin


        class CentroidScorer(ClassifierMixin, BaseEstimator):
            def __init__(self, shrink=0.0):
                self.shrink = shrink

            def fit(self, X, Y):
                X, Y = np.asarray(X, float), np.asarray(Y)
                self.mean_, self.std_ = X.mean(0), X.std(0) + 1e-12
                Z = (X - self.mean_) / self.std_
                keep = 1 - self.shrink
                self.pos_ = keep * (Y.T @ Z) / np.maximum(Y.sum(0), 1)[:, None]
                self.neg_ = keep * ((1 - Y).T @ Z) / np.maximum((1 - Y).sum(0), 1)[:, None]
                return self

            def predict_proba(self, X):
                Z = (np.asarray(X, float) - self.mean_) / self.std_
                d_pos = ((Z[:, None] - self.pos_[None]) ** 2).sum(-1)
                d_neg = ((Z[:, None] - self.neg_[None]) ** 2).sum(-1)
                return 1 / (1 + np.exp((d_pos - d_neg) / Z.shape[1]))

            def predict(self, X):
                return (self.predict_proba(X) > 0.5).astype(int)
        """
    )
)
(root / "myconf" / "method").mkdir(parents=True)
(root / "myconf" / "method" / "mine.yaml").write_text(
    "_target_: mypkg.CentroidScorer\nname: mine\nshrink: 0.0\n"
)

# %%
# One command, two methods
# ------------------------
# ``--config-dir`` adds the folder to Hydra's search path; the package reaches the jobs through
# ``PYTHONPATH``. The comparison preset puts both runs into the MLflow experiment
# ``ssl_comparison``, where ``mlgraph report`` would rank them.
out = root / "outputs"
env = {
    **os.environ,
    "MLGRAPH_OUTPUT_DIR": str(out),
    "PYTHONPATH": f"{root}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
}
command = [
    sys.executable, "-m", "mlgraph", "run", "-m", "--config-dir", str(root / "myconf"),
    "experiment=ssl_comparison", "method=mine,mlmrrw", "dataset=emotions",
    "protocol.repeats=1", "protocol.rates=[0.1,0.3,0.5]", "progress=false",
]  # fmt: skip
done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
print(done.stdout[-1200:] if done.returncode == 0 else done.stderr[-3000:])

# %%
# Read back from MLflow
# ---------------------
# The supervised-only estimator was wrapped, and its ranking metrics came from ``predict_proba``.
import mlflow
import pandas as pd

mlflow.set_tracking_uri(f"sqlite:///{out}/mlflow.db")
runs = mlflow.search_runs(experiment_names=["ssl_comparison"])
runs = runs[runs["tags.method"].notna()]  # the sweep's parent run has no method
columns = ["tags.method", "tags.unlabelled_rows", "metrics.avg_precision_overall", "metrics.micro_f1_overall"]
print(runs[columns].to_string(index=False))

# %%
# Average precision against the labelling rate
# --------------------------------------------
import matplotlib.pyplot as plt

fig, ax = plt.subplots(figsize=(5, 3.2))
for _, run in runs.iterrows():
    path = mlflow.artifacts.download_artifacts(run_id=run.run_id, artifact_path="summary.csv")
    summary = pd.read_csv(path)
    ax.errorbar(
        summary.step,
        summary.avg_precision,
        yerr=summary.avg_precision_std,
        marker="o",
        label=run["tags.method"],
    )
ax.set_xlabel("labelled training rows (%)")
ax.set_ylabel("average precision")
ax.legend()
fig.tight_layout()
