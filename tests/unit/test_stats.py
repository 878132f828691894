"""Tests for mlgraph.evaluation.stats: paper 000 Eq. 25/26, Iman-Davenport, Nemenyi / Bonferroni-Dunn
against Demšar (2006), scipy / scikit-posthocs parity, signs and the CD diagram."""

from __future__ import annotations

import io
import math

import numpy as np
import pandas as pd
import pytest
import scikit_posthocs as skp
from matplotlib.figure import Figure
from scipy import stats as ss

from mlgraph.evaluation import stats as S

PAPER_METHODS = ["MLkNN", "ML-GFHF", "ML-LGC", "ML-FSKSC", "SSWL", "ML-MR", "ML-MRRW"]


# --------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------
def random_scores(seed: int, n: int = 10, k: int = 7, ties: bool = False, trend: float = 0.0) -> pd.DataFrame:
    """Score table (n blocks x k methods); integer scores give ties; ``trend`` favours later columns."""
    rng = np.random.default_rng(seed)
    values = rng.integers(0, 4, (n, k)).astype(float) if ties else rng.random((n, k))
    values = values + trend * np.arange(k)
    cols = PAPER_METHODS[:k] if k <= len(PAPER_METHODS) else [f"m{i}" for i in range(k)]
    return pd.DataFrame(values, columns=cols, index=pd.Index(range(5, 5 * n + 1, 5), name="rate %"))


def hand_table() -> pd.DataFrame:
    """N = 4 blocks, K = 3 methods, one tie (block 4: A = B)."""
    return pd.DataFrame({"A": [0.9, 0.8, 0.9, 0.6], "B": [0.8, 0.9, 0.7, 0.6], "C": [0.7, 0.7, 0.8, 0.5]})


# --------------------------------------------------------------------------
# 1. Friedman statistic vs scipy (with and without ties)
# --------------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(5))
def test_friedman_statistic_matches_scipy_without_ties(seed):
    scores = random_scores(seed)
    expected = ss.friedmanchisquare(*(scores[c] for c in scores.columns)).statistic
    assert S.tie_correction(scores) == 1.0
    assert S.friedman_statistic(scores) == pytest.approx(expected, rel=1e-12)
    res = S.friedman_test(scores)
    assert res["F_R_tie_corrected"] == pytest.approx(res["F_R"], rel=1e-12)


@pytest.mark.parametrize("seed", range(5))
def test_friedman_statistic_with_ties_is_scipy_times_tie_correction(seed):
    """scipy divides Eq. 25 by C = 1 - sum(t^3 - t) / (N K (K^2 - 1)); the paper prints Eq. 25 as is."""
    scores = random_scores(seed, ties=True)
    scipy_stat = ss.friedmanchisquare(*(scores[c] for c in scores.columns)).statistic
    C = S.tie_correction(scores)
    assert C < 1.0
    F_R = S.friedman_statistic(scores)
    assert F_R == pytest.approx(scipy_stat * C, rel=1e-12)
    assert F_R < scipy_stat
    res = S.friedman_test(scores)
    assert res["F_R_tie_corrected"] == pytest.approx(scipy_stat, rel=1e-12)
    assert res["p_value_tie_corrected"] == pytest.approx(ss.chi2.sf(scipy_stat, scores.shape[1] - 1))


def test_friedman_statistic_does_not_depend_on_direction():
    scores = random_scores(3, ties=True)
    assert S.friedman_statistic(scores, higher_is_better=False) == pytest.approx(S.friedman_statistic(scores))


# --------------------------------------------------------------------------
# 2. Hand-computed example
# --------------------------------------------------------------------------
def test_hand_example_ranks_rank_sums_and_F_R():
    scores = hand_table()
    expected_ranks = pd.DataFrame(
        {"A": [1.0, 2.0, 1.0, 1.5], "B": [2.0, 1.0, 3.0, 1.5], "C": [3.0, 3.0, 2.0, 3.0]}
    )
    pd.testing.assert_frame_equal(S.ranks(scores), expected_ranks)
    # loss metric: the order within every block is reversed, ties stay averaged
    pd.testing.assert_frame_equal(S.ranks(scores, higher_is_better=False), 4.0 - expected_ranks)

    R = S.rank_sums(scores)
    assert R.to_dict() == {"A": 5.5, "B": 7.5, "C": 11.0}
    # 12 / (4*3*4) * (5.5^2 + 7.5^2 + 11^2) - 3*4*4 = 0.25 * 207.5 - 48
    assert S.friedman_statistic(scores) == pytest.approx(3.875, abs=1e-12)

    res = S.friedman_test(scores)
    assert (res["N"], res["K"], res["df"]) == (4, 3, 2)
    assert res["F_R"] == pytest.approx(3.875)
    assert res["average_ranks"].to_dict() == pytest.approx({"A": 5.5 / 4, "B": 7.5 / 4, "C": 11.0 / 4})
    # one tie of size 2: C = 1 - 6 / (4*3*8) = 0.9375
    assert res["tie_correction"] == pytest.approx(0.9375)
    assert res["F_R_tie_corrected"] == pytest.approx(3.875 / 0.9375)
    assert res["chi2_critical"] == pytest.approx(5.991, abs=1e-3)
    assert res["p_value"] == pytest.approx(math.exp(-3.875 / 2))  # chi2(2) survival = exp(-x/2)
    assert res["reject_H0"] is False
    # Iman-Davenport: 3 * 3.875 / (4*2 - 3.875)
    assert res["F_F"] == pytest.approx(11.625 / 4.125)
    assert (res["F_df1"], res["F_df2"]) == (2, 6)
    assert res["iman_davenport_note"] == ""


def test_invalid_inputs_raise():
    with pytest.raises(ValueError, match="finite"):
        S.ranks(pd.DataFrame({"a": [1.0, np.nan], "b": [1.0, 2.0]}))
    with pytest.raises(ValueError, match="at least 2"):
        S.ranks(pd.DataFrame({"a": [1.0, 2.0]}))
    with pytest.raises(TypeError):
        S.ranks(np.ones((3, 3)))
    with pytest.raises(KeyError):
        S.rank_sum_differences(hand_table(), "Z")
    with pytest.raises(ValueError):
        S.critical_difference(1, 10)
    with pytest.raises(ValueError):
        S.friedman_test(hand_table(), alpha=1.5)


# --------------------------------------------------------------------------
# 3. Critical difference of Eq. 26 (paper's N = 1 values, sqrt(N) scaling)
# --------------------------------------------------------------------------
def test_critical_difference_reproduces_paper_values_with_N1():
    assert round(S.critical_difference(7, 1), 4) == 9.2815
    assert round(S.critical_difference(6, 1), 4) == 7.7658


@pytest.mark.parametrize("K", [3, 6, 7])
@pytest.mark.parametrize("N", [4, 10, 25])
def test_critical_difference_scales_with_sqrt_N(K, N):
    assert S.critical_difference(K, N) == pytest.approx(S.critical_difference(K, 1) * math.sqrt(N), rel=1e-12)
    z = ss.norm.isf(0.05 / (K * (K - 1)))
    assert S.critical_difference(K, N) == pytest.approx(z * math.sqrt(N * K * (K + 1) / 6))
    # smaller alpha -> larger CD
    assert S.critical_difference(K, N, alpha=0.01) > S.critical_difference(K, N)


# --------------------------------------------------------------------------
# 4. Iman-Davenport, Nemenyi and Bonferroni-Dunn against Demšar (2006)
# --------------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(4))
def test_iman_davenport_closed_formula(seed):
    scores = random_scores(seed, n=12, k=5, trend=0.1)
    res = S.friedman_test(scores, alpha=0.1)
    N, K, F_R = 12, 5, res["F_R"]
    F_F = (N - 1) * F_R / (N * (K - 1) - F_R)
    assert res["F_F"] == pytest.approx(F_F)
    assert res["F_critical"] == pytest.approx(ss.f.ppf(0.9, K - 1, (K - 1) * (N - 1)))
    assert res["F_p_value"] == pytest.approx(ss.f.sf(F_F, K - 1, (K - 1) * (N - 1)))
    assert res["reject_H0_iman_davenport"] == (F_F > res["F_critical"])


def test_iman_davenport_demsar_worked_example():
    """Demšar (2006), Sec. 3.2.4: N = 14, K = 4, chi2_F = 9.28 -> F_F = 3.69, F(3, 39) crit = 2.85."""
    assert S.iman_davenport(9.28, 14, 4) == pytest.approx(3.69, abs=5e-3)
    assert ss.f.isf(0.05, 3, 39) == pytest.approx(2.85, abs=5e-3)


def test_iman_davenport_degenerate_cases_are_nan_with_note():
    one_block = hand_table().iloc[:1]
    res = S.friedman_test(one_block)
    assert res["F_R"] == pytest.approx(2.0)  # K - 1: forced with one block
    assert math.isnan(res["F_F"]) and math.isnan(res["F_p_value"])
    assert res["reject_H0_iman_davenport"] is None
    assert "N = 1" in res["iman_davenport_note"]

    identical = pd.DataFrame({"a": [3.0, 3.0, 3.0], "b": [2.0, 2.0, 2.0], "c": [1.0, 1.0, 1.0]})
    res = S.friedman_test(identical)
    assert res["F_R"] == pytest.approx(3 * 2)  # maximum N (K - 1)
    assert math.isnan(res["F_F"])
    assert "maximum" in res["iman_davenport_note"]
    assert res["reject_H0"] is True  # the chi2 test is still defined

    all_tied = pd.DataFrame({"a": [1.0, 1.0], "b": [1.0, 1.0], "c": [1.0, 1.0]})
    res = S.friedman_test(all_tied)
    assert res["F_R"] == pytest.approx(0.0)
    assert res["tie_correction"] == pytest.approx(0.0)
    assert math.isnan(res["F_R_tie_corrected"])


@pytest.mark.parametrize(("K", "q_table"), [(4, 2.569), (6, 2.850), (7, 2.949), (8, 3.031)])
def test_nemenyi_cd_matches_demsar_table(K, q_table):
    """Demšar (2006), Table 5a (q_0.05): the brief's "2.949 for K=6, 3.031 for K=7" is shifted by
    one; in the table 2.850 is K=6, 2.949 K=7 and 3.031 K=8 (checked with scipy's studentized range)."""
    for N in (1, 10, 14):
        cd = S.nemenyi_critical_difference(K, N)
        assert cd == pytest.approx(q_table * math.sqrt(K * (K + 1) / (6 * N)), rel=4e-4)
    res = S.nemenyi(random_scores(0, n=10, k=K))
    assert res["q_alpha"] == pytest.approx(q_table, abs=1e-3)
    assert res["CD"] == pytest.approx(S.nemenyi_critical_difference(K, 10))


def test_nemenyi_and_bonferroni_dunn_demsar_worked_example():
    """Demšar (2006), Sec. 3.2.4: K = 4, N = 14: Nemenyi CD = 1.25, Bonferroni-Dunn CD = 1.16.

    Demšar truncates some of these (2.394 * 0.488 = 1.168 is printed 1.16), hence the 0.01 tolerance."""
    assert S.nemenyi_critical_difference(4, 14) == pytest.approx(1.25, abs=1e-2)
    assert S.bonferroni_dunn_critical_difference(4, 14) == pytest.approx(1.16, abs=1e-2)
    # alpha = 0.10 values of the same example: 1.12 and 1.03
    assert S.nemenyi_critical_difference(4, 14, alpha=0.10) == pytest.approx(1.12, abs=1e-2)
    assert S.bonferroni_dunn_critical_difference(4, 14, alpha=0.10) == pytest.approx(1.03, abs=1e-2)


@pytest.mark.parametrize(("K", "q_table"), [(4, 2.394), (6, 2.576), (7, 2.638)])
def test_bonferroni_dunn_q_matches_demsar_table(K, q_table):
    res = S.bonferroni_dunn(random_scores(1, n=10, k=K), PAPER_METHODS[K - 1])
    assert res["q_alpha"] == pytest.approx(q_table, abs=1e-3)
    assert res["CD"] == pytest.approx(q_table * math.sqrt(K * (K + 1) / 60), rel=4e-4)


@pytest.mark.parametrize("seed", range(4))
def test_nemenyi_pvalues_from_scikit_posthocs_agree_with_cd(seed):
    scores = random_scores(seed, n=15, k=6, trend=0.12)
    res = S.nemenyi(scores)
    avg = res["average_ranks"]
    assert list(res["p_values"].index) == list(scores.columns) == list(res["p_values"].columns)
    assert avg.sum() == pytest.approx(6 * 7 / 2)
    # same p-values as scikit-posthocs on the raw scores, in either direction
    pd.testing.assert_frame_equal(res["p_values"], skp.posthoc_nemenyi_friedman(scores), check_names=False)
    pd.testing.assert_frame_equal(res["p_values"], skp.posthoc_nemenyi_friedman(-scores), check_names=False)
    for a in scores.columns:
        for b in scores.columns:
            if a != b:
                gap = abs(avg[a] - avg[b])
                assert res["significant"].loc[a, b] == (gap > res["CD"])
    assert not np.diag(res["significant"].to_numpy()).any()


@pytest.mark.parametrize("seed", range(4))
def test_bonferroni_dunn_cd_and_pvalues_agree(seed):
    scores = random_scores(seed, n=12, k=6, trend=0.1)
    control = scores.columns[-1]
    res = S.bonferroni_dunn(scores, control)
    table = res["table"]
    assert control not in table.index and len(table) == 5
    se = math.sqrt(6 * 7 / (6 * 12))
    avg = S.ranks(scores).mean()
    for m, row in table.iterrows():
        assert row["diff"] == pytest.approx(avg[control] - avg[m])
        assert row["z"] == pytest.approx(row["diff"] / se)
        assert row["p_adjusted"] == pytest.approx(min(1.0, 5 * 2 * ss.norm.sf(abs(row["z"]))))
        assert row["significant"] == (row["p_adjusted"] <= 0.05)
        assert row["significant"] == (abs(row["diff"]) >= res["CD"])
        expected = (
            "no significant difference"
            if not row["significant"]
            else ("better" if row["diff"] < 0 else "worse")
        )
        assert row["verdict"] == expected


# --------------------------------------------------------------------------
# 5. Signs of the rank-sum differences (paper 000, Table 3)
# --------------------------------------------------------------------------
def dominance_table() -> pd.DataFrame:
    """10 blocks: 'best' beats everything, 'ref' is always last, 'mid' in between."""
    rng = np.random.default_rng(7)
    base = rng.random(10)
    return pd.DataFrame({"ref": base, "mid": base + 1.0, "best": base + 2.0})


def test_rank_sum_differences_method_dominating_reference_gives_positive_D_and_worse():
    scores = dominance_table()
    out = S.rank_sum_differences(scores, "ref")
    assert list(out.index) == ["mid", "best"]
    assert list(out["label"]) == ["D_12", "D_13"]
    assert out.loc["best", "R_reference"] == 30.0 and out.loc["best", "R_i"] == 10.0
    assert out.loc["best", "D"] == 20.0 and out.loc["mid", "D"] == 10.0
    cd = S.critical_difference(3, 10)
    assert out["CD"].tolist() == pytest.approx([cd, cd])
    assert out.loc["best", "significant"] and out.loc["best", "verdict"] == "worse"
    assert not out.loc["mid", "significant"] and out.loc["mid", "verdict"] == "no significant difference"
    # the paper's N = 1 CD (about 5.9 for K=3) also calls 'mid' significant
    assert out.loc["mid", "CD_paper_N1"] == pytest.approx(S.critical_difference(3, 1))
    assert out.loc["mid", "significant_paper_N1"] and out.loc["mid", "verdict_paper_N1"] == "worse"


def test_rank_sum_differences_loss_metric_flips_the_verdict():
    losses = dominance_table()  # read as losses, 'ref' is now always best
    out = S.rank_sum_differences(losses, "ref", higher_is_better=False)
    assert out.loc["best", "D"] == -20.0
    assert out.loc["best", "verdict"] == "better"
    higher = S.rank_sum_differences(losses, "ref")
    assert (out["D"] == -higher["D"]).all()


def test_rank_sum_differences_paper_numbering():
    scores = random_scores(2)
    out = S.rank_sum_differences(scores, "ML-MRRW")
    assert list(out["label"]) == [f"D_7{i}" for i in range(1, 7)]
    R = S.rank_sums(scores)
    assert out["D"].tolist() == pytest.approx([R["ML-MRRW"] - R[m] for m in PAPER_METHODS[:6]])


# --------------------------------------------------------------------------
# Paper-style tables over several metrics
# --------------------------------------------------------------------------
def test_friedman_and_posthoc_tables():
    ap = random_scores(4, trend=0.1)
    hl = 1.0 - ap  # a loss with the same information: direction taken from mlgraph.evaluation.metrics.METRICS
    tables = {"avg_precision": ap, "micro_f1": random_scores(5, trend=0.05), "hamming_loss": hl}

    ft = S.friedman_table(tables)
    assert list(ft.index) == list(tables)
    assert ft.loc["avg_precision", "F_R"] == pytest.approx(S.friedman_statistic(ap))
    assert ft.loc["hamming_loss", "F_R"] == pytest.approx(ft.loc["avg_precision", "F_R"])
    assert ft.loc["micro_f1", "chi2_critical"] == pytest.approx(12.592, abs=1e-3)  # the paper's K = 7 value
    assert (ft["N"] == 10).all() and (ft["K"] == 7).all()
    assert ft.loc["micro_f1", "F_F"] == pytest.approx(S.friedman_test(tables["micro_f1"])["F_F"])

    pt = S.posthoc_table(tables, "ML-MRRW")
    assert list(pt.columns) == list(tables)
    assert list(pt.index) == [f"D_7{i} ({m})" for i, m in enumerate(PAPER_METHODS[:6], start=1)] + [
        "CD (N=10)",
        "CD (paper, N=1)",
    ]
    d = S.rank_sum_differences(ap, "ML-MRRW")
    assert pt["avg_precision"].iloc[:6].tolist() == pytest.approx(d["D"].tolist())
    # hamming_loss = 1 - avg_precision read as a loss gives the same differences
    assert pt["hamming_loss"].tolist() == pytest.approx(pt["avg_precision"].tolist())
    assert pt.loc["CD (paper, N=1)"].tolist() == pytest.approx([9.2815] * 3, abs=1e-4)
    assert pt.loc["CD (N=10)", "micro_f1"] == pytest.approx(9.281470 * math.sqrt(10), rel=1e-6)

    # an explicit direction overrides the registry: hamming_loss read as "higher is better" flips D
    flipped = S.posthoc_table(tables, "ML-MRRW", higher_is_better=True)
    assert flipped["hamming_loss"].iloc[:6].tolist() == pytest.approx(
        (-pt["avg_precision"].iloc[:6]).tolist()
    )

    with pytest.raises(ValueError, match="compares"):
        S.posthoc_table({"a": ap, "b": ap.iloc[:, :6]}, "ML-MRRW")


# --------------------------------------------------------------------------
# 6. CD diagram
# --------------------------------------------------------------------------
def test_cd_diagram_returns_agg_figure():
    scores = random_scores(0, trend=0.08)
    fig = S.cd_diagram(scores, title="Emotions: average precision")
    assert isinstance(fig, Figure)
    assert fig.axes[0].get_title() == "Emotions: average precision"
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert any(t.startswith("CD = ") for t in texts)
    assert sum(any(m in t for t in texts) for m in scores.columns) == 7  # one label per method
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    assert buf.getvalue()[:8] == b"\x89PNG\r\n\x1a\n"


def test_cd_diagram_draws_into_given_axes():
    fig = Figure()
    ax = fig.add_subplot()
    out = S.cd_diagram(random_scores(1, k=4), ax=ax)
    assert out is fig
    assert ax.lines  # elbows, crossbars and the CD bar were drawn here
