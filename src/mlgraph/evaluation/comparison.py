"""Comparison of methods on data sets from per-repetition scores: the tables reviewers expect.

The input is a *long score table*: one row per (``dataset``, ``method``, ``repetition``) and one
column per metric. ``dataset`` is a block label (under a labelling-rate protocol the caller may
pass one block per rate, e.g. ``"yeast 10 %"``); ``repetition`` is the pairing key: two methods'
rows with the same ``repetition`` on one data set were scored on the same split (mlgraph's
protocols draw a split from ``(seed, rate, repetition)``, so runs with the same seed pair up).
A missing score (NaN: a failed trial, or a metric the method cannot compute) is left out.

Per (data set, metric) — :func:`compare_metric`:

- ``mean`` and ``std`` (``ddof = 1``) over repetitions, and the best method(s) by the metric's
  direction (:func:`higher_is_better`), compared at ``decimals`` places as a table prints them;
- a mark for each method against the ``reference`` by a paired two-sided test over the
  repetitions both ran: Student's paired t-test (``test="ttest"``, as the papers) or Wilcoxon's
  signed-rank test (``"wilcoxon"``) at level ``alpha``. ``•``: the reference is significantly
  better than this method, ``◦``: significantly worse. Identical scores in every repetition, or
  fewer than 2 paired repetitions, give no mark and the reason in place of the p-value;
- win/tie/loss of the reference against each method, counted over data sets (a win is a ``•``,
  a loss a ``◦``), and each method's average rank over the data sets where every method has a
  mean (rank 1 = best, ties averaged).

Across data sets, on the table of means (data sets × methods, data sets where every method has a
mean) — :func:`across_datasets`:

- Friedman's test (paper 000, Eq. 25) with the Iman–Davenport ``F_F`` (Demšar 2006), the
  Nemenyi and Bonferroni–Dunn critical differences on average ranks (:mod:`.stats`);
- Wilcoxon's signed-rank test of the reference against each method with Holm's step-down
  correction over the methods (Benavoli, Corani & Mangili 2016, "Should we really use post-hoc
  tests based on mean-ranks?", JMLR 17);
- the Bayesian signed-rank test (Benavoli, Corani, Demšar & Zaffalon 2017, "Time for a change",
  JMLR 18) by :class:`baycomp.SignedRankTest`: the posterior probabilities that the reference is
  better by more than the region of practical equivalence ``rope`` (on the metric's scale),
  within it, or worse, sampled with a fixed ``seed``.

A test that does not apply returns a sentence saying why (``"needs ≥ 2 data sets, got 1"``) in
place of its numbers; nothing here returns NaN or None.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats as ss

from mlgraph.evaluation import stats
from mlgraph.evaluation.metrics import DUAL_SET_METRICS, METRICS

__all__ = [
    "BETTER",
    "KEYS",
    "TESTS",
    "WORSE",
    "Comparison",
    "across_datasets",
    "bayesian_signed_rank",
    "bonferroni_dunn",
    "check_scores",
    "compare",
    "compare_metric",
    "friedman",
    "higher_is_better",
    "nemenyi",
    "paired_test",
    "wilcoxon_holm",
]

KEYS = ("dataset", "method", "repetition")
TESTS = {"ttest": "paired t-test", "wilcoxon": "Wilcoxon signed-rank test"}
BETTER, WORSE = "•", "◦"  # the reference is significantly better / worse than the marked method
REFERENCE = "reference"  # the p-value cell of the reference's own row


# --------------------------------------------------------------------------
# Input
# --------------------------------------------------------------------------
def higher_is_better(metric: str, directions: Mapping[str, bool] | None = None) -> bool:
    """The direction of ``metric``: ``directions[metric]`` if given, else mlgraph's own
    (``METRICS`` of :mod:`mlgraph.evaluation.metrics`, the dual-set accuracies); ValueError naming a
    metric with no known direction."""
    if directions is not None and metric in directions:
        return bool(directions[metric])
    if metric in METRICS:
        return bool(METRICS[metric].greater_is_better)
    if metric in DUAL_SET_METRICS:
        return True
    raise ValueError(
        f"metric {metric!r} has no known direction: it is none of mlgraph's metrics "
        f"({', '.join(sorted([*METRICS, *DUAL_SET_METRICS]))}). Say which way is better with "
        f"directions={{{metric!r}: True}} (True: higher is better, False: lower is better)."
    )


def check_scores(scores: pd.DataFrame, metrics: Iterable[str]) -> pd.DataFrame:
    """The long score table with ``dataset`` and ``method`` as strings and each metric as
    float; ValueError in one sentence for a missing column, a non-numeric metric or a repeated
    (dataset, method, repetition)."""
    if not isinstance(scores, pd.DataFrame):
        raise TypeError(f"scores must be a pandas DataFrame, got {type(scores).__name__}")
    metrics = list(metrics)
    missing = [c for c in (*KEYS, *metrics) if c not in scores.columns]
    if missing:
        raise ValueError(
            f"the score table lacks the column(s) {missing}: it needs {list(KEYS)} and one column "
            f"per metric; it has {list(scores.columns)}"
        )
    out = scores[[*KEYS, *metrics]].copy()
    out["dataset"] = out["dataset"].astype(str)
    out["method"] = out["method"].astype(str)
    for metric in metrics:
        try:
            out[metric] = pd.to_numeric(out[metric]).astype(float)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"metric column {metric!r} must hold numbers: {exc}") from None
    repeated = out[out.duplicated(list(KEYS), keep=False)]
    if len(repeated):
        first = repeated.iloc[0]
        raise ValueError(
            f"{len(repeated)} rows repeat a (dataset, method, repetition), e.g. "
            f"({first['dataset']}, {first['method']}, {first['repetition']}): each "
            "repetition of a method on a data set must be one row"
        )
    return out


def _check(test: str, alpha: float) -> None:
    if test not in TESTS:
        raise ValueError(f"test must be one of {sorted(TESTS)}, got {test!r}")
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha!r}")


def _order(values: pd.Series) -> list[str]:
    return list(dict.fromkeys(values))


# --------------------------------------------------------------------------
# One data set: the paired test
# --------------------------------------------------------------------------
def paired_test(
    reference: pd.Series,
    other: pd.Series,
    *,
    test: str = "ttest",
    alpha: float = 0.05,
    higher_is_better: bool = True,
) -> tuple[str, float | str, int]:
    """``(mark, p_value, n)``: the two-sided paired test of ``reference`` against ``other``
    (Series indexed by repetition; paired on the repetitions both have, NaN left out).

    ``mark`` is :data:`BETTER` when the reference is significantly better (``p < alpha``, in the
    metric's direction), :data:`WORSE` when significantly worse, else ``""``. ``p_value`` is a
    sentence instead of a number when the test does not apply: fewer than 2 paired repetitions,
    or the same scores in every repetition. The same non-zero difference in every repetition
    makes the t statistic infinite: ``p = 0``.
    """
    _check(test, alpha)
    pairs = pd.concat([reference.rename("r"), other.rename("o")], axis=1, join="inner").dropna()
    n = len(pairs)
    if n < 2:
        return "", f"needs ≥ 2 paired repetitions, got {n}", n
    d = (pairs["r"] - pairs["o"]).to_numpy() * (1.0 if higher_is_better else -1.0)
    scale = max(1.0, float(np.abs(pairs.to_numpy()).max()))
    if np.all(np.abs(d) <= 1e-12 * scale):
        return "", f"identical scores in all {n} paired repetitions", n
    if test == "ttest":
        if np.ptp(d) <= 1e-12 * scale:  # a constant difference: no spread, t = ±inf
            p = 0.0
        else:
            p = float(ss.ttest_1samp(d, 0.0).pvalue)
    else:
        p = float(ss.wilcoxon(d).pvalue)
    mark = (BETTER if d.mean() > 0 else WORSE) if p < alpha else ""
    return mark, p, n


# --------------------------------------------------------------------------
# One metric
# --------------------------------------------------------------------------
@dataclass(frozen=True)
class Comparison:
    """Everything :func:`compare_metric` finds for one metric.

    ``cells``: one row per (``dataset``, ``method``) that has scores (MultiIndex, data sets and
    methods in input order) with ``n`` (repetitions), ``mean``, ``std`` (a sentence when
    ``n < 2``), ``best`` (bool), ``mark`` (``"•"``, ``"◦"`` or ``""``) and ``p_value`` of the
    paired test against the reference (a sentence where it does not apply; ``"reference"`` in
    the reference's own row). ``wtl``: win, tie and loss of the reference against each other
    method over data sets (a sentence when the reference has no runs). ``average_ranks``: per
    method over ``ranked_datasets`` (a sentence when no data set has every method). ``means``:
    data sets × methods of means, the data sets where every method has one (the input of
    :func:`across_datasets`). ``across``: the tests across data sets. ``notes``: what was left
    out and why.
    """

    metric: str
    higher_is_better: bool
    reference: str
    test: str
    alpha: float
    decimals: int
    datasets: tuple[str, ...]
    methods: tuple[str, ...]
    cells: pd.DataFrame
    wtl: pd.DataFrame | str
    average_ranks: pd.Series | str
    ranked_datasets: tuple[str, ...]
    means: pd.DataFrame
    across: dict[str, Any] = field(default_factory=dict)
    notes: tuple[str, ...] = ()

    @property
    def test_name(self) -> str:
        return TESTS[self.test]

    @property
    def repetitions(self) -> tuple[int, int]:
        """The fewest and most repetitions of any cell."""
        return int(self.cells["n"].min()), int(self.cells["n"].max())


def compare_metric(
    scores: pd.DataFrame,
    metric: str,
    *,
    reference: str,
    test: str = "ttest",
    alpha: float = 0.05,
    rope: float = 0.01,
    seed: int = 0,
    nsamples: int = 20_000,
    directions: Mapping[str, bool] | None = None,
    decimals: int = 3,
    methods: Sequence[str] | None = None,
) -> Comparison:
    """Per data set and across data sets for one ``metric`` of the long score table ``scores``
    (see the module docstring). ``methods`` fixes the column order (default: input order);
    ``rope``, ``seed`` and ``nsamples`` go to :func:`bayesian_signed_rank`."""
    _check(test, alpha)
    hib = higher_is_better(metric, directions)
    scores = check_scores(scores, [metric])
    listed = list(methods) if methods is not None else _order(scores["method"])
    scores = scores[scores[metric].notna()]
    if scores.empty:
        raise ValueError(f"the score table has no {metric} score (every value is missing)")
    present = set(scores["method"])
    order = [m for m in listed if m in present]
    notes: list[str] = []
    if len(order) < len(listed):
        notes.append(f"no {metric} score of {', '.join(m for m in listed if m not in present)}: left out")
    datasets = _order(scores["dataset"])
    grouped = scores.groupby(["dataset", "method"], sort=False)[metric]
    cells = pd.DataFrame({"n": grouped.size(), "mean": grouped.mean(), "std": grouped.std(ddof=1)})
    cells = cells.reindex(
        pd.MultiIndex.from_tuples(
            [(d, m) for d in datasets for m in order if (d, m) in cells.index], names=["dataset", "method"]
        )
    )
    cells["n"] = cells["n"].astype(int)
    cells["std"] = [
        float(s) if n >= 2 else "needs ≥ 2 repetitions" for s, n in zip(cells["std"], cells["n"], strict=True)
    ]
    printed = cells["mean"].round(decimals)
    best_per_dataset = printed.groupby(level="dataset", sort=False).transform("max" if hib else "min")
    cells["best"] = printed == best_per_dataset

    by_cell = {
        key: group.set_index("repetition")[metric] for key, group in scores.groupby(["dataset", "method"])
    }
    marks, p_values = [], []
    for dataset, method in cells.index:
        if method == reference:
            marks.append("")
            p_values.append(REFERENCE)
        elif (dataset, reference) not in by_cell:
            marks.append("")
            where = " on this data set" if reference in present else ""
            p_values.append(f"the reference method {reference} has no runs{where}")
        else:
            mark, p, _ = paired_test(
                by_cell[(dataset, reference)],
                by_cell[(dataset, method)],
                test=test,
                alpha=alpha,
                higher_is_better=hib,
            )
            marks.append(mark)
            p_values.append(p)
    cells["mark"] = marks
    cells["p_value"] = p_values

    others = [m for m in order if m != reference]
    if reference not in present:
        wtl: pd.DataFrame | str = f"the reference method {reference} has no runs"
    else:
        rows = {}
        for method in others:
            both = [d for d in datasets if (d, method) in cells.index and (d, reference) in cells.index]
            mark = cells.loc[[(d, method) for d in both], "mark"] if both else pd.Series(dtype=str)
            rows[method] = {
                "win": int((mark == BETTER).sum()),
                "tie": int(len(both) - (mark == BETTER).sum() - (mark == WORSE).sum()),
                "loss": int((mark == WORSE).sum()),
            }
        wtl = pd.DataFrame.from_dict(rows, orient="index", columns=["win", "tie", "loss"])
        wtl.index.name = "method"

    wide = cells["mean"].unstack("method").reindex(index=datasets, columns=order)
    complete = wide.dropna()
    left_out = [d for d in datasets if d not in complete.index]
    if left_out:
        notes.append(
            f"left out of the ranks and of the tests across data sets, for a method without scores "
            f"there: {', '.join(left_out)}"
        )
    if len(order) < 2:
        average_ranks: pd.Series | str = f"needs ≥ 2 methods, got {len(order)}"
    elif complete.empty:
        average_ranks = "no data set has scores of every method"
    else:
        average_ranks = stats.ranks(complete, hib).mean(axis=0).rename("average_rank")
    across = across_datasets(
        complete,
        reference=reference,
        alpha=alpha,
        higher_is_better=hib,
        rope=rope,
        seed=seed,
        nsamples=nsamples,
    )
    return Comparison(
        metric=metric,
        higher_is_better=hib,
        reference=reference,
        test=test,
        alpha=alpha,
        decimals=decimals,
        datasets=tuple(datasets),
        methods=tuple(order),
        cells=cells,
        wtl=wtl,
        average_ranks=average_ranks,
        ranked_datasets=tuple(complete.index),
        means=complete,
        across=across,
        notes=tuple(notes),
    )


def compare(
    scores: pd.DataFrame,
    metrics: Sequence[str] | None = None,
    *,
    reference: str,
    **options,
) -> dict[str, Comparison]:
    """:func:`compare_metric` for each metric (default: every column besides
    ``dataset``/``method``/``repetition``), in order."""
    if metrics is None:
        metrics = [c for c in scores.columns if c not in KEYS]
    return {metric: compare_metric(scores, metric, reference=reference, **options) for metric in metrics}


# --------------------------------------------------------------------------
# Across data sets
# --------------------------------------------------------------------------
def _applies(means: pd.DataFrame, min_datasets: int = 2) -> str:
    """Why a test across data sets does not apply to ``means``, or ``""``."""
    n, k = means.shape
    if k < 2:
        return f"needs ≥ 2 methods, got {k}"
    if n < min_datasets:
        return f"needs ≥ {min_datasets} data sets, got {n}"
    return ""


def _reference_missing(means: pd.DataFrame, reference: str) -> str:
    return "" if reference in means.columns else f"the reference method {reference} has no runs"


def friedman(means: pd.DataFrame, *, alpha: float = 0.05, higher_is_better: bool = True) -> dict | str:
    """Friedman's test on the data sets × methods table of means: ``N``, ``K``, ``F_R``
    (paper 000, Eq. 25) with its χ² ``p_value``, Iman–Davenport's ``F_F`` with ``F_df1``,
    ``F_df2`` and ``F_p_value`` (sentences when ``F_F`` is undefined), ``reject`` (by ``F_F``
    where defined, as Demšar recommends, else by χ²), ``decided_by`` and ``average_ranks``."""
    why = _applies(means)
    if why:
        return why
    res = stats.friedman_test(means, alpha=alpha, higher_is_better=higher_is_better)
    defined = not res["iman_davenport_note"]
    note = res["iman_davenport_note"].removeprefix("undefined: ")
    if not defined and res["N"] >= 2:  # F_R at its maximum: every data set ranks the methods alike
        note = "diverges: every data set ranks the methods in the same order"
    return {
        "N": res["N"],
        "K": res["K"],
        "alpha": alpha,
        "F_R": res["F_R"],
        "df": res["df"],
        "p_value": res["p_value"],
        "F_F": res["F_F"] if defined else note,
        "F_df1": res["F_df1"],
        "F_df2": res["F_df2"],
        "F_p_value": res["F_p_value"] if defined else note,
        "reject": bool(res["reject_H0_iman_davenport"]) if defined else bool(res["p_value"] < alpha),
        "decided_by": "Iman–Davenport F_F" if defined else "Friedman's χ²",
        "average_ranks": res["average_ranks"],
    }


def nemenyi(means: pd.DataFrame, *, alpha: float = 0.05, higher_is_better: bool = True) -> dict | str:
    """The Nemenyi test (Demšar 2006): ``CD`` on average ranks, ``q_alpha``, ``average_ranks``,
    ``p_values`` (K × K) and ``top_group``: the methods whose average rank is within ``CD`` of
    the best one (not significantly worse than it)."""
    why = _applies(means)
    if why:
        return why
    res = stats.nemenyi(means, alpha=alpha, higher_is_better=higher_is_better)
    ranks = res["average_ranks"]
    top = [m for m in ranks.index if ranks[m] - ranks.min() < res["CD"]]
    return {
        "N": res["N"],
        "K": res["K"],
        "CD": res["CD"],
        "q_alpha": res["q_alpha"],
        "average_ranks": ranks,
        "p_values": res["p_values"],
        "top_group": top,
    }


def bonferroni_dunn(
    means: pd.DataFrame, *, reference: str, alpha: float = 0.05, higher_is_better: bool = True
) -> dict | str:
    """The Bonferroni–Dunn test of every method against ``reference`` (Demšar 2006): ``CD`` on
    average ranks, ``q_alpha``, ``average_ranks`` and ``table`` (per other method:
    ``average_rank``, ``diff`` = R̄_reference − R̄_method, ``significant``, ``verdict``)."""
    why = _applies(means) or _reference_missing(means, reference)
    if why:
        return why
    res = stats.bonferroni_dunn(means, reference, alpha=alpha, higher_is_better=higher_is_better)
    return {
        "N": res["N"],
        "K": res["K"],
        "CD": res["CD"],
        "q_alpha": res["q_alpha"],
        "average_ranks": res["average_ranks"],
        "table": res["table"][["average_rank", "diff", "significant", "verdict"]],
    }


def _smallest_wilcoxon_p(n: int) -> float:
    """The smallest two-sided p of the exact signed-rank test on ``n`` non-zero differences."""
    return min(1.0, 2.0 / 2**n)


def wilcoxon_holm(
    means: pd.DataFrame, *, reference: str, alpha: float = 0.05, higher_is_better: bool = True
) -> pd.DataFrame | str:
    """Wilcoxon's signed-rank test of ``reference`` against each other method over the data sets
    (the means), Holm-corrected over the methods tested. One row per other method: ``n`` (data
    sets with a non-zero difference), ``p_value`` and ``p_holm`` (sentences where the test does
    not apply), ``verdict`` for the reference ("better", "worse", "no significant difference")
    and ``note`` (e.g. when ``n`` is too small for any p below ``alpha``)."""
    from statsmodels.stats.multitest import multipletests  # a scikit-posthocs dependency

    why = _applies(means) or _reference_missing(means, reference)
    if why:
        return why
    sign = 1.0 if higher_is_better else -1.0
    rows, tested = {}, {}
    for method in (m for m in means.columns if m != reference):
        d = sign * (means[reference] - means[method]).to_numpy()
        nonzero = d[np.abs(d) > 1e-12 * max(1.0, float(np.abs(means.to_numpy()).max()))]
        row: dict[str, Any] = {"n": int(nonzero.size), "verdict": stats.VERDICT_NONE, "note": ""}
        if nonzero.size == 0:
            row.update(p_value="identical means on every data set", p_holm="not tested")
        else:
            result = ss.wilcoxon(nonzero)
            ranks = ss.rankdata(np.abs(nonzero))
            row["better_sum"] = float(ranks[nonzero > 0].sum())
            row["p_value"] = float(result.pvalue)
            tested[method] = row["p_value"]
            if _smallest_wilcoxon_p(nonzero.size) >= alpha:
                row["note"] = (
                    f"with {nonzero.size} data set{'s' if nonzero.size > 1 else ''} no p below {_smallest_wilcoxon_p(nonzero.size):.3g} "
                    f"is possible, so never below α = {alpha:g}"
                )
        rows[method] = row
    if tested:
        reject, p_holm, _, _ = multipletests(list(tested.values()), alpha=alpha, method="holm")
        for (method, _), r, p in zip(tested.items(), reject, p_holm, strict=True):
            row = rows[method]
            row["p_holm"] = float(p)
            half = row["n"] * (row["n"] + 1) / 4.0  # the sum of ranks each side under H0
            row["verdict"] = (
                stats.VERDICT_NONE
                if not r
                else stats.VERDICT_BETTER
                if row["better_sum"] > half
                else stats.VERDICT_WORSE
            )
    table = pd.DataFrame.from_dict(rows, orient="index")[["n", "p_value", "p_holm", "verdict", "note"]]
    table.index.name = "method"
    return table


def bayesian_signed_rank(
    means: pd.DataFrame,
    *,
    reference: str,
    rope: float = 0.01,
    higher_is_better: bool = True,
    seed: int = 0,
    nsamples: int = 20_000,
    credibility: float = 0.95,
) -> dict | str:
    """The Bayesian signed-rank test (Benavoli et al. 2017) of ``reference`` against each other
    method over the data sets, by :class:`baycomp.SignedRankTest` (Dirichlet-process prior of
    strength 0.5 on a pseudo-observation at 0), ``nsamples`` posterior samples drawn with
    ``seed``: the same means give the same numbers.

    Returns ``rope``, ``seed``, ``nsamples``, ``table`` (per other method: ``p_better``,
    ``p_equivalent``, ``p_worse`` — the posterior probability that the region "the reference
    is better by more than ``rope``", "within ``rope``", "worse by more than ``rope``" is the most
    probable, as :meth:`baycomp.Posterior.probs` — and ``verdict``: the region whose
    probability reaches ``credibility``, else "inconclusive") and ``samples`` (per method the
    ``nsamples`` × 3 posterior samples of those three probabilities, for the simplex plot).
    """
    import baycomp

    why = _applies(means) or _reference_missing(means, reference)
    if why:
        return why
    if not (isinstance(rope, int | float) and math.isfinite(rope) and rope >= 0):
        raise ValueError(f"rope must be a number ≥ 0 on the metric's scale, got {rope!r}")
    sign = 1.0 if higher_is_better else -1.0
    x = sign * means[reference].to_numpy(dtype=float)
    rows, samples = {}, {}
    for method in (m for m in means.columns if m != reference):
        y = sign * means[method].to_numpy(dtype=float)
        # baycomp's regions: left = x better than y by more than rope, rope, right = y better
        sample = baycomp.SignedRankTest.sample(x, y, rope, nsamples=nsamples, random_state=seed)
        if rope == 0:  # without a rope baycomp's middle column is 0 by construction
            sample[:, 1] = 0.0
        p = np.bincount(np.argmax(sample, axis=1), minlength=3) / nsamples
        verdict = next(
            (word for word, q in zip(("better", "equivalent", "worse"), p, strict=True) if q >= credibility),
            "inconclusive",
        )
        rows[method] = {
            "p_better": float(p[0]),
            "p_equivalent": float(p[1]),
            "p_worse": float(p[2]),
            "verdict": verdict,
        }
        samples[method] = sample
    table = pd.DataFrame.from_dict(rows, orient="index")
    table.index.name = "method"
    return {
        "rope": float(rope),
        "seed": int(seed),
        "nsamples": int(nsamples),
        "credibility": credibility,
        "table": table,
        "samples": samples,
    }


def across_datasets(
    means: pd.DataFrame,
    *,
    reference: str,
    alpha: float = 0.05,
    higher_is_better: bool = True,
    rope: float = 0.01,
    seed: int = 0,
    nsamples: int = 20_000,
) -> dict[str, Any]:
    """Every test across data sets on the data sets × methods table of means: ``friedman``,
    ``nemenyi``, ``bonferroni_dunn``, ``wilcoxon_holm`` and ``bayesian``, each its result or
    the sentence saying why it does not apply."""
    return {
        "friedman": friedman(means, alpha=alpha, higher_is_better=higher_is_better),
        "nemenyi": nemenyi(means, alpha=alpha, higher_is_better=higher_is_better),
        "bonferroni_dunn": bonferroni_dunn(
            means, reference=reference, alpha=alpha, higher_is_better=higher_is_better
        ),
        "wilcoxon_holm": wilcoxon_holm(
            means, reference=reference, alpha=alpha, higher_is_better=higher_is_better
        ),
        "bayesian": bayesian_signed_rank(
            means,
            reference=reference,
            rope=rope,
            higher_is_better=higher_is_better,
            seed=seed,
            nsamples=nsamples,
        ),
    }
