"""
The report: a comparison read back from MLflow
==============================================

``mlgraph report experiment=<preset>`` reads the latest finished run of every (method, dataset)
of an MLflow experiment and writes the paper's figures and significance tables: metric against
labelling rate, Friedman's test (paper 000, Eq. 25), the rank-sum differences against the
critical difference (Eq. 26), Nemenyi and Bonferroni–Dunn post-hoc tests and CD diagrams. The
paper's full comparison is ``make compare`` then ``make report``; here two methods on emotions,
two repetitions at three labelling rates:

.. code-block:: bash

    mlgraph run -m method=mlmrrw,mlknn dataset=emotions tracking.experiment=gallery_report \\
        protocol.repeats=2 'protocol.rates=[0.1,0.3,0.5]'
    mlgraph report tracking.experiment=gallery_report
"""

# %%
import os
import subprocess
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("MLGRAPH_OUTPUT_DIR", tempfile.mkdtemp(prefix="mlgraph-example-"))
out = Path(os.environ["MLGRAPH_OUTPUT_DIR"])


def mlgraph(*args):
    done = subprocess.run([sys.executable, "-m", "mlgraph", *args], capture_output=True, text=True)
    print(*(done.stderr if done.returncode else done.stdout).splitlines()[-8:], sep="\n")
    done.check_returncode()


experiment = "tracking.experiment=gallery_report"
mlgraph(
    "run", "-m", "method=mlmrrw,mlknn", "dataset=emotions", experiment, "progress=false",
    "protocol.repeats=2", "protocol.rates=[0.1,0.3,0.5]",
)  # fmt: skip
mlgraph("report", experiment)

# %%
# What the report wrote
# ---------------------
# Under ``$MLGRAPH_OUTPUT_DIR/reports/<experiment>/``, also logged as the artifacts of a
# ``report`` run in the same MLflow experiment.
report = out / "reports" / "gallery_report"
print("\n".join(sorted(str(p.relative_to(report)) for p in report.rglob("*") if p.is_file())))

# %%
# The Markdown summary (Friedman tables and critical differences):
print((report / "report.md").read_text()[:3000])

# %%
# The figure of paper 000's Figs. 1–4 for this dataset:
import matplotlib.image as mpimg
import matplotlib.pyplot as plt

figure = next(report.rglob("*rate*.png"))
fig, ax = plt.subplots(figsize=(9, 3.4))
ax.imshow(mpimg.imread(figure))
ax.set_axis_off()
fig.tight_layout()
