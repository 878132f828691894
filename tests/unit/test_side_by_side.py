"""Two comparisons side by side: differences of the means and changed conclusions."""

import numpy as np
import pandas as pd

from mlgraph.reporting.side_by_side import compare, significant_pairs


def _trials(shift: dict, seed=0):
    rng = np.random.default_rng(seed)
    rows = []
    for rate in np.arange(1, 11) / 20:
        for method, base in (("A", 0.8), ("B", 0.7), ("C", 0.6)):
            rows.append(
                {
                    "method": method,
                    "rate": rate,
                    "repetition": 0,
                    "status": "ok",
                    "avg_precision": base + shift.get(method, 0) + rng.normal(0, 0.001),
                }
            )
    table = pd.DataFrame(rows)
    return {m: g.drop(columns="method") for m, g in table.groupby("method")}


def test_significant_pairs_follow_the_critical_difference():
    scores = pd.DataFrame({"A": np.full(10, 0.9), "B": np.full(10, 0.8), "C": np.full(10, 0.7)})
    assert significant_pairs(scores, "avg_precision", 0.05) == {("A", "C")}  # CD(3, 10) = 10.7
    assert significant_pairs(scores, "ranking_loss", 0.05) == {("C", "A")}  # a loss: lower is better


def test_differences_and_changed_conclusions():
    this = {"d": _trials({"C": 0.25})}  # C overtakes both
    baseline = {"d": _trials({})}
    means, conclusions = compare(this, baseline, ["avg_precision"], "rates", 0.05)
    diff = means.set_index("method")["difference"]
    assert abs(diff["A"]) < 0.01 and abs(diff["C"] - 0.25) < 0.01
    (row,) = conclusions.to_dict("records")
    assert row["conclusion changes"] is True
    assert row["significant pairs, baseline only"] == "A > C"
    assert row["significant pairs, this only"] == "C > B"
    same = compare(baseline, {"d": _trials({}, seed=1)}, ["avg_precision"], "rates", 0.05)[1]
    assert not same["conclusion changes"].iloc[0]
