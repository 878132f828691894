"""Tests for paper 002's table report: the transcription of its Tables 2/3 (package data) and
:func:`mlgraph.reporting.paper_layouts.table_report` on hand-built runs (the columns ``latest_runs`` returns)."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from mlgraph.reporting import paper_layouts as L

METHODS = ["ml2", "br", "clr", "ecc", "rakel"]


def _paper_text() -> str | None:
    """Paper 002's text, if the shared papers are reachable from here."""
    for directory in Path(__file__).resolve().parents:
        found = sorted((directory / "shared" / "papers").glob("002_*.txt"))
        if found:
            return found[0].read_text()
    return None


def _paper(dataset: str, method: str, metric: str) -> tuple[float, float]:
    table = L.paper002_tables()
    row = table[(table.dataset == dataset) & (table.method == method) & (table.metric == metric)]
    assert len(row) == 1, (dataset, method, metric)
    return float(row["mean"].iloc[0]), float(row["std"].iloc[0])


def make_runs(rows: list[tuple], **params) -> pd.DataFrame:
    """Runs as ``latest_runs`` returns them: (dataset, method, {metric: (mean, std)}) per row."""
    records = []
    for i, (dataset, method, values) in enumerate(rows):
        record = {
            "run_id": f"run{i}",
            "tags.dataset": dataset,
            "tags.method": method,
            "tags.selector": "none",
            "fraction": 1.0,
            "status": "FINISHED",
            "params.protocol.rates": "[1.0]",
            "params.protocol.test_size": "0.5",
            "params.protocol.repeats": "10",
            **params,
        }
        for metric, (mean, std) in values.items():
            record[f"metrics.{metric}"] = mean
            record[f"metrics.{metric}_std"] = std
        records.append(record)
    return pd.DataFrame(records)


@pytest.fixture
def runs() -> pd.DataFrame:
    return make_runs(
        [
            ("emotions", "br", {"avg_precision": (0.70, 0.02), "hamming_loss": (0.25, 0.01)}),
            ("emotions", "ml2", {"avg_precision": (0.79, 0.01), "hamming_loss": (0.21, 0.01)}),
            ("yeast", "br", {"avg_precision": (0.7401, 0.003), "hamming_loss": (0.190, 0.002)}),
            ("yeast", "ml2", {"avg_precision": (0.7531, 0.003), "hamming_loss": (0.207, 0.003)}),
            ("yeast", "rakel", {"avg_precision": (0.7204, 0.005), "hamming_loss": (0.1903, 0.002)}),
            ("yeast", "mlknn", {"avg_precision": (0.7500, 0.004), "hamming_loss": (0.199, 0.002)}),
            ("tmc2007-500", "rakel", {"avg_precision": (0.74, 0.002), "hamming_loss": (0.07, 0.001)}),
        ]
    )


# --------------------------------------------------------------------------
# The transcription (src/mlgraph/data/builtin/paper002_tables.csv)
# --------------------------------------------------------------------------
@pytest.mark.parametrize(
    "dataset, method, metric, expected",
    [
        ("yeast", "ml2", "avg_precision", (0.765, 0.005)),
        ("scene", "ml2", "avg_precision", (0.885, 0.004)),
        ("bibtex", "clr", "ranking_loss", (0.065, 0.002)),
        ("tmc2007-500", "rakel", "macro_auc", (0.796, 0.002)),
        ("cal500", "br", "coverage_norm", (0.972, 0.001)),
        ("langlog", "ml2", "one_error", (0.683, 0.018)),
        ("enron", "ml2", "one_error", (0.258, 0.090)),
        ("tmc2007-500", "ecc", "hamming_loss", (0.066, 0.011)),
        ("rcv1subset1-500", "clr", "avg_precision", (0.628, 0.003)),
        ("rcv1-s2", "ml2", "macro_auc", (0.913, 0.005)),
        ("corel16k-s2", "clr", "macro_auc", (0.739, 0.003)),
        ("image", "ecc", "hamming_loss", (0.218, 0.027)),
    ],
)
def test_transcription_spot_checks(dataset, method, metric, expected):
    assert _paper(dataset, method, metric) == expected


def test_transcription_is_complete():
    table = L.paper002_tables()
    assert list(table.columns) == ["dataset", "method", "metric", "mean", "std"]
    assert len(table) == 5 * 6 * 14
    assert not table.duplicated(["dataset", "method", "metric"]).any()
    assert set(table.dataset) == set(L.PAPER002_DATASETS) and len(L.PAPER002_DATASETS) == 14
    assert set(table.method) == set(L.PAPER002) == set(METHODS)
    assert set(table.metric) == set(L.TABLE_METRICS)
    assert table["mean"].between(0, 1).all() and table["std"].between(0, 0.1).all()
    assert set(L.COMPARABLE) == set(L.PAPER002_DATASETS)


def test_transcription_matches_the_paper_text_line_by_line():
    """Each row of each metric block, written back in the paper's layout, occurs in its text."""
    text = _paper_text()
    if text is None:
        pytest.skip("shared/papers/002_*.txt not reachable")
    text = re.sub(r"\s*\\pm\s*", "±", text)
    table = L.paper002_tables().set_index(["metric", "method", "dataset"])
    names = {"ml2": "ML ²", "br": "BR", "clr": "CLR", "ecc": "ECC", "rakel": "RAKEL"}
    for metric in L.TABLE_METRICS:
        for datasets in (L.PAPER002_DATASETS[:7], L.PAPER002_DATASETS[7:]):
            for method, name in names.items():
                cells = [table.loc[(metric, method, d)] for d in datasets]
                line = name + "\t" + "\t".join(f"{c['mean']:.3f}±{c['std']:.3f}" for c in cells)
                assert line in text, (metric, line)


def test_only_rcv1_and_tmc2007_are_unclear_and_missing_datasets_are_not_comparable():
    verdicts = {d: v for d, (v, _) in L.COMPARABLE.items()}
    assert {d for d, v in verdicts.items() if v == "unclear"} == {"rcv1subset1-500", "tmc2007-500"}
    assert {d for d, v in verdicts.items() if v == "no"} == {"image", "rcv1-s2", "corel16k-s1", "corel16k-s2"}


# --------------------------------------------------------------------------
# Layout detection
# --------------------------------------------------------------------------
def test_fully_supervised_detection():
    halves = make_runs([("yeast", "ml2", {}), ("scene", "br", {})])
    assert L.fully_supervised(halves)
    ssl = make_runs([("yeast", "mlmrrw", {})], **{"params.protocol.rates": "[0.05, 0.1]"})
    assert not L.fully_supervised(ssl)
    assert not L.fully_supervised(pd.concat([halves, ssl], ignore_index=True))
    cv = make_runs(
        [("yeast", "br", {})],
        **{
            "params.protocol.rates": None,
            "params.protocol._target_": "mlgraph.evaluation.protocols.cross_validation_trials",
        },
    )
    assert L.fully_supervised(cv)
    assert not L.fully_supervised(halves.drop(columns="params.protocol.rates"))


# --------------------------------------------------------------------------
# table_report
# --------------------------------------------------------------------------
def test_bold_goes_to_the_best_with_the_metric_direction(runs):
    paper = L.paper002_tables()
    ap = L.metric_table(runs, paper, "avg_precision").set_index(["method", "dataset"])
    assert ap["best"].groupby("dataset").sum().to_dict() == {"emotions": 1, "tmc2007-500": 1, "yeast": 1}
    assert ap.loc[("ml2", "yeast"), "best"] and ap.loc[("ml2", "emotions"), "best"]  # larger is better
    hl = L.metric_table(runs, paper, "hamming_loss").set_index(["method", "dataset"])
    # smaller is better; 0.190 and 0.1903 print the same, so both are bold (as ties are in the paper)
    assert set(hl.index[hl["best"]]) == {
        ("br", "yeast"),
        ("rakel", "yeast"),
        ("ml2", "emotions"),
        ("rakel", "tmc2007-500"),
    }


def test_table_report_writes_the_layout_with_paper_values_beside(runs, tmp_path):
    section = "\n".join(L.table_report(runs, tmp_path))
    ap = pd.read_csv(tmp_path / "table_avg_precision.csv").set_index(["method", "dataset"])
    assert ap.loc[("ml2", "yeast"), "paper_mean"] == 0.765
    assert ap.loc[("ml2", "yeast"), "gap"] == pytest.approx(0.7531 - 0.765)
    assert pd.isna(ap.loc[("ml2", "emotions"), "paper_mean"])
    assert {f"table_{m}.csv" for m in ("avg_precision", "hamming_loss")} | {"gap_avg_precision.csv"} == {
        p.name for p in tmp_path.iterdir()
    }  # metrics the runs do not have are left out
    assert "| ML² | **0.753 ± 0.003** (paper 0.765) |" in section  # yeast, the first column
    assert "| BR | **0.190 ± 0.002** (paper 0.201) |" in section
    assert "| RAkEL | **0.190 ± 0.002** (paper 0.202) |" in section
    assert "(paper —)" in section  # emotions is not in the paper, neither is MLkNN
    assert "| MLkNN | 0.750 ± 0.004 (paper —) |" in section
    assert "### Hamming loss ↓" in section and "### Average precision ↑" in section
    assert "- tmc2007-500 (paper: tmc2007): comparable unclear" in section
    assert "- emotions: comparable no: not in paper 002" in section


def test_layout_orders_rows_and_columns_like_the_paper(runs, tmp_path):
    table = L.metric_table(runs, L.paper002_tables(), "avg_precision")
    wide = L.table_layout(table, table.apply(L._cell, axis=1))
    assert list(wide.index) == ["ML²", "BR", "RAkEL", "MLkNN"]
    assert list(wide.columns) == ["yeast", "tmc2007-500", "emotions"]
    assert wide.loc["ML²", "tmc2007-500"] == "—"  # no run: nothing to show
    assert wide.loc["RAkEL", "tmc2007-500"] == "**0.740 ± 0.002** (paper 0.735)"
    gap = pd.read_csv(_write_gap(runs, tmp_path), index_col=0)
    assert gap.loc["BR", "yeast"] == "+0.068" and gap.loc["ML²", "yeast"] == "-0.012"
    assert gap.loc["ML²", "emotions"] == "—" and gap.loc["BR", "tmc2007-500"] == "—"


def _write_gap(runs: pd.DataFrame, out: Path) -> Path:
    L.table_report(runs, out)
    return out / "gap_avg_precision.csv"


def test_a_single_repetition_shows_no_std(runs):
    runs.loc[runs["tags.dataset"] == "yeast", "params.protocol.repeats"] = "1"
    table = L.metric_table(runs, L.paper002_tables(), "avg_precision")
    assert table.loc[table.dataset == "yeast", "std"].isna().all()
    assert table.loc[table.dataset == "emotions", "std"].notna().all()
    cell = L._cell(table[(table.dataset == "yeast") & (table.method == "ml2")].iloc[0])
    assert cell.startswith("**0.753** (paper 0.765)") and "±" not in cell


def test_protocol_note_names_the_datasets_of_each_repeat_count(runs):
    assert L._protocol_note(runs).startswith("Protocol of these runs: test_size 0.5; repeats 10.")
    runs.loc[runs["tags.dataset"] == "yeast", "params.protocol.repeats"] = "2"
    note = L._protocol_note(runs)
    assert "repeats 10 (emotions" in note and "2 (yeast)" in note
