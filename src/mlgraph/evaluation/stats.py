"""Non-parametric comparison of several methods over several blocks (data sets / labelling rates).

Two workflows share one input, a *score table*: a :class:`pandas.DataFrame` with one row per block
(for paper 000, one labelling rate of one data set: "the ten sampled data sets under each labeling
rate are considered as different data sets") and one column per method.  Scores are "higher is
better" unless ``higher_is_better=False`` (loss metrics such as Hamming loss).  Within each block
the methods are ranked with rank 1 = best and tied methods get the average of their ranks.

**Paper 000 ("Significance test" section), on rank sums.**  With ``R_i`` the sum over the ``N``
blocks of the ranks of method ``i`` (``i = 1..K``), Friedman's statistic (Eq. 25, printed without
tie correction) is::

    F_R = 12 / (N K (K+1)) * sum_i R_i**2 - 3 N (K+1)

and ``H0`` (no difference) is rejected when ``F_R`` exceeds the ``chi2`` quantile with ``K-1``
degrees of freedom.  The post hoc test compares rank-sum differences ``D_ij = R_i - R_j`` with
(Eq. 26)::

    CD = z * sqrt(N K (K+1) / 6),    z = Phi^{-1}(1 - alpha / (K (K-1)))

(a two-sided Bonferroni correction over the ``K (K-1) / 2`` pairs); method ``i`` is significantly
better than ``j`` when ``|D_ij| >= CD`` and ``D_ij < 0``.  The CDs printed in the paper (9.2815 for
``K = 7``, 7.7658 for ``K = 6``, ``alpha = 0.05``) are Eq. 26 with ``N = 1``, although its rank
sums run over ``N = 10`` labelling rates; the standard deviation of a difference of rank sums
grows with ``sqrt(N)``.  This module uses the real ``N`` and reports the paper's ``N = 1`` value
only as a labelled comparison (``CD_paper_N1`` columns and rows).

**Demšar (2006), on average ranks** (J. Demšar, "Statistical comparisons of classifiers over
multiple data sets", JMLR 7:1-30): the Iman-Davenport correction
``F_F = (N-1) F_R / (N (K-1) - F_R)`` ~ ``F(K-1, (K-1)(N-1))``; the Nemenyi test (all pairs) with
``CD = q_alpha sqrt(K (K+1) / (6 N))`` on average ranks, ``q_alpha`` the studentized range
quantile (``df = inf``) divided by ``sqrt(2)``, p-values from
:func:`scikit_posthocs.posthoc_nemenyi_friedman`; the Bonferroni-Dunn test (all methods against
one control) with ``q_alpha = z_{alpha / (2 (K-1))}``; and the critical-difference diagram drawn
by :func:`scikit_posthocs.critical_difference_diagram`.

Quantiles come from :mod:`scipy.stats`, never from printed tables.  Figures are built on a
:class:`matplotlib.figure.Figure` with an Agg canvas, so nothing here needs a display or touches
the global pyplot state.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
import scikit_posthocs as sp
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from scipy import stats as ss

__all__ = [
    "ranks",
    "rank_sums",
    "friedman_statistic",
    "tie_correction",
    "iman_davenport",
    "friedman_test",
    "critical_difference",
    "rank_sum_differences",
    "nemenyi_critical_difference",
    "nemenyi",
    "bonferroni_dunn_critical_difference",
    "bonferroni_dunn",
    "cd_diagram",
    "friedman_table",
    "posthoc_table",
]

VERDICT_BETTER = "better"
VERDICT_WORSE = "worse"
VERDICT_NONE = "no significant difference"


# --------------------------------------------------------------------------
# Validation and ranking
# --------------------------------------------------------------------------
def _check_scores(scores: pd.DataFrame) -> pd.DataFrame:
    if not isinstance(scores, pd.DataFrame):
        raise TypeError(f"scores must be a pandas DataFrame (blocks x methods), got {type(scores).__name__}")
    n, k = scores.shape
    if n < 1:
        raise ValueError("scores has no rows (blocks)")
    if k < 2:
        raise ValueError(f"need at least 2 methods (columns) to compare, got {k}")
    if not scores.columns.is_unique:
        raise ValueError(f"method names (columns) must be unique: {list(scores.columns)}")
    values = scores.to_numpy(dtype=float)
    if not np.isfinite(values).all():
        raise ValueError("scores must be finite: Friedman's test needs a complete block design (no NaN)")
    return scores.astype(float)


def _check_alpha(alpha: float) -> float:
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha}")
    return float(alpha)


def ranks(scores: pd.DataFrame, higher_is_better: bool = True) -> pd.DataFrame:
    """Rank the methods within each block (row): rank 1 = best, ties get their average rank."""
    scores = _check_scores(scores)
    return scores.rank(axis=1, method="average", ascending=not higher_is_better)


def rank_sums(scores: pd.DataFrame, higher_is_better: bool = True) -> pd.Series:
    """``R_i``: the sum over blocks of each method's rank (paper 000, Eq. 25)."""
    return ranks(scores, higher_is_better).sum(axis=0).rename("rank_sum")


# --------------------------------------------------------------------------
# Friedman test (paper 000, Eq. 25) and Iman-Davenport
# --------------------------------------------------------------------------
def _friedman_from_rank_sums(R: np.ndarray, n: int) -> float:
    k = R.size
    return float(12.0 / (n * k * (k + 1)) * np.sum(R**2) - 3.0 * n * (k + 1))


def friedman_statistic(scores: pd.DataFrame, higher_is_better: bool = True) -> float:
    """Friedman's ``F_R`` exactly as paper 000, Eq. 25 (average ranks on ties, no tie correction).

    Without ties it equals :func:`scipy.stats.friedmanchisquare`; with ties scipy returns
    ``F_R / C`` with ``C`` from :func:`tie_correction`.  ``F_R`` does not depend on the direction
    of the scores (reversing every ranking leaves it unchanged).
    """
    r = ranks(scores, higher_is_better)
    return _friedman_from_rank_sums(r.sum(axis=0).to_numpy(), r.shape[0])


def tie_correction(scores: pd.DataFrame) -> float:
    """``C = 1 - sum(t**3 - t) / (N K (K**2 - 1))`` over all groups of ``t`` tied scores in a block.

    ``C = 1`` without ties and ``C = 0`` when every block is a complete tie.
    """
    values = _check_scores(scores).to_numpy()
    n, k = values.shape
    ties = 0.0
    for row in values:
        _, counts = np.unique(row, return_counts=True)
        ties += float(np.sum(counts.astype(float) ** 3 - counts))
    return 1.0 - ties / (n * k * (k * k - 1))


def iman_davenport(F_R: float, N: int, K: int) -> float:
    """Iman-Davenport ``F_F = (N-1) F_R / (N (K-1) - F_R)`` (Demšar 2006, Sec. 3.2.2).

    NaN when undefined: ``N = 1`` (then ``F_R = K-1`` is forced and the F distribution has 0
    denominator degrees of freedom) or ``F_R`` at its maximum ``N (K-1)`` (every block ranks the
    methods identically; ``F_F`` diverges).
    """
    denom = N * (K - 1) - F_R
    if N < 2 or math.isclose(denom, 0.0, abs_tol=1e-9 * max(1.0, N * (K - 1))):
        return float("nan")
    return float((N - 1) * F_R / denom)


def friedman_test(scores: pd.DataFrame, alpha: float = 0.05, higher_is_better: bool = True) -> dict[str, Any]:
    """Friedman test of paper 000 (Eq. 25) plus the tie-corrected and Iman-Davenport variants.

    Returns a dict with

    - ``N``, ``K``, ``alpha``; ``rank_sums`` (Series ``R_i``) and ``average_ranks`` (``R_i / N``);
    - ``F_R`` (Eq. 25), ``df`` (``K-1``), ``chi2_critical`` (upper ``alpha`` quantile of
      ``chi2(K-1)``), ``p_value`` and ``reject_H0`` (``F_R > chi2_critical``, as in the paper);
    - ``tie_correction`` ``C``, ``F_R_tie_corrected`` (``F_R / C``, what
      :func:`scipy.stats.friedmanchisquare` returns; NaN if every block is a complete tie) and
      ``p_value_tie_corrected``;
    - ``F_F`` (Iman-Davenport), ``F_df1`` (``K-1``), ``F_df2`` (``(K-1)(N-1)``), ``F_critical``,
      ``F_p_value``, ``reject_H0_iman_davenport`` (None when undefined) and
      ``iman_davenport_note`` (empty when defined, otherwise why ``F_F`` is NaN).
    """
    alpha = _check_alpha(alpha)
    r = ranks(scores, higher_is_better)
    n, k = r.shape
    R = r.sum(axis=0).rename("rank_sum")
    F_R = _friedman_from_rank_sums(R.to_numpy(), n)
    df = k - 1
    chi2_critical = float(ss.chi2.isf(alpha, df))

    C = tie_correction(scores)
    if C <= 1e-12:
        F_tc = p_tc = float("nan")
    elif k >= 3:
        res = ss.friedmanchisquare(*(scores[c].to_numpy(dtype=float) for c in scores.columns))
        F_tc, p_tc = float(res.statistic), float(res.pvalue)
    else:  # scipy requires at least 3 groups; same formula
        F_tc = F_R / C
        p_tc = float(ss.chi2.sf(F_tc, df))

    df2 = df * (n - 1)
    F_F = iman_davenport(F_R, n, k)
    if n < 2:
        note = "undefined: N = 1 block (F_R = K-1 is forced; the F distribution has 0 denominator dof)"
    elif math.isnan(F_F):
        note = "undefined: F_R equals its maximum N(K-1) (all blocks rank the methods identically)"
    else:
        note = ""
    if note:
        F_critical = float(ss.f.isf(alpha, df, df2)) if df2 > 0 else float("nan")
        F_p = float("nan")
        reject_id = None
    else:
        F_critical = float(ss.f.isf(alpha, df, df2))
        F_p = float(ss.f.sf(F_F, df, df2))
        reject_id = bool(F_F > F_critical)

    return {
        "N": n,
        "K": k,
        "alpha": alpha,
        "rank_sums": R,
        "average_ranks": (R / n).rename("average_rank"),
        "F_R": F_R,
        "df": df,
        "chi2_critical": chi2_critical,
        "p_value": float(ss.chi2.sf(F_R, df)),
        "reject_H0": bool(F_R > chi2_critical),
        "tie_correction": C,
        "F_R_tie_corrected": F_tc,
        "p_value_tie_corrected": p_tc,
        "F_F": F_F,
        "F_df1": df,
        "F_df2": df2,
        "F_critical": F_critical,
        "F_p_value": F_p,
        "reject_H0_iman_davenport": reject_id,
        "iman_davenport_note": note,
    }


# --------------------------------------------------------------------------
# Post hoc test of paper 000 (Eq. 26), on rank sums
# --------------------------------------------------------------------------
def critical_difference(K: int, N: int, alpha: float = 0.05) -> float:
    """Eq. 26 on rank SUMS: ``z sqrt(N K (K+1) / 6)`` with ``z = norm.isf(alpha / (K (K-1)))``.

    ``critical_difference(7, 1) = 9.2815`` and ``critical_difference(6, 1) = 7.7658`` are the
    values printed in paper 000; for rank sums over ``N`` blocks use the real ``N``.
    """
    alpha = _check_alpha(alpha)
    if K < 2 or N < 1:
        raise ValueError(f"need K >= 2 methods and N >= 1 blocks, got K={K}, N={N}")
    z = ss.norm.isf(alpha / (K * (K - 1)))
    return float(z * math.sqrt(N * K * (K + 1) / 6.0))


def _verdict(D: float, significant: bool) -> str:
    """Verdict for the reference/control: negative D (smaller rank) means better."""
    if not significant:
        return VERDICT_NONE
    return VERDICT_BETTER if D < 0 else VERDICT_WORSE


def _d_label(ref_pos: int, pos: int, k: int) -> str:
    return f"D_{ref_pos}{pos}" if k < 10 else f"D_{ref_pos},{pos}"


def rank_sum_differences(
    scores: pd.DataFrame, reference: str, alpha: float = 0.05, higher_is_better: bool = True
) -> pd.DataFrame:
    """Paper 000, Table 3 style: ``D = R_reference - R_i`` for every other method ``i``.

    One row per other method (index = method name, in column order) with ``label`` (``D_71``:
    1-based column positions of reference and method, as the paper numbers its algorithms),
    ``R_reference``, ``R_i``, ``D``, ``abs_D``, ``CD`` (Eq. 26 with the real ``N``),
    ``significant`` (``|D| >= CD``), ``verdict`` for the reference ("better" when significant and
    ``D < 0``, "worse" when significant and ``D > 0``, else "no significant difference"), and the
    same with the paper's ``N = 1`` critical difference: ``CD_paper_N1``,
    ``significant_paper_N1``, ``verdict_paper_N1``.
    """
    alpha = _check_alpha(alpha)
    r = ranks(scores, higher_is_better)
    if reference not in r.columns:
        raise KeyError(f"reference method {reference!r} not among {list(r.columns)}")
    n, k = r.shape
    R = r.sum(axis=0)
    cd = critical_difference(k, n, alpha)
    cd1 = critical_difference(k, 1, alpha)
    ref_pos = list(r.columns).index(reference) + 1
    rows = []
    for pos, method in enumerate(r.columns, start=1):
        if method == reference:
            continue
        D = float(R[reference] - R[method])
        sig = abs(D) >= cd
        sig1 = abs(D) >= cd1
        rows.append(
            {
                "method": method,
                "label": _d_label(ref_pos, pos, k),
                "R_reference": float(R[reference]),
                "R_i": float(R[method]),
                "D": D,
                "abs_D": abs(D),
                "CD": cd,
                "significant": sig,
                "verdict": _verdict(D, sig),
                "CD_paper_N1": cd1,
                "significant_paper_N1": sig1,
                "verdict_paper_N1": _verdict(D, sig1),
            }
        )
    return pd.DataFrame(rows).set_index("method")


# --------------------------------------------------------------------------
# Demšar (2006): Nemenyi and Bonferroni-Dunn on average ranks
# --------------------------------------------------------------------------
def _nemenyi_q(K: int, alpha: float) -> float:
    return float(ss.studentized_range.isf(alpha, K, np.inf) / math.sqrt(2.0))


def _bonferroni_dunn_q(K: int, alpha: float) -> float:
    return float(ss.norm.isf(alpha / (2.0 * (K - 1))))


def nemenyi_critical_difference(K: int, N: int, alpha: float = 0.05) -> float:
    """Nemenyi CD on AVERAGE ranks: ``q_alpha sqrt(K (K+1) / (6 N))`` (Demšar 2006, Sec. 3.2.2).

    ``q_alpha`` is the studentized range quantile (``K`` groups, ``df = inf``) over ``sqrt(2)``:
    2.569 for K=4, 2.850 for K=6, 2.949 for K=7 at ``alpha = 0.05`` (Demšar's Table 5a).
    """
    alpha = _check_alpha(alpha)
    if K < 2 or N < 1:
        raise ValueError(f"need K >= 2 methods and N >= 1 blocks, got K={K}, N={N}")
    return _nemenyi_q(K, alpha) * math.sqrt(K * (K + 1) / (6.0 * N))


def bonferroni_dunn_critical_difference(K: int, N: int, alpha: float = 0.05) -> float:
    """Bonferroni-Dunn CD on AVERAGE ranks, ``q = z_{alpha / (2 (K-1))}`` (Demšar 2006, Table 5b).

    ``q_0.05`` = 2.394 for K=4, 2.576 for K=6, 2.638 for K=7.
    """
    alpha = _check_alpha(alpha)
    if K < 2 or N < 1:
        raise ValueError(f"need K >= 2 methods and N >= 1 blocks, got K={K}, N={N}")
    return _bonferroni_dunn_q(K, alpha) * math.sqrt(K * (K + 1) / (6.0 * N))


def nemenyi(scores: pd.DataFrame, alpha: float = 0.05, higher_is_better: bool = True) -> dict[str, Any]:
    """Nemenyi all-pairs post hoc test on average ranks (Demšar 2006).

    Returns a dict with ``N``, ``K``, ``alpha``, ``average_ranks`` (Series, 1 = best), ``q_alpha``,
    ``CD`` (:func:`nemenyi_critical_difference`), ``p_values`` (K x K DataFrame from
    :func:`scikit_posthocs.posthoc_nemenyi_friedman`, diagonal 1) and ``significant`` (bool
    DataFrame, ``p < alpha``; up to ties at the boundary, the same as ``|ΔR̄| > CD``).

    scikit-posthocs ranks each block in ascending order of the values it receives; we hand it our
    ranks (1 = best, ties averaged), which it re-ranks to the same values, so the direction is
    always ours.  The p-values depend only on ``|ΔR̄|`` and would be the same either way.
    """
    alpha = _check_alpha(alpha)
    r = ranks(scores, higher_is_better)
    n, k = r.shape
    p = sp.posthoc_nemenyi_friedman(r)
    p = p.loc[list(r.columns), list(r.columns)]
    p.index.name = p.columns.name = None
    sig = p.to_numpy() < alpha
    np.fill_diagonal(sig, False)
    significant = pd.DataFrame(sig, index=p.index, columns=p.columns)
    return {
        "N": n,
        "K": k,
        "alpha": alpha,
        "average_ranks": r.mean(axis=0).rename("average_rank"),
        "q_alpha": _nemenyi_q(k, alpha),
        "CD": nemenyi_critical_difference(k, n, alpha),
        "p_values": p,
        "significant": significant,
    }


def bonferroni_dunn(
    scores: pd.DataFrame, control: str, alpha: float = 0.05, higher_is_better: bool = True
) -> dict[str, Any]:
    """Bonferroni-Dunn test of every method against ``control`` on average ranks (Demšar 2006).

    Returns a dict with ``N``, ``K``, ``alpha``, ``control``, ``average_ranks``, ``q_alpha``, ``CD``
    and ``table``: one row per other method with ``average_rank``, ``diff`` (``R̄_control - R̄_i``;
    negative = control ranked better), ``z`` (``diff / sqrt(K (K+1) / (6 N))``), ``p_value``
    (two-sided, unadjusted), ``p_adjusted`` (Bonferroni over the ``K-1`` comparisons via
    :func:`statsmodels.stats.multitest.multipletests`), ``significant`` (``|diff| >= CD``, which is
    ``p_adjusted <= alpha``) and ``verdict`` for the control ("better" / "worse" /
    "no significant difference").
    """
    from statsmodels.stats.multitest import multipletests  # scikit-posthocs dependency

    alpha = _check_alpha(alpha)
    r = ranks(scores, higher_is_better)
    if control not in r.columns:
        raise KeyError(f"control method {control!r} not among {list(r.columns)}")
    n, k = r.shape
    avg = r.mean(axis=0).rename("average_rank")
    cd = bonferroni_dunn_critical_difference(k, n, alpha)
    se = math.sqrt(k * (k + 1) / (6.0 * n))
    others = [m for m in r.columns if m != control]
    diff = np.array([avg[control] - avg[m] for m in others], dtype=float)
    z = diff / se
    p = 2.0 * ss.norm.sf(np.abs(z))
    p_adj = multipletests(p, alpha=alpha, method="bonferroni")[1]
    sig = np.abs(diff) >= cd
    table = pd.DataFrame(
        {
            "average_rank": [float(avg[m]) for m in others],
            "diff": diff,
            "z": z,
            "p_value": p,
            "p_adjusted": p_adj,
            "significant": sig,
            "verdict": [_verdict(d, s) for d, s in zip(diff, sig, strict=True)],
        },
        index=pd.Index(others, name="method"),
    )
    return {
        "N": n,
        "K": k,
        "alpha": alpha,
        "control": control,
        "average_ranks": avg,
        "q_alpha": _bonferroni_dunn_q(k, alpha),
        "CD": cd,
        "table": table,
    }


def cd_diagram(
    scores: pd.DataFrame,
    alpha: float = 0.05,
    ax: Axes | None = None,
    title: str | None = None,
    higher_is_better: bool = True,
    color_palette: Mapping[str, str] | None = None,
) -> Figure:
    """Critical-difference diagram (Demšar 2006, Fig. 1 style) of the Nemenyi test.

    Average ranks on the axis, the Nemenyi CD as a bar, and crossbars joining methods that are not
    significantly different (:func:`scikit_posthocs.critical_difference_diagram` on the p-value
    matrix of :func:`nemenyi`).  Draws into ``ax`` if given, else on a new Agg-backed figure that is
    not registered with pyplot; returns the figure. ``color_palette`` maps each method to its
    colour (e.g. the report's fixed style per method).
    """
    res = nemenyi(scores, alpha, higher_is_better)
    if ax is None:
        k = res["K"]
        # labels are drawn outside the axes: reserve room for the longest "name (1.23)" on each side
        label_in = 0.075 * (max(len(str(c)) for c in scores.columns) + 7)
        width = 4.0 + 2 * label_in
        fig = Figure(figsize=(width, 1.6 + 0.3 * (math.ceil(k / 2) + 3)))
        FigureCanvasAgg(fig)
        ax = fig.add_subplot()
        fig.subplots_adjust(
            left=label_in / width + 0.02,
            right=1 - label_in / width - 0.02,
            top=0.88 if title else 0.96,
            bottom=0.04,
        )
    else:
        fig = ax.figure
    sp.critical_difference_diagram(
        res["average_ranks"],
        res["p_values"],
        alpha=alpha,
        ax=ax,
        label_fmt_left="{label} ({rank:.2f})",
        label_fmt_right="({rank:.2f}) {label}",
        text_h_margin=0.02 * max(np.ptp(res["average_ranks"].to_numpy()), 0.5),
        color_palette=dict(color_palette) if color_palette else None,
    )
    # The CD bar is drawn here rather than by scikit-posthocs (cd=...), which puts it at y = 0.5,
    # on top of the tick labels of the rank axis.
    start = float(res["average_ranks"].min())
    ax.plot([start, start + res["CD"]], [1.3, 1.3], color="k", linewidth=1.5, marker="|", markersize=8)
    ax.text(
        start + res["CD"] / 2,
        1.45,
        f"CD = {res['CD']:.2f} (Nemenyi, α = {alpha:g})",
        ha="center",
        va="bottom",
        fontsize=9,
    )
    ax.set_ylim(top=2.1)
    ax.tick_params(axis="x", labelsize=9)
    if title:
        ax.set_title(title)
    return fig


# --------------------------------------------------------------------------
# Paper-style tables over several metrics
# --------------------------------------------------------------------------
def _direction(metric: str, higher_is_better: bool | Mapping[str, bool] | None) -> bool:
    if isinstance(higher_is_better, bool):
        return higher_is_better
    if higher_is_better is not None and metric in higher_is_better:
        return bool(higher_is_better[metric])
    from mlgraph.evaluation.metrics import METRICS

    spec = METRICS.get(metric)
    return True if spec is None else bool(spec.greater_is_better)


def friedman_table(
    tables: Mapping[str, pd.DataFrame],
    alpha: float = 0.05,
    higher_is_better: bool | Mapping[str, bool] | None = None,
) -> pd.DataFrame:
    """Paper 000, Table 2 style: one row per metric (key of ``tables``, each a score table).

    Columns ``N``, ``K``, ``F_R``, ``chi2_critical``, ``p_value``, ``reject_H0``,
    ``F_R_tie_corrected``, ``F_F``, ``F_critical``, ``F_p_value``, ``reject_H0_iman_davenport``.
    ``higher_is_better``: one bool for all metrics, a per-metric mapping, or None to use
    ``mlgraph.evaluation.metrics.METRICS[metric].greater_is_better`` (True for unknown names).  ``F_R`` does
    not depend on the direction, the table is the same either way.
    """
    cols = [
        "N",
        "K",
        "F_R",
        "chi2_critical",
        "p_value",
        "reject_H0",
        "F_R_tie_corrected",
        "F_F",
        "F_critical",
        "F_p_value",
        "reject_H0_iman_davenport",
    ]
    rows = {}
    for metric, scores in tables.items():
        res = friedman_test(scores, alpha, _direction(metric, higher_is_better))
        rows[metric] = {c: res[c] for c in cols}
    out = pd.DataFrame.from_dict(rows, orient="index", columns=cols)
    out.index.name = "metric"
    return out


def posthoc_table(
    tables: Mapping[str, pd.DataFrame],
    reference: str,
    alpha: float = 0.05,
    higher_is_better: bool | Mapping[str, bool] | None = None,
) -> pd.DataFrame:
    """Paper 000, Table 3 style: rank-sum differences ``D = R_reference - R_i`` per metric.

    Rows are the other methods labelled ``"D_71 (MLkNN)"`` (positions in the first table's column
    order), then ``"CD (N=10)"`` (Eq. 26 with the real ``N``) and ``"CD (paper, N=1)"``; columns are
    the metrics.  All tables must compare the same methods.  Negative ``D`` with
    ``|D| >= CD`` means the reference is significantly better; see :func:`rank_sum_differences`
    for per-method verdicts.  ``higher_is_better`` as in :func:`friedman_table`.
    """
    if not tables:
        raise ValueError("no score tables given")
    first = next(iter(tables.values()))
    order = list(first.columns)
    columns: dict[str, pd.Series] = {}
    ns = set()
    for metric, scores in tables.items():
        if set(scores.columns) != set(order) or len(scores.columns) != len(order):
            raise ValueError(f"metric {metric!r} compares {list(scores.columns)}, expected {order}")
        diffs = rank_sum_differences(scores[order], reference, alpha, _direction(metric, higher_is_better))
        n = scores.shape[0]
        ns.add(n)
        labels = [f"{lab} ({m})" for m, lab in diffs["label"].items()]
        values = list(diffs["D"]) + [float(diffs["CD"].iloc[0]), float(diffs["CD_paper_N1"].iloc[0])]
        columns[metric] = pd.Series(values, index=labels + [f"CD (N={n})", "CD (paper, N=1)"])
    out = pd.DataFrame(columns)
    if len(ns) > 1:  # different N per metric: one CD row per N, NaN elsewhere; keep order
        cd_rows = [f"CD (N={n})" for n in sorted(ns)]
        d_rows = [i for i in out.index if not i.startswith("CD (")]
        out = out.loc[d_rows + cd_rows + ["CD (paper, N=1)"]]
    return out
