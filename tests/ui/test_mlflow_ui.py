"""The MLflow UI path the README documents, checked in a real headless Chromium.

A small sweep of the real command fills a fresh store; ``mlflow ui`` serves it on a free loopback
port. MLflow 3 opens an experiment in its GenAI view (traces) unless the UI-wide workflow switch
says "Model training": the documented address carries ``?workflowType=machine_learning``.

Needs Chromium (``scripts/install-chromium.sh``, run by the fixture when it is missing) and the
``ui`` extra (playwright, driving that Chromium; no browser download). ``pytest -m ui``.
Set ``MLGRAPH_UI_SCREENSHOT=docs/img/mlflow_sweep_compare.png`` to refresh the README's picture.
"""

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import mlflow
import pytest

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
    assert names == ["mlmrrw-emotions nu2=0", "mlmrrw-emotions nu2=1"]
    for name in names:
        page.get_by_text(name, exact=True).wait_for()
    assert page.get_by_role("heading", name="Runs").is_visible()


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
    card = page.locator(
        '[data-testid="experiment-view-compare-runs-card"]', has=page.locator('h4[title="avg_precision"]')
    )
    card.locator(".xtick").first.wait_for()
    ticks = [t.strip() for t in card.locator(".xtick text").all_text_contents()]
    steps = sorted(
        m.step for m in mlflow.MlflowClient(store[0]).get_metric_history(run.info.run_id, "avg_precision")
    )
    assert steps == [10, 50]  # labelling rates 10 % and 50 %
    assert "10" in ticks and "50" in ticks, ticks
    assert card.locator(".xtitle").text_content() == "Step"


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
    path = Path(os.environ.get("MLGRAPH_UI_SCREENSHOT", tmp_path / "sweep_compare.png"))
    page.screenshot(path=path)
    assert path.stat().st_size > 10_000
