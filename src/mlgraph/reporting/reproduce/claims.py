"""The verdicts: each number of a paper's tables against ours (:func:`cell_verdict`), and each
stated conclusion of ``paper<id>_claims.toml`` checked on our runs (:data:`CLAIM_KINDS`,
:func:`evaluate_claims`).

The evidence beside a verdict shows the numbers compared to the decimals that decide it
(:func:`decisive_decimals`): two values that compare one way are never printed as equal.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from mlgraph.reporting.reproduce.scores import cell_notes, paper_claims


# --- Verdicts per cell
def cell_verdict(
    ours: float, ours_std: float, paper: float, paper_std: float, decimals: int
) -> tuple[str, float]:
    """Whether one of our numbers reproduces the paper's, and the tolerance used.

    Reproduced when ``|ours − paper| ≤ √(s_ours² + s_paper²)``: the standard deviation of the
    difference between one of our repetitions (folds, splits) and one of the paper's, each
    ``s`` the standard deviation over repetitions (a side without one counts 0), and never
    less than half a unit of the paper's last printed digit (its rounding). A gap within it is
    one a single repetition of either side could show; a systematic gap larger than the
    repetitions' spread is not reproduced. Returns ("reproduced" | "not reproduced" | "no
    run", tolerance)."""
    if ours is None or not np.isfinite(ours):
        return "no run", np.nan
    spread = math.sqrt(sum(s * s for s in (ours_std, paper_std) if s is not None and np.isfinite(s)))
    tolerance = max(spread, 0.5 * 10.0**-decimals)
    return ("reproduced" if abs(ours - paper) <= tolerance + 1e-12 else "not reproduced"), tolerance


def compare_cells(
    paper_id: str, ours: pd.DataFrame, paper: pd.DataFrame, keys: Sequence[str], decimals_of
) -> pd.DataFrame:
    """One row per paper cell: the paper's mean ± std, ours, the difference, the verdict and
    the notes that explain a gap."""
    merged = paper.merge(ours, on=list(keys), how="left", suffixes=("_paper", "_ours"))
    rows = []
    for _, row in merged.iterrows():
        verdict, tolerance = cell_verdict(
            row["mean_ours"], row["std_ours"], row["mean_paper"], row["std_paper"], decimals_of(row)
        )
        rows.append(
            {
                **{k: row[k] for k in keys},
                "paper_mean": row["mean_paper"],
                "paper_std": row["std_paper"],
                "ours_mean": row["mean_ours"],
                "ours_std": row["std_ours"],
                "difference": row["mean_ours"] - row["mean_paper"],
                "tolerance": tolerance,
                "verdict": verdict,
                "notes": ",".join(
                    cell_notes(paper_id, row.get("dataset", ""), row.get("method", ""), row["metric"])
                ),
            }
        )
    return pd.DataFrame(rows)


# --- Verdicts per stated conclusion
HELD, NOT_HELD, NO_DATA = "holds", "does not hold", "no run"
# The ways a stated conclusion is checked: ``kind`` in paper<id>_claims.toml, whose header
# comments give each kind's fields.
CLAIM_KINDS = {
    "friedman": "Friedman's F_R exceeds the χ² critical value, per data set and metric",
    "posthoc": "the reference's rank sum differs from each method's by at least Eq. 26's critical "
    "difference (real N) for the methods in `better`, and not for those in `not_better`",
    "order": "the winners score better than the losers at the rates named: at every one, at most "
    "of them, or in their mean",
    "similar": "the methods' means differ by at most the root mean square of their standard deviations",
    "increases": "the method's score after the last boosting round beats the first round's",
    "significant": "Bonferroni-Dunn over the folds: the control ranks significantly better than "
    "each other method",
    "share": "the winner beats the losers in more than `share` of the (data set, metric) cases",
    "suits": "each winner suits more data sets than each loser (within one standard deviation of "
    "the best selector in most of a data set's cases)",
}


def higher_is_better(metric: str) -> bool:
    from mlgraph.evaluation.metrics import METRICS

    return METRICS[metric].greater_is_better if metric in METRICS else True


def _listed(value, everything: Sequence[str]) -> list[str]:
    if value in (None, "all"):
        return list(everything)
    return [value] if isinstance(value, str) else list(value)


def _at(xs: Sequence[float], at) -> list[float]:
    if at in (None, "all"):
        return list(xs)
    if isinstance(at, str) and at.startswith(">="):
        return [x for x in xs if x >= float(at[2:])]
    return [x for x in xs if x in set(map(float, at))]


@dataclass
class Verdict:
    claim: dict
    check: str  # what was checked, in words
    verdict: str
    evidence: str
    paper: str = ""  # the same check on the paper's own numbers, where it prints them
    extra: str = ""  # e.g. the verdict with the paper's N = 1 critical difference


def _name(method: str) -> str:
    from mlgraph.evaluation.figures import method_label

    return method_label(method)


def decisive_decimals(
    a: float, b: float, decimals: tuple[int, int] = (3, 3), most: int = 8
) -> tuple[int, int]:
    """The decimals to print ``a`` and ``b`` with, at least ``decimals``, so that the printed
    numbers compare as the exact ones do: a > b never reads as a tie or the other way round,
    and a = b never reads as two numbers. Both widen together, up to ``most`` for the wider
    (a difference below that is a tie for every check here)."""
    if not (np.isfinite(a) and np.isfinite(b)):
        return decimals
    exact = np.sign(a - b)
    da, db = decimals
    while max(da, db) < most and np.sign(float(f"{a:.{da}f}") - float(f"{b:.{db}f}")) != exact:
        da, db = da + 1, db + 1
    return da, db


def _number(value: float, decimals: int) -> str:
    return "—" if value is None or not np.isfinite(value) else f"{value:.{decimals}f}"


def versus(a: float, b: float, decimals: tuple[int, int] = (3, 3), signed: bool = False) -> tuple[str, str]:
    """``a`` and ``b`` printed to their :func:`decisive_decimals` (``a`` with its sign if ``signed``)."""
    da, db = decisive_decimals(a, b, decimals)
    first = f"{a:+.{da}f}" if signed and np.isfinite(a) else _number(a, da)
    return first, _number(b, db)


def _where(x: float, unit: str = "%") -> str:
    if not np.isfinite(x) or x < 0:
        return ""
    return f"{x:g} %: " if unit == "%" else f"{unit} {x:g}: "


def check_order(case: pd.DataFrame, metric: str, claim: dict) -> tuple[str, str]:
    """``kind = "order"`` on one (dataset, group, metric) case: see paper000_claims.toml."""
    table = case.pivot_table(index=case["x"].fillna(-1.0), columns="method", values="mean")
    methods = list(table.columns)
    winners = _listed(claim["winners"], methods)
    losers = _listed(claim["losers"], methods)
    if claim["winners"] == "others":
        winners = [m for m in methods if m not in losers]
    if claim["losers"] == "others":
        losers = [m for m in methods if m not in winners]
    absent = [m for m in {*winners, *losers} if m not in methods]
    if absent or not winners or not losers:
        return NO_DATA, f"no run of {', '.join(map(_name, absent)) or 'the methods compared'}"
    xs = _at(list(table.index), claim.get("at"))
    if not xs:
        return NO_DATA, "no run at the labelling rates the claim names"
    sign = 1.0 if higher_is_better(metric) else -1.0
    W, L = sign * table.loc[xs, winners], sign * table.loc[xs, losers]
    how = claim.get("how", "every")
    if how == "mean":
        W, L = W.mean().to_frame().T, L.mean().to_frame().T
    best_w = W.max(axis=1) if claim.get("any") else W.min(axis=1)
    wins = best_w > L.max(axis=1)
    holds = bool(wins.all()) if how in ("every", "mean") else bool(wins.mean() > 0.5)

    def closest(x) -> str:
        """The weakest winner (the best one, with ``any``) against the strongest loser at x."""
        winner = W.loc[x].idxmax() if claim.get("any") else W.loc[x].idxmin()
        loser = L.loc[x].idxmax()
        ours, theirs = versus(sign * W.loc[x, winner], sign * L.loc[x, loser])
        return f"{_name(winner)} {ours} vs {_name(loser)} {theirs}"

    unit = claim.get("x", "%")
    if how == "mean":
        evidence = closest(W.index[0])
        if np.isfinite(xs[0]) and xs != [-1.0]:
            evidence = f"mean over rates: {evidence}"
    elif len(xs) == 1:
        evidence = f"{_where(xs[0], unit)}{closest(xs[0])}"
    else:
        worst = (best_w - L.max(axis=1)).idxmin()
        points = "rates" if unit == "%" else f"{unit}s"
        evidence = (
            f"at {int(wins.sum())} of {len(xs)} {points}; closest at {_where(worst, unit)}{closest(worst)}"
        )
    return (HELD if holds else NOT_HELD), evidence


def check_similar(case: pd.DataFrame, claim: dict) -> tuple[str, str]:
    """``kind = "similar"``: the methods' means differ by at most the root mean square of their
    standard deviations at every selected rate (or, with fractions, in the mean over them)."""
    methods = _listed(claim.get("methods"), sorted(case["method"].unique()))
    methods = [m for m in methods if m != "none"]
    part = case[case["method"].isin(methods)]
    if part["method"].nunique() < len(methods) or part.empty:
        return NO_DATA, "no run of the methods compared"
    x = part["x"].fillna(-1.0)
    if claim.get("at") is None and part["x"].notna().any() and claim.get("methods") == "all":
        part = part.groupby("method")[["mean", "std"]].mean().reset_index().assign(x=-1.0)
        x = part["x"]
    xs = _at(sorted(x.unique()), claim.get("at"))
    held, worst = True, (-np.inf, "")
    for at in xs:
        here = part[x == at]
        spread = here["mean"].max() - here["mean"].min()
        tolerance = float(np.sqrt((here["std"].fillna(0) ** 2).mean()))
        held &= spread <= tolerance + 1e-12
        if spread - tolerance > worst[0]:
            shown, std = versus(spread, tolerance)
            worst = (spread - tolerance, f"{_where(at) if at >= 0 else ''}range {shown} vs std {std}")
    return (HELD if held else NOT_HELD), worst[1]


def check_increases(case: pd.DataFrame, claim: dict) -> tuple[str, str]:
    series = case[case["method"] == claim["method"]].set_index("x")["mean"].sort_index()
    if len(series) < 2:
        return NO_DATA, "no per-round curve"
    first, last = series.iloc[0], series.iloc[-1]
    shown_last, shown_first = versus(last, first)
    return (
        HELD if last > first else NOT_HELD
    ), f"round {series.index[0]:g}: {shown_first}, round {series.index[-1]:g}: {shown_last}"


def _case_scores(case: pd.DataFrame) -> pd.DataFrame:
    """Mean and std per method over the case's x values (fractions), or as they are."""
    return case.groupby("method")[["mean", "std"]].mean()


def share_of_wins(
    scores: pd.DataFrame, claim: dict, datasets: Sequence[str], decimals: int | None
) -> tuple[int, int]:
    """(cases the winner wins, cases) over the (dataset, group, metric) cases of ``datasets``;
    with ``decimals``, ties at that precision count as wins (the paper's bold)."""
    wins = cases = 0
    winner = claim["winner"]
    for (_dataset, _, metric), case in scores[scores["dataset"].isin(datasets)].groupby(
        ["dataset", "group", "metric"]
    ):
        table = _case_scores(case[case["method"] != "none"])["mean"].dropna()
        losers = [m for m in _listed(claim.get("losers", "others"), table.index) if m != winner]
        if claim.get("losers", "others") == "others":
            losers = [m for m in table.index if m != winner]
        if winner not in table or not losers or any(m not in table for m in losers):
            continue
        sign = 1.0 if higher_is_better(metric) else -1.0
        values = sign * (table.round(decimals) if decimals is not None else table)
        cases += 1
        wins += bool(
            values[winner] >= values[losers].max()
            if decimals is not None
            else values[winner] > values[losers].max()
        )
    return wins, cases


def check_share(scores, claim, paper_scores, decimals) -> tuple[str, str, str]:
    datasets = _listed(claim.get("dataset"), sorted(scores["dataset"].unique()))
    wins, cases = share_of_wins(scores, claim, datasets, decimals)
    if not cases:
        return NO_DATA, "no case with every method run", ""
    holds = wins / cases > claim.get("share", 0.5)
    evidence = f"{_name(claim['winner'])} ahead in {wins} of {cases} cases ({100 * wins / cases:.0f} %)"
    paper = ""
    if paper_scores is not None:
        ours_cases = scores[scores["dataset"].isin(datasets)]["dataset"].unique()
        pw, pc = share_of_wins(paper_scores, claim, list(ours_cases), decimals)
        if pc:
            paper = f"on the same data sets, the paper's table: {pw} of {pc} ({100 * pw / pc:.0f} %)"
    return (HELD if holds else NOT_HELD), evidence, paper


def check_suits(scores: pd.DataFrame, claim: dict) -> tuple[str, str]:
    """``kind = "suits"``: see paper004_claims.toml."""
    counts: dict[str, int] = {}
    for _dataset, part in scores.groupby("dataset"):
        hits: dict[str, list[bool]] = {}
        for (_, metric), case in part.groupby(["group", "metric"]):
            table = _case_scores(case[case["method"] != "none"])
            sign = 1.0 if higher_is_better(metric) else -1.0
            best = (sign * table["mean"]).max()
            for method, row in table.iterrows():
                hits.setdefault(method, []).append(bool(best - sign * row["mean"] <= row["std"] + 1e-12))
        for method, flags in hits.items():
            counts[method] = counts.get(method, 0) + (np.mean(flags) > 0.5)
    if not counts or any(m not in counts for m in [*claim["winners"], *claim["losers"]]):
        return NO_DATA, "no run of the selectors compared"
    holds = all(counts[w] > counts[lo] for w in claim["winners"] for lo in claim["losers"])
    evidence = "data sets suited: " + ", ".join(
        f"{_name(m)} {counts[m]}" for m in [*claim["winners"], *claim["losers"]]
    )
    return (HELD if holds else NOT_HELD), evidence


def check_friedman(tables: Mapping[str, pd.DataFrame], dataset: str, metric: str) -> tuple[str, str]:
    from mlgraph.evaluation import stats

    table = tables.get(metric)
    if table is None or table.shape[1] < 3 or len(table) < 2:
        return NO_DATA, f"no complete set of runs on {dataset}"
    result = stats.friedman_test(table, higher_is_better=higher_is_better(metric))
    statistic, critical = versus(result["F_R"], result["chi2_critical"], (2, 2))
    return (
        (HELD if result["reject_H0"] else NOT_HELD),
        f"F_R = {statistic} vs χ² = {critical} (N = {result['N']}, K = {result['K']})",
    )


def check_posthoc(tables, dataset, metric, claim) -> list[tuple[str, str, str, str]]:
    """(other method, verdict, evidence, verdict with the paper's N = 1 CD) per method named."""
    from mlgraph.evaluation import stats

    table = tables.get(metric)
    reference = claim.get("reference", "mlmrrw")
    out = []
    for other in [*claim.get("better", []), *claim.get("not_better", [])]:
        expected = other in claim.get("better", [])
        if table is None or reference not in table or other not in table or len(table) < 2:
            out.append((other, NO_DATA, "no run", ""))
            continue
        diffs = stats.rank_sum_differences(table, reference, higher_is_better=higher_is_better(metric))
        row = diffs.loc[other]
        better = row["verdict"] == stats.VERDICT_BETTER
        better_n1 = row["verdict_paper_N1"] == stats.VERDICT_BETTER
        verdict = HELD if better == expected else NOT_HELD
        # |D| against each critical difference, D to the decimals that both comparisons need
        dd, dcd = decisive_decimals(abs(row["D"]), row["CD"], (1, 2))
        dd1, dcd1 = decisive_decimals(abs(row["D"]), row["CD_paper_N1"], (1, 2))
        evidence = f"{row['label']} = {row['D']:+.{max(dd, dd1)}f}, CD = {row['CD']:.{dcd}f}"
        n1 = (HELD if better_n1 == expected else NOT_HELD) + f" (CD = {row['CD_paper_N1']:.{dcd1}f})"
        out.append((other, verdict, evidence, n1))
    return out


def check_significant(
    folds: Mapping[str, pd.DataFrame], metric: str, claim: dict
) -> list[tuple[str, str, str]]:
    from mlgraph.evaluation import stats

    table = pd.DataFrame(
        {m: t[t.status == "ok"].set_index("repetition")[metric] for m, t in folds.items()}
    ).dropna()
    control = claim["control"]
    if control not in table or table.shape[1] < 3:
        return [("others", NO_DATA, "no complete set of runs")]
    result = stats.bonferroni_dunn(table, control, higher_is_better=higher_is_better(metric))
    out = []
    for other, row in result["table"].iterrows():
        dd, dcd = decisive_decimals(abs(row["diff"]), result["CD"], (2, 2))
        out.append(
            (
                other,
                HELD if row["verdict"] == stats.VERDICT_BETTER else NOT_HELD,
                f"mean rank difference {row['diff']:+.{dd}f}, CD = {result['CD']:.{dcd}f} (N = {result['N']} folds)",
            )
        )
    return out


def evaluate_claims(
    paper_id: str, scores: pd.DataFrame, *, tables=None, folds=None, paper_scores=None
) -> list[Verdict]:
    """Every stated conclusion of ``paper<id>_claims.toml``, one verdict per (claim, dataset,
    group, metric) or, for the tests, per method compared."""
    spec = paper_claims(paper_id)
    verdicts = []
    for claim in spec["claim"]:
        kind = claim["kind"]
        metrics = claim.get("metrics", spec["metrics"])
        if kind == "share":
            verdict, evidence, paper = check_share(
                scores, claim, paper_scores, 3 if paper_id == "002" else None
            )
            losers = claim.get("losers", "others")
            against = "every other method" if losers == "others" else ", ".join(map(_name, losers))
            scope = "every case" if claim.get("dataset") == "all" else "the table's data sets × metrics"
            check = f"{_name(claim['winner'])} ahead of {against} in most of {scope}"
            verdicts.append(Verdict(claim, check, verdict, evidence, paper))
            continue
        if kind == "suits":
            verdict, evidence = check_suits(scores, claim)
            verdicts.append(Verdict(claim, "selectors suited to the most data sets", verdict, evidence))
            continue
        datasets = _listed(claim.get("dataset"), sorted(scores["dataset"].unique()))
        for dataset in datasets:
            found = sorted(scores.loc[scores["dataset"] == dataset, "group"].unique())
            groups = (
                _listed(claim["group"], []) if "group" in claim else (found or [""])
            )  # 004: each classifier
            for group in groups:
                for metric in metrics:
                    shown = {"table2": "Table 2", "table3": "Table 3"}.get(group, group)
                    where = ", ".join(filter(None, [dataset, shown, _metric_words(metric)]))
                    case = scores[
                        (scores["dataset"] == dataset)
                        & (scores["group"] == group)
                        & (scores["metric"] == metric)
                    ]
                    if kind == "friedman":
                        verdict, evidence = check_friedman((tables or {}).get(dataset, {}), dataset, metric)
                        verdicts.append(Verdict(claim, f"{where}: Friedman rejects H0", verdict, evidence))
                    elif kind == "posthoc":
                        for other, verdict, evidence, n1 in check_posthoc(
                            (tables or {}).get(dataset, {}), dataset, metric, claim
                        ):
                            expect = (
                                "better than"
                                if other in claim.get("better", [])
                                else "not significantly better than"
                            )
                            verdicts.append(
                                Verdict(
                                    claim,
                                    f"{where}: ML-MRRW {expect} {_name(other)}",
                                    verdict,
                                    evidence,
                                    extra=n1,
                                )
                            )
                    elif kind == "significant":
                        for other, verdict, evidence in check_significant(folds or {}, metric, claim):
                            verdicts.append(
                                Verdict(
                                    claim,
                                    f"{where}: {_name(claim['control'])} significantly better than {_name(other)}",
                                    verdict,
                                    evidence,
                                )
                            )
                    else:
                        verdict, evidence = check_case(kind, case, metric, claim)
                        paper = ""
                        if paper_scores is not None and kind != "increases":
                            theirs = paper_scores[
                                (paper_scores["dataset"] == dataset)
                                & (paper_scores["group"] == group)
                                & (paper_scores["metric"] == metric)
                            ]
                            if not theirs.empty:
                                paper = ": ".join(check_case(kind, theirs, metric, claim))
                        verdicts.append(
                            Verdict(claim, f"{where}: {describe(claim)}", verdict, evidence, paper)
                        )
    return verdicts


def check_case(kind: str, case: pd.DataFrame, metric: str, claim: dict) -> tuple[str, str]:
    """A claim of kind order, similar or increases on one (dataset, group, metric) case."""
    if case.empty:
        return NO_DATA, "no run"
    if kind == "order":
        return check_order(case, metric, claim)
    if kind == "similar":
        return check_similar(case, claim)
    return check_increases(case, claim)


def _metric_words(metric: str) -> str:
    from mlgraph.evaluation.figures import metric_words

    return metric_words(metric)


def describe(claim: dict) -> str:
    """A claim's check in words (``ML-MRRW above every other method at most rates``)."""
    kind = claim["kind"]
    if kind == "similar":
        return (
            " ≈ ".join(map(_name, claim["methods"]))
            if claim["methods"] != "all"
            else "all selectors within their spread"
        )
    if kind == "increases":
        return f"{_name(claim['method'])}: last round above the first"
    names = lambda v: v if isinstance(v, str) else ", ".join(map(_name, v))  # noqa: E731
    winners = ("the best of " if claim.get("any") else "") + names(claim["winners"])
    at = claim.get("at", "all")
    rates = (
        ""
        if at == "all"
        else (
            f" at {', '.join(f'{a} %' for a in at)}"
            if isinstance(at, list)
            else f" at rates {at[:2]} {at[2:]} %"
        )
    )
    how = {"every": " everywhere", "most": " at most rates", "mean": " on average"}.get(
        claim.get("how", "every"), ""
    )
    if claim.get("group") in ("table2", "table3"):
        how = ""
    return f"{winners} above {names(claim['losers'])}{rates}{how}"
