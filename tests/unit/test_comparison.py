"""Tests for :mod:`mlgraph.evaluation.comparison`: every number against an independent
computation (closed forms, exact enumeration, scipy, a second implementation of the Bayesian
signed-rank posterior), the direction of each metric, and the sentences that replace the numbers
of a test that does not apply."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from scipy import stats as ss

from mlgraph.evaluation import comparison as C

FEW = 2_000  # posterior samples: enough for the tests, fast


def long_table(
    means: dict[str, dict[str, float]],
    reps: int = 5,
    noise: float = 0.01,
    seed: int = 0,
    metric="avg_precision",
):
    """dataset -> method -> mean: ``reps`` noisy repetitions of each, as the long score table."""
    rng = np.random.default_rng(seed)
    rows = [
        {"dataset": d, "method": m, "repetition": r, metric: mu + noise * rng.standard_normal()}
        for d, by_method in means.items()
        for m, mu in by_method.items()
        for r in range(reps)
    ]
    return pd.DataFrame(rows)


def _walk(value):
    """Every leaf of a result (dicts, frames, series, arrays), for the no-NaN/None check."""
    if isinstance(value, dict):
        for v in value.values():
            yield from _walk(v)
    elif isinstance(value, pd.DataFrame):
        yield from value.to_numpy().ravel().tolist()
        yield from value.index.tolist()
    elif isinstance(value, pd.Series):
        yield from value.tolist()
    elif isinstance(value, np.ndarray):
        yield from value.ravel().tolist()
    elif isinstance(value, list | tuple):
        for v in value:
            yield from _walk(v)
    else:
        yield value


def _no_missing(comparison: C.Comparison) -> None:
    parts = [comparison.cells, comparison.wtl, comparison.average_ranks, comparison.means, comparison.across]
    for leaf in _walk(parts):
        assert leaf is not None
        assert not (isinstance(leaf, float) and np.isnan(leaf))
        assert not (isinstance(leaf, str) and leaf.lower() in ("nan", "none"))


# --------------------------------------------------------------------------
# Directions and input
# --------------------------------------------------------------------------
def test_direction_of_each_metric_and_a_clear_error_for_an_unknown_one():
    assert C.higher_is_better("avg_precision") and C.higher_is_better("accuracy_all")
    assert not C.higher_is_better("hamming_loss") and not C.higher_is_better("coverage_norm")
    assert C.higher_is_better("f2", {"f2": True}) and not C.higher_is_better(
        "avg_precision", {"avg_precision": False}
    )
    with pytest.raises(ValueError, match=r"metric 'f2' has no known direction.*directions=\{'f2': True\}"):
        C.higher_is_better("f2")
    table = long_table({"a": {"x": 0.5, "y": 0.6}}).rename(columns={"avg_precision": "f2"})
    with pytest.raises(ValueError, match="'f2' has no known direction"):
        C.compare_metric(table, "f2", reference="x", nsamples=FEW)


def test_input_errors_name_the_column_or_the_repeated_row():
    table = long_table({"a": {"x": 0.5, "y": 0.6}})
    with pytest.raises(ValueError, match=r"lacks the column\(s\) \['repetition'\]"):
        C.check_scores(table.drop(columns="repetition"), ["avg_precision"])
    with pytest.raises(ValueError, match=r"repeat a \(dataset, method, repetition\), e.g. \(a, x, 0\)"):
        C.check_scores(pd.concat([table, table.iloc[:1]]), ["avg_precision"])
    with pytest.raises(ValueError, match="has no micro_f1 score"):
        C.compare_metric(table.assign(micro_f1=np.nan), "micro_f1", reference="x")
    with pytest.raises(ValueError, match="test must be one of"):
        C.compare_metric(table, "avg_precision", reference="x", test="sign")


# --------------------------------------------------------------------------
# One data set
# --------------------------------------------------------------------------
def test_mean_std_and_best_follow_the_metric_direction():
    table = pd.DataFrame(
        {
            "dataset": ["d"] * 6,
            "method": ["x", "x", "x", "y", "y", "y"],
            "repetition": [0, 1, 2, 0, 1, 2],
            "hamming_loss": [0.10, 0.12, 0.14, 0.20, 0.21, 0.25],
        }
    )
    c = C.compare_metric(table, "hamming_loss", reference="y", nsamples=FEW)
    x = c.cells.loc[("d", "x")]
    assert x["n"] == 3 and x["mean"] == pytest.approx(0.12) and x["std"] == pytest.approx(0.02)
    y = np.array([0.20, 0.21, 0.25])
    assert c.cells.loc[("d", "y"), "std"] == pytest.approx(np.sqrt(((y - y.mean()) ** 2).sum() / 2))
    assert bool(x["best"]) and not c.cells.loc[("d", "y"), "best"]  # lower is better
    # the reference y is worse than x: x gets ◦
    assert x["mark"] == C.WORSE and c.cells.loc[("d", "y"), "p_value"] == "reference"
    flipped = C.compare_metric(
        table.rename(columns={"hamming_loss": "avg_precision"}), "avg_precision", reference="y", nsamples=FEW
    )
    assert flipped.cells.loc[("d", "x"), "mark"] == C.BETTER and flipped.cells.loc[("d", "y"), "best"]


def test_best_compares_means_as_printed():
    table = long_table({"d": {"x": 0.81234, "y": 0.81231}}, noise=0.0)
    c = C.compare_metric(table, "avg_precision", reference="x", nsamples=FEW)
    assert c.cells["best"].all()  # 0.812 and 0.812
    c4 = C.compare_metric(table, "avg_precision", reference="x", nsamples=FEW, decimals=5)
    assert c4.cells["best"].tolist() == [True, False]


def test_paired_t_test_is_the_closed_form():
    ref = pd.Series([0.80, 0.82, 0.79, 0.85, 0.81])
    other = pd.Series([0.78, 0.80, 0.80, 0.81, 0.78])
    d = (ref - other).to_numpy()
    t = d.mean() / (d.std(ddof=1) / np.sqrt(len(d)))
    expected = 2 * ss.t.sf(abs(t), len(d) - 1)
    mark, p, n = C.paired_test(ref, other)
    assert n == 5 and p == pytest.approx(expected, rel=1e-12)
    assert mark == (C.BETTER if expected < 0.05 else "")
    mark, p_loose, _ = C.paired_test(ref, other, alpha=0.2)
    assert p_loose == p and mark == (C.BETTER if p < 0.2 else "")
    # lower is better: the same numbers make the reference worse
    assert C.paired_test(ref, other, alpha=0.5, higher_is_better=False)[0] == C.WORSE


def test_wilcoxon_is_the_exact_signed_rank_distribution():
    ref = pd.Series([0.50, 0.61, 0.43, 0.70, 0.66, 0.52])
    other = pd.Series([0.48, 0.55, 0.44, 0.62, 0.61, 0.50])
    d = (ref - other).to_numpy()
    ranks = ss.rankdata(np.abs(d))
    observed = ranks[d > 0].sum()
    centre = ranks.sum() / 2
    # all 2^n sign patterns are equally likely under H0
    totals = [
        sum(r for r, s in zip(ranks, signs, strict=True) if s)
        for signs in itertools.product([0, 1], repeat=6)
    ]
    expected = np.mean([abs(t - centre) >= abs(observed - centre) - 1e-12 for t in totals])
    _, p, n = C.paired_test(ref, other, test="wilcoxon")
    assert n == 6 and p == pytest.approx(expected)


def test_pairs_only_the_repetitions_both_methods_ran():
    ref = pd.Series([0.9, 0.8, 0.85, 0.7, 0.75], index=["0:0", "0:1", "0:2", "0:3", "0:4"])
    other = pd.Series([0.6, 0.65, 0.7, 0.55], index=["0:2", "0:3", "0:4", "1:0"])
    _, p, n = C.paired_test(ref, other)
    d = np.array([0.85 - 0.6, 0.7 - 0.65, 0.75 - 0.7])
    assert n == 3 and p == pytest.approx(ss.ttest_1samp(d, 0).pvalue)


def test_no_mark_where_the_test_does_not_apply_and_the_reason_instead():
    same = pd.Series([0.5, 0.6, 0.7])
    assert C.paired_test(same, same.copy()) == ("", "identical scores in all 3 paired repetitions", 3)
    assert C.paired_test(same.iloc[:1], same.iloc[:1] - 0.1) == ("", "needs ≥ 2 paired repetitions, got 1", 1)
    assert C.paired_test(same, pd.Series([0.4], index=[7])) == ("", "needs ≥ 2 paired repetitions, got 0", 0)
    # the same difference every time: t = inf, p = 0
    assert C.paired_test(same, same - 0.1) == (C.BETTER, 0.0, 3)
    assert C.paired_test(same, same + 0.1, higher_is_better=False)[0] == C.BETTER


def test_reference_missing_on_a_data_set_or_everywhere():
    table = long_table({"a": {"x": 0.5, "y": 0.6}, "b": {"y": 0.7}})
    c = C.compare_metric(table, "avg_precision", reference="x", nsamples=FEW)
    assert c.cells.loc[("b", "y"), "p_value"] == "the reference method x has no runs on this data set"
    assert c.wtl.loc["y"].tolist() == [0, 0, 1]  # b has no x: not counted
    gone = C.compare_metric(table, "avg_precision", reference="z", nsamples=FEW)
    assert gone.wtl == "the reference method z has no runs"
    assert set(gone.cells["p_value"]) == {"the reference method z has no runs"}
    assert gone.across["bonferroni_dunn"] == "needs ≥ 2 data sets, got 1"
    _no_missing(c)
    _no_missing(gone)


def test_single_repetition_has_no_std_and_no_test():
    c = C.compare_metric(
        long_table({"a": {"x": 0.5, "y": 0.6}}, reps=1), "avg_precision", reference="x", nsamples=FEW
    )
    assert set(c.cells["std"]) == {"needs ≥ 2 repetitions"}
    assert c.cells.loc[("a", "y"), "p_value"] == "needs ≥ 2 paired repetitions, got 1"
    assert c.wtl.loc["y"].tolist() == [0, 1, 0]
    _no_missing(c)


# --------------------------------------------------------------------------
# Win/tie/loss and average ranks
# --------------------------------------------------------------------------
def test_win_tie_loss_and_average_ranks_by_hand():
    means = {
        "a": {"r": 0.80, "p": 0.70, "q": 0.80},  # r beats p; r ties q (same mean: ranks 1.5)
        "b": {"r": 0.60, "p": 0.70, "q": 0.50},  # p beats r; r beats q
        "c": {"r": 0.90, "p": 0.80, "q": 0.70},
    }
    c = C.compare_metric(long_table(means, reps=8, noise=0.005), "avg_precision", reference="r", nsamples=FEW)
    assert c.wtl.loc["p"].tolist() == [2, 0, 1]
    assert c.wtl.loc["q"].tolist()[2] == 0 and c.wtl.loc["q"].tolist()[0] >= 2
    exact = C.compare_metric(
        long_table(means, reps=3, noise=0.0), "avg_precision", reference="r", nsamples=FEW
    )
    # rank per data set (1 = best, ties averaged): a: r 1.5, p 3, q 1.5; b: r 2, p 1, q 3; c: 1, 2, 3
    assert exact.average_ranks.to_dict() == pytest.approx({"r": 4.5 / 3, "p": 2.0, "q": 7.5 / 3})
    assert exact.cells.loc[("a", "q"), "p_value"] == "identical scores in all 3 paired repetitions"
    lower = C.compare_metric(
        long_table(means, reps=3, noise=0.0, metric="hamming_loss"),
        "hamming_loss",
        reference="r",
        nsamples=FEW,
    )
    assert lower.average_ranks.to_dict() == pytest.approx({"r": 2.5, "p": 2.0, "q": 1.5})  # reversed


# --------------------------------------------------------------------------
# Across data sets
# --------------------------------------------------------------------------
def _means(rows: list[list[float]], methods="rpqs") -> pd.DataFrame:
    return pd.DataFrame(
        rows, columns=list(methods[: len(rows[0])]), index=[f"d{i}" for i in range(len(rows))]
    )


MEANS = _means(
    [
        [0.81, 0.78, 0.75, 0.70],
        [0.70, 0.72, 0.66, 0.60],
        [0.90, 0.86, 0.84, 0.85],
        [0.65, 0.60, 0.63, 0.55],
        [0.77, 0.74, 0.70, 0.71],
        [0.88, 0.89, 0.82, 0.80],
    ]
)


def test_friedman_and_iman_davenport_are_demsars_formulas():
    res = C.friedman(MEANS, alpha=0.05)
    n, k = MEANS.shape
    ranks = MEANS.rank(axis=1, ascending=False).mean()
    chi2 = 12 * n / (k * (k + 1)) * (np.sum(ranks**2) - k * (k + 1) ** 2 / 4)
    ff = (n - 1) * chi2 / (n * (k - 1) - chi2)
    assert res["F_R"] == pytest.approx(chi2)
    assert res["F_R"] == pytest.approx(ss.friedmanchisquare(*MEANS.T.to_numpy()).statistic)  # no ties
    assert res["F_F"] == pytest.approx(ff)
    assert res["F_p_value"] == pytest.approx(ss.f.sf(ff, k - 1, (k - 1) * (n - 1)))
    assert res["reject"] == (res["F_p_value"] < 0.05) and res["decided_by"] == "Iman–Davenport F_F"


def test_friedman_reasons_one_data_set_and_identical_rankings():
    assert C.friedman(MEANS.iloc[:1]) == "needs ≥ 2 data sets, got 1"
    assert C.friedman(MEANS[["r"]]) == "needs ≥ 2 methods, got 1"
    same_order = _means([[0.9, 0.8, 0.7], [0.6, 0.5, 0.4], [0.8, 0.7, 0.1]])
    res = C.friedman(same_order)
    assert res["F_F"] == res["F_p_value"] == "diverges: every data set ranks the methods in the same order"
    assert res["decided_by"] == "Friedman's χ²" and res["p_value"] == pytest.approx(ss.chi2.sf(6.0, 2))


def test_nemenyi_and_bonferroni_dunn_critical_differences_and_groups():
    n, k = MEANS.shape
    nem = C.nemenyi(MEANS)
    assert nem["CD"] == pytest.approx(2.569 * np.sqrt(k * (k + 1) / (6 * n)), abs=1e-3)  # Demšar, Table 5a
    ranks = MEANS.rank(axis=1, ascending=False).mean()
    assert nem["top_group"] == [m for m in MEANS.columns if ranks[m] - ranks.min() < nem["CD"]]
    bd = C.bonferroni_dunn(MEANS, reference="r")
    assert bd["CD"] == pytest.approx(2.394 * np.sqrt(k * (k + 1) / (6 * n)), abs=1e-3)  # Table 5b
    assert bd["table"]["diff"].to_dict() == pytest.approx({m: ranks["r"] - ranks[m] for m in "pqs"})
    assert bd["table"]["verdict"]["s"] == "better"  # |1.17 - 3.67| > CD
    assert C.bonferroni_dunn(MEANS, reference="z") == "the reference method z has no runs"


def test_wilcoxon_holm_is_scipy_with_holms_step_down():
    res = C.wilcoxon_holm(MEANS, reference="r", alpha=0.05)
    raw = {m: ss.wilcoxon(MEANS["r"] - MEANS[m]).pvalue for m in "pqs"}
    order = sorted(raw, key=raw.get)
    holm, running = {}, 0.0
    for i, m in enumerate(order):
        running = max(running, min(1.0, (3 - i) * raw[m]))
        holm[m] = running
    assert res["p_value"].to_dict() == pytest.approx(raw)
    assert res["p_holm"].to_dict() == pytest.approx(holm)
    assert set(res["verdict"]) <= {"better", "no significant difference"}
    assert all("no p below" not in note for note in res["note"])  # 6 data sets: p can reach 0.03125
    tied = MEANS.assign(p=MEANS["r"])
    assert C.wilcoxon_holm(tied, reference="r").loc["p", "p_value"] == "identical means on every data set"
    few = C.wilcoxon_holm(MEANS.iloc[:4], reference="r")
    assert few.loc["s", "note"].startswith("with 4 data sets no p below 0.125")


def _posterior_by_hand(x, y, rope, seed, nsamples, prior=0.5):
    """Benavoli et al. (2017)'s Dirichlet-process signed-rank posterior, vectorised: weights
    w ~ Dir(prior, 1, ..., 1) on (0, z_1..z_n), z = y - x; P(left) = w' H w with H_ij = 1 when
    (z_i + z_j) / 2 < -rope (1/2 on the boundary)."""
    z = np.concatenate([[0.0], y - x])
    sums = z[:, None] + z[None, :]
    below = (-sums > 2 * rope) + 0.5 * (-sums == 2 * rope)
    above = (sums > 2 * rope) + 0.5 * (sums == 2 * rope)
    weights = np.random.RandomState(seed).dirichlet(np.r_[prior, np.ones(len(x))], nsamples)
    left = np.einsum("si,ij,sj->s", weights, below, weights)
    right = np.einsum("si,ij,sj->s", weights, above, weights)
    sample = np.column_stack([left, 1 - left - right, right])
    return np.bincount(sample.argmax(axis=1), minlength=3) / nsamples


@pytest.mark.parametrize("higher", [True, False])
def test_bayesian_signed_rank_is_the_dirichlet_process_posterior(higher):
    means = MEANS if higher else 1 - MEANS  # a loss: the same comparison mirrored
    res = C.bayesian_signed_rank(
        means, reference="r", rope=0.01, higher_is_better=higher, seed=3, nsamples=FEW
    )
    for method in "pqs":
        x, y = MEANS["r"].to_numpy(), MEANS[method].to_numpy()  # oriented: higher is better
        expected = _posterior_by_hand(x, y, 0.01, 3, FEW)
        got = res["table"].loc[method, ["p_better", "p_equivalent", "p_worse"]].to_numpy(dtype=float)
        assert got == pytest.approx(expected, abs=1.5 / FEW)
    assert res["table"].loc["s", "verdict"] == "better"
    assert res["samples"]["p"].shape == (FEW, 3)


def test_bayesian_rope_and_seed():
    wide = C.bayesian_signed_rank(MEANS, reference="r", rope=0.2, nsamples=FEW)
    assert wide["rope"] == 0.2 and (wide["table"]["verdict"] == "equivalent").all()
    again = C.bayesian_signed_rank(MEANS, reference="r", rope=0.2, nsamples=FEW)
    pd.testing.assert_frame_equal(wide["table"], again["table"])
    assert np.array_equal(wide["samples"]["p"], again["samples"]["p"])
    narrow = [C.bayesian_signed_rank(MEANS, reference="r", nsamples=FEW, seed=seed) for seed in (0, 0, 1)]
    assert narrow[0]["rope"] == 0.01  # the default
    assert np.array_equal(narrow[0]["samples"]["p"], narrow[1]["samples"]["p"])
    assert not np.array_equal(narrow[0]["samples"]["p"], narrow[2]["samples"]["p"])
    assert C.bayesian_signed_rank(MEANS.iloc[:1], reference="r") == "needs ≥ 2 data sets, got 1"
    with pytest.raises(ValueError, match="rope must be a number ≥ 0"):
        C.bayesian_signed_rank(MEANS, reference="r", rope=-1)


def test_compare_end_to_end_gives_numbers_or_sentences_never_nan():
    means = {
        f"d{i}": {"mlmrrw": 0.8 + 0.01 * i, "mlknn": 0.75 + 0.01 * i, "mine": 0.79 + 0.012 * i}
        for i in range(5)
    }
    table = long_table(means, reps=4)
    table["hamming_loss"] = 1 - table["avg_precision"]
    results = C.compare(table, reference="mlmrrw", nsamples=FEW)
    assert list(results) == ["avg_precision", "hamming_loss"]
    for comparison in results.values():
        _no_missing(comparison)
        assert comparison.methods == ("mlmrrw", "mlknn", "mine")
        assert set(comparison.across) == {
            "friedman",
            "nemenyi",
            "bonferroni_dunn",
            "wilcoxon_holm",
            "bayesian",
        }
        assert comparison.wtl.loc["mlknn"].tolist() == [5, 0, 0]
    one = C.compare(table[table.dataset == "d0"], reference="mlmrrw", nsamples=FEW)["avg_precision"]
    assert one.across == {
        "friedman": "needs ≥ 2 data sets, got 1",
        "nemenyi": "needs ≥ 2 data sets, got 1",
        "bonferroni_dunn": "needs ≥ 2 data sets, got 1",
        "wilcoxon_holm": "needs ≥ 2 data sets, got 1",
        "bayesian": "needs ≥ 2 data sets, got 1",
    }
    _no_missing(one)


def test_a_data_set_missing_a_method_leaves_the_tests_across_data_sets():
    means = {f"d{i}": {"x": 0.8, "y": 0.7} for i in range(3)}
    table = long_table(means, reps=3)
    table = table[~((table.dataset == "d2") & (table.method == "y"))]
    c = C.compare_metric(table, "avg_precision", reference="x", nsamples=FEW)
    assert c.ranked_datasets == ("d0", "d1") and list(c.means.index) == ["d0", "d1"]
    assert c.notes == (
        "left out of the ranks and of the tests across data sets, for a method without scores there: d2",
    )
    assert ("d2", "y") not in c.cells.index and c.cells.loc[("d2", "x"), "n"] == 3


def test_a_method_without_scores_for_the_metric_is_left_out_with_a_note():
    table = long_table({"a": {"x": 0.5, "y": 0.6, "z": 0.7}, "b": {"x": 0.5, "y": 0.6, "z": 0.7}})
    table.loc[table.method == "z", "avg_precision"] = np.nan  # no ranking scores
    c = C.compare_metric(table, "avg_precision", reference="x", nsamples=FEW)
    assert c.methods == ("x", "y") and c.ranked_datasets == ("a", "b")
    assert c.notes == ("no avg_precision score of z: left out",)
    ordered = C.compare_metric(table, "avg_precision", reference="x", methods=["y", "z", "x"], nsamples=FEW)
    assert ordered.methods == ("y", "x") and list(ordered.means.columns) == ["y", "x"]
