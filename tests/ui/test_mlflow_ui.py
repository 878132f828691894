"""The MLflow UI path the README documents, checked in a real headless Chromium.

A small sweep of the real command fills a fresh store; ``mlflow ui`` serves it on a free loopback
port. MLflow 3 opens an experiment in its GenAI view (traces) unless the UI-wide workflow switch
says "Model training": the documented address carries ``?workflowType=machine_learning``. A small
``mlgraph reproduce`` report is opened from its file with every network request refused.

Needs Chromium (``scripts/install-chromium.sh``, run by the fixture when it is missing) and the
``ui`` extra (playwright, driving that Chromium; no browser download). ``pytest -m ui``.
Set ``MLGRAPH_UI_SCREENSHOTS=docs/img`` to refresh the documentation's pictures of the MLflow UI
(mlflow_sweep_compare.png, mlflow_datasets_column.png).
"""

import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import mlflow
import pytest

from mlgraph.evaluation.metrics import METRICS

pytestmark = pytest.mark.ui

ROOT = Path(__file__).resolve().parents[2]
SWEEP = [
    "method=mlmrrw",
    "dataset=emotions",
    "method.nu2=0,1",
    "protocol.repeats=1",
    "protocol.rates=[0.1,0.5]",
    "progress=false",
]


@pytest.fixture(scope="module")
def chromium() -> str:
    path = shutil.which("chromium")
    if path is None:
        proc = subprocess.run(
            [ROOT / "scripts" / "install-chromium.sh"], capture_output=True, text=True, timeout=900
        )
        assert proc.returncode == 0, f"scripts/install-chromium.sh failed:\n{proc.stderr[-2000:]}"
        path = shutil.which("chromium")
    return path


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """(tracking URI, experiment id, child runs) of the sweep, run as `python -m run -m ...`."""
    out = tmp_path_factory.mktemp("ui_store")
    env = {**os.environ, "MLGRAPH_OUTPUT_DIR": str(out)}
    proc = subprocess.run(
        [sys.executable, "-m", "run", "-m", *SWEEP],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "[sweep] 2/2 jobs done" in proc.stdout  # the sweep-wide progress
    uri = f"sqlite:///{out}/mlflow.db"
    client = mlflow.MlflowClient(uri)
    experiment_id = client.get_experiment_by_name("mlgraph").experiment_id
    runs = [r for r in client.search_runs([experiment_id]) if "method.nu2" in r.data.params]
    return uri, experiment_id, runs


@pytest.fixture(scope="module")
def server(store):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [
            Path(sys.executable).with_name("mlflow"),
            "ui",
            "--backend-store-uri",
            store[0],
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                urllib.request.urlopen(f"{base}/health", timeout=2)
                break
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline, "mlflow ui did not start"
                time.sleep(0.5)
        yield base
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@pytest.fixture(scope="module")
def page(chromium, server):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1400, "height": 820})
        page.set_default_timeout(60_000)
        yield page
        browser.close()


def close_assistant(page):
    """Close MLflow's assistant side panel, which narrows the page, when it is open."""
    close = page.get_by_role("button", name="Close")
    if close.count():
        close.first.click()


def open_runs(page, server, experiment_id):
    """The README's address of an experiment's runs; the sweep's parent row expanded."""
    page.goto(f"{server}/#/experiments/{experiment_id}/runs?workflowType=machine_learning")
    page.get_by_text("sweep ", exact=False).first.wait_for()
    close_assistant(page)
    if not page.get_by_text(" nu2=", exact=False).count():  # the UI remembers an expanded parent
        page.locator('button[data-component-id*="runnamecellrenderer"]').first.click()


def test_runs_view_lists_the_sweep_jobs_by_distinct_names(page, server, store):
    _, experiment_id, runs = store
    open_runs(page, server, experiment_id)
    names = sorted(r.info.run_name for r in runs)
    assert names == ["mlmrrw-emotions nu2=0", "mlmrrw-emotions nu2=1"]  # method and data set, then the value
    for name in names:
        cell = page.get_by_text(name, exact=True)
        cell.wait_for()
        shown = cell.evaluate("e => e.closest('[col-id]').getBoundingClientRect().width")
        visible = page.evaluate(  # the part of the name the column shows
            "([t, w]) => { const c = document.createElement('canvas').getContext('2d');"
            " c.font = getComputedStyle(document.body).font; let n = t.length;"
            " while (n > 0 && c.measureText(t.slice(0, n)).width > w) n--; return t.slice(0, n); }",
            [name, shown],
        )
        assert visible.startswith(name.split(" ")[0]), (name, visible)  # "nu2=0" survives the cut
    assert page.get_by_role("heading", name="Runs").is_visible()


def test_datasets_column_shows_each_runs_dataset_and_protocol(page, server, store):
    _, experiment_id, runs = store
    open_runs(page, server, experiment_id)
    for run in runs:
        (given,) = run.inputs.dataset_inputs
        assert given.dataset.digest == run.data.tags["dataset_sha256"][:16]
        assert [(t.key, t.value) for t in given.tags] == [("mlflow.data.context", "ssl")]
    digest = runs[0].inputs.dataset_inputs[0].dataset.digest
    column = page.get_by_text(f"emotions ({digest})", exact=True)
    column.first.wait_for()
    assert column.count() == len(runs)
    row = page.locator(".ag-row", has=column.first).first
    assert row.get_by_text(re.compile("^ssl$", re.IGNORECASE)).count() == 1  # the context: the protocol
    close_assistant(page)
    shots = os.environ.get("MLGRAPH_UI_SCREENSHOTS")
    if shots:
        page.screenshot(path=Path(shots) / "mlflow_datasets_column.png")


def test_swept_parameter_shown_as_a_column(page, server, store):
    _, experiment_id, runs = store
    open_runs(page, server, experiment_id)
    page.get_by_role("button", name="Columns").click()
    page.get_by_placeholder("Search columns").fill("method.nu2")
    box = page.locator(".du-bois-light-tree-treenode", has_text="method.nu2").locator(
        ".du-bois-light-tree-checkbox"
    )
    if "checked" not in box.get_attribute("class"):
        box.click()
    page.keyboard.press("Escape")
    page.locator(".ag-body-horizontal-scroll-viewport").evaluate("e => e.scrollLeft = e.scrollWidth")
    column = '.ag-cell[col-id="params.`method.nu2`"]'
    page.locator(column).first.wait_for()
    shown = {}
    for run in runs:  # a row is split into pinned and scrolling parts that share its row-index
        index = page.locator(".ag-row", has_text=run.info.run_name).first.get_attribute("row-index")
        shown[run.info.run_name] = page.locator(f'.ag-row[row-index="{index}"] {column}').inner_text().strip()
    assert shown == {r.info.run_name: r.data.params["method.nu2"] for r in runs}


def test_metric_chart_steps_are_labelling_rates(page, server, store):
    _, experiment_id, runs = store
    run = runs[0]
    page.goto(f"{server}/#/experiments/{experiment_id}/runs/{run.info.run_id}/model-metrics")
    key = "avg_precision"
    page.get_by_placeholder("Search metric charts").fill(key)  # charts below the fold are drawn lazily
    card = page.locator(
        '[data-testid="experiment-view-compare-runs-card"]', has=page.locator(f'h4[title="{key}"]')
    )
    card.locator(".xtick").first.wait_for()
    ticks = [t.strip() for t in card.locator(".xtick text").all_text_contents()]
    steps = sorted(m.step for m in mlflow.MlflowClient(store[0]).get_metric_history(run.info.run_id, key))
    assert steps == [10, 50]  # labelling rates 10 % and 50 %
    assert "10" in ticks and "50" in ticks, ticks
    assert card.locator(".xtitle").text_content() == "Step"
    # the top level holds the summaries and the per-rate series; other series have prefixes
    top = [k for k in run.data.metrics if "/" not in k]
    per_rate = {*METRICS, *(f"{m}_std" for m in METRICS)}
    assert top and all(k.endswith("_overall") or k in ("n_trials", "n_failed") or k in per_rate for k in top)


def test_sweep_compared_by_its_swept_parameter(page, server, store, tmp_path):
    """The compare view's parallel-coordinates plot: method.nu2 against the overall average
    precision and macro-F1; its screenshot is the README's picture."""
    _, experiment_id, runs = store
    ids = ",".join(f'"{r.info.run_id}"' for r in runs)
    page.goto(
        f'{server}/#/compare-runs?runs=[{ids}]&experiments=["{experiment_id}"]&workflowType=machine_learning'
    )
    plot = page.locator(".js-plotly-plot").first
    plot.wait_for()
    metrics = page.locator(".du-bois-light-select").nth(1)  # after Parameters
    metrics.locator(".du-bois-light-select-selection-item-remove").first.click()  # the default: a last value
    for name in ("avg_precision_overall", "macro_f1_overall"):
        metrics.click()
        page.keyboard.type(name)
        page.keyboard.press("Enter")
    page.keyboard.press("Escape")
    plot.get_by_text("macro_f1_overall").wait_for()
    assert plot.get_by_text("method.nu2").count() and plot.get_by_text("avg_precision_overall").count()
    close_assistant(page)
    path = Path(os.environ.get("MLGRAPH_UI_SCREENSHOTS", tmp_path)) / "mlflow_sweep_compare.png"
    page.screenshot(path=path)
    assert path.stat().st_size > 10_000


REPRODUCE = [
    "000",
    "--quick",
    "hydra.sweeper.params.dataset=emotions",
    "hydra.sweeper.params.method='mlknn,gfhf,mlmr,mlmrrw'",
    "protocol.repeats=2",
    "protocol.rates=[0.1,0.3,0.5]",
]


def test_reproduction_report_opens_offline_with_every_figure(page, tmp_path):
    """A small ``mlgraph reproduce`` report, opened from its file in a browser that may fetch
    nothing: every figure decodes, the verdicts and the provenance are there."""
    env = {**os.environ, "MLGRAPH_OUTPUT_DIR": str(tmp_path)}
    proc = subprocess.run(
        [sys.executable, "-m", "mlgraph", "reproduce", *REPRODUCE],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = tmp_path / "reports" / "reproduce" / "paper000-quick" / "report.html"
    view = page.context.browser.new_page()  # the module's browser (one Playwright per process)
    fetched = []

    def offline(route):  # the file itself and its data URIs load; anything else would fail
        fetched.append(route.request.url)
        local = route.request.url.startswith(("file:", "data:"))
        route.continue_() if local else route.abort()

    view.route("**/*", offline)
    view.goto(report.as_uri())
    images = view.locator("figure img")
    assert images.count() >= 4  # Fig. 1 and three CD diagrams
    assert all(images.nth(i).evaluate("i => i.complete && i.naturalWidth > 0") for i in range(images.count()))
    assert not [u for u in fetched if not u.startswith(("file:", "data:"))]
    assert view.get_by_text("The paper's stated conclusions").count() == 1
    assert view.locator(".badge").count() > 10 and view.get_by_text("Provenance").count() == 1
    view.close()
