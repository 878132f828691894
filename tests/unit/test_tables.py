"""Tests for :mod:`mlgraph.reporting.tables` (a comparison as LaTeX, Markdown, HTML and CSV) and
for the fixed colour of a method mlgraph does not ship."""

from __future__ import annotations

import io
import shutil
import subprocess
import sys

import pandas as pd
import pytest
from markupsafe import Markup

from mlgraph.evaluation import figures
from mlgraph.evaluation.comparison import compare_metric
from mlgraph.reporting import tables as T

FEW = 2_000


@pytest.fixture(scope="module")
def scores() -> pd.DataFrame:
    """Three blocks, ML-MRRW clearly best on two, MLkNN identical to it on one, a user's method
    with a single repetition on one block, and ML² with a name LaTeX must spell."""
    rows = []
    base = {"yeast 10 %": 0.70, "yeast 50 %": 0.78, "scene_a": 0.85}
    shifts = {"mlmrrw": 0.04, "mlknn": 0.0, "mine": 0.02, "ml2": 0.01}
    noise = [0.004, -0.003, 0.002, -0.001, 0.0]
    for dataset, b in base.items():
        for method, shift in shifts.items():
            for r, e in enumerate(noise):
                if method == "mine" and dataset == "scene_a" and r > 0:
                    continue
                value = b + shift + (e if method != "mlknn" or dataset != "scene_a" else 0.0)
                if method == "mlknn" and dataset == "scene_a":
                    value = b + shifts["mlmrrw"] + e  # identical to the reference's scores
                rows.append({"dataset": dataset, "method": method, "repetition": r, "avg_precision": value})
    table = pd.DataFrame(rows)
    table["hamming_loss"] = 1 - table["avg_precision"]
    return table


@pytest.fixture(scope="module")
def ap(scores):
    return compare_metric(scores, "avg_precision", reference="mlmrrw", nsamples=FEW)


@pytest.fixture(scope="module")
def hl(scores):
    return compare_metric(scores, "hamming_loss", reference="mlmrrw", nsamples=FEW)


def _no_nan_none(text: str) -> None:
    lowered = text.lower()
    for word in ("nan", "none"):
        assert not any(
            token.strip(".,;:()|*`\"'<>/") == word
            for token in lowered.replace(">", "> ").replace("<", " <").split()
        ), (word, text[:500])


# --------------------------------------------------------------------------
# Markdown
# --------------------------------------------------------------------------
def test_markdown_layout_bold_marks_and_summary_rows(ap):
    text = T.to_markdown(ap)
    lines = text.splitlines()
    assert lines[0] == "| Average precision ↑ | ML-MRRW | MLkNN | mine | ML² |"  # labels, never codes
    assert lines[1] == "|---|" + "---:|" * 4
    yeast10 = next(line for line in lines if line.startswith("| yeast 10 % |"))
    cells = [c.strip() for c in yeast10.split("|")[2:-1]]
    assert cells[0] == "**0.740 ± 0.003**"  # the reference, best
    assert cells[1] == "0.700 ± 0.003 •" and cells[3] == "0.710 ± 0.003 •"
    scene = [
        c.strip() for c in next(line for line in lines if line.startswith("| scene_a |")).split("|")[2:-1]
    ]
    assert scene[0] == scene[1] == "**0.890 ± 0.003**"  # identical: both bold, no mark
    assert scene[2] == "0.874"  # 0.85 + 0.02 + 0.004, one repetition: no std, no mark
    assert "| *win/tie/loss* | — | 2/1/0 | 2/1/0 | 3/0/0 |" in lines
    ranks = ap.average_ranks
    assert (
        f"| *average rank* | {ranks['mlmrrw']:.2f} | {ranks['mlknn']:.2f} | {ranks['mine']:.2f} | {ranks['ml2']:.2f} |"
        in lines
    )
    assert "identical scores in all 5 paired repetitions (1 cell)" in text
    assert "needs ≥ 2 paired repetitions, got 1 (1 cell)" in text
    assert "Metric profile mlgraph: F1 = 0 (with a warning) for a label never positive nor predicted." in text
    _no_nan_none(text)


def test_direction_arrow_and_best_for_a_loss(hl):
    text = T.to_markdown(hl, profile="mulan")
    assert text.startswith("| Hamming loss ↓ |")
    assert "(lower is better)" in text and "**0.260 ± 0.003**" in text  # 1 - 0.740: the smallest
    assert "Metric profile mulan: MULAN's F1 = 1 for a label never positive nor predicted." in text
    assert "| *win/tie/loss* | — | 2/1/0 |" in text


def test_profile_rule_follows_the_profile_or_the_runs_own_value():
    assert T.profile_rule("mulan").endswith("MULAN's F1 = 1 for a label never positive nor predicted")
    assert (
        T.profile_rule("mlgraph")
        == "metric profile mlgraph: F1 = 0 (with a warning) for a label never positive nor predicted"
    )
    assert "MULAN's F1 = 1" in T.profile_rule("mlgraph", zero_division="1")  # metrics.zero_division=1
    assert T.profile_rule(None).startswith("metric profile unknown: the F1 rule")


# --------------------------------------------------------------------------
# LaTeX
# --------------------------------------------------------------------------
def test_latex_is_booktabs_with_escapes_and_symbols(ap, hl):
    tex = T.to_latex(ap, profile="mulan")
    assert tex.startswith("\\begin{table}[htbp]") and tex.rstrip().endswith("\\end{table}")
    assert tex.count("\\toprule") == tex.count("\\bottomrule") == 1 and tex.count("\\midrule") == 2
    assert "\\begin{tabular}{lcccc}" in tex and "\\label{tab:avg_precision}" in tex
    assert "Average precision $\\uparrow$ & ML-MRRW & MLkNN & mine & ML\\textsuperscript{2} \\\\" in tex
    assert "yeast 10 \\% & \\textbf{0.740 $\\pm$ 0.003} & 0.700 $\\pm$ 0.003 $\\bullet$ &" in tex
    assert "scene\\_a &" in tex and "win/tie/loss & --- & 2/1/0" in tex
    assert "MULAN's F1 = 1 for a label never positive nor predicted" in tex
    assert "$\\bullet$/$\\circ$: ML-MRRW is significantly better/worse" in tex
    assert "Hamming loss $\\downarrow$" in T.to_latex(hl)
    assert "\\label{tab:a-b}" in T.to_latex(ap, label="tab:a b")
    assert "±" not in tex and "•" not in tex and "↑" not in tex  # every symbol is a command
    _no_nan_none(tex)


def test_latex_compiles_with_pdflatex(ap, hl, tmp_path):
    if shutil.which("pdflatex") is None:
        pytest.skip("pdflatex not installed: apt-get install texlive-latex-base texlive-latex-recommended")
    document = T.latex_document([T.to_latex(ap, profile="mulan"), T.to_latex(hl)])
    (tmp_path / "tables.tex").write_text(document, encoding="utf-8")
    done = subprocess.run(
        ["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "tables.tex"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout[-3000:]
    assert (tmp_path / "tables.pdf").read_bytes().startswith(b"%PDF")
    log = (tmp_path / "tables.log").read_text(errors="replace")
    assert "Missing character" not in log and "Undefined control sequence" not in log


# --------------------------------------------------------------------------
# HTML and CSV
# --------------------------------------------------------------------------
def test_html_fragment_is_autoescaped_with_swatches_and_tooltips(scores):
    hostile = scores.replace({"dataset": {"scene_a": "<b>scene</b> & co"}, "method": {"mine": "<i>mine</i>"}})
    comparison = compare_metric(hostile, "avg_precision", reference="mlmrrw", nsamples=FEW)
    html = T.to_html(comparison)
    assert isinstance(html, Markup)
    assert "&lt;b&gt;scene&lt;/b&gt; &amp; co" in html and "<b>scene</b>" not in html
    assert "&lt;i&gt;mine&lt;/i&gt;" in html and "<i>mine</i>" not in html
    assert html.count("<strong>") == 4  # the best of each block, both on the tie
    assert f'style="background: {figures.STYLES["mlmrrw"][0]}"' in html
    assert 'title="identical scores in all 5 paired repetitions"' in html
    assert "<tfoot>" in html and "<th>win/tie/loss</th>" in html
    assert '<p class="small">Average precision ↑ (higher is better): mean ± std' in html
    _no_nan_none(str(html))


def test_csv_is_the_cells_with_reasons_in_place_of_missing_numbers(ap):
    table = pd.read_csv(io.StringIO(T.to_csv(ap)), keep_default_na=False)
    assert list(table.columns) == [
        "dataset", "method", "label", "n", "mean", "std", "best", "mark", "p_value", "average_rank", "win_tie_loss",
    ]  # fmt: skip
    assert len(table) == len(ap.cells)
    row = table[(table.dataset == "yeast 10 %") & (table.method == "mlknn")].iloc[0]
    cell = ap.cells.loc[("yeast 10 %", "mlknn")]
    assert float(row["mean"]) == pytest.approx(cell["mean"]) and float(row["p_value"]) == pytest.approx(
        cell["p_value"]
    )
    assert row["label"] == "MLkNN" and row["mark"] == "•" and row["win_tie_loss"] == "2/1/0"
    single = table[(table.dataset == "scene_a") & (table.method == "mine")].iloc[0]
    assert (
        single["std"] == "needs ≥ 2 repetitions"
        and single["p_value"] == "needs ≥ 2 paired repetitions, got 1"
    )
    assert set(table.loc[table.method == "mlmrrw", "win_tie_loss"]) == {"reference"}
    _no_nan_none(T.to_csv(ap))


def test_write_tables_writes_four_formats_without_nan(hl, tmp_path):
    paths = T.write_tables(hl, tmp_path / "tables", profile="mulan")
    assert {p.name for p in paths.values()} == {f"hamming_loss.{s}" for s in ("tex", "md", "html", "csv")}
    for path in paths.values():
        _no_nan_none(path.read_text(encoding="utf-8"))


def test_a_metric_on_one_block_says_why_ranks_and_tests_are_missing(scores):
    one = compare_metric(scores[scores.dataset == "scene_a"], "avg_precision", reference="mine", nsamples=FEW)
    text = T.to_markdown(one) + T.to_latex(one) + str(T.to_html(one)) + T.to_csv(one)
    assert "needs ≥ 2 paired repetitions, got 1" in text
    _no_nan_none(text)
    gone = compare_metric(scores, "avg_precision", reference="gfhf", nsamples=FEW)
    md = T.to_markdown(gone)
    assert "| *win/tie/loss* | the reference method gfhf has no runs |" in md
    assert "\\multicolumn{4}{l}{the reference method gfhf has no runs}" in T.to_latex(gone)


# --------------------------------------------------------------------------
# A user's method: its own fixed colour and marker
# --------------------------------------------------------------------------
def test_unknown_methods_get_fixed_colours_no_shipped_method_has():
    shipped_colours = {colour for colour, _, _ in figures.STYLES.values()}
    shipped_markers = {marker for _, marker, _ in figures.STYLES.values()}
    assert not set(figures.FALLBACK_COLOURS) & shipped_colours
    assert not set(figures.FALLBACK_MARKERS) & shipped_markers
    names = ["mine", "my_method", "CentroidScorer", "ours", "baseline-x", "proposed"]
    styles = {name: figures.method_style(name) for name in names}
    for style in styles.values():
        assert style["color"] in figures.FALLBACK_COLOURS and style["marker"] in figures.FALLBACK_MARKERS
    # a checksum spreads names over every colour and marker (two names may still share both)
    many = [figures.method_style(f"method_{i}") for i in range(200)]
    assert {s["color"] for s in many} == set(figures.FALLBACK_COLOURS)
    assert {s["marker"] for s in many} == set(figures.FALLBACK_MARKERS)
    assert len({(s["color"], s["marker"]) for s in many}) >= 35  # of 42 pairs
    # the same in another process, whatever its string hashing
    code = "from mlgraph.evaluation.figures import method_style as s; print([s(n)['color'] + s(n)['marker'] for n in %r])"
    seen = {
        subprocess.run(
            [sys.executable, "-c", code % names],
            env={"PYTHONHASHSEED": seed, "PATH": ""},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for seed in ("1", "2")
    }
    assert seen == {str([styles[n]["color"] + styles[n]["marker"] for n in names]) + "\n"}


def test_caption_warns_when_the_signed_rank_test_cannot_reach_alpha(scores):
    few = compare_metric(
        scores[scores.repetition < 3], "avg_precision", reference="mlmrrw", test="wilcoxon", nsamples=FEW
    )
    assert (
        "With 3 repetitions the signed-rank test's smallest p is 0.25: no mark can reach α = 0.05."
        in T.caption(few)
    )
    assert set(few.cells["mark"]) == {""}
    enough = compare_metric(
        scores, "avg_precision", reference="mlmrrw", test="wilcoxon", alpha=0.1, nsamples=FEW
    )
    assert "smallest p" not in T.caption(
        enough
    ) and "Wilcoxon signed-rank test over repetitions, α = 0.1" in T.caption(enough)
