"""Tests for the top of ``mlgraph report`` (:mod:`mlgraph.reporting.report`): the reference it
compares against, the long score table read from runs (:func:`mlgraph.reporting.runs.long_scores`),
the means tables, verdicts and statistics written as Markdown and HTML, and the explained
Friedman and rank-sum tables; on hand-built runs and trial tables, without MLflow."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from omegaconf import OmegaConf

from mlgraph.evaluation import stats
from mlgraph.reporting import paper_layouts as L
from mlgraph.reporting import report as R
from mlgraph.reporting.html import render
from mlgraph.reporting.runs import long_scores


def _trials(shift: float, rates=(0.1, 0.5), reps=4, seed=0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for rate in rates:
        for rep in range(reps):
            ap = 0.6 + 0.2 * rate + shift + 0.005 * rng.standard_normal()
            rows.append(
                {"rate": rate, "repetition": rep, "status": "ok", "avg_precision": ap, "hamming_loss": 1 - ap}
            )
    rows.append(
        {
            "rate": rates[0],
            "repetition": reps,
            "status": "failed",
            "avg_precision": np.nan,
            "hamming_loss": np.nan,
        }
    )
    return pd.DataFrame(rows)


@pytest.fixture
def runs_and_trials():
    methods = {"mlmrrw": 0.05, "mlknn": 0.0, "mine": 0.03, "mlmr": 0.04}
    runs, trials = [], {}
    for d, dataset in enumerate(("emotions", "scene")):
        for m, (method, shift) in enumerate(methods.items()):
            run_id = f"r{d}{m}"
            runs.append(
                {
                    "run_id": run_id,
                    "tags.dataset": dataset,
                    "tags.method": method,
                    "tags.selector": "none",
                    "params.seed": "0",
                    "params.profile.name": "mlgraph",
                }
            )
            trials[run_id] = _trials(shift, seed=10 * d + m)
    return pd.DataFrame(runs), trials


def test_reference_explicit_own_paper_or_first():
    assert R.choose_reference("mlknn", ["mlknn", "mlmrrw"], "x") == ("mlknn", "report.reference")
    assert R.choose_reference(None, ["mlknn", "mine", "mlmrrw"], "x")[0] == "mine"
    ref, why = R.choose_reference(None, ["mine", "yours", "mlmrrw"], "x")
    assert ref == "mine" and "the first of mine, yours" in why
    assert R.choose_reference(None, ["mlknn", "mlmrrw"], "x") == ("mlmrrw", "the paper's own method")
    assert R.choose_reference(None, ["br", "ml2"], "x") == ("ml2", "the paper's own method")
    assert R.choose_reference(None, ["br", "clr"], "x")[0] == "br"
    with pytest.raises(
        R.ReportError,
        match=r"report.reference=gfhf: E has no finished run of 'gfhf'\. Its runs hold the methods mlknn, mlmrrw\.",
    ):
        R.choose_reference("gfhf", ["mlknn", "mlmrrw", "mlknn"], "E")
    assert {"mlmrrw", "mlknn", "ml2", "dsml"} <= R.shipped_methods() and "mine" not in R.shipped_methods()


def test_bad_report_options_are_one_paragraph_naming_the_key():
    base = {"alpha": 0.05, "test": "ttest", "rope": 0.01, "metrics": ["avg_precision"]}
    R._check_options(OmegaConf.create(base))
    for key, value, words in (
        ("test", "sign", "report.test=sign: must be one of ttest, wilcoxon"),
        ("alpha", 2, "report.alpha=2: must be a number in (0, 1)"),
        ("rope", -0.1, "report.rope=-0.1: must be a number ≥ 0"),
        ("metrics", ["f2"], "report.metrics: 'f2' is not a metric the runs record"),
    ):
        with pytest.raises(R.ReportError) as caught:
            R._check_options(OmegaConf.create({**base, key: value}))
        assert str(caught.value).startswith(words)


def test_long_scores_makes_one_block_per_rate_and_pairs_by_seed(runs_and_trials):
    runs, trials = runs_and_trials
    table = long_scores(runs, ["avg_precision", "micro_f1"], trials.__getitem__)
    assert list(table.columns) == ["dataset", "method", "repetition", "avg_precision", "micro_f1"]
    assert list(dict.fromkeys(table.dataset)) == [
        "emotions 10 %",
        "emotions 50 %",
        "scene 10 %",
        "scene 50 %",
    ]
    assert len(table) == 2 * 4 * 2 * 4  # failed trials left out
    assert set(table.repetition) == {"0:0", "0:1", "0:2", "0:3"} and table.micro_f1.isna().all()
    one = runs.iloc[[0]].assign(**{"params.seed": "7"})
    full = {"r00": trials["r00"].assign(rate=1.0)}
    assert set(long_scores(one, ["avg_precision"], full.__getitem__).dataset) == {"emotions"}
    assert set(long_scores(one, ["avg_precision"], full.__getitem__).repetition) == {
        "7:0",
        "7:1",
        "7:2",
        "7:3",
    }


def test_report_top_opens_with_means_then_verdicts_then_statistics(runs_and_trials, tmp_path):
    runs, trials = runs_and_trials
    cfg = OmegaConf.create({"alpha": 0.05, "test": "ttest", "rope": 0.01, "metrics": ["avg_precision"]})
    blocks = R.comparison_blocks(
        runs,
        cfg,
        "mine",
        "your own method",
        ["avg_precision", "hamming_loss", "micro_f1"],
        tmp_path,
        trials.__getitem__,
    )
    text = "\n".join(R.blocks_markdown(blocks, tmp_path))
    assert text.index("## Means") < text.index("## Verdicts") < text.index("## Statistics across data sets")
    assert "### Micro-F1" not in text  # no run has it
    assert "| Average precision ↑ | mine | ML-MRRW | MLkNN | ML-MR |" in text  # the reference first
    assert "- Average precision ↑: mine vs 3 methods on 4 data sets: Friedman rejects equal ranks" in text
    assert "- Hamming loss ↓: mine vs 3 methods on 4 data sets:" in text
    assert "(Iman–Davenport F_F, p = " in text or "(Friedman's χ², p = " in text
    assert "Bayesian signed-rank test (Benavoli et al. 2017), ROPE ± 0.01" in text
    for metric in ("avg_precision", "hamming_loss"):
        assert {p.name for p in (tmp_path / "tables").glob(f"{metric}.*")} == {
            f"{metric}.{s}" for s in ("tex", "md", "html", "csv")
        }
        for name in ("nemenyi", "bonferroni_dunn", "bayesian"):
            assert (tmp_path / "figures" / f"{metric}_{name}.png").stat().st_size > 5_000
            assert f"figures/{metric}_{name}.png" in text
    page = render("report.html.j2", title="t", intro="i", blocks=R._html_blocks(blocks, tmp_path))
    assert page.count("<details>") == page.count("</details>") == 2  # statistics of each metric
    assert page.index("<h2>Means</h2>") < page.index("<h2>Verdicts</h2>") < page.index("<details>")
    assert "data:image/svg+xml;base64," in page and '<table class="comparison">' in page
    for out in (text, page):
        words = out.lower().replace("|", " ").replace("<", " ").replace(">", " ").split()
        assert "nan" not in words and "none" not in words


def test_layout_markdown_becomes_collapsible_html_blocks(tmp_path):
    lines = [
        "## emotions",
        "",
        "Friedman **test** over `rates`",
        "",
        "| a | b |",
        "|---|---|",
        "| **x** | <y> |",
        "- item",
    ]
    blocks = R.markdown_blocks(lines, tmp_path)
    assert [b["kind"] for b in blocks] == ["details", "p", "cells", "list", "end"]
    assert str(blocks[1]["text"]) == "Friedman <strong>test</strong> over <code>rates</code>"
    assert blocks[2]["columns"] == ["a", "b"] and [str(c) for c in blocks[2]["rows"][0]] == [
        "<strong>x</strong>",
        "&lt;y&gt;",
    ]


def test_friedman_and_rank_sum_tables_explain_what_is_undefined():
    same_order = pd.DataFrame({"A": [0.9, 0.8, 0.7], "B": [0.8, 0.7, 0.6], "C": [0.7, 0.6, 0.5]})
    one_block = same_order.iloc[:1]
    table = L.explained_friedman(stats.friedman_table({"avg_precision": same_order, "micro_f1": one_block}))
    assert table.loc["avg_precision", "F_F"] == "diverges: every block ranks the methods in the same order"
    assert table.loc["avg_precision", "reject_H0_iman_davenport"] == table.loc["avg_precision", "F_F"]
    assert math.isfinite(table.loc["avg_precision", "F_critical"])
    assert table.loc["micro_f1", "F_F"] == table.loc["micro_f1", "F_p_value"] == "undefined: 1 block"
    shown = table.astype(str).to_numpy().ravel()
    assert not {"nan", "None"} & set(shown)
    posthoc = L.posthoc_verdicts({"avg_precision": same_order, "hamming_loss": same_order}, "A", 0.05)
    assert list(posthoc.index) == ["B", "C", "CD (N=3)", "CD (paper, N=1)"]
    cd = stats.critical_difference(3, 3)
    assert (
        posthoc.loc["C", "avg_precision"] == f"-6.0: {'A better' if 6 >= cd else 'no significant difference'}"
    )
    assert posthoc.loc["C", "hamming_loss"].startswith("+6.0")  # a loss: A is last
    assert posthoc.loc["CD (N=3)", "avg_precision"] == f"{cd:.2f}"
