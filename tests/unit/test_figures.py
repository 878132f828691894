"""Publication figures: every figure type written as PNG (≥ 200 dpi), SVG and PDF, each method in
its one fixed colour and marker (``report.STYLES``) in every figure, axes and titles in words."""

from __future__ import annotations

import re
import subprocess
import sys
import threading
import xml.etree.ElementTree as ET
from pathlib import Path

import matplotlib.colors as mcolors
import numpy as np
import pandas as pd
import pytest
from PIL import Image

from mlgraph.evaluation import figures as R

PAPER000 = list(R.PAPER000)
HERE = Path(__file__).resolve().parent


def _summary(offset: float, metrics=R.FIG1_METRICS) -> pd.DataFrame:
    steps = np.arange(5, 55, 5)
    frame = pd.DataFrame({"step": steps})
    for metric in metrics:
        frame[metric] = 0.6 + offset + steps / 500
        frame[f"{metric}_std"] = 0.01
    return frame


def _lines(fig) -> dict[str, tuple]:
    """(colour, marker, line style) of every labelled data line of every panel, by label."""
    drawn = {}
    for ax in fig.axes:
        lines = [(c.get_label(), c.lines[0]) for c in ax.containers]  # error bars: their data line
        lines += [(line.get_label(), line) for line in ax.get_lines()]
        for label, line in lines:
            if not label.startswith("_"):
                drawn.setdefault(label, set()).add(
                    (mcolors.to_hex(line.get_color()).upper(), line.get_marker(), line.get_linestyle())
                )
    return drawn


def _expected(name: str) -> tuple:
    style = R.method_style(name)
    linestyle = {"-": "-", "--": "--", ":": ":", "-.": "-."}[style["linestyle"]]
    return (style["color"].upper(), style["marker"], linestyle)


def _check_files(paths) -> None:
    assert sorted(p.suffix for p in paths) == [".pdf", ".png", ".svg"]
    for path in paths:
        assert path.stat().st_size > 1000, path
    png, svg, pdf = (next(p for p in paths if p.suffix == s) for s in (".png", ".svg", ".pdf"))
    assert min(Image.open(png).info["dpi"]) >= 199.5
    assert ET.parse(svg).getroot().tag.endswith("svg")
    assert pdf.read_bytes().startswith(b"%PDF")


def _words(fig) -> list[str]:
    texts = [fig._suptitle.get_text()] if fig._suptitle else []
    for ax in fig.axes:
        texts += [ax.get_xlabel(), ax.get_ylabel(), ax.get_title()]
    return [t for t in texts if t]


def test_style_map_gives_each_method_of_a_paper_its_own_colour_and_marker():
    for names in (R.PAPER000, R.PAPER002, {**R.PAPER001, "mlknn": ""}, R.PAPER004):
        styles = [R.STYLES[n] for n in names if n not in ("br_knn", "cc_knn")]
        assert len({s[0] for s in styles}) == len(styles), names
        assert len({s[1] for s in styles}) == len(styles), names
    for key in R.STYLES:  # a display name draws as its key
        assert R.method_style(R.method_label(key)) == R.method_style(key)
    assert R.method_style("DSML B=1.05 model_reuse=False")["color"] == R.STYLES["dsml"][0]
    assert R.method_style("my_method") == R.method_style("my_method")  # fixed fallback


def test_metric_words_never_show_raw_keys():
    for metric in [*R.TITLES, "coverage_norm", "avg_precision"]:
        assert "_" not in R.metric_words(metric)
    assert R.metric_words("avg_precision") == "average precision"
    assert R.metric_words("micro_f1") == "micro-F1"


def test_curves_against_the_rate_in_every_format_with_fixed_styles(tmp_path):
    # ML-MR and ML-MRRW equal: still two distinguishable lines (marker, line style, offset)
    summaries = {R.method_label(m): _summary(0.01 * (i % 3)) for i, m in enumerate(PAPER000)}
    summaries["ML-MR"] = summaries["ML-MRRW"].copy()
    fig = R.plot_metrics_vs_rate(summaries, title="7 methods on emotions")
    drawn = _lines(fig)
    assert drawn == {R.method_label(m): {_expected(m)} for m in PAPER000}
    mr, mrrw = (fig.axes[0].containers[i].lines[0] for i in (5, 6))
    assert not np.allclose(mr.get_xdata(), mrrw.get_xdata())  # shifted apart
    assert {"labelling rate (%)", "average precision", "micro-F1", "macro-F1"} <= set(_words(fig))
    _check_files(R.save_figure(fig, tmp_path / "curves.png"))


def test_a_method_keeps_its_colour_from_one_figure_to_the_next(tmp_path):
    alone = _lines(R.plot_metrics_vs_rate({"mlknn": _summary(0)}))
    among = _lines(R.plot_metrics_vs_rate({"ML-MRRW": _summary(0.02), "MLkNN": _summary(0)}))
    assert alone["mlknn"] == among["MLkNN"] == {_expected("mlknn")}
    scores = pd.DataFrame({R.method_label(m): np.arange(6) + i for i, m in enumerate(PAPER000)})
    fig = R.cd_figure(scores, 0.05, "emotions: Average precision")
    colours = {
        t.get_text().split(" (")[0].split(") ")[-1]: mcolors.to_hex(t.get_color()).upper()
        for t in fig.axes[0].texts
        if "(" in t.get_text() and "CD" not in t.get_text()
    }
    assert colours == {R.method_label(m): R.STYLES[m][0].upper() for m in PAPER000}
    _check_files(R.save_figure(fig, tmp_path / "cd.png"))


def test_rounds_draw_reuse_solid_and_no_reuse_dotted(tmp_path):
    curve = pd.DataFrame(index=pd.RangeIndex(1, 11, name="round"))
    for metric in ("accuracy_a", "accuracy_b", "accuracy_all"):
        curve[metric], curve[f"{metric}_std"] = 0.8, 0.01
    fig = R.plot_rounds(
        {"DSML B=1.05": curve, "DSML B=1.05 model_reuse=False": curve - 0.01},
        panels={"DSML B=1.05": "B=1.05", "DSML B=1.05 model_reuse=False": "B=1.05"},
    )
    drawn = _lines(fig)
    colour, marker, _ = _expected("dsml")
    assert drawn == {
        "DSML B=1.05": {(colour, marker, "-")},
        "DSML B=1.05 model_reuse=False": {(colour, marker, ":")},
    }
    assert "boosting round t" in _words(fig) and "accuracy-all" in _words(fig)
    _check_files(R.save_figure(fig, tmp_path / "rounds.png"))


def test_fraction_curves_one_style_per_selector_and_a_black_all_features_line(tmp_path):
    rows = []
    for method in ["br_knn", "cc_knn"]:
        rows.append({"tags.method": method, "tags.selector": "none", "fraction": 1.0})
        for i, selector in enumerate(["spec", "gmba", "mlfs", "mlrf"]):
            for fraction in (0.1, 0.5, 0.9):
                rows.append({"tags.method": method, "tags.selector": selector, "fraction": fraction, "i": i})
    runs = pd.DataFrame(rows)
    for metric in R.FS_METRICS:
        runs[f"metrics.{metric}"] = 0.5 + 0.01 * runs.get("i", 0).fillna(0)
        runs[f"metrics.{metric}_std"] = 0.01
    fig = R.plot_fraction_curves(runs, title="Feature selection on emotions")
    drawn = _lines(fig)
    assert drawn == {R.method_label(s): {_expected(s)} for s in ("gmba", "mlfs", "mlrf", "spec", "none")}
    assert {"features kept (%)", "Hamming loss", "BR-3NN"} <= set(_words(fig))
    _check_files(R.save_figure(fig, tmp_path / "fractions.png"))


def _vector_sizes(svg, pdf) -> list[float]:
    """(width, height) in inches of an SVG and of a PDF's media box."""
    root = ET.parse(svg).getroot()
    box = re.search(rb"/MediaBox \[ *0 0 ([\d.]+) ([\d.]+) *\]", pdf.read_bytes())
    return [float(root.get(k).removesuffix("pt")) / 72 for k in ("width", "height")] + [
        float(v) / 72 for v in box.groups()
    ]


def test_vector_formats_keep_the_tight_box_a_tight_save_gives_them(tmp_path):
    """save_figure lays the figure out and finds its tight box once, for the PNG, and keeps both
    for the SVG and PDF: their sizes are those of saving each with bbox_inches="tight"."""
    summaries = {m: _summary(i) for i, m in enumerate(PAPER000[:3])}
    paths = R.save_figure(R.plot_metrics_vs_rate(summaries, title="t"), tmp_path / "once.png")
    fig = R.plot_metrics_vs_rate(summaries, title="t")
    for fmt in ("svg", "pdf"):
        fig.savefig(tmp_path / f"each.{fmt}", bbox_inches="tight")
    ours = _vector_sizes(*(p for s in (".svg", ".pdf") for p in paths if p.suffix == s))
    each = _vector_sizes(tmp_path / "each.svg", tmp_path / "each.pdf")
    assert ours == pytest.approx(each, abs=0.005)


FORKED_SAVE = """
import sys
from pathlib import Path
from test_figures import PAPER000, R, _summary, _vector_sizes  # this file, from its folder
forks, real_fork = [], R.os.fork
R.os.fork = lambda: forks.append(1) or real_fork()
out = Path(sys.argv[1])
summaries = {m: _summary(i) for i, m in enumerate(PAPER000[:3])}
forked = R.save_figure(R.plot_metrics_vs_rate(summaries, title="t"), out / "forked.png")
assert len(forks) == 1 and all(p.is_file() for p in forked), forks
R._fork_writer = lambda *args: None
here = R.save_figure(R.plot_metrics_vs_rate(summaries, title="t"), out / "here.png")
sizes = [_vector_sizes(*(p for s in (".svg", ".pdf") for p in paths if p.suffix == s)) for paths in (forked, here)]
assert len(forks) == 1 and max(abs(a - b) for a, b in zip(*sizes)) < 1e-9, sizes
"""


def test_a_forked_child_writes_the_vector_formats_as_this_process_would(tmp_path):
    """In a fresh interpreter (this one may run other tests' threads, which rule out a fork)."""
    done = subprocess.run(
        [sys.executable, "-c", FORKED_SAVE, str(tmp_path)],
        cwd=HERE,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]


def test_no_fork_while_another_thread_runs(tmp_path, monkeypatch):
    monkeypatch.setattr(R.os, "fork", lambda: pytest.fail("forked beside a thread"))
    release = threading.Event()
    other = threading.Thread(target=release.wait)
    other.start()
    try:
        paths = R.save_figure(R.plot_metrics_vs_rate({"mlmrrw": _summary(0)}, title="t"), tmp_path / "f.png")
    finally:
        release.set()
        other.join()
    assert [p.suffix for p in paths if p.is_file()] == [".png", ".svg", ".pdf"]
