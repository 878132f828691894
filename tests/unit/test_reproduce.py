"""``mlgraph reproduce``: the transcribed paper tables and stated conclusions against the papers'
text, the verdict rules and the precision their evidence is printed to, the plan (presets,
missing data sets, stand-ins) and the report's sections."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from mlgraph.evaluation.figures import STYLES
from mlgraph.evaluation.metrics import DUAL_SET_METRICS, METRICS
from mlgraph.reporting import reproduce as P
from mlgraph.reporting.reproduce import page, papers, presets


def _paper_text(paper: str) -> str | None:
    for directory in Path(__file__).resolve().parents:
        found = sorted((directory / "shared" / "papers").glob(f"{paper}_*.txt"))
        if found:
            return found[0].read_text()
    return None


def _normal(text: str) -> str:
    return re.sub(r"\s+", " ", text)


# --------------------------------------------------------------------------
# Transcriptions
# --------------------------------------------------------------------------
def test_paper001_tables_are_complete_and_in_range():
    table = P.paper_table("001")
    assert len(table) == 63 + 72  # Table 2 without its nine N/A cells, Table 3 in full
    assert not table.duplicated(["table", "dataset", "method", "B", "metric"]).any()
    assert set(table.metric) == set(DUAL_SET_METRICS)
    assert set(table.dataset) == {"calligrapher_font", "brand_type", "frequency_gender"}
    assert table["mean"].between(0, 1).all() and table["std"].between(0, 0.2).all()
    fg = table[(table.dataset == "frequency_gender") & (table.table == 2)]
    assert fg.set_index(["method", "metric"]).loc[("dsml", "accuracy_all"), ["mean", "std"]].tolist() == [
        0.822,
        0.0082,
    ]


def test_paper001_tables_match_the_paper_text_cell_by_cell():
    """Each row of Tables 2 and 3, written back in the paper's layout (N/A where absent), is a
    line of its text."""
    text = _paper_text("001")
    if text is None:
        pytest.skip("shared/papers/001_*.txt not reachable")
    lines = set(text.splitlines())
    table = P.paper_table("001")
    tags = {"accuracy_a": "Accy.-a", "accuracy_b": "Accy.-b", "accuracy_all": "Accy.-all"}
    names = {"calligrapher_font": "Cal.-Font", "brand_type": "Brand-Type", "frequency_gender": "Freq.-Gndr."}
    columns = {
        2: ["dsml", "independent", "cooccurrence", "stacking", "mlknn", "mlrbf", "bpmll", "ranksvm"],
        3: ["1.00", "1.01", "1.02", "1.03", "1.05", "1.10", "1.15", "1.20"],
    }
    checked = 0
    for (number, dataset, metric), part in table.groupby(["table", "dataset", "metric"]):
        key = part.set_index("method" if number == 2 else "B")
        cells = []
        for column in columns[number]:
            if column in key.index:
                mean, std = key.loc[column, ["mean", "std"]]
                cells.append(f"{mean:.4f}".lstrip("0") + " \\pm " + f"{std:.4f}".lstrip("0"))
                checked += 1
            else:
                cells.append("N/A")
        first = f"<i>{names[dataset]}</i>" if metric == "accuracy_a" else ""
        assert "\t".join([first, f"<i>{tags[metric]}</i>", *cells]) in lines, (number, dataset, metric)
    assert checked == 135


@pytest.mark.parametrize("paper", ["000", "001", "002", "004"])
def test_every_stated_conclusion_is_quoted_from_the_paper_and_checkable(paper):
    spec = P.paper_claims(paper)
    text = _paper_text(paper)
    methods = (
        set(STYLES)
        | {"reuse", "no reuse"}
        | {f"B={b:.2f}" for b in (1, 1.01, 1.02, 1.03, 1.05, 1.1, 1.15, 1.2)}
    )
    all_notes = P.notes()
    kinds = {"friedman", "posthoc", "order", "similar", "increases", "significant", "share", "suits"}
    assert set(P.CLAIM_KINDS) == kinds
    for claim in spec["claim"]:
        if text is not None:
            assert _normal(claim["quote"]) in _normal(text), claim["quote"]
        assert claim["kind"] in kinds and claim.get("note", next(iter(all_notes))) in all_notes
        assert set(claim.get("metrics", spec["metrics"])) <= set(METRICS) | set(DUAL_SET_METRICS)
        named = [claim.get(k, []) for k in ("winners", "losers", "better", "not_better", "methods")]
        named = [m for v in named if v not in ("others", "all") for m in ([v] if isinstance(v, str) else v)]
        assert set(named) <= methods, claim["quote"]
        assert claim.get("how", "every") in ("every", "most", "mean")


def test_notes_are_complete():
    for note_id, note in P.notes().items():
        assert note["paper"] in P.PAPERS and note["title"] and len(note["text"]) > 50, note_id
    assert P.cell_notes("002", "cal500", "ml2", "avg_precision") == ["cal500-overfit", "ml2-settings"]
    assert "hard-output-baselines" in P.cell_notes("002", "yeast", "br", "coverage_norm")
    assert "feature-subset" in P.cell_notes("002", "tmc2007-500", "ecc", "avg_precision")


# --------------------------------------------------------------------------
# Verdicts
# --------------------------------------------------------------------------
def test_cell_verdict_is_within_the_spread_of_a_difference_of_two_repetitions():
    # |0.760 - 0.765| = 0.005 <= sqrt(0.004² + 0.003²) = 0.005
    assert P.cell_verdict(0.760, 0.004, 0.765, 0.003, 3) == ("reproduced", pytest.approx(0.005))
    assert P.cell_verdict(0.759, 0.004, 0.765, 0.003, 3)[0] == "not reproduced"
    # one repetition: only the paper's spread; no spread at all: the rounding of 3 decimals
    assert P.cell_verdict(0.7601, np.nan, 0.765, 0.005, 3)[0] == "reproduced"
    assert P.cell_verdict(0.7654, np.nan, 0.765, np.nan, 3) == ("reproduced", pytest.approx(0.0005))
    assert P.cell_verdict(0.7656, np.nan, 0.765, np.nan, 3)[0] == "not reproduced"
    assert P.cell_verdict(np.nan, np.nan, 0.765, 0.005, 3)[0] == "no run"


def _scores(values: dict, metric="avg_precision", std=0.01) -> pd.DataFrame:
    """{method: [score at 5 %, 10 %, 15 %]} as a scores frame."""
    rows = [
        ("d", "", method, metric, float(x), v, std)
        for method, series in values.items()
        for x, v in zip((5, 10, 15), series, strict=True)
    ]
    return P.scores_frame(rows)


def test_order_claims_every_most_mean_any_and_others():
    scores = _scores({"a": [0.7, 0.8, 0.5], "b": [0.6, 0.7, 0.6], "c": [0.5, 0.5, 0.4]})
    claim = {"winners": ["a"], "losers": "others"}
    assert P.check_order(scores, "avg_precision", {**claim, "how": "every"})[0] == P.NOT_HELD
    assert P.check_order(scores, "avg_precision", {**claim, "how": "most"})[0] == P.HELD  # 2 of 3
    assert P.check_order(scores, "avg_precision", {**claim, "how": "mean"})[0] == P.HELD  # 0.667 > 0.633
    assert P.check_order(scores, "avg_precision", {**claim, "how": "every", "at": [5, 10]})[0] == P.HELD
    assert (
        P.check_order(scores, "avg_precision", {"winners": ["a", "b"], "any": True, "losers": ["c"]})[0]
        == P.HELD
    )
    assert (
        P.check_order(scores, "avg_precision", {"winners": "others", "losers": ["c"], "at": ">=10"})[0]
        == P.HELD
    )
    # a loss (lower is better) turns the order round; ties go against the claim
    assert (
        P.check_order(
            scores.assign(metric="hamming_loss"),
            "hamming_loss",
            {"winners": ["c"], "losers": ["b"], "how": "every"},
        )[0]
        == P.HELD
    )
    tie = _scores({"a": [0.5, 0.5, 0.5], "b": [0.5, 0.5, 0.5]})
    assert P.check_order(tie, "avg_precision", {"winners": ["a"], "losers": ["b"]})[0] == P.NOT_HELD
    assert P.check_order(scores, "avg_precision", {"winners": ["zz"], "losers": ["a"]})[0] == P.NO_DATA


def test_similar_and_share_claims():
    scores = _scores({"a": [0.70, 0.71, 0.72], "b": [0.71, 0.72, 0.75]}, std=0.01)
    # |diff| ≤ sqrt((0.01² + 0.01²) / 2) = 0.01 at 5 % and 10 %, not at 15 %
    assert P.check_similar(scores, {"methods": ["a", "b"], "at": [5, 10]})[0] == P.HELD
    assert P.check_similar(scores, {"methods": ["a", "b"]})[0] == P.NOT_HELD
    cases = P.scores_frame(
        [
            (d, "", m, "avg_precision", np.nan, v, 0.01)
            for d, vals in {"d1": (0.8, 0.7), "d2": (0.6, 0.6), "d3": (0.5, 0.7)}.items()
            for m, v in zip("ab", vals, strict=True)
        ]
    )
    assert P.share_of_wins(cases, {"winner": "a"}, ["d1", "d2", "d3"], decimals=3) == (2, 3)  # a tie counts
    assert P.share_of_wins(cases, {"winner": "a"}, ["d1", "d2", "d3"], decimals=None) == (1, 3)


# --------------------------------------------------------------------------
# The plan and bad input
# --------------------------------------------------------------------------
def test_an_unknown_paper_is_one_paragraph_naming_the_papers(capsys):
    assert P.main(["003"]) == 2
    err = capsys.readouterr().err
    assert "no paper '003'" in err and "000: ML-MR" in err and "004: GMBA" in err and "\n" not in err.strip()
    assert P.paper_spec("0").id == "000"


def test_plan_lists_missing_data_with_the_fetch_command_and_uses_stand_ins(monkeypatch):
    here = {"emotions", "scene", "yeast", "mediamill-small"}
    monkeypatch.setattr(presets, "missing_files", lambda d: [] if d in here else [f"{d}.arff"])
    plan = P.make_plan(P.paper_spec("000"), quick=True, overrides=["seed=1"])
    assert plan.experiment == "reproduce-000-quick"
    (mediamill,) = plan.missing
    assert mediamill.dataset == "mediamill" and mediamill.stand_in == "mediamill-small"
    assert mediamill.fetch == "python -m mlgraph.data mediamill --fetch"
    first, second = (args for _, args in plan.commands)
    assert "hydra.sweeper.params.dataset='emotions,scene,yeast'" in first and "resume=true" in first
    assert "hydra.sweeper.params.dataset='mediamill-small'" in second
    assert first[-2:] == ["protocol.repeats=2", "seed=1"]  # the user's overrides come last and win
    assert plan.used["mediamill"] == "mediamill-small"
    here.discard("mediamill-small")
    plan = P.make_plan(P.paper_spec("000"), quick=False)
    assert len(plan.commands) == 1 and "protocol.repeats=100" in plan.commands[0][1]
    assert "its cells have no run" in plan.missing[0].why


def test_quick_leaves_out_the_slow_data_sets_and_says_so(monkeypatch):
    monkeypatch.setattr(presets, "missing_files", lambda d: [])
    plan = P.make_plan(P.paper_spec("002"), quick=True)
    ((_, args),) = plan.commands
    assert "hydra.sweeper.params.dataset='cal500,langlog,enron,scene,yeast,slashdot'" in args
    left_out = {m.dataset for m in plan.missing if "--quick" in m.why}
    assert left_out == {"corel5k", "rcv1subset1-500", "bibtex", "tmc2007-500"}
    assert {"image", "rcv1-s2"} <= {m.dataset for m in plan.missing if m.fetch is None}
    only = P.make_plan(P.paper_spec("000"), quick=True, overrides=["hydra.sweeper.params.dataset=emotions"])
    assert len(only.commands) == 1 and "hydra.sweeper.params.dataset='emotions'" in only.commands[0][1]


def test_a_paper_whose_data_set_is_missing_runs_nothing_but_says_why(monkeypatch):
    monkeypatch.setattr(presets, "missing_files", lambda d: ["voice.csv"])
    plan = P.make_plan(P.paper_spec("001"), quick=True)
    assert plan.commands == []
    assert any(m.dataset == "frequency_gender" and "voice --fetch" in m.fetch for m in plan.missing)


# --------------------------------------------------------------------------
# The precision of the evidence
# --------------------------------------------------------------------------
def _printed(value: float, decimals: int) -> float:
    return float(f"{value:.{decimals}f}")


def test_compared_numbers_print_to_the_decimals_that_decide_them():
    assert P.decisive_decimals(0.8494, 0.8489) == (4, 4)  # both read 0.849 at three decimals
    assert P.decisive_decimals(0.8494, 0.7841) == (3, 3)
    assert P.decisive_decimals(0.5, 0.5) == (3, 3)  # a tie prints as one
    assert P.decisive_decimals(0.12349, 0.1235) == (5, 5)  # 0.1235 against 0.1235 at four
    assert P.decisive_decimals(43.5, 29.35, (1, 2)) == (1, 2)
    assert P.decisive_decimals(np.nan, 0.5) == (3, 3)
    rng = np.random.default_rng(0)
    for _ in range(500):
        a = rng.uniform(0, 1)
        b = a + rng.choice([-1, 1]) * rng.uniform(1, 10) * 10.0 ** -rng.integers(2, 7)
        da, db = P.decisive_decimals(a, b)
        assert np.sign(_printed(a, da) - _printed(b, db)) == np.sign(a - b), (a, b)
        if da > 3:  # one decimal fewer would not show the order
            assert np.sign(_printed(a, da - 1) - _printed(b, db - 1)) != np.sign(a - b), (a, b)


def test_an_order_claim_shows_the_digits_its_verdict_turns_on():
    close = _scores({"a": [0.84941, 0.7, 0.7], "b": [0.84938, 0.6, 0.6]})
    claim = {"winners": ["a"], "losers": ["b"], "at": [5]}
    assert P.check_order(close, "avg_precision", claim) == (P.HELD, "5 %: a 0.84941 vs b 0.84938")
    reverse = {"winners": ["b"], "losers": ["a"], "at": [5]}
    assert P.check_order(close, "avg_precision", reverse) == (P.NOT_HELD, "5 %: b 0.84938 vs a 0.84941")
    tie = _scores({"a": [0.849, 0.7, 0.7], "b": [0.849, 0.6, 0.6]})
    assert P.check_order(tie, "avg_precision", claim) == (P.NOT_HELD, "5 %: a 0.849 vs b 0.849")
    # similar: the range 0.0101 exceeds the std 0.0100, which three decimals would hide
    pair = _scores({"a": [0.7, 0.7, 0.7], "b": [0.7101, 0.7, 0.7]}, std=0.01)
    assert P.check_similar(pair, {"methods": ["a", "b"], "at": [5]}) == (
        P.NOT_HELD,
        "5 %: range 0.0101 vs std 0.0100",
    )


def test_a_cell_shows_its_difference_against_the_tolerance_it_is_held_to():
    verdict, tolerance = P.cell_verdict(0.7656, np.nan, 0.765, np.nan, 3)
    assert (verdict, tolerance) == ("not reproduced", pytest.approx(0.0005))
    row = pd.Series(
        {
            "paper_mean": 0.765,
            "paper_std": np.nan,
            "ours_mean": 0.7656,
            "ours_std": np.nan,
            "difference": 0.7656 - 0.765,
            "tolerance": tolerance,
            "verdict": verdict,
            "notes": "krr,unknown",
        }
    )
    shown = papers.cell(row, 3)
    assert (shown["ours"], shown["paper"], shown["difference"], shown["tolerance"]) == (
        "0.7656",
        "0.765",
        "+0.0006",
        "0.0005",
    )
    assert shown["css"] == "bad" and [i for i, _ in shown["notes"]] == ["krr"]
    wide = papers.cell(
        pd.Series({**row, "ours_mean": 0.785, "ours_std": 0.0041, "difference": 0.02, "tolerance": 0.0064}), 3
    )
    assert (wide["ours"], wide["difference"], wide["tolerance"]) == ("0.785 ± 0.004", "+0.020", "0.006")


def test_means_table_marks_each_rows_best_in_the_metrics_direction():
    rows = [
        ("d", "", "a", "avg_precision", 5.0, 0.84941, 0.01),
        ("d", "", "b", "avg_precision", 5.0, 0.84938, 0.01),
        ("d", "", "a", "hamming_loss", 5.0, 0.1, 0.01),
        ("d", "", "b", "hamming_loss", 5.0, 0.2, 0.01),
        ("d", "", "a", "hamming_loss", 10.0, 0.3, 0.01),  # averaged over x: 0.2 against 0.2 + a tie
        ("d", "", "b", "hamming_loss", 10.0, 0.2, 0.01),
    ]
    table = papers.means_table(
        P.scores_frame(rows), {"metric": ["hamming_loss", "avg_precision"]}, lambda i: i[0], "c", ["b", "a"]
    )
    assert [name for name, _ in table["methods"]] == ["b", "a"]
    assert [row["label"] for row in table["rows"]] == ["hamming_loss", "avg_precision"]
    assert table["rows"][0]["values"] == [("0.200", True), ("0.200", True)]
    assert table["rows"][1]["values"] == [("0.84938", False), ("0.84941", True)]


# --------------------------------------------------------------------------
# The report's sections
# --------------------------------------------------------------------------
def test_every_conclusion_has_the_table_or_figure_it_is_about():
    assert papers.place("Case I (Emotions), Table 2") == "Table 2"
    assert papers.place("Case III (Yeast), conclusion 3") == "Fig. 3"
    assert papers.place("Case IV (Mediamill), conclusion 1") == "Fig. 4"
    assert papers.place("Study on Model-Reuse Mechanism, Fig. 3") == "Fig. 3"
    assert papers.place("4.4 Results") == "4.4 Results"
    places = {papers.place(c["where"]) for c in P.paper_claims("000")["claim"]}
    figs = {f"Fig. {i}" for i in range(1, 5)}
    tables = {f"Table {t}" for pair in papers.TABLES_000.values() for t in pair}
    assert places == figs | tables | {"Conclusion"}


def _verdict(verdict, quote="A < B \\(F_{R}\\)"):
    claim = {"where": "Case I (Emotions), conclusion 1", "quote": quote, "note": "krr"}
    return P.Verdict(claim, "a above b", verdict, "a 0.5 vs b 0.4")


def test_a_section_is_open_only_where_something_does_not_hold():
    from mlgraph.reporting.html import render

    def shown(*verdicts, cells=None):
        part = papers.Part("Fig. 1", "emotions <curves>", verdicts=list(verdicts))
        if cells is not None:
            part.cells = pd.DataFrame({"verdict": cells})
        context = page.part_context(part)
        return context, render("reproduce_part.html.j2", part=context)

    context, html = shown(_verdict(P.HELD), _verdict(P.NO_DATA))
    assert re.search(r"<details class=\"part\" id=\"part-fig-1\">", html)
    assert context["conclusions"] == {"good": 1, "bad": 0, "none": 1}
    assert "emotions &lt;curves&gt;" in html and "“A &lt; B F_R”" in html
    assert "#note-krr" not in html  # a conclusion that holds needs no note
    context, html = shown(_verdict(P.HELD), _verdict(P.NOT_HELD))
    assert re.search(r"<details class=\"part\" id=\"part-fig-1\" open>", html) and "#note-krr" in html
    context, html = shown(cells=["reproduced", "not reproduced", "not available", "no run"])
    assert context["numbers"] == {"good": 1, "bad": 1, "none": 2} and context["open"]
