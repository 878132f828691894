"""``mlgraph reproduce`` as a user runs it from a checkout (``python -m mlgraph reproduce``), on
real data with a few methods and repetitions: the runs, the resumption, the report's verdicts."""

import os
import re
import subprocess
import sys
from pathlib import Path

import mlflow
import pandas as pd
import pytest

from mlgraph.reporting import reproduce as reproduce_module
from mlgraph.reporting.reproduce import presets

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]


def reproduce(tmp_path, *args):
    env = {**os.environ, "MLGRAPH_OUTPUT_DIR": str(tmp_path)}
    return subprocess.run(
        [sys.executable, "-m", "mlgraph", "reproduce", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )


def test_reproduce_runs_what_is_missing_and_reports_the_conclusions(tmp_path):
    args = [
        "000",
        "--quick",
        "hydra.sweeper.params.dataset=emotions",
        "hydra.sweeper.params.method='mlknn,mlmrrw'",
        "protocol.rates=[0.1,0.5]",
    ]
    first = reproduce(tmp_path, *args)
    assert first.returncode == 0, first.stderr[-3000:]
    client = mlflow.MlflowClient(f"sqlite:///{tmp_path}/mlflow.db")
    experiment = client.get_experiment_by_name("reproduce-000-quick").experiment_id
    runs = [r for r in client.search_runs([experiment]) if r.data.tags.get("kind") not in ("sweep", "report")]
    assert sorted(r.info.run_name for r in runs) == ["mlknn-emotions", "mlmrrw-emotions"]
    assert {r.data.params["protocol.repeats"] for r in runs} == {"2"}  # --quick
    # a second call runs nothing that finished, and still writes the report
    second = reproduce(tmp_path, *args)
    assert second.returncode == 0, second.stderr[-3000:]
    assert second.stdout.count("skipped, run") + second.stderr.count("skipped, run") == 2
    assert len([r for r in client.search_runs([experiment]) if r.data.tags.get("kind") is None]) == 2
    out = tmp_path / "reports" / "reproduce" / "paper000-quick"
    conclusions = pd.read_csv(out / "conclusions.csv")
    emotions = conclusions[conclusions.checked.str.startswith("emotions")]
    assert {"holds", "does not hold"} & set(emotions.verdict)
    posthoc = emotions[emotions.checked.str.contains("ML-MRRW better than MLkNN")]
    assert len(posthoc) == 3 and posthoc.ours.str.contains("CD = ").all()
    assert set(conclusions[conclusions.checked.str.startswith("scene")].verdict) == {"no run"}
    text = (out / "report.html").read_text()
    assert "data:image/svg+xml;base64," in text and (out / "figures" / "fig1_emotions.pdf").exists()
    assert not re.search(r"(src|href)=['\"]https?:", text)
    assert "mlgraph run experiment=ssl_comparison tracking.experiment=reproduce-000-quick resume=true" in text
    assert runs[0].data.tags["dataset_sha256"] in text  # the checksum the runs recorded
    # one section per table or figure of the paper, in the summary too, open where something fails
    opened = set(re.findall(r'<details class="part" id="([\w-]+)" open>', text))
    closed = set(re.findall(r'<details class="part" id="([\w-]+)">', text))
    assert {"part-fig-1", "part-table-2", "part-table-3", "part-fig-2", "part-conclusion"} <= opened | closed
    assert "part-fig-2" in closed  # scene: nothing ran, so nothing fails
    for anchor in opened | closed:
        assert f'href="#{anchor}"' in text
        section = text.split(f'id="{anchor}"')[1].split("</details>")[0]
        assert ('class="badge bad"' in section) == (anchor in opened), anchor
    assert "paper 000 (--quick): runs" in second.stdout and "report: " in second.stdout


def test_reproduce_compares_each_cell_of_the_papers_table(tmp_path):
    proc = reproduce(
        tmp_path,
        "002",
        "--quick",
        "hydra.sweeper.params.dataset=yeast",
        "hydra.sweeper.params.method='ml2,br'",
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    cells = pd.read_csv(tmp_path / "reports" / "reproduce" / "paper002-quick" / "cells.csv")
    yeast = cells[(cells.dataset == "yeast") & cells.method.isin(["ml2", "br"])]
    assert len(yeast) == 12 and set(yeast.verdict) <= {"reproduced", "not reproduced"}
    ml2 = yeast.set_index(["method", "metric"]).loc[("ml2", "avg_precision")]
    assert (ml2.paper_mean, ml2.paper_std) == (0.765, 0.005)
    assert abs(ml2.ours_mean - 0.756) < 0.02 and ml2.difference == pytest.approx(ml2.ours_mean - 0.765)
    br = yeast.set_index(["method", "metric"]).loc[("br", "coverage_norm")]
    assert br.verdict == "not reproduced" and "hard-output-baselines" in br.notes
    assert set(cells.loc[cells.dataset == "image", "verdict"]) == {"not available"}
    assert set(cells.loc[cells.dataset == "scene", "verdict"]) == {"no run"}


def test_report_of_an_empty_store_says_what_is_missing_and_still_builds(tmp_path, monkeypatch):
    monkeypatch.setattr(presets, "missing_files", lambda d: [] if d != "mediamill" else ["mediamill.arff"])
    plan = reproduce_module.make_plan(reproduce_module.paper_spec("000"), quick=True)
    path = reproduce_module.write_report(
        plan, f"sqlite:///{tmp_path}/mlflow.db", tmp_path / "report", [], ["000", "--quick"]
    )
    text = path.read_text()
    assert "No finished run of paper 000 in this store" in text and "mlgraph reproduce 000 --quick" in text
    assert "python -m mlgraph.data mediamill --fetch" in text
    assert "stated conclusions" in text and text.count("no run") >= 10
    assert not re.search(r"(src|href)=['\"]https?:", text)  # nothing fetched when it opens
